/* report.h - the resources part of `tilec --report`: running ptxas -v on the
 * PTX, parsing what it says per kernel, and the theoretical occupancy the
 * target's SM limits (target/target.h) give.
 *
 * Nothing here runs unless a report was asked for. Strings handed out live
 * in the Arena passed in; the arch table is read-only static data.
 */
#ifndef TILEC_REPORT_H
#define TILEC_REPORT_H

#include "lib/util.h"
#include "target/target.h"

/* One function as `ptxas -v` describes it. -1 = not stated. */
typedef struct PtxasFunc {
    const char *name;
    bool entry;             /* "Compiling entry function 'NAME'" was seen */
    int regs;               /* "Used N registers" */
    int barriers;           /* "used N barriers" */
    int smem;               /* "N bytes smem" (static shared memory) */
    int stack;              /* "N bytes stack frame" */
    int spill_stores;       /* "N bytes spill stores" */
    int spill_loads;        /* "N bytes spill loads" */
    double compile_ms;      /* "Compile time = X ms"; < 0 if not stated */
} PtxasFunc;

typedef struct PtxasInfo {
    PtxasFunc *funcs;
    int n;
} PtxasInfo;

/* Parse the text of `ptxas -v` (its stderr). Lines it does not know are
 * skipped; the result holds every function named, in first-seen order. */
PtxasInfo tc_ptxas_parse(Arena *a, const char *text);
const PtxasFunc *tc_ptxas_find(const PtxasInfo *pi, const char *name);

/* path names an executable regular file. */
bool tc_is_executable(const char *path);

/* Run `ptxas -arch=ARCH -v` on `ptx` (through a private memory or
 * temporary file, without a shell). Returns 0 and ptxas's output in *log;
 * else -1 and a one-line reason in *log (the first error line ptxas
 * printed). */
int tc_ptxas_run(Arena *a, const char *ptxas, const char *arch, const char *ptx, const char **log);


/* Which resources bound the number of resident blocks (bit set). */
enum { OCC_THREADS = 1, OCC_BLOCKS = 2, OCC_REGS = 4, OCC_SMEM = 8 };

typedef struct Occupancy {
    int warps_per_block;
    int regs_per_warp;      /* after the 256-register allocation granularity */
    int smem_per_block;     /* static + dynamic + reserved, 128-byte granules */
    int blocks;             /* resident blocks per SM; 0 = the block cannot run */
    int warps;              /* resident warps per SM */
    int max_warps;          /* warps an SM can hold */
    double percent;         /* warps / max_warps * 100 */
    int limiters;           /* OCC_* bits of every resource at the minimum */
    const char *why_zero;   /* when blocks == 0: which per-block limit failed */
} Occupancy;

/* Theoretical occupancy of blocks of `threads` threads using `regs`
 * registers per thread (< 0: unknown, not counted) and `smem` bytes of
 * static + dynamic shared memory. */
Occupancy tc_occupancy(const TargetInfo *al, int threads, int regs, int smem);

/* A ptxas run already made on the compilation's PTX (tilec_options.ptxas):
 * tc_ptxas_run's result and log. */
typedef struct PtxasRun {
    int rc;
    const char *log;
} PtxasRun;

/* Append the `== resources ==` body for the kernels in `meta` (kernel
 * metadata text) compiled for `arch`; `ptx` may be NULL (not produced).
 * `done` is the run already made on that PTX, else NULL: then `ptxas`
 * (NULL: none; registers are then unknown) is run here. */
void tc_report_resources(Arena *a, StrBuf *out, const char *arch, const char *meta, const char *ptx,
                         const char *ptxas, const PtxasRun *done);

#endif
