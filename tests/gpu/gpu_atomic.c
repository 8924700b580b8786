/* gpu_atomic.c - atomic_add on the GPU (docs/language.md, "Atomic adds"):
 * a split-K product (every block adds the A @ B of its K slice to C) and a
 * one-pass column sum (every block adds the column sums of its rows to S,
 * and 1 to a block counter), compiled by tilec for the device's arch and
 * for sm_86, launched through libtilert, checked against a C reference in
 * double. The outputs start from random values (the additions land on
 * them) and are followed by a poisoned guard zone that must stay untouched.
 * Tolerance: 1e-5 relative Frobenius error (the order of the f32 additions
 * differs from the reference's); the counter is exact.
 *
 *   gpu_atomic                 compile with TILEC_EXE into TILEC_WORK_DIR, then test
 *   gpu_atomic DIR             test precompiled DIR/ARCH/atomic.ptx + .meta
 *                              (tests/gpu/make_ptx.sh writes them)
 *   gpu_atomic --print-source  the kernels' source, for make_ptx.sh
 *
 * Exit 0 if every check passed, 77 without a CUDA driver or device, 1
 * otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#include "../unit/splitk_src.h"

static const char colsum_src[] =
    "kernel colsum<BM: int = 64, BN: int = 128>(X: global f32[M, N], S: global f32[N], count: global i32[1])\n"
    "  grid(cdiv(N, BN), cdiv(M, BM))\n"
    "{\n"
    "  let n0 = block.x * BN;\n"
    "  atomic_add(S[n0 : +BN], colsum(X[block.y * BM : +BM, n0 : +BN]));\n"
    "  atomic_add(count[0], 1);\n"
    "}\n";

/* The module for `arch`: DIR/ARCH/atomic.ptx when dir is given (false if
 * absent), else compiled now. */
static bool module_files(const char *dir, const char *arch, char *ptx, char *meta, size_t len)
{
    if (!dir)
        return false;
    snprintf(ptx, len, "%s/%s/atomic.ptx", dir, arch);
    snprintf(meta, len, "%s/%s/atomic.meta", dir, arch);
    FILE *f = fopen(ptx, "r");
    if (f)
        fclose(f);
    else
        printf("== %s: no %s, not tested\n", arch, ptx);
    return f != NULL;
}

static void compile(const char *arch, char *ptx, char *meta, size_t len)
{
#if defined(TILEC_EXE) && defined(TILEC_WORK_DIR)
    char src[4096], cmd[16384];
    snprintf(src, sizeof src, "%s/atomic.tile", TILEC_WORK_DIR);
    snprintf(ptx, len, "%s/atomic_%s.ptx", TILEC_WORK_DIR, arch);
    snprintf(meta, len, "%s/atomic_%s.meta", TILEC_WORK_DIR, arch);
    FILE *f = fopen(src, "w");
    if (!f || fputs(splitk_src, f) < 0 || fputs("\n", f) < 0 || fputs(colsum_src, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", src);
        exit(1);
    }
    snprintf(cmd, sizeof cmd, "'%s' '%s' -arch=%s -o '%s'", TILEC_EXE, src, arch, ptx);
    gpu_run_tilec(cmd);
#else
    (void)arch; (void)ptx; (void)meta; (void)len;
    fprintf(stderr, "built without TILEC_EXE\n");
    exit(1);
#endif
}

/* An output buffer of n elements starting from random values (returned in
 * init), its guard zone poisoned. */
static gpu_buf start_values(gpu_dtype dt, size_t n, double *init)
{
    gpu_buf b = gpu_output(dt, n);
    for (size_t i = 0; i < n; i++) {
        gpu_set(dt, b.host, i, gpu_frand(4));
        init[i] = gpu_get(dt, b.host, i);
    }
    if (n)
        GPU_CU(gpu_cu.HtoD(b.dev, b.host, n * gpu_dtype_size(dt)));
    return b;
}

static void run_splitk(tilert_kernel *k, const char *arch, int64_t m, int64_t n, int64_t kk)
{
    gpu_context("%s splitk M=%lld N=%lld K=%lld", arch, (long long)m, (long long)n, (long long)kk);
    size_t mn = (size_t)(m * n);
    double *ref = malloc(sizeof(double) * (mn + 1)), *got = malloc(sizeof(double) * (mn + 1));
    gpu_buf a = gpu_input(GPU_BF16, (size_t)(m * kk), 1), b = gpu_input(GPU_BF16, (size_t)(kk * n), 1);
    gpu_buf c = start_values(GPU_F32, mn, ref);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t p = 0; p < kk; p++)
                ref[i * n + j] += gpu_get(GPU_BF16, a.host, (size_t)(i * kk + p)) *
                                  gpu_get(GPU_BF16, b.host, (size_t)(p * n + j));
    int64_t as[2] = { m, kk }, bs[2] = { kk, n }, cs[2] = { m, n };
    DLTensor ta = gpu_tensor(&a, 2, as), tb = gpu_tensor(&b, 2, bs), tc = gpu_tensor(&c, 2, cs);
    tilert_arg args[3] = { { TILERT_ARG_TENSOR, { .tensor = &ta } }, { TILERT_ARG_TENSOR, { .tensor = &tb } },
                           { TILERT_ARG_TENSOR, { .tensor = &tc } } };
    GPU_RT(tilert_launch(k, args, 3, NULL));
    GPU_CU(gpu_cu.CtxSynchronize());
    char label[128];
    snprintf(label, sizeof label, "%s splitk %lldx%lldx%lld", arch, (long long)m, (long long)n, (long long)kk);
    bool fetched = gpu_fetch(&c, got, label);
    double err = gpu_rel_err(got, ref, mn);
    gpu_result(fetched && err < 1e-5, "%s: rel err %.2e", label, err);
    gpu_free(&a);
    gpu_free(&b);
    gpu_free(&c);
    free(ref);
    free(got);
}

static void run_colsum(tilert_kernel *k, const char *arch, int64_t m, int64_t n)
{
    gpu_context("%s colsum M=%lld N=%lld", arch, (long long)m, (long long)n);
    double *ref = malloc(sizeof(double) * ((size_t)n + 1)), *got = malloc(sizeof(double) * ((size_t)n + 1));
    double cinit, cgot;
    gpu_buf x = gpu_input(GPU_F32, (size_t)(m * n), 1);
    gpu_buf s = start_values(GPU_F32, (size_t)n, ref);
    gpu_buf cnt = gpu_output(GPU_F32, 1);   /* 4 bytes: the i32 counter, set below */
    int32_t c0 = 7;
    memcpy(cnt.host, &c0, 4);
    GPU_CU(gpu_cu.HtoD(cnt.dev, cnt.host, 4));
    cinit = c0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            ref[j] += gpu_get(GPU_F32, x.host, (size_t)(i * n + j));
    int64_t xs[2] = { m, n }, ss = n, one = 1;
    DLTensor tx = gpu_tensor(&x, 2, xs), ts = gpu_tensor(&s, 1, &ss), tn = gpu_tensor(&cnt, 1, &one);
    tn.dtype.code = kDLInt;
    tilert_arg args[3] = { { TILERT_ARG_TENSOR, { .tensor = &tx } }, { TILERT_ARG_TENSOR, { .tensor = &ts } },
                           { TILERT_ARG_TENSOR, { .tensor = &tn } } };
    GPU_RT(tilert_launch(k, args, 3, NULL));
    GPU_CU(gpu_cu.CtxSynchronize());
    char label[128];
    snprintf(label, sizeof label, "%s colsum %lldx%lld", arch, (long long)m, (long long)n);
    bool fetched = gpu_fetch(&s, got, label);
    double err = gpu_rel_err(got, ref, (size_t)n);
    GPU_CU(gpu_cu.DtoH(cnt.host, cnt.dev, 4));
    int32_t c1;
    memcpy(&c1, cnt.host, 4);
    cgot = c1;
    int64_t blocks = ((n + 127) / 128) * ((m + 63) / 64);
    gpu_result(fetched && err < 1e-5 && cgot == cinit + (double)blocks, "%s: rel err %.2e, counter %d (want %lld)",
               label, err, c1, (long long)(c0 + blocks));
    gpu_free(&x);
    gpu_free(&s);
    gpu_free(&cnt);
    free(ref);
    free(got);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--print-source") == 0) {
        printf("%s\n%s", splitk_src, colsum_src);
        return 0;
    }
    const char *dir = argc == 2 ? argv[1] : NULL;
    gpu_archs ga;
    tilert_driver *drv = gpu_test_open(&ga);   /* exits 77 without a GPU */
    const char *const *archs = ga.list;
    bool ctx = false;
    for (int ai = 0; ai < ga.n; ai++) {
        char ptx[4096], meta[4096];
        if (dir && !module_files(dir, archs[ai], ptx, meta, sizeof ptx))
            continue;
        if (!dir)
            compile(archs[ai], ptx, meta, sizeof ptx);
        tilert_module *mod;
        GPU_RT(tilert_module_load_files(drv, ptx, meta, &mod));
        if (!ctx) {
            gpu_cuda_init();
            ctx = true;
        }
        tilert_kernel *sk = NULL, *cs = NULL;
        if (tilert_module_get_kernel(mod, "splitk", &sk) != TILERT_OK ||
            tilert_module_get_kernel(mod, "colsum", &cs) != TILERT_OK) {
            fprintf(stderr, "kernels splitk and colsum not found\n");
            return 1;
        }
        static const int64_t mnk[][3] = { { 64, 64, 64 }, { 1, 1, 1 }, { 100, 70, 300 }, { 257, 129, 1000 },
                                          { 512, 512, 4096 } };
        for (size_t i = 0; i < sizeof mnk / sizeof mnk[0]; i++)
            run_splitk(sk, archs[ai], mnk[i][0], mnk[i][1], mnk[i][2]);
        static const int64_t mn[][2] = { { 1, 1 }, { 1000, 333 }, { 4097, 128 }, { 100000, 64 } };
        for (size_t i = 0; i < sizeof mn / sizeof mn[0]; i++)
            run_colsum(cs, archs[ai], mn[i][0], mn[i][1]);
        tilert_module_free(mod);
    }
    GPU_RT(tilert_synchronize(drv));
    tilert_driver_close(drv);
    return gpu_summary();
}
