/* tune.c - autotuning (docs/runtime.md, "Autotuning"): time candidate
 * kernels of one computation on the real arguments with CUDA events and
 * say which is fastest; the shape class a launch belongs to; the device's
 * name; and the store of tuning decisions, one file per key in a folder
 * (docs/cache.md, "Tuning decisions").
 *
 * Timing: each candidate is launched `warmup` times (the first loads its
 * module into the context and sets its function up), the last of them timed
 * alone as an estimate; the estimates set how many launches a round gives
 * each candidate, so that all the rounds together take about budget_ms of
 * GPU time. Each round then times every candidate once, L launches back to
 * back between two events on the caller's stream, the candidates' order
 * rotated by one each round (so that no candidate always follows the same
 * one, or always runs first after the host waited), and waits for the
 * round's last event. A candidate's time is the median over the rounds of
 * its mean time a launch; the smallest median wins.
 */
#define _POSIX_C_SOURCE 200809L   /* mkstemp, clock_gettime */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "rt.h"

#define MAX_ROUNDS 64

TILERT_API void tilert_tune_options_init(tilert_tune_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->warmup = 2;
    o->rounds = 5;
    o->budget_ms = 300;
    o->max_launches = 200;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct Tune {
    tilert_driver *drv;
    CUevent ev[2 * TILERT_TUNE_MAX];
    size_t nev;
} Tune;

static tilert_status elapsed(const Tune *t, CUevent a, CUevent b, double *ms)
{
    float f = 0;
    CUresult r = t->drv->EventElapsedTime ? t->drv->EventElapsedTime(&f, a, b) : t->drv->EventElapsedTime1(&f, a, b);
    if (r)
        return tilert_cuda_fail(t->drv, r, "cuEventElapsedTime", "autotuning");
    *ms = f;
    return TILERT_OK;
}

static tilert_status record(const Tune *t, CUevent e, void *stream)
{
    CUresult r = t->drv->EventRecord(e, (CUstream)stream);
    return r ? tilert_cuda_fail(t->drv, r, "cuEventRecord", "autotuning") : TILERT_OK;
}

static tilert_status wait_event(const Tune *t, CUevent e)
{
    CUresult r = t->drv->EventSynchronize(e);
    return r ? tilert_cuda_fail(t->drv, r, "cuEventSynchronize", "autotuning (a candidate failed on the GPU?)")
             : TILERT_OK;
}

/* `count` launches of candidate c; a failure names the candidate. */
static tilert_status launch_n(tilert_kernel *k, size_t c, int count, const tilert_arg *args, size_t nargs,
                              void *stream)
{
    for (int i = 0; i < count; i++) {
        tilert_status st = tilert_launch(k, args, nargs, stream);
        if (st)
            return tilert_fail(st, "autotuning: candidate %zu (kernel %s): %s", c, tilert_kernel_name(k),
                               tilert_last_error());
    }
    return TILERT_OK;
}

/* Everything but the events: the candidates' checks, the timing. */
static tilert_status tune_run(Tune *t, tilert_kernel *const *ks, size_t n, const tilert_arg *args, size_t nargs,
                              void *stream, const tilert_tune_options *o, tilert_tune_result *out)
{
    tilert_status st;
    double est[TILERT_TUNE_MAX], sum = 0;
    /* the warm-up: the last launch of each candidate timed alone */
    for (size_t c = 0; c < n; c++) {
        if ((st = launch_n(ks[c], c, o->warmup - 1, args, nargs, stream)) || (st = record(t, t->ev[0], stream)) ||
            (st = launch_n(ks[c], c, 1, args, nargs, stream)) || (st = record(t, t->ev[1], stream)) ||
            (st = wait_event(t, t->ev[1])) || (st = elapsed(t, t->ev[0], t->ev[1], &est[c])))
            return st;
        sum += est[c];
    }
    double per_round = o->budget_ms / o->rounds;
    double l = sum > 0 ? per_round / sum : o->max_launches;
    int launches = l < 1 ? 1 : l > o->max_launches ? o->max_launches : (int)l;
    double times[TILERT_TUNE_MAX][MAX_ROUNDS];
    for (int r = 0; r < o->rounds; r++) {
        for (size_t i = 0; i < n; i++) {
            size_t c = (i + (size_t)r) % n;
            if ((st = record(t, t->ev[2 * c], stream)) || (st = launch_n(ks[c], c, launches, args, nargs, stream)) ||
                (st = record(t, t->ev[2 * c + 1], stream)))
                return st;
        }
        if ((st = wait_event(t, t->ev[2 * ((n - 1 + (size_t)r) % n) + 1])))
            return st;
        for (size_t c = 0; c < n; c++) {
            double ms;
            if ((st = elapsed(t, t->ev[2 * c], t->ev[2 * c + 1], &ms)))
                return st;
            times[c][r] = ms / launches;
        }
    }
    out->n = n;
    out->launches = launches;
    out->rounds = o->rounds;
    out->best = 0;
    for (size_t c = 0; c < n; c++) {
        qsort(times[c], (size_t)o->rounds, sizeof(double), cmp_double);
        int h = o->rounds / 2;
        out->ms[c] = o->rounds % 2 ? times[c][h] : (times[c][h - 1] + times[c][h]) / 2;
        out->min_ms[c] = times[c][0];
        if (out->ms[c] < out->ms[out->best])
            out->best = c;
    }
    return TILERT_OK;
}

TILERT_API tilert_status tilert_tune(tilert_kernel *const *kernels, size_t n, const tilert_arg *args, size_t nargs,
                                     void *stream, const tilert_tune_options *opts, tilert_tune_result *out)
{
    double t0 = now_ms();
    if (!kernels || !out || (nargs && !args))
        return tilert_fail(TILERT_ERR_USAGE, "tilert_tune: NULL kernels, arguments or result");
    memset(out, 0, sizeof *out);
    if (n < 1 || n > TILERT_TUNE_MAX)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_tune: %zu candidates (1 to %d)", n, TILERT_TUNE_MAX);
    tilert_tune_options o;
    tilert_tune_options_init(&o);
    if (opts) {
        size_t sz = opts->struct_size;
        if (sz == 0 || sz > sizeof o)
            sz = sizeof o;
        memcpy(&o, opts, sz);
        o.struct_size = sizeof o;
    }
    if (o.warmup < 1 || o.warmup > 1000 || o.rounds < 1 || o.rounds > MAX_ROUNDS || !(o.budget_ms >= 0) ||
        o.budget_ms > 1e7 || o.max_launches < 1 || o.max_launches > 1000000)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_tune: options out of range (warmup 1..1000: %d, rounds 1..%d: %d, "
                           "budget_ms 0..1e7: %g, max_launches 1..1000000: %d)", o.warmup, MAX_ROUNDS, o.rounds,
                           o.budget_ms, o.max_launches);
    tilert_launch_plan plan;
    int device = -1;
    for (size_t c = 0; c < n; c++) {
        if (!kernels[c])
            return tilert_fail(TILERT_ERR_USAGE, "tilert_tune: candidate %zu is NULL", c);
        if (!kernels[c]->mod->drv)
            return tilert_fail(TILERT_ERR_USAGE, "tilert_tune: candidate %zu (kernel %s) is metadata only "
                               "(tilert_module_from_meta) and cannot launch", c, kernels[c]->name);
        if (kernels[c]->mod->drv != kernels[0]->mod->drv)
            return tilert_fail(TILERT_ERR_USAGE, "tilert_tune: candidate %zu (kernel %s) was loaded through "
                               "another driver handle than candidate 0", c, kernels[c]->name);
        tilert_status st = tilert_check_args(kernels[c], args, nargs, NULL, 0, &plan);
        if (st)
            return tilert_fail(st, "autotuning: candidate %zu (kernel %s): %s", c, kernels[c]->name,
                               tilert_last_error());
        if (c == 0)
            device = plan.device;
    }
    Tune t = { .drv = kernels[0]->mod->drv };
    tilert_driver *drv = t.drv;
    if (!drv->EventCreate || !drv->EventRecord || !drv->EventSynchronize || !drv->EventDestroy ||
        (!drv->EventElapsedTime && !drv->EventElapsedTime1))
        return tilert_fail(TILERT_ERR_NO_DRIVER, "autotuning needs the driver's CUDA events (cuEventCreate, "
                           "cuEventRecord, cuEventSynchronize, cuEventElapsedTime, cuEventDestroy_v2); "
                           "libcuda.so.1 lacks one");
    CUcontext ctx;
    int pdev;
    tilert_status st = tilert_enter_ctx(drv, device, &ctx, &pdev);
    if (st)
        return st;
    for (size_t i = 0; i < 2 * n && !st; i++) {
        CUresult r = drv->EventCreate(&t.ev[i], 0);
        if (r)
            st = tilert_cuda_fail(drv, r, "cuEventCreate", "autotuning");
        else
            t.nev++;
    }
    if (!st)
        st = tune_run(&t, kernels, n, args, nargs, stream, &o, out);
    for (size_t i = 0; i < t.nev; i++)
        drv->EventDestroy(t.ev[i]);
    tilert_leave_ctx(drv, pdev);
    out->wall_ms = now_ms() - t0;
    if (!st)
        tilert_clear_error();
    return st;
}

/* ---- the shape class ---- */

static int64_t bucket(int64_t v)
{
    if (v <= 1)
        return v;
    int64_t p = 1;
    while (p < v && p < ((int64_t)1 << 62))
        p *= 2;
    return p;
}

TILERT_API tilert_status tilert_shape_class(const tilert_kernel *k, const tilert_arg *args, size_t nargs, char *buf,
                                            size_t len)
{
    if (!buf || !len)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_shape_class: NULL buffer");
    buf[0] = 0;
    tilert_launch_plan plan;
    tilert_status st = tilert_check_args(k, args, nargs, NULL, 0, &plan);
    if (st)
        return st;
    size_t used = 0;
    for (size_t d = 0; d < k->ndims; d++) {
        int w = snprintf(buf + used, len - used, "%s%s=%lld", d ? "," : "", k->dims[d],
                         (long long)bucket(plan.dims[d]));
        if (w < 0 || (size_t)w >= len - used) {
            buf[0] = 0;
            return tilert_fail(TILERT_ERR_USAGE, "tilert_shape_class: a buffer of %zu bytes is too small", len);
        }
        used += (size_t)w;
    }
    return TILERT_OK;
}

TILERT_API tilert_status tilert_device_name(tilert_driver *drv, int device, char *buf, size_t len)
{
    if (!drv || !buf || len < 2)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_device_name: NULL driver or buffer");
    buf[0] = 0;
    CUdevice dev;
    CUresult r = drv->DeviceGet(&dev, device);
    if (r)
        return tilert_cuda_fail(drv, r, "cuDeviceGet", "device ordinal");
    if ((r = drv->DeviceGetName(buf, (int)(len > 1024 ? 1024 : len) - 1, dev)))
        return tilert_cuda_fail(drv, r, "cuDeviceGetName", NULL);
    buf[len - 1] = 0;
    return TILERT_OK;
}

/* ---- the decision store ---- */

#define TUNE_MAGIC "tilec-tune 1\n"

/* DIR/<16 hex digits of the key's FNV-1a hash>.tune */
static char *decision_path(const char *dir, const char *key)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    size_t n = strlen(dir) + 32;
    char *path = malloc(n);
    if (path)
        snprintf(path, n, "%s/%016llx.tune", dir, (unsigned long long)h);
    return path;
}

static tilert_status check_text(const char *what, const char *s)
{
    if (!s)
        return tilert_fail(TILERT_ERR_USAGE, "tuning decisions: NULL %s", what);
    if (strchr(s, '\n') || strlen(s) > 65536)
        return tilert_fail(TILERT_ERR_USAGE, "tuning decisions: the %s must be one line of at most 65536 bytes", what);
    return TILERT_OK;
}

TILERT_API tilert_status tilert_tune_load(const char *dir, const char *key, char *value, size_t len)
{
    tilert_status st;
    if (!dir || !dir[0] || !value || !len)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_tune_load: NULL folder or value buffer");
    value[0] = 0;
    if ((st = check_text("key", key)))
        return st;
    char *path = decision_path(dir, key);
    if (!path)
        return tilert_fail(TILERT_ERR_NOMEM, "out of memory");
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f)
        return tilert_fail(TILERT_ERR_NOT_FOUND, "no tuning decision for this key in %s", dir);
    size_t cap = strlen(key) + 65536 + 64, n;   /* the longest entry a store writes */
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return tilert_fail(TILERT_ERR_NOMEM, "out of memory");
    }
    n = fread(buf, 1, cap, f);
    fclose(f);
    buf[n] = 0;
    /* TUNE_MAGIC, "key " KEY "\n", "value " VALUE "\n": anything else (torn,
     * foreign, another key with the same hash) is a miss */
    size_t m = sizeof TUNE_MAGIC - 1, kl = strlen(key);
    const char *p = buf + m, *v = p + 4 + kl + 1 + 6, *e = NULL;
    bool ok = n > m + 4 + kl + 1 + 6 && memcmp(buf, TUNE_MAGIC, m) == 0 && memcmp(p, "key ", 4) == 0 &&
              memcmp(p + 4, key, kl) == 0 && p[4 + kl] == '\n' && memcmp(p + 4 + kl + 1, "value ", 6) == 0 &&
              (e = strchr(v, '\n')) != NULL && e[1] == 0;
    if (ok && (size_t)(e - v) >= len) {
        free(buf);
        return tilert_fail(TILERT_ERR_USAGE, "tilert_tune_load: the decision takes %zu bytes, the buffer %zu",
                           (size_t)(e - v) + 1, len);
    }
    if (ok) {
        memcpy(value, v, (size_t)(e - v));
        value[e - v] = 0;
    }
    free(buf);
    if (!ok)
        return tilert_fail(TILERT_ERR_NOT_FOUND, "no tuning decision for this key in %s (a damaged or foreign "
                           "entry, replaced by the next store)", dir);
    tilert_clear_error();
    return TILERT_OK;
}

/* mkdir -p; true when the folder exists afterwards. */
static bool make_dirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path)
        return false;
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++)
        if (path[i] == '/' || path[i] == 0) {
            char c = path[i];
            path[i] = 0;
            if (mkdir(path, 0777) != 0 && errno != EEXIST)
                return false;
            path[i] = c;
        }
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

TILERT_API tilert_status tilert_tune_store(const char *dir, const char *key, const char *value)
{
    tilert_status st;
    if (!dir || !dir[0])
        return tilert_fail(TILERT_ERR_USAGE, "tilert_tune_store: NULL folder");
    if ((st = check_text("key", key)) || (st = check_text("value", value)))
        return st;
    if (!make_dirs(dir))
        return tilert_fail(TILERT_ERR_IO, "tuning decisions: cannot create the folder %s: %s", dir, strerror(errno));
    char *path = decision_path(dir, key);
    size_t tn = strlen(dir) + 16;
    char *tmp = malloc(tn);
    if (!path || !tmp) {
        free(path);
        free(tmp);
        return tilert_fail(TILERT_ERR_NOMEM, "out of memory");
    }
    /* the compile cache's temporary name: tilec_cache_clear removes a leftover */
    snprintf(tmp, tn, "%s/.tmp-XXXXXX", dir);
    int fd = mkstemp(tmp);
    st = TILERT_OK;
    if (fd < 0) {
        st = tilert_fail(TILERT_ERR_IO, "tuning decisions: cannot write in %s: %s", dir, strerror(errno));
    } else {
        FILE *f = fdopen(fd, "wb");
        bool ok = f && fprintf(f, TUNE_MAGIC "key %s\nvalue %s\n", key, value) > 0;
        ok = (f ? fclose(f) == 0 : (close(fd), false)) && ok;
        if (!ok || rename(tmp, path) != 0) {
            st = tilert_fail(TILERT_ERR_IO, "tuning decisions: cannot write %s: %s", path, strerror(errno));
            unlink(tmp);
        }
    }
    free(path);
    free(tmp);
    if (!st)
        tilert_clear_error();
    return st;
}
