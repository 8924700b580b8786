/* fp_contract.c - allow floating-point contraction in generated kernels.
 *
 * Needs: a lowered module.
 * Guarantees: every fadd, fsub and fmul of every defined function carries
 * LLVM's `contract` flag (and nothing else), so `a * b + c` may become one
 * fused multiply-add, rounded once. This is the language's documented
 * floating-point rule (docs/language.md, run-time semantics), the same as
 * CUDA's default (-fmad=true). Without the flag NVPTX prints `mul.rn.f32` /
 * `add.rn.f32`, whose explicit rounding forbids ptxas from fusing them; an
 * online softmax then pays a multiply and a subtract per score where one
 * fma does.
 */
#include "cg_internal.h"

static bool contractible(LLVMValueRef inst)
{
    switch (LLVMGetInstructionOpcode(inst)) {
    case LLVMFAdd: case LLVMFSub: case LLVMFMul:
        return true;
    default:
        return false;
    }
}

void cg_allow_contract(LLVMModuleRef mod)
{
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
                if (contractible(i))
                    LLVMSetFastMathFlags(i, LLVMGetFastMathFlags(i) | LLVMFastMathAllowContract);
}
