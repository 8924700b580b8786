/* gpu_vector_add.c - end-to-end GPU test of libtilert: Z = X + Y (or
 * X + alpha * Y when the kernel has an f32 scalar param) against a CPU
 * reference, for sizes with and without a partial last block.
 *
 *   gpu_vector_add                compile TILEC_VECTOR_ADD with TILEC_EXE
 *                                 (-arch=sm_86) into TILEC_WORK_DIR, then test
 *   gpu_vector_add X.ptx X.meta   test precompiled PTX + metadata
 *
 * Every kernel of the module whose params are X, Y, Z: f32[N] (+ one f32
 * scalar) is tested. Exits 77 (a skip) without a CUDA driver or device.
 * Device memory comes from the driver, dlopen'ed (gpu_util) like the runtime does.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpu_util.h"

static int failures;

static uint64_t rng;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) % 2000001) / 1000.0f - 1000.0f;
}

static DLTensor vec(CUdeviceptr p, int64_t *n)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)p;
    t.device.device_type = kDLCUDA;
    t.ndim = 1;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = n;
    return t;
}

/* Does k look like vector add: X, Y, Z f32[N] tensors (+ one f32 scalar)? */
static bool is_vector_add(const tilert_kernel *k, bool *has_alpha)
{
    size_t np = tilert_kernel_num_params(k);
    int tensors = 0, scalars = 0;
    for (size_t i = 0; i < np; i++) {
        tilert_param_info p;
        tilert_kernel_param(k, i, &p);
        if (strcmp(p.dtype, "f32") != 0)
            return false;
        if (p.kind == TILERT_PARAM_TENSOR && p.rank == 1 && (size_t)tensors == i)
            tensors++;
        else if (p.kind == TILERT_PARAM_SCALAR)
            scalars++;
        else
            return false;
    }
    *has_alpha = scalars == 1;
    return tensors == 3 && scalars <= 1;
}

#define GUARD 64    /* poisoned elements after Z: out-of-bounds writes must not land */

/* One size: fresh inputs, poisoned output, launch, compare. */
static void run_size(tilert_kernel *k, bool has_alpha, int64_t n)
{
    size_t bytes = (size_t)n * 4, zbytes = bytes + GUARD * 4;
    float *x = malloc(bytes + 4), *y = malloc(bytes + 4), *z = malloc(zbytes);
    for (int64_t i = 0; i < n; i++) {
        x[i] = frand();
        y[i] = frand();
    }
    memset(z, 0xff, zbytes);    /* NaN poison */
    CUdeviceptr dx, dy, dz;
    GPU_CU(gpu_cu.MemAlloc(&dx, bytes + 4));
    GPU_CU(gpu_cu.MemAlloc(&dy, bytes + 4));
    GPU_CU(gpu_cu.MemAlloc(&dz, zbytes));
    GPU_CU(gpu_cu.HtoD(dx, x, bytes + 4));
    GPU_CU(gpu_cu.HtoD(dy, y, bytes + 4));
    GPU_CU(gpu_cu.HtoD(dz, z, zbytes));
    int64_t shape = n;
    DLTensor tx = vec(dx, &shape), ty = vec(dy, &shape), tz = vec(dz, &shape);
    float alpha = has_alpha ? 2.0f : 1.0f;
    tilert_arg args[4] = {
        {TILERT_ARG_TENSOR, {.tensor = &tx}}, {TILERT_ARG_TENSOR, {.tensor = &ty}},
        {TILERT_ARG_TENSOR, {.tensor = &tz}}, {TILERT_ARG_FLOAT, {.f = alpha}}};
    GPU_RT(tilert_launch(k, args, has_alpha ? 4 : 3, NULL));
    GPU_CU(gpu_cu.CtxSynchronize());
    GPU_CU(gpu_cu.DtoH(z, dz, zbytes));
    int bad = 0;
    for (int64_t i = 0; i < n + GUARD; i++) {
        float want = i < n ? fmaf(alpha, y[i], x[i]) : 0;
        bool ok = i < n ? z[i] == want : isnan(z[i]);
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s N=%lld: Z[%lld] = %g, want %s%g\n", tilert_kernel_name(k),
                    (long long)n, (long long)i, z[i], i < n ? "" : "untouched NaN, not ", want);
    }
    printf("%s N=%lld: %s\n", tilert_kernel_name(k), (long long)n, bad ? "FAIL" : "ok");
    failures += bad != 0;
    GPU_CU(gpu_cu.MemFree(dx));
    GPU_CU(gpu_cu.MemFree(dy));
    GPU_CU(gpu_cu.MemFree(dz));
    free(x);
    free(y);
    free(z);
}

/* Launch errors found on the GPU side: host memory, misalignment; and the
 * output given the input's memory (the metadata's `writes` record). */
static void run_errors(tilert_kernel *k, bool has_alpha)
{
    static float host[256];
    int64_t n = 256;
    CUdeviceptr d, dz;
    GPU_CU(gpu_cu.MemAlloc(&d, 2048));
    GPU_CU(gpu_cu.MemAlloc(&dz, 2048));
    DLTensor th = vec((CUdeviceptr)(uintptr_t)host, &n), td = vec(d, &n), tz = vec(dz, &n);
    tilert_arg args[4] = {
        {TILERT_ARG_TENSOR, {.tensor = &td}}, {TILERT_ARG_TENSOR, {.tensor = &th}},
        {TILERT_ARG_TENSOR, {.tensor = &tz}}, {TILERT_ARG_FLOAT, {.f = 1.0}}};
    size_t na = has_alpha ? 4 : 3;
    tilert_status st = tilert_launch(k, args, na, NULL);
    bool ok = st == TILERT_ERR_ARGS && strstr(tilert_last_error(), "is not CUDA memory");
    printf("%s host-memory tensor rejected: %s (%s)\n", tilert_kernel_name(k), ok ? "ok" : "FAIL",
           tilert_last_error());
    failures += !ok;
    td.byte_offset = 2;
    args[1].u.tensor = &td;
    st = tilert_launch(k, args, na, NULL);
    ok = st == TILERT_ERR_ARGS && strstr(tilert_last_error(), "not aligned");
    printf("%s misaligned tensor rejected: %s (%s)\n", tilert_kernel_name(k), ok ? "ok" : "FAIL",
           tilert_last_error());
    failures += !ok;
    td.byte_offset = 0;
    args[1].u.tensor = &td;
    args[2].u.tensor = &td;    /* Z = X: in place */
    st = tilert_launch(k, args, na, NULL);
    ok = st == TILERT_ERR_ARGS && strstr(tilert_last_error(), "param Z (written by the kernel) starts "
                                         "at the same address as param X");
    printf("%s in-place output rejected: %s (%s)\n", tilert_kernel_name(k), ok ? "ok" : "FAIL",
           tilert_last_error());
    failures += !ok;
    GPU_CU(gpu_cu.MemFree(d));
    GPU_CU(gpu_cu.MemFree(dz));
}

/* Load errors: PTX the JIT rejects (its log comes back), an arch the device lacks. */
static void run_load_errors(tilert_driver *drv, int major)
{
    static const char *meta = "tilec-meta 1\nkernel bad\narch sm_86\nthreads 32\n"
                              "dim N\nparam X tensor f32 1 N align 4\ngrid N\nend\n";
    static const char *ptx = ".version 7.1\n.target sm_86\n.address_size 64\n"
                             ".visible .entry bad(.param .u64 X, .param .u32 N)\n"
                             "{\n  frobnicate.u32 %r1;\n  ret;\n}\n";
    tilert_module *m = NULL;
    tilert_status st = tilert_module_load(drv, ptx, meta, &m);
    bool ok = st == TILERT_ERR_JIT && m == NULL && strstr(tilert_last_error(), "JIT log:");
    printf("bad PTX rejected with the JIT log: %s\n  %s\n", ok ? "ok" : "FAIL", tilert_last_error());
    failures += !ok;
    char meta2[512];
    const char *other = major == 9 ? "sm_100a" : "sm_90a";
    snprintf(meta2, sizeof meta2, "tilec-meta 1\nkernel bad\narch %s\nthreads 32\n"
             "dim N\nparam X tensor f32 1 N align 4\ngrid N\nend\n", other);
    st = tilert_module_load(drv, ptx, meta2, &m);
    ok = st == TILERT_ERR_JIT && strstr(tilert_last_error(), "cannot run on device");
    printf("%s module rejected on this device: %s\n  %s\n", other, ok ? "ok" : "FAIL",
           tilert_last_error());
    failures += !ok;
}

static void compile(char *ptx, char *meta, size_t len)
{
#if defined(TILEC_EXE) && defined(TILEC_VECTOR_ADD) && defined(TILEC_WORK_DIR)
    char cmd[8192];
    snprintf(ptx, len, "%s/vector_add.ptx", TILEC_WORK_DIR);
    snprintf(meta, len, "%s/vector_add.meta", TILEC_WORK_DIR);
    snprintf(cmd, sizeof cmd, "'%s' '%s' -arch=sm_86 -o '%s'", TILEC_EXE, TILEC_VECTOR_ADD, ptx);
    gpu_run_tilec(cmd);
#else
    (void)ptx; (void)meta; (void)len;
    fprintf(stderr, "built without TILEC_EXE: pass X.ptx X.meta\n");
    exit(1);
#endif
}

int main(int argc, char **argv)
{
    tilert_driver *drv = gpu_open();     /* exits 77 without a driver or device */
    char ptx[4096], meta[4096], arch[16];
    if (argc == 3) {
        snprintf(ptx, sizeof ptx, "%s", argv[1]);
        snprintf(meta, sizeof meta, "%s", argv[2]);
    } else {
        compile(ptx, meta, sizeof ptx);
    }
    GPU_RT(tilert_device_arch(drv, 0, arch, sizeof arch));
    int major, minor;
    GPU_RT(tilert_device_capability(drv, 0, &major, &minor));
    rng = (uint64_t)time(NULL) * 2654435761u | 1;
    printf("device arch %s, seed %llu\n", arch, (unsigned long long)rng);
    tilert_module *m;
    GPU_RT(tilert_module_load_files(drv, ptx, meta, &m));   /* no current context yet: primary */
    gpu_cuda_init();                                     /* now it is current */
    int tested = 0;
    for (size_t i = 0; i < tilert_module_num_kernels(m); i++) {
        tilert_kernel *k = tilert_module_kernel_at(m, i);
        int cl[3];
        bool has_alpha;
        tilert_kernel_cluster(k, cl);
        if (!is_vector_add(k, &has_alpha) || (cl[0] * cl[1] * cl[2] > 1 && major < 9))
            continue;
        static const int64_t sizes[] = {0, 1, 127, 1024, 1000003};
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            run_size(k, has_alpha, sizes[s]);
        run_errors(k, has_alpha);
        tested++;
    }
    run_load_errors(drv, major);
    GPU_RT(tilert_synchronize(drv));
    tilert_module_free(m);
    tilert_driver_close(drv);
    if (!tested) {
        fprintf(stderr, "no vector-add kernel (X, Y, Z: f32[N]) in %s\n", meta);
        return 1;
    }
    printf("%s\n", failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
}
