/* parse_int.h - the .tir reader's tokens and state, shared by parse.c
 * (kernels, types, ops and regions), parse_lex.c (errors, the lexer,
 * tokens and numbers) and parse_attr.c (op attributes). parse.c's header
 * has the grammar. Not part of the IR's interface (ir.h). */
#ifndef TILEC_PARSE_INT_H
#define TILEC_PARSE_INT_H

#include "ir.h"

#include <string.h>

enum { MAX_DEPTH = 200, MAX_COUNT = 65535 };

typedef enum TokKind { T_EOF, T_NL, T_IDENT, T_NUM, T_VAL, T_FUNC, T_STR, T_PUNCT } TokKind;

typedef struct Tok {
    TokKind kind;
    char ch;            /* T_PUNCT */
    const char *s;      /* text (after the sigil for T_VAL/T_FUNC; decoded for T_STR) */
    int n;
    int line, col;
} Tok;

typedef struct Sym { const char *s; int n; ValId v; } Sym;

typedef struct Parser {
    Arena *a;
    Diag *d;
    const char *name;      /* the .tir file */
    const char *locfile;   /* file for loc(L:C) */
    Tok *toks; int ntoks, pos;
    bool err;
    Module *m;
    Func *f;
    Sym *syms; int nsyms, capsyms;
    int depth;
} Parser;

static inline bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static inline bool is_digit(int c) { return c >= '0' && c <= '9'; }
static inline bool is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static inline Loc tok_loc(const Parser *p, const Tok *t) { return (Loc){ p->name, t->line, t->col }; }

/* ---- tokens ---- */

static inline Tok *peek(Parser *p) { return &p->toks[p->pos]; }
static inline Tok *peek2(Parser *p) { return &p->toks[p->pos + 1 < p->ntoks ? p->pos + 1 : p->pos]; }
static inline Tok *next(Parser *p)
{
    Tok *t = &p->toks[p->pos];
    if (t->kind != T_EOF)
        p->pos++;
    return t;
}
static inline bool tok_punct(const Tok *t, char c) { return t->kind == T_PUNCT && t->ch == c; }
static inline bool tok_is(const Tok *t, const char *word)
{
    return t->kind == T_IDENT && (int)strlen(word) == t->n && memcmp(t->s, word, (size_t)t->n) == 0;
}
static inline bool accept(Parser *p, char c)
{
    if (!tok_punct(peek(p), c))
        return false;
    next(p);
    return true;
}
static inline void skip_nl(Parser *p)
{
    while (peek(p)->kind == T_NL)
        next(p);
}
static inline char *tok_str(Parser *p, const Tok *t) { return arena_strndup(p->a, t->s, (size_t)t->n); }

/* ---- parse_lex.c ---- */

/* The first error stops the parse: later ones are dropped. */
void tp_err(Parser *p, const Tok *t, const char *fmt, ...) TC_PRINTF(3, 4);
const char *tp_tok_desc(Parser *p, const Tok *t);   /* "expected X, got Y" */
bool tp_lex(Parser *p, const char *s, size_t len);   /* the whole text into p->toks */
bool tp_expect(Parser *p, char c, const char *where);
bool tp_expect_nl(Parser *p, const char *after);
bool tp_int(Parser *p, int64_t *out);                 /* ['-'] decimal or 0x hex */
bool tp_float(Parser *p, double *out);                /* ['-'] NUMBER | inf | nan */
bool tp_int_range(Parser *p, int64_t lo, int64_t hi, const char *what, int64_t *out);

/* ---- parse_attr.c ---- */

typedef struct Attrs {
    int64_t iattr[4];
    int64_t *list; int nlist;
    int value_pos;      /* token index of a const's value, or -1 */
} Attrs;

/* attrs := '{' [attr (',' attr)*] '}' for op `code` (at the '{'). */
bool tp_attrs(Parser *p, OpCode code, Attrs *at);
/* A const's value (kept by tp_attrs) read now that its type is known. */
bool tp_const_value(Parser *p, Op *op, const Attrs *at, Tok *optok);

#endif
