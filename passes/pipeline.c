/* pipeline.c - the pass pipeline: one ordered table, and the driver that
 * runs it with the verifier between passes, --print-after dumps and
 * --time-passes rows.
 *
 * Needs: a Module that passed ir_verify.
 * Guarantees: every pass in the table (or in ctx->only) ran in table order;
 * with verify_each, the IR verified after each one; stops at the first pass
 * that reports errors. A pass's decisions (pass_note) go to the report and,
 * as // comments, before its --print-after dump (the dump still parses).
 */
#include "passes.h"

#include <stdio.h>
#include <string.h>

/* ORDER PASS: the pipeline, in order. The summary feeds `tilec --help`. */
const PassInfo tc_pass_table[] = {
    { "launch", pass_launch,
      "decide how blocks take tiles (persistent grid, longest-first order) and whether the output leaves through shared memory" },
    { "lazy_rescale", pass_lazy_rescale,
      "let an online softmax's running maximum move only when it grows by more than a threshold (rescale the output only then)" },
    { "canonicalize", pass_canonicalize,
      "fold constants and identities, fold constant if/for, CSE and DCE of pure ops" },
    { "bounds", pass_bounds,
      "prove loads/stores in bounds per dim and drop the masks that are not needed" },
    { "mma_select", pass_mma_select,
      "choose each matrix product's instruction family (wgmma, tcgen05, mma.sync, or simt on the FMA units) "
      "from the target, its dtype and its shape" },
    { "exp2_emu", pass_exp2_emu,
      "compute a fraction of attention's softmax exp2 on the FMA units (Cody-Waite + polynomial) where the MUFU sets the pace" },
    { "mask_split", pass_mask_split,
      "split masked loops into full blocks (masks removed) and boundary blocks" },
    { "double_buffer", pass_double_buffer,
      "stage dot operands and shared loads through S-slot shared ring buffers filled by async copies" },
    { "warp_specialize", pass_warp_specialize,
      "turn a pipelined loop over a wgmma product (or two chained: attention) into TMA producer and wgmma consumer roles on mbarrier rings" },
    { "swizzle", pass_swizzle,
      "pick each shared buffer's swizzle or padding from its writers and readers (bank-conflict model)" },
    { "smem_alloc", pass_smem_alloc,
      "give shared buffers offsets (reusing dead ones), set the kernel's shared memory, check the arch limit" },
    { "schedule", pass_schedule,
      "decide warps per block, the register cap, warp-group turns and the copy and product forms" },
    { "protocol", pass_protocol,
      "prove the barrier rings and named barriers of warp-specialized kernels for any trip count" },
};
const int tc_npasses = (int)TC_COUNTOF(tc_pass_table);

const PassInfo *pass_lookup(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; i < tc_npasses; i++)
        if (strcmp(tc_pass_table[i].name, name) == 0)
            return &tc_pass_table[i];
    return NULL;
}

/* Is `name` in the comma-separated list (NULL = every pass)? */
static bool selected(const char *only, const char *name)
{
    if (!only)
        return true;
    size_t n = strlen(name);
    for (const char *p = only; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

static bool print_requested(const PassCtx *ctx, const char *name)
{
    for (int i = 0; i < ctx->nprint_after; i++)
        if (strcmp(ctx->print_after[i], "*") == 0 || strcmp(ctx->print_after[i], name) == 0)
            return true;
    return false;
}

void pass_note(PassCtx *ctx, const char *fmt, ...)
{
    StrBuf line = { 0 };
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&line, fmt, ap);
    va_end(ap);
    const char *s = line.buf ? line.buf : "";
    if (ctx->remarks)
        sb_printf(ctx->remarks, "%s%s%s\n", ctx->cur_pass ? ctx->cur_pass : "", ctx->cur_pass ? ": " : "", s);
    if (ctx->notes) {   /* one comment line per text line */
        for (const char *p = s; *p;) {
            const char *e = strchr(p, '\n');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            sb_puts(ctx->notes, "// ");
            sb_putn(ctx->notes, p, n);
            sb_putc(ctx->notes, '\n');
            p += n + (e != NULL);
        }
    }
    sb_free(&line);
}

const char *pass_loc_str(Arena *a, const Func *f, Loc l)
{
    const char *file = l.file ? l.file : f->mod->source_name ? f->mod->source_name : "?";
    return arena_printf(a, "%s:%d:%d", file, l.line, l.col);
}

static void dump_after(Module *m, PassCtx *ctx, const char *name, const StrBuf *notes)
{
    if (!ctx->dump || !print_requested(ctx, name))
        return;
    PrintOpts po = { ctx->print_locs };
    sb_printf(ctx->dump, "// -----// IR after %s //----- //\n", name);
    if (notes->len)
        sb_putn(ctx->dump, notes->buf, notes->len);
    ir_print_module(m, &po, ctx->dump);
}

/* Run one pass: time it, then verify and dump after it. Returns errors. */
static int run_one(Module *m, PassCtx *ctx, const PassInfo *p)
{
    StrBuf notes = { 0 };
    ctx->cur_pass = p->name;
    ctx->notes = &notes;
    TcClock t0 = tc_clock();
    int nerr = p->fn(m, ctx);
    ir_release_stale(m);
    if (ctx->time_passes && ctx->timing)
        tc_time_row(ctx->timing, p->name, t0);
    ctx->cur_pass = NULL;
    ctx->notes = NULL;
    if (nerr == 0 && ctx->verify_each)
        nerr = ir_verify(m, p->name, ctx->diag);
    if (nerr == 0)
        dump_after(m, ctx, p->name, &notes);
    sb_free(&notes);
    return nerr;
}

int passes_run(Module *m, PassCtx *ctx)
{
    for (int i = 0; i < tc_npasses; i++) {
        const PassInfo *p = &tc_pass_table[i];
        if (!selected(ctx->only, p->name))
            continue;
        int nerr = run_one(m, ctx, p);
        if (nerr)
            return nerr;
    }
    return 0;
}
