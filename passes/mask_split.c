/* mask_split.c - masking without waste: a loop whose body masks a tile with
 * `select(cond, x, mask)` is split into full blocks, where every element of
 * the condition is provably true and the select is gone, and boundary
 * blocks, which keep the original body.
 *
 * Needs: verified IR, best after canonicalize (shared iota/splat terms, folded
 * constants) and bounds.
 * Guarantees: results never change. A FOR(lo, hi, step) with a constant step
 * > 0 is split only when at least one SELECT directly in its body
 *   - has a constant or splat false operand (a mask), and
 *   - has a condition CMP(lt|le|gt|ge) of two affine i32 expressions of
 *     index tiles (IOTA, through EXPAND/BROADCAST), splats of loop-invariant
 *     scalars and the induction variable iv (coefficient 1 once normalised),
 *     so that "true for every element" is iv <= U with U loop-invariant;
 * and the range analysis shows that neither the condition's terms (for the
 * iterations of the full loop) nor the split computation can wrap at 32 bits.
 * Then  split = min(lo + (max(min(U) + 1 - lo, 0) + step - 1) / step * step,
 * hi)  (the first iteration past U) is computed before the loop,
 * FOR(lo, split) runs the body with those selects replaced by their true
 * operand, and FOR(split, hi) (the original op, so its
 * results keep their uses) runs the original body from the first loop's
 * results. Iterations split..hi are exactly the original ones past split:
 * split is on the lo + k*step grid or equals hi.
 *
 * Fully masked blocks (the condition false for every element, iv >= F) are
 * only reported: skipping them would need a proof that the carried update
 * is a no-op for them. The remark says whether the loop bound already
 * excludes them (hi <= F, e.g. the causal attention loop's min(NK, m0 + BM)).
 *
 * Integer model: scalar ranges are exact integers; a result whose exact range
 * leaves i32 may have wrapped and is then only known to be an i32. Block ids
 * are bounded by the grid evaluated exactly, as the runtime launches it.
 * Each decision is explained in ctx->remarks.
 */
#include "passes.h"
#include "clone.h"

#include <stdlib.h>
#include <string.h>

/* ---- scalar ranges ---- */

typedef struct Rng {
    int64_t lo, hi;
} Rng;

#define BIG (INT64_C(1) << 61)

static const Rng i32_full = { INT32_MIN, INT32_MAX };

static int64_t sat(int64_t x) { return x > BIG ? BIG : x < -BIG ? -BIG : x; }
static int64_t mn64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t mx64(int64_t a, int64_t b) { return a > b ? a : b; }
static bool fits32(Rng r) { return r.lo >= INT32_MIN && r.hi <= INT32_MAX; }
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

typedef struct Ranges {
    const Func *f;
    Rng *r;                 /* per value: bounds of its i32 value */
    uint32_t n;             /* values covered (later ones: any i32) */
    Rng blocks[3], nblocks[3];
    bool exact;             /* the grid: exact arithmetic, no wrap clamp */
} Ranges;

static bool is_i32(const Func *f, ValId v)
{
    const Type *t = ir_type(f, v);
    return t->kind == TY_SCALAR && t->dtype == DT_I32;
}

/* The range of `code` applied to ranges a, b (two-operand ops). */
static Rng rng_binop(OpCode code, Rng a, Rng b)
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

static Rng rng_of(const Ranges *R, ValId v) { return v < R->n ? R->r[v] : i32_full; }

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

static void ranges_init(Ranges *R, const Func *f, Arena *a)
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

enum { MAXATOM = 8 };

typedef struct Lin {
    int64_t c;                      /* constant */
    int64_t ix[TILE_MAXRANK];       /* coefficient of the index along each axis */
    int na;
    ValId atom[MAXATOM];            /* i32 scalars (the iv among them) */
    int64_t coef[MAXATOM];
} Lin;

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
static bool lin_acc(Lin *a, const Lin *b, int64_t sign)
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

/* Context of one loop's decomposition. */
typedef struct Dec {
    const Func *f;
    const Ranges *R;
    const bool *inside;     /* values defined in the loop's body (or NULL) */
    ValId iv;
    Rng ivr;                /* the iv's range for the wrap check */
    bool wrap;              /* some term may have wrapped at 32 bits */
} Dec;

static bool lin_of(Dec *d, ValId v, Lin *out, Rng *vr);

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
static bool lin_of(Dec *d, ValId v, Lin *out, Rng *vr)
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

typedef struct Mask {
    Op *sel;
    Lin rest;               /* the condition is: iv + rest + (index part) <= 0 */
    int64_t kmax, kmin;     /* the index part's extremes over the tile */
} Mask;

/* Normalise CMP(a, b) per element to  E <= 0. */
static bool cond_form(Dec *d, const Op *cmp, Lin *e)
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
static bool mask_of(Dec *d, Op *sel, Mask *m)
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
static Lin mask_first_partial(const Mask *m)
{
    Lin v = { 0 };
    lin_acc(&v, &m->rest, -1);
    v.c += 1 - m->kmax;
    return v;
}

/* F = -rest + 1 - kmin: from here on every element is false. */
static Lin mask_first_empty(const Mask *m)
{
    Lin v = { 0 };
    lin_acc(&v, &m->rest, -1);
    v.c += 1 - m->kmin;
    return v;
}

/* ---- emitting scalar arithmetic, with a range per value ---- */

typedef struct Emit {
    Func *f;
    Builder b;
    const Ranges *R;
    bool dry;               /* only compute ranges */
    bool bad;               /* some value may wrap at 32 bits */
} Emit;

typedef struct EVal {
    ValId v;
    Rng r;
} EVal;

static EVal e_const(Emit *e, int64_t c)
{
    EVal x = { 0, { c, c } };
    if (c < INT32_MIN || c > INT32_MAX)
        e->bad = true;
    else if (!e->dry)
        x.v = ir_const_int(&e->b, type_scalar(DT_I32), c);
    return x;
}

static EVal e_val(const Emit *e, ValId v) { return (EVal){ v, rng_of(e->R, v) }; }

static EVal e_op(Emit *e, OpCode code, EVal a, EVal b)
{
    EVal x = { 0, rng_binop(code, a.r, b.r) };
    if (!fits32(x.r))
        e->bad = true;
    if (!e->dry && !e->bad) {
        ValId ops[2] = { a.v, b.v };
        x.v = ir_build1(&e->b, code, ops, 2, type_scalar(DT_I32));
    }
    return x;
}

/* sum of coef * atom + c: positive terms first, so subtractions come last. */
static EVal e_lin(Emit *e, const Lin *l)
{
    EVal acc = { 0, { 0, 0 } };
    bool have = false;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < l->na; i++) {
            int64_t k = l->coef[i];
            if (k == 0 || (pass == 0) != (k > 0))
                continue;
            EVal t = e_val(e, l->atom[i]);
            int64_t ak = k < 0 ? -k : k;
            if (ak != 1)
                t = e_op(e, OP_MUL, t, e_const(e, ak));
            if (!have && k < 0)
                acc = e_const(e, 0), have = true;
            acc = have ? e_op(e, k > 0 ? OP_ADD : OP_SUB, acc, t) : t;
            have = true;
        }
    if (!have)
        return e_const(e, l->c);
    if (l->c != 0)
        acc = e_op(e, l->c > 0 ? OP_ADD : OP_SUB, acc, e_const(e, l->c > 0 ? l->c : -l->c));
    return acc;
}

static bool is_const(const Func *f, ValId v, int64_t *c)
{
    const Op *op = ir_val(f, v)->def;
    if (!op || op->code != OP_CONST)
        return false;
    *c = op->iattr[0];
    return true;
}

/* split = min(lo + (max(min(V) - lo, 0) + step - 1) / step * step, hi):
 * the first iteration at or past V (every iteration before it is full). */
static EVal e_split(Emit *e, const Op *loop, const Mask *ms, int n)
{
    EVal m = { 0, { 0, 0 } };
    for (int i = 0; i < n; i++) {
        Lin v = mask_first_partial(&ms[i]);
        EVal x = e_lin(e, &v);
        m = i ? e_op(e, OP_MIN, m, x) : x;
    }
    int64_t lo0 = 1, step = 1;
    bool zero_lo = is_const(e->f, loop->args[0], &lo0) && lo0 == 0;
    is_const(e->f, loop->args[2], &step);
    EVal lo = e_val(e, loop->args[0]), st = e_val(e, loop->args[2]);
    if (!zero_lo)
        m = e_op(e, OP_SUB, m, lo);
    m = e_op(e, OP_MAX, m, e_const(e, 0));
    if (step != 1)
        m = e_op(e, OP_MUL, e_op(e, OP_DIV, e_op(e, OP_ADD, m, e_const(e, step - 1)), st), st);
    if (!zero_lo)
        m = e_op(e, OP_ADD, m, lo);
    return e_op(e, OP_MIN, m, e_val(e, loop->args[1]));
}

/* ---- describing forms in remarks ---- */

static void put_scalar(const Func *f, ValId v, StrBuf *out, int depth)
{
    const Value *val = ir_val(f, v);
    const Op *op = val->def;
    static const char axes[] = "xyz";
    if (val->name)
        sb_puts(out, val->name);
    else if (op && op->code == OP_CONST)
        sb_printf(out, "%lld", (long long)op->iattr[0]);
    else if (op && op->code == OP_BLOCKID && op->iattr[0] >= 0 && op->iattr[0] < 3)
        sb_printf(out, "block.%c", axes[op->iattr[0]]);
    else if (op && op->code == OP_NBLOCKS && op->iattr[0] >= 0 && op->iattr[0] < 3)
        sb_printf(out, "num_blocks.%c", axes[op->iattr[0]]);
    else if (op && depth < 4 && op->nargs == 2 && op->code >= OP_ADD && op->code <= OP_REM) {
        static const char sym[] = "+-*/%";
        if (depth)
            sb_putc(out, '(');
        put_scalar(f, op->args[0], out, depth + 1);
        sb_printf(out, " %c ", sym[op->code - OP_ADD]);
        put_scalar(f, op->args[1], out, depth + 1);
        if (depth)
            sb_putc(out, ')');
    } else
        sb_printf(out, "v%u", (unsigned)v);
}

static void put_lin(const Func *f, const Lin *l, StrBuf *out)
{
    bool first = true;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < l->na; i++) {
            int64_t k = l->coef[i];
            if (k == 0 || (pass == 0) != (k > 0))
                continue;
            int64_t ak = k < 0 ? -k : k;
            sb_puts(out, first ? (k < 0 ? "-" : "") : (k < 0 ? " - " : " + "));
            if (ak != 1)
                sb_printf(out, "%lld * ", (long long)ak);
            put_scalar(f, l->atom[i], out, 1);
            first = false;
        }
    if (first)
        sb_printf(out, "%lld", (long long)l->c);
    else if (l->c)
        sb_printf(out, " %c %lld", l->c > 0 ? '+' : '-', (long long)(l->c > 0 ? l->c : -l->c));
}

static void put_loc(const Func *f, Loc l, StrBuf *out)
{
    sb_printf(out, "%s:%d:%d", l.file ? l.file : f->mod->source_name, l.line, l.col);
}

/* ---- the transform ---- */

/* Remove pure ops of blk whose results are unused, to a fixed point. */
static void dce_block(Func *f, Block *blk, Arena *scratch)
{
    for (bool changed = true; changed;) {
        changed = false;
        UseInfo u;
        ir_count_uses(f, &u, scratch);
        for (int i = blk->nops - 1; i >= 0; i--) {
            const Op *op = blk->ops[i];
            bool used = false;
            for (int k = 0; k < op->nres; k++)
                used |= u.count[op->res[k]] != 0;
            if ((op_info[op->code].flags & OPF_PURE) && op->nres && !used) {
                ir_block_remove(blk, i);
                changed = true;
            }
        }
    }
}

static bool is_removed(const Mask *ms, int n, const Op *op)
{
    for (int i = 0; i < n; i++)
        if (ms[i].sel == op)
            return true;
    return false;
}

/* Before `loop`: FOR(lo, split) over a copy of the body with the masks
 * replaced by their true operands; then `loop` itself runs split..hi from
 * that loop's results. */
static void split_loop(Func *f, Op *loop, ValId split, const Mask *ms, int n, Arena *scratch)
{
    const Block *body = &loop->regions[0];
    Builder b = ir_builder_before(f, loop);
    ValId *args = arena_alloc(scratch, sizeof(ValId) * loop->nargs);
    Type *tys = arena_alloc(scratch, sizeof(Type) * (size_t)(loop->nres + 1));
    memcpy(args, loop->args, sizeof(ValId) * loop->nargs);
    args[1] = split;
    for (int i = 0; i < loop->nres; i++)
        tys[i] = *ir_type(f, loop->res[i]);
    Op *full = ir_build(&b, OP_FOR, args, loop->nargs, tys, loop->nres);
    memcpy(full->iattr, loop->iattr, sizeof full->iattr);
    Block *fb = &full->regions[0];
    ValMap map = pass_valmap_new(f, scratch);
    for (int i = 0; i < body->nargs; i++) {
        ValId a = ir_block_add_arg(f, fb, *ir_type(f, body->args[i]), NULL);
        ir_val(f, a)->name = ir_val(f, body->args[i])->name;
        pass_valmap_set(&map, body->args[i], a);
    }
    for (int i = 0; i < body->nops; i++) {
        const Op *op = body->ops[i];
        if (is_removed(ms, n, op))
            pass_valmap_set(&map, op->res[0], pass_valmap_get(&map, op->args[1]));
        else
            pass_clone_op(f, op, &map, fb);
    }
    dce_block(f, fb, scratch);
    loop->args[0] = split;
    for (int i = 3; i < loop->nargs; i++)
        loop->args[i] = full->res[i - 3];
}

/* ---- guarding the masks in place ----
 * A body with tensor-core products is large once unrolled (attention: 256
 * mma.sync per block and warp), and a copy of it doubles what the backend
 * compiles. There the masks stay in the one loop, behind a uniform branch:
 *   %g = cmp iv, split {pred = ge}
 *   %r = if %g { <the conditions' ops> ; select... ; yield } else { yield x }
 * Full blocks take the else arm (no mask work); boundary blocks run the
 * selects as written. Guarded: a chain of masks (each select's value is the
 * previous select, used by nothing else), together with the ops only the
 * chain uses (index tiles, compares), which move into the then arm. */

/* Do the masks (in body order, as find_masks collects them) form one chain? */
static bool mask_chain(const Mask *ms, int n, const UseInfo *u)
{
    for (int i = 1; i < n; i++)
        if (ms[i].sel->args[1] != ms[i - 1].sel->res[0] || u->count[ms[i - 1].sel->res[0]] != 1)
            return false;
    return true;
}

static bool guard_masks(Func *f, Op *loop, ValId split, const Mask *ms, int n, Arena *scratch)
{
    Block *body = &loop->regions[0];
    UseInfo u;
    ir_count_uses(f, &u, scratch);
    if (n == 0 || !mask_chain(ms, n, &u))
        return false;
    int last = ir_block_index_of(body, ms[n - 1].sel);
    ValId x0 = ms[0].sel->args[1];
    const Op *x0def = ir_val(f, x0)->def;
    /* moved[i]: body op i goes into the then arm */
    bool *moved = arena_alloc(scratch, (size_t)body->nops + 1);
    uint32_t *inner = arena_alloc(scratch, sizeof(uint32_t) * f->nvals);
    memset(moved, 0, (size_t)body->nops + 1);
    memset(inner, 0, sizeof(uint32_t) * f->nvals);
    for (int k = 0; k < n; k++) {
        int i = ir_block_index_of(body, ms[k].sel);
        moved[i] = true;
        for (int a = 0; a < ms[k].sel->nargs; a++)
            inner[ms[k].sel->args[a]]++;
    }
    for (int i = last - 1; i >= 0; i--) {
        const Op *op = body->ops[i];
        if (moved[i] || op == x0def || !(op_info[op->code].flags & OPF_PURE) || op->nres == 0 || op->nregions)
            continue;
        bool only = true;
        for (int r = 0; r < op->nres; r++)
            only &= u.count[op->res[r]] > 0 && u.count[op->res[r]] == inner[op->res[r]];
        if (!only)
            continue;
        moved[i] = true;
        for (int a = 0; a < op->nargs; a++)
            inner[op->args[a]]++;
    }
    Op *lastsel = ms[n - 1].sel;
    Op **gone = arena_alloc(scratch, sizeof(Op *) * (size_t)(last + 1));
    int ngone = 0;
    for (int i = 0; i <= last; i++)
        if (moved[i])
            gone[ngone++] = body->ops[i];
    Builder b = ir_builder_before(f, lastsel);
    b.loc = ms[0].sel->loc;
    ValId ga[2] = { body->args[0], split };
    ValId g = ir_build1(&b, OP_CMP, ga, 2, type_scalar(DT_BOOL));
    ir_val(f, g)->def->iattr[0] = CMP_GE;
    Type rt = *ir_type(f, lastsel->res[0]);
    Op *iff = ir_build(&b, OP_IF, &g, 1, &rt, 1);
    ValMap map = pass_valmap_new(f, scratch);
    for (int i = 0; i < ngone; i++)
        pass_clone_op(f, gone[i], &map, &iff->regions[0]);
    Builder t = ir_builder_at_end(f, &iff->regions[0]);
    t.loc = b.loc;
    ValId ty = pass_valmap_get(&map, lastsel->res[0]);
    ir_build(&t, OP_YIELD, &ty, 1, NULL, 0);
    Builder e = ir_builder_at_end(f, &iff->regions[1]);
    e.loc = b.loc;
    ir_build(&e, OP_YIELD, &x0, 1, NULL, 0);
    ValId from = lastsel->res[0];
    for (int i = 0; i < ngone; i++)   /* drop the originals */
        ir_block_remove(body, ir_block_index_of(body, gone[i]));
    ir_replace_all_uses(f, from, iff->res[0]);
    return true;
}

/* A body with products keeps its masks behind a uniform branch in one loop
 * (guard); any other is split into full and boundary blocks. */
static bool prefer_guard(const Op *loop)
{
    const Block *body = &loop->regions[0];
    for (int i = 0; i < body->nops; i++)
        if (body->ops[i]->code == OP_DOT)
            return true;
    return false;
}

/* Values defined inside op's regions. */
static bool mark_inside(Func *f, Op *op, void *ctx)
{
    bool *in = ctx;
    (void)f;
    for (int i = 0; i < op->nres; i++)
        in[op->res[i]] = true;
    for (int r = 0; r < op->nregions; r++)
        for (int i = 0; i < op->regions[r].nargs; i++)
            in[op->regions[r].args[i]] = true;
    return true;
}

static bool *inside_of(Func *f, Op *loop, Arena *a)
{
    bool *in = arena_alloc(a, f->nvals);
    memset(in, 0, f->nvals);
    for (int i = 0; i < loop->regions[0].nargs; i++)
        in[loop->regions[0].args[i]] = true;
    ir_walk(f, &loop->regions[0], mark_inside, in);
    return in;
}

/* Is hi <= F, as affine forms (or through min)? */
static bool bound_excludes(Dec *d, ValId hi, const Lin *first_empty)
{
    Lin h;
    Rng r;
    const Op *op = ir_val(d->f, hi)->def;
    if (lin_of(d, hi, &h, &r) && lin_acc(&h, first_empty, -1)) {
        bool flat = true;
        for (int i = 0; i < h.na; i++)
            flat &= h.coef[i] == 0;
        for (int k = 0; k < TILE_MAXRANK; k++)
            flat &= h.ix[k] == 0;
        if (flat && h.c <= 0)
            return true;
    }
    return op && op->code == OP_MIN && (bound_excludes(d, op->args[0], first_empty) ||
                                        bound_excludes(d, op->args[1], first_empty));
}

typedef struct Loop {
    Func *f;
    Op *op;
    const Ranges *R;
    Dec d;
    Mask *ms;
    int n;
    StrBuf *remarks;
    const char *ivname;
} Loop;

static void remark_empty(Loop *L, const Mask *m)
{
    Lin fe = mask_first_empty(m);
    Dec d = L->d;
    d.inside = NULL;   /* hi is defined before the loop */
    bool excluded = bound_excludes(&d, L->op->args[1], &fe);
    sb_puts(L->remarks, "mask at ");
    put_loc(L->f, m->sel->loc, L->remarks);
    sb_printf(L->remarks, ": every element is masked once %s >= ", L->ivname);
    put_lin(L->f, &fe, L->remarks);
    sb_puts(L->remarks, excluded ? "; the loop bound already excludes those blocks\n"
                                 : "; those blocks still run (skipping them needs the carried update to be a no-op)\n");
}

static void remark_split(Loop *L, bool guarded)
{
    StrBuf *o = L->remarks;
    sb_puts(o, "loop at ");
    put_loc(L->f, L->op->loc, o);
    sb_printf(o, ": %s split at %s", L->ivname, L->n > 1 ? "min(" : "");
    for (int i = 0; i < L->n; i++) {
        Lin u = mask_first_partial(&L->ms[i]);
        u.c -= 1;
        sb_puts(o, i ? ", " : "");
        put_lin(L->f, &u, o);
    }
    sb_printf(o, "%s: full blocks run without the masks at", L->n > 1 ? ")" : "");
    for (int i = 0; i < L->n; i++)
        sb_printf(o, "%s %d:%d", i ? "," : "", L->ms[i].sel->loc.line, L->ms[i].sel->loc.col);
    sb_puts(o, guarded ? "; boundary blocks apply them behind a uniform branch in the same loop "
                         "(the body has tensor-core products: one copy of it, not two)\n"
                       : "; boundary blocks keep them, in a second copy of the loop\n");
}

/* The masks of the loop's body that are all true below a bound. */
static void find_masks(Loop *L, Arena *a)
{
    const Block *body = &L->op->regions[0];
    L->ms = arena_alloc(a, sizeof(Mask) * (size_t)(body->nops + 1));
    L->n = 0;
    for (int i = 0; i < body->nops; i++)
        if (body->ops[i]->code == OP_SELECT && mask_of(&L->d, body->ops[i], &L->ms[L->n]))
            L->n++;
}

/* No wrap in the conditions over the full loop's iterations, nor in split. */
static bool wrap_free(Loop *L)
{
    Emit dry = { L->f, { 0 }, L->R, true, false };
    Rng first = { BIG, BIG };
    for (int i = 0; i < L->n; i++) {
        Lin v = mask_first_partial(&L->ms[i]);
        Rng r = e_lin(&dry, &v).r;
        first.hi = mn64(first.hi, r.hi);
    }
    e_split(&dry, L->op, L->ms, L->n);
    Dec d = L->d;
    d.ivr.hi = mn64(d.ivr.hi, first.hi - 1);
    d.wrap = false;
    for (int i = 0; i < L->n; i++) {
        Lin e;
        cond_form(&d, ir_val(L->f, L->ms[i].sel->args[0])->def, &e);
    }
    return !dry.bad && !d.wrap;
}

static void do_loop(Func *f, Op *loop, const Ranges *R, PassCtx *ctx, Arena *a)
{
    int64_t step;
    const Block *body = &loop->regions[0];
    if (body->nargs < 1 || !is_const(f, loop->args[2], &step) || step <= 0)
        return;
    StrBuf sink = { 0 };
    Loop L = { f, loop, R, { f, R, inside_of(f, loop, a), body->args[0], R->r[body->args[0]], false },
               NULL, 0, ctx->remarks ? ctx->remarks : &sink, ir_val(f, body->args[0])->name };
    if (!L.ivname)
        L.ivname = "iv";
    find_masks(&L, a);
    if (L.n == 0)
        return;
    if (!wrap_free(&L)) {
        sb_puts(L.remarks, "loop at ");
        put_loc(f, loop->loc, L.remarks);
        sb_puts(L.remarks, ": not split (the mask arithmetic may wrap at 32 bits)\n");
    } else {
        Emit e = { f, ir_builder_before(f, loop), R, false, false };
        e.b.loc = loop->loc;
        EVal split = e_split(&e, loop, L.ms, L.n);
        bool guarded = prefer_guard(loop) && guard_masks(f, loop, split.v, L.ms, L.n, a);
        if (!guarded)
            split_loop(f, loop, split.v, L.ms, L.n, a);
        remark_split(&L, guarded);
    }
    for (int i = 0; i < L.n; i++)
        remark_empty(&L, &L.ms[i]);
    sb_free(&sink);
}

static bool collect_for(Func *f, Op *op, void *ctx)
{
    Op ***v = ctx;
    (void)f;
    if (op->code == OP_FOR)
        *(*v)++ = op;
    return true;
}

static bool count_op(Func *f, Op *op, void *ctx)
{
    (void)f, (void)op;
    ++*(int *)ctx;
    return true;
}

int pass_mask_split(Module *m, PassCtx *ctx)
{
    Arena *scratch = arena_new();
    for (int i = 0; i < m->nfuncs; i++) {
        Func *f = m->funcs[i];
        int nops = 0;
        ir_walk(f, &f->body, count_op, &nops);
        Op **loops = arena_alloc(scratch, sizeof(Op *) * (size_t)(nops + 1)), **end = loops;
        ir_walk(f, &f->body, collect_for, &end);
        Ranges R;
        ranges_init(&R, f, scratch);
        /* innermost first: an outer split then copies the split inner loop */
        for (Op **l = end; l > loops; l--)
            do_loop(f, l[-1], &R, ctx, scratch);
    }
    arena_free(scratch);
    return 0;
}
