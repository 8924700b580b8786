/* parse_attr.c - the .tir reader's op attributes (`{name = value, ...}`):
 * which names each op takes, and their values (integers, lists, named
 * enums, the roles of a ws, a const's value once its type is known). */
#include "parse_int.h"

/* ---- attributes ---- */

static bool parse_list(Parser *p, Attrs *at)
{
    if (!tp_expect(p, '[', "to open the list"))
        return false;
    if (accept(p, ']'))
        return true;
    do {
        int64_t v;
        if (at->nlist >= TENSOR_MAXRANK) {
            tp_err(p, peek(p), "list longer than %d", TENSOR_MAXRANK);
            return false;
        }
        if (!tp_int_range(p, 0, (int64_t)1 << 31, "extent", &v))
            return false;
        at->list = arena_grow(p->a, at->list, sizeof(int64_t), (size_t)at->nlist, (size_t)at->nlist + 1);
        at->list[at->nlist++] = v;
    } while (accept(p, ','));
    return tp_expect(p, ']', "to close the list");
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
        return tp_int(p, out);
    tp_err(p, t, "unknown %s %s", what, tp_tok_desc(p, t));
    return false;
}

static bool skip_value(Parser *p, Attrs *at)
{
    at->value_pos = p->pos;
    accept(p, '-');
    Tok *t = peek(p);
    if (t->kind != T_NUM && t->kind != T_IDENT) {
        tp_err(p, t, "expected a constant value, got %s", tp_tok_desc(p, t));
        return false;
    }
    next(p);
    return true;
}

static bool attr_allowed(OpCode code, const char *key)
{
    if (!strcmp(key, "value")) return code == OP_CONST;
    if (!strcmp(key, "axis"))
        return code == OP_BLOCKID || code == OP_NBLOCKS || code == OP_EXPAND || code == OP_IOTA || code == OP_REDUCE ||
               code == OP_SCAN || code == OP_CONCAT;
    if (!strcmp(key, "pred")) return code == OP_CMP;
    if (!strcmp(key, "kind")) return code == OP_REDUCE || code == OP_SCAN;
    if (!strcmp(key, "exclusive")) return code == OP_SCAN;
    if (!strcmp(key, "extents") || !strcmp(key, "mask"))
        return code == OP_LOAD || code == OP_STORE || code == OP_ATOMIC_ADD || code == OP_ASYNC_COPY ||
               code == OP_TMA_LOAD || code == OP_GATHER || code == OP_SCATTER;
    if (!strcmp(key, "dim")) return code == OP_GATHER || code == OP_SCATTER;
    if (!strcmp(key, "starts")) return code == OP_SLICE;
    if (!strcmp(key, "offset")) return code == OP_SMEM_ALLOC || code == OP_MBAR_ALLOC || code == OP_TMEM_ALLOC;
    if (!strcmp(key, "column") || !strcmp(key, "columns")) return code == OP_TMEM_ALLOC;
    if (!strcmp(key, "swizzle") || !strcmp(key, "align") || !strcmp(key, "pad"))
        return code == OP_SMEM_ALLOC;
    if (!strcmp(key, "mma")) return code == OP_DOT || code == OP_DOT_ASYNC || code == OP_TC_MMA;
    if (!strcmp(key, "pending")) return code == OP_ASYNC_WAIT || code == OP_DOT_WAIT;
    if (!strcmp(key, "count")) return code == OP_MBAR_ALLOC;
    if (!strcmp(key, "bytes")) return code == OP_MBAR_EXPECT;
    if (!strcmp(key, "id") || !strcmp(key, "threads") || !strcmp(key, "mode")) return code == OP_NAMED_BAR;
    if (!strcmp(key, "roles") || !strcmp(key, "blocks")) return code == OP_WS;
    if (!strcmp(key, "other")) return code == OP_LOAD || code == OP_GATHER;
    if (!strcmp(key, "tma")) return code == OP_STORE;
    if (!strcmp(key, "pipeline")) return code == OP_FOR;
    if (!strcmp(key, "emu")) return code == OP_EXP2;
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
        tp_err(p, t, "unknown swizzle mode %s (none, 32B, 64B, 128B, pad)", tp_tok_desc(p, t));
        return false;
    }
    return tp_int(p, out);
}

/* roles = '[' '(' KIND ',' INT ',' INT ')' (',' ...)* ']'  (WS: list of triples) */
static bool parse_roles(Parser *p, Attrs *at)
{
    if (!tp_expect(p, '[', "to open the roles"))
        return false;
    do {
        int64_t r[3];
        if (at->nlist >= 3 * WS_MAXROLES) {
            tp_err(p, peek(p), "more than %d roles", WS_MAXROLES);
            return false;
        }
        if (!tp_expect(p, '(', "to open a role") ||
            !parse_named(p, role_names, ROLE_COUNT, "role kind", &r[0]) ||
            !tp_expect(p, ',', "after the role kind") || !tp_int_range(p, 0, 64, "warp groups", &r[1]) ||
            !tp_expect(p, ',', "after the warp groups") || !tp_int_range(p, 0, 1024, "registers", &r[2]) ||
            !tp_expect(p, ')', "to close the role"))
            return false;
        at->list = arena_grow(p->a, at->list, sizeof(int64_t), (size_t)at->nlist, (size_t)at->nlist + 3);
        memcpy(at->list + at->nlist, r, sizeof r);
        at->nlist += 3;
    } while (accept(p, ','));
    return tp_expect(p, ']', "to close the roles");
}

static bool parse_attr(Parser *p, OpCode code, Attrs *at)
{
    Tok *k = peek(p);
    if (k->kind != T_IDENT) {
        tp_err(p, k, "expected an attribute name, got %s", tp_tok_desc(p, k));
        return false;
    }
    char *key = tok_str(p, k);
    if (!attr_allowed(code, key)) {
        tp_err(p, k, "unknown attribute '%s' for op '%s'", key, op_info[code].name);
        return false;
    }
    next(p);
    if ((!strcmp(key, "other") || !strcmp(key, "tma")) && !tok_punct(peek(p), '=')) {
        at->iattr[1] = 1;
        return true;
    }
    if (!tp_expect(p, '=', "after the attribute name"))
        return false;
    if (!strcmp(key, "value")) return skip_value(p, at);
    if (!strcmp(key, "pred")) return parse_named(p, cmp_names, CMP_COUNT, "predicate", &at->iattr[0]);
    if (!strcmp(key, "kind")) return parse_named(p, reduce_names, RED_COUNT, "reduction", &at->iattr[1]);
    if (!strcmp(key, "extents") || !strcmp(key, "starts")) return parse_list(p, at);
    if (!strcmp(key, "dim")) return tp_int_range(p, 0, TENSOR_MAXRANK - 1, "dim", &at->iattr[2]);
    if (!strcmp(key, "other") || !strcmp(key, "tma")) return tp_int_range(p, 0, 1, key, &at->iattr[1]);
    if (!strcmp(key, "exclusive")) return tp_int_range(p, 0, 1, "exclusive", &at->iattr[2]);
    if (!strcmp(key, "swizzle")) return parse_swizzle(p, &at->iattr[0]);
    if (!strcmp(key, "offset")) return tp_int(p, &at->iattr[1]);
    if (!strcmp(key, "align") || !strcmp(key, "columns")) return tp_int(p, &at->iattr[2]);
    if (!strcmp(key, "pad")) return tp_int(p, &at->iattr[3]);
    if (!strcmp(key, "threads")) return tp_int(p, &at->iattr[1]);
    if (!strcmp(key, "mode")) return parse_named(p, named_bar_modes, NBAR_COUNT, "barrier mode", &at->iattr[2]);
    if (!strcmp(key, "roles")) return parse_roles(p, at);
    if (!strcmp(key, "mma")) return parse_named(p, mma_names, MMA_COUNT, "matrix instruction family", &at->iattr[0]);
    return tp_int(p, &at->iattr[0]);   /* axis, mask, pipeline, pending, count, bytes, id, column, emu, blocks */
}

bool tp_attrs(Parser *p, OpCode code, Attrs *at)
{
    next(p); /* '{' */
    if (accept(p, '}'))
        return true;
    do {
        if (!parse_attr(p, code, at))
            return false;
    } while (accept(p, ','));
    return tp_expect(p, '}', "to close the attributes");
}

/* Reads the const's value (saved by skip_value) now that its type is known. */
bool tp_const_value(Parser *p, Op *op, const Attrs *at, Tok *optok)
{
    if (at->value_pos < 0 || op->nres < 1) {
        tp_err(p, optok, "'const' needs {value = ...} and a result type");
        return false;
    }
    int save = p->pos;
    p->pos = at->value_pos;
    DType dt = (DType)ir_type(p->f, op->res[0])->dtype;
    bool ok = true;
    Tok *t = peek(p);
    if (dtype_is_float(dt)) {
        ok = tp_float(p, &op->fattr);
    } else if (dt == DT_BOOL && (tok_is(t, "true") || tok_is(t, "false"))) {
        op->iattr[0] = tok_is(t, "true");
        op->fattr = (double)op->iattr[0];
    } else {
        ok = tp_int(p, &op->iattr[0]);
        op->fattr = (double)op->iattr[0];
    }
    p->pos = save;
    return ok;
}
