/* target_sm90.c - Hopper: sm_90a (arch-specific: wgmma, setmaxnreg later)
 * and sm_90 (portable). The SIMT hooks are shared with Ampere. */
#include "cg_internal.h"

#define SM90_COMMON \
    .sm = 90, .max_smem_static = 48 * 1024, .max_warps = 16, \
    .exp2_f32 = cg_tg_ex2_approx, .log2_f32 = cg_tg_lg2_approx, \
    .tanh_f32 = cg_tg_tanh_approx, .rsqrt_f32 = cg_tg_rsqrt_approx, \
    .barrier = cg_tg_bar_sync, .max_smem_dynamic = 227 * 1024, CG_TG_SM80_MMA

const Target cg_target_sm90a = { .name = "sm_90a", .cpu = "sm_90a", .features = "+ptx80", SM90_COMMON };
const Target cg_target_sm90 = { .name = "sm_90", .cpu = "sm_90", .features = "+ptx80", SM90_COMMON };
