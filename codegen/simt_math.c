/* simt_math.c - the float math ops on one f32 element: which hardware
 * approximation (the target's MUFU hooks: ex2, lg2, rsqrt, tanh, sin, cos)
 * or which formula over them each op lowers to, and so its accuracy, which
 * docs/language.md ("Accuracy of the math ops") states per op. f16, bf16
 * and f64 operands are converted to f32 and back by the caller
 * (lower_simt.c), except where that file computes in f64 exactly (sqrt,
 * floor, ceil, round). The interpreter (ir/elem_math.c) is the reference.
 * Also the rounds of Philox4x32-10 (ir/philox.h) for the PHILOX op.
 */
#include "cg_internal.h"
#include "../ir/philox.h"

static LLVMValueRef fconst(Cg *cg, double v) { return LLVMConstReal(cg->t_f32, v); }

static LLVMValueRef fmul(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(cg->b, a, b, ""); }
static LLVMValueRef fadd(Cg *cg, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(cg->b, a, b, ""); }

/* c[0] + x (c[1] + x (c[2] + ...)), n coefficients. */
static LLVMValueRef horner(Cg *cg, LLVMValueRef x, const double *c, int n)
{
    LLVMValueRef r = fconst(cg, c[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        r = fadd(cg, fmul(cg, r, x), fconst(cg, c[i]));
    return r;
}

/* e^x as 2^(x log2 e) on the MUFU. */
static LLVMValueRef exp_f32(Cg *cg, LLVMValueRef x)
{
    return cg->tg->exp2_f32(cg, fmul(cg, x, fconst(cg, 1.4426950408889634)));
}

/* 1 / x with the `afn` flag: rcp.approx.f32 (at most 1 ulp off). */
static LLVMValueRef recip(Cg *cg, LLVMValueRef x) { return cg_approx(LLVMBuildFDiv(cg->b, fconst(cg, 1.0), x, "")); }

/* erf: for |x| < 0.5 the odd Taylor series to x^13 (truncation below 2^-28
 * relative there); else 1 - t P(t) e^(-x^2), t = 1 / (1 + 0.3275911 |x|)
 * (Abramowitz & Stegun 7.1.26, absolute error below 1.5e-7), with x's sign. */
static LLVMValueRef erf_f32(Cg *cg, LLVMValueRef x)
{
    static const double taylor[7] = { 1.1283791670955126, -0.37612638903183754, 0.11283791670955126,
                                      -0.026866170645131252, 0.005223977625442188, -0.0008548327023450852,
                                      0.00012055332981789664 };
    static const double as[6] = { 0.0, 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429 };
    LLVMBuilderRef b = cg->b;
    LLVMValueRef x2 = fmul(cg, x, x);
    LLVMValueRef small = fmul(cg, x, horner(cg, x2, taylor, 7));
    LLVMValueRef ax = cg_call1(cg, "llvm.fabs.f32", cg->t_f32, x);
    LLVMValueRef t = recip(cg, fadd(cg, fconst(cg, 1.0), fmul(cg, ax, fconst(cg, 0.3275911))));
    LLVMValueRef tail = fmul(cg, horner(cg, t, as, 6), exp_f32(cg, LLVMBuildFNeg(b, x2, "")));
    LLVMValueRef big = LLVMBuildFSub(b, fconst(cg, 1.0), tail, "");
    LLVMValueRef sargs[2] = { big, x };
    big = cg_call(cg, "llvm.copysign.f32", cg->t_f32, sargs, 2);
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, ax, fconst(cg, 0.5), ""), small, big, "");
}

/* 1 / (1 + e^-x): 0 below x = -87 (where 1 + e^-x passes 2^126). */
static LLVMValueRef sigmoid_f32(Cg *cg, LLVMValueRef x)
{
    return recip(cg, fadd(cg, fconst(cg, 1.0), exp_f32(cg, LLVMBuildFNeg(cg->b, x, ""))));
}

/* 2^x on the FMA and integer units, no MUFU (the exp2 op's {emu = K}
 * elements): the sequence of ir/elem_math.c tc_exp2_emu, operation for
 * operation (its comment lists them), so that the interpreter gives the
 * same bits. max.NaN / min.NaN clamp to [-126, 128] keeping NaN; add.rm
 * with 1.5 * 2^23 leaves floor(x) in the low bits of its result (FA4's
 * Cody-Waite split); the polynomial is three fma; 2^n goes into the
 * exponent by an integer shift and add. */
LLVMValueRef cg_exp2_emu_f32(Cg *cg, LLVMValueRef x)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef magic = fconst(cg, 12582912.0);
    LLVMValueRef lo[2] = { x, fconst(cg, -126.0) };
    LLVMValueRef xc = cg_call(cg, "llvm.maximum.f32", cg->t_f32, lo, 2);
    LLVMValueRef hi[2] = { xc, fconst(cg, 128.0) };
    xc = cg_call(cg, "llvm.minimum.f32", cg->t_f32, hi, 2);
    LLVMValueRef add[2] = { xc, magic };
    LLVMValueRef t = cg_call(cg, "llvm.nvvm.add.rm.f", cg->t_f32, add, 2);
    LLVMValueRef f = LLVMBuildFSub(b, xc, LLVMBuildFSub(b, t, magic, ""), "");
    static const float c[3] = { TC_EXP2_EMU_C1, TC_EXP2_EMU_C2, TC_EXP2_EMU_C3 };
    LLVMValueRef p = fconst(cg, c[2]);
    for (int i = 1; i >= -1; i--) {
        LLVMValueRef a[3] = { p, f, fconst(cg, i >= 0 ? c[i] : 1.0f) };
        p = cg_call(cg, "llvm.fma.f32", cg->t_f32, a, 3);
    }
    LLVMValueRef n = LLVMBuildShl(b, LLVMBuildBitCast(b, t, cg->t_i32, ""), LLVMConstInt(cg->t_i32, 23, 0), "");
    LLVMValueRef r = LLVMBuildBitCast(b, LLVMBuildAdd(b, LLVMBuildBitCast(b, p, cg->t_i32, ""), n, ""), cg->t_f32, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealULT, x, fconst(cg, -126.0), ""), f, r, "");
}

LLVMValueRef cg_math_f32(Cg *cg, OpCode code, LLVMValueRef x)
{
    const Target *tg = cg->tg;
    switch (code) {
    case OP_EXP2: return tg->exp2_f32(cg, x);
    case OP_EXP: return exp_f32(cg, x);
    case OP_LOG2: return tg->log2_f32(cg, x);
    case OP_LOG: return fmul(cg, tg->log2_f32(cg, x), fconst(cg, 0.6931471805599453));
    case OP_SQRT: return cg_call1(cg, "llvm.sqrt.f32", cg->t_f32, x);
    case OP_RSQRT: return tg->rsqrt_f32(cg, x);
    case OP_TANH: return tg->tanh_f32(cg, x);
    case OP_SIN: return tg->sin_f32(cg, x);
    case OP_COS: return tg->cos_f32(cg, x);
    case OP_ERF: return erf_f32(cg, x);
    case OP_SIGMOID: return sigmoid_f32(cg, x);
    case OP_FLOOR: return cg_call1(cg, "llvm.floor.f32", cg->t_f32, x);
    case OP_CEIL: return cg_call1(cg, "llvm.ceil.f32", cg->t_f32, x);
    case OP_ROUND: return cg_call1(cg, "llvm.roundeven.f32", cg->t_f32, x);
    default: return x;
    }
}

/* x^y = 2^(y log2|x|) on the MUFU, with C's special cases: |x| = 1 gives
 * magnitude 1, a finite negative x needs an integer y (else NaN), a
 * negative x or -0 takes the sign when y is an odd integer, y = 0 gives 1. */
LLVMValueRef cg_pow_f32(Cg *cg, LLVMValueRef x, LLVMValueRef y)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef one = fconst(cg, 1.0);
    LLVMValueRef ax = cg_call1(cg, "llvm.fabs.f32", cg->t_f32, x);
    LLVMValueRef r = cg->tg->exp2_f32(cg, fmul(cg, y, cg->tg->log2_f32(cg, ax)));
    r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, ax, one, ""), one, r, "");
    LLVMValueRef half = fmul(cg, y, fconst(cg, 0.5));
    LLVMValueRef yint = LLVMBuildFCmp(b, LLVMRealOEQ, cg_call1(cg, "llvm.floor.f32", cg->t_f32, y), y, "");
    LLVMValueRef yodd = LLVMBuildAnd(b, yint, LLVMBuildFCmp(b, LLVMRealUNE,
                                     cg_call1(cg, "llvm.floor.f32", cg->t_f32, half), half, ""), "");
    /* the sign bit, not x < 0: pow(-0, -3) is -inf and pow(-0, 3) is -0, as in C */
    LLVMValueRef sign = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildBitCast(b, x, cg->t_i32, ""), cg_i32(cg, 0), "");
    r = LLVMBuildSelect(b, LLVMBuildAnd(b, sign, yodd, ""), LLVMBuildFNeg(b, r, ""), r, "");
    /* a finite negative x with a non-integer y: NaN (-inf gives +inf or +0, as C) */
    LLVMValueRef finneg = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealOLT, x, fconst(cg, 0.0), ""),
                                       LLVMBuildFCmp(b, LLVMRealOGT, x, fconst(cg, -__builtin_inf()), ""), "");
    LLVMValueRef bad = LLVMBuildAnd(b, finneg, LLVMBuildNot(b, yint, ""), "");
    r = LLVMBuildSelect(b, bad, fconst(cg, __builtin_nan("")), r, "");
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, y, fconst(cg, 0.0), ""), one, r, "");
}

/* hi and lo 32 bits of a * b (i32 values, unsigned): one mul.wide.u32. */
static void mul_wide(Cg *cg, uint32_t m, LLVMValueRef x, LLVMValueRef *hi, LLVMValueRef *lo)
{
    LLVMValueRef p = LLVMBuildMul(cg->b, LLVMConstInt(cg->t_i64, m, 0), LLVMBuildZExt(cg->b, x, cg->t_i64, ""), "");
    *hi = LLVMBuildTrunc(cg->b, LLVMBuildLShr(cg->b, p, LLVMConstInt(cg->t_i64, 32, 0), ""), cg->t_i32, "");
    *lo = LLVMBuildTrunc(cg->b, p, cg->t_i32, "");
}

LLVMValueRef cg_philox_word(Cg *cg, LLVMValueRef c0, LLVMValueRef c1, LLVMValueRef k0, LLVMValueRef k1,
                            LLVMValueRef w)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef c2 = cg_i32(cg, 0), c3 = cg_i32(cg, 0);
    for (int r = 0; r < TC_PHILOX_ROUNDS; r++) {
        LLVMValueRef hi0, lo0, hi1, lo1;
        mul_wide(cg, TC_PHILOX_M0, c0, &hi0, &lo0);
        mul_wide(cg, TC_PHILOX_M1, c2, &hi1, &lo1);
        c0 = LLVMBuildXor(b, LLVMBuildXor(b, hi1, c1, ""), k0, "");
        c1 = lo1;
        c2 = LLVMBuildXor(b, LLVMBuildXor(b, hi0, c3, ""), k1, "");
        c3 = lo0;
        k0 = LLVMBuildAdd(b, k0, LLVMConstInt(cg->t_i32, TC_PHILOX_W0, 0), "");
        k1 = LLVMBuildAdd(b, k1, LLVMConstInt(cg->t_i32, TC_PHILOX_W1, 0), "");
    }
    LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, w, cg_i32(cg, 2), ""), c2, c3, "");
    r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, w, cg_i32(cg, 1), ""), c1, r, "");
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, w, cg_i32(cg, 0), ""), c0, r, "");
}
