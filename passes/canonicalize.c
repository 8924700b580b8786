/* canonicalize.c - constant folding, algebraic identities, folding of
 * constant control flow, dot accumulation, CSE and DCE.
 *
 * Needs: verified IR (operand types of elementwise ops identical).
 * Guarantees: runs to a fixed point (bounded) in which
 *  - no elementwise op has only constant operands (scalar CONST, tile CONST,
 *    or SPLAT of a CONST), except casts from float to 64-bit ints and
 *    divisions by zero, which keep their run-time behaviour;
 *    a SPLAT of a constant is itself a tile CONST;
 *  - x+0, x-0, x*1, x/1 (and x*0 for ints) are gone, as are SELECTs with a
 *    constant condition or equal arms;
 *  - no IF has a constant condition (the taken region is inlined);
 *  - no FOR with constant bounds runs zero times (its results are its inits);
 *  - `add(x, dot(a, b, 0))` with a single-use dot is `dot(a, b, x)`;
 *  - no two pure ops compute the same thing where one dominates the other;
 *  - no pure op, LOAD, or store-free FOR/IF has only unused results.
 * Integers fold with wraparound at their width; floats fold in double and
 * round to their type. The verifier still holds after the pass.
 */
#include "passes.h"
#include "../ir/divisor.h"

#include <math.h>
#include <string.h>

/* Replacements are recorded in a map and applied to each op's operands
 * when a walk reaches it (uses follow their definitions in walk order) and
 * by one sweep at the end of each walk, so a fold or a CSE hit costs O(1),
 * not a walk of the function: the pass is linear in the kernel's size. */
typedef struct Canon {
    Func *f;
    bool changed;
    Arena *scratch;
    ValId *repl; uint32_t nrepl;   /* value -> its replacement (itself if none) */
    uint32_t *uses; uint32_t nuses; /* use counts: exact or too high; values
                                       made since they were counted: unknown */
} Canon;

static ValId resolve(Canon *c, ValId v)
{
    ValId r = v;
    while (r < c->nrepl && c->repl[r] != r)
        r = c->repl[r];
    while (v < c->nrepl && c->repl[v] != r) {   /* path compression */
        ValId next = c->repl[v];
        c->repl[v] = r;
        v = next;
    }
    return r;
}

static void resolve_args(Canon *c, Op *op)
{
    for (int i = 0; i < op->nargs; i++)
        op->args[i] = resolve(c, op->args[i]);
}

static bool resolve_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    resolve_args(ctx, op);
    return true;
}

/* Apply every recorded replacement to the whole function. */
static void resolve_all(Canon *c)
{
    ir_walk(c->f, &c->f->body, resolve_visit, c);
    ir_walk(c->f, &c->f->grid, resolve_visit, c);
}

/* Every use of `from` becomes a use of `to`. */
static void canon_replace(Canon *c, ValId from, ValId to)
{
    uint32_t n = (uint32_t)c->f->nvals;
    if (c->nrepl < n) {
        uint32_t cap = n * 2;
        c->repl = arena_grow(c->scratch, c->repl, sizeof(ValId), c->nrepl, cap);
        for (uint32_t v = c->nrepl; v < cap; v++)
            c->repl[v] = v;
        c->nrepl = cap;
    }
    to = resolve(c, to);
    if (to == from)
        return;
    c->repl[from] = to;
    if (from < c->nuses) {
        if (to < c->nuses)
            c->uses[to] += c->uses[from];
        c->uses[from] = 0;
    }
}

/* Use count of v; UINT32_MAX (unknown) for a value made after the count. */
static uint32_t use_count(const Canon *c, ValId v)
{
    return v < c->nuses ? c->uses[v] : UINT32_MAX;
}

static void count_uses(Canon *c)
{
    UseInfo u;
    ir_count_uses(c->f, &u, c->scratch);
    c->uses = u.count;
    c->nuses = (uint32_t)c->f->nvals;
}

/* A constant operand: the value of a CONST (scalar or tile splat) or of a
 * SPLAT of a scalar CONST. */
typedef struct CVal {
    bool isf;
    int64_t i;
    double d;
} CVal;

static bool const_of(const Func *f, ValId v, CVal *out)
{
    const Op *op = ir_val(f, v)->def;
    if (op && op->code == OP_SPLAT)
        op = ir_val(f, op->args[0])->def;
    if (!op || op->code != OP_CONST)
        return false;
    DType dt = (DType)ir_type(f, op->res[0])->dtype;
    out->isf = dtype_is_float(dt);
    out->i = op->iattr[0];
    out->d = out->isf ? op->fattr : (double)op->iattr[0];
    return true;
}

static bool is_const_val(const Func *f, ValId v, double x)
{
    CVal c;
    if (!const_of(f, v, &c))
        return false;
    return c.isf ? c.d == x : (double)c.i == x;
}

static bool is_neg_zero(const Func *f, ValId v)
{
    CVal c;
    return const_of(f, v, &c) && c.isf && c.d == 0.0 && signbit(c.d);
}

/* ---- integer and float arithmetic ---- */

static int64_t wrap_int(DType dt, uint64_t u) { return tc_wrap_int(dt, u); }

static bool int_lt(DType dt, int64_t a, int64_t b)
{
    return dtype_is_signed(dt) ? a < b : (uint64_t)a < (uint64_t)b;
}

/* Truncating division / remainder; false when it must not fold (x/0). */
static bool int_divrem(DType dt, int64_t a, int64_t b, bool rem, int64_t *r)
{
    if (b == 0)
        return false;
    if (!dtype_is_signed(dt)) {
        *r = wrap_int(dt, rem ? (uint64_t)a % (uint64_t)b : (uint64_t)a / (uint64_t)b);
        return true;
    }
    if (b == -1) {   /* avoids INT64_MIN / -1 */
        *r = rem ? 0 : wrap_int(dt, 0 - (uint64_t)a);
        return true;
    }
    *r = wrap_int(dt, (uint64_t)(rem ? a % b : a / b));
    return true;
}

static bool cmp_holds(int pred, bool lt, bool eq)
{
    switch (pred) {
    case CMP_EQ: return eq;
    case CMP_NE: return !eq;
    case CMP_LT: return lt;
    case CMP_LE: return lt || eq;
    case CMP_GT: return !lt && !eq;
    case CMP_GE: return !lt;
    }
    return false;
}

/* Fold a binary int op of dtype dt. */
static bool fold_int2(const Op *op, DType dt, int64_t a, int64_t b, int64_t *r)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op->code) {
    case OP_ADD: *r = wrap_int(dt, ua + ub); return true;
    case OP_SUB: *r = wrap_int(dt, ua - ub); return true;
    case OP_MUL: *r = wrap_int(dt, ua * ub); return true;
    case OP_DIV: return int_divrem(dt, a, b, false, r);
    case OP_REM: return int_divrem(dt, a, b, true, r);
    case OP_MIN: *r = int_lt(dt, b, a) ? b : a; return true;
    case OP_MAX: *r = int_lt(dt, a, b) ? b : a; return true;
    case OP_DIVISOR: *r = tc_divisor(a, b); return *r >= 0;
    case OP_AND: *r = a & b; return true;
    case OP_OR: *r = a | b; return true;
    case OP_XOR: *r = wrap_int(dt, ua ^ ub); return true;
    case OP_SHL: case OP_SHR: *r = tc_int_shift((OpCode)op->code, dt, a, b); return true;
    case OP_CMP: *r = cmp_holds((int)op->iattr[0], int_lt(dt, a, b), a == b); return true;
    default: return false;
    }
}

static bool fold_float2(const Op *op, double a, double b, double *r)
{
    if (op->code != OP_CMP)
        return tc_float_binary((OpCode)op->code, a, b, r);
    if (isnan(a) || isnan(b))
        *r = op->iattr[0] == CMP_NE;
    else
        *r = cmp_holds((int)op->iattr[0], a < b, a == b);
    return true;
}

static bool fold_float1(int code, double a, double *r) { return tc_float_unary((OpCode)code, a, r); }

static bool fold_int1(int code, DType dt, int64_t a, int64_t *r)
{
    switch (code) {
    case OP_NEG: *r = wrap_int(dt, 0 - (uint64_t)a); return true;
    case OP_ABS: *r = a < 0 && dtype_is_signed(dt) ? wrap_int(dt, 0 - (uint64_t)a) : a; return true;
    case OP_NOT: *r = dt == DT_BOOL ? !a : wrap_int(dt, ~(uint64_t)a); return true;
    default: return false;
    }
}

/* CAST of a constant from `from` to `to`. */
static bool fold_cast(DType from, DType to, CVal c, CVal *r)
{
    r->isf = dtype_is_float(to);
    if (r->isf) {
        double x = c.isf ? c.d : (from == DT_U64 ? (double)(uint64_t)c.i : (double)c.i);
        r->d = tc_round_to(to, x);
        return true;
    }
    if (!c.isf) {
        r->i = wrap_int(to, (uint64_t)c.i);
        return true;
    }
    if (dtype_bits(to) >= 64 || isnan(c.d) || isinf(c.d))
        return false;
    r->i = (int64_t)tc_round_to(to, c.d);
    return true;
}

/* ---- rewriting helpers ---- */

/* Replace op's single result by `v` (the op dies in DCE). */
static void replace_res(Canon *c, Op *op, ValId v)
{
    canon_replace(c, op->res[0], v);
    c->changed = true;
}

/* A CONST of op's result type, placed before op, replacing its result. */
static void replace_with_const(Canon *c, Op *op, CVal v)
{
    Builder b = ir_builder_before(c->f, op);
    Type t = *ir_type(c->f, op->res[0]);
    ValId k = v.isf ? ir_const_float(&b, t, v.d) : ir_const_int(&b, t, v.i);
    replace_res(c, op, k);
}

/* Evaluate an elementwise op whose operands are all constants. */
static bool eval_elem(Canon *c, const Op *op, CVal *r)
{
    CVal a[3];
    for (int i = 0; i < op->nargs; i++)
        if (!const_of(c->f, op->args[i], &a[i]))
            return false;
    DType in = (DType)ir_type(c->f, op->args[0])->dtype;
    DType out = (DType)ir_type(c->f, op->res[0])->dtype;
    if (op->code == OP_CAST)
        return fold_cast(in, out, a[0], r);
    if (op->code == OP_SELECT || (op->code == OP_EXP2 && op->iattr[0]))
        return false;   /* an identity; exp2 {emu} is not the same function on every column */
    r->isf = dtype_is_float(out);
    if (op->nargs == 1) {
        if (a[0].isf && fold_float1(op->code, a[0].d, &r->d))
            return r->d = tc_round_to(out, r->d), true;
        return !a[0].isf && fold_int1(op->code, in, a[0].i, &r->i);
    }
    if (!a[0].isf)
        return fold_int2(op, in, a[0].i, a[1].i, &r->i);
    if (!fold_float2(op, a[0].d, a[1].d, &r->d))
        return false;
    if (op->code == OP_CMP)
        return r->i = (int64_t)r->d, r->isf = false, true;
    return r->d = tc_round_to(out, r->d), true;
}

/* The zero of the result type, as a CVal. */
static CVal zero_of(const Func *f, ValId v)
{
    CVal z = { dtype_is_float((DType)ir_type(f, v)->dtype), 0, 0.0 };
    return z;
}

/* x+0, 0+x, x-0, x*1, 1*x, x/1, x*0 (ints), select(k, a, b), select(c, a, a). */
static bool fold_identity(Canon *c, Op *op)
{
    Func *f = c->f;
    bool isint = !dtype_is_float((DType)ir_type(f, op->res[0])->dtype);
    ValId a = op->nargs > 0 ? op->args[0] : 0, b = op->nargs > 1 ? op->args[1] : 0;
    switch (op->code) {
    case OP_ADD:
        if (isint && is_const_val(f, b, 0))
            return replace_res(c, op, a), true;
        if (isint && is_const_val(f, a, 0))
            return replace_res(c, op, b), true;
        return false;
    case OP_SUB:   /* x - (+0.0) == x for every x, -0.0 included */
        return is_const_val(f, b, 0) && !is_neg_zero(f, b) ? (replace_res(c, op, a), true) : false;
    case OP_MUL:
        if (is_const_val(f, b, 1))
            return replace_res(c, op, a), true;
        if (is_const_val(f, a, 1))
            return replace_res(c, op, b), true;
        if (isint && (is_const_val(f, a, 0) || is_const_val(f, b, 0)))
            return replace_with_const(c, op, zero_of(f, op->res[0])), true;
        return false;
    case OP_DIV:
        return is_const_val(f, b, 1) ? (replace_res(c, op, a), true) : false;
    case OP_SELECT: {
        CVal k;
        if (op->args[1] == op->args[2])
            return replace_res(c, op, op->args[1]), true;
        if (const_of(f, a, &k))
            return replace_res(c, op, k.i ? op->args[1] : op->args[2]), true;
        return false;
    }
    default:
        return false;
    }
}

/* SPLAT of a scalar CONST -> tile CONST. */
static bool fold_splat(Canon *c, Op *op)
{
    CVal k;
    if (!const_of(c->f, op->args[0], &k))
        return false;
    replace_with_const(c, op, k);
    return true;
}

/* add(x, dot(a, b, 0)) with a single-use dot -> dot(a, b, x). */
static bool fold_dot_acc(Canon *c, Op *op)
{
    Func *f = c->f;
    for (int side = 0; side < 2; side++) {
        Op *d = ir_val(f, op->args[side])->def;
        ValId x = op->args[1 - side];
        if (!d || d->code != OP_DOT || use_count(c, d->res[0]) != 1 || !is_const_val(f, d->args[2], 0))
            continue;
        /* Placement (reg/shared) may differ: only shape and dtype matter. */
        const Type *tx = ir_type(f, x), *td = ir_type(f, d->res[0]);
        if (!type_same_shape(tx, td) || tx->dtype != td->dtype)
            continue;
        Builder b = ir_builder_before(f, op);
        b.loc = d->loc;
        ValId args[3] = { d->args[0], d->args[1], x };
        ValId nd = ir_build1(&b, OP_DOT, args, 3, *ir_type(f, op->res[0]));
        replace_res(c, op, nd);
        return true;
    }
    return false;
}

/* ---- control flow ---- */

/* Move region r's ops (all but its YIELD) before `op`, and map op's results
 * to the yielded values. Removes op. */
static void inline_region(Canon *c, Op *op, Block *r)
{
    Block *parent = op->parent;
    int pos = ir_block_index_of(parent, op);
    Op *y = ir_block_yield(r);
    for (int i = 0; i + 1 < r->nops; i++)
        ir_block_insert(c->f, parent, pos++, r->ops[i]);
    for (int i = 0; y && i < op->nres && i < y->nargs; i++)
        canon_replace(c, op->res[i], resolve(c, y->args[i]));
    ir_block_remove(parent, ir_block_index_of(parent, op));
    c->changed = true;
}

static bool fold_if(Canon *c, Op *op)
{
    CVal k;
    if (!const_of(c->f, op->args[0], &k))
        return false;
    inline_region(c, op, &op->regions[k.i ? 0 : 1]);
    return true;
}

/* FOR with constant lo >= hi: zero trips, results are the inits. With
 * constant lo < hi <= lo + step (step > 0): one trip, the body inlined with
 * the induction variable lo and the carried values their inits (a kernel
 * that loops over tiles only when a parameter asks, examples/attention.tile). */
static bool fold_for(Canon *c, Op *op)
{
    CVal lo, hi, st;
    if (!const_of(c->f, op->args[0], &lo) || !const_of(c->f, op->args[1], &hi))
        return false;
    if (lo.i < hi.i) {
        if (!const_of(c->f, op->args[2], &st) || st.i <= 0 || hi.i - lo.i > st.i)
            return false;
        Block *body = &op->regions[0];
        for (int i = 0; i < body->nargs; i++)
            canon_replace(c, body->args[i], op->args[i == 0 ? 0 : 2 + i]);
        inline_region(c, op, body);
        return true;
    }
    for (int i = 0; i < op->nres; i++)
        canon_replace(c, op->res[i], op->args[3 + i]);
    ir_block_remove(op->parent, ir_block_index_of(op->parent, op));
    c->changed = true;
    return true;
}

/* ---- the folding walk ---- */

static bool fold_op(Canon *c, Op *op)
{
    const OpInfo *in = &op_info[op->code];
    CVal r;
    if (op->code == OP_IF)
        return fold_if(c, op);
    if (op->code == OP_FOR)
        return fold_for(c, op);
    if (op->nres != 1 || use_count(c, op->res[0]) == 0)
        return false;   /* DCE removes dead ops */
    if (op->code == OP_SPLAT)
        return fold_splat(c, op);
    if (!(in->flags & OPF_ELEM))
        return false;
    if (eval_elem(c, op, &r)) {
        replace_with_const(c, op, r);
        return true;
    }
    if (op->code == OP_ADD && fold_dot_acc(c, op))
        return true;
    return fold_identity(c, op);
}

/* One folding sweep over b and its regions; after a change the sweep
 * resumes at the changed position (inlined or inserted ops land there). */
static void fold_block(Canon *c, Block *b)
{
    for (int i = 0; i < b->nops; i++) {
        Op *op = b->ops[i];
        resolve_args(c, op);
        if (fold_op(c, op)) {
            i--;
            continue;
        }
        for (int r = 0; r < op->nregions; r++)
            fold_block(c, &op->regions[r]);
    }
}

/* ---- CSE ---- */

/* The available ops: a hash table of chains through `e` (newest first);
 * a scope ends by unlinking its entries newest first. */
typedef struct CseEnt { Op *op; uint64_t h; int next; } CseEnt;
typedef struct Avail {
    CseEnt *e;
    int n, cap;
    int *head;          /* per bucket: newest entry, -1 if none */
    uint32_t mask;
} Avail;

static uint64_t op_hash(const Op *op)
{
    uint64_t h = tc_hash64(&op->code, sizeof op->code, op->nargs);
    h = tc_hash64(op->args, sizeof(ValId) * op->nargs, h);
    h = tc_hash64(op->iattr, sizeof op->iattr, h);
    h = tc_hash64(&op->fattr, sizeof op->fattr, h);
    return tc_hash64(op->list, sizeof(int64_t) * (size_t)op->nlist, h);
}

/* Buckets: twice the values (at least the ops with results), a power of 2. */
static void avail_init(Canon *c, Avail *av)
{
    uint32_t nb = 16;
    while (nb < (uint32_t)c->f->nvals * 2)
        nb *= 2;
    *av = (Avail){ .mask = nb - 1 };
    av->head = arena_alloc(c->scratch, sizeof(int) * nb);
    memset(av->head, 0xff, sizeof(int) * nb);
}

static bool same_op(const Func *f, const Op *a, const Op *b)
{
    if (a->code != b->code || a->nargs != b->nargs || a->nres != b->nres || a->nlist != b->nlist)
        return false;
    if (memcmp(a->iattr, b->iattr, sizeof a->iattr) != 0 || memcmp(&a->fattr, &b->fattr, sizeof a->fattr) != 0)
        return false;
    if (a->nargs && memcmp(a->args, b->args, sizeof(ValId) * a->nargs) != 0)
        return false;
    if (a->nlist && memcmp(a->list, b->list, sizeof(int64_t) * (size_t)a->nlist) != 0)
        return false;
    for (int i = 0; i < a->nres; i++)
        if (!type_eq(ir_type(f, a->res[i]), ir_type(f, b->res[i])))
            return false;
    return true;
}

static bool cse_candidate(const Op *op)
{
    return (op_info[op->code].flags & OPF_PURE) && op->nregions == 0 && op->nres > 0;
}

/* Ops in `av` dominate everything after them in this block and its regions. */
static void cse_op(Canon *c, Op *op, Avail *av)
{
    uint64_t h = op_hash(op);
    int *bucket = &av->head[h & av->mask];
    for (int e = *bucket; e >= 0; e = av->e[e].next) {
        if (av->e[e].h != h || !same_op(c->f, av->e[e].op, op))
            continue;
        for (int r = 0; r < op->nres; r++)
            canon_replace(c, op->res[r], av->e[e].op->res[r]);
        c->changed = true;
        return;
    }
    if (av->n == av->cap)
        av->e = arena_grow(c->scratch, av->e, sizeof(CseEnt), (size_t)av->n, (size_t)(av->cap = av->cap * 2 + 16));
    av->e[av->n] = (CseEnt){ op, h, *bucket };
    *bucket = av->n++;
}

static void cse_block(Canon *c, Block *b, Avail *av)
{
    int mark = av->n;
    for (int i = 0; i < b->nops; i++) {
        Op *op = b->ops[i];
        resolve_args(c, op);
        if (cse_candidate(op))
            cse_op(c, op, av);
        for (int r = 0; r < op->nregions; r++)
            cse_block(c, &op->regions[r], av);
    }
    while (av->n > mark) {
        CseEnt *e = &av->e[--av->n];
        av->head[e->h & av->mask] = e->next;
    }
}

/* ---- DCE ---- */

/* Does b write memory or synchronize (a store, a copy, a barrier, the
 * schedule's ring ops and asynchronous products), at any depth? A loop or
 * branch holding one is not dead for lack of results (a producer role's
 * loop yields nothing). */
static bool has_effects(const Block *b)
{
    for (int i = 0; i < b->nops; i++) {
        const Op *op = b->ops[i];
        switch (op->code) {
        case OP_STORE: case OP_ATOMIC_ADD: case OP_SCATTER: case OP_SMEM_STORE: case OP_ASYNC_COPY:
        case OP_ASYNC_COMMIT: case OP_ASYNC_WAIT:
        case OP_BARRIER: case OP_NAMED_BAR: case OP_MBAR_EXPECT: case OP_MBAR_ARRIVE: case OP_MBAR_WAIT:
        case OP_TMA_LOAD: case OP_DOT_ASYNC: case OP_DOT_WAIT: case OP_WS: case OP_TC_MMA: case OP_TC_COMMIT:
        case OP_TMEM_STORE:
            return true;
        default:
            break;
        }
        for (int r = 0; r < op->nregions; r++)
            if (has_effects(&op->regions[r]))
                return true;
    }
    return false;
}

static bool removable(const Op *op)
{
    if (op_info[op->code].flags & OPF_TERM)
        return false;
    if ((op_info[op->code].flags & OPF_PURE) || op->code == OP_LOAD || op->code == OP_GATHER)
        return true;
    if (op->code != OP_FOR && op->code != OP_IF)
        return false;
    for (int r = 0; r < op->nregions; r++)
        if (has_effects(&op->regions[r]))
            return false;
    return true;
}

static bool all_unused(const Op *op, const uint32_t *uses)
{
    for (int i = 0; i < op->nres; i++)
        if (uses[op->res[i]])
            return false;
    return true;
}

/* Remove dead ops, last first so that a chain dies in one sweep; the
 * block is compacted once at the end. */
static bool dce_block(Canon *c, Block *b, uint32_t *uses)
{
    bool any = false;
    for (int i = b->nops - 1; i >= 0; i--) {
        Op *op = b->ops[i];
        if (removable(op) && all_unused(op, uses)) {
            for (int k = 0; k < op->nargs; k++)
                uses[op->args[k]]--;
            b->ops[i] = NULL;
            any = true;
            continue;
        }
        for (int r = 0; r < op->nregions; r++)
            any |= dce_block(c, &op->regions[r], uses);
    }
    int n = 0;
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i])
            b->ops[n++] = b->ops[i];
    b->nops = n;
    return any;
}

static void dce_func(Canon *c, Block *b)
{
    UseInfo u;
    ir_count_uses(c->f, &u, c->scratch);
    while (dce_block(c, b, u.count)) {
        c->changed = true;
        ir_count_uses(c->f, &u, c->scratch);   /* region ops' uses died with them */
    }
}

/* ---- driver ---- */

enum { MAX_ROUNDS = 32 };

static void canon_block(Canon *c, Block *b)
{
    for (int round = 0; round < MAX_ROUNDS; round++) {
        c->changed = false;
        count_uses(c);
        fold_block(c, b);
        Avail av;
        avail_init(c, &av);
        cse_block(c, b, &av);   /* also applies fold's replacements */
        resolve_all(c);
        dce_func(c, b);
        if (!c->changed)
            break;
    }
}

int pass_canonicalize(Module *m, PassCtx *ctx)
{
    (void)ctx;
    Arena *scratch = arena_new();
    for (int i = 0; i < m->nfuncs; i++) {
        Canon c = { .f = m->funcs[i], .scratch = scratch };
        canon_block(&c, &m->funcs[i]->grid);
        canon_block(&c, &m->funcs[i]->body);
    }
    arena_free(scratch);
    return 0;
}
