/* mma_frag.c - the fragments of an mma.sync product (lower_mma.c): the
 * lane terms, the ldmatrix.x4 addresses of A and B (computed once per
 * product, constant offsets per fragment, one XOR per k step in a
 * swizzled tile), the element loads of f8, i8 and f32 (tf32) operands,
 * A fragments packed from registers, and the order of the k steps' loads
 * (step_base).
 */
#include "mma_frag.h"

#include <string.h>

/* ---- fragments ---- */

static LLVMValueRef lane_bits(Cg *cg, int shift, int mask, int mul)
{
    LLVMValueRef x = shift ? LLVMBuildLShr(cg->b, cg->lane, cg_i32(cg, shift), "") : cg->lane;
    x = LLVMBuildAnd(cg->b, x, cg_i32(cg, mask), "");
    return mul > 1 ? LLVMBuildMul(cg->b, x, cg_i32(cg, mul), "") : x;
}

/* x through a volatile register move: not hoisted out of a loop. */
static LLVMValueRef opaque(Cg *cg, LLVMValueRef x)
{
    LLVMTypeRef fty = LLVMFunctionType(cg->t_i32, &cg->t_i32, 1, 0);
    static const char code[] = "mov.b32 $0, $1;", cons[] = "=r,r";
    LLVMValueRef as = LLVMGetInlineAsm(fty, (char *)code, sizeof code - 1, (char *)cons, sizeof cons - 1, 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(cg->b, fty, as, &x, 1, "");
}

void cg_mma_lane_terms(Cg *cg, Mma *mm)
{
    mm->l15 = lane_bits(cg, 0, 15, 1);          /* P1 row: lanes 0-15 walk 16 rows */
    mm->hi8 = lane_bits(cg, 4, 1, 8);           /* P1 column / P2 row: lanes 16-31 +8 */
    mm->l7 = lane_bits(cg, 0, 7, 1);            /* P2 row inside a matrix */
    mm->mid8 = lane_bits(cg, 3, 1, 8);          /* P2 column: lanes 8-15, 24-31 +8 */
    LLVMValueRef wr = LLVMBuildURem(cg->b, LLVMBuildUDiv(cg->b, cg->warp, cg_i32(cg, mm->wn), ""), cg_i32(cg, mm->wm), "");
    LLVMValueRef wc = LLVMBuildURem(cg->b, cg->warp, cg_i32(cg, mm->wn), "");
    mm->wrow = LLVMBuildMul(cg->b, wr, cg_i32(cg, 16 * mm->tm), "");
    mm->wcol = LLVMBuildMul(cg->b, wc, cg_i32(cg, 8 * mm->tn), "");
    if (mm->a8 || mm->b8) {
        /* The element loads' addresses from a lane id the loop around the
         * product cannot hoist out: LLVM would otherwise keep every
         * fragment's address of the product live across the loop (gemm
         * 256x128x64: 255 registers and spills on sm_86). */
        LLVMValueRef lane = opaque(cg, cg->lane), w = opaque(cg, cg->warp);
        mm->g = LLVMBuildAnd(cg->b, LLVMBuildLShr(cg->b, lane, cg_i32(cg, 2), ""), cg_i32(cg, 7), "");
        mm->t2 = LLVMBuildMul(cg->b, LLVMBuildAnd(cg->b, lane, cg_i32(cg, 3), ""), cg_i32(cg, mm->kstep / 8), "");
        wr = LLVMBuildURem(cg->b, LLVMBuildUDiv(cg->b, w, cg_i32(cg, mm->wn), ""), cg_i32(cg, mm->wm), "");
        wc = LLVMBuildURem(cg->b, w, cg_i32(cg, mm->wn), "");
        mm->wrow = LLVMBuildMul(cg->b, wr, cg_i32(cg, 16 * mm->tm), "");
        mm->wcol = LLVMBuildMul(cg->b, wc, cg_i32(cg, 8 * mm->tn), "");
    }
}

/* ---- fragments loaded element by element: f8 (converted to f16 pairs),
 * i8 (m16n8k32: runs of four bytes), f32 (m16n8k8 .tf32: one element) ---- */

/* One 32-bit fragment register from the byte elements at logical (r, c)
 * and the next ones along the k coordinate (columns of A, rows of B:
 * `kcols`) of the shared view sv from base: two f8 elements converted to
 * an f16x2, or four i8 elements as they are (the first in the low bits).
 * A run that lies along a stored row is one 16- or 32-bit load (it never
 * straddles a swizzle's 16-byte chunk), else one byte load each. */
static LLVMValueRef frag_word(Cg *cg, const Mma *mm, const SmemView *sv, LLVMValueRef base, LLVMValueRef r,
                              LLVMValueRef c, bool kcols)
{
    LLVMValueRef sr = sv->trans ? c : r, sc = sv->trans ? r : c;
    if (mm->tf32) {   /* one f32 element, rounded to tf32 */
        LLVMValueRef o = cg_smem_offset(cg, sv, sr, LLVMBuildMul(cg->b, sc, cg_i32(cg, 4), ""));
        LLVMValueRef x = LLVMBuildLoad2(cg->b, cg->t_f32, LLVMBuildGEP2(cg->b, cg->t_i8, base, &o, 1, ""), "");
        LLVMSetAlignment(x, 4);
        return cg->tg->to_tf32(cg, x);
    }
    int n = mm->s8 ? 4 : 2;
    bool along = kcols != sv->trans;    /* the run's elements are neighbours in a stored row */
    LLVMValueRef e[4];
    if (along) {
        LLVMTypeRef wt = n == 4 ? cg->t_i32 : cg->t_i16;
        LLVMValueRef o = cg_smem_offset(cg, sv, sr, sc);
        LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->t_i8, base, &o, 1, "");
        LLVMValueRef w = LLVMBuildLoad2(cg->b, wt, p, "");
        LLVMSetAlignment(w, (unsigned)n);
        if (mm->s8)
            return w;
        for (int i = 0; i < n; i++)
            e[i] = LLVMBuildTrunc(cg->b, LLVMBuildLShr(cg->b, w, LLVMConstInt(wt, (unsigned)(8 * i), 0), ""),
                                  cg->t_i8, "");
    } else {
        for (int i = 0; i < n; i++) {
            LLVMValueRef row = i ? LLVMBuildAdd(cg->b, sr, cg_i32(cg, i), "") : sr;
            LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->t_i8, base, (LLVMValueRef[]){ cg_smem_offset(cg, sv, row, sc) },
                                           1, "");
            e[i] = LLVMBuildLoad2(cg->b, cg->t_i8, p, "");
        }
    }
    LLVMValueRef w = cg_i32(cg, 0);
    for (int i = 0; i < n; i++) {
        LLVMValueRef x = mm->s8 ? e[i] : cg_f8_to_f16_bits(cg, e[i], mm->dt);
        x = LLVMBuildZExt(cg->b, x, cg->t_i32, "");
        w = LLVMBuildOr(cg->b, w, i ? LLVMBuildShl(cg->b, x, cg_i32(cg, (32 / n) * i), "") : x, "");
    }
    return w;
}

/* A fragments a0..a3 of m16 tile i at k step kk: rows g and g + 8,
 * columns t2 .. and the same + kstep / 2, with t2 = 2 (lane % 4) (PTX
 * m16n8k16 .f16: pairs) or 4 (lane % 4) (m16n8k32 .s8: runs of four). */
static void a_frag_f8(Cg *cg, Mma *mm, int i, int kk, LLVMValueRef *out)
{
    const SmemView *sv = mm->av;
    LLVMValueRef base = mm->fa.base ? mm->fa.base : sv->base;
    for (int q = 0; q < 4; q++) {
        LLVMValueRef r = LLVMBuildAdd(cg->b, mm->g, cg_i32(cg, 16 * i + 8 * (q & 1)), "");
        r = LLVMBuildAdd(cg->b, mm->wrow, r, "");
        LLVMValueRef c = LLVMBuildAdd(cg->b, mm->t2, cg_i32(cg, mm->kstep * kk + mm->kstep / 2 * (q >> 1)), "");
        out[q] = frag_word(cg, mm, sv, base, r, c, true);
    }
}

/* B fragments of n8 tiles 2jp, 2jp + 1 at k step kk (out[0..1], out[2..3]):
 * rows (k) t2 .. and the same + kstep / 2, column lane / 4. */
static void b_frag_f8(Cg *cg, Mma *mm, int jp, int kk, LLVMValueRef *out)
{
    const SmemView *sv = mm->bv;
    LLVMValueRef base = mm->fb.base ? mm->fb.base : sv->base;
    for (int h = 0; h < 2; h++)
        for (int q = 0; q < 2; q++) {
            LLVMValueRef r = LLVMBuildAdd(cg->b, mm->t2, cg_i32(cg, mm->kstep * kk + mm->kstep / 2 * q), "");
            LLVMValueRef c = LLVMBuildAdd(cg->b, mm->g, cg_i32(cg, 8 * (2 * jp + h)), "");
            c = LLVMBuildAdd(cg->b, mm->wcol, c, "");
            out[2 * h + q] = frag_word(cg, mm, sv, base, r, c, false);
        }
}

/* ---- ldmatrix addresses ----
 * An ldmatrix.x4 lane address is (thread row + rc, thread column + cc) of
 * the stored tile, with the thread part fixed for the whole product and
 * (rc, cc) constants per fragment (multiples of 16). The thread's byte
 * offset T is computed once (loop-invariant: lane and warp only). Row-major
 * and padded tiles add the constant. In a Swizzle<B,4,3> tile the XOR term
 * depends on row % 8, which rc keeps, and on the 16-byte chunk: when the
 * constant column bytes bc share no bit inside a W-byte panel with any
 * thread's column bytes, offset(rt + rc, bt + bc) = (T ^ (bc % W)) +
 * (bc / W) * rows * W + rc * W: one XOR per distinct bc % W (a k step),
 * the rest an immediate of the ldmatrix. Otherwise the full swizzle is
 * computed per fragment. */


/* wbase: warp part of the thread column (per warp index 0..nw-1: w * wstep). */
static void frag_addr_init(Cg *cg, const Mma *mm, FragAddr *fa, const SmemView *sv, bool p2, bool trans,
                           LLVMValueRef wrow, LLVMValueRef wcol, int nw, int64_t wstep, int64_t cmax)
{
    memset(fa, 0, sizeof *fa);
    fa->sv = sv;
    fa->p2 = p2;
    fa->trans = trans;
    fa->rt = LLVMBuildAdd(cg->b, wrow, p2 ? LLVMBuildAdd(cg->b, mm->l7, mm->hi8, "") : mm->l15, "");
    fa->ct = LLVMBuildAdd(cg->b, wcol, p2 ? mm->mid8 : mm->hi8, "");
    fa->T = cg_smem_offset(cg, sv, fa->rt, LLVMBuildMul(cg->b, fa->ct, cg_i32(cg, sv->eb), ""));
    fa->w = cg_swz_width(sv->swz);
    if (!fa->w) {
        fa->fast = true;
        return;
    }
    int64_t tbits = 0;                  /* every bit some thread's column bytes set inside a panel */
    for (int w = 0; w < nw; w++)
        for (int h = 0; h < 2; h++)
            tbits |= ((w * wstep + 8 * h) * sv->eb) % fa->w;
    int64_t cbits = 0;
    for (int64_t c = 0; c < cmax; c += 16)
        cbits |= (c * sv->eb) % fa->w;
    fa->fast = (tbits & cbits) == 0 && fa->w / 16 <= 16;
}

/* Pointer to this lane's row of the ldmatrix block at constant (rc, cc)
 * (plus 16 * kv along the k coordinate in a rolled k loop). */
static LLVMValueRef frag_ptr(Cg *cg, FragAddr *fa, int64_t rc, int64_t cc)
{
    const SmemView *sv = fa->sv;
    LLVMValueRef base = fa->base ? fa->base : sv->base;
    if (!fa->fast) {
        LLVMValueRef row = LLVMBuildAdd(cg->b, fa->rt, cg_i32(cg, rc), "");
        LLVMValueRef col = LLVMBuildAdd(cg->b, fa->ct, cg_i32(cg, cc), "");
        if (fa->kv) {
            LLVMValueRef k16 = LLVMBuildShl(cg->b, fa->kv, cg_i32(cg, 4), "");
            if (fa->krow)
                row = LLVMBuildAdd(cg->b, row, k16, "");
            else
                col = LLVMBuildAdd(cg->b, col, k16, "");
        }
        LLVMValueRef o = cg_smem_offset(cg, sv, row, LLVMBuildMul(cg->b, col, cg_i32(cg, sv->eb), ""));
        return LLVMBuildGEP2(cg->b, cg->t_i8, base, &o, 1, "");
    }
    int64_t bc = cc * sv->eb, imm;
    LLVMValueRef t = fa->T;
    if (fa->kv)
        base = fa->kbase;
    if (fa->w) {
        int x = (int)(bc % fa->w / 16);
        if (fa->Tk)                   /* dynamic column bytes: the constant part is 0 */
            t = fa->Tk;
        else {
            if (!fa->xo[x])
                fa->xo[x] = x ? LLVMBuildXor(cg->b, fa->T, cg_i32(cg, bc % fa->w), "") : fa->T;
            t = fa->xo[x];
        }
        imm = bc / fa->w * sv->rows * fa->w + rc * fa->w;
    } else {
        imm = rc * (sv->cols * sv->eb + (sv->swz == SWZ_PAD ? sv->pad : 0)) + bc;
    }
    LLVMValueRef o = LLVMBuildZExt(cg->b, t, cg->t_i64, "");
    LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->t_i8, base, &o, 1, "");
    o = cg_i64(cg, imm);
    return imm ? LLVMBuildGEP2(cg->b, cg->t_i8, p, &o, 1, "") : p;
}

/* Rolled k loop: fragments of k step kv (i32, run time). Rows of the
 * stored tile are the k coordinate for A stored [K, M] and B stored [K, N],
 * columns otherwise; the constant part of that coordinate is then 0. On
 * the fast path a k row step adds 16 * kv rows (rows are W bytes apart in
 * a swizzled panel), and a k column step of bc = 32 * kv bytes XORs
 * bc % W into T and adds bc / W panels. */
void cg_mma_frag_k(Cg *cg, FragAddr *fa, LLVMValueRef kv)
{
    const SmemView *sv = fa->sv;
    fa->kv = kv;
    fa->krow = fa->trans;
    fa->Tk = NULL;
    fa->kbase = NULL;
    if (!fa->fast)
        return;
    LLVMValueRef base = fa->base ? fa->base : sv->base, off;
    if (fa->krow) {
        int64_t rs = fa->w ? fa->w : sv->cols * sv->eb + (sv->swz == SWZ_PAD ? sv->pad : 0);
        off = LLVMBuildMul(cg->b, kv, cg_i32(cg, 16 * rs), "");
    } else {
        LLVMValueRef bc = LLVMBuildMul(cg->b, kv, cg_i32(cg, 16 * sv->eb), "");
        if (fa->w) {
            int lw = 0;
            while ((1 << lw) < fa->w)
                lw++;
            fa->Tk = LLVMBuildXor(cg->b, fa->T, LLVMBuildAnd(cg->b, bc, cg_i32(cg, fa->w - 1), ""), "");
            off = LLVMBuildMul(cg->b, LLVMBuildLShr(cg->b, bc, cg_i32(cg, lw), ""), cg_i32(cg, sv->rows * fa->w), "");
        } else {
            off = bc;
        }
    }
    off = LLVMBuildZExt(cg->b, off, cg->t_i64, "");
    fa->kbase = LLVMBuildGEP2(cg->b, cg->t_i8, base, &off, 1, "");
}

static LLVMValueRef pack2(Cg *cg, LLVMValueRef x, LLVMValueRef y)
{
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(x), 2);
    LLVMValueRef v = LLVMBuildInsertElement(cg->b, LLVMGetUndef(vt), x, cg_i32(cg, 0), "");
    v = LLVMBuildInsertElement(cg->b, v, y, cg_i32(cg, 1), "");
    return LLVMBuildBitCast(cg->b, v, cg->t_i32, "");
}

/* A fragments (4 x i32) of m16 tile i at k step kk. */
static void a_frag(Cg *cg, Mma *mm, int i, int kk, LLVMValueRef *out)
{
    if (mm->a8) {
        a_frag_f8(cg, mm, i, kk, out);
        return;
    }
    if (mm->aregs) {
        for (int q = 0; q < 4; q++)
            out[q] = pack2(cg, mm->aregs[layout_mma_a_reg(mm->aL, i, kk, 2 * q)],
                           mm->aregs[layout_mma_a_reg(mm->aL, i, kk, 2 * q + 1)]);
        return;
    }
    FragAddr *fa = &mm->fa;
    if (fa->trans)                /* stored [K, M] */
        cg->tg->ldmatrix_x4(cg, frag_ptr(cg, fa, 16 * kk, 16 * i), true, out);
    else                          /* stored [M, K] */
        cg->tg->ldmatrix_x4(cg, frag_ptr(cg, fa, 16 * i, 16 * kk), false, out);
}

/* B fragments of n8 tiles 2jp, 2jp+1 at k step kk: out[0..1], out[2..3]. */
static void b_frag(Cg *cg, Mma *mm, int jp, int kk, LLVMValueRef *out)
{
    FragAddr *fb = &mm->fb;
    if (mm->b8) {
        b_frag_f8(cg, mm, jp, kk, out);
        return;
    }
    if (!fb->trans)               /* stored [N, K]: plain ldmatrix */
        cg->tg->ldmatrix_x4(cg, frag_ptr(cg, fb, 16 * jp, 16 * kk), false, out);
    else                          /* stored [K, N] */
        cg->tg->ldmatrix_x4(cg, frag_ptr(cg, fb, 16 * kk, 16 * jp), true, out);
}

void cg_mma_frag_addrs(Cg *cg, Mma *mm)
{
    LLVMValueRef z = cg_i32(cg, 0);
    mm->fa.sv = mm->av;           /* the f8 loads read their views' bases (step_base) */
    mm->fb.sv = mm->bv;
    if (!mm->aregs && !mm->a8) {
        if (mm->av->trans)        /* [K, M]: rows k (lane), columns warp rows */
            frag_addr_init(cg, mm, &mm->fa, mm->av, true, true, z, mm->wrow, mm->wm, 16 * mm->tm, mm->m / mm->wm);
        else
            frag_addr_init(cg, mm, &mm->fa, mm->av, false, false, mm->wrow, z, 1, 0, mm->k);
    }
    if (mm->b8)
        return;
    if (mm->bv->trans)            /* [N, K]: rows warp columns, plain ldmatrix */
        frag_addr_init(cg, mm, &mm->fb, mm->bv, true, false, mm->wcol, z, 1, 0, mm->k);
    else                          /* [K, N]: ldmatrix.trans */
        frag_addr_init(cg, mm, &mm->fb, mm->bv, false, true, z, mm->wcol, mm->wn, 8 * mm->tn, mm->n / mm->wn);
}


/* The NVPTX scheduler would hoist every ldmatrix of the product above the
 * first mma (the mma intrinsics carry no chain), keeping all K/16 steps'
 * fragments live at once: 64 x 64 warp tiles with BK = 64 then spill. A
 * step's base address goes through an opaque register move that takes an
 * accumulator of the step before as an (unused) operand, so step k + 1's
 * loads stay after step k - 1's products; the move costs nothing in SASS. */
static LLVMValueRef step_base(Cg *cg, LLVMValueRef base, LLVMValueRef dep)
{
    LLVMTypeRef pt[2] = { cg->t_i64, LLVMTypeOf(dep) };
    LLVMTypeRef fty = LLVMFunctionType(cg->t_i64, pt, 2, 0);
    static const char code[] = "mov.b64 $0, $1;", consf[] = "=l,l,f", consr[] = "=l,l,r";
    const char *cons = LLVMTypeOf(dep) == cg->t_i32 ? consr : consf;   /* s8 accumulators are i32 */
    LLVMValueRef as = LLVMGetInlineAsm(fty, (char *)code, sizeof code - 1, (char *)cons, sizeof consf - 1, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMValueRef args[2] = { LLVMBuildPtrToInt(cg->b, base, cg->t_i64, ""), dep };
    LLVMValueRef r = LLVMBuildCall2(cg->b, fty, as, args, 2, "");
    return LLVMBuildIntToPtr(cg->b, r, LLVMTypeOf(base), "");
}

Frags cg_mma_load_frags(Cg *cg, Mma *mm, int kk, LLVMValueRef dep)
{
    if (dep && !mm->aregs)
        mm->fa.base = step_base(cg, mm->fa.sv->base, dep);
    if (dep)
        mm->fb.base = step_base(cg, mm->fb.sv->base, dep);
    Frags fr;
    fr.a = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)(4 * mm->tm));
    fr.b = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)(2 * mm->tn));
    for (int i = 0; i < mm->tm; i++)
        a_frag(cg, mm, i, kk, &fr.a[4 * i]);
    for (int jp = 0; jp < mm->tn / 2; jp++)
        b_frag(cg, mm, jp, kk, &fr.b[4 * jp]);
    return fr;
}

