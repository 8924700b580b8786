/* limits.c - the shared limits (lib/tc_limits.h) checked on a kernel's Tile
 * IR before the passes run, for .tile and .tir input alike.
 *
 * Needs: verified IR. Guarantees, when it reports no error: at most
 * TC_LIMIT_PARAMS params and TC_LIMIT_DIMS named dims; static tensor
 * extents in 0..TC_LIMIT_STATIC_DIM; every tile at most TC_LIMIT_TILE_ELEMS
 * elements; a grid whose rule the metadata can carry (named dims and
 * non-negative constants, at most TC_LIMIT_GRID_DEPTH deep, at most
 * TC_LIMIT_META_TOKENS tokens on the record), that divides by no constant
 * zero, and whose constant axes are within the launch limits; a kernel
 * name that is a valid PTX entry name. Errors are located at the op (or
 * the kernel) that breaks a limit.
 */
#include "frontend.h"
#include "../lib/tc_limits.h"

#include <ctype.h>
#include <string.h>

/* ---- the kernel's name ---- */

/* The PTX entry is named after the kernel. PTX identifiers are
 * [A-Za-z][A-Za-z0-9_$]* or [_$%][A-Za-z0-9_$]+ (so `_` alone is none);
 * WARP_SZ is PTX's predefined constant; names starting with `tilec_` are
 * the compiler's own symbols (tilec_dsmem), which LLVM would rename the
 * kernel around. NULL when `name` is fine, else why not. */
static const char *name_problem(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != '$')
            return "PTX identifiers hold only letters, digits, '_' and '$'";
    if (n == 0 || isdigit((unsigned char)name[0]))
        return "a PTX identifier starts with a letter, '_' or '$'";
    if (!isalpha((unsigned char)name[0]) && n == 1)
        return "a PTX identifier that starts with '_' or '$' needs a second character";
    if (strcmp(name, "WARP_SZ") == 0)
        return "WARP_SZ is a predefined PTX identifier";
    if (strncmp(name, "tilec_", 6) == 0)
        return "names starting with 'tilec_' are reserved for the compiler's symbols";
    return NULL;
}

static void check_name(const Func *f, Diag *d)
{
    const char *why = name_problem(f->name);
    if (why)
        diag_error(d, f->loc, "kernel name '%s' cannot name a PTX entry: %s", f->name, why);
}

/* ---- the grid ---- */

typedef struct GridCheck {
    const Func *f;
    Diag *d;
    int tokens;
    bool bad;
} GridCheck;

static bool is_dim(const Func *f, ValId v)
{
    for (int i = 0; i < f->ndims; i++)
        if (f->dims[i] == v)
            return true;
    return false;
}

static void grid_error(GridCheck *g, Loc loc, const char *msg, long long v)
{
    if (!g->bad)
        diag_error(g->d, loc.line ? loc : g->f->loc, msg, v);
    g->bad = true;
}

/* Count the RPN tokens of v as codegen's grid_rpn would print them and check
 * what the runtime's grid programs cannot hold. */
static void grid_value(GridCheck *g, ValId v, int depth)
{
    const Func *f = g->f;
    if (g->bad)
        return;
    g->tokens++;
    if (is_dim(f, v))
        return;
    const Op *op = ir_val((Func *)f, v)->def;
    if (!op)
        return;     /* codegen reports what else a grid may not use */
    if (depth > TC_LIMIT_GRID_DEPTH) {
        grid_error(g, op->loc, "the grid rule is nested too deeply (limit %lld)", TC_LIMIT_GRID_DEPTH);
        return;
    }
    if (op->code == OP_CONST) {
        if (op->iattr[0] < 0)
            grid_error(g, op->loc, "the grid rule holds the negative constant %lld; launch grids are "
                       "computed from non-negative numbers", (long long)op->iattr[0]);
        return;
    }
    if (op->code == OP_CAST) {
        g->tokens--;
        grid_value(g, op->args[0], depth + 1);
        return;
    }
    if (op->nargs != 2)
        return;
    const Op *rhs = ir_val((Func *)f, op->args[1])->def;
    bool zero = rhs && rhs->code == OP_CONST && rhs->iattr[0] == 0;
    if ((op->code == OP_DIV || op->code == OP_REM || op->code == OP_DIVISOR) && zero)
        grid_error(g, op->loc, "the grid divides by the constant %lld", 0LL);
    grid_value(g, op->args[0], depth + 1);
    grid_value(g, op->args[1], depth + 1);
}

static void check_grid(const Func *f, Diag *d)
{
    const Block *b = &f->grid;
    const Op *y = b->nops ? b->ops[b->nops - 1] : NULL;
    if (!y || y->code != OP_YIELD)
        return;
    GridCheck g = { f, d, 3, false };   /* `grid` and two `;` */
    static const long long limit[3] = { TC_LIMIT_GRID_X, TC_LIMIT_GRID_YZ, TC_LIMIT_GRID_YZ };
    for (int a = 0; a < y->nargs && a < 3 && !g.bad; a++) {
        const Op *c = ir_val((Func *)f, y->args[a])->def;
        if (c && c->code == OP_CONST && (c->iattr[0] < 0 || c->iattr[0] > limit[a])) {
            diag_error(d, c->loc.line ? c->loc : f->loc, "grid %c is %lld blocks; the launch limit is 0..%lld",
                       "xyz"[a], (long long)c->iattr[0], limit[a]);
            return;
        }
        grid_value(&g, y->args[a], 0);
    }
    if (!g.bad && g.tokens > TC_LIMIT_META_TOKENS)
        diag_error(d, f->loc, "kernel '%s': the grid rule needs %d tokens in the metadata (limit %d)", f->name,
                   g.tokens, TC_LIMIT_META_TOKENS);
}

/* ---- params, dims and tiles ---- */

static void check_params(const Func *f, Diag *d)
{
    if (f->nparams > TC_LIMIT_PARAMS)
        diag_error(d, f->loc, "kernel '%s' has %d params (limit %d)", f->name, f->nparams, TC_LIMIT_PARAMS);
    if (f->ndims > TC_LIMIT_DIMS)
        diag_error(d, f->loc, "kernel '%s' has %d named dims (limit %d)", f->name, f->ndims, TC_LIMIT_DIMS);
    for (int i = 0; i < f->nparams; i++) {
        const Type *t = ir_type((Func *)f, f->params[i]);
        for (int k = 0; t->kind == TY_TENSOR && k < t->rank; k++)
            if (t->dimsym[k] < 0 && (t->shape[k] < 0 || t->shape[k] > TC_LIMIT_STATIC_DIM)) {
                const char *name = ir_val((Func *)f, f->params[i])->name;
                diag_error(d, f->loc, "param '%s': static extent %lld of dim %d is out of range (0..%lld)",
                           name ? name : "?", (long long)t->shape[k], k, (long long)TC_LIMIT_STATIC_DIM);
                return;
            }
    }
}

/* Elements of a tile type, saturating at INT64_MAX. */
static int64_t tile_elems(const Type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (t->shape[i] < 0 || __builtin_mul_overflow(n, t->shape[i], &n))
            return INT64_MAX;
    return n;
}

typedef struct TileCheck { Diag *d; bool bad; } TileCheck;

static bool tile_visit(Func *f, Op *op, void *ctx)
{
    TileCheck *tc = ctx;
    for (int i = 0; i < op->nres && !tc->bad; i++) {
        const Type *t = ir_type(f, op->res[i]);
        if (t->kind != TY_TILE || tile_elems(t) <= TC_LIMIT_TILE_ELEMS)
            continue;
        StrBuf sb = { 0 };
        type_print(f, t, &sb);
        diag_error(tc->d, op->loc.line ? op->loc : f->loc, "%s has more than %d elements", sb.buf ? sb.buf : "a tile",
                   TC_LIMIT_TILE_ELEMS);
        sb_free(&sb);
        tc->bad = true;     /* one report per kernel: the rest follow from it */
    }
    return !tc->bad;
}

int fe_check_limits(const Module *m, Diag *d)
{
    int errors = d->nerrors;
    for (int i = 0; i < m->nfuncs; i++) {
        const Func *f = m->funcs[i];
        check_name(f, d);
        check_params(f, d);
        check_grid(f, d);
        TileCheck tc = { d, false };
        ir_walk((Func *)f, (Block *)&f->body, tile_visit, &tc);
    }
    return d->nerrors - errors;
}
