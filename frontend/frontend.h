/* frontend.h - the .tile front end: lexer (lexer.re, re2c), parser
 * (parse.c, parse_stmt.c, parse_expr.c: recursive descent; their shared
 * internal header is parser.h), AST (ast_print.c), semantic analysis and
 * lowering to Tile IR (lower.c, sema_expr.c, sema_call.c, sema_window.c,
 * consts.c, scope.c; their shared internal header is sema.h), and the
 * lex-parse-lower driver (compile.c).
 *
 * Flow: fe_lex() -> fe_parse() -> fe_lower() (sema and lowering are one walk:
 * compile-time params are specialised first, so every tile shape is a
 * constant when the walk reaches it). All memory comes from the arena.
 */
#ifndef TILEC_FRONTEND_H
#define TILEC_FRONTEND_H

#include "../ir/ir.h"

/* ---- tokens ----
 * TOK(ENUM, "spelling") ; keywords are listed with KW. ORDER TOK. */
#define FE_TOKENS(TOK, KW) \
    TOK(EOF, "end of file") TOK(ERROR, "invalid token") \
    TOK(IDENT, "identifier") TOK(INT, "integer literal") TOK(FLOAT, "float literal") \
    TOK(LPAREN, "(") TOK(RPAREN, ")") TOK(LBRACK, "[") TOK(RBRACK, "]") \
    TOK(LBRACE, "{") TOK(RBRACE, "}") TOK(COMMA, ",") TOK(SEMI, ";") \
    TOK(COLON, ":") TOK(DOT, ".") TOK(DOTDOT, "..") TOK(QUESTION, "?") \
    TOK(PLUS, "+") TOK(MINUS, "-") TOK(STAR, "*") TOK(SLASH, "/") TOK(PERCENT, "%") \
    TOK(AT, "@") TOK(CARET_T, "^T") \
    TOK(ASSIGN, "=") TOK(PLUSEQ, "+=") TOK(MINUSEQ, "-=") TOK(STAREQ, "*=") TOK(SLASHEQ, "/=") \
    TOK(EQ, "==") TOK(NE, "!=") TOK(LT, "<") TOK(LE, "<=") TOK(GT, ">") TOK(GE, ">=") \
    TOK(ANDAND, "&&") TOK(OROR, "||") TOK(BANG, "!") \
    TOK(AMP, "&") TOK(PIPE, "|") TOK(CARET, "^") TOK(TILDE, "~") TOK(SHL, "<<") TOK(SHR, ">>") \
    KW(KERNEL, "kernel") KW(TILE, "tile") KW(LET, "let") KW(FOR, "for") KW(IN, "in") \
    KW(STEP, "step") KW(PIPELINE, "pipeline") KW(IF, "if") KW(ELSE, "else") \
    KW(GLOBAL, "global") KW(SHARED, "shared") KW(REG, "reg") KW(GRID, "grid") \
    KW(TRUE, "true") KW(FALSE, "false") KW(INF, "inf")

typedef enum TokKind {
#define FE_T(E, s) T_##E,
    FE_TOKENS(FE_T, FE_T)
#undef FE_T
    T_COUNT
} TokKind;
extern const char *const tok_names[T_COUNT];

typedef struct Token {
    uint16_t kind;          /* TokKind */
    Loc loc;
    const char *start;      /* into the source text */
    int len;
    union {
        int64_t ival;       /* T_INT (overflow is reported as an error) */
        double fval;        /* T_FLOAT */
    };
} Token;

typedef struct TokenList { Token *toks; int n; } TokenList;

/* Lex the whole source (NUL-terminated, len bytes). Errors (stray bytes,
 * unterminated comment, bad number) go to d; the list always ends in T_EOF. */
TokenList fe_lex(Arena *a, const char *file, const char *src, size_t len, Diag *d);
/* Give the list's memory back to the arena's allocator once the parse is
 * done (the AST points into the source, never into the tokens): a long
 * source's tokens are the largest block of its front end. */
void fe_tokens_release(Arena *a, TokenList *tl);
void fe_print_tokens(const TokenList *tl, StrBuf *out);

/* ---- AST ---- */
typedef enum ExprKind {
    E_INT, E_FLOAT, E_BOOL, E_INF,     /* literals (E_INF: `inf`) */
    E_NAME,                            /* name */
    E_UNARY,                           /* op: T_MINUS, T_BANG, T_TILDE; a */
    E_BINARY,                          /* op: T_PLUS..T_OROR, T_AT; a, b */
    E_TERNARY,                         /* a ? b : c */
    E_CALL,                            /* name(args) : builtins, casts (`bf16(x)`) */
    E_INDEX,                           /* a[args] : window of a tensor, or broadcast of a tile */
    E_MEMBER,                          /* a.name : block.x */
    E_TRANSPOSE,                       /* a^T */
    E_SLICE,                           /* inside [] : `a : +b` (op T_PLUS: start a, extent b) or
                                          `a : b` (op 0: start a, end b; tiles only) */
    E_FULL,                            /* inside [] : `:` */
    E_NEWAXIS,                         /* inside [] : `*` */
    E_KWARG,                           /* inside call: name = a (e.g. other = -inf) */
    E_LIST,                            /* [args] : a shape, as in reshape(t, [4, 8]) */
} ExprKind;

typedef struct Expr {
    uint8_t kind;           /* ExprKind */
    uint16_t op;            /* TokKind for unary/binary */
    Loc loc;
    union {
        int64_t ival;       /* E_INT */
        double fval;        /* E_FLOAT */
        bool bval;          /* E_BOOL */
    };
    const char *name;       /* E_NAME, E_CALL (callee), E_MEMBER (field), E_KWARG */
    struct Expr *a, *b, *c;
    struct Expr **args; int nargs;
    int height;             /* nodes on the longest path down (a leaf: 1); at
                               most FE_MAX_EXPR_HEIGHT, so walks that recurse
                               over the tree are bounded (parse.c) */
} Expr;

/* Nesting limits of the parser (docs/language.md, "Limits"): expression
 * trees at most FE_MAX_EXPR_HEIGHT nodes deep (a flat `1 + 1 + ...` is a
 * tree as deep as it has terms), parentheses/unary chains and blocks at most
 * FE_MAX_NESTING deep. Both keep every recursive walk of the front end,
 * passes and code generator inside a 256 KB thread stack. */
enum { FE_MAX_EXPR_HEIGHT = 256, FE_MAX_NESTING = 256 };

typedef enum StmtKind {
    S_TILE,     /* tile name [: [placement] dtype[shape]] = init ; */
    S_LET,      /* let name = init ; */
    S_ASSIGN,   /* target op= value ;  target is E_NAME or E_INDEX (store) */
    S_FOR,      /* for var in lo .. hi [step s] [pipeline(S)] { body } */
    S_IF,       /* if cond { then } [else { else } | else if ...] */
    S_BLOCK,    /* { ... } */
    S_CALL,     /* call ;  value is the E_CALL: atomic_add(window, value) */
} StmtKind;

/* The small fields first, so that padding costs no more than 4 bytes
 * (a long kernel has one of these per statement). */
typedef struct Stmt {
    uint8_t kind;           /* StmtKind */
    /* S_TILE declared type: has_type; space (Space); dtype name (may be a dtype param) */
    bool has_type;
    uint8_t space;
    bool has_else;          /* S_IF */
    uint16_t assign_op;     /* S_ASSIGN: T_ASSIGN, T_PLUSEQ, ... */
    int rank;               /* of shape */
    int nbody, nels;
    Loc loc;
    const char *name;       /* S_TILE, S_LET, S_FOR (loop var) */
    Loc name_loc;
    const char *dtype_name; Loc dtype_loc;
    Expr **shape;
    Expr *target;           /* S_ASSIGN */
    Expr *value;            /* init / assigned value / if cond */
    Expr *lo, *hi, *step, *pipeline;   /* S_FOR (step/pipeline may be NULL) */
    struct Stmt **body;     /* S_FOR, S_IF then, S_BLOCK: nbody */
    struct Stmt **els;      /* S_IF else (NULL if none): nels */
} Stmt;

typedef enum ParamClass { PC_CONST = 0, PC_TENSOR, PC_SCALAR } ParamClass;

typedef struct AstParam {
    const char *name; Loc loc;
    uint8_t cls;             /* ParamClass */
    const char *type_name;   /* const: "int" | "bool" | "float" | "dtype"; tensor/scalar: dtype (or dtype param) */
    Loc type_loc;
    Expr *deflt;             /* const default (may be NULL: then it must be given) */
    Expr **dims; int rank;   /* tensor dims: E_NAME (named dim or const param) or E_INT */
} AstParam;

typedef struct AstKernel {
    const char *name; Loc loc;
    AstParam *consts; int nconsts;
    AstParam *params; int nparams;
    Expr **grid; int ngrid;  /* 1..3 */
    Loc grid_loc;
    Stmt **body; int nbody;
} AstKernel;

typedef struct AstModule { AstKernel *kernels; int nkernels; } AstModule;

/* Parse a token list. Recovers at `;` and `}` to report several errors. */
AstModule *fe_parse(Arena *a, const TokenList *tl, Diag *d);
void fe_print_ast(const AstModule *m, StrBuf *out);

/* ---- sema + lowering ---- */
typedef struct FeDefine {       /* -DNAME=VALUE or the API's constants */
    const char *name;
    const char *value;          /* text: "64", "true", "1.5", "bf16" */
} FeDefine;

/* Check the AST and lower every kernel to Tile IR, specialising compile-time
 * params from defines (unknown define names are errors). Returns NULL if any
 * error was reported. */
Module *fe_lower(Arena *a, const AstModule *ast, const char *source_name,
                 const FeDefine *defs, int ndefs, Diag *d);

/* The shared limits of lib/tc_limits.h on verified IR (limits.c), for .tile
 * and .tir input alike: params, dims, static extents, tile elements, and a
 * grid the metadata and the launch can carry. Returns the errors reported. */
int fe_check_limits(const Module *m, Diag *d);

/* Convenience: lex + parse + lower. */
Module *fe_compile(Arena *a, const char *file, const char *src, size_t len,
                   const FeDefine *defs, int ndefs, Diag *d);

#endif
