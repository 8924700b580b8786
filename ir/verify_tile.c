/* verify_tile.c - the type rules of the tile ops beyond elementwise math
 * and reductions: SCAN (cumulative along an axis) and PHILOX (counter-based
 * random words). See ops.h for their operands and attributes. */
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

bool vfy_tile_rule(Verifier *V, const Op *op)
{
    switch ((OpCode)op->code) {
    case OP_SCAN: check_scan(V, op); return true;
    case OP_PHILOX: check_philox(V, op); return true;
    default: return false;
    }
}
