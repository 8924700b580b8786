/* module.c - modules (PTX + parsed metadata), their per-context loaded
 * copies, and launching.
 *
 * A module is JIT-loaded into the context current at tilert_module_load (or
 * device 0's primary context) and again, on demand, into any other context a
 * launch runs in (at most TILERT_MAX_CTX). Functions are looked up and their
 * attributes (dynamic shared memory over 48 KiB, non-portable clusters) set
 * once per context, under the module's lock; launches themselves take no lock
 * beyond that lookup and, for kernels with tensor maps, the state lock around
 * the map cache (tmap.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

#define LOG_SIZE (64 * 1024)
#define DEFAULT_SMEM_LIMIT (48 * 1024)

static tilert_status new_module(tilert_driver *drv, const char *meta, tilert_module **out)
{
    if (!out)
        return tilert_fail(TILERT_ERR_USAGE, "NULL out argument");
    *out = NULL;
    if (!meta)
        return tilert_fail(TILERT_ERR_USAGE, "NULL metadata text");
    tilert_module *m = calloc(1, sizeof *m);
    if (!m)
        return tilert_fail(TILERT_ERR_NOMEM, "out of memory");
    m->drv = drv;
    m->jit_log = "";
    pthread_mutex_init(&m->lock, NULL);
    pthread_mutex_init(&m->state_lock, NULL);
    tilert_status st = tilert_meta_parse(m, meta);
    if (st) {
        tilert_module_free(m);
        return st;
    }
    *out = m;
    return TILERT_OK;
}

TILERT_API tilert_status tilert_module_from_meta(const char *meta, tilert_module **out)
{
    tilert_status st = new_module(NULL, meta, out);
    if (!st)
        tilert_clear_error();
    return st;
}

/* ---- contexts ---- */

/* The context to work in: the current one, else device's primary context,
 * retained and pushed for the duration of the call (*pdev = its device, else -1). */
tilert_status tilert_enter_ctx(tilert_driver *drv, int device, CUcontext *ctx, int *pdev)
{
    *pdev = -1;
    CUresult r = drv->CtxGetCurrent(ctx);
    if (r)
        return tilert_cuda_fail(drv, r, "cuCtxGetCurrent", NULL);
    if (*ctx)
        return TILERT_OK;
    CUdevice dev;
    if ((r = drv->DeviceGet(&dev, device < 0 ? 0 : device)))
        return tilert_cuda_fail(drv, r, "cuDeviceGet", "no current context");
    if ((r = drv->DevicePrimaryCtxRetain(ctx, dev)))
        return tilert_cuda_fail(drv, r, "cuDevicePrimaryCtxRetain", NULL);
    if ((r = drv->CtxPushCurrent(*ctx))) {
        drv->DevicePrimaryCtxRelease(dev);
        return tilert_cuda_fail(drv, r, "cuCtxPushCurrent", NULL);
    }
    *pdev = dev;
    return TILERT_OK;
}

void tilert_leave_ctx(tilert_driver *drv, int pdev)
{
    CUcontext c;
    if (pdev < 0)
        return;
    drv->CtxPopCurrent(&c);
    drv->DevicePrimaryCtxRelease(pdev);
}

/* 90 and 'a' from "sm_90a". */
static void split_arch(const char *arch, int *num, char *suffix)
{
    *num = atoi(arch + 3);
    size_t n = strlen(arch);
    *suffix = n && (arch[n - 1] == 'a' || arch[n - 1] == 'f') ? arch[n - 1] : 0;
}

/* Can code for each kernel's arch run on the context's device? */
static tilert_status check_arch(tilert_module *m)
{
    tilert_driver *drv = m->drv;
    CUdevice dev;
    int major, minor;
    char name[256] = "";
    CUresult r = drv->CtxGetDevice(&dev);
    if (!r)
        r = drv->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (!r)
        r = drv->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    if (r)
        return tilert_cuda_fail(drv, r, "cuDeviceGetAttribute", "compute capability");
    drv->DeviceGetName(name, sizeof name - 1, dev);
    int cc = major * 10 + minor;
    for (size_t i = 0; i < m->nkernels; i++) {
        int num;
        char sfx;
        split_arch(m->kernels[i].arch, &num, &sfx);
        bool ok = sfx == 'a' ? cc == num : sfx == 'f' ? cc / 10 == num / 10 && cc >= num : cc >= num;
        char want[16] = "";
        if (!ok && tilert_arch_for_capability(major, minor, want, sizeof want))
            snprintf(want, sizeof want, "none");
        if (!ok)
            return tilert_fail(TILERT_ERR_JIT, "kernel %s is compiled for %s, which cannot run "
                               "on device %d (%s, sm_%d); recompile with -arch=%s",
                               m->kernels[i].name, m->kernels[i].arch, (int)dev, name, cc, want);
    }
    return TILERT_OK;
}

/* JIT the PTX into the current context ctx; the caller holds m->lock. */
static tilert_status load_into(tilert_module *m, CUcontext ctx, int pdev, RtLoaded **out)
{
    tilert_driver *drv = m->drv;
    if (m->nloaded == TILERT_MAX_CTX)
        return tilert_fail(TILERT_ERR_USAGE, "module used in more than %d CUDA contexts",
                           TILERT_MAX_CTX);
    tilert_status st = check_arch(m);
    if (st)
        return st;
    char *info = calloc(1, LOG_SIZE), *error = calloc(1, LOG_SIZE);
    RtLoaded *l = &m->loaded[m->nloaded];
    l->funcs = tilert_pool_alloc(&m->pool, sizeof *l->funcs * m->nkernels);
    l->max_threads = tilert_pool_alloc(&m->pool, sizeof *l->max_threads * m->nkernels);
    if (!info || !error || !l->funcs || !l->max_threads) {
        free(info);
        free(error);
        return tilert_fail(TILERT_ERR_NOMEM, "out of memory");
    }
    int opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                  CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
    void *vals[] = {info, (void *)(uintptr_t)(LOG_SIZE - 1), error,
                    (void *)(uintptr_t)(LOG_SIZE - 1), (void *)(uintptr_t)1};
    CUresult r = drv->ModuleLoadDataEx(&l->mod, m->ptx, 5, opts, vals);
    if (r) {
        tilert_cuda_fail(drv, r, "cuModuleLoadDataEx", "loading the PTX");
        st = tilert_fail(TILERT_ERR_JIT, "%s\nJIT log:\n%s", tilert_last_error(),
                         error[0] ? error : "(empty)");
    } else if ((r = drv->CtxGetDevice(&l->dev))) {
        drv->ModuleUnload(l->mod);
        st = tilert_cuda_fail(drv, r, "cuCtxGetDevice", NULL);
    } else {
        l->ctx = ctx;
        l->primary_dev = -1;
        if (pdev >= 0 && drv->DevicePrimaryCtxRetain(&ctx, pdev) == CUDA_SUCCESS)
            l->primary_dev = pdev;    /* keep the primary context alive while loaded */
        m->nloaded++;
        if (m->nloaded == 1)
            m->jit_log = tilert_pool_strndup(&m->pool, info, strlen(info));
        if (!m->jit_log)
            m->jit_log = "";
        *out = l;
    }
    free(info);
    free(error);
    return st;
}

static tilert_status get_loaded(tilert_module *m, CUcontext ctx, int pdev, RtLoaded **out)
{
    for (size_t i = 0; i < m->nloaded; i++)
        if (m->loaded[i].ctx == ctx) {
            *out = &m->loaded[i];
            return TILERT_OK;
        }
    return load_into(m, ctx, pdev, out);
}

static tilert_status read_file(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tilert_fail(TILERT_ERR_IO, "cannot open %s", path);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb)
            free(buf);
        buf = nb;
    }
    bool err = ferror(f);
    fclose(f);
    if (!buf)
        return tilert_fail(TILERT_ERR_NOMEM, "out of memory reading %s", path);
    if (err) {
        free(buf);
        return tilert_fail(TILERT_ERR_IO, "error reading %s", path);
    }
    buf[n] = '\0';
    *out = buf;
    return TILERT_OK;
}

/* The module of `size` bytes of code (PTX text or a cubin) and metadata. */
static tilert_status load_code(tilert_driver *drv, const void *code, size_t size, const char *meta,
                               tilert_module **out)
{
    tilert_module *m;
    tilert_status st = new_module(drv, meta, &m);
    if (st)
        return st;
    m->ptx = malloc(size + 1);
    if (!m->ptx) {
        tilert_module_free(m);
        return tilert_fail(TILERT_ERR_NOMEM, "out of memory");
    }
    memcpy(m->ptx, code, size);
    m->ptx[size] = '\0';
    CUcontext ctx;
    int pdev;
    RtLoaded *l;
    if (!(st = tilert_enter_ctx(m->drv, 0, &ctx, &pdev))) {
        pthread_mutex_lock(&m->lock);
        st = get_loaded(m, ctx, pdev, &l);
        pthread_mutex_unlock(&m->lock);
        tilert_leave_ctx(m->drv, pdev);
    }
    if (st) {
        tilert_module_free(m);
        return st;
    }
    *out = m;
    tilert_clear_error();
    return TILERT_OK;
}

TILERT_API tilert_status tilert_module_load(tilert_driver *drv, const char *ptx,
                                            const char *meta, tilert_module **out)
{
    if (out)
        *out = NULL;
    if (!drv || !ptx || !out)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_module_load: NULL driver, PTX or out");
    return load_code(drv, ptx, strlen(ptx), meta, out);
}

/* An ELF cubin starts with "\x7f" "ELF"; anything else is taken for PTX
 * text, which must then hold no NUL byte before its end. */
TILERT_API tilert_status tilert_module_load_image(tilert_driver *drv, const void *image, size_t size,
                                                  const char *meta, tilert_module **out)
{
    if (out)
        *out = NULL;
    if (!drv || !image || !size || !out)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_module_load_image: NULL driver, image or out, or an "
                           "empty image");
    bool elf = size >= 4 && memcmp(image, "\x7f" "ELF", 4) == 0;
    if (!elf && memchr(image, '\0', size) && strlen(image) + 1 != size)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_module_load_image: the image is neither a cubin (ELF) nor "
                           "PTX text (a NUL byte inside it)");
    if (!elf && ((const char *)image)[size - 1] == '\0')
        size--;
    return load_code(drv, image, size, meta, out);
}

TILERT_API tilert_status tilert_module_load_files(tilert_driver *drv, const char *ptx_path,
                                                  const char *meta_path, tilert_module **out)
{
    if (out)
        *out = NULL;
    if (!ptx_path || !meta_path)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_module_load_files: NULL path");
    char *ptx = NULL, *meta = NULL;
    tilert_status st = read_file(ptx_path, &ptx);
    if (!st)
        st = read_file(meta_path, &meta);
    if (!st)
        st = tilert_module_load(drv, ptx, meta, out);
    if (st == TILERT_ERR_META)    /* name the file in front of "metadata line N" */
        tilert_fail(st, "%s: %s", meta_path, tilert_last_error());
    free(ptx);
    free(meta);
    return st;
}

TILERT_API void tilert_module_free(tilert_module *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nloaded; i++) {
        CUcontext c;
        if (m->drv->CtxPushCurrent(m->loaded[i].ctx) == CUDA_SUCCESS) {
            m->drv->ModuleUnload(m->loaded[i].mod);
            m->drv->CtxPopCurrent(&c);
        }
        if (m->loaded[i].primary_dev >= 0)
            m->drv->DevicePrimaryCtxRelease(m->loaded[i].primary_dev);
    }
    for (size_t i = 0; i < m->nkernels; i++)
        tilert_sig_free(&m->kernels[i]);
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->state_lock);
    tilert_pool_free(&m->pool);
    free(m->ptx);
    free(m);
}

TILERT_API const char *tilert_module_jit_log(const tilert_module *m)
{
    return m ? m->jit_log : "";
}

TILERT_API size_t tilert_module_num_kernels(const tilert_module *m)
{
    return m ? m->nkernels : 0;
}

TILERT_API tilert_kernel *tilert_module_kernel_at(const tilert_module *m, size_t i)
{
    return m && i < m->nkernels ? &m->kernels[i] : NULL;
}

TILERT_API tilert_status tilert_module_get_kernel(const tilert_module *m, const char *name,
                                                  tilert_kernel **out)
{
    if (!m || !name || !out)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_module_get_kernel: NULL argument");
    *out = NULL;
    char names[1024] = "";
    size_t len = 0;
    for (size_t i = 0; i < m->nkernels; i++) {
        if (strcmp(m->kernels[i].name, name) == 0) {
            *out = &m->kernels[i];
            return TILERT_OK;
        }
        if (len < sizeof names)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                                    m->kernels[i].name);
    }
    return tilert_fail(TILERT_ERR_NOT_FOUND, "no kernel '%s' in the module (it has: %s)", name,
                       names);
}

/* ---- launching ---- */

/* Set the function's attributes for k's needs once per context. Caller holds the lock. */
static tilert_status prepare_func(tilert_kernel *k, RtLoaded *l, CUfunction *out)
{
    tilert_driver *drv = k->mod->drv;
    CUfunction f = l->funcs[k->index];
    if (f) {
        *out = f;
        return TILERT_OK;
    }
    CUresult r = drv->ModuleGetFunction(&f, l->mod, k->name);
    if (r)
        return tilert_cuda_fail(drv, r, "cuModuleGetFunction", k->name);
    int maxt = 0;
    if ((r = drv->FuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f)))
        return tilert_cuda_fail(drv, r, "cuFuncGetAttribute", k->name);
    if (k->threads > maxt)
        return tilert_fail(TILERT_ERR_CUDA, "kernel %s needs %d threads per block but its "
                           "compiled code allows at most %d (too many registers)", k->name,
                           k->threads, maxt);
    if (k->smem > DEFAULT_SMEM_LIMIT &&
        (r = drv->FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k->smem))) {
        int optin = 0;
        CUdevice dev;
        if (!drv->CtxGetDevice(&dev))
            drv->DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
        tilert_cuda_fail(drv, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", k->name);
        return tilert_fail(TILERT_ERR_CUDA, "kernel %s needs %d bytes of shared memory; the "
                           "device allows %d per block (%s)", k->name, k->smem, optin,
                           tilert_last_error());
    }
    if (k->cluster[0] * k->cluster[1] * k->cluster[2] > 8)
        drv->FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    l->funcs[k->index] = f;
    *out = f;
    return TILERT_OK;
}

/* Is ptr inside a range known to be memory of ctx's device? The caller
 * holds the state lock. */
static bool known_range(const tilert_module *m, CUcontext ctx, uint64_t ptr)
{
    for (int i = 0; i < TILERT_PTR_RANGES; i++)
        if (m->ranges[i].ctx == ctx && ptr >= m->ranges[i].lo && ptr < m->ranges[i].hi)
            return true;
    return false;
}

/* The driver's word on one address: memory of device dev, or the error.
 * Its allocation's range is remembered, so that later tensors inside it
 * need no driver call. */
static tilert_status check_pointer(tilert_kernel *k, const RtParam *p, CUdeviceptr ptr,
                                   const RtLoaded *l)
{
    tilert_module *m = k->mod;
    tilert_driver *drv = m->drv;
    int ord = -1;
    CUresult r = drv->PointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
    pthread_mutex_lock(&m->state_lock);
    m->ptr_queries++;
    pthread_mutex_unlock(&m->state_lock);
    if (r) {
        const char *name = NULL;
        drv->GetErrorName(r, &name);
        return tilert_fail(TILERT_ERR_ARGS, "kernel %s: param %s: address 0x%llx is not "
                           "CUDA memory (cuPointerGetAttribute: %s)", k->name, p->name, ptr,
                           name ? name : "error");
    }
    if (ord != l->dev)
        return tilert_fail(TILERT_ERR_ARGS, "kernel %s: param %s is memory of device %d, "
                           "but the launch runs on device %d", k->name, p->name, ord, l->dev);
    CUdeviceptr lo = 0;
    size_t size = 0;
    if (drv->PointerGetAttribute(&lo, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr) ||
        drv->PointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr) ||
        !size || ptr < lo || ptr - lo >= size)
        return TILERT_OK;
    pthread_mutex_lock(&m->state_lock);
    struct RtRange *e = &m->ranges[m->next_range++ % TILERT_PTR_RANGES];
    e->ctx = l->ctx;
    e->lo = lo;
    e->hi = lo + size < lo ? UINT64_MAX : lo + size;
    pthread_mutex_unlock(&m->state_lock);
    return TILERT_OK;
}

/* Every tensor's memory is CUDA memory of the context's device: addresses
 * inside an allocation the driver vouched for before are not asked again. */
static tilert_status check_pointers(tilert_kernel *k, const tilert_launch_plan *pl,
                                    const RtLoaded *l)
{
    tilert_module *m = k->mod;
    if (pl->device >= 0 && pl->device != l->dev)
        return tilert_fail(TILERT_ERR_ARGS, "kernel %s: the tensors are on cuda:%d but the "
                           "current CUDA context is on device %d; make cuda:%d current",
                           k->name, pl->device, l->dev, pl->device);
    uint64_t ask = 0;           /* bit i: param i's address is not in a known range */
    size_t s = 0;
    pthread_mutex_lock(&m->state_lock);
    for (size_t i = 0; i < k->nparams; i++) {
        const RtParam *p = &k->params[i];
        if (p->kind == TILERT_PARAM_SCALAR) {
            s++;
            continue;
        }
        CUdeviceptr ptr = pl->slot[s];
        s += (size_t)p->rank;
        if (ptr && !known_range(m, l->ctx, ptr))    /* 0: an empty tensor */
            ask |= 1ull << i;
    }
    pthread_mutex_unlock(&m->state_lock);
    for (; ask; ask &= ask - 1) {
        size_t i = (size_t)__builtin_ctzll(ask), slot = 0;
        for (size_t j = 0; j < i; j++)
            slot += k->params[j].kind == TILERT_PARAM_SCALAR ? 1 : (size_t)k->params[j].rank;
        pthread_mutex_lock(&m->state_lock);    /* in an allocation an earlier param brought in? */
        bool known = known_range(m, l->ctx, pl->slot[slot]);
        pthread_mutex_unlock(&m->state_lock);
        tilert_status st = known ? TILERT_OK : check_pointer(k, &k->params[i], pl->slot[slot], l);
        if (st)
            return st;
    }
    return TILERT_OK;
}

/* The maps of the plan's tensor maps into maps[]: cached or encoded. A map
 * the driver cannot make sends the launch to k's fallback (the plan is
 * redone for it) when k has one. */
static tilert_status make_maps(tilert_kernel *k, CUcontext ctx, const tilert_arg *args,
                               size_t nargs, tilert_launch_plan *pl,
                               unsigned char (*maps)[TILERT_TMAP_BYTES])
{
    for (size_t j = 0; j < pl->ntmaps; j++) {
        char why[256];
        if (!pl->tmap[j].rank) {    /* an empty tensor in an empty launch */
            memset(maps[j], 0, TILERT_TMAP_BYTES);
            continue;
        }
        tilert_status st = tilert_tmap_get(k->mod->drv, k, j, ctx, &pl->tmap[j], maps[j], why,
                                           sizeof why);
        if (st && k->fallback)
            return tilert_check_plan(k, args, nargs, NULL, 0, pl, why);
        if (st)
            return tilert_fail(st, "kernel %s: %s", k->name, why);
    }
    return TILERT_OK;
}

static tilert_status do_launch(tilert_kernel *k, CUfunction f, tilert_launch_plan *pl,
                               unsigned char (*maps)[TILERT_TMAP_BYTES], void *stream)
{
    tilert_driver *drv = k->mod->drv;
    void *params[TILERT_MAX_SLOTS];
    for (size_t i = 0; i < pl->nslots; i++)    /* a map goes by value: its 128 bytes */
        params[i] = pl->slot_size[i] == TILERT_TMAP_BYTES ? (void *)maps[pl->slot[i]]
                                                          : (void *)&pl->slot[i];
    CUresult r;
    if (pl->cluster[0] * pl->cluster[1] * pl->cluster[2] == 1) {
        r = drv->LaunchKernel(f, pl->grid[0], pl->grid[1], pl->grid[2], pl->block[0],
                              pl->block[1], pl->block[2], pl->smem, (CUstream)stream, params, NULL);
        return r ? tilert_cuda_fail(drv, r, "cuLaunchKernel", k->name) : TILERT_OK;
    }
    if (!drv->LaunchKernelEx)
        return tilert_fail(TILERT_ERR_CUDA, "kernel %s uses thread-block clusters, which need "
                           "cuLaunchKernelEx (CUDA 12 driver)", k->name);
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = pl->cluster[0];
    attr.value.clusterDim.y = pl->cluster[1];
    attr.value.clusterDim.z = pl->cluster[2];
    CUlaunchConfig cfg = {pl->grid[0], pl->grid[1], pl->grid[2], pl->block[0], pl->block[1],
                          pl->block[2], pl->smem, (CUstream)stream, &attr, 1};
    r = drv->LaunchKernelEx(&cfg, f, params, NULL);
    return r ? tilert_cuda_fail(drv, r, "cuLaunchKernelEx", k->name) : TILERT_OK;
}

static bool empty_grid(const tilert_launch_plan *pl)
{
    return !pl->grid[0] || !pl->grid[1] || !pl->grid[2];
}

/* What tilert_kernel_last_variant reports for k. */
static void record_variant(tilert_kernel *k, const tilert_launch_plan *pl)
{
    pthread_mutex_lock(&k->mod->state_lock);
    k->last_ran = (tilert_kernel *)pl->kernel;
    if (strcmp(k->last_reason, pl->fallback_reason) != 0)
        snprintf(k->last_reason, sizeof k->last_reason, "%s", pl->fallback_reason);
    pthread_mutex_unlock(&k->mod->state_lock);
}

TILERT_API tilert_kernel *tilert_kernel_last_variant(const tilert_kernel *k, char *reason,
                                                     size_t len)
{
    if (reason && len)
        reason[0] = '\0';
    if (!k)
        return NULL;
    pthread_mutex_lock(&k->mod->state_lock);
    tilert_kernel *ran = k->last_ran;
    if (reason && len)
        snprintf(reason, len, "%s", k->last_reason);
    pthread_mutex_unlock(&k->mod->state_lock);
    return ran;
}

TILERT_API tilert_status tilert_launch(tilert_kernel *k, const tilert_arg *args, size_t nargs,
                                       void *stream)
{
    tilert_launch_plan pl;
    tilert_status st = tilert_check_launch(k, args, nargs, &pl);
    if (st)
        return st;
    tilert_module *m = k->mod;
    if (!m->drv)
        return tilert_fail(TILERT_ERR_USAGE, "kernel %s: the module holds metadata only "
                           "(tilert_module_from_meta) and cannot launch", k->name);
    if (empty_grid(&pl)) {    /* nothing to do */
        record_variant(k, &pl);
        return TILERT_OK;
    }
    CUcontext ctx;
    int pdev;
    if ((st = tilert_enter_ctx(m->drv, pl.device, &ctx, &pdev)))
        return st;
    _Alignas(TILERT_TMAP_HOST_ALIGN) unsigned char maps[TILERT_MAX_TMAPS][TILERT_TMAP_BYTES];
    st = make_maps(k, ctx, args, nargs, &pl, maps);
    tilert_kernel *run = (tilert_kernel *)pl.kernel;    /* k or its fallback */
    if (!st && !empty_grid(&pl)) {
        RtLoaded *l;
        CUfunction f = NULL;
        pthread_mutex_lock(&m->lock);
        st = get_loaded(m, ctx, pdev, &l);
        if (!st)
            st = prepare_func(run, l, &f);
        pthread_mutex_unlock(&m->lock);
        if (!st)
            st = check_pointers(run, &pl, l);
        if (!st)
            st = do_launch(run, f, &pl, maps, stream);
    }
    tilert_leave_ctx(m->drv, pdev);
    if (!st) {
        record_variant(k, &pl);
        tilert_clear_error();
    }
    return st;
}
