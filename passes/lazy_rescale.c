/* lazy_rescale.c - the lazy_rescale pass: in an online softmax, the running
 * row maximum moves only when a row's maximum grows by more than T (log2
 * units), so the running output is rescaled only then (FlashAttention 4's
 * conditional rescale).
 *
 * Needs: verified IR (runs before canonicalize, whose CSE then merges the
 * splats it makes).
 * Recognizes, in the body of a `for` whose region argument m is a running
 * maximum:
 *   mnew  = max(m, reduce_max(s, last axis))
 *   alpha = exp2((m - mnew) * c)          c: a tile or a splat of a scalar
 * and rewrites every use of mnew to
 *   mlazy = max(m, select((mnew - m) * c > T, mnew, -inf))
 * which is the plain math with a stale maximum: every term that reads the
 * maximum (p = exp2(s c - mlazy c), alpha, the sum l, the output, LSE =
 * m c + log2(l)) reads the same one, so O = acc / l and LSE are exact in
 * real arithmetic; p may reach 2^T instead of 1 (T at most 32: the sums
 * stay far from the f32 range).
 * Decision (PassCtx.lazy_rescale: 0 = the pass decides, -1 = off, T > 0):
 * T = 8 where the rescaled accumulator (acc * alpha[:, *]) has at least
 * 128 columns (measured on the H200 at D = 128: +0.7% to +4%, causal and
 * not; D = 64 gained nothing, so it keeps the exact maximum), else off.
 * A maximum already made lazy in the source (mnew feeding a select) is
 * left alone. Every decision goes to the report.
 * Guarantees: verified IR; results equal to the untransformed kernel's up
 * to rounding (interpreter: tests/unit/test_fa4num.c).
 */
#include "passes.h"

#include <math.h>

enum { LAZY_DEFAULT = 8, LAZY_MIN_COLS = 128 };

/* The op of block b defining v, or NULL (a block argument, or outside b). */
static Op *def_in(Func *f, const Block *b, ValId v)
{
    Op *d = v ? ir_val(f, v)->def : NULL;
    return d && d->parent == b ? d : NULL;
}

static bool is_arg_of(const Block *b, ValId v)
{
    for (int i = 1; i < b->nargs; i++)
        if (b->args[i] == v)
            return true;
    return false;
}

static bool uses(const Op *op, ValId v)
{
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i] == v)
            return true;
    return false;
}

typedef struct Lazy {
    Op *mnew;                  /* max(m, reduce_max(s)) */
    ValId m, c;                /* the running maximum (region argument) and the scale */
    int64_t cols;              /* widest accumulator alpha rescales (0: none) */
    bool already;              /* mnew feeds a select: the source made it lazy */
} Lazy;

enum { MAX_CAND = 16 };   /* alphas considered per loop body (one in a softmax) */

/* The widest 2-D tile multiplied by broadcast(expand(alpha)) in b (one
 * pass over b, a few values tracked). */
static int64_t rescaled_cols(Func *f, const Block *b, ValId alpha)
{
    ValId seen[MAX_CAND];
    int n = 0;
    int64_t cols = 0;
    for (int i = 0; i < b->nops; i++) {
        Op *op = b->ops[i];
        bool from = false;
        for (int k = 0; k < n; k++)
            from = from || (op->nargs && op->args[0] == seen[k]);
        if (op->code == OP_EXPAND && op->args[0] == alpha && n < MAX_CAND)
            seen[n++] = op->res[0];
        else if (op->code == OP_BROADCAST && from && n < MAX_CAND)
            seen[n++] = op->res[0];
        else if (op->code == OP_MUL && op->nres == 1)
            for (int k = 0; k < n; k++) {
                const Type *t = ir_type(f, op->res[0]);
                if (uses(op, seen[k]) && ir_val(f, seen[k])->def->code == OP_BROADCAST && t->rank == 2 &&
                    t->shape[1] > cols)
                    cols = t->shape[1];
            }
    }
    return cols;
}

/* Finds the pattern in the body b of a loop; false when it is not there.
 * One pass collects the alphas (exp2(mul(sub(m, v), c)), m a region
 * argument), a second the max(m, reduce_max(s)) whose result is a v. */
static bool find(Func *f, const Block *b, Lazy *z)
{
    struct { ValId m, v, c, alpha; } cand[MAX_CAND];
    int nc = 0;
    for (int i = 0; i < b->nops && nc < MAX_CAND; i++) {
        Op *e = b->ops[i];
        Op *mul = e->code == OP_EXP2 ? def_in(f, b, e->args[0]) : NULL;
        for (int k = 0; mul && mul->code == OP_MUL && k < 2 && nc < MAX_CAND; k++) {
            Op *sub = def_in(f, b, mul->args[k]);
            if (sub && sub->code == OP_SUB && is_arg_of(b, sub->args[0]))
                cand[nc].m = sub->args[0], cand[nc].v = sub->args[1], cand[nc].c = mul->args[1 - k],
                cand[nc++].alpha = e->res[0];
        }
    }
    for (int i = 0; i < b->nops && nc; i++) {
        Op *mx = b->ops[i];
        if (mx->code != OP_MAX || mx->nres != 1 || !dtype_is_float((DType)ir_type(f, mx->res[0])->dtype))
            continue;
        for (int j = 0; j < nc; j++) {
            int k = mx->args[0] == cand[j].m ? 0 : mx->args[1] == cand[j].m ? 1 : -1;
            Op *red = k < 0 || cand[j].v != mx->res[0] ? NULL : def_in(f, b, mx->args[1 - k]);
            if (!red || red->code != OP_REDUCE || red->iattr[1] != RED_MAX ||
                red->iattr[0] != ir_type(f, red->args[0])->rank - 1)
                continue;
            *z = (Lazy){ .mnew = mx, .m = cand[j].m, .c = cand[j].c };
            z->cols = rescaled_cols(f, b, cand[j].alpha);
            for (int u = i + 1; u < b->nops; u++)
                z->already = z->already || (b->ops[u]->code == OP_SELECT && uses(b->ops[u], mx->res[0]));
            return true;
        }
    }
    return false;
}

/* A value equal to the scale c that is defined before mnew: c itself, or a
 * new splat of the scalar c splats. 0 when there is none. */
static ValId scale_before(Func *f, Block *b, const Lazy *z, Builder *bl)
{
    Op *d = ir_val(f, z->c)->def;
    int at = ir_block_index_of(b, z->mnew);
    if (!d || d->parent != b || ir_block_index_of(b, d) < at)
        return z->c;
    if (d->code != OP_SPLAT || def_in(f, b, d->args[0]))
        return 0;
    return ir_build1(bl, OP_SPLAT, d->args, 1, *ir_type(f, z->c));
}

/* Uses of `from` in b's ops from index i on (and their regions) become `to`. */
static void replace_from(Block *b, int i, ValId from, ValId to)
{
    for (; i < b->nops; i++) {
        Op *op = b->ops[i];
        for (int a = 0; a < op->nargs; a++)
            op->args[a] = op->args[a] == from ? to : op->args[a];
        for (int r = 0; r < op->nregions; r++)
            replace_from(&op->regions[r], 0, from, to);
    }
}

static void rewrite(Func *f, Block *b, const Lazy *z, ValId c, int64_t t, Builder *bl)
{
    ValId mnew = z->mnew->res[0];
    Type ty = *ir_type(f, mnew), bt = ty;
    bt.dtype = DT_BOOL;
    ValId sub[2] = { mnew, z->m };
    ValId d = ir_build1(bl, OP_SUB, sub, 2, ty);
    ValId mul[2] = { d, c };
    ValId dc = ir_build1(bl, OP_MUL, mul, 2, ty);
    ValId cmp[2] = { dc, ir_const_float(bl, ty, (double)t) };
    Op *gt = ir_build(bl, OP_CMP, cmp, 2, &bt, 1);
    gt->iattr[0] = CMP_GT;
    ValId sel[3] = { gt->res[0], mnew, ir_const_float(bl, ty, -INFINITY) };
    ValId s = ir_build1(bl, OP_SELECT, sel, 3, ty);
    ValId mx[2] = { z->m, s };
    ValId lazy = ir_build1(bl, OP_MAX, mx, 2, *ir_type(f, z->m));
    /* every later use of mnew reads the lazy maximum, except the ops above */
    replace_from(b, ir_block_index_of(b, ir_val(f, lazy)->def) + 1, mnew, lazy);
}

typedef struct Walk { PassCtx *ctx; int changed; } Walk;

static bool visit(Func *f, Op *op, void *vw)
{
    Walk *w = vw;
    if (op->code != OP_FOR)
        return true;
    Block *b = &op->regions[0];
    Lazy z;
    if (!find(f, b, &z))
        return true;
    const char *at = pass_loc_str(f->mod->arena, f, z.mnew->loc);
    int64_t opt = w->ctx->lazy_rescale;
    int64_t t = opt > 0 ? opt : opt < 0 ? 0 : z.cols >= LAZY_MIN_COLS ? LAZY_DEFAULT : 0;
    if (z.already) {
        pass_note(w->ctx, "@%s: running maximum at %s: already lazy in the source, kept", f->name, at);
        return true;
    }
    if (!t) {
        pass_note(w->ctx, "@%s: running maximum at %s: exact (%s)", f->name, at,
                  opt < 0 ? "lazy_rescale.threshold=0"
                          : arena_printf(f->mod->arena, "the rescaled accumulator has %lld columns, lazy from %d",
                                         (long long)z.cols, LAZY_MIN_COLS));
        return true;
    }
    Builder bl = ir_builder_before(f, z.mnew);
    bl.pos = ir_block_index_of(b, z.mnew) + 1;
    bl.loc = z.mnew->loc;
    ValId c = scale_before(f, b, &z, &bl);
    if (!c) {
        pass_note(w->ctx, "@%s: running maximum at %s: exact (its scale is computed after it)", f->name, at);
        return true;
    }
    rewrite(f, b, &z, c, t, &bl);
    w->changed++;
    pass_note(w->ctx, "@%s: running maximum at %s: moves only when a row's maximum grows by more than %lld "
              "(log2 units), the %lld-column accumulator rescaled only then (%s); p may reach 2^%lld",
              f->name, at, (long long)t, (long long)z.cols,
              opt > 0 ? "lazy_rescale.threshold" : "the default from 128 columns", (long long)t);
    return true;
}

int pass_lazy_rescale(Module *m, PassCtx *ctx)
{
    for (int i = 0; i < m->nfuncs; i++) {
        Walk w = { ctx, 0 };
        ir_walk(m->funcs[i], &m->funcs[i]->body, visit, &w);
    }
    return 0;
}
