/* llvm_tune.c - the LLVM pass pipeline for SIMT and tensor-core modules,
 * chosen for compile time.
 *
 * Needs: the lowered module and the pipeline the driver would run.
 * Guarantees: modules with chained products ("tilec.chain": attention) and
 * modules that mix SIMT and tensor-core kernels keep the driver's pipeline;
 * at -O2/-O3 a module whose kernels are all SIMT ("tilec.simt") runs the
 * SIMT pipeline below, and one whose kernels all use single tensor-core
 * products (GEMM-like: no "tilec.simt" or "tilec.chain" attribute) the
 * -O1 cleanup plus hoisting out of loops and a second early-cse in place of
 * GVN and the second instcombine round.
 *
 * SIMT (measured with callgrind instruction counts and ptxas on the
 * examples): the lowering emits index math as shifts and masks with no-wrap
 * flags, constant-folds the alignment tests it can decide and builds each
 * stored vector once, so one early-cse, one instcombine round (masks,
 * known-bits folds: `or disjoint`, `zext nneg`, the chunk predicates), LICM
 * for the kernels' own loops and dce leave what the driver's pipeline left;
 * GVN and the second instcombine round were ~45% of optimisation time and
 * gave the same or longer SASS. Without instcombine the SASS grew 15-20%
 * (softmax: predicate chains and 64-bit address math) and the backend took
 * longer, so it stays. TILEC_SIMT_PIPELINE=0 restores the driver's pipeline.
 *
 * Tensor cores (measured on examples/attention.tile, ~11k instructions
 * after optimisation, straight-line loop bodies of ~2.8k): GVN took ~60% and
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

static const char simt_pipeline[] =
    "function(early-cse,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),dce)";

typedef enum ModKind { MOD_NONE, MOD_SIMT, MOD_MMA, MOD_OTHER } ModKind;

/* What the module's kernels are: all SIMT, all single-product tensor-core
 * kernels, or anything else (chained products, a mix, no kernel). */
static ModKind module_kind(LLVMModuleRef mod)
{
    int simt = 0, mma = 0;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMCountBasicBlocks(fn) == 0)
            continue;
        if (LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, "tilec.chain", 11))
            return MOD_OTHER;
        if (LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, "tilec.simt", 10))
            simt++;
        else
            mma++;
    }
    if (simt && mma)
        return MOD_OTHER;
    return simt ? MOD_SIMT : mma ? MOD_MMA : MOD_NONE;
}

const char *cg_tune_pipeline(LLVMModuleRef mod, const char *dflt, int opt)
{
    if (opt < 2)
        return dflt;
    ModKind k = module_kind(mod);
    if (k == MOD_SIMT && cg_knob("TILEC_SIMT_PIPELINE", 1) != 0)
        return simt_pipeline;
    if (k == MOD_MMA && cg_knob("TILEC_MMA_PIPELINE", 1) != 0)
        return mma_pipeline;
    return dflt;
}
