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
 *    values and YIELDs, ...); tensors are only ever operand 0 of LOAD/STORE
 *    and operand 2 of ASYNC_COPY;
 *  - shared buffers: SMEM_ALLOC gives a `shared` tile of rank >= 2 whose
 *    leading dim is the stage count; the buffer operand of ASYNC_COPY,
 *    SMEM_LOAD and SMEM_STORE is an SMEM_ALLOC result, the slot an i32, and
 *    what moves in or out has the slot's shape and dtype;
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

/* ---- op rules ---- */

void vfy_result_is(Verifier *V, const Op *op, const Type *want, const char *rule)
{
    const Type *r = T(V, op->res[0]);
    if (!same_st(r, want))
        vfy_err(V, op, "result type %s should be %s (%s)", vfy_tstr(V, r), vfy_tstr(V, want), rule);
}

static void check_elem_dtype(Verifier *V, const Op *op, DType dt)
{
    switch (op->code) {
    case OP_AND: case OP_OR: case OP_XOR: case OP_NOT:
        if (dt != DT_BOOL && !dtype_is_int(dt))
            vfy_err(V, op, "needs bool or integer operands, got %s", dtype_name(dt));
        return;
    case OP_DIVISOR: case OP_SHL: case OP_SHR:
        if (!dtype_is_int(dt))
            vfy_err(V, op, "needs integer operands, got %s", dtype_name(dt));
        return;
    case OP_EXP: case OP_EXP2: case OP_LOG: case OP_LOG2: case OP_SQRT: case OP_RSQRT: case OP_TANH:
    case OP_ERF: case OP_SIGMOID: case OP_SIN: case OP_COS: case OP_FLOOR: case OP_CEIL: case OP_ROUND:
    case OP_POW:
        if (!dtype_is_float(dt))
            vfy_err(V, op, "needs float operands, got %s", dtype_name(dt));
        else if (op->code == OP_EXP2 && op->iattr[0] && (dt != DT_F32 || op->iattr[0] < 0 || op->iattr[0] > 1024))
            vfy_err(V, op, "{emu = %lld} needs an f32 operand and a group period from 1 to 1024",
                    (long long)op->iattr[0]);
        return;
    case OP_CMP: case OP_SELECT: case OP_CAST:
        if (dtype_is_opaque(dt))
            vfy_err(V, op, "needs data operands, got %s", dtype_name(dt));
        return;
    default:
        if (!is_numeric(dt))
            vfy_err(V, op, "needs numeric operands, got %s", dtype_name(dt));
        return;
    }
}

/* Elementwise: identical operand types; result of that shape (bool for CMP). */
static void check_elementwise(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    for (int i = 1; i < op->nargs; i++)
        if (!same_st(a, T(V, op->args[i]))) {
            vfy_err(V, op, "operand types differ: %s vs %s", vfy_tstr(V, a), vfy_tstr(V, T(V, op->args[i])));
            return;
        }
    check_elem_dtype(V, op, (DType)a->dtype);
    Type want = *a;
    if (op->code == OP_CMP)
        want.dtype = DT_BOOL;
    vfy_result_is(V, op, &want, op->code == OP_CMP ? "bool of the operand shape" : "the operand type");
}

static void check_select(Verifier *V, const Op *op)
{
    const Type *c = T(V, op->args[0]), *a = T(V, op->args[1]), *b = T(V, op->args[2]);
    if (c->dtype != DT_BOOL || !type_same_shape(c, a))
        vfy_err(V, op, "condition must be bool of the operands' shape, got %s for %s", vfy_tstr(V, c), vfy_tstr(V, a));
    else if (!same_st(a, b))
        vfy_err(V, op, "operand types differ: %s vs %s", vfy_tstr(V, a), vfy_tstr(V, b));
    else
        vfy_result_is(V, op, a, "the operand type");
}

static void check_cast(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *r = T(V, op->res[0]);
    if (!type_same_shape(a, r))
        vfy_err(V, op, "changes the shape: %s to %s", vfy_tstr(V, a), vfy_tstr(V, r));
}

static void check_splat(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *r = T(V, op->res[0]);
    if (!is_scalar(a) || !is_tile(r))
        vfy_err(V, op, "needs a scalar operand and a tile result, got %s to %s", vfy_tstr(V, a), vfy_tstr(V, r));
    else if (a->dtype != r->dtype)
        vfy_err(V, op, "changes the dtype: %s to %s", vfy_tstr(V, a), vfy_tstr(V, r));
}

static void check_expand(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    int64_t ax = op->iattr[0];
    if (!is_tile(a) || a->rank >= TILE_MAXRANK || ax < 0 || ax > a->rank) {
        vfy_err(V, op, "axis %lld is not valid for %s", (long long)ax, vfy_tstr(V, a));
        return;
    }
    Type want = *a;
    want.rank = (uint8_t)(a->rank + 1);
    for (int i = want.rank - 1; i > ax; i--)
        want.shape[i] = a->shape[i - 1];
    want.shape[ax] = 1;
    vfy_result_is(V, op, &want, "the expanded operand type");
}

static void check_broadcast(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *r = T(V, op->res[0]);
    if (!is_tile(a) || !is_tile(r) || a->rank != r->rank || a->dtype != r->dtype) {
        vfy_err(V, op, "needs tiles of one rank and dtype, got %s to %s", vfy_tstr(V, a), vfy_tstr(V, r));
        return;
    }
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != r->shape[i] && a->shape[i] != 1) {
            vfy_err(V, op, "dim %d of %s is neither %lld nor 1", i, vfy_tstr(V, a), (long long)r->shape[i]);
            return;
        }
}

static void check_iota(Verifier *V, const Op *op)
{
    const Type *r = T(V, op->res[0]);
    if (!is_tile(r) || r->dtype != DT_I32)
        vfy_err(V, op, "result must be an i32 tile, got %s", vfy_tstr(V, r));
    else if (op->iattr[0] < 0 || op->iattr[0] >= r->rank)
        vfy_err(V, op, "axis %lld out of range for %s", (long long)op->iattr[0], vfy_tstr(V, r));
}

bool vfy_axis_kind(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    int64_t ax = op->iattr[0];
    if (!is_tile(a) || ax < 0 || ax >= a->rank) {
        vfy_err(V, op, "axis %lld is not valid for %s", (long long)ax, vfy_tstr(V, a));
        return false;
    }
    if (op->iattr[1] < 0 || op->iattr[1] >= RED_COUNT) {
        vfy_err(V, op, "unknown %s kind %lld", op->code == OP_SCAN ? "scan" : "reduction", (long long)op->iattr[1]);
        return false;
    }
    return true;
}

static void check_reduce(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    int64_t ax = op->iattr[0];
    if (!vfy_axis_kind(V, op))
        return;
    Type want = *a;
    want.rank = (uint8_t)(a->rank - 1);
    for (int i = (int)ax; i < want.rank; i++)
        want.shape[i] = a->shape[i + 1];
    want.shape[want.rank] = 0;
    if (want.rank == 0)
        want = type_scalar((DType)a->dtype);
    vfy_result_is(V, op, &want, "the reduced operand type");
}

static void check_trans(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]);
    if (!is_tile(a) || a->rank != 2) {
        vfy_err(V, op, "needs a 2-D tile, got %s", vfy_tstr(V, a));
        return;
    }
    Type want = *a;
    want.shape[0] = a->shape[1];
    want.shape[1] = a->shape[0];
    vfy_result_is(V, op, &want, "the transposed operand type");
}

bool vfy_dot_operands(Verifier *V, const Op *op)
{
    const Type *a = T(V, op->args[0]), *b = T(V, op->args[1]), *c = T(V, op->args[2]);
    if (!is_tile(a) || !is_tile(b) || !is_tile(c) || a->rank != 2 || b->rank != 2 || c->rank != 2) {
        vfy_err(V, op, "needs 2-D tiles, got %s, %s, %s", vfy_tstr(V, a), vfy_tstr(V, b), vfy_tstr(V, c));
        return false;
    }
    if (a->shape[1] != b->shape[0] || c->shape[0] != a->shape[0] || c->shape[1] != b->shape[1]) {
        vfy_err(V, op, "shapes do not fit [M,K] x [K,N] + [M,N]: %s x %s + %s", vfy_tstr(V, a), vfy_tstr(V, b),
                vfy_tstr(V, c));
        return false;
    }
    if (a->dtype != b->dtype) {
        vfy_err(V, op, "operand dtypes differ: %s vs %s", dtype_name(a->dtype), dtype_name(b->dtype));
        return false;
    }
    DType acc = dtype_is_float(a->dtype) ? DT_F32 : DT_I32;
    if (c->dtype != acc) {
        vfy_err(V, op, "accumulator must be %s for %s operands, got %s", dtype_name(acc), dtype_name(a->dtype),
                vfy_tstr(V, c));
        return false;
    }
    return true;
}

/* DOT / DOT_ASYNC iattr[0]: a known family, wgmma only on shapes it takes. */
void vfy_mma_kind(Verifier *V, const Op *op)
{
    int64_t k = op->iattr[0];
    const char *why;
    if (k < 0 || k >= MMA_COUNT)
        vfy_err(V, op, "unknown matrix instruction family %lld", (long long)k);
    else if (k == MMA_SYNC && T(V, op->args[0])->dtype == DT_F32 &&
             (why = ir_mma_tf32_problem(T(V, op->args[0]), T(V, op->args[1]))))
        vfy_err(V, op, "mma = mma_sync, but %s", why);
    else if (k == MMA_SYNC && T(V, op->args[0])->dtype != DT_F32 &&
             (why = ir_mma_sync_problem(T(V, op->args[0]), T(V, op->args[1]))))
        vfy_err(V, op, "mma = mma_sync, but %s", why);
    else if (k == MMA_SIMT && op->code != OP_DOT)
        vfy_err(V, op, "mma = simt is a dot's family, not a %s's", op_info[op->code].name);
    else if (k == MMA_WGMMA && (why = ir_wgmma_problem(T(V, op->args[0]), T(V, op->args[1]))))
        vfy_err(V, op, "mma = wgmma, but %s", why);
    else if (k == MMA_TCGEN05 && op->code == OP_DOT_ASYNC)
        vfy_err(V, op, "mma = tcgen05 keeps its accumulator in tensor memory: a tc_mma, not a dot_async");
    else if (op->code == OP_TC_MMA && k != MMA_TCGEN05)
        vfy_err(V, op, "tc_mma runs on tcgen05 (mma = tcgen05), not %s", mma_names[k]);
    else if (k == MMA_TCGEN05 && (why = ir_tcgen05_problem(T(V, op->args[0]), T(V, op->args[1]))))
        vfy_err(V, op, "mma = tcgen05, but %s", why);
}

static void check_dot(Verifier *V, const Op *op)
{
    if (!vfy_dot_operands(V, op))
        return;
    vfy_result_is(V, op, T(V, op->args[2]), "the accumulator type");
    vfy_mma_kind(V, op);
}

/* LOAD/STORE/ASYNC_COPY: [buffer, slot,] tensor (operand `base`), one i32
 * offset per dim [, other | value]; extents per dim (0 = scalar index); the
 * tile shape is the kept extents. */
bool vfy_window_type(Verifier *V, const Op *op, const Type *tt, int base, int nextra, Type *win)
{
    int r = tt->rank;
    if (op->nargs != base + 1 + r + nextra) {
        vfy_err(V, op, "needs %d operands for a rank-%d tensor, got %d", base + 1 + r + nextra, r, op->nargs);
        return false;
    }
    for (int i = base + 1; i <= base + r; i++)
        if (!is_i32(T(V, op->args[i]))) {
            vfy_err(V, op, "offset operand #%d must be an i32 scalar, got %s", i, vfy_tstr(V, T(V, op->args[i])));
            return false;
        }
    if (op->nlist != r) {
        vfy_err(V, op, "has %d window extents for a rank-%d tensor", op->nlist, r);
        return false;
    }
    if (op->iattr[0] < 0 || (r < 63 && (op->iattr[0] >> r) != 0)) {
        vfy_err(V, op, "mask %lld has bits beyond the tensor's %d dims", (long long)op->iattr[0], r);
        return false;
    }
    int64_t shape[TENSOR_MAXRANK];
    int k = 0;
    for (int i = 0; i < r; i++) {
        if (op->list[i] < 0) {
            vfy_err(V, op, "window extent %d is negative", i);
            return false;
        }
        if (op->list[i] > 0)
            shape[k++] = op->list[i];
    }
    if (k > TILE_MAXRANK) {
        vfy_err(V, op, "window keeps %d dims (a tile has at most %d)", k, TILE_MAXRANK);
        return false;
    }
    *win = k ? type_tile((DType)tt->dtype, k, shape, SP_ANY) : type_scalar((DType)tt->dtype);
    return true;
}

static void check_load(Verifier *V, const Op *op)
{
    if (op->nargs < 1) {
        vfy_err(V, op, "needs a tensor operand");
        return;
    }
    const Type *tt = T(V, op->args[0]);
    bool other = op->iattr[1] != 0;
    Type win;
    if (!vfy_window_type(V, op, tt, 0, other, &win))
        return;
    vfy_result_is(V, op, &win, "the window type");
    if (other) {
        const Type *o = T(V, op->args[op->nargs - 1]);
        if (!(is_scalar(o) && o->dtype == tt->dtype) && !same_st(o, &win))
            vfy_err(V, op, "'other' must be a %s scalar or of the window type %s, got %s", dtype_name(tt->dtype),
                    vfy_tstr(V, &win), vfy_tstr(V, o));
    }
}

static void check_store(Verifier *V, const Op *op)
{
    if (op->nargs < 2) {
        vfy_err(V, op, "needs a tensor operand and a value");
        return;
    }
    const Type *tt = T(V, op->args[0]);
    Type win;
    if (!vfy_window_type(V, op, tt, 0, 1, &win))
        return;
    const Type *v = T(V, op->args[op->nargs - 1]);
    if (!same_st(v, &win))
        vfy_err(V, op, "stored value %s does not match the window type %s", vfy_tstr(V, v), vfy_tstr(V, &win));
    if (op->code == OP_ATOMIC_ADD && tt->kind == TY_TENSOR && tt->dtype != DT_F32 && tt->dtype != DT_I32 &&
        tt->dtype != DT_U32)
        vfy_err(V, op, "needs an f32, i32 or u32 tensor, got %s", vfy_tstr(V, tt));
}

/* ---- shared buffers ---- */

static bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

static void check_smem_alloc(Verifier *V, const Op *op)
{
    const Type *r = T(V, op->res[0]);
    if (!is_tile(r) || r->space != SP_SHARED || r->rank < 2)
        vfy_err(V, op, "result must be a shared tile of rank >= 2 (stages x slot shape), got %s", vfy_tstr(V, r));
    if (op->iattr[0] < 0 || op->iattr[0] >= SWZ_COUNT)
        vfy_err(V, op, "unknown swizzle mode %lld", (long long)op->iattr[0]);
    if (op->iattr[1] < -1)
        vfy_err(V, op, "offset %lld is negative (-1 = not assigned yet)", (long long)op->iattr[1]);
    if (!is_pow2(op->iattr[2]))
        vfy_err(V, op, "alignment %lld is not a positive power of two", (long long)op->iattr[2]);
    else if (op->iattr[1] > 0 && op->iattr[1] % op->iattr[2])
        vfy_err(V, op, "offset %lld is not a multiple of the alignment %lld", (long long)op->iattr[1],
                (long long)op->iattr[2]);
    if (op->iattr[3] < 0 || (op->iattr[3] && op->iattr[0] != SWZ_PAD))
        vfy_err(V, op, "pad %lld needs swizzle = pad and a non-negative size", (long long)op->iattr[3]);
}

/* Operand #0 is an SMEM_ALLOC result and #1 an i32 slot; *slot = the shape
 * of one slot (the buffer type without its leading stage dim). */
bool vfy_buffer_slot(Verifier *V, const Op *op, Type *slot)
{
    const Value *b = ir_val(V->f, op->args[0]);
    if (!b->def || b->def->code != OP_SMEM_ALLOC || !is_tile(&b->type) || b->type.rank < 2) {
        vfy_err(V, op, "operand #0 must be a buffer made by smem_alloc");
        return false;
    }
    if (!is_i32(T(V, op->args[1]))) {
        vfy_err(V, op, "slot operand #1 must be an i32 scalar, got %s", vfy_tstr(V, T(V, op->args[1])));
        return false;
    }
    *slot = type_tile((DType)b->type.dtype, b->type.rank - 1, b->type.shape + 1, SP_SHARED);
    return true;
}

static void check_async_copy(Verifier *V, const Op *op)
{
    Type slot, win;
    if (op->nargs < 3 || !vfy_buffer_slot(V, op, &slot)) {
        if (op->nargs < 3)
            vfy_err(V, op, "needs a buffer, a slot, a tensor and its offsets");
        return;
    }
    if (!vfy_window_type(V, op, T(V, op->args[2]), 2, 0, &win))
        return;
    if (!same_st(&win, &slot))
        vfy_err(V, op, "window %s does not match the buffer slot %s", vfy_tstr(V, &win), vfy_tstr(V, &slot));
}

static void check_smem_load(Verifier *V, const Op *op)
{
    Type slot;
    if (!vfy_buffer_slot(V, op, &slot))
        return;
    const Type *r = T(V, op->res[0]);
    slot.space = SP_REG;
    vfy_result_is(V, op, &slot, "the buffer's slot type");
    if (r->space != SP_REG && r->space != SP_ANY)
        vfy_err(V, op, "result must be a register tile, got %s", vfy_tstr(V, r));
}

static void check_smem_store(Verifier *V, const Op *op)
{
    Type slot;
    if (!vfy_buffer_slot(V, op, &slot))
        return;
    const Type *v = T(V, op->args[2]);
    if (!same_st(v, &slot))
        vfy_err(V, op, "stored value %s does not match the buffer slot %s", vfy_tstr(V, v), vfy_tstr(V, &slot));
}

/* A region ends in YIELD whose values match the op's results. */
static void check_yield_of(Verifier *V, const Op *op, int g)
{
    const Op *y = ir_block_yield(&op->regions[g]);
    if (!y) {
        vfy_err(V, op, "region %d does not end in 'yield'", g);
        return;
    }
    if (y->nargs != op->nres) {
        vfy_err(V, y, "yields %d value(s) but the enclosing '%s' has %d result(s)", y->nargs,
                op_info[op->code].name, op->nres);
        return;
    }
    for (int i = 0; i < y->nargs; i++)
        if (valid_id(V, y->args[i]) && !same_st(T(V, y->args[i]), T(V, op->res[i])))
            vfy_err(V, y, "yielded value #%d is %s but result #%d of '%s' is %s", i, vfy_tstr(V, T(V, y->args[i])), i,
                    op_info[op->code].name, vfy_tstr(V, T(V, op->res[i])));
}

static void check_for(Verifier *V, const Op *op)
{
    if (op->nargs < 3) {
        vfy_err(V, op, "needs lo, hi, step operands, got %d operands", op->nargs);
        return;
    }
    for (int i = 0; i < 3; i++)
        if (!is_i32(T(V, op->args[i])))
            vfy_err(V, op, "%s must be an i32 scalar, got %s", i == 0 ? "lo" : i == 1 ? "hi" : "step",
                    vfy_tstr(V, T(V, op->args[i])));
    int n = op->nargs - 3;
    const Block *b = &op->regions[0];
    if (op->nres != n) {
        vfy_err(V, op, "has %d carried init(s) but %d result(s)", n, op->nres);
        return;
    }
    if (b->nargs != n + 1) {
        vfy_err(V, op, "region has %d argument(s); it needs the induction variable and %d carried value(s)",
                b->nargs, n);
        return;
    }
    if (valid_id(V, b->args[0]) && !is_i32(T(V, b->args[0])))
        vfy_err(V, op, "induction variable must be an i32 scalar, got %s", vfy_tstr(V, T(V, b->args[0])));
    for (int i = 0; i < n; i++) {
        const Type *init = T(V, op->args[3 + i]), *res = T(V, op->res[i]);
        if (!same_st(init, res))
            vfy_err(V, op, "carried value #%d: init is %s but result is %s", i, vfy_tstr(V, init), vfy_tstr(V, res));
        else if (valid_id(V, b->args[i + 1]) && !same_st(T(V, b->args[i + 1]), res))
            vfy_err(V, op, "carried value #%d: region argument is %s but result is %s", i,
                    vfy_tstr(V, T(V, b->args[i + 1])), vfy_tstr(V, res));
    }
    if (op->iattr[0] < 0)
        vfy_err(V, op, "pipeline stage count %lld is negative", (long long)op->iattr[0]);
    check_yield_of(V, op, 0);
}

static void check_if(Verifier *V, const Op *op)
{
    const Type *c = T(V, op->args[0]);
    if (!is_scalar(c) || c->dtype != DT_BOOL)
        vfy_err(V, op, "condition must be a bool scalar, got %s", vfy_tstr(V, c));
    for (int g = 0; g < 2; g++) {
        if (op->regions[g].nargs)
            vfy_err(V, op, "region %d must have no arguments, has %d", g, op->regions[g].nargs);
        check_yield_of(V, op, g);
    }
}

static void check_rule(Verifier *V, const Op *op)
{
    const OpInfo *oi = &op_info[op->code];
    if (oi->flags & OPF_ELEM) {
        if (op->code == OP_SELECT)
            check_select(V, op);
        else if (op->code == OP_CAST)
            check_cast(V, op);
        else
            check_elementwise(V, op);
        return;
    }
    switch (op->code) {
    case OP_CONST:
        if (T(V, op->res[0])->kind == TY_TENSOR || dtype_is_opaque((DType)T(V, op->res[0])->dtype))
            vfy_err(V, op, "result must be a scalar or a tile of a data type");
        return;
    case OP_BLOCKID: case OP_NBLOCKS:
        if (!is_i32(T(V, op->res[0])))
            vfy_err(V, op, "result must be i32, got %s", vfy_tstr(V, T(V, op->res[0])));
        if (op->iattr[0] < 0 || op->iattr[0] > 2)
            vfy_err(V, op, "axis %lld out of range 0..2", (long long)op->iattr[0]);
        return;
    case OP_SPLAT: check_splat(V, op); return;
    case OP_EXPAND: check_expand(V, op); return;
    case OP_BROADCAST: check_broadcast(V, op); return;
    case OP_IOTA: check_iota(V, op); return;
    case OP_REDUCE: check_reduce(V, op); return;
    case OP_TRANS: check_trans(V, op); return;
    case OP_SCAN: case OP_PHILOX: case OP_SLICE: case OP_CONCAT: case OP_RESHAPE: case OP_GATHER: case OP_SCATTER:
        vfy_tile_rule(V, op);
        return;
    case OP_DOT: check_dot(V, op); return;
    case OP_LOAD: check_load(V, op); return;
    case OP_STORE: case OP_ATOMIC_ADD: check_store(V, op); return;
    case OP_SMEM_ALLOC: check_smem_alloc(V, op); return;
    case OP_ASYNC_COPY: check_async_copy(V, op); return;
    case OP_SMEM_LOAD: check_smem_load(V, op); return;
    case OP_SMEM_STORE: check_smem_store(V, op); return;
    case OP_ASYNC_WAIT:
        if (op->iattr[0] < 0)
            vfy_err(V, op, "pending count %lld is negative", (long long)op->iattr[0]);
        return;
    case OP_FOR: check_for(V, op); return;
    case OP_IF: check_if(V, op); return;
    default: vfy_sched_rule(V, op); return;
    }
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
    if (op->code == OP_DIVISOR && kind != BK_GRID)
        vfy_err(V, op, "'divisor' may only be in the grid block (the runtime evaluates it at launch)");
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
        check_rule(V, op);
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
