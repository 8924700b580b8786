/* print.c - the textual form of Tile IR (.tir).
 *
 * One op per line in the generic form
 *   [%r, ... =] NAME [%a, ...] [{attr = v, ...}] [{ REGION } [else { ... }]] [: TYPES] [loc(L:C)]
 * Params and dims print under their source names (%X, %N); every other value
 * is numbered %0, %1, ... in textual order (results before the block args of
 * the op's regions). Floats print in the shortest form that reads back to the
 * same double (inf, -inf, nan by name). parse.c reads this text back;
 * print -> parse -> print gives the same text. The printer never fails on
 * broken IR: a value that is never defined prints as %v<id>, a bad id as
 * %invalid<id>, so the verifier's failures can be dumped.
 */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Printer {
    const Func *f;
    bool locs;
    StrBuf *out;
    int32_t *num;         /* per value: print number, -1 = none */
    const char **names;   /* per value: source name (params, dims) or NULL */
    int32_t next;
} Printer;

/* ---- numbering ---- */

static void number_block(Printer *p, const Block *b);

static void number_val(Printer *p, ValId v)
{
    if (v > 0 && v < p->f->nvals && !p->names[v])
        p->num[v] = p->next++;
}

static void number_block(Printer *p, const Block *b)
{
    for (int i = 0; i < b->nargs; i++)
        number_val(p, b->args[i]);
    for (int i = 0; i < b->nops; i++) {
        const Op *op = b->ops[i];
        for (int r = 0; r < op->nres; r++)
            number_val(p, op->res[r]);
        for (int g = 0; g < op->nregions; g++)
            number_block(p, &op->regions[g]);
    }
}

static bool is_ident(const char *s)
{
    if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

static void printer_init(Printer *p, const Func *f, const PrintOpts *o, StrBuf *out)
{
    Arena *a = f->mod->arena;
    p->f = f;
    p->locs = o && o->locs;
    p->out = out;
    p->next = 0;
    p->num = arena_alloc(a, sizeof(int32_t) * (f->nvals + 1));
    p->names = arena_alloc(a, sizeof(char *) * (f->nvals + 1));
    for (uint32_t v = 0; v < f->nvals; v++)
        p->num[v] = -1;
    for (int i = 0; i < f->ndims; i++)
        if (f->dims[i] > 0 && f->dims[i] < f->nvals)
            p->names[f->dims[i]] = f->dim_names[i];
    for (int i = 0; i < f->nparams; i++) {
        ValId v = f->params[i];
        if (v == 0 || v >= f->nvals)
            continue;
        const char *n = f->vals[v].name;
        p->names[v] = is_ident(n) ? n : arena_printf(a, "arg%d", i);
    }
    number_block(p, &f->grid);
    number_block(p, &f->body);
}

/* ---- pieces ---- */

static void put_val(Printer *p, ValId v)
{
    if (v == 0 || v >= p->f->nvals)
        sb_printf(p->out, "%%invalid%u", (unsigned)v);
    else if (p->names[v])
        sb_printf(p->out, "%%%s", p->names[v]);
    else if (p->num[v] >= 0)
        sb_printf(p->out, "%%%d", (int)p->num[v]);
    else
        sb_printf(p->out, "%%v%u", (unsigned)v);
}

static void put_vals(Printer *p, const ValId *vs, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            sb_puts(p->out, ", ");
        put_val(p, vs[i]);
    }
}

static void put_type(Printer *p, const Type *t) { type_print(p->f, t, p->out); }

static void put_valtype(Printer *p, ValId v)
{
    if (v == 0 || v >= p->f->nvals) {
        sb_puts(p->out, "?");
        return;
    }
    put_type(p, ir_type(p->f, v));
}

/* Shortest decimal that strtod reads back to exactly v. */
static void put_double(StrBuf *out, double v)
{
    if (isnan(v)) {
        sb_puts(out, signbit(v) ? "-nan" : "nan");
        return;
    }
    if (isinf(v)) {
        sb_puts(out, v < 0 ? "-inf" : "inf");
        return;
    }
    sb_put_double(out, v);
}

static void put_indent(Printer *p, int ind)
{
    for (int i = 0; i < ind; i++)
        sb_puts(p->out, "  ");
}

static void put_loc(Printer *p, Loc l)
{
    if (p->locs)
        sb_printf(p->out, " loc(%d:%d)", l.line, l.col);
}

static void put_name_or_int(StrBuf *out, int64_t v, const char *const *names, int n)
{
    if (v >= 0 && v < n)
        sb_puts(out, names[v]);
    else
        sb_printf(out, "%lld", (long long)v);
}

/* ---- attributes ---- */

static void put_const_value(Printer *p, const Op *op)
{
    const Type *t = op->nres && op->res[0] < p->f->nvals ? ir_type(p->f, op->res[0]) : NULL;
    sb_puts(p->out, "{value = ");
    if (t && dtype_is_float((DType)t->dtype))
        put_double(p->out, op->fattr);
    else if (t && t->dtype == DT_BOOL)
        sb_puts(p->out, op->iattr[0] ? "true" : "false");
    else
        sb_printf(p->out, "%lld", (long long)op->iattr[0]);
    sb_putc(p->out, '}');
}

static void put_mem_attrs(Printer *p, const Op *op)
{
    sb_puts(p->out, "{extents = [");
    for (int i = 0; i < op->nlist; i++)
        sb_printf(p->out, "%s%lld", i ? ", " : "", (long long)op->list[i]);
    sb_printf(p->out, "], mask = %lld", (long long)op->iattr[0]);
    if (op->code == OP_GATHER || op->code == OP_SCATTER)
        sb_printf(p->out, ", dim = %lld", (long long)op->iattr[2]);
    if ((op->code == OP_LOAD || op->code == OP_GATHER) && op->iattr[1])
        sb_puts(p->out, ", other");
    if (op->code == OP_STORE && op->iattr[1])
        sb_puts(p->out, ", tma");
    sb_putc(p->out, '}');
}

/* {swizzle = 128B, offset = 0, align = 1024[, pad = 16]} */
static void put_smem_attrs(Printer *p, const Op *op)
{
    sb_puts(p->out, " {swizzle = ");
    put_name_or_int(p->out, op->iattr[0], swizzle_names, SWZ_COUNT);
    sb_printf(p->out, ", offset = %lld, align = %lld", (long long)op->iattr[1], (long long)op->iattr[2]);
    if (op->iattr[3])
        sb_printf(p->out, ", pad = %lld", (long long)op->iattr[3]);
    sb_putc(p->out, '}');
}

/* {roles = [(producer, 1, 40), (consumer, 2, 232)]} */
static void put_roles(Printer *p, const Op *op)
{
    sb_puts(p->out, " {roles = [");
    for (int i = 0; i + 2 < op->nlist; i += 3) {
        sb_puts(p->out, i ? ", (" : "(");
        put_name_or_int(p->out, op->list[i], role_names, ROLE_COUNT);
        sb_printf(p->out, ", %lld, %lld)", (long long)op->list[i + 1], (long long)op->list[i + 2]);
    }
    sb_puts(p->out, "]");
    if (op->iattr[0])
        sb_printf(p->out, ", blocks = %lld", (long long)op->iattr[0]);
    sb_putc(p->out, '}');
}

static void put_attrs(Printer *p, const Op *op)
{
    StrBuf *out = p->out;
    switch (op->code) {
    case OP_CONST:
        sb_putc(out, ' ');
        put_const_value(p, op);
        return;
    case OP_BLOCKID: case OP_NBLOCKS: case OP_EXPAND: case OP_IOTA: case OP_CONCAT:
        sb_printf(out, " {axis = %lld}", (long long)op->iattr[0]);
        return;
    case OP_SLICE:
        sb_puts(out, " {starts = [");
        for (int i = 0; i < op->nlist; i++)
            sb_printf(out, "%s%lld", i ? ", " : "", (long long)op->list[i]);
        sb_puts(out, "]}");
        return;
    case OP_CMP:
        sb_puts(out, " {pred = ");
        put_name_or_int(out, op->iattr[0], cmp_names, CMP_COUNT);
        sb_putc(out, '}');
        return;
    case OP_REDUCE: case OP_SCAN:
        sb_printf(out, " {axis = %lld, kind = ", (long long)op->iattr[0]);
        put_name_or_int(out, op->iattr[1], reduce_names, RED_COUNT);
        if (op->code == OP_SCAN && op->iattr[2])
            sb_printf(out, ", exclusive = %lld", (long long)op->iattr[2]);
        sb_putc(out, '}');
        return;
    case OP_LOAD: case OP_STORE: case OP_ATOMIC_ADD: case OP_ASYNC_COPY: case OP_TMA_LOAD: case OP_GATHER:
    case OP_SCATTER:
        sb_putc(out, ' ');
        put_mem_attrs(p, op);
        return;
    case OP_SMEM_ALLOC:
        put_smem_attrs(p, op);
        return;
    case OP_ASYNC_WAIT: case OP_DOT_WAIT:
        sb_printf(out, " {pending = %lld}", (long long)op->iattr[0]);
        return;
    case OP_MBAR_ALLOC:   /* the offset once smem_alloc placed the ring */
        sb_printf(out, " {count = %lld", (long long)op->iattr[0]);
        if (op->iattr[1] >= 0)
            sb_printf(out, ", offset = %lld", (long long)op->iattr[1]);
        sb_putc(out, '}');
        return;
    case OP_TMEM_ALLOC:   /* columns and the address word once smem_alloc planned them */
        if (op->iattr[1] >= 0)
            sb_printf(out, " {column = %lld, columns = %lld, offset = %lld}", (long long)op->iattr[0],
                      (long long)op->iattr[2], (long long)op->iattr[1]);
        return;
    case OP_DOT: case OP_DOT_ASYNC: case OP_TC_MMA:   /* the instruction family, once mma_select chose it */
        if (op->iattr[0]) {
            sb_puts(out, " {mma = ");
            put_name_or_int(out, op->iattr[0], mma_names, MMA_COUNT);
            sb_putc(out, '}');
        }
        return;
    case OP_MBAR_EXPECT:
        sb_printf(out, " {bytes = %lld}", (long long)op->iattr[0]);
        return;
    case OP_NAMED_BAR:
        sb_printf(out, " {id = %lld, threads = %lld, mode = ", (long long)op->iattr[0], (long long)op->iattr[1]);
        put_name_or_int(out, op->iattr[2], named_bar_modes, NBAR_COUNT);
        sb_putc(out, '}');
        return;
    case OP_WS:
        put_roles(p, op);
        return;
    case OP_FOR:
        if (op->iattr[0])
            sb_printf(out, " {pipeline = %lld}", (long long)op->iattr[0]);
        return;
    case OP_EXP2:
        if (op->iattr[0])
            sb_printf(out, " {emu = %lld}", (long long)op->iattr[0]);
        return;
    default:
        return;
    }
}

/* ---- ops and blocks ---- */

static void put_block(Printer *p, const Block *b, int ind);

static void put_region(Printer *p, const Op *op, int g, int ind)
{
    const Block *b = &op->regions[g];
    if (g > 0)
        sb_puts(p->out, op->code == OP_IF ? " else" : "");
    sb_puts(p->out, " {\n");
    if (b->nargs) {
        put_indent(p, ind);
        sb_puts(p->out, "^(");
        for (int i = 0; i < b->nargs; i++) {
            if (i)
                sb_puts(p->out, ", ");
            put_val(p, b->args[i]);
            sb_puts(p->out, ": ");
            put_valtype(p, b->args[i]);
        }
        sb_puts(p->out, "):\n");
    }
    put_block(p, b, ind + 1);
    put_indent(p, ind);
    sb_putc(p->out, '}');
}

static void put_op(Printer *p, const Op *op, int ind)
{
    put_indent(p, ind);
    if (op->nres) {
        put_vals(p, op->res, op->nres);
        sb_puts(p->out, " = ");
    }
    if (op->code < OP_COUNT)
        sb_puts(p->out, op_info[op->code].name);
    else
        sb_printf(p->out, "invalid_op_%u", (unsigned)op->code);
    if (op->nargs) {
        sb_putc(p->out, ' ');
        put_vals(p, op->args, op->nargs);
    }
    put_attrs(p, op);
    for (int g = 0; g < op->nregions; g++)
        put_region(p, op, g, ind);
    for (int r = 0; r < op->nres; r++) {
        sb_puts(p->out, r ? ", " : " : ");
        put_valtype(p, op->res[r]);
    }
    put_loc(p, op->loc);
    sb_putc(p->out, '\n');
}

static void put_block(Printer *p, const Block *b, int ind)
{
    for (int i = 0; i < b->nops; i++)
        put_op(p, b->ops[i], ind);
}

/* ---- kernel header ---- */

static void put_const_binding(Printer *p, const ConstBinding *c)
{
    StrBuf *out = p->out;
    sb_printf(out, "%s: ", c->name ? c->name : "?");
    switch (c->type) {
    case DT_I64: sb_printf(out, "int = %lld", (long long)c->ival); return;
    case DT_BOOL: sb_printf(out, "bool = %s", c->ival ? "true" : "false"); return;
    case DT_F64: sb_puts(out, "float = "); put_double(out, c->fval); return;
    case DT_NONE: sb_printf(out, "dtype = %s", dtype_name(c->dval)); return;
    default: break;
    }
    sb_printf(out, "%s = ", dtype_name(c->type));
    if (dtype_is_float(c->type))
        put_double(out, c->fval);
    else
        sb_printf(out, "%lld", (long long)c->ival);
}

/* ' schedule(KIND, warps = N[, min_blocks = N][, turns = decoupled][, wide]
 * [, copy_interior][, pv_rows][, epilogue_order])'; nothing when undecided. */
static void put_schedule(StrBuf *out, const Schedule *s)
{
    if (s->kind == SCHED_NONE)
        return;
    sb_printf(out, " schedule(%s, warps = %d", sched_kind_name((SchedKind)s->kind), s->warps);
    if (s->min_blocks)
        sb_printf(out, ", min_blocks = %d", s->min_blocks);
    if (s->turns == SCHED_TURNS_DECOUPLED)
        sb_puts(out, ", turns = decoupled");
    if (s->wide)
        sb_puts(out, ", wide");
    if (s->copy_interior)
        sb_puts(out, ", copy_interior");
    if (s->pv_rows)
        sb_puts(out, ", pv_rows");
    if (s->epilogue_order)
        sb_puts(out, ", epilogue_order");
    sb_putc(out, ')');
}

static void put_header(Printer *p)
{
    const Func *f = p->f;
    sb_printf(p->out, "kernel @%s(", f->name ? f->name : "");
    for (int i = 0; i < f->nparams; i++) {
        if (i)
            sb_puts(p->out, ", ");
        put_val(p, f->params[i]);
        sb_puts(p->out, ": ");
        put_valtype(p, f->params[i]);
    }
    sb_putc(p->out, ')');
    if (f->ndims) {
        sb_puts(p->out, " dims(");
        put_vals(p, f->dims, f->ndims);
        sb_putc(p->out, ')');
    }
    if (f->nconsts) {
        sb_puts(p->out, " consts(");
        for (int i = 0; i < f->nconsts; i++) {
            if (i)
                sb_puts(p->out, ", ");
            put_const_binding(p, &f->consts[i]);
        }
        sb_putc(p->out, ')');
    }
    if (f->smem_bytes)
        sb_printf(p->out, " smem(%lld)", (long long)f->smem_bytes);
    put_schedule(p->out, &f->sched);
    put_loc(p, f->loc);
    sb_puts(p->out, " {\n");
}

void ir_print_func(const Func *f, const PrintOpts *o, StrBuf *out)
{
    Printer p;
    printer_init(&p, f, o, out);
    put_header(&p);
    if (f->grid.nops) {
        sb_puts(out, "grid:\n");
        put_block(&p, &f->grid, 1);
    }
    sb_puts(out, "body:\n");
    put_block(&p, &f->body, 1);
    sb_puts(out, "}\n");
}

static void put_string(StrBuf *out, const char *s)
{
    sb_putc(out, '"');
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            sb_printf(out, "\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f)
            sb_printf(out, "\\x%02x", *c);
        else
            sb_putc(out, (char)*c);
    }
    sb_putc(out, '"');
}

void ir_print_module(const Module *m, const PrintOpts *o, StrBuf *out)
{
    sb_puts(out, "// tilec tir\n");
    if (m->source_name) {
        sb_puts(out, "source ");
        put_string(out, m->source_name);
        sb_putc(out, '\n');
    }
    for (int i = 0; i < m->nfuncs; i++) {
        sb_putc(out, '\n');
        ir_print_func(m->funcs[i], o, out);
    }
}
