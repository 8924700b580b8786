/* llvm_tune.c - the LLVM pass pipeline for tensor-core modules, chosen for
 * compile time.
 *
 * Needs: the lowered module and the pipeline the driver would run.
 * Guarantees: SIMT modules and modules with chained products ("tilec.chain":
 * attention) keep the driver's pipeline; a module whose kernels all use
 * single tensor-core products (GEMM-like: no "tilec.simt" or "tilec.chain"
 * attribute) at -O2/-O3 runs the -O1 cleanup plus hoisting out of loops and
 * a second early-cse in place of GVN and the second instcombine round.
 *
 * Why (measured on examples/attention.tile, ~11k instructions after
 * optimisation, straight-line loop bodies of ~2.8k): GVN took ~60% and
 * instcombine ~25% of the optimisation time, and the PTX they give differs
 * from the early-cse pipeline's by a dozen address instructions out of
 * ~9300 lines (same mma.sync, ldmatrix, shfl, selp and cp.async counts).
 * These bodies have no loads GVN could forward (shared memory is read by
 * ldmatrix intrinsics, global memory by cp.async), so what remains is
 * scalar CSE, which early-cse does in one linear walk.
 * On the H200, though, attention (D=128, 16k tokens, bf16) ran 12% slower
 * with this pipeline (289 vs 328 TFLOP/s non-causal, 242 vs 270 causal:
 * fewer registers, 186 vs 254, but a worse schedule), D=64 3% faster; so
 * chained-product kernels keep GVN. TILEC_MMA_PIPELINE=0 restores the
 * driver's pipeline everywhere.
 */
#include "cg_internal.h"

#include <stdlib.h>

static const char mma_pipeline[] =
    "function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,"
    "loop-mssa(licm),early-cse<memssa>,simplifycfg,adce)";

/* Does the module define a kernel, and are all its kernels single-product
 * tensor-core ones? */
static bool all_mma_kernels(LLVMModuleRef mod)
{
    int n = 0;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMCountBasicBlocks(fn) == 0)
            continue;
        if (LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, "tilec.simt", 10) ||
            LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, "tilec.chain", 11))
            return false;
        n++;
    }
    return n > 0;
}

const char *cg_tune_pipeline(LLVMModuleRef mod, const char *dflt, int opt)
{
    if (opt < 2 || cg_knob("TILEC_MMA_PIPELINE", 1) == 0 || !all_mma_kernels(mod))
        return dflt;
    return mma_pipeline;
}
