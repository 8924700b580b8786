/* lower.c - fe_lower: semantic analysis and lowering of the AST to Tile IR.
 *
 * Per kernel: specialise compile-time params (consts.c), declare runtime
 * params and named dims, lower the grid into Func.grid, then walk the body.
 * Statements are lowered here; expressions in sema_expr.c, sema_call.c and
 * sema_window.c.
 *
 * Variables are tracked as SSA values: an assignment rebinds the name. A
 * variable assigned inside a `for` body (or an `if` branch) becomes an iter
 * arg of the FOR (a result of the IF); the names are found by a pre-scan of
 * the body. A compile-time-constant `if` condition folds: only the taken
 * branch is emitted, the other is lowered into a dropped block so that it is
 * still checked.
 *
 * Guarantees on success: every op carries the Loc of the source that made
 * it, elementwise ops see identical operand types up to placement, regions
 * end in YIELD, Func.grid ends in YIELD of three i32.
 */
#include "sema.h"
#include "../lib/tc_limits.h"

#include <string.h>

static void lower_stmt(Lower *l, const Stmt *s);

static void lower_list(Lower *l, Stmt *const *body, int n)
{
    int mark = l->nsyms;
    bool top = l->lists++ == 0;
    for (int i = 0; i < n && !diag_too_many(l->d); i++) {
        lower_stmt(l, body[i]);
        if (top)   /* between the kernel's statements nobody holds a Value pointer */
            ir_func_release_stale(l->f);
    }
    l->lists--;
    fe_warn_unused(l, mark);
    fe_scope_truncate(l, mark);
}

/* ---- declarations ---- */

static bool declared_type(Lower *l, const Stmt *s, Type *ty)
{
    DType dt = fe_resolve_dtype(l, s->dtype_name, s->dtype_loc);
    bool ok = dt != DT_NONE;
    if (s->rank < 1 || s->rank > TILE_MAXRANK) {
        diag_error(l->d, s->dtype_loc, "a tile has 1 to %d dims, '%s' declares %d", TILE_MAXRANK,
                   s->name, s->rank);
        return false;
    }
    int64_t shape[TILE_MAXRANK];
    for (int i = 0; i < s->rank; i++) {
        if (!fe_const_as_int(l, s->shape[i], "tile shape", &shape[i])) {
            ok = false;
        } else if (shape[i] <= 0) {
            diag_error(l->d, s->shape[i]->loc, "tile dim must be positive, got %lld", (long long)shape[i]);
            ok = false;
        }
    }
    if (ok)
        *ty = type_tile(dt, s->rank, shape, (Space)s->space);
    return ok;
}

/* Check that v may initialise (or be assigned to) a variable of type ty. */
static bool fits(Lower *l, const EVal *v, const Type *ty, const char *name, Loc loc, bool init)
{
    const char *what = init ? "its init is" : "the new value is";
    if (v->ty.kind == TY_TILE && ty->kind == TY_SCALAR) {
        diag_error(l->d, loc, "assignment changes the type of '%s' from %s to %s", name,
                   fe_tystr(l, ty), fe_tystr(l, &v->ty));
        return false;
    }
    DType vd = (DType)v->ty.dtype, td = (DType)ty->dtype;
    if (v->ty.kind == TY_SCALAR) {
        bool bad = (vd == DT_BOOL) != (td == DT_BOOL) ||
                   (ty->kind == TY_TILE && dtype_is_float(vd) && !dtype_is_float(td));
        if (bad)
            diag_error(l->d, loc, "'%s' is %s but %s %s", name, fe_tystr(l, ty), what, fe_tystr(l, &v->ty));
        return !bad;
    }
    if (!type_same_shape(&v->ty, ty)) {
        diag_error(l->d, loc, init ? "shape mismatch: '%s' is declared %s but %s %s"
                                   : "assignment changes the type of '%s' from %s to %s",
                   name, fe_tystr(l, ty), init ? what : fe_tystr(l, &v->ty), fe_tystr(l, &v->ty));
        return false;
    }
    if (vd != td) {
        diag_error(l->d, loc, "dtype mismatch: '%s' is %s but %s %s; cast with %s(x)", name,
                   dtype_name(td), what, dtype_name(vd), dtype_name(td));
        return false;
    }
    return true;
}

static void lower_tile_decl(Lower *l, const Stmt *s)
{
    EVal v = fe_value(l, s->value);
    Type ty = v.ty;
    bool ok = s->has_type ? declared_type(l, s, &ty) : true;
    if (ok && v.kind != EV_ERR) {
        if (!s->has_type && v.ty.kind != TY_TILE) {
            diag_error(l->d, s->value->loc, "tile '%s' has a scalar init; declare its type, e.g. "
                       "tile %s: f32[128] = ...", s->name, s->name);
            ok = false;
        } else if (s->has_type) {
            ok = fits(l, &v, &ty, s->name, s->value->loc, true);
        }
    }
    Sym *sym = fe_declare(l, s->name, s->name_loc, SYM_VAR);
    sym->ty = ty;
    sym->val = ok ? fe_to_type(l, v, &ty, s->value->loc) : (EVal){ 0 };
}

static void lower_let(Lower *l, const Stmt *s)
{
    EVal v = fe_value(l, s->value);
    Sym *sym = fe_declare(l, s->name, s->name_loc, SYM_VAR);
    sym->ty = v.ty;
    sym->val = v;
}

/* ---- assignments ---- */

static int compound_op(int assign_op)
{
    switch (assign_op) {
    case T_PLUSEQ: return T_PLUS;
    case T_MINUSEQ: return T_MINUS;
    case T_STAREQ: return T_STAR;
    case T_SLASHEQ: return T_SLASH;
    default: return 0;
    }
}

static const char *sym_role(const Sym *s)
{
    switch (s->kind) {
    case SYM_CONST: return "compile-time param";
    case SYM_TENSOR: return "tensor param";
    case SYM_SCALAR: return "scalar param";
    case SYM_DIM: return "named dim";
    default: return s->readonly ? "loop variable" : "variable";
    }
}

static Sym *assignable(Lower *l, const Expr *t)
{
    Sym *s = fe_scope_lookup(l, t->name);
    if (!s) {
        diag_error(l->d, t->loc, "unknown name '%s'", t->name);
        fe_suggest(l, t->loc, t->name, false);
        return NULL;
    }
    if (s->kind == SYM_VAR && !s->readonly)
        return s;
    if (s->kind == SYM_TENSOR)
        diag_error(l->d, t->loc, "cannot assign to tensor '%s'; store into a window: %s[...] = value",
                   s->name, s->name);
    else
        diag_error(l->d, t->loc, "cannot assign to %s '%s'", sym_role(s), s->name);
    diag_note(l->d, s->loc, "'%s' is declared here", s->name);
    return NULL;
}

static void lower_assign(Lower *l, const Stmt *s)
{
    const Expr *t = s->target;
    int op = compound_op(s->assign_op);
    Expr bin = { .kind = E_BINARY, .op = (uint16_t)op, .loc = t->loc, .a = (Expr *)t, .b = s->value };
    if (t->kind == E_INDEX) {
        EVal v = fe_value(l, s->value);
        if (op && v.kind != EV_ERR)
            v = fe_binary(l, op, fe_window(l, t, NULL), v, &bin);
        fe_store(l, t, v, s->value->loc);
        return;
    }
    if (t->kind != E_NAME) {
        diag_error(l->d, t->loc, "only a variable or a tensor window can be assigned to");
        return;
    }
    Sym *sym = assignable(l, t);
    EVal v = fe_value(l, s->value);
    if (!sym || sym->val.kind == EV_ERR || v.kind == EV_ERR)
        return;
    if (op)
        v = fe_binary(l, op, sym->val, v, &bin);
    if (v.kind == EV_ERR)
        return;
    if (!fits(l, &v, &sym->ty, sym->name, op ? t->loc : s->value->loc, false)) {
        diag_note(l->d, sym->loc, "'%s' is declared here", sym->name);
        return;
    }
    sym->val = fe_to_type(l, v, &sym->ty, s->value->loc);
}

/* ---- control flow ---- */

typedef struct Carried { Sym **s; int n, cap; } Carried;

static void carry_add(Lower *l, Carried *c, Sym *s)
{
    for (int i = 0; i < c->n; i++)
        if (c->s[i] == s)
            return;
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 8;
        c->s = arena_grow(l->a, c->s, sizeof *c->s, (size_t)c->n, (size_t)cap);
        c->cap = cap;
    }
    c->s[c->n++] = s;
}

/* Every visible variable assigned somewhere in stmts (pre-scan). */
static void collect_assigned(Lower *l, Stmt *const *body, int n, Carried *c)
{
    for (int i = 0; i < n; i++) {
        const Stmt *s = body[i];
        if (s->kind == S_ASSIGN && s->target->kind == E_NAME) {
            Sym *sym = fe_scope_lookup(l, s->target->name);
            if (sym && sym->kind == SYM_VAR && !sym->readonly && sym->val.kind != EV_ERR)
                carry_add(l, c, sym);
        }
        collect_assigned(l, s->body, s->nbody, c);
        collect_assigned(l, s->els, s->nels, c);
    }
}

/* The current values of the carried variables, each of its variable's type. */
static void carried_values(Lower *l, const Carried *c, Loc loc, ValId *out)
{
    for (int i = 0; i < c->n; i++) {
        EVal v = fe_to_type(l, c->s[i]->val, &c->s[i]->ty, loc);
        out[i] = v.kind == EV_ERR ? 0 : fe_materialize(l, &v, loc);
    }
}

static void emit_yield(Lower *l, const Carried *c, Loc loc)
{
    ValId *ys = arena_alloc(l->a, sizeof(ValId) * (size_t)(c->n + 1));
    carried_values(l, c, loc, ys);
    l->b.loc = loc;
    ir_build(&l->b, OP_YIELD, ys, c->n, NULL, 0);
}

static Type *carried_types(Lower *l, const Carried *c)
{
    Type *t = arena_alloc(l->a, sizeof(Type) * (size_t)(c->n + 1));
    for (int i = 0; i < c->n; i++)
        t[i] = c->s[i]->ty;
    return t;
}

/* Lower stmts into a dropped block: checked, not emitted. Variables keep
 * the values they had before. */
static void lower_dead(Lower *l, Stmt *const *body, int n)
{
    Carried c = { 0 };
    collect_assigned(l, body, n, &c);
    EVal *saved = arena_alloc(l->a, sizeof(EVal) * (size_t)(c.n + 1));
    for (int i = 0; i < c.n; i++)
        saved[i] = c.s[i]->val;
    Builder b = l->b;
    l->b = ir_builder_at_end(l->f, arena_alloc(l->a, sizeof(Block)));
    lower_list(l, body, n);
    l->b = b;
    for (int i = 0; i < c.n; i++)
        c.s[i]->val = saved[i];
}

static ValId int_operand(Lower *l, const Expr *e, const char *what)
{
    EVal v = fe_value(l, e);
    if (v.kind == EV_ERR)
        return 0;
    if (v.ty.kind != TY_SCALAR || !dtype_is_int((DType)v.ty.dtype)) {
        diag_error(l->d, e->loc, "%s must be an integer scalar, got %s", what, fe_tystr(l, &v.ty));
        return 0;
    }
    if (v.kind == EV_CONST && strcmp(what, "loop step") == 0 && v.i <= 0) {
        diag_error(l->d, e->loc, "loop step must be positive, got %lld", (long long)v.i);
        return 0;
    }
    v = fe_convert(l, v, DT_I32, e->loc);
    return fe_materialize(l, &v, e->loc);
}

static int64_t pipeline_depth(Lower *l, const Expr *e)
{
    int64_t n = 0;
    if (!e || !fe_const_as_int(l, e, "pipeline depth", &n))
        return 0;
    if (n < 1) {
        diag_error(l->d, e->loc, "pipeline depth must be a positive constant, got %lld", (long long)n);
        return 0;
    }
    if (n > TC_LIMIT_PIPELINE) {
        diag_error(l->d, e->loc, "pipeline depth %lld is over the limit of %d", (long long)n, TC_LIMIT_PIPELINE);
        return 0;
    }
    return n;
}

static void lower_for(Lower *l, const Stmt *s)
{
    Carried c = { 0 };
    collect_assigned(l, s->body, s->nbody, &c);
    ValId *args = arena_alloc(l->a, sizeof(ValId) * (size_t)(c.n + 3));
    args[0] = int_operand(l, s->lo, "loop lower bound");
    args[1] = int_operand(l, s->hi, "loop upper bound");
    if (s->step) {
        args[2] = int_operand(l, s->step, "loop step");
    } else {
        l->b.loc = s->loc;
        args[2] = ir_const_int(&l->b, type_scalar(DT_I32), 1);
    }
    int64_t depth = pipeline_depth(l, s->pipeline);
    carried_values(l, &c, s->loc, args + 3);
    Type *tys = carried_types(l, &c);
    l->b.loc = s->loc;
    Op *op = ir_build(&l->b, OP_FOR, args, c.n + 3, tys, c.n);
    op->iattr[0] = depth;
    Block *body = ir_op_region(op, 0);
    Type i32 = type_scalar(DT_I32);
    ValId iv = ir_block_add_arg(l->f, body, i32, s->name);
    for (int i = 0; i < c.n; i++)
        c.s[i]->val = fe_val(ir_block_add_arg(l->f, body, tys[i], c.s[i]->name), tys[i]);
    Builder outer = l->b;
    l->b = ir_builder_at_end(l->f, body);
    int mark = l->nsyms;
    Sym *ivs = fe_declare(l, s->name, s->name_loc, SYM_VAR);
    ivs->readonly = true;
    ivs->ty = i32;
    ivs->val = fe_val(iv, i32);
    lower_list(l, s->body, s->nbody);
    fe_scope_truncate(l, mark);
    emit_yield(l, &c, s->loc);
    l->b = outer;
    for (int i = 0; i < c.n; i++)
        c.s[i]->val = fe_val(op->res[i], tys[i]);
}

static bool if_cond(Lower *l, const Expr *e, EVal *c)
{
    *c = fe_value(l, e);
    if (c->kind == EV_ERR)
        return false;
    if (c->ty.kind == TY_SCALAR && c->ty.dtype == DT_BOOL)
        return true;
    diag_error(l->d, e->loc, "condition must be a bool scalar, got %s", fe_tystr(l, &c->ty));
    if (c->ty.kind == TY_TILE)
        diag_note(l->d, e->loc, "for an elementwise choice use where(cond, a, b)");
    else
        diag_note(l->d, e->loc, "compare it instead, e.g. x != 0");
    return false;
}

/* Lower one branch of an IF into region r and yield the carried values. */
static void lower_branch(Lower *l, Op *op, int r, Stmt *const *body, int n, const Carried *c, Loc loc)
{
    EVal *saved = arena_alloc(l->a, sizeof(EVal) * (size_t)(c->n + 1));
    for (int i = 0; i < c->n; i++)
        saved[i] = c->s[i]->val;
    Builder outer = l->b;
    l->b = ir_builder_at_end(l->f, ir_op_region(op, r));
    lower_list(l, body, n);
    emit_yield(l, c, loc);
    l->b = outer;
    for (int i = 0; i < c->n; i++)
        c->s[i]->val = saved[i];
}

static void lower_if(Lower *l, const Stmt *s)
{
    EVal c;
    if (!if_cond(l, s->value, &c)) {
        lower_dead(l, s->body, s->nbody);
        lower_dead(l, s->els, s->nels);
        return;
    }
    if (c.kind == EV_CONST) {
        lower_dead(l, c.i ? s->els : s->body, c.i ? s->nels : s->nbody);
        lower_list(l, c.i ? s->body : s->els, c.i ? s->nbody : s->nels);
        return;
    }
    Carried cr = { 0 };
    collect_assigned(l, s->body, s->nbody, &cr);
    collect_assigned(l, s->els, s->nels, &cr);
    Type *tys = carried_types(l, &cr);
    l->b.loc = s->loc;
    Op *op = ir_build(&l->b, OP_IF, &c.v, 1, tys, cr.n);
    lower_branch(l, op, 0, s->body, s->nbody, &cr, s->loc);
    lower_branch(l, op, 1, s->els, s->nels, &cr, s->loc);
    for (int i = 0; i < cr.n; i++)
        cr.s[i]->val = fe_val(op->res[i], tys[i]);
}

static void lower_stmt(Lower *l, const Stmt *s)
{
    switch (s->kind) {
    case S_TILE: lower_tile_decl(l, s); break;
    case S_LET: lower_let(l, s); break;
    case S_ASSIGN: lower_assign(l, s); break;
    case S_FOR: lower_for(l, s); break;
    case S_IF: lower_if(l, s); break;
    case S_CALL: fe_call_stmt(l, s->value); break;
    default: lower_list(l, s->body, s->nbody); break;
    }
}

/* ---- params, dims, grid ---- */

/* A tensor dim: a literal, an int compile-time param (static), or a named
 * dim (the same name in several params is the same dim). */
static bool tensor_dim(Lower *l, const AstParam *p, const Expr *e, Type *t, int d)
{
    t->shape[d] = -1;
    if (e->kind == E_INT) {
        t->shape[d] = e->ival;
    } else if (e->kind != E_NAME) {
        diag_error(l->d, e->loc, "a tensor dim is a name or an integer literal");
        return false;
    } else {
        Sym *s = fe_scope_lookup(l, e->name);
        if (s && s->bad)
            return false;
        if (s && s->kind == SYM_CONST && strcmp(s->cls, "int") == 0) {
            t->shape[d] = s->cb->ival;
        } else if (s && s->kind != SYM_DIM) {
            diag_error(l->d, e->loc, "'%s' cannot be a dim of '%s': it is a %s%s%s", e->name, p->name,
                       s->kind == SYM_CONST ? s->cls : "", s->kind == SYM_CONST ? " " : "", sym_role(s));
            diag_note(l->d, s->loc, "'%s' is declared here; a dim is a named dim, an int "
                      "compile-time param or a literal", e->name);
            return false;
        } else {
            t->dimsym[d] = (int16_t)l->f->ndims;
            if (s)
                t->dimsym[d] = (int16_t)ir_find_dim(l->f, e->name);
            else
                fe_declare(l, e->name, e->loc, SYM_DIM)->val =
                    fe_val(ir_add_dim(l->f, e->name), type_scalar(DT_I32));
            return true;
        }
    }
    if (t->shape[d] <= 0) {
        diag_error(l->d, e->loc, "tensor dim must be positive, got %lld", (long long)t->shape[d]);
        return false;
    }
    return true;
}

/* Declare a runtime param; a clash with a named dim is a role conflict. */
static Sym *declare_param(Lower *l, const AstParam *p, SymKind kind)
{
    Sym *prev = fe_scope_lookup(l, p->name);
    if (!prev || prev->kind != SYM_DIM)
        return fe_declare(l, p->name, p->loc, kind);
    diag_error(l->d, p->loc, "param '%s' has the name of a named dim; named dims are bound from "
               "the tensors' shapes, rename the param", p->name);
    diag_note(l->d, prev->loc, "'%s' is used as a named dim here", p->name);
    Sym *s = arena_alloc(l->syms_arena, sizeof *s);
    s->name = p->name;
    s->loc = p->loc;
    s->kind = (uint8_t)kind;
    return s;
}

static void tensor_param(Lower *l, const AstParam *p)
{
    DType dt = fe_resolve_dtype(l, p->type_name, p->type_loc);
    Type t = type_scalar(dt);
    t.kind = TY_TENSOR;
    t.space = SP_GLOBAL;
    if (p->rank < 1 || p->rank > TENSOR_MAXRANK) {
        diag_error(l->d, p->loc, "tensor '%s' has %d dims; 1 to %d are supported", p->name, p->rank,
                   TENSOR_MAXRANK);
        return;
    }
    t.rank = (uint8_t)p->rank;
    for (int d = 0; d < p->rank; d++)
        tensor_dim(l, p, p->dims[d], &t, d);
    ValId v = ir_add_param(l->f, p->name, t);
    Sym *s = declare_param(l, p, SYM_TENSOR);
    s->val = (EVal){ .kind = EV_TENSOR, .ty = t, .v = v, .sym = s };
}

static void scalar_param(Lower *l, const AstParam *p)
{
    DType dt = fe_resolve_dtype(l, p->type_name, p->type_loc);
    if (dt != DT_NONE && dt != DT_F32 && dt != DT_F64 && dt != DT_I32 && dt != DT_I64 && dt != DT_BOOL) {
        diag_error(l->d, p->type_loc, "scalar param '%s' must be f32, f64, i32, i64 or bool, got %s",
                   p->name, dtype_name(dt));
        dt = DT_NONE;
    }
    Type t = type_scalar(dt == DT_NONE ? DT_F32 : dt);
    ValId v = ir_add_param(l->f, p->name, t);
    Sym *s = declare_param(l, p, SYM_SCALAR);
    s->ty = t;
    s->val = fe_val(v, t);
}

static void lower_grid(Lower *l, const AstKernel *k)
{
    l->b = ir_builder_at_end(l->f, &l->f->grid);
    l->in_grid = true;
    if (k->ngrid > 3)
        diag_error(l->d, k->grid[3]->loc, "a grid has at most 3 dims, got %d", k->ngrid);
    ValId ys[3];
    for (int i = 0; i < 3; i++) {
        if (i < k->ngrid) {
            ys[i] = int_operand(l, k->grid[i], "a grid dim");
        } else {
            l->b.loc = k->grid_loc;
            ys[i] = ir_const_int(&l->b, type_scalar(DT_I32), 1);
        }
    }
    l->b.loc = k->grid_loc;
    ir_build(&l->b, OP_YIELD, ys, 3, NULL, 0);
    l->in_grid = false;
}

static void lower_kernel(Module *m, Arena *a, const AstKernel *k, const FeDefine *defs, int ndefs,
                         Diag *d)
{
    Lower l = { .a = a, .syms_arena = arena_new(), .d = d, .k = k };
    l.f = ir_func_new(m, k->name, k->loc);
    fe_specialise(&l, k, defs, ndefs);
    for (int i = 0; i < k->nparams; i++) {
        if (k->params[i].cls == PC_TENSOR)
            tensor_param(&l, &k->params[i]);
        else
            scalar_param(&l, &k->params[i]);
    }
    lower_grid(&l, k);
    l.b = ir_builder_at_end(l.f, &l.f->body);
    lower_list(&l, k->body, k->nbody);
    if (d->nerrors == 0) {
        fe_warn_kernel(&l);
        fe_warn_races(l.f, d);
    }
    arena_free(l.syms_arena);
}

static void check_defines(const AstModule *ast, const char *source_name, const FeDefine *defs,
                          int ndefs, Diag *d)
{
    for (int i = 0; i < ndefs; i++) {
        if (fe_define_known(ast, defs[i].name))
            continue;
        StrBuf sb = { 0 };
        for (int k = 0; k < ast->nkernels; k++)
            for (int j = 0; j < ast->kernels[k].nconsts; j++)
                sb_printf(&sb, "%s%s", sb.len ? ", " : "", ast->kernels[k].consts[j].name);
        diag_error(d, (Loc){ source_name, 0, 0 }, "unknown define '%s': %s%s", defs[i].name,
                   sb.len ? "the compile-time params are " : "the kernels have no compile-time params",
                   sb.len ? sb.buf : "");
        sb_free(&sb);
    }
}

Module *fe_lower(Arena *a, const AstModule *ast, const char *source_name,
                 const FeDefine *defs, int ndefs, Diag *d)
{
    int errors = d->nerrors;
    check_defines(ast, source_name, defs, ndefs, d);
    Module *m = ir_module_new(a, source_name);
    for (int k = 0; k < ast->nkernels; k++) {
        const AstKernel *kk = &ast->kernels[k];
        for (int j = 0; j < k; j++)
            if (strcmp(ast->kernels[j].name, kk->name) == 0) {
                diag_error(d, kk->loc, "redefinition of kernel '%s'", kk->name);
                diag_note(d, ast->kernels[j].loc, "previous definition of '%s' is here", kk->name);
            }
        lower_kernel(m, a, kk, defs, ndefs, d);
    }
    ir_release_stale(m);
    return d->nerrors > errors ? NULL : m;
}
