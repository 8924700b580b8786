/* test_interp_math.c - the interpreter's semantics of the math builtins
 * (erf sigmoid sin cos floor ceil round pow, and exp .. tanh) against libm
 * on f32 and f64 tiles, and of the bitwise operators and shifts on integer
 * tiles of every width, counts past the width included; constant folding
 * (the canonicalize pass) gives the interpreter's values. Kernels are
 * compiled from source (fe_compile) and interpreted. */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_src.h"

enum { NV = 24 };


/* Equal, NaN equal to NaN, zeros compared with their sign. */
static bool same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

static const double xs[NV] = { 0.0, -0.0, 0.3, -0.3, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.4, 2.6,
                               1.0, -1.0, 3.75, -7.125, 10.0, -10.0, 100.5, 1e-6, -1e-6, 40.0,
                               INFINITY, -INFINITY };

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double rsqrt(double x) { return 1.0 / sqrt(x); }

typedef struct MathCase {
    const char *name;
    double (*ref)(double);
} MathCase;

static const MathCase cases[] = {
    { "erf", erf }, { "sigmoid", sigmoid }, { "sin", sin }, { "cos", cos }, { "floor", floor },
    { "ceil", ceil }, { "exp", exp }, { "exp2", exp2 }, { "log", log }, { "log2", log2 }, { "sqrt", sqrt },
    { "rsqrt", rsqrt }, { "tanh", tanh }, { "abs", fabs },
};

/* Y = OP(X) on f64 and f32 tiles: libm's value rounded once to the dtype. */
START_TEST(unary_vs_libm)
{
    const MathCase *mc = &cases[_i];
    for (int wide = 0; wide < 2; wide++) {
        const char *dt = wide ? "f64" : "f32";
        char src[256];
        snprintf(src, sizeof src, "kernel k(X: global %s[N], Y: global %s[N]) grid(1) {\n"
                 "  Y[0 : +%d] = %s(X[0 : +%d]);\n}\n", dt, dt, NV, mc->name, NV);
        KitProg p;
        Func *f = kit_prog_build(&p, "math.tile", src, false, NULL, 0);
        double xd[NV], yd[NV];
        float xf[NV], yf[NV];
        for (int i = 0; i < NV; i++)
            xd[i] = xs[i], xf[i] = (float)xs[i];
        InterpArg args[3] = { kit_tensor1(wide ? (void *)xd : (void *)xf, NV), kit_tensor1(wide ? (void *)yd : (void *)yf, NV) };
        kit_prog_run(&p, f, args, 2);
        for (int i = 0; i < NV; i++) {
            double want = wide ? mc->ref(xs[i]) : (double)(float)mc->ref((double)xf[i]);
            double got = wide ? yd[i] : yf[i];
            ck_assert_msg(same(got, want), "%s(%g) on %s: %.17g, libm %.17g", mc->name, xs[i], dt, got, want);
        }
        arena_free(p.a);
    }
}
END_TEST

/* round: to nearest, ties to even (not C's round(), which rounds ties away). */
START_TEST(round_ties_to_even)
{
    static const double in[8] = { 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6 };
    static const double want[8] = { 0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 2.0, 3.0 };
    KitProg p;
    Func *f = kit_prog_build(&p, "math.tile", "kernel k(X: global f32[N], Y: global f32[N]) grid(1) {\n"
                             "  Y[0 : +8] = round(X[0 : +8]);\n}\n", false, NULL, 0);
    float x[8], y[8];
    for (int i = 0; i < 8; i++)
        x[i] = (float)in[i];
    InterpArg args[2] = { kit_tensor1(x, 8), kit_tensor1(y, 8) };
    kit_prog_run(&p, f, args, 2);
    for (int i = 0; i < 8; i++)
        ck_assert_msg(same(y[i], want[i]), "round(%g) = %g, want %g", in[i], y[i], want[i]);
    arena_free(p.a);
}
END_TEST

/* pow(X, Y) on f64 as C's pow: negative bases need integer exponents, the
 * sign follows odd ones, x^0 = 1 and 1^y = 1 even for NaN. */
START_TEST(pow_vs_libm)
{
    static const double a[12] = { 2.0, 2.0, -2.0, -2.0, -8.0, 0.0, 0.0, 1.0, NAN, 0.5, -1.0, 10.0 };
    static const double b[12] = { 0.5, -3.0, 3.0, 2.0, 1.0 / 3.0, 0.0, -1.0, NAN, 0.0, 40.0, INFINITY, 1.5 };
    KitProg p;
    Func *f = kit_prog_build(&p, "math.tile", "kernel k(A: global f64[N], B: global f64[N], Y: global f64[N]) "
                             "grid(1) {\n  Y[0 : +12] = pow(A[0 : +12], B[0 : +12]);\n}\n", false, NULL, 0);
    double y[12];
    InterpArg args[3] = { kit_tensor1((void *)a, 12), kit_tensor1((void *)b, 12), kit_tensor1(y, 12) };
    kit_prog_run(&p, f, args, 3);
    for (int i = 0; i < 12; i++)
        ck_assert_msg(same(y[i], pow(a[i], b[i])), "pow(%g, %g) = %g, libm %g", a[i], b[i], y[i], pow(a[i], b[i]));
    ck_assert(isnan(y[4]) && y[5] == 1.0 && y[7] == 1.0 && y[8] == 1.0 && y[2] == -8.0);
    arena_free(p.a);
}
END_TEST

/* Bitwise ops and shifts, one kernel per dtype over 8 (a, b) pairs:
 * out[0..7] = a & b, a | b, a ^ b, ~a, a << b, a >> b for each pair. */
typedef struct IntCase {
    const char *dt;
    int64_t a[4], b[4];
    int64_t shl[4], shr[4];   /* a << b, a >> b */
} IntCase;

static const IntCase icases[] = {
    /* i8: wrap on <<, arithmetic >>, counts >= 8 (and negative, read as 255) clamp */
    { "i8", { -128, 100, 3, -1 }, { 9, 1, -1, 7 }, { 0, -56, 0, -128 }, { -1, 50, 0, -1 } },
    /* u8: logical >> */
    { "u8", { 200, 255, 1, 128 }, { 1, 8, 7, 7 }, { 144, 0, 128, 0 }, { 100, 0, 0, 1 } },
    { "i16", { -32768, 300, 1, -300 }, { 15, 2, 16, 3 }, { 0, 1200, 0, -2400 }, { -1, 75, 0, -38 } },
    { "i32", { 1, -1, 5, INT32_MIN }, { 31, 40, -1, 31 }, { INT32_MIN, 0, 0, 0 }, { 0, -1, 0, -1 } },
    { "u32", { 4294967295LL, 1, 7, 2147483648LL }, { 4, 32, 1, 31 }, { 4294967280LL, 0, 14, 0 },
      { 268435455, 0, 3, 1 } },
    { "i64", { INT64_MIN, -5, 3, 1 }, { 63, 1, 64, 62 }, { 0, -10, 0, INT64_C(1) << 62 },
      { -1, -3, 0, 0 } },
    /* u64: held as the bit pattern; >> is logical */
    { "u64", { -1, 2, 1, INT64_MIN }, { 60, 63, 64, 63 }, { -1152921504606846976LL, 0, 0, 0 }, { 15, 0, 0, 1 } },
};

START_TEST(bitwise_and_shifts)
{
    const IntCase *c = &icases[_i];
    char src[512];
    snprintf(src, sizeof src,
             "kernel k(A: global %s[N], B: global %s[N], Y: global %s[M, N]) grid(1) {\n"
             "  tile a = A[0 : +4];\n  tile b = B[0 : +4];\n"
             "  Y[0, 0 : +4] = a & b;\n  Y[1, 0 : +4] = a | b;\n  Y[2, 0 : +4] = a ^ b;\n"
             "  Y[3, 0 : +4] = ~a;\n  Y[4, 0 : +4] = a << b;\n  Y[5, 0 : +4] = a >> b;\n}\n",
             c->dt, c->dt, c->dt);
    DType dt = dtype_lookup(c->dt, strlen(c->dt));
    size_t es = (size_t)dtype_bits(dt) / 8;
    unsigned char a[4 * 8], b[4 * 8], y[6 * 4 * 8];
    for (int i = 0; i < 4; i++) {
        memcpy(a + i * es, &c->a[i], es);   /* little-endian: the low bytes */
        memcpy(b + i * es, &c->b[i], es);
    }
    for (int passes = 0; passes < 2; passes++) {
        KitProg p;
        Func *f = kit_prog_build(&p, "math.tile", src, passes, NULL, 0);
        InterpArg args[3] = { kit_tensor1(a, 4), kit_tensor1(b, 4), kit_tensor1(y, 4) };
        args[2].rank = 2;
        args[2].shape[0] = 6;
        args[2].shape[1] = 4;
        args[2].strides[0] = 4;
        args[2].strides[1] = 1;
        kit_prog_run(&p, f, args, 3);
        for (int i = 0; i < 4; i++) {
            int64_t ai = c->a[i], bi = c->b[i];
            int64_t want[6] = { ai & bi, ai | bi, ai ^ bi, ~ai, c->shl[i], c->shr[i] };
            for (int r = 0; r < 6; r++) {
                int64_t got = 0;
                memcpy(&got, y + ((size_t)r * 4 + (size_t)i) * es, es);
                int64_t w = tc_wrap_int(dt, (uint64_t)want[r]);
                got = tc_wrap_int(dt, (uint64_t)got);
                ck_assert_msg(got == w, "%s row %d pair %d (%lld, %lld): %lld, want %lld", c->dt, r, i,
                              (long long)ai, (long long)bi, (long long)got, (long long)w);
            }
        }
        arena_free(p.a);
    }
}
END_TEST

/* Constants fold (canonicalize) to the interpreter's values: the same
 * kernel of constant operands, interpreted with and without the passes. */
START_TEST(folding_matches)
{
    const char *src = "kernel k(Y: global f32[N], Z: global i32[N]) grid(1) {\n"
                      "  tile c = f32(iota(8)) * 0.75 - 2.5;\n"
                      "  Y[0 : +8] = erf(c) + sigmoid(c) * sin(c) - cos(c) + floor(c) * ceil(c) + round(c)"
                      " + pow(c, 2);\n"
                      "  tile i = iota(8) - 3;\n"
                      "  Z[0 : +8] = (i << 29) ^ (i >> 1) | ~i & 6;\n}\n";
    float y[2][8];
    int32_t z[2][8];
    for (int passes = 0; passes < 2; passes++) {
        KitProg p;
        Func *f = kit_prog_build(&p, "math.tile", src, passes, NULL, 0);
        InterpArg args[2] = { kit_tensor1(y[passes], 8), kit_tensor1(z[passes], 8) };
        kit_prog_run(&p, f, args, 2);
        arena_free(p.a);
    }
    for (int i = 0; i < 8; i++) {
        ck_assert_msg(same(y[0][i], y[1][i]), "element %d: %g unfolded, %g folded", i, y[0][i], y[1][i]);
        ck_assert_int_eq(z[0][i], z[1][i]);
    }
    ck_assert_int_eq(z[0][0], (int32_t)(((uint32_t)-3 << 29) ^ (uint32_t)(-3 >> 1)) | (~-3 & 6));
}
END_TEST

static Suite *math_suite(void)
{
    Suite *s = suite_create("interp_math");
    TCase *tc = tcase_create("math");
    tcase_add_loop_test(tc, unary_vs_libm, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, round_ties_to_even);
    tcase_add_test(tc, pow_vs_libm);
    tcase_add_loop_test(tc, bitwise_and_shifts, 0, (int)(sizeof icases / sizeof icases[0]));
    tcase_add_test(tc, folding_matches);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(math_suite());
}
