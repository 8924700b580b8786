/* sema_expr.c - checking and lowering of expressions.
 *
 * Each expression yields an EVal: a folded constant (EV_CONST, materialized as
 * a CONST op only where an op needs it), an IR value (EV_VAL), or a tensor
 * param (EV_TENSOR, which only a window may use). Operands of elementwise ops
 * are made identical here: scalars are converted and splatted, size-1 dims
 * broadcast, so the IR ops see one type. Errors return EV_ERR, which later
 * checks pass through silently (one error per mistake).
 */
#include "sema.h"

#include <math.h>
#include <string.h>

EVal fe_val(ValId v, Type ty)
{
    EVal e = { .kind = EV_VAL, .ty = ty, .v = v };
    return e;
}

ValId fe_emit(Lower *l, Loc loc, OpCode code, const ValId *args, int n, Type ty)
{
    l->b.loc = loc;
    return ir_build1(&l->b, code, args, n, ty);
}

const char *fe_tystr(Lower *l, const Type *t)
{
    StrBuf sb = { 0 };
    type_print(l->f, t, &sb);
    char *s = arena_strdup(l->a, sb.buf ? sb.buf : "?");
    sb_free(&sb);
    return s;
}

static Type tile_like(const Type *shape, DType dt)
{
    return type_tile(dt, shape->rank, shape->shape, SP_ANY);
}

static bool is_tile(const EVal *v) { return v->ty.kind == TY_TILE; }

ValId fe_materialize(Lower *l, EVal *v, Loc loc)
{
    if (v->kind != EV_CONST)
        return v->v;
    DType dt = (DType)v->ty.dtype;
    l->b.loc = loc;
    if (dtype_is_float(dt)) {
        v->v = ir_const_float(&l->b, v->ty, v->f);
    } else {
        if (dt == DT_I32 && (v->i > INT32_MAX || v->i < INT32_MIN))
            diag_error(l->d, loc, "integer constant %lld does not fit in i32", (long long)v->i);
        v->v = ir_const_int(&l->b, v->ty, v->i);
    }
    v->kind = EV_VAL;
    return v->v;
}

/* Scalar or tile to another dtype (constants fold). */
EVal fe_convert(Lower *l, EVal v, DType to, Loc loc)
{
    if (v.kind == EV_ERR || v.ty.dtype == to)
        return v;
    if (v.kind == EV_CONST)
        return fe_const_convert(l, v, to, loc);
    Type t = v.ty;
    t.dtype = (uint8_t)to;
    t.space = SP_ANY;
    return fe_val(fe_emit(l, loc, OP_CAST, &v.v, 1, t), t);
}

/* A scalar to a tile of shape `shape` (its own dtype): CONST tile or SPLAT. */
static EVal splat(Lower *l, EVal v, const Type *shape, Loc loc)
{
    Type t = tile_like(shape, (DType)v.ty.dtype);
    l->b.loc = loc;
    if (v.kind == EV_CONST) {
        ValId c = dtype_is_float((DType)v.ty.dtype) ? ir_const_float(&l->b, t, v.f)
                                                    : ir_const_int(&l->b, t, v.i);
        return fe_val(c, t);
    }
    return fe_val(fe_emit(l, loc, OP_SPLAT, &v.v, 1, t), t);
}

static EVal broadcast(Lower *l, EVal v, const Type *shape, Loc loc)
{
    if (type_same_shape(&v.ty, shape))
        return v;
    Type t = tile_like(shape, (DType)v.ty.dtype);
    return fe_val(fe_emit(l, loc, OP_BROADCAST, &v.v, 1, t), t);
}

/* Convert v to exactly type `to` (scalar conversion, splat, space tag). The
 * caller has checked that kinds, shapes and tile dtypes agree. */
EVal fe_to_type(Lower *l, EVal v, const Type *to, Loc loc)
{
    if (v.kind == EV_ERR)
        return v;
    if (v.ty.kind == TY_SCALAR) {
        v = fe_convert(l, v, (DType)to->dtype, loc);
        if (to->kind == TY_TILE && v.kind != EV_ERR)
            v = splat(l, v, to, loc);
        else if (v.kind != EV_ERR)
            fe_materialize(l, &v, loc);
    }
    if (v.kind == EV_VAL && to->kind == TY_TILE && v.ty.space != to->space && v.ty.space == SP_ANY) {
        /* A declared placement tags the value that fills the variable. */
        ir_type(l->f, v.v)->space = to->space;
        v.ty.space = to->space;
    }
    return v;
}

static DType promote_scalar(DType a, DType b)
{
    if (a == b)
        return a;
    if (dtype_is_float(a) != dtype_is_float(b))
        return dtype_is_float(a) ? a : b;
    return dtype_bits(a) >= dtype_bits(b) ? a : b;
}

/* Make the dtypes of two operands agree (scalars convert; tiles must match). */
static bool dtype_unify(Lower *l, EVal *a, EVal *b, Loc loc)
{
    DType da = (DType)a->ty.dtype, db = (DType)b->ty.dtype;
    if (da == db)
        return true;
    if (is_tile(a) && is_tile(b)) {
        DType wide = dtype_bits(da) >= dtype_bits(db) ? da : db;
        diag_error(l->d, loc, "dtype mismatch: %s vs %s; cast with %s(x)", dtype_name(da),
                   dtype_name(db), dtype_name(wide));
        return false;
    }
    if ((da == DT_BOOL) != (db == DT_BOOL)) {
        diag_error(l->d, loc, "cannot combine %s with %s", fe_tystr(l, &a->ty), fe_tystr(l, &b->ty));
        return false;
    }
    if (!is_tile(a) && !is_tile(b)) {
        DType to = promote_scalar(da, db);
        *a = fe_convert(l, *a, to, loc);
        *b = fe_convert(l, *b, to, loc);
        return a->kind != EV_ERR && b->kind != EV_ERR;
    }
    EVal *t = is_tile(a) ? a : b, *s = is_tile(a) ? b : a;
    if (!dtype_is_float((DType)t->ty.dtype) && dtype_is_float((DType)s->ty.dtype)) {
        diag_error(l->d, loc, "cannot combine a float scalar (%s) with the integer tile %s; cast "
                   "the tile with f32(x)", dtype_name((DType)s->ty.dtype), fe_tystr(l, &t->ty));
        return false;
    }
    *s = fe_convert(l, *s, (DType)t->ty.dtype, loc);
    return s->kind != EV_ERR;
}

/* The broadcast shape of two tiles of one rank: each dim equal or 1. */
static bool common_shape(Lower *l, const Type *a, const Type *b, Loc loc, Type *out)
{
    if (a->rank != b->rank) {
        diag_error(l->d, loc, "bad broadcast: %s and %s differ in rank", fe_tystr(l, a), fe_tystr(l, b));
        diag_note(l->d, loc, "give the lower-rank tile a size-1 dim first, e.g. v[:, *] or v[*, :]");
        return false;
    }
    *out = *a;
    for (int i = 0; i < a->rank; i++) {
        int64_t x = a->shape[i], y = b->shape[i];
        if (x != y && x != 1 && y != 1) {
            diag_error(l->d, loc, "shape mismatch: %s vs %s (dim %d: %lld vs %lld)", fe_tystr(l, a),
                       fe_tystr(l, b), i, (long long)x, (long long)y);
            return false;
        }
        out->shape[i] = x > y ? x : y;
    }
    return true;
}

/* Make the shapes of two operands agree (dtypes untouched). */
static bool shape_unify(Lower *l, EVal *a, EVal *b, Loc loc)
{
    if (!is_tile(a) && !is_tile(b))
        return true;
    if (!is_tile(a) || !is_tile(b)) {
        EVal *t = is_tile(a) ? a : b, *s = is_tile(a) ? b : a;
        *s = splat(l, *s, &t->ty, loc);
        return true;
    }
    Type sh;
    if (!common_shape(l, &a->ty, &b->ty, loc, &sh))
        return false;
    *a = broadcast(l, *a, &sh, loc);
    *b = broadcast(l, *b, &sh, loc);
    return true;
}

bool fe_unify(Lower *l, EVal *a, EVal *b, const Expr *ea, const Expr *eb, Loc loc)
{
    (void)ea, (void)eb;
    if (a->kind == EV_ERR || b->kind == EV_ERR)
        return false;
    return dtype_unify(l, a, b, loc) && shape_unify(l, a, b, loc);
}

/* Unify the shape of a third operand (a `where` condition) with a result. */
bool fe_shape_unify(Lower *l, EVal *a, EVal *b, Loc loc) { return shape_unify(l, a, b, loc); }

/* ---- operators ---- */

static EVal lower_dot(Lower *l, EVal a, EVal b, const Expr *e)
{
    const Expr *bad = !is_tile(&a) || a.ty.rank != 2 ? e->a : !is_tile(&b) || b.ty.rank != 2 ? e->b : NULL;
    if (bad) {
        const Type *t = bad == e->a ? &a.ty : &b.ty;
        diag_error(l->d, bad->loc, "'@' needs 2-D tiles, got %s", fe_tystr(l, t));
        return (EVal){ 0 };
    }
    DType da = (DType)a.ty.dtype, db = (DType)b.ty.dtype;
    if (da != db) {
        diag_error(l->d, e->loc, "'@' operands differ in dtype: %s vs %s; cast one side, e.g. %s(x)",
                   dtype_name(da), dtype_name(db), dtype_name(dtype_is_float(da) ? da : db));
        return (EVal){ 0 };
    }
    if (!dtype_is_float(da) && da != DT_I8) {
        diag_error(l->d, e->loc, "'@' supports float tiles and i8, not %s", dtype_name(da));
        return (EVal){ 0 };
    }
    if (a.ty.shape[1] != b.ty.shape[0]) {
        diag_error(l->d, e->loc, "shape mismatch in '@': inner dims differ (%s @ %s: %lld vs %lld)",
                   fe_tystr(l, &a.ty), fe_tystr(l, &b.ty), (long long)a.ty.shape[1],
                   (long long)b.ty.shape[0]);
        return (EVal){ 0 };
    }
    int64_t shape[2] = { a.ty.shape[0], b.ty.shape[1] };
    Type rt = type_tile(da == DT_I8 ? DT_I32 : DT_F32, 2, shape, SP_ANY);
    l->b.loc = e->loc;
    ValId acc = da == DT_I8 ? ir_const_int(&l->b, rt, 0) : ir_const_float(&l->b, rt, 0.0);
    ValId args[3] = { a.v, b.v, acc };
    return fe_val(fe_emit(l, e->loc, OP_DOT, args, 3, rt), rt);
}

OpCode fe_binary_op(int op)
{
    switch (op) {
    case T_PLUS: return OP_ADD;
    case T_MINUS: return OP_SUB;
    case T_STAR: return OP_MUL;
    case T_SLASH: return OP_DIV;
    case T_PERCENT: return OP_REM;
    case T_ANDAND: case T_AMP: return OP_AND;
    case T_OROR: case T_PIPE: return OP_OR;
    case T_CARET: return OP_XOR;
    case T_SHL: return OP_SHL;
    case T_SHR: return OP_SHR;
    default: return OP_CMP;
    }
}

static CmpPred cmp_pred(int op)
{
    static const CmpPred preds[] = { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE };
    return preds[op - T_EQ];
}

static bool check_operand_kinds(Lower *l, int op, const EVal *a, const EVal *b, Loc loc)
{
    bool logic = op == T_ANDAND || op == T_OROR;
    bool cmp = op >= T_EQ && op <= T_GE;
    bool bits = op == T_AMP || op == T_PIPE || op == T_CARET, shift = op == T_SHL || op == T_SHR;
    for (int i = 0; i < 2; i++) {
        const EVal *v = i ? b : a;
        bool isbool = v->ty.dtype == DT_BOOL;
        if ((bits || shift) && !dtype_is_int((DType)v->ty.dtype) && !(bits && isbool)) {
            diag_error(l->d, loc, "'%s' needs integer%s operands, got %s", tok_names[op], bits ? " or bool" : "",
                       fe_tystr(l, &v->ty));
            return false;
        }
        if (bits || shift)
            continue;
        if (logic && !isbool) {
            diag_error(l->d, loc, "'%s' needs bool operands, got %s", tok_names[op], fe_tystr(l, &v->ty));
            return false;
        }
        if (!logic && isbool && !(cmp && (op == T_EQ || op == T_NE))) {
            diag_error(l->d, loc, "'%s' does not apply to %s; use && || ! on bools", tok_names[op],
                       fe_tystr(l, &v->ty));
            return false;
        }
    }
    return true;
}

EVal fe_binary(Lower *l, int op, EVal a, EVal b, const Expr *e)
{
    if (a.kind == EV_ERR || b.kind == EV_ERR)
        return (EVal){ 0 };
    if (op == T_AT)
        return lower_dot(l, a, b, e);
    if (!check_operand_kinds(l, op, &a, &b, e->loc) || !fe_unify(l, &a, &b, e->a, e->b, e->loc))
        return (EVal){ 0 };
    EVal r;
    if (a.kind == EV_CONST && b.kind == EV_CONST && fe_fold_binary(l, op, a, b, e->loc, &r))
        return r;
    if ((op == T_SLASH || op == T_PERCENT) && b.kind == EV_CONST && !dtype_is_float((DType)b.ty.dtype) &&
        b.i == 0) {
        diag_error(l->d, e->loc, "integer division by zero");
        return (EVal){ 0 };
    }
    ValId args[2] = { fe_materialize(l, &a, e->loc), fe_materialize(l, &b, e->loc) };
    if (op == T_PLUS) {   /* x + a @ b: one product accumulating into x */
        for (int side = 0; side < 2; side++) {
            const Expr *pe = side ? e->b : e->a;
            Op *d = pe && pe->kind == E_BINARY && pe->op == T_AT ? ir_val(l->f, args[side])->def : NULL;
            const Type *tx = ir_type(l->f, args[1 - side]), *td = d ? ir_type(l->f, d->res[0]) : NULL;
            if (d && d->code == OP_DOT && type_same_shape(tx, td) && tx->dtype == td->dtype) {
                ValId dargs[3] = { d->args[0], d->args[1], args[1 - side] };
                Type t = *ir_type(l->f, d->res[0]);
                return fe_val(fe_emit(l, d->loc, OP_DOT, dargs, 3, t), t);
            }
        }
    }
    OpCode code = fe_binary_op(op);
    Type t = a.ty;
    t.space = SP_ANY;
    if (code == OP_CMP)
        t.dtype = DT_BOOL;
    ValId v = fe_emit(l, e->loc, code, args, 2, t);
    if (code == OP_CMP)
        ir_val(l->f, v)->def->iattr[0] = cmp_pred(op);
    return fe_val(v, t);
}

static EVal lower_unary(Lower *l, const Expr *e)
{
    EVal a = fe_value(l, e->a);
    if (a.kind == EV_ERR)
        return a;
    bool isbool = a.ty.dtype == DT_BOOL;
    if (e->op == T_TILDE ? !dtype_is_int((DType)a.ty.dtype) : (e->op == T_BANG) != isbool) {
        diag_error(l->d, e->loc, e->op == T_BANG ? "'!' needs a bool operand, got %s"
                                 : e->op == T_TILDE ? "'~' needs an integer operand, got %s (for bool use !)"
                                                    : "'-' does not apply to %s", fe_tystr(l, &a.ty));
        return (EVal){ 0 };
    }
    if (a.kind == EV_CONST) {
        if (isbool)
            return fe_const_int(!a.i, DT_BOOL);
        if (e->op == T_TILDE)
            return fe_const_int(~a.i, (DType)a.ty.dtype);
        if (!dtype_is_float((DType)a.ty.dtype) && a.i == INT64_MIN) {
            diag_error(l->d, e->loc, "integer overflow in a constant expression");
            return (EVal){ 0 };
        }
        return dtype_is_float((DType)a.ty.dtype) ? fe_const_float(-a.f, (DType)a.ty.dtype)
                                                 : fe_const_int(-a.i, (DType)a.ty.dtype);
    }
    Type t = a.ty;
    t.space = SP_ANY;
    return fe_val(fe_emit(l, e->loc, isbool || e->op == T_TILDE ? OP_NOT : OP_NEG, &a.v, 1, t), t);
}

/* Lower e into a block that is dropped: for constants and dead branches. */
EVal fe_scratch_expr(Lower *l, const Expr *e)
{
    Builder saved = l->b;
    Block *scratch = arena_alloc(l->a, sizeof *scratch);
    l->b = ir_builder_at_end(l->f, scratch);
    EVal v = fe_expr(l, e);
    l->b = saved;
    if (v.kind == EV_VAL)
        v.v = 0;   /* defined in the dropped block: only the type is usable */
    return v;
}

static bool check_cond(Lower *l, const EVal *c, const Expr *e, const char *what)
{
    if (c->kind == EV_ERR)
        return false;
    if (c->ty.kind == TY_SCALAR && c->ty.dtype == DT_BOOL)
        return true;
    diag_error(l->d, e->loc, "%s must be a bool scalar, got %s", what, fe_tystr(l, &c->ty));
    if (c->ty.kind == TY_TILE)
        diag_note(l->d, e->loc, "for an elementwise choice use where(cond, a, b)");
    else
        diag_note(l->d, e->loc, "compare it, e.g. x != 0");
    return false;
}

static EVal lower_ternary(Lower *l, const Expr *e)
{
    EVal c = fe_value(l, e->a);
    if (!check_cond(l, &c, e->a, "the condition of '?:'"))
        return (EVal){ 0 };
    if (c.kind == EV_CONST) {
        const Expr *taken = c.i ? e->b : e->c, *dead = c.i ? e->c : e->b;
        fe_scratch_expr(l, dead);   /* still checked */
        return fe_value(l, taken);
    }
    EVal a = fe_value(l, e->b), b = fe_value(l, e->c);
    if (!fe_unify(l, &a, &b, e->b, e->c, e->loc))
        return (EVal){ 0 };
    if (is_tile(&a))
        c = splat(l, c, &a.ty, e->loc);
    Type t = a.ty;
    t.space = SP_ANY;
    ValId args[3] = { c.v, fe_materialize(l, &a, e->loc), fe_materialize(l, &b, e->loc) };
    return fe_val(fe_emit(l, e->loc, OP_SELECT, args, 3, t), t);
}

/* ---- names, members, tile indexing ---- */

static EVal lower_name(Lower *l, const Expr *e)
{
    Sym *s = fe_scope_lookup(l, e->name);
    if (!s) {
        diag_error(l->d, e->loc, "unknown name '%s'", e->name);
        fe_suggest(l, e->loc, e->name, false);
        return (EVal){ 0 };
    }
    if (l->in_grid && s->kind != SYM_CONST && s->kind != SYM_DIM) {
        diag_error(l->d, e->loc, "'%s' cannot be used in the grid: it may use named dims and "
                   "compile-time params only", e->name);
        return (EVal){ 0 };
    }
    s->used = true;
    if (s->bad)
        return (EVal){ 0 };
    if (s->kind != SYM_CONST) {
        EVal v = s->val;
        if (s->kind == SYM_TENSOR)
            v.sym = s;
        return v;
    }
    const char *cls = s->cls;
    if (strcmp(cls, "int") == 0)
        return fe_const_int(s->cb->ival, DT_I32);
    if (strcmp(cls, "bool") == 0)
        return fe_const_int(s->cb->ival, DT_BOOL);
    if (strcmp(cls, "float") == 0)
        return fe_const_float(s->cb->fval, DT_F32);
    diag_error(l->d, e->loc, "dtype param '%s' is not a value; use it as a cast, %s(x), or in a type",
               e->name, e->name);
    return (EVal){ 0 };
}

static EVal lower_member(Lower *l, const Expr *e)
{
    const char *base = e->a && e->a->kind == E_NAME ? e->a->name : NULL;
    bool isblock = base && strcmp(base, "block") == 0;
    if (!base || (!isblock && strcmp(base, "num_blocks") != 0) || fe_scope_lookup(l, base)) {
        diag_error(l->d, e->loc, "'.%s': only block and num_blocks have members", e->name);
        return (EVal){ 0 };
    }
    const char *f = e->name;
    if (strlen(f) != 1 || f[0] < 'x' || f[0] > 'z') {
        diag_error(l->d, e->loc, "'%s' has no member '%s'; use %s.x, %s.y or %s.z", base, f, base,
                   base, base);
        return (EVal){ 0 };
    }
    if (l->in_grid) {
        diag_error(l->d, e->loc, "'%s.%s' is not known when the grid is computed", base, f);
        return (EVal){ 0 };
    }
    Type t = type_scalar(DT_I32);
    ValId v = fe_emit(l, e->loc, isblock ? OP_BLOCKID : OP_NBLOCKS, NULL, 0, t);
    ir_val(l->f, v)->def->iattr[0] = f[0] - 'x';
    return fe_val(v, t);
}

/* One index element of a tile value along dim d (extent n): `:` (all),
 * `a : +k` or `a : b` (constant bounds), or a constant index i (that dim
 * is dropped). *start, *size; *drop for an index. */
static bool tile_index_dim(Lower *l, const Expr *a, const EVal *v, int d, int64_t *start, int64_t *size,
                           bool *drop)
{
    int64_t n = v->ty.shape[d];
    *drop = false;
    if (a->kind == E_FULL) {
        *start = 0;
        *size = n;
        return true;
    }
    if (a->kind != E_SLICE) {
        if (!fe_const_as_int(l, a, "tile index", start))
            return false;
        if (*start < 0 || *start >= n) {
            diag_error(l->d, a->loc, "index %lld is out of range for dim %d of %s (0..%lld)", (long long)*start,
                       d, fe_tystr(l, &v->ty), (long long)n - 1);
            return false;
        }
        *size = 1;
        *drop = true;
        return true;
    }
    int64_t b;
    bool ok_a = fe_const_as_int(l, a->a, "slice start", start);
    bool ok_b = fe_const_as_int(l, a->b, a->op == T_PLUS ? "slice size" : "slice end", &b);
    if (!ok_a || !ok_b)
        return false;
    if (a->op != T_PLUS && __builtin_sub_overflow(b, *start, &b)) {
        diag_error(l->d, a->loc, "slice bounds overflow");
        return false;
    }
    *size = b;
    if (*size <= 0) {
        if (a->op == T_PLUS)
            diag_error(l->d, a->b->loc, "slice size must be positive, got %lld", (long long)*size);
        else
            diag_error(l->d, a->loc, "slice %lld : %lld of dim %d is empty: the end must be past the start",
                       (long long)*start, (long long)(*start + *size), d);
        return false;
    }
    if (*start < 0 || *start > n - *size) {
        if (a->op == T_PLUS)
            diag_error(l->d, a->loc, "slice %lld : +%lld of dim %d is outside %s (dim %d has %lld elements)",
                       (long long)*start, (long long)*size, d, fe_tystr(l, &v->ty), d, (long long)n);
        else
            diag_error(l->d, a->loc, "slice %lld : %lld of dim %d is outside %s (dim %d has %lld elements)",
                       (long long)*start, (long long)(*start + *size), d, fe_tystr(l, &v->ty), d, (long long)n);
        return false;
    }
    return true;
}

/* `v[...]` on a tile value: per dim of v one of `:`, `a : +k`, `a : b` or a
 * constant index (dropping that dim), and `*` anywhere to insert a size-1
 * dim. Lowers to SLICE (when a range is narrower than its dim), RESHAPE
 * (when an index drops dims) and EXPAND (per `*`). Out of line: its arrays
 * would grow fe_expr's frame, one per nesting level. */
static TC_NOINLINE EVal tile_index(Lower *l, EVal v, const Expr *e)
{
    int ndim = 0;
    for (int i = 0; i < e->nargs; i++)
        ndim += e->args[i]->kind != E_NEWAXIS;
    if (ndim != v.ty.rank) {
        diag_error(l->d, e->loc, "tile index needs one ':', range or index per dim of %s, got %d",
                   fe_tystr(l, &v.ty), ndim);
        return (EVal){ 0 };
    }
    int64_t start[TILE_MAXRANK], size[TILE_MAXRANK], kept[TILE_MAXRANK];
    bool narrow = false, ok = true;
    int nkept = 0, nnew = 0;
    for (int i = 0, d = 0; i < e->nargs; i++) {
        if (e->args[i]->kind == E_NEWAXIS) {
            nnew++;
            continue;
        }
        bool drop;
        if (!tile_index_dim(l, e->args[i], &v, d, &start[d], &size[d], &drop)) {
            ok = false;
            d++;
            continue;
        }
        narrow = narrow || start[d] != 0 || size[d] != v.ty.shape[d];
        if (!drop)
            kept[nkept++] = size[d];
        d++;
    }
    if (!ok)
        return (EVal){ 0 };
    if (nkept == 0) {
        diag_error(l->d, e->loc, "this index keeps no dim of %s; keep one with a range (`i : +1`)",
                   fe_tystr(l, &v.ty));
        return (EVal){ 0 };
    }
    if (nkept + nnew > TILE_MAXRANK) {
        diag_error(l->d, e->loc, "tile index gives %d dims; tiles have at most %d", nkept + nnew, TILE_MAXRANK);
        return (EVal){ 0 };
    }
    if (narrow) {
        Type t = type_tile((DType)v.ty.dtype, v.ty.rank, size, SP_ANY);
        ValId r = fe_emit(l, e->loc, OP_SLICE, &v.v, 1, t);
        Op *op = ir_val(l->f, r)->def;
        op->list = arena_alloc(l->a, sizeof(int64_t) * (size_t)v.ty.rank);
        memcpy(op->list, start, sizeof(int64_t) * (size_t)v.ty.rank);
        op->nlist = v.ty.rank;
        v = fe_val(r, t);
    }
    if (nkept != v.ty.rank) {
        Type t = type_tile((DType)v.ty.dtype, nkept, kept, SP_ANY);
        v = fe_val(fe_emit(l, e->loc, OP_RESHAPE, &v.v, 1, t), t);
    }
    for (int i = 0, pos = 0; i < e->nargs; i++) {
        int k = e->args[i]->kind;
        if (k != E_NEWAXIS) {
            pos += k == E_FULL || k == E_SLICE;
            continue;
        }
        Type t = v.ty;
        memmove(&t.shape[pos + 1], &t.shape[pos], sizeof(int64_t) * (size_t)(t.rank - pos));
        t.shape[pos] = 1;
        t.rank++;
        t.space = SP_ANY;
        ValId r = fe_emit(l, e->args[i]->loc, OP_EXPAND, &v.v, 1, t);
        ir_val(l->f, r)->def->iattr[0] = pos;
        v = fe_val(r, t);
        pos++;
    }
    return v;
}

static EVal lower_index(Lower *l, const Expr *e)
{
    EVal base = fe_expr(l, e->a);
    if (base.kind == EV_ERR)
        return base;
    if (base.kind == EV_TENSOR)
        return fe_window(l, e, NULL);
    if (!is_tile(&base)) {
        diag_error(l->d, e->loc, "cannot index a scalar of type %s", fe_tystr(l, &base.ty));
        return (EVal){ 0 };
    }
    return tile_index(l, base, e);
}

static EVal lower_transpose(Lower *l, const Expr *e)
{
    EVal v = fe_value(l, e->a);
    if (v.kind == EV_ERR)
        return v;
    if (!is_tile(&v) || v.ty.rank != 2) {
        diag_error(l->d, e->loc, "'^T' needs a 2-D tile, got %s", fe_tystr(l, &v.ty));
        return (EVal){ 0 };
    }
    return fe_transpose(l, v, e->loc);
}

EVal fe_transpose(Lower *l, EVal v, Loc loc)
{
    int64_t shape[2] = { v.ty.shape[1], v.ty.shape[0] };
    Type t = type_tile((DType)v.ty.dtype, 2, shape, SP_ANY);
    return fe_val(fe_emit(l, loc, OP_TRANS, &v.v, 1, t), t);
}

EVal fe_expr(Lower *l, const Expr *e)
{
    switch (e->kind) {
    case E_INT: return fe_const_int(e->ival, DT_I32);
    case E_FLOAT: return fe_const_float(e->fval, DT_F32);
    case E_BOOL: return fe_const_int(e->bval, DT_BOOL);
    case E_INF: return fe_const_float(INFINITY, DT_F32);
    case E_NAME: return lower_name(l, e);
    case E_UNARY: return lower_unary(l, e);
    case E_BINARY: {
        EVal a = fe_value(l, e->a), b = fe_value(l, e->b);
        return fe_binary(l, e->op, a, b, e);
    }
    case E_TERNARY: return lower_ternary(l, e);
    case E_CALL: return fe_call(l, e);
    case E_INDEX: return lower_index(l, e);
    case E_MEMBER: return lower_member(l, e);
    case E_TRANSPOSE: return lower_transpose(l, e);
    case E_SLICE: case E_FULL: case E_NEWAXIS:
        diag_error(l->d, e->loc, "'%s' is only valid inside [ ]",
                   e->kind == E_SLICE ? "a : +n" : e->kind == E_FULL ? ":" : "*");
        return (EVal){ 0 };
    case E_LIST:
        diag_error(l->d, e->loc, "a list [...] is only valid as the shape of reshape(x, [...])");
        return (EVal){ 0 };
    default:
        diag_error(l->d, e->loc, "'%s = ...' is only valid as a call argument", e->name);
        return (EVal){ 0 };
    }
}

EVal fe_value(Lower *l, const Expr *e)
{
    EVal v = fe_expr(l, e);
    if (v.kind == EV_TENSOR) {
        diag_error(l->d, e->loc, "tensor '%s' used as a value; take a window, e.g. %s[i : +n, ...]",
                   v.sym->name, v.sym->name);
        return (EVal){ 0 };
    }
    return v;
}
