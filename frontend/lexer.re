/* lexer.re - the .tile lexer (re2c). Turns the whole source, held in memory
 * with a NUL sentinel, into a TokenList ending in T_EOF.
 *
 * Lines and columns are 1-based and count bytes: the newline rule records
 * where each line starts. Errors (stray bytes, a lone '^', unterminated
 * comments, malformed or overflowing numbers) go to the Diag and lexing
 * goes on. A stray byte or a lone '^' yields a T_ERROR token (the parser
 * recovers from it without a second message); a bad number yields a number
 * token of value 0, so the parse goes on as if it were well formed.
 */
#include "frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*!re2c
    re2c:define:YYCTYPE = "unsigned char";
    re2c:define:YYCURSOR = "lx->cur";
    re2c:define:YYMARKER = "lx->mark";
    re2c:define:YYLIMIT = "lx->lim";
    re2c:yyfill:enable = 0;
    re2c:eof = 0;
*/

const char *const tok_names[T_COUNT] = {
#define FE_T(E, s) s,
    FE_TOKENS(FE_T, FE_T)
#undef FE_T
};

/* Enum spellings for --emit=tokens. ORDER TOK. */
static const char *const tok_enum_names[T_COUNT] = {
#define FE_T(E, s) #E,
    FE_TOKENS(FE_T, FE_T)
#undef FE_T
};

typedef struct Lexer {
    const unsigned char *cur, *mark, *lim, *tok, *line_start, *base;
    int line;
    const char *file;
    Arena *a;
    Diag *d;
    TokenList out;
    int cap;
} Lexer;

static Loc lx_loc_at(const Lexer *lx, const unsigned char *p)
{
    return (Loc){ lx->file, lx->line, (int)(p - lx->line_start) + 1 };
}

static Token *lx_push(Lexer *lx, TokKind k)
{
    if (lx->out.n == lx->cap) {
        int cap = lx->cap ? lx->cap * 2 : 256;
        lx->out.toks = arena_grow_move(lx->a, lx->out.toks, sizeof(Token), (size_t)lx->out.n, (size_t)cap);
        lx->cap = cap;
    }
    Token *t = &lx->out.toks[lx->out.n++];
    memset(t, 0, sizeof *t);
    t->kind = (uint16_t)k;
    t->loc = lx_loc_at(lx, lx->tok);
    t->start = (const char *)lx->tok;
    t->len = (int)(lx->cur - lx->tok);
    return t;
}

/* Keywords are looked up in the token table (T_KERNEL .. T_INF). */
static TokKind lx_keyword(const unsigned char *s, size_t n)
{
    for (int k = T_KERNEL; k <= T_INF; k++)
        if (strlen(tok_names[k]) == n && memcmp(tok_names[k], s, n) == 0)
            return (TokKind)k;
    return T_IDENT;
}

static bool lx_is_ident_byte(unsigned char c)
{
    return c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* A number directly followed by letters (`12abc`, `1.5f`) is one bad token:
 * consume the suffix and report it. Returns true if there was one. */
static bool lx_bad_suffix(Lexer *lx, const char *what)
{
    if (lx->cur >= lx->lim || !lx_is_ident_byte(*lx->cur))
        return false;
    const unsigned char *s = lx->cur;
    while (lx->cur < lx->lim && lx_is_ident_byte(*lx->cur))
        lx->cur++;
    diag_error(lx->d, lx_loc_at(lx, s), "invalid suffix '%.*s' on %s", (int)(lx->cur - s),
               (const char *)s, what);
    return true;
}

static int lx_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    return (c | 0x20) - 'a' + 10;
}

/* Value of a decimal or 0x literal; `_` separators are skipped. */
static void lx_int(Lexer *lx)
{
    const unsigned char *p = lx->tok, *e = lx->cur;
    int base = 10;
    if (e - p > 2 && p[0] == '0' && (p[1] | 0x20) == 'x') {
        base = 16;
        p += 2;
    }
    uint64_t v = 0;
    bool over = false;
    for (; p < e; p++) {
        if (*p == '_')
            continue;
        uint64_t dg = (uint64_t)lx_digit(*p);
        if (v > (UINT64_C(0x7fffffffffffffff) - dg) / (uint64_t)base)
            over = true;
        else
            v = v * (uint64_t)base + dg;
    }
    bool suffix = lx_bad_suffix(lx, "integer literal");
    Token *t = lx_push(lx, T_INT);
    if (over) {
        diag_error(lx->d, t->loc, "integer literal '%.*s' does not fit in 64 bits (max 9223372036854775807)",
                   t->len, t->start);
        v = 0;
    } else if (!suffix && e[-1] == '_') {
        diag_error(lx->d, lx_loc_at(lx, e - 1), "integer literal cannot end with '_'");
    }
    t->ival = over || suffix ? 0 : (int64_t)v;
}

static void lx_float(Lexer *lx)
{
    char buf[128];
    size_t n = 0;
    for (const unsigned char *p = lx->tok; p < lx->cur && n + 1 < sizeof buf; p++)
        if (*p != '_')
            buf[n++] = (char)*p;
    buf[n] = 0;
    bool suffix = lx_bad_suffix(lx, "float literal");
    Token *t = lx_push(lx, T_FLOAT);
    t->fval = suffix ? 0 : strtod(buf, NULL);
}

static void lx_bad_exponent(Lexer *lx)
{
    Token *t = lx_push(lx, T_FLOAT);
    diag_error(lx->d, t->loc, "exponent of float literal '%.*s' has no digits", t->len, t->start);
}

static void lx_leading_dot(Lexer *lx)
{
    Token *t = lx_push(lx, T_FLOAT);
    diag_error(lx->d, t->loc, "a float literal needs a digit before '.': write '0%.*s'", t->len, t->start);
}

/* A block comment: find its end, counting newlines. */
static void lx_block_comment(Lexer *lx)
{
    Loc start = lx_loc_at(lx, lx->tok);
    const unsigned char *p = lx->cur;
    for (; p + 1 < lx->lim; p++) {
        if (p[0] == '*' && p[1] == '/') {
            lx->cur = p + 2;
            return;
        }
        if (p[0] == '\n') {
            lx->line++;
            lx->line_start = p + 1;
        }
    }
    diag_error(lx->d, start, "unterminated comment: '/*' has no matching '*/'");
    Token *t = lx_push(lx, T_ERROR);  /* the parser stays silent about the EOF */
    t->loc = start;
    t->len = 2;
    for (; p < lx->lim; p++)
        if (*p == '\n') {
            lx->line++;
            lx->line_start = p + 1;
        }
    lx->cur = lx->lim;
}

static void lx_stray(Lexer *lx)
{
    unsigned char c = *lx->tok;
    /* A UTF-8 sequence is one stray character: skip its continuation bytes. */
    if (c >= 0xC0)
        while (lx->cur < lx->lim && (*lx->cur & 0xC0) == 0x80)
            lx->cur++;
    Token *t = lx_push(lx, T_ERROR);
    diag_error(lx->d, t->loc, "stray byte 0x%02X in program", c);
}

static void lx_newline(Lexer *lx)
{
    lx->line++;
    lx->line_start = lx->cur;
}

/* Lex one token (or skip a space, newline or comment). False at the end. */
static bool lx_next(Lexer *lx)
{
    lx->tok = lx->cur;
    /*!re2c
        dec = [0-9] [0-9_]*;
        hex = "0" [xX] [0-9a-fA-F_]+;
        exp = [eE] [+-]? [0-9]+;
        frac = "." [0-9] [0-9_]*;

        $ { return false; }
        "\n" { lx_newline(lx); return true; }
        [ \t\r\f\v]+ { return true; }
        "//" [^\n]* { return true; }
        "/*" { lx_block_comment(lx); return true; }

        dec | hex { lx_int(lx); return true; }
        dec frac exp? | dec exp { lx_float(lx); return true; }
        dec frac? [eE] [+-]? { lx_bad_exponent(lx); return true; }
        frac exp? { lx_leading_dot(lx); return true; }
        [a-zA-Z_] [a-zA-Z0-9_]* {
            lx_push(lx, lx_keyword(lx->tok, (size_t)(lx->cur - lx->tok)));
            return true;
        }

        "(" { lx_push(lx, T_LPAREN); return true; }
        ")" { lx_push(lx, T_RPAREN); return true; }
        "[" { lx_push(lx, T_LBRACK); return true; }
        "]" { lx_push(lx, T_RBRACK); return true; }
        "{" { lx_push(lx, T_LBRACE); return true; }
        "}" { lx_push(lx, T_RBRACE); return true; }
        "," { lx_push(lx, T_COMMA); return true; }
        ";" { lx_push(lx, T_SEMI); return true; }
        ":" { lx_push(lx, T_COLON); return true; }
        "." { lx_push(lx, T_DOT); return true; }
        ".." { lx_push(lx, T_DOTDOT); return true; }
        "?" { lx_push(lx, T_QUESTION); return true; }
        "+" { lx_push(lx, T_PLUS); return true; }
        "-" { lx_push(lx, T_MINUS); return true; }
        "*" { lx_push(lx, T_STAR); return true; }
        "/" { lx_push(lx, T_SLASH); return true; }
        "%" { lx_push(lx, T_PERCENT); return true; }
        "@" { lx_push(lx, T_AT); return true; }
        "^T" { lx_push(lx, T_CARET_T); return true; }
        "^" { lx_push(lx, T_CARET); return true; }
        "=" { lx_push(lx, T_ASSIGN); return true; }
        "+=" { lx_push(lx, T_PLUSEQ); return true; }
        "-=" { lx_push(lx, T_MINUSEQ); return true; }
        "*=" { lx_push(lx, T_STAREQ); return true; }
        "/=" { lx_push(lx, T_SLASHEQ); return true; }
        "==" { lx_push(lx, T_EQ); return true; }
        "!=" { lx_push(lx, T_NE); return true; }
        "<" { lx_push(lx, T_LT); return true; }
        "<=" { lx_push(lx, T_LE); return true; }
        ">" { lx_push(lx, T_GT); return true; }
        ">=" { lx_push(lx, T_GE); return true; }
        "&&" { lx_push(lx, T_ANDAND); return true; }
        "||" { lx_push(lx, T_OROR); return true; }
        "!" { lx_push(lx, T_BANG); return true; }
        "&" { lx_push(lx, T_AMP); return true; }
        "|" { lx_push(lx, T_PIPE); return true; }
        "~" { lx_push(lx, T_TILDE); return true; }
        "<<" { lx_push(lx, T_SHL); return true; }
        ">>" { lx_push(lx, T_SHR); return true; }

        * { lx_stray(lx); return true; }
    */
}

TokenList fe_lex(Arena *a, const char *file, const char *src, size_t len, Diag *d)
{
    Lexer lx = { 0 };
    lx.base = lx.cur = lx.line_start = (const unsigned char *)src;
    lx.lim = lx.base + len;
    lx.line = 1;
    lx.file = file ? arena_strdup(a, file) : NULL;
    lx.a = a;
    lx.d = d;
    while (lx_next(&lx))
        ;
    lx.tok = lx.cur;
    lx_push(&lx, T_EOF);
    return lx.out;
}

void fe_tokens_release(Arena *a, TokenList *tl)
{
    arena_release(a, tl->toks);
    tl->toks = NULL;
    tl->n = 0;
}

void fe_print_tokens(const TokenList *tl, StrBuf *out)
{
    for (int i = 0; i < tl->n; i++) {
        const Token *t = &tl->toks[i];
        sb_printf(out, "%d:%d %s '%.*s'\n", t->loc.line, t->loc.col, tok_enum_names[t->kind], t->len,
                  t->start);
    }
}
