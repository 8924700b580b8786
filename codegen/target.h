/* target.h - how each instruction family is lowered, behind one struct of
 * function pointers per family (codegen/sm80/ today). What an arch has and
 * how much (shared memory, warps, MMA families) is its TargetInfo
 * (target/target.h); TargetInfo.family picks the hooks here. Generic
 * lowering calls through a Target and never tests the arch by name. */
#ifndef TILEC_CG_TARGET_H
#define TILEC_CG_TARGET_H

#include <llvm-c/Core.h>
#include <stdbool.h>

#include "../target/target.h"

struct Cg;

typedef struct Target {
    TargetFamily family;
    /* Fast base-2 exponential / logarithm of an f32 value (hardware MUFU). */
    LLVMValueRef (*exp2_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*log2_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*tanh_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*rsqrt_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*sin_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*cos_f32)(struct Cg *cg, LLVMValueRef x);
    /* Block-wide barrier (all threads of the CTA). */
    void (*barrier)(struct Cg *cg);
    /* Tensor cores (warp-level mma.sync m16n8k16, f32 accumulators): d = a b + c
     * with a[4], b[2] packed pairs (i32) of f16 (`f16`) or bf16 values. */
    void (*mma_16816)(struct Cg *cg, bool f16, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c,
                      LLVMValueRef *d);
    /* ldmatrix.x4 (.trans): four 8x8 b16 matrices from shared memory; each
     * lane gives one 16-byte row address. out[4]: i32 fragments. */
    void (*ldmatrix_x4)(struct Cg *cg, LLVMValueRef sptr, bool trans, LLVMValueRef *out);
    /* 16-byte asynchronous global -> shared copy; src_bytes (i32, 0..16; NULL
     * = 16) reads that many bytes and zero-fills the rest. */
    void (*cp_async16)(struct Cg *cg, LLVMValueRef sptr, LLVMValueRef gptr, LLVMValueRef src_bytes);
    void (*async_commit)(struct Cg *cg);
    void (*async_wait)(struct Cg *cg, int pending);
} Target;

/* The hooks of a family (NULL if this build has none for it). */
const Target *cg_family(TargetFamily f);

/* The sm80 family's hooks (sm80/hooks.c), for families that share them. */
LLVMValueRef cg_tg_ex2_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_lg2_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_tanh_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_rsqrt_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_sin_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_cos_approx(struct Cg *cg, LLVMValueRef x);
void cg_tg_bar_sync(struct Cg *cg);
/* mma.sync / ldmatrix / cp.async (sm_80 and later). */
void cg_tg_mma_16816(struct Cg *cg, bool f16, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c, LLVMValueRef *d);
void cg_tg_ldmatrix_x4(struct Cg *cg, LLVMValueRef sptr, bool trans, LLVMValueRef *out);
void cg_tg_cp_async16(struct Cg *cg, LLVMValueRef sptr, LLVMValueRef gptr, LLVMValueRef src_bytes);
void cg_tg_async_commit(struct Cg *cg);
void cg_tg_async_wait(struct Cg *cg, int pending);
extern const Target cg_family_sm80;   /* sm80/hooks.c */

#endif
