/* interp_tile.c - the interpreter's scans and random words.
 *
 * SCAN combines along its axis in order: integers wrap at their width after
 * every step; floats accumulate in double and each output is rounded once
 * to the dtype (as REDUCE). An exclusive scan's element i combines elements
 * 0..i-1; its first element is the kind's identity (sum 0, prod 1, max -inf
 * or the dtype's minimum, min +inf or its maximum). float max/min return
 * the non-NaN operand (fmax/fmin).
 *
 * PHILOX gives word (o & 3) of Philox4x32-10 at counter o >> 2 (philox.h)
 * per offset o.
 *
 * SLICE, CONCAT and RESHAPE move elements between register tiles: a slice
 * reads the operand at start + index, a concat takes its first operand's
 * elements then its second's along the axis, a reshape keeps the row-major
 * order of the elements.
 */
#include "interp_int.h"
#include "philox.h"

#include <math.h>
#include <string.h>

static Elem identity(DType dt, int kind)
{
    Elem e;
    if (!ip_intlike(dt)) {
        e.f = kind == RED_SUM ? 0.0 : kind == RED_PROD ? 1.0 : kind == RED_MAX ? -INFINITY : INFINITY;
        return e;
    }
    int bits = dtype_bits(dt);
    bool sg = dtype_is_signed(dt);
    uint64_t top = bits == 64 ? ~0ull : (1ull << bits) - 1;   /* the unsigned maximum */
    if (kind == RED_SUM)
        e.i = 0;
    else if (kind == RED_PROD)
        e.i = 1;
    else if (kind == RED_MAX)
        e.i = sg ? ip_wrap_int(dt, (int64_t)(1ull << (bits - 1))) : 0;
    else
        e.i = ip_wrap_int(dt, (int64_t)(sg ? top >> 1 : top));
    return e;
}

static double fcombine(int kind, double a, double b)
{
    return kind == RED_SUM ? a + b : kind == RED_PROD ? a * b : kind == RED_MAX ? fmax(a, b) : fmin(a, b);
}

static void scan_run(DType dt, int kind, bool excl, const Elem *x, Elem *o, int64_t len, int64_t inner)
{
    static const OpCode iop[RED_COUNT] = { [RED_SUM] = OP_ADD, [RED_MAX] = OP_MAX, [RED_MIN] = OP_MIN,
                                           [RED_PROD] = OP_MUL };
    Elem acc = identity(dt, kind);
    for (int64_t j = 0; j < len; j++) {
        Elem v = x[j * inner], prev = acc;
        if (ip_intlike(dt))
            ip_int_binary(iop[kind], dt, acc.i, v.i, &acc.i);   /* no division: never fails */
        else
            acc.f = fcombine(kind, acc.f, v.f);
        Elem r = excl ? prev : acc;
        if (!ip_intlike(dt))
            r.f = tc_round_to(dt, r.f);
        o[j * inner] = r;
    }
}

static int exec_scan(Interp *I, const Op *op)
{
    const Type *st = ir_type(I->f, op->args[0]);
    int64_t outer, len, inner, kind = op->iattr[1];
    if (!ip_axis_split(I, op, type_numel(st), &outer, &len, &inner))
        return 1;
    Elem *o = ip_out(I, op->res[0]);
    const Elem *x = ip_in(I, op->args[0]);
    for (int64_t p = 0; p < outer; p++)
        for (int64_t q = 0; q < inner; q++) {
            int64_t b = p * len * inner + q;
            scan_run((DType)st->dtype, (int)kind, op->iattr[2] != 0, x + b, o + b, len, inner);
        }
    return 0;
}

static int exec_philox(Interp *I, const Op *op)
{
    DType od = ip_vdt(I, op->args[1]);
    int64_t seed = ip_in(I, op->args[0])[0].i, n = ip_vnumel(I, op->res[0]);
    const Elem *x = ip_in(I, op->args[1]);
    Elem *o = ip_out(I, op->res[0]);
    for (int64_t k = 0; k < n; k++) {
        uint64_t off = dtype_bits(od) == 32 ? (uint32_t)x[k].i : (uint64_t)x[k].i;
        o[k].i = tc_philox_randint(seed, off);
    }
    return 0;
}

/* Row-major strides of a tile's shape. */
static void strides_of(const Type *t, int64_t *st)
{
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= t->shape[d];
    }
}

static int exec_slice(Interp *I, const Op *op)
{
    const Type *a = ir_type(I->f, op->args[0]), *r = ir_type(I->f, op->res[0]);
    if (a->rank != r->rank || op->nlist != a->rank) {
        diag_internal(I->d, op->loc, "slice: malformed (rank %d -> %d, %d starts)", a->rank, r->rank, op->nlist);
        return 1;
    }
    int64_t as[TILE_MAXRANK], n = type_numel(r);
    strides_of(a, as);
    const Elem *x = ip_in(I, op->args[0]);
    Elem *o = ip_out(I, op->res[0]);
    for (int64_t k = 0; k < n; k++) {
        int64_t rem = k, src = 0;
        for (int d = r->rank - 1; d >= 0; d--) {
            src += (op->list[d] + rem % r->shape[d]) * as[d];
            rem /= r->shape[d];
        }
        o[k] = x[src];
    }
    return 0;
}

static int exec_concat(Interp *I, const Op *op)
{
    const Type *a = ir_type(I->f, op->args[0]), *b = ir_type(I->f, op->args[1]), *r = ir_type(I->f, op->res[0]);
    int ax = (int)op->iattr[0];
    if (ax < 0 || ax >= r->rank || a->rank != r->rank || b->rank != r->rank) {
        diag_internal(I->d, op->loc, "concat: malformed");
        return 1;
    }
    /* outer x (extent along the axis x inner) blocks: a's block, then b's */
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < ax; d++)
        outer *= r->shape[d];
    for (int d = ax + 1; d < r->rank; d++)
        inner *= r->shape[d];
    int64_t na = a->shape[ax] * inner, nb = b->shape[ax] * inner;
    const Elem *xa = ip_in(I, op->args[0]), *xb = ip_in(I, op->args[1]);
    Elem *o = ip_out(I, op->res[0]);
    for (int64_t i = 0; i < outer; i++) {
        memcpy(o + i * (na + nb), xa + i * na, sizeof(Elem) * (size_t)na);
        memcpy(o + i * (na + nb) + na, xb + i * nb, sizeof(Elem) * (size_t)nb);
    }
    return 0;
}

int ip_exec_tile(Interp *I, const Op *op)
{
    switch ((OpCode)op->code) {
    case OP_SCAN: return exec_scan(I, op);
    case OP_SLICE: return exec_slice(I, op);
    case OP_CONCAT: return exec_concat(I, op);
    case OP_RESHAPE: return ip_copy_val(I, op->res[0], op->args[0], op->loc);
    default: return exec_philox(I, op);
    }
}
