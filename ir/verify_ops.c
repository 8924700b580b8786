/* verify_ops.c - the verifier's type rules of the core ops (ops.h):
 * elementwise math, CMP, SELECT and CAST; SPLAT, EXPAND, BROADCAST, IOTA,
 * REDUCE and TRANS; DOT and its matrix instruction family; the windows of
 * LOAD, STORE and ATOMIC_ADD; shared buffers (SMEM_ALLOC, ASYNC_COPY,
 * SMEM_LOAD, SMEM_STORE, ASYNC_WAIT); FOR and IF, their carried values and
 * YIELDs. vfy_op_rule picks the op's rule, here, in verify_tile.c or in
 * verify_sched.c.
 *
 * Needs: the op's operands and results valid values and its counts those
 * of op_info (verify.c checks both before it calls vfy_op_rule).
 * Guarantees: each broken rule is reported once at the op (vfy_err); the
 * IR is not changed.
 */
#include "verify_int.h"

/* ---- op rules ---- */

void vfy_result_is(Verifier *V, const Op *op, const Type *want, const char *rule)
{
    const Type *r = T(V, op->res[0]);
    if (!same_st(r, want))
        vfy_err(V, op, "result type %s should be %s (%s)", vfy_tstr(V, r), vfy_tstr(V, want), rule);
}

static void check_elem_dtype(Verifier *V, const Op *op, DType dt)
{
    switch (op->code) {
    case OP_AND: case OP_OR: case OP_XOR: case OP_NOT:
        if (dt != DT_BOOL && !dtype_is_int(dt))
            vfy_err(V, op, "needs bool or integer operands, got %s", dtype_name(dt));
        return;
    case OP_DIVISOR: case OP_SHL: case OP_SHR:
        if (!dtype_is_int(dt))
            vfy_err(V, op, "needs integer operands, got %s", dtype_name(dt));
        return;
    case OP_EXP: case OP_EXP2: case OP_LOG: case OP_LOG2: case OP_SQRT: case OP_RSQRT: case OP_TANH:
    case OP_ERF: case OP_SIGMOID: case OP_SIN: case OP_COS: case OP_FLOOR: case OP_CEIL: case OP_ROUND:
    case OP_POW:
        if (!dtype_is_float(dt))
            vfy_err(V, op, "needs float operands, got %s", dtype_name(dt));
        else if (op->code == OP_EXP2 && op->iattr[0] && (dt != DT_F32 || op->iattr[0] < 0 || op->iattr[0] > 1024))
            vfy_err(V, op, "{emu = %lld} needs an f32 operand and a group period from 1 to 1024",
                    (long long)op->iattr[0]);
        return;
    case OP_CMP: case OP_SELECT: case OP_CAST:
        if (dtype_is_opaque(dt))
            vfy_err(V, op, "needs data operands, got %s", dtype_name(dt));
        return;
    default:
        if (!is_numeric(dt))
            vfy_err(V, op, "needs numeric operands, got %s", dtype_name(dt));
        return;
    }
}

/* Elementwise: identical operand types; result of that shape (bool for CMP). */
static void check_elementwise(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    for (int i = 1; i < op->nargs; i++)
        if (!same_st(a, T(V, op->args[i]))) {
            vfy_err(V, op, "operand types differ: %s vs %s", vfy_tstr(V, a), vfy_tstr(V, T(V, op->args[i])));
            return;
        }
    check_elem_dtype(V, op, (DType)a->dtype);
    Type want = *a;
    if (op->code == OP_CMP)
        want.dtype = DT_BOOL;
    vfy_result_is(V, op, &want, op->code == OP_CMP ? "bool of the operand shape" : "the operand type");
}

static void check_select(Verifier *V, const Op *op)
{
    const Type *c = T(V, op->args[0]), *a = T(V, op->args[1]), *b = T(V, op->args[2]);
    if (c->dtype != DT_BOOL || !type_same_shape(c, a))
        vfy_err(V, op, "condition must be bool of the operands' shape, got %s for %s", vfy_tstr(V, c), vfy_tstr(V, a));
    else if (!same_st(a, b))
        vfy_err(V, op, "operand types differ: %s vs %s", vfy_tstr(V, a), vfy_tstr(V, b));
    else
        vfy_result_is(V, op, a, "the operand type");
}

static void check_cast(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *r = T(V, op->res[0]);
    if (!type_same_shape(a, r))
        vfy_err(V, op, "changes the shape: %s to %s", vfy_tstr(V, a), vfy_tstr(V, r));
}

static void check_splat(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *r = T(V, op->res[0]);
    if (!is_scalar(a) || !is_tile(r))
        vfy_err(V, op, "needs a scalar operand and a tile result, got %s to %s", vfy_tstr(V, a), vfy_tstr(V, r));
    else if (a->dtype != r->dtype)
        vfy_err(V, op, "changes the dtype: %s to %s", vfy_tstr(V, a), vfy_tstr(V, r));
}

static void check_expand(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    int64_t ax = op->iattr[0];
    if (!is_tile(a) || a->rank >= TILE_MAXRANK || ax < 0 || ax > a->rank) {
        vfy_err(V, op, "axis %lld is not valid for %s", (long long)ax, vfy_tstr(V, a));
        return;
    }
    Type want = *a;
    want.rank = (uint8_t)(a->rank + 1);
    for (int i = want.rank - 1; i > ax; i--)
        want.shape[i] = a->shape[i - 1];
    want.shape[ax] = 1;
    vfy_result_is(V, op, &want, "the expanded operand type");
}

static void check_broadcast(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *r = T(V, op->res[0]);
    if (!is_tile(a) || !is_tile(r) || a->rank != r->rank || a->dtype != r->dtype) {
        vfy_err(V, op, "needs tiles of one rank and dtype, got %s to %s", vfy_tstr(V, a), vfy_tstr(V, r));
        return;
    }
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != r->shape[i] && a->shape[i] != 1) {
            vfy_err(V, op, "dim %d of %s is neither %lld nor 1", i, vfy_tstr(V, a), (long long)r->shape[i]);
            return;
        }
}

static void check_iota(Verifier *V, const Op *op)
{
    const Type *r = T(V, op->res[0]);
    if (!is_tile(r) || r->dtype != DT_I32)
        vfy_err(V, op, "result must be an i32 tile, got %s", vfy_tstr(V, r));
    else if (op->iattr[0] < 0 || op->iattr[0] >= r->rank)
        vfy_err(V, op, "axis %lld out of range for %s", (long long)op->iattr[0], vfy_tstr(V, r));
}

bool vfy_axis_kind(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    int64_t ax = op->iattr[0];
    if (!is_tile(a) || ax < 0 || ax >= a->rank) {
        vfy_err(V, op, "axis %lld is not valid for %s", (long long)ax, vfy_tstr(V, a));
        return false;
    }
    if (op->iattr[1] < 0 || op->iattr[1] >= RED_COUNT) {
        vfy_err(V, op, "unknown %s kind %lld", op->code == OP_SCAN ? "scan" : "reduction", (long long)op->iattr[1]);
        return false;
    }
    return true;
}

static void check_reduce(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    int64_t ax = op->iattr[0];
    if (!vfy_axis_kind(V, op))
        return;
    Type want = *a;
    want.rank = (uint8_t)(a->rank - 1);
    for (int i = (int)ax; i < want.rank; i++)
        want.shape[i] = a->shape[i + 1];
    want.shape[want.rank] = 0;
    if (want.rank == 0)
        want = type_scalar((DType)a->dtype);
    vfy_result_is(V, op, &want, "the reduced operand type");
}

static void check_trans(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    if (!is_tile(a) || a->rank != 2) {
        vfy_err(V, op, "needs a 2-D tile, got %s", vfy_tstr(V, a));
        return;
    }
    Type want = *a;
    want.shape[0] = a->shape[1];
    want.shape[1] = a->shape[0];
    vfy_result_is(V, op, &want, "the transposed operand type");
}

bool vfy_dot_operands(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *b = T(V, op->args[1]), *c = T(V, op->args[2]);
    if (!is_tile(a) || !is_tile(b) || !is_tile(c) || a->rank != 2 || b->rank != 2 || c->rank != 2) {
        vfy_err(V, op, "needs 2-D tiles, got %s, %s, %s", vfy_tstr(V, a), vfy_tstr(V, b), vfy_tstr(V, c));
        return false;
    }
    if (a->shape[1] != b->shape[0] || c->shape[0] != a->shape[0] || c->shape[1] != b->shape[1]) {
        vfy_err(V, op, "shapes do not fit [M,K] x [K,N] + [M,N]: %s x %s + %s", vfy_tstr(V, a), vfy_tstr(V, b),
                vfy_tstr(V, c));
        return false;
    }
    if (a->dtype != b->dtype) {
        vfy_err(V, op, "operand dtypes differ: %s vs %s", dtype_name(a->dtype), dtype_name(b->dtype));
        return false;
    }
    DType acc = dtype_is_float(a->dtype) ? DT_F32 : DT_I32;
    if (c->dtype != acc) {
        vfy_err(V, op, "accumulator must be %s for %s operands, got %s", dtype_name(acc), dtype_name(a->dtype),
                vfy_tstr(V, c));
        return false;
    }
    return true;
}

/* DOT / DOT_ASYNC iattr[0]: a known family, wgmma only on shapes it takes. */
void vfy_mma_kind(Verifier *V, const Op *op)
{
    int64_t k = op->iattr[0];
    const char *why;
    if (k < 0 || k >= MMA_COUNT)
        vfy_err(V, op, "unknown matrix instruction family %lld", (long long)k);
    else if (k == MMA_SYNC && T(V, op->args[0])->dtype == DT_F32 &&
             (why = ir_mma_tf32_problem(T(V, op->args[0]), T(V, op->args[1]))))
        vfy_err(V, op, "mma = mma_sync, but %s", why);
    else if (k == MMA_SYNC && T(V, op->args[0])->dtype != DT_F32 &&
             (why = ir_mma_sync_problem(T(V, op->args[0]), T(V, op->args[1]))))
        vfy_err(V, op, "mma = mma_sync, but %s", why);
    else if (k == MMA_SIMT && op->code != OP_DOT)
        vfy_err(V, op, "mma = simt is a dot's family, not a %s's", op_info[op->code].name);
    else if (k == MMA_WGMMA && (why = ir_wgmma_problem(T(V, op->args[0]), T(V, op->args[1]))))
        vfy_err(V, op, "mma = wgmma, but %s", why);
    else if (k == MMA_TCGEN05 && op->code == OP_DOT_ASYNC)
        vfy_err(V, op, "mma = tcgen05 keeps its accumulator in tensor memory: a tc_mma, not a dot_async");
    else if (op->code == OP_TC_MMA && k != MMA_TCGEN05)
        vfy_err(V, op, "tc_mma runs on tcgen05 (mma = tcgen05), not %s", mma_names[k]);
    else if (k == MMA_TCGEN05 && (why = ir_tcgen05_problem(T(V, op->args[0]), T(V, op->args[1]))))
        vfy_err(V, op, "mma = tcgen05, but %s", why);
}

static void check_dot(Verifier *V, const Op *op)
{
    if (!vfy_dot_operands(V, op))
        return;
    vfy_result_is(V, op, T(V, op->args[2]), "the accumulator type");
    vfy_mma_kind(V, op);
}

/* LOAD/STORE/ASYNC_COPY: [buffer, slot,] tensor (operand `base`), one i32
 * offset per dim [, other | value]; extents per dim (0 = scalar index); the
 * tile shape is the kept extents. */
bool vfy_window_type(Verifier *V, const Op *op, const Type *tt, int base, int nextra, Type *win)
{
    int r = tt->rank;
    if (op->nargs != base + 1 + r + nextra) {
        vfy_err(V, op, "needs %d operands for a rank-%d tensor, got %d", base + 1 + r + nextra, r, op->nargs);
        return false;
    }
    for (int i = base + 1; i <= base + r; i++)
        if (!is_i32(T(V, op->args[i]))) {
            vfy_err(V, op, "offset operand #%d must be an i32 scalar, got %s", i, vfy_tstr(V, T(V, op->args[i])));
            return false;
        }
    if (op->nlist != r) {
        vfy_err(V, op, "has %d window extents for a rank-%d tensor", op->nlist, r);
        return false;
    }
    if (op->iattr[0] < 0 || (r < 63 && (op->iattr[0] >> r) != 0)) {
        vfy_err(V, op, "mask %lld has bits beyond the tensor's %d dims", (long long)op->iattr[0], r);
        return false;
    }
    int64_t shape[TENSOR_MAXRANK];
    int k = 0;
    for (int i = 0; i < r; i++) {
        if (op->list[i] < 0) {
            vfy_err(V, op, "window extent %d is negative", i);
            return false;
        }
        if (op->list[i] > 0)
            shape[k++] = op->list[i];
    }
    if (k > TILE_MAXRANK) {
        vfy_err(V, op, "window keeps %d dims (a tile has at most %d)", k, TILE_MAXRANK);
        return false;
    }
    *win = k ? type_tile((DType)tt->dtype, k, shape, SP_ANY) : type_scalar((DType)tt->dtype);
    return true;
}

static void check_load(Verifier *V, const Op *op)
{
    if (op->nargs < 1) {
        vfy_err(V, op, "needs a tensor operand");
        return;
    }
    const Type *tt = T(V, op->args[0]);
    bool other = op->iattr[1] != 0;
    Type win;
    if (!vfy_window_type(V, op, tt, 0, other, &win))
        return;
    vfy_result_is(V, op, &win, "the window type");
    if (other) {
        const Type *o = T(V, op->args[op->nargs - 1]);
        if (!(is_scalar(o) && o->dtype == tt->dtype) && !same_st(o, &win))
            vfy_err(V, op, "'other' must be a %s scalar or of the window type %s, got %s", dtype_name(tt->dtype),
                    vfy_tstr(V, &win), vfy_tstr(V, o));
    }
}

static void check_store(Verifier *V, const Op *op)
{
    if (op->nargs < 2) {
        vfy_err(V, op, "needs a tensor operand and a value");
        return;
    }
    const Type *tt = T(V, op->args[0]);
    Type win;
    if (!vfy_window_type(V, op, tt, 0, 1, &win))
        return;
    const Type *v = T(V, op->args[op->nargs - 1]);
    if (!same_st(v, &win))
        vfy_err(V, op, "stored value %s does not match the window type %s", vfy_tstr(V, v), vfy_tstr(V, &win));
    if (op->code == OP_ATOMIC_ADD && tt->kind == TY_TENSOR && tt->dtype != DT_F32 && tt->dtype != DT_I32 &&
        tt->dtype != DT_U32)
        vfy_err(V, op, "needs an f32, i32 or u32 tensor, got %s", vfy_tstr(V, tt));
    if (op->code == OP_STORE && op->iattr[1] &&
        (!is_tile(v) || v->rank != 2 || v->space != SP_SHARED || dtype_bits((DType)v->dtype) != 16))
        vfy_err(V, op, "a TMA store (`tma`) takes a 2-D 16-bit tile declared shared, got %s", vfy_tstr(V, v));
}

/* ---- shared buffers ---- */

static bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

static void check_smem_alloc(Verifier *V, const Op *op)
{
    const Type *r = T(V, op->res[0]);
    if (!is_tile(r) || r->space != SP_SHARED || r->rank < 2)
        vfy_err(V, op, "result must be a shared tile of rank >= 2 (stages x slot shape), got %s", vfy_tstr(V, r));
    if (op->iattr[0] < 0 || op->iattr[0] >= SWZ_COUNT)
        vfy_err(V, op, "unknown swizzle mode %lld", (long long)op->iattr[0]);
    if (op->iattr[1] < -1)
        vfy_err(V, op, "offset %lld is negative (-1 = not assigned yet)", (long long)op->iattr[1]);
    if (!is_pow2(op->iattr[2]))
        vfy_err(V, op, "alignment %lld is not a positive power of two", (long long)op->iattr[2]);
    else if (op->iattr[1] > 0 && op->iattr[1] % op->iattr[2])
        vfy_err(V, op, "offset %lld is not a multiple of the alignment %lld", (long long)op->iattr[1],
                (long long)op->iattr[2]);
    if (op->iattr[3] < 0 || (op->iattr[3] && op->iattr[0] != SWZ_PAD))
        vfy_err(V, op, "pad %lld needs swizzle = pad and a non-negative size", (long long)op->iattr[3]);
}

/* Operand #0 is an SMEM_ALLOC result and #1 an i32 slot; *slot = the shape
 * of one slot (the buffer type without its leading stage dim). */
bool vfy_buffer_slot(Verifier *V, const Op *op, Type *slot)
{
    const Value *b = ir_val(V->f, op->args[0]);
    if (!b->def || b->def->code != OP_SMEM_ALLOC || !is_tile(&b->type) || b->type.rank < 2) {
        vfy_err(V, op, "operand #0 must be a buffer made by smem_alloc");
        return false;
    }
    if (!is_i32(T(V, op->args[1]))) {
        vfy_err(V, op, "slot operand #1 must be an i32 scalar, got %s", vfy_tstr(V, T(V, op->args[1])));
        return false;
    }
    *slot = type_tile((DType)b->type.dtype, b->type.rank - 1, b->type.shape + 1, SP_SHARED);
    return true;
}

static void check_async_copy(Verifier *V, const Op *op)
{
    Type slot, win;
    if (op->nargs < 3 || !vfy_buffer_slot(V, op, &slot)) {
        if (op->nargs < 3)
            vfy_err(V, op, "needs a buffer, a slot, a tensor and its offsets");
        return;
    }
    if (!vfy_window_type(V, op, T(V, op->args[2]), 2, 0, &win))
        return;
    if (!same_st(&win, &slot))
        vfy_err(V, op, "window %s does not match the buffer slot %s", vfy_tstr(V, &win), vfy_tstr(V, &slot));
}

static void check_smem_load(Verifier *V, const Op *op)
{
    Type slot;
    if (!vfy_buffer_slot(V, op, &slot))
        return;
    const Type *r = T(V, op->res[0]);
    slot.space = SP_REG;
    vfy_result_is(V, op, &slot, "the buffer's slot type");
    if (r->space != SP_REG && r->space != SP_ANY)
        vfy_err(V, op, "result must be a register tile, got %s", vfy_tstr(V, r));
}

static void check_smem_store(Verifier *V, const Op *op)
{
    Type slot;
    if (!vfy_buffer_slot(V, op, &slot))
        return;
    const Type *v = T(V, op->args[2]);
    if (!same_st(v, &slot))
        vfy_err(V, op, "stored value %s does not match the buffer slot %s", vfy_tstr(V, v), vfy_tstr(V, &slot));
}

/* A region ends in YIELD whose values match the op's results. */
static void check_yield_of(Verifier *V, const Op *op, int g)
{
    const Op *y = ir_block_yield(&op->regions[g]);
    if (!y) {
        vfy_err(V, op, "region %d does not end in 'yield'", g);
        return;
    }
    if (y->nargs != op->nres) {
        vfy_err(V, y, "yields %d value(s) but the enclosing '%s' has %d result(s)", y->nargs,
                op_info[op->code].name, op->nres);
        return;
    }
    for (int i = 0; i < y->nargs; i++)
        if (valid_id(V, y->args[i]) && !same_st(T(V, y->args[i]), T(V, op->res[i])))
            vfy_err(V, y, "yielded value #%d is %s but result #%d of '%s' is %s", i, vfy_tstr(V, T(V, y->args[i])), i,
                    op_info[op->code].name, vfy_tstr(V, T(V, op->res[i])));
}

static void check_for(Verifier *V, const Op *op)
{
    if (op->nargs < 3) {
        vfy_err(V, op, "needs lo, hi, step operands, got %d operands", op->nargs);
        return;
    }
    for (int i = 0; i < 3; i++)
        if (!is_i32(T(V, op->args[i])))
            vfy_err(V, op, "%s must be an i32 scalar, got %s", i == 0 ? "lo" : i == 1 ? "hi" : "step",
                    vfy_tstr(V, T(V, op->args[i])));
    int n = op->nargs - 3;
    const Block *b = &op->regions[0];
    if (op->nres != n) {
        vfy_err(V, op, "has %d carried init(s) but %d result(s)", n, op->nres);
        return;
    }
    if (b->nargs != n + 1) {
        vfy_err(V, op, "region has %d argument(s); it needs the induction variable and %d carried value(s)",
                b->nargs, n);
        return;
    }
    if (valid_id(V, b->args[0]) && !is_i32(T(V, b->args[0])))
        vfy_err(V, op, "induction variable must be an i32 scalar, got %s", vfy_tstr(V, T(V, b->args[0])));
    for (int i = 0; i < n; i++) {
        const Type *init = T(V, op->args[3 + i]), *res = T(V, op->res[i]);
        if (!same_st(init, res))
            vfy_err(V, op, "carried value #%d: init is %s but result is %s", i, vfy_tstr(V, init), vfy_tstr(V, res));
        else if (valid_id(V, b->args[i + 1]) && !same_st(T(V, b->args[i + 1]), res))
            vfy_err(V, op, "carried value #%d: region argument is %s but result is %s", i,
                    vfy_tstr(V, T(V, b->args[i + 1])), vfy_tstr(V, res));
    }
    if (op->iattr[0] < 0)
        vfy_err(V, op, "pipeline stage count %lld is negative", (long long)op->iattr[0]);
    check_yield_of(V, op, 0);
}

static void check_if(Verifier *V, const Op *op)
{
    const Type *c = T(V, op->args[0]);
    if (!is_scalar(c) || c->dtype != DT_BOOL)
        vfy_err(V, op, "condition must be a bool scalar, got %s", vfy_tstr(V, c));
    for (int g = 0; g < 2; g++) {
        if (op->regions[g].nargs)
            vfy_err(V, op, "region %d must have no arguments, has %d", g, op->regions[g].nargs);
        check_yield_of(V, op, g);
    }
}

void vfy_op_rule(Verifier *V, const Op *op)
{
    const OpInfo *oi = &op_info[op->code];
    if (oi->flags & OPF_ELEM) {
        if (op->code == OP_SELECT)
            check_select(V, op);
        else if (op->code == OP_CAST)
            check_cast(V, op);
        else
            check_elementwise(V, op);
        return;
    }
    switch (op->code) {
    case OP_CONST:
        if (T(V, op->res[0])->kind == TY_TENSOR || dtype_is_opaque((DType)T(V, op->res[0])->dtype))
            vfy_err(V, op, "result must be a scalar or a tile of a data type");
        return;
    case OP_BLOCKID: case OP_NBLOCKS:
        if (!is_i32(T(V, op->res[0])))
            vfy_err(V, op, "result must be i32, got %s", vfy_tstr(V, T(V, op->res[0])));
        if (op->iattr[0] < 0 || op->iattr[0] > 2)
            vfy_err(V, op, "axis %lld out of range 0..2", (long long)op->iattr[0]);
        return;
    case OP_SPLAT: check_splat(V, op); return;
    case OP_EXPAND: check_expand(V, op); return;
    case OP_BROADCAST: check_broadcast(V, op); return;
    case OP_IOTA: check_iota(V, op); return;
    case OP_REDUCE: check_reduce(V, op); return;
    case OP_TRANS: check_trans(V, op); return;
    case OP_SCAN: case OP_PHILOX: case OP_SLICE: case OP_CONCAT: case OP_RESHAPE: case OP_GATHER: case OP_SCATTER:
        vfy_tile_rule(V, op);
        return;
    case OP_DOT: check_dot(V, op); return;
    case OP_LOAD: check_load(V, op); return;
    case OP_STORE: case OP_ATOMIC_ADD: check_store(V, op); return;
    case OP_SMEM_ALLOC: check_smem_alloc(V, op); return;
    case OP_ASYNC_COPY: check_async_copy(V, op); return;
    case OP_SMEM_LOAD: check_smem_load(V, op); return;
    case OP_SMEM_STORE: check_smem_store(V, op); return;
    case OP_ASYNC_WAIT:
        if (op->iattr[0] < 0)
            vfy_err(V, op, "pending count %lld is negative", (long long)op->iattr[0]);
        return;
    case OP_FOR: check_for(V, op); return;
    case OP_IF: check_if(V, op); return;
    default: vfy_sched_rule(V, op); return;
    }
}
