/* smem_plan.c - the shared-memory allocation analysis behind the smem_alloc
 * pass: buffer sizes, liveness intervals and offsets.
 *
 * Needs: verified IR whose shared buffers are SMEM_ALLOC results (made by
 * double_buffer, shaped by swizzle: iattr[0] mode, iattr[2] alignment,
 * iattr[3] row padding) and MBAR_ALLOC barrier rings (8 bytes a slot,
 * 8-byte aligned).
 * Guarantees (of the plan; nothing in the IR changes here): every buffer
 * gets an offset that is a multiple of its alignment; two buffers whose
 * byte ranges overlap are never live at once, and between the last use of
 * the first and the alloc of the second there is a BARRIER of the kernel's
 * top-level block (so no thread can still read the old bytes when the new
 * ones are written).
 *
 * Linear order: a pre-order walk numbers every op; a FOR spans from its own
 * number to the last number inside it. A buffer lives from its alloc to its
 * last use; a use inside a loop that does not also hold the alloc keeps the
 * buffer alive for the whole loop (the next trip reads it again).
 * Packing: first fit by decreasing size (ties in program order): the lowest
 * aligned offset clear of every conflicting buffer placed so far.
 */
#include "passes.h"

#include <string.h>

int64_t pass_smem_limit(const TargetInfo *t, int64_t smem_per_block)
{
    int64_t most = tc_target_max_smem_per_block();
    if (smem_per_block > 0)     /* the device the PTX is meant for (sm_86 PTX on an sm_90 GPU) */
        return smem_per_block < most ? smem_per_block : most;
    return pass_target(t)->lim.smem_per_block;
}

const TargetInfo *pass_target(const TargetInfo *t) { return t ? t : tc_target("sm_86"); }

const char *pass_target_name(const PassCtx *ctx) { return pass_target(ctx->target)->name; }

static int64_t round_up(int64_t x, int64_t a) { return a > 1 ? (x + a - 1) / a * a : x; }

int64_t pass_smem_slot_stride(const Func *f, const Op *alloc)
{
    const Type *t = ir_type(f, alloc->res[0]);
    int64_t eb = dtype_bits((DType)t->dtype) / 8;
    if (alloc->code == OP_MBAR_ALLOC)   /* a barrier ring: one 8-byte mbarrier a slot */
        return eb;
    if (alloc->code == OP_TMEM_ALLOC)   /* tensor memory: the 8-byte word its address is written to */
        return 8;
    int64_t cols = t->shape[t->rank - 1], rows = 1;
    for (int i = 1; i < t->rank - 1; i++)
        rows *= t->shape[i];
    int64_t pad = alloc->iattr[0] == SWZ_PAD ? alloc->iattr[3] : 0;
    return round_up(rows * (cols * eb + pad), alloc->iattr[2]);
}

int64_t pass_smem_buffer_bytes(const Func *f, const Op *alloc)
{
    if (alloc->code == OP_TMEM_ALLOC)
        return 8;
    return ir_type(f, alloc->res[0])->shape[0] * pass_smem_slot_stride(f, alloc);
}

/* ---- linear order ---- */

typedef struct Lin {
    const Func *f;
    Arena *a;
    int64_t pos;
    Op **loops; int nloops, caploops;   /* the enclosing FORs during the walk */
    SmemBuf *bufs; int nbufs, capbufs;
    int *buf_of;                        /* per value: index into bufs, or -1 */
    bool *dot_only;                     /* per value: used only as DOT operands (or through TRANS) */
    int **buf_loops; int *nbuf_loops;   /* per buffer: FORs around its alloc */
    int64_t *fences; int nfences, capfences;
    int64_t *loop_end;                  /* per FOR (by walk index) */
    Op **loop_ops; int nall_loops, capall;
    int *stack_idx;                     /* walk indices of the enclosing FORs */
    struct Ext { int buf, loop; } *exts; int nexts, capexts;   /* uses inside loops without the alloc */
} Lin;

static void *grow(Arena *a, void *p, size_t elem, int n, int *cap)
{
    if (n < *cap)
        return p;
    int nc = *cap * 2 + 8;
    p = arena_grow(a, p, elem, (size_t)*cap, (size_t)nc);
    *cap = nc;
    return p;
}

static void new_buf(Lin *L, Op *op)
{
    L->bufs = grow(L->a, L->bufs, sizeof(SmemBuf), L->nbufs, &L->capbufs);
    int i = L->nbufs++;
    SmemBuf *b = &L->bufs[i];
    memset(b, 0, sizeof *b);
    b->alloc = op;
    b->start = b->end = L->pos;
    b->bytes = pass_smem_buffer_bytes(L->f, op);
    b->align = op->code == OP_MBAR_ALLOC || op->code == OP_TMEM_ALLOC ? 8 : op->iattr[2] > 0 ? op->iattr[2] : 16;
    b->offset = -1;
    b->name = arena_printf(L->a, "buffer #%d", i);   /* renamed after its tensor below */
    L->buf_of[op->res[0]] = i;
    L->buf_loops = arena_grow(L->a, L->buf_loops, sizeof(int *), (size_t)i, (size_t)i + 1);
    L->nbuf_loops = arena_grow(L->a, L->nbuf_loops, sizeof(int), (size_t)i, (size_t)i + 1);
    L->buf_loops[i] = arena_alloc(L->a, sizeof(int) * (size_t)(L->nloops + 1));
    if (L->nloops)
        memcpy(L->buf_loops[i], L->stack_idx, sizeof(int) * (size_t)L->nloops);
    L->nbuf_loops[i] = L->nloops;
}

static bool loop_holds_alloc(const Lin *L, int b, int loop)
{
    for (int k = 0; k < L->nbuf_loops[b]; k++)
        if (L->buf_loops[b][k] == loop)
            return true;
    return false;
}

/* A use of buffer b at the current position. Loops that enclose the use but
 * not the alloc are recorded: their end is known only after the walk. */
static void use_buf(Lin *L, int b)
{
    SmemBuf *sb = &L->bufs[b];
    if (L->pos > sb->end)
        sb->end = L->pos;
    for (int k = 0; k < L->nloops; k++)
        if (!loop_holds_alloc(L, b, L->stack_idx[k])) {
            L->exts = grow(L->a, L->exts, sizeof *L->exts, L->nexts, &L->capexts);
            L->exts[L->nexts].buf = b;
            L->exts[L->nexts++].loop = L->stack_idx[k];
        }
}

static void walk(Lin *L, Block *blk, bool top)
{
    for (int i = 0; i < blk->nops; i++) {
        Op *op = blk->ops[i];
        L->pos++;
        for (int k = 0; k < op->nargs; k++)
            if (op->args[k] < L->f->nvals && L->buf_of[op->args[k]] >= 0)
                use_buf(L, L->buf_of[op->args[k]]);
        if (op->code == OP_SMEM_ALLOC || op->code == OP_MBAR_ALLOC || op->code == OP_TMEM_ALLOC)
            new_buf(L, op);
        /* The code generator reads a slot whose value only feeds matrix
         * products in place, when the product runs (lower_mma.c): the
         * buffer lives as long as that value (and its transpose) is used. */
        if ((op->code == OP_SMEM_LOAD || op->code == OP_TRANS) && op->nargs && op->nres &&
            op->args[0] < L->f->nvals && L->buf_of[op->args[0]] >= 0 && L->dot_only[op->res[0]])
            L->buf_of[op->res[0]] = L->buf_of[op->args[0]];
        if (op->code == OP_BARRIER && top) {
            L->fences = grow(L->a, L->fences, sizeof(int64_t), L->nfences, &L->capfences);
            L->fences[L->nfences++] = L->pos;
        }
        if (op->code != OP_FOR) {
            for (int g = 0; g < op->nregions; g++)
                walk(L, &op->regions[g], false);
            continue;
        }
        L->loop_ops = grow(L->a, L->loop_ops, sizeof(Op *), L->nall_loops, &L->capall);
        L->loop_end = arena_grow(L->a, L->loop_end, sizeof(int64_t), (size_t)L->nall_loops,
                                 (size_t)L->nall_loops + 1);
        int li = L->nall_loops++;
        L->loop_ops[li] = op;
        L->stack_idx = arena_grow(L->a, L->stack_idx, sizeof(int), (size_t)L->nloops, (size_t)L->nloops + 1);
        L->stack_idx[L->nloops++] = li;
        walk(L, &op->regions[0], false);
        L->nloops--;
        L->loop_end[li] = L->pos;
    }
}

/* ---- packing ---- */

static bool fenced(const SmemPlan *p, const int64_t *fences, int nf, int i, int j)
{
    const SmemBuf *a = &p->bufs[i], *b = &p->bufs[j];
    if (a->end > b->start) {
        const SmemBuf *t = a;
        a = b, b = t;
    }
    if (a->end >= b->start)
        return false;   /* live at once */
    for (int k = 0; k < nf; k++)
        if (fences[k] > a->end && fences[k] < b->start)
            return true;
    return false;
}

/* Buffer indices by decreasing size, program order among equals
 * (insertion sort: kernels have a handful of buffers). */
static void sort_by_size(const SmemPlan *p, int *order)
{
    for (int i = 0; i < p->nbufs; i++) {
        int k = i, v = i;
        while (k > 0 && p->bufs[order[k - 1]].bytes < p->bufs[v].bytes) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = v;
    }
}

/* Lowest aligned offset for buffer i clear of every placed conflicting one. */
static int64_t first_fit(const SmemPlan *p, const bool *placed, const bool *conflict_row, int i)
{
    const SmemBuf *b = &p->bufs[i];
    int64_t off = 0;
    for (bool moved = true; moved;) {
        moved = false;
        for (int j = 0; j < p->nbufs; j++) {
            const SmemBuf *o = &p->bufs[j];
            if (!placed[j] || !conflict_row[j])
                continue;
            if (off < o->offset + o->bytes && o->offset < off + b->bytes) {
                off = round_up(o->offset + o->bytes, b->align);
                moved = true;
            }
        }
    }
    return off;
}

static void pack(SmemPlan *p, const int64_t *fences, int nf, Arena *a)
{
    int n = p->nbufs;
    int *order = arena_alloc(a, sizeof(int) * (size_t)(n + 1));
    bool *placed = arena_alloc(a, (size_t)n + 1);
    bool *conf = arena_alloc(a, (size_t)n * (size_t)n + 1);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++)
            conf[i * n + j] = i != j && !fenced(p, fences, nf, i, j);
    }
    sort_by_size(p, order);
    p->total = 0;
    for (int k = 0; k < n; k++) {
        int i = order[k];
        p->bufs[i].offset = first_fit(p, placed, &conf[i * n], i);
        placed[i] = true;
        if (p->bufs[i].offset + p->bufs[i].bytes > p->total)
            p->total = p->bufs[i].offset + p->bufs[i].bytes;
    }
}

/* The tensor the buffer's copies read, as its name. */
static bool name_visit(Func *f, Op *op, void *ctx)
{
    SmemPlan *p = ctx;
    if (op->code != OP_ASYNC_COPY && op->code != OP_TMA_LOAD)
        return true;
    ValId tensor = op->args[op->code == OP_TMA_LOAD ? 4 : 2];
    for (int i = 0; i < p->nbufs; i++)
        if (p->bufs[i].alloc->res[0] == op->args[0] && !strncmp(p->bufs[i].name, "buffer #", 8)) {
            const char *n = ir_val(f, tensor)->name;
            if (n)
                p->bufs[i].name = n;
        }
    return true;
}

/* A barrier ring by its value's name (the pass that made it gave one). */
static void name_rings(const Func *f, SmemPlan *p, Arena *a)
{
    for (int i = 0; i < p->nbufs; i++)
        if (p->bufs[i].alloc->code == OP_MBAR_ALLOC) {
            const char *n = ir_val(f, p->bufs[i].alloc->res[0])->name;
            p->bufs[i].name = n ? arena_printf(a, "barriers %s", n) : arena_printf(a, "barriers #%d", i);
        } else if (p->bufs[i].alloc->code == OP_TMEM_ALLOC) {
            p->bufs[i].name = "the tensor memory address";
        }
}

static bool not_dot_visit(Func *f, Op *op, void *ctx)
{
    bool *bad = ctx;
    for (int k = 0; k < op->nargs; k++)
        if (op->args[k] < f->nvals && !((op->code == OP_DOT || op->code == OP_DOT_ASYNC || op->code == OP_TC_MMA) && k < 2) &&
            op->code != OP_TRANS)
            bad[op->args[k]] = true;
    return true;
}

/* A TRANS result that is not dot-only makes its operand not dot-only. */
static bool trans_visit(Func *f, Op *op, void *ctx)
{
    bool *bad = ctx;
    if (op->code == OP_TRANS && op->nres && bad[op->res[0]] && op->args[0] < f->nvals)
        bad[op->args[0]] = true;
    return true;
}

static bool *dot_only_values(Func *f, Arena *a)
{
    bool *bad = arena_alloc(a, sizeof(bool) * (f->nvals + 1)), *ok = arena_alloc(a, sizeof(bool) * (f->nvals + 1));
    memset(bad, 0, sizeof(bool) * (f->nvals + 1));
    ir_walk(f, &f->body, not_dot_visit, bad);
    ir_walk(f, &f->body, trans_visit, bad);
    for (uint32_t v = 0; v < f->nvals; v++)
        ok[v] = !bad[v];
    return ok;
}

void pass_smem_plan(Func *f, Arena *a, SmemPlan *out)
{
    Lin L;
    memset(&L, 0, sizeof L);
    L.f = f;
    L.a = a;
    L.buf_of = arena_alloc(a, sizeof(int) * (f->nvals + 1));
    for (uint32_t v = 0; v < f->nvals; v++)
        L.buf_of[v] = -1;
    L.dot_only = dot_only_values(f, a);
    walk(&L, &f->body, true);
    for (int k = 0; k < L.nexts; k++) {
        SmemBuf *b = &L.bufs[L.exts[k].buf];
        if (L.loop_end[L.exts[k].loop] > b->end)
            b->end = L.loop_end[L.exts[k].loop];
    }
    out->bufs = L.bufs;
    out->nbufs = L.nbufs;
    pack(out, L.fences, L.nfences, a);
    ir_walk(f, &f->body, name_visit, out);
    name_rings(f, out, a);
}
