/* parse.c - recursive-descent parser: TokenList -> AstModule.
 *
 * Each parse function opens with the grammar rule it implements
 * (docs/language.md has the whole grammar). Expressions use one function
 * per precedence level group; binary levels come from bin_prec().
 *
 * Error recovery: the first error of a statement is reported as
 * "expected X, found Y" at the offending token and puts the parser in panic
 * mode; later errors are silent until sync_stmt() has skipped to the next
 * `;` or `}` at the statement's nesting depth. A T_ERROR token (already
 * reported by the lexer) triggers the same recovery without a message.
 * Every recovery consumes at least one token, and nesting is capped at
 * PARSE_MAX_DEPTH so deep input cannot overflow the stack. Expressions built
 * by iteration (a flat `1 + 1 + ...`, `x^T^T...`) still make deep trees:
 * each node's height is checked against FE_MAX_EXPR_HEIGHT as it is built
 * (grown()), which bounds every later recursive walk of the tree.
 */
#include "frontend.h"

#include <string.h>

enum { PARSE_MAX_DEPTH = FE_MAX_NESTING };

typedef struct Parser {
    Arena *a;
    Diag *d;
    const Token *toks;
    int n, pos;
    int depth;      /* expression / block nesting */
    bool panic;     /* an error was reported; skip until sync */
} Parser;

static Expr *parse_expr(Parser *p);
static Stmt **parse_block(Parser *p, int *n);

/* ---- tokens ---- */

static const Token *peek(const Parser *p) { return &p->toks[p->pos]; }
static const Token *peek_at(const Parser *p, int k)
{
    int i = p->pos + k;
    return &p->toks[i < p->n ? i : p->n - 1];
}
static bool at(const Parser *p, TokKind k) { return peek(p)->kind == k; }

static const Token *advance(Parser *p)
{
    const Token *t = peek(p);
    if (t->kind != T_EOF)
        p->pos++;
    return t;
}

static bool accept(Parser *p, TokKind k)
{
    if (!at(p, k))
        return false;
    advance(p);
    return true;
}

/* "identifier 'x'", "'('", "end of file" (arena string). */
static const char *describe(Parser *p, const Token *t)
{
    switch (t->kind) {
    case T_EOF: return "end of file";
    case T_ERROR: return "invalid token";
    case T_IDENT: return arena_printf(p->a, "identifier '%.*s'", t->len, t->start);
    case T_INT: case T_FLOAT: return arena_printf(p->a, "number '%.*s'", t->len, t->start);
    default: return arena_printf(p->a, "'%s'", tok_names[t->kind]);
    }
}

/* Report at token t unless in panic mode or t is a lexer error; enter panic. */
/* Report at token t and enter panic mode. Silent (returns false) in panic
 * mode, at a T_ERROR, or at the end of a file that a lexer error ended (an
 * unterminated comment): the lexer has said what is wrong there. */
static bool error_at(Parser *p, const Token *t, const char *fmt, ...) TC_PRINTF(3, 4);
static bool error_at(Parser *p, const Token *t, const char *fmt, ...)
{
    bool eof_after_error = peek(p)->kind == T_EOF && p->pos > 0 && p->toks[p->pos - 1].kind == T_ERROR;
    bool report = !p->panic && t->kind != T_ERROR && !eof_after_error;
    if (report) {
        va_list ap;
        va_start(ap, fmt);
        diag_vreport(p->d, SEV_ERROR, t->loc, fmt, ap);
        va_end(ap);
    }
    p->panic = true;
    return report;
}

/* Just past the previous token: where a missing token belongs. */
static Token after_prev(const Parser *p)
{
    Token t = p->pos > 0 ? p->toks[p->pos - 1] : *peek(p);
    t.loc.col += t.len;
    t.kind = T_EOF;
    return t;
}

/* "expected X, found Y" at the current token; at the end of the file, right
 * after the last token (a line with text to show). */
static bool error_expected(Parser *p, const char *what)
{
    const Token *t = peek(p);
    Token end;
    if (t->kind == T_EOF && p->pos > 0) {
        end = after_prev(p);
        t = &end;
    }
    return error_at(p, t, "expected %s, found %s", what, describe(p, peek(p)));
}

static bool expect(Parser *p, TokKind k)
{
    if (accept(p, k))
        return true;
    error_expected(p, arena_printf(p->a, "'%s'", tok_names[k]));
    return false;
}

/* `;` ends a statement: a missing one on a later line is reported right
 * after the previous token, where it belongs. */
static void expect_semi(Parser *p)
{
    if (p->panic || accept(p, T_SEMI))
        return;
    const Token *prev = p->pos > 0 ? &p->toks[p->pos - 1] : peek(p);
    if (peek(p)->kind == T_ERROR || prev->loc.line == peek(p)->loc.line || p->pos == 0) {
        error_expected(p, "';'");
        return;
    }
    Token end = after_prev(p);
    error_at(p, &end, "expected ';' at end of statement");
}

static const char *tok_text(Parser *p, const Token *t)
{
    return arena_strndup(p->a, t->start, (size_t)t->len);
}

/* Skip to the end of the broken statement: past the next `;` at depth 0,
 * past a `}` that closes a `{` opened while skipping, or up to a `}` that
 * closes the enclosing block (or `kernel`, or EOF). Consumes >= 1 token
 * unless already at a stop token. */
static void sync_stmt(Parser *p)
{
    int depth = 0;
    p->panic = false;
    for (;;) {
        TokKind k = peek(p)->kind;
        if (k == T_EOF || k == T_KERNEL || (k == T_RBRACE && depth == 0))
            return;
        advance(p);
        if (k == T_LBRACE || k == T_LPAREN || k == T_LBRACK)
            depth++;
        else if (k == T_RPAREN || k == T_RBRACK)
            depth -= depth > 0;
        else if (k == T_RBRACE && --depth == 0)
            return;
        else if (k == T_SEMI && depth == 0)
            return;
    }
}

static bool enter(Parser *p, const char *what)
{
    if (++p->depth <= PARSE_MAX_DEPTH)
        return true;
    error_at(p, peek(p), "%s nested too deeply (limit %d)", what, PARSE_MAX_DEPTH);
    return false;
}

/* ---- growable arrays in the arena ---- */

typedef struct PtrVec { void **v; int n, cap; } PtrVec;

static void vec_push(Parser *p, PtrVec *vec, void *x)
{
    if (vec->n == vec->cap) {
        int cap = vec->cap ? vec->cap * 2 : 4;
        vec->v = arena_grow_move(p->a, vec->v, sizeof(void *), (size_t)vec->n, (size_t)cap);
        vec->cap = cap;
    }
    vec->v[vec->n++] = x;
}

/* ---- expressions ---- */

static Expr *new_expr(Parser *p, ExprKind k, Loc loc)
{
    Expr *e = arena_alloc(p->a, sizeof *e);
    e->kind = (uint8_t)k;
    e->loc = loc;
    e->height = 1;
    return e;
}

static int height_of(const Expr *e) { return e ? e->height : 0; }

/* Set e's height from its children (all parsed); a tree deeper than
 * FE_MAX_EXPR_HEIGHT is an error at e (the operator that went too deep), its
 * children dropped so that nothing after the parser walks them. */
static Expr *grown(Parser *p, Expr *e)
{
    int h = height_of(e->a);
    if (height_of(e->b) > h) h = height_of(e->b);
    if (height_of(e->c) > h) h = height_of(e->c);
    for (int i = 0; i < e->nargs; i++)
        if (height_of(e->args[i]) > h)
            h = height_of(e->args[i]);
    e->height = h + 1;
    if (e->height <= FE_MAX_EXPR_HEIGHT)
        return e;
    if (!p->panic)
        diag_error(p->d, e->loc, "expression nested too deeply (limit %d)", FE_MAX_EXPR_HEIGHT);
    p->panic = true;
    Expr *bad = new_expr(p, E_INT, e->loc);
    return bad;
}

/* A placeholder for a broken expression, so callers need no NULL checks. */
static Expr *bad_expr(Parser *p)
{
    return new_expr(p, E_INT, peek(p)->loc);
}

/* primary := INT | FLOAT | 'true' | 'false' | 'inf' | NAME | '(' expr ')' | '[' [expr {',' expr}] ']' */
static Expr *parse_primary(Parser *p)
{
    const Token *t = peek(p);
    Expr *e;
    switch (t->kind) {
    case T_INT: e = new_expr(p, E_INT, t->loc); e->ival = t->ival; break;
    case T_FLOAT: e = new_expr(p, E_FLOAT, t->loc); e->fval = t->fval; break;
    case T_TRUE: case T_FALSE:
        e = new_expr(p, E_BOOL, t->loc);
        e->bval = t->kind == T_TRUE;
        break;
    case T_INF: e = new_expr(p, E_INF, t->loc); break;
    case T_IDENT: e = new_expr(p, E_NAME, t->loc); e->name = tok_text(p, t); break;
    case T_LPAREN:
        advance(p);
        e = parse_expr(p);
        expect(p, T_RPAREN);
        return e;
    case T_LBRACK: {   /* a list: reshape(t, [4, 8]) */
        advance(p);
        e = new_expr(p, E_LIST, t->loc);
        PtrVec args = { 0 };
        if (!at(p, T_RBRACK))
            do
                vec_push(p, &args, parse_expr(p));
            while (!p->panic && accept(p, T_COMMA));
        e->args = (Expr **)args.v;
        e->nargs = args.n;
        expect(p, T_RBRACK);
        return grown(p, e);
    }
    default:
        error_expected(p, "expression");
        return bad_expr(p);
    }
    advance(p);
    return e;
}

/* index_elem := ':' | '*' | expr [':' ['+'] expr]    (before ',' or ']') */
static Expr *parse_index_elem(Parser *p)
{
    const Token *t = peek(p);
    TokKind next = (TokKind)peek_at(p, 1)->kind;
    if ((t->kind == T_COLON || t->kind == T_STAR) && (next == T_COMMA || next == T_RBRACK)) {
        advance(p);
        return new_expr(p, t->kind == T_COLON ? E_FULL : E_NEWAXIS, t->loc);
    }
    if (t->kind == T_RBRACK || t->kind == T_COMMA) {
        error_expected(p, "index, window `start : +size`, ':' or '*'");
        return bad_expr(p);
    }
    Expr *e = parse_expr(p);
    if (!at(p, T_COLON))
        return e;
    const Token *colon = advance(p);
    Expr *s = new_expr(p, E_SLICE, colon->loc);
    s->a = e;
    if (accept(p, T_PLUS))   /* `a : b` (an end, not a size) is checked by the index's user */
        s->op = T_PLUS;
    s->b = parse_expr(p);
    return grown(p, s);
}

/* index := '[' index_elem {',' index_elem} ']' */
static Expr *parse_index(Parser *p, Expr *base)
{
    const Token *lb = advance(p);
    Expr *e = new_expr(p, E_INDEX, lb->loc);
    e->a = base;
    PtrVec args = { 0 };
    do
        vec_push(p, &args, parse_index_elem(p));
    while (!p->panic && accept(p, T_COMMA));
    if (!p->panic && !at(p, T_RBRACK))
        error_expected(p, "',' or ']'");
    else
        accept(p, T_RBRACK);
    e->args = (Expr **)args.v;
    e->nargs = args.n;
    return grown(p, e);
}

/* arg := NAME '=' expr | expr */
static Expr *parse_arg(Parser *p)
{
    if (at(p, T_IDENT) && peek_at(p, 1)->kind == T_ASSIGN) {
        const Token *t = advance(p);
        advance(p);
        Expr *e = new_expr(p, E_KWARG, t->loc);
        e->name = tok_text(p, t);
        e->a = parse_expr(p);
        return grown(p, e);
    }
    return parse_expr(p);
}

/* call := NAME '(' [arg {',' arg}] ')' */
static Expr *parse_call(Parser *p, Expr *callee)
{
    const Token *lp = advance(p);
    Expr *e = new_expr(p, E_CALL, callee->loc);
    if (callee->kind != E_NAME)
        error_at(p, lp, "only a builtin or a dtype name can be called");
    e->name = callee->name;
    PtrVec args = { 0 };
    if (!at(p, T_RPAREN)) {
        do
            vec_push(p, &args, parse_arg(p));
        while (!p->panic && accept(p, T_COMMA));
    }
    if (!p->panic && !at(p, T_RPAREN))
        error_expected(p, "',' or ')'");
    else
        accept(p, T_RPAREN);
    e->args = (Expr **)args.v;
    e->nargs = args.n;
    return grown(p, e);
}

/* postfix := primary { '^T' | index | '(' args ')' | '.' NAME } */
static Expr *parse_postfix(Parser *p)
{
    Expr *e = parse_primary(p);
    while (!p->panic) {
        const Token *t = peek(p);
        if (t->kind == T_CARET_T) {
            advance(p);
            Expr *x = new_expr(p, E_TRANSPOSE, t->loc);
            x->a = e;
            e = grown(p, x);
        } else if (t->kind == T_LBRACK) {
            e = parse_index(p, e);
        } else if (t->kind == T_LPAREN) {
            e = parse_call(p, e);
        } else if (t->kind == T_DOT) {
            advance(p);
            Expr *x = new_expr(p, E_MEMBER, t->loc);
            x->a = e;
            if (at(p, T_IDENT))
                x->name = tok_text(p, advance(p));
            else
                error_expected(p, "field name after '.'");
            e = grown(p, x);
        } else {
            break;
        }
    }
    return e;
}

/* unary := ('-' | '!' | '~') unary | postfix */
static Expr *parse_unary(Parser *p)
{
    const Token *t = peek(p);
    if (t->kind != T_MINUS && t->kind != T_BANG && t->kind != T_TILDE)
        return parse_postfix(p);
    advance(p);
    Expr *e = new_expr(p, E_UNARY, t->loc);
    e->op = t->kind;
    if (!enter(p, "expression"))
        e->a = bad_expr(p);
    else
        e->a = parse_unary(p);
    p->depth--;
    return grown(p, e);
}

/* Binary precedence, 0 = not a binary operator. ORDER: COMMON precedence. */
static int bin_prec(TokKind k)
{
    switch (k) {
    case T_OROR: return 1;
    case T_ANDAND: return 2;
    case T_EQ: case T_NE: return 3;
    case T_LT: case T_LE: case T_GT: case T_GE: return 4;
    case T_PIPE: return 5;
    case T_CARET: return 6;
    case T_AMP: return 7;
    case T_SHL: case T_SHR: return 8;
    case T_PLUS: case T_MINUS: return 9;
    case T_STAR: case T_SLASH: case T_PERCENT: case T_AT: return 10;
    default: return 0;
    }
}

/* binary := unary { BINOP unary }   (precedence climbing, left assoc.,
 * operators of precedence >= min only) */
static Expr *parse_binary(Parser *p, int min)
{
    Expr *lhs = parse_unary(p);
    for (;;) {
        const Token *t = peek(p);
        int prec = bin_prec((TokKind)t->kind);
        if (p->panic || prec == 0 || prec < min)
            return lhs;
        advance(p);
        Expr *e = new_expr(p, E_BINARY, t->loc);
        e->op = t->kind;
        e->a = lhs;
        e->b = parse_binary(p, prec + 1);
        lhs = grown(p, e);
    }
}

/* expr := binary ['?' expr ':' expr]   (right assoc.) */
static Expr *parse_expr(Parser *p)
{
    if (!enter(p, "expression")) {
        p->depth--;
        return bad_expr(p);
    }
    Expr *c = parse_binary(p, 1);
    if (!p->panic && at(p, T_QUESTION)) {
        const Token *q = advance(p);
        Expr *e = new_expr(p, E_TERNARY, q->loc);
        e->a = c;
        e->b = parse_expr(p);
        if (!p->panic)
            expect(p, T_COLON);
        e->c = parse_expr(p);
        c = grown(p, e);
    }
    p->depth--;
    return c;
}

/* ---- statements ---- */

static Stmt *new_stmt(Parser *p, StmtKind k, Loc loc)
{
    Stmt *s = arena_alloc(p->a, sizeof *s);
    s->kind = (uint8_t)k;
    s->loc = loc;
    return s;
}

static bool expect_name(Parser *p, const char *what, const char **name, Loc *loc)
{
    if (!at(p, T_IDENT)) {
        error_expected(p, what);
        return false;
    }
    const Token *t = advance(p);
    *name = tok_text(p, t);
    *loc = t->loc;
    return true;
}

/* shape := '[' expr {',' expr} ']' */
static Expr **parse_shape(Parser *p, int *rank)
{
    PtrVec v = { 0 };
    if (!expect(p, T_LBRACK))
        return NULL;
    do
        vec_push(p, &v, parse_expr(p));
    while (!p->panic && accept(p, T_COMMA));
    if (!p->panic && !at(p, T_RBRACK))
        error_expected(p, "',' or ']'");
    else
        accept(p, T_RBRACK);
    *rank = v.n;
    return (Expr **)v.v;
}

/* tile_type := ['shared' | 'reg'] DTYPE shape */
static void parse_tile_type(Parser *p, Stmt *s)
{
    s->has_type = true;
    if (accept(p, T_SHARED))
        s->space = SP_SHARED;
    else if (accept(p, T_REG))
        s->space = SP_REG;
    else if (at(p, T_GLOBAL))
        error_at(p, peek(p), "a tile lives in 'shared' or 'reg' memory, not 'global'");
    if (!expect_name(p, "tile dtype (e.g. f32)", &s->dtype_name, &s->dtype_loc))
        return;
    s->shape = parse_shape(p, &s->rank);
}

/* tile_stmt := 'tile' NAME [':' tile_type] '=' expr ';' */
static Stmt *parse_tile(Parser *p)
{
    Stmt *s = new_stmt(p, S_TILE, advance(p)->loc);
    if (!expect_name(p, "tile name", &s->name, &s->name_loc))
        return s;
    if (accept(p, T_COLON))
        parse_tile_type(p, s);
    if (!p->panic && expect(p, T_ASSIGN))
        s->value = parse_expr(p);
    expect_semi(p);
    return s;
}

/* let_stmt := 'let' NAME '=' expr ';' */
static Stmt *parse_let(Parser *p)
{
    Stmt *s = new_stmt(p, S_LET, advance(p)->loc);
    if (!expect_name(p, "variable name", &s->name, &s->name_loc))
        return s;
    if (at(p, T_COLON))
        error_at(p, peek(p), "a 'let' takes no type; declare a typed tile with 'tile %s: DTYPE[...] = ...'",
                 s->name);
    else if (expect(p, T_ASSIGN))
        s->value = parse_expr(p);
    expect_semi(p);
    return s;
}

/* for_stmt := 'for' NAME 'in' expr '..' expr ['step' expr]
 *             ['pipeline' '(' expr ')'] block */
static Stmt *parse_for(Parser *p)
{
    Stmt *s = new_stmt(p, S_FOR, advance(p)->loc);
    if (!expect_name(p, "loop variable name", &s->name, &s->name_loc) || !expect(p, T_IN))
        return s;
    s->lo = parse_expr(p);
    if (!p->panic && expect(p, T_DOTDOT))
        s->hi = parse_expr(p);
    if (!p->panic && accept(p, T_STEP))
        s->step = parse_expr(p);
    if (!p->panic && accept(p, T_PIPELINE) && expect(p, T_LPAREN)) {
        s->pipeline = parse_expr(p);
        if (!p->panic)
            expect(p, T_RPAREN);
    }
    if (!p->panic)
        s->body = parse_block(p, &s->nbody);
    return s;
}

/* if_stmt := 'if' expr block ['else' (if_stmt | block)] */
static Stmt *parse_if(Parser *p)
{
    Stmt *s = new_stmt(p, S_IF, advance(p)->loc);
    s->value = parse_expr(p);
    if (p->panic)
        return s;
    s->body = parse_block(p, &s->nbody);
    if (p->panic || !accept(p, T_ELSE))
        return s;
    s->has_else = true;
    if (at(p, T_IF)) {
        if (!enter(p, "statement")) {
            p->depth--;
            return s;
        }
        Stmt *elif = parse_if(p);
        p->depth--;
        s->els = arena_alloc(p->a, sizeof(Stmt *));
        s->els[0] = elif;
        s->nels = 1;
    } else {
        s->els = parse_block(p, &s->nels);
    }
    return s;
}

static bool is_assign_op(TokKind k)
{
    return k == T_ASSIGN || k == T_PLUSEQ || k == T_MINUSEQ || k == T_STAREQ || k == T_SLASHEQ;
}

/* assign_stmt := (NAME | NAME index) ('=' | '+=' | '-=' | '*=' | '/=') expr ';'
 * call_stmt   := NAME '(' args ')' ';'       (atomic_add: sema checks the name) */
static Stmt *parse_assign(Parser *p)
{
    Stmt *s = new_stmt(p, S_ASSIGN, peek(p)->loc);
    s->target = parse_expr(p);
    if (p->panic)
        return s;
    const Token *op = peek(p);
    if (s->target->kind == E_CALL && op->kind == T_SEMI) {
        s->kind = S_CALL;
        s->value = s->target;
        s->target = NULL;
        expect_semi(p);
        return s;
    }
    if (!is_assign_op((TokKind)op->kind)) {
        error_expected(p, "'=', '+=', '-=', '*=' or '/=' (a statement is a declaration, an assignment, a store "
                          "or atomic_add(...))");
        return s;
    }
    if (s->target->kind != E_NAME && !(s->target->kind == E_INDEX && s->target->a->kind == E_NAME))
        error_at(p, op, "cannot assign to this expression: the target must be a name or a tensor window");
    advance(p);
    s->assign_op = op->kind;
    s->value = parse_expr(p);
    expect_semi(p);
    return s;
}

/* stmt := tile_stmt | let_stmt | for_stmt | if_stmt | block | assign_stmt | call_stmt */
static Stmt *parse_stmt(Parser *p)
{
    const Token *t = peek(p);
    switch (t->kind) {
    case T_TILE: return parse_tile(p);
    case T_LET: return parse_let(p);
    case T_FOR: return parse_for(p);
    case T_IF: return parse_if(p);
    case T_LBRACE: {
        Stmt *s = new_stmt(p, S_BLOCK, t->loc);
        s->body = parse_block(p, &s->nbody);
        return s;
    }
    case T_ELSE:
        error_at(p, t, "'else' without a preceding 'if' block");
        return NULL;
    case T_STEP: case T_PIPELINE: case T_IN:
        error_at(p, t, "'%s' is only allowed in a 'for' header", tok_names[t->kind]);
        return NULL;
    case T_GRID:
        error_at(p, t, "'grid' is only allowed in a kernel header, after the parameters");
        return NULL;
    case T_GLOBAL: case T_SHARED: case T_REG:
        error_at(p, t, "'%s' is only allowed in a declared type", tok_names[t->kind]);
        return NULL;
    default:
        return parse_assign(p);
    }
}

/* Skip the rest of a `{ ... }` group whose '{' was consumed. */
static void skip_group(Parser *p)
{
    for (int depth = 1; depth > 0 && !at(p, T_EOF);) {
        TokKind k = (TokKind)advance(p)->kind;
        depth += (k == T_LBRACE) - (k == T_RBRACE);
    }
    p->panic = false;
}

/* block := '{' {stmt} '}' */
static Stmt **parse_block(Parser *p, int *n)
{
    const Token *lb = peek(p);
    *n = 0;
    if (!expect(p, T_LBRACE))
        return NULL;
    if (!enter(p, "block")) {
        p->depth--;
        skip_group(p);
        return NULL;
    }
    PtrVec v = { 0 };
    while (!at(p, T_RBRACE) && !at(p, T_EOF) && !at(p, T_KERNEL)) {
        int start = p->pos;
        Stmt *s = parse_stmt(p);
        if (s)
            vec_push(p, &v, s);
        if (p->panic) {
            sync_stmt(p);
            if (p->pos == start && !at(p, T_RBRACE))
                advance(p);
        }
    }
    p->depth--;
    if (!at(p, T_RBRACE)) {
        if (error_expected(p, "'}'"))
            diag_note(p->d, lb->loc, "to match this '{'");
    } else {
        advance(p);
    }
    *n = v.n;
    return (Stmt **)v.v;
}

/* ---- kernels ---- */

/* const_param := NAME ':' ('int' | 'bool' | 'float' | 'dtype') ['=' binary] */
static void parse_const_param(Parser *p, AstParam *pa)
{
    pa->cls = PC_CONST;
    if (!expect_name(p, "compile-time parameter name", &pa->name, &pa->loc) || !expect(p, T_COLON))
        return;
    if (!expect_name(p, "parameter kind (int, bool, float or dtype)", &pa->type_name, &pa->type_loc))
        return;
    static const char *const kinds[] = { "int", "bool", "float", "dtype" };
    bool ok = false;
    for (size_t i = 0; i < TC_COUNTOF(kinds); i++)
        ok |= strcmp(pa->type_name, kinds[i]) == 0;
    if (!ok)
        diag_error(p->d, pa->type_loc,
                   "unknown compile-time parameter kind '%s': expected int, bool, float or dtype", pa->type_name);
    /* The default stops before comparisons so that '>' closes the list. */
    if (accept(p, T_ASSIGN))
        pa->deflt = parse_binary(p, bin_prec(T_PLUS));
}

/* tensor_dims := '[' (NAME | INT) {',' (NAME | INT)} ']' */
static void parse_tensor_dims(Parser *p, AstParam *pa)
{
    PtrVec v = { 0 };
    advance(p);
    do {
        const Token *t = peek(p);
        if (t->kind != T_IDENT && t->kind != T_INT) {
            error_expected(p, "dim name or integer");
            break;
        }
        vec_push(p, &v, parse_primary(p));
    } while (accept(p, T_COMMA));
    if (!p->panic && !accept(p, T_RBRACK))
        error_expected(p, at(p, T_EOF) || at(p, T_RPAREN) || at(p, T_LBRACE)
                              ? "']'" : "',' or ']' (a tensor dim is a name or an integer literal)");
    pa->dims = (Expr **)v.v;
    pa->rank = v.n;
}

/* param := NAME ':' 'global' DTYPE tensor_dims | NAME ':' DTYPE */
static void parse_param(Parser *p, AstParam *pa)
{
    if (!expect_name(p, "parameter name", &pa->name, &pa->loc) || !expect(p, T_COLON))
        return;
    bool global = accept(p, T_GLOBAL);
    if (at(p, T_SHARED) || at(p, T_REG)) {
        error_at(p, peek(p), "a kernel parameter is a 'global' tensor or a scalar");
        return;
    }
    if (!expect_name(p, global ? "tensor dtype (e.g. bf16)" : "parameter type", &pa->type_name, &pa->type_loc))
        return;
    pa->cls = global ? PC_TENSOR : PC_SCALAR;
    if (global && !at(p, T_LBRACK))
        error_expected(p, "'[' and the tensor's dims after its dtype");
    else if (!global && at(p, T_LBRACK))
        error_at(p, peek(p), "a tensor parameter needs 'global': write '%s: global %s[...]'", pa->name,
                 pa->type_name);
    else if (global)
        parse_tensor_dims(p, pa);
}

/* A comma-separated list of params up to `close`; a trailing comma is fine. */
static AstParam *parse_param_list(Parser *p, TokKind close, bool consts, int *n)
{
    AstParam *v = NULL;
    int cap = 0;
    *n = 0;
    while (!p->panic && !at(p, close)) {
        if (*n == cap) {
            v = arena_grow(p->a, v, sizeof *v, (size_t)cap, (size_t)(cap ? cap * 2 : 4));
            cap = cap ? cap * 2 : 4;
        }
        AstParam *pa = &v[(*n)++];
        if (consts)
            parse_const_param(p, pa);
        else
            parse_param(p, pa);
        if (!p->panic && !accept(p, T_COMMA) && !at(p, close))
            error_expected(p, arena_printf(p->a, "',' or '%s'", tok_names[close]));
    }
    if (!p->panic)
        advance(p);
    return v;
}

/* grid := 'grid' '(' expr [',' expr [',' expr]] ')' */
static void parse_grid(Parser *p, AstKernel *k)
{
    k->grid_loc = peek(p)->loc;
    if (!at(p, T_GRID)) {
        error_at(p, peek(p), "expected 'grid(...)' after the parameters, found %s", describe(p, peek(p)));
        return;
    }
    advance(p);
    if (!expect(p, T_LPAREN))
        return;
    PtrVec v = { 0 };
    do {
        if (v.n == 3) {
            error_at(p, peek(p), "a grid has at most 3 dims");
            return;
        }
        vec_push(p, &v, parse_expr(p));
    } while (!p->panic && accept(p, T_COMMA));
    if (!p->panic && !at(p, T_RPAREN))
        error_expected(p, "',' or ')'");
    else
        accept(p, T_RPAREN);
    k->grid = (Expr **)v.v;
    k->ngrid = v.n;
}

/* After a header error: skip to the body's '{' (parsed so its errors are
 * found too) or to the next kernel. */
static void sync_header(Parser *p)
{
    p->panic = false;
    while (!at(p, T_LBRACE) && !at(p, T_KERNEL) && !at(p, T_EOF))
        advance(p);
}

/* kernel := 'kernel' NAME ['<' const_param {',' const_param} '>']
 *           '(' [param {',' param}] ')' grid block */
static void parse_kernel(Parser *p, AstKernel *k)
{
    k->loc = advance(p)->loc;
    if (expect_name(p, "kernel name", &k->name, &k->loc)) {
        if (accept(p, T_LT))
            k->consts = parse_param_list(p, T_GT, true, &k->nconsts);
        if (!p->panic && expect(p, T_LPAREN))
            k->params = parse_param_list(p, T_RPAREN, false, &k->nparams);
        if (!p->panic)
            parse_grid(p, k);
    }
    if (!p->panic && !at(p, T_LBRACE))
        error_expected(p, "'{' to start the kernel body");
    if (p->panic)
        sync_header(p);
    if (at(p, T_LBRACE))
        k->body = parse_block(p, &k->nbody);
}

/* module := {kernel} EOF */
AstModule *fe_parse(Arena *a, const TokenList *tl, Diag *d)
{
    Parser p = { .a = a, .d = d, .toks = tl->toks, .n = tl->n };
    AstModule *m = arena_alloc(a, sizeof *m);
    int cap = 0;
    while (!at(&p, T_EOF) && !diag_too_many(d)) {
        if (!at(&p, T_KERNEL)) {
            error_expected(&p, "'kernel'");
            p.panic = false;
            do
                advance(&p);
            while (!at(&p, T_KERNEL) && !at(&p, T_EOF));
            continue;
        }
        if (m->nkernels == cap) {
            m->kernels = arena_grow(a, m->kernels, sizeof(AstKernel), (size_t)cap, (size_t)(cap ? cap * 2 : 2));
            cap = cap ? cap * 2 : 2;
        }
        parse_kernel(&p, &m->kernels[m->nkernels++]);
        p.panic = false;
    }
    if (m->nkernels == 0 && d->nerrors == 0)
        diag_error(d, (Loc){ tl->toks[tl->n - 1].loc.file, 0, 0 }, "no kernel in file");
    return m;
}
