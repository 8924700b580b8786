/* warp_specialize_tc.c - the warp_specialize pass on a tcgen05 product
 * (sm_100a): the accumulator lives in tensor memory, one thread issues the
 * products, and the epilogue reads the accumulator back once.
 *
 * A loop the driver (warp_specialize.c) accepted whose product mma_select
 * gave tcgen05 becomes three roles on three rings (slot s = it mod S,
 * phase = (it div S) & 1; T the loop's trip count):
 *   %full = mbar_alloc {count = 1}    (the producer's expect)
 *   %empty = mbar_alloc {count = 1}   (the mma role's commit)
 *   %done = mbar_alloc {count = 1}    (one slot: the accumulator is ready)
 *   %tm = tmem_alloc : tile<M x N x f32, tmem>
 *   ws {roles = [(producer, 1, 40), (mma, 1, 40), (epilogue, M/128, R)]} {
 *     the producer of the wgmma form: wait empty, expect, TMA
 *   } {
 *     for 0, T, 1: mbar_wait %full, s, phase; smem_load both;
 *                  tc_mma a, b, %tm, it != 0 {mma = tcgen05};
 *                  tc_commit %empty, s
 *     tc_commit %done, 0
 *   } {
 *     mbar_wait %done, 0, 0
 *     %acc = if T > 0 { tmem_load %tm } else { the loop's initial value }
 *     the epilogue
 *   }
 * The commit after each trip releases the slot when the hardware has read
 * it (the products run asynchronously; no thread waits for them in the
 * loop), and the one after the loop publishes the accumulator. The first
 * trip's product overwrites tensor memory, so the loop's initial value
 * must be the constant 0; with no trip, the epilogue takes that value.
 *
 * Decisions (reported): epilogue warp groups M / 128 (tensor memory has 128
 * lanes; each warp group reads one 128-row block, a row per thread);
 * registers 40 for the producer and the mma role (one thread each issues),
 * and the epilogue the rest of the register file, at most 256, which must
 * hold a row of the accumulator (N f32) and WS_REG_HEADROOM more.
 */
#include "warp_specialize_int.h"

enum { TC_ISSUE_REGS = 40 };

static bool zero_const(const Func *f, ValId v)
{
    const Op *d = ir_val(f, v)->def;
    return d && d->code == OP_CONST && d->fattr == 0 && d->iattr[0] == 0;
}

const char *ws_tc_roles(WsLoop *W, Arena *a)
{
    const Type *acc = ir_type(W->f, W->dot->res[0]);
    if (!zero_const(W->f, W->loop->args[3]))
        return "its accumulator does not start at the constant 0 (tcgen05's first product overwrites tensor "
               "memory)";
    W->consumers = (int)(acc->shape[0] / TCGEN05_M);
    W->prod_regs = TC_ISSUE_REGS;
    W->acc_regs = acc->shape[1];
    int64_t rest = (BLOCK_REGS / WG_THREADS - 2 * TC_ISSUE_REGS) / W->consumers / 8 * 8;
    W->cons_regs = (int)(rest > 256 ? 256 : rest);
    if (W->cons_regs < 24 || W->acc_regs + WS_REG_HEADROOM > W->cons_regs)
        return arena_printf(a, "a row of its accumulator takes %lld f32 registers an epilogue thread, leaving fewer "
                            "than %d of the %d an epilogue thread may have", (long long)W->acc_regs,
                            WS_REG_HEADROOM, W->cons_regs);
    return NULL;
}

void ws_tc_report(PassCtx *ctx, const WsLoop *W, const char *at, const char *stages_why)
{
    Func *f = W->f;
    const Type *acc = ir_type(f, W->dot->res[0]);
    int64_t regs = WG_THREADS * (2 * (int64_t)W->prod_regs + (int64_t)W->consumers * W->cons_regs);
    pass_note(ctx, "@%s: loop at %s: warp-specialized for tcgen05: 1 producer warp group (TMA), 1 mma warp group "
              "(one thread issues the products), %d epilogue warp group%s (%lld x %lld f32 accumulator in %lld "
              "columns of tensor memory, a 128-row block each)", f->name, at, W->consumers,
              W->consumers > 1 ? "s" : "", (long long)acc->shape[0], (long long)acc->shape[1],
              (long long)(W->consumers * acc->shape[1]));
    pass_note(ctx, "@%s: loop at %s: registers %d / %d / %d (a row of %lld f32 an epilogue thread; %lld of %d a "
              "block)", f->name, at, W->prod_regs, W->prod_regs, W->cons_regs, (long long)W->acc_regs,
              (long long)regs, BLOCK_REGS);
    pass_note(ctx, "@%s: loop at %s: %d stage%s (%s); %s %lld B + %s %lld B a stage in TMA boxes; rings full "
              "(the producer's expect), empty (tc_commit after each trip's products) and done (tc_commit after "
              "the loop) of count 1; the cp.async prologue, prefetch and drain removed", f->name, at, W->stages,
              W->stages == 1 ? "" : "s", stages_why, ws_copied(f, W->opnd[0].copy), (long long)W->opnd[0].slot_bytes,
              ws_copied(f, W->opnd[1].copy), (long long)W->opnd[1].slot_bytes);
}

/* The mma role: per trip wait for the slot, issue the product, commit
 * the slot's release; after the loop, commit the accumulator. */
static void fill_mma(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, ValId full, ValId empty, ValId done,
                     ValId tm)
{
    Func *f = W->f;
    Op *fo = W->loop, *dot = W->dot;
    Op *mf = ws_role_loop(f, role, fo->loc, bounds, NULL, 0);
    Block *body = &mf->regions[0];
    Builder b = ir_builder_at_end(f, body);
    b.loc = fo->loc;
    ValId it = body->args[0];
    WsTrip t = ws_trip_of(&b, it, cs, bounds[2]);
    ws_ring_op(&b, OP_MBAR_WAIT, full, t.slot, t.phase);
    ValId ops[4] = { 0, 0, tm, 0 };
    for (int i = 0; i < WS_OPERANDS; i++) {
        ValId a[2] = { W->opnd[i].buf, t.slot };
        b.loc = W->opnd[i].read->loc;
        ops[i] = ir_build1(&b, OP_SMEM_LOAD, a, 2, *ir_type(f, W->opnd[i].read->res[0]));
    }
    b.loc = dot->loc;
    ops[3] = cmp_pred(&b, CMP_NE, it, bounds[0]);
    build0(&b, OP_TC_MMA, ops, 4)->iattr[0] = MMA_TCGEN05;
    b.loc = fo->loc;
    ValId c[2] = { empty, t.slot };
    build0(&b, OP_TC_COMMIT, c, 2);
    build0(&b, OP_YIELD, NULL, 0);
    Builder after = ir_builder_at_end(f, role);
    after.loc = fo->loc;
    ValId d[2] = { done, bounds[0] };
    build0(&after, OP_TC_COMMIT, d, 2);
}

/* The epilogue role: wait for the accumulator, read it (the loop's
 * initial value when there was no trip); returns the value. */
static ValId fill_epilogue(WsLoop *W, Block *role, const ValId bounds[3], ValId done, ValId tm)
{
    Func *f = W->f;
    Builder b = ir_builder_at_end(f, role);
    b.loc = W->loop->loc;
    ws_ring_op(&b, OP_MBAR_WAIT, done, bounds[0], bounds[0]);
    ValId any = cmp_pred(&b, CMP_GT, bounds[1], bounds[0]);
    Type acc = *ir_type(f, W->dot->res[0]);
    Op *iff = ir_build(&b, OP_IF, &any, 1, &acc, 1);
    Builder th = ir_builder_at_end(f, &iff->regions[0]);
    th.loc = W->dot->loc;
    ValId r = ir_build1(&th, OP_TMEM_LOAD, &tm, 1, acc);
    build0(&th, OP_YIELD, &r, 1);
    Builder el = ir_builder_at_end(f, &iff->regions[1]);
    el.loc = W->loop->loc;
    build0(&el, OP_YIELD, &W->loop->args[3], 1);
    return iff->res[0];
}

void ws_tc_rewrite(WsLoop *W)
{
    Func *f = W->f;
    Builder b = ir_builder_before(f, W->loop);
    WsRings r = ws_begin(W, &b);
    ValId done = ws_new_ring(&b, 1, "done");
    Type tt = *ir_type(f, W->dot->res[0]);
    tt.space = SP_TMEM;
    Op *ta = ir_build(&b, OP_TMEM_ALLOC, NULL, 0, &tt, 1);
    ta->iattr[1] = -1;
    ValId tm = ta->res[0];
    ir_val(f, tm)->name = "acc";
    Op *ws = build0(&b, OP_WS, NULL, 0);
    ir_ws_add_role(f, ws, ROLE_PRODUCER, 1, W->prod_regs);
    ir_ws_add_role(f, ws, ROLE_MMA, 1, W->prod_regs);
    ir_ws_add_role(f, ws, ROLE_EPILOGUE, W->consumers, W->cons_regs);
    ws_fill_producer(W, &ws->regions[0], r.bounds, r.cs, r.full, r.empty);
    fill_mma(W, &ws->regions[1], r.bounds, r.cs, r.full, r.empty, done, tm);
    ValId acc = fill_epilogue(W, &ws->regions[2], r.bounds, done, tm);
    ws_finish(W, &ws->regions[2], acc);
}
