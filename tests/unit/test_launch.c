/* test_launch.c - libtilert's launch path without a GPU, through a fake
 * driver that records what cuLaunchKernel receives: the signature cache
 * (a launch with the signature of a recent one reuses its plan, with this
 * launch's addresses and scalars; a change of shape, strides, device,
 * dtype or dims misses; bad arguments still fail with tilert_check_args's
 * message), tensor maps and the fallback through the cache, the ranges of
 * device memory the pointer check remembers, and 20000 random launches
 * whose outcome must be tilert_check_args's. */
#define _POSIX_C_SOURCE 200809L   /* strdup */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tilert.h"
#include "runtime/rt.h"
#include "rtkit.h"

/* ov writes Z; ov2 (rank 2) writes B; tma reads X through a tensor map and
 * falls back to plain. */
static const char *META =
    "tilec-meta 1\n"
    OV_KERNELS
    "kernel tma\narch sm_90a\nthreads 128\ndim M\ndim K\n"
    "param X tensor f32 2 M K align 16\n"
    "param Y tensor f32 2 M K align 16\n"
    "writes Y\n"
    "tmap X swizzle none box 8 32\n"
    "fallback plain\n"
    "grid M 8 cdiv\nend\n"
    "kernel plain\narch sm_90a\nthreads 128\ndim M\ndim K\n"
    "param X tensor f32 2 M K align 4\n"
    "param Y tensor f32 2 M K align 4\n"
    "writes Y\n"
    "grid M\nend\n";

#define DEV1 0x7f8000000000ull     /* the fake's memory of device 1 starts here */
#define RANGE (1ull << 20)         /* the fake's allocations: 1 MiB, aligned */

static tilert_module *mod;
static tilert_kernel *ov, *ov2, *tma, *plain;
static tilert_driver fake;

/* ---- the fake driver ---- */

static int n_launch, n_ptr_calls, n_encode;
static tilert_launch_plan expect;          /* tilert_check_args's plan for the launch */
static const char *launched_func;
static unsigned launched_grid[3];
static unsigned char launched[1024];       /* the packed parameters of the last launch */
static uint64_t launched_map_addr;         /* the address in the last launch's first map */

static CUresult ok_ctx(CUcontext c) { return CUDA_SUCCESS; }
static CUresult ctx_current(CUcontext *c) { *c = (CUcontext)0x1000; return CUDA_SUCCESS; }
static CUresult ctx_pop(CUcontext *c) { *c = (CUcontext)0x1000; return CUDA_SUCCESS; }
static CUresult ctx_device(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
static CUresult dev_attr(int *v, int attr, CUdevice d)
{
    *v = attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
    return CUDA_SUCCESS;
}
static CUresult dev_name(char *s, int n, CUdevice d) { snprintf(s, (size_t)n, "fake"); return CUDA_SUCCESS; }
static CUresult load(CUmodule *m, const void *ptx, unsigned n, int *o, void **v)
{
    *m = (CUmodule)0x2000;
    return CUDA_SUCCESS;
}
static CUresult unload(CUmodule m) { return CUDA_SUCCESS; }
static CUresult get_function(CUfunction *f, CUmodule m, const char *name)
{
    *f = (CUfunction)(uintptr_t)name;    /* the launch says which kernel ran */
    return CUDA_SUCCESS;
}
static CUresult func_attr(int *v, int attr, CUfunction f) { *v = 1024; return CUDA_SUCCESS; }
static CUresult func_set(CUfunction f, int attr, int v) { return CUDA_SUCCESS; }
static CUresult error_name(CUresult r, const char **s)
{
    *s = r == 1 ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_UNKNOWN";
    return CUDA_SUCCESS;
}
static CUresult error_string(CUresult r, const char **s) { *s = "invalid argument"; return CUDA_SUCCESS; }

/* Device memory: 1 MiB allocations from 0x7f0000000000 (device 0) and from
 * DEV1 (device 1); anything below is not CUDA memory. */
static CUresult pointer(void *v, int attr, CUdeviceptr p)
{
    n_ptr_calls++;
    if (p < 0x7f0000000000ull)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
        *(int *)v = p >= DEV1;
    else if (attr == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
        *(CUdeviceptr *)v = p & ~(RANGE - 1);
    else if (attr == CU_POINTER_ATTRIBUTE_RANGE_SIZE)
        *(size_t *)v = RANGE;
    else
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult encode(void *map, int dt, unsigned rank, void *addr, const uint64_t *dim,
                       const uint64_t *strides, const unsigned *box, const unsigned *es, int il,
                       int sw, int l2, int oob)
{
    n_encode++;
    uint64_t m[16] = {0xC0DE, (uint64_t)(uintptr_t)addr};
    memcpy(map, m, sizeof m);
    return CUDA_SUCCESS;
}

static CUresult replace(void *map, void *addr)
{
    ((uint64_t *)map)[1] = (uint64_t)(uintptr_t)addr;
    return CUDA_SUCCESS;
}

/* The packed parameters, laid out by the plan tilert_check_args gave for
 * these arguments (`expect`, set before each launch). */
static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
                       void **extra)
{
    n_launch++;
    launched_func = (const char *)f;
    launched_grid[0] = gx, launched_grid[1] = gy, launched_grid[2] = gz;
    memset(launched, 0xAA, sizeof launched);
    launched_map_addr = 0;
    for (size_t i = 0; i < expect.nslots; i++) {
        if (expect.slot_size[i] == TILERT_TMAP_BYTES) {
            if (!launched_map_addr)
                launched_map_addr = ((const uint64_t *)params[i])[1];
            continue;
        }
        memcpy(launched + expect.slot_offset[i], params[i], expect.slot_size[i]);
    }
    return CUDA_SUCCESS;
}

static void setup(void)
{
    ck_assert_msg(tilert_module_from_meta(META, &mod) == TILERT_OK, "%s", tilert_last_error());
    ck_assert_int_eq(tilert_module_get_kernel(mod, "ov", &ov), TILERT_OK);
    ck_assert_int_eq(tilert_module_get_kernel(mod, "ov2", &ov2), TILERT_OK);
    ck_assert_int_eq(tilert_module_get_kernel(mod, "tma", &tma), TILERT_OK);
    ck_assert_int_eq(tilert_module_get_kernel(mod, "plain", &plain), TILERT_OK);
    memset(&fake, 0, sizeof fake);
    fake.GetErrorName = error_name;
    fake.GetErrorString = error_string;
    fake.CtxGetCurrent = ctx_current;
    fake.CtxPushCurrent = ok_ctx;
    fake.CtxPopCurrent = ctx_pop;
    fake.CtxGetDevice = ctx_device;
    fake.DeviceGetAttribute = dev_attr;
    fake.DeviceGetName = dev_name;
    fake.ModuleLoadDataEx = load;
    fake.ModuleUnload = unload;
    fake.ModuleGetFunction = get_function;
    fake.FuncGetAttribute = func_attr;
    fake.FuncSetAttribute = func_set;
    fake.PointerGetAttribute = pointer;
    fake.LaunchKernel = launch;
    fake.TensorMapEncodeTiled = encode;
    fake.TensorMapReplaceAddress = replace;
    mod->drv = &fake;               /* launchable through the fake */
    mod->ptx = strdup("");
    n_launch = n_ptr_calls = n_encode = 0;
}

static void teardown(void)
{
    tilert_module_free(mod);
    mod = NULL;
}

/* ---- helpers ---- */

#define MEM0 0x7f0000100000ull    /* an allocation of device 0 */

typedef struct OvArgs {
    T x, y, z;
    tilert_arg args[4];
} OvArgs;

/* X, Y, Z f32[n] at MEM0 + xo, yo, zo (data pointers); scalar n = 3. */
static void ov_args(OvArgs *o, int64_t n, uint64_t xo, uint64_t yo, uint64_t zo)
{
    T *t[] = {&o->x, &o->y, &o->z};
    uint64_t off[] = {xo, yo, zo};
    for (int i = 0; i < 3; i++) {
        mk(t[i], kDLFloat, 32, 1, (int64_t[]){n});
        t[i]->t.data = (void *)(uintptr_t)(MEM0 + off[i]);
    }
    o->args[0] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &o->x.t}};
    o->args[1] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &o->y.t}};
    o->args[2] = (tilert_arg){TILERT_ARG_INT, {.i = 3}};
    o->args[3] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &o->z.t}};
}

/* Launch k; it must succeed, run `ran` and pass exactly the parameters of
 * tilert_check_args's plan; hit says whether the plan came from the cache. */
static void launch_ok(tilert_kernel *k, const tilert_arg *args, size_t n, bool hit,
                      const tilert_kernel *ran)
{
    char err[1024];
    ck_assert_msg(tilert_check_args(k, args, n, err, sizeof err, &expect) == TILERT_OK, "%s", err);
    unsigned long hits = k->sig_hits, misses = k->sig_misses;
    int launches = n_launch;
    ck_assert_msg(tilert_launch(k, args, n, NULL) == TILERT_OK, "%s", tilert_last_error());
    ck_assert_int_eq(n_launch, launches + 1);
    ck_assert_msg(k->sig_hits == hits + hit && k->sig_misses == misses + !hit,
                  "kernel %s: hits %lu -> %lu, misses %lu -> %lu, want a %s", k->name, hits,
                  k->sig_hits, misses, k->sig_misses, hit ? "hit" : "miss");
    ck_assert_str_eq(launched_func, ran->name);
    ck_assert(launched_grid[0] == expect.grid[0] && launched_grid[1] == expect.grid[1] &&
              launched_grid[2] == expect.grid[2]);
    for (size_t i = 0; i < expect.nslots; i++) {
        if (expect.slot_size[i] == TILERT_TMAP_BYTES) {
            ck_assert_uint_eq(launched_map_addr, expect.tmap[expect.slot[i]].global_address);
            continue;
        }
        ck_assert_msg(memcmp(launched + expect.slot_offset[i], &expect.slot[i], expect.slot_size[i]) == 0,
                      "kernel %s: slot %zu differs from tilert_check_args's", k->name, i);
    }
}

/* Launch k; it must fail with tilert_check_args's status and message, and
 * launch nothing. */
static void launch_err(tilert_kernel *k, const tilert_arg *args, size_t n, const char *want)
{
    char err[1024];
    tilert_launch_plan pl;
    tilert_status want_st = tilert_check_args(k, args, n, err, sizeof err, &pl);
    ck_assert_int_ne(want_st, TILERT_OK);
    int launches = n_launch;
    tilert_status st = tilert_launch(k, args, n, NULL);
    ck_assert_int_eq(st, want_st);
    ck_assert_str_eq(tilert_last_error(), err);
    ck_assert_msg(strstr(err, want) != NULL, "got '%s', want '%s'", err, want);
    ck_assert_int_eq(n_launch, launches);
}

/* ---- the signature cache ---- */

START_TEST(sig_hit_and_miss)
{
    OvArgs o;
    ov_args(&o, 1000, 0, 4096, 8192);
    launch_ok(ov, o.args, 4, false, ov);
    launch_ok(ov, o.args, 4, true, ov);
    /* new addresses and scalar, the same signature: the plan again, with them */
    o.z.t.data = (void *)(uintptr_t)(MEM0 + 65536);
    o.x.t.byte_offset = 12;
    o.args[2].u.i = -9;
    launch_ok(ov, o.args, 4, true, ov);
    o.args[2] = (tilert_arg){TILERT_ARG_FLOAT, {.f = 5.0}};   /* another kind of scalar */
    launch_ok(ov, o.args, 4, false, ov);
    launch_ok(ov, o.args, 4, true, ov);
    /* another shape (and so dim N and the grid) */
    ov_args(&o, 1001, 0, 4096, 8192);
    launch_ok(ov, o.args, 4, false, ov);
    ck_assert_uint_eq(launched_grid[0], 8);
    ov_args(&o, 1000, 0, 4096, 8192);
    launch_ok(ov, o.args, 4, true, ov);                       /* the first signature is still kept */
    ck_assert_uint_eq(launched_grid[0], 8);
    /* strides given (the same values as none) are another signature */
    o.y.t.strides = o.y.strides;
    o.y.strides[0] = 1;
    launch_ok(ov, o.args, 4, false, ov);
    launch_ok(ov, o.args, 4, true, ov);
    /* another dtype, another device: misses, with the check's errors */
    o.y.t.strides = NULL;
    o.x.t.dtype.bits = 16;
    launch_err(ov, o.args, 4, "kernel ov: param X: tensor dtype is float16 but the kernel wants f32[N]");
    o.x.t.dtype.bits = 32;
    o.x.t.device.device_id = o.y.t.device.device_id = o.z.t.device.device_id = 1;
    ck_assert_int_eq(tilert_launch(ov, o.args, 4, NULL), TILERT_ERR_ARGS);
    ck_assert_str_eq(tilert_last_error(), "kernel ov: the tensors are on cuda:1 but the current CUDA "
                     "context is on device 0; make cuda:1 current");
    ck_assert_uint_eq(ov->sig_misses, 6);
    ck_assert_uint_eq(ov->sig_hits, 5);
}
END_TEST

/* Strides of a rank-2 view: another stride is another signature. */
START_TEST(sig_strides)
{
    T a, b;
    mk(&a, kDLFloat, 32, 2, (int64_t[]){64, 32});
    mk(&b, kDLFloat, 32, 2, (int64_t[]){64, 32});
    a.t.data = (void *)(uintptr_t)MEM0;
    b.t.data = (void *)(uintptr_t)(MEM0 + 65536);
    a.t.strides = a.strides;
    a.strides[0] = 32;
    a.strides[1] = 1;
    tilert_arg args[2] = {{TILERT_ARG_TENSOR, {.tensor = &a.t}}, {TILERT_ARG_TENSOR, {.tensor = &b.t}}};
    launch_ok(ov2, args, 2, false, ov2);
    launch_ok(ov2, args, 2, true, ov2);
    a.strides[0] = 40;                              /* padded rows */
    launch_ok(ov2, args, 2, false, ov2);
    uint64_t s;
    memcpy(&s, launched + 8, 8);
    ck_assert_uint_eq(s, 40);
    a.strides[0] = 32;
    launch_ok(ov2, args, 2, true, ov2);
    memcpy(&s, launched + 8, 8);
    ck_assert_uint_eq(s, 32);
    /* dims through the shape: K 32 -> 16 */
    a.shape[1] = b.shape[1] = 16;
    launch_ok(ov2, args, 2, false, ov2);
}
END_TEST

/* After hits, every rule that depends on an address or a scalar still
 * holds, with the check's own message. */
START_TEST(sig_errors_after_hit)
{
    OvArgs o;
    ov_args(&o, 1000, 0, 8192, 12288);
    launch_ok(ov, o.args, 4, false, ov);
    launch_ok(ov, o.args, 4, true, ov);
    o.z.t.data = o.x.t.data;                                  /* in place */
    launch_err(ov, o.args, 4, "param Z (written by the kernel) starts at the same address as param X");
    o.z.t.data = (void *)(uintptr_t)(MEM0 + 3996);            /* over X's last element */
    launch_err(ov, o.args, 4, "param Z (written by the kernel) overlaps param X");
    o.z.t.data = (void *)(uintptr_t)(MEM0 + 4000);            /* right after X: fine */
    launch_ok(ov, o.args, 4, true, ov);
    o.y.t.data = o.x.t.data;                                  /* inputs may overlap */
    launch_ok(ov, o.args, 4, true, ov);
    o.y.t.data = (void *)(uintptr_t)(MEM0 + 8192);
    o.x.t.byte_offset = 2;                                    /* misaligned */
    launch_err(ov, o.args, 4, "param X: data address 0x7f0000100002 (data + byte_offset 2) is not "
               "aligned to 4 bytes as the kernel assumes");
    o.x.t.byte_offset = 0;
    o.x.t.data = NULL;
    launch_err(ov, o.args, 4, "param X: data pointer is NULL");
    o.x.t.data = (void *)(uintptr_t)MEM0;
    o.x.t.byte_offset = 0ull - MEM0;                          /* wraps to 0 */
    launch_err(ov, o.args, 4, "param X: data + byte_offset");
    o.x.t.byte_offset = 0;
    o.args[2].u.i = 1ll << 33;
    launch_err(ov, o.args, 4, "param n: 8589934592 does not fit i32");
    o.args[2] = (tilert_arg){TILERT_ARG_FLOAT, {.f = 1.5}};
    launch_err(ov, o.args, 4, "param n: i32 expects an integer, got 1.5");
    o.args[2] = (tilert_arg){TILERT_ARG_INT, {.i = 3}};
    o.x.t.data = (void *)(uintptr_t)0x1000;                   /* not CUDA memory: the driver says */
    ck_assert_int_eq(tilert_launch(ov, o.args, 4, NULL), TILERT_ERR_ARGS);
    ck_assert_str_eq(tilert_last_error(), "kernel ov: param X: address 0x1000 is not CUDA memory "
                     "(cuPointerGetAttribute: CUDA_ERROR_INVALID_VALUE)");
    o.x.t.data = (void *)(uintptr_t)MEM0;
    launch_ok(ov, o.args, 4, true, ov);
    /* empty tensors: any address, no overlap */
    ov_args(&o, 0, 0, 0, 0);
    o.x.t.data = NULL;
    ck_assert_int_eq(tilert_launch(ov, o.args, 4, NULL), TILERT_OK);
    ck_assert_int_eq(tilert_launch(ov, o.args, 4, NULL), TILERT_OK);
    ck_assert_uint_eq(ov->sig_misses, 9);
    ck_assert_uint_eq(ov->sig_hits, 6);
}
END_TEST

/* The oldest of 8 kept signatures goes first. */
START_TEST(sig_eviction)
{
    OvArgs o;
    for (int n = 1; n <= 9; n++) {
        ov_args(&o, 100 * n, 0, 4096, 8192);
        launch_ok(ov, o.args, 4, false, ov);
    }
    ov_args(&o, 900, 0, 4096, 8192);
    launch_ok(ov, o.args, 4, true, ov);
    ov_args(&o, 200, 0, 4096, 8192);
    launch_ok(ov, o.args, 4, true, ov);
    ov_args(&o, 100, 0, 4096, 8192);
    launch_ok(ov, o.args, 4, false, ov);
}
END_TEST

/* The tensor-map kernel's two 64 x 32 f32 tensors, X at MEM0 and Y 64 KB
 * after it. */
static void tma_pair(T *x, T *y)
{
    mk(x, kDLFloat, 32, 2, (int64_t[]){64, 32});
    mk(y, kDLFloat, 32, 2, (int64_t[]){64, 32});
    x->t.data = (void *)(uintptr_t)MEM0;
    y->t.data = (void *)(uintptr_t)(MEM0 + 65536);
}

/* A tensor map: a hit carries the new address into the map; a misaligned
 * address takes the fallback (not kept: it follows from the address); an
 * aligned one then hits the map's plan again. */
START_TEST(sig_tmap_and_fallback)
{
    T x, y;
    tma_pair(&x, &y);
    tilert_arg args[2] = {{TILERT_ARG_TENSOR, {.tensor = &x.t}}, {TILERT_ARG_TENSOR, {.tensor = &y.t}}};
    launch_ok(tma, args, 2, false, tma);
    ck_assert_uint_eq(launched_map_addr, MEM0);
    x.t.byte_offset = 1024;
    launch_ok(tma, args, 2, true, tma);
    ck_assert_uint_eq(launched_map_addr, MEM0 + 1024);
    x.t.byte_offset = 4;                                      /* not 16-byte aligned */
    launch_ok(tma, args, 2, false, plain);
    char why[256];
    ck_assert_ptr_eq(tilert_kernel_last_variant(tma, why, sizeof why), plain);
    ck_assert_msg(strstr(why, "param X: data address 0x7f0000100004") == why, "%s", why);
    launch_ok(tma, args, 2, false, plain);                    /* not kept */
    x.t.byte_offset = 2048;
    launch_ok(tma, args, 2, true, tma);
    ck_assert_ptr_eq(tilert_kernel_last_variant(tma, why, sizeof why), tma);
    ck_assert_str_eq(why, "");
    /* a stride no map takes: the fallback, for a reason of the signature (kept) */
    x.t.strides = x.strides;
    x.strides[0] = 33;
    x.strides[1] = 1;
    launch_ok(tma, args, 2, false, plain);
    launch_ok(tma, args, 2, true, plain);
    ck_assert_ptr_eq(tilert_kernel_last_variant(tma, why, sizeof why), plain);
    ck_assert_msg(strstr(why, "param X dim 0: stride 33 elements (132 bytes) is not a multiple of 16") == why,
                  "%s", why);
    x.t.byte_offset = 2;                                      /* misaligned for plain too */
    launch_err(tma, args, 2, "its fallback refuses the arguments too");
    x.t.byte_offset = 0;
    y.t.data = (void *)(uintptr_t)(MEM0 + 64);                /* the output overlaps X */
    launch_err(tma, args, 2, "param Y (written by the kernel) overlaps param X");
}
END_TEST

/* The device check asks the driver once per allocation: an address inside
 * a range it vouched for before needs no call. */
START_TEST(pointer_ranges)
{
    OvArgs o;
    ov_args(&o, 1000, 0, 4096, 8192);                         /* all in MEM0's 1 MiB */
    launch_ok(ov, o.args, 4, false, ov);
    ck_assert_uint_eq(mod->ptr_queries, 1);
    ov_args(&o, 1000, 100000, 200000, 300000);
    launch_ok(ov, o.args, 4, true, ov);
    ck_assert_uint_eq(mod->ptr_queries, 1);
    o.z.t.data = (void *)(uintptr_t)(MEM0 + RANGE + 64);      /* the next allocation */
    launch_ok(ov, o.args, 4, true, ov);
    ck_assert_uint_eq(mod->ptr_queries, 2);
    launch_ok(ov, o.args, 4, true, ov);
    ck_assert_uint_eq(mod->ptr_queries, 2);
    /* memory of another device: the driver is asked, and the error comes */
    o.z.t.data = (void *)(uintptr_t)(DEV1 + 64);
    ck_assert_int_eq(tilert_launch(ov, o.args, 4, NULL), TILERT_ERR_ARGS);
    ck_assert_str_eq(tilert_last_error(), "kernel ov: param Z is memory of device 1, but the launch "
                     "runs on device 0");
    ck_assert_int_eq(tilert_launch(ov, o.args, 4, NULL), TILERT_ERR_ARGS);
    ck_assert_uint_eq(mod->ptr_queries, 4);
    /* 16 ranges are kept, the oldest replaced first */
    for (uint64_t r = 2; r < 18; r++) {
        ov_args(&o, 1000, r * RANGE, r * RANGE + 4096, r * RANGE + 8192);
        launch_ok(ov, o.args, 4, true, ov);
    }
    ck_assert_uint_eq(mod->ptr_queries, 20);
    ov_args(&o, 1000, 0, 4096, 8192);                         /* MEM0's range went */
    launch_ok(ov, o.args, 4, true, ov);
    ck_assert_uint_eq(mod->ptr_queries, 21);
}
END_TEST

/* The map cache and the signature cache together: the same tensors encode
 * nothing again. */
START_TEST(sig_no_reencode)
{
    T x, y;
    tma_pair(&x, &y);
    tilert_arg args[2] = {{TILERT_ARG_TENSOR, {.tensor = &x.t}}, {TILERT_ARG_TENSOR, {.tensor = &y.t}}};
    for (int i = 0; i < 5; i++)
        launch_ok(tma, args, 2, i > 0, tma);
    ck_assert_int_eq(n_encode, 1);
}
END_TEST

/* ---- the cache against the check, on random arguments ---- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static unsigned pick(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* Whatever tilert_launch does with these arguments, tilert_check_args said
 * first: the same error, or a launch of exactly its plan. */
static void same_as_check(tilert_kernel *k, const tilert_arg *args, size_t n)
{
    char err[1024];
    tilert_status want = tilert_check_args(k, args, n, err, sizeof err, &expect);
    int launches = n_launch;
    tilert_status st = tilert_launch(k, args, n, NULL);
    if (want) {
        ck_assert_int_eq(st, want);
        ck_assert_str_eq(tilert_last_error(), err);
        ck_assert_int_eq(n_launch, launches);
        return;
    }
    if (expect.device > 0) {            /* the fake's context is device 0 */
        ck_assert_int_eq(st, TILERT_ERR_ARGS);
        ck_assert_msg(strstr(tilert_last_error(), "the tensors are on cuda:1") != NULL, "%s",
                      tilert_last_error());
        return;
    }
    ck_assert_msg(st == TILERT_OK, "%s", tilert_last_error());
    bool empty = !expect.grid[0] || !expect.grid[1] || !expect.grid[2];
    ck_assert_int_eq(n_launch, launches + !empty);
    if (empty)
        return;
    ck_assert_str_eq(launched_func, expect.kernel->name);
    ck_assert(launched_grid[0] == expect.grid[0] && launched_grid[1] == expect.grid[1]);
    for (size_t i = 0; i < expect.nslots; i++) {
        if (expect.slot_size[i] == TILERT_TMAP_BYTES) {
            if (expect.slot[i] == 0 && expect.tmap[0].rank)
                ck_assert_uint_eq(launched_map_addr, expect.tmap[0].global_address);
            continue;
        }
        ck_assert_msg(memcmp(launched + expect.slot_offset[i], &expect.slot[i], expect.slot_size[i]) == 0,
                      "slot %zu", i);
    }
}

/* 20000 launches of ov and tma, each changing one thing of the last (an
 * address, a byte offset, a shape, strides, a dtype, a device, a scalar's
 * kind or value) among a few values, a third of them from valid arguments
 * again, so that signatures recur, rules break and hold again. */
START_TEST(sig_random)
{
    static const uint64_t offs[] = {0, 2, 4, 16, 64, 3996, 4000, 8192, 12288, 65536};
    static const int64_t lens[] = {0, 1, 999, 1000};
    OvArgs o;
    ov_args(&o, 1000, 0, 4096, 8192);
    T x, y;
    tma_pair(&x, &y);
    tilert_arg targs[2] = {{TILERT_ARG_TENSOR, {.tensor = &x.t}}, {TILERT_ARG_TENSOR, {.tensor = &y.t}}};
    for (int it = 0; it < 20000; it++) {
        if (pick(2)) {
            if (!pick(3))
                ov_args(&o, 1000, 0, 4096, 8192);     /* back to valid arguments */
            T *t = (T *[]){&o.x, &o.y, &o.z}[pick(3)];
            switch (pick(8)) {
            case 0: case 1: t->t.data = (void *)(uintptr_t)(MEM0 + offs[pick(10)]); break;
            case 2: t->t.byte_offset = offs[pick(4)]; break;
            case 3: t->shape[0] = lens[pick(4)]; break;
            case 4: t->t.strides = pick(2) ? NULL : t->strides; t->strides[0] = 1 + pick(2); break;
            case 5: t->t.dtype.bits = pick(4) ? 32 : 16; break;
            case 6: t->t.device.device_id = pick(8) == 0; break;
            default:
                o.args[2] = pick(2) ? (tilert_arg){TILERT_ARG_INT, {.i = pick(4) ? (int64_t)pick(9) : 1ll << 40}}
                                    : (tilert_arg){TILERT_ARG_FLOAT, {.f = pick(2) ? 2.0 : 1.5}};
            }
            same_as_check(ov, o.args, 4);
        } else {
            if (!pick(3)) {
                tma_pair(&x, &y);
            }
            T *t = pick(2) ? &x : &y;
            switch (pick(5)) {
            case 0: case 1: t->t.data = (void *)(uintptr_t)(MEM0 + offs[pick(10)]); break;
            case 2: t->shape[pick(2)] = 32 + pick(2) * 32 + pick(2); break;
            case 3:
                t->t.strides = pick(3) ? NULL : t->strides;
                t->strides[0] = t->shape[1] + (int64_t)pick(3) * 4;
                t->strides[1] = 1;
                break;
            default: t->t.byte_offset = offs[pick(5)]; break;
            }
            same_as_check(tma, targs, 2);
        }
    }
    ck_assert_msg(ov->sig_hits > 500 && tma->sig_hits > 500, "hits: ov %lu, tma %lu", ov->sig_hits,
                  tma->sig_hits);
}
END_TEST

static Suite *launch_suite(void)
{
    Suite *s = suite_create("launch");
    TCase *tc = tcase_create("cache");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, sig_hit_and_miss);
    tcase_add_test(tc, sig_strides);
    tcase_add_test(tc, sig_errors_after_hit);
    tcase_add_test(tc, sig_eviction);
    tcase_add_test(tc, sig_tmap_and_fallback);
    tcase_add_test(tc, sig_no_reencode);
    tcase_add_test(tc, pointer_ranges);
    tcase_add_test(tc, sig_random);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(launch_suite());
}
