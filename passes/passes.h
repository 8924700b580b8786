/* passes.h - the pass pipeline: one ordered table (pipeline.c), the verifier
 * between passes, --print-after, --time-passes.
 *
 * Every pass is `int pass_NAME(Module *, PassCtx *)`, returns the number of
 * errors it reported (0 = success), and its file opens with what it needs
 * and what it guarantees; the same one-line summary feeds `tilec --help`.
 * Analyses live apart from the thin pass that writes their result.
 */
#ifndef TILEC_PASSES_H
#define TILEC_PASSES_H

#include "../ir/ir.h"

typedef struct PassCtx {
    Diag *diag;
    const char *arch;          /* "sm_86", "sm_90a", "sm_100a", ... */
    int opt_level;
    /* observability */
    const char *const *print_after; int nprint_after;  /* pass names; "*" = all */
    bool verify_each;          /* run the verifier after each pass (default on) */
    bool time_passes;
    bool print_locs;
    StrBuf *dump;              /* where --print-after output goes */
    StrBuf *timing;            /* where --time-passes output goes */
    StrBuf *remarks;           /* decisions passes explain (the report) */
    const char *only;          /* comma-separated passes to run (table order); NULL = all */
} PassCtx;

typedef int (*PassFn)(Module *m, PassCtx *ctx);

typedef struct PassInfo {
    const char *name;          /* --print-after=NAME */
    PassFn fn;
    const char *summary;       /* one line for --help */
} PassInfo;

/* ORDER PASS: the pipeline, in order (pipeline.c). */
extern const PassInfo tc_pass_table[];
extern const int tc_npasses;
const PassInfo *pass_lookup(const char *name);

/* Run the whole table. Returns the number of errors (0 = success). */
int passes_run(Module *m, PassCtx *ctx);

int pass_canonicalize(Module *m, PassCtx *ctx);   /* canonicalize.c */
int pass_bounds(Module *m, PassCtx *ctx);         /* bounds.c */

#endif
