/* bounds.c - bounds and divisibility analysis of tensor windows, and the
 * thin pass that drops the masks it proves unnecessary.
 *
 * Needs: verified IR; LOAD/STORE with window extents in `list` and mask bits
 * in iattr[0] (set conservatively by the front end). Runs best after
 * canonicalize (constant grids and offsets are folded).
 * Guarantees: a LOAD/STORE mask bit d is cleared only when every block of
 * the grid and every loop trip keeps dim d's window inside the tensor:
 * the dim is static (extent S), the offset o is >= 0, and o + n <= S for
 * the window extent n. Bits are never set. Each decision is explained in
 * ctx->remarks (the --report text).
 *
 * The analysis is a value range + divisibility lattice over integer
 * scalars: constants, block_id (0 .. grid-1, with the grid evaluated by the
 * same analysis over the named dims), num_blocks, add/sub/mul/div/rem/min/
 * max/select, loop induction variables (lo .. hi-1, divisible by the gcd of
 * lo's divisor and the step), and IF results (union of both arms). Named
 * dims are only known to be >= 0: windows over dynamic dims stay masked.
 */
#include "passes.h"

#include <stdio.h>
#include <string.h>

/* ---- the lattice ---- */

/* lo..hi inclusive; bounds at or beyond +-RINF mean unbounded. Every value
 * in the range is a multiple of div (div 0: the value is 0; div 1: nothing
 * known). */
typedef struct Range {
    int64_t lo, hi;
    int64_t div;
} Range;

#define RINF (INT64_C(1) << 62)

static const Range r_top = { -RINF, RINF, 1 };

static int64_t clampr(int64_t x) { return x > RINF ? RINF : x < -RINF ? -RINF : x; }
static int64_t absi(int64_t x) { return x < 0 ? -x : x; }

static int64_t gcd64(int64_t a, int64_t b)
{
    a = absi(a), b = absi(b);
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? -RINF : RINF;
    return clampr(r);
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/* Tighten the bounds to multiples of div. */
static Range norm(Range r)
{
    r.lo = clampr(r.lo), r.hi = clampr(r.hi);
    if (r.div > 1 && r.lo > -RINF)
        r.lo = ceil_div(r.lo, r.div) * r.div;
    if (r.div > 1 && r.hi < RINF)
        r.hi = floor_div(r.hi, r.div) * r.div;
    return r;
}

static Range r_const(int64_t c) { return (Range){ c, c, absi(c) }; }
static Range r_span(int64_t lo, int64_t hi, int64_t div) { return norm((Range){ lo, hi, div }); }
static bool r_is_const(Range r) { return r.lo == r.hi && r.lo > -RINF && r.hi < RINF; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static Range r_union(Range a, Range b)
{
    return r_span(min64(a.lo, b.lo), max64(a.hi, b.hi), gcd64(a.div, b.div));
}

/* a + b, or a - b, saturated at +-RINF (operands lie within +-RINF, so
 * only the sum of two infinities can leave int64_t). */
static int64_t sat_add(int64_t a, int64_t b, int sign)
{
    int64_t r;
    if (sign > 0 ? __builtin_add_overflow(a, b, &r) : __builtin_sub_overflow(a, b, &r))
        return a > 0 ? RINF : -RINF;
    return clampr(r);
}

static Range r_add(Range a, Range b, int sign)
{
    int64_t lo = sign > 0 ? sat_add(a.lo, b.lo, 1) : sat_add(a.lo, b.hi, -1);
    int64_t hi = sign > 0 ? sat_add(a.hi, b.hi, 1) : sat_add(a.hi, b.lo, -1);
    if (a.lo <= -RINF || (sign > 0 ? b.lo <= -RINF : b.hi >= RINF))
        lo = -RINF;
    if (a.hi >= RINF || (sign > 0 ? b.hi >= RINF : b.lo <= -RINF))
        hi = RINF;
    return r_span(lo, hi, gcd64(a.div, b.div));
}

static Range r_mul(Range a, Range b)
{
    int64_t div = a.div == 0 || b.div == 0 ? 0 : sat_mul(a.div, b.div);
    if (div >= RINF)
        div = 1;
    if (r_is_const(a) && r_is_const(b))
        return r_const(sat_mul(a.lo, b.lo));
    int64_t c[4] = { sat_mul(a.lo, b.lo), sat_mul(a.lo, b.hi), sat_mul(a.hi, b.lo), sat_mul(a.hi, b.hi) };
    int64_t lo = c[0], hi = c[0];
    for (int i = 1; i < 4; i++)
        lo = min64(lo, c[i]), hi = max64(hi, c[i]);
    return r_span(lo, hi, div);
}

/* Truncating division / remainder by a positive constant, dividend >= 0. */
static Range r_divrem(Range a, Range b, bool rem)
{
    if (!r_is_const(b) || b.lo <= 0 || a.lo < 0)
        return r_top;
    int64_t c = b.lo;
    if (rem) {
        if (a.hi < c)
            return a;
        return r_span(0, c - 1, gcd64(a.div, c));
    }
    int64_t div = a.div % c == 0 ? a.div / c : 1;
    return r_span(a.lo / c, a.hi >= RINF ? RINF : a.hi / c, div);
}

/* ---- the analysis ---- */

typedef struct Bounds {
    const Func *f;
    Range *r;               /* per value */
    Range blocks[3];        /* block_id per axis */
    Range nblocks[3];       /* num_blocks per axis */
} Bounds;

static bool is_int_scalar(const Func *f, ValId v)
{
    const Type *t = ir_type(f, v);
    return t->kind == TY_SCALAR && dtype_is_int((DType)t->dtype);
}

static Range arg(const Bounds *b, const Op *op, int i) { return b->r[op->args[i]]; }

static Range eval_scalar(const Bounds *b, const Op *op)
{
    int ax = (int)(op->iattr[0] & 3);
    switch (op->code) {
    case OP_CONST: return r_const(op->iattr[0]);
    case OP_BLOCKID: return ax < 3 ? b->blocks[ax] : r_top;
    case OP_NBLOCKS: return ax < 3 ? b->nblocks[ax] : r_top;
    case OP_ADD: return r_add(arg(b, op, 0), arg(b, op, 1), 1);
    case OP_SUB: return r_add(arg(b, op, 0), arg(b, op, 1), -1);
    case OP_MUL: return r_mul(arg(b, op, 0), arg(b, op, 1));
    case OP_DIV: return r_divrem(arg(b, op, 0), arg(b, op, 1), false);
    case OP_REM: return r_divrem(arg(b, op, 0), arg(b, op, 1), true);
    case OP_MIN: {
        Range x = arg(b, op, 0), y = arg(b, op, 1);
        return r_span(min64(x.lo, y.lo), min64(x.hi, y.hi), gcd64(x.div, y.div));
    }
    case OP_MAX: {
        Range x = arg(b, op, 0), y = arg(b, op, 1);
        return r_span(max64(x.lo, y.lo), max64(x.hi, y.hi), gcd64(x.div, y.div));
    }
    case OP_SELECT: return r_union(arg(b, op, 1), arg(b, op, 2));
    case OP_CAST: return is_int_scalar(b->f, op->args[0]) ? arg(b, op, 0) : r_top;
    default: return r_top;
    }
}

static void walk_block(Bounds *b, const Block *blk);

/* iv in lo .. hi-1, a multiple of gcd(div(lo), step); carried values unknown. */
static void eval_for(Bounds *b, const Op *op)
{
    const Block *body = &op->regions[0];
    Range lo = arg(b, op, 0), hi = arg(b, op, 1), st = arg(b, op, 2);
    int64_t top = hi.hi >= RINF ? RINF : hi.hi - 1;
    int64_t div = r_is_const(st) && st.lo > 0 ? gcd64(lo.div, st.lo) : gcd64(lo.div, st.div);
    if (body->nargs > 0)
        b->r[body->args[0]] = r_span(lo.lo, max64(top, lo.lo), div);
    for (int i = 1; i < body->nargs; i++)
        b->r[body->args[i]] = r_top;
    walk_block(b, body);
    for (int i = 0; i < op->nres; i++)
        b->r[op->res[i]] = r_top;
}

static void eval_if(Bounds *b, const Op *op)
{
    walk_block(b, &op->regions[0]);
    walk_block(b, &op->regions[1]);
    const Op *y0 = ir_block_yield(&op->regions[0]), *y1 = ir_block_yield(&op->regions[1]);
    for (int i = 0; i < op->nres; i++)
        b->r[op->res[i]] = y0 && y1 && i < y0->nargs && i < y1->nargs
                               ? r_union(b->r[y0->args[i]], b->r[y1->args[i]])
                               : r_top;
}

static void walk_block(Bounds *b, const Block *blk)
{
    for (int i = 0; i < blk->nops; i++) {
        const Op *op = blk->ops[i];
        if (op->code == OP_FOR)
            eval_for(b, op);
        else if (op->code == OP_IF)
            eval_if(b, op);
        else if (op->nres == 1 && is_int_scalar(b->f, op->res[0]))
            b->r[op->res[0]] = eval_scalar(b, op);
        else
            for (int k = 0; k < op->nres; k++)
                b->r[op->res[k]] = r_top;
    }
}

/* Evaluate the grid over the named dims (each >= 0); block ids follow. */
static void init_bounds(Bounds *b, const Func *f, Arena *a)
{
    b->f = f;
    b->r = arena_alloc(a, sizeof(Range) * f->nvals);
    for (uint32_t v = 0; v < f->nvals; v++)
        b->r[v] = r_top;
    for (int i = 0; i < f->ndims; i++)
        b->r[f->dims[i]] = r_span(0, INT32_MAX, 1);
    for (int ax = 0; ax < 3; ax++)
        b->nblocks[ax] = r_span(1, INT32_MAX, 1);
    walk_block(b, &f->grid);
    const Op *y = ir_block_yield(&f->grid);
    for (int ax = 0; ax < 3; ax++) {
        if (y && ax < y->nargs)
            b->nblocks[ax] = r_span(max64(1, b->r[y->args[ax]].lo), b->r[y->args[ax]].hi, 1);
        int64_t hi = b->nblocks[ax].hi;
        b->blocks[ax] = r_span(0, hi >= RINF ? RINF : hi - 1, 1);
    }
}

/* ---- decisions ---- */

/* What the analysis concluded for one LOAD/STORE. */
typedef struct Decision {
    Op *op;
    int64_t mask;           /* bits that must stay set */
    StrBuf why;             /* "dim 2 masked (N is dynamic); dim 3 in bounds (static 128)" */
} Decision;

/* Decide one window dim; returns true if it provably stays in bounds. */
static bool decide_dim(const Bounds *b, const Op *op, int d, StrBuf *why)
{
    const Func *f = b->f;
    const Type *tt = ir_type(f, op->args[0]);
    int64_t n = op->list[d];
    Range o = b->r[op->args[1 + d]];
    if (tt->dimsym[d] >= 0) {
        sb_printf(why, "dim %d masked (%s is dynamic)", d, f->dim_names[tt->dimsym[d]]);
        return false;
    }
    int64_t s = tt->shape[d];
    if (o.lo < 0) {
        sb_printf(why, "dim %d masked (offset %s)", d, o.lo <= -RINF ? "not bounded below" : "may be negative");
        return false;
    }
    if (o.hi >= RINF || o.hi + n > s) {
        if (o.hi >= RINF)
            sb_printf(why, "dim %d masked (offset not bounded above, static %lld)", d, (long long)s);
        else
            sb_printf(why, "dim %d masked (offset up to %lld, +%lld passes static %lld)", d, (long long)o.hi,
                      (long long)n, (long long)s);
        return false;
    }
    sb_printf(why, "dim %d in bounds (static %lld)", d, (long long)s);
    return true;
}

static void decide(const Bounds *b, Decision *dc)
{
    const Op *op = dc->op;
    int rank = ir_type(b->f, op->args[0])->rank;
    dc->mask = op->iattr[0];
    for (int d = 0; d < rank && d < op->nlist && 1 + d < op->nargs; d++) {
        if (op->list[d] <= 0)
            continue;   /* a scalar index: no window */
        if (dc->why.len)
            sb_puts(&dc->why, "; ");
        if ((op->code == OP_GATHER || op->code == OP_SCATTER) && d == op->iattr[2])
            sb_printf(&dc->why, "dim %d indexed (masked by its index)", d);
        else if (!(op->iattr[0] >> d & 1))
            sb_printf(&dc->why, "dim %d unmasked on input", d);
        else if (decide_dim(b, op, d, &dc->why))
            dc->mask &= ~((int64_t)1 << d);
    }
}

typedef struct Collect {
    Decision *v;
    int n, cap;
    Arena *a;
} Collect;

static bool collect_mem(Func *f, Op *op, void *ctx)
{
    Collect *c = ctx;
    (void)f;
    if (op->code != OP_LOAD && op->code != OP_STORE && op->code != OP_ATOMIC_ADD && op->code != OP_GATHER &&
        op->code != OP_SCATTER)
        return true;
    if (c->n == c->cap) {
        c->v = arena_grow(c->a, c->v, sizeof *c->v, (size_t)c->n, (size_t)(c->cap * 2 + 8));
        c->cap = c->cap * 2 + 8;
    }
    c->v[c->n++] = (Decision){ op, op->iattr[0], { 0 } };
    return true;
}

/* The analysis: a decision per LOAD/STORE of f, in program order.
 * The caller frees each Decision's `why`. */
static int bounds_analyze(Func *f, Arena *a, Decision **out)
{
    Bounds b;
    init_bounds(&b, f, a);
    walk_block(&b, &f->body);
    Collect c = { NULL, 0, 0, a };
    ir_walk(f, &f->body, collect_mem, &c);
    for (int i = 0; i < c.n; i++)
        decide(&b, &c.v[i]);
    *out = c.v;
    return c.n;
}

/* ---- the pass ---- */

static void remark(StrBuf *out, const Func *f, const Decision *dc, int idx)
{
    const Op *op = dc->op;
    const char *what = op->code == OP_LOAD ? "load" : op->code == OP_STORE ? "store"
                     : op->code == OP_GATHER ? "gather" : op->code == OP_SCATTER ? "scatter" : "atomic_add";
    if (!dc->why.len)
        return;
    if (op->loc.line > 0)
        sb_printf(out, "%s at %s:%d:%d: %s\n", what, op->loc.file ? op->loc.file : f->mod->source_name,
                  op->loc.line, op->loc.col, dc->why.buf);
    else
        sb_printf(out, "%s #%d in @%s: %s\n", what, idx, f->name, dc->why.buf);
}

int pass_bounds(Module *m, PassCtx *ctx)
{
    Arena *scratch = arena_new();
    for (int i = 0; i < m->nfuncs; i++) {
        Decision *dv;
        int n = bounds_analyze(m->funcs[i], scratch, &dv);
        for (int k = 0; k < n; k++) {
            dv[k].op->iattr[0] &= dv[k].mask;
            if (ctx->remarks)
                remark(ctx->remarks, m->funcs[i], &dv[k], k);
            sb_free(&dv[k].why);
        }
    }
    arena_free(scratch);
    return 0;
}
