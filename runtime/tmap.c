/* tmap.c - Hopper tensor maps (TMA descriptors): the cuTensorMapEncodeTiled
 * arguments of a tensor, and each kernel's cache of encoded maps.
 *
 * Needs: tensors already validated against their params (check.c: device,
 * dtype, rank, shape, non-negative strides, innermost stride 1). Guarantees:
 * tilert_tmap_compute accepts a tensor only if every precondition of
 * docs/runtime.md "Tensor maps" holds, so the driver sees no argument it
 * documents as invalid; tilert_tmap_get hands out a cached map only for
 * byte-identical arguments in the same context.
 */
#include <stdio.h>
#include <string.h>
#include "rt.h"

#define CACHE_WAYS 4             /* maps kept per tensor map of a kernel */
#define MAX_STRIDE_BYTES (1ull << 40)
#define MAX_EXTENT (1ull << 32)

typedef struct RtTmapEntry {
    bool used;
    CUcontext ctx;
    tilert_tmap_args key;        /* what the map was encoded from */
    uint64_t map[TILERT_TMAP_BYTES / 8];
} RtTmapEntry;

struct RtTmapCache {
    RtTmapEntry e[CACHE_WAYS];
    unsigned next;               /* the entry replaced next (round robin) */
};

/* ORDER DTYPE: every element type of a tensor param, by its size (the copy
 * is bitwise; fp8 and bool travel as bytes). */
int tilert_tmap_data_type(int dtype)
{
    switch (dtype) {
    case RT_BOOL: case RT_I8: case RT_U8: case RT_F8E4M3: case RT_F8E5M2:
        return CU_TENSOR_MAP_DATA_TYPE_UINT8;
    case RT_I16: case RT_U16: return CU_TENSOR_MAP_DATA_TYPE_UINT16;
    case RT_I32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case RT_U32: return CU_TENSOR_MAP_DATA_TYPE_UINT32;
    case RT_I64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
    case RT_U64: return CU_TENSOR_MAP_DATA_TYPE_UINT64;
    case RT_F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case RT_BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case RT_F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case RT_F64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    default: return -1;
    }
}

static int swizzle_enum(int bytes)
{
    return bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
         : bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE;
}

static bool rule(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool rule(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return false;
}

/* The byte stride of outer dim d into a->global_strides. A dim of extent 1
 * never advances, so its own stride is not used: it gets the smallest
 * multiple of 16 that covers the dims inside it (`cover` bytes). */
static bool stride_of(const RtParam *p, const DLTensor *t, const int64_t *strides, int d,
                      uint64_t cover, uint64_t *out, char *why, size_t n)
{
    uint64_t elem = (uint64_t)tilert_dtype_bits(p->dtype) / 8, bytes;
    if (t->shape[d] == 1)
        bytes = (cover + 15) / 16 * 16;
    else if (__builtin_mul_overflow((uint64_t)strides[d], elem, &bytes))
        bytes = UINT64_MAX;
    else if (bytes % 16)
        return rule(why, n, "param %s dim %d: stride %lld elements (%llu bytes) is not a multiple "
                    "of 16 bytes, as a tensor map needs", p->name, d, (long long)strides[d],
                    (unsigned long long)bytes);
    if (bytes >= MAX_STRIDE_BYTES)
        return rule(why, n, "param %s dim %d: stride of %llu bytes is not below 2^40, as a "
                    "tensor map needs", p->name, d, (unsigned long long)bytes);
    *out = bytes;
    return true;
}

bool tilert_tmap_compute(const tilert_kernel *k, const RtTmap *tm, const DLTensor *t,
                         const int64_t *strides, tilert_tmap_args *a, char *why, size_t n)
{
    const RtParam *p = &k->params[tm->param];
    int r = p->rank;
    uint64_t addr = (uint64_t)(uintptr_t)t->data + t->byte_offset;
    memset(a, 0, sizeof *a);
    a->param = (size_t)tm->param;
    a->rank = (unsigned)r;
    a->data_type = tilert_tmap_data_type(p->dtype);
    a->global_address = addr;
    a->interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
    a->swizzle = swizzle_enum(tm->swizzle);
    a->l2_promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    a->oob_fill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
    if (addr % 16)
        return rule(why, n, "param %s: data address 0x%llx (data + byte_offset %llu) is not "
                    "16-byte aligned, as a tensor map needs", p->name, (unsigned long long)addr,
                    (unsigned long long)t->byte_offset);
    for (int i = 0; i < r; i++) {          /* i counts from the innermost dim */
        int d = r - 1 - i;
        if (t->shape[d] < 1 || (uint64_t)t->shape[d] > MAX_EXTENT)
            return rule(why, n, "param %s dim %d: extent %lld is outside 1..2^32, as a tensor "
                        "map needs", p->name, d, (long long)t->shape[d]);
        a->global_dim[i] = (uint64_t)t->shape[d];
        a->box_dim[i] = (uint32_t)tm->box[d];
        a->element_strides[i] = 1;
    }
    uint64_t cover = (uint64_t)tilert_dtype_bits(p->dtype) / 8 * a->global_dim[0];
    for (int d = r - 2; d >= 0; d--) {
        uint64_t *s = &a->global_strides[r - 2 - d];
        if (!stride_of(p, t, strides, d, cover, s, why, n))
            return false;
        if (__builtin_mul_overflow(*s, (uint64_t)t->shape[d], &cover))
            cover = UINT64_MAX;
    }
    return true;
}

tilert_status tilert_tmap_cache_init(tilert_kernel *k)
{
    if (!k->ntmaps)
        return TILERT_OK;
    k->cache = tilert_pool_alloc(&k->mod->pool, sizeof *k->cache * k->ntmaps);
    return k->cache ? TILERT_OK : TILERT_ERR_NOMEM;
}

/* The same map but for its address? */
static bool same_but_address(const tilert_tmap_args *x, const tilert_tmap_args *y)
{
    tilert_tmap_args z = *x;
    z.global_address = y->global_address;
    return memcmp(&z, y, sizeof z) == 0;
}

/* A new map for a into m: the address replaced in a map of the same shape,
 * else encoded. The caller holds the state lock. */
static tilert_status encode(const tilert_driver *drv, const RtTmapEntry *like,
                            const tilert_tmap_args *a, uint64_t *m, const char *param,
                            char *why, size_t n)
{
    if (like && drv->TensorMapReplaceAddress) {
        memcpy(m, like->map, TILERT_TMAP_BYTES);
        if (drv->TensorMapReplaceAddress(m, (void *)(uintptr_t)a->global_address) == CUDA_SUCCESS)
            return TILERT_OK;
    }
    if (!drv->TensorMapEncodeTiled) {
        snprintf(why, n, "param %s: the CUDA driver has no cuTensorMapEncodeTiled (a driver "
                 "older than CUDA 12)", param);
        return TILERT_ERR_NO_DRIVER;
    }
    CUresult r = drv->TensorMapEncodeTiled(m, a->data_type, a->rank,
                                           (void *)(uintptr_t)a->global_address, a->global_dim,
                                           a->global_strides, a->box_dim, a->element_strides,
                                           a->interleave, a->swizzle, a->l2_promotion, a->oob_fill);
    if (r == CUDA_SUCCESS)
        return TILERT_OK;
    char what[160];
    snprintf(what, sizeof what, "param %s", param);
    tilert_cuda_fail(drv, r, "cuTensorMapEncodeTiled", what);
    snprintf(why, n, "%s", tilert_last_error());
    return TILERT_ERR_CUDA;
}

tilert_status tilert_tmap_get(const tilert_driver *drv, tilert_kernel *k, size_t j,
                              CUcontext ctx, const tilert_tmap_args *a, void *map,
                              char *why, size_t n)
{
    _Alignas(TILERT_TMAP_HOST_ALIGN) uint64_t m[TILERT_TMAP_BYTES / 8];
    RtTmapCache *c = &k->cache[j];
    RtTmapEntry *hit = NULL, *like = NULL;
    tilert_status st = TILERT_OK;
    pthread_mutex_lock(&k->mod->state_lock);
    for (int i = 0; i < CACHE_WAYS && !hit; i++) {
        RtTmapEntry *e = &c->e[i];
        if (!e->used || e->ctx != ctx)
            continue;
        if (memcmp(&e->key, a, sizeof *a) == 0)
            hit = e;
        else if (same_but_address(&e->key, a))
            like = e;
    }
    if (hit) {
        memcpy(map, hit->map, TILERT_TMAP_BYTES);
    } else if (!(st = encode(drv, like, a, m, k->params[a->param].name, why, n))) {
        RtTmapEntry *e = &c->e[c->next++ % CACHE_WAYS];
        *e = (RtTmapEntry){.used = true, .ctx = ctx, .key = *a};
        memcpy(e->map, m, TILERT_TMAP_BYTES);
        memcpy(map, m, TILERT_TMAP_BYTES);
    }
    pthread_mutex_unlock(&k->mod->state_lock);
    return st;
}
