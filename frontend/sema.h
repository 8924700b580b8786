/* sema.h - internal interface of semantic analysis and lowering (lower.c,
 * scope.c, consts.c, sema_expr.c, sema_call.c). Not part of the front end's
 * public header: only these files include it.
 *
 * One walk does both jobs: every expression is checked and lowered to Tile IR
 * at once. Compile-time constants are carried as folded values (EV_CONST) and
 * only become CONST ops where an op needs them, so shape expressions, constant
 * `if` conditions and ternaries fold without leaving dead IR behind.
 */
#ifndef TILEC_SEMA_H
#define TILEC_SEMA_H

#include "frontend.h"

typedef enum SymKind {
    SYM_VAR,        /* `tile` / `let` / loop variable: value tracked in `val` */
    SYM_CONST,      /* compile-time param: `cb` */
    SYM_TENSOR,     /* tensor param: `val.v` is the param value */
    SYM_SCALAR,     /* scalar runtime param */
    SYM_DIM,        /* named dim: i32 value bound at launch */
} SymKind;

typedef enum EvKind { EV_ERR = 0, EV_VAL, EV_CONST, EV_TENSOR } EvKind;

/* The result of checking and lowering an expression. */
typedef struct EVal {
    uint8_t kind;          /* EvKind */
    Type ty;               /* EV_VAL / EV_CONST (consts are scalars) / EV_TENSOR */
    ValId v;               /* EV_VAL, EV_TENSOR */
    int64_t i; double f;   /* EV_CONST: ints and bools in i, floats in f */
    struct Sym *sym;       /* EV_TENSOR: the param */
} EVal;

typedef struct Sym {
    const char *name;
    Loc loc;               /* declaration */
    uint8_t kind;          /* SymKind */
    bool readonly;         /* loop variable */
    bool bad;              /* SYM_CONST without a valid value: uses stay silent */
    bool used;             /* named in an expression (read, or stored to for a tensor):
                              -Wunused-param and -Wdead-tile (lower.c) */
    Type ty;               /* SYM_VAR: the type the variable keeps */
    EVal val;              /* current value (SYM_VAR, SYM_TENSOR, SYM_SCALAR, SYM_DIM) */
    ConstBinding *cb;      /* SYM_CONST */
    const char *cls;       /* SYM_CONST: "int" | "bool" | "float" | "dtype" */
    uint32_t hash;         /* of name (scope.c) */
    struct Sym *chain;     /* the next older symbol in the same hash bucket */
} Sym;

typedef struct Lower {
    Arena *a;
    Arena *syms_arena;                /* the symbols and the scope tables: freed when the
                                         kernel is lowered, so that the IR made meanwhile
                                         lies dense in `a` (a long kernel's passes walk it
                                         many times) */
    Diag *d;
    Func *f;
    Builder b;
    Sym **syms; int nsyms, capsyms;   /* scope stack, innermost last; end a
                                         scope with fe_scope_truncate */
    Sym **bucket; int nbucket;        /* name -> newest visible symbol (scope.c) */
    bool in_grid;                     /* lowering the grid: only dims and consts */
    const Sym **unread; int nunread, capunread;  /* variables never read (warn.c) */
    const AstKernel *k;
    int lists;                        /* statement lists being lowered (1: the kernel's body) */
} Lower;

/* scope.c */
void fe_scope_push(Lower *l, Sym *s);
void fe_scope_truncate(Lower *l, int mark);     /* pop symbols down to mark */
Sym *fe_scope_lookup(Lower *l, const char *name);
Sym *fe_declare(Lower *l, const char *name, Loc loc, SymKind kind);
void fe_suggest(Lower *l, Loc loc, const char *name, bool calls);
/* The i-th builtin function's name (sema_call.c's table), NULL past the last. */
const char *fe_builtin_name(size_t i);

/* consts.c */
void fe_specialise(Lower *l, const AstKernel *k, const FeDefine *defs, int ndefs);
bool fe_define_known(const AstModule *m, const char *name);
EVal fe_const_int(int64_t v, DType dt);
EVal fe_const_float(double v, DType dt);
EVal fe_const_convert(Lower *l, EVal c, DType to, Loc loc);
bool fe_fold_binary(Lower *l, int op, EVal a, EVal b, Loc loc, EVal *out);
bool fe_const_as_int(Lower *l, const Expr *e, const char *what, int64_t *out);
DType fe_resolve_dtype(Lower *l, const char *name, Loc loc);

/* sema_expr.c */
EVal fe_expr(Lower *l, const Expr *e);
EVal fe_value(Lower *l, const Expr *e);        /* rejects tensors */
ValId fe_materialize(Lower *l, EVal *v, Loc loc);
EVal fe_convert(Lower *l, EVal v, DType to, Loc loc);
EVal fe_to_type(Lower *l, EVal v, const Type *to, Loc loc);
EVal fe_binary(Lower *l, int op, EVal a, EVal b, const Expr *e);
/* The op of a binary operator token (T_PLUS -> OP_ADD, T_AMP -> OP_AND, ...);
 * OP_CMP for the comparisons. */
OpCode fe_binary_op(int op);
bool fe_unify(Lower *l, EVal *a, EVal *b, const Expr *ea, const Expr *eb, Loc loc);
bool fe_shape_unify(Lower *l, EVal *a, EVal *b, Loc loc);   /* shapes only */
EVal fe_window(Lower *l, const Expr *idx, const Expr *other);
EVal fe_transpose(Lower *l, EVal v, Loc loc);     /* TRANS of a 2-D tile (checked by the caller) */
void fe_store(Lower *l, const Expr *target, EVal val, Loc loc);
/* A call as a statement: `atomic_add(X[...], value)`; anything else is an error. */
void fe_call_stmt(Lower *l, const Expr *call);
ValId fe_emit(Lower *l, Loc loc, OpCode code, const ValId *args, int n, Type ty);
EVal fe_val(ValId v, Type ty);
const char *fe_tystr(Lower *l, const Type *t);
EVal fe_scratch_expr(Lower *l, const Expr *e);

/* warn.c */
void fe_warn_unused(Lower *l, int mark);       /* before a scope ends at mark: notes its unread variables */
void fe_warn_kernel(Lower *l);                 /* after a kernel without errors: the unused warnings */
void fe_warn_races(Func *f, Diag *d);          /* on a lowered kernel */

/* sema_call.c */
EVal fe_call(Lower *l, const Expr *e);

#endif
