/* gpu_rand_scan.c - random numbers and scans on the GPU (docs/language.md,
 * "Random numbers", "Scans"): randint and rand (32- and 64-bit offsets)
 * bit for bit against ir/philox.h; examples/dropout.tile (f32 and bf16)
 * exactly against the same numbers, and its kept fraction; cumsum, the
 * exclusive sum and cummax along the rows of f32 tiles spanning 4 warps,
 * i32 cumsum and exclusive cummin exactly, a bf16 cumsum down the columns
 * and an exclusive sum over 100 elements (the layout's copies past the
 * extent); examples/cumsum.tile over rows longer than its chunk. Float sums
 * are checked per element against a double reference within 1e-5 of the
 * running sum of |x| (f32; bf16: its rounding, 2^-8, more). Outputs start
 * poisoned and are followed by a poisoned guard zone that must stay so.
 *
 *   gpu_rand_scan                 compile with TILEC_EXE into TILEC_WORK_DIR, then test
 *   gpu_rand_scan DIR             test precompiled DIR/ARCH/<module>.ptx + .meta
 *                                 (tests/gpu/make_ptx.sh writes them)
 *   gpu_rand_scan --print-source  the test's own kernels, for make_ptx.sh
 *   gpu_rand_scan --interp        the same checks on the IR interpreter
 *                                 (tilec_interpret; builds with the compiler):
 *                                 proves the host side without a GPU
 *
 * Exit 0 if every check passed, 77 without a CUDA driver or device (not in
 * --interp), 1 otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_harness.h"
#include "../../ir/philox.h"

static const char rs_src[] =
    "kernel rbits<B: int = 256>(R: global u32[N], U: global f32[N], seed: i64)\n"
    "  grid(cdiv(N, B))\n"
    "{\n"
    "  let i0 = block.x * B;\n"
    "  R[i0 : +B] = randint(seed, iota(B) + i0);\n"
    "  U[i0 : +B] = rand(seed, i64(iota(B) + i0) + 4294967296);\n"
    "}\n"
    "\n"
    "kernel scans(X: global f32[M, N], S: global f32[M, N], E: global f32[M, N], C: global f32[M, N],\n"
    "             I: global i32[M, N], J: global i32[M, N])\n"
    "  grid(cdiv(M, 4))\n"
    "{\n"
    "  let m0 = block.x * 4;\n"
    "  tile x = X[m0 : +4, 0 : +512];\n"
    "  S[m0 : +4, 0 : +512] = cumsum(x, 1);\n"
    "  E[m0 : +4, 0 : +512] = scan(x, 1, sum, exclusive);\n"
    "  C[m0 : +4, 0 : +512] = cummax(x, 1);\n"
    "  tile xi = i32(x * 100.0);\n"
    "  I[m0 : +4, 0 : +512] = cumsum(xi, 1);\n"
    "  J[m0 : +4, 0 : +512] = scan(xi, 1, min, exclusive);\n"
    "}\n"
    "\n"
    "kernel cols(X: global bf16[M, 64], Y: global bf16[M, 64]) grid(1) {\n"
    "  Y[0 : +64, :] = cumsum(X[0 : +64, :], 0);\n"
    "}\n"
    "\n"
    "kernel small(X: global f32[N], Y: global f32[N]) grid(1) {\n"
    "  Y[0 : +100] = scan(X[0 : +100], 0, sum, exclusive);\n"
    "}\n";

/* The modules: this file's kernels and two examples (with defines). */

static const ModSpec specs[] = {
    { "rand_scan", NULL, "" },
    { "dropout_f32", "dropout", "" },
    { "dropout_bf16", "dropout", "-DT=bf16" },
    { "cumsum", "cumsum", "-DBN=256" },
};
enum { NMOD = sizeof specs / sizeof specs[0] };


static uint32_t u32_at(const HostT *t, size_t i)
{
    uint32_t v;
    memcpy(&v, t->data + 4 * i, 4);
    return v;
}

static double val_at(const HostT *t, size_t i)
{
    if (esize(t->dt) == 2)
        return gpu_get(GPU_BF16, t->data, i);
    if (!strcmp(t->dt, "i32"))
        return (double)(int32_t)u32_at(t, i);
    return f32_at(t, i);
}

/* ---- the checks ---- */

static void check_bits(Mod *m, const char *arch, int64_t n, int64_t seed)
{
    char label[128];
    snprintf(label, sizeof label, "%s randint/rand N=%lld seed=%lld", arch, (long long)n, (long long)seed);
    gpu_context("%s", label);
    HostT r = host_t("u32", 1, n, 0), u = host_t("f32", 1, n, 0);
    Arg a[3] = { { &r, 0, 0, false }, { &u, 0, 0, false }, { NULL, seed, 0, false } };
    bool ok = run_kernel(m, "rbits", a, 3, label);
    int64_t bad = 0;
    for (int64_t i = 0; ok && i < n; i++) {
        uint64_t hi = (uint64_t)1 << 32;
        bad += u32_at(&r, (size_t)i) != tc_philox_randint(seed, (uint32_t)i);
        bad += f32_at(&u, (size_t)i) != tc_philox_rand(seed, hi + (uint64_t)i);
    }
    gpu_result(ok && bad == 0, "%s: %lld elements differ from philox.h", label, (long long)bad);
    free(r.data);
    free(u.data);
}

static void check_dropout(Mod *m, const char *arch, const char *dt, int64_t n, double p, int64_t seed)
{
    char label[128];
    snprintf(label, sizeof label, "%s dropout %s N=%lld p=%g", arch, dt, (long long)n, p);
    gpu_context("%s", label);
    HostT x = host_t(dt, 1, n, 0), y = host_t(dt, 1, n, 0);
    fill(&x, 4);
    Arg a[4] = { { &x, 0, 0, false }, { &y, 0, 0, false }, { NULL, 0, p, true }, { NULL, seed, 0, false } };
    bool ok = run_kernel(m, "dropout", a, 4, label);
    float scale = 1.0f / (1.0f - (float)p);
    int64_t bad = 0, kept = 0;
    for (int64_t i = 0; ok && i < n; i++) {
        bool keep = tc_philox_rand(seed, (uint32_t)i) >= (float)p;
        kept += keep;
        float want = keep ? (float)val_at(&x, (size_t)i) * scale : 0.0f;
        HostT one = host_t(dt, 1, 1, 0);   /* want rounded to dt */
        set_f32(&one, 0, want);
        bad += val_at(&y, (size_t)i) != val_at(&one, 0);
        free(one.data);
    }
    double frac = n ? (double)kept / (double)n : 1.0 - p;
    gpu_result(ok && bad == 0 && (n < 10000 || fabs(frac - (1.0 - p)) < 0.01),
               "%s: %lld elements differ, kept %.4f", label, (long long)bad, frac);
    free(x.data);
    free(y.data);
}

/* |got - want| within tol of the running sum of |x| (plus one unit of it). */
static bool near(double got, double want, double mag, double tol)
{
    return fabs(got - want) <= tol * (mag + 1e-30) || (isinf(want) && got == want);
}

/* Row-wise scans of an [m, n] f32 matrix (n <= 512): the `scans` kernel. */
static void check_scans(Mod *m, const char *arch, int64_t rows, int64_t n)
{
    char label[128];
    snprintf(label, sizeof label, "%s scans %lldx%lld", arch, (long long)rows, (long long)n);
    gpu_context("%s", label);
    HostT x = host_t("f32", 2, rows, n), o[5];
    static const char *const dts[5] = { "f32", "f32", "f32", "i32", "i32" };
    for (int k = 0; k < 5; k++)
        o[k] = host_t(dts[k], 2, rows, n);
    fill(&x, 3);
    Arg a[6] = { { &x, 0, 0, false } };
    for (int k = 0; k < 5; k++)
        a[1 + k] = (Arg){ &o[k], 0, 0, false };
    bool ok = run_kernel(m, "scans", a, 6, label);
    int64_t bad = 0;
    for (int64_t r = 0; ok && r < rows; r++) {
        double s = 0, mag = 0, mx = -INFINITY;
        int32_t is = 0, imin = INT32_MAX;
        for (int64_t c = 0; c < n; c++) {
            size_t i = (size_t)(r * n + c);
            float xv = f32_at(&x, i);
            int32_t xi = (int32_t)(xv * 100.0f);
            bad += !near(val_at(&o[1], i), s, mag, 1e-5);     /* exclusive sum */
            bad += (int32_t)u32_at(&o[4], i) != imin;          /* exclusive min */
            s += xv;
            mag += fabs(xv);
            mx = fmax(mx, xv);
            is = (int32_t)((uint32_t)is + (uint32_t)xi);
            imin = xi < imin ? xi : imin;
            bad += !near(val_at(&o[0], i), s, mag, 1e-5);
            bad += val_at(&o[2], i) != mx;
            bad += (int32_t)u32_at(&o[3], i) != is;
        }
    }
    gpu_result(ok && bad == 0, "%s: %lld elements wrong", label, (long long)bad);
    free(x.data);
    for (int k = 0; k < 5; k++)
        free(o[k].data);
}

/* cumsum down the 64 columns of a bf16 [rows, 64] tile (rows <= 64), and the
 * exclusive sum of a 100-element row. */
static void check_small(Mod *m, const char *arch, int64_t rows, int64_t n)
{
    char label[128];
    snprintf(label, sizeof label, "%s bf16 column cumsum %lldx64, exclusive sum N=%lld", arch, (long long)rows,
             (long long)n);
    gpu_context("%s", label);
    HostT x = host_t("bf16", 2, rows, 64), y = host_t("bf16", 2, rows, 64);
    HostT v = host_t("f32", 1, n, 0), w = host_t("f32", 1, n, 0);
    fill(&x, 2);
    fill(&v, 2);
    Arg a[2] = { { &x, 0, 0, false }, { &y, 0, 0, false } }, b[2] = { { &v, 0, 0, false }, { &w, 0, 0, false } };
    bool ok = run_kernel(m, "cols", a, 2, label) && run_kernel(m, "small", b, 2, label);
    int64_t bad = 0;
    for (int64_t c = 0; ok && c < 64; c++) {
        double s = 0, mag = 0;
        for (int64_t r = 0; r < rows; r++) {
            double xv = val_at(&x, (size_t)(r * 64 + c));
            s += xv;
            mag += fabs(xv);
            bad += !near(val_at(&y, (size_t)(r * 64 + c)), s, mag, 1.0 / 256);
        }
    }
    double s = 0, mag = 0;
    for (int64_t i = 0; ok && i < n; i++) {
        bad += !near(f32_at(&w, (size_t)i), s, mag, 1e-5);
        s += f32_at(&v, (size_t)i);
        mag += fabs(f32_at(&v, (size_t)i));
    }
    gpu_result(ok && bad == 0, "%s: %lld elements wrong", label, (long long)bad);
    free(x.data), free(y.data), free(v.data), free(w.data);
}

/* examples/cumsum.tile (BN = 256: rows of several chunks). */
static void check_cumsum_example(Mod *m, const char *arch, int64_t rows, int64_t n)
{
    char label[128];
    snprintf(label, sizeof label, "%s examples/cumsum %lldx%lld", arch, (long long)rows, (long long)n);
    gpu_context("%s", label);
    HostT x = host_t("f32", 2, rows, n), y = host_t("f32", 2, rows, n);
    fill(&x, 1);
    Arg a[2] = { { &x, 0, 0, false }, { &y, 0, 0, false } };
    bool ok = run_kernel(m, "cumsum", a, 2, label);
    int64_t bad = 0;
    for (int64_t r = 0; ok && r < rows; r++) {
        double s = 0, mag = 0;
        for (int64_t c = 0; c < n; c++) {
            double xv = f32_at(&x, (size_t)(r * n + c));
            s += xv;
            mag += fabs(xv);
            bad += !near(f32_at(&y, (size_t)(r * n + c)), s, mag, 1e-5);
        }
    }
    gpu_result(ok && bad == 0, "%s: %lld elements wrong", label, (long long)bad);
    free(x.data), free(y.data);
}

static void run_all(Mod *mods, const char *arch)
{
    static const int64_t ns[] = { 1, 1000, 65537 };
    static const int64_t seeds[] = { 0, 42, -0x0123456789abcdefLL };
    for (int i = 0; i < 3; i++)
        check_bits(&mods[0], arch, ns[i], seeds[i]);
    static const int64_t mn[][2] = { { 1, 1 }, { 5, 300 }, { 64, 512 }, { 7, 511 } };
    for (int i = 0; i < 4; i++)
        check_scans(&mods[0], arch, mn[i][0], mn[i][1]);
    check_small(&mods[0], arch, 64, 100);
    check_small(&mods[0], arch, 13, 37);
    static const double ps[] = { 0.0, 0.1, 0.5, 0.9 };
    for (int i = 0; i < 4; i++) {
        check_dropout(&mods[1], arch, "f32", i ? 100000 + i : 1, ps[i], seeds[i % 3]);
        check_dropout(&mods[2], arch, "bf16", 4097 * (i + 1), ps[i], seeds[(i + 1) % 3]);
    }
    static const int64_t cm[][2] = { { 1, 1 }, { 9, 1000 }, { 4, 256 }, { 33, 2049 } };
    for (int i = 0; i < 4; i++)
        check_cumsum_example(&mods[3], arch, cm[i][0], cm[i][1]);
}

int main(int argc, char **argv)
{
    static const Harness h = { rs_src, "rand_scan.tile", specs, NMOD, run_all };
    return harness_main(&h, argc, argv);
}
