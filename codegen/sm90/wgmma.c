/* sm90/wgmma.c - asynchronous products (DOT_ASYNC / DOT_WAIT) on the
 * warp-group tensor cores: wgmma.mma_async m64nNk16 (f16, bf16) or
 * m64nNk32 (f8e4m3, f8e5m2: .e4m3 / .e5m2 operands) with f32 accumulators
 * and both operands read from shared memory through descriptors (A from
 * registers too for 16-bit operands).
 *
 * Warps: the role's warp groups (Cg.nwarps / 4 = G) share the [M, N]
 * accumulator by m64 row blocks: warp group g takes rows 64g + 64G i
 * (i = 0 .. M / 64G - 1), the layout layout_wgmma_acc. Per k16 step and
 * row block, one wgmma of the whole N (N <= 256, a multiple of 8); all of
 * a product's wgmma in one asm (Target.wgmma). A K step is 32 bytes of K
 * whatever the element size (16 16-bit or 32 8-bit elements), so the
 * descriptors below step the same way for both.
 *
 * Descriptors (fastpaths: the GmmaDescriptor bits): start address >> 4 in
 * [0, 14), LBO >> 4 in [16, 30), SBO >> 4 in [32, 46), the swizzle mode in
 * [62, 64) (128B 1, 64B 2, 32B 3). Buffers are [rows x W] panels of a
 * W-byte swizzle (passes/smem_model.h), 1024-byte aligned.
 *  - K-major (A [M, K]; B given transposed, stored [N, K]): rows of the
 *    panel are M (or N) rows; 8-row groups SBO = 8W apart; a K step adds
 *    32 bytes inside the panel, the next panel after W (a 128-byte row
 *    holds 64 16-bit or 128 8-bit elements of K). CUTLASS's
 *    make_gmma_desc (cute/atom/mma_traits_sm90_gmma.hpp) builds the same
 *    K-major descriptor for any element width: its layouts are in units
 *    of 128-bit chunks, which makes the descriptor independent of the
 *    element size. 8-bit operands must be K-major (no transpose in the
 *    PTX ISA for them), so they never take the MN-major form.
 *  - MN-major B (stored [K, N], transposed by the instruction; 16-bit
 *    only): LBO = the stride between W-wide column panels (K W bytes),
 *    SBO = 8W between 8-row groups of K; a k16 step adds 16 rows (16 W
 *    bytes).
 * The accumulator registers pass through a fence before the first wgmma
 * and after the wait (an empty asm that ties each one), so no other
 * instruction touches them while the products fly: ptxas would otherwise
 * serialize the wgmma ops (warning C7515).
 */
#include "../cg_internal.h"

#include <string.h>

static int swz_mode_bits(int swz)
{
    return swz == SWZ_128B ? 1 : swz == SWZ_64B ? 2 : swz == SWZ_32B ? 3 : 0;
}

/* The descriptor of the tile at saddr + off; extra: more bits (tcgen05's
 * version). wgmma's 2-bit mode at 62 is, bit for bit, tcgen05's 3-bit
 * layout at 61 (128B 2, 64B 4, 32B 6). */
static LLVMValueRef desc(Cg *cg, LLVMValueRef saddr, int64_t off, int64_t lbo, int64_t sbo, int swz, uint64_t extra)
{
    LLVMValueRef a = LLVMBuildAdd(cg->b, saddr, cg_i32(cg, off), "");
    a = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, a, cg_i32(cg, 4), ""), cg_i32(cg, 0x3FFF), "");
    uint64_t hi = ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) | ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) |
                  ((uint64_t)swz_mode_bits(swz) << 62) | extra;
    return LLVMBuildOr(cg->b, LLVMBuildZExt(cg->b, a, cg->t_i64, ""), LLVMConstInt(cg->t_i64, hi, 0), "");
}

bool cg_desc_ok(const SmemView *sv)
{
    int w = cg_swz_width(sv->swz);
    return w && (sv->eb == 2 || sv->eb == 1) && (sv->cols * sv->eb) % w == 0 && sv->rows % 8 == 0;
}

LLVMValueRef cg_desc_a(Cg *cg, LLVMValueRef base, const SmemView *sa, int64_t row0, int64_t kk, uint64_t extra)
{
    int w = cg_swz_width(sa->swz);
    int64_t kb = kk * WGMMA_K_BYTES;
    return desc(cg, base, (kb / w) * sa->rows * w + row0 * w + kb % w, 16, 8 * w, sa->swz, extra);
}

LLVMValueRef cg_desc_b(Cg *cg, LLVMValueRef base, const SmemView *sb, int64_t kk, uint64_t extra)
{
    if (sb->trans)   /* stored [N, K]: K-major, as A */
        return cg_desc_a(cg, base, sb, 0, kk, extra);
    int w = cg_swz_width(sb->swz);
    return desc(cg, base, kk * 16 * w, sb->rows * w, 8 * w, sb->swz, extra);
}

/* Two 16-bit values in one i32 (the first in the low half). */
static LLVMValueRef pack2(Cg *cg, LLVMValueRef x, LLVMValueRef y)
{
    LLVMTypeRef et = LLVMTypeOf(x), vt = LLVMVectorType(et, 2);
    LLVMValueRef v = LLVMBuildInsertElement(cg->b, LLVMGetUndef(vt), x, cg_i32(cg, 0), "");
    v = LLVMBuildInsertElement(cg->b, v, y, cg_i32(cg, 1), "");
    return LLVMBuildBitCast(cg->b, v, cg->t_i32, "");
}

/* An 8-bit product (both operands K-major descriptors), promoted: the
 * tensor cores' 8-bit path keeps about 13 mantissa bits of its
 * accumulator (the D it reads included; DeepSeek-V3's report, CUTLASS's
 * FP8 "2xAcc" mainloop and DeepGEMM measure and work around it), so each
 * row block's K/32 instructions accumulate from zero (scale-d = 0 on the
 * first) into a temporary of N/2 registers, and once they complete the
 * temporary is added into the f32 accumulator on the FMA units: at most
 * one product of the loop's step (BK: 128 elements at the tiles the
 * compiler chooses) is summed at the lower precision. The row blocks run
 * one after another through one temporary (N/2 registers beside the
 * accumulator's, which 256 x 128 tiles leave room for), each waited for
 * before its sum: the product is complete when this returns (its
 * DOT_WAIT then waits for nothing). */
static void f8_promoted(Cg *cg, DType dt, int64_t n, int64_t k, int64_t reps, int groups, const Layout *L,
                        LLVMValueRef *acc, const SmemView *sa, LLVMValueRef abase, const SmemView *sb,
                        LLVMValueRef bbase)
{
    int64_t ks = ir_wgmma_k(dt), steps = k / ks;
    int nt = (int)(n / 2);
    int *ix = arena_alloc(cg->a, sizeof(int) * (size_t)nt);
    for (int q = 0; q < nt; q++)
        ix[q] = q;
    WgmmaInst *ins = arena_alloc(cg->a, sizeof(WgmmaInst) * (size_t)steps);
    LLVMValueRef *tmp = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)nt);
    for (int64_t i = 0; i < reps; i++) {
        for (int q = 0; q < nt; q++)   /* no value: the first instruction does not read it (scale-d = 0) */
            tmp[q] = cg->tg->fence_f32(cg, LLVMGetUndef(cg->t_f32));
        cg->tg->wgmma_fence(cg);
        for (int64_t kk = 0; kk < steps; kk++)
            ins[kk] = (WgmmaInst){ .desc_a = cg_desc_a(cg, abase, sa, i * 64 * groups, kk, 0),
                                   .desc_b = cg_desc_b(cg, bbase, sb, kk, 0), .acc = ix, .zero_d = kk == 0 };
        cg->tg->wgmma(cg, (int)dt, (int)n, ins, (int)steps, tmp, nt);
        cg->tg->wgmma_commit(cg);
        cg->tg->wgmma_wait(cg, 0);
        for (int j = 0; j < n / 8; j++)
            for (int q = 0; q < 4; q++) {
                int r = layout_mma_acc_reg(L, (int)i, j, q);
                acc[r] = LLVMBuildFAdd(cg->b, acc[r], cg->tg->fence_f32(cg, tmp[4 * j + q]), "");
            }
    }
}

const Layout *cg_wgmma_acc_layout(Cg *cg, int64_t m, int64_t n)
{
    return cg_layout_dup(cg, layout_wgmma_acc(m, n, cg->nwarps));
}

int cg_lower_dot_async(Cg *cg, Op *op)
{
    Func *f = cg->f;
    const Type *at = ir_type(f, op->args[0]), *bt = ir_type(f, op->args[1]), *ct = ir_type(f, op->args[2]);
    const TileVal *av = &cg->vals[op->args[0]], *bv = &cg->vals[op->args[1]];
    DType dt = (DType)at->dtype;
    int64_t m = at->shape[0], k = at->shape[1], n = bt->shape[1];
    bool f8 = dt == DT_F8E4M3 || dt == DT_F8E5M2;
    int64_t ks = ir_wgmma_k(dt);   /* K of one instruction: 16, or 32 for f8 */
    int groups = cg->nwarps / 4;
    if (!cg->tg->wgmma) {
        diag_error(cg->d, op->loc, "asynchronous products need wgmma, which %s does not have", cg->ti->name);
        return 1;
    }
    if ((dt != DT_BF16 && dt != DT_F16 && !f8) || bt->dtype != dt || ct->dtype != DT_F32) {
        diag_error(cg->d, op->loc, "wgmma takes bf16, f16, f8e4m3 or f8e5m2 operands with f32 accumulation here");
        return 1;
    }
    if (groups < 1 || cg->nwarps % 4 || m % (64 * groups) || n % 8 || n > 256 || k % ks) {
        diag_error(cg->d, op->loc, "wgmma product [%lld x %lld] @ [%lld x %lld] over %d warp group%s: needs M a "
                   "multiple of 64 per warp group, N a multiple of 8 up to 256, K a multiple of %lld",
                   (long long)m, (long long)k, (long long)k, (long long)n, groups, groups == 1 ? "" : "s",
                   (long long)ks);
        return 1;
    }
    bool a_regs = av->kind != TV_SMEM;   /* RS: A from registers (p @ v) */
    if (f8 && (a_regs || av->sv->trans || bv->kind != TV_SMEM || !bv->sv->trans)) {
        diag_error(cg->d, op->loc, "an 8-bit wgmma reads both operands K-major from shared memory (A stored [M, K], "
                   "B stored [N, K] and given transposed); these operands are not");
        return 1;
    }
    if (bv->kind != TV_SMEM || !cg_desc_ok(bv->sv) || (!a_regs && (av->sv->trans || !cg_desc_ok(av->sv)))) {
        diag_error(cg->d, op->loc, "wgmma reads B (and A, unless A is in registers) from swizzled shared buffers "
                   "(A stored [M, K]); these operands are not");
        return 1;
    }
    const SmemView *sa = a_regs ? NULL : av->sv, *sb = bv->sv;
    const Layout *L = cg_wgmma_acc_layout(cg, m, n);
    int nr = layout_nregs(L);
    /* Every register the products read is tied to the asm stream before
     * the fence: nothing writes them between the fence and the wgmma. */
    LLVMValueRef *src = cg_materialize(cg, &cg->vals[op->args[2]], ct, L, op->loc);
    LLVMValueRef *acc = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)nr);
    LLVMValueRef *apk = NULL;
    const Layout *aL = NULL;
    int64_t reps = m / (64 * groups);
    if (a_regs) {
        aL = cg_layout_dup(cg, layout_wgmma_a(m, k, cg->nwarps));
        LLVMValueRef *ar = cg_materialize(cg, av, at, aL, op->loc);
        apk = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)(reps * (k / 16) * 4));
        for (int64_t i = 0; i < reps; i++)
            for (int64_t kk = 0; kk < k / 16; kk++)
                for (int q = 0; q < 4; q++)
                    apk[(i * (k / 16) + kk) * 4 + q] = cg->tg->fence_b32(
                        cg, pack2(cg, ar[layout_mma_a_reg(aL, (int)i, (int)kk, 2 * q)],
                                  ar[layout_mma_a_reg(aL, (int)i, (int)kk, 2 * q + 1)]));
    }
    LLVMValueRef wg = LLVMBuildLShr(cg->b, cg->warp, cg_i32(cg, 2), "");
    int wa = a_regs ? 0 : cg_swz_width(sa->swz), wb = cg_swz_width(sb->swz);
    LLVMValueRef abase = a_regs ? NULL : LLVMBuildAdd(cg->b, LLVMBuildPtrToInt(cg->b, sa->base, cg->t_i32, ""),
                                                      LLVMBuildMul(cg->b, wg, cg_i32(cg, 64 * wa), ""), "");
    LLVMValueRef bbase = LLVMBuildPtrToInt(cg->b, sb->base, cg->t_i32, "");
    bool b_mn = !sb->trans;   /* stored [K, N]: MN-major */
    if (f8) {
        for (int r = 0; r < nr; r++)
            acc[r] = src[r];
        f8_promoted(cg, dt, n, k, reps, groups, L, acc, sa, abase, sb, bbase);
    } else {
        for (int r = 0; r < nr; r++)
            acc[r] = cg->tg->fence_f32(cg, src[r]);
        cg->tg->wgmma_fence(cg);
        int ninst = (int)(k / ks * reps);
        WgmmaInst *ins = arena_alloc(cg->a, sizeof(WgmmaInst) * (size_t)ninst);
        int t = 0;
        for (int64_t kk = 0; kk < k / ks; kk++) {
            for (int64_t i = 0; i < reps; i++, t++) {
                int *ix = arena_alloc(cg->a, sizeof(int) * (size_t)(n / 2));
                for (int j = 0; j < n / 8; j++)
                    for (int q = 0; q < 4; q++)
                        ix[4 * j + q] = layout_mma_acc_reg(L, (int)i, j, q);
                ins[t] = (WgmmaInst){ .desc_a = a_regs ? NULL : cg_desc_a(cg, abase, sa, i * 64 * groups, kk, 0),
                                      .a = a_regs ? &apk[(i * (k / 16) + kk) * 4] : NULL,
                                      .desc_b = cg_desc_b(cg, bbase, sb, kk, 0), .tnsp_b = b_mn, .acc = ix };
            }
        }
        cg->tg->wgmma(cg, (int)dt, (int)n, ins, ninst, acc, nr);
        cg->tg->wgmma_commit(cg);
    }
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = L, .r = acc };
    if (cg->report)
        sb_printf(cg->report, "  dot_async at %d:%d: wgmma m64n%lldk%lld %s, %lldx%lldx%lld over %d warp group%s, "
                  "%lld per k step, A %s, B %s %dB swizzle\n", op->loc.line, op->loc.col,
                  (long long)n, (long long)ks, dt == DT_F16 ? "f16" : dt == DT_BF16 ? "bf16" :
                  dt == DT_F8E4M3 ? "e4m3" : "e5m2", (long long)m, (long long)n, (long long)k, groups,
                  groups == 1 ? "" : "s", (long long)reps,
                  a_regs ? "from registers" : wa == 128 ? "K-major 128B swizzle" : wa == 64 ? "K-major 64B swizzle"
                                                                                : "K-major 32B swizzle",
                  b_mn ? "MN-major" : "K-major", wb);
    if (cg->report && f8)
        sb_printf(cg->report, "  dot_async at %d:%d: promoted: each row block's %lld k32 products summed from zero "
                  "in the tensor cores (whose 8-bit path keeps about 13 mantissa bits), then added into the f32 "
                  "accumulator on the FMA units; the row blocks one after another through %lld temporary "
                  "registers\n", op->loc.line, op->loc.col, (long long)(k / ks), (long long)(n / 2));
    return 0;
}

/* Whether a loop body overlaps this wait's product with other work: the
 * wait (pending 0) and its product's issue are ops of the innermost loop's
 * body with a wait for another product between them (attention's second
 * product, issued before the first product's wait and the softmax). ptxas
 * would issue such a wait at the top of its block, before the softmax it
 * is meant to run under; it gets the fenced form. */
static bool overlaps_in_loop(const Cg *cg, const Op *op)
{
    const Op *issue = cg->f->vals[op->args[0]].def;
    if (op->iattr[0] != 0 || !cg->cur_for || !issue)
        return false;
    const Block *b = &cg->cur_for->regions[0];
    int i = ir_block_index_of(b, issue), w = ir_block_index_of(b, op);
    if (i < 0 || w < 0)
        return false;
    for (int k = i + 1; k < w; k++)
        if (b->ops[k]->code == OP_DOT_WAIT)
            return true;
    return false;
}

int cg_lower_dot_wait(Cg *cg, Op *op)
{
    const TileVal *t = &cg->vals[op->args[0]];
    if (t->kind != TV_REGS || !cg->tg->wgmma_wait) {
        diag_internal(cg->d, op->loc, "dot_wait of something that is not an asynchronous product");
        return 1;
    }
    if (cg->tg->wgmma_wait_fenced && overlaps_in_loop(cg, op)) {
        cg->tg->wgmma_wait_fenced(cg, (int)op->iattr[0], cg->vals[cg->cur_for->regions[0].args[0]].s);
        if (cg->report)
            sb_printf(cg->report, "  dot_wait at %d:%d: alone in a one-trip loop, so that ptxas keeps it below "
                      "the work it overlaps\n", op->loc.line, op->loc.col);
    } else {
        cg->tg->wgmma_wait(cg, (int)op->iattr[0]);
    }
    int nr = layout_nregs(t->L);
    LLVMValueRef *r = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)nr);
    for (int i = 0; i < nr; i++)
        r[i] = cg->tg->fence_f32(cg, t->r[i]);
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = t->L, .r = r };
    return 0;
}
