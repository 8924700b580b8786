/* targets.c - one row per arch tilec compiles for (target.h). */
#include "target.h"

#include <string.h>

#define KB 1024

/* Limits every current target shares per block. */
#define BLOCK_COMMON .smem_reserved = 1 * KB, .regs_per_thread = 255, .regs_per_block = 65536, \
                     .smem_static = 48 * KB, .threads_per_block = 1024, .simt_warps = 16

/* Per SM: resident threads and blocks, shared memory (of which 1 KB per
 * resident block is the driver's), from NVIDIA's compute-capability
 * tables (CUDA C++ Programming Guide, "Technical Specifications per
 * Compute Capability"; the same numbers as CCCL's cuda::arch::traits). */
#define A100_LIMITS { .regs_per_sm = 65536, .threads_per_sm = 2048, .blocks_per_sm = 32, \
                      .smem_per_sm = 164 * KB, .smem_per_block = 163 * KB, BLOCK_COMMON }
#define AMPERE_LIMITS { .regs_per_sm = 65536, .threads_per_sm = 1536, .blocks_per_sm = 16, \
                        .smem_per_sm = 100 * KB, .smem_per_block = 99 * KB, BLOCK_COMMON }
#define ADA_LIMITS { .regs_per_sm = 65536, .threads_per_sm = 1536, .blocks_per_sm = 24, \
                     .smem_per_sm = 100 * KB, .smem_per_block = 99 * KB, BLOCK_COMMON }
/* sm_120 blocks: 24, the most ptxas (CUDA 13.0) accepts in .minnctapersm
 * there (25 and up are "out of range" and ignored); CCCL's traits say 32. */
#define BLACKWELL_RTX_LIMITS { .regs_per_sm = 65536, .threads_per_sm = 1536, .blocks_per_sm = 24, \
                               .smem_per_sm = 100 * KB, .smem_per_block = 99 * KB, BLOCK_COMMON }
#define HOPPER_LIMITS { .regs_per_sm = 65536, .threads_per_sm = 2048, .blocks_per_sm = 32, \
                        .smem_per_sm = 228 * KB, .smem_per_block = 227 * KB, BLOCK_COMMON }

/* Peak rates of each row's reference device (TargetPeaks), read by the
 * report's roofline alone. SMs, boost clock and DRAM bandwidth from
 * NVIDIA's datasheets and architecture whitepapers:
 *   A100 SXM4 80 GB (sm_80): 108 SMs, 1410 MHz, 2039 GB/s (A100 datasheet,
 *     Ampere GA100 whitepaper);
 *   RTX 3090 (sm_86): 82 SMs, 1695 MHz, 936 GB/s (GA102 whitepaper);
 *   RTX 4090 (sm_89): 128 SMs, 2520 MHz, 1008 GB/s (Ada AD102 whitepaper);
 *   H200 SXM (sm_90, sm_90a): 132 SMs, 1980 MHz (the maximum SM clock
 *     nvidia-smi reports on the H200 of bench/RESULTS.md, the same as the
 *     H100 SXM's), 4800 GB/s (H200 datasheet; an H100 SXM has 3350 GB/s);
 *   B200 (sm_100a, sm_100f): 148 SMs, 8000 GB/s (HGX B200 datasheet);
 *     1856 MHz, the clock at which 148 SMs at mma_flops_clk 8192 give the
 *     datasheet's 2.25 PFLOP/s dense bf16 (NVIDIA publishes no boost clock);
 *   RTX 5090 (sm_120): 170 SMs, 2407 MHz, 1792 GB/s (Blackwell GB202
 *     whitepaper).
 * MUFU: 16 results per SM per clock for ex2, lg2, rcp, rsqrt, sin, cos on
 * every arch here (CUDA C++ Programming Guide, "Arithmetic Instructions"
 * throughput table); 32-bit integer multiply and multiply-add: 64 results
 * per SM per clock on every arch here (the same table); shared memory: 32
 * banks of 4 bytes, 128 bytes per SM per clock. */
#define PEAK(dev, n, mhz, gbs) { .device = dev, .sms = n, .clock_mhz = mhz, .mem_gbs = gbs, .mufu_clk = 16, \
                                 .imul_clk = 64, .smem_bytes_clk = 128 }
#define A100_PEAK PEAK("A100 SXM4 80GB", 108, 1410, 2039)
#define RTX3090_PEAK PEAK("RTX 3090", 82, 1695, 936)
#define RTX4090_PEAK PEAK("RTX 4090", 128, 2520, 1008)
#define H200_PEAK PEAK("H200 SXM", 132, 1980, 4800)
#define B200_PEAK PEAK("B200", 148, 1856, 8000)
#define RTX5090_PEAK PEAK("RTX 5090", 170, 2407, 1792)

/* mma_flops_clk: dense bf16 tensor-core FLOPs per SM per clock with f32
 * accumulation (NVIDIA's peak figures over SMs x boost clock: A100 312
 * TFLOP/s, RTX 3090 / 4090 / L40 / RTX 5090 at half rate with f32
 * accumulation, H100 989, B200 2250 -> 2048, 512, 4096, 8192). */
/* Ordered by sm, then plain before arch-specific before family-portable
 * (the usage message and listings follow this order). */
static const TargetInfo targets[] = {
    { .name = "sm_80", .mma_flops_clk = 2048, .llvm_cpu = "sm_80", .llvm_features = "+ptx80", .sm = 80, .family = TF_SM80,
      .mma = TC_MMA_SYNC, .cp_async = true, .named_barriers = 16, .lim = A100_LIMITS,
      .peak = A100_PEAK },
    { .name = "sm_86", .mma_flops_clk = 512, .llvm_cpu = "sm_86", .llvm_features = "+ptx80", .sm = 86, .family = TF_SM80,
      .mma = TC_MMA_SYNC, .cp_async = true, .named_barriers = 16, .lim = AMPERE_LIMITS,
      .peak = RTX3090_PEAK },
    { .name = "sm_89", .mma_flops_clk = 512, .llvm_cpu = "sm_89", .llvm_features = "+ptx80", .sm = 89, .family = TF_SM80,
      .mma = TC_MMA_SYNC, .cp_async = true, .named_barriers = 16, .lim = ADA_LIMITS,
      .peak = RTX4090_PEAK },
    { .name = "sm_90", .mma_flops_clk = 4096, .llvm_cpu = "sm_90", .llvm_features = "+ptx80", .sm = 90, .family = TF_SM80,
      .mma = TC_MMA_SYNC, .cp_async = true, .tma = true, .clusters = true, .named_barriers = 16,
      .lim = HOPPER_LIMITS,
      .peak = H200_PEAK },
    { .name = "sm_90a", .mma_flops_clk = 4096, .llvm_cpu = "sm_90a", .llvm_features = "+ptx80", .sm = 90, .arch_specific = true,
      .family = TF_SM90, .mma = TC_MMA_SYNC | TC_MMA_WGMMA, .cp_async = true, .tma = true, .clusters = true,
      .setmaxnreg = true, .named_barriers = 16, .lim = HOPPER_LIMITS,
      .peak = H200_PEAK },
    { .name = "sm_100a", .mma_flops_clk = 8192, .llvm_cpu = "sm_100a", .llvm_features = "+ptx86", .sm = 100, .arch_specific = true,
      .family = TF_SM100, .mma = TC_MMA_SYNC | TC_MMA_TCGEN05, .cp_async = true, .tma = true, .clusters = true,
      .setmaxnreg = true, .tmem = true, .named_barriers = 16, .red_vec = true, .lim = HOPPER_LIMITS,
      .peak = B200_PEAK },
    { .name = "sm_100f", .mma_flops_clk = 8192, .llvm_cpu = "sm_100f", .llvm_features = "+ptx88", .sm = 100, .family = TF_SM100,
      .mma = TC_MMA_SYNC | TC_MMA_TCGEN05, .cp_async = true, .tma = true, .clusters = true,
      .setmaxnreg = true, .tmem = true, .named_barriers = 16, .red_vec = true, .lim = HOPPER_LIMITS,
      .peak = B200_PEAK },
    /* RTX 50, RTX PRO 6000: mma.sync (no wgmma, no tcgen05), TMA and clusters. */
    { .name = "sm_120", .mma_flops_clk = 512, .llvm_cpu = "sm_120", .llvm_features = "+ptx87", .sm = 120, .family = TF_SM80,
      .mma = TC_MMA_SYNC, .cp_async = true, .tma = true, .clusters = true, .named_barriers = 16, .red_vec = true,
      .lim = BLACKWELL_RTX_LIMITS,
      .peak = RTX5090_PEAK },
};

#define NTARGETS ((int)(sizeof targets / sizeof targets[0]))

const TargetInfo *tc_target(const char *arch)
{
    for (int i = 0; arch && i < NTARGETS; i++)
        if (strcmp(arch, targets[i].name) == 0)
            return &targets[i];
    return NULL;
}

/* Generic names: the arch-specific target first, the family-portable second. */
static const struct { const char *generic, *specific, *portable; } generics[] = {
    { "sm_90", "sm_90a", "sm_90" },
    { "sm_100", "sm_100a", "sm_100f" },
};

const TargetInfo *tc_target_resolve(const char *arch, bool family_portable, const char **alias)
{
    if (alias)
        *alias = NULL;
    if (!arch)
        return tc_target("sm_90a");
    for (size_t i = 0; i < sizeof generics / sizeof generics[0]; i++)
        if (strcmp(arch, generics[i].generic) == 0) {
            if (alias)
                *alias = family_portable ? generics[i].specific : generics[i].portable;
            return tc_target(family_portable ? generics[i].portable : generics[i].specific);
        }
    return tc_target(arch);
}

int tc_target_count(void) { return NTARGETS; }

const TargetInfo *tc_target_at(int i) { return i >= 0 && i < NTARGETS ? &targets[i] : NULL; }

int tc_target_max_smem_per_block(void)
{
    int most = 0;
    for (int i = 0; i < NTARGETS; i++)
        if (targets[i].lim.smem_per_block > most)
            most = targets[i].lim.smem_per_block;
    return most;
}
