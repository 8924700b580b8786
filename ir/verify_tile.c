/* verify_tile.c - the type rules of the tile ops beyond elementwise math
 * and reductions: SCAN (cumulative along an axis), PHILOX (counter-based
 * random words), the register shape ops SLICE, CONCAT and RESHAPE, and the
 * indexed window ops GATHER and SCATTER. See ops.h for their operands and
 * attributes. */
#include "verify_int.h"

static void check_scan(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    if (!vfy_axis_kind(V, op))
        return;
    if (!is_numeric((DType)a->dtype)) {
        vfy_err(V, op, "needs a numeric tile, got %s", vfy_tstr(V, a));
        return;
    }
    if (op->iattr[2] != 0 && op->iattr[2] != 1) {
        vfy_err(V, op, "exclusive must be 0 or 1, got %lld", (long long)op->iattr[2]);
        return;
    }
    vfy_result_is(V, op, a, "the operand type");
}

static bool offset_dtype(DType d)
{
    return d == DT_I32 || d == DT_U32 || d == DT_I64 || d == DT_U64;
}

static void check_philox(Verifier *V, const Op *op)
{
    const Type *s = T(V, op->args[0]), *o = T(V, op->args[1]);
    if (!is_scalar(s) || s->dtype != DT_I64) {
        vfy_err(V, op, "the seed must be an i64 scalar, got %s", vfy_tstr(V, s));
        return;
    }
    if (o->kind == TY_TENSOR || !offset_dtype((DType)o->dtype)) {
        vfy_err(V, op, "the offsets must be i32, u32, i64 or u64, got %s", vfy_tstr(V, o));
        return;
    }
    Type want = *o;
    want.dtype = DT_U32;
    vfy_result_is(V, op, &want, "u32 of the offsets' shape");
}

static void check_slice(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *r = T(V, op->res[0]);
    if (!is_tile(a) || !is_tile(r) || r->rank != a->rank || r->dtype != a->dtype) {
        vfy_err(V, op, "needs a tile and a result tile of its rank and dtype, got %s -> %s", vfy_tstr(V, a),
                vfy_tstr(V, r));
        return;
    }
    if (op->nlist != a->rank) {
        vfy_err(V, op, "has %d starts for a rank-%d tile", op->nlist, a->rank);
        return;
    }
    for (int d = 0; d < a->rank; d++)
        if (op->list[d] < 0 || op->list[d] > a->shape[d] - r->shape[d]) {
            vfy_err(V, op, "dim %d: start %lld + size %lld runs past the extent %lld", d, (long long)op->list[d],
                    (long long)r->shape[d], (long long)a->shape[d]);
            return;
        }
}

static void check_concat(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *b = T(V, op->args[1]);
    int64_t ax = op->iattr[0];
    if (!is_tile(a) || !is_tile(b) || a->rank != b->rank || a->dtype != b->dtype) {
        vfy_err(V, op, "needs two tiles of one rank and dtype, got %s and %s", vfy_tstr(V, a), vfy_tstr(V, b));
        return;
    }
    if (ax < 0 || ax >= a->rank) {
        vfy_err(V, op, "axis %lld out of range for %s", (long long)ax, vfy_tstr(V, a));
        return;
    }
    Type want = *a;
    for (int d = 0; d < a->rank; d++)
        if (d != ax && a->shape[d] != b->shape[d]) {
            vfy_err(V, op, "extents of dim %d differ: %s and %s", d, vfy_tstr(V, a), vfy_tstr(V, b));
            return;
        }
    want.shape[ax] = a->shape[ax] + b->shape[ax];
    vfy_result_is(V, op, &want, "the operands joined along the axis");
}

static void check_reshape(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *r = T(V, op->res[0]);
    if (!is_tile(a) || !is_tile(r) || r->dtype != a->dtype || type_numel(a) != type_numel(r))
        vfy_err(V, op, "needs a tile and a result of its dtype and element count, got %s -> %s", vfy_tstr(V, a),
                vfy_tstr(V, r));
}

/* GATHER / SCATTER: a window (as LOAD / STORE) plus the index tile after
 * the offsets; along dim iattr[2] the window's extent is the index count. */
static void check_indexed(Verifier *V, const Op *op)
{
    bool gather = op->code == OP_GATHER;
    if (op->nargs < 2) {
        vfy_err(V, op, "needs a tensor operand and an index tile");
        return;
    }
    const Type *tt = T(V, op->args[0]);
    int nextra = 1 + (gather ? op->iattr[1] != 0 : 1);
    Type win;
    if (!vfy_window_type(V, op, tt, 0, nextra, &win))
        return;
    int64_t d = op->iattr[2];
    if (d < 0 || d >= tt->rank || op->list[d] <= 0) {
        vfy_err(V, op, "dim %lld is not a kept dim of the window", (long long)d);
        return;
    }
    const Type *ix = T(V, op->args[1 + tt->rank]);
    if (!is_tile(ix) || ix->rank != 1 || (ix->dtype != DT_I32 && ix->dtype != DT_I64) ||
        ix->shape[0] != op->list[d]) {
        vfy_err(V, op, "the index must be an i32 or i64 tile of %lld elements, got %s", (long long)op->list[d],
                vfy_tstr(V, ix));
        return;
    }
    if (gather) {
        vfy_result_is(V, op, &win, "the window type");
        if (op->iattr[1]) {
            const Type *o = T(V, op->args[op->nargs - 1]);
            if (!(is_scalar(o) && o->dtype == tt->dtype))
                vfy_err(V, op, "'other' must be a %s scalar, got %s", dtype_name(tt->dtype), vfy_tstr(V, o));
        }
        return;
    }
    const Type *v = T(V, op->args[op->nargs - 1]);
    if (!same_st(v, &win))
        vfy_err(V, op, "stored value %s does not match the window type %s", vfy_tstr(V, v), vfy_tstr(V, &win));
}

bool vfy_tile_rule(Verifier *V, const Op *op)
{
    switch ((OpCode)op->code) {
    case OP_SCAN: check_scan(V, op); return true;
    case OP_PHILOX: check_philox(V, op); return true;
    case OP_SLICE: check_slice(V, op); return true;
    case OP_CONCAT: check_concat(V, op); return true;
    case OP_RESHAPE: check_reshape(V, op); return true;
    case OP_GATHER: case OP_SCATTER: check_indexed(V, op); return true;
    default: return false;
    }
}
