/* numeric.c - element-type arithmetic shared by the interpreter, constant
 * folding and the codegen tests: rounding a double to a dtype's precision,
 * and host storage of elements (bf16/f16 as uint16 bit patterns, fp8 as
 * uint8 bit patterns, everything else native).
 *
 * Float formats are described once (mantissa bits, exponent bits, bias,
 * overflow behaviour) and rounded with exact power-of-two scaling, so every
 * result is round-to-nearest-even of the exact input, including subnormals,
 * with no double rounding through f32.
 */
#include "ir.h"

#include <math.h>
#include <string.h>

/* A binary floating-point format narrower than double. */
typedef struct FloatFmt {
    int mbits;          /* explicit mantissa bits */
    int ebits;          /* exponent field bits */
    int bias;
    bool has_inf;       /* false: e4m3 (saturates to max finite, one NaN code) */
} FloatFmt;

static const FloatFmt fmt_f32 = { 23, 8, 127, true };
static const FloatFmt fmt_bf16 = { 7, 8, 127, true };
static const FloatFmt fmt_f16 = { 10, 5, 15, true };
static const FloatFmt fmt_e4m3 = { 3, 4, 7, false };
static const FloatFmt fmt_e5m2 = { 2, 5, 15, true };

static int fmt_emin(const FloatFmt *f) { return 1 - f->bias; }

/* Largest finite value: e4m3 (fn) reserves only the all-ones mantissa of the
 * top exponent for NaN, so its top binade is usable (max 448). */
static double fmt_max(const FloatFmt *f)
{
    int emax = (1 << f->ebits) - 1 - f->bias;
    if (f->has_inf)
        return ldexp(2.0 - ldexp(1.0, -f->mbits), emax - 1);
    return ldexp(2.0 - ldexp(1.0, 1 - f->mbits), emax);
}

/* Round x to the format, RNE; overflow gives inf, or max finite without inf. */
static double fmt_round(const FloatFmt *f, double x)
{
    if (isnan(x))
        return x;
    double max = fmt_max(f);
    if (isinf(x))
        return f->has_inf ? x : copysign(max, x);
    double a = fabs(x);
    if (a == 0.0)
        return x;
    int e;
    frexp(a, &e);               /* a = m * 2^e, m in [0.5, 1) */
    e -= 1;                     /* a in [2^e, 2^(e+1)) */
    if (e < fmt_emin(f))
        e = fmt_emin(f);        /* subnormal range: fixed quantum */
    double q = ldexp(1.0, e - f->mbits);
    double r = nearbyint(a / q) * q;   /* exact scaling; default mode is RNE */
    if (r > max)
        r = f->has_inf ? INFINITY : max;
    return copysign(r, x);
}

/* Bit pattern of a value already representable in the format. */
static uint32_t fmt_encode(const FloatFmt *f, double r)
{
    uint32_t sign = signbit(r) ? 1u << (f->mbits + f->ebits) : 0;
    uint32_t expmask = (1u << f->ebits) - 1;
    if (isnan(r))   /* quiet NaN; e4m3 has the single code S.1111.111 */
        return sign | (expmask << f->mbits) |
               (f->has_inf ? 1u << (f->mbits - 1) : (1u << f->mbits) - 1);
    if (isinf(r))
        return sign | (expmask << f->mbits);
    double a = fabs(r);
    if (a == 0.0)
        return sign;
    int e;
    frexp(a, &e);
    e -= 1;
    if (e < fmt_emin(f))   /* subnormal: exponent field 0 */
        return sign | (uint32_t)ldexp(a, f->bias - 1 + f->mbits);
    uint32_t mant = (uint32_t)ldexp(a / ldexp(1.0, e) - 1.0, f->mbits);
    return sign | (uint32_t)(e + f->bias) << f->mbits | mant;
}

static double fmt_decode(const FloatFmt *f, uint32_t bits)
{
    uint32_t mmask = (1u << f->mbits) - 1, expmask = (1u << f->ebits) - 1;
    uint32_t mant = bits & mmask, ex = (bits >> f->mbits) & expmask;
    bool neg = (bits >> (f->mbits + f->ebits)) & 1;
    double v;
    if (ex == expmask && f->has_inf)
        v = mant ? NAN : INFINITY;
    else if (ex == expmask && mant == mmask)   /* e4m3: S.1111.111 is NaN */
        v = NAN;
    else if (ex == 0)
        v = ldexp((double)mant, fmt_emin(f) - f->mbits);
    else
        v = ldexp(1.0 + ldexp((double)mant, -f->mbits), (int)ex - f->bias);
    return neg ? -v : v;
}

/* ---- integers ---- */

/* Truncate toward zero and wrap to `bits` (two's complement); NaN gives 0. */
static int64_t wrap_double(double x, int bits, bool is_signed)
{
    if (isnan(x) || isinf(x))
        return 0;
    double t = trunc(x);
    uint64_t u;
    if (fabs(t) < 9223372036854775808.0) {
        u = (uint64_t)(int64_t)t;
    } else {   /* reduce modulo 2^64 into [0, 2^64) */
        t = fmod(t, 18446744073709551616.0);
        if (t < 0)
            t += 18446744073709551616.0;
        u = t >= 18446744073709551616.0 ? 0 : (uint64_t)t;
    }
    if (bits < 64) {
        u &= (UINT64_C(1) << bits) - 1;
        if (is_signed && (u >> (bits - 1)) & 1)
            u |= ~((UINT64_C(1) << bits) - 1);
    }
    int64_t r;
    memcpy(&r, &u, sizeof r);
    return r;
}

static double int_to_double(DType dt, int64_t v)
{
    if (dt == DT_U64) {
        uint64_t u;
        memcpy(&u, &v, sizeof u);
        return (double)u;
    }
    return (double)v;
}

double tc_round_to(DType dt, double x)
{
    switch (dt) {
    case DT_F64: return x;
    case DT_F32: return fmt_round(&fmt_f32, x);
    case DT_BF16: return fmt_round(&fmt_bf16, x);
    case DT_F16: return fmt_round(&fmt_f16, x);
    case DT_F8E4M3: return fmt_round(&fmt_e4m3, x);
    case DT_F8E5M2: return fmt_round(&fmt_e5m2, x);
    case DT_BOOL: return x != 0.0 ? 1.0 : 0.0;
    default:
        if (dtype_is_int(dt))
            return int_to_double(dt, wrap_double(x, dtype_bits(dt), dtype_is_signed(dt)));
        return x;
    }
}

/* ---- conversions ---- */

uint16_t tc_f32_to_bf16(float x)
{
    if (isnan(x)) {   /* keep the sign and top payload bits, force quiet */
        uint32_t b;
        memcpy(&b, &x, sizeof b);
        return (uint16_t)((b >> 16) | 0x40);
    }
    return (uint16_t)fmt_encode(&fmt_bf16, fmt_round(&fmt_bf16, x));
}

float tc_bf16_to_f32(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

uint16_t tc_f32_to_f16(float x)
{
    if (isnan(x)) {
        uint32_t b;
        memcpy(&b, &x, sizeof b);
        return (uint16_t)(((b >> 16) & 0x8000) | 0x7e00 | ((b >> 13) & 0x1ff));
    }
    return (uint16_t)fmt_encode(&fmt_f16, fmt_round(&fmt_f16, x));
}

float tc_f16_to_f32(uint16_t h) { return (float)fmt_decode(&fmt_f16, h); }

/* ---- storage ---- */

double tc_load_elem(DType dt, const void *p)
{
    const unsigned char *b = p;
    switch (dt) {
    case DT_BOOL: return *b ? 1.0 : 0.0;
    case DT_I8: { int8_t v; memcpy(&v, p, 1); return v; }
    case DT_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case DT_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case DT_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case DT_U8: return *b;
    case DT_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case DT_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case DT_U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    case DT_F16: { uint16_t v; memcpy(&v, p, 2); return fmt_decode(&fmt_f16, v); }
    case DT_BF16: { uint16_t v; memcpy(&v, p, 2); return tc_bf16_to_f32(v); }
    case DT_F32: { float v; memcpy(&v, p, 4); return v; }
    case DT_F64: { double v; memcpy(&v, p, 8); return v; }
    case DT_F8E4M3: return fmt_decode(&fmt_e4m3, *b);
    case DT_F8E5M2: return fmt_decode(&fmt_e5m2, *b);
    default: return 0.0;
    }
}

static void store_bits(void *p, uint64_t v, int bytes)
{
    uint8_t b1 = (uint8_t)v; uint16_t b2 = (uint16_t)v; uint32_t b4 = (uint32_t)v;
    switch (bytes) {
    case 1: memcpy(p, &b1, 1); break;
    case 2: memcpy(p, &b2, 2); break;
    case 4: memcpy(p, &b4, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

void tc_store_elem(DType dt, void *p, double x)
{
    switch (dt) {
    case DT_F16: store_bits(p, fmt_encode(&fmt_f16, fmt_round(&fmt_f16, x)), 2); return;
    case DT_BF16: store_bits(p, fmt_encode(&fmt_bf16, fmt_round(&fmt_bf16, x)), 2); return;
    case DT_F8E4M3: store_bits(p, fmt_encode(&fmt_e4m3, fmt_round(&fmt_e4m3, x)), 1); return;
    case DT_F8E5M2: store_bits(p, fmt_encode(&fmt_e5m2, fmt_round(&fmt_e5m2, x)), 1); return;
    case DT_F32: { float v = (float)x; memcpy(p, &v, 4); return; }
    case DT_F64: memcpy(p, &x, 8); return;
    case DT_BOOL: store_bits(p, x != 0.0, 1); return;
    default:
        if (dtype_is_int(dt)) {
            int64_t v = wrap_double(x, dtype_bits(dt), dtype_is_signed(dt));
            uint64_t u;
            memcpy(&u, &v, sizeof u);
            store_bits(p, u, dtype_bits(dt) / 8);
        }
        return;
    }
}
