/* verify.c - the Tile IR verifier, run after the front end, after parsing
 * .tir text and between passes.
 *
 * Checks (see ir.h's header comment and ops.h):
 *  - every value is defined exactly once, before its uses, in the same or an
 *    enclosing block; a region's block args and values are visible only in
 *    that region; grid values are not visible in the body and vice versa;
 *  - operand / result / region counts follow op_info;
 *  - the type rule of each op (elementwise operands identical in shape and
 *    dtype, CMP gives bool, DOT shapes, LOAD/STORE windows, FOR/IF carried
 *    values and YIELDs, ...; verify_ops.c, verify_tile.c); tensors are only
 *    ever operand 0 of LOAD/STORE and operand 2 of ASYNC_COPY;
 *  - shared buffers (verify_ops.c): SMEM_ALLOC gives a `shared` tile of
 *    rank >= 2 whose leading dim is the stage count; the buffer operand of
 *    ASYNC_COPY, SMEM_LOAD and SMEM_STORE is an SMEM_ALLOC result, the slot
 *    an i32, and what moves in or out has the slot's shape and dtype;
 *  - YIELD only as the last op of a region or of the grid block; the grid
 *    yields three i32 scalars; DIVISOR (integers) only in the grid block.
 *  - the schedule's ops (WS, barriers, TMA, asynchronous products) in
 *    verify_sched.c; a value defined in a WS role is used only in that role.
 * Space and layout are not compared (passes that assign them insert explicit
 * conversions; the verifier checks shapes and dtypes).
 * Each problem is reported with the op's Loc as
 *   "verifier failed after pass 'P': 'op': what is wrong".
 */
#include "verify_int.h"

#include <string.h>

/* ---- reporting ---- */

void vfy_err(Verifier *V, const Op *op, const char *fmt, ...)
{
    StrBuf sb = { 0 };
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    const char *opname = op && op->code < OP_COUNT ? op_info[op->code].name : "?";
    Loc loc = op ? op->loc : V->f->loc;
    const char *pre = V->after ? arena_printf(V->d->arena, " after pass '%s'", V->after) : "";
    if (op)
        diag_error(V->d, loc, "verifier failed%s: '%s': %s", pre, opname, sb.buf ? sb.buf : "");
    else
        diag_error(V->d, loc, "verifier failed%s: kernel '%s': %s", pre, V->f->name, sb.buf ? sb.buf : "");
    sb_free(&sb);
    V->nerr++;
}

const char *vfy_tstr(Verifier *V, const Type *t)
{
    StrBuf sb = { 0 };
    type_print(V->f, t, &sb);
    char *s = arena_strdup(V->d->arena, sb.buf ? sb.buf : "");
    sb_free(&sb);
    return s;
}

/* ---- type predicates ---- */

/* A value's type is well formed: a known dtype; tiles of rank 1..4 with
 * positive extents; no tensors except params. */
static void check_valtype(Verifier *V, const Op *op, const Type *t, const char *what, int i)
{
    if (t->dtype == DT_NONE || t->dtype >= DT_COUNT)
        vfy_err(V, op, "%s #%d has no element type", what, i);
    else if (dtype_is_opaque((DType)t->dtype) && (!op || t->kind == TY_TENSOR))
        vfy_err(V, op, "%s #%d: %s is an IR handle, not a param or tensor element type", what, i,
                dtype_name((DType)t->dtype));
    else if (t->kind == TY_TENSOR && op)
        vfy_err(V, op, "%s #%d is a tensor (only kernel params are tensors)", what, i);
    else if (t->kind == TY_TILE) {
        if (t->rank < 1 || t->rank > TILE_MAXRANK)
            vfy_err(V, op, "%s #%d is a tile of rank %d (1..%d allowed)", what, i, t->rank, TILE_MAXRANK);
        for (int k = 0; k < t->rank && k < TILE_MAXRANK; k++)
            if (t->shape[k] < 1) {
                vfy_err(V, op, "%s #%d has a non-positive tile extent", what, i);
                break;
            }
    } else if (t->kind > TY_TENSOR)
        vfy_err(V, op, "%s #%d has a bad type kind %d", what, i, t->kind);
}

/* ---- definitions and scopes ---- */

static void define(Verifier *V, const Op *op, ValId v, const char *what, int i)
{
    if (!valid_id(V, v)) {
        vfy_err(V, op, "%s #%d is not a value (id %u)", what, i, (unsigned)v);
        return;
    }
    if (V->state[v] != VS_UNSEEN) {
        vfy_err(V, op, "%s #%d is defined a second time", what, i);
        return;
    }
    V->state[v] = VS_LIVE;
    V->role[v] = V->cur_role;
    if (V->nstack == V->capstack) {
        uint32_t cap = V->capstack ? V->capstack * 2 : 64;
        V->stack = arena_grow_move(V->scratch, V->stack, sizeof(ValId), V->capstack, cap);
        V->capstack = cap;
    }
    V->stack[V->nstack++] = v;
}

static void scope_exit(Verifier *V, uint32_t mark)
{
    while (V->nstack > mark)
        V->state[V->stack[--V->nstack]] = VS_DEAD;
}

static bool count_defs(Func *f, Op *op, void *ctx)
{
    uint32_t *nd = ctx;
    for (int i = 0; i < op->nres; i++)
        if (op->res[i] < f->nvals)
            nd[op->res[i]]++;
    for (int g = 0; g < op->nregions; g++)
        for (int i = 0; i < op->regions[g].nargs; i++)
            if (op->regions[g].args[i] < f->nvals)
                nd[op->regions[g].args[i]]++;
    return true;
}

/* The definitions of v in the whole function: counted on the first
 * operand that is not live (only an error's wording needs them, so a
 * clean verification does not walk the function for them). */
static uint32_t defs_of(Verifier *V, ValId v)
{
    if (!V->ndefs) {
        const Func *f = V->f;
        V->ndefs = arena_alloc(V->scratch, sizeof(uint32_t) * (f->nvals + 1));
        ir_walk((Func *)f, (Block *)&f->grid, count_defs, V->ndefs);
        ir_walk((Func *)f, (Block *)&f->body, count_defs, V->ndefs);
    }
    return V->ndefs[v];
}

/* Operands: valid ids, visible here; tensors only as operand 0 of LOAD/STORE.
 * Returns false when a type check of the op would read a bad value. */
static bool check_operands(Verifier *V, const Op *op)
{
    bool ok = true;
    for (int i = 0; i < op->nargs; i++) {
        ValId v = op->args[i];
        if (!valid_id(V, v)) {
            vfy_err(V, op, "operand #%d is not a value (id %u)", i, (unsigned)v);
            ok = false;
            continue;
        }
        if (V->state[v] == VS_DEAD && V->role[v] && V->role[v] != V->cur_role) {
            vfy_err(V, op, "operand #%d is defined in a role of a 'ws' and used outside that role "
                    "(roles meet only through shared buffers and barriers)", i);
        } else if (V->state[v] != VS_LIVE) {
            vfy_err(V, op, "operand #%d %s", i,
                    V->state[v] == VS_UNSEEN && defs_of(V, v) == 0 ? "is never defined"
                    : V->state[v] == VS_UNSEEN ? "is used before its definition"
                                               : "is used outside the region (or grid) that defines it");
        }
        bool mem = ((op->code == OP_LOAD || op->code == OP_STORE || op->code == OP_ATOMIC_ADD ||
                     op->code == OP_GATHER || op->code == OP_SCATTER) && i == 0) ||
                   (op->code == OP_ASYNC_COPY && i == 2) || (op->code == OP_TMA_LOAD && i == 4);
        if (mem && T(V, v)->kind != TY_TENSOR) {
            vfy_err(V, op, "operand #%d must be a tensor, got %s", i, vfy_tstr(V, T(V, v)));
            ok = false;
        } else if (!mem && T(V, v)->kind == TY_TENSOR) {
            vfy_err(V, op, "operand #%d is a tensor; only load/store take tensors", i);
            ok = false;
        }
    }
    for (int i = 0; i < op->nres; i++)
        if (!valid_id(V, op->res[i]))
            ok = false;
    return ok;
}

/* Counts from op_info; false if the type rule cannot run safely. */
static bool check_arity(Verifier *V, const Op *op)
{
    const OpInfo *oi = &op_info[op->code];
    bool ok = true;
    if (oi->nargs >= 0 && op->nargs != oi->nargs) {
        vfy_err(V, op, "takes %d operand(s), got %d", oi->nargs, op->nargs);
        ok = false;
    }
    if (oi->nres >= 0 && op->nres != oi->nres) {
        vfy_err(V, op, "defines %d result(s), got %d", oi->nres, op->nres);
        ok = false;
    }
    if (oi->nregions >= 0 && op->nregions != oi->nregions) {
        vfy_err(V, op, "has %d region(s), needs %d", op->nregions, oi->nregions);
        ok = false;
    }
    return ok;
}

/* ---- blocks ---- */

typedef enum BlockKind { BK_BODY, BK_GRID, BK_REGION } BlockKind;

static void verify_block(Verifier *V, const Block *b, BlockKind kind);

static void verify_op(Verifier *V, const Op *op, const Block *b, int idx, BlockKind kind)
{
    if (op->code >= OP_COUNT) {
        vfy_err(V, op, "unknown op code %u", (unsigned)op->code);
        return;
    }
    if (op->parent != b)
        vfy_err(V, op, "op's parent link does not point to the block that holds it");
    if (op->code == OP_YIELD && (kind == BK_BODY || idx != b->nops - 1))
        vfy_err(V, op, "'yield' may only be the last op of a region or of the grid block");
    if (op->code == OP_WS && (kind == BK_GRID || V->ws_depth))
        vfy_err(V, op, "'ws' may not be nested in another 'ws' or placed in the grid block");
    if ((op->code == OP_DIVISOR || op->code == OP_NUMSMS) && kind != BK_GRID)
        vfy_err(V, op, "'%s' may only be in the grid block (the runtime evaluates it at launch)",
                op_info[op->code].name);
    bool ok = check_operands(V, op);
    ok = check_arity(V, op) && ok;
    for (int i = 0; i < op->nres; i++)
        if (valid_id(V, op->res[i]) && V->f->vals[op->res[i]].def != op)
            vfy_err(V, op, "result #%d's defining-op link does not point to this op", i);
    uint32_t outer_role = V->cur_role;
    V->ws_depth += op->code == OP_WS;
    for (int g = 0; g < op->nregions && op->regions; g++) {
        uint32_t mark = V->nstack;
        if (op->code == OP_WS)
            V->cur_role = ++V->nroles;
        for (int i = 0; i < op->regions[g].nargs; i++) {
            define(V, op, op->regions[g].args[i], "region argument", i);
            if (valid_id(V, op->regions[g].args[i]))
                check_valtype(V, op, T(V, op->regions[g].args[i]), "region argument", i);
        }
        verify_block(V, &op->regions[g], BK_REGION);
        scope_exit(V, mark);
    }
    V->ws_depth -= op->code == OP_WS;
    V->cur_role = outer_role;
    for (int i = 0; i < op->nres; i++) {
        define(V, op, op->res[i], "result", i);
        if (valid_id(V, op->res[i]))
            check_valtype(V, op, T(V, op->res[i]), "result", i);
    }
    if (ok && op->regions == NULL && op->nregions)
        ok = false;
    if (ok)
        vfy_op_rule(V, op);
}

static void verify_block(Verifier *V, const Block *b, BlockKind kind)
{
    for (int i = 0; i < b->nops && !diag_too_many(V->d); i++)
        verify_op(V, b->ops[i], b, i, kind);
}

/* ---- kernels ---- */

static void verify_grid(Verifier *V)
{
    const Block *g = &V->f->grid;
    const Op *y = g->nops ? g->ops[g->nops - 1] : NULL;
    if (!y || y->code != OP_YIELD) {
        vfy_err(V, y, "the grid block must end in 'yield' of 3 i32 values");
        return;
    }
    if (y->nargs != 3) {
        vfy_err(V, y, "the grid block yields %d value(s), needs 3 i32", y->nargs);
        return;
    }
    for (int i = 0; i < 3; i++)
        if (valid_id(V, y->args[i]) && !is_i32(T(V, y->args[i])))
            vfy_err(V, y, "grid value #%d must be an i32 scalar, got %s", i, vfy_tstr(V, T(V, y->args[i])));
}

static void verify_params(Verifier *V)
{
    const Func *f = V->f;
    for (int i = 0; i < f->ndims; i++) {
        define(V, NULL, f->dims[i], "dim", i);
        if (valid_id(V, f->dims[i]) && !is_i32(T(V, f->dims[i])))
            vfy_err(V, NULL, "dim '%s' must be an i32 scalar", f->dim_names[i]);
    }
    for (int i = 0; i < f->nparams; i++) {
        define(V, NULL, f->params[i], "param", i);
        if (!valid_id(V, f->params[i]))
            continue;
        const Type *t = T(V, f->params[i]);
        if (t->kind == TY_TILE)
            vfy_err(V, NULL, "param #%d is a tile; params are tensors or scalars", i);
        check_valtype(V, NULL, t, "param", i);
        for (int k = 0; t->kind == TY_TENSOR && k < t->rank && k < TENSOR_MAXRANK; k++)
            if (t->dimsym[k] >= f->ndims || (t->dimsym[k] < 0 && t->shape[k] < 0))
                vfy_err(V, NULL, "param #%d: dim %d is neither a named dim nor a static extent", i, k);
    }
    if (f->body.nargs || f->grid.nargs)
        vfy_err(V, NULL, "the body and grid blocks take no arguments");
}

static bool ws_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    if (op->code != OP_WS)
        return true;
    *(const Op **)ctx = op;
    return false;
}

/* Warps of the kernel's WS roles (4 per warp group), 0 without a WS. */
static int64_t ws_warps(const Func *f)
{
    const Op *ws = NULL;
    ir_walk((Func *)f, (Block *)&f->body, ws_visit, &ws);
    int64_t wgs = 0;
    for (int i = 0; ws && i + 2 < ws->nlist; i += 3)
        wgs += ws->list[i + 1];
    return wgs * (WG_THREADS / 32);
}

/* A decided schedule: warps a power of two up to 32 (a kernel with WS
 * roles: 4 per warp group of its roles); turns only for chained products
 * on 8k warps; the SIMT and product forms on their kinds. */
static void verify_schedule(Verifier *V)
{
    const Schedule *s = &V->f->sched;
    if (s->kind == SCHED_NONE) {
        if (s->warps || s->min_blocks || s->turns || s->wide || s->copy_interior || s->pv_rows || s->epilogue_order)
            vfy_err(V, NULL, "schedule fields set without a schedule kind");
        return;
    }
    int64_t roles = ws_warps(V->f);
    if (roles && (s->warps != roles || s->kind > SCHED_CHAIN))
        vfy_err(V, NULL, "schedule: warps must be %lld, 4 per warp group of the ws roles (got %d)", (long long)roles,
                s->warps);
    else if (!roles && (s->kind > SCHED_CHAIN || s->warps < 1 || s->warps > 32 || (s->warps & (s->warps - 1))))
        vfy_err(V, NULL, "schedule: warps must be a power of two from 1 to 32 (got %d)", s->warps);
    if (s->min_blocks > 32)
        vfy_err(V, NULL, "schedule: min_blocks must be at most 32 (got %d)", s->min_blocks);
    if (s->turns && (s->kind != SCHED_CHAIN || s->warps % 8))
        vfy_err(V, NULL, "schedule: turns need chained products on a multiple of 8 warps");
    if (s->wide && s->kind != SCHED_SIMT)
        vfy_err(V, NULL, "schedule: 'wide' is for kernels without products");
    if ((s->copy_interior || s->pv_rows) && s->kind == SCHED_SIMT)
        vfy_err(V, NULL, "schedule: copy_interior and pv_rows are for kernels with products");
    if (s->epilogue_order && s->kind != SCHED_MMA)
        vfy_err(V, NULL, "schedule: epilogue_order is for kernels with products, none chained");
    if (s->pv_rows && s->kind != SCHED_CHAIN)
        vfy_err(V, NULL, "schedule: pv_rows is for chained products");
}

static void verify_func(Verifier *V, const Func *f)
{
    Arena *a = V->scratch;
    V->f = f;
    V->state = arena_alloc(a, f->nvals + 1);
    V->ndefs = NULL;   /* defs_of counts them when an error needs them */
    V->role = arena_alloc(a, sizeof(uint32_t) * (f->nvals + 1));
    V->cur_role = V->nroles = 0;
    V->ws_depth = 0;
    V->nstack = 0;
    verify_params(V);
    verify_schedule(V);
    uint32_t mark = V->nstack;
    verify_block(V, &f->grid, BK_GRID);
    verify_grid(V);
    scope_exit(V, mark);
    verify_block(V, &f->body, BK_BODY);
}

int ir_verify(const Module *m, const char *after, Diag *d)
{
    Verifier V;
    memset(&V, 0, sizeof V);
    V.d = d;
    V.scratch = arena_new();
    V.after = after;
    for (int i = 0; i < m->nfuncs; i++)
        verify_func(&V, m->funcs[i]);
    arena_free(V.scratch);
    return V.nerr;
}
