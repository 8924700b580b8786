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
 *
 * This file holds the driver and the split form; the ranges, affine forms
 * and masking selects are in mask_split_analysis.c, the guarded form in
 * mask_split_guard.c (shared: mask_split_int.h).
 */
#include "mask_split_int.h"
#include "clone.h"

#include <stdlib.h>
#include <string.h>

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
