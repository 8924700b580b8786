/* lower_mma.c - `@` (DOT) on tensor cores: mma.sync m16n8k16 with bf16 or
 * f16 operands and f32 accumulators, operands read from shared memory with
 * ldmatrix. f8e4m3 and f8e5m2 operands run as f16 products: each thread
 * loads the f8 elements of its f16 fragments from the shared tile (a
 * 16-bit load where the pair lies along the stored rows, else two bytes)
 * and converts them to f16 in registers, exactly (cg_f8_to_f16_bits); a
 * register f8 operand is converted on its way to the f16 scratch. i8
 * operands run as mma.sync m16n8k32 .s8 (s32 accumulators) and, where the
 * mma_select.tf32 option chose mma_sync for them, f32 operands as
 * m16n8k8 .tf32, their fragments loaded the same way (runs of four bytes;
 * single f32 elements rounded by cvt.rna.tf32). Products of the simt
 * family go to lower_dot_simt.c.
 *
 * Warps: the [M, N] accumulator is split over a wm x wn warp grid
 * (layout_mma_warps: 128 x 128 with 8 warps -> 2 x 4, warp tiles 64 x 32);
 * each warp holds tm x tn m16n8 fragments in the accumulator layout
 * (layout.h). The product runs as K/16 steps (unrolled, or a loop: see
 * dot_rolled): per step, one
 * ldmatrix.x4 per m16 tile of A and per pair of n8 tiles of B, then tm * tn
 * mma.sync; the fragments of step k+1 are loaded before the products of
 * step k (register double buffering).
 *
 * Operands: a shared view (SMEM_LOAD of a pipeline slot, possibly through
 * TRANS) is read in place, with ldmatrix for [M, K] A / [N, K] B (B given
 * as TRANS) and ldmatrix.trans for [K, N] B / [K, M] A. A register operand
 * is written to the shared scratch (rows padded by 16 bytes, so ldmatrix
 * reads are conflict-free) unless it is already in the A-operand layout
 * (the accumulator of an earlier product with wn = 1 cast elementwise: the
 * FlashAttention-2 reuse), which needs no data movement at all.
 */
#include "cg_internal.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct FragAddr {
    const SmemView *sv;
    bool p2, trans;               /* lane pattern; ldmatrix.trans */
    LLVMValueRef rt, ct;          /* thread row / column (elements) */
    LLVMValueRef T;               /* byte offset of (rt, ct) */
    int64_t w;                    /* swizzle panel bytes (0: none) */
    bool fast;                    /* the split above holds for every fragment */
    LLVMValueRef xo[16];          /* T ^ (bc % W), by bc % W / 16 */
    LLVMValueRef base;            /* the tile's base for this k step (see step_base) */
    /* Rolled k loop (dot_rolled): the k step is the run-time value kv; the
     * k coordinate (rows when krow, else columns) adds 16 * kv, folded into
     * kbase and Tk on the fast path. */
    LLVMValueRef kv, kbase, Tk;
    bool krow;
} FragAddr;

typedef struct Mma {
    Op *op;
    bool f16;
    DType dt;                      /* the operands' dtype */
    bool s8;                       /* i8 operands: m16n8k32 .s8, s32 accumulators */
    bool tf32;                     /* f32 operands (mma = mma_sync): m16n8k8 .tf32 */
    int kstep;                     /* k of one instruction: 16, 32 for s8, 8 for tf32 */
    bool a8, b8;                   /* A / B: a shared view read per fragment element (f8, i8, tf32) */
    LLVMValueRef g, t2;            /* lane / 4 and (lane % 4) * (kstep / 8): the fragment coordinates */
    int64_t m, n, k;
    int wm, wn, tm, tn;
    const Layout *L;               /* accumulator layout */
    const SmemView *av, *bv;       /* shared operands (NULL: A from registers) */
    LLVMValueRef *aregs;           /* A in the A-operand layout (registers) */
    const Layout *aL;
    LLVMValueRef wrow, wcol;       /* this warp's first row / column */
    LLVMValueRef l15, l7, hi8, mid8;  /* lane terms of the ldmatrix addresses */
    FragAddr fa, fb;               /* ldmatrix addresses of A (shared) and B */
} Mma;

static Layout acc_layout(Cg *cg, int64_t m, int64_t n, int *wm, int *wn)
{
    if (cg->mma_rows_only)         /* attention: warps along M only (lower_chain.c) */
        cg_chain_acc_warps(cg, m, wm, wn);
    else
        layout_mma_warps(m, n, cg->nwarps, wm, wn);
    return layout_mma_acc(m, n, *wm, *wn, cg->nwarps);
}

/* The DOT that v comes from through elementwise ops (acc + a @ b), or NULL. */
static Op *dot_source(Func *f, ValId v, int depth)
{
    Op *def = ir_val(f, v)->def;
    if (!def || depth > 8)
        return NULL;
    if (def->code == OP_DOT || def->code == OP_DOT_WAIT)
        return def;
    if (def->code == OP_IF) {   /* a guarded mask (mask_split): either arm's value */
        for (int g = 0; g < 2; g++) {
            ValId y = ir_if_yield(def, g, v);
            Op *d = y ? dot_source(f, y, depth + 1) : NULL;
            if (d)
                return d;
        }
        return NULL;
    }
    if (!(op_info[def->code].flags & OPF_ELEM))
        return NULL;
    for (int i = 0; i < def->nargs; i++) {
        Op *d = dot_source(f, def->args[i], depth + 1);
        if (d)
            return d;
    }
    return NULL;
}

const Layout *cg_mma_carried_layout(Cg *cg, Op *forop, int i)
{
    Op *y = ir_block_yield(&forop->regions[0]);
    if (!y || i >= y->nargs)
        return NULL;
    Op *def = dot_source(cg->f, y->args[i], 0);
    if (!def || !type_same_shape(ir_type(cg->f, def->res[0]), ir_type(cg->f, y->args[i])))
        return NULL;
    const Type *t = ir_type(cg->f, def->res[0]);
    if (def->code == OP_DOT_WAIT)   /* an asynchronous product's accumulator */
        return cg_wgmma_acc_layout(cg, t->shape[0], t->shape[1]);
    if (t->rank != 2 || t->shape[0] % 16 || t->shape[1] % 16)
        return NULL;
    int wm, wn;
    return cg_layout_dup(cg, acc_layout(cg, t->shape[0], t->shape[1], &wm, &wn));
}

const Layout *cg_mma_acc_layout(Cg *cg, int64_t m, int64_t n)
{
    if (m % 16 || n % 16)
        return NULL;
    int wm, wn;
    return cg_layout_dup(cg, acc_layout(cg, m, n, &wm, &wn));
}

/* ---- operands ---- */

/* Is L the A-operand register map of this product (same thread and
 * coordinate for every element, registers numbered as layout_mma_a)? */
static bool is_a_layout(const Mma *mm, const Layout *L)
{
    if (mm->wn != 1 || L->prank != 2 || L->slice || L->order[0] != 1 || L->pshape[0] != mm->m ||
        L->pshape[1] != mm->k)
        return false;
    return L->spt[0] == 1 && L->tpw[0] == 8 && layout_rpt(L, 0) == 2 * mm->tm && L->wpc[0] == mm->wm &&
           L->spt[1] == 2 && L->tpw[1] == 4 && L->wpc[1] == 1 && mm->k % (8 * layout_rpt(L, 1)) == 0;
}

static SmemView *scratch_view(Cg *cg, LLVMValueRef base, int64_t off, int64_t rows, int64_t cols, int eb)
{
    SmemView *sv = arena_alloc(cg->a, sizeof *sv);
    memset(sv, 0, sizeof *sv);
    LLVMValueRef o = cg_i64(cg, off);
    sv->base = LLVMBuildGEP2(cg->b, cg->t_i8, base, &o, 1, "");
    sv->rows = rows;
    sv->cols = cols;
    sv->eb = eb;
    sv->swz = SWZ_PAD;
    sv->pad = 16;
    sv->slots = 1;
    return sv;
}

static bool is_f8(DType t) { return t == DT_F8E4M3 || t == DT_F8E5M2; }

const SmemView **cg_dot_stage(Cg *cg, Op *op, const bool stage[2], DType to, const char *what)
{
    Func *f = cg->f;
    const SmemView **out = arena_alloc(cg->a, 2 * sizeof *out);
    out[0] = out[1] = NULL;
    int eb = dtype_bits(to) / 8;
    int64_t bytes[2];
    for (int i = 0; i < 2; i++) {
        const Type *t = ir_type(f, op->args[i]);
        bytes[i] = stage[i] ? t->shape[0] * (t->shape[1] * eb + 16) : 0;
    }
    LLVMValueRef base = cg_smem(cg, bytes[0] + bytes[1]);
    cg->tg->barrier(cg);
    for (int i = 0; i < 2; i++) {
        if (!stage[i])
            continue;
        const Type *t = ir_type(f, op->args[i]);
        const TileVal *v = &cg->vals[op->args[i]];
        const Layout *L = v->kind == TV_REGS ? v->L : cg_default_layout(cg, t, true);
        SmemView *sv = scratch_view(cg, base, i ? bytes[0] : 0, t->shape[0], t->shape[1], eb);
        LLVMValueRef *r = cg_materialize(cg, v, t, L, op->loc);
        if ((DType)t->dtype != to) {
            int n = layout_nregs(L);
            LLVMValueRef *c = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
            for (int j = 0; j < n; j++)
                c[j] = cg_convert(cg, r[j], (DType)t->dtype, to);
            r = c;
        }
        cg_smem_write(cg, sv, to, L, r);
        out[i] = sv;
    }
    cg->tg->barrier(cg);
    if (cg->report)
        sb_printf(cg->report, "  dot at %d:%d: %s%s%s staged in shared memory%s for %s\n", op->loc.line, op->loc.col,
                  stage[0] ? "A" : "", stage[0] && stage[1] ? " and " : "", stage[1] ? "B" : "",
                  (DType)ir_type(f, op->args[0])->dtype != to ? " as f16" : "", what);
    return out;
}

static int operands(Cg *cg, Mma *mm)
{
    const TileVal *a = &cg->vals[mm->op->args[0]], *b = &cg->vals[mm->op->args[1]];
    mm->av = a->kind == TV_SMEM ? a->sv : NULL;
    mm->bv = b->kind == TV_SMEM ? b->sv : NULL;
    bool f8 = is_f8(mm->dt);
    mm->a8 = (f8 && mm->av) || mm->s8 || mm->tf32;   /* i8, f32: always read per element (staged first) */
    mm->b8 = (f8 && mm->bv) || mm->s8 || mm->tf32;
    if (!f8 && !mm->s8 && !mm->tf32 && !mm->av && a->kind == TV_REGS && is_a_layout(mm, a->L)) {
        mm->aregs = a->r;
        mm->aL = a->L;
    }
    bool st[2] = { !mm->av && !mm->aregs, !mm->bv };
    if (st[0] || st[1]) {
        const SmemView **sv = cg_dot_stage(cg, mm->op, st, f8 ? DT_F16 : mm->dt,
                                           mm->s8 || mm->tf32 ? "the fragments' loads" : "ldmatrix");
        if (st[0])
            mm->av = sv[0];
        if (st[1])
            mm->bv = sv[1];
    }
    return 0;
}

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

static void lane_terms(Cg *cg, Mma *mm)
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
static void frag_k(Cg *cg, FragAddr *fa, LLVMValueRef kv)
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

static void frag_addrs(Cg *cg, Mma *mm)
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

typedef struct Frags { LLVMValueRef *a, *b; } Frags;   /* a: tm x 4, b: tn/2 x 4 */

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

static Frags load_frags(Cg *cg, Mma *mm, int kk, LLVMValueRef dep)
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

static void mma_rows(Cg *cg, const Mma *mm, const Frags *fr, LLVMValueRef *acc, int i0, int i1)
{
    for (int i = i0; i < i1; i++)
        for (int j = 0; j < mm->tn; j++) {
            LLVMValueRef c[4], d[4];
            int reg[4];
            for (int q = 0; q < 4; q++) {
                reg[q] = layout_mma_acc_reg(mm->L, i, j, q);
                c[q] = acc[reg[q]];
            }
            if (mm->s8)
                cg->tg->mma_16832_s8(cg, &fr->a[4 * i], &fr->b[4 * (j / 2) + 2 * (j % 2)], c, d);
            else if (mm->tf32)
                cg->tg->mma_1688_tf32(cg, &fr->a[4 * i], &fr->b[4 * (j / 2) + 2 * (j % 2)], c, d);
            else
                cg->tg->mma_16816(cg, mm->f16, &fr->a[4 * i], &fr->b[4 * (j / 2) + 2 * (j % 2)], c, d);
            for (int q = 0; q < 4; q++)
                acc[reg[q]] = d[q];
        }
}

static void mma_step(Cg *cg, const Mma *mm, const Frags *fr, LLVMValueRef *acc)
{
    mma_rows(cg, mm, fr, acc, 0, mm->tm);
}

/* ---- rolled k loop ----
 * A product whose operands both come from shared memory runs its K/16
 * steps as a loop (steps 0 .. K/16 - 2 load step k + 1's fragments and
 * issue step k's products; the last step's products follow the loop)
 * instead of K/16 unrolled copies: the accumulators and the current
 * fragments are loop-carried. LLVM and the NVPTX backend then see one
 * step's instructions (attention's q @ k^T: 32 mma.sync instead of 128
 * at D = 128), which is where most of the compile time goes; ptxas
 * unrolls the constant-trip loop again (the SASS of the attention tile
 * has the same 256 HMMA and instruction mix, within 3 instructions, as
 * the unrolled form: cuobjdump on the H200, 2026-11-30). Done for
 * products in kernels whose products feed products (attention), where it
 * measured the same speed as the unrolled steps on the H200 (sm_86 PTX,
 * 2026-11-30: every row within -2%/+3%, mean -0.2%) for 8% fewer
 * instructions executed by the compiler; a lone product (GEMM) keeps the
 * unrolled steps, whose ldmatrix order step_base fixes: rolled, gemm
 * measured 367.5 / 351.9 TFLOP/s against 384.8 / 366.9 unrolled. */

static LLVMValueRef *phis(Cg *cg, LLVMValueRef *v, int n, LLVMBasicBlockRef from, const char *name)
{
    LLVMValueRef *p = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int i = 0; i < n; i++) {
        p[i] = LLVMBuildPhi(cg->b, LLVMTypeOf(v[i]), name);
        LLVMAddIncoming(p[i], &v[i], &from, 1);
    }
    return p;
}

static void close_phis(LLVMValueRef *p, LLVMValueRef *v, int n, LLVMBasicBlockRef from)
{
    for (int i = 0; i < n; i++)
        LLVMAddIncoming(p[i], &v[i], &from, 1);
}

static void dot_rolled(Cg *cg, Mma *mm, LLVMValueRef *acc, int nacc, int nk)
{
    lane_terms(cg, mm);
    frag_addrs(cg, mm);
    Frags cur = load_frags(cg, mm, 0, NULL);
    int na = 4 * mm->tm, nb = 2 * mm->tn;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b), head = cg_new_block(cg, "kstep"),
                      done = cg_new_block(cg, "kdone");
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    LLVMValueRef zero = cg_i32(cg, 0);
    LLVMValueRef kv = phis(cg, &zero, 1, pre, "k")[0];
    LLVMValueRef *ap = phis(cg, acc, nacc, pre, "acc");
    Frags fp = { phis(cg, cur.a, na, pre, "fa"), phis(cg, cur.b, nb, pre, "fb") };
    LLVMValueRef k1 = LLVMBuildAdd(cg->b, kv, cg_i32(cg, 1), "");
    frag_k(cg, &mm->fa, k1);
    frag_k(cg, &mm->fb, k1);
    Frags next = load_frags(cg, mm, 0, NULL);
    mm->fa.kv = mm->fb.kv = mm->fa.kbase = mm->fb.kbase = mm->fa.Tk = mm->fb.Tk = NULL;
    memcpy(acc, ap, sizeof(LLVMValueRef) * (size_t)nacc);
    mma_step(cg, mm, &fp, acc);
    LLVMValueRef more = LLVMBuildICmp(cg->b, LLVMIntULT, k1, cg_i32(cg, nk - 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMBuildCondBr(cg->b, more, head, done);
    close_phis(&kv, &k1, 1, latch);
    close_phis(ap, acc, nacc, latch);
    close_phis(fp.a, next.a, na, latch);
    close_phis(fp.b, next.b, nb, latch);
    LLVMPositionBuilderAtEnd(cg->b, done);
    mma_step(cg, mm, &next, acc);
}

/* ---- DOT ---- */

static int check_dot(Cg *cg, Op *op, Mma *mm)
{
    Func *f = cg->f;
    const Type *at = ir_type(f, op->args[0]), *bt = ir_type(f, op->args[1]), *ct = ir_type(f, op->res[0]);
    DType dt = (DType)at->dtype;
    bool s8 = dt == DT_I8 && ct->dtype == DT_I32, tf32 = dt == DT_F32 && op->iattr[0] == MMA_SYNC;
    if ((dt != DT_BF16 && dt != DT_F16 && !is_f8(dt) && !s8 && !tf32) || bt->dtype != dt ||
        (ct->dtype != DT_F32 && !s8)) {
        diag_error(cg->d, op->loc, "matrix product '@' of %s tiles runs on the FMA units (mma = simt), not on "
                   "mma.sync (bf16, f16 and f8 operands with f32 accumulation, i8 with i32)", dtype_name(dt));
        return 1;
    }
    mm->m = at->shape[0];
    mm->k = at->shape[1];
    mm->n = bt->shape[1];
    mm->kstep = s8 ? 32 : tf32 ? 8 : 16;
    if (mm->m % 16 || mm->n % 16 || mm->k % mm->kstep || (mm->k % 16 && !tf32)) {
        diag_error(cg->d, op->loc, "matrix product [%lld x %lld] @ [%lld x %lld]: the tensor-core path needs "
                   "every extent to be a multiple of 16 (K of %d)", (long long)mm->m, (long long)mm->k,
                   (long long)mm->k, (long long)mm->n, mm->kstep);
        return 1;
    }
    mm->op = op;
    mm->dt = dt;
    mm->s8 = s8;
    mm->tf32 = tf32;
    mm->f16 = dt == DT_F16 || is_f8(dt);
    return 0;
}

int cg_lower_dot(Cg *cg, Op *op)
{
    const Type *at = ir_type(cg->f, op->args[0]), *bt = ir_type(cg->f, op->args[1]);
    if (op->iattr[0] == MMA_SIMT || (op->iattr[0] == MMA_NONE && ir_mma_sync_problem(at, bt)))
        return cg_lower_dot_simt(cg, op);
    Mma mm;
    memset(&mm, 0, sizeof mm);
    if (check_dot(cg, op, &mm))
        return 1;
    cg_chain_turn(cg, op, false);
    mm.L = cg_layout_dup(cg, acc_layout(cg, mm.m, mm.n, &mm.wm, &mm.wn));
    mm.tm = (int)(mm.m / (16 * mm.wm));
    mm.tn = (int)(mm.n / (8 * mm.wn));
    const Type *ct = ir_type(cg->f, op->args[2]);
    LLVMValueRef *c = cg_materialize(cg, &cg->vals[op->args[2]], ct, mm.L, op->loc);
    int n = layout_nregs(mm.L);
    LLVMValueRef *acc = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    memcpy(acc, c, sizeof(LLVMValueRef) * (size_t)n);
    if (operands(cg, &mm))
        return 1;
    int nk = (int)(mm.k / mm.kstep);
    Frags cur;
    bool roll = !mm.aregs && !mm.a8 && !mm.b8 && nk >= 3 && cg->mma_rows_only;
    if (roll) {
        dot_rolled(cg, &mm, acc, n, nk);
        nk = 0;
    } else {
        lane_terms(cg, &mm);
        frag_addrs(cg, &mm);
        cur = load_frags(cg, &mm, 0, NULL);
    }
    /* Cg.pv_rows: a product with A from registers (attention's p @ v)
     * issues its mma.sync row tile by row tile (every k step and column
     * tile of rows 0-15, then rows 16-31, ...), each step's B fragments
     * loaded once in k order during the first row tile and reused: a row
     * tile's products wait only for its own P registers. */
    bool rows_outer = mm.aregs && cg->f->sched.pv_rows;
    if (rows_outer) {
        Frags *all = arena_alloc(cg->a, sizeof(Frags) * (size_t)nk);
        for (int i = 0; i < mm.tm; i++)
            for (int kk = 0; kk < nk; kk++) {
                if (i == 0)
                    all[kk] = kk == 0 ? cur : load_frags(cg, &mm, kk, NULL);
                mma_rows(cg, &mm, &all[kk], acc, i, i + 1);
            }
        nk = 0;
    }
    for (int kk = 0; kk < nk; kk++) {
        LLVMValueRef dep = kk > 0 ? acc[layout_mma_acc_reg(mm.L, mm.tm - 1, mm.tn - 1, 3)] : NULL;
        Frags next = cur;
        if (kk + 1 < nk)
            next = load_frags(cg, &mm, kk + 1, dep);
        mma_step(cg, &mm, &cur, acc);
        cur = next;
    }
    cg_chain_turn(cg, op, true);
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = mm.L, .r = acc };
    if (cg->report) {
        sb_printf(cg->report,
                  "  dot at %d:%d: mma.sync m16n8k%d %s%s%s, %lldx%lldx%lld, warps %dx%d (warp tile %lldx%lld), ",
                  op->loc.line, op->loc.col, mm.kstep, mm.s8 ? "s8" : mm.tf32 ? "tf32" : mm.f16 ? "f16" : "bf16",
                  is_f8(mm.dt) ? " from " : "",
                  is_f8(mm.dt) ? dtype_name(mm.dt) : "", (long long)mm.m, (long long)mm.n,
                  (long long)mm.k, mm.wm, mm.wn, (long long)(mm.m / mm.wm), (long long)(mm.n / mm.wn));
        sb_printf(cg->report, "A %s, B %s, %d k steps%s\n",
                  mm.a8 ? (mm.s8 ? "i8 loads" : mm.tf32 ? "f32 loads rounded to tf32" : "f8 loads converted to f16")
                  : mm.aregs ? "from registers (accumulator layout)" : mm.av->trans ? "ldmatrix.trans" : "ldmatrix",
                  mm.b8 ? (mm.s8 ? "i8 loads" : mm.tf32 ? "f32 loads rounded to tf32" : "f8 loads converted to f16")
                  : mm.bv->trans ? "ldmatrix" : "ldmatrix.trans",
                  (int)(mm.k / mm.kstep),
                  roll ? " in a loop" : rows_outer ? " unrolled, row tiles outermost" : " unrolled");
    }
    return 0;
}

int cg_lower_trans_view(Cg *cg, Op *op)
{
    const TileVal *v = &cg->vals[op->args[0]];
    SmemView *sv = arena_alloc(cg->a, sizeof *sv);
    *sv = *v->sv;
    sv->trans = !sv->trans;
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_SMEM, .sv = sv };
    return 0;
}

/* Is every shared buffer dead from `op` on: op in the function's top-level
 * block, every async copy before it retired by an `async_wait 0` (also at
 * top level, after the last copy), and no op after it that allocates,
 * copies into, reads or writes a buffer, multiplies (a product may read a
 * buffer in place) or uses a shared view made before it? Then a layout
 * conversion at op may use the buffers' space as its scratch (its first
 * barrier orders it after every read). */
static bool buffers_dead_at(Cg *cg, const Op *op)
{
    const Block *b = &cg->f->body;
    int at = -1;
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i] == op)
            at = i;
    if (at < 0)
        return false;
    bool waited = true;
    for (int i = 0; i < at; i++) {
        const Op *o = b->ops[i];
        if (o->code == OP_ASYNC_COPY || o->nregions > 0)
            waited = false;   /* a loop or if may hold copies: wait 0 after it */
        if (o->code == OP_ASYNC_WAIT)
            waited = o->iattr[0] == 0;
    }
    if (!waited)
        return false;
    for (int i = at + 1; i < b->nops; i++) {
        const Op *o = b->ops[i];
        if (o->nregions > 0 || o->code == OP_SMEM_ALLOC || o->code == OP_ASYNC_COPY || o->code == OP_SMEM_LOAD ||
            o->code == OP_SMEM_STORE || o->code == OP_DOT)
            return false;
        for (int k = 0; k < o->nargs; k++)   /* a view read in place later (a shared tile used after) */
            if (cg->vals[o->args[k]].kind == TV_SMEM)
                return false;
    }
    return true;
}

/* Does each warp of L hold one run of rows, warp w the w-th (warps only
 * along dim 0, one repeat)? Then rows [g * M / 2, (g + 1) * M / 2) belong
 * to warp group g. */
static bool rows_by_warp(const Layout *L, int nwarps)
{
    return L->prank == 2 && !L->slice && L->wpc[0] == nwarps && L->wpc[1] == 1 &&
           (int64_t)layout_espt(L, 0) * L->tpw[0] * layout_rpt(L, 0) * L->wpc[0] == L->pshape[0];
}

/* After decoupled turns (Cg.groups_apart) each warp group stages and
 * stores its own rows of a product's tile: the coalesced layout L is made
 * warp-major (each thread's rows one run, spt along dim 0 instead of
 * repeats: a warp still writes two 256-byte row pieces per instruction),
 * so that every row is written and read by one group's warps and the
 * conversion meets per group. The scratch lies over the dead buffers from
 * offset 0, group 0's rows first: they must miss the second product's
 * buffer, which group 1 still reads when group 0 gets there
 * (cg_chain_group_barrier); group 1 comes last. The whole scratch must fit
 * in the buffers' space. Not over the buffers (over false: the groups
 * stay apart across the trips of a loop over tiles, whose next copies fill
 * them), the scratch is its own after them, up to the arch's limit. *need
 * gets its size. */
static bool group_rows(Cg *cg, const TileVal *v, Layout *L, DType dt, int64_t *need, bool over)
{
    if (!cg->groups_apart || cg->nsplit != 1 || !rows_by_warp(v->L, cg->nwarps))
        return false;
    Layout W = *L;
    int64_t per = (int64_t)L->tpw[0] * L->wpc[0];
    if (L->pshape[0] % per)
        return false;
    W.spt[0] = (int)(L->pshape[0] / per);
    W.rpt[0] = 1;
    if (!rows_by_warp(&W, cg->nwarps) || layout_nregs(&W) != layout_nregs(L))
        return false;
    if (!over) {   /* a scratch of its own after the buffers (groups apart across a loop's trips) */
        int64_t bytes = cg_convert_scratch_bytes(&W, dt, NULL);
        if (cg->dsmem_base + bytes > pass_smem_limit(cg->ti, cg->smem_per_block))
            return false;
        *L = W;
        *need = bytes;
        return true;
    }
    const Op *alloc = ir_val(cg->f, cg->split[0].buf[1])->def;
    if (!alloc || alloc->code != OP_SMEM_ALLOC)
        return false;
    const Type *bt = ir_type(cg->f, cg->split[0].buf[1]);
    int64_t lo = alloc->iattr[1], hi = lo + type_numel(bt) * (dtype_bits((DType)bt->dtype) / 8);
    int64_t bytes = cg_convert_scratch_bytes(&W, dt, NULL);
    if (bytes > cg->dsmem_base || (lo < bytes / 2 && hi > 0))
        return false;
    *L = W;
    *need = bytes;
    return true;
}

void cg_mma_prepare_store(Cg *cg, Op *op)
{
    ValId vv = op->args[op->nargs - 1];
    TileVal *v = &cg->vals[vv];
    const Type *t = ir_type(cg->f, vv);
    if (v->kind != TV_REGS || !layout_is_mma(v->L) || t->rank != 2 || op->nlist < 1 || op->list[op->nlist - 1] <= 0) {
        if (t->space == SP_SHARED && cg->report)
            sb_printf(cg->report, "  store at %d:%d: the tile declared shared stays in registers (only a 2-D "
                      "product's fragments are staged; this layout stores its rows directly)\n",
                      op->loc.line, op->loc.col);
        return;
    }
    const Layout *L = cg_default_layout(cg, t, true);
    int eb = dtype_bits((DType)t->dtype) / 8;
    /* A tile declared `shared` (`tile o: shared bf16[BM, D] = ...; O[..] =
     * o;`) asks for this staging: its fragments go through shared memory
     * and leave as 16-byte rows. The dead pipeline buffers' space holds it
     * when every buffer is dead at the store; otherwise a scratch after
     * them, up to the arch's limit. For every other store it is the
     * compiler's choice: fragments stored directly unless the conversion
     * is cheap in shared memory. The dead-buffer form measured +3% to
     * +3.8% on attention at 1k tokens and -1.8% to -5.7% on D=128 causal
     * at 2k-16k on the H200 (2026-11-30 16:22), gemm within the spread,
     * for 14-21% more compile time (docs/codegen.md, "Epilogue"), so the
     * compiler does not pick it by itself and tilec.attention asks for it
     * on short rows only (examples/attention.tile's STAGE_O). */
    bool asked = t->space == SP_SHARED;
    bool over = cg->dsmem && asked && buffers_dead_at(cg, op);
    /* Chained products make the accumulator layout the tile's default
     * (cg_chain_anchors): the coalesced rows are then the plain blocked
     * layout, taken when the conversion costs no shared memory. */
    if ((over || asked) && layout_vec(L) <= layout_vec(v->L))
        L = cg_layout_dup(cg, layout_blocked(t->rank, t->shape, eb ? eb : 1, true, cg->nwarps));
    if (layout_vec(L) <= layout_vec(v->L)) {
        if (asked && cg->report)
            sb_printf(cg->report, "  store at %d:%d: the tile declared shared stays in registers (its fragments "
                      "already hold whole 16-byte rows)\n", op->loc.line, op->loc.col);
        return;
    }
    int64_t need = cg_convert_scratch_bytes(L, (DType)t->dtype, NULL);
    over = over && cg->dsmem_base >= need;
    /* Growing a pipelined kernel's shared memory by more than a quarter for
     * the epilogue costs blocks per SM: gemm 128x128x64 on sm_90a, 96 KB of
     * buffers + 33 KB of scratch -> one block per SM, 306 TFLOP/s against
     * 375 with the fragment stores (H200). When every buffer is dead at the
     * store (the epilogue after the pipelined loop), the conversion uses
     * their space instead and the kernel's shared memory does not grow. A
     * tile declared shared may grow it up to the arch's limit. */
    int64_t limit = pass_smem_limit(cg->ti, cg->smem_per_block);
    bool fits = cg->dsmem_base + need <= limit;
    if (!over && cg->dsmem && (!fits || (!asked && cg->dsmem_base > 0 && need > cg->dsmem_base / 4))) {
        if (asked && cg->report)
            sb_printf(cg->report, "  store at %d:%d: the tile declared shared stays in registers (fragment "
                      "stores): %lld bytes of scratch after %lld bytes of buffers exceed the %lld-byte limit\n",
                      op->loc.line, op->loc.col, (long long)need, (long long)cg->dsmem_base,
                      (long long)limit);
        return;
    }
    Layout W = *L;
    bool grouped = (over || cg->groups_apart) && group_rows(cg, v, &W, (DType)t->dtype, &need, over);
    if (grouped)
        L = cg_layout_dup(cg, W);
    cg->scratch_over_buffers = over;
    cg->xfer_groups = grouped;
    if (over) {
        /* The epilogue's thread coordinates from a fresh tid, not merged
         * with the prologue's and kept live across the loop: attention
         * D=128 causal 32 -> 8 B of spills (sm_90), 459M -> 403M
         * instructions to compile on sm_86 D=128. */
        cg_thread_ids(cg, cg_opaque_tid(cg));
    }
    v->r = cg_convert_layout(cg, v->r, v->L, L, (DType)t->dtype, NULL);
    cg->scratch_over_buffers = false;
    cg->xfer_groups = false;
    v->L = L;
    if (!over && asked && cg->report)
        sb_printf(cg->report, "  store at %d:%d: the tile declared shared goes out as 16-byte rows through %lld "
                  "bytes of shared memory after the buffers%s\n", op->loc.line, op->loc.col, (long long)need,
                  grouped ? "; each warp group its own rows, behind its own barrier" : "");
    if (over && cg->report)
        sb_printf(cg->report, "  store at %d:%d: converted to 16-byte rows through the dead buffers' shared memory "
                  "(%lld bytes at offset 0, no growth)%s\n", op->loc.line, op->loc.col, (long long)need,
                  grouped ? "; each warp group its own rows, behind its own barrier" : "");
}
