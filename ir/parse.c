/* parse.c - reads the textual form of Tile IR (.tir) written by print.c.
 *
 * A hand-written lexer turns the whole text into tokens (newlines are tokens:
 * one op per line; parse_lex.c); a recursive-descent parser builds the IR
 * with the builders of ir.c (here; op attributes in parse_attr.c). The first error stops the parse: it goes to the Diag at
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
#include "parse_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        tp_err(p, t, "value %%%.*s defined twice", t->n, t->s);
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
        tp_err(p, t, "expected a value (%%name), got %s", tp_tok_desc(p, t));
        return 0;
    }
    Sym *y = sym_slot(p, t->s, t->n);
    if (!y->s) {
        tp_err(p, t, "undefined value %%%.*s", t->n, t->s);
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
        tp_err(p, t, "expected an element type (i32, f32, bf16, ...), got %s", tp_tok_desc(p, t));
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
        tp_err(p, t, "expected a tile shape like 128x64xf32, got %s", tp_tok_desc(p, t));
        return false;
    }
    const char *s = t->s, *e = t->s + t->n;
    int rank = 0;
    while (s < e && is_digit(*s)) {
        int64_t v = 0;
        while (s < e && is_digit(*s) && v <= (int64_t)1 << 40)
            v = v * 10 + (*s++ - '0');
        if (rank >= TILE_MAXRANK) {
            tp_err(p, t, "tile rank above %d in '%.*s'", TILE_MAXRANK, t->n, t->s);
            return false;
        }
        if (s >= e || *s != 'x' || v < 1 || v > ((int64_t)1 << 31)) {
            tp_err(p, t, "bad tile shape '%.*s' (extents are positive integers, as in 128x64xf32)", t->n, t->s);
            return false;
        }
        ty->shape[rank++] = v;
        s++;
    }
    DType dt = dtype_lookup_ir(s, (size_t)(e - s));
    if (dt == DT_NONE) {
        tp_err(p, t, "unknown element type '%.*s' in tile type", (int)(e - s), s);
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
            tp_err(p, l, "expected a layout id like #L1, got %s", tp_tok_desc(p, l));
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
    tp_err(p, t, "expected a memory space (reg, shared, tmem, global) or layout (#L1), got %s", tp_tok_desc(p, t));
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
                tp_err(p, t, "unknown dim '%.*s'", t->n, t->s);
                return false;
            }
            ty->dimsym[i] = (int16_t)di;
        }
        next(p);
        return true;
    }
    return tp_int_range(p, 1, (int64_t)1 << 40, "tensor extent", &ty->shape[i]);
}

static bool parse_tensor(Parser *p, Type *ty, const Tok **dimtoks)
{
    DType dt;
    if (!parse_dtype(p, &dt) || !tp_expect(p, '[', "after the tensor element type"))
        return false;
    *ty = type_scalar(dt);
    ty->kind = TY_TENSOR;
    int rank = 0;
    do {
        if (rank >= TENSOR_MAXRANK) {
            tp_err(p, peek(p), "tensor rank above %d", TENSOR_MAXRANK);
            return false;
        }
        if (!parse_tensor_dim(p, ty, rank++, dimtoks))
            return false;
    } while (accept(p, ','));
    ty->rank = (uint8_t)rank;
    return tp_expect(p, ']', "after the tensor dims");
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
        return tp_expect(p, '>', "to close the tile type");
    }
    if (tok_is(t, "tensor") && tok_punct(peek2(p), '<')) {
        next(p), next(p);
        return parse_tensor(p, ty, dimtoks) && tp_expect(p, '>', "to close the tensor type");
    }
    if (t->kind == T_IDENT && dtype_lookup_ir(t->s, (size_t)t->n) != DT_NONE) {
        *ty = type_scalar(dtype_lookup_ir(t->s, (size_t)t->n));
        next(p);
        return true;
    }
    tp_err(p, t, "expected type, got %s", tp_tok_desc(p, t));
    return false;
}

static bool parse_type(Parser *p, Type *ty) { return parse_type_dims(p, ty, NULL); }

/* loc := 'loc' '(' INT ':' INT ')' */
static bool parse_loc(Parser *p, Loc *out)
{
    int64_t l, c;
    next(p);
    if (!tp_expect(p, '(', "after 'loc'") || !tp_int_range(p, 0, 1 << 30, "line", &l) ||
        !tp_expect(p, ':', "between line and column") || !tp_int_range(p, 0, 1 << 30, "column", &c) ||
        !tp_expect(p, ')', "to close loc(...)"))
        return false;
    *out = (Loc){ p->locfile, (int)l, (int)c };
    return true;
}

/* ---- ops and blocks ---- */

static bool parse_block_body(Parser *p, Block *b);

/* block args: '^' '(' [%v ':' type (',' ...)*] ')' ':' NL */
static bool parse_block_args(Parser *p, Block *b)
{
    next(p);
    if (!tp_expect(p, '(', "after '^'"))
        return false;
    if (!accept(p, ')')) {
        do {
            Tok *n = peek(p);
            Type ty;
            if (n->kind != T_VAL) {
                tp_err(p, n, "expected a block argument (%%name), got %s", tp_tok_desc(p, n));
                return false;
            }
            next(p);
            if (!tp_expect(p, ':', "after the block argument") || !parse_type(p, &ty))
                return false;
            if (b->nargs >= MAX_COUNT) {
                tp_err(p, n, "too many block arguments");
                return false;
            }
            if (!define_val(p, n, ir_block_add_arg(p->f, b, ty, NULL)))
                return false;
        } while (accept(p, ','));
        if (!tp_expect(p, ')', "to close the block arguments"))
            return false;
    }
    return tp_expect(p, ':', "after the block arguments") && tp_expect_nl(p, "the block arguments");
}

/* region := '{' NL [blockargs] op* '}' */
static bool parse_region(Parser *p, Block *b)
{
    Tok *open = next(p);
    if (++p->depth > MAX_DEPTH) {
        tp_err(p, open, "regions nested deeper than %d", MAX_DEPTH);
        return false;
    }
    skip_nl(p);
    if (tok_punct(peek(p), '^') && !parse_block_args(p, b))
        return false;
    bool ok = parse_block_body(p, b);
    p->depth--;
    return ok && tp_expect(p, '}', "to close the region");
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
            tp_err(p, t, "op '%s' takes %d region(s)", op_info[op->code].name, op->nregions);
            return false;
        }
        if (!parse_region(p, &op->regions[n++]))
            return false;
    }
    if (n != op->nregions) {
        tp_err(p, optok, "op '%s' takes %d region(s), got %d", op_info[op->code].name, op->nregions, n);
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
            tp_err(p, peek(p), "too many operands");
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
            tp_err(p, t, "expected a result name (%%name), got %s", tp_tok_desc(p, t));
            return -1;
        }
        if (n >= MAX_COUNT) {
            tp_err(p, t, "too many results");
            return -1;
        }
        *out = arena_grow(p->a, *out, sizeof(Tok *), (size_t)n, (size_t)n + 1);
        (*out)[n++] = next(p);
    } while (accept(p, ','));
    return tp_expect(p, '=', "after the result names") ? n : -1;
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
        tp_err(p, optok, "op '%s' defines %d result(s) but %d result type(s) are given", op_info[op->code].name,
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
            tp_err(p, optok, "unknown op '%.*s'", optok->n, optok->s);
        else
            tp_err(p, optok, "expected an op name, got %s", tp_tok_desc(p, optok));
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
    if (code == OP_MBAR_ALLOC || code == OP_TMEM_ALLOC)   /* unset: no offset yet */
        at.iattr[1] = -1;
    if (tok_punct(peek(p), '{') && peek2(p)->kind != T_NL && !tp_attrs(p, code, &at))
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
    if (code == OP_CONST && !tp_const_value(p, op, &at, optok))
        return false;
    if (tok_is(peek(p), "loc") && !parse_loc(p, &op->loc))
        return false;
    for (int i = 0; i < nres; i++)
        if (!define_val(p, rnames[i], op->res[i]))
            return false;
    return tp_expect_nl(p, "the op");
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
            tp_err(p, t, "unexpected end of input: missing '}'");
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
    if (!tp_expect(p, '(', "after the kernel name"))
        return false;
    if (accept(p, ')'))
        return true;
    do {
        Tok *t = peek(p);
        if (t->kind != T_VAL) {
            tp_err(p, t, "expected a parameter (%%name), got %s", tp_tok_desc(p, t));
            return false;
        }
        if (*n >= MAX_COUNT) {
            tp_err(p, t, "too many parameters");
            return false;
        }
        *out = arena_grow(p->a, *out, sizeof(PendingParam), (size_t)*n, (size_t)*n + 1);
        PendingParam *pp = &(*out)[(*n)++];
        pp->name = next(p);
        if (!tp_expect(p, ':', "after the parameter name") || !parse_type_dims(p, &pp->ty, pp->dimtoks))
            return false;
    } while (accept(p, ','));
    return tp_expect(p, ')', "to close the parameters");
}

static bool parse_dims(Parser *p)
{
    next(p);
    if (!tp_expect(p, '(', "after 'dims'"))
        return false;
    if (accept(p, ')'))
        return true;
    do {
        Tok *t = peek(p);
        if (t->kind != T_VAL) {
            tp_err(p, t, "expected a dim (%%name), got %s", tp_tok_desc(p, t));
            return false;
        }
        if (!is_alpha(t->s[0]) || ir_find_dim(p->f, tok_str(p, t)) >= 0) {
            tp_err(p, t, is_alpha(t->s[0]) ? "dim %%%.*s listed twice" : "dim name %%%.*s must start with a letter",
                 t->n, t->s);
            return false;
        }
        next(p);
        if (!define_val(p, t, ir_add_dim(p->f, tok_str(p, t))))
            return false;
    } while (accept(p, ','));
    return tp_expect(p, ')', "to close the dims");
}

/* const value by kind: int, bool, float, dtype or a dtype name */
static bool parse_const_value(Parser *p, ConstBinding *c, const Tok *kind)
{
    Tok *t = peek(p);
    if (tok_is(kind, "int") || (c->type != DT_NONE && dtype_is_int(c->type)))
        return tp_int(p, &c->ival);
    if (tok_is(kind, "float") || dtype_is_float(c->type))
        return tp_float(p, &c->fval);
    if (c->type == DT_BOOL) {
        if (!tok_is(t, "true") && !tok_is(t, "false")) {
            tp_err(p, t, "expected true or false, got %s", tp_tok_desc(p, t));
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
        tp_err(p, n, "expected a constant name, got %s", tp_tok_desc(p, n));
        return false;
    }
    next(p);
    if (!tp_expect(p, ':', "after the constant name"))
        return false;
    Tok *k = peek(p);
    ConstBinding c = { tok_str(p, n), DT_NONE, 0, 0, DT_NONE };
    if (tok_is(k, "int")) c.type = DT_I64;
    else if (tok_is(k, "bool")) c.type = DT_BOOL;
    else if (tok_is(k, "float")) c.type = DT_F64;
    else if (!tok_is(k, "dtype")) {
        c.type = k->kind == T_IDENT ? dtype_lookup(k->s, (size_t)k->n) : DT_NONE;
        if (c.type == DT_NONE) {
            tp_err(p, k, "expected a constant kind (int, bool, float, dtype), got %s", tp_tok_desc(p, k));
            return false;
        }
    }
    next(p);
    if (!tp_expect(p, '=', "after the constant kind") || !parse_const_value(p, &c, k))
        return false;
    Func *f = p->f;
    f->consts = arena_grow(p->a, f->consts, sizeof c, (size_t)f->nconsts, (size_t)f->nconsts + 1);
    f->consts[f->nconsts++] = c;
    return true;
}

static bool parse_consts(Parser *p)
{
    next(p);
    if (!tp_expect(p, '(', "after 'consts'"))
        return false;
    if (accept(p, ')'))
        return true;
    do {
        if (p->f->nconsts >= MAX_COUNT) {
            tp_err(p, peek(p), "too many constants");
            return false;
        }
        if (!parse_const(p))
            return false;
    } while (accept(p, ','));
    return tp_expect(p, ')', "to close the constants");
}

/* 'smem' '(' INT ')': the kernel's dynamic shared memory in bytes */
static bool parse_smem(Parser *p)
{
    next(p);
    return tp_expect(p, '(', "after 'smem'") &&
           tp_int_range(p, 0, (int64_t)1 << 40, "shared memory size", &p->f->smem_bytes) &&
           tp_expect(p, ')', "to close smem(...)");
}

/* 'schedule' '(' KIND ',' 'warps' '=' INT [',' 'min_blocks' '=' INT]
 * [',' 'turns' '=' 'decoupled'] [',' 'wide'] [',' 'copy_interior'] [',' 'pv_rows']
 * [',' 'epilogue_order'] ')'
 * (the verifier checks the combination) */
static bool parse_schedule(Parser *p)
{
    Schedule *s = &p->f->sched;
    next(p);
    if (!tp_expect(p, '(', "after 'schedule'"))
        return false;
    Tok *k = peek(p);
    for (int i = SCHED_SIMT; i <= SCHED_CHAIN; i++)
        if (tok_is(k, sched_kind_name((SchedKind)i)))
            s->kind = (uint8_t)i;
    if (s->kind == SCHED_NONE) {
        tp_err(p, k, "expected a schedule kind (simt, mma, chain), got %s", tp_tok_desc(p, k));
        return false;
    }
    next(p);
    while (accept(p, ',')) {
        Tok *t = peek(p);
        int64_t v = 0;
        if (tok_is(t, "warps") || tok_is(t, "min_blocks")) {
            bool w = tok_is(t, "warps");
            next(p);
            if (!tp_expect(p, '=', "after the schedule field") ||
                !tp_int_range(p, w ? 1 : 0, w ? 32 : 32, w ? "warps" : "min_blocks", &v))
                return false;
            *(w ? &s->warps : &s->min_blocks) = (uint8_t)v;
        } else if (tok_is(t, "turns")) {
            next(p);
            if (!tp_expect(p, '=', "after 'turns'"))
                return false;
            if (!tok_is(peek(p), "decoupled")) {
                tp_err(p, peek(p), "expected turns = decoupled, got %s", tp_tok_desc(p, peek(p)));
                return false;
            }
            next(p);
            s->turns = SCHED_TURNS_DECOUPLED;
        } else if (tok_is(t, "wide") || tok_is(t, "copy_interior") || tok_is(t, "pv_rows") ||
                   tok_is(t, "epilogue_order")) {
            *(tok_is(t, "wide") ? &s->wide : tok_is(t, "copy_interior") ? &s->copy_interior
              : tok_is(t, "pv_rows") ? &s->pv_rows : &s->epilogue_order) = true;
            next(p);
        } else {
            tp_err(p, t, "unknown schedule field %s (warps, min_blocks, turns, wide, copy_interior, pv_rows, "
                 "epilogue_order)",
                 tp_tok_desc(p, t));
            return false;
        }
    }
    return tp_expect(p, ')', "to close schedule(...)");
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
            tp_err(p, pp[i].name, "parameter name %%%.*s must start with a letter", pp[i].name->n, pp[i].name->s);
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
            tp_err(p, t, "section '%.*s:' given twice", t->n, t->s);
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
        tp_err(p, nm, "expected a kernel name (@name), got %s", tp_tok_desc(p, nm));
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
    if (!tp_expect(p, '{', "to open the kernel") || !tp_expect_nl(p, "'{'") || !parse_sections(p))
        return false;
    next(p); /* '}' */
    return tp_expect_nl(p, "the kernel");
}

static bool parse_module(Parser *p)
{
    skip_nl(p);
    if (tok_is(peek(p), "source")) {
        next(p);
        Tok *s = peek(p);
        if (s->kind != T_STR) {
            tp_err(p, s, "expected a file name string after 'source', got %s", tp_tok_desc(p, s));
            return false;
        }
        next(p);
        p->m->source_name = s->s;
        p->locfile = s->s;
        if (!tp_expect_nl(p, "the source line"))
            return false;
    }
    for (;;) {
        skip_nl(p);
        Tok *t = peek(p);
        if (t->kind == T_EOF)
            return true;
        if (!tok_is(t, "kernel")) {
            tp_err(p, t, "expected 'kernel', got %s", tp_tok_desc(p, t));
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
    if (!tp_lex(&p, text ? text : "", text ? len : 0) || !parse_module(&p))
        return NULL;
    if (ir_verify(p.m, "parse", d) != 0)
        return NULL;
    return p.m;
}
