/* arch_limits.c - per-SM resource limits of each target tilec compiles for,
 * as the CUDA occupancy calculator uses them (one row per arch; the names
 * are the resolved targets of api.c's valid_archs). Shared memory per SM
 * includes the 1 KB the driver reserves per resident block on sm_80 and
 * later; the per-block maximum is what a kernel may opt in to.
 */
#include <string.h>

#include "ptxas.h"

#define KB 1024

static const ArchLimits arch_table[] = {
    /* arch      regs/SM thr/SM blk/SM smem/SM    smem/block reserved regs/thr regs/block */
    { "sm_86",   65536,  1536,  16,    100 * KB,  99 * KB,   1 * KB,  255,     65536 },
    { "sm_90",   65536,  2048,  32,    228 * KB,  227 * KB,  1 * KB,  255,     65536 },
    { "sm_90a",  65536,  2048,  32,    228 * KB,  227 * KB,  1 * KB,  255,     65536 },
    { "sm_100a", 65536,  2048,  32,    228 * KB,  227 * KB,  1 * KB,  255,     65536 },
    { "sm_100f", 65536,  2048,  32,    228 * KB,  227 * KB,  1 * KB,  255,     65536 },
};

const ArchLimits *tc_arch_limits(const char *arch)
{
    for (size_t i = 0; arch && i < TC_COUNTOF(arch_table); i++)
        if (strcmp(arch, arch_table[i].arch) == 0)
            return &arch_table[i];
    return NULL;
}
