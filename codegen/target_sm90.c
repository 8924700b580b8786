/* target_sm90.c - Hopper: sm_90a (arch-specific: wgmma, setmaxnreg later)
 * and sm_90 (portable). The SIMT and mma.sync hooks are shared with Ampere. */
#include "cg_internal.h"

#define SM90_COMMON .sm = 90, .max_blocks_sm = 32, CG_TG_SIMT_COMMON, CG_TG_SM80_MMA

const Target cg_target_sm90a = { .name = "sm_90a", .cpu = "sm_90a", .features = "+ptx80", SM90_COMMON };
const Target cg_target_sm90 = { .name = "sm_90", .cpu = "sm_90", .features = "+ptx80", SM90_COMMON };
