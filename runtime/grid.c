/* grid.c - evaluates a kernel's grid rule (three RPN programs over the named
 * dims, parsed by meta.c) in checked 64-bit arithmetic.
 *
 * Guarantees: no overflow, no division by zero, and grid dims within the
 * hardware limits (x < 2^31, y, z < 65536); 0 is allowed (empty launch).
 */
#include <stdio.h>
#include "rt.h"
#include "../ir/divisor.h"
#include "../lib/tc_limits.h"

#define STACK 64

static bool apply(RpnOp op, int64_t a, int64_t b, int64_t *r, char *err, size_t errlen)
{
    switch (op) {
    case RPN_ADD: if (__builtin_add_overflow(a, b, r)) goto overflow; return true;
    case RPN_SUB: if (__builtin_sub_overflow(a, b, r)) goto overflow; return true;
    case RPN_MUL: if (__builtin_mul_overflow(a, b, r)) goto overflow; return true;
    case RPN_MIN: *r = a < b ? a : b; return true;
    case RPN_MAX: *r = a > b ? a : b; return true;
    case RPN_DIVISOR:
        *r = tc_divisor(a, b);
        if (*r < 0) {
            snprintf(err, errlen, "divisor of %lld: over 2^32", (long long)a);
            return false;
        }
        return true;
    case RPN_DIV: case RPN_MOD: case RPN_CDIV:
        if (b == 0) {
            snprintf(err, errlen, "%s by zero", op == RPN_DIV ? "division" : op == RPN_MOD ?
                     "remainder" : "cdiv");
            return false;
        }
        if (a == INT64_MIN && b == -1)
            goto overflow;
        if (op == RPN_CDIV) {   /* (a + b - 1) / b, as the compiler lowers cdiv */
            if (__builtin_add_overflow(a, b - 1, &a))
                goto overflow;
        }
        *r = op == RPN_MOD ? a % b : a / b;
        return true;
    default:
        break;
    }
    snprintf(err, errlen, "bad grid operator");
    return false;
overflow:
    snprintf(err, errlen, "arithmetic overflow");
    return false;
}

bool tilert_rpn_eval(const RpnTok *prog, size_t n, const int64_t *dims, int64_t sms, int64_t *out,
                     char *err, size_t errlen)
{
    int64_t st[STACK];
    size_t sp = 0;
    for (size_t i = 0; i < n; i++) {
        const RpnTok *t = &prog[i];
        if (t->op == RPN_NUM || t->op == RPN_DIM || t->op == RPN_SMS) {
            if (sp == STACK) {
                snprintf(err, errlen, "grid rule too deep");
                return false;
            }
            if (t->op == RPN_SMS && sms < 0) {
                snprintf(err, errlen, "num_sms() needs a device (the module was read without a driver)");
                return false;
            }
            st[sp++] = t->op == RPN_NUM ? t->v : t->op == RPN_SMS ? sms : dims[t->v];
            continue;
        }
        if (sp < 2) {
            snprintf(err, errlen, "malformed grid rule");
            return false;
        }
        if (!apply(t->op, st[sp - 2], st[sp - 1], &st[sp - 2], err, errlen))
            return false;
        sp--;
    }
    if (sp != 1) {
        snprintf(err, errlen, "malformed grid rule");
        return false;
    }
    *out = st[0];
    return true;
}

/* The value of num_sms() for k's grid: the SM count of the current
 * context's device (else device 0's, the device a launch without a current
 * context takes); -1 when the rule does not use it (k->uses_sms, set by
 * the parser) or the module has no driver. Two driver queries, only for
 * rules that use it. */
static tilert_status kernel_sms(const tilert_kernel *k, int64_t *sms)
{
    tilert_driver *drv = k->mod ? k->mod->drv : NULL;
    if (!k->uses_sms || !drv)
        return TILERT_OK;
    CUdevice dev;
    int n = 0;
    CUresult r = drv->CtxGetDevice(&dev);
    if (r && (r = drv->DeviceGet(&dev, 0)))
        return tilert_cuda_fail(drv, r, "cuDeviceGet", "num_sms() in the grid");
    if ((r = drv->DeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)))
        return tilert_cuda_fail(drv, r, "cuDeviceGetAttribute", "num_sms() in the grid");
    *sms = n;
    return TILERT_OK;
}

TILERT_API tilert_status tilert_kernel_grid(const tilert_kernel *k, const int64_t *dims,
                                            size_t ndims, unsigned grid[3])
{
    static const int64_t limit[3] = {TC_LIMIT_GRID_X, TC_LIMIT_GRID_YZ, TC_LIMIT_GRID_YZ};
    if (!k || !grid || (ndims && !dims))
        return tilert_fail(TILERT_ERR_USAGE, "tilert_kernel_grid: NULL argument");
    if (ndims != k->ndims)
        return tilert_fail(TILERT_ERR_USAGE, "kernel %s: grid needs %zu dim values, got %zu",
                           k->name, k->ndims, ndims);
    int64_t sms = -1;
    tilert_status st = kernel_sms(k, &sms);
    if (st)
        return st;
    for (int a = 0; a < 3; a++) {
        char err[128];
        int64_t v;
        if (!tilert_rpn_eval(k->rpn[a], k->nrpn[a], dims, sms, &v, err, sizeof err))
            return tilert_fail(TILERT_ERR_ARGS, "kernel %s: grid %c (%s): %s", k->name,
                               "xyz"[a], k->grid_text, err);
        if (v < 0 || v > limit[a])
            return tilert_fail(TILERT_ERR_ARGS, "kernel %s: grid %c is %lld, outside 0..%lld "
                               "(rule: %s)", k->name, "xyz"[a], (long long)v,
                               (long long)limit[a], k->grid_text);
        grid[a] = (unsigned)v;
    }
    return TILERT_OK;
}
