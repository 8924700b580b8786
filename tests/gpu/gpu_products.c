/* gpu_products.c - matrix products of every dtype the code generator
 * takes beyond bf16 and f16 (docs/language.md, "Matrix product and
 * transpose"), on random data of odd sizes (M x N x K = 129 x 257 x 65:
 * every tile edge masked), against C references:
 *   examples/gemm.tile T = f8e4m3  mma.sync, operands converted to f16 in
 *                                  registers; C rounded to e4m3
 *   examples/gemm.tile T = f32     simt (f32 fma on the FMA units)
 *   the same, mma_select.tf32=1    mma.sync m16n8k8 .tf32: e = 2^-9 sum |a b|
 *                                  more (operands rounded to tf32)
 *   gemm_i8 (below)                mma.sync m16n8k32 .s8: exact
 *   gemm_i8 with BK = 16 (i8_k16)  simt, i32 multiply-add: exact
 *   f8_nt (below)                  f8e5m2, A from registers (staged as
 *                                  f16), B read transposed ([N, K] rows:
 *                                  16-bit loads), f32 result
 *   f8_nt_wg_e4m3, _e5m2 (below)   B given as [N, K] rows, 128 x 128 x 128
 *                                  tiles, f32 result: on sm_90a wgmma
 *                                  m64n128k32 .e4m3 / .e5m2 in TMA / wgmma
 *                                  roles; K = 80 (one partial trip) and
 *                                  1040 (nine, the last partial), row
 *                                  strides multiples of 16 bytes as TMA
 *                                  needs (at K = 65 the module's portable
 *                                  kernel would run instead); e = 2^-7
 *                                  sum |a b| more: the 8-bit path aligns
 *                                  each k32 group's products to the largest
 *                                  and keeps 14 bits (at most 32 x 2^-12 of
 *                                  that group's largest product lost),
 *                                  before tilec's promotion into f32
 *   odd_f32 (below)                f32 tiles of extents that are not
 *                                  multiples of 16 (24 x 40 x 20: simt in
 *                                  the default layout)
 * Float results: the exact sum s (double) of products that are exact in
 * f32 (f8) or of f32 operands, and e = 2^-21 K sum |a b| (f32 accumulation
 * in any order, a tensor core's truncating adds included); an f32 result
 * must lie in [s - e, s + e], an e4m3 one between the e4m3 roundings of
 * s - e and s + e (rounding is monotonic). The interpreter (--interp)
 * rounds s once, which these bounds hold. i32 results are exact.
 *
 *   gpu_products                 compile with TILEC_EXE into TILEC_WORK_DIR, then test
 *   gpu_products DIR             test precompiled DIR/ARCH/<module>.ptx + .meta
 *                                (tests/gpu/make_ptx.sh writes them)
 *   gpu_products --print-source  the test's own kernels, for make_ptx.sh
 *   gpu_products --interp        the same checks on the IR interpreter
 *
 * Exit 0 if every check passed, 77 without a CUDA driver or device (not in
 * --interp), 1 otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_harness.h"

static const char pr_src[] =
    "kernel gemm_i8<BM: int = 128, BN: int = 128, BK: int = 64>(\n"
    "    A: global i8[M, K], B: global i8[K, N], C: global i32[M, N])\n"
    "  grid(cdiv(N, BN), cdiv(M, BM))\n"
    "{\n"
    "  tile acc: reg i32[BM, BN] = 0;\n"
    "  for k in 0 .. cdiv(K, BK) {\n"
    "    tile a: shared i8[BM, BK] = A[block.y * BM : +BM, k * BK : +BK];\n"
    "    tile b: shared i8[BK, BN] = B[k * BK : +BK, block.x * BN : +BN];\n"
    "    acc += a @ b;\n"
    "  }\n"
    "  C[block.y * BM : +BM, block.x * BN : +BN] = acc;\n"
    "}\n"
    "\n"
    "kernel i8_k16(A: global i8[M, K], B: global i8[K, N], C: global i32[M, N])\n"
    "  grid(cdiv(N, 64), cdiv(M, 64))\n"
    "{\n"
    "  tile acc: reg i32[64, 64] = 0;\n"
    "  for k in 0 .. cdiv(K, 16) {\n"
    "    tile a: shared i8[64, 16] = A[block.y * 64 : +64, k * 16 : +16];\n"
    "    tile b: shared i8[16, 64] = B[k * 16 : +16, block.x * 64 : +64];\n"
    "    acc += a @ b;\n"
    "  }\n"
    "  C[block.y * 64 : +64, block.x * 64 : +64] = acc;\n"
    "}\n"
    "\n"
    "kernel f8_nt(A: global f8e5m2[M, K], B: global f8e5m2[N, K], C: global f32[M, N])\n"
    "  grid(cdiv(N, 64), cdiv(M, 64))\n"
    "{\n"
    "  tile acc: reg f32[64, 64] = 0;\n"
    "  for k in 0 .. cdiv(K, 32) {\n"
    "    tile a: reg f8e5m2[64, 32] = A[block.y * 64 : +64, k * 32 : +32];\n"
    "    tile b: shared f8e5m2[64, 32] = B[block.x * 64 : +64, k * 32 : +32];\n"
    "    acc += a @ b^T;\n"
    "  }\n"
    "  C[block.y * 64 : +64, block.x * 64 : +64] = acc;\n"
    "}\n"
    "\n"
    "kernel f8_nt_wg_e4m3(A: global f8e4m3[M, K], B: global f8e4m3[N, K], C: global f32[M, N])\n"
    "  grid(cdiv(N, 128), cdiv(M, 128))\n"
    "{\n"
    "  tile acc: reg f32[128, 128] = 0;\n"
    "  for k in 0 .. cdiv(K, 128) {\n"
    "    tile a: shared f8e4m3[128, 128] = A[block.y * 128 : +128, k * 128 : +128];\n"
    "    tile b: shared f8e4m3[128, 128] = B[block.x * 128 : +128, k * 128 : +128];\n"
    "    acc += a @ b^T;\n"
    "  }\n"
    "  C[block.y * 128 : +128, block.x * 128 : +128] = acc;\n"
    "}\n"
    "\n"
    "kernel f8_nt_wg_e5m2(A: global f8e5m2[M, K], B: global f8e5m2[N, K], C: global f32[M, N])\n"
    "  grid(cdiv(N, 128), cdiv(M, 128))\n"
    "{\n"
    "  tile acc: reg f32[128, 128] = 0;\n"
    "  for k in 0 .. cdiv(K, 128) {\n"
    "    tile a: shared f8e5m2[128, 128] = A[block.y * 128 : +128, k * 128 : +128];\n"
    "    tile b: shared f8e5m2[128, 128] = B[block.x * 128 : +128, k * 128 : +128];\n"
    "    acc += a @ b^T;\n"
    "  }\n"
    "  C[block.y * 128 : +128, block.x * 128 : +128] = acc;\n"
    "}\n"
    "\n"
    "kernel odd_f32(A: global f32[M, K], B: global f32[K, N], C: global f32[M, N])\n"
    "  grid(cdiv(N, 40), cdiv(M, 24))\n"
    "{\n"
    "  tile acc: reg f32[24, 40] = 0;\n"
    "  for k in 0 .. cdiv(K, 20) {\n"
    "    tile a: shared f32[24, 20] = A[block.y * 24 : +24, k * 20 : +20];\n"
    "    tile b = B[k * 20 : +20, block.x * 40 : +40];\n"
    "    acc += a @ b;\n"
    "  }\n"
    "  C[block.y * 24 : +24, block.x * 40 : +40] = acc;\n"
    "}\n";

static const ModSpec specs[] = {
    { "products", NULL, "" },
    { "gemm_f8e4m3", "gemm", "-DT=f8e4m3" },
    { "gemm_f32", "gemm", "-DT=f32" },
    { "gemm_tf32", "gemm", "-DT=f32 --pass-option mma_select.tf32=1" },
};
enum { NMOD = sizeof specs / sizeof specs[0] };

/* ---- f8 on the host (as ir/numeric.c: round to nearest even; e4m3
 * saturates at 448, e5m2 overflows to infinity) ---- */

typedef struct F8 { int mbits, ebits, bias; bool has_inf; } F8;
static const F8 e4m3 = { 3, 4, 7, false }, e5m2 = { 2, 5, 15, true };

static double f8_max(const F8 *f)
{
    int emax = (1 << f->ebits) - 1 - f->bias;
    return f->has_inf ? ldexp(2.0 - ldexp(1.0, -f->mbits), emax - 1) : ldexp(2.0 - ldexp(1.0, 1 - f->mbits), emax);
}

static double f8_decode(const F8 *f, unsigned b)
{
    unsigned mm = (1u << f->mbits) - 1, em = (1u << f->ebits) - 1;
    unsigned mant = b & mm, ex = (b >> f->mbits) & em;
    double v;
    if (ex == em && f->has_inf)
        v = mant ? NAN : INFINITY;
    else if (ex == em && mant == mm)
        v = NAN;
    else if (ex == 0)
        v = ldexp((double)mant, 1 - f->bias - f->mbits);
    else
        v = ldexp(1.0 + ldexp((double)mant, -f->mbits), (int)ex - f->bias);
    return (b >> (f->mbits + f->ebits)) & 1 ? -v : v;
}

static double f8_round(const F8 *f, double x)
{
    double max = f8_max(f), a = fabs(x);
    if (isnan(x) || a == 0.0)
        return x;
    if (isinf(x))
        return f->has_inf ? x : copysign(max, x);
    int e;
    frexp(a, &e);
    e -= 1;
    if (e < 1 - f->bias)
        e = 1 - f->bias;
    double q = ldexp(1.0, e - f->mbits), r = nearbyint(a / q) * q;
    if (r > max)
        r = f->has_inf ? INFINITY : max;
    return copysign(r, x);
}

/* A random f8 byte of magnitude below 4 (exponent field up to the bias + 1),
 * subnormals included, never NaN. */
static unsigned char f8_rand(const F8 *f)
{
    unsigned u = (unsigned)(fabsf(gpu_frand(1.0f)) * 1048576.0f);
    unsigned ex = u % (unsigned)(f->bias + 2), mant = (u >> 5) & ((1u << f->mbits) - 1), sign = (u >> 9) & 1;
    return (unsigned char)(sign << (f->mbits + f->ebits) | ex << f->mbits | mant);
}

static int32_t i32_of(const HostT *t, size_t i)
{
    int32_t v;
    memcpy(&v, t->data + 4 * i, 4);
    return v;
}

/* Element (i, j) of an operand as a double: f32, i8 or f8 (fmt). */
static double opnd(const HostT *t, const F8 *fmt, int64_t i, int64_t j)
{
    size_t k = (size_t)(i * t->shape[1] + j);
    if (fmt)
        return f8_decode(fmt, t->data[k]);
    if (!strcmp(t->dt, "i8"))
        return (double)(int8_t)t->data[k];
    return f32_at(t, k);
}

/* A (M x K) @ B: B is K x N, or N x K when bt. Checks C (f32, e4m3 with
 * out8, or i32) against the bounds in the header; returns the bad count. */
static int64_t check_c(const HostT *a, const HostT *b, bool bt, const F8 *fmt, const HostT *c, const F8 *out8,
                       double extra, int64_t *worst_at)
{
    int64_t m = a->shape[0], k = a->shape[1], n = c->shape[1], bad = 0;
    bool ints = !strcmp(c->dt, "i32");
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, sa = 0;
            int64_t si = 0;
            for (int64_t p = 0; p < k; p++) {
                double x = opnd(a, fmt, i, p), y = bt ? opnd(b, fmt, j, p) : opnd(b, fmt, p, j);
                s += x * y;
                sa += fabs(x * y);
                si += (int64_t)x * (int64_t)y;
            }
            size_t at = (size_t)(i * n + j);
            bool ok;
            if (ints) {
                ok = i32_of(c, at) == (int32_t)(uint32_t)(uint64_t)si;
            } else {
                double e = ldexp(sa, -21) * (double)k + extra * sa;
                if (out8) {
                    double g = f8_decode(out8, c->data[at]);
                    ok = g >= f8_round(out8, s - e) && g <= f8_round(out8, s + e);
                } else {
                    double g = f32_at(c, at);
                    ok = g >= s - e - 1e-30 && g <= s + e + 1e-30;
                }
            }
            if (!ok && bad++ == 0)
                *worst_at = i * n + j;
        }
    return bad;
}

static void fill_operand(HostT *t, const F8 *fmt)
{
    for (size_t i = 0; i < numel(t); i++) {
        if (fmt)
            t->data[i] = f8_rand(fmt);
        else if (!strcmp(t->dt, "i8"))
            t->data[i] = (unsigned char)((unsigned)(fabsf(gpu_frand(1.0f)) * 1048576.0f) & 0xff);
    }
    if (!fmt && strcmp(t->dt, "i8") != 0)
        fill(t, 2.0f);
}

/* One product C = A @ B (B transposed when bt) of kernel `kernel` in m;
 * extra: a relative error beyond f32 accumulation's (tf32 operands). */
static void check_product(Mod *m, const char *arch, const char *kernel, const char *dt, const F8 *fmt, bool bt,
                          const char *cdt, const F8 *out8, double extra, int64_t M, int64_t N, int64_t K)
{
    char label[160];
    snprintf(label, sizeof label, "%s %s %s %lldx%lldx%lld", arch, kernel, dt, (long long)M, (long long)N,
             (long long)K);
    gpu_context("%s", label);
    HostT a = host_t(dt, 2, M, K), b = bt ? host_t(dt, 2, N, K) : host_t(dt, 2, K, N), c = host_t(cdt, 2, M, N);
    fill_operand(&a, fmt);
    fill_operand(&b, fmt);
    Arg args[3] = { { &a, 0, 0, false }, { &b, 0, 0, false }, { &c, 0, 0, false } };
    bool ok = run_kernel(m, kernel, args, 3, label);
    int64_t at = -1, bad = ok ? check_c(&a, &b, bt, fmt, &c, out8, extra, &at) : -1;
    gpu_result(ok && bad == 0, "%s: %lld of %lld elements outside the bounds (first at row %lld, column %lld)",
               label, (long long)bad, (long long)(M * N), (long long)(at < 0 ? -1 : at / N),
               (long long)(at < 0 ? -1 : at % N));
    free(a.data), free(b.data), free(c.data);
}

static void run_all(Mod *mods, const char *arch)
{
    const int64_t M = 129, N = 257, K = 65;
    check_product(&mods[1], arch, "gemm", "f8e4m3", &e4m3, false, "f8e4m3", &e4m3, 0, M, N, K);
    check_product(&mods[2], arch, "gemm", "f32", NULL, false, "f32", NULL, 0, M, N, K);
    check_product(&mods[3], arch, "gemm", "f32", NULL, false, "f32", NULL, ldexp(1.0, -9), M, N, K);
    check_product(&mods[0], arch, "gemm_i8", "i8", NULL, false, "i32", NULL, 0, M, N, K);
    check_product(&mods[0], arch, "i8_k16", "i8", NULL, false, "i32", NULL, 0, M, N, K);
    check_product(&mods[0], arch, "f8_nt", "f8e5m2", &e5m2, true, "f32", NULL, 0, M, N, K);
    for (int64_t kw = 80; kw <= 1040; kw += 960) {
        check_product(&mods[0], arch, "f8_nt_wg_e4m3", "f8e4m3", &e4m3, true, "f32", NULL, ldexp(1.0, -7), M, N, kw);
        check_product(&mods[0], arch, "f8_nt_wg_e5m2", "f8e5m2", &e5m2, true, "f32", NULL, ldexp(1.0, -7), M, N, kw);
    }
    check_product(&mods[0], arch, "odd_f32", "f32", NULL, false, "f32", NULL, 0, M, N, K);
    check_product(&mods[0], arch, "odd_f32", "f32", NULL, false, "f32", NULL, 0, 7, 3, 5);
}

int main(int argc, char **argv)
{
    static const Harness h = { pr_src, "products.tile", specs, NMOD, run_all };
    return harness_main(&h, argc, argv);
}
