/* target.h - what differs between GPU architectures, behind one struct of
 * function pointers per arch (target_sm86.c, target_sm90.c, target_sm100.c).
 * Generic lowering calls through a Target and never tests the arch by name. */
#ifndef TILEC_CG_TARGET_H
#define TILEC_CG_TARGET_H

#include <llvm-c/Core.h>
#include <stdbool.h>

struct Cg;

typedef struct Target {
    const char *name;        /* resolved arch as the user sees it: "sm_90a" */
    const char *cpu;         /* LLVM NVPTX CPU name */
    const char *features;    /* LLVM target features (PTX ISA version) */
    int sm;                  /* 86, 90, 100 */
    int max_smem_static;     /* bytes of static shared memory a block may use (dynamic:
                              * pass_smem_limit, which TILEC_SMEM_LIMIT can raise) */
    int max_warps;           /* warps per block the SIMT path may pick */
    int max_blocks_sm;       /* resident blocks per SM (hardware limit) */
    /* Fast base-2 exponential / logarithm of an f32 value (hardware MUFU). */
    LLVMValueRef (*exp2_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*log2_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*tanh_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*rsqrt_f32)(struct Cg *cg, LLVMValueRef x);
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

/* NULL if `arch` is not a resolved arch name codegen knows. */
const Target *cg_target_lookup(const char *arch);

/* Shared MUFU-based hooks (target_common.c), used by the per-arch tables. */
LLVMValueRef cg_tg_ex2_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_lg2_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_tanh_approx(struct Cg *cg, LLVMValueRef x);
LLVMValueRef cg_tg_rsqrt_approx(struct Cg *cg, LLVMValueRef x);
void cg_tg_bar_sync(struct Cg *cg);
/* mma.sync / ldmatrix / cp.async (sm_80 and later), target_common.c. */
void cg_tg_mma_16816(struct Cg *cg, bool f16, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c, LLVMValueRef *d);
void cg_tg_ldmatrix_x4(struct Cg *cg, LLVMValueRef sptr, bool trans, LLVMValueRef *out);
void cg_tg_cp_async16(struct Cg *cg, LLVMValueRef sptr, LLVMValueRef gptr, LLVMValueRef src_bytes);
void cg_tg_async_commit(struct Cg *cg);
void cg_tg_async_wait(struct Cg *cg, int pending);
/* The SIMT hooks every current target shares (hardware approximations of
 * exp2/log2/tanh/rsqrt, bar.sync) and its block limits. */
#define CG_TG_SIMT_COMMON \
    .max_smem_static = 48 * 1024, .max_warps = 16, \
    .exp2_f32 = cg_tg_ex2_approx, .log2_f32 = cg_tg_lg2_approx, \
    .tanh_f32 = cg_tg_tanh_approx, .rsqrt_f32 = cg_tg_rsqrt_approx, \
    .barrier = cg_tg_bar_sync

#define CG_TG_SM80_MMA \
    .mma_16816 = cg_tg_mma_16816, .ldmatrix_x4 = cg_tg_ldmatrix_x4, .cp_async16 = cg_tg_cp_async16, \
    .async_commit = cg_tg_async_commit, .async_wait = cg_tg_async_wait

extern const Target cg_target_sm86;
extern const Target cg_target_sm90, cg_target_sm90a;
extern const Target cg_target_sm100, cg_target_sm100a, cg_target_sm100f;

#endif
