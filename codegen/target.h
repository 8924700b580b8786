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

/* One wgmma instruction of a product (Target.wgmma). */
typedef struct WgmmaInst {
    LLVMValueRef desc_a, *a, desc_b;
    bool tnsp_a, tnsp_b;
    bool zero_d;               /* scale-d = 0: the accumulators' values are not read (start from zero) */
    const int *acc;            /* N/2 indices into the product's accumulators */
} WgmmaInst;

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
    /* mma.sync m16n8k32 .s8 with s32 accumulators (wrapping: no
     * .satfinite): d = a b + c, a[4] and b[2] i32 words of four s8 each,
     * c, d i32. */
    void (*mma_16832_s8)(struct Cg *cg, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c, LLVMValueRef *d);
    /* mma.sync m16n8k8 .tf32, f32 accumulators: a[4], b[2] tf32 words (i32), c, d f32;
     * and cvt.rna.tf32.f32 (the i32 bits of x rounded to tf32, ties away). */
    void (*mma_1688_tf32)(struct Cg *cg, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c, LLVMValueRef *d);
    LLVMValueRef (*to_tf32)(struct Cg *cg, LLVMValueRef x);
    /* ldmatrix.x4 (.trans): four 8x8 b16 matrices from shared memory; each
     * lane gives one 16-byte row address. out[4]: i32 fragments. */
    void (*ldmatrix_x4)(struct Cg *cg, LLVMValueRef sptr, bool trans, LLVMValueRef *out);
    /* 16-byte asynchronous global -> shared copy; src_bytes (i32, 0..16; NULL
     * = 16) reads that many bytes and zero-fills the rest. */
    void (*cp_async16)(struct Cg *cg, LLVMValueRef sptr, LLVMValueRef gptr, LLVMValueRef src_bytes);
    void (*async_commit)(struct Cg *cg);
    void (*async_wait)(struct Cg *cg, int pending);
    /* ---- Hopper (the sm90 family; NULL in families without them) ---- */
    /* mbarriers in shared memory (bar: ptr addrspace(3) of the 8-byte word). */
    void (*mbar_init)(struct Cg *cg, LLVMValueRef bar, int count);
    void (*mbar_init_fence)(struct Cg *cg);
    void (*mbar_arrive)(struct Cg *cg, LLVMValueRef bar);
    void (*mbar_expect_tx)(struct Cg *cg, LLVMValueRef bar, int64_t bytes);   /* arrive.expect_tx */
    void (*mbar_wait)(struct Cg *cg, LLVMValueRef bar, LLVMValueRef parity);  /* until that phase completed */
    /* TMA tile copy of one box into shared memory (coords i32, innermost
     * first; tmap: the generic address of the tensor map). */
    void (*tma_load)(struct Cg *cg, int rank, LLVMValueRef dst, LLVMValueRef tmap, LLVMValueRef *coords,
                     LLVMValueRef bar);
    /* TMA tile store of one box from shared memory (src: a 1024-byte
     * aligned box in the tensor map's swizzle) to the tensor (coords i32,
     * innermost first), in the thread's current bulk group; then the
     * group's commit, and the waits until at most n of the thread's groups
     * are pending (read: only their reads of shared memory); the fence
     * that makes this thread's writes to shared memory visible to TMA. */
    void (*tma_store)(struct Cg *cg, int rank, LLVMValueRef src, LLVMValueRef tmap, LLVMValueRef *coords);
    void (*bulk_commit)(struct Cg *cg);
    void (*bulk_wait)(struct Cg *cg, int n, bool read);
    void (*fence_async_smem)(struct Cg *cg);
    void (*named_bar)(struct Cg *cg, int id, int threads, bool arrive);
    void (*setmaxnreg)(struct Cg *cg, int regs, bool inc);
    /* wgmma: fence, commit_group, wait_group, and the products. */
    void (*wgmma_fence)(struct Cg *cg);
    void (*wgmma_commit)(struct Cg *cg);
    void (*wgmma_wait)(struct Cg *cg, int pending);
    /* The same wait alone in a loop that runs once or twice (iv: an i32
     * the loop's first trip tests), so that ptxas' scheduler moves no code
     * across it: see cg_lower_dot_wait. */
    void (*wgmma_wait_fenced)(struct Cg *cg, int pending, LLVMValueRef iv);
    /* One asynchronous product's wgmma.mma_async instructions (m64nNk16
     * for f16 / bf16 dt, m64nNk32 for f8e4m3 / f8e5m2, whose operands are
     * both K-major descriptors), in order, as one asm: instruction t reads A from shared memory
     * (ins[t].desc_a, tnsp_a) or, when ins[t].a is not NULL, from registers
     * a[4] (i32 pairs of 16-bit values, as mma.sync's a0..a3), B from
     * shared memory (desc_b; tnsp_b: MN-major), and accumulates into the
     * N/2 f32 registers acc[ins[t].acc[0 .. N/2)]; acc[0 .. nacc) are
     * replaced by their values after the instructions. */
    void (*wgmma)(struct Cg *cg, int dt, int n, const struct WgmmaInst *ins, int ninst, LLVMValueRef *acc,
                  int nacc);
    /* An f32 register tied to the asm stream (orders it against the wgmma ops). */
    LLVMValueRef (*fence_f32)(struct Cg *cg, LLVMValueRef x);
    LLVMValueRef (*fence_b32)(struct Cg *cg, LLVMValueRef x);   /* the same for an i32 */
    /* ---- Blackwell (the sm100 family: codegen/sm100/; NULL elsewhere) ---- */
    /* tcgen05.alloc of `cols` columns by the whole warp, its address
     * written to the shared word (ptr addrspace(3)), then the warp gives up
     * its permit to allocate; dealloc by the same warp at the end. */
    void (*tmem_alloc)(struct Cg *cg, LLVMValueRef word, int cols);
    void (*tmem_dealloc)(struct Cg *cg, LLVMValueRef taddr, int cols);
    /* tcgen05.mma.cta_group::1.kind::f16 [taddr], desc_a, desc_b, idesc,
     * accumulate (i32, nonzero: add to tensor memory). One thread issues. */
    void (*tc_mma)(struct Cg *cg, LLVMValueRef taddr, LLVMValueRef desc_a, LLVMValueRef desc_b, LLVMValueRef idesc,
                   LLVMValueRef accumulate);
    /* The same with the A operand read from tensor memory at a_taddr. */
    void (*tc_mma_ts)(struct Cg *cg, LLVMValueRef taddr, LLVMValueRef a_taddr, LLVMValueRef desc_b, LLVMValueRef idesc,
                      LLVMValueRef accumulate);
    /* tcgen05.commit: one arrival on the mbarrier once the thread's
     * products so far are done. */
    void (*tc_commit)(struct Cg *cg, LLVMValueRef bar);
    /* tcgen05.ld.32x32b.xN: lane 32 (warp % 4) + lane of the warp, n
     * consecutive columns from taddr's, into out[n] (i32); then the wait. */
    void (*tmem_ld)(struct Cg *cg, LLVMValueRef taddr, int n, LLVMValueRef *out);
    void (*tmem_wait_ld)(struct Cg *cg);
    /* tcgen05.st.32x32b.xN: in[n] (i32) into n consecutive columns of the
     * thread's lane from taddr's; then the wait. */
    void (*tmem_st)(struct Cg *cg, LLVMValueRef taddr, int n, LLVMValueRef *in);
    void (*tmem_wait_st)(struct Cg *cg);
    /* tcgen05.fence::before_thread_sync (after = false) / ::after_thread_sync. */
    void (*tc_fence)(struct Cg *cg, bool after);
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
void cg_tg_mma_16832_s8(struct Cg *cg, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c, LLVMValueRef *d);
void cg_tg_mma_1688_tf32(struct Cg *cg, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c, LLVMValueRef *d);
LLVMValueRef cg_tg_to_tf32(struct Cg *cg, LLVMValueRef x);
void cg_tg_ldmatrix_x4(struct Cg *cg, LLVMValueRef sptr, bool trans, LLVMValueRef *out);
void cg_tg_cp_async16(struct Cg *cg, LLVMValueRef sptr, LLVMValueRef gptr, LLVMValueRef src_bytes);
void cg_tg_async_commit(struct Cg *cg);
void cg_tg_async_wait(struct Cg *cg, int pending);
/* The sm80 family's hooks as designated initializers: a later family that
 * keeps them starts its Target with this. */
#define CG_SM80_HOOKS                                                                                   \
    .exp2_f32 = cg_tg_ex2_approx, .log2_f32 = cg_tg_lg2_approx, .tanh_f32 = cg_tg_tanh_approx,         \
    .rsqrt_f32 = cg_tg_rsqrt_approx, .sin_f32 = cg_tg_sin_approx, .cos_f32 = cg_tg_cos_approx,         \
    .barrier = cg_tg_bar_sync, .mma_16816 = cg_tg_mma_16816, .mma_16832_s8 = cg_tg_mma_16832_s8,       \
    .mma_1688_tf32 = cg_tg_mma_1688_tf32, .to_tf32 = cg_tg_to_tf32,                                     \
    .ldmatrix_x4 = cg_tg_ldmatrix_x4,                                                                   \
    .cp_async16 = cg_tg_cp_async16, .async_commit = cg_tg_async_commit, .async_wait = cg_tg_async_wait
extern const Target cg_family_sm80;   /* sm80/hooks.c */
extern const Target cg_family_sm90;   /* sm90/hooks.c */
extern const Target cg_family_sm100;  /* sm90/hooks.c: the sm90 family less wgmma, plus sm100/tcgen05.c's hooks */
/* The sm100 family's tensor-memory hooks (sm100/tcgen05.c). */
void cg_tg_tmem_alloc(struct Cg *cg, LLVMValueRef word, int cols);
void cg_tg_tmem_dealloc(struct Cg *cg, LLVMValueRef taddr, int cols);
void cg_tg_tc_mma(struct Cg *cg, LLVMValueRef taddr, LLVMValueRef desc_a, LLVMValueRef desc_b, LLVMValueRef idesc,
                  LLVMValueRef accumulate);
void cg_tg_tc_mma_ts(struct Cg *cg, LLVMValueRef taddr, LLVMValueRef a_taddr, LLVMValueRef desc_b, LLVMValueRef idesc,
                     LLVMValueRef accumulate);
void cg_tg_tc_commit(struct Cg *cg, LLVMValueRef bar);
void cg_tg_tmem_st(struct Cg *cg, LLVMValueRef taddr, int n, LLVMValueRef *in);
void cg_tg_tmem_wait_st(struct Cg *cg);
void cg_tg_tmem_ld(struct Cg *cg, LLVMValueRef taddr, int n, LLVMValueRef *out);
void cg_tg_tmem_wait_ld(struct Cg *cg);
void cg_tg_tc_fence(struct Cg *cg, bool after);

#endif
