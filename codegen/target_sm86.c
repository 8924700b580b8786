/* target_sm86.c - Ampere (sm_86): the portable SIMT and mma.sync path. PTX for sm_86
 * also runs on later GPUs (the driver compiles it). */
#include "cg_internal.h"

const Target cg_target_sm86 = {
    .name = "sm_86", .cpu = "sm_86", .features = "+ptx80", .sm = 86,
    .max_smem_static = 48 * 1024, .max_warps = 16,
    .exp2_f32 = cg_tg_ex2_approx, .log2_f32 = cg_tg_lg2_approx,
    .tanh_f32 = cg_tg_tanh_approx, .rsqrt_f32 = cg_tg_rsqrt_approx,
    .barrier = cg_tg_bar_sync,
    .max_smem_dynamic = 99 * 1024, CG_TG_SM80_MMA,
};
