/* consts.c - compile-time params and constant folding.
 *
 * fe_specialise binds every compile-time param of a kernel (a define's text
 * value, else its default) and records it in Func.consts. The folding helpers
 * evaluate scalar constant expressions with i64 integer math (overflow and
 * division by zero are errors); a constant becomes an i32 only when an op
 * needs it (fe_materialize checks the range there).
 */
#include "sema.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

EVal fe_const_int(int64_t v, DType dt)
{
    EVal e = { .kind = EV_CONST, .ty = type_scalar(dt), .i = v, .f = (double)v };
    return e;
}

EVal fe_const_float(double v, DType dt)
{
    EVal e = { .kind = EV_CONST, .ty = type_scalar(dt), .f = v };
    return e;
}

/* Convert a folded constant to another scalar dtype. */
EVal fe_const_convert(Lower *l, EVal c, DType to, Loc loc)
{
    DType from = (DType)c.ty.dtype;
    if (from == to)
        return c;
    if (to == DT_BOOL || from == DT_BOOL) {
        diag_error(l->d, loc, "cannot convert %s to %s implicitly", dtype_name(from), dtype_name(to));
        return (EVal){ 0 };
    }
    if (dtype_is_float(to))
        return fe_const_float(dtype_is_float(from) ? c.f : (double)c.i, to);
    if (dtype_is_float(from))
        return fe_const_int((int64_t)c.f, to);
    return fe_const_int(c.i, to);
}

static bool fold_cmp(int op, double x, double y, int64_t a, int64_t b, bool isf)
{
    switch (op) {
    case T_EQ: return isf ? x == y : a == b;
    case T_NE: return isf ? x != y : a != b;
    case T_LT: return isf ? x < y : a < b;
    case T_LE: return isf ? x <= y : a <= b;
    case T_GT: return isf ? x > y : a > b;
    default: return isf ? x >= y : a >= b;
    }
}

static bool fold_int(Lower *l, int op, int64_t a, int64_t b, Loc loc, int64_t *r)
{
    bool ovf = false;
    switch (op) {
    case T_PLUS: ovf = __builtin_add_overflow(a, b, r); break;
    case T_MINUS: ovf = __builtin_sub_overflow(a, b, r); break;
    case T_STAR: ovf = __builtin_mul_overflow(a, b, r); break;
    case T_SLASH: case T_PERCENT:
        if (b == 0) {
            diag_error(l->d, loc, "division by zero in a constant expression");
            return false;
        }
        ovf = a == INT64_MIN && b == -1;
        if (!ovf)
            *r = op == T_SLASH ? a / b : a % b;
        break;
    case T_AMP: *r = a & b; break;
    case T_PIPE: *r = a | b; break;
    case T_CARET: *r = a ^ b; break;
    case T_SHL: case T_SHR:
        if (b < 0 || b > 63) {
            diag_error(l->d, loc, "shift count %lld is out of range (0..63) in a constant expression", (long long)b);
            return false;
        }
        *r = op == T_SHR ? a >> b : (int64_t)((uint64_t)a << b);
        ovf = op == T_SHL && *r >> b != a;
        break;
    default: return false;
    }
    if (ovf)
        diag_error(l->d, loc, "integer overflow in a constant expression");
    return !ovf;
}

static bool fold_float(int op, double a, double b, double *r) { return tc_float_binary(fe_binary_op(op), a, b, r); }

/* Fold `a op b` for two constants of one dtype. Returns false when the op
 * does not fold (the caller emits it); *out is EV_ERR after an error. */
bool fe_fold_binary(Lower *l, int op, EVal a, EVal b, Loc loc, EVal *out)
{
    DType dt = (DType)a.ty.dtype;
    bool isf = dtype_is_float(dt);
    *out = (EVal){ 0 };
    if (op >= T_EQ && op <= T_GE) {
        *out = fe_const_int(fold_cmp(op, a.f, b.f, a.i, b.i, isf), DT_BOOL);
        return true;
    }
    if (dt == DT_BOOL) {   /* && || & | ^ */
        bool x = a.i != 0, y = b.i != 0;
        *out = fe_const_int(op == T_ANDAND || op == T_AMP ? x && y : op == T_CARET ? x != y : x || y, DT_BOOL);
        return true;
    }
    if (isf) {
        double r;
        if (!fold_float(op, a.f, b.f, &r))
            return false;
        *out = fe_const_float(r, dt);
        return true;
    }
    int64_t r;
    if (fold_int(l, op, a.i, b.i, loc, &r))
        *out = fe_const_int(r, dt);
    return true;
}

/* Evaluate e as an integer compile-time constant (shapes, extents, axes). */
bool fe_const_as_int(Lower *l, const Expr *e, const char *what, int64_t *out)
{
    EVal v = fe_scratch_expr(l, e);
    if (v.kind == EV_ERR)
        return false;
    if (v.kind == EV_CONST && dtype_is_int((DType)v.ty.dtype)) {
        *out = v.i;
        return true;
    }
    if (v.kind == EV_CONST || v.ty.kind != TY_SCALAR || !dtype_is_int((DType)v.ty.dtype)) {
        diag_error(l->d, e->loc, "%s must be an integer, got %s", what, fe_tystr(l, &v.ty));
        return false;
    }
    diag_error(l->d, e->loc, "non-constant %s", what);
    diag_note(l->d, e->loc, "only literals, int compile-time params and arithmetic on them are "
                            "constant; a named dim or runtime value is not");
    return false;
}

DType fe_resolve_dtype(Lower *l, const char *name, Loc loc)
{
    DType dt = dtype_lookup(name, strlen(name));
    if (dt != DT_NONE)
        return dt;
    Sym *s = fe_scope_lookup(l, name);
    if (s && s->kind == SYM_CONST && strcmp(s->cls, "dtype") == 0)
        return s->cb->dval;
    diag_error(l->d, loc, "unknown dtype '%s'", name);
    if (s)
        diag_note(l->d, s->loc, "'%s' is declared here, but it is not a dtype param", name);
    else
        fe_suggest(l, loc, name, true);
    return DT_NONE;
}

/* ---- defines ---- */

static bool parse_int_text(const char *s, int64_t *out)
{
    char buf[64];
    size_t n = 0;
    for (; *s && n + 1 < sizeof buf; s++)
        if (*s != '_')
            buf[n++] = *s;
    buf[n] = 0;
    if (*s || n == 0)
        return false;
    const char *p = buf + (buf[0] == '-' || buf[0] == '+');
    int base = (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) ? 16 : 10;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, base);
    if (*end || errno)
        return false;
    *out = v;
    return true;
}

static bool parse_define(const char *cls, const char *text, ConstBinding *cb)
{
    if (strcmp(cls, "int") == 0)
        return parse_int_text(text, &cb->ival);
    if (strcmp(cls, "bool") == 0) {
        if (strcmp(text, "true") && strcmp(text, "false"))
            return false;
        cb->ival = strcmp(text, "true") == 0;
        return true;
    }
    if (strcmp(cls, "float") == 0) {
        char *end;
        errno = 0;
        cb->fval = strtod(text, &end);
        return *text && !*end && !errno;
    }
    cb->dval = dtype_lookup(text, strlen(text));
    return cb->dval != DT_NONE;
}

bool fe_define_known(const AstModule *m, const char *name)
{
    for (int k = 0; k < m->nkernels; k++)
        for (int i = 0; i < m->kernels[k].nconsts; i++)
            if (strcmp(m->kernels[k].consts[i].name, name) == 0)
                return true;
    return false;
}

/* A default: a constant expression of the param's kind (dtype: a dtype name). */
static bool eval_default(Lower *l, const AstParam *p, ConstBinding *cb)
{
    const Expr *e = p->deflt;
    if (strcmp(p->type_name, "dtype") == 0) {
        if (e->kind != E_NAME) {
            diag_error(l->d, e->loc, "default of dtype param '%s' must be a dtype name", p->name);
            return false;
        }
        cb->dval = fe_resolve_dtype(l, e->name, e->loc);
        return cb->dval != DT_NONE;
    }
    EVal v = fe_scratch_expr(l, e);
    if (v.kind == EV_ERR)
        return false;
    DType dt = (DType)v.ty.dtype;
    bool isint = strcmp(p->type_name, "int") == 0, isbool = strcmp(p->type_name, "bool") == 0;
    bool ok = v.kind == EV_CONST && (isint ? dtype_is_int(dt) : isbool ? dt == DT_BOOL
                                                                       : dt != DT_BOOL);
    if (!ok) {
        diag_error(l->d, e->loc, "default of '%s' must be a constant %s, got %s%s", p->name,
                   p->type_name, v.kind == EV_CONST ? "" : "a runtime ", fe_tystr(l, &v.ty));
        return false;
    }
    cb->ival = v.i;
    cb->fval = dtype_is_float(dt) ? v.f : (double)v.i;
    return true;
}

/* The last define naming p wins (as with repeated -D flags). */
static const char *find_define(const AstParam *p, const FeDefine *defs, int ndefs)
{
    const char *text = NULL;
    for (int i = 0; i < ndefs; i++)
        if (strcmp(defs[i].name, p->name) == 0)
            text = defs[i].value;
    return text;
}

static bool bind_const(Lower *l, const AstParam *p, ConstBinding *cb, const FeDefine *defs, int ndefs)
{
    const char *text = find_define(p, defs, ndefs);
    if (text) {
        if (parse_define(p->type_name, text, cb))
            return true;
        diag_error(l->d, p->loc, "bad value '%s' for -D%s: expected %s %s", text, p->name,
                   strcmp(p->type_name, "int") == 0 ? "an" : "a", p->type_name);
        return false;
    }
    if (p->deflt && p->deflt->kind == E_NAME && strcmp(p->deflt->name, "auto") == 0) {
        diag_error(l->d, p->deflt->loc, "'%s = auto' is chosen when the kernel is compiled (tilec_compile); "
                   "pin it here with -D%s=...", p->name, p->name);
        return false;
    }
    if (!p->deflt) {
        diag_error(l->d, p->loc, "compile-time param '%s' has no value: give a default or -D%s=...",
                   p->name, p->name);
        return false;
    }
    return eval_default(l, p, cb);
}

static DType binding_type(const char *cls)
{
    if (strcmp(cls, "int") == 0)
        return DT_I64;
    if (strcmp(cls, "bool") == 0)
        return DT_BOOL;
    return strcmp(cls, "float") == 0 ? DT_F64 : DT_NONE;
}

/* Bind each compile-time param in order (a default may use earlier ones). */
void fe_specialise(Lower *l, const AstKernel *k, const FeDefine *defs, int ndefs)
{
    Func *f = l->f;
    f->consts = arena_alloc(l->a, sizeof(ConstBinding) * (size_t)(k->nconsts + 1));
    for (int i = 0; i < k->nconsts; i++) {
        const AstParam *p = &k->consts[i];
        const char *cls = p->type_name;
        if (strcmp(cls, "int") && strcmp(cls, "bool") && strcmp(cls, "float") && strcmp(cls, "dtype")) {
            diag_error(l->d, p->type_loc, "unknown kind '%s' for compile-time param '%s': "
                       "use int, bool, float or dtype", cls, p->name);
            cls = "int";
        }
        ConstBinding *cb = &f->consts[f->nconsts++];
        cb->name = p->name;
        cb->type = binding_type(cls);
        AstParam q = *p;
        q.type_name = cls;
        bool ok = bind_const(l, &q, cb, defs, ndefs);
        Sym *s = fe_declare(l, p->name, p->loc, SYM_CONST);
        s->bad = !ok;
        s->cb = cb;
        s->cls = cls;
    }
}
