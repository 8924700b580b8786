/* verify_sched.c - the verifier's rules for the schedule's ops (ops.h: WS,
 * NAMED_BAR, MBAR_*, TMA_LOAD, DOT_ASYNC, DOT_WAIT, CONVERT_LAYOUT).
 *
 *  - WS: 1..WS_MAXROLES regions, one (kind, warp groups, registers) triple
 *    per region; a budget is 24..256 and a multiple of 8 (setmaxnreg's
 *    immediates) and the block's total, registers x 128 threads x warp
 *    groups summed over the roles, is at most 65536; regions take no
 *    arguments and yield nothing. That no value crosses roles is checked
 *    with the scopes (verify.c, check_operands: each role is a region).
 *  - NAMED_BAR: id 0..15, threads a positive multiple of 32 up to 1024.
 *  - Barrier rings: MBAR_ALLOC gives tile<S x mbar, shared> with an arrival
 *    count 1..2^20-1 and an offset -1 (not placed) or a multiple of 8; MBAR_EXPECT / ARRIVE / WAIT take a ring made by
 *    mbar_alloc and an i32 slot (WAIT an i32 phase too); expect bytes
 *    1..2^20-1 (the transaction count's range).
 *  - TMA_LOAD: an smem_alloc buffer and slot, a ring and slot, then a
 *    window of the tensor like ASYNC_COPY's, of the slot's shape and dtype.
 *  - DOT_ASYNC: DOT's operand rule and instruction family, result a token; DOT_WAIT: a token in,
 *    the accumulator's type out (when the token's DOT_ASYNC is in sight).
 *  - CONVERT_LAYOUT: a tile in, the same shape and dtype out.
 *  - Tensor memory: TMEM_ALLOC gives tile<M x N x f32, tmem> with M a
 *    multiple of 128 and (M / 128) N columns at most 512; once planned
 *    (offset >= 0, a multiple of 8) its first column plus those columns
 *    lie within the allocation, a power of two 32..512. TC_MMA: DOT's
 *    operand rule with a TMEM_ALLOC result as the accumulator, a bool
 *    accumulate flag, mma = tcgen05 on a shape it takes. TC_COMMIT: a ring
 *    and slot. TMEM_LOAD: a TMEM_ALLOC result in, the same shape in
 *    registers out.
 */
#include "verify_int.h"

enum { TX_MAX = (1 << 20) - 1, REG_MIN = 24, REG_MAX = 256 };

static void check_ws(Verifier *V, const Op *op)
{
    int n = op->nregions;
    if (n < 1 || n > WS_MAXROLES || op->nlist != 3 * n) {
        vfy_err(V, op, "has %d region(s) and %d role(s); needs one role per region, 1..%d", n,
                op->nlist / 3, WS_MAXROLES);
        return;
    }
    int64_t regs = 0, threads = 0;
    for (int r = 0; r < n; r++) {
        int64_t kind = op->list[3 * r], wgs = op->list[3 * r + 1], nreg = op->list[3 * r + 2];
        if (kind < 0 || kind >= ROLE_COUNT)
            vfy_err(V, op, "role %d: unknown kind %lld", r, (long long)kind);
        if (wgs < 1)
            vfy_err(V, op, "role %d: needs at least one warp group, has %lld", r, (long long)wgs);
        if (nreg < REG_MIN || nreg > REG_MAX || nreg % 8)
            vfy_err(V, op, "role %d: register budget %lld is not a multiple of 8 in %d..%d", r,
                    (long long)nreg, REG_MIN, REG_MAX);
        regs += wgs * WG_THREADS * nreg;
        threads += wgs * WG_THREADS;
        const Block *b = &op->regions[r];
        const Op *y = ir_block_yield(b);
        if (b->nargs || (y && y->nargs))
            vfy_err(V, op, "role %d's region takes no arguments and yields nothing", r);
    }
    if (regs > BLOCK_REGS)
        vfy_err(V, op, "register budgets need %lld registers per block (sum of registers x %d threads x "
                "warp groups), above %d", (long long)regs, WG_THREADS, BLOCK_REGS);
    int64_t blocks = op->iattr[0];
    if (blocks < 0 || blocks > WS_MAXBLOCKS) {
        vfy_err(V, op, "blocks %lld out of range 0..%d", (long long)blocks, WS_MAXBLOCKS);
        return;
    }
    int entry = blocks > 1 && threads > 0 && threads <= 1024 ? ir_ws_entry_regs((int)threads, (int)blocks) : 0;
    if (entry && regs > entry * threads)
        vfy_err(V, op, "register budgets need %lld registers per block; %lld blocks an SM leave a block of %lld "
                "threads %lld (%d a thread at entry)", (long long)regs, (long long)blocks, (long long)threads,
                (long long)entry * threads, entry);
}

static void check_named_bar(Verifier *V, const Op *op)
{
    if (op->iattr[0] < 0 || op->iattr[0] >= NAMED_BAR_IDS)
        vfy_err(V, op, "barrier id %lld out of range 0..%d", (long long)op->iattr[0], NAMED_BAR_IDS - 1);
    if (op->iattr[1] <= 0 || op->iattr[1] % 32 || op->iattr[1] > 1024)
        vfy_err(V, op, "thread count %lld is not a positive multiple of 32 up to 1024", (long long)op->iattr[1]);
    if (op->iattr[2] < 0 || op->iattr[2] >= NBAR_COUNT)
        vfy_err(V, op, "unknown mode %lld (sync or arrive)", (long long)op->iattr[2]);
}

static bool is_ring(const Type *t)
{
    return is_tile(t) && t->rank == 1 && t->dtype == DT_MBAR && t->space == SP_SHARED;
}

static void check_mbar_alloc(Verifier *V, const Op *op)
{
    const Type *r = T(V, op->res[0]);
    if (!is_ring(r))
        vfy_err(V, op, "result must be a ring tile<S x mbar, shared>, got %s", vfy_tstr(V, r));
    if (op->iattr[0] < 1 || op->iattr[0] > TX_MAX)
        vfy_err(V, op, "arrival count %lld out of range 1..%d", (long long)op->iattr[0], TX_MAX);
    if (op->iattr[1] < -1 || (op->iattr[1] >= 0 && op->iattr[1] % 8))
        vfy_err(V, op, "offset %lld is neither -1 (not placed) nor a multiple of 8", (long long)op->iattr[1]);
}

/* Operands #i, #i+1: a ring made by mbar_alloc and an i32 slot. */
static bool ring_slot(Verifier *V, const Op *op, int i)
{
    const Value *b = ir_val(V->f, op->args[i]);
    if (!b->def || b->def->code != OP_MBAR_ALLOC || !is_ring(&b->type)) {
        vfy_err(V, op, "operand #%d must be a barrier ring made by mbar_alloc, got %s", i,
                vfy_tstr(V, &b->type));
        return false;
    }
    if (!is_i32(T(V, op->args[i + 1]))) {
        vfy_err(V, op, "barrier slot operand #%d must be an i32 scalar, got %s", i + 1,
                vfy_tstr(V, T(V, op->args[i + 1])));
        return false;
    }
    return true;
}

static void check_mbar_op(Verifier *V, const Op *op)
{
    if (!ring_slot(V, op, 0))
        return;
    if (op->code == OP_MBAR_WAIT && !is_i32(T(V, op->args[2])))
        vfy_err(V, op, "phase operand #2 must be an i32 scalar, got %s", vfy_tstr(V, T(V, op->args[2])));
    if (op->code == OP_MBAR_EXPECT && (op->iattr[0] < 1 || op->iattr[0] > TX_MAX))
        vfy_err(V, op, "transaction bytes %lld out of range 1..%d", (long long)op->iattr[0], TX_MAX);
}

static void check_tma_load(Verifier *V, const Op *op)
{
    Type slot, win;
    if (op->nargs < 5) {
        vfy_err(V, op, "needs a buffer, a slot, a barrier ring, its slot, a tensor and its offsets");
        return;
    }
    if (!vfy_buffer_slot(V, op, &slot) || !ring_slot(V, op, 2))
        return;
    if (!vfy_window_type(V, op, T(V, op->args[4]), 4, 0, &win))
        return;
    if (!same_st(&win, &slot))
        vfy_err(V, op, "box %s does not match the buffer slot %s", vfy_tstr(V, &win), vfy_tstr(V, &slot));
    else if (type_numel(&win) * dtype_bits((DType)win.dtype) / 8 > TX_MAX)
        vfy_err(V, op, "box of %lld bytes is above the transaction count's %d",
                (long long)(type_numel(&win) * dtype_bits((DType)win.dtype) / 8), TX_MAX);
}

static bool is_token(const Type *t) { return is_scalar(t) && t->dtype == DT_TOKEN; }

static void check_dot_async(Verifier *V, const Op *op)
{
    if (!vfy_dot_operands(V, op))
        return;
    if (!is_token(T(V, op->res[0])))
        vfy_err(V, op, "result must be a token, got %s", vfy_tstr(V, T(V, op->res[0])));
    vfy_mma_kind(V, op);
}

static void check_dot_wait(Verifier *V, const Op *op)
{
    const Type *t = T(V, op->args[0]), *r = T(V, op->res[0]);
    if (!is_token(t)) {
        vfy_err(V, op, "operand #0 must be a token, got %s", vfy_tstr(V, t));
        return;
    }
    if (op->iattr[0] < 0)
        vfy_err(V, op, "pending count %lld is negative", (long long)op->iattr[0]);
    const Op *def = ir_val(V->f, op->args[0])->def;
    if (def && def->code == OP_DOT_ASYNC && def->nargs == 3)
        vfy_result_is(V, op, T(V, def->args[2]), "the accumulator of its dot_async");
    else if (!is_tile(r) || r->rank != 2 || (r->dtype != DT_F32 && r->dtype != DT_I32))
        vfy_err(V, op, "result must be a 2-D f32 or i32 accumulator, got %s", vfy_tstr(V, r));
}

static bool is_tmem(const Type *t)
{
    return is_tile(t) && t->rank == 2 && t->space == SP_TMEM &&
           (t->dtype == DT_F32 || ((t->dtype == DT_BF16 || t->dtype == DT_F16) && t->shape[1] % 2 == 0));
}

static void check_tmem_alloc(Verifier *V, const Op *op)
{
    const Type *t = T(V, op->res[0]);
    if (!is_tmem(t) || t->shape[0] % TCGEN05_M || t->shape[1] < 1) {
        vfy_err(V, op, "result must be tile<M x N x T, tmem> with M a multiple of %d and T f32, or bf16 or f16 "
                "with N even, got %s", TCGEN05_M, vfy_tstr(V, t));
        return;
    }
    int64_t cols = ir_tmem_cols(t), alloc = op->iattr[2];
    if (cols > TMEM_COLS)
        vfy_err(V, op, "needs %lld columns of tensor memory, above its %d", (long long)cols, TMEM_COLS);
    if (op->iattr[1] < -1 || (op->iattr[1] >= 0 && op->iattr[1] % 8))
        vfy_err(V, op, "offset %lld is neither -1 (not placed) nor a multiple of 8", (long long)op->iattr[1]);
    if (op->iattr[1] >= 0 && (alloc < 32 || alloc > TMEM_COLS || (alloc & (alloc - 1)) || op->iattr[0] < 0 ||
                              op->iattr[0] + cols > alloc))
        vfy_err(V, op, "columns %lld..%lld do not lie in an allocation of %lld (a power of two 32..%d)",
                (long long)op->iattr[0], (long long)(op->iattr[0] + cols - 1), (long long)alloc, TMEM_COLS);
}

static bool tmem_operand(Verifier *V, const Op *op, int i)
{
    const Value *v = ir_val(V->f, op->args[i]);
    if (!v->def || v->def->code != OP_TMEM_ALLOC || !is_tmem(&v->type)) {
        vfy_err(V, op, "operand #%d must be tensor memory made by tmem_alloc, got %s", i, vfy_tstr(V, &v->type));
        return false;
    }
    return true;
}

static void check_tc_mma(Verifier *V, const Op *op)
{
    if (!tmem_operand(V, op, 2) || !vfy_dot_operands(V, op))
        return;
    if (T(V, op->args[2])->dtype != DT_F32)
        vfy_err(V, op, "the accumulator must be f32 tensor memory, got %s", vfy_tstr(V, T(V, op->args[2])));
    if (T(V, op->args[1])->space == SP_TMEM)
        vfy_err(V, op, "operand #1 (B) is read from shared memory, not tensor memory");
    if (T(V, op->args[0])->space == SP_TMEM && !tmem_operand(V, op, 0))
        return;
    const Type *acc = T(V, op->args[3]);
    if (!is_scalar(acc) || acc->dtype != DT_BOOL)
        vfy_err(V, op, "accumulate operand #3 must be a bool scalar, got %s", vfy_tstr(V, acc));
    vfy_mma_kind(V, op);
}

bool vfy_sched_rule(Verifier *V, const Op *op)
{
    switch (op->code) {
    case OP_WS: check_ws(V, op); return true;
    case OP_NAMED_BAR: check_named_bar(V, op); return true;
    case OP_MBAR_ALLOC: check_mbar_alloc(V, op); return true;
    case OP_MBAR_EXPECT: case OP_MBAR_ARRIVE: case OP_MBAR_WAIT: check_mbar_op(V, op); return true;
    case OP_TMA_LOAD: check_tma_load(V, op); return true;
    case OP_DOT_ASYNC: check_dot_async(V, op); return true;
    case OP_DOT_WAIT: check_dot_wait(V, op); return true;
    case OP_TMEM_ALLOC: check_tmem_alloc(V, op); return true;
    case OP_TC_MMA: check_tc_mma(V, op); return true;
    case OP_TC_COMMIT: ring_slot(V, op, 0); return true;
    case OP_TMEM_LOAD: {
        if (!tmem_operand(V, op, 0))
            return true;
        Type r = *T(V, op->args[0]);
        r.space = SP_REG;
        vfy_result_is(V, op, &r, "the tensor memory's shape in registers");
        return true;
    }
    case OP_TMEM_STORE: {
        if (!tmem_operand(V, op, 0))
            return true;
        const Type *m = T(V, op->args[0]), *v = T(V, op->args[1]);
        if (!is_tile(v) || v->space == SP_TMEM || v->space == SP_SHARED || v->rank != 2 || v->dtype != m->dtype ||
            v->shape[0] != m->shape[0] || v->shape[1] != m->shape[1])
            vfy_err(V, op, "value must be a register tile of the tensor memory's shape and dtype (%s), got %s",
                    vfy_tstr(V, m), vfy_tstr(V, v));
        return true;
    }
    case OP_CONVERT_LAYOUT:
        if (!is_tile(T(V, op->args[0])))
            vfy_err(V, op, "operand must be a tile, got %s", vfy_tstr(V, T(V, op->args[0])));
        else
            vfy_result_is(V, op, T(V, op->args[0]), "the operand's shape and dtype");
        return true;
    default: return false;
    }
}
