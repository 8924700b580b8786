/* sema_call.c - builtin calls: casts by dtype name, elementwise math,
 * pow, max/min/where, reductions, scans, random numbers (rand, randint),
 * index tiles (iota, rows, cols), the shape ops (concat, reshape,
 * transpose), cdiv, divisor and load.
 *
 * Every builtin checks its argument count and kinds, then lowers to the ops
 * of ir/ops.h; casts and cdiv of constants fold.
 */
#include "sema.h"
#include "../ir/divisor.h"
#include "../lib/tc_limits.h"

#include <stdio.h>
#include <string.h>

typedef enum { B_MATH, B_POW, B_MINMAX, B_WHERE, B_ROWRED, B_COLRED, B_REDUCE, B_CUM, B_SCAN, B_RAND,
               B_IOTA, B_ROWS, B_COLS, B_CDIV, B_DIVISOR, B_NUMSMS, B_LOAD, B_CONCAT, B_RESHAPE, B_TRANSPOSE } BKind;

typedef struct Builtin {
    const char *name;
    uint8_t kind;      /* BKind */
    uint8_t nargs;     /* B_LOAD: 1 or 2; B_SCAN: 3 or 4 */
    uint16_t op;       /* OpCode, ReduceKind for reductions and scans, 1 for randint */
} Builtin;

static const Builtin builtin_tab[] = {
    { "exp", B_MATH, 1, OP_EXP }, { "exp2", B_MATH, 1, OP_EXP2 }, { "log", B_MATH, 1, OP_LOG },
    { "log2", B_MATH, 1, OP_LOG2 }, { "sqrt", B_MATH, 1, OP_SQRT }, { "rsqrt", B_MATH, 1, OP_RSQRT },
    { "abs", B_MATH, 1, OP_ABS }, { "tanh", B_MATH, 1, OP_TANH },
    { "max", B_MINMAX, 2, OP_MAX }, { "min", B_MINMAX, 2, OP_MIN }, { "where", B_WHERE, 3, OP_SELECT },
    { "rowmax", B_ROWRED, 1, RED_MAX }, { "rowsum", B_ROWRED, 1, RED_SUM },
    { "rowmin", B_ROWRED, 1, RED_MIN }, { "colmax", B_COLRED, 1, RED_MAX },
    { "colsum", B_COLRED, 1, RED_SUM }, { "colmin", B_COLRED, 1, RED_MIN },
    { "reduce", B_REDUCE, 3, 0 }, { "iota", B_IOTA, 1, OP_IOTA }, { "rows", B_ROWS, 1, OP_IOTA },
    { "cols", B_COLS, 1, OP_IOTA }, { "cdiv", B_CDIV, 2, 0 }, { "divisor", B_DIVISOR, 2, OP_DIVISOR },
    { "num_sms", B_NUMSMS, 0, OP_NUMSMS },
    { "load", B_LOAD, 2, OP_LOAD }, { "erf", B_MATH, 1, OP_ERF }, { "sigmoid", B_MATH, 1, OP_SIGMOID },
    { "sin", B_MATH, 1, OP_SIN }, { "cos", B_MATH, 1, OP_COS }, { "floor", B_MATH, 1, OP_FLOOR },
    { "ceil", B_MATH, 1, OP_CEIL }, { "round", B_MATH, 1, OP_ROUND }, { "pow", B_POW, 2, OP_POW },
    { "cumsum", B_CUM, 2, RED_SUM }, { "cummax", B_CUM, 2, RED_MAX }, { "cummin", B_CUM, 2, RED_MIN },
    { "cumprod", B_CUM, 2, RED_PROD }, { "scan", B_SCAN, 3, 0 }, { "rand", B_RAND, 2, 0 },
    { "randint", B_RAND, 2, 1 }, { "concat", B_CONCAT, 3, OP_CONCAT }, { "reshape", B_RESHAPE, 2, OP_RESHAPE },
    { "transpose", B_TRANSPOSE, 1, OP_TRANS },
};

static const Builtin *find_builtin(const char *name)
{
    for (size_t i = 0; i < TC_COUNTOF(builtin_tab); i++)
        if (strcmp(builtin_tab[i].name, name) == 0)
            return &builtin_tab[i];
    return NULL;
}

const char *fe_builtin_name(size_t i)
{
    return i < TC_COUNTOF(builtin_tab) ? builtin_tab[i].name : NULL;
}

static EVal err(void) { return (EVal){ 0 }; }

static EVal lower_cast(Lower *l, const Expr *e, DType to)
{
    if (e->nargs != 1) {
        diag_error(l->d, e->loc, "cast '%s' takes 1 argument, got %d", e->name, e->nargs);
        return err();
    }
    EVal v = fe_value(l, e->args[0]);
    if (v.kind == EV_ERR || v.ty.dtype == to)
        return v;
    if (v.kind == EV_CONST && v.ty.dtype != DT_BOOL && to != DT_BOOL)
        return fe_const_convert(l, v, to, e->loc);
    fe_materialize(l, &v, e->loc);
    Type t = v.ty;
    t.dtype = (uint8_t)to;
    t.space = SP_ANY;
    return fe_val(fe_emit(l, e->loc, OP_CAST, &v.v, 1, t), t);
}

static EVal lower_math(Lower *l, const Expr *e, OpCode op)
{
    EVal v = fe_value(l, e->args[0]);
    if (v.kind == EV_ERR)
        return v;
    DType dt = (DType)v.ty.dtype;
    bool ok = op == OP_ABS ? dt != DT_BOOL : dtype_is_float(dt);
    if (!ok && v.ty.kind == TY_SCALAR && dtype_is_int(dt)) {
        v = fe_convert(l, v, DT_F32, e->loc);
    } else if (!ok) {
        diag_error(l->d, e->args[0]->loc, "'%s' needs a float operand, got %s; cast with f32(x)",
                   e->name, fe_tystr(l, &v.ty));
        return err();
    }
    fe_materialize(l, &v, e->loc);
    Type t = v.ty;
    t.space = SP_ANY;
    return fe_val(fe_emit(l, e->loc, op, &v.v, 1, t), t);
}

/* pow(a, b): float operands unified like a + b; an integer scalar is
 * converted to f32 first, as for the one-argument math builtins. */
static EVal lower_pow(Lower *l, const Expr *e)
{
    EVal v[2];
    for (int i = 0; i < 2; i++) {
        v[i] = fe_value(l, e->args[i]);
        if (v[i].kind != EV_ERR && v[i].ty.kind == TY_SCALAR && dtype_is_int((DType)v[i].ty.dtype))
            v[i] = fe_convert(l, v[i], DT_F32, e->loc);
    }
    for (int i = 0; i < 2; i++)
        if (v[i].kind != EV_ERR && !dtype_is_float((DType)v[i].ty.dtype)) {
            diag_error(l->d, e->args[i]->loc, "'pow' needs float operands, got %s; cast with f32(x)",
                       fe_tystr(l, &v[i].ty));
            return err();
        }
    if (!fe_unify(l, &v[0], &v[1], e->args[0], e->args[1], e->loc))
        return err();
    ValId args[2] = { fe_materialize(l, &v[0], e->loc), fe_materialize(l, &v[1], e->loc) };
    Type t = v[0].ty;
    t.space = SP_ANY;
    return fe_val(fe_emit(l, e->loc, OP_POW, args, 2, t), t);
}

static EVal lower_minmax(Lower *l, const Expr *e, OpCode op)
{
    EVal a = fe_value(l, e->args[0]), b = fe_value(l, e->args[1]);
    if (!fe_unify(l, &a, &b, e->args[0], e->args[1], e->loc))
        return err();
    if (a.ty.dtype == DT_BOOL) {
        diag_error(l->d, e->loc, "'%s' does not apply to bool", e->name);
        return err();
    }
    if (a.kind == EV_CONST && b.kind == EV_CONST) {
        bool amax = dtype_is_float((DType)a.ty.dtype) ? a.f > b.f : a.i > b.i;
        return (op == OP_MAX) == amax ? a : b;
    }
    ValId args[2] = { fe_materialize(l, &a, e->loc), fe_materialize(l, &b, e->loc) };
    Type t = a.ty;
    t.space = SP_ANY;
    return fe_val(fe_emit(l, e->loc, op, args, 2, t), t);
}

static EVal lower_where(Lower *l, const Expr *e)
{
    EVal c = fe_value(l, e->args[0]), a = fe_value(l, e->args[1]), b = fe_value(l, e->args[2]);
    if (c.kind == EV_ERR || a.kind == EV_ERR || b.kind == EV_ERR)
        return err();
    if (c.ty.dtype != DT_BOOL) {
        diag_error(l->d, e->args[0]->loc, "the condition of where() must be bool, got %s",
                   fe_tystr(l, &c.ty));
        return err();
    }
    if (!fe_unify(l, &a, &b, e->args[1], e->args[2], e->loc))
        return err();
    if (c.kind == EV_CONST)
        return c.i ? a : b;
    if (!fe_shape_unify(l, &c, &a, e->loc) || !fe_shape_unify(l, &c, &b, e->loc))
        return err();
    ValId args[3] = { fe_materialize(l, &c, e->loc), fe_materialize(l, &a, e->loc),
                      fe_materialize(l, &b, e->loc) };
    Type t = a.ty;
    t.space = SP_ANY;
    return fe_val(fe_emit(l, e->loc, OP_SELECT, args, 3, t), t);
}

static EVal emit_reduce(Lower *l, const Expr *e, EVal v, int axis, ReduceKind k)
{
    Type t = v.ty;
    if (t.rank == 1) {
        t = type_scalar((DType)v.ty.dtype);
    } else {
        memmove(&t.shape[axis], &t.shape[axis + 1], sizeof(int64_t) * (size_t)(t.rank - axis - 1));
        t.rank--;
        t.shape[t.rank] = 0;
        t.space = SP_ANY;
    }
    ValId r = fe_emit(l, e->loc, OP_REDUCE, &v.v, 1, t);
    ir_val(l->f, r)->def->iattr[0] = axis;
    ir_val(l->f, r)->def->iattr[1] = k;
    return fe_val(r, t);
}

static bool reducible(Lower *l, const Expr *e, const EVal *v, int rank)
{
    if (v->kind == EV_ERR)
        return false;
    if (v->ty.kind != TY_TILE || (rank && v->ty.rank != rank) || v->ty.dtype == DT_BOOL) {
        diag_error(l->d, e->args[0]->loc, "'%s' needs a %snumeric tile, got %s", e->name,
                   rank == 2 ? "2-D " : "", fe_tystr(l, &v->ty));
        return false;
    }
    return true;
}

/* Reads the constant axis of a reduction or scan of v (argument i of e). */
static bool axis_arg(Lower *l, const Expr *e, int i, const EVal *v, const char *what, int64_t *axis)
{
    if (!fe_const_as_int(l, e->args[i], what, axis))
        return false;
    if (*axis < 0 || *axis >= v->ty.rank) {
        diag_error(l->d, e->args[i]->loc, "%s %lld is out of range for %s (axes 0..%d)", what, (long long)*axis,
                   fe_tystr(l, &v->ty), v->ty.rank - 1);
        return false;
    }
    return true;
}

static EVal lower_reduce(Lower *l, const Expr *e)
{
    EVal v = fe_value(l, e->args[0]);
    int64_t axis;
    if (!reducible(l, e, &v, 0) || !axis_arg(l, e, 1, &v, "reduction axis", &axis))
        return err();
    const Expr *k = e->args[2];
    for (int i = 0; k->kind == E_NAME && i < RED_COUNT; i++)
        if (strcmp(k->name, reduce_names[i]) == 0)
            return emit_reduce(l, e, v, (int)axis, (ReduceKind)i);
    diag_error(l->d, k->loc, "reduction kind must be sum, max, min or prod");
    return err();
}

/* cumsum(x, AXIS), cummax, cummin, cumprod: inclusive scans;
 * scan(x, AXIS, sum|max|min|prod [, inclusive|exclusive]). Out of line, as
 * lower_rand: nested calls recurse through lower_builtin, whose frame must
 * stay small (the nesting limits of docs/language.md hold in a 256 KB stack). */
static TC_NOINLINE EVal lower_scan(Lower *l, const Expr *e, const Builtin *b)
{
    EVal v = fe_value(l, e->args[0]);
    int64_t axis;
    if (!reducible(l, e, &v, 0) || !axis_arg(l, e, 1, &v, "scan axis", &axis))
        return err();
    int kind = b->kind == B_CUM ? b->op : -1;
    for (int i = 0; kind < 0 && e->args[2]->kind == E_NAME && i < RED_COUNT; i++)
        if (strcmp(e->args[2]->name, reduce_names[i]) == 0)
            kind = i;
    if (kind < 0) {
        diag_error(l->d, e->args[2]->loc, "scan kind must be sum, max, min or prod");
        return err();
    }
    bool excl = false;
    if (b->kind == B_SCAN && e->nargs == 4) {
        const Expr *m = e->args[3];
        excl = m->kind == E_NAME && strcmp(m->name, "exclusive") == 0;
        if (!excl && (m->kind != E_NAME || strcmp(m->name, "inclusive") != 0)) {
            diag_error(l->d, m->loc, "the 4th argument of scan() must be inclusive or exclusive");
            return err();
        }
    }
    Type t = v.ty;
    t.space = SP_ANY;
    ValId r = fe_emit(l, e->loc, OP_SCAN, &v.v, 1, t);
    Op *op = ir_val(l->f, r)->def;
    op->iattr[0] = axis;
    op->iattr[1] = kind;
    op->iattr[2] = excl;
    return fe_val(r, t);
}

/* rand(seed, offsets): uniform f32 in [0, 1); randint(seed, offsets): u32.
 * Word 0 of Philox4x32-10 (ir/philox.h) per offset; rand keeps its top 24
 * bits: f32(w >> 8) * 2^-24, exact. */
static TC_NOINLINE EVal lower_rand(Lower *l, const Expr *e, bool integer)
{
    EVal s = fe_value(l, e->args[0]), o = fe_value(l, e->args[1]);
    if (s.kind == EV_ERR || o.kind == EV_ERR)
        return err();
    if (s.ty.kind != TY_SCALAR || !dtype_is_int((DType)s.ty.dtype)) {
        diag_error(l->d, e->args[0]->loc, "the seed of '%s' must be an integer scalar, got %s", e->name,
                   fe_tystr(l, &s.ty));
        return err();
    }
    if (!dtype_is_int((DType)o.ty.dtype)) {
        diag_error(l->d, e->args[1]->loc, "the offsets of '%s' must be integers (a scalar or a tile), got %s",
                   e->name, fe_tystr(l, &o.ty));
        return err();
    }
    s = fe_convert(l, s, DT_I64, e->loc);
    if (dtype_bits((DType)o.ty.dtype) < 32)
        o = fe_convert(l, o, DT_I32, e->loc);
    ValId args[2] = { fe_materialize(l, &s, e->loc), fe_materialize(l, &o, e->loc) };
    Type t = o.ty;
    t.dtype = DT_U32;
    t.space = SP_ANY;
    EVal w = fe_val(fe_emit(l, e->loc, OP_PHILOX, args, 2, t), t);
    if (integer)
        return w;
    EVal hi = fe_convert(l, fe_binary(l, T_SHR, w, fe_const_int(8, DT_I32), e), DT_F32, e->loc);
    return fe_binary(l, T_STAR, hi, fe_const_float(0x1p-24, DT_F32), e);
}

/* concat(a, b, AXIS): a then b along AXIS; same dtype and rank, the other
 * extents equal. Out of line, as lower_scan. */
static TC_NOINLINE EVal lower_concat(Lower *l, const Expr *e)
{
    EVal a = fe_value(l, e->args[0]), b = fe_value(l, e->args[1]);
    if (a.kind == EV_ERR || b.kind == EV_ERR)
        return err();
    for (int i = 0; i < 2; i++) {
        const EVal *v = i ? &b : &a;
        if (v->ty.kind != TY_TILE) {
            diag_error(l->d, e->args[i]->loc, "concat needs tiles, got %s", fe_tystr(l, &v->ty));
            return err();
        }
    }
    int64_t axis;
    if (!axis_arg(l, e, 2, &a, "concat axis", &axis))
        return err();
    if (a.ty.dtype != b.ty.dtype) {
        diag_error(l->d, e->loc, "concat dtype mismatch: %s and %s; cast one with %s(x)", fe_tystr(l, &a.ty),
                   fe_tystr(l, &b.ty), dtype_name((DType)a.ty.dtype));
        return err();
    }
    bool same = a.ty.rank == b.ty.rank;
    for (int d = 0; same && d < a.ty.rank; d++)
        same = d == axis || a.ty.shape[d] == b.ty.shape[d];
    if (!same) {
        diag_error(l->d, e->loc, "concat along axis %lld needs equal extents in the other dims, got %s and %s",
                   (long long)axis, fe_tystr(l, &a.ty), fe_tystr(l, &b.ty));
        return err();
    }
    Type t = a.ty;
    t.space = SP_ANY;
    t.shape[axis] += b.ty.shape[axis];
    ValId args[2] = { a.v, b.v };
    ValId r = fe_emit(l, e->loc, OP_CONCAT, args, 2, t);
    ir_val(l->f, r)->def->iattr[0] = axis;
    return fe_val(r, t);
}

/* reshape(x, [d0, d1, ...]): the elements of x in row-major order, in a
 * shape of 1 to 4 constant extents with the same element count. */
static TC_NOINLINE EVal lower_reshape(Lower *l, const Expr *e)
{
    EVal v = fe_value(l, e->args[0]);
    const Expr *s = e->args[1];
    if (v.kind == EV_ERR)
        return err();
    if (v.ty.kind != TY_TILE) {
        diag_error(l->d, e->args[0]->loc, "reshape needs a tile, got %s", fe_tystr(l, &v.ty));
        return err();
    }
    if (s->kind != E_LIST || s->nargs < 1 || s->nargs > TILE_MAXRANK) {
        diag_error(l->d, s->loc, "the shape of reshape is a list of 1 to %d constant extents, e.g. [4, 8]",
                   TILE_MAXRANK);
        return err();
    }
    int64_t shape[TILE_MAXRANK], n = 1;
    bool ok = true;
    for (int i = 0; i < s->nargs; i++) {
        if (!fe_const_as_int(l, s->args[i], "tile shape", &shape[i])) {
            ok = false;
            continue;
        }
        if (shape[i] <= 0 || shape[i] > TC_LIMIT_TILE_ELEMS) {
            diag_error(l->d, s->args[i]->loc, "extent %lld of reshape must be in 1..%d", (long long)shape[i],
                       TC_LIMIT_TILE_ELEMS);
            ok = false;
            continue;
        }
        n *= shape[i];   /* at most 2^72 over four extents: stop counting past the limit */
        if (n > TC_LIMIT_TILE_ELEMS)
            n = TC_LIMIT_TILE_ELEMS + 1;
    }
    if (!ok)
        return err();
    Type t = type_tile((DType)v.ty.dtype, s->nargs, shape, SP_ANY);
    if (n != type_numel(&v.ty)) {
        char cnt[48];
        snprintf(cnt, sizeof cnt, n > TC_LIMIT_TILE_ELEMS ? "more than %d" : "%d",
                 n > TC_LIMIT_TILE_ELEMS ? TC_LIMIT_TILE_ELEMS : (int)n);
        diag_error(l->d, s->loc, "reshape of %s (%lld elements) to %s (%s elements): the counts differ",
                   fe_tystr(l, &v.ty), (long long)type_numel(&v.ty), fe_tystr(l, &t), cnt);
        return err();
    }
    if (type_same_shape(&t, &v.ty))
        return v;
    return fe_val(fe_emit(l, e->loc, OP_RESHAPE, &v.v, 1, t), t);
}

/* transpose(x): x^T. */
static TC_NOINLINE EVal lower_transpose_call(Lower *l, const Expr *e)
{
    EVal v = fe_value(l, e->args[0]);
    if (v.kind != EV_ERR && (v.ty.kind != TY_TILE || v.ty.rank != 2)) {
        diag_error(l->d, e->args[0]->loc, "'transpose' needs a 2-D tile, got %s", fe_tystr(l, &v.ty));
        return err();
    }
    return v.kind == EV_ERR ? v : fe_transpose(l, v, e->loc);
}

static EVal lower_iota(Lower *l, const Expr *e, int kind)
{
    Type t;
    int axis = 0;
    if (kind == B_IOTA) {
        int64_t n;
        if (!fe_const_as_int(l, e->args[0], "tile shape", &n))
            return err();
        if (n <= 0) {
            diag_error(l->d, e->args[0]->loc, "iota length must be positive, got %lld", (long long)n);
            return err();
        }
        t = type_tile(DT_I32, 1, &n, SP_ANY);
    } else {
        EVal v = fe_value(l, e->args[0]);
        if (v.kind == EV_ERR)
            return v;
        int need = kind == B_COLS ? 2 : 1;
        if (v.ty.kind != TY_TILE || v.ty.rank < need) {
            diag_error(l->d, e->args[0]->loc, "'%s' needs a tile of rank >= %d, got %s", e->name, need,
                       fe_tystr(l, &v.ty));
            return err();
        }
        t = type_tile(DT_I32, v.ty.rank, v.ty.shape, SP_ANY);
        axis = kind == B_COLS ? 1 : 0;
    }
    ValId r = fe_emit(l, e->loc, OP_IOTA, NULL, 0, t);
    ir_val(l->f, r)->def->iattr[0] = axis;
    return fe_val(r, t);
}

/* The two arguments of integer builtin e (cdiv, divisor), integer scalars
 * only with `scalars`; false after reporting. */
static bool int_args(Lower *l, const Expr *e, bool scalars, EVal *a, EVal *b)
{
    *a = fe_value(l, e->args[0]);
    *b = fe_value(l, e->args[1]);
    if (a->kind == EV_ERR || b->kind == EV_ERR)
        return false;
    for (int i = 0; i < 2; i++) {
        const EVal *v = i ? b : a;
        if (!dtype_is_int((DType)v->ty.dtype) || (scalars && v->ty.kind != TY_SCALAR)) {
            diag_error(l->d, e->args[i]->loc, "%s needs %s, got %s", e->name,
                       scalars ? "integer scalars" : "integers", fe_tystr(l, &v->ty));
            return false;
        }
    }
    return true;
}

/* cdiv(a, b) = (a + b - 1) / b on integers. */
static EVal lower_cdiv(Lower *l, const Expr *e)
{
    EVal a, b;
    if (!int_args(l, e, false, &a, &b))
        return err();
    Expr add = { .kind = E_BINARY, .op = T_PLUS, .loc = e->loc, .a = e->args[0], .b = e->args[1] };
    Expr div = add;
    div.op = T_SLASH;
    EVal s = fe_binary(l, T_PLUS, a, b, &add);
    EVal s1 = fe_binary(l, T_MINUS, s, fe_const_int(1, DT_I32), &add);
    return fe_binary(l, T_SLASH, s1, b, &div);
}

/* divisor(a, b): the largest divisor of a that is at most b (ir/divisor.h), for
 * grids whose blocks tile a count in equal groups. Constants fold anywhere;
 * run-time operands (named dims) only in the grid, which the runtime evaluates
 * at launch. */
static EVal lower_divisor(Lower *l, const Expr *e)
{
    EVal a, b;
    if (!int_args(l, e, true, &a, &b) || !fe_unify(l, &a, &b, e->args[0], e->args[1], e->loc))
        return err();
    if (a.kind == EV_CONST && b.kind == EV_CONST) {
        int64_t r = tc_divisor(a.i, b.i);
        if (r < 0) {
            diag_error(l->d, e->args[0]->loc, "divisor of %lld: the value exceeds 2^32", (long long)a.i);
            return err();
        }
        return fe_const_int(r, (DType)a.ty.dtype);
    }
    if (!l->in_grid) {
        diag_error(l->d, e->loc, "divisor() of run-time values is only available in the grid; "
                   "in the body its operands must be compile-time constants");
        return err();
    }
    ValId args[2] = { fe_materialize(l, &a, e->loc), fe_materialize(l, &b, e->loc) };
    Type t = a.ty;
    t.space = SP_ANY;
    return fe_val(fe_emit(l, e->loc, OP_DIVISOR, args, 2, t), t);
}

static EVal lower_load(Lower *l, const Expr *e)
{
    const Expr *w = e->args[0], *other = e->nargs > 1 ? e->args[1] : NULL;
    if (other && other->kind == E_KWARG) {
        if (strcmp(other->name, "other") != 0) {
            diag_error(l->d, other->loc, "load() has no argument '%s'; did you mean 'other'?", other->name);
            return err();
        }
        other = other->a;
    }
    EVal base = w->kind == E_INDEX ? fe_expr(l, w->a) : (EVal){ 0 };
    if (w->kind != E_INDEX || base.kind != EV_TENSOR) {
        if (w->kind != E_INDEX || base.kind != EV_ERR)
            diag_error(l->d, w->loc, "load() needs a window of a tensor param, e.g. load(X[i : +n], 0)");
        return err();
    }
    return fe_window(l, w, other);
}

static bool check_args(Lower *l, const Expr *e, const Builtin *b)
{
    int want = b->nargs;
    bool ok = b->kind == B_LOAD ? (e->nargs == 1 || e->nargs == 2)
            : b->kind == B_SCAN ? (e->nargs == 3 || e->nargs == 4) : e->nargs == want;
    if (!ok) {
        diag_error(l->d, e->loc, "'%s' takes %s%d argument%s, got %d", e->name,
                   b->kind == B_LOAD ? "1 or " : b->kind == B_SCAN ? "3 or " : "", b->kind == B_SCAN ? want + 1 : want, want == 1 ? "" : "s",
                   e->nargs);
        return false;
    }
    for (int i = 0; i < e->nargs; i++)
        if (e->args[i]->kind == E_KWARG && !(b->kind == B_LOAD && i == 1)) {
            diag_error(l->d, e->args[i]->loc, "'%s' takes no named arguments", e->name);
            return false;
        }
    return true;
}

/* num_sms(): the SM count of the device the kernel is launched on, known
 * at launch only: grid rules such as grid(min(cdiv(M, R), num_sms())) give
 * a persistent grid of one block an SM whatever the device. */
static EVal lower_num_sms(Lower *l, const Expr *e)
{
    if (!l->in_grid) {
        diag_error(l->d, e->loc, "num_sms() is only available in the grid (the runtime evaluates it at "
                   "launch); in the body use num_blocks.x, the grid size it gave");
        return err();
    }
    Type t = type_scalar(DT_I32);
    t.space = SP_ANY;
    return fe_val(fe_emit(l, e->loc, OP_NUMSMS, NULL, 0, t), t);
}

/* Inlined into fe_call: one frame per nested call (the nesting limits). */
static TC_ALWAYS_INLINE EVal lower_builtin(Lower *l, const Expr *e, const Builtin *b)
{
    if (!check_args(l, e, b))
        return err();
    switch (b->kind) {
    case B_MATH: return lower_math(l, e, (OpCode)b->op);
    case B_POW: return lower_pow(l, e);
    case B_MINMAX: return lower_minmax(l, e, (OpCode)b->op);
    case B_WHERE: return lower_where(l, e);
    case B_ROWRED: case B_COLRED: {
        EVal v = fe_value(l, e->args[0]);
        if (!reducible(l, e, &v, 2))
            return err();
        return emit_reduce(l, e, v, b->kind == B_ROWRED ? 1 : 0, (ReduceKind)b->op);
    }
    case B_REDUCE: return lower_reduce(l, e);
    case B_CUM: case B_SCAN: return lower_scan(l, e, b);
    case B_RAND: return lower_rand(l, e, b->op == 1);
    case B_IOTA: case B_ROWS: case B_COLS: return lower_iota(l, e, b->kind);
    case B_CDIV: return lower_cdiv(l, e);
    case B_DIVISOR: return lower_divisor(l, e);
    case B_NUMSMS: return lower_num_sms(l, e);
    case B_CONCAT: return lower_concat(l, e);
    case B_RESHAPE: return lower_reshape(l, e);
    case B_TRANSPOSE: return lower_transpose_call(l, e);
    default: return lower_load(l, e);
    }
}

EVal fe_call(Lower *l, const Expr *e)
{
    DType dt = dtype_lookup(e->name, strlen(e->name));
    if (dt != DT_NONE)
        return lower_cast(l, e, dt);
    const Builtin *b = find_builtin(e->name);
    if (b) {
        if (l->in_grid && b->kind != B_CDIV && b->kind != B_DIVISOR && b->kind != B_MINMAX && b->kind != B_NUMSMS) {
            diag_error(l->d, e->loc, "'%s' cannot be used in the grid", e->name);
            return err();
        }
        return lower_builtin(l, e, b);
    }
    if (strcmp(e->name, "atomic_add") == 0) {
        diag_error(l->d, e->loc, "atomic_add(...) is a statement: it adds to a tensor and has no value");
        return err();
    }
    Sym *s = fe_scope_lookup(l, e->name);
    if (s && s->kind == SYM_CONST && strcmp(s->cls, "dtype") == 0)
        return lower_cast(l, e, s->cb->dval);
    if (s) {
        diag_error(l->d, e->loc, "'%s' is not a function", e->name);
        diag_note(l->d, s->loc, "'%s' is declared here", e->name);
        return err();
    }
    diag_error(l->d, e->loc, "unknown function '%s'", e->name);
    fe_suggest(l, e->loc, e->name, true);
    return err();
}
