/* smem_alloc.c - the thin pass that writes the shared-memory plan
 * (smem_plan.c) into the IR and enforces the arch's limit.
 *
 * Needs: verified IR; shared buffers as SMEM_ALLOC results with their final
 * swizzle, alignment and padding (after swizzle); barrier rings as
 * MBAR_ALLOC results.
 * Guarantees: every SMEM_ALLOC's iattr[1] holds its byte offset (a multiple
 * of iattr[2]: 1024 for a 128B swizzle), every MBAR_ALLOC's iattr[1] its
 * ring's (a multiple of 8), every TMEM_ALLOC's iattr[1] its 8-byte address
 * word's; tensor memory is planned beside it: each TMEM_ALLOC's columns
 * follow the previous one's (iattr[0]), and iattr[2] holds the columns the
 * kernel allocates, their sum rounded up to a power of two of at least 32
 * (tcgen05.alloc's rule), at most 512 (else an error); Func.smem_bytes is the block's dynamic shared memory (0 when
 * there are no buffers); a kernel above the limit of the target (sm_86 99 KB,
 * sm_90a / sm_100a 227 KB, or the option target.smem-per-block) gets one error at the kernel that lists every
 * buffer and the limit. The plan goes to the report and --print-after.
 */
#include "passes.h"

#include <string.h>

/* "A at gemm.tile:9:5: tile<4x256x128xbf16, shared>, 4 stages of 65536 B = 262144 B at offset 0" */
static void describe(const Func *f, const SmemBuf *b, Arena *a, StrBuf *out)
{
    const Type *t = ir_type(f, b->alloc->res[0]);
    sb_printf(out, "%s at %s: ", b->name, pass_loc_str(a, f, b->alloc->loc));
    type_print(f, t, out);
    if (b->alloc->code == OP_TMEM_ALLOC) {   /* its shared word, not the tile */
        sb_printf(out, ", its 8-byte address word at offset %lld", (long long)b->offset);
        return;
    }
    sb_printf(out, ", %lld stage%s of %lld B = %lld B at offset %lld", (long long)t->shape[0],
              t->shape[0] == 1 ? "" : "s", (long long)pass_smem_slot_stride(f, b->alloc), (long long)b->bytes,
              (long long)b->offset);
}

static void report_limit(PassCtx *ctx, const Func *f, const SmemPlan *p, int64_t limit, Arena *a)
{
    StrBuf sb = { 0 };
    sb_printf(&sb, "kernel '%s' needs %lld bytes of shared memory, above the %lld bytes (%lld KB) one block may use on %s%s; buffers:",
              f->name, (long long)p->total, (long long)limit, (long long)(limit / 1024), pass_target_name(ctx),
              ctx->smem_per_block > 0 ? " (target.smem-per-block)" : "");
    for (int i = 0; i < p->nbufs; i++) {
        const SmemBuf *b = &p->bufs[i];
        sb_puts(&sb, "\n  ");
        describe(f, b, a, &sb);
        for (int j = 0; j < i; j++) {   /* a copy of a loop (mask_split) reuses its twin's space */
            const SmemBuf *o = &p->bufs[j];
            if (o->offset <= b->offset && b->offset + b->bytes <= o->offset + o->bytes) {
                if (o->alloc->loc.line == b->alloc->loc.line && o->alloc->loc.col == b->alloc->loc.col)
                    sb_puts(&sb, " (the same load in another copy of its loop: the same space, counted once)");
                else
                    sb_printf(&sb, " (reuses the space of %s at %s)", o->name, pass_loc_str(a, f, o->alloc->loc));
                break;
            }
        }
    }
    sb_puts(&sb, "\n  reduce the tile sizes or the pipeline stages (pipeline(N))");
    diag_error(ctx->diag, f->loc, "%s", sb.buf);
    sb_free(&sb);
}

typedef struct TmemPlan { Op *ops[8]; int n; int64_t cols; } TmemPlan;

static bool tmem_visit(Func *f, Op *op, void *ctx)
{
    TmemPlan *t = ctx;
    if (op->code != OP_TMEM_ALLOC)
        return true;
    const Type *ty = ir_type(f, op->res[0]);
    op->iattr[0] = t->cols;
    t->cols += ir_tmem_cols(ty);
    if (t->n < 8)
        t->ops[t->n] = op;
    t->n++;
    return true;
}

/* Tensor memory columns: one allocation for the kernel. */
static int plan_tmem(PassCtx *ctx, Func *f)
{
    TmemPlan t = { { 0 }, 0, 0 };
    ir_walk(f, &f->body, tmem_visit, &t);
    if (!t.n)
        return 0;
    if (t.cols > TMEM_COLS || t.n > 8) {
        diag_error(ctx->diag, f->loc, "kernel '%s' needs %lld columns of tensor memory in %d allocations, above the "
                   "%d columns (and 8 allocations) an SM has", f->name, (long long)t.cols, t.n, TMEM_COLS);
        return 1;
    }
    int64_t alloc = 32;
    while (alloc < t.cols)
        alloc *= 2;
    for (int i = 0; i < t.n; i++)
        t.ops[i]->iattr[2] = alloc;
    pass_note(ctx, "@%s: %lld columns of tensor memory, allocated as %lld (a power of two from 32)", f->name,
              (long long)t.cols, (long long)alloc);
    return 0;
}

static int run_func(PassCtx *ctx, Func *f)
{
    if (plan_tmem(ctx, f))
        return 1;
    Arena *a = arena_new();
    SmemPlan p;
    pass_smem_plan(f, a, &p);
    f->smem_bytes = p.total;
    int64_t limit = pass_smem_limit(ctx->target, ctx->smem_per_block);
    int nerr = 0;
    for (int i = 0; i < p.nbufs; i++) {
        p.bufs[i].alloc->iattr[1] = p.bufs[i].offset;
        StrBuf sb = { 0 };
        describe(f, &p.bufs[i], a, &sb);
        pass_note(ctx, "@%s: %s, live [%lld, %lld]", f->name, sb.buf, (long long)p.bufs[i].start,
                  (long long)p.bufs[i].end);
        sb_free(&sb);
    }
    if (p.nbufs) {
        int64_t sum = 0;
        for (int i = 0; i < p.nbufs; i++)
            sum += p.bufs[i].bytes;
        pass_note(ctx, "@%s: %lld B of shared memory (%lld B before reuse), limit %lld B on %s", f->name,
                  (long long)p.total, (long long)sum, (long long)limit, pass_target_name(ctx));
    }
    if (p.total > limit) {
        report_limit(ctx, f, &p, limit, a);
        nerr = 1;
    }
    arena_free(a);
    return nerr;
}

int pass_smem_alloc(Module *m, PassCtx *ctx)
{
    int nerr = 0;
    for (int i = 0; i < m->nfuncs; i++)
        nerr += run_func(ctx, m->funcs[i]);
    return nerr;
}
