/* test_interp_scan_rand.c - the interpreter's semantics of the scans
 * (cumsum, cummax, cummin, cumprod, scan(..., exclusive)) and of the
 * counter-based random numbers (rand, randint), against C references:
 *  - ir/philox.h against Random123's known-answer vectors for
 *    Philox4x32-10 (kat_vectors: counter, key -> the four words);
 *  - randint / rand of kernels (i32 offsets zero-extended, i64 offsets
 *    with their high word, scalar offsets, seeds of 64 bits) against
 *    ir/philox.h, and rand's range and mean;
 *  - every scan kind, inclusive and exclusive, along each axis of a 2-D
 *    tile, on f32, f16, i32, u8 (wrapping) and i64, against a running
 *    combination in C (floats in double, rounded once per element);
 * each with and without the pass pipeline. */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_src.h"
#include "ir/philox.h"


/* Random123 kat_vectors, philox4x32 R=10: counter[4], key[2] -> out[4]. */
START_TEST(philox_known_answers)
{
    static const uint32_t kat[3][10] = {
        { 0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 },
        { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
          0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd },
        { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
          0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 },
    };
    for (int i = 0; i < 3; i++) {
        uint32_t c[4] = { kat[i][0], kat[i][1], kat[i][2], kat[i][3] };
        tc_philox4x32(c, kat[i][4], kat[i][5], TC_PHILOX_ROUNDS);
        for (int w = 0; w < 4; w++)
            ck_assert_msg(c[w] == kat[i][6 + w], "vector %d word %d: 0x%08x, want 0x%08x", i, w, c[w],
                          kat[i][6 + w]);
    }
    /* The builtins' counter and key: offset 4 q + w takes word w at counter
       (lo(q), hi(q), 0, 0), key (lo(seed), hi(seed)). */
    uint32_t c[4] = { 0x03707344, 0x13198a2e, 0, 0 };
    tc_philox4x32(c, 0xa4093822, 0x299f31d0, TC_PHILOX_ROUNDS);
    for (unsigned w = 0; w < 4; w++) {
        uint64_t off = (0x13198a2e03707344ULL << 2) | w;
        ck_assert_uint_eq(tc_philox_randint(0x299f31d0a4093822LL, off), c[w]);
        ck_assert(tc_philox_rand(0x299f31d0a4093822LL, off) == (float)(c[w] >> 8) / 16777216.0f);
    }
}
END_TEST

/* randint with i32 offsets (a negative one reads as its u32 bits, the
 * counter's high word 0), i64 offsets (high word kept), a scalar offset;
 * rand of iota. */
START_TEST(randint_and_rand_vs_philox)
{
    const char *src =
        "kernel k(O: global i32[N], P: global i64[N], R: global u32[N], Q: global u32[N], U: global f32[M],\n"
        "         S: i64, T: i32)\n"
        "  grid(1)\n"
        "{\n"
        "  R[0 : +8] = randint(S, O[0 : +8]);\n"
        "  Q[0 : +8] = randint(S, P[0 : +8]);\n"
        "  Q[7] = randint(T, 12345);\n"
        "  U[0 : +4096] = rand(S, iota(4096) + 100);\n"
        "}\n";
    static const int32_t o[8] = { 0, 1, 2, -1, 1000000, INT32_MIN, 77, 5 };
    static const int64_t q[8] = { 0, 1, (int64_t)1 << 32, -1, 0x123456789abcLL, INT64_MIN, 3, 4 };
    static const int64_t seeds[3] = { 0, 42, -0x0123456789abcdefLL };
    for (int passes = 0; passes < 2; passes++)
        for (int si = 0; si < 3; si++) {
            KitProg p;
            Func *f = kit_prog_build(&p, "scan.tile", src, passes, NULL, 0);
            uint32_t r[8], rq[8];
            static float u[4096];
            InterpArg args[7] = { kit_tensor1((void *)o, 8), kit_tensor1((void *)q, 8), kit_tensor1(r, 8),
                                  kit_tensor1(rq, 8), kit_tensor1(u, 4096) };
            args[5].i = seeds[si];
            args[6].i = -7;
            kit_prog_run(&p, f, args, 7);
            for (int i = 0; i < 8; i++) {
                ck_assert_uint_eq(r[i], tc_philox_randint(seeds[si], (uint32_t)o[i]));
                if (i < 7)
                    ck_assert_uint_eq(rq[i], tc_philox_randint(seeds[si], (uint64_t)q[i]));
            }
            ck_assert_uint_eq(rq[7], tc_philox_randint(-7, 12345));
            double mean = 0;
            for (int i = 0; i < 4096; i++) {
                ck_assert(u[i] == tc_philox_rand(seeds[si], (uint64_t)(i + 100)));
                ck_assert(u[i] >= 0.0f && u[i] < 1.0f);
                mean += u[i] / 4096.0;
            }
            ck_assert_msg(fabs(mean - 0.5) < 0.02, "seed %lld: mean %g", (long long)seeds[si], mean);
            arena_free(p.a);
        }
    /* different seeds and neighbouring offsets give different words (the
       words of one counter and those of the next) */
    ck_assert_uint_ne(tc_philox_randint(1, 0), tc_philox_randint(2, 0));
    for (uint64_t k = 0; k < 8; k++)
        ck_assert_uint_ne(tc_philox_randint(1, k), tc_philox_randint(1, k + 1));
}
END_TEST

/* ---- scans ---- */

enum { SM = 3, SN = 5 };

typedef struct ScanCase {
    const char *dt;
    bool flt;
    double x[SM * SN];
} ScanCase;

static const ScanCase scases[] = {
    { "f32", true, { 0.1, -2.5, 3.0, 1e8, -1e8, 7.25, 0.0, -0.0, 4.5, 1.0, -3.0, 2.0, 0.5, 0.25, -6.0 } },
    { "f16", true, { 0.1, -2.5, 3.0, 1000, 0.001, 7.25, 0.0, -0.0, 4.5, 1.0, -3.0, 2.0, 0.5, 0.25, -6.0 } },
    { "i32", false, { 5, -2, 2147483647, 1, -7, 0, 3, 3, -1, 9, 100, -100, 7, 2, 1 } },
    { "u8", false, { 200, 100, 3, 255, 1, 0, 7, 9, 2, 128, 17, 250, 6, 1, 4 } },
    { "i64", false, { 5, -2, 4e15, 1, -7, 0, 3, 3, -1, 9, 100, -100, 7, 2, 1 } },
};

static const char *const kinds[4] = { "sum", "max", "min", "prod" };

/* The reference: a running combination along the axis; integers (in i[])
 * wrapped at every step, floats (in f[]) in double, rounded once per
 * element. Exclusive: the combination before the element, the kind's
 * identity first. */
typedef struct RefOut {
    double f[SM * SN];
    int64_t i[SM * SN];
} RefOut;

static int64_t int_identity(DType dt, int kind)
{
    int bits = dtype_bits(dt);
    bool sg = dtype_is_signed(dt);
    uint64_t top = bits == 64 ? ~0ull : (1ull << bits) - 1;
    if (kind == 0 || kind == 3)
        return kind == 3;
    if (kind == 1)
        return sg ? tc_wrap_int(dt, 1ull << (bits - 1)) : 0;
    return tc_wrap_int(dt, sg ? top >> 1 : top);
}

static void scan_ref(DType dt, int kind, bool excl, int axis, const RefOut *x, RefOut *y)
{
    static const double fid[4] = { 0.0, -INFINITY, INFINITY, 1.0 };
    int len = axis ? SN : SM, other = axis ? SM : SN;
    for (int o = 0; o < other; o++) {
        double acc = fid[kind];
        int64_t iacc = int_identity(dt, kind);
        for (int j = 0; j < len; j++) {
            int k = axis ? o * SN + j : j * SN + o;
            if (excl) {
                y->f[k] = tc_round_to(dt, acc);
                y->i[k] = iacc;
            }
            double v = x->f[k];
            int64_t w = x->i[k];
            bool sg = dtype_is_signed(dt);
            acc = kind == 0 ? acc + v : kind == 3 ? acc * v : kind == 1 ? fmax(acc, v) : fmin(acc, v);
            bool wgt = sg ? w > iacc : (uint64_t)w > (uint64_t)iacc;
            iacc = kind == 0 ? (int64_t)((uint64_t)iacc + (uint64_t)w)
                 : kind == 3 ? (int64_t)((uint64_t)iacc * (uint64_t)w)
                 : kind == 1 ? (wgt ? w : iacc) : (wgt ? iacc : w);
            iacc = tc_wrap_int(dt, (uint64_t)iacc);
            if (!excl) {
                y->f[k] = tc_round_to(dt, acc);
                y->i[k] = iacc;
            }
        }
    }
}

static int64_t load_int(DType dt, const unsigned char *p)
{
    int64_t v = 0;
    memcpy(&v, p, (size_t)dtype_bits(dt) / 8);   /* little-endian: the low bytes */
    return tc_wrap_int(dt, (uint64_t)v);
}

START_TEST(scans_vs_reference)
{
    const ScanCase *c = &scases[_i];
    DType dt = dtype_lookup(c->dt, strlen(c->dt));
    size_t es = (size_t)dtype_bits(dt) / 8;
    unsigned char xb[SM * SN * 8], yb[16][SM * SN * 8];
    RefOut x;
    for (int i = 0; i < SM * SN; i++) {
        if (c->flt) {
            x.f[i] = tc_round_to(dt, c->x[i]);
            tc_store_elem(dt, xb + (size_t)i * es, x.f[i]);
        } else {
            x.i[i] = tc_wrap_int(dt, (uint64_t)(int64_t)c->x[i]);
            memcpy(xb + (size_t)i * es, &x.i[i], es);
        }
    }
    char src[2048];
    int n = snprintf(src, sizeof src, "kernel k<AX: int = 0>(X: global %s[%d, %d]", c->dt, SM, SN);
    for (int k = 0; k < 8; k++)
        n += snprintf(src + n, sizeof src - (size_t)n, ", Y%d: global %s[%d, %d]", k, c->dt, SM, SN);
    n += snprintf(src + n, sizeof src - (size_t)n, ") grid(1) {\n  tile x = X[:, :];\n"
                  "  Y0[:, :] = cumsum(x, AX);\n  Y1[:, :] = cummax(x, AX);\n"
                  "  Y2[:, :] = cummin(x, AX);\n  Y3[:, :] = cumprod(x, AX);\n");
    for (int k = 0; k < 4; k++)
        n += snprintf(src + n, sizeof src - (size_t)n, "  Y%d[:, :] = scan(x, AX, %s, exclusive);\n", 4 + k,
                      kinds[k]);
    snprintf(src + n, sizeof src - (size_t)n, "}\n");
    for (int axis = 0; axis < 2; axis++)
        for (int passes = 0; passes < 2; passes++) {
            char def[16];
            snprintf(def, sizeof def, "AX=%d", axis);
            FeDefine d = { "AX", def + 3 };
            KitProg p;
            Func *f = kit_prog_build(&p, "scan.tile", src, passes, &d, 1);
            InterpArg args[9];
            args[0] = kit_tensor2(xb, SM, SN);
            for (int k = 0; k < 8; k++)
                args[1 + k] = kit_tensor2(yb[k], SM, SN);
            kit_prog_run(&p, f, args, 9);
            for (int k = 0; k < 8; k++) {
                RefOut want;
                scan_ref(dt, k % 4, k >= 4, axis, &x, &want);
                for (int i = 0; i < SM * SN; i++) {
                    const unsigned char *at = yb[k] + (size_t)i * es;
                    if (c->flt) {
                        double got = tc_load_elem(dt, at);
                        ck_assert_msg(got == want.f[i], "%s %s%s axis %d passes %d element %d: %.17g, want %.17g",
                                      c->dt, kinds[k % 4], k >= 4 ? " exclusive" : "", axis, passes, i, got,
                                      want.f[i]);
                    } else {
                        int64_t got = load_int(dt, at);
                        ck_assert_msg(got == want.i[i], "%s %s%s axis %d passes %d element %d: %lld, want %lld",
                                      c->dt, kinds[k % 4], k >= 4 ? " exclusive" : "", axis, passes, i,
                                      (long long)got, (long long)want.i[i]);
                    }
                }
            }
            arena_free(p.a);
        }
}
END_TEST

static Suite *scan_rand_suite(void)
{
    Suite *s = suite_create("interp_scan_rand");
    TCase *tc = tcase_create("scan_rand");
    tcase_add_test(tc, philox_known_answers);
    tcase_add_test(tc, randint_and_rand_vs_philox);
    tcase_add_loop_test(tc, scans_vs_reference, 0, (int)(sizeof scases / sizeof scases[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(scan_rand_suite());
}
