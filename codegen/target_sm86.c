/* target_sm86.c - Ampere (sm_86): the portable SIMT and mma.sync path. PTX for sm_86
 * also runs on later GPUs (the driver compiles it). */
#include "cg_internal.h"

const Target cg_target_sm86 = {
    .name = "sm_86", .cpu = "sm_86", .features = "+ptx80", .sm = 86,
    .max_blocks_sm = 16, CG_TG_SIMT_COMMON, CG_TG_SM80_MMA,
};
