/* parse.c - recursive-descent parser: TokenList -> AstModule.
 *
 * Each parse function opens with the grammar rule it implements
 * (docs/language.md has the whole grammar). Expressions use one function
 * per precedence level group; binary levels come from bin_prec().
 *
 * Error recovery: the first error of a statement is reported as
 * "expected X, found Y" at the offending token and puts the parser in panic
 * mode; later errors are silent until fe_parse_sync_stmt() has skipped to the next
 * `;` or `}` at the statement's nesting depth. A T_ERROR token (already
 * reported by the lexer) triggers the same recovery without a message.
 * Every recovery consumes at least one token, and nesting is capped at
 * PARSE_MAX_DEPTH so deep input cannot overflow the stack. Expressions built
 * by iteration (a flat `1 + 1 + ...`, `x^T^T...`) still make deep trees:
 * each node's height is checked against FE_MAX_EXPR_HEIGHT as it is built
 * (grown()), which bounds every later recursive walk of the tree.
 *
 * This file has the tokens, errors and recovery (parser.h) and the
 * kernels; statements are parse_stmt.c's and expressions parse_expr.c's.
 */
#include "parser.h"

#include <string.h>

enum { PARSE_MAX_DEPTH = FE_MAX_NESTING };

/* ---- errors and recovery ---- */

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
bool fe_parse_error(Parser *p, const Token *t, const char *fmt, ...)
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
bool fe_parse_expected(Parser *p, const char *what)
{
    const Token *t = peek(p);
    Token end;
    if (t->kind == T_EOF && p->pos > 0) {
        end = after_prev(p);
        t = &end;
    }
    return fe_parse_error(p, t, "expected %s, found %s", what, describe(p, peek(p)));
}

bool fe_parse_expect(Parser *p, TokKind k)
{
    if (accept(p, k))
        return true;
    fe_parse_expected(p, arena_printf(p->a, "'%s'", tok_names[k]));
    return false;
}

/* `;` ends a statement: a missing one on a later line is reported right
 * after the previous token, where it belongs. */
void fe_parse_expect_semi(Parser *p)
{
    if (p->panic || accept(p, T_SEMI))
        return;
    const Token *prev = p->pos > 0 ? &p->toks[p->pos - 1] : peek(p);
    if (peek(p)->kind == T_ERROR || prev->loc.line == peek(p)->loc.line || p->pos == 0) {
        fe_parse_expected(p, "';'");
        return;
    }
    Token end = after_prev(p);
    fe_parse_error(p, &end, "expected ';' at end of statement");
}

const char *fe_parse_text(Parser *p, const Token *t)
{
    return arena_strndup(p->a, t->start, (size_t)t->len);
}

bool fe_parse_expect_name(Parser *p, const char *what, const char **name, Loc *loc)
{
    if (!at(p, T_IDENT)) {
        fe_parse_expected(p, what);
        return false;
    }
    const Token *t = advance(p);
    *name = fe_parse_text(p, t);
    *loc = t->loc;
    return true;
}

/* Skip to the end of the broken statement: past the next `;` at depth 0,
 * past a `}` that closes a `{` opened while skipping, or up to a `}` that
 * closes the enclosing block (or `kernel`, or EOF). Consumes >= 1 token
 * unless already at a stop token. */
void fe_parse_sync_stmt(Parser *p)
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

bool fe_parse_enter(Parser *p, const char *what)
{
    if (++p->depth <= PARSE_MAX_DEPTH)
        return true;
    fe_parse_error(p, peek(p), "%s nested too deeply (limit %d)", what, PARSE_MAX_DEPTH);
    return false;
}

/* ---- growable arrays in the arena ---- */

void fe_parse_push(Parser *p, PtrVec *vec, void *x)
{
    if (vec->n == vec->cap) {
        int cap = vec->cap ? vec->cap * 2 : 4;
        vec->v = arena_grow_move(p->a, vec->v, sizeof(void *), (size_t)vec->n, (size_t)cap);
        vec->cap = cap;
    }
    vec->v[vec->n++] = x;
}

void fe_parse_close_list(Parser *p, TokKind close)
{
    if (!p->panic && !at(p, close))
        fe_parse_expected(p, arena_printf(p->a, "',' or '%s'", tok_names[close]));
    else
        accept(p, close);
}

void fe_parse_list(Parser *p, PtrVec *v, Expr *(*item)(Parser *), TokKind close)
{
    do
        fe_parse_push(p, v, item(p));
    while (!p->panic && accept(p, T_COMMA));
    fe_parse_close_list(p, close);
}

/* ---- kernels ---- */

/* const_param := NAME ':' ('int' | 'bool' | 'float' | 'dtype') ['=' binary] */
static void parse_const_param(Parser *p, AstParam *pa)
{
    pa->cls = PC_CONST;
    if (!fe_parse_expect_name(p, "compile-time parameter name", &pa->name, &pa->loc) || !fe_parse_expect(p, T_COLON))
        return;
    if (!fe_parse_expect_name(p, "parameter kind (int, bool, float or dtype)", &pa->type_name, &pa->type_loc))
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
        pa->deflt = fe_parse_binary(p, fe_bin_prec(T_PLUS));
}

/* tensor_dims := '[' (NAME | INT) {',' (NAME | INT)} ']' */
static void parse_tensor_dims(Parser *p, AstParam *pa)
{
    PtrVec v = { 0 };
    advance(p);
    do {
        const Token *t = peek(p);
        if (t->kind != T_IDENT && t->kind != T_INT) {
            fe_parse_expected(p, "dim name or integer");
            break;
        }
        fe_parse_push(p, &v, fe_parse_primary(p));
    } while (accept(p, T_COMMA));
    if (!p->panic && !accept(p, T_RBRACK))
        fe_parse_expected(p, at(p, T_EOF) || at(p, T_RPAREN) || at(p, T_LBRACE)
                              ? "']'" : "',' or ']' (a tensor dim is a name or an integer literal)");
    pa->dims = (Expr **)v.v;
    pa->rank = v.n;
}

/* param := NAME ':' 'global' DTYPE tensor_dims | NAME ':' DTYPE */
static void parse_param(Parser *p, AstParam *pa)
{
    if (!fe_parse_expect_name(p, "parameter name", &pa->name, &pa->loc) || !fe_parse_expect(p, T_COLON))
        return;
    bool global = accept(p, T_GLOBAL);
    if (at(p, T_SHARED) || at(p, T_REG)) {
        fe_parse_error(p, peek(p), "a kernel parameter is a 'global' tensor or a scalar");
        return;
    }
    if (!fe_parse_expect_name(p, global ? "tensor dtype (e.g. bf16)" : "parameter type", &pa->type_name, &pa->type_loc))
        return;
    pa->cls = global ? PC_TENSOR : PC_SCALAR;
    if (global && !at(p, T_LBRACK))
        fe_parse_expected(p, "'[' and the tensor's dims after its dtype");
    else if (!global && at(p, T_LBRACK))
        fe_parse_error(p, peek(p), "a tensor parameter needs 'global': write '%s: global %s[...]'", pa->name,
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
            fe_parse_expected(p, arena_printf(p->a, "',' or '%s'", tok_names[close]));
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
        fe_parse_error(p, peek(p), "expected 'grid(...)' after the parameters, found %s", describe(p, peek(p)));
        return;
    }
    advance(p);
    if (!fe_parse_expect(p, T_LPAREN))
        return;
    PtrVec v = { 0 };
    do {
        if (v.n == 3) {
            fe_parse_error(p, peek(p), "a grid has at most 3 dims");
            return;
        }
        fe_parse_push(p, &v, fe_parse_expr(p));
    } while (!p->panic && accept(p, T_COMMA));
    fe_parse_close_list(p, T_RPAREN);
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
    if (fe_parse_expect_name(p, "kernel name", &k->name, &k->loc)) {
        if (accept(p, T_LT))
            k->consts = parse_param_list(p, T_GT, true, &k->nconsts);
        if (!p->panic && fe_parse_expect(p, T_LPAREN))
            k->params = parse_param_list(p, T_RPAREN, false, &k->nparams);
        if (!p->panic)
            parse_grid(p, k);
    }
    if (!p->panic && !at(p, T_LBRACE))
        fe_parse_expected(p, "'{' to start the kernel body");
    if (p->panic)
        sync_header(p);
    if (at(p, T_LBRACE))
        k->body = fe_parse_block(p, &k->nbody);
}

/* module := {kernel} EOF */
AstModule *fe_parse(Arena *a, const TokenList *tl, Diag *d)
{
    Parser p = { .a = a, .d = d, .toks = tl->toks, .n = tl->n };
    AstModule *m = arena_alloc(a, sizeof *m);
    int cap = 0;
    while (!at(&p, T_EOF) && !diag_too_many(d)) {
        if (!at(&p, T_KERNEL)) {
            fe_parse_expected(&p, "'kernel'");
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
