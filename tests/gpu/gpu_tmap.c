/* gpu_tmap.c - tensor maps on the GPU: Y = X for f32[M, N] through the
 * hand-written sm_90a kernels of tests/gpu/tmap_ref.ptx, which read X with
 * cp.async.bulk.tensor through the map the runtime encodes (swizzle none
 * and 128-byte swizzle), and through their fallback, which the runtime
 * launches instead for views a tensor map cannot describe (a base address
 * off 16 bytes, a row stride that is not a multiple of 16 bytes).
 *
 *   gpu_tmap tmap_ref.ptx tmap_ref.meta
 *
 * X is a view into a larger buffer of random nonzero values (row stride ld,
 * an element offset); Y is poisoned (0xFF bytes) with a guard zone after it.
 * Each launch must write Y = X exactly, every element and nothing past the
 * end, and tilert_kernel_last_variant must name the kernel that was meant to
 * run and the reason for a fallback. The same metadata without its
 * `fallback` records must refuse those views (TILERT_ERR_ARGS naming the
 * param and the rule) and leave Y untouched. Exits 77 without a CUDA driver
 * or device, or on a device that is not compute capability 9.0 (sm_90a).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"

#define TENSOR(t) {TILERT_ARG_TENSOR, {.tensor = &(t)}}

/* X: rows of ld elements, `off` elements into buf. */
typedef struct xview {
    gpu_buf buf;
    int64_t shape[2], strides[2];
    size_t ld, off;
    DLTensor t;
} xview;

static void xview_make(xview *v, int64_t m, int64_t n, size_t ld, size_t off)
{
    size_t span = m && n ? (size_t)(m - 1) * ld + (size_t)n : 0;
    v->buf = gpu_input(GPU_F32, off + span + 32, 100.0f);
    v->shape[0] = m;
    v->shape[1] = n;
    v->strides[0] = (int64_t)ld;
    v->strides[1] = 1;
    v->ld = ld;
    v->off = off;
    v->t = gpu_tensor(&v->buf, 2, v->shape);
    v->t.strides = v->strides;
    v->t.byte_offset = off * 4;
}

static const char *variant(const tilert_kernel *k, char *why, size_t len)
{
    tilert_kernel *ran = tilert_kernel_last_variant(k, why, len);
    return ran ? tilert_kernel_name(ran) : "(none)";
}

/* A poisoned Y of x's shape (yshape its storage), and k launched on (x, Y). */
static tilert_status launch(tilert_kernel *k, xview *x, gpu_buf *y, int64_t *yshape)
{
    yshape[0] = x->shape[0];
    yshape[1] = x->shape[1];
    *y = gpu_output(GPU_F32, (size_t)(yshape[0] * yshape[1]));
    DLTensor yt = gpu_tensor(y, 2, yshape);
    tilert_arg args[2] = {TENSOR(x->t), TENSOR(yt)};
    return tilert_launch(k, args, 2, NULL);
}

/* Launch k on x into a fresh poisoned Y; Y must be x, and the kernel that
 * ran want_kernel, for a reason containing want_reason ("" = no fallback). */
static void copy_and_check(tilert_kernel *k, xview *x, const char *want_kernel,
                           const char *want_reason)
{
    int64_t m = x->shape[0], n = x->shape[1], yshape[2];
    char label[256], why[256];
    snprintf(label, sizeof label, "%s M=%lld N=%lld ld=%zu offset=%zu", tilert_kernel_name(k),
             (long long)m, (long long)n, x->ld, x->off);
    gpu_context("%s", label);
    gpu_buf y;
    GPU_RT(launch(k, x, &y, yshape));
    GPU_CU(gpu_cu.CtxSynchronize());
    const char *ran = variant(k, why, sizeof why);
    bool variant_ok = strcmp(ran, want_kernel) == 0 &&
                      (want_reason[0] ? strstr(why, want_reason) != NULL : why[0] == '\0');
    if (!variant_ok)
        printf("  ran %s (reason '%s'); want %s (reason '%s')\n", ran, why, want_kernel, want_reason);
    double *got = gpu_calloc((size_t)(m * n), sizeof *got);
    bool written = gpu_fetch(&y, got, label);
    size_t bad = 0;
    for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < n; c++) {
            double want = gpu_get(GPU_F32, x->buf.host, x->off + (size_t)r * x->ld + (size_t)c);
            if (got[r * n + c] != want && bad++ < 5)
                printf("  %s: Y[%lld, %lld] = %g, want %g\n", label, (long long)r, (long long)c,
                       got[r * n + c], want);
        }
    gpu_result(variant_ok && written && bad == 0, "%s: ran %s%s%s", label, ran,
               why[0] ? ", because " : "", why);
    free(got);
    gpu_free(&y);
}

/* k must refuse x (no fallback): TILERT_ERR_ARGS containing want, Y untouched. */
static void refuse(tilert_kernel *k, xview *x, const char *want)
{
    gpu_context("%s refuses M=%lld N=%lld ld=%zu offset=%zu", tilert_kernel_name(k),
                (long long)x->shape[0], (long long)x->shape[1], x->ld, x->off);
    gpu_buf y;
    int64_t yshape[2];
    tilert_status st = launch(k, x, &y, yshape);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", tilert_last_error());
    GPU_CU(gpu_cu.CtxSynchronize());
    size_t bytes = (y.n + y.guard) * 4, touched = 0;
    GPU_CU(gpu_cu.DtoH(y.host, y.dev, bytes));
    for (size_t i = 0; i < bytes; i++)
        touched += ((unsigned char *)y.host)[i] != 0xFF;
    bool ok = st == TILERT_ERR_ARGS && strstr(msg, want) && touched == 0;
    if (!ok)
        printf("  status %d, %zu bytes of Y written, message: %s\n  want: %s\n", st, touched, msg, want);
    gpu_result(ok, "%s refuses ld=%zu offset=%zu: %s", tilert_kernel_name(k), x->ld, x->off, msg);
    gpu_free(&y);
}

/* One view, copied by k. */
static void case_copy(tilert_kernel *k, int64_t m, int64_t n, size_t ld, size_t off,
                      const char *want_kernel, const char *want_reason)
{
    xview x;
    xview_make(&x, m, n, ld, off);
    copy_and_check(k, &x, want_kernel, want_reason);
    gpu_free(&x.buf);
}

static void run_tma(tilert_kernel *k)
{
    const char *name = tilert_kernel_name(k);
    case_copy(k, 100, 200, 200, 0, name, "");       /* compact, partial tiles */
    case_copy(k, 16, 32, 32, 0, name, "");          /* one whole tile */
    case_copy(k, 1000, 1000, 1000, 0, name, "");
    case_copy(k, 33, 50, 52, 4, name, "");          /* padded rows (208 bytes), offset 16 bytes */
    case_copy(k, 1, 7, 7, 0, name, "");             /* one row: its stride is never used */
    case_copy(k, 100, 200, 203, 0, "copy_plain",    /* 812-byte rows */
              "param X dim 0: stride 203 elements (812 bytes) is not a multiple of 16 bytes");
    case_copy(k, 100, 200, 200, 1, "copy_plain",    /* a base 4 bytes off */
              "is not aligned to 16 bytes as the kernel assumes");
    case_copy(k, 37, 1, 1, 0, "copy_plain", "stride 1 elements (4 bytes)");
    case_copy(k, 0, 200, 200, 0, name, "");         /* empty: nothing runs */

    /* two tensors of one shape alive at once: each launch reads its own
     * (the cached map's address is replaced, not reused) */
    xview a, b;
    xview_make(&a, 64, 96, 96, 0);
    xview_make(&b, 64, 96, 96, 0);
    copy_and_check(k, &a, name, "");
    copy_and_check(k, &b, name, "");
    copy_and_check(k, &a, name, "");
    gpu_free(&a.buf);
    gpu_free(&b.buf);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    char *buf = gpu_calloc(1 << 20, 1);
    buf[fread(buf, 1, (1 << 20) - 1, f)] = '\0';
    fclose(f);
    return buf;
}

/* Remove the `fallback` records from metadata text, in place. */
static void drop_fallbacks(char *text)
{
    char *w = text;
    for (char *r = text; *r;) {
        char *eol = strchr(r, '\n');
        size_t n = eol ? (size_t)(eol - r + 1) : strlen(r);
        if (strncmp(r, "fallback ", 9) != 0) {
            memmove(w, r, n);
            w += n;
        }
        r += n;
    }
    *w = '\0';
}

static void run_without_fallback(tilert_driver *drv, const char *ptx_path, const char *meta_path)
{
    char *ptx = read_text(ptx_path), *meta = read_text(meta_path);
    drop_fallbacks(meta);
    tilert_module *m;
    tilert_kernel *k;
    GPU_RT(tilert_module_load(drv, ptx, meta, &m));
    GPU_RT(tilert_module_get_kernel(m, "copy_tma", &k));
    gpu_result(tilert_kernel_fallback(k) == NULL, "copy_tma without its fallback record has none");
    case_copy(k, 100, 200, 200, 0, "copy_tma", "");
    xview x;
    xview_make(&x, 100, 200, 203, 0);
    refuse(k, &x, "kernel copy_tma: param X dim 0: stride 203 elements (812 bytes) is not a "
           "multiple of 16 bytes, as a tensor map needs");
    gpu_free(&x.buf);
    xview_make(&x, 100, 200, 200, 1);
    refuse(k, &x, "kernel copy_tma: param X: data address");
    refuse(k, &x, "is not aligned to 16 bytes as the kernel assumes");
    gpu_free(&x.buf);
    tilert_module_free(m);
    free(ptx);
    free(meta);
}

int main(int argc, char **argv)
{
    tilert_driver *drv = gpu_open();     /* exits 77 without a driver or device */
    if (argc != 3) {
        fprintf(stderr, "usage: gpu_tmap tmap_ref.ptx tmap_ref.meta\n");
        return 1;
    }
    int major, minor;
    GPU_RT(tilert_device_capability(drv, 0, &major, &minor));
    if (major != 9 || minor != 0) {
        printf("skipped: tensor maps are tested with sm_90a code, device 0 is sm_%d%d\n", major, minor);
        tilert_driver_close(drv);
        return 77;
    }
    printf("seed %llu\n", (unsigned long long)gpu_seed());
    tilert_module *m;
    GPU_RT(tilert_module_load_files(drv, argv[1], argv[2], &m));   /* no current context yet: primary */
    gpu_cuda_init();                                                /* now it is current */
    tilert_kernel *tma, *sw, *plain;
    GPU_RT(tilert_module_get_kernel(m, "copy_tma", &tma));
    GPU_RT(tilert_module_get_kernel(m, "copy_tma_sw128", &sw));
    GPU_RT(tilert_module_get_kernel(m, "copy_plain", &plain));
    gpu_result(tilert_kernel_fallback(tma) == plain && tilert_kernel_fallback(sw) == plain &&
               tilert_kernel_num_tmaps(tma) == 1, "metadata: copy_tma falls back to copy_plain");
    gpu_result(tilert_kernel_last_variant(tma, NULL, 0) == NULL, "no variant before a launch");
    run_tma(tma);
    run_tma(sw);
    case_copy(plain, 100, 200, 203, 1, "copy_plain", "");
    run_without_fallback(drv, argv[1], argv[2]);
    GPU_RT(tilert_synchronize(drv));
    tilert_module_free(m);
    tilert_driver_close(drv);
    return gpu_summary();
}
