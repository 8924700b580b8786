/* ir.c - Tile IR construction: tables generated from dtypes.h / ops.h,
 * types, values, builders, use counts and walking. */
#include "ir.h"

#include <string.h>

/* ---- dtypes ---- */

static const struct { const char *name; int bits; char cls; } dtype_tab[DT_COUNT] = {
    [DT_NONE] = { "?", 0, '?' },
#define DTYPE(E, s, b, c) [DT_##E] = { s, b, #c[0] },
#include "dtypes.h"
#undef DTYPE
};

const char *dtype_name(DType t) { return (unsigned)t < DT_COUNT ? dtype_tab[t].name : "?"; }
int dtype_bits(DType t) { return (unsigned)t < DT_COUNT ? dtype_tab[t].bits : 0; }
bool dtype_is_float(DType t) { return (unsigned)t < DT_COUNT && dtype_tab[t].cls == 'F'; }
bool dtype_is_int(DType t)
{
    return (unsigned)t < DT_COUNT && (dtype_tab[t].cls == 'I' || dtype_tab[t].cls == 'U');
}
bool dtype_is_signed(DType t) { return (unsigned)t < DT_COUNT && dtype_tab[t].cls == 'I'; }

bool dtype_is_opaque(DType t) { return (unsigned)t < DT_COUNT && dtype_tab[t].cls == 'O'; }

DType dtype_lookup_ir(const char *s, size_t n)
{
    for (int i = 1; i < DT_COUNT; i++)
        if (strlen(dtype_tab[i].name) == n && memcmp(dtype_tab[i].name, s, n) == 0)
            return (DType)i;
    return DT_NONE;
}

DType dtype_lookup(const char *s, size_t n)
{
    DType t = dtype_lookup_ir(s, n);
    return dtype_is_opaque(t) ? DT_NONE : t;
}

/* ---- ops ---- */

const OpInfo op_info[OP_COUNT] = {
#define OP(E, s, na, nr, ng, fl) [OP_##E] = { s, na, nr, ng, fl },
#include "ops.h"
#undef OP
};

OpCode op_lookup(const char *s, size_t n)
{
    for (int i = 0; i < OP_COUNT; i++)
        if (strlen(op_info[i].name) == n && memcmp(op_info[i].name, s, n) == 0)
            return (OpCode)i;
    return OP_COUNT;
}

const char *const cmp_names[CMP_COUNT] = { "eq", "ne", "lt", "le", "gt", "ge" };
const char *const swizzle_names[SWZ_COUNT] = { "none", "32B", "64B", "128B", "pad" };
const char *const reduce_names[RED_COUNT] = { "sum", "max", "min", "prod" };
const char *const role_names[ROLE_COUNT] = { "producer", "consumer", "mma", "epilogue" };
const char *const named_bar_modes[NBAR_COUNT] = { "sync", "arrive" };
const char *const mma_names[MMA_COUNT] = { "none", "mma_sync", "wgmma", "tcgen05", "simt" };

const char *space_name(Space s)
{
    static const char *const names[] = { "any", "reg", "shared", "tmem", "global" };
    return (unsigned)s < TC_COUNTOF(names) ? names[s] : "?";
}

/* ---- types ---- */

Type type_scalar(DType dt)
{
    Type t;
    memset(&t, 0, sizeof t);
    t.kind = TY_SCALAR;
    t.dtype = (uint8_t)dt;
    for (int i = 0; i < TENSOR_MAXRANK; i++)
        t.dimsym[i] = -1;
    return t;
}

Type type_tile(DType dt, int rank, const int64_t *shape, Space sp)
{
    Type t = type_scalar(dt);
    t.kind = TY_TILE;
    t.rank = (uint8_t)rank;
    t.space = (uint8_t)sp;
    for (int i = 0; i < rank; i++)
        t.shape[i] = shape[i];
    return t;
}

bool type_same_shape(const Type *a, const Type *b)
{
    if (a->kind != b->kind || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i] || a->dimsym[i] != b->dimsym[i])
            return false;
    return true;
}

bool type_eq(const Type *a, const Type *b)
{
    return type_same_shape(a, b) && a->dtype == b->dtype && a->space == b->space &&
           a->layout == b->layout;
}

int64_t type_numel(const Type *t)
{
    int64_t n = 1;
    if (t->kind == TY_TILE)
        for (int i = 0; i < t->rank; i++)
            n *= t->shape[i];
    return n;
}

void type_print(const Func *f, const Type *t, StrBuf *out)
{
    switch (t->kind) {
    case TY_SCALAR:
        sb_puts(out, dtype_name(t->dtype));
        return;
    case TY_TILE:
        sb_puts(out, "tile<");
        for (int i = 0; i < t->rank; i++)
            sb_printf(out, "%lldx", (long long)t->shape[i]);
        sb_puts(out, dtype_name(t->dtype));
        if (t->space != SP_ANY)
            sb_printf(out, ", %s", space_name(t->space));
        if (t->layout)
            sb_printf(out, ", #L%u", (unsigned)t->layout);
        sb_putc(out, '>');
        return;
    case TY_TENSOR:
        sb_printf(out, "tensor<%s[", dtype_name(t->dtype));
        for (int i = 0; i < t->rank; i++) {
            if (i)
                sb_putc(out, ',');
            if (t->dimsym[i] >= 0 && f && t->dimsym[i] < f->ndims)
                sb_puts(out, f->dim_names[t->dimsym[i]]);
            else
                sb_printf(out, "%lld", (long long)t->shape[i]);
        }
        sb_puts(out, "]>");
        return;
    }
}

/* ---- modules, functions, values ---- */

Module *ir_module_new(Arena *a, const char *source_name)
{
    Module *m = arena_alloc(a, sizeof *m);
    m->arena = a;
    m->source_name = source_name ? arena_strdup(a, source_name) : NULL;
    return m;
}

Func *ir_func_new(Module *m, const char *name, Loc loc)
{
    Func *f = arena_alloc(m->arena, sizeof *f);
    f->mod = m;
    f->name = arena_strdup(m->arena, name);
    f->loc = loc;
    f->capvals = 64;
    f->vals = arena_alloc(m->arena, sizeof(Value) * f->capvals);
    f->nvals = 1; /* 0 = no value */
    m->funcs = arena_grow(m->arena, m->funcs, sizeof *m->funcs, (size_t)m->nfuncs, (size_t)m->nfuncs + 1);
    m->funcs[m->nfuncs++] = f;
    return f;
}

ValId ir_new_value(Func *f, Type t, const char *name_hint)
{
    if (f->nvals == f->capvals) {
        Value *old = f->vals;
        f->vals = arena_grow(f->mod->arena, old, sizeof(Value), f->capvals, f->capvals * 2);
        f->capvals *= 2;
        /* the old copy joins the stale list, linked through its unused
         * vals[0].def (vals[0] is no value) */
        old[0].def = (Op *)(void *)f->stale;
        f->stale = old;
        f->vals[0].def = NULL;
    }
    ValId v = f->nvals++;
    f->vals[v].type = t;
    f->vals[v].def = NULL;
    f->vals[v].name = name_hint ? arena_strdup(f->mod->arena, name_hint) : NULL;
    return v;
}

void ir_func_release_stale(Func *f)
{
    for (Value *v = f->stale, *next; v; v = next) {
        next = (Value *)(void *)v[0].def;
        arena_release(f->mod->arena, v);   /* small ones stay in their chunk */
    }
    f->stale = NULL;
}

void ir_release_stale(Module *m)
{
    for (int i = 0; i < m->nfuncs; i++)
        ir_func_release_stale(m->funcs[i]);
}

ValId ir_add_param(Func *f, const char *name, Type t)
{
    ValId v = ir_new_value(f, t, name);
    f->params = arena_grow(f->mod->arena, f->params, sizeof(ValId), (size_t)f->nparams, (size_t)f->nparams + 1);
    f->params[f->nparams++] = v;
    return v;
}

int ir_find_dim(const Func *f, const char *name)
{
    for (int i = 0; i < f->ndims; i++)
        if (strcmp(f->dim_names[i], name) == 0)
            return i;
    return -1;
}

ValId ir_add_dim(Func *f, const char *name)
{
    int i = ir_find_dim(f, name);
    if (i >= 0)
        return f->dims[i];
    Arena *a = f->mod->arena;
    ValId v = ir_new_value(f, type_scalar(DT_I32), name);
    f->dims = arena_grow(a, f->dims, sizeof(ValId), (size_t)f->ndims, (size_t)f->ndims + 1);
    f->dim_names = arena_grow(a, f->dim_names, sizeof(char *), (size_t)f->ndims, (size_t)f->ndims + 1);
    f->dims[f->ndims] = v;
    f->dim_names[f->ndims] = arena_strdup(a, name);
    f->ndims++;
    return v;
}

/* ---- blocks ---- */

static void block_insert_a(Arena *a, Block *b, int pos, Op *op)
{
    if (b->nops == b->capops) {
        int cap = b->capops ? b->capops * 2 : 8;
        b->ops = arena_grow(a, b->ops, sizeof(Op *), (size_t)b->nops, (size_t)cap);
        b->capops = cap;
    }
    if (pos < 0 || pos > b->nops)
        pos = b->nops;
    memmove(&b->ops[pos + 1], &b->ops[pos], sizeof(Op *) * (size_t)(b->nops - pos));
    b->ops[pos] = op;
    b->nops++;
    op->parent = b;
}

void ir_block_insert(Func *f, Block *b, int pos, Op *op) { block_insert_a(f->mod->arena, b, pos, op); }
void ir_block_append(Func *f, Block *b, Op *op) { block_insert_a(f->mod->arena, b, -1, op); }

void ir_block_remove(Block *b, int pos)
{
    if (pos < 0 || pos >= b->nops)
        return;
    memmove(&b->ops[pos], &b->ops[pos + 1], sizeof(Op *) * (size_t)(b->nops - pos - 1));
    b->nops--;
}

int ir_block_index_of(const Block *b, const Op *op)
{
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i] == op)
            return i;
    return -1;
}

ValId ir_block_add_arg(Func *f, Block *b, Type t, const char *hint)
{
    ValId v = ir_new_value(f, t, hint);
    b->args = arena_grow(f->mod->arena, b->args, sizeof(ValId), (size_t)b->nargs, (size_t)b->nargs + 1);
    b->args[b->nargs++] = v;
    return v;
}

Block *ir_op_region(Op *op, int i) { return &op->regions[i]; }

void ir_op_set_regions(Func *f, Op *op, int n)
{
    op->regions = n ? arena_alloc(f->mod->arena, sizeof(Block) * (size_t)n) : NULL;
    op->nregions = (uint16_t)n;
}

Block *ir_ws_add_role(Func *f, Op *ws, RoleKind kind, int wgs, int regs)
{
    Arena *a = f->mod->arena;
    int n = ws->nregions;
    ws->regions = arena_grow(a, ws->regions, sizeof(Block), (size_t)n, (size_t)n + 1);
    memset(&ws->regions[n], 0, sizeof(Block));
    ws->nregions = (uint16_t)(n + 1);
    for (int g = 0; g < n; g++)   /* the regions moved: re-point their ops */
        for (int i = 0; i < ws->regions[g].nops; i++)
            ws->regions[g].ops[i]->parent = &ws->regions[g];
    ws->list = arena_grow(a, ws->list, sizeof(int64_t), (size_t)ws->nlist, (size_t)ws->nlist + 3);
    ws->list[ws->nlist++] = kind;
    ws->list[ws->nlist++] = wgs;
    ws->list[ws->nlist++] = regs;
    return &ws->regions[n];
}

/* ---- builders ---- */

Builder ir_builder_at_end(Func *f, Block *b)
{
    Builder bl = { f, b, -1, { 0 } };
    return bl;
}

Builder ir_builder_before(Func *f, Op *op)
{
    Builder bl = { f, op->parent, ir_block_index_of(op->parent, op), op->loc };
    return bl;
}

Op *ir_build(Builder *b, OpCode code, const ValId *args, int nargs, const Type *restys, int nres)
{
    Arena *a = b->f->mod->arena;
    Op *op = arena_alloc(a, sizeof *op);
    op->code = (uint16_t)code;
    op->nargs = (uint16_t)nargs;
    op->nres = (uint16_t)nres;
    op->loc = b->loc;
    if (nargs) {
        op->args = arena_alloc(a, sizeof(ValId) * (size_t)nargs);
        memcpy(op->args, args, sizeof(ValId) * (size_t)nargs);
    }
    if (nres) {
        op->res = arena_alloc(a, sizeof(ValId) * (size_t)nres);
        for (int i = 0; i < nres; i++) {
            op->res[i] = ir_new_value(b->f, restys[i], NULL);
            b->f->vals[op->res[i]].def = op;
        }
    }
    int ng = op_info[code].nregions;
    if (ng > 0) {
        op->nregions = (uint16_t)ng;
        op->regions = arena_alloc(a, sizeof(Block) * (size_t)ng);
    }
    block_insert_a(a, b->blk, b->pos, op);
    if (b->pos >= 0)
        b->pos++;
    return op;
}

ValId ir_build1(Builder *b, OpCode code, const ValId *args, int nargs, Type resty)
{
    Op *op = ir_build(b, code, args, nargs, &resty, 1);
    return op->res[0];
}

ValId ir_const_int(Builder *b, Type t, int64_t v)
{
    Op *op = ir_build(b, OP_CONST, NULL, 0, &t, 1);
    op->iattr[0] = v;
    op->fattr = (double)v;
    return op->res[0];
}

ValId ir_const_float(Builder *b, Type t, double v)
{
    Op *op = ir_build(b, OP_CONST, NULL, 0, &t, 1);
    op->fattr = v;
    op->iattr[0] = 0;
    return op->res[0];
}

/* ---- uses and walking ---- */

static bool count_visit(Func *f, Op *op, void *ctx)
{
    uint32_t *count = ctx;
    (void)f;
    for (int i = 0; i < op->nargs; i++)
        count[op->args[i]]++;
    return true;
}

void ir_count_uses(const Func *f, UseInfo *u, Arena *scratch)
{
    u->count = arena_alloc(scratch, sizeof(uint32_t) * f->nvals);
    ir_walk((Func *)f, (Block *)&f->body, count_visit, u->count);
    ir_walk((Func *)f, (Block *)&f->grid, count_visit, u->count);
}

static bool replace_visit(Func *f, Op *op, void *ctx)
{
    const ValId *ft = ctx;
    (void)f;
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i] == ft[0])
            op->args[i] = ft[1];
    return true;
}

void ir_replace_all_uses(Func *f, ValId from, ValId to)
{
    ValId ft[2] = { from, to };
    ir_walk(f, &f->body, replace_visit, ft);
    ir_walk(f, &f->grid, replace_visit, ft);
}

bool ir_walk(Func *f, Block *b, OpVisitor fn, void *ctx)
{
    for (int i = 0; i < b->nops; i++) {
        Op *op = b->ops[i];
        if (!fn(f, op, ctx))
            return false;
        for (int r = 0; r < op->nregions; r++)
            if (!ir_walk(f, &op->regions[r], fn, ctx))
                return false;
    }
    return true;
}

bool ir_walk_op(Func *f, Op *op, OpVisitor fn, void *ctx)
{
    if (!fn(f, op, ctx))
        return false;
    for (int r = 0; r < op->nregions; r++)
        if (!ir_walk(f, &op->regions[r], fn, ctx))
            return false;
    return true;
}

typedef struct WriteFind { ValId t; bool found; } WriteFind;

static bool write_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    WriteFind *w = ctx;
    if ((op->code == OP_STORE || op->code == OP_ATOMIC_ADD || op->code == OP_SCATTER) && op->args[0] == w->t)
        w->found = true;
    return !w->found;
}

bool ir_tensor_written(Func *f, ValId t)
{
    WriteFind w = { t, false };
    ir_walk(f, &f->body, write_visit, &w);
    return w.found;
}

/* What both warp-group families ask of the operands (NULL: nothing). */
static const char *tc_operands_problem(const Type *a, const Type *b, const char *wrong_dtype)
{
    if (a->kind != TY_TILE || b->kind != TY_TILE || a->rank != 2 || b->rank != 2)
        return "the operands are not 2-D tiles";
    if ((a->dtype != DT_BF16 && a->dtype != DT_F16) || b->dtype != a->dtype)
        return wrong_dtype;
    return NULL;
}

const char *ir_mma_sync_problem(const Type *a, const Type *b)
{
    if (a->kind != TY_TILE || b->kind != TY_TILE || a->rank != 2 || b->rank != 2)
        return "the operands are not 2-D tiles";
    DType d = (DType)a->dtype;
    if ((d != DT_BF16 && d != DT_F16 && d != DT_F8E4M3 && d != DT_F8E5M2 && d != DT_I8) || b->dtype != a->dtype)
        return "mma.sync takes bf16, f16, (converted to f16) f8 and i8 operands here";
    if (a->shape[0] % 16 || a->shape[1] % 16 || b->shape[1] % 16)
        return "an extent is not a multiple of 16";
    if (d == DT_I8 && a->shape[1] % 32)
        return "K is not a multiple of 32 (i8 products take m16n8k32)";
    return NULL;
}

const char *ir_mma_tf32_problem(const Type *a, const Type *b)
{
    if (a->kind != TY_TILE || b->kind != TY_TILE || a->rank != 2 || b->rank != 2)
        return "the operands are not 2-D tiles";
    if (a->dtype != DT_F32 || b->dtype != DT_F32)
        return "mma.sync .tf32 takes f32 operands";
    if (a->shape[0] % 16 || b->shape[1] % 16 || a->shape[1] % 8)
        return "M or N is not a multiple of 16, or K of 8";
    return NULL;
}

int64_t ir_wgmma_k(DType dt) { return WGMMA_K_BYTES / (dtype_bits(dt) / 8 > 0 ? dtype_bits(dt) / 8 : 2); }

const char *ir_wgmma_problem(const Type *a, const Type *b)
{
    bool f8 = a->kind == TY_TILE && b->kind == TY_TILE && (a->dtype == DT_F8E4M3 || a->dtype == DT_F8E5M2) &&
              b->dtype == a->dtype;
    if (f8) {
        if (a->rank != 2 || b->rank != 2)
            return "the operands are not 2-D tiles";
    } else {
        const char *no = tc_operands_problem(a, b, "wgmma takes f16, bf16, f8e4m3 or f8e5m2 operands here");
        if (no)
            return no;
    }
    if (a->shape[0] % WGMMA_M)
        return "M is not a multiple of 64";
    if (f8 && a->shape[1] % 32)
        return "K is not a multiple of 32 (f8 products take m64nNk32)";
    if (a->shape[1] % WGMMA_K)
        return "K is not a multiple of 16";
    if (b->shape[1] % 8)
        return "N is not a multiple of 8";
    return NULL;
}

const char *ir_tcgen05_problem(const Type *a, const Type *b)
{
    const char *no = tc_operands_problem(a, b, "tcgen05 takes f16 or bf16 operands here");
    if (no)
        return no;
    if (a->shape[0] % TCGEN05_M)
        return "M is not a multiple of 128";
    if (a->shape[1] % WGMMA_K)
        return "K is not a multiple of 16";
    if (b->shape[1] % 16 || b->shape[1] > TCGEN05_MAX_N)
        return "N is not a multiple of 16 up to 256";
    if (a->shape[0] / TCGEN05_M * b->shape[1] > TMEM_COLS)   /* the f32 accumulator's columns */
        return "the accumulator needs more than the 512 columns of tensor memory";
    return NULL;
}

int64_t ir_tmem_cols(const Type *t)
{
    int64_t per = dtype_bits((DType)t->dtype) == 16 ? t->shape[1] / 2 : t->shape[1];
    return t->shape[0] / TCGEN05_M * per;
}

const char *sched_kind_name(SchedKind k)
{
    switch (k) {
    case SCHED_SIMT: return "simt";
    case SCHED_MMA: return "mma";
    case SCHED_CHAIN: return "chain";
    case SCHED_NONE: break;
    }
    return "none";
}

typedef struct FindOp { OpCode code; Op *found; } FindOp;

static bool find_op_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    FindOp *c = ctx;
    if (op->code == c->code)
        c->found = op;
    return !c->found;
}

Op *ir_find_op(Func *f, OpCode code)
{
    FindOp c = { code, NULL };
    ir_walk(f, &f->body, find_op_visit, &c);
    return c.found;
}
