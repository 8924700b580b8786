/* warp_specialize_chain.c - the warp_specialize pass on a loop of two
 * chained products (attention: s = q @ k^T, the online softmax on s,
 * o = p @ v + o with p from s): which loops qualify, the decisions, the
 * report and the rewrite. The driver (warp_specialize.c) picks this form
 * when the loop's body holds two products; its header has the rules that
 * both forms share (the target, TMA-able windows, the stages).
 *
 * A loop qualifies when, as double_buffer left it,
 *  - both products are wgmma (mma_select) and the second's A operand is
 *    computed from the first's result (P in registers: wgmma RS);
 *  - the first product's A operand is read from a 1-slot buffer that one
 *    copy fills before the loop (the once-loaded operand, q), read once
 *    before the loop and used only inside it;
 *  - each product's B operand is an SMEM_LOAD (for the first, through a
 *    TRANS: k^T) of a ring buffer refilled in the body by the guarded
 *    prefetch, used only by that product, with offsets of the fetched
 *    iteration and TMA-able windows (as for one product);
 *  - the rest of the body is pure work (the softmax, masks behind IFs) and
 *    the ring's bookkeeping; the kernel has no other cp.async copies, so
 *    every cp.async wait and commit before the loop belongs to these;
 *  - pass_chain_roles holds: the rows split into consumer warp groups of a
 *    multiple of 64 and S, O and P leave the consumers WS_CHAIN_HEADROOM
 *    registers for the softmax.
 * Any other loop of two products keeps double_buffer's cp.async ring and
 * the report says why.
 *
 * Decisions (each reported with its reason):
 *  - consumer warp groups C: 3 for 192 rows, 2 for 128 rows or more (64
 *    each), else 1 (192 rows only where BM = 192 is pinned: the tile choice
 *    asks for 128);
 *  - registers: C = 3: 32 / 160, FlashAttention 3's split for its 192-row
 *    D = 64 tile (S 64 + O 32 + P 32 leave 32 for the softmax, the
 *    headroom asked of three groups); C = 2: 24 / 240, its split for two
 *    consumer warp groups with TMA for K and V; C = 1: 56 / 256, for one;
 *  - stages S for the K and V rings: the driver's rule (the pipeline hint,
 *    fewer only when it cannot fit; without one as many as fit up to 4),
 *    each stage being both slots and four mbarriers.
 *
 * The form (slot s = it mod S, phase = (it div S) & 1, it = 0 .. T-1, iv =
 * lo + it * step the original induction value; ops before the loop stay
 * outside the ws):
 *   %fq = mbar_alloc {count = 1} : tile<1 x mbar>   (the one-shot ring of q)
 *   %fk, %ek, %fv, %ev = mbar_alloc {count = 1} : tile<S x mbar>
 *   ws {roles = [(producer, 1, P), (consumer, C, R)]} {
 *     mbar_expect %fq, 0 {bytes}; tma_load %bq, 0, %fq, 0, %Q, ...
 *     for 0, T, 1: per ring (K, then V): mbar_wait %e, s, phase ^ 1;
 *                  mbar_expect %f, s {bytes}; tma_load %b, s, %f, s, ...
 *   } {
 *     mbar_wait %fq, 0, 0; %q = smem_load %bq, 0
 *     %r... = for 0, T, 1 (carried...):
 *       the body's ops in order, the ring's bookkeeping gone; at each
 *       product: mbar_wait its ring's %f, s, phase; the read (and TRANS);
 *       dot_async; dot_wait {pending = 0}; mbar_arrive its %e, s
 *     the epilogue (as for one product)
 *   }
 * Q's ring is filled whatever the trip count, and waited once, so T = 0
 * (no keys, or a causal block with none) leaves no wait on a ring that is
 * never filled. The interpreter gives bit-identical results; the protocol
 * pass proves the rings, the one-shot ring included.
 */
#include "warp_specialize_int.h"

#include <string.h>

/* ---- the rule the tile choice, launch and the pass share ---- */

/* By consumer warp groups (1-3): the setmaxnreg budgets (producer /
 * consumers), the registers S, O and P must leave the softmax, and the
 * split's name in the report. */
static const struct {
    int prod, cons, headroom;
    const char *what;
} chain_split[4] = {
    [1] = { 56, 256, WS_CHAIN_HEADROOM, "one consumer warp group" },
    [2] = { 24, 240, WS_CHAIN_HEADROOM, "two consumer warp groups with TMA for K and V" },
    [3] = { 32, 160, WS_CHAIN_HEADROOM_3, "three consumer warp groups, its 192-row tile at D = 64" },
};

/* Registers a second P in flight must leave the softmax: 48 (D = 128's
 * softmax at 240), 32 in a block of several an SM (D = 64 x 64 keys: S 32
 * + O 32 + 2 P 32 of 136, assembled without spills and timed in this form,
 * bench/RESULTS.md 2026-12-06 22:14). */
static int pipe_headroom(const ChainRoles *r) { return r->blocks > 1 ? WS_CHAIN_HEADROOM_3 : WS_PIPE_HEADROOM; }

bool pass_chain_roles(const PassCtx *ctx, int64_t rows, int64_t cols, int64_t d, ChainRoles *out, Arena *a,
                      const char **why)
{
    ChainRoles r;
    memset(&r, 0, sizeof r);
    const char *no = NULL;
    r.consumers = rows == 3 * WGMMA_M ? 3 : rows >= WS_TWO_GROUPS_ROWS ? 2 : 1;
    int64_t per = rows / r.consumers;
    r.prod_regs = chain_split[r.consumers].prod;
    r.cons_regs = chain_split[r.consumers].cons;
    int headroom = chain_split[r.consumers].headroom;
    r.s_regs = per * cols / WG_THREADS;
    r.o_regs = per * d / WG_THREADS;
    r.p_regs = per * cols / (2 * WG_THREADS);
    int64_t regs = r.s_regs + r.o_regs + r.p_regs;
    r.blocks = 1;
    /* One consumer warp group leaves most of an SM's tensor cores idle:
     * as many blocks an SM as the registers (the producer at its floor,
     * the consumer at the rest of the block's pool) and shared memory (Q,
     * two stages of K and V, O's scratch) allow. */
    for (int b = WS_CHAIN_BLOCKS; r.consumers == 1 && b > 1; b--) {
        int cons = 2 * ir_ws_entry_regs(2 * WG_THREADS, b) - WS_SHARED_PROD_REGS;
        if (regs + WS_CHAIN_HEADROOM_3 <= cons && pass_chain_smem(rows, cols, d, true) <= pass_sm_smem_share(ctx, b)) {
            r.blocks = b;
            r.prod_regs = WS_SHARED_PROD_REGS;
            r.cons_regs = cons;
            headroom = WS_CHAIN_HEADROOM_3;
            break;
        }
    }
    r.pipelined = regs + r.p_regs + pipe_headroom(&r) <= r.cons_regs && r.o_regs >= r.s_regs;
    if (!pass_target_roles(ctx))
        no = "the target takes no warp-specialized roles";
    else if (rows <= 0 || per % WGMMA_M)
        no = a ? arena_printf(a, "its %lld accumulator rows do not split into %d warp groups of a multiple of 64",
                              (long long)rows, r.consumers) : "";
    else if (regs + headroom > r.cons_regs)
        no = a ? arena_printf(a, "S, O and P take %lld registers a consumer thread (%lld + %lld + %lld), leaving "
                              "fewer than %d of the %d a consumer has for the softmax", (long long)regs,
                              (long long)r.s_regs, (long long)r.o_regs, (long long)r.p_regs, headroom,
                              r.cons_regs) : "";
    if (out)
        *out = r;
    if (why)
        *why = no;
    return !no;
}

/* ---- which loops ---- */

static const Op *def_of(const WsLoop *W, ValId v) { return ir_val(W->f, v)->def; }

/* Does v, computed in the loop, come from `from` (through the body's ops
 * and the arms of its IFs)? */
static bool comes_from(const WsLoop *W, ValId v, ValId from, uint8_t *seen, int depth)
{
    if (v == from)
        return true;
    if (!v || depth > 256 || seen[v] || !W->in_loop[v])
        return false;
    seen[v] = 1;
    const Op *d = def_of(W, v);
    if (!d)
        return false;
    if (d->code == OP_IF) {
        for (int g = 0; g < 2; g++) {
            ValId y = ir_if_yield(d, g, v);
            if (y && comes_from(W, y, from, seen, depth + 1))
                return true;
        }
        return false;
    }
    for (int i = 0; i < d->nargs; i++)
        if (comes_from(W, d->args[i], from, seen, depth + 1))
            return true;
    return false;
}

typedef struct CopyScan { const WsLoop *W; bool in_body; const Op *other; int once; } CopyScan;

/* A copy that is none of the loop's (its two in the body; before it, into
 * the ring buffers or the once-loaded one), and the copies into the
 * once-loaded buffer. */
static bool copy_visit(Func *f, Op *op, void *ctx)
{
    CopyScan *cs = ctx;
    const WsLoop *W = cs->W;
    (void)f;
    if (op->code != OP_ASYNC_COPY || cs->other)
        return true;
    ValId buf = op->args[0];
    if (cs->in_body)
        cs->other = op == W->opnd[0].copy || op == W->opnd[1].copy ? NULL : op;
    else if (buf == W->once.buf)
        cs->once++;
    else if (buf != W->opnd[0].buf && buf != W->opnd[1].buf)
        cs->other = op;
    return true;
}

/* Every copy of the kernel is the loop's (copy_visit). */
static void scan_copies(const WsLoop *W, CopyScan *cs)
{
    Block *top = &W->f->body;
    for (int i = 0; i < top->nops; i++) {
        Op *op = top->ops[i];
        if (op == W->loop)
            continue;
        ir_walk_op(W->f, op, copy_visit, cs);
    }
    cs->in_body = true;
    ir_walk(W->f, &W->loop->regions[0], copy_visit, cs);
}

typedef struct UseScan { ValId v; int n; } UseScan;

static bool use_visit(Func *f, Op *op, void *ctx)
{
    UseScan *u = ctx;
    (void)f;
    for (int i = 0; i < op->nargs; i++)
        u->n += op->args[i] == u->v;
    return true;
}

/* Uses of v in the kernel. */
static int uses_of(const WsLoop *W, ValId v)
{
    UseScan u = { v, 0 };
    ir_walk(W->f, &W->f->body, use_visit, &u);
    return u.n;
}

/* Uses of v in op and the ops nested in it. */
static int uses_in(const WsLoop *W, Op *op, ValId v)
{
    UseScan u = { v, 0 };
    ir_walk_op(W->f, op, use_visit, &u);
    return u.n;
}

/* The first product's A operand: read before the loop from a 1-slot
 * buffer that one copy fills before that; why not, or NULL. */
static const char *find_once(WsLoop *W, Arena *a)
{
    Func *f = W->f;
    Block *top = &f->body;
    const Op *rd = def_of(W, W->dots[0]->args[0]);
    if (!rd || rd->code != OP_SMEM_LOAD || rd->parent != top)
        return "its first product's A operand is not a tile read from shared memory before the loop";
    WsOperand *o = &W->once;
    o->buf = rd->args[0];
    o->read = (Op *)rd;
    const Op *alloc = def_of(W, o->buf);
    if (!alloc || alloc->code != OP_SMEM_ALLOC || alloc->parent != top || ir_type(f, o->buf)->shape[0] != 1)
        return "its first product's A operand is not read from a 1-slot buffer";
    int at = ir_block_index_of(top, W->loop), rd_at = ir_block_index_of(top, rd);
    for (int i = 0; i < rd_at && !o->copy; i++)
        if (top->ops[i]->code == OP_ASYNC_COPY && top->ops[i]->args[0] == o->buf)
            o->copy = top->ops[i];
    if (!o->copy)
        return "the buffer of its first product's A operand is not filled before it is read";
    /* The buffer: its copy and its read; the read: used in the loop alone. */
    if (uses_of(W, o->buf) != 2)
        return "the buffer of its first product's A operand has other uses than one copy and one read";
    for (int i = rd_at + 1; i < top->nops; i++)
        if (i != at && uses_in(W, top->ops[i], rd->res[0]))
            return arena_printf(a, "its first product's A operand is used outside the loop ('%s' at %s)",
                                op_info[top->ops[i]->code].name, pass_loc_str(a, f, top->ops[i]->loc));
    o->slot_bytes = tile_bytes(ir_type(f, rd->res[0]));
    return NULL;
}

/* Is each ring read (and its TRANS) used only by its product? */
static bool reads_private(const WsLoop *W)
{
    for (int i = 0; i < WS_OPERANDS; i++) {
        const WsOperand *o = &W->opnd[i];
        if (uses_of(W, o->read->res[0]) != 1 || (o->trans && uses_of(W, o->trans->res[0]) != 1))
            return false;
        ValId fed = o->trans ? o->trans->res[0] : o->read->res[0];
        if (o->dot->args[0] == fed || o->dot->args[2] == fed)
            return false;
    }
    return true;
}

/* Ring copies before the loop outside a guarded prologue stage. */
static bool bare_prologue_copy(const WsLoop *W)
{
    Block *top = &W->f->body;
    for (int i = 0; i < top->nops && top->ops[i] != W->loop; i++) {
        const Op *op = top->ops[i];
        if (op->code == OP_ASYNC_COPY && (op->args[0] == W->opnd[0].buf || op->args[0] == W->opnd[1].buf))
            return true;
    }
    return false;
}

const char *ws_chain_match(WsLoop *W, Arena *a)
{
    Func *f = W->f;
    Op *d0 = W->dots[0], *d1 = W->dots[1];
    W->chain = true;
    ws_mark_loop(W, a);
    uint8_t *seen = arena_alloc(a, (size_t)f->nvals + 1);
    memset(seen, 0, (size_t)f->nvals + 1);
    if (!comes_from(W, d1->args[0], d0->res[0], seen, 0))
        return "its two products are not chained (the second's A operand does not come from the first's result)";
    const Op *pa = def_of(W, d1->args[0]);
    if (!pa || pa->code == OP_SMEM_LOAD)
        return "its second product's A operand is not computed in registers";
    for (int i = 0; i < WS_OPERANDS; i++) {
        const char *why = ws_find_operand(W, i, W->dots[i], 1);
        if (why)
            return why;
    }
    if (W->opnd[0].buf == W->opnd[1].buf)
        return "both products read one buffer";
    const char *why = find_once(W, a);
    if (why)
        return why;
    if (!reads_private(W))
        return "a ring buffer's read feeds more than the B operand of its product";
    const Op *stray = ws_stray_op(W);
    if (stray)
        return arena_printf(a, "its body does more than the products, their reads and elementwise work ('%s' at %s)",
                            op_info[stray->code].name, pass_loc_str(a, f, stray->loc));
    CopyScan cs = { W, false, NULL, 0 };
    scan_copies(W, &cs);
    if (cs.other)
        return arena_printf(a, "the kernel copies into shared memory elsewhere too ('%s' at %s): the cp.async waits "
                            "before the loop count its groups", op_info[cs.other->code].name,
                            pass_loc_str(a, f, cs.other->loc));
    if (cs.once != 1)
        return "the buffer of its first product's A operand is filled more than once";
    why = ws_rings_problem(W, a);
    if (why)
        return why;
    if (bare_prologue_copy(W))
        return "a copy into its ring buffers before the loop is not a guarded prologue stage";
    why = ws_tma_problem(W, &W->once, a);
    if (why)
        return why;
    return ws_find_drain(W);
}

/* Can the second product be pipelined across trips: both products at the
 * body's top level, the first before the second, whose result is used
 * once, by the body's yield (the carried accumulator, W->pipe_at)? */
static bool pipe_form(WsLoop *W)
{
    Block *body = &W->loop->regions[0];
    const Op *y = body->nops ? body->ops[body->nops - 1] : NULL;
    Op *d0 = W->dots[0], *d1 = W->dots[1];
    int i0 = ir_block_index_of(body, d0), i1 = ir_block_index_of(body, d1);
    if (!y || y->code != OP_YIELD || i0 < 0 || i1 < i0 || uses_of(W, d1->res[0]) != 1)
        return false;
    W->pipe_at = -1;
    for (int i = 0; i < y->nargs; i++)
        if (y->args[i] == d1->res[0])
            W->pipe_at = i;
    if (W->pipe_at < 0)
        return false;
    for (int i = 0; i <= i0; i++)   /* the carried accumulator: first read after the first product */
        if (uses_in(W, body->ops[i], body->args[W->pipe_at + 1]))
            return false;
    return true;
}

const char *ws_chain_roles(const PassCtx *ctx, WsLoop *W, Arena *a)
{
    const Type *s = ir_type(W->f, W->dots[0]->res[0]), *o = ir_type(W->f, W->dots[1]->res[0]);
    const char *why = NULL;
    if (!pass_chain_roles(ctx, s->shape[0], s->shape[1], o->shape[1], &W->roles, a, &why))
        return why;
    W->consumers = W->roles.consumers;
    W->prod_regs = W->roles.prod_regs;
    W->cons_regs = W->roles.cons_regs;
    W->pipe = W->roles.pipelined && pipe_form(W);
    return NULL;
}

/* ---- the report ---- */

void ws_chain_report(PassCtx *ctx, const WsLoop *W, const char *at, const char *stages_why)
{
    Func *f = W->f;
    const Type *s = ir_type(f, W->dots[0]->res[0]);
    const ChainRoles *r = &W->roles;
    const char *q = ws_copied(f, W->once.copy), *k = ws_copied(f, W->opnd[0].copy), *v = ws_copied(f, W->opnd[1].copy);
    int64_t regs = WG_THREADS * ((int64_t)W->prod_regs + (int64_t)W->consumers * W->cons_regs);
    int64_t used = r->s_regs + r->o_regs + r->p_regs;
    pass_note(ctx, "@%s: loop at %s: warp-specialized, chained products: 1 producer warp group (TMA: %s once, %s and %s "
              "each trip), %d consumer warp group%s (%lld of the %lld rows each; the first product SS wgmma, the "
              "second RS wgmma with its A operand in registers)", f->name, at, q, k, v, W->consumers,
              W->consumers > 1 ? "s" : "", (long long)(s->shape[0] / W->consumers), (long long)s->shape[0]);
    const char *split = arena_printf(f->mod->arena, "S %lld + O %lld + P %lld = %lld a consumer thread, %lld left for "
                                     "the softmax", (long long)r->s_regs, (long long)r->o_regs, (long long)r->p_regs,
                                     (long long)used, (long long)(W->cons_regs - used));
    if (r->blocks > 1)
        pass_note(ctx, "@%s: loop at %s: registers %d / %d for %d blocks an SM (one consumer warp group leaves most "
                  "of an SM's tensor cores idle: each block takes %d of the %d registers, and its producer's floor "
                  "leaves its consumer the rest; %s; Q, two stages of K and V and O's scratch fit %d blocks in the "
                  "SM's %lld B)", f->name, at, W->prod_regs, W->cons_regs, r->blocks, (int)regs, BLOCK_REGS, split,
                  r->blocks, (long long)pass_sm_smem(ctx));
    else
        pass_note(ctx, "@%s: loop at %s: registers %d / %d (FlashAttention 3's split for %s; %s; %lld of %d a block)",
                  f->name, at, W->prod_regs, W->cons_regs, chain_split[W->consumers].what, split, (long long)regs,
                  BLOCK_REGS);
    if (W->pipe)
        pass_note(ctx, "@%s: loop at %s: the second product pipelined across trips (FlashAttention 3's overlap in a "
                  "warp group): trip j issues the product with %s of trip j, then the one with %s of trip j - 1, waits "
                  "for the first alone and runs the softmax while the second flies; P is kept a trip longer (S + O "
                  "+ 2 P = %lld of %d registers); the last trip's second product after the loop", f->name, at, k, v,
                  (long long)(used + r->p_regs), W->cons_regs);
    else
        pass_note(ctx, "@%s: loop at %s: the products run one after the other in each trip (%s)", f->name, at,
                  r->pipelined ? "the second product's result is not only the loop's carried accumulator"
                  : r->o_regs < r->s_regs
                      ? "the second product is shorter than the first (D below the key columns): too short to hide the "
                        "softmax, and the pipelined form measured 15% slower at D = 64 on the H200"
                      : arena_printf(f->mod->arena, "a second P in flight would leave fewer than %d of the %d registers "
                                     "for the softmax", pipe_headroom(r), W->cons_regs));
    pass_note(ctx, "@%s: loop at %s: %d stage%s (%s); %s %lld B and %s %lld B a stage, each on its own full and "
              "empty ring of %d mbarriers (count 1: the producer's expect, one release by the consumers after the "
              "product that reads it); %s %lld B in one slot on a one-shot ring, filled once before the loop and "
              "waited once with parity 0; the cp.async prologue, prefetch, waits and drain removed", f->name, at,
              W->stages, W->stages == 1 ? "" : "s", stages_why, k, (long long)W->opnd[0].slot_bytes, v,
              (long long)W->opnd[1].slot_bytes, W->stages, q, (long long)W->once.slot_bytes);
}

/* ---- the rewrite ---- */

void ws_chain_producer(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, ValId qfull)
{
    Func *f = W->f;
    Op *fo = W->loop;
    ValId c0 = bounds[0], c1 = bounds[2];
    Builder b = ir_builder_at_end(f, role);
    b.loc = W->once.copy->loc;
    ValMap m = pass_valmap_new(f, f->mod->arena);
    ws_ring_op(&b, OP_MBAR_EXPECT, qfull, c0, 0)->iattr[0] = W->once.slot_bytes;
    ws_emit_tma(W, &b, &m, W->once.copy, W->once.buf, c0, qfull);
    Op *pf = ws_role_loop(f, role, fo->loc, bounds, NULL, 0);
    b = ir_builder_at_end(f, &pf->regions[0]);
    b.loc = fo->loc;
    WsTrip t = ws_trip_of(&b, pf->regions[0].args[0], cs, c1);
    ValId flip = bin(&b, OP_XOR, t.phase, c1);
    pass_valmap_set(&m, W->ahead, ws_iv_of(&b, fo, pf->regions[0].args[0]));
    for (int i = 0; i < WS_OPERANDS; i++) {
        const WsOperand *o = &W->opnd[i];
        ws_ring_op(&b, OP_MBAR_WAIT, o->empty, t.slot, flip);
        ws_ring_op(&b, OP_MBAR_EXPECT, o->full, t.slot, 0)->iattr[0] = o->slot_bytes;
        ws_emit_tma(W, &b, &m, o->copy, o->buf, t.slot, o->full);
    }
    build0(&b, OP_YIELD, NULL, 0);
}

/* The ring's bookkeeping in the body: cp.async waits, commits and
 * barriers, the copies and the IFs guarding them. */
bool ws_chain_bookkeeping(const WsLoop *W, const Op *op)
{
    if (op->code == OP_ASYNC_WAIT || op->code == OP_ASYNC_COMMIT || op->code == OP_BARRIER)
        return true;
    for (int i = 0; i < WS_OPERANDS; i++)
        if (op == W->opnd[i].copy || op == W->opnd[i].guard)
            return true;
    return false;
}

const WsOperand *ws_chain_ring_read(const WsLoop *W, const Op *op)
{
    for (int i = 0; i < WS_OPERANDS; i++)
        if (op == W->opnd[i].read || op == W->opnd[i].trans)
            return &W->opnd[i];
    return NULL;
}

/* The pipelined second product (W->pipe): its ring slot and phase of trip
 * `it` (the trip before, clamped at 0: trip 0 waits for and reads the first
 * slot with a product of zeros, and releases nothing). */
typedef struct PipeV { ValId it, zero, one, slot, phase, pprev, acc; Op *da; } PipeV;

static WsTrip trip_before(Builder *b, ValId it, ValId cs, const ValId bounds[3])
{
    ValId prev = bin(b, OP_MAX, bin(b, OP_SUB, it, bounds[2]), bounds[0]);
    return ws_trip_of(b, prev, cs, bounds[2]);
}

/* if cond { op ring, slot[, phase] } */
static void ring_op_if(Func *f, Builder *b, ValId cond, OpCode c, ValId ring, ValId slot, ValId phase)
{
    Op *iff = build0(b, OP_IF, &cond, 1);
    Builder t = ir_builder_at_end(f, &iff->regions[0]);
    t.loc = b->loc;
    ws_ring_op(&t, c, ring, slot, phase);
    build0(&t, OP_YIELD, NULL, 0);
    Builder e = ir_builder_at_end(f, &iff->regions[1]);
    e.loc = b->loc;
    build0(&e, OP_YIELD, NULL, 0);
}

/* Issue the second product of the trip before: wait for V's slot, read it,
 * dot_async(P of that trip, V, the carried accumulator). The wait is
 * skipped when `it` (the trip, or the trip count in the drain) is 1: trip 0
 * waited for the same slot and phase (its product of zeros reads trip 0's
 * V), and a role waits once for each phase. */
static Op *issue_prev(WsLoop *W, Builder *b, ValId slot, ValId phase, ValId p, ValId acc, ValId it, ValId one)
{
    const WsOperand *o = &W->opnd[1];
    Func *f = W->f;
    ring_op_if(f, b, cmp_pred(b, CMP_NE, it, one), OP_MBAR_WAIT, o->full, slot, phase);
    Op *rd = ir_build(b, OP_SMEM_LOAD, (ValId[]){ o->buf, slot }, 2, ir_type(f, o->read->res[0]), 1);
    rd->loc = o->read->loc;
    Type tok = type_scalar(DT_TOKEN);
    Op *da = ir_build(b, OP_DOT_ASYNC, (ValId[]){ p, rd->res[0], acc }, 3, &tok, 1);
    da->iattr[0] = MMA_WGMMA;
    da->loc = W->dots[1]->loc;
    return da;
}

/* The product of ring operand o in the consumer's trip: wait until its
 * slot is full, read it, run the product asynchronously, wait for it,
 * release the slot. */
static void consume_issue(WsLoop *W, Block *body, const WsOperand *o, WsTrip t, PipeV *pv);

static void consume(WsLoop *W, Block *body, const WsOperand *o, WsTrip t)
{
    consume_issue(W, body, o, t, NULL);
}

/* consume; with pv (the pipelined first product), the second product of
 * the trip before is issued right after this one, and this one's wait
 * lets that one fly ({pending = 1}). */
static void consume_issue(WsLoop *W, Block *body, const WsOperand *o, WsTrip t, PipeV *pv)
{
    Func *f = W->f;
    Op *dot = o->dot;
    Builder b = ir_builder_at_end(f, body);
    b.loc = o->read->loc;
    ws_ring_op(&b, OP_MBAR_WAIT, o->full, t.slot, t.phase);
    o->read->args[1] = t.slot;
    ir_block_append(f, body, o->read);
    if (o->trans)
        ir_block_append(f, body, o->trans);
    b.loc = dot->loc;
    Type tok = type_scalar(DT_TOKEN), acc = *ir_type(f, dot->res[0]);
    Op *da = ir_build(&b, OP_DOT_ASYNC, dot->args, 3, &tok, 1);
    da->iattr[0] = MMA_WGMMA;
    if (pv)
        pv->da = issue_prev(W, &b, pv->slot, pv->phase, pv->pprev, pv->acc, pv->it, pv->one);
    Op *dw = ir_build(&b, OP_DOT_WAIT, da->res, 1, &acc, 1);
    dw->iattr[0] = pv ? 1 : 0;
    ir_replace_all_uses(f, dot->res[0], dw->res[0]);
    b.loc = W->loop->loc;
    ws_ring_op(&b, OP_MBAR_ARRIVE, o->empty, t.slot, 0);
}

static bool uses_val(Func *f, Op *op, void *ctx)
{
    (void)f;
    ValId *v = ctx;
    for (int i = 0; i < op->nargs && *v; i++)
        if (op->args[i] == *v)
            *v = 0;
    return *v != 0;
}

/* The pipelined trip, once the body is built: the product of trip j - 1
 * is retired just before the first use of the carried accumulator (the
 * rescale), which then reads the retired value; the slot is released
 * (from trip 1: trip 0's product was of zeros), and the yield carries the
 * rescaled accumulator and this trip's P. */
static void pipe_finish(WsLoop *W, Block *body, PipeV *pv, ValId p_now, ValId acc_now)
{
    Func *f = W->f;
    ValId carried = pv->acc;
    int at = body->nops - 1;   /* the yield */
    for (int i = ir_block_index_of(body, pv->da) + 1; i < body->nops - 1; i++) {
        ValId v = carried;
        ir_walk_op(f, body->ops[i], uses_val, &v);
        if (!v) {
            at = i;
            break;
        }
    }
    Builder b = ir_builder_before(f, body->ops[at]);
    b.loc = W->dots[1]->loc;
    Type acc = *ir_type(f, carried);
    Op *dw = ir_build(&b, OP_DOT_WAIT, pv->da->res, 1, &acc, 1);
    dw->iattr[0] = 0;
    b.loc = W->loop->loc;
    ring_op_if(f, &b, cmp_pred(&b, CMP_GT, pv->it, pv->zero), OP_MBAR_ARRIVE, W->opnd[1].empty, pv->slot, 0);
    ir_replace_all_uses(f, carried, dw->res[0]);
    pv->da->args[2] = carried;   /* the product accumulates onto the carried value itself */
    if (acc_now == carried)
        acc_now = dw->res[0];
    Op *y = body->ops[body->nops - 1];
    ValId *ys = arena_alloc(f->mod->arena, sizeof(ValId) * (size_t)(y->nargs + 1));
    memcpy(ys, y->args, sizeof(ValId) * (size_t)y->nargs);
    ys[W->pipe_at] = acc_now;
    ys[y->nargs] = p_now;
    Builder yb = ir_builder_at_end(f, body);
    yb.loc = y->loc;
    build0(&yb, OP_YIELD, ys, y->nargs + 1);
    ir_block_remove(body, body->nops - 2);
}

/* After the pipelined loop: the last trip's second product (none when
 * there was no trip); its value replaces the loop's accumulator. */
static ValId pipe_drain(WsLoop *W, Builder *b, Op *cf, const ValId bounds[3], ValId cs)
{
    Func *f = W->f;
    int n = cf->nres - 1;
    ValId acc = cf->res[W->pipe_at], p = cf->res[n];
    ValId any = cmp_pred(b, CMP_GT, bounds[1], bounds[0]);
    WsTrip last = trip_before(b, bounds[1], cs, bounds);
    Type at = *ir_type(f, acc);
    Op *iff = ir_build(b, OP_IF, &any, 1, &at, 1);
    Builder t = ir_builder_at_end(f, &iff->regions[0]);
    t.loc = W->dots[1]->loc;
    Op *da = issue_prev(W, &t, last.slot, last.phase, p, acc, bounds[1], bounds[2]);
    Op *dw = ir_build(&t, OP_DOT_WAIT, da->res, 1, &at, 1);
    dw->iattr[0] = 0;
    t.loc = W->loop->loc;
    ws_ring_op(&t, OP_MBAR_ARRIVE, W->opnd[1].empty, last.slot, 0);
    build0(&t, OP_YIELD, dw->res, 1);
    Builder e = ir_builder_at_end(f, &iff->regions[1]);
    e.loc = W->loop->loc;
    build0(&e, OP_YIELD, &acc, 1);
    return iff->res[0];
}

/* The consumer role: Q, then the trip loop; returns the values that stand
 * for the original loop's results (out[i]). */
static void chain_consumer(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, ValId qfull, ValId *out)
{
    Func *f = W->f;
    Op *fo = W->loop;
    Block *old = &fo->regions[0], *top = &f->body;
    Builder rb = ir_builder_at_end(f, role);
    rb.loc = W->once.read->loc;
    ws_ring_op(&rb, OP_MBAR_WAIT, qfull, bounds[0], bounds[0]);
    ir_block_remove(top, ir_block_index_of(top, W->once.read));
    ir_block_append(f, role, W->once.read);
    int n = fo->nres, pipe = W->pipe;
    ValId *inits = arena_alloc(f->mod->arena, sizeof(ValId) * (size_t)(n + 1));
    memcpy(inits, &fo->args[3], sizeof(ValId) * (size_t)n);
    if (pipe) {   /* P of "trip -1": zeros */
        rb.loc = W->dots[1]->loc;
        inits[n] = ir_const_float(&rb, *ir_type(f, W->dots[1]->args[0]), 0.0);
    }
    Op *cf = ws_role_loop(f, role, fo->loc, bounds, inits, n + pipe);
    Block *body = &cf->regions[0];
    Builder b = ir_builder_at_end(f, body);
    b.loc = fo->loc;
    WsTrip t = ws_trip_of(&b, body->args[0], cs, bounds[2]);
    PipeV pv = { body->args[0], bounds[0], bounds[2], 0, 0, pipe ? body->args[n + 1] : 0,
                 pipe ? body->args[W->pipe_at + 1] : 0, NULL };
    if (pipe) {
        WsTrip tb = trip_before(&b, body->args[0], cs, bounds);
        pv.slot = tb.slot, pv.phase = tb.phase;
    }
    ir_replace_all_uses(f, old->args[0], ws_iv_of(&b, fo, body->args[0]));
    for (int i = 1; i < old->nargs; i++)
        ir_replace_all_uses(f, old->args[i], body->args[i]);
    ValId p_now = 0, acc_now = 0;
    while (old->nops) {
        Op *op = old->ops[0];
        ir_block_remove(old, 0);
        if (ws_chain_bookkeeping(W, op) || ws_chain_ring_read(W, op))
            continue;
        if (pipe && op == W->dots[1]) {   /* issued in the next trip (or after the loop) */
            p_now = op->args[0], acc_now = op->args[2];
            continue;
        }
        if (pipe && op == W->dots[0]) {
            consume_issue(W, body, &W->opnd[0], t, &pv);
            continue;
        }
        const WsOperand *o = NULL;
        for (int i = 0; i < WS_OPERANDS; i++)
            if (op == W->opnd[i].dot)
                o = &W->opnd[i];
        if (o)
            consume(W, body, o, t);
        else
            ir_block_append(f, body, op);
    }
    if (pipe)
        pipe_finish(W, body, &pv, p_now, acc_now);
    drop_dead(f, body);
    for (int i = 0; i < n; i++)
        out[i] = cf->res[i];
    if (pipe) {
        Builder db = ir_builder_at_end(f, role);
        db.loc = fo->loc;
        out[W->pipe_at] = pipe_drain(W, &db, cf, bounds, cs);
    }
}

WsChainRings ws_chain_begin(WsLoop *W, Builder *b)
{
    WsChainRings r;
    ValId c0 = cst(b, 0), c1 = cst(b, 1);
    r.cs = cst(b, W->stages);
    r.bounds[0] = c0, r.bounds[1] = ws_trip_count(b, W->loop, c1), r.bounds[2] = c1;
    Loc loc = b->loc;
    b->loc = W->once.copy->loc;
    r.qfull = ws_new_ring(b, 1, "once");
    b->loc = loc;
    for (int i = 0; i < WS_OPERANDS; i++) {
        W->opnd[i].full = ws_new_ring(b, W->stages, "full");
        W->opnd[i].empty = ws_new_ring(b, W->stages, "empty");
    }
    return r;
}

void ws_chain_rewrite(PassCtx *ctx, WsLoop *W, const char *at)
{
    Func *f = W->f;
    Builder b = ir_builder_before(f, W->loop);
    WsChainRings cr = ws_chain_begin(W, &b);
    ValId *bounds = cr.bounds, cs = cr.cs, qfull = cr.qfull;
    Op *ws = build0(&b, OP_WS, NULL, 0);
    ir_ws_add_role(f, ws, ROLE_PRODUCER, 1, W->prod_regs);
    ir_ws_add_role(f, ws, ROLE_CONSUMER, W->consumers, W->cons_regs);
    if (W->roles.blocks > 1)
        ws->iattr[0] = W->roles.blocks;
    ws_chain_producer(W, &ws->regions[0], bounds, cs, qfull);
    ValId *out = arena_alloc(f->mod->arena, sizeof(ValId) * (size_t)(W->loop->nres + 1));
    chain_consumer(W, &ws->regions[1], bounds, cs, qfull, out);
    ws_move_epilogue(W, &ws->regions[1]);
    for (int i = 0; i < W->loop->nres; i++)
        ir_replace_all_uses(f, W->loop->res[i], out[i]);
    ws_remove_ring(W);
    for (int i = 0; i < WS_OPERANDS; i++)   /* the rings' slots: S stages */
        ir_type(f, W->opnd[i].buf)->shape[0] = W->stages;
    ws_make_persistent(ctx, f, ws, cs, bounds[1], qfull, at);
}
