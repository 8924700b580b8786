/* launch_cost.c - host time of one launch through libtilert's C API, the C
 * side of bench/launch_cost.py: a vector add (X, Y, Z: f32[N]) compiled by
 * tilec, launched back to back on the legacy default stream.
 *
 *   launch_cost PTX META [N] [CALLS] [ROUNDS]      (defaults 4096 20000 5)
 *
 * Rows, each the host time of one call (microseconds), per round the mean
 * over CALLS calls issued back to back in bursts of BURST, the GPU drained
 * between bursts outside the timed span (a full launch queue would make
 * the calls wait for the GPU, which is not their host cost):
 *   tilert_launch        the runtime's C call: what every launch pays
 *                        once the kernel is loaded (plan from the
 *                        signature cache, pointer ranges known);
 *   tilert_launch_2out   the same, alternating between two output tensors
 *                        (new addresses each call, one signature);
 *   tilert_check_args    the full launch check alone (no GPU, no cache);
 *   cuLaunchKernel       the driver's call alone with the parameters
 *                        packed once: the floor under any launcher.
 * Then one line "first_launch_us": the first tilert_launch (JIT included),
 * and "check: ok" when Z = X + Y after the launches. Output is one line per
 * row: "ROW round_1 ... round_R" (bench/launch_cost.py reads it).
 * Links against libtilert; opens libcuda.so.1 itself for memory and the
 * raw launch (as tests/gpu does: no CUDA toolkit needed). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tilert.h"

enum { BURST = 128 };    /* calls timed back to back before the GPU is drained */

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;

static struct {
    CUresult (*DeviceGet)(int *, int);
    CUresult (*PrimaryCtxRetain)(CUcontext *, int);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*HtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*DtoH)(void *, CUdeviceptr, size_t);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, void *, void **, void **);
} cu;

static const char *const cu_names[] = {
    "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuMemAlloc_v2",
    "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuCtxSynchronize",
    "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel",
};

#define CU(call) do { CUresult r_ = (call); if (r_) { fprintf(stderr, "%s: CUDA error %d\n", #call, r_); exit(1); } } while (0)
#define RT(call) do { if ((call) != TILERT_OK) { fprintf(stderr, "%s: %s\n", #call, tilert_last_error()); exit(1); } } while (0)

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    s[n] = '\0';
    fclose(f);
    return s;
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

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: launch_cost PTX META [N] [CALLS] [ROUNDS]\n");
        return 2;
    }
    int64_t n = argc > 3 ? atoll(argv[3]) : 4096;
    int calls = argc > 4 ? atoi(argv[4]) : 20000, rounds = argc > 5 ? atoi(argv[5]) : 5;
    tilert_driver *drv;
    RT(tilert_driver_open(&drv));
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    void **slot = (void **)&cu;
    for (size_t i = 0; i < sizeof cu_names / sizeof cu_names[0]; i++)
        if (!(slot[i] = dlsym(lib, cu_names[i]))) {
            fprintf(stderr, "libcuda.so.1 lacks %s\n", cu_names[i]);
            return 1;
        }
    int dev;
    CUcontext ctx;
    CU(cu.DeviceGet(&dev, 0));
    CU(cu.PrimaryCtxRetain(&ctx, dev));
    CU(cu.CtxSetCurrent(ctx));

    char *ptx = slurp(argv[1]), *meta = slurp(argv[2]);
    tilert_module *m;
    tilert_kernel *k;
    RT(tilert_module_load(drv, ptx, meta, &m));
    k = tilert_module_kernel_at(m, 0);
    if (tilert_kernel_num_params(k) != 3) {
        fprintf(stderr, "kernel %s: want X, Y, Z (f32[N])\n", tilert_kernel_name(k));
        return 1;
    }
    size_t bytes = (size_t)n * 4;
    float *hx = malloc(bytes), *hy = malloc(bytes), *hz = malloc(bytes);
    for (int64_t i = 0; i < n; i++) {
        hx[i] = (float)i;
        hy[i] = (float)(2 * i + 1);
    }
    CUdeviceptr dx, dy, dz, dz2;
    CU(cu.MemAlloc(&dx, bytes));
    CU(cu.MemAlloc(&dy, bytes));
    CU(cu.MemAlloc(&dz, bytes));
    CU(cu.MemAlloc(&dz2, bytes));
    CU(cu.HtoD(dx, hx, bytes));
    CU(cu.HtoD(dy, hy, bytes));
    DLTensor tx = vec(dx, &n), ty = vec(dy, &n), tz = vec(dz, &n), tz2 = vec(dz2, &n);
    tilert_arg args[3] = {{TILERT_ARG_TENSOR, {.tensor = &tx}}, {TILERT_ARG_TENSOR, {.tensor = &ty}},
                          {TILERT_ARG_TENSOR, {.tensor = &tz}}};
    tilert_arg args2[3] = {args[0], args[1], {TILERT_ARG_TENSOR, {.tensor = &tz2}}};

    double t0 = now_us();
    RT(tilert_launch(k, args, 3, NULL));
    double first = now_us() - t0;
    CU(cu.CtxSynchronize());

    /* the raw launch: the same function, the plan's parameters packed once */
    tilert_launch_plan plan;
    RT(tilert_check_args(k, args, 3, NULL, 0, &plan));
    CUmodule rawmod;
    CUfunction f;
    CU(cu.ModuleLoadData(&rawmod, ptx));
    CU(cu.ModuleGetFunction(&f, rawmod, tilert_kernel_name(plan.kernel)));
    void *params[TILERT_MAX_SLOTS];
    for (size_t i = 0; i < plan.nslots; i++)
        params[i] = &plan.slot[i];

    enum { LAUNCH, LAUNCH2, CHECK, RAW, NROWS };
    static const char *const names[NROWS] = {"tilert_launch", "tilert_launch_2out",
                                             "tilert_check_args", "cuLaunchKernel"};
    double *us = calloc((size_t)NROWS * (size_t)rounds, sizeof *us);
    for (int w = 0; w < 200; w++) {    /* warm: caches, pointer ranges of both outputs */
        RT(tilert_launch(k, (w & 1) ? args2 : args, 3, NULL));
        CU(cu.LaunchKernel(f, plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0], 1, 1,
                           plan.smem, NULL, params, NULL));
    }
    CU(cu.CtxSynchronize());
    for (int r = 0; r < rounds; r++) {
        for (int row = 0; row < NROWS; row++) {
            double t = 0;
            for (int i = 0; i < calls;) {
                int end = i + BURST < calls ? i + BURST : calls;
                CU(cu.CtxSynchronize());
                t0 = now_us();
                for (; i < end; i++) {
                    if (row == LAUNCH)
                        RT(tilert_launch(k, args, 3, NULL));
                    else if (row == LAUNCH2)
                        RT(tilert_launch(k, (i & 1) ? args2 : args, 3, NULL));
                    else if (row == CHECK)
                        RT(tilert_check_args(k, args, 3, NULL, 0, &plan));
                    else
                        CU(cu.LaunchKernel(f, plan.grid[0], plan.grid[1], plan.grid[2], plan.block[0],
                                           1, 1, plan.smem, NULL, params, NULL));
                }
                t += now_us() - t0;
            }
            us[row * rounds + r] = t / calls;
            CU(cu.CtxSynchronize());
        }
    }
    for (int row = 0; row < NROWS; row++) {
        printf("%s", names[row]);
        for (int r = 0; r < rounds; r++)
            printf(" %.3f", us[row * rounds + r]);
        printf("\n");
    }
    printf("first_launch_us %.1f\n", first);
    CU(cu.DtoH(hz, dz, bytes));
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += hz[i] != hx[i] + hy[i];
    CU(cu.DtoH(hz, dz2, bytes));
    for (int64_t i = 0; i < n; i++)
        bad += hz[i] != hx[i] + hy[i];
    printf("check: %s\n", bad ? "FAIL" : "ok");
    CU(cu.MemFree(dx));
    CU(cu.MemFree(dy));
    CU(cu.MemFree(dz));
    CU(cu.MemFree(dz2));
    tilert_module_free(m);
    tilert_driver_close(drv);
    free(us);
    free(hx);
    free(hy);
    free(hz);
    free(ptx);
    free(meta);
    return bad ? 1 : 0;
}
