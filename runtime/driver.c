/* driver.c - opens libcuda.so.1 with dlopen, resolves the Driver API entry
 * points listed in rt.h (ORDER CUDA_FNS, _v2 names where the driver exports
 * them), and answers device queries. No link-time CUDA dependency.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

tilert_status tilert_cuda_fail(const tilert_driver *drv, CUresult r, const char *call,
                               const char *what)
{
    const char *name = NULL, *desc = NULL;
    if (drv->GetErrorName(r, &name) != CUDA_SUCCESS || !name)
        name = "unknown CUDA error";
    if (drv->GetErrorString(r, &desc) != CUDA_SUCCESS || !desc)
        desc = "";
    return tilert_fail(TILERT_ERR_CUDA, "%s%s%s failed: %s (%d: %s)", what ? what : "",
                       what ? ": " : "", call, name, r, desc);
}

/* Resolve every entry point; a missing required one means a driver too old. */
static tilert_status resolve(tilert_driver *drv)
{
#define X(f, sym, req, sig) \
    *(void **)&drv->f = dlsym(drv->lib, sym); \
    if (req && !drv->f) \
        return tilert_fail(TILERT_ERR_NO_DRIVER, "no usable CUDA driver: libcuda.so.1 lacks " \
                           "%s (driver too old?)", sym);
    CUDA_FNS(X)
#undef X
    return TILERT_OK;
}

static tilert_status init_driver(tilert_driver *drv)
{
    tilert_status st = resolve(drv);
    if (st)
        return st;
    CUresult r = drv->Init(0);
    if (r == CUDA_ERROR_NO_DEVICE)
        return tilert_fail(TILERT_ERR_NO_DEVICE, "no CUDA device: the driver found none");
    if (r != CUDA_SUCCESS) {
        tilert_cuda_fail(drv, r, "cuInit", NULL);
        return tilert_fail(TILERT_ERR_NO_DEVICE, "no CUDA device: %s", tilert_last_error());
    }
    int n = 0;
    r = drv->DeviceGetCount(&n);
    if (r != CUDA_SUCCESS)
        return tilert_cuda_fail(drv, r, "cuDeviceGetCount", NULL);
    if (n == 0)
        return tilert_fail(TILERT_ERR_NO_DEVICE, "no CUDA device: the driver found none");
    return TILERT_OK;
}

TILERT_API tilert_status tilert_driver_open(tilert_driver **out)
{
    if (!out)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_driver_open: NULL out");
    *out = NULL;
    tilert_driver *drv = calloc(1, sizeof *drv);
    if (!drv)
        return tilert_fail(TILERT_ERR_NOMEM, "out of memory");
    drv->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv->lib) {
        free(drv);
        return tilert_fail(TILERT_ERR_NO_DRIVER, "no CUDA driver: libcuda.so.1 not found (%s)",
                           dlerror());
    }
    tilert_status st = init_driver(drv);
    if (st) {
        dlclose(drv->lib);
        free(drv);
        return st;
    }
    *out = drv;
    tilert_clear_error();
    return TILERT_OK;
}

TILERT_API void tilert_driver_close(tilert_driver *drv)
{
    if (!drv)
        return;
    dlclose(drv->lib);
    free(drv);
}

TILERT_API tilert_status tilert_device_count(tilert_driver *drv, int *count)
{
    if (!drv || !count)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_device_count: NULL argument");
    CUresult r = drv->DeviceGetCount(count);
    return r ? tilert_cuda_fail(drv, r, "cuDeviceGetCount", NULL) : TILERT_OK;
}

TILERT_API tilert_status tilert_device_capability(tilert_driver *drv, int device, int *major,
                                                  int *minor)
{
    if (!drv || !major || !minor)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_device_capability: NULL argument");
    CUdevice dev;
    CUresult r = drv->DeviceGet(&dev, device);
    if (r)
        return tilert_cuda_fail(drv, r, "cuDeviceGet", "device ordinal");
    r = drv->DeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (!r)
        r = drv->DeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    return r ? tilert_cuda_fail(drv, r, "cuDeviceGetAttribute", "compute capability") : TILERT_OK;
}

/* The targets tilec has (target/targets.c), by kind. Plain targets' PTX
 * runs on every later GPU (the driver JIT-compiles it); an arch-specific
 * target's only on its own capability; a family-portable one's on every
 * GPU of its major version. */
static const int plain_targets[] = { 80, 86, 89, 90, 120 };   /* ascending */
static const struct { int cc; const char *name; } specific_targets[] = { { 90, "sm_90a" }, { 100, "sm_100a" } };
static const struct { int major; const char *name; } family_targets[] = { { 10, "sm_100f" } };

TILERT_API tilert_status tilert_arch_for_capability(int major, int minor, char *buf, size_t buflen)
{
    if (!buf || !buflen)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_arch_for_capability: NULL buffer");
    buf[0] = 0;
    int cc = major * 10 + minor;
    if (major < 0 || minor < 0 || minor > 9 || cc < plain_targets[0])
        return tilert_fail(TILERT_ERR_USAGE, "compute capability %d.%d: tilec targets 8.0 and later", major, minor);
    for (size_t i = 0; i < sizeof specific_targets / sizeof specific_targets[0]; i++)
        if (specific_targets[i].cc == cc) {
            snprintf(buf, buflen, "%s", specific_targets[i].name);
            return TILERT_OK;
        }
    for (size_t i = 0; i < sizeof family_targets / sizeof family_targets[0]; i++)
        if (family_targets[i].major == major) {
            snprintf(buf, buflen, "%s", family_targets[i].name);
            return TILERT_OK;
        }
    int best = plain_targets[0];
    for (size_t i = 0; i < sizeof plain_targets / sizeof plain_targets[0]; i++)
        if (plain_targets[i] <= cc)
            best = plain_targets[i];
    snprintf(buf, buflen, "sm_%d", best);
    return TILERT_OK;
}

TILERT_API tilert_status tilert_device_arch(tilert_driver *drv, int device, char *buf,
                                            size_t buflen)
{
    int major, minor;
    if (!buf || !buflen)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_device_arch: NULL buffer");
    tilert_status st = tilert_device_capability(drv, device, &major, &minor);
    if (st)
        return st;
    return tilert_arch_for_capability(major, minor, buf, buflen);
}

TILERT_API tilert_status tilert_synchronize(tilert_driver *drv)
{
    if (!drv)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_synchronize: NULL driver");
    CUresult r = drv->CtxSynchronize();
    return r ? tilert_cuda_fail(drv, r, "cuCtxSynchronize", NULL) : TILERT_OK;
}
