/* sema_window.c - windows of tensor params: `X[i, a : +n, :]` as a LOAD
 * (read), STORE (assignment target) or ATOMIC_ADD (`atomic_add(X[...], v)`).
 *
 * A window has one index per tensor dim: a scalar (the dim is dropped),
 * `a : +n` (n a positive constant) or `:` (a static dim, whole). The op's
 * list holds the extent per tensor dim (0 = dropped) and iattr[0] sets the
 * mask bit of every kept dim; the bounds pass clears bits it proves safe.
 *
 * One index may instead be a 1-D integer tile (`X[idx, 0 : +D]`): that dim
 * is kept, with the tile's length as its extent, and element i is at
 * idx[i]. The window is then a GATHER (read) or SCATTER (write); an index
 * outside the tensor masks its element.
 */
#include "sema.h"

#include <string.h>

typedef struct Win {
    Sym *t;
    int rank;                          /* tensor rank */
    ValId offs[TENSOR_MAXRANK];
    int64_t ext[TENSOR_MAXRANK];
    unsigned mask;
    int gdim;                          /* the dim indexed by a tile (-1: none) */
    ValId gidx;                        /* that index tile (i32 or i64) */
    Type ty;                           /* tile of the kept extents, or a scalar */
} Win;

static bool win_full(Lower *l, const Expr *a, Win *w, int d)
{
    const Type *tt = &w->t->val.ty;
    if (tt->dimsym[d] >= 0) {
        const char *dn = l->f->dim_names[tt->dimsym[d]];
        diag_error(l->d, a->loc, "':' needs a static dim, but dim %d of '%s' is the named dim '%s'; "
                   "use a window 'start : +extent'", d, w->t->name, dn);
        diag_note(l->d, w->t->loc, "'%s' is declared here", w->t->name);
        return false;
    }
    l->b.loc = a->loc;
    w->offs[d] = ir_const_int(&l->b, type_scalar(DT_I32), 0);
    w->ext[d] = tt->shape[d];
    return true;
}

static bool win_scalar(Lower *l, const Expr *a, EVal v, ValId *off)
{
    if (v.kind == EV_ERR)
        return false;
    if (v.ty.kind != TY_SCALAR || !dtype_is_int((DType)v.ty.dtype)) {
        diag_error(l->d, a->loc, "window index must be an integer scalar, got %s", fe_tystr(l, &v.ty));
        return false;
    }
    v = fe_convert(l, v, DT_I32, a->loc);
    *off = fe_materialize(l, &v, a->loc);
    return true;
}

static bool win_index(Lower *l, const Expr *a, ValId *off)
{
    return win_scalar(l, a, fe_value(l, a), off);
}

/* A 1-D integer tile as the index of dim d: a gather / scatter. 32-bit and
 * narrower signed indices become i32, the others i64 (u32 values stay
 * exact; a u64 above 2^63 reads as negative, out of bounds either way). */
static TC_NOINLINE bool win_tile_index(Lower *l, const Expr *a, EVal v, Win *w, int d)
{
    DType dt = (DType)v.ty.dtype;
    if (v.ty.rank != 1 || !dtype_is_int(dt)) {
        diag_error(l->d, a->loc, "a tile index must be a 1-D integer tile, got %s", fe_tystr(l, &v.ty));
        return false;
    }
    if (w->gdim >= 0) {
        diag_error(l->d, a->loc, "a window may take one index tile; dim %d already has one", w->gdim);
        return false;
    }
    DType to = dtype_is_signed(dt) && dtype_bits(dt) <= 32 ? DT_I32 : DT_I64;
    if (to != dt)
        v = fe_convert(l, v, to, a->loc);
    w->gdim = d;
    w->gidx = fe_materialize(l, &v, a->loc);
    w->ext[d] = v.ty.shape[0];
    l->b.loc = a->loc;
    w->offs[d] = ir_const_int(&l->b, type_scalar(DT_I32), 0);
    return true;
}

static bool win_slice(Lower *l, const Expr *a, Win *w, int d)
{
    int64_t n;
    if (a->op != T_PLUS) {
        diag_error(l->d, a->b->loc, "window extents are written `start : +size`; `start : end` slices tile "
                   "values only");
        return false;
    }
    /* Check both halves, so that both errors are reported. */
    bool ok_start = win_index(l, a->a, &w->offs[d]);
    bool ok_size = fe_const_as_int(l, a->b, "tile shape", &n);
    if (!ok_start || !ok_size)
        return false;
    if (n <= 0) {
        diag_error(l->d, a->b->loc, "window extent must be positive, got %lld", (long long)n);
        return false;
    }
    w->ext[d] = n;
    return true;
}

/* An index expression: a scalar (the dim is dropped) or an index tile.
 * Out of line, as win_tile_index: a window inside an index recurses
 * through here, and window()'s frame stays small. */
static TC_NOINLINE bool win_expr(Lower *l, const Expr *a, Win *w, int d)
{
    EVal v = fe_value(l, a);
    if (v.kind != EV_ERR && v.ty.kind == TY_TILE)
        return win_tile_index(l, a, v, w, d);
    w->ext[d] = 0;
    return win_scalar(l, a, v, &w->offs[d]);
}

static bool win_dim(Lower *l, const Expr *a, Win *w, int d)
{
    switch (a->kind) {
    case E_FULL: return win_full(l, a, w, d);
    case E_SLICE: return win_slice(l, a, w, d);
    default: return win_expr(l, a, w, d);
    }
}

static bool window(Lower *l, const Expr *e, Sym *t, Win *w)
{
    memset(w, 0, sizeof *w);
    w->gdim = -1;
    w->t = t;
    w->rank = t->val.ty.rank;
    for (int i = 0; i < e->nargs; i++)
        if (e->args[i]->kind == E_NEWAXIS) {
            diag_error(l->d, e->args[i]->loc, "'*' only applies to tile values, not to a window of '%s'",
                       t->name);
            return false;
        }
    if (e->nargs != w->rank) {
        diag_error(l->d, e->loc, "wrong window rank: '%s' has %d dim%s, the window gives %d", t->name,
                   w->rank, w->rank == 1 ? "" : "s", e->nargs);
        diag_note(l->d, t->loc, "'%s' is declared here", t->name);
        return false;
    }
    bool ok = true;
    int64_t shape[TENSOR_MAXRANK];
    int kept = 0;
    for (int d = 0; d < w->rank; d++) {
        if (!win_dim(l, e->args[d], w, d)) {
            ok = false;
            continue;
        }
        if (w->ext[d]) {
            w->mask |= 1u << d;
            shape[kept++] = w->ext[d];
        }
    }
    if (ok && kept > TILE_MAXRANK) {
        diag_error(l->d, e->loc, "window keeps %d dims; tiles have at most %d", kept, TILE_MAXRANK);
        return false;
    }
    DType dt = (DType)t->val.ty.dtype;
    w->ty = kept ? type_tile(dt, kept, shape, SP_ANY) : type_scalar(dt);
    return ok;
}

static Op *emit_mem(Lower *l, OpCode code, const Win *w, const ValId *extra, int nextra, Loc loc)
{
    ValId args[TENSOR_MAXRANK + 4];
    int n = 0;
    bool indexed = w->gdim >= 0;
    if (indexed)
        code = code == OP_LOAD ? OP_GATHER : OP_SCATTER;
    args[n++] = w->t->val.v;
    for (int d = 0; d < w->rank; d++)
        args[n++] = w->offs[d];
    if (indexed)
        args[n++] = w->gidx;
    for (int i = 0; i < nextra; i++)
        args[n++] = extra[i];
    l->b.loc = loc;
    Op *op = ir_build(&l->b, code, args, n, &w->ty, code == OP_LOAD || code == OP_GATHER);
    op->list = arena_alloc(l->a, sizeof(int64_t) * (size_t)w->rank);
    memcpy(op->list, w->ext, sizeof(int64_t) * (size_t)w->rank);
    op->nlist = w->rank;
    op->iattr[0] = w->mask;
    op->iattr[1] = nextra && (code == OP_LOAD || code == OP_GATHER);
    op->iattr[2] = indexed ? w->gdim : 0;
    return op;
}

/* A load of the window `idx` (E_INDEX on a tensor); `other` may be NULL. */
EVal fe_window(Lower *l, const Expr *idx, const Expr *other)
{
    Sym *t = fe_expr(l, idx->a).sym;
    Win w;
    if (!t || !window(l, idx, t, &w))
        return (EVal){ 0 };
    ValId ov = 0;
    if (other) {
        EVal o = fe_value(l, other);
        if (o.kind == EV_ERR)
            return o;
        if (o.ty.kind != TY_SCALAR) {
            diag_error(l->d, other->loc, "'other' must be a scalar, got %s", fe_tystr(l, &o.ty));
            return (EVal){ 0 };
        }
        if (dtype_is_float((DType)o.ty.dtype) && !dtype_is_float((DType)w.ty.dtype)) {
            diag_error(l->d, other->loc, "'other' is %s but '%s' holds %s", dtype_name((DType)o.ty.dtype),
                       t->name, dtype_name((DType)w.ty.dtype));
            return (EVal){ 0 };
        }
        o = fe_convert(l, o, (DType)w.ty.dtype, other->loc);
        if (o.kind == EV_ERR)
            return o;
        ov = fe_materialize(l, &o, other->loc);
    }
    Op *op = emit_mem(l, OP_LOAD, &w, &ov, ov != 0, idx->loc);
    return fe_val(op->res[0], w.ty);
}

static bool store_matches(Lower *l, const Win *w, EVal *v, Loc loc)
{
    if (v->ty.kind == TY_SCALAR) {
        *v = fe_to_type(l, *v, &w->ty, loc);
        return v->kind != EV_ERR;
    }
    if (w->ty.kind != TY_TILE || !type_same_shape(&v->ty, &w->ty)) {
        diag_error(l->d, loc, "store shape mismatch: the window of '%s' is %s, the value is %s",
                   w->t->name, fe_tystr(l, &w->ty), fe_tystr(l, &v->ty));
        return false;
    }
    if (v->ty.dtype != w->ty.dtype) {
        diag_error(l->d, loc, "store dtype mismatch: '%s' holds %s, the value is %s; cast with %s(x)",
                   w->t->name, dtype_name((DType)w->ty.dtype), fe_tystr(l, &v->ty),
                   dtype_name((DType)w->ty.dtype));
        return false;
    }
    return true;
}

/* The tensor param whose window `target` is, or NULL (reported: `what`
 * names the access, "store into", "add to"). */
static Sym *written_tensor(Lower *l, const Expr *target, const char *what)
{
    EVal base = fe_expr(l, target->a);
    if (base.kind == EV_ERR)
        return NULL;
    if (base.kind != EV_TENSOR) {
        const char *n = target->a->kind == E_NAME ? target->a->name : "this expression";
        diag_error(l->d, target->a->loc, "cannot %s '%s': only tensor params can be written", what, n);
        return NULL;
    }
    return base.sym;
}

/* `target = val` where target is a window of a tensor param. */
void fe_store(Lower *l, const Expr *target, EVal val, Loc loc)
{
    Sym *t = written_tensor(l, target, "store into");
    Win w;
    if (!t || !window(l, target, t, &w) || val.kind == EV_ERR || !store_matches(l, &w, &val, loc))
        return;
    emit_mem(l, OP_STORE, &w, &val.v, 1, target->loc);
}

/* `atomic_add(X[window], value)`: the value (a tile of the window's shape,
 * or a scalar for every element) added to the window's elements of an f32,
 * i32 or u32 tensor param, atomically per element, as a store's window:
 * elements out of bounds are skipped. */
static void fe_atomic_add(Lower *l, const Expr *call)
{
    if (call->nargs != 2 || call->args[0]->kind == E_KWARG || call->args[1]->kind == E_KWARG) {
        diag_error(l->d, call->loc, "atomic_add takes 2 arguments, a tensor window and the value to add: "
                   "atomic_add(X[...], value)");
        return;
    }
    const Expr *target = call->args[0];
    if (target->kind != E_INDEX) {
        diag_error(l->d, target->loc, "the first argument of atomic_add is a window of a tensor param: X[...]");
        return;
    }
    Sym *t = written_tensor(l, target, "add to");
    if (!t)
        return;
    DType dt = (DType)t->val.ty.dtype;
    if (dt != DT_F32 && dt != DT_I32 && dt != DT_U32) {
        diag_error(l->d, target->loc, "atomic_add needs an f32, i32 or u32 tensor, but '%s' holds %s", t->name,
                   dtype_name(dt));
        diag_note(l->d, t->loc, "'%s' is declared here", t->name);
        return;
    }
    Win w;
    EVal val = fe_value(l, call->args[1]);
    if (!window(l, target, t, &w) || val.kind == EV_ERR || !store_matches(l, &w, &val, call->args[1]->loc))
        return;
    if (w.gdim >= 0) {
        diag_error(l->d, target->args[w.gdim]->loc, "atomic_add through an index tile is not supported; "
                   "add to a window `start : +size`");
        return;
    }
    emit_mem(l, OP_ATOMIC_ADD, &w, &val.v, 1, call->loc);
}

void fe_call_stmt(Lower *l, const Expr *call)
{
    if (strcmp(call->name, "atomic_add") == 0) {
        fe_atomic_add(l, call);
        return;
    }
    diag_error(l->d, call->loc, "a call as a statement must be atomic_add(...); '%s(...)' has a value that "
               "would be unused", call->name);
}
