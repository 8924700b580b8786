/* sm90/hooks.c - the lowering hooks of the sm90 family (target.h), and of
 * the sm100 family, which shares them less wgmma (at the end): the
 * sm80 family's SIMT, mma.sync and cp.async hooks, plus what Hopper adds:
 * mbarriers with transaction counts, TMA tensor copies, named barriers,
 * setmaxnreg and wgmma.mma_async. Each is one PTX instruction in inline
 * assembly (LLVM 22 has no intrinsic for wgmma.mma_async; the others are
 * kept beside it in one form, each with its exact PTX text). Shared
 * addresses are 32-bit (.shared window), taken from ptr addrspace(3). */
#include "../cg_internal.h"

#include <stdio.h>
#include <string.h>

/* An inline-asm call with side effects and a memory clobber (every one
 * here orders shared-memory traffic). ret NULL: void. */
LLVMValueRef cg_asm_call(Cg *cg, LLVMTypeRef ret, const char *code, const char *cons, LLVMValueRef *args,
                             int n)
{
    LLVMTypeRef *pt = arena_alloc(cg->a, sizeof(LLVMTypeRef) * (size_t)(n + 1));   /* tcgen05.st: 33 */
    for (int i = 0; i < n; i++)
        pt[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret ? ret : cg->t_void, pt, (unsigned)n, 0);
    LLVMValueRef as = LLVMGetInlineAsm(fty, (char *)code, strlen(code), (char *)cons, strlen(cons), 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(cg->b, fty, as, args, (unsigned)n, "");
}

LLVMValueRef cg_saddr(Cg *cg, LLVMValueRef p)
{
    return LLVMBuildPtrToInt(cg->b, p, cg->t_i32, "");
}

static void mbar_init(Cg *cg, LLVMValueRef bar, int count)
{
    LLVMValueRef a[2] = { cg_saddr(cg, bar), cg_i32(cg, count) };
    cg_asm_call(cg, NULL, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}", a, 2);
}

/* The barriers' initialisation visible to the async proxy (TMA) and to
 * every thread after the next block barrier. */
static void mbar_init_fence(Cg *cg)
{
    cg_asm_call(cg, NULL, "fence.mbarrier_init.release.cluster;\n\tfence.proxy.async.shared::cta;", "~{memory}",
             NULL, 0);
}

static void mbar_arrive(Cg *cg, LLVMValueRef bar)
{
    LLVMValueRef a = cg_saddr(cg, bar);
    cg_asm_call(cg, NULL, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}", &a, 1);
}

static void mbar_expect_tx(Cg *cg, LLVMValueRef bar, int64_t bytes)
{
    LLVMValueRef a[2] = { cg_saddr(cg, bar), cg_i32(cg, bytes) };
    cg_asm_call(cg, NULL, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,~{memory}", a, 2);
}

/* Blocks until the phase of parity `parity` (i32 0/1) has completed. */
static void mbar_wait(Cg *cg, LLVMValueRef bar, LLVMValueRef parity)
{
    LLVMValueRef a[2] = { cg_saddr(cg, bar), parity };
    cg_asm_call(cg, NULL,
             "{\n\t.reg .pred p;\n\tTILEC_WAIT:\n\t"
             "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\n\t"
             "@!p bra TILEC_WAIT;\n\t}",
             "r,r,~{memory}", a, 2);
}

/* One cp.async.bulk.tensor of a rank-`rank` box: the asm text is `head`
 * (rank substituted), the coordinates $nfix.. (innermost first), `tail`;
 * the operands are the nfix fixed ones (constraints `cons`), then the
 * coordinates. */
static void bulk_tensor(Cg *cg, const char *head, const char *tail, LLVMValueRef *fix, const char *cons, int nfix,
                        int rank, LLVMValueRef *coords)
{
    StrBuf code = { 0 };
    sb_printf(&code, head, rank);
    for (int i = 0; i < rank; i++)
        sb_printf(&code, "%s$%d", i ? ", " : "", nfix + i);
    sb_puts(&code, tail);
    LLVMValueRef a[3 + TENSOR_MAXRANK];
    char c[64];
    snprintf(c, sizeof c, "%s", cons);
    for (int i = 0; i < nfix; i++)
        a[i] = fix[i];
    for (int i = 0; i < rank; i++) {
        a[nfix + i] = coords[i];
        strcat(c, ",r");
    }
    strcat(c, ",~{memory}");
    cg_asm_call(cg, NULL, code.buf, c, a, nfix + rank);
    sb_free(&code);
}

/* One TMA tile copy global -> shared of a box of a rank-`rank` tensor map
 * (coords innermost first), completing its bytes on mbarrier `bar`. */
static void tma_load(Cg *cg, int rank, LLVMValueRef dst, LLVMValueRef tmap, LLVMValueRef *coords, LLVMValueRef bar)
{
    LLVMValueRef fix[3] = { cg_saddr(cg, dst), tmap, cg_saddr(cg, bar) };
    bulk_tensor(cg, "cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {",
                "}], [$2];", fix, "r,l,r", 3, rank, coords);
}

static void tma_store(Cg *cg, int rank, LLVMValueRef src, LLVMValueRef tmap, LLVMValueRef *coords)
{
    LLVMValueRef fix[2] = { tmap, cg_saddr(cg, src) };
    bulk_tensor(cg, "cp.async.bulk.tensor.%dd.global.shared::cta.bulk_group [$0, {", "}], [$1];", fix, "l,r", 2, rank,
                coords);
}

static void bulk_commit(Cg *cg) { cg_asm_call(cg, NULL, "cp.async.bulk.commit_group;", "~{memory}", NULL, 0); }

static void bulk_wait(Cg *cg, int n, bool read)
{
    char code[64];
    snprintf(code, sizeof code, "cp.async.bulk.wait_group%s %d;", read ? ".read" : "", n);
    cg_asm_call(cg, NULL, code, "~{memory}", NULL, 0);
}

static void fence_async_smem(Cg *cg)
{
    cg_asm_call(cg, NULL, "fence.proxy.async.shared::cta;", "~{memory}", NULL, 0);
}

static void named_bar(Cg *cg, int id, int threads, bool arrive)
{
    LLVMValueRef a[2] = { cg_i32(cg, id), cg_i32(cg, threads) };
    cg_asm_call(cg, NULL, arrive ? "bar.arrive $0, $1;" : "bar.sync $0, $1;", "r,r,~{memory}", a, 2);
}

static void setmaxnreg(Cg *cg, int regs, bool inc)
{
    char code[64];
    snprintf(code, sizeof code, "setmaxnreg.%s.sync.aligned.u32 %d;", inc ? "inc" : "dec", regs);
    cg_asm_call(cg, NULL, code, "~{memory}", NULL, 0);
}

static void wgmma_fence(Cg *cg) { cg_asm_call(cg, NULL, "wgmma.fence.sync.aligned;", "~{memory}", NULL, 0); }
static void wgmma_commit(Cg *cg) { cg_asm_call(cg, NULL, "wgmma.commit_group.sync.aligned;", "~{memory}", NULL, 0); }

static void wgmma_wait(Cg *cg, int pending)
{
    char code[64];
    snprintf(code, sizeof code, "wgmma.wait_group.sync.aligned %d;", pending);
    cg_asm_call(cg, NULL, code, "~{memory}", NULL, 0);
}

/* ptxas issues a wgmma.wait_group (it has no inputs) at the top of its
 * basic block, above code that does not depend on it, and it if-converts
 * forward branches: a wait placed after a softmax in the PTX lands before
 * it in SASS (bench/RESULTS.md 2026-12-07 21:10). A backward branch it
 * cannot remove: the wait sits alone in a loop whose first trip repeats
 * when iv is INT_MIN and whose second never does, so it runs once or twice
 * (twice waits for nothing more) and always ends. */
static void wgmma_wait_fenced(Cg *cg, int pending, LLVMValueRef iv)
{
    char code[256];
    snprintf(code, sizeof code,
             "{\n\t.reg .pred q;\n\t.reg .b32 c;\n\tmov.b32 c, $0;\n\tTILEC_FENCE:\n\t"
             "wgmma.wait_group.sync.aligned %d;\n\tsetp.eq.s32 q, c, -2147483648;\n\tmov.b32 c, 0;\n\t"
             "@q bra TILEC_FENCE;\n\t}",
             pending);
    cg_asm_call(cg, NULL, code, "r,~{memory}", &iv, 1);
}

/* Ties a register to the asm stream (CUTLASS's warpgroup_fence_operand):
 * its def stays above, and its uses below, the wgmma ops around. */
static LLVMValueRef fence_reg(Cg *cg, LLVMTypeRef t, const char *cons, LLVMValueRef x)
{
    LLVMTypeRef fty = LLVMFunctionType(t, &t, 1, 0);
    LLVMValueRef as = LLVMGetInlineAsm(fty, (char *)"", 0, (char *)cons, strlen(cons), 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(cg->b, fty, as, &x, 1, "");
}

static LLVMValueRef fence_f32(Cg *cg, LLVMValueRef x) { return fence_reg(cg, cg->t_f32, "=f,0,~{memory}", x); }
static LLVMValueRef fence_b32(Cg *cg, LLVMValueRef x) { return fence_reg(cg, cg->t_i32, "=r,0,~{memory}", x); }

/* One product's wgmma.mma_async m64nNk16 (m64nNk32 for 8-bit dt: .e4m3 /
 * .e5m2, which take no transpose immediates) instructions in one asm (the
 * order and the PTX instructions as one asm each would give them; one asm
 * ties the accumulators once instead of once an instruction: attention's
 * 8-16 instructions a product, GEMM's 8). Operands: the nacc accumulators
 * out ($0 ..), then per instruction its A (a descriptor, or 4 registers)
 * and B descriptors, then the accumulators in, tied to the outputs. */
static void wgmma(Cg *cg, int dt, int n, const WgmmaInst *ins, int ninst, LLVMValueRef *acc, int nacc)
{
    bool f8 = dt == DT_F8E4M3 || dt == DT_F8E5M2;
    int nin = nacc;
    for (int t = 0; t < ninst; t++)
        nin += (ins[t].a ? 4 : 1) + 1;
    StrBuf code = { 0 }, cons = { 0 };
    const char *ty = dt == DT_F16 ? "f16" : dt == DT_F8E4M3 ? "e4m3" : dt == DT_F8E5M2 ? "e5m2" : "bf16";
    sb_puts(&code, "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, 1, 0;");
    bool zero = false;   /* scale-d = 0 somewhere: predicate z is false */
    for (int t = 0; t < ninst; t++)
        zero = zero || ins[t].zero_d;
    if (zero)
        sb_puts(&code, "\n\t.reg .pred z;\n\tsetp.ne.b32 z, 0, 0;");
    for (int i = 0; i < nacc; i++)
        sb_printf(&cons, "%s=f", i ? "," : "");
    LLVMTypeRef *pt = arena_alloc(cg->a, sizeof(LLVMTypeRef) * (size_t)nin);
    LLVMValueRef *args = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)nin);
    int k = 0;   /* the next input */
    for (int t = 0; t < ninst; t++) {
        const WgmmaInst *w = &ins[t];
        sb_printf(&code, "\n\twgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {", n, f8 ? 32 : 16, ty, ty);
        for (int i = 0; i < n / 2; i++)
            sb_printf(&code, "%s$%d", i ? ", " : "", w->acc[i]);
        int op = nacc + k;
        if (w->a) {
            sb_printf(&code, "}, {$%d, $%d, $%d, $%d}, $%d, %s, 1, 1, %d;", op, op + 1, op + 2, op + 3, op + 4,
                      w->zero_d ? "z" : "p", w->tnsp_b ? 1 : 0);
            sb_puts(&cons, ",r,r,r,r");
            for (int q = 0; q < 4; q++) {
                args[k] = w->a[q];
                pt[k++] = cg->t_i32;
            }
        } else if (f8) {   /* both K-major: no transpose immediates */
            sb_printf(&code, "}, $%d, $%d, %s, 1, 1;", op, op + 1, w->zero_d ? "z" : "p");
            sb_puts(&cons, ",l");
            args[k] = w->desc_a;
            pt[k++] = cg->t_i64;
        } else {
            sb_printf(&code, "}, $%d, $%d, %s, 1, 1, %d, %d;", op, op + 1, w->zero_d ? "z" : "p", w->tnsp_a ? 1 : 0,
                      w->tnsp_b ? 1 : 0);
            sb_puts(&cons, ",l");
            args[k] = w->desc_a;
            pt[k++] = cg->t_i64;
        }
        sb_puts(&cons, ",l");
        args[k] = w->desc_b;
        pt[k++] = cg->t_i64;
    }
    sb_puts(&code, "\n\t}");
    for (int i = 0; i < nacc; i++) {
        sb_printf(&cons, ",%d", i);
        args[k] = acc[i];
        pt[k++] = cg->t_f32;
    }
    sb_puts(&cons, ",~{memory}");
    LLVMTypeRef *ft = arena_alloc(cg->a, sizeof(LLVMTypeRef) * (size_t)nacc);
    for (int i = 0; i < nacc; i++)
        ft[i] = cg->t_f32;
    LLVMTypeRef rt = LLVMStructTypeInContext(cg->ctx, ft, (unsigned)nacc, 0);
    LLVMTypeRef fty = LLVMFunctionType(rt, pt, (unsigned)nin, 0);
    LLVMValueRef as = LLVMGetInlineAsm(fty, code.buf, code.len, cons.buf, cons.len, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef r = LLVMBuildCall2(cg->b, fty, as, args, (unsigned)nin, "");
    for (int i = 0; i < nacc; i++)
        acc[i] = LLVMBuildExtractValue(cg->b, r, (unsigned)i, "");
    sb_free(&code);
    sb_free(&cons);
}

/* What Hopper adds that Blackwell keeps: barriers, TMA, named barriers,
 * setmaxnreg. */
#define CG_SM90_SHARED_HOOKS                                                                            \
    .mbar_init = mbar_init, .mbar_init_fence = mbar_init_fence, .mbar_arrive = mbar_arrive,            \
    .mbar_expect_tx = mbar_expect_tx, .mbar_wait = mbar_wait, .tma_load = tma_load,                    \
    .named_bar = named_bar, .setmaxnreg = setmaxnreg

const Target cg_family_sm90 = {
    .family = TF_SM90,
    CG_SM80_HOOKS,
    CG_SM90_SHARED_HOOKS,
    /* TMA stores of a role's staged tile (lower_ws.c cg_ws_tma_store): sm90 only so far (the sm100
     * epilogue keeps its stores until it is measured on the hardware) */
    .tma_store = tma_store, .bulk_commit = bulk_commit, .bulk_wait = bulk_wait, .fence_async_smem = fence_async_smem,
    .wgmma_fence = wgmma_fence, .wgmma_commit = wgmma_commit, .wgmma_wait = wgmma_wait,
    .wgmma_wait_fenced = wgmma_wait_fenced, .wgmma = wgmma, .fence_f32 = fence_f32, .fence_b32 = fence_b32,
};

/* Blackwell keeps Hopper's barriers, TMA, named barriers and setmaxnreg;
 * its products are tcgen05's (no wgmma). */
const Target cg_family_sm100 = {
    .family = TF_SM100,
    CG_SM80_HOOKS,
    CG_SM90_SHARED_HOOKS,
    .tmem_alloc = cg_tg_tmem_alloc, .tmem_dealloc = cg_tg_tmem_dealloc, .tc_mma = cg_tg_tc_mma,
    .tc_commit = cg_tg_tc_commit, .tmem_ld = cg_tg_tmem_ld, .tmem_wait_ld = cg_tg_tmem_wait_ld,
    .tc_fence = cg_tg_tc_fence, .tc_mma_ts = cg_tg_tc_mma_ts, .tmem_st = cg_tg_tmem_st,
    .tmem_wait_st = cg_tg_tmem_wait_st,
};
