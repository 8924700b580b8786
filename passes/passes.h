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
    /* set by passes_run around each pass (NULL when a pass is called directly) */
    const char *cur_pass;      /* the running pass's name */
    StrBuf *notes;             /* its decisions, printed as // comments before its --print-after dump */
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
int pass_mask_split(Module *m, PassCtx *ctx);     /* mask_split.c */
int pass_double_buffer(Module *m, PassCtx *ctx);  /* double_buffer.c */
int pass_swizzle(Module *m, PassCtx *ctx);        /* swizzle.c */
int pass_smem_alloc(Module *m, PassCtx *ctx);     /* smem_alloc.c */

/* One decision line (no trailing newline needed): appended to ctx->remarks
 * as "PASS: line" and to ctx->notes (the --print-after comment block).
 * Either may be NULL. (pipeline.c) */
void pass_note(PassCtx *ctx, const char *fmt, ...) TC_PRINTF(2, 3);

/* ---- shared-memory planning (smem_plan.c), the analysis behind smem_alloc ---- */

/* Shared memory one block may use on `arch` (bytes): sm_86 99 KB, sm_90a /
 * sm_100a 227 KB; an unknown or NULL arch gets the sm_86 limit. */
int64_t pass_smem_limit(const char *arch);

/* A buffer's footprint: stages x slot stride, the slot stride being the slot's
 * bytes (rows x (row bytes + pad)) rounded up to the buffer's alignment. */
int64_t pass_smem_slot_stride(const Func *f, const Op *alloc);
int64_t pass_smem_buffer_bytes(const Func *f, const Op *alloc);

typedef struct SmemBuf {
    Op *alloc;                 /* the SMEM_ALLOC */
    int64_t start, end;        /* live interval in linear program order (inclusive) */
    int64_t bytes, align;
    int64_t offset;            /* the plan's choice */
    const char *name;          /* "A" (the tensor its copies read) or "buffer #i" */
} SmemBuf;

typedef struct SmemPlan {
    SmemBuf *bufs; int nbufs;  /* in program order */
    int64_t total;             /* bytes of shared memory the plan needs */
} SmemPlan;

/* Liveness intervals of every SMEM_ALLOC of f (from the alloc to its last
 * use; a use inside a loop that does not hold the alloc extends the interval
 * over the whole loop), then offsets: first fit by decreasing size, each at
 * its alignment; two buffers share bytes only when their intervals are
 * disjoint and a top-level BARRIER lies between them. Memory from `a`. */
void pass_smem_plan(Func *f, Arena *a, SmemPlan *out);

#endif
