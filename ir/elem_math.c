/* elem_math.c - what the elementwise ops compute on one element, shared by
 * the interpreter (the reference semantics, docs/language.md section 8) and
 * constant folding (passes/canonicalize.c), so that the two never differ.
 *
 * Floats are computed in double precision; the caller rounds the result to
 * the dtype (tc_round_to). Integers are held sign-extended in an int64
 * (u64 as its bit pattern) and wrapped to the dtype here.
 */
#include "ir.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

int64_t tc_wrap_int(DType dt, uint64_t u)
{
    if (dt == DT_BOOL)
        return u != 0;
    int bits = dtype_bits(dt);
    if (bits < 64) {
        uint64_t m = (UINT64_C(1) << bits) - 1;
        u &= m;
        if (dtype_is_signed(dt) && (u >> (bits - 1)) & 1)
            u |= ~m;
    }
    int64_t r;
    memcpy(&r, &u, sizeof r);
    return r;
}

bool tc_float_unary(OpCode c, double x, double *r)
{
    switch (c) {
    case OP_NEG: *r = -x; return true;
    case OP_ABS: *r = fabs(x); return true;
    case OP_EXP: *r = exp(x); return true;
    case OP_EXP2: *r = exp2(x); return true;
    case OP_LOG: *r = log(x); return true;
    case OP_LOG2: *r = log2(x); return true;
    case OP_SQRT: *r = sqrt(x); return true;
    case OP_RSQRT: *r = 1.0 / sqrt(x); return true;
    case OP_TANH: *r = tanh(x); return true;
    case OP_ERF: *r = erf(x); return true;
    case OP_SIGMOID: *r = 1.0 / (1.0 + exp(-x)); return true;
    case OP_SIN: *r = sin(x); return true;
    case OP_COS: *r = cos(x); return true;
    case OP_FLOOR: *r = floor(x); return true;
    case OP_CEIL: *r = ceil(x); return true;
    case OP_ROUND: *r = nearbyint(x); return true;   /* the default mode: ties to even */
    default: return false;
    }
}

bool tc_float_binary(OpCode c, double a, double b, double *r)
{
    switch (c) {
    case OP_ADD: *r = a + b; return true;
    case OP_SUB: *r = a - b; return true;
    case OP_MUL: *r = a * b; return true;
    case OP_DIV: *r = a / b; return true;
    case OP_REM: *r = fmod(a, b); return true;
    case OP_MIN: *r = fmin(a, b); return true;
    case OP_MAX: *r = fmax(a, b); return true;
    case OP_POW: *r = pow(a, b); return true;
    default: return false;
    }
}

/* The count is read as an unsigned number of the dtype's width; at or
 * above the width, `<<` and `>>` of an unsigned value give 0 and `>>` of a
 * signed one its sign (0 or -1), as PTX's clamped shifts do. */
int64_t tc_int_shift(OpCode c, DType dt, int64_t a, int64_t b)
{
    int bits = dtype_bits(dt);
    uint64_t n = (uint64_t)b & (bits < 64 ? (UINT64_C(1) << bits) - 1 : UINT64_MAX);
    uint64_t ua = (uint64_t)a;
    if (c == OP_SHL)
        return n >= (uint64_t)bits ? 0 : tc_wrap_int(dt, ua << n);
    if (dtype_is_signed(dt))   /* a is sign-extended: shifting the int64 is exact */
        return a >> (n >= (uint64_t)bits ? 63 : n);
    return n >= (uint64_t)bits ? 0 : (int64_t)(ua >> n);   /* unsigned below 64 bits: a >= 0 */
}

/* The code generator's sequence, one f32 operation per line:
 *   xc = min.NaN(max.NaN(x, -126), 128)
 *   t  = add.rm(xc, 1.5 * 2^23)     1.5 * 2^23 + floor(xc): floor(xc) in t's low bits
 *   fl = t - 1.5 * 2^23            floor(xc), exact
 *   f  = xc - fl                   in [0, 1), exact
 *   p  = fma(fma(fma(C3, f, C2), f, C1), f, 1)
 *   r  = bits(p) + (bits(t) << 23)  (bits(t) << 23 is floor(xc) << 23 modulo 2^32)
 *   x < -126 or NaN ? f : r         (f is +0 there, or NaN) */
float tc_exp2_emu(float x)
{
    const float magic = 12582912.0f;
    float xc = isnan(x) ? x : fminf(fmaxf(x, -126.0f), 128.0f);
    float t = isnan(xc) ? xc : magic + floorf(xc);   /* add.rm: the sum's f32 neighbour below is exact */
    float fl = t - magic;
    float f = xc - fl;
    float p = fmaf(fmaf(fmaf(TC_EXP2_EMU_C3, f, TC_EXP2_EMU_C2), f, TC_EXP2_EMU_C1), f, 1.0f);
    uint32_t pb, tb;
    memcpy(&pb, &p, sizeof pb);
    memcpy(&tb, &t, sizeof tb);
    uint32_t rb = pb + (tb << 23);
    float r;
    memcpy(&r, &rb, sizeof r);
    return isnan(x) || x < -126.0f ? f : r;
}
