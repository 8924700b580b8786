/* mask_split_analysis.c - what the mask_split pass (mask_split.c) knows of
 * a loop: exact scalar ranges, affine forms over index tiles, the iv and
 * invariant scalars, and the masking selects whose condition has one.
 */
#include "mask_split_int.h"

#include <string.h>

/* ---- scalar ranges ---- */

static const Rng i32_full = { INT32_MIN, INT32_MAX };

static int64_t sat(int64_t x) { return x > BIG ? BIG : x < -BIG ? -BIG : x; }
int64_t mn64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t mx64(int64_t a, int64_t b) { return a > b ? a : b; }
bool fits32(Rng r) { return r.lo >= INT32_MIN && r.hi <= INT32_MAX; }
static Rng as_i32(Rng r) { return fits32(r) ? r : i32_full; }

static int64_t smul(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? -BIG : BIG;
    return sat(r);
}

/* Bounds are within +-BIG, so these sums cannot overflow int64. */
static Rng rng_add(Rng a, Rng b, int sign)
{
    if (sign > 0)
        return (Rng){ sat(a.lo + b.lo), sat(a.hi + b.hi) };
    return (Rng){ sat(a.lo - b.hi), sat(a.hi - b.lo) };
}

static Rng rng_scale(Rng a, int64_t k)
{
    int64_t x = smul(a.lo, k), y = smul(a.hi, k);
    return (Rng){ mn64(x, y), mx64(x, y) };
}

static Rng rng_mul(Rng a, Rng b)
{
    Rng x = rng_scale(a, b.lo), y = rng_scale(a, b.hi);
    return (Rng){ mn64(x.lo, y.lo), mx64(x.hi, y.hi) };
}

/* Truncating division / remainder by a positive constant, dividend >= 0. */
static Rng rng_divrem(Rng a, Rng b, bool rem)
{
    if (b.lo != b.hi || b.lo <= 0 || a.lo < 0)
        return (Rng){ -BIG, BIG };
    if (rem)
        return a.hi < b.lo ? a : (Rng){ 0, b.lo - 1 };
    return (Rng){ a.lo / b.lo, a.hi / b.lo };
}

static bool is_i32(const Func *f, ValId v)
{
    const Type *t = ir_type(f, v);
    return t->kind == TY_SCALAR && t->dtype == DT_I32;
}

/* The range of `code` applied to ranges a, b (two-operand ops). */
Rng rng_binop(OpCode code, Rng a, Rng b)
{
    switch (code) {
    case OP_ADD: return rng_add(a, b, 1);
    case OP_SUB: return rng_add(a, b, -1);
    case OP_MUL: return rng_mul(a, b);
    case OP_DIV: return rng_divrem(a, b, false);
    case OP_REM: return rng_divrem(a, b, true);
    case OP_MIN: return (Rng){ mn64(a.lo, b.lo), mn64(a.hi, b.hi) };
    case OP_MAX: return (Rng){ mx64(a.lo, b.lo), mx64(a.hi, b.hi) };
    default: return (Rng){ -BIG, BIG };
    }
}

Rng rng_of(const Ranges *R, ValId v) { return v < R->n ? R->r[v] : i32_full; }

static Rng eval_op(const Ranges *R, const Op *op)
{
    int ax = (int)(op->iattr[0] & 3);
    switch (op->code) {
    case OP_CONST: return (Rng){ op->iattr[0], op->iattr[0] };
    case OP_BLOCKID: return ax < 3 ? R->blocks[ax] : i32_full;
    case OP_NBLOCKS: return ax < 3 ? R->nblocks[ax] : i32_full;
    default:
        if (op->nargs != 2)
            return (Rng){ -BIG, BIG };
        return rng_binop((OpCode)op->code, rng_of(R, op->args[0]), rng_of(R, op->args[1]));
    }
}

static void range_block(Ranges *R, const Block *blk);

static void range_for(Ranges *R, const Op *op)
{
    const Block *body = &op->regions[0];
    Rng lo = rng_of(R, op->args[0]), hi = rng_of(R, op->args[1]);
    if (body->nargs > 0)
        R->r[body->args[0]] = (Rng){ lo.lo, mx64(lo.lo, hi.hi - 1) };
    range_block(R, body);
}

static void range_block(Ranges *R, const Block *blk)
{
    for (int i = 0; i < blk->nops; i++) {
        const Op *op = blk->ops[i];
        if (op->code == OP_FOR)
            range_for(R, op);
        for (int g = 0; op->code != OP_FOR && g < op->nregions; g++)
            range_block(R, &op->regions[g]);
        if (op->nres == 1 && is_i32(R->f, op->res[0])) {
            Rng r = eval_op(R, op);
            R->r[op->res[0]] = R->exact ? r : as_i32(r);
        }
    }
}

void ranges_init(Ranges *R, const Func *f, Arena *a)
{
    R->f = f;
    R->r = arena_alloc(a, sizeof(Rng) * f->nvals);
    R->n = f->nvals;
    for (uint32_t v = 0; v < f->nvals; v++)
        R->r[v] = i32_full;
    for (int i = 0; i < f->ndims; i++)
        R->r[f->dims[i]] = (Rng){ 0, INT32_MAX };
    for (int ax = 0; ax < 3; ax++)
        R->nblocks[ax] = (Rng){ 1, INT32_MAX };
    R->exact = true;
    range_block(R, &f->grid);
    R->exact = false;
    const Op *y = ir_block_yield(&f->grid);
    for (int ax = 0; ax < 3; ax++) {
        if (y && ax < y->nargs) {
            Rng g = rng_of(R, y->args[ax]);
            R->nblocks[ax] = (Rng){ mx64(1, g.lo), mn64(INT32_MAX, g.hi) };
        }
        R->blocks[ax] = (Rng){ 0, R->nblocks[ax].hi - 1 };
    }
    range_block(R, &f->body);
}

/* ---- affine forms over index tiles, the iv and invariant scalars ---- */

static bool lin_term(Lin *l, ValId v, int64_t k)
{
    for (int i = 0; i < l->na; i++)
        if (l->atom[i] == v) {
            l->coef[i] += k;
            return true;
        }
    if (l->na == MAXATOM)
        return false;
    l->atom[l->na] = v, l->coef[l->na++] = k;
    return true;
}

/* a += sign * b */
bool lin_acc(Lin *a, const Lin *b, int64_t sign)
{
    a->c += sign * b->c;
    for (int k = 0; k < TILE_MAXRANK; k++)
        a->ix[k] += sign * b->ix[k];
    for (int i = 0; i < b->na; i++)
        if (!lin_term(a, b->atom[i], sign * b->coef[i]))
            return false;
    return true;
}

static int64_t lin_coef(const Lin *l, ValId v)
{
    for (int i = 0; i < l->na; i++)
        if (l->atom[i] == v)
            return l->coef[i];
    return 0;
}

static bool lin_atom(Dec *d, ValId v, Lin *out, Rng *vr)
{
    if (!is_i32(d->f, v) || (v != d->iv && d->inside && d->inside[v]))
        return false;
    *vr = v == d->iv ? d->ivr : rng_of(d->R, v);
    return lin_term(out, v, 1);
}

static bool lin_binary(Dec *d, const Op *op, Lin *out, Rng *vr)
{
    Lin b = { 0 };
    Rng ra, rb;
    int sign = op->code == OP_ADD ? 1 : -1;
    if (!lin_of(d, op->args[0], out, &ra) || !lin_of(d, op->args[1], &b, &rb) || !lin_acc(out, &b, sign))
        return false;
    *vr = rng_add(ra, rb, sign);
    if (!fits32(*vr))
        d->wrap = true;
    return true;
}

static bool lin_expand(Dec *d, const Op *op, Lin *out, Rng *vr)
{
    int ax = (int)op->iattr[0], rank = ir_type(d->f, op->res[0])->rank;
    if (!lin_of(d, op->args[0], out, vr) || ax < 0 || ax >= rank)
        return false;
    for (int k = rank - 1; k > ax; k--)
        out->ix[k] = out->ix[k - 1];
    out->ix[ax] = 0;
    return true;
}

static bool lin_iota(Dec *d, const Op *op, Lin *out, Rng *vr)
{
    const Type *t = ir_type(d->f, op->res[0]);
    int ax = (int)op->iattr[0];
    if (ax < 0 || ax >= t->rank)
        return false;
    if (t->shape[ax] > 1)
        out->ix[ax] = 1;
    *vr = (Rng){ 0, t->shape[ax] - 1 };
    return true;
}

/* Decompose v (an i32 scalar or tile) into an affine form; *vr bounds it. */
bool lin_of(Dec *d, ValId v, Lin *out, Rng *vr)
{
    const Type *t = ir_type(d->f, v);
    const Op *op = ir_val(d->f, v)->def;
    memset(out, 0, sizeof *out);
    if (t->dtype != DT_I32 || t->kind == TY_TENSOR)
        return false;
    if (v == d->iv || !op)
        return lin_atom(d, v, out, vr);
    switch (op->code) {
    case OP_CONST:
        out->c = op->iattr[0];
        *vr = (Rng){ out->c, out->c };
        return true;
    case OP_ADD: case OP_SUB: return lin_binary(d, op, out, vr);
    case OP_SPLAT: case OP_BROADCAST: return lin_of(d, op->args[0], out, vr);
    case OP_EXPAND: return lin_expand(d, op, out, vr);
    case OP_IOTA: return lin_iota(d, op, out, vr);
    default: return t->kind == TY_SCALAR && lin_atom(d, v, out, vr);
    }
}

/* ---- one masking select ---- */

/* Normalise CMP(a, b) per element to  E <= 0. */
bool cond_form(Dec *d, const Op *cmp, Lin *e)
{
    Lin a, b;
    Rng ra, rb;
    if (!lin_of(d, cmp->args[0], &a, &ra) || !lin_of(d, cmp->args[1], &b, &rb))
        return false;
    switch ((CmpPred)cmp->iattr[0]) {
    case CMP_LT: *e = a; e->c += 1; return lin_acc(e, &b, -1);         /* a - b + 1 <= 0 */
    case CMP_LE: *e = a; return lin_acc(e, &b, -1);
    case CMP_GT: *e = b; e->c += 1; return lin_acc(e, &a, -1);         /* b - a + 1 <= 0 */
    case CMP_GE: *e = b; return lin_acc(e, &a, -1);
    default: return false;
    }
}

static bool is_mask_value(const Func *f, ValId v)
{
    const Op *op = ir_val(f, v)->def;
    return op && (op->code == OP_CONST || op->code == OP_SPLAT);
}

/* Is `sel` a select whose condition is all true for iv <= U (U invariant)? */
bool mask_of(Dec *d, Op *sel, Mask *m)
{
    const Op *cmp = ir_val(d->f, sel->args[0])->def;
    if (!cmp || cmp->code != OP_CMP || !is_mask_value(d->f, sel->args[2]))
        return false;
    Lin e;
    if (!cond_form(d, cmp, &e) || lin_coef(&e, d->iv) != 1)
        return false;
    const Type *t = ir_type(d->f, cmp->args[0]);
    memset(m, 0, sizeof *m);
    m->sel = sel;
    m->kmax = m->kmin = e.c;
    for (int k = 0; k < TILE_MAXRANK; k++) {
        int64_t ext = t->kind == TY_TILE && k < t->rank ? t->shape[k] : 1;
        int64_t span = smul(e.ix[k], ext - 1);
        m->kmax += span > 0 ? span : 0;
        m->kmin += span < 0 ? span : 0;
    }
    for (int i = 0; i < e.na; i++)
        if (e.atom[i] != d->iv && e.coef[i] != 0 && !lin_term(&m->rest, e.atom[i], e.coef[i]))
            return false;
    return true;
}

/* V = U + 1 = -rest + 1 - kmax: the first iv at which an element may be false. */
Lin mask_first_partial(const Mask *m)
{
    Lin v = { 0 };
    lin_acc(&v, &m->rest, -1);
    v.c += 1 - m->kmax;
    return v;
}

/* F = -rest + 1 - kmin: from here on every element is false. */
Lin mask_first_empty(const Mask *m)
{
    Lin v = { 0 };
    lin_acc(&v, &m->rest, -1);
    v.c += 1 - m->kmin;
    return v;
}
