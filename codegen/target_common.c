/* target_common.c - hooks shared by several targets (MUFU approximations,
 * barriers) and the arch-name lookup. */
#include "cg_internal.h"

#include <string.h>

LLVMValueRef cg_tg_ex2_approx(Cg *cg, LLVMValueRef x)
{
    return cg_call1(cg, "llvm.nvvm.ex2.approx.ftz.f32", cg->t_f32, x);
}

LLVMValueRef cg_tg_lg2_approx(Cg *cg, LLVMValueRef x)
{
    return cg_call1(cg, "llvm.nvvm.lg2.approx.ftz.f", cg->t_f32, x);
}

LLVMValueRef cg_tg_tanh_approx(Cg *cg, LLVMValueRef x)
{
    return cg_call1(cg, "llvm.nvvm.tanh.approx.f32", cg->t_f32, x);
}

LLVMValueRef cg_tg_rsqrt_approx(Cg *cg, LLVMValueRef x)
{
    return cg_call1(cg, "llvm.nvvm.rsqrt.approx.ftz.f", cg->t_f32, x);
}

void cg_tg_bar_sync(Cg *cg)
{
    LLVMValueRef zero = LLVMConstInt(cg->t_i32, 0, 0);
    cg_call(cg, "llvm.nvvm.barrier.cta.sync.aligned.all", cg->t_void, &zero, 1);
}

const Target *cg_target_lookup(const char *arch)
{
    static const Target *const all[] = {
        &cg_target_sm86, &cg_target_sm90, &cg_target_sm90a,
        &cg_target_sm100, &cg_target_sm100a, &cg_target_sm100f,
    };
    if (!arch)
        return NULL;
    for (size_t i = 0; i < TC_COUNTOF(all); i++)
        if (strcmp(all[i]->name, arch) == 0)
            return all[i];
    return NULL;
}
