/* target_sm100.c - Blackwell datacenter: sm_100a (arch-specific: tcgen05
 * later), sm_100f (family-portable) and sm_100. The SIMT and mma.sync hooks
 * are shared with Ampere. */
#include "cg_internal.h"

#define SM100_COMMON .sm = 100, .max_blocks_sm = 32, CG_TG_SIMT_COMMON, CG_TG_SM80_MMA

const Target cg_target_sm100a = { .name = "sm_100a", .cpu = "sm_100a", .features = "+ptx86", SM100_COMMON };
const Target cg_target_sm100f = { .name = "sm_100f", .cpu = "sm_100f", .features = "+ptx88", SM100_COMMON };
const Target cg_target_sm100 = { .name = "sm_100", .cpu = "sm_100", .features = "+ptx86", SM100_COMMON };
