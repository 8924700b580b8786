/* parser.h - internal interface of the parser (parse.c: tokens, errors,
 * recovery, kernels; parse_stmt.c: statements and blocks; parse_expr.c:
 * expressions). Not part of the front end's public header: only these
 * files include it.
 *
 * The error functions follow parse.c's recovery rules: the first error of
 * a statement is reported and puts the parser in panic mode; later ones
 * are silent until fe_parse_sync_stmt.
 */
#ifndef TILEC_PARSER_H
#define TILEC_PARSER_H

#include "frontend.h"

typedef struct Parser {
    Arena *a;
    Diag *d;
    const Token *toks;
    int n, pos;
    int depth;      /* expression / block nesting */
    bool panic;     /* an error was reported; skip until sync */
} Parser;

/* ---- tokens ---- */

static inline const Token *peek(const Parser *p) { return &p->toks[p->pos]; }
static inline const Token *peek_at(const Parser *p, int k)
{
    int i = p->pos + k;
    return &p->toks[i < p->n ? i : p->n - 1];
}
static inline bool at(const Parser *p, TokKind k) { return peek(p)->kind == k; }

static inline const Token *advance(Parser *p)
{
    const Token *t = peek(p);
    if (t->kind != T_EOF)
        p->pos++;
    return t;
}

static inline bool accept(Parser *p, TokKind k)
{
    if (!at(p, k))
        return false;
    advance(p);
    return true;
}

/* ---- parse.c: errors, recovery, arrays in the arena ---- */

/* Report at token t and enter panic mode; false when silent (see parse.c). */
bool fe_parse_error(Parser *p, const Token *t, const char *fmt, ...) TC_PRINTF(3, 4);
/* "expected X, found Y" at the current token. */
bool fe_parse_expected(Parser *p, const char *what);
/* Consume a k or report it missing. */
bool fe_parse_expect(Parser *p, TokKind k);
/* `;` ends a statement: a missing one is reported where it belongs. */
void fe_parse_expect_semi(Parser *p);
/* A NAME into *name and *loc, or "expected `what`". */
bool fe_parse_expect_name(Parser *p, const char *what, const char **name, Loc *loc);
/* Token t's text (arena string). */
const char *fe_parse_text(Parser *p, const Token *t);
/* Skip to the end of a broken statement and leave panic mode. */
void fe_parse_sync_stmt(Parser *p);
/* One level deeper; false (reported) past the nesting limit. The caller
 * decrements p->depth either way. */
bool fe_parse_enter(Parser *p, const char *what);

typedef struct PtrVec { void **v; int n, cap; } PtrVec;
void fe_parse_push(Parser *p, PtrVec *vec, void *x);
/* The end of a list whose last item was just parsed: `close`, else
 * "expected ',' or 'close'" (in panic mode `close` is taken if there). */
void fe_parse_close_list(Parser *p, TokKind close);
/* item {',' item} close: one or more items into v. */
void fe_parse_list(Parser *p, PtrVec *v, Expr *(*item)(Parser *), TokKind close);

/* ---- parse_expr.c ---- */

Expr *fe_parse_expr(Parser *p);
Expr *fe_parse_primary(Parser *p);
/* Binary operators of precedence >= min (fe_bin_prec: 0 = not binary). */
Expr *fe_parse_binary(Parser *p, int min);
int fe_bin_prec(TokKind k);

/* ---- parse_stmt.c ---- */

/* block := '{' {stmt} '}'; *n gets the statement count. */
Stmt **fe_parse_block(Parser *p, int *n);

#endif
