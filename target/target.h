/* target.h - what each GPU architecture tilec compiles for can do and how
 * much it has: one TargetInfo row per resolved arch (targets.c).
 *
 * Passes, the code generator, the report and the API reach arch facts only
 * through a TargetInfo pointer; nothing else tests an arch by name. Adding an
 * arch is one row here plus, for a new instruction family, a lowering folder
 * under codegen/ (codegen/sm80/ today). This layer depends on nothing but libc.
 */
#ifndef TILEC_TARGET_H
#define TILEC_TARGET_H

#include <stdbool.h>

/* Matrix-multiply instruction families (TargetInfo.mma, a bit set). */
enum {
    TC_MMA_SYNC = 1 << 0,      /* warp-level mma.sync m16n8k16 + ldmatrix (sm_80 on) */
    TC_MMA_WGMMA = 1 << 1,     /* warp-group wgmma.mma_async m64nNk16 (sm_90a) */
    TC_MMA_TCGEN05 = 1 << 2,   /* tcgen05.mma, accumulators in tensor memory (sm_100a) */
};

/* The lowering family a target's code generator uses (codegen/<family>/). */
typedef enum TargetFamily {
    TF_SM80,                   /* SIMT + mma.sync + cp.async: codegen/sm80/ */
    TF_SM90,                   /* sm80 + TMA, mbarriers, setmaxnreg, wgmma: codegen/sm90/ */
    TF_SM100,                  /* sm90 less wgmma, plus tcgen05 and tensor memory: codegen/sm100/ */
} TargetFamily;

/* Per-SM and per-block resources, as the CUDA occupancy calculator uses
 * them. Shared memory per SM includes the 1 KB the driver reserves per
 * resident block on sm_80 and later; per block is the opt-in maximum. */
typedef struct TargetLimits {
    int regs_per_sm;           /* 32-bit registers */
    int threads_per_sm;
    int blocks_per_sm;
    int smem_per_sm;           /* bytes, including the per-block reservations */
    int smem_per_block;        /* bytes a block may use (dynamic, opt-in maximum) */
    int smem_reserved;         /* bytes the driver reserves per block */
    int regs_per_thread;       /* maximum */
    int regs_per_block;
    int smem_static;           /* bytes of static shared memory a block may declare */
    int threads_per_block;
    int simt_warps;            /* most warps the SIMT path gives a block */
} TargetLimits;

/* Peak rates of one reference device of the arch (TargetInfo.peak), for
 * the report's roofline (driver/roofline.c): predictions, not
 * measurements. Sources per row in targets.c. The SM count is overridden
 * by the pass option target.sms; nothing else changes them. */
typedef struct TargetPeaks {
    const char *device;        /* the reference device: "H200 SXM" */
    int sms;                   /* its SM count */
    int clock_mhz;             /* its boost clock, MHz */
    int mem_gbs;               /* its DRAM bandwidth, GB/s (10^9 bytes a second) */
    int mufu_clk;              /* MUFU (ex2, lg2, rcp, rsqrt, sin, cos, tanh) results per SM per clock */
    int imul_clk;              /* 32-bit integer multiply (IMAD) results per SM per clock */
    int smem_bytes_clk;        /* shared memory bytes per SM per clock */
} TargetPeaks;

typedef struct TargetInfo {
    const char *name;          /* resolved arch as the user sees it: "sm_90a" */
    const char *llvm_cpu;      /* LLVM NVPTX CPU */
    const char *llvm_features; /* LLVM target features (the PTX ISA version) */
    int sm;                    /* 86, 90, 100 */
    bool arch_specific;        /* an "a" target: its PTX runs on this arch only */
    TargetFamily family;
    /* capabilities */
    unsigned mma;              /* TC_MMA_* families the hardware has */
    bool cp_async;             /* cp.async 16-byte global -> shared copies */
    bool tma;                  /* cp.async.bulk.tensor + mbarrier transactions */
    bool clusters;             /* thread-block clusters, distributed shared memory */
    bool setmaxnreg;           /* per-warp-group register reallocation */
    bool tmem;                 /* tensor memory (tcgen05.alloc/ld/st) */
    int named_barriers;        /* bar.sync ids per block */
    int mma_flops_clk;         /* dense bf16 tensor-core FLOPs per SM per clock (f32 accumulation):
                                  the exp2_emu pass weighs it against the MUFU's 16 ex2 a clock */
    bool red_vec;              /* red.global.add.v2/v4.f32 (sm_90 on, with PTX ISA 8.1 on: not the
                                  PTX 8.0 of the sm_90 rows) */
    TargetLimits lim;
    TargetPeaks peak;          /* the reference device's peak rates: the report's roofline */
} TargetInfo;

/* The row of a resolved arch ("sm_90a"), or NULL. */
const TargetInfo *tc_target(const char *arch);

/* What a user's -arch names: "sm_90" and "sm_100" give the arch-specific
 * targets (sm_90a, sm_100a), or with family_portable the portable ones
 * (sm_90, sm_100f); NULL arch gives the default (sm_90a); NULL if unknown.
 * *alias, when not NULL, is set to the target the other choice of
 * family_portable would give for a generic name, else NULL. */
const TargetInfo *tc_target_resolve(const char *arch, bool family_portable, const char **alias);

/* The rows, in table order (for listings). */
int tc_target_count(void);
const TargetInfo *tc_target_at(int i);

/* The most shared memory a block may use on any target (bytes). */
int tc_target_max_smem_per_block(void);

#endif
