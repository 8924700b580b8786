/* roofline.h - the `== roofline ==` section of `tilec --report`: per
 * kernel, from its Tile IR after the passes and the dim sizes given
 * (tilec_options.dims, `--dim N=4096`), the work it does (tensor-core
 * FLOPs, MUFU operations, other elementwise operations), the bytes it
 * moves to and from global and shared memory, and the time each of the
 * target's peak rates (TargetInfo.peak) would take for it: a prediction,
 * never a measurement. docs/internals.md, "The report", states the model.
 */
#ifndef TILEC_ROOFLINE_H
#define TILEC_ROOFLINE_H

#include "ir/ir.h"
#include "passes/passes.h"
#include "target/target.h"

/* Sums over every block of one launch. */
typedef struct RoofCounts {
    int64_t grid[3];          /* blocks per axis */
    int64_t blocks;           /* grid[0] * grid[1] * grid[2] */
    int64_t tc_flops;         /* 2 M N K per dot / dot_async / tc_mma, times its trips */
    int64_t sync_flops;       /* the part of tc_flops on warp-level mma.sync (or not chosen) */
    int64_t mufu;             /* exp, exp2 (less its FMA-emulated elements), log, log2, sqrt, rsqrt,
                                 tanh, sin, cos: 1 an element; sigmoid, pow: 2; f32 division: 1 (rcp) */
    int64_t elem;             /* other float elementwise ops and reductions: 1 an element (informational) */
    int64_t imul;             /* 32-bit integer multiply issues (IMAD slots): an integer tile multiply 1 an
                                 element (4 at 64 bits), philox TC_PHILOX_IMUL an element (roofline.c) */
    int64_t load_bytes;       /* load, async_copy, tma_load windows (masked dims by their true extents) */
    int64_t store_bytes;      /* store windows */
    int64_t atomic_bytes;     /* atomic_add windows */
    int64_t dram_bytes;       /* each tensor read and each written at most its own size:
                                 min(bytes accessed, tensor bytes) summed over tensors and directions */
    int64_t smem_bytes;       /* shared memory: bytes written (async_copy, tma_load, smem_store) and
                                 read (smem_load), each once a block */
    int64_t visited;          /* ops evaluated (the cost of the count) */
    int64_t sampled;          /* blocks evaluated: blocks (exact), 1 (none depends on the block id) or
                                 fewer (a sample, scaled) */
    bool block_dependent;     /* a trip count, branch or masked extent depends on the block id */
    bool bounded;             /* a branch or trip count depended on data: the larger arm, one trip */
} RoofCounts;

/* Count kernel f for the dim sizes in dims (its own named dims: every one
 * must be given) on a device of sms SMs (the value of num_sms() in the
 * grid; 0: unknown, and such a grid is not counted). Returns 0; -1 with
 * *missing set to the missing dims' names, comma-separated (in arena a);
 * or -2 with *missing a one-line reason. */
int tc_roofline_count(Arena *a, const Func *f, const PassDims *dims, int64_t sms, RoofCounts *out,
                      const char **missing);

/* IMAD slots of one element of philox (a quarter of Philox4x32-10's rounds), roofline.c. */
enum { TC_PHILOX_IMUL = 9 };

/* The times (seconds) each peak rate of t would take for c on `sms` SMs
 * (0: the target's reference device's count); the largest is the bound. */
typedef enum RoofBound { RB_TENSOR, RB_MEMORY, RB_MUFU, RB_SMEM, RB_IMUL, RB_COUNT } RoofBound;
typedef struct RoofTimes {
    double t[RB_COUNT];
    double t_accessed;        /* every access from DRAM (load + store + atomic bytes) */
    RoofBound bound;
    int sms;                  /* the SMs counted (min(SMs, blocks) for the per-SM units) */
} RoofTimes;
RoofTimes tc_roofline_times(const RoofCounts *c, const TargetInfo *t, int64_t sms);

/* Append the `== roofline ==` body for every kernel of m (not the
 * portable variants, tilec_portable_*) compiled for t. */
void tc_report_roofline(Arena *a, StrBuf *out, const Module *m, const PassDims *dims, const TargetInfo *t,
                        int64_t sms);

#endif
