/* target.h - what differs between GPU architectures, behind one struct of
 * function pointers per arch (target_sm86.c, target_sm90.c, target_sm100.c).
 * Generic lowering calls through a Target and never tests the arch by name. */
#ifndef TILEC_CG_TARGET_H
#define TILEC_CG_TARGET_H

#include <llvm-c/Core.h>

struct Cg;

typedef struct Target {
    const char *name;        /* resolved arch as the user sees it: "sm_90a" */
    const char *cpu;         /* LLVM NVPTX CPU name */
    const char *features;    /* LLVM target features (PTX ISA version) */
    int sm;                  /* 86, 90, 100 */
    int max_smem_static;     /* bytes of static shared memory a block may use */
    int max_warps;           /* warps per block the SIMT path may pick */
    /* Fast base-2 exponential / logarithm of an f32 value (hardware MUFU). */
    LLVMValueRef (*exp2_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*log2_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*tanh_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*rsqrt_f32)(struct Cg *cg, LLVMValueRef x);
    /* Block-wide barrier (all threads of the CTA). */
    void (*barrier)(struct Cg *cg);
} Target;

/* NULL if `arch` is not a resolved arch name codegen knows. */
const Target *cg_target_lookup(const char *arch);

/* Shared MUFU-based hooks (target_common.c), used by the per-arch tables. */
LLVMValueRef cg_tg_ex2_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_lg2_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_tanh_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_rsqrt_approx(struct Cg *cg, LLVMValueRef x);
void cg_tg_bar_sync(struct Cg *cg);

extern const Target cg_target_sm86;
extern const Target cg_target_sm90, cg_target_sm90a;
extern const Target cg_target_sm100, cg_target_sm100a, cg_target_sm100f;

#endif
