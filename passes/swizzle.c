/* swizzle.c - the thin pass that gives every shared buffer its address
 * transform (XOR swizzle or row padding), chosen by the bank-conflict model
 * and selection analysis of smem_model.h (bank_model.c, swizzle_select.c).
 *
 * Needs: verified IR with shared buffers as SMEM_ALLOC results (after
 * double_buffer). Each slot is a [rows x cols] tile (the slot's last dim is
 * cols, the others multiply into rows) swizzled on its own.
 * Guarantees: SMEM_ALLOC iattr[0] = the chosen SwizzleMode, iattr[2] = an
 * alignment at least what the mode needs, iattr[3] = the row padding (pad
 * only); the values computed are unchanged (a layout only moves bytes).
 * When no layout serves every access the buffer stays row-major, with a
 * remark. Each decision (with predicted wavefronts before/after, the
 * row-major layout's conflicts named) goes to the report and, with the
 * candidate table, before the --print-after=swizzle dump.
 *
 * The accesses: ASYNC_COPY writes 16-byte chunks along rows (cp.async);
 * TMA_LOAD writes through a tensor map (a descriptor mode); SMEM_STORE
 * writes 16-byte vectors; an SMEM_LOAD read is by what consumes it: DOT
 * operand A -> ldmatrix; DOT operand B ([K,N] row-major) -> ldmatrix.trans;
 * through TRANS into DOT B (the tile is [N,K]) -> ldmatrix, into DOT A ->
 * ldmatrix.trans; a DOT_ASYNC or TC_MMA operand -> a wgmma or tcgen05
 * descriptor (the same layouts); anything else
 * -> 16-byte vector reads. A buffer with descriptor users (TMA, wgmma) gets
 * the widest swizzle its rows allow, never padding (swizzle_select.c).
 */
#include "passes.h"
#include "smem_model.h"

#include <string.h>

enum { MAX_USES = 16 };

typedef struct Uses {
    ValId buf;
    SmemUse u[MAX_USES];
    int n;
} Uses;

static void add_use(Uses *us, SmemAccessKind k)
{
    for (int i = 0; i < us->n; i++)
        if (us->u[i].kind == k) {
            us->u[i].weight++;
            return;
        }
    if (us->n < MAX_USES)
        us->u[us->n++] = (SmemUse){ k, false, 1 };
}

/* How the value v (an smem_load result) is read. */
typedef struct ReadScan { ValId v; bool through_trans; int kind; } ReadScan;

static bool scan_reader(Func *f, Op *op, void *ctx)
{
    ReadScan *r = ctx;
    for (int i = 0; i < op->nargs; i++) {
        if (op->args[i] != r->v)
            continue;
        if ((op->code == OP_DOT_ASYNC || op->code == OP_TC_MMA) && i < 2) {   /* wgmma / tcgen05: a descriptor */
            if (r->kind < 0)
                r->kind = SA_MMA_DESC;
        } else if (op->code == OP_DOT && i < 2) {
            bool a = i == 0;
            int k = (a != r->through_trans) ? SA_LDMATRIX : SA_LDMATRIX_TRANS;
            if (r->kind < 0)
                r->kind = k;
        } else if (op->code == OP_TRANS && !r->through_trans) {
            ReadScan t = { op->res[0], true, -1 };
            ir_walk(f, &f->body, scan_reader, &t);
            if (r->kind < 0)
                r->kind = t.kind;
        }
    }
    return true;
}

static SmemAccessKind read_kind(Func *f, ValId v)
{
    ReadScan r = { v, false, -1 };
    ir_walk(f, &f->body, scan_reader, &r);
    return r.kind >= 0 ? (SmemAccessKind)r.kind : SA_LD_V4;
}

static bool collect_uses(Func *f, Op *op, void *ctx)
{
    Uses *us = ctx;
    if (op->nargs == 0 || op->args[0] != us->buf)
        return true;
    if (op->code == OP_ASYNC_COPY)
        add_use(us, SA_CP_ASYNC16);
    else if (op->code == OP_TMA_LOAD)
        add_use(us, SA_TMA);
    else if (op->code == OP_SMEM_STORE)
        add_use(us, SA_ST_V4);
    else if (op->code == OP_SMEM_LOAD)
        add_use(us, read_kind(f, op->res[0]));
    return true;
}

static SwizzleMode mode_of(const SmemLayout *l)
{
    if (l->xform == SMX_PAD)
        return SWZ_PAD;
    if (l->xform == SMX_SWIZZLE)
        return l->swz_bits == 1 ? SWZ_32B : l->swz_bits == 2 ? SWZ_64B : SWZ_128B;
    return SWZ_NONE;
}

static void decide(PassCtx *ctx, Func *f, Op *alloc, Arena *a)
{
    const Type *t = ir_type(f, alloc->res[0]);
    int64_t cols = t->shape[t->rank - 1], rows = 1;
    for (int i = 1; i < t->rank - 1; i++)
        rows *= t->shape[i];
    Uses us = { alloc->res[0], { { 0 } }, 0 };
    ir_walk(f, &f->body, collect_uses, &us);
    const char *where = pass_loc_str(a, f, alloc->loc);
    if (us.n == 0) {
        pass_note(ctx, "buffer at %s: no accesses, stays row-major", where);
        return;
    }
    SmemDecision dec;
    if (pass_smem_select(a, (DType)t->dtype, rows, cols, us.u, us.n, &dec, NULL, alloc->loc)) {
        alloc->iattr[0] = SWZ_NONE;
        alloc->iattr[3] = 0;
        pass_note(ctx, "buffer at %s stays row-major: %s", where, dec.explain);
        return;
    }
    alloc->iattr[0] = mode_of(&dec.layout);
    alloc->iattr[3] = dec.layout.xform == SMX_PAD ? dec.layout.pad_bytes : 0;
    if (dec.align > alloc->iattr[2])
        alloc->iattr[2] = dec.align;
    PassCtx quiet = *ctx;   /* the report gets the one-line explanation ... */
    quiet.notes = NULL;
    pass_note(&quiet, "buffer at %s: %s; %lld -> %lld wavefronts (ideal %lld)", where, dec.explain,
              (long long)dec.before, (long long)dec.after, (long long)dec.ideal);
    if (ctx->notes) {       /* ... the dump the use and candidate tables too */
        sb_printf(ctx->notes, "// buffer at %s:\n", where);
        pass_smem_decision_print(&dec, ctx->notes);
    }
}

static bool find_allocs(Func *f, Op *op, void *ctx)
{
    (void)f;
    if (op->code == OP_SMEM_ALLOC)
        decide(((void **)ctx)[0], f, op, ((void **)ctx)[1]);
    return true;
}

int pass_swizzle(Module *m, PassCtx *ctx)
{
    Arena *a = arena_new();
    void *c[2] = { ctx, a };
    for (int i = 0; i < m->nfuncs; i++)
        ir_walk(m->funcs[i], &m->funcs[i]->body, find_allocs, c);
    arena_free(a);
    return 0;
}
