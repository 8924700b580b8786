/* interp.c - the Tile IR interpreter: the semantic reference every pass and
 * code generator is checked against. Runs a kernel on host memory, one
 * block at a time, blocks in order (z outer, x inner).
 *
 * Values: every value (scalar or tile) is a dense row-major array of Elem,
 * one element for a scalar. Integer and bool values hold int64 exactly
 * (wrapped to their width); float values hold doubles already rounded to
 * their dtype, so a bf16 tile only ever contains bf16-representable numbers.
 * Math is done in double and rounded once per op; DOT and REDUCE(sum)
 * accumulate in double and round at the end.
 *
 * Choices the code generators must match:
 *  - float MIN/MAX (op and reduction) return the non-NaN operand (fmin/fmax);
 *  - CAST float -> int truncates toward zero, saturates, NaN gives 0;
 *  - integer DIV/REM truncate (C); division by zero is an error;
 *  - LOAD reads out-of-bounds elements (negative indices included) as 0 or
 *    `other`; STORE drops them. A window dim whose mask bit is cleared but
 *    that runs out of bounds is reported: the IR claimed it was safe.
 *  - Shared buffers: SMEM_ALLOC gives zeroed storage (every time it runs);
 *    ASYNC_COPY copies at once (out-of-bounds elements written as 0);
 *    SMEM_LOAD and SMEM_STORE read / write one slot. A slot out of
 *    0..stages-1 is an error. The data never waits, but the protocol is
 *    checked as one thread of the block sees it, so a schedule that would
 *    race on the GPU is an error here: reading a slot whose copy's group no
 *    ASYNC_WAIT has retired, or whose copy was retired after the last
 *    BARRIER (other threads' parts may not be visible), and writing a slot
 *    (copy or store) that was read since the last BARRIER (other threads may
 *    still be reading it).
 *  - WS regions run their roles as coroutines over exact mbarriers, with
 *    TMA copies and DOT_ASYNC products completing later; the protocol is
 *    checked there too (interp_sched.c's header).
 *
 * Files: this one (values, arithmetic, shapes, control flow, dispatch),
 * interp_mem.c (tensors, shared buffers), interp_tile.c (scans, random words), interp_sched.c,
 * interp_tmem.c and interp_roles.c (the schedule), interp_launch.c (arguments, the grid, the
 * entry points); interp_int.h holds what they share.
 *
 * Memory: each value owns one buffer, allocated on its first definition
 * from the per-block scratch arena and reused when a loop redefines it, so
 * a block's footprint does not grow with its trip counts.
 */
#include "interp_int.h"
#include "divisor.h"

#include <math.h>
#include <string.h>

/* ---- element helpers ---- */

int64_t ip_wrap_int(DType dt, int64_t v) { return tc_wrap_int(dt, (uint64_t)v); }

static double int_to_double(DType dt, int64_t v)
{
    if (dt == DT_U64)
        return (double)(uint64_t)v;
    return (double)v;
}

/* Truncate toward zero, saturate to dt's range; NaN gives 0. */
static int64_t float_to_int(DType dt, double x)
{
    if (dt == DT_BOOL)
        return x != 0.0;
    if (isnan(x))
        return 0;
    int bits = dtype_bits(dt);
    bool sgn = dtype_is_signed(dt);
    double lo = sgn ? -ldexp(1.0, bits - 1) : 0.0;
    double hi = sgn ? ldexp(1.0, bits - 1) : ldexp(1.0, bits);   /* exclusive */
    double t = trunc(x);
    if (t < lo)
        t = lo;
    if (t >= hi) {
        if (bits == 64)
            return sgn ? INT64_MAX : -1;   /* -1: the UINT64_MAX bit pattern */
        return (int64_t)hi - 1;
    }
    if (t >= 9223372036854775808.0) {   /* u64 above INT64_MAX: keep the bits */
        uint64_t u = (uint64_t)t;
        int64_t r;
        memcpy(&r, &u, sizeof r);
        return r;
    }
    return (int64_t)t;
}

Elem ip_conv(DType from, DType to, Elem x)
{
    Elem r;
    if (ip_intlike(to))
        r.i = ip_intlike(from) ? ip_wrap_int(to, x.i) : float_to_int(to, x.f);
    else
        r.f = tc_round_to(to, ip_intlike(from) ? int_to_double(from, x.i) : x.f);
    return r;
}

double ip_as_double(DType dt, Elem x) { return ip_intlike(dt) ? int_to_double(dt, x.i) : x.f; }

/* ---- tensor storage ---- */

static int64_t load_int(DType dt, const void *p)
{
    int8_t i8; int16_t i16; int32_t i32; int64_t i64;
    uint8_t u8; uint16_t u16; uint32_t u32;
    switch (dt) {
    case DT_I8: memcpy(&i8, p, 1); return i8;
    case DT_I16: memcpy(&i16, p, 2); return i16;
    case DT_I32: memcpy(&i32, p, 4); return i32;
    case DT_U16: memcpy(&u16, p, 2); return u16;
    case DT_U32: memcpy(&u32, p, 4); return u32;
    case DT_I64: case DT_U64: memcpy(&i64, p, 8); return i64;
    case DT_BOOL: memcpy(&u8, p, 1); return u8 != 0;
    default: memcpy(&u8, p, 1); return u8;
    }
}

static void store_int(DType dt, void *p, int64_t v)
{
    v = ip_wrap_int(dt, v);
    uint64_t u = (uint64_t)v;
    uint8_t u8 = (uint8_t)u; uint16_t u16 = (uint16_t)u; uint32_t u32 = (uint32_t)u;
    switch (dtype_bits(dt)) {
    case 8: memcpy(p, &u8, 1); break;
    case 16: memcpy(p, &u16, 2); break;
    case 32: memcpy(p, &u32, 4); break;
    default: memcpy(p, &u, 8); break;
    }
}

Elem ip_load_elem(DType dt, const void *p)
{
    Elem e;
    if (ip_intlike(dt))
        e.i = load_int(dt, p);
    else
        e.f = tc_load_elem(dt, p);
    return e;
}

void ip_store_elem(DType dt, void *p, Elem x)
{
    if (ip_intlike(dt))
        store_int(dt, p, x.i);
    else
        tc_store_elem(dt, p, x.f);
}

/* ---- value slots ---- */


int ip_copy_val(Interp *I, ValId dst, ValId src, Loc loc)
{
    if (ip_vnumel(I, dst) != ip_vnumel(I, src)) {
        diag_internal(I->d, loc, "carried value shapes differ");
        return 1;
    }
    DType fd = ip_vdt(I, src), td = ip_vdt(I, dst);
    Elem *o = ip_out(I, dst);
    const Elem *x = ip_in(I, src);
    for (int64_t k = 0; k < ip_vnumel(I, dst); k++)
        o[k] = fd == td ? x[k] : ip_conv(fd, td, x[k]);
    return 0;
}

/* ---- elementwise ---- */

static bool cmp_holds(int pred, int c)   /* c = sign of a - b; 2 = unordered */
{
    switch (pred) {
    case CMP_EQ: return c == 0;
    case CMP_NE: return c != 0;
    case CMP_LT: return c == -1;
    case CMP_LE: return c == -1 || c == 0;
    case CMP_GT: return c == 1;
    default: return c == 1 || c == 0;
    }
}

static int cmp_int(DType dt, int64_t a, int64_t b)
{
    if (dt == DT_U64)
        return (uint64_t)a < (uint64_t)b ? -1 : (uint64_t)a > (uint64_t)b;
    return a < b ? -1 : a > b;
}

static int cmp_float(double a, double b)
{
    if (isnan(a) || isnan(b))
        return 2;
    return a < b ? -1 : a > b;
}

/* Integer binary op, wrapping; returns false on division by zero (divisor: on an operand
 * over TC_DIVISOR_MAX). */
bool ip_int_binary(OpCode c, DType dt, int64_t a, int64_t b, int64_t *r)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    bool u64 = dt == DT_U64;
    switch (c) {
    case OP_ADD: *r = (int64_t)(ua + ub); break;
    case OP_SUB: *r = (int64_t)(ua - ub); break;
    case OP_MUL: *r = (int64_t)(ua * ub); break;
    case OP_DIV:
    case OP_REM:
        if (b == 0)
            return false;
        if (u64)
            *r = (int64_t)(c == OP_DIV ? ua / ub : ua % ub);
        else if (b == -1)   /* avoids INT64_MIN / -1 */
            *r = c == OP_DIV ? (int64_t)(0 - ua) : 0;
        else
            *r = c == OP_DIV ? a / b : a % b;
        break;
    case OP_MIN: *r = cmp_int(dt, a, b) <= 0 ? a : b; break;
    case OP_MAX: *r = cmp_int(dt, a, b) >= 0 ? a : b; break;
    case OP_DIVISOR: *r = tc_divisor(a, b); if (*r < 0) return false; break;
    case OP_AND: *r = a & b; break;
    case OP_OR: *r = a | b; break;
    case OP_SHL: case OP_SHR: *r = tc_int_shift(c, dt, a, b); break;
    default: *r = a ^ b; break;
    }
    *r = ip_wrap_int(dt, *r);
    return true;
}

static bool is_float_math(OpCode c)
{
    double r;
    return c != OP_NEG && c != OP_ABS && tc_float_unary(c, 0.0, &r);
}

static int64_t int_unary(OpCode c, DType dt, int64_t x)
{
    switch (c) {
    case OP_NEG: return ip_wrap_int(dt, (int64_t)(0 - (uint64_t)x));
    case OP_NOT: return dt == DT_BOOL ? !x : ip_wrap_int(dt, ~x);
    default: return dt == DT_U64 || x >= 0 ? x : ip_wrap_int(dt, (int64_t)(0 - (uint64_t)x));
    }
}

/* One element of an elementwise op. Returns 0, or 1 after reporting. */
static int elem_eval(Interp *I, const Op *op, DType dt, const Elem *x, Elem *r)
{
    OpCode c = (OpCode)op->code;
    if (c == OP_CMP) {
        int s = ip_intlike(dt) ? cmp_int(dt, x[0].i, x[1].i) : cmp_float(x[0].f, x[1].f);
        r->i = cmp_holds((int)op->iattr[0], s);
        return 0;
    }
    if (op->nargs == 1 && ip_intlike(dt)) {
        if (is_float_math(c)) {
            diag_internal(I->d, op->loc, "%s on integer type %s", op_info[c].name, dtype_name(dt));
            return 1;
        }
        r->i = int_unary(c, dt, x[0].i);
        return 0;
    }
    if (!ip_intlike(dt) && (op->nargs == 1 ? tc_float_unary(c, x[0].f, &r->f)
                                           : tc_float_binary(c, x[0].f, x[1].f, &r->f))) {
        r->f = tc_round_to(dt, r->f);
        return 0;
    }
    if (!ip_intlike(dt)) {
        diag_internal(I->d, op->loc, "%s on float type %s", op_info[c].name, dtype_name(dt));
        return 1;
    }
    if (!ip_int_binary(c, dt, x[0].i, x[1].i, &r->i)) {
        if (c == OP_DIVISOR)
            diag_error(I->d, op->loc, "divisor(%lld, ...): the value exceeds 2^32", (long long)x[0].i);
        else
            diag_error(I->d, op->loc, "integer %s by zero", c == OP_DIV ? "division" : "remainder");
        return 1;
    }
    return 0;
}

/* Elementwise ops; an operand of one element broadcasts (scalar cond etc.). */
static int exec_elem(Interp *I, const Op *op)
{
    ValId res = op->res[0];
    int64_t n = ip_vnumel(I, res);
    DType dt = ip_vdt(I, op->args[0]);
    Elem *o = ip_out(I, res);
    for (int i = 0; i < op->nargs; i++) {
        int64_t na = ip_vnumel(I, op->args[i]);
        if (na != n && na != 1) {
            diag_internal(I->d, op->loc, "%s: operand %d has %lld elements, result %lld",
                          op_info[op->code].name, i, (long long)na, (long long)n);
            return 1;
        }
    }
    const Type *rt = ir_type(I->f, res);
    int64_t every = op->code == OP_EXP2 && dt == DT_F32 ? op->iattr[0] : 0;
    int64_t ncol = rt->kind == TY_TILE && rt->rank > 0 ? rt->shape[rt->rank - 1] : 1;
    for (int64_t k = 0; k < n; k++) {
        Elem x[2];
        for (int i = 0; i < op->nargs; i++)
            x[i] = ip_in(I, op->args[i])[ip_vnumel(I, op->args[i]) == 1 ? 0 : k];
        if (every > 0 && tc_exp2_emu_col(k % ncol, every))
            o[k].f = tc_exp2_emu((float)x[0].f);   /* exp2 {emu}: this column on the FMA units */
        else if (elem_eval(I, op, dt, x, &o[k]))
            return 1;
    }
    return 0;
}

static int exec_select(Interp *I, const Op *op)
{
    ValId res = op->res[0];
    int64_t n = ip_vnumel(I, res);
    DType rd = ip_vdt(I, res);
    Elem *o = ip_out(I, res);
    const Elem *c = ip_in(I, op->args[0]), *a = ip_in(I, op->args[1]), *b = ip_in(I, op->args[2]);
    int64_t nc = ip_vnumel(I, op->args[0]), na = ip_vnumel(I, op->args[1]), nb = ip_vnumel(I, op->args[2]);
    if ((nc != n && nc != 1) || (na != n && na != 1) || (nb != n && nb != 1)) {
        diag_internal(I->d, op->loc, "select: operand shapes differ from the result");
        return 1;
    }
    for (int64_t k = 0; k < n; k++) {
        bool t = c[nc == 1 ? 0 : k].i != 0;
        Elem e = t ? a[na == 1 ? 0 : k] : b[nb == 1 ? 0 : k];
        o[k] = ip_conv(ip_vdt(I, op->args[t ? 1 : 2]), rd, e);
    }
    return 0;
}

static int exec_cast(Interp *I, const Op *op)
{
    ValId res = op->res[0];
    DType from = ip_vdt(I, op->args[0]), to = ip_vdt(I, res);
    int64_t n = ip_vnumel(I, res);
    if (ip_vnumel(I, op->args[0]) != n) {
        diag_internal(I->d, op->loc, "cast changes the element count");
        return 1;
    }
    Elem *o = ip_out(I, res);
    const Elem *x = ip_in(I, op->args[0]);
    for (int64_t k = 0; k < n; k++)
        o[k] = ip_conv(from, to, x[k]);
    return 0;
}

/* ---- constants and launch values ---- */

static int exec_const(Interp *I, const Op *op)
{
    ValId res = op->res[0];
    DType dt = ip_vdt(I, res);
    Elem e;
    if (ip_intlike(dt))
        e.i = ip_wrap_int(dt, op->iattr[0]);
    else
        e.f = tc_round_to(dt, op->fattr);
    Elem *o = ip_out(I, res);
    for (int64_t k = 0; k < ip_vnumel(I, res); k++)
        o[k] = e;
    return 0;
}

static int exec_launch(Interp *I, const Op *op)
{
    int64_t ax = op->iattr[0];
    if (ax < 0 || ax > 2) {
        diag_internal(I->d, op->loc, "%s axis %lld", op_info[op->code].name, (long long)ax);
        return 1;
    }
    Elem *o = ip_out(I, op->res[0]);
    o[0].i = ip_wrap_int(ip_vdt(I, op->res[0]), op->code == OP_BLOCKID ? I->block[ax] : I->grid[ax]);
    return 0;
}

/* ---- shape ops ---- */

static int exec_splat(Interp *I, const Op *op)
{
    ValId res = op->res[0];
    Elem e = ip_conv(ip_vdt(I, op->args[0]), ip_vdt(I, res), ip_in(I, op->args[0])[0]);
    Elem *o = ip_out(I, res);
    for (int64_t k = 0; k < ip_vnumel(I, res); k++)
        o[k] = e;
    return 0;
}

/* BROADCAST (and EXPAND: same data, one more size-1 dim). Source dims are
 * right-aligned with the result's; a size-1 source dim repeats. */
static int exec_broadcast(Interp *I, const Op *op)
{
    const Type *st = ir_type(I->f, op->args[0]), *rt = ir_type(I->f, op->res[0]);
    int rr = rt->rank, sr = st->kind == TY_TILE ? st->rank : 0;
    if (op->code == OP_EXPAND) {
        if (ip_vnumel(I, op->args[0]) != ip_vnumel(I, op->res[0]))
            goto bad;
        return ip_copy_val(I, op->res[0], op->args[0], op->loc);
    }
    int64_t sshape[TILE_MAXRANK];
    if (sr > rr || rr > TILE_MAXRANK)
        goto bad;
    for (int i = 0; i < rr; i++) {
        int si = i - (rr - sr);
        sshape[i] = si >= 0 ? st->shape[si] : 1;
        if (sshape[i] != 1 && sshape[i] != rt->shape[i])
            goto bad;
    }
    Elem *o = ip_out(I, op->res[0]);
    const Elem *x = ip_in(I, op->args[0]);
    DType sd = ip_vdt(I, op->args[0]), rd = ip_vdt(I, op->res[0]);
    for (int64_t k = 0; k < type_numel(rt); k++) {
        int64_t rem = k, src = 0, stride = 1;
        for (int i = rr - 1; i >= 0; i--) {
            int64_t c = rem % rt->shape[i];
            rem /= rt->shape[i];
            src += (sshape[i] == 1 ? 0 : c) * stride;
            stride *= sshape[i];
        }
        o[k] = ip_conv(sd, rd, x[src]);
    }
    return 0;
bad:
    diag_internal(I->d, op->loc, "%s: source shape does not fit the result", op_info[op->code].name);
    return 1;
}

static int exec_iota(Interp *I, const Op *op)
{
    const Type *rt = ir_type(I->f, op->res[0]);
    int64_t ax = op->iattr[0];
    if (rt->kind != TY_TILE || ax < 0 || ax >= rt->rank) {
        diag_internal(I->d, op->loc, "iota axis %lld out of range", (long long)ax);
        return 1;
    }
    int64_t inner = 1;
    for (int i = (int)ax + 1; i < rt->rank; i++)
        inner *= rt->shape[i];
    Elem *o = ip_out(I, op->res[0]);
    for (int64_t k = 0; k < type_numel(rt); k++)
        o[k].i = ip_wrap_int((DType)rt->dtype, (k / inner) % rt->shape[ax]);
    return 0;
}

static int exec_trans(Interp *I, const Op *op)
{
    const Type *st = ir_type(I->f, op->args[0]), *rt = ir_type(I->f, op->res[0]);
    if (st->rank != 2 || rt->rank != 2 || st->shape[0] != rt->shape[1] || st->shape[1] != rt->shape[0]) {
        diag_internal(I->d, op->loc, "trans needs a 2-D tile and its transposed result");
        return 1;
    }
    int64_t m = st->shape[0], n = st->shape[1];
    Elem *o = ip_out(I, op->res[0]);
    const Elem *x = ip_in(I, op->args[0]);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            o[j * m + i] = x[i * n + j];
    /* The transpose of a slot's read is the same read (a product's B = k^T
     * reads the slot in place until its dot_wait). */
    I->slots[op->res[0]].src_buf = I->slots[op->args[0]].src_buf;
    I->slots[op->res[0]].src_slot = I->slots[op->args[0]].src_slot;
    return 0;
}

/* ---- reductions and matrix products ---- */

static Elem reduce_run(DType dt, int kind, const Elem *x, int64_t len, int64_t inner)
{
    Elem r;
    if (ip_intlike(dt)) {
        int64_t acc = x[0].i;
        for (int64_t j = 1; j < len; j++) {
            int64_t v = x[j * inner].i;
            OpCode c = kind == RED_SUM ? OP_ADD : kind == RED_PROD ? OP_MUL : kind == RED_MAX ? OP_MAX : OP_MIN;
            ip_int_binary(c, dt, acc, v, &acc);
        }
        r.i = acc;
        return r;
    }
    double acc = x[0].f;
    for (int64_t j = 1; j < len; j++) {
        double v = x[j * inner].f;
        acc = kind == RED_SUM ? acc + v : kind == RED_PROD ? acc * v
              : kind == RED_MAX ? fmax(acc, v) : fmin(acc, v);
    }
    r.f = tc_round_to(dt, acc);
    return r;
}

bool ip_axis_split(Interp *I, const Op *op, int64_t rnumel, int64_t *outer, int64_t *len, int64_t *inner)
{
    const Type *st = ir_type(I->f, op->args[0]);
    int64_t ax = op->iattr[0], kind = op->iattr[1];
    if (st->kind != TY_TILE || ax < 0 || ax >= st->rank || kind < 0 || kind >= RED_COUNT ||
        ip_vnumel(I, op->res[0]) != rnumel) {
        diag_internal(I->d, op->loc, "%s: bad axis %lld or kind %lld", op_info[op->code].name, (long long)ax,
                      (long long)kind);
        return false;
    }
    *inner = 1;
    *len = st->shape[ax];
    for (int i = (int)ax + 1; i < st->rank; i++)
        *inner *= st->shape[i];
    *outer = type_numel(st) / (*len * *inner);
    return true;
}

static int exec_reduce(Interp *I, const Op *op)
{
    const Type *st = ir_type(I->f, op->args[0]);
    int64_t outer, len, inner, kind = op->iattr[1];
    int64_t ax = op->iattr[0];
    int64_t rn = st->kind == TY_TILE && ax >= 0 && ax < st->rank ? type_numel(st) / st->shape[ax] : -1;
    if (!ip_axis_split(I, op, rn, &outer, &len, &inner))
        return 1;
    DType sd = (DType)st->dtype, rd = ip_vdt(I, op->res[0]);
    Elem *o = ip_out(I, op->res[0]);
    const Elem *x = ip_in(I, op->args[0]);
    for (int64_t p = 0; p < outer; p++)
        for (int64_t q = 0; q < inner; q++)
            o[p * inner + q] = ip_conv(sd, rd, reduce_run(sd, (int)kind, x + p * len * inner + q, len, inner));
    return 0;
}

int ip_dot(Interp *I, Loc loc, ValId av, ValId bv, ValId cv, const Type *rt, Elem *o)
{
    const Type *at = ir_type(I->f, av), *bt = ir_type(I->f, bv), *ct = ir_type(I->f, cv);
    if (at->rank != 2 || bt->rank != 2 || ct->rank != 2 || rt->rank != 2 ||
        at->shape[1] != bt->shape[0] || at->shape[0] != rt->shape[0] ||
        bt->shape[1] != rt->shape[1] || !type_same_shape(ct, rt)) {
        diag_internal(I->d, loc, "dot: operand shapes do not agree");
        return 1;
    }
    int64_t m = at->shape[0], k = at->shape[1], n = bt->shape[1];
    DType ad = (DType)at->dtype, bd = (DType)bt->dtype, cd = (DType)ct->dtype, rd = (DType)rt->dtype;
    const Elem *a = ip_in(I, av), *b = ip_in(I, bv), *c = ip_in(I, cv);
    bool ints = ip_intlike(rd) && ip_intlike(ad);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = ip_as_double(cd, c[i * n + j]);
            int64_t si = ip_intlike(cd) ? c[i * n + j].i : 0;
            for (int64_t p = 0; p < k; p++) {
                if (ints)
                    si = (int64_t)((uint64_t)si + (uint64_t)a[i * k + p].i * (uint64_t)b[p * n + j].i);
                else
                    s += ip_as_double(ad, a[i * k + p]) * ip_as_double(bd, b[p * n + j]);
            }
            Elem e = { .f = s };
            if (ints)
                e.i = si;
            o[i * n + j] = ip_conv(ints ? DT_I64 : DT_F64, rd, e);
        }
    return 0;
}

static int exec_dot(Interp *I, const Op *op)
{
    return ip_dot(I, op->loc, op->args[0], op->args[1], op->args[2], ir_type(I->f, op->res[0]),
                  ip_out(I, op->res[0]));
}

/* ---- control flow ---- */

int ip_run_block(Interp *I, const Block *b, const Op **term);

/* Run a region and copy what its YIELD gives into `dst` (n values). */
static int run_region_into(Interp *I, const Op *op, const Block *b, const ValId *dst, int n)
{
    const Op *y = NULL;
    if (ip_run_block(I, b, &y))
        return 1;
    if (!y && n == 0)
        return 0;
    if (!y || y->nargs != n) {
        diag_internal(I->d, op->loc, "%s region yields %d values, expected %d",
                      op_info[op->code].name, y ? y->nargs : 0, n);
        return 1;
    }
    for (int i = 0; i < n; i++)
        if (ip_copy_val(I, dst[i], y->args[i], op->loc))
            return 1;
    return 0;
}

static int exec_for(Interp *I, const Op *op)
{
    int ninit = op->nargs - 3;
    const Block *body = &op->regions[0];
    if (ninit < 0 || op->nres != ninit || op->nregions != 1 || body->nargs != ninit + 1) {
        diag_internal(I->d, op->loc, "malformed for: %d operands, %d results", op->nargs, op->nres);
        return 1;
    }
    int64_t lo = ip_sint(I, op->args[0]), hi = ip_sint(I, op->args[1]), step = ip_sint(I, op->args[2]);
    if (step <= 0) {
        diag_error(I->d, op->loc, "loop step must be positive (got %lld)", (long long)step);
        return 1;
    }
    for (int i = 0; i < ninit; i++)
        if (ip_copy_val(I, op->res[i], op->args[3 + i], op->loc))
            return 1;
    for (int64_t iv = lo; iv < hi; iv += step) {
        ip_out(I, body->args[0])[0].i = ip_wrap_int(ip_vdt(I, body->args[0]), iv);
        for (int i = 0; i < ninit; i++)
            if (ip_copy_val(I, body->args[1 + i], op->res[i], op->loc))
                return 1;
        if (run_region_into(I, op, body, op->res, ninit))
            return 1;
    }
    return 0;
}

static int exec_if(Interp *I, const Op *op)
{
    if (op->nregions != 2) {
        diag_internal(I->d, op->loc, "if without two regions");
        return 1;
    }
    bool c = ip_in(I, op->args[0])[0].i != 0;
    return run_region_into(I, op, &op->regions[c ? 0 : 1], op->res, op->nres);
}

/* ---- dispatch ---- */

int ip_check_operands(Interp *I, const Op *op)
{
    for (int i = 0; i < op->nargs; i++) {
        ValId v = op->args[i];
        if (v == 0 || v >= I->f->nvals || (!I->slots[v].e && !I->slots[v].tensor)) {
            diag_internal(I->d, op->loc, "%s: operand %d used before it is defined",
                          op_info[op->code < OP_COUNT ? op->code : 0].name, i);
            return 1;
        }
        if (I->slots[v].locked)
            return ip_sched_locked(I, op, i);
    }
    return 0;
}

int ip_exec_op(Interp *I, const Op *op)
{
    if (op->code < OP_COUNT && ip_check_operands(I, op))
        return 1;
    switch ((OpCode)op->code) {
    case OP_CONST: return exec_const(I, op);
    case OP_BLOCKID: case OP_NBLOCKS: return exec_launch(I, op);
    case OP_NUMSMS:   /* the interpreter runs as a device of TC_INTERP_SMS SMs */
        ip_out(I, op->res[0])[0].i = TC_INTERP_SMS;
        return 0;
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM:
    case OP_MIN: case OP_MAX: case OP_DIVISOR: case OP_AND: case OP_OR: case OP_XOR: case OP_CMP:
    case OP_NEG: case OP_NOT: case OP_ABS: case OP_EXP: case OP_EXP2: case OP_LOG:
    case OP_LOG2: case OP_SQRT: case OP_RSQRT: case OP_TANH: case OP_SHL: case OP_SHR: case OP_POW:
    case OP_ERF: case OP_SIGMOID: case OP_SIN: case OP_COS: case OP_FLOOR: case OP_CEIL: case OP_ROUND:
        return exec_elem(I, op);
    case OP_SELECT: return exec_select(I, op);
    case OP_CAST: return exec_cast(I, op);
    case OP_SPLAT: return exec_splat(I, op);
    case OP_EXPAND: case OP_BROADCAST: return exec_broadcast(I, op);
    case OP_IOTA: return exec_iota(I, op);
    case OP_REDUCE: return exec_reduce(I, op);
    case OP_TRANS: return exec_trans(I, op);
    case OP_SCAN: case OP_PHILOX: case OP_SLICE: case OP_CONCAT: case OP_RESHAPE: return ip_exec_tile(I, op);
    case OP_DOT: return exec_dot(I, op);
    case OP_LOAD: case OP_STORE: case OP_ATOMIC_ADD: case OP_GATHER: case OP_SCATTER: case OP_SMEM_ALLOC:
    case OP_ASYNC_COPY: case OP_ASYNC_COMMIT:
    case OP_ASYNC_WAIT: case OP_BARRIER: case OP_SMEM_LOAD: case OP_SMEM_STORE:
        return ip_exec_mem(I, op);
    case OP_WS: case OP_NAMED_BAR: case OP_MBAR_ALLOC: case OP_MBAR_EXPECT: case OP_MBAR_ARRIVE:
    case OP_MBAR_WAIT: case OP_TMA_LOAD: case OP_DOT_ASYNC: case OP_DOT_WAIT: case OP_CONVERT_LAYOUT:
    case OP_TMEM_ALLOC: case OP_TC_MMA: case OP_TC_COMMIT: case OP_TMEM_LOAD: case OP_TMEM_STORE:
        return ip_exec_sched(I, op);
    case OP_FOR: return exec_for(I, op);
    case OP_IF: return exec_if(I, op);
    case OP_YIELD: return 0;   /* handled by run_block */
    case OP_COUNT: break;
    }
    diag_internal(I->d, op->loc, "interpreter: unknown op code %u", (unsigned)op->code);
    return 1;
}

/* Run b's ops in order, stopping at a YIELD (returned through *term). */
int ip_run_block(Interp *I, const Block *b, const Op **term)
{
    *term = NULL;
    for (int i = 0; i < b->nops; i++) {
        const Op *op = b->ops[i];
        if (op->code == OP_YIELD) {
            if (ip_check_operands(I, op))
                return 1;
            *term = op;
            return 0;
        }
        if (ip_exec_op(I, op))
            return 1;
    }
    return 0;
}

