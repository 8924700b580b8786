/* warp_specialize_chain_tc.c - the warp_specialize pass on a loop of two
 * chained products that mma_select gave tcgen05 (sm_100a): attention's
 * s = q @ k^T and o = p @ v + o with S, P and O in tensor memory.
 *
 * The loop qualifies as for wgmma (warp_specialize_chain.c: ws_chain_match)
 * and, besides:
 *  - the first product's accumulator is the constant 0 (tcgen05 overwrites
 *    tensor memory);
 *  - the second product's accumulator is computed, in the body's top
 *    level, from one loop-carried value alone (the running output o, or
 *    o * alpha: the correction), which nothing else in the body uses, and
 *    the product's result is what the loop carries for it;
 *  - its A operand (P) is a 16-bit tile in registers;
 *  - S, P (two elements a 32-bit column) and O fit the 512 columns.
 *
 * The form (slot s = it mod S, phase = (it div S) & 1; every ring S slots
 * of count 1, so the static checker's slot and phase rule holds for all):
 *   %fq = mbar_alloc (one-shot), %fk, %ek, %fv, %ev   as for wgmma
 *   %sf, %pf, %od = mbar_alloc    S ready, P and O ready, O done
 *   %ts = tmem_alloc : tile<BM x BN x f32, tmem>
 *   %tp = tmem_alloc : tile<BM x BN x bf16, tmem>
 *   %to = tmem_alloc : tile<BM x D x f32, tmem>
 *   ws {roles = [(producer, 1, 40), (mma, 1, 40), (consumer, BM/128, R)]} {
 *     the chain's producer: Q once, K and V per trip
 *   } {
 *     mbar_wait %fq, 0, 0; %q = smem_load Q
 *     for 0, T, 1:
 *       mbar_wait %fk, s, phase; k^T; tc_mma %q, k^T, %ts, false
 *       tc_commit %ek, s; tc_commit %sf, s
 *       mbar_wait %fv, s, phase; mbar_wait %pf, s, phase
 *       tc_mma %tp, v, %to, true; tc_commit %ev, s; tc_commit %od, s
 *   } {
 *     tmem_store %to, o0                   (the loop's initial o)
 *     for 0, T, 1 (the other carried values):
 *       mbar_wait %sf, s, phase; s = tmem_load %ts
 *       the softmax as written, up to the second product; there:
 *       tmem_store %tp, P; %o = tmem_load %to; the correction on %o;
 *       tmem_store %to, corrected; mbar_arrive %pf, s; mbar_wait %od, s, phase
 *     %o = tmem_load %to; the epilogue
 *   }
 * Each tensor-memory access is ordered: the softmax reads S after the
 * commit of its product (%sf); the mma role overwrites S only after %pf
 * (the softmax read S before it arrived); P and the corrected O are
 * written before %pf and read by the second product after it; the softmax
 * writes P and O again only after %od (that product done). The
 * interpreter gives the unscheduled IR's results bit for bit (the
 * correction stored, then accumulated into: the same sums as a @ b + c).
 *
 * Decisions (reported): softmax warp groups BM / 128 (tensor memory's 128
 * lanes: a row a thread); registers: when a softmax thread's peak (a row
 * of S and its P, or a row of O, and TC_ROW_HEADROOM more) fits in the
 * count every thread starts with (65536 / threads), every role keeps it
 * and no setmaxnreg is issued (ptxas 13.0 spilled the one-softmax-group
 * form with a setmaxnreg.dec in the producer and mma roles and does not
 * without them: bench/RESULTS.md); else 40 for the producer, 96 for the
 * mma role (its one thread keeps both products' descriptors for every k
 * step) and the rest of the register file for the softmax, at most 256,
 * which must hold that peak.
 */
#include "warp_specialize_int.h"

#include <string.h>

/* The producer issues TMA from one thread; the mma role's thread holds
 * both products' descriptors for every k step (hoisted out of the loop). */
enum { TC_ISSUE_REGS = 40, TC_MMA_REGS = 96, TC_ROW_HEADROOM = 32 };

static const Op *def_of(const Func *f, ValId v) { return ir_val(f, v)->def; }

static bool zero_const(const Func *f, ValId v)
{
    const Op *d = def_of(f, v);
    return d && d->code == OP_CONST && d->fattr == 0 && d->iattr[0] == 0;
}

typedef struct NestedUse { const uint8_t *from; bool found; } NestedUse;

static bool nested_use_visit(Func *f, Op *op, void *ctx)
{
    NestedUse *u = ctx;
    (void)f;
    for (int j = 0; j < op->nargs && !u->found; j++)
        u->found = u->from[op->args[j]] != 0;
    return !u->found;
}

/* Marks in dep[] the ops of the body's top level that depend on the
 * loop-carried value acc; false unless the second product's C operand
 * does and nothing else (a nested region, the yield, another product's
 * operand, an op with effects) uses it. */
static bool mark_correction(const WsLoop *W, ValId acc, uint8_t *dep, Arena *a)
{
    Func *f = W->f;
    Block *body = &W->loop->regions[0];
    uint8_t *from = arena_alloc(a, (size_t)f->nvals + 1);
    memset(from, 0, (size_t)f->nvals + 1);
    from[acc] = 1;
    for (int i = 0; i < body->nops; i++) {
        Op *op = body->ops[i];
        bool uses = false;
        for (int j = 0; j < op->nargs; j++)
            if (from[op->args[j]]) {
                if (op == W->dots[1] && j == 2)
                    continue;
                uses = true;
            }
        for (int r = 0; r < op->nregions; r++) {
            NestedUse u = { from, false };
            ir_walk(f, &op->regions[r], nested_use_visit, &u);
            if (u.found)
                return false;
        }
        if (!uses)
            continue;
        if (op->code == OP_YIELD || op == W->dots[0] || op == W->dots[1] || !(op_info[op->code].flags & OPF_PURE))
            return false;
        dep[i] = 1;
        for (int r = 0; r < op->nres; r++)
            from[op->res[r]] = 1;
    }
    return from[W->dots[1]->args[2]] != 0;
}

const char *ws_chain_tc_roles(const PassCtx *ctx, WsLoop *W, Arena *a)
{
    Func *f = W->f;
    Op *fo = W->loop, *d0 = W->dots[0], *d1 = W->dots[1];
    Block *body = &fo->regions[0];
    if (!zero_const(f, d0->args[2]))
        return "its first product's accumulator is not the constant 0 (tcgen05 overwrites tensor memory)";
    const Op *y = body->nops ? body->ops[body->nops - 1] : NULL;
    W->acc_at = -1;
    for (int i = 0; y && y->code == OP_YIELD && i < y->nargs; i++)
        if (y->args[i] == d1->res[0])
            W->acc_at = W->acc_at < 0 ? i : -2;
    if (W->acc_at < 0)
        return "the loop does not carry its second product's result as one value (the output in tensor memory)";
    uint8_t *dep = arena_alloc(a, (size_t)body->nops + 1);
    memset(dep, 0, (size_t)body->nops + 1);
    if (!mark_correction(W, body->args[1 + W->acc_at], dep, a))
        return "its second product's accumulator is not computed from the carried output alone, by pure work "
               "that nothing else uses (the correction of the output in tensor memory)";
    const Type *st = ir_type(f, d0->res[0]), *pt = ir_type(f, d1->args[0]), *ot = ir_type(f, d1->res[0]);
    if (pt->dtype != DT_BF16 && pt->dtype != DT_F16)
        return "its second product's A operand is not a 16-bit tile";
    int64_t bn = st->shape[1], d = ot->shape[1];
    TcChainRoles r;
    const char *why = NULL;
    if (!pass_chain_tc_roles(ctx, st->shape[0], bn, d, &r, a, &why))
        return why;
    W->consumers = r.softmax;
    W->tmem_cols = r.tmem_cols;
    W->acc_regs = bn > d ? bn : d;
    W->tc_entry = r.at_entry;
    W->prod_regs = r.prod_regs;
    W->mma_regs = r.mma_regs;
    W->cons_regs = r.cons_regs;
    return NULL;
}

bool pass_target_tc_roles(const PassCtx *ctx)
{
    const TargetInfo *t = ctx->target;
    return !ctx->portable && t && (t->mma & TC_MMA_TCGEN05) && t->tmem && t->tma;
}

bool pass_chain_tc_roles(const PassCtx *ctx, int64_t rows, int64_t cols, int64_t d, TcChainRoles *out, Arena *a,
                         const char **why)
{
    TcChainRoles r;
    memset(&r, 0, sizeof r);
    const char *no = NULL;
    r.softmax = (int)(rows / TCGEN05_M);
    r.tmem_cols = r.softmax * (cols + cols / 2 + d);
    /* a softmax thread's peak: a row of S with its P, or a row of O, and the row statistics and addresses */
    r.peak = (cols + cols / 2 > d ? cols + cols / 2 : d) + TC_ROW_HEADROOM;
    int entry = BLOCK_REGS / (WG_THREADS * (2 + (r.softmax > 0 ? r.softmax : 1))) / 8 * 8;
    if (entry > 248)
        entry = 248;
    r.at_entry = r.peak <= entry;
    if (r.at_entry) {   /* every role keeps the registers it starts with: no setmaxnreg */
        r.prod_regs = r.mma_regs = r.cons_regs = entry;
    } else {
        r.prod_regs = TC_ISSUE_REGS;
        r.mma_regs = TC_MMA_REGS;
        int64_t rest = r.softmax ? (BLOCK_REGS / WG_THREADS - TC_ISSUE_REGS - TC_MMA_REGS) / r.softmax / 8 * 8 : 0;
        r.cons_regs = (int)(rest > 256 ? 256 : rest);
    }
    if (!pass_target_tc_roles(ctx))
        no = "the target takes no tcgen05 roles";
    else if (rows <= 0 || rows % TCGEN05_M)
        no = a ? arena_printf(a, "its %lld rows are not a multiple of 128", (long long)rows) : "";
    else if (r.tmem_cols > TMEM_COLS)
        no = a ? arena_printf(a, "S, P and O take %lld columns of tensor memory, above its %d",
                              (long long)r.tmem_cols, TMEM_COLS) : "";
    else if (r.peak > r.cons_regs)
        no = a ? arena_printf(a, "a softmax thread's peak (a row of S and its P, or of O, and %d more) takes %lld "
                              "registers, above the %d it may have", TC_ROW_HEADROOM, (long long)r.peak,
                              r.cons_regs) : "";
    if (out)
        *out = r;
    if (why)
        *why = no;
    return !no;
}

void ws_chain_tc_report(PassCtx *ctx, const WsLoop *W, const char *at, const char *stages_why)
{
    Func *f = W->f;
    const Type *st = ir_type(f, W->dots[0]->res[0]), *ot = ir_type(f, W->dots[1]->res[0]);
    const char *q = ws_copied(f, W->once.copy), *k = ws_copied(f, W->opnd[0].copy), *v = ws_copied(f, W->opnd[1].copy);
    int64_t regs = WG_THREADS * ((int64_t)W->prod_regs + W->mma_regs + (int64_t)W->consumers * W->cons_regs);
    pass_note(ctx, "@%s: loop at %s: warp-specialized for tcgen05, chained products: 1 producer warp group (TMA: %s "
              "once, %s and %s each trip), 1 mma warp group (one thread issues both products: the first SS, the "
              "second with its A operand from tensor memory), %d softmax warp group%s (a row a thread, %lld rows "
              "each)", f->name, at, q, k, v, W->consumers, W->consumers > 1 ? "s" : "",
              (long long)TCGEN05_M);
    pass_note(ctx, "@%s: loop at %s: tensor memory: S %lld x %lld f32, P %lld x %lld 16-bit (two a column), O %lld x "
              "%lld f32: %lld columns; the output's correction is loaded, scaled and stored back by the softmax "
              "warp groups before the second product accumulates into it", f->name, at, (long long)st->shape[0],
              (long long)st->shape[1], (long long)st->shape[0], (long long)st->shape[1], (long long)ot->shape[0],
              (long long)ot->shape[1], (long long)W->tmem_cols);
    if (W->tc_entry)
        pass_note(ctx, "@%s: loop at %s: registers %d for every role, the count each thread starts with (no "
                  "setmaxnreg: a softmax thread's peak, a row of S and P or of O and %d more, fits; %lld of %d a "
                  "block)", f->name, at, W->cons_regs, TC_ROW_HEADROOM, (long long)regs, BLOCK_REGS);
    else
        pass_note(ctx, "@%s: loop at %s: registers %d / %d / %d (a row of %lld f32 a softmax thread at most; %lld of "
                  "%d a block)", f->name, at, W->prod_regs, W->mma_regs, W->cons_regs, (long long)W->acc_regs,
                  (long long)regs, BLOCK_REGS);
    pass_note(ctx, "@%s: loop at %s: %d stage%s (%s); %s %lld B and %s %lld B a stage on full and empty rings (the "
              "empty ones released by tc_commit); rings of S ready (tc_commit), P and O ready (the softmax's "
              "arrival) and O done (tc_commit) of %d mbarriers; %s %lld B once on a one-shot ring", f->name, at,
              W->stages, W->stages == 1 ? "" : "s", stages_why, k, (long long)W->opnd[0].slot_bytes, v,
              (long long)W->opnd[1].slot_bytes, W->stages, q, (long long)W->once.slot_bytes);
}

/* ---- the rewrite ---- */

typedef struct TcRings { ValId sfull, pfull, odone, ts, tp, to; } TcRings;

static ValId tmem_of(Builder *b, const Type *t, const char *name)
{
    Type tt = *t;
    tt.space = SP_TMEM;
    Op *ta = ir_build(b, OP_TMEM_ALLOC, NULL, 0, &tt, 1);
    ta->iattr[1] = -1;
    ir_val(b->f, ta->res[0])->name = name;
    return ta->res[0];
}

static void tc_op(Builder *b, OpCode c, ValId ring, ValId slot)
{
    ValId a[2] = { ring, slot };
    build0(b, c, a, 2);
}

/* The mma role: Q once; per trip S = Q K^T into %ts, then O += P V. */
static void fill_mma(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, ValId qfull, const TcRings *r)
{
    Func *f = W->f;
    Op *fo = W->loop;
    Block *top = &f->body;
    Builder rb = ir_builder_at_end(f, role);
    rb.loc = W->once.read->loc;
    ws_ring_op(&rb, OP_MBAR_WAIT, qfull, bounds[0], bounds[0]);
    ir_block_remove(top, ir_block_index_of(top, W->once.read));
    ir_block_append(f, role, W->once.read);
    Op *mf = ws_role_loop(f, role, fo->loc, bounds, NULL, 0);
    Block *body = &mf->regions[0];
    Builder b = ir_builder_at_end(f, body);
    b.loc = fo->loc;
    WsTrip t = ws_trip_of(&b, body->args[0], cs, bounds[2]);
    ValId no = ir_const_int(&b, type_scalar(DT_BOOL), 0), yes = ir_const_int(&b, type_scalar(DT_BOOL), 1);
    /* S = Q K^T */
    WsOperand *ko = &W->opnd[0], *vo = &W->opnd[1];
    ws_ring_op(&b, OP_MBAR_WAIT, ko->full, t.slot, t.phase);
    ir_block_remove(&fo->regions[0], ir_block_index_of(&fo->regions[0], ko->read));
    ko->read->args[1] = t.slot;
    ir_block_append(f, body, ko->read);
    ValId kb = ko->read->res[0];
    if (ko->trans) {
        ir_block_remove(&fo->regions[0], ir_block_index_of(&fo->regions[0], ko->trans));
        ir_block_append(f, body, ko->trans);
        kb = ko->trans->res[0];
    }
    b.loc = W->dots[0]->loc;
    ValId s_ops[4] = { W->once.read->res[0], kb, r->ts, no };
    build0(&b, OP_TC_MMA, s_ops, 4)->iattr[0] = MMA_TCGEN05;
    b.loc = fo->loc;
    tc_op(&b, OP_TC_COMMIT, ko->empty, t.slot);
    tc_op(&b, OP_TC_COMMIT, r->sfull, t.slot);
    /* O += P V */
    ws_ring_op(&b, OP_MBAR_WAIT, vo->full, t.slot, t.phase);
    ir_block_remove(&fo->regions[0], ir_block_index_of(&fo->regions[0], vo->read));
    vo->read->args[1] = t.slot;
    ir_block_append(f, body, vo->read);
    ws_ring_op(&b, OP_MBAR_WAIT, r->pfull, t.slot, t.phase);
    b.loc = W->dots[1]->loc;
    ValId o_ops[4] = { r->tp, vo->read->res[0], r->to, yes };
    build0(&b, OP_TC_MMA, o_ops, 4)->iattr[0] = MMA_TCGEN05;
    b.loc = fo->loc;
    tc_op(&b, OP_TC_COMMIT, vo->empty, t.slot);
    tc_op(&b, OP_TC_COMMIT, r->odone, t.slot);
    build0(&b, OP_YIELD, NULL, 0);
}

/* The softmax role: the body as written, S from tensor memory, the second
 * product replaced by the stores of P and the corrected O and the
 * handshake with the mma role; returns the loop. */
static Op *fill_softmax(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, const TcRings *r, Arena *a)
{
    Func *f = W->f;
    Op *fo = W->loop, *d0 = W->dots[0], *d1 = W->dots[1];
    Block *old = &fo->regions[0];
    int k = W->acc_at, n = fo->nres;
    ValId acc_arg = old->args[1 + k];
    uint8_t *dep = arena_alloc(a, (size_t)old->nops + 1);
    memset(dep, 0, (size_t)old->nops + 1);
    mark_correction(W, acc_arg, dep, a);
    Op **deferred = arena_alloc(a, sizeof(Op *) * (size_t)(old->nops + 1));
    int ndef = 0;
    for (int i = 0; i < old->nops; i++)
        if (dep[i])
            deferred[ndef++] = old->ops[i];
    Builder rb = ir_builder_at_end(f, role);
    rb.loc = fo->loc;
    ValId st0[2] = { r->to, fo->args[3 + k] };
    build0(&rb, OP_TMEM_STORE, st0, 2);
    ValId *inits = arena_alloc(a, sizeof(ValId) * (size_t)(n + 1));
    int ni = 0;
    for (int i = 0; i < n; i++)
        if (i != k)
            inits[ni++] = fo->args[3 + i];
    Op *cf = ws_role_loop(f, role, fo->loc, bounds, inits, ni);
    Block *body = &cf->regions[0];
    Builder b = ir_builder_at_end(f, body);
    b.loc = fo->loc;
    WsTrip t = ws_trip_of(&b, body->args[0], cs, bounds[2]);
    ir_replace_all_uses(f, old->args[0], ws_iv_of(&b, fo, body->args[0]));
    for (int i = 0, j = 1; i < n; i++)
        if (i != k)
            ir_replace_all_uses(f, old->args[1 + i], body->args[j++]);
    ws_ring_op(&b, OP_MBAR_WAIT, r->sfull, t.slot, t.phase);
    b.loc = d0->loc;
    Type sreg = *ir_type(f, d0->res[0]);
    sreg.space = SP_REG;
    ir_replace_all_uses(f, d0->res[0], ir_build1(&b, OP_TMEM_LOAD, &r->ts, 1, sreg));
    while (old->nops) {
        Op *op = old->ops[0];
        ir_block_remove(old, 0);
        bool later = false;
        for (int i = 0; i < ndef; i++)
            later = later || deferred[i] == op;
        if (later || op == d0 || ws_chain_bookkeeping(W, op) || ws_chain_ring_read(W, op))
            continue;
        if (op->code == OP_YIELD) {
            Builder yb = ir_builder_at_end(f, body);
            yb.loc = op->loc;
            ValId *ys = arena_alloc(a, sizeof(ValId) * (size_t)(n + 1));
            int ny = 0;
            for (int i = 0; i < op->nargs; i++)
                if (i != k)
                    ys[ny++] = op->args[i];
            build0(&yb, OP_YIELD, ys, ny);
            continue;
        }
        if (op != d1) {
            ir_block_append(f, body, op);
            continue;
        }
        b = ir_builder_at_end(f, body);
        b.loc = d1->loc;
        ValId sp[2] = { r->tp, d1->args[0] };
        build0(&b, OP_TMEM_STORE, sp, 2);
        Type oreg = *ir_type(f, d1->res[0]);
        oreg.space = SP_REG;
        ValId o = ir_build1(&b, OP_TMEM_LOAD, &r->to, 1, oreg);
        for (int i = 0; i < ndef; i++) {   /* out of any block since the walk reached them: by hand */
            for (int j = 0; j < deferred[i]->nargs; j++)
                if (deferred[i]->args[j] == acc_arg)
                    deferred[i]->args[j] = o;
            ir_block_append(f, body, deferred[i]);
        }
        b = ir_builder_at_end(f, body);
        b.loc = d1->loc;
        ValId so[2] = { r->to, d1->args[2] };
        build0(&b, OP_TMEM_STORE, so, 2);
        b.loc = fo->loc;
        ws_ring_op(&b, OP_MBAR_ARRIVE, r->pfull, t.slot, 0);
        ws_ring_op(&b, OP_MBAR_WAIT, r->odone, t.slot, t.phase);
    }
    drop_dead(f, body);
    return cf;
}

void ws_chain_tc_rewrite(WsLoop *W)
{
    Func *f = W->f;
    Op *fo = W->loop;
    Arena *a = f->mod->arena;
    Builder b = ir_builder_before(f, fo);
    WsChainRings cr = ws_chain_begin(W, &b);
    ValId *bounds = cr.bounds, cs = cr.cs, qfull = cr.qfull;
    TcRings r;
    r.sfull = ws_new_ring(&b, W->stages, "s_full");
    r.pfull = ws_new_ring(&b, W->stages, "p_full");
    r.odone = ws_new_ring(&b, W->stages, "o_done");
    r.ts = tmem_of(&b, ir_type(f, W->dots[0]->res[0]), "s");
    r.tp = tmem_of(&b, ir_type(f, W->dots[1]->args[0]), "p");
    r.to = tmem_of(&b, ir_type(f, W->dots[1]->res[0]), "o");
    Op *ws = build0(&b, OP_WS, NULL, 0);
    ir_ws_add_role(f, ws, ROLE_PRODUCER, 1, W->prod_regs);
    ir_ws_add_role(f, ws, ROLE_MMA, 1, W->mma_regs);
    ir_ws_add_role(f, ws, ROLE_CONSUMER, W->consumers, W->cons_regs);
    ws_chain_producer(W, &ws->regions[0], bounds, cs, qfull);
    fill_mma(W, &ws->regions[1], bounds, cs, qfull, &r);
    Op *cf = fill_softmax(W, &ws->regions[2], bounds, cs, &r, a);
    Block *role = &ws->regions[2];
    Builder eb = ir_builder_at_end(f, role);
    eb.loc = fo->loc;
    Type oreg = *ir_type(f, W->dots[1]->res[0]);
    oreg.space = SP_REG;
    ValId o = ir_build1(&eb, OP_TMEM_LOAD, &r.to, 1, oreg);
    ws_move_epilogue(W, role);
    for (int i = 0, j = 0; i < fo->nres; i++)
        ir_replace_all_uses(f, fo->res[i], i == W->acc_at ? o : cf->res[j++]);
    ws_remove_ring(W);
    for (int i = 0; i < WS_OPERANDS; i++)   /* the rings' slots: S stages */
        ir_type(f, W->opnd[i].buf)->shape[0] = W->stages;
}
