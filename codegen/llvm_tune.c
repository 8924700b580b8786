/* llvm_tune.c - the LLVM pass pipeline for SIMT modules, chosen for
 * compile time.
 *
 * Needs: the lowered module and the pipeline the driver would run.
 * Guarantees: at -O2/-O3 a module whose kernels are all SIMT ("tilec.simt")
 * runs the SIMT pipeline below; every other module (tensor-core kernels,
 * a mix) keeps the driver's (codegen.c `pipeline`).
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
 * Tensor-core modules once had their own early-cse pipeline here while
 * attention kept GVN (with GVN's PRE and a second instcombine round,
 * attention ran 12% faster at D=128 then). Since the masks of its loop are
 * guarded in place (mask_split) and its coordinates are shifts and masks,
 * the driver's pipeline without GVN gives byte-identical PTX for every
 * attention tile, so there is one pipeline for all of them (codegen.c).
 */
#include "cg_internal.h"

#include <stdlib.h>

static const char simt_pipeline[] =
    "function(early-cse,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),dce)";

/* Are all of the module's kernels SIMT (and is there one)? */
static bool all_simt(LLVMModuleRef mod)
{
    int n = 0;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMCountBasicBlocks(fn) == 0)
            continue;
        if (!LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, "tilec.simt", 10))
            return false;
        n++;
    }
    return n > 0;
}

const char *cg_tune_pipeline(LLVMModuleRef mod, const char *dflt, int opt)
{
    if (opt >= 2 && all_simt(mod) && cg_knob("TILEC_SIMT_PIPELINE", 1) != 0)
        return simt_pipeline;
    return dflt;
}
