/* warp_specialize.c - the warp_specialize pass: a pipelined loop over one
 * wgmma product, or over two chained ones (attention:
 * warp_specialize_chain.c, whose header has that form), becomes two roles
 * of a `ws` that meet only on mbarrier rings. A producer warp group fills
 * the ring's slots with TMA copies; the consumer warp groups wait for each
 * slot, run the product asynchronously and release the slot, then run the
 * kernel's epilogue. Below: the rules for one product, and those both
 * forms share (the target, the windows, the stages).
 *
 * Needs: verified IR after mma_select and double_buffer. It fires only on
 * a target with wgmma or tcgen05, TMA and setmaxnreg (TargetInfo.mma &
 * (TC_MMA_WGMMA | TC_MMA_TCGEN05), .tma, .setmaxnreg: sm_90a, sm_100a);
 * a product mma_select gave tcgen05 takes the form of
 * warp_specialize_tc.c (an mma role and tensor memory), two chained ones
 * that of warp_specialize_chain_tc.c (S, P and O in tensor memory, softmax
 * warp groups), and one left in place goes back to mma_sync. A loop
 * qualifies when
 *  - it is a FOR at the kernel's top level (a ws does not nest), the
 *    kernel has no ws yet, and the loop carries only the accumulator;
 *  - its body, as double_buffer left it, holds one DOT with mma = wgmma
 *    (or tcgen05)
 *    whose accumulator is the carried value and whose result is yielded;
 *    both operands are SMEM_LOADs of two ring buffers refilled in the body
 *    by one ASYNC_COPY each (B of a wgmma product may be the TRANS of its
 *    read: stored [N, K], read K-major), and the rest of the body is the ring's
 *    bookkeeping (pure ops, the guarded prefetch, commits, waits,
 *    barriers); the buffers are used nowhere else but in the prologue;
 *  - each copy's offsets depend only on the iteration it fetches (iv +
 *    (S-1) * step, guarded by `< hi`; iv itself for one stage) and values
 *    from outside the loop;
 *  - each window is TMA-able: a tensor of rank <= 5 whose last dim is the
 *    tile's rows, rows of a multiple of 16 bytes, at most 256 rows, and a
 *    descriptor layout exists for TMA writes and wgmma reads
 *    (pass_smem_select; the box the runtime gets is one swizzle panel);
 *  - the accumulator splits over the consumer warp groups (below) and
 *    leaves the consumers WS_REG_HEADROOM registers.
 * Any other loop keeps double_buffer's cp.async ring unchanged, and the
 * report says why.
 *
 * Why a pass after double_buffer rather than a TMA mode of it:
 * double_buffer already decided which loads are staged and proved their
 * offsets a function of the induction variable; what this pass adds is
 * whether the whole loop splits into roles (one product, TMA-able
 * windows, the target's roles and registers), which is a question about
 * the loop and its epilogue, not about a load. So the portable path has
 * one writer, and this pass rebuilds its ring when the loop qualifies.
 *
 * Decisions (each reported with its reason):
 *  - consumer warp groups C: 2 when the accumulator has >= 128 rows (each
 *    takes M/2 rows, which must be a multiple of 64), else 1;
 *  - registers (setmaxnreg, producer / consumers): C = 2: 40 / 232, or
 *    24 / 240 when the accumulator takes >= 208 f32 registers a consumer
 *    thread (M x N / (C x 128)), CUTLASS's sm90 split; C = 1: 56 / 256,
 *    FlashAttention 3's split for one consumer warp group; every split
 *    needs at most 65536 registers a block (sum x 128 threads);
 *  - stages S: the loop's pipeline(S) hint (a user pin; fewer only when S
 *    stages cannot fit), else as many as fit up to 4. The budget is the
 *    block's shared memory (the target's, or target.smem-per-block) less
 *    the other buffers and the epilogue's staging (a tile declared shared
 *    and stored leaves through shared memory); a stage is its slots and
 *    its two mbarriers (four for chained products: a ring pair each).
 *
 * Guarantees: results are unchanged for any trip count (0, 1, fewer than
 * S, many): the interpreter gives bit-identical output. The loop becomes
 * (slot s = it mod S, phase = (it div S) & 1, it = 0 .. T-1 with T the
 * loop's trip count; ops before the loop stay outside the ws, both roles
 * use them):
 *   %full = mbar_alloc {count = 1}   (the producer's expect is the arrival)
 *   %empty = mbar_alloc {count = 1}  (one release a phase by the consumers)
 *   ws {roles = [(producer, 1, P), (consumer, C, R)]} {
 *     for 0, T, 1: mbar_wait %empty, s, phase ^ 1;
 *                  mbar_expect %full, s {bytes = the boxes' bytes};
 *                  tma_load %bufA, s, %full, s, %A, offsets... (likewise B)
 *   } {
 *     %acc = for 0, T, 1 (acc): mbar_wait %full, s, phase;
 *                  smem_load both; dot_async {mma = wgmma};
 *                  dot_wait {pending = 0}; mbar_arrive %empty, s
 *     the epilogue (every op after the loop, less the cp.async drain; a
 *     barrier with shared accesses after it becomes a named_bar over the
 *     consumers' threads, one with none is dropped)
 *   }
 * The cp.async prologue, prefetch and drain go; the buffers keep their
 * allocs with S slots. The protocol pass proves the rings for any trip
 * count; swizzle gives the buffers descriptor modes, smem_alloc places the
 * rings, schedule gives the block 4 warps per warp group.
 *
 * This file is the driver (which loops, which form, the decisions, the
 * report for one product); the rewrite of one product and the builders
 * both forms use are warp_specialize_roles.c; chained products are
 * warp_specialize_chain.c (shared: warp_specialize_int.h).
 */
#include "warp_specialize_int.h"
#include "smem_model.h"

#include <string.h>

/* What the target lacks for roles ("" if nothing), as a list. */
static const char *lacks(Arena *a, const TargetInfo *t)
{
    if (!t)
        return "no wgmma or tcgen05, no TMA, no setmaxnreg";
    const char *s = "";
    if (!(t->mma & (TC_MMA_WGMMA | TC_MMA_TCGEN05)))
        s = "no wgmma or tcgen05";
    if (!t->tma)
        s = arena_printf(a, "%s%sno TMA", s, *s ? ", " : "");
    if (!t->setmaxnreg)
        s = arena_printf(a, "%s%sno setmaxnreg", s, *s ? ", " : "");
    return s;
}

bool pass_target_roles(const PassCtx *ctx)
{
    const TargetInfo *t = ctx->target;
    return !ctx->portable && t && (t->mma & TC_MMA_WGMMA) && t->tma && t->setmaxnreg;
}

const char *ws_copied(const Func *f, const Op *copy)
{
    const char *n = ir_val(f, copy->args[2])->name;
    return n ? n : "?";
}

/* ---- which loops ---- */

static bool mark_visit(Func *f, Op *op, void *ctx)
{
    bool *in = ctx;
    for (int i = 0; i < op->nres; i++)
        in[op->res[i]] = true;
    for (int g = 0; g < op->nregions; g++)
        for (int i = 0; i < op->regions[g].nargs; i++)
            in[op->regions[g].args[i]] = true;
    (void)f;
    return true;
}

static bool copies_into(const Op *op, ValId buf) { return op->code == OP_ASYNC_COPY && op->args[0] == buf; }

/* The one ASYNC_COPY into buf among the body's ops: at its top level, or in
 * the then-branch of an IF there (*guard = the IF, else NULL). NULL when
 * there is none, more than one, or one in an else-branch. */
static Op *find_copy(Block *body, ValId buf, Op **guard)
{
    Op *found = NULL;
    int n = 0;
    for (int i = 0; i < body->nops; i++) {
        Op *op = body->ops[i];
        if (copies_into(op, buf))
            found = op, *guard = NULL, n++;
        for (int g = 0; op->code == OP_IF && g < op->nregions; g++)
            for (int k = 0; k < op->regions[g].nops; k++)
                if (copies_into(op->regions[g].ops[k], buf)) {
                    if (g)
                        return NULL;
                    found = op->regions[g].ops[k], *guard = op, n++;
                }
    }
    return n == 1 ? found : NULL;
}

/* The iteration a copy fetches: iv when unguarded, else the guard's
 * `ahead < hi`. 0 when the guard has another form. */
static ValId fetched(const WsLoop *W, const Op *guard)
{
    if (!guard)
        return W->loop->regions[0].args[0];
    const Op *c = ir_val(W->f, guard->args[0])->def;
    if (!c || c->code != OP_CMP || c->iattr[0] != CMP_LT || c->args[1] != W->loop->args[1] || guard->nres)
        return 0;
    return c->args[0];
}

static bool is_operand_read(const WsLoop *W, const Op *op)
{
    return op == W->opnd[0].read || op == W->opnd[1].read;
}

static bool is_operand_copy(const WsLoop *W, const Op *op)
{
    return op->code == OP_ASYNC_COPY && (op->args[0] == W->opnd[0].buf || op->args[0] == W->opnd[1].buf);
}

/* The first op of b (the body, or an arm of an IF in it, `depth` IFs
 * down) that is not a product, an operand's read, pure work (no product)
 * or the ring's bookkeeping (its copies in the body or one IF down, waits,
 * commits, barriers); NULL when there is none. */
static const Op *stray_in(const WsLoop *W, const Block *b, int depth)
{
    for (int i = 0; i < b->nops; i++) {
        const Op *op = b->ops[i];
        if (op->code == OP_IF) {
            for (int g = 0; g < 2; g++) {
                const Op *s = stray_in(W, &op->regions[g], depth + 1);
                if (s)
                    return s;
            }
            continue;
        }
        bool pure = (op_info[op->code].flags & OPF_PURE) && !op->nregions && op->code != OP_DOT;
        bool top = depth == 0;
        bool ok = pure || op->code == OP_YIELD || (depth <= 1 && is_operand_copy(W, op)) ||
                  (top && (op == W->dots[0] || op == W->dots[1] || is_operand_read(W, op) ||
                           op->code == OP_ASYNC_WAIT || op->code == OP_ASYNC_COMMIT || op->code == OP_BARRIER));
        if (!ok)
            return op;
    }
    return NULL;
}

const Op *ws_stray_op(const WsLoop *W) { return stray_in(W, &W->loop->regions[0], 0); }

typedef struct BufUse { ValId buf; bool copies_ok, stray; } BufUse;

/* A use of the buffer that is not a prologue copy (copies_ok: before the loop). */
static bool buf_use_visit(Func *f, Op *op, void *ctx)
{
    BufUse *u = ctx;
    (void)f;
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i] == u->buf && !(u->copies_ok && op->code == OP_ASYNC_COPY))
            u->stray = true;
    return !u->stray;
}

bool ws_buffer_elsewhere(const WsLoop *W, ValId buf)
{
    Block *top = &W->f->body;
    int at = ir_block_index_of(top, W->loop);
    BufUse u = { buf, true, false };
    for (int i = 0; i < top->nops && !u.stray; i++) {
        Op *op = top->ops[i];
        u.copies_ok = i < at;
        if (op == W->loop)
            continue;
        ir_walk_op(W->f, op, buf_use_visit, &u);
    }
    return u.stray;
}

/* A wait between the loop's prologue and the loop would count the
 * prologue's copy groups, which the rewrite removes. */
static bool wait_after_prologue(const WsLoop *W)
{
    Block *top = &W->f->body;
    bool seen = false;
    for (int i = 0; i < top->nops && top->ops[i] != W->loop; i++) {
        Op *op = top->ops[i];
        seen = seen || ws_prologue_stage(W, op);
        if (seen && op->code == OP_ASYNC_WAIT)
            return true;
    }
    return false;
}

const char *ws_find_operand(WsLoop *W, int i, Op *dot, int arg)
{
    Block *body = &W->loop->regions[0];
    const Op *rd = ir_val(W->f, dot->args[arg])->def;
    Op *tr = NULL;
    /* A transposed read: k^T of a chain; a lone wgmma product's B given as
     * [N, K] rows (K-major, as f8 operands must be) */
    bool trans_ok = W->chain || (arg == 1 && dot->iattr[0] == MMA_WGMMA);
    if (trans_ok && rd && rd->code == OP_TRANS && rd->parent == body) {
        tr = (Op *)rd;
        rd = ir_val(W->f, rd->args[0])->def;
    }
    const char *which = W->chain ? (W->dots[0] == dot ? "first product's" : "second product's") : "product's";
    if (!rd || rd->code != OP_SMEM_LOAD || rd->parent != body)
        return arena_printf(W->f->mod->arena, "its %s %s operand is not read from a ring buffer of the loop", which,
                            arg ? "B" : "A");
    WsOperand *o = &W->opnd[i];
    o->buf = rd->args[0];
    o->read = (Op *)rd;
    o->trans = tr;
    o->dot = dot;
    Op *guard = NULL;
    o->copy = find_copy(body, o->buf, &guard);
    o->guard = guard;
    if (!o->copy)
        return arena_printf(W->f->mod->arena, "its %s %s operand's buffer is not refilled by one copy in the loop", which,
                            arg ? "B" : "A");
    ValId ahead = fetched(W, guard);
    if (!ahead || (W->ahead && ahead != W->ahead))
        return "its copies are not the guarded prefetch double_buffer makes";
    W->ahead = ahead;
    const Type *st = ir_type(W->f, rd->res[0]);
    o->slot_bytes = tile_bytes(st);
    return NULL;
}

const char *ws_tma_problem(const WsLoop *W, const WsOperand *o, Arena *a)
{
    const Op *c = o->copy;
    const Type *tt = ir_type(W->f, c->args[2]), *st = ir_type(W->f, o->read->res[0]);
    const char *name = ws_copied(W->f, c);
    int eb = dtype_bits((DType)st->dtype) / 8;
    if (tt->rank > WS_MAX_RANK)
        return arena_printf(a, "%s has %d dims (a TMA tensor map takes at most %d)", name, tt->rank, WS_MAX_RANK);
    if (c->list[tt->rank - 1] == 0)
        return arena_printf(a, "the window of %s takes one element of its last dim (a TMA box's rows run along it)",
                            name);
    if (st->shape[1] * eb % 16)
        return arena_printf(a, "the rows of %s's window are %lld bytes, not a multiple of 16", name,
                            (long long)(st->shape[1] * eb));
    if (st->shape[0] > WS_MAX_BOX)
        return arena_printf(a, "the window of %s has %lld rows, above a TMA box's %d", name, (long long)st->shape[0],
                            WS_MAX_BOX);
    static const SmemUse uses[] = { { SA_TMA, true, 1 }, { SA_MMA_DESC, true, 1 } };
    SmemDecision dec;
    if (pass_smem_select(a, (DType)st->dtype, st->shape[0], st->shape[1], uses, 2, &dec, NULL, c->loc))
        return arena_printf(a, "the window of %s has no layout TMA and wgmma descriptors share: %s", name, dec.explain);
    return NULL;
}

void ws_mark_loop(WsLoop *W, Arena *a)
{
    W->in_loop = arena_alloc(a, sizeof(bool) * (W->f->nvals + 1));
    memset(W->in_loop, 0, sizeof(bool) * (W->f->nvals + 1));
    mark_visit(W->f, W->loop, W->in_loop);
    ir_walk(W->f, &W->loop->regions[0], mark_visit, W->in_loop);
}

const char *ws_find_drain(WsLoop *W)
{
    Block *top = &W->f->body;
    int at = ir_block_index_of(top, W->loop);
    Op *w = at + 1 < top->nops ? top->ops[at + 1] : NULL;
    Op *b = at + 2 < top->nops ? top->ops[at + 2] : NULL;
    if (!w || w->code != OP_ASYNC_WAIT || w->iattr[0] != 0 || !b || b->code != OP_BARRIER)
        return "no cp.async drain follows it";
    W->drain[0] = w, W->drain[1] = b;
    return NULL;
}

const char *ws_rings_problem(const WsLoop *W, Arena *a)
{
    for (int i = 0; i < WS_OPERANDS; i++) {
        for (int k = 1; k < W->opnd[i].copy->nargs - 2; k++)
            if (!ws_offset_ok(W, W->opnd[i].copy->args[2 + k], 0))
                return "its copies' offsets depend on more than the iteration they fetch";
        if (ws_buffer_elsewhere(W, W->opnd[i].buf))
            return "its ring buffers are used outside the loop and its prologue";
        const char *why = ws_tma_problem(W, &W->opnd[i], a);
        if (why)
            return why;
    }
    return NULL;
}

/* The loop's one product, its operands and drain; why not, or NULL. */
static const char *match_loop(WsLoop *W, Arena *a)
{
    Func *f = W->f;
    Op *fo = W->loop;
    Block *body = &fo->regions[0];
    if (fo->nres != 1)
        return arena_printf(a, "it carries %d values (roles take a loop over one product that carries only the "
                            "accumulator)", fo->nres);
    const Op *y = ir_block_yield(body);
    if (W->dot->args[2] != body->args[1] || !y || y->args[0] != W->dot->res[0])
        return "its product does not accumulate into the carried value";
    for (int i = 0; i < WS_OPERANDS; i++) {
        const char *why = ws_find_operand(W, i, W->dot, i);
        if (why)
            return why;
    }
    if (W->opnd[0].buf == W->opnd[1].buf)
        return "both operands read one buffer";
    const Op *stray = ws_stray_op(W);
    if (stray)
        return arena_printf(a, "its body does more than feed the product ('%s' at %s)", op_info[stray->code].name,
                            pass_loc_str(a, f, stray->loc));
    ws_mark_loop(W, a);
    const char *why = ws_rings_problem(W, a);
    if (why)
        return why;
    if (wait_after_prologue(W))
        return "a wait between its prologue and the loop counts the prologue's copy groups";
    return ws_find_drain(W);
}

/* Why a product cannot run in the roles (NULL: it can). */
static const char *product_problem(const Op *dot, Arena *a, const char *which)
{
    if (dot->iattr[0] == MMA_NONE || dot->iattr[0] == MMA_SIMT)
        return arena_printf(a, "its %s has no tensor-core instruction (mma_select says why)", which);
    if (dot->iattr[0] != MMA_WGMMA && dot->iattr[0] != MMA_TCGEN05)
        return arena_printf(a, "its %s runs on %s (mma_select says why)", which, mma_names[dot->iattr[0]]);
    return NULL;
}

/* Which form the loop has (one product, or two chained), and whether it
 * qualifies; why not, or NULL. */
static const char *match(WsLoop *W, Arena *a)
{
    Block *body = &W->loop->regions[0];
    if (W->loop->parent != &W->f->body)
        return "it is not at the kernel's top level (roles do not nest)";
    int ndots = 0;
    for (int i = 0; i < body->nops; i++)
        if (body->ops[i]->code == OP_DOT && ndots++ < 2)
            W->dots[ndots - 1] = body->ops[i];
    if (ndots < 1 || ndots > 2)
        return arena_printf(a, "its body holds %d products (roles take one, or two chained)", ndots);
    W->dot = W->dots[0];
    for (int i = 0; i < ndots; i++) {
        const char *why = product_problem(W->dots[i], a, ndots == 1 ? "product" : i ? "second product" :
                                          "first product");
        if (why)
            return why;
    }
    if (ndots == 2 && W->dots[0]->iattr[0] != W->dots[1]->iattr[0])
        return arena_printf(a, "its products run on %s and %s (chained products take one family)",
                            mma_names[W->dots[0]->iattr[0]], mma_names[W->dots[1]->iattr[0]]);
    return ndots == 1 ? match_loop(W, a) : ws_chain_match(W, a);
}

/* ---- decisions ---- */

static bool is_f8(int dt) { return dt == DT_F8E4M3 || dt == DT_F8E5M2; }

int64_t pass_lone_consumer_regs(DType dt, int64_t m, int64_t n)
{
    int consumers = m >= WS_TWO_GROUPS_ROWS ? 2 : 1;
    return m * n / (consumers * WG_THREADS) + (is_f8(dt) ? n / 2 : 0) + WS_REG_HEADROOM;
}

/* The consumers' setmaxnreg budget for an [m, n] accumulator (decide_roles'
 * split). */
static int cons_budget(int64_t m, int64_t n)
{
    if (m < WS_TWO_GROUPS_ROWS)
        return 256;
    return m * n / (2 * WG_THREADS) >= 208 ? 240 : 232;
}

bool pass_lone_roles_fit(DType dt, int64_t m, int64_t n) { return pass_lone_consumer_regs(dt, m, n) <= cons_budget(m, n); }

/* Consumer warp groups and the register split; why not, or NULL. */
static const char *decide_roles(WsLoop *W, Arena *a)
{
    const Type *acc = ir_type(W->f, W->dot->res[0]);
    int64_t m = acc->shape[0], n = acc->shape[1];
    DType dt = (DType)ir_type(W->f, W->dot->args[0])->dtype;
    W->consumers = m >= WS_TWO_GROUPS_ROWS ? 2 : 1;
    if ((m / W->consumers) % WGMMA_M)
        return arena_printf(a, "its %lld accumulator rows do not split into %d warp groups of a multiple of 64",
                            (long long)m, W->consumers);
    W->acc_regs = m * n / (W->consumers * WG_THREADS);
    if (W->consumers == 2) {
        bool big = W->acc_regs >= 208;
        W->prod_regs = big ? 24 : 40;
        W->cons_regs = big ? 240 : 232;
    } else {
        W->prod_regs = 56;
        W->cons_regs = 256;
    }
    if (W->acc_regs + WS_REG_HEADROOM > W->cons_regs)
        return arena_printf(a, "its accumulator takes %lld f32 registers a consumer thread, leaving fewer than %d of "
                            "the %d a consumer may have", (long long)W->acc_regs, WS_REG_HEADROOM, W->cons_regs);
    if (pass_lone_consumer_regs(dt, m, n) > W->cons_regs)
        return arena_printf(a, "its accumulator takes %lld f32 registers a consumer thread and the 8-bit product's "
                            "promotion %lld more, leaving fewer than %d of the %d a consumer may have",
                            (long long)W->acc_regs, (long long)(n / 2), WS_REG_HEADROOM, W->cons_regs);
    return NULL;
}

bool ws_staging_visit(Func *f, Op *op, void *ctx)
{
    int64_t *most = ctx;
    if (op->code != OP_STORE)
        return true;
    const Type *t = ir_type(f, op->args[op->nargs - 1]);
    if (t->kind == TY_TILE && t->space == SP_SHARED && tile_bytes(t) > *most)
        *most = tile_bytes(t);
    return true;
}

typedef struct Other { const WsLoop *W; int64_t bytes; } Other;

static bool other_visit(Func *f, Op *op, void *ctx)
{
    Other *o = ctx;
    if (op->code == OP_SMEM_ALLOC && op->res[0] != o->W->opnd[0].buf && op->res[0] != o->W->opnd[1].buf)
        o->bytes += tile_bytes(ir_type(f, op->res[0]));
    return true;
}

int64_t ws_block_smem(const PassCtx *ctx, int blocks)
{
    int64_t limit = pass_smem_limit(ctx->target, ctx->smem_per_block);
    if (blocks > 1) {
        int64_t share = pass_sm_smem_share(ctx, blocks);
        limit = share < limit ? share : limit;
    }
    return limit;
}

/* The stages (W->stages) and why, into why. */
static void decide_stages(PassCtx *ctx, WsLoop *W, StrBuf *why)
{
    Func *f = W->f;
    int64_t staging = 0;
    int at = ir_block_index_of(&f->body, W->loop);
    for (int i = at + 1; i < f->body.nops; i++) {
        ir_walk_op(f, f->body.ops[i], ws_staging_visit, &staging);
    }
    Other other = { W, W->chain ? WS_MBAR_BYTES : 0 };   /* chains: the once-loaded operand's barrier */
    ir_walk(f, &f->body, other_visit, &other);
    int64_t limit = ws_block_smem(ctx, W->chain ? W->roles.blocks : 1);   /* several an SM: pass_chain_roles */
    /* a full and an empty ring: one for both operands, or one per operand; tcgen05 chains three more */
    int bars = W->chain ? (W->dots[0]->iattr[0] == MMA_TCGEN05 ? 7 : 4) : 2;
    int64_t budget = limit - staging - other.bytes, stage = W->stage_bytes + bars * WS_MBAR_BYTES;
    int64_t fit = budget > 0 ? budget / stage : 0;
    int hint = (int)W->loop->iattr[0];
    int s = hint > 0 ? hint : WS_MAX_STAGES;
    while (s > 1 && s > fit)
        s--;
    W->stages = s;
    if (hint > 0 && s == hint)
        sb_printf(why, "pipeline(%d) hint", hint);
    else
        sb_printf(why, "%s%lld B a stage with its barriers; %lld B of shared memory on %s less %lld B of other "
                  "buffers and %lld B of epilogue staging fit %lld", hint > 0 ? arena_printf(f->mod->arena,
                  "pipeline(%d) hint does not fit: ", hint) : "no hint: ", (long long)stage, (long long)limit,
                  pass_target_name(ctx), (long long)other.bytes, (long long)staging, (long long)fit);
}

/* ---- the report ---- */

static void report(PassCtx *ctx, const WsLoop *W, const char *at, const char *stages_why)
{
    Func *f = W->f;
    const Type *acc = ir_type(f, W->dot->res[0]);
    int64_t regs = WG_THREADS * ((int64_t)W->prod_regs + (int64_t)W->consumers * W->cons_regs);
    pass_note(ctx, "@%s: loop at %s: warp-specialized: 1 producer warp group (TMA), %d consumer warp group%s (wgmma, "
              "%lld of the %lld accumulator rows each)", f->name, at, W->consumers, W->consumers > 1 ? "s" : "",
              (long long)(acc->shape[0] / W->consumers), (long long)acc->shape[0]);
    pass_note(ctx, "@%s: loop at %s: registers %d / %d (%lld accumulator f32 a consumer thread%s; %lld of %d a block)",
              f->name, at, W->prod_regs, W->cons_regs, (long long)W->acc_regs,
              W->consumers == 1 ? ", one consumer warp group" : W->acc_regs >= 208 ? ", 208 or more" : ", below 208",
              (long long)regs, BLOCK_REGS);
    pass_note(ctx, "@%s: loop at %s: %d stage%s (%s); %s %lld B + %s %lld B a stage in TMA boxes; rings full and empty "
              "of %d mbarriers (count 1: the producer's expect, one release by the consumers); the cp.async prologue, "
              "prefetch and drain removed", f->name, at, W->stages, W->stages == 1 ? "" : "s", stages_why,
              ws_copied(f, W->opnd[0].copy), (long long)W->opnd[0].slot_bytes, ws_copied(f, W->opnd[1].copy),
              (long long)W->opnd[1].slot_bytes, W->stages);
}

/* ---- driver ---- */

typedef struct Rings { Op **loops; int n, cap; Arena *a; bool ws; } Rings;

/* Loops whose body reads a ring buffer (double_buffer's pipelined loops). */
static bool ring_loop_visit(Func *f, Op *op, void *ctx)
{
    Rings *r = ctx;
    (void)f;
    r->ws = r->ws || op->code == OP_WS;
    if (op->code != OP_FOR)
        return true;
    const Block *b = &op->regions[0];
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i]->code == OP_SMEM_LOAD) {
            if (r->n == r->cap) {
                r->loops = arena_grow(r->a, r->loops, sizeof(Op *), (size_t)r->n, (size_t)r->cap * 2 + 4);
                r->cap = r->cap * 2 + 4;
            }
            r->loops[r->n++] = op;
            break;
        }
    return true;
}

/* A tcgen05 product left in place runs as mma.sync: its accumulator stays
 * in registers (only the roles' form keeps it in tensor memory). */
static bool untcgen05_visit(Func *f, Op *op, void *ctx)
{
    if (op->code != OP_DOT || op->iattr[0] != MMA_TCGEN05)
        return true;
    op->iattr[0] = MMA_SYNC;
    pass_note(ctx, "@%s: product at %s: mma_sync m16n8k16 after all (tcgen05 needs the warp-specialized roles, "
              "which its loop does not take: see above)", f->name, pass_loc_str(f->mod->arena, f, op->loc));
    return true;
}

static void run_func(PassCtx *ctx, Func *f)
{
    Arena *a = arena_new();
    Rings r = { NULL, 0, 0, a, false };
    ir_walk(f, &f->body, ring_loop_visit, &r);
    const char *no = lacks(a, ctx->target);
    bool done = r.ws;
    for (int i = 0; i < r.n; i++) {
        const char *at = pass_loc_str(f->mod->arena, f, r.loops[i]->loc), *why = NULL;
        WsLoop W;
        memset(&W, 0, sizeof W);
        W.f = f;
        W.loop = r.loops[i];
        if (*no)
            why = arena_printf(a, "%s has %s", pass_target_name(ctx), no);
        else if (done)
            why = "the kernel has warp-specialized roles already";
        if (!why)
            why = match(&W, a);
        bool tc = !why && !W.chain && W.dot->iattr[0] == MMA_TCGEN05;
        bool tc_chain = !why && W.chain && W.dots[0]->iattr[0] == MMA_TCGEN05;
        if (!why)
            why = tc_chain ? ws_chain_tc_roles(ctx, &W, a) : W.chain ? ws_chain_roles(ctx, &W, a) :
                  tc ? ws_tc_roles(&W, a) : decide_roles(&W, a);
        if (why) {
            pass_note(ctx, "@%s: loop at %s keeps its cp.async ring: %s", f->name, at, why);
            continue;
        }
        W.stage_bytes = W.opnd[0].slot_bytes + W.opnd[1].slot_bytes;
        StrBuf sw = { 0 };
        decide_stages(ctx, &W, &sw);
        if (tc_chain) {
            ws_chain_tc_report(ctx, &W, at, sw.buf);
            ws_chain_tc_rewrite(&W);
        } else if (W.chain) {
            ws_chain_report(ctx, &W, at, sw.buf);
            ws_chain_rewrite(ctx, &W, at);
        } else if (tc) {
            ws_tc_report(ctx, &W, at, sw.buf);
            ws_tc_rewrite(&W);
        } else {
            report(ctx, &W, at, sw.buf);
            ws_rewrite(ctx, &W, at);
        }
        sb_free(&sw);
        done = true;
    }
    ir_walk(f, &f->body, untcgen05_visit, ctx);
    arena_free(a);
}

int pass_warp_specialize(Module *m, PassCtx *ctx)
{
    if (ctx->portable)   /* the module's fallback variant: no roles, no TMA */
        return 0;
    for (int i = 0; i < m->nfuncs; i++)
        run_func(ctx, m->funcs[i]);
    return 0;
}
