/* check.c - launch validation and argument packing, without a GPU.
 *
 * Needs: a parsed kernel (meta.c). Guarantees: tilert_check_args accepts the
 * arguments only if every rule of docs/runtime.md "Launch validation" holds,
 * and then fills a plan whose slots follow the kernel ABI (ORDER ABI in
 * codegen/codegen.h): per param in order, a tensor's data pointer and its
 * rank-1 outer strides (i64, elements) or a scalar in its dtype; then every
 * named dim as i32; then a 128-byte, 64-aligned slot per tensor map, whose
 * cuTensorMapEncodeTiled arguments the plan carries (tmap.c). When the
 * arguments break only the kernel's own rules (alignment, tensor maps) and
 * its fallback takes them, the plan is the fallback's, with the reason.
 * tilert_check_launch first asks the signature cache (sigcache.c) for the
 * plan of a recent launch with the same signature.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

/* DLPack >= 1.1 codes for types dlpack 0.6 lacks (values fixed by the standard). */
enum { DL_BOOL = 6, DL_F8_E4M3FN = 10, DL_F8_E5M2 = 12 };

typedef struct Check {
    const tilert_kernel *k;
    const tilert_arg *args;
    char *err;
    size_t errlen;
    tilert_launch_plan *plan;
    int dim_param[TILERT_MAX_DIMS];    /* the param that bound the dim, or -1 */
    int dim_axis[TILERT_MAX_DIMS];
    int device_param;                  /* the first tensor param, or -1 */
    int64_t strides[TILERT_MAX_PARAMS][TILERT_MAX_RANK];   /* per tensor, elements */
    uint64_t addr[TILERT_MAX_PARAMS];  /* per tensor: data + byte_offset */
    uint64_t span[TILERT_MAX_PARAMS];  /* per tensor: bytes from addr to past the last element
                                          (saturating), 0 for an empty tensor */
    int empty_map;                     /* a tensor map of an empty tensor, or -1 */
    char reason[256];                  /* the first kernel rule broken, "" if none */
} Check;

static tilert_status argerr(Check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tilert_status argerr(Check *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->err && c->errlen)
        snprintf(c->err, c->errlen, "kernel %s: %s", c->k->name, msg);
    return tilert_fail(TILERT_ERR_ARGS, "kernel %s: %s", c->k->name, msg);
}

/* "float32", "bfloat16", "float8_e4m3fn", "code 9 bits 8" */
static void dl_type_name(DLDataType t, char *buf, size_t n)
{
    static const char *const names[] = {"int", "uint", "float", "handle", "bfloat", "complex", "bool"};
    size_t len;
    if (t.code == DL_F8_E4M3FN)
        len = (size_t)snprintf(buf, n, "float8_e4m3fn");
    else if (t.code == DL_F8_E5M2)
        len = (size_t)snprintf(buf, n, "float8_e5m2");
    else if (t.code == DL_BOOL)
        len = (size_t)snprintf(buf, n, "bool");
    else if (t.code < sizeof names / sizeof names[0])
        len = (size_t)snprintf(buf, n, "%s%d", names[t.code], t.bits);
    else
        len = (size_t)snprintf(buf, n, "DLPack code %d bits %d", t.code, t.bits);
    if (t.lanes != 1 && len < n)
        snprintf(buf + len, n - len, "x%d", t.lanes);
}

/* Does a DLPack dtype carry the param's dtype? fp8 also as raw uint8, bool as uint8. */
static bool dtype_ok(int dt, DLDataType t)
{
    if (t.lanes != 1 || t.bits != tilert_dtype_bits(dt))
        return false;
    switch (dt) {
    case RT_BOOL: return t.code == DL_BOOL || t.code == kDLUInt;
    case RT_I8: case RT_I16: case RT_I32: case RT_I64: return t.code == kDLInt;
    case RT_U8: case RT_U16: case RT_U32: case RT_U64: return t.code == kDLUInt;
    case RT_BF16: return t.code == kDLBfloat;
    case RT_F16: case RT_F32: case RT_F64: return t.code == kDLFloat;
    case RT_F8E4M3: return t.code == DL_F8_E4M3FN || t.code == kDLUInt;
    case RT_F8E5M2: return t.code == DL_F8_E5M2 || t.code == kDLUInt;
    default: return false;
    }
}

/* A rule of this kernel (not of the params: an alignment or a tensor-map
 * rule) that the fallback may not have. With a fallback, the first such
 * failure is kept as the reason to take it and checking goes on; without,
 * it is the error. */
static tilert_status kernel_rule(Check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tilert_status kernel_rule(Check *c, const char *fmt, ...)
{
    char msg[sizeof c->reason];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!c->k->fallback)
        return argerr(c, "%s", msg);
    if (!c->reason[0])
        memcpy(c->reason, msg, sizeof msg);
    return TILERT_OK;
}

/* Argument i at the next offset aligned to `align`. */
static void push_slot_at(tilert_launch_plan *pl, uint64_t v, size_t size, size_t align)
{
    size_t i = pl->nslots++;
    size_t off = (pl->param_bytes + align - 1) / align * align;
    pl->slot[i] = v;
    pl->slot_size[i] = (uint8_t)size;
    pl->slot_offset[i] = (uint32_t)off;
    pl->param_bytes = off + size;
}

static void push_slot(tilert_launch_plan *pl, const void *v, size_t size)
{
    uint64_t x = 0;
    memcpy(&x, v, size);
    push_slot_at(pl, x, size, size);
}

/* The device of every tensor: CUDA memory, one device for all. */
static tilert_status check_device(Check *c, int i, const DLTensor *t)
{
    const tilert_kernel *k = c->k;
    const RtParam *p = &k->params[i];
    if (t->device.device_type != kDLCUDA && t->device.device_type != kDLCUDAManaged)
        return argerr(c, "param %s: tensor is in %s memory (DLPack device type %d); the kernel "
                      "needs CUDA device memory", p->name,
                      t->device.device_type == kDLCPU ? "CPU" :
                      t->device.device_type == kDLCUDAHost ? "pinned host" : "non-CUDA",
                      (int)t->device.device_type);
    if (c->device_param < 0) {
        c->device_param = i;
        c->plan->device = t->device.device_id;
    } else if (t->device.device_id != c->plan->device) {
        return argerr(c, "param %s is on cuda:%d but param %s is on cuda:%d", p->name,
                      (int)t->device.device_id, k->params[c->device_param].name, c->plan->device);
    }
    return TILERT_OK;
}

/* Shape of param i against its dims: static extents, named-dim agreement, i32 range. */
static tilert_status check_shape(Check *c, int i, const DLTensor *t)
{
    const tilert_kernel *k = c->k;
    const RtParam *p = &k->params[i];
    for (int d = 0; d < p->rank; d++) {
        int64_t n = t->shape[d];
        int ref = p->dimref[d];
        if (n < 0)
            return argerr(c, "param %s dim %d has negative extent %lld", p->name, d, (long long)n);
        if (ref < 0) {
            if (n != p->extent[d])
                return argerr(c, "param %s dim %d is %lld but the kernel is compiled for %lld",
                              p->name, d, (long long)n, (long long)p->extent[d]);
            continue;
        }
        if (n > INT32_MAX)
            return argerr(c, "param %s dim %d (%s) is %lld, over the i32 limit %d of the kernel ABI",
                          p->name, d, k->dims[ref], (long long)n, INT32_MAX);
        if (c->dim_param[ref] < 0) {
            c->dim_param[ref] = i;
            c->dim_axis[ref] = d;
            c->plan->dims[ref] = n;
        } else if (c->plan->dims[ref] != n) {
            return argerr(c, "param %s dim %d (%s) is %lld but param %s dim %d says %lld", p->name,
                          d, k->dims[ref], (long long)n, k->params[c->dim_param[ref]].name,
                          c->dim_axis[ref], (long long)c->plan->dims[ref]);
        }
    }
    return TILERT_OK;
}

/* The bytes a non-empty tensor's elements reach from its first one: the
 * last element's offset plus its size, saturating at UINT64_MAX (strides
 * are not negative here). */
static uint64_t tensor_span(const RtParam *p, const int64_t *shape, const int64_t *st)
{
    uint64_t last = 0, term, elem = (uint64_t)tilert_dtype_bits(p->dtype) / 8;
    for (int d = 0; d < p->rank; d++)
        if (__builtin_mul_overflow((uint64_t)(shape[d] - 1), (uint64_t)st[d], &term) ||
            __builtin_add_overflow(last, term, &last))
            return UINT64_MAX;
    if (__builtin_add_overflow(last, 1, &last) || __builtin_mul_overflow(last, elem, &last))
        return UINT64_MAX;
    return last;
}

/* The last byte of a non-empty span from addr, saturating. */
uint64_t tilert_span_last(uint64_t addr, uint64_t span)
{
    uint64_t e;
    return __builtin_add_overflow(addr, span - 1, &e) ? UINT64_MAX : e;
}

/* Strides (elements; NULL = compact row-major), alignment; then pack ptr + outer strides. */
static tilert_status check_layout(Check *c, int i, const DLTensor *t)
{
    const RtParam *p = &c->k->params[i];
    int64_t *st = c->strides[i], run = 1;
    bool empty = false;
    for (int d = p->rank - 1; d >= 0; d--) {
        st[d] = t->strides ? t->strides[d] : run;
        if (__builtin_mul_overflow(run, t->shape[d] ? t->shape[d] : 1, &run))
            return argerr(c, "param %s: tensor size overflows 64 bits", p->name);
        empty |= t->shape[d] == 0;
        if (st[d] < 0)
            return argerr(c, "param %s dim %d has negative stride %lld; pass a copy with "
                          "positive strides", p->name, d, (long long)st[d]);
    }
    if (st[p->rank - 1] != 1 && t->shape[p->rank - 1] > 1)
        return argerr(c, "param %s: innermost stride is %lld but the kernel needs 1 (a "
                      "contiguous last dim; pass .contiguous())", p->name, (long long)st[p->rank - 1]);
    uint64_t addr = (uint64_t)(uintptr_t)t->data + t->byte_offset;
    if (!empty && t->data == NULL)
        return argerr(c, "param %s: data pointer is NULL", p->name);
    if (!empty && addr < (uint64_t)(uintptr_t)t->data)
        return argerr(c, "param %s: data + byte_offset (%p + %llu) wraps around the address space", p->name,
                      t->data, (unsigned long long)t->byte_offset);
    if (!empty && addr % (uint64_t)p->align &&
        kernel_rule(c, "param %s: data address 0x%llx (data + byte_offset %llu) is not "
                    "aligned to %d bytes as the kernel assumes", p->name,
                    (unsigned long long)addr, (unsigned long long)t->byte_offset, p->align))
        return TILERT_ERR_ARGS;
    c->addr[i] = addr;
    c->span[i] = empty ? 0 : tensor_span(p, t->shape, st);
    push_slot(c->plan, &addr, 8);
    for (int d = 0; d < p->rank - 1; d++)
        push_slot(c->plan, &st[d], 8);
    return TILERT_OK;
}

static tilert_status check_tensor(Check *c, int i, const tilert_arg *a)
{
    const tilert_kernel *k = c->k;
    const RtParam *p = &k->params[i];
    char want[256], got[64];    /* the param's type, spelled out for a message only */
    if (a->kind != TILERT_ARG_TENSOR || !a->u.tensor) {
        tilert_param_type(k, p, want, sizeof want);
        return argerr(c, "param %s: expected a tensor %s, got %s", p->name, want,
                      a->kind == TILERT_ARG_TENSOR ? "NULL" : "a scalar");
    }
    const DLTensor *t = a->u.tensor;
    tilert_status st = check_device(c, i, t);
    if (st)
        return st;
    if (!dtype_ok(p->dtype, t->dtype)) {
        tilert_param_type(k, p, want, sizeof want);
        dl_type_name(t->dtype, got, sizeof got);
        return argerr(c, "param %s: tensor dtype is %s but the kernel wants %s", p->name, got, want);
    }
    if (t->ndim != p->rank || !t->shape) {
        tilert_param_type(k, p, want, sizeof want);
        return argerr(c, "param %s: tensor has rank %d but the kernel wants rank %d (%s)",
                      p->name, t->ndim, p->rank, want);
    }
    if ((st = check_shape(c, i, t)))
        return st;
    return check_layout(c, i, t);
}

/* A scalar argument as param p's bytes (its slot, host byte order), or
 * the rule it breaks. The launch check and the signature cache's
 * per-launch check share it (ScalarErr: rt.h). */
ScalarErr tilert_scalar_value(const RtParam *p, const tilert_arg *a, uint64_t *slot, int64_t *iv)
{
    if (a->kind != TILERT_ARG_INT && a->kind != TILERT_ARG_FLOAT)
        return SC_KIND;
    double f = a->kind == TILERT_ARG_FLOAT ? a->u.f : (double)a->u.i;
    uint64_t x = 0;
    if (p->dtype == RT_F32) {
        float v = (float)f;
        if (isinf(v) && !isinf(f))
            return SC_F32_RANGE;
        memcpy(&x, &v, 4);
    } else if (p->dtype == RT_F64) {
        memcpy(&x, &f, 8);
    } else if (p->dtype == RT_I32 || p->dtype == RT_I64) {
        int64_t v = a->u.i;
        if (a->kind == TILERT_ARG_FLOAT) {
            if (!(f == floor(f) && f >= -9.2233720368547758e18 && f < 9.2233720368547758e18))
                return SC_NOT_INT;
            v = (int64_t)f;
        }
        *iv = v;
        if (p->dtype == RT_I32 && (v < INT32_MIN || v > INT32_MAX))
            return SC_INT_RANGE;
        if (p->dtype == RT_I32)
            memcpy(&x, &(int32_t){(int32_t)v}, 4);
        else
            memcpy(&x, &v, 8);
    } else {    /* bool, as i8 */
        if (a->kind == TILERT_ARG_FLOAT)
            return SC_BOOL_FLOAT;
        x = a->u.i != 0;
    }
    *slot = x;
    return SC_OK;
}

static const size_t scalar_bytes[RT_NDTYPES] = {[RT_F32] = 4, [RT_F64] = 8, [RT_I32] = 4,
                                                [RT_I64] = 8, [RT_BOOL] = 1};

static tilert_status check_scalar(Check *c, int i, const tilert_arg *a)
{
    const RtParam *p = &c->k->params[i];
    uint64_t x;
    int64_t v = 0;
    double f = a->kind == TILERT_ARG_FLOAT ? a->u.f : (double)a->u.i;
    switch (tilert_scalar_value(p, a, &x, &v)) {
    case SC_OK:
        push_slot(c->plan, &x, scalar_bytes[p->dtype]);
        return TILERT_OK;
    case SC_KIND:
        return argerr(c, "param %s: expected a scalar %s, got %s", p->name,
                      tilert_dtype_name(p->dtype), a->kind == TILERT_ARG_TENSOR ? "a tensor" :
                      "an argument of unknown kind");
    case SC_F32_RANGE:
        return argerr(c, "param %s: %g does not fit f32", p->name, f);
    case SC_NOT_INT:
        return argerr(c, "param %s: %s expects an integer, got %g", p->name,
                      tilert_dtype_name(p->dtype), f);
    case SC_INT_RANGE:
        return argerr(c, "param %s: %lld does not fit %s", p->name, (long long)v,
                      tilert_dtype_name(p->dtype));
    default:
        return argerr(c, "param %s: bool expects an integer (0 or 1), got %g", p->name, f);
    }
}

/* No tensor the kernel writes overlaps another tensor argument (its
 * `writes` record; none without one): the kernel takes every tensor param
 * as noalias and reads through the non-coherent cache. Memory is compared
 * by span, first to last byte an argument reaches; empty tensors reach
 * none. The first overlap in param order is the error. */
static tilert_status check_overlap(Check *c)
{
    const tilert_kernel *k = c->k;
    if (!k->writes_line)
        return TILERT_OK;
    for (size_t w = 0; w < k->nparams; w++) {
        const RtParam *pw = &k->params[w];
        if (!pw->written || !c->span[w])
            continue;
        uint64_t lo = c->addr[w], hi = tilert_span_last(lo, c->span[w]);
        for (size_t j = 0; j < k->nparams; j++) {
            const RtParam *pj = &k->params[j];
            if (j == w || pj->kind != TILERT_PARAM_TENSOR || !c->span[j])
                continue;
            uint64_t lj = c->addr[j], hj = tilert_span_last(lj, c->span[j]);
            if (!(lo <= hj && lj <= hi))
                continue;
            if (lo == lj)
                return argerr(c, "param %s (written by the kernel) starts at the same address as "
                              "param %s%s (0x%llx): the kernel cannot work in place, since tensor "
                              "params must not alias (it reads them through the non-coherent "
                              "cache); pass %s a separate tensor", pw->name, pj->name,
                              pj->written ? " (written too)" : "", (unsigned long long)lo,
                              pw->name);
            return argerr(c, "param %s (written by the kernel) overlaps param %s%s: %s spans bytes "
                          "0x%llx..0x%llx, %s 0x%llx..0x%llx; tensor params must not alias (the "
                          "kernel reads them through the non-coherent cache); pass separate "
                          "tensors", pw->name, pj->name, pj->written ? " (written too)" : "",
                          pw->name, (unsigned long long)lo, (unsigned long long)hi, pj->name,
                          (unsigned long long)lj, (unsigned long long)hj);
        }
    }
    return TILERT_OK;
}

/* The tensor maps' arguments (docs/runtime.md "Tensor maps"). A map of an
 * empty tensor stays zero (rank 0): finish_plan allows it in an empty
 * launch only. */
static tilert_status check_tmaps(Check *c)
{
    const tilert_kernel *k = c->k;
    tilert_launch_plan *pl = c->plan;
    pl->ntmaps = k->ntmaps;
    for (size_t j = 0; j < k->ntmaps; j++) {
        const RtTmap *tm = &k->tmaps[j];
        const DLTensor *t = c->args[tm->param].u.tensor;
        char why[sizeof c->reason];
        pl->tmap[j].param = (size_t)tm->param;
        bool empty = false;
        for (int d = 0; d < t->ndim; d++)
            empty |= t->shape[d] == 0;
        if (empty) {
            if (c->empty_map < 0)
                c->empty_map = (int)j;
            continue;
        }
        if (!tilert_tmap_compute(k, tm, t, c->strides[tm->param], &pl->tmap[j], why, sizeof why) &&
            kernel_rule(c, "%s", why))
            return TILERT_ERR_ARGS;
    }
    return TILERT_OK;
}

/* Grid from the bound dims; cluster divisibility; block and smem; the
 * tensor-map slots after the dims. */
static tilert_status finish_plan(Check *c)
{
    const tilert_kernel *k = c->k;
    tilert_launch_plan *pl = c->plan;
    for (size_t d = 0; d < k->ndims; d++)
        push_slot(pl, &(int32_t){(int32_t)pl->dims[d]}, 4);
    for (size_t j = 0; j < k->ntmaps; j++)
        push_slot_at(pl, j, TILERT_TMAP_BYTES, 64);
    /* metadata only, a grid of num_sms(): no device, so the grid stays
     * unknown (zeros) and the checks that need it wait for the launch */
    bool known = !k->uses_sms || (k->mod && k->mod->drv);
    memset(pl->grid, 0, sizeof pl->grid);
    tilert_status st = known ? tilert_kernel_grid(k, pl->dims, k->ndims, pl->grid) : TILERT_OK;
    if (st) {
        if (c->err && c->errlen)
            snprintf(c->err, c->errlen, "%s", tilert_last_error());
        return st;
    }
    for (int a = 0; a < 3; a++) {
        pl->cluster[a] = (unsigned)k->cluster[a];
        if (known && pl->grid[a] % pl->cluster[a])
            return argerr(c, "grid %c is %u, not a multiple of the cluster size %u", "xyz"[a],
                          pl->grid[a], pl->cluster[a]);
    }
    pl->block[0] = (unsigned)k->threads;
    pl->block[1] = pl->block[2] = 1;
    pl->smem = (unsigned)k->smem;
    if (c->empty_map >= 0 && pl->grid[0] && pl->grid[1] && pl->grid[2]) {
        const RtParam *p = &k->params[k->tmaps[c->empty_map].param];
        return kernel_rule(c, "param %s: an empty tensor has no tensor map, and the grid "
                           "(%u, %u, %u) is not empty", p->name, pl->grid[0], pl->grid[1],
                           pl->grid[2]);
    }
    return TILERT_OK;
}

static tilert_status check_count(Check *c, size_t nargs)
{
    const tilert_kernel *k = c->k;
    if (nargs == k->nparams)
        return TILERT_OK;
    char names[512] = "";
    size_t len = 0;
    for (size_t i = 0; i < k->nparams && len < sizeof names; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                                k->params[i].name);
    return argerr(c, "takes %zu argument%s (%s), got %zu", k->nparams,
                  k->nparams == 1 ? "" : "s", names, nargs);
}

/* Every rule for k; a broken kernel rule is kept in c->reason when k has a fallback. */
static tilert_status check_kernel(Check *c, const tilert_kernel *k, const tilert_arg *args,
                                  size_t nargs)
{
    memset(c->plan, 0, sizeof *c->plan);
    c->k = k;
    c->args = args;
    c->device_param = c->empty_map = -1;
    c->reason[0] = '\0';
    c->plan->ndims = k->ndims;
    c->plan->device = -1;
    c->plan->kernel = k;
    for (size_t d = 0; d < k->ndims; d++)
        c->dim_param[d] = -1;
    tilert_status st = check_count(c, nargs);
    for (size_t i = 0; i < k->nparams && !st; i++)
        st = k->params[i].kind == TILERT_PARAM_TENSOR ? check_tensor(c, (int)i, &args[i])
                                                      : check_scalar(c, (int)i, &args[i]);
    if (!st)
        st = check_overlap(c);
    if (!st)
        st = check_tmaps(c);
    if (!st)
        st = finish_plan(c);
    return st;
}

/* k broke one of its own rules (reason): the plan of its fallback, which
 * must take the arguments by all of its own rules. */
static tilert_status take_fallback(Check *c, const tilert_arg *args, size_t nargs,
                                   const char *reason)
{
    const tilert_kernel *k = c->k;
    char why[sizeof c->reason];
    snprintf(why, sizeof why, "%s", reason);
    if (!k->fallback)
        return argerr(c, "%s", why);
    tilert_status st = check_kernel(c, k->fallback, args, nargs);
    if (!st && c->reason[0])
        st = argerr(c, "%s", c->reason);
    if (st) {
        char fb[1024];
        snprintf(fb, sizeof fb, "%s", tilert_last_error());
        c->k = k;
        return argerr(c, "%s; its fallback refuses the arguments too: %s", why, fb);
    }
    snprintf(c->plan->fallback_reason, sizeof c->plan->fallback_reason, "%s", why);
    return TILERT_OK;
}

/* Every rule; c->addr and c->span hold the tensors' memory on success. */
static tilert_status check_plan(Check *c, const tilert_kernel *k, const tilert_arg *args,
                                size_t nargs, char *err, size_t errlen, tilert_launch_plan *plan,
                                const char *forced)
{
    if (err && errlen)
        err[0] = '\0';
    if (!k || (nargs && !args)) {
        if (err && errlen)
            snprintf(err, errlen, "tilert_check_args: NULL kernel or arguments");
        return tilert_fail(TILERT_ERR_USAGE, "tilert_check_args: NULL kernel or arguments");
    }
    c->err = err;
    c->errlen = errlen;
    c->plan = plan;
    tilert_status st = check_kernel(c, k, args, nargs);
    if (!st && (forced || c->reason[0]))
        st = take_fallback(c, args, nargs, forced ? forced : c->reason);
    if (!st)
        tilert_clear_error();
    return st;
}

tilert_status tilert_check_plan(const tilert_kernel *k, const tilert_arg *args, size_t nargs,
                                char *err, size_t errlen, tilert_launch_plan *plan,
                                const char *forced)
{
    tilert_launch_plan local;
    Check c;
    return check_plan(&c, k, args, nargs, err, errlen, plan ? plan : &local, forced);
}

TILERT_API tilert_status tilert_check_args(const tilert_kernel *k, const tilert_arg *args,
                                           size_t nargs, char *err, size_t errlen,
                                           tilert_launch_plan *plan)
{
    return tilert_check_plan(k, args, nargs, err, errlen, plan, NULL);
}

tilert_status tilert_check_launch(tilert_kernel *k, const tilert_arg *args, size_t nargs,
                                  tilert_launch_plan *plan)
{
    if (k && nargs == k->nparams && (args || !nargs) && tilert_sig_lookup(k, args, nargs, plan))
        return TILERT_OK;
    Check c;
    tilert_status st = check_plan(&c, k, args, nargs, NULL, 0, plan, NULL);
    if (!st)
        tilert_sig_insert(k, args, nargs, plan, c.addr, c.span);
    return st;
}
