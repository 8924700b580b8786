/* parse_lex.c - the .tir reader's errors, lexer, tokens and numbers: a
 * hand-written lexer turns the whole text into tokens (newlines are tokens:
 * one op per line). */
#include "parse_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- errors ---- */

void tp_err(Parser *p, const Tok *t, const char *fmt, ...)
{
    if (p->err)
        return;
    p->err = true;
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(p->d, SEV_ERROR, tok_loc(p, t), fmt, ap);
    va_end(ap);
}

/* A short description of a token for "expected X, got Y". */
const char *tp_tok_desc(Parser *p, const Tok *t)
{
    switch (t->kind) {
    case T_EOF: return "end of input";
    case T_NL: return "end of line";
    case T_PUNCT: return arena_printf(p->a, "'%c'", t->ch);
    case T_VAL: return arena_printf(p->a, "'%%%.*s'", t->n > 40 ? 40 : t->n, t->s);
    case T_FUNC: return arena_printf(p->a, "'@%.*s'", t->n > 40 ? 40 : t->n, t->s);
    case T_STR: return "a string";
    default: return arena_printf(p->a, "'%.*s'", t->n > 40 ? 40 : t->n, t->s);
    }
}

/* ---- lexer ---- */

typedef struct Lexer { const char *s; size_t len, i; int line; size_t bol; } Lexer;

static void push_tok(Parser *p, Tok t)
{
    if ((p->ntoks & (p->ntoks - 1)) == 0 && p->ntoks >= 16)
        p->toks = arena_grow(p->a, p->toks, sizeof(Tok), (size_t)p->ntoks, (size_t)p->ntoks * 2);
    else if (p->ntoks == 0)
        p->toks = arena_alloc(p->a, sizeof(Tok) * 16);
    p->toks[p->ntoks++] = t;
}

/* String literal: "..." with \" \\ \n \t \xNN escapes. */
static bool lex_string(Parser *p, Lexer *L, Tok *t)
{
    StrBuf sb = { 0 };
    L->i++;
    while (L->i < L->len && L->s[L->i] != '"' && L->s[L->i] != '\n') {
        char c = L->s[L->i++];
        if (c == '\\' && L->i < L->len) {
            char e = L->s[L->i++];
            if (e == 'n') c = '\n';
            else if (e == 't') c = '\t';
            else if (e == 'x' && L->i + 1 < L->len) {
                char hx[3] = { L->s[L->i], L->s[L->i + 1], 0 };
                char *end;
                c = (char)strtol(hx, &end, 16);
                L->i += 2;
                if (end != hx + 2) { sb_free(&sb); tp_err(p, t, "bad \\x escape in string"); return false; }
            } else c = e;
        }
        if (c == 0) { sb_free(&sb); tp_err(p, t, "NUL character in string"); return false; }
        sb_putc(&sb, c);
    }
    if (L->i >= L->len || L->s[L->i] != '"') {
        sb_free(&sb);
        tp_err(p, t, "unterminated string");
        return false;
    }
    L->i++;
    t->kind = T_STR;
    t->s = arena_strndup(p->a, sb.buf ? sb.buf : "", sb.len);
    t->n = (int)sb.len;
    sb_free(&sb);
    return true;
}

/* Numbers: a digit, then letters, digits, '.', and a sign right after e/E/p/P
 * (so `1e-30`, `0x1.8p+3` and the tile shape `128x64xbf16` are one token). */
static void lex_number(Lexer *L, Tok *t)
{
    size_t st = L->i++;   /* a digit */
    while (L->i < L->len) {
        char c = L->s[L->i];
        char prev = L->s[L->i - 1];
        if (is_alnum(c) || c == '.')
            L->i++;
        else if ((c == '+' || c == '-') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P'))
            L->i++;
        else
            break;
    }
    t->kind = T_NUM;
    t->s = L->s + st;
    t->n = (int)(L->i - st);
}

static bool lex_one(Parser *p, Lexer *L)
{
    const char *s = L->s;
    char c = s[L->i];
    Tok t = { T_PUNCT, 0, s + L->i, 1, L->line, (int)(L->i - L->bol) + 1 };
    if (c == '\n') {
        t.kind = T_NL;
        L->i++;
        L->line++;
        L->bol = L->i;
    } else if (is_alpha(c)) {
        size_t st = L->i;
        while (L->i < L->len && is_alnum(s[L->i]))
            L->i++;
        t.kind = T_IDENT;
        t.n = (int)(L->i - st);
    } else if (is_digit(c)) {
        lex_number(L, &t);
    } else if ((c == '%' || c == '@') && L->i + 1 < L->len && is_alnum(s[L->i + 1])) {
        size_t st = ++L->i;
        while (L->i < L->len && is_alnum(s[L->i]))
            L->i++;
        t.kind = c == '%' ? T_VAL : T_FUNC;
        t.s = s + st;
        t.n = (int)(L->i - st);
    } else if (c == '"') {
        if (!lex_string(p, L, &t))
            return false;
    } else if (strchr("(){}[]<>,:=^#-", c) && c) {
        t.ch = c;
        L->i++;
    } else {
        unsigned char u = (unsigned char)c;
        if (u >= 0x20 && u < 0x7f)
            tp_err(p, &t, "unexpected character '%c'", c);
        else
            tp_err(p, &t, "unexpected byte 0x%02x", u);
        return false;
    }
    push_tok(p, t);
    return true;
}

bool tp_lex(Parser *p, const char *s, size_t len)
{
    Lexer L = { s, len, 0, 1, 0 };
    while (L.i < len) {
        char c = s[L.i];
        if (c == ' ' || c == '\t' || c == '\r') {
            L.i++;
        } else if (c == '/' && L.i + 1 < len && s[L.i + 1] == '/') {
            while (L.i < len && s[L.i] != '\n')
                L.i++;
        } else if (!lex_one(p, &L)) {
            return false;
        }
    }
    Tok eof = { T_EOF, 0, s + len, 0, L.line, (int)(L.i - L.bol) + 1 };
    push_tok(p, eof);
    return true;
}

/* ---- tokens ---- */

bool tp_expect(Parser *p, char c, const char *where)
{
    if (accept(p, c))
        return true;
    tp_err(p, peek(p), "expected '%c' %s, got %s", c, where, tp_tok_desc(p, peek(p)));
    return false;
}

bool tp_expect_nl(Parser *p, const char *after)
{
    Tok *t = peek(p);
    if (t->kind == T_NL || t->kind == T_EOF) {
        next(p);
        return true;
    }
    tp_err(p, t, "expected end of line after %s, got %s", after, tp_tok_desc(p, t));
    return false;
}

/* ---- numbers ---- */

/* int := ['-'] NUMBER (decimal or 0x hex) */
bool tp_int(Parser *p, int64_t *out)
{
    bool neg = accept(p, '-');
    Tok *t = peek(p);
    if (t->kind != T_NUM || t->n > 40) {
        tp_err(p, t, "expected an integer, got %s", tp_tok_desc(p, t));
        return false;
    }
    char buf[48], *end;
    snprintf(buf, sizeof buf, "%s%.*s", neg ? "-" : "", t->n, t->s);
    bool hex = t->n > 2 && t->s[0] == '0' && (t->s[1] == 'x' || t->s[1] == 'X');
    errno = 0;
    long long v = strtoll(buf, &end, hex ? 16 : 10);
    if (*end || errno) {
        tp_err(p, t, errno ? "integer '%s' out of range" : "expected an integer, got '%s'", buf);
        return false;
    }
    next(p);
    *out = v;
    return true;
}

/* float := ['-'] (NUMBER | 'inf' | 'nan') */
bool tp_float(Parser *p, double *out)
{
    bool neg = accept(p, '-');
    Tok *t = peek(p);
    char buf[80], *end;
    if ((t->kind == T_NUM && t->n < 72) || tok_is(t, "inf") || tok_is(t, "nan")) {
        snprintf(buf, sizeof buf, "%s%.*s", neg ? "-" : "", t->n, t->s);
        double v = strtod(buf, &end);
        if (!*end) {
            next(p);
            *out = v;
            return true;
        }
    }
    tp_err(p, t, "expected a number, got %s", tp_tok_desc(p, t));
    return false;
}

bool tp_int_range(Parser *p, int64_t lo, int64_t hi, const char *what, int64_t *out)
{
    Tok *t = peek(p);
    if (!tp_int(p, out))
        return false;
    if (*out < lo || *out > hi) {
        tp_err(p, t, "%s %lld out of range [%lld, %lld]", what, (long long)*out, (long long)lo, (long long)hi);
        return false;
    }
    return true;
}
