/* gpu_util.c - helpers shared by the C GPU tests (see gpu_util.h): the
 * dlopen'ed CUDA driver, device buffers, random fill, bf16/f16 conversion,
 * relative error and the pass/fail tally. */
#include "gpu_util.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

gpu_cuda gpu_cu;

static char context[512];
static int passed, failed;

/* ---- The CUDA driver ----------------------------------------------------- */

void gpu_context(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
}

static void fatal_tail(void)
{
    if (context[0])
        fprintf(stderr, "  while: %s\n", context);
    fprintf(stderr, "%d passed, %d failed (stopped at a fatal error)\n", passed, failed + 1);
    exit(1);
}

void gpu_cu_check(CUresult r, const char *what, const char *file, int line)
{
    if (r == 0)
        return;
    const char *name = NULL;
    if (!gpu_cu.GetErrorName || gpu_cu.GetErrorName(r, &name) != 0 || !name)
        name = "unknown";
    fprintf(stderr, "%s:%d: %s failed: CUDA error %d (%s)\n", file, line, what, r, name);
    fatal_tail();
}

void gpu_rt_check(tilert_status st, const char *what, const char *file, int line)
{
    if (st == TILERT_OK)
        return;
    fprintf(stderr, "%s:%d: %s failed: %s: %s\n", file, line, what, tilert_status_string(st),
            tilert_last_error());
    fatal_tail();
}

/* dlopen libcuda.so.1 and resolve gpu_cu. ORDER: struct gpu_cuda. */
static void open_cuda(void)
{
    static const char *const names[] = {"cuDeviceGet", "cuDevicePrimaryCtxRetain",
        "cuCtxSetCurrent", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2",
        "cuMemcpyDtoH_v2", "cuCtxSynchronize", "cuGetErrorName"};
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "libcuda.so.1: %s\n", dlerror());
        exit(1);
    }
    _Static_assert(sizeof names / sizeof names[0] == sizeof(gpu_cuda) / sizeof(void (*)(void)),
                   "gpu_cuda and its name table disagree");
    void **slots = (void **)&gpu_cu;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(slots[i] = dlsym(lib, names[i]))) {
            fprintf(stderr, "libcuda.so.1 lacks %s\n", names[i]);
            exit(1);
        }
}

tilert_driver *gpu_open(void)
{
    tilert_driver *drv = NULL;
    tilert_status st = tilert_driver_open(&drv);
    if (st == TILERT_ERR_NO_DRIVER || st == TILERT_ERR_NO_DEVICE) {
        printf("skipped: %s\n", tilert_last_error());
        exit(77);
    }
    GPU_RT(st);
    return drv;
}

tilert_driver *gpu_test_open(gpu_archs *a)
{
    tilert_driver *drv = gpu_open();
    GPU_RT(tilert_device_arch(drv, 0, a->device, sizeof a->device));
    printf("device arch %s, seed %llu\n", a->device, (unsigned long long)gpu_seed());
    a->list[0] = a->device;
    a->list[1] = "sm_86";
    a->n = strcmp(a->device, "sm_86") == 0 ? 1 : 2;
    return drv;
}

void gpu_cuda_init(void)
{
    int dev;
    CUcontext ctx;
    open_cuda();
    GPU_CU(gpu_cu.DeviceGet(&dev, 0));
    GPU_CU(gpu_cu.PrimaryCtxRetain(&ctx, dev));
    GPU_CU(gpu_cu.CtxSetCurrent(ctx));
}

void gpu_run_tilec(const char *cmd)
{
    printf("+ %s\n", cmd);
    fflush(stdout);
    if (system(cmd) != 0) {
        fprintf(stderr, "tilec failed\n");
        exit(1);
    }
}

bool gpu_load_module(tilert_driver *drv, const char *ptx, const char *meta, tilert_module **out)
{
    tilert_status st = tilert_module_load_files(drv, ptx, meta, out);
    if (st == TILERT_OK)
        return true;
    printf("cannot load %s: %s: %s\n", ptx, tilert_status_string(st), tilert_last_error());
    return false;
}

void *gpu_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu x %zu bytes)\n", n, size);
        fatal_tail();
    }
    return p;
}

/* ---- Element types --------------------------------------------------------- */

size_t gpu_dtype_size(gpu_dtype dt)
{
    return dt == GPU_F32 ? 4 : 2;
}

const char *gpu_dtype_name(gpu_dtype dt)
{
    return dt == GPU_F32 ? "f32" : dt == GPU_F16 ? "f16" : "bf16";
}

DLDataType gpu_dtype_dl(gpu_dtype dt)
{
    DLDataType t;
    t.code = dt == GPU_BF16 ? kDLBfloat : kDLFloat;
    t.bits = (uint8_t)(8 * gpu_dtype_size(dt));
    t.lanes = 1;
    return t;
}

static uint32_t f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return x;
}

uint16_t gpu_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);        /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1);                 /* round to nearest even */
    return (uint16_t)(x >> 16);
}

float gpu_bf16_to_f32(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t gpu_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return sign | 0x7e00;                       /* NaN */
    if (ax >= 0x477ff000u)
        return sign | 0x7c00;                       /* >= 65520 rounds to inf */
    if (ax < 0x38800000u) {                         /* under 2^-14: subnormal or 0 */
        float a;
        memcpy(&a, &ax, 4);
        return sign | (uint16_t)lrintf(a * 16777216.0f);   /* units of 2^-24, exact scale */
    }
    uint32_t h = (((ax >> 23) - 112) << 10) | ((ax & 0x7fffff) >> 13);   /* rebias 127 -> 15 */
    uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
        h++;                                        /* a carry into the exponent is right */
    return sign | (uint16_t)h;
}

float gpu_f16_to_f32(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v;
    if (e == 0)
        v = ldexpf((float)m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}

double gpu_get(gpu_dtype dt, const void *buf, size_t i)
{
    if (dt == GPU_F32)
        return ((const float *)buf)[i];
    uint16_t b = ((const uint16_t *)buf)[i];
    return dt == GPU_F16 ? gpu_f16_to_f32(b) : gpu_bf16_to_f32(b);
}

void gpu_set(gpu_dtype dt, void *buf, size_t i, float v)
{
    if (dt == GPU_F32)
        ((float *)buf)[i] = v;
    else
        ((uint16_t *)buf)[i] = dt == GPU_F16 ? gpu_f32_to_f16(v) : gpu_f32_to_bf16(v);
}

/* ---- Random numbers ------------------------------------------------------- */

static uint64_t rng = 1;

uint64_t gpu_seed(void)
{
    const char *env = getenv("TILEC_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0)
                                : (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)clock();
    rng = seed ? seed : 1;      /* xorshift needs a nonzero state */
    return seed;
}

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

float gpu_frand(float scale)
{
    uint64_t r = next();
    float mag = (float)(1 + (r >> 12) % 1024) / 1024.0f;   /* 1/1024 .. 1 */
    return ((r >> 11) & 1 ? -mag : mag) * scale;
}

/* ---- Device buffers ------------------------------------------------------- */

static gpu_buf make_buf(gpu_dtype dt, size_t n, size_t guard)
{
    gpu_buf b = {dt, n, guard, NULL, 0};
    size_t bytes = (n + guard) * gpu_dtype_size(dt);
    b.host = gpu_calloc(bytes, 1);
    GPU_CU(gpu_cu.MemAlloc(&b.dev, bytes ? bytes : 16));   /* cuMemAlloc rejects 0 */
    return b;
}

static void upload(gpu_buf *b)
{
    size_t bytes = (b->n + b->guard) * gpu_dtype_size(b->dt);
    if (bytes)
        GPU_CU(gpu_cu.HtoD(b->dev, b->host, bytes));
}

gpu_buf gpu_input(gpu_dtype dt, size_t n, float scale)
{
    gpu_buf b = make_buf(dt, n, 0);
    for (size_t i = 0; i < n; i++)
        gpu_set(dt, b.host, i, gpu_frand(scale));
    upload(&b);
    return b;
}

gpu_buf gpu_output(gpu_dtype dt, size_t n)
{
    gpu_buf b = make_buf(dt, n, GPU_GUARD);
    memset(b.host, 0xff, (n + GPU_GUARD) * gpu_dtype_size(dt));
    upload(&b);
    return b;
}

static bool is_poison(const gpu_buf *b, size_t i)
{
    size_t sz = gpu_dtype_size(b->dt);
    const unsigned char *p = (const unsigned char *)b->host + i * sz;
    for (size_t j = 0; j < sz; j++)
        if (p[j] != 0xff)
            return false;
    return true;
}

bool gpu_fetch(gpu_buf *b, double *out, const char *label)
{
    size_t bytes = (b->n + b->guard) * gpu_dtype_size(b->dt), unwritten = 0, clobbered = 0;
    if (bytes)
        GPU_CU(gpu_cu.DtoH(b->host, b->dev, bytes));
    for (size_t i = 0; i < b->n; i++) {
        out[i] = gpu_get(b->dt, b->host, i);
        if (is_poison(b, i) && unwritten++ == 0)
            printf("  %s: element %zu never written\n", label, i);
    }
    for (size_t i = b->n; i < b->n + b->guard; i++)
        if (!is_poison(b, i) && clobbered++ == 0)
            printf("  %s: element %zu, past the end (%zu), was written\n", label, i, b->n);
    if (unwritten || clobbered)
        printf("  %s: %zu of %zu elements never written, %zu of %zu guard elements written\n",
               label, unwritten, b->n, clobbered, b->guard);
    return unwritten == 0 && clobbered == 0;
}

void gpu_free(gpu_buf *b)
{
    GPU_CU(gpu_cu.MemFree(b->dev));
    free(b->host);
    b->host = NULL;
    b->dev = 0;
}

DLTensor gpu_tensor(const gpu_buf *b, int ndim, int64_t *shape)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)b->dev;
    t.device.device_type = kDLCUDA;
    t.device.device_id = 0;
    t.ndim = ndim;
    t.dtype = gpu_dtype_dl(b->dt);
    t.shape = shape;
    return t;
}

/* ---- Checking ---------------------------------------------------------------- */

double gpu_rel_err(const double *got, const double *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i]))
            return INFINITY;
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

void gpu_result(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(": %s\n", ok ? "ok" : "FAIL");
    fflush(stdout);
    if (ok)
        passed++;
    else
        failed++;
}

int gpu_summary(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}
