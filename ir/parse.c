/* parse.c - reads the textual form of Tile IR (.tir) written by print.c.
 *
 * A hand-written lexer turns the whole text into tokens (newlines are tokens:
 * one op per line); a recursive-descent parser builds the IR with the
 * builders of ir.c. The first error stops the parse: it goes to the Diag at
 * the .tir file's own `name:line:col` and ir_parse returns NULL. A module
 * that parses is then checked by the verifier (pass name "parse"), so the
 * caller only ever sees well-formed IR.
 *
 * Locations: an op with `loc(L:C)` gets L:C in the module's `source` file
 * (or the .tir file when there is no source line); an op without one gets
 * the position of its first token in the .tir file.
 *
 * Grammar (NL = end of line):
 *   module  := NL* ['source' STRING NL] (kernel NL*)* EOF
 *   kernel  := 'kernel' @NAME '(' [param (',' param)*] ')' ['dims' '(' vals ')']
 *              ['consts' '(' [const (',' const)*] ')'] ['smem' '(' INT ')'] [schedule] [loc]
 *              '{' NL items '}'
 *   items   := (NL | 'grid' ':' | 'body' ':' | op)*
 *   param   := %NAME ':' type
 *   const   := NAME ':' ('int'|'bool'|'float'|'dtype'|DTYPE) '=' value
 *   op      := [vals '='] OPNAME [vals] [attrs] region* [':' type (',' type)*] [loc] NL
 *   attrs   := '{' [attr (',' attr)*] '}'      (on the op's line)
 *   attr    := NAME ['=' (['-'] NUMBER | NAME | '[' [int (',' int)*] ']')]
 *              | 'roles' '=' '[' '(' KIND ',' INT ',' INT ')' (',' ...)* ']'
 *              (smem_alloc's `swizzle = 128B` is a NUMBER token read as a name)
 *   region  := ['else'] '{' NL ['^' '(' [%v ':' type (',' ...)*] ')' ':' NL] op* '}'
 *              (ws: one region per role, as many as its `roles` list names)
 *   type    := DTYPE | 'tile' '<' SHAPExDTYPE [',' SPACE] [',' '#' 'L'N] '>'
 *              | 'tensor' '<' DTYPE '[' (NAME|INT) (',' ...)* ']' '>'
 *   loc     := 'loc' '(' INT ':' INT ')'
 */
#include "ir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---- errors ---- */

static Loc tok_loc(const Parser *p, const Tok *t) { return (Loc){ p->name, t->line, t->col }; }

static void perr(Parser *p, const Tok *t, const char *fmt, ...) TC_PRINTF(3, 4);
static void perr(Parser *p, const Tok *t, const char *fmt, ...)
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
static const char *tok_desc(Parser *p, const Tok *t)
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

static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alnum(int c) { return is_alpha(c) || is_digit(c); }

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
                if (end != hx + 2) { sb_free(&sb); perr(p, t, "bad \\x escape in string"); return false; }
            } else c = e;
        }
        if (c == 0) { sb_free(&sb); perr(p, t, "NUL character in string"); return false; }
        sb_putc(&sb, c);
    }
    if (L->i >= L->len || L->s[L->i] != '"') {
        sb_free(&sb);
        perr(p, t, "unterminated string");
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
            perr(p, &t, "unexpected character '%c'", c);
        else
            perr(p, &t, "unexpected byte 0x%02x", u);
        return false;
    }
    push_tok(p, t);
    return true;
}

static bool lex_all(Parser *p, const char *s, size_t len)
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

static Tok *peek(Parser *p) { return &p->toks[p->pos]; }
static Tok *peek2(Parser *p) { return &p->toks[p->pos + 1 < p->ntoks ? p->pos + 1 : p->pos]; }
static Tok *next(Parser *p)
{
    Tok *t = &p->toks[p->pos];
    if (t->kind != T_EOF)
        p->pos++;
    return t;
}
static bool tok_punct(const Tok *t, char c) { return t->kind == T_PUNCT && t->ch == c; }
static bool tok_is(const Tok *t, const char *word)
{
    return t->kind == T_IDENT && (int)strlen(word) == t->n && memcmp(t->s, word, (size_t)t->n) == 0;
}
static bool accept(Parser *p, char c)
{
    if (!tok_punct(peek(p), c))
        return false;
    next(p);
    return true;
}
static bool expect(Parser *p, char c, const char *where)
{
    if (accept(p, c))
        return true;
    perr(p, peek(p), "expected '%c' %s, got %s", c, where, tok_desc(p, peek(p)));
    return false;
}
static void skip_nl(Parser *p)
{
    while (peek(p)->kind == T_NL)
        next(p);
}
static bool expect_nl(Parser *p, const char *after)
{
    Tok *t = peek(p);
    if (t->kind == T_NL || t->kind == T_EOF) {
        next(p);
        return true;
    }
    perr(p, t, "expected end of line after %s, got %s", after, tok_desc(p, t));
    return false;
}
static char *tok_str(Parser *p, const Tok *t) { return arena_strndup(p->a, t->s, (size_t)t->n); }

/* ---- numbers ---- */

/* int := ['-'] NUMBER (decimal or 0x hex) */
static bool parse_int(Parser *p, int64_t *out)
{
    bool neg = accept(p, '-');
    Tok *t = peek(p);
    if (t->kind != T_NUM || t->n > 40) {
        perr(p, t, "expected an integer, got %s", tok_desc(p, t));
        return false;
    }
    char buf[48], *end;
    snprintf(buf, sizeof buf, "%s%.*s", neg ? "-" : "", t->n, t->s);
    bool hex = t->n > 2 && t->s[0] == '0' && (t->s[1] == 'x' || t->s[1] == 'X');
    errno = 0;
    long long v = strtoll(buf, &end, hex ? 16 : 10);
    if (*end || errno) {
        perr(p, t, errno ? "integer '%s' out of range" : "expected an integer, got '%s'", buf);
        return false;
    }
    next(p);
    *out = v;
    return true;
}

/* float := ['-'] (NUMBER | 'inf' | 'nan') */
static bool parse_float(Parser *p, double *out)
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
    perr(p, t, "expected a number, got %s", tok_desc(p, t));
    return false;
}

static bool parse_int_range(Parser *p, int64_t lo, int64_t hi, const char *what, int64_t *out)
{
    Tok *t = peek(p);
    if (!parse_int(p, out))
        return false;
    if (*out < lo || *out > hi) {
        perr(p, t, "%s %lld out of range [%lld, %lld]", what, (long long)*out, (long long)lo, (long long)hi);
        return false;
    }
    return true;
}

/* ---- value names ---- */

static uint32_t sym_hash(const char *s, int n) { return (uint32_t)tc_hash64(s, (size_t)n, 0); }

static Sym *sym_slot(Parser *p, const char *s, int n)
{
    uint32_t mask = (uint32_t)p->capsyms - 1;
    for (uint32_t h = sym_hash(s, n) & mask;; h = (h + 1) & mask) {
        Sym *y = &p->syms[h];
        if (!y->s || (y->n == n && memcmp(y->s, s, (size_t)n) == 0))
            return y;
    }
}

static void sym_reset(Parser *p)
{
    p->capsyms = 256;
    p->nsyms = 0;
    p->syms = arena_alloc(p->a, sizeof(Sym) * (size_t)p->capsyms);
}

static void sym_grow(Parser *p)
{
    Sym *old = p->syms;
    int oldcap = p->capsyms;
    p->capsyms *= 2;
    p->syms = arena_alloc(p->a, sizeof(Sym) * (size_t)p->capsyms);
    for (int i = 0; i < oldcap; i++)
        if (old[i].s)
            *sym_slot(p, old[i].s, old[i].n) = old[i];
}

static bool define_val(Parser *p, const Tok *t, ValId v)
{
    if (p->nsyms * 2 >= p->capsyms)
        sym_grow(p);
    Sym *y = sym_slot(p, t->s, t->n);
    if (y->s) {
        perr(p, t, "value %%%.*s defined twice", t->n, t->s);
        return false;
    }
    *y = (Sym){ t->s, t->n, v };
    p->nsyms++;
    return true;
}

static ValId use_val(Parser *p)
{
    Tok *t = peek(p);
    if (t->kind != T_VAL) {
        perr(p, t, "expected a value (%%name), got %s", tok_desc(p, t));
        return 0;
    }
    Sym *y = sym_slot(p, t->s, t->n);
    if (!y->s) {
        perr(p, t, "undefined value %%%.*s", t->n, t->s);
        return 0;
    }
    next(p);
    return y->v;
}

/* ---- types ---- */

static bool parse_dtype(Parser *p, DType *out)
{
    Tok *t = peek(p);
    DType dt = t->kind == T_IDENT ? dtype_lookup_ir(t->s, (size_t)t->n) : DT_NONE;
    if (dt == DT_NONE) {
        perr(p, t, "expected an element type (i32, f32, bf16, ...), got %s", tok_desc(p, t));
        return false;
    }
    next(p);
    *out = dt;
    return true;
}

/* SHAPExDTYPE: `128x64xbf16` (one number token) or a bare dtype (rank 0). */
static bool parse_tile_shape(Parser *p, Type *ty)
{
    Tok *t = peek(p);
    if (t->kind == T_IDENT) {
        DType dt;
        if (!parse_dtype(p, &dt))
            return false;
        ty->dtype = (uint8_t)dt;
        return true;
    }
    if (t->kind != T_NUM) {
        perr(p, t, "expected a tile shape like 128x64xf32, got %s", tok_desc(p, t));
        return false;
    }
    const char *s = t->s, *e = t->s + t->n;
    int rank = 0;
    while (s < e && is_digit(*s)) {
        int64_t v = 0;
        while (s < e && is_digit(*s) && v <= (int64_t)1 << 40)
            v = v * 10 + (*s++ - '0');
        if (rank >= TILE_MAXRANK) {
            perr(p, t, "tile rank above %d in '%.*s'", TILE_MAXRANK, t->n, t->s);
            return false;
        }
        if (s >= e || *s != 'x' || v < 1 || v > ((int64_t)1 << 31)) {
            perr(p, t, "bad tile shape '%.*s' (extents are positive integers, as in 128x64xf32)", t->n, t->s);
            return false;
        }
        ty->shape[rank++] = v;
        s++;
    }
    DType dt = dtype_lookup_ir(s, (size_t)(e - s));
    if (dt == DT_NONE) {
        perr(p, t, "unknown element type '%.*s' in tile type", (int)(e - s), s);
        return false;
    }
    ty->rank = (uint8_t)rank;
    ty->dtype = (uint8_t)dt;
    next(p);
    return true;
}

/* tile options: SPACE or '#' 'L'N */
static bool parse_tile_opt(Parser *p, Type *ty)
{
    Tok *t = peek(p);
    if (accept(p, '#')) {
        Tok *l = peek(p);
        char *end;
        long v = l->kind == T_IDENT && l->n > 1 && l->n < 8 && l->s[0] == 'L' ? strtol(l->s + 1, &end, 10) : -1;
        if (v < 1 || v > 65535 || !is_digit(l->s[1]) || end != l->s + l->n) {
            perr(p, l, "expected a layout id like #L1, got %s", tok_desc(p, l));
            return false;
        }
        next(p);
        ty->layout = (uint16_t)v;
        return true;
    }
    static const char *const spaces[] = { "any", "reg", "shared", "tmem", "global" };
    for (int i = 0; i < (int)TC_COUNTOF(spaces); i++)
        if (tok_is(t, spaces[i])) {
            next(p);
            ty->space = (uint8_t)i;
            return true;
        }
    perr(p, t, "expected a memory space (reg, shared, tmem, global) or layout (#L1), got %s", tok_desc(p, t));
    return false;
}

/* tensor dims: NAME or INT. Names resolve against the function's dims, or,
 * for params (dimtoks != NULL), are recorded and resolved by the caller. */
static bool parse_tensor_dim(Parser *p, Type *ty, int i, const Tok **dimtoks)
{
    Tok *t = peek(p);
    if (t->kind == T_IDENT) {
        ty->shape[i] = -1;
        if (dimtoks) {
            dimtoks[i] = t;
        } else {
            int di = ir_find_dim(p->f, tok_str(p, t));
            if (di < 0) {
                perr(p, t, "unknown dim '%.*s'", t->n, t->s);
                return false;
            }
            ty->dimsym[i] = (int16_t)di;
        }
        next(p);
        return true;
    }
    return parse_int_range(p, 1, (int64_t)1 << 40, "tensor extent", &ty->shape[i]);
}

static bool parse_tensor(Parser *p, Type *ty, const Tok **dimtoks)
{
    DType dt;
    if (!parse_dtype(p, &dt) || !expect(p, '[', "after the tensor element type"))
        return false;
    *ty = type_scalar(dt);
    ty->kind = TY_TENSOR;
    int rank = 0;
    do {
        if (rank >= TENSOR_MAXRANK) {
            perr(p, peek(p), "tensor rank above %d", TENSOR_MAXRANK);
            return false;
        }
        if (!parse_tensor_dim(p, ty, rank++, dimtoks))
            return false;
    } while (accept(p, ','));
    ty->rank = (uint8_t)rank;
    return expect(p, ']', "after the tensor dims");
}

static bool parse_type_dims(Parser *p, Type *ty, const Tok **dimtoks)
{
    Tok *t = peek(p);
    if (tok_is(t, "tile") && tok_punct(peek2(p), '<')) {
        next(p), next(p);
        *ty = type_scalar(DT_NONE);
        ty->kind = TY_TILE;
        if (!parse_tile_shape(p, ty))
            return false;
        while (accept(p, ','))
            if (!parse_tile_opt(p, ty))
                return false;
        return expect(p, '>', "to close the tile type");
    }
    if (tok_is(t, "tensor") && tok_punct(peek2(p), '<')) {
        next(p), next(p);
        return parse_tensor(p, ty, dimtoks) && expect(p, '>', "to close the tensor type");
    }
    if (t->kind == T_IDENT && dtype_lookup_ir(t->s, (size_t)t->n) != DT_NONE) {
        *ty = type_scalar(dtype_lookup_ir(t->s, (size_t)t->n));
        next(p);
        return true;
    }
    perr(p, t, "expected type, got %s", tok_desc(p, t));
    return false;
}

static bool parse_type(Parser *p, Type *ty) { return parse_type_dims(p, ty, NULL); }

/* loc := 'loc' '(' INT ':' INT ')' */
static bool parse_loc(Parser *p, Loc *out)
{
    int64_t l, c;
    next(p);
    if (!expect(p, '(', "after 'loc'") || !parse_int_range(p, 0, 1 << 30, "line", &l) ||
        !expect(p, ':', "between line and column") || !parse_int_range(p, 0, 1 << 30, "column", &c) ||
        !expect(p, ')', "to close loc(...)"))
        return false;
    *out = (Loc){ p->locfile, (int)l, (int)c };
    return true;
}

/* ---- attributes ---- */

typedef struct Attrs {
    int64_t iattr[4];
    int64_t *list; int nlist;
    int value_pos;      /* token index of a const's value, or -1 */
} Attrs;

static bool parse_list(Parser *p, Attrs *at)
{
    if (!expect(p, '[', "to open the list"))
        return false;
    if (accept(p, ']'))
        return true;
    do {
        int64_t v;
        if (at->nlist >= TENSOR_MAXRANK) {
            perr(p, peek(p), "list longer than %d", TENSOR_MAXRANK);
            return false;
        }
        if (!parse_int_range(p, 0, (int64_t)1 << 31, "extent", &v))
            return false;
        at->list = arena_grow(p->a, at->list, sizeof(int64_t), (size_t)at->nlist, (size_t)at->nlist + 1);
        at->list[at->nlist++] = v;
    } while (accept(p, ','));
    return expect(p, ']', "to close the list");
}

static bool parse_named(Parser *p, const char *const *names, int n, const char *what, int64_t *out)
{
    Tok *t = peek(p);
    for (int i = 0; i < n; i++)
        if (tok_is(t, names[i])) {
            next(p);
            *out = i;
            return true;
        }
    if (t->kind == T_NUM || tok_punct(t, '-'))
        return parse_int(p, out);
    perr(p, t, "unknown %s %s", what, tok_desc(p, t));
    return false;
}

static bool skip_value(Parser *p, Attrs *at)
{
    at->value_pos = p->pos;
    accept(p, '-');
    Tok *t = peek(p);
    if (t->kind != T_NUM && t->kind != T_IDENT) {
        perr(p, t, "expected a constant value, got %s", tok_desc(p, t));
        return false;
    }
    next(p);
    return true;
}

static bool attr_allowed(OpCode code, const char *key)
{
    if (!strcmp(key, "value")) return code == OP_CONST;
    if (!strcmp(key, "axis"))
        return code == OP_BLOCKID || code == OP_NBLOCKS || code == OP_EXPAND || code == OP_IOTA || code == OP_REDUCE;
    if (!strcmp(key, "pred")) return code == OP_CMP;
    if (!strcmp(key, "kind")) return code == OP_REDUCE;
    if (!strcmp(key, "extents") || !strcmp(key, "mask"))
        return code == OP_LOAD || code == OP_STORE || code == OP_ASYNC_COPY || code == OP_TMA_LOAD;
    if (!strcmp(key, "swizzle") || !strcmp(key, "offset") || !strcmp(key, "align") || !strcmp(key, "pad"))
        return code == OP_SMEM_ALLOC;
    if (!strcmp(key, "pending")) return code == OP_ASYNC_WAIT || code == OP_DOT_WAIT;
    if (!strcmp(key, "count")) return code == OP_MBAR_ALLOC;
    if (!strcmp(key, "bytes")) return code == OP_MBAR_EXPECT;
    if (!strcmp(key, "id") || !strcmp(key, "threads") || !strcmp(key, "mode")) return code == OP_NAMED_BAR;
    if (!strcmp(key, "roles")) return code == OP_WS;
    if (!strcmp(key, "other")) return code == OP_LOAD;
    if (!strcmp(key, "pipeline")) return code == OP_FOR;
    return false;
}

/* swizzle = none | 32B | 64B | 128B | pad (32B.. lex as numbers) | INT */
static bool parse_swizzle(Parser *p, int64_t *out)
{
    Tok *t = peek(p);
    for (int i = 0; i < SWZ_COUNT; i++)
        if ((t->kind == T_IDENT || t->kind == T_NUM) && (int)strlen(swizzle_names[i]) == t->n &&
            memcmp(t->s, swizzle_names[i], (size_t)t->n) == 0) {
            next(p);
            *out = i;
            return true;
        }
    if (t->kind == T_IDENT || (t->kind == T_NUM && t->s[t->n - 1] == 'B')) {
        perr(p, t, "unknown swizzle mode %s (none, 32B, 64B, 128B, pad)", tok_desc(p, t));
        return false;
    }
    return parse_int(p, out);
}

/* roles = '[' '(' KIND ',' INT ',' INT ')' (',' ...)* ']'  (WS: list of triples) */
static bool parse_roles(Parser *p, Attrs *at)
{
    if (!expect(p, '[', "to open the roles"))
        return false;
    do {
        int64_t r[3];
        if (at->nlist >= 3 * WS_MAXROLES) {
            perr(p, peek(p), "more than %d roles", WS_MAXROLES);
            return false;
        }
        if (!expect(p, '(', "to open a role") ||
            !parse_named(p, role_names, ROLE_COUNT, "role kind", &r[0]) ||
            !expect(p, ',', "after the role kind") || !parse_int_range(p, 0, 64, "warp groups", &r[1]) ||
            !expect(p, ',', "after the warp groups") || !parse_int_range(p, 0, 1024, "registers", &r[2]) ||
            !expect(p, ')', "to close the role"))
            return false;
        at->list = arena_grow(p->a, at->list, sizeof(int64_t), (size_t)at->nlist, (size_t)at->nlist + 3);
        memcpy(at->list + at->nlist, r, sizeof r);
        at->nlist += 3;
    } while (accept(p, ','));
    return expect(p, ']', "to close the roles");
}

static bool parse_attr(Parser *p, OpCode code, Attrs *at)
{
    Tok *k = peek(p);
    if (k->kind != T_IDENT) {
        perr(p, k, "expected an attribute name, got %s", tok_desc(p, k));
        return false;
    }
    char *key = tok_str(p, k);
    if (!attr_allowed(code, key)) {
        perr(p, k, "unknown attribute '%s' for op '%s'", key, op_info[code].name);
        return false;
    }
    next(p);
    if (!strcmp(key, "other") && !tok_punct(peek(p), '=')) {
        at->iattr[1] = 1;
        return true;
    }
    if (!expect(p, '=', "after the attribute name"))
        return false;
    if (!strcmp(key, "value")) return skip_value(p, at);
    if (!strcmp(key, "pred")) return parse_named(p, cmp_names, CMP_COUNT, "predicate", &at->iattr[0]);
    if (!strcmp(key, "kind")) return parse_named(p, reduce_names, RED_COUNT, "reduction", &at->iattr[1]);
    if (!strcmp(key, "extents")) return parse_list(p, at);
    if (!strcmp(key, "other")) return parse_int(p, &at->iattr[1]);
    if (!strcmp(key, "swizzle")) return parse_swizzle(p, &at->iattr[0]);
    if (!strcmp(key, "offset")) return parse_int(p, &at->iattr[1]);
    if (!strcmp(key, "align")) return parse_int(p, &at->iattr[2]);
    if (!strcmp(key, "pad")) return parse_int(p, &at->iattr[3]);
    if (!strcmp(key, "threads")) return parse_int(p, &at->iattr[1]);
    if (!strcmp(key, "mode")) return parse_named(p, named_bar_modes, NBAR_COUNT, "barrier mode", &at->iattr[2]);
    if (!strcmp(key, "roles")) return parse_roles(p, at);
    return parse_int(p, &at->iattr[0]);   /* axis, mask, pipeline, pending, count, bytes, id */
}

static bool parse_attrs(Parser *p, OpCode code, Attrs *at)
{
    next(p); /* '{' */
    if (accept(p, '}'))
        return true;
    do {
        if (!parse_attr(p, code, at))
            return false;
    } while (accept(p, ','));
    return expect(p, '}', "to close the attributes");
}

/* Reads the const's value (saved by skip_value) now that its type is known. */
static bool apply_const_value(Parser *p, Op *op, const Attrs *at, Tok *optok)
{
    if (at->value_pos < 0 || op->nres < 1) {
        perr(p, optok, "'const' needs {value = ...} and a result type");
        return false;
    }
    int save = p->pos;
    p->pos = at->value_pos;
    DType dt = (DType)ir_type(p->f, op->res[0])->dtype;
    bool ok = true;
    Tok *t = peek(p);
    if (dtype_is_float(dt)) {
        ok = parse_float(p, &op->fattr);
    } else if (dt == DT_BOOL && (tok_is(t, "true") || tok_is(t, "false"))) {
        op->iattr[0] = tok_is(t, "true");
        op->fattr = (double)op->iattr[0];
    } else {
        ok = parse_int(p, &op->iattr[0]);
        op->fattr = (double)op->iattr[0];
    }
    p->pos = save;
    return ok;
}

/* ---- ops and blocks ---- */

static bool parse_block_body(Parser *p, Block *b);

/* block args: '^' '(' [%v ':' type (',' ...)*] ')' ':' NL */
static bool parse_block_args(Parser *p, Block *b)
{
    next(p);
    if (!expect(p, '(', "after '^'"))
        return false;
    if (!accept(p, ')')) {
        do {
            Tok *n = peek(p);
            Type ty;
            if (n->kind != T_VAL) {
                perr(p, n, "expected a block argument (%%name), got %s", tok_desc(p, n));
                return false;
            }
            next(p);
            if (!expect(p, ':', "after the block argument") || !parse_type(p, &ty))
                return false;
            if (b->nargs >= MAX_COUNT) {
                perr(p, n, "too many block arguments");
                return false;
            }
            if (!define_val(p, n, ir_block_add_arg(p->f, b, ty, NULL)))
                return false;
        } while (accept(p, ','));
        if (!expect(p, ')', "to close the block arguments"))
            return false;
    }
    return expect(p, ':', "after the block arguments") && expect_nl(p, "the block arguments");
}

/* region := '{' NL [blockargs] op* '}' */
static bool parse_region(Parser *p, Block *b)
{
    Tok *open = next(p);
    if (++p->depth > MAX_DEPTH) {
        perr(p, open, "regions nested deeper than %d", MAX_DEPTH);
        return false;
    }
    skip_nl(p);
    if (tok_punct(peek(p), '^') && !parse_block_args(p, b))
        return false;
    bool ok = parse_block_body(p, b);
    p->depth--;
    return ok && expect(p, '}', "to close the region");
}

static bool parse_regions(Parser *p, Op *op, Tok *optok)
{
    int n = 0;
    for (;;) {
        Tok *t = peek(p);
        if (n > 0 && tok_is(t, "else") && tok_punct(peek2(p), '{'))
            next(p), t = peek(p);
        if (!tok_punct(t, '{'))
            break;
        if (n >= op->nregions) {
            perr(p, t, "op '%s' takes %d region(s)", op_info[op->code].name, op->nregions);
            return false;
        }
        if (!parse_region(p, &op->regions[n++]))
            return false;
    }
    if (n != op->nregions) {
        perr(p, optok, "op '%s' takes %d region(s), got %d", op_info[op->code].name, op->nregions, n);
        return false;
    }
    return true;
}

/* vals := %v (',' %v)* ; used as operands */
static int parse_operands(Parser *p, ValId **out)
{
    int n = 0;
    if (peek(p)->kind != T_VAL)
        return 0;
    do {
        ValId v = use_val(p);
        if (!v)
            return -1;
        if (n >= MAX_COUNT) {
            perr(p, peek(p), "too many operands");
            return -1;
        }
        *out = arena_grow(p->a, *out, sizeof(ValId), (size_t)n, (size_t)n + 1);
        (*out)[n++] = v;
    } while (accept(p, ','));
    return n;
}

/* result names: %r (',' %r)* '=' */
static int parse_result_names(Parser *p, Tok ***out)
{
    int n = 0;
    if (peek(p)->kind != T_VAL)
        return 0;
    do {
        Tok *t = peek(p);
        if (t->kind != T_VAL) {
            perr(p, t, "expected a result name (%%name), got %s", tok_desc(p, t));
            return -1;
        }
        if (n >= MAX_COUNT) {
            perr(p, t, "too many results");
            return -1;
        }
        *out = arena_grow(p->a, *out, sizeof(Tok *), (size_t)n, (size_t)n + 1);
        (*out)[n++] = next(p);
    } while (accept(p, ','));
    return expect(p, '=', "after the result names") ? n : -1;
}

static bool parse_result_types(Parser *p, Op *op, Tok *optok)
{
    int n = 0;
    if (accept(p, ':')) {
        do {
            Type ty;
            if (!parse_type(p, &ty))
                return false;
            if (n < op->nres)
                p->f->vals[op->res[n]].type = ty;
            n++;
        } while (accept(p, ','));
    }
    if (n != op->nres) {
        perr(p, optok, "op '%s' defines %d result(s) but %d result type(s) are given", op_info[op->code].name,
             op->nres, n);
        return false;
    }
    return true;
}

/* op := [results '='] NAME [operands] [attrs] regions [':' types] [loc] NL */
static bool parse_op(Parser *p, Block *b)
{
    Tok *first = peek(p);
    Tok **rnames = NULL;
    ValId *args = NULL;
    int nres = parse_result_names(p, &rnames);
    if (nres < 0)
        return false;
    Tok *optok = peek(p);
    OpCode code = optok->kind == T_IDENT ? op_lookup(optok->s, (size_t)optok->n) : OP_COUNT;
    if (code == OP_COUNT) {
        if (optok->kind == T_IDENT)
            perr(p, optok, "unknown op '%.*s'", optok->n, optok->s);
        else
            perr(p, optok, "expected an op name, got %s", tok_desc(p, optok));
        return false;
    }
    next(p);
    int nargs = parse_operands(p, &args);
    Attrs at = { { 0 }, NULL, 0, -1 };
    if (nargs < 0)
        return false;
    if (code == OP_SMEM_ALLOC) {   /* unset: no swizzle, no offset yet, 16-byte alignment */
        at.iattr[1] = -1;
        at.iattr[2] = 16;
    }
    if (tok_punct(peek(p), '{') && peek2(p)->kind != T_NL && !parse_attrs(p, code, &at))
        return false;
    Builder bl = ir_builder_at_end(p->f, b);
    bl.loc = tok_loc(p, first);
    Type *tys = arena_alloc(p->a, sizeof(Type) * (size_t)(nres ? nres : 1));
    for (int i = 0; i < nres; i++)
        tys[i] = type_scalar(DT_NONE);
    Op *op = ir_build(&bl, code, args, nargs, tys, nres);
    memcpy(op->iattr, at.iattr, sizeof op->iattr);
    op->list = at.list;
    op->nlist = at.nlist;
    if (code == OP_WS)   /* one region per role */
        ir_op_set_regions(p->f, op, at.nlist / 3);
    if (!parse_regions(p, op, optok) || !parse_result_types(p, op, optok))
        return false;
    if (code == OP_CONST && !apply_const_value(p, op, &at, optok))
        return false;
    if (tok_is(peek(p), "loc") && !parse_loc(p, &op->loc))
        return false;
    for (int i = 0; i < nres; i++)
        if (!define_val(p, rnames[i], op->res[i]))
            return false;
    return expect_nl(p, "the op");
}

/* items of a region, or of the grid/body section: ops until '}' */
static bool parse_block_body(Parser *p, Block *b)
{
    for (;;) {
        skip_nl(p);
        Tok *t = peek(p);
        if (tok_punct(t, '}'))
            return true;
        if (t->kind == T_EOF) {
            perr(p, t, "unexpected end of input: missing '}'");
            return false;
        }
        if ((tok_is(t, "grid") || tok_is(t, "body")) && tok_punct(peek2(p), ':'))
            return true;
        if (!parse_op(p, b))
            return false;
    }
}

/* ---- kernel header ---- */

typedef struct PendingParam {
    Tok *name;
    Type ty;
    const Tok *dimtoks[TENSOR_MAXRANK];
} PendingParam;

static bool parse_params(Parser *p, PendingParam **out, int *n)
{
    if (!expect(p, '(', "after the kernel name"))
        return false;
    if (accept(p, ')'))
        return true;
    do {
        Tok *t = peek(p);
        if (t->kind != T_VAL) {
            perr(p, t, "expected a parameter (%%name), got %s", tok_desc(p, t));
            return false;
        }
        if (*n >= MAX_COUNT) {
            perr(p, t, "too many parameters");
            return false;
        }
        *out = arena_grow(p->a, *out, sizeof(PendingParam), (size_t)*n, (size_t)*n + 1);
        PendingParam *pp = &(*out)[(*n)++];
        pp->name = next(p);
        if (!expect(p, ':', "after the parameter name") || !parse_type_dims(p, &pp->ty, pp->dimtoks))
            return false;
    } while (accept(p, ','));
    return expect(p, ')', "to close the parameters");
}

static bool parse_dims(Parser *p)
{
    next(p);
    if (!expect(p, '(', "after 'dims'"))
        return false;
    if (accept(p, ')'))
        return true;
    do {
        Tok *t = peek(p);
        if (t->kind != T_VAL) {
            perr(p, t, "expected a dim (%%name), got %s", tok_desc(p, t));
            return false;
        }
        if (!is_alpha(t->s[0]) || ir_find_dim(p->f, tok_str(p, t)) >= 0) {
            perr(p, t, is_alpha(t->s[0]) ? "dim %%%.*s listed twice" : "dim name %%%.*s must start with a letter",
                 t->n, t->s);
            return false;
        }
        next(p);
        if (!define_val(p, t, ir_add_dim(p->f, tok_str(p, t))))
            return false;
    } while (accept(p, ','));
    return expect(p, ')', "to close the dims");
}

/* const value by kind: int, bool, float, dtype or a dtype name */
static bool parse_const_value(Parser *p, ConstBinding *c, const Tok *kind)
{
    Tok *t = peek(p);
    if (tok_is(kind, "int") || (c->type != DT_NONE && dtype_is_int(c->type)))
        return parse_int(p, &c->ival);
    if (tok_is(kind, "float") || dtype_is_float(c->type))
        return parse_float(p, &c->fval);
    if (c->type == DT_BOOL) {
        if (!tok_is(t, "true") && !tok_is(t, "false")) {
            perr(p, t, "expected true or false, got %s", tok_desc(p, t));
            return false;
        }
        c->ival = tok_is(t, "true");
        next(p);
        return true;
    }
    return parse_dtype(p, &c->dval);
}

static bool parse_const(Parser *p)
{
    Tok *n = peek(p);
    if (n->kind != T_IDENT) {
        perr(p, n, "expected a constant name, got %s", tok_desc(p, n));
        return false;
    }
    next(p);
    if (!expect(p, ':', "after the constant name"))
        return false;
    Tok *k = peek(p);
    ConstBinding c = { tok_str(p, n), DT_NONE, 0, 0, DT_NONE };
    if (tok_is(k, "int")) c.type = DT_I64;
    else if (tok_is(k, "bool")) c.type = DT_BOOL;
    else if (tok_is(k, "float")) c.type = DT_F64;
    else if (!tok_is(k, "dtype")) {
        c.type = k->kind == T_IDENT ? dtype_lookup(k->s, (size_t)k->n) : DT_NONE;
        if (c.type == DT_NONE) {
            perr(p, k, "expected a constant kind (int, bool, float, dtype), got %s", tok_desc(p, k));
            return false;
        }
    }
    next(p);
    if (!expect(p, '=', "after the constant kind") || !parse_const_value(p, &c, k))
        return false;
    Func *f = p->f;
    f->consts = arena_grow(p->a, f->consts, sizeof c, (size_t)f->nconsts, (size_t)f->nconsts + 1);
    f->consts[f->nconsts++] = c;
    return true;
}

static bool parse_consts(Parser *p)
{
    next(p);
    if (!expect(p, '(', "after 'consts'"))
        return false;
    if (accept(p, ')'))
        return true;
    do {
        if (p->f->nconsts >= MAX_COUNT) {
            perr(p, peek(p), "too many constants");
            return false;
        }
        if (!parse_const(p))
            return false;
    } while (accept(p, ','));
    return expect(p, ')', "to close the constants");
}

/* 'smem' '(' INT ')': the kernel's dynamic shared memory in bytes */
static bool parse_smem(Parser *p)
{
    next(p);
    return expect(p, '(', "after 'smem'") &&
           parse_int_range(p, 0, (int64_t)1 << 40, "shared memory size", &p->f->smem_bytes) &&
           expect(p, ')', "to close smem(...)");
}

/* 'schedule' '(' KIND ',' 'warps' '=' INT [',' 'min_blocks' '=' INT]
 * [',' 'turns' '=' 'decoupled'] [',' 'wide'] [',' 'copy_interior'] [',' 'pv_rows'] ')'
 * (the verifier checks the combination) */
static bool parse_schedule(Parser *p)
{
    Schedule *s = &p->f->sched;
    next(p);
    if (!expect(p, '(', "after 'schedule'"))
        return false;
    Tok *k = peek(p);
    for (int i = SCHED_SIMT; i <= SCHED_CHAIN; i++)
        if (tok_is(k, sched_kind_name((SchedKind)i)))
            s->kind = (uint8_t)i;
    if (s->kind == SCHED_NONE) {
        perr(p, k, "expected a schedule kind (simt, mma, chain), got %s", tok_desc(p, k));
        return false;
    }
    next(p);
    while (accept(p, ',')) {
        Tok *t = peek(p);
        int64_t v = 0;
        if (tok_is(t, "warps") || tok_is(t, "min_blocks")) {
            bool w = tok_is(t, "warps");
            next(p);
            if (!expect(p, '=', "after the schedule field") ||
                !parse_int_range(p, w ? 1 : 0, w ? 32 : 32, w ? "warps" : "min_blocks", &v))
                return false;
            *(w ? &s->warps : &s->min_blocks) = (uint8_t)v;
        } else if (tok_is(t, "turns")) {
            next(p);
            if (!expect(p, '=', "after 'turns'"))
                return false;
            if (!tok_is(peek(p), "decoupled")) {
                perr(p, peek(p), "expected turns = decoupled, got %s", tok_desc(p, peek(p)));
                return false;
            }
            next(p);
            s->turns = SCHED_TURNS_DECOUPLED;
        } else if (tok_is(t, "wide") || tok_is(t, "copy_interior") || tok_is(t, "pv_rows")) {
            *(tok_is(t, "wide") ? &s->wide : tok_is(t, "copy_interior") ? &s->copy_interior : &s->pv_rows) = true;
            next(p);
        } else {
            perr(p, t, "unknown schedule field %s (warps, min_blocks, turns, wide, copy_interior, pv_rows)",
                 tok_desc(p, t));
            return false;
        }
    }
    return expect(p, ')', "to close schedule(...)");
}

/* Params are added after the dims so tensor types can name them; a dim named
 * by a tensor but missing from dims(...) is added after the listed ones. */
static bool add_params(Parser *p, PendingParam *pp, int n)
{
    for (int i = 0; i < n; i++) {
        Type ty = pp[i].ty;
        for (int d = 0; ty.kind == TY_TENSOR && d < ty.rank; d++) {
            const Tok *t = pp[i].dimtoks[d];
            if (!t)
                continue;
            char *nm = tok_str(p, t);
            if (ir_find_dim(p->f, nm) < 0) {
                Tok vt = *t;
                if (!define_val(p, &vt, ir_add_dim(p->f, nm)))
                    return false;
            }
            ty.dimsym[d] = (int16_t)ir_find_dim(p->f, nm);
        }
        if (!is_alpha(pp[i].name->s[0])) {
            perr(p, pp[i].name, "parameter name %%%.*s must start with a letter", pp[i].name->n, pp[i].name->s);
            return false;
        }
        if (!define_val(p, pp[i].name, ir_add_param(p->f, tok_str(p, pp[i].name), ty)))
            return false;
    }
    return true;
}

static bool parse_sections(Parser *p)
{
    Block *cur = &p->f->body;
    for (;;) {
        if (!parse_block_body(p, cur))
            return false;
        Tok *t = peek(p);
        if (tok_punct(t, '}'))
            return true;
        cur = tok_is(t, "grid") ? &p->f->grid : &p->f->body;
        if (cur->nops) {
            perr(p, t, "section '%.*s:' given twice", t->n, t->s);
            return false;
        }
        next(p), next(p);
    }
}

/* kernel := 'kernel' @NAME params [dims] [consts] [loc] '{' NL sections '}' */
static bool parse_kernel(Parser *p)
{
    Tok *kw = next(p);
    Tok *nm = peek(p);
    if (nm->kind != T_FUNC) {
        perr(p, nm, "expected a kernel name (@name), got %s", tok_desc(p, nm));
        return false;
    }
    next(p);
    sym_reset(p);
    p->f = ir_func_new(p->m, tok_str(p, nm), tok_loc(p, kw));
    PendingParam *pp = NULL;
    int npp = 0;
    if (!parse_params(p, &pp, &npp))
        return false;
    if (tok_is(peek(p), "dims") && !parse_dims(p))
        return false;
    if (tok_is(peek(p), "consts") && !parse_consts(p))
        return false;
    if (tok_is(peek(p), "smem") && !parse_smem(p))
        return false;
    if (tok_is(peek(p), "schedule") && !parse_schedule(p))
        return false;
    if (!add_params(p, pp, npp))
        return false;
    if (tok_is(peek(p), "loc") && !parse_loc(p, &p->f->loc))
        return false;
    if (!expect(p, '{', "to open the kernel") || !expect_nl(p, "'{'") || !parse_sections(p))
        return false;
    next(p); /* '}' */
    return expect_nl(p, "the kernel");
}

static bool parse_module(Parser *p)
{
    skip_nl(p);
    if (tok_is(peek(p), "source")) {
        next(p);
        Tok *s = peek(p);
        if (s->kind != T_STR) {
            perr(p, s, "expected a file name string after 'source', got %s", tok_desc(p, s));
            return false;
        }
        next(p);
        p->m->source_name = s->s;
        p->locfile = s->s;
        if (!expect_nl(p, "the source line"))
            return false;
    }
    for (;;) {
        skip_nl(p);
        Tok *t = peek(p);
        if (t->kind == T_EOF)
            return true;
        if (!tok_is(t, "kernel")) {
            perr(p, t, "expected 'kernel', got %s", tok_desc(p, t));
            return false;
        }
        if (!parse_kernel(p))
            return false;
    }
}

Module *ir_parse(Arena *a, const char *name, const char *text, size_t len, Diag *d)
{
    Parser p;
    memset(&p, 0, sizeof p);
    p.a = a;
    p.d = d;
    p.name = arena_strdup(a, name ? name : "<tir>");
    p.locfile = p.name;
    p.m = ir_module_new(a, NULL);
    if (!lex_all(&p, text ? text : "", text ? len : 0) || !parse_module(&p))
        return NULL;
    if (ir_verify(p.m, "parse", d) != 0)
        return NULL;
    return p.m;
}
