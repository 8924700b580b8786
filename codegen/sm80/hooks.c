/* sm80/hooks.c - the lowering hooks of the sm80 family (target.h): SIMT
 * math on the MUFU unit, bar.sync, mma.sync m16n8k16, ldmatrix and cp.async.
 * Every target tilec compiles for uses them today (TargetInfo.family). */
#include "../cg_internal.h"

#include <string.h>

LLVMValueRef cg_tg_ex2_approx(Cg *cg, LLVMValueRef x)
{
    return cg_call1(cg, "llvm.nvvm.ex2.approx.ftz.f32", cg->t_f32, x);
}

LLVMValueRef cg_tg_lg2_approx(Cg *cg, LLVMValueRef x)
{
    return cg_call1(cg, "llvm.nvvm.lg2.approx.ftz.f", cg->t_f32, x);
}

/* tanh.approx.f32 (sm_75 and later): llvm.tanh with `afn`. The NVVM name
 * llvm.nvvm.tanh.approx.f32 is no intrinsic in LLVM 22 and would be
 * printed as a call to an undefined function. */
LLVMValueRef cg_tg_tanh_approx(Cg *cg, LLVMValueRef x)
{
    return cg_approx(cg_call1(cg, "llvm.tanh.f32", cg->t_f32, x));
}

/* sin.approx.f32, cos.approx.f32: llvm.sin / llvm.cos with `afn`. */
LLVMValueRef cg_tg_sin_approx(Cg *cg, LLVMValueRef x)
{
    return cg_approx(cg_call1(cg, "llvm.sin.f32", cg->t_f32, x));
}

LLVMValueRef cg_tg_cos_approx(Cg *cg, LLVMValueRef x)
{
    return cg_approx(cg_call1(cg, "llvm.cos.f32", cg->t_f32, x));
}

LLVMValueRef cg_tg_rsqrt_approx(Cg *cg, LLVMValueRef x)
{
    return cg_call1(cg, "llvm.nvvm.rsqrt.approx.ftz.f", cg->t_f32, x);
}

/* Inside a warp-specialized role (Cg.role_threads) the role's threads meet
 * on its own named barrier; elsewhere the whole block on barrier 0. */
void cg_tg_bar_sync(Cg *cg)
{
    if (cg->role_threads > 0) {
        LLVMValueRef a[2] = { cg_i32(cg, cg->role_bar), cg_i32(cg, cg->role_threads) };
        cg_call(cg, "llvm.nvvm.barrier.cta.sync.aligned.count", cg->t_void, a, 2);
        return;
    }
    LLVMValueRef zero = LLVMConstInt(cg->t_i32, 0, 0);
    cg_call(cg, "llvm.nvvm.barrier.cta.sync.aligned.all", cg->t_void, &zero, 1);
}

/* ---- tensor cores and async copies (sm_80 and later) ---- */

static LLVMTypeRef struct4(Cg *cg, LLVMTypeRef t)
{
    LLVMTypeRef e[4] = { t, t, t, t };
    return LLVMStructTypeInContext(cg->ctx, e, 4, 0);
}

void cg_tg_mma_16816(Cg *cg, bool f16, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c, LLVMValueRef *d)
{
    LLVMValueRef args[10];
    LLVMTypeRef h2 = LLVMVectorType(cg->t_f16, 2);
    for (int i = 0; i < 6; i++) {
        LLVMValueRef x = i < 4 ? a[i] : b[i - 4];
        args[i] = f16 ? LLVMBuildBitCast(cg->b, x, h2, "") : x;
    }
    for (int i = 0; i < 4; i++)
        args[6 + i] = c[i];
    const char *name = f16 ? "llvm.nvvm.mma.m16n8k16.row.col.f32.f32" : "llvm.nvvm.mma.m16n8k16.row.col.bf16";
    LLVMTypeRef pt[10];
    for (int i = 0; i < 10; i++)
        pt[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef rt = struct4(cg, cg->t_f32), fty = LLVMFunctionType(rt, pt, 10, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
    if (!fn)
        fn = LLVMAddFunction(cg->mod, name, fty);
    LLVMValueRef r = LLVMBuildCall2(cg->b, fty, fn, args, 10, "");
    for (int i = 0; i < 4; i++)
        d[i] = LLVMBuildExtractValue(cg->b, r, (unsigned)i, "");
}

/* A warp mma.sync as a pure inline asm (no side effects: it is scheduled
 * like the f16 intrinsic): a[4], b[2] in 32-bit registers, c[4] and d[4]
 * of type acc; code and cons the instruction and its constraints. */
static void mma_asm(Cg *cg, LLVMTypeRef acc, const char *code, size_t code_len, const char *cons, size_t cons_len,
                    LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c, LLVMValueRef *d)
{
    LLVMValueRef args[10];
    LLVMTypeRef pt[10];
    for (int i = 0; i < 4; i++)
        args[i] = a[i];
    args[4] = b[0];
    args[5] = b[1];
    for (int i = 0; i < 4; i++)
        args[6 + i] = c[i];
    for (int i = 0; i < 10; i++)
        pt[i] = i < 6 ? cg->t_i32 : acc;
    LLVMTypeRef rt = struct4(cg, acc), fty = LLVMFunctionType(rt, pt, 10, 0);
    LLVMValueRef as = LLVMGetInlineAsm(fty, (char *)code, code_len, (char *)cons, cons_len, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMValueRef r = LLVMBuildCall2(cg->b, fty, as, args, 10, "");
    for (int i = 0; i < 4; i++)
        d[i] = LLVMBuildExtractValue(cg->b, r, (unsigned)i, "");
}

/* No LLVM intrinsic is relied on here: the instruction as a pure inline
 * asm (see mma_asm). */
void cg_tg_mma_16832_s8(Cg *cg, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c, LLVMValueRef *d)
{
    static const char code[] = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, "
                               "{$8, $9}, {$10, $11, $12, $13};";
    static const char cons[] = "=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r";
    mma_asm(cg, cg->t_i32, code, sizeof code - 1, cons, sizeof cons - 1, a, b, c, d);
}

void cg_tg_mma_1688_tf32(Cg *cg, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *c, LLVMValueRef *d)
{
    static const char code[] = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, "
                               "{$8, $9}, {$10, $11, $12, $13};";
    static const char cons[] = "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f";
    mma_asm(cg, cg->t_f32, code, sizeof code - 1, cons, sizeof cons - 1, a, b, c, d);
}

LLVMValueRef cg_tg_to_tf32(Cg *cg, LLVMValueRef x)
{
    LLVMTypeRef fty = LLVMFunctionType(cg->t_i32, &cg->t_f32, 1, 0);
    static const char code[] = "cvt.rna.tf32.f32 $0, $1;", cons[] = "=r,f";
    LLVMValueRef as = LLVMGetInlineAsm(fty, (char *)code, sizeof code - 1, (char *)cons, sizeof cons - 1, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(cg->b, fty, as, &x, 1, "");
}

void cg_tg_ldmatrix_x4(Cg *cg, LLVMValueRef sptr, bool trans, LLVMValueRef *out)
{
    LLVMValueRef r = cg_call(cg, trans ? "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3"
                                       : "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3",
                             struct4(cg, cg->t_i32), &sptr, 1);
    for (int i = 0; i < 4; i++)
        out[i] = LLVMBuildExtractValue(cg->b, r, (unsigned)i, "");
}

void cg_tg_cp_async16(Cg *cg, LLVMValueRef sptr, LLVMValueRef gptr, LLVMValueRef src_bytes)
{
    LLVMValueRef args[3] = { sptr, gptr, src_bytes };
    if (src_bytes)
        cg_call(cg, "llvm.nvvm.cp.async.cg.shared.global.16.s", cg->t_void, args, 3);
    else
        cg_call(cg, "llvm.nvvm.cp.async.cg.shared.global.16", cg->t_void, args, 2);
}

void cg_tg_async_commit(Cg *cg) { cg_call(cg, "llvm.nvvm.cp.async.commit.group", cg->t_void, NULL, 0); }

void cg_tg_async_wait(Cg *cg, int pending)
{
    LLVMValueRef n = cg_i32(cg, pending < 0 ? 0 : pending);
    cg_call(cg, "llvm.nvvm.cp.async.wait.group", cg->t_void, &n, 1);
}

const Target cg_family_sm80 = {
    .family = TF_SM80,
    CG_SM80_HOOKS,
};
