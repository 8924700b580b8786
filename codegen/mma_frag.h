/* mma_frag.h - the state of one mma.sync product that lower_mma.c (the
 * product) and mma_frag.c (its fragments) share. Internal to codegen/;
 * only these two files include it.
 */
#ifndef TILEC_MMA_FRAG_H
#define TILEC_MMA_FRAG_H

#include "cg_internal.h"

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

typedef struct Frags { LLVMValueRef *a, *b; } Frags;   /* a: tm x 4, b: tn/2 x 4 */

/* The lane and warp terms of the fragments' addresses (mm->l15 .. mm->wcol;
 * mm->g and mm->t2 for the element loads). */
void cg_mma_lane_terms(Cg *cg, Mma *mm);
/* The ldmatrix addresses of A (shared) and B: mm->fa, mm->fb. */
void cg_mma_frag_addrs(Cg *cg, Mma *mm);
/* A and B fragments of k step kk; with dep (an accumulator of the step
 * before), loaded after the products that computed it (step_base). */
Frags cg_mma_load_frags(Cg *cg, Mma *mm, int kk, LLVMValueRef dep);
/* Rolled k loop: fa's fragments at the run-time k step kv. */
void cg_mma_frag_k(Cg *cg, FragAddr *fa, LLVMValueRef kv);

#endif
