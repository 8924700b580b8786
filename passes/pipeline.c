/* pipeline.c - the pass pipeline: one ordered table, and the driver that
 * runs it with the verifier between passes, --print-after dumps and
 * --time-passes rows.
 *
 * Needs: a Module that passed ir_verify.
 * Guarantees: every pass in the table (or in ctx->only) ran in table order;
 * with verify_each, the IR verified after each one; stops at the first pass
 * that reports errors.
 */
#include "passes.h"

#include <string.h>

/* ORDER PASS: the pipeline, in order. The summary feeds `tilec --help`. */
const PassInfo tc_pass_table[] = {
    { "canonicalize", pass_canonicalize,
      "fold constants and identities, fold constant if/for, CSE and DCE of pure ops" },
    { "bounds", pass_bounds,
      "prove loads/stores in bounds per dim and drop the masks that are not needed" },
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

static void dump_after(Module *m, PassCtx *ctx, const char *name)
{
    if (!ctx->dump || !print_requested(ctx, name))
        return;
    PrintOpts po = { ctx->print_locs };
    sb_printf(ctx->dump, "// -----// IR after %s //----- //\n", name);
    ir_print_module(m, &po, ctx->dump);
}

/* Run one pass: time it, then verify and dump after it. Returns errors. */
static int run_one(Module *m, PassCtx *ctx, const PassInfo *p)
{
    double t0 = tc_now();
    int nerr = p->fn(m, ctx);
    double ms = (tc_now() - t0) * 1e3;
    if (ctx->time_passes && ctx->timing)
        sb_printf(ctx->timing, "%12.3f  %s\n", ms, p->name);
    if (nerr == 0 && ctx->verify_each)
        nerr = ir_verify(m, p->name, ctx->diag);
    if (nerr == 0)
        dump_after(m, ctx, p->name);
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
