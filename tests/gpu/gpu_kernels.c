/* gpu_kernels.c - end-to-end GPU test of the example kernels from a C host:
 * vector_add, softmax, layernorm, reduction (row_sum and partial_sum) and
 * transpose, compiled by tilec, launched through libtilert and compared with
 * a C reference in double, plus launches the runtime must refuse.
 *
 *   gpu_kernels                 compile every configuration with TILEC_EXE
 *                               into TILEC_WORK_DIR/kernels/ARCH, then test
 *   gpu_kernels DIR             (or $TILEC_PTX_DIR) test precompiled
 *                               DIR/ARCH/<kernel>_<config>.ptx + .meta, as
 *                               written by tests/gpu/make_ptx.sh (a flat DIR
 *                               is used for the device's own arch)
 *   gpu_kernels --list-configs  print "NAME TILE DEFINES..." per
 *                               configuration (make_ptx.sh reads it)
 *
 * ARCH: the device's tilec target (tilert_device_arch) and, on sm_86 and
 * newer parts, sm_86 too; $TILEC_ARCHS ("sm_90a,sm_86") overrides. Inputs are
 * fresh random nonzero values (seed printed; $TILEC_SEED repeats a run);
 * outputs are poisoned with 0xFF bytes and followed by a poisoned guard zone,
 * so every element must be written and nothing past the end. Tolerances
 * (relative Frobenius error): bf16 1e-2, f16 2e-3, f32 1e-5; vector_add and
 * transpose are exact. Exit 0 if every check passed, 77 without a CUDA driver
 * or device, 1 otherwise.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "gpu_util.h"

#if defined(TILEC_EXE) && defined(TILEC_EXAMPLES) && defined(TILEC_WORK_DIR)
#define HAVE_TILEC 1
#else
#define HAVE_TILEC 0
#endif

#define TENSOR(t) {TILERT_ARG_TENSOR, {.tensor = &(t)}}
#define COUNT(a) (sizeof (a) / sizeof (a)[0])

static const gpu_dtype float_types[] = {GPU_BF16, GPU_F16, GPU_F32};
static const int64_t row_counts[] = {1, 37};
static const int64_t col_counts[] = {1, 127, 1000, 4097};
static const double layernorm_eps = 1e-5;

/* ---- Configurations: one module (PTX + metadata) each ------------------------ */

typedef struct config {
    char name[64];      /* file name stem: <tile>_<config> */
    const char *tile;   /* examples/<tile>.tile */
    char defs[96];      /* tilec defines */
} config;

static config configs[64];
static size_t nconfigs;

static void add_config(const char *tile, const char *suffix, const char *defs)
{
    config *c = &configs[nconfigs++];
    snprintf(c->name, sizeof c->name, "%s_%s", tile, suffix);
    c->tile = tile;
    snprintf(c->defs, sizeof c->defs, "%s", defs);
}

static int next_pow2(int64_t n)
{
    int p = 1;
    while (p < n)
        p *= 2;
    return p;
}

/* Every configuration the tests below load. ORDER: the run_* functions. */
static void build_configs(void)
{
    static const char *const rowwise[] = {"softmax", "layernorm"};
    char suffix[32], defs[64];
    add_config("vector_add", "b1024", "-DBLOCK=1024");
    for (size_t k = 0; k < COUNT(rowwise); k++)
        for (size_t t = 0; t < COUNT(float_types); t++)
            for (size_t c = 0; c < COUNT(col_counts); c++) {
                const char *dt = gpu_dtype_name(float_types[t]);
                int block = next_pow2(col_counts[c]);
                snprintf(suffix, sizeof suffix, "%s_b%d", dt, block);
                snprintf(defs, sizeof defs, "-DT=%s -DBLOCK=%d", dt, block);
                add_config(rowwise[k], suffix, defs);
            }
    add_config("reduction", "bm64_bn128_b4096", "-DBM=64 -DBN=128 -DBLOCK=4096");
    add_config("reduction", "bm16_bn32_b1024", "-DBM=16 -DBN=32 -DBLOCK=1024");
    add_config("transpose", "bf16", "-DT=bf16");
    add_config("transpose", "f32", "-DT=f32");
}

static const config *find_config(const char *name)
{
    for (size_t i = 0; i < nconfigs; i++)
        if (strcmp(configs[i].name, name) == 0)
            return &configs[i];
    return NULL;
}

/* ---- Where the modules come from ---------------------------------------------- */

static const char *arch;        /* the arch under test */
static char ptx_dir[4096];      /* its folder of <config>.ptx/.meta */
static int compiling;           /* compile each config into ptx_dir before loading */

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

#if HAVE_TILEC
static void make_dir(const char *path)
{
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        fprintf(stderr, "mkdir %s: %s\n", path, strerror(errno));
}
#endif

static bool compile_config(const config *c)
{
#if HAVE_TILEC
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' '%s/%s.tile' -arch=%s %s -o '%s/%s.ptx'", TILEC_EXE,
             TILEC_EXAMPLES, c->tile, arch, c->defs, ptx_dir, c->name);
    if (system(cmd) == 0)
        return true;
    printf("tilec failed: %s\n", cmd);
    return false;
#else
    (void)c;
    return false;
#endif
}

/* Point ptx_dir at the modules for `a`; false if there are none. */
static bool select_arch(const char *a, const char *dir, const char *device_arch)
{
    arch = a;
    if (!dir) {
#if HAVE_TILEC
        snprintf(ptx_dir, sizeof ptx_dir, "%s/kernels", TILEC_WORK_DIR);
        make_dir(ptx_dir);
        snprintf(ptx_dir, sizeof ptx_dir, "%s/kernels/%s", TILEC_WORK_DIR, a);
        make_dir(ptx_dir);
        compiling = 1;
        printf("== %s: compiling with %s into %s\n", a, TILEC_EXE, ptx_dir);
        return true;
#else
        return false;   /* main refuses this case */
#endif
    }
    snprintf(ptx_dir, sizeof ptx_dir, "%s/%s", dir, a);
    if (!is_dir(ptx_dir)) {
        if (strcmp(a, device_arch) != 0) {
            printf("== %s: no folder %s, not tested\n", a, ptx_dir);
            return false;
        }
        snprintf(ptx_dir, sizeof ptx_dir, "%s", dir);   /* a flat folder */
    }
    printf("== %s: precompiled modules from %s\n", a, ptx_dir);
    return true;
}

/* Load configuration `name` (compiling it first if need be); NULL (a
 * counted failure) if that fails. */
static tilert_module *open_module(tilert_driver *drv, const char *name)
{
    const config *c = find_config(name);
    char ptx[8192], meta[8192];
    tilert_module *m = NULL;
    snprintf(ptx, sizeof ptx, "%s/%s.ptx", ptx_dir, name);
    snprintf(meta, sizeof meta, "%s/%s.meta", ptx_dir, name);
    bool ok = c && (!compiling || compile_config(c)) && gpu_load_module(drv, ptx, meta, &m);
    if (!ok)
        gpu_result(false, "[%s] load module %s", arch, name);
    return ok ? m : NULL;
}

static tilert_kernel *get_kernel(tilert_module *m, const char *name)
{
    tilert_kernel *k = NULL;
    if (tilert_module_get_kernel(m, name, &k) != TILERT_OK) {
        gpu_result(false, "[%s] kernel %s in module: %s", arch, name, tilert_last_error());
        return NULL;
    }
    return k;
}

/* ---- Launching and comparing ------------------------------------------------------ */

static double *doubles(size_t n)
{
    return gpu_calloc(n, sizeof(double));
}

/* The values of an input buffer, as the kernel sees them, in double. */
static double *values(const gpu_buf *b)
{
    double *v = doubles(b->n);
    for (size_t i = 0; i < b->n; i++)
        v[i] = gpu_get(b->dt, b->host, i);
    return v;
}

static double tolerance(gpu_dtype dt)
{
    return dt == GPU_BF16 ? 1e-2 : dt == GPU_F16 ? 2e-3 : 1e-5;
}

/* Launch, then synchronize so that a fault inside the kernel surfaces here. */
static bool launch(tilert_kernel *k, const tilert_arg *args, size_t nargs)
{
    tilert_status st = tilert_launch(k, args, nargs, NULL);
    if (st != TILERT_OK) {
        printf("  launch failed: %s: %s\n", tilert_status_string(st), tilert_last_error());
        return false;
    }
    GPU_CU(gpu_cu.CtxSynchronize());
    return true;
}

/* Fetch `out` (every element written, none past the end) and compare it
 * with ref; counts one check named `label`. */
static void finish(bool launched, gpu_buf *out, const double *ref, double tol, const char *label)
{
    double *got = doubles(out->n);
    if (!launched)
        gpu_result(false, "%s: not launched", label);
    else if (!gpu_fetch(out, got, label))
        gpu_result(false, "%s: unwritten or out-of-bounds elements", label);
    else {
        double err = gpu_rel_err(got, ref, out->n);
        gpu_result(err <= tol, "%s: rel err %.2e (tol %.0e)", label, err, tol);
    }
    free(got);
}

/* ---- vector_add: Z = X + Y ---------------------------------------------------------- */

static void test_vector_add(tilert_kernel *k, int64_t n)
{
    char label[160];
    snprintf(label, sizeof label, "[%s] vector_add f32 N=%lld", arch, (long long)n);
    gpu_context("%s", label);
    gpu_buf x = gpu_input(GPU_F32, (size_t)n, 1000), y = gpu_input(GPU_F32, (size_t)n, 1000);
    gpu_buf z = gpu_output(GPU_F32, (size_t)n);
    int64_t shape[1] = {n};
    DLTensor tx = gpu_tensor(&x, 1, shape), ty = gpu_tensor(&y, 1, shape);
    DLTensor tz = gpu_tensor(&z, 1, shape);
    tilert_arg args[] = {TENSOR(tx), TENSOR(ty), TENSOR(tz)};
    double *ref = doubles((size_t)n);
    const float *xf = x.host, *yf = y.host;
    for (int64_t i = 0; i < n; i++)
        ref[i] = (double)(xf[i] + yf[i]);       /* one f32 add: the result is exact */
    finish(launch(k, args, COUNT(args)), &z, ref, 0, label);
    free(ref);
    gpu_free(&x);
    gpu_free(&y);
    gpu_free(&z);
}

static void run_vector_add(tilert_driver *drv)
{
    static const int64_t sizes[] = {1, 127, 1000, 4097, 1 << 20};
    tilert_module *m = open_module(drv, "vector_add_b1024");
    tilert_kernel *k = m ? get_kernel(m, "vector_add") : NULL;
    for (size_t i = 0; k && i < COUNT(sizes); i++)
        test_vector_add(k, sizes[i]);
    tilert_module_free(m);
}

/* ---- softmax and layernorm: one block per row ------------------------------------ */

static void softmax_ref(const double *x, int64_t rows, int64_t cols, double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double *yr = y + r * cols, mx = -INFINITY, sum = 0;
        for (int64_t c = 0; c < cols; c++)
            mx = fmax(mx, xr[c]);
        for (int64_t c = 0; c < cols; c++)
            sum += yr[c] = exp(xr[c] - mx);
        for (int64_t c = 0; c < cols; c++)
            yr[c] /= sum;
    }
}

static void test_softmax(tilert_kernel *k, gpu_dtype dt, int block, int64_t rows, int64_t cols)
{
    char label[160];
    snprintf(label, sizeof label, "[%s] softmax %s %lldx%lld BLOCK=%d", arch,
             gpu_dtype_name(dt), (long long)rows, (long long)cols, block);
    gpu_context("%s", label);
    size_t n = (size_t)(rows * cols);
    gpu_buf x = gpu_input(dt, n, 4), y = gpu_output(dt, n);
    int64_t shape[2] = {rows, cols};
    DLTensor tx = gpu_tensor(&x, 2, shape), ty = gpu_tensor(&y, 2, shape);
    tilert_arg args[] = {TENSOR(tx), TENSOR(ty)};
    double *xv = values(&x), *ref = doubles(n);
    softmax_ref(xv, rows, cols, ref);
    finish(launch(k, args, COUNT(args)), &y, ref, tolerance(dt), label);
    free(xv);
    free(ref);
    gpu_free(&x);
    gpu_free(&y);
}

/* y = (x - mean) / sqrt(var + eps) * w + b per row; var is the population variance. */
static void layernorm_ref(const double *x, const double *w, const double *b, double eps,
                          int64_t rows, int64_t cols, double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; c++)
            mean += xr[c];
        mean /= (double)cols;
        for (int64_t c = 0; c < cols; c++)
            var += (xr[c] - mean) * (xr[c] - mean);
        var /= (double)cols;
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = (xr[c] - mean) / sqrt(var + eps) * w[c] + b[c];
    }
}

static void test_layernorm(tilert_kernel *k, gpu_dtype dt, int block, int64_t rows, int64_t cols)
{
    char label[160];
    snprintf(label, sizeof label, "[%s] layernorm %s %lldx%lld BLOCK=%d", arch,
             gpu_dtype_name(dt), (long long)rows, (long long)cols, block);
    gpu_context("%s", label);
    size_t n = (size_t)(rows * cols);
    gpu_buf x = gpu_input(dt, n, 4), w = gpu_input(dt, (size_t)cols, 1);
    gpu_buf b = gpu_input(dt, (size_t)cols, 1), y = gpu_output(dt, n);
    int64_t shape[2] = {rows, cols};
    DLTensor tx = gpu_tensor(&x, 2, shape), tw = gpu_tensor(&w, 1, &shape[1]);
    DLTensor tb = gpu_tensor(&b, 1, &shape[1]), ty = gpu_tensor(&y, 2, shape);
    tilert_arg args[] = {TENSOR(tx), TENSOR(tw), TENSOR(tb), TENSOR(ty),
                         {TILERT_ARG_FLOAT, {.f = layernorm_eps}}};
    double *xv = values(&x), *wv = values(&w), *bv = values(&b), *ref = doubles(n);
    layernorm_ref(xv, wv, bv, (double)(float)layernorm_eps, rows, cols, ref);
    finish(launch(k, args, COUNT(args)), &y, ref, tolerance(dt), label);
    free(xv);
    free(wv);
    free(bv);
    free(ref);
    gpu_free(&x);
    gpu_free(&w);
    gpu_free(&b);
    gpu_free(&y);
}

typedef void rowwise_test(tilert_kernel *, gpu_dtype, int, int64_t, int64_t);

/* Every dtype x column count (BLOCK = the next power of 2) x row count. */
static void run_rowwise(tilert_driver *drv, const char *kernel, rowwise_test *test)
{
    for (size_t t = 0; t < COUNT(float_types); t++)
        for (size_t c = 0; c < COUNT(col_counts); c++) {
            gpu_dtype dt = float_types[t];
            int block = next_pow2(col_counts[c]);
            char name[64];
            snprintf(name, sizeof name, "%s_%s_b%d", kernel, gpu_dtype_name(dt), block);
            tilert_module *m = open_module(drv, name);
            tilert_kernel *k = m ? get_kernel(m, kernel) : NULL;
            for (size_t r = 0; k && r < COUNT(row_counts); r++)
                test(k, dt, block, row_counts[r], col_counts[c]);
            tilert_module_free(m);
        }
}

/* ---- reduction: row_sum and partial_sum ----------------------------------------- */

static void test_row_sum(tilert_kernel *k, const char *cfg, int64_t rows, int64_t cols)
{
    char label[160];
    snprintf(label, sizeof label, "[%s] row_sum f32 %lldx%lld (%s)", arch, (long long)rows,
             (long long)cols, cfg);
    gpu_context("%s", label);
    gpu_buf x = gpu_input(GPU_F32, (size_t)(rows * cols), 1), s = gpu_output(GPU_F32, (size_t)rows);
    int64_t shape[2] = {rows, cols};
    DLTensor tx = gpu_tensor(&x, 2, shape), ts = gpu_tensor(&s, 1, shape);
    tilert_arg args[] = {TENSOR(tx), TENSOR(ts)};
    double *xv = values(&x), *ref = doubles((size_t)rows);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            ref[r] += xv[r * cols + c];
    finish(launch(k, args, COUNT(args)), &s, ref, tolerance(GPU_F32), label);
    free(xv);
    free(ref);
    gpu_free(&x);
    gpu_free(&s);
}

/* P[b] = sum of X[b*BLOCK .. (b+1)*BLOCK), NB = cdiv(N, BLOCK) partials. */
static void test_partial_sum(tilert_kernel *k, const char *cfg, int block, int64_t n)
{
    char label[160];
    int64_t nb = (n + block - 1) / block;
    snprintf(label, sizeof label, "[%s] partial_sum f32 N=%lld NB=%lld (%s)", arch,
             (long long)n, (long long)nb, cfg);
    gpu_context("%s", label);
    gpu_buf x = gpu_input(GPU_F32, (size_t)n, 1), p = gpu_output(GPU_F32, (size_t)nb);
    int64_t nshape[1] = {n}, pshape[1] = {nb};
    DLTensor tx = gpu_tensor(&x, 1, nshape), tp = gpu_tensor(&p, 1, pshape);
    tilert_arg args[] = {TENSOR(tx), TENSOR(tp)};
    double *xv = values(&x), *ref = doubles((size_t)nb);
    for (int64_t i = 0; i < n; i++)
        ref[i / block] += xv[i];
    finish(launch(k, args, COUNT(args)), &p, ref, tolerance(GPU_F32), label);
    free(xv);
    free(ref);
    gpu_free(&x);
    gpu_free(&p);
}

static void run_reduction(tilert_driver *drv, const char *cfg, int block)
{
    static const int64_t rows[] = {1, 37, 130}, sizes[] = {1, 127, 1000, 4097, 1 << 20};
    char name[64];
    snprintf(name, sizeof name, "reduction_%s", cfg);
    tilert_module *m = open_module(drv, name);
    tilert_kernel *rs = m ? get_kernel(m, "row_sum") : NULL;
    tilert_kernel *ps = m ? get_kernel(m, "partial_sum") : NULL;
    for (size_t r = 0; rs && r < COUNT(rows); r++)
        for (size_t c = 0; c < COUNT(col_counts); c++)
            test_row_sum(rs, cfg, rows[r], col_counts[c]);
    for (size_t i = 0; ps && i < COUNT(sizes); i++)
        test_partial_sum(ps, cfg, block, sizes[i]);
    tilert_module_free(m);
}

/* ---- transpose: Y[N, M] = X[M, N]^T ---------------------------------------------- */

static void test_transpose(tilert_kernel *k, gpu_dtype dt, int64_t rows, int64_t cols)
{
    char label[160];
    snprintf(label, sizeof label, "[%s] transpose %s %lldx%lld", arch, gpu_dtype_name(dt),
             (long long)rows, (long long)cols);
    gpu_context("%s", label);
    size_t n = (size_t)(rows * cols);
    gpu_buf x = gpu_input(dt, n, 100), y = gpu_output(dt, n);
    int64_t xshape[2] = {rows, cols}, yshape[2] = {cols, rows};
    DLTensor tx = gpu_tensor(&x, 2, xshape), ty = gpu_tensor(&y, 2, yshape);
    tilert_arg args[] = {TENSOR(tx), TENSOR(ty)};
    double *xv = values(&x), *ref = doubles(n);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            ref[c * rows + r] = xv[r * cols + c];
    finish(launch(k, args, COUNT(args)), &y, ref, 0, label);   /* a copy: exact */
    free(xv);
    free(ref);
    gpu_free(&x);
    gpu_free(&y);
}

static void run_transpose(tilert_driver *drv)
{
    static const int64_t shapes[][2] = {{1, 1}, {127, 1000}, {4097, 33}};
    static const gpu_dtype types[] = {GPU_BF16, GPU_F32};
    for (size_t t = 0; t < COUNT(types); t++) {
        char name[64];
        snprintf(name, sizeof name, "transpose_%s", gpu_dtype_name(types[t]));
        tilert_module *m = open_module(drv, name);
        tilert_kernel *k = m ? get_kernel(m, "transpose") : NULL;
        for (size_t s = 0; k && s < COUNT(shapes); s++)
            test_transpose(k, types[t], shapes[s][0], shapes[s][1]);
        tilert_module_free(m);
    }
}

/* ---- Launches the runtime must refuse ------------------------------------------------ */

/* tilert_launch must fail with TILERT_ERR_ARGS and a message holding `want`
 * (the param it names) and `want2` (what is wrong). */
static void expect_refused(tilert_kernel *k, const tilert_arg *args, size_t nargs,
                           const char *what, const char *want, const char *want2)
{
    char label[160], msg[1024];
    snprintf(label, sizeof label, "[%s] %s: %s", arch, tilert_kernel_name(k), what);
    gpu_context("%s", label);
    tilert_status st = tilert_launch(k, args, nargs, NULL);
    snprintf(msg, sizeof msg, "%s", st == TILERT_OK ? "(launched)" : tilert_last_error());
    if (st == TILERT_OK)
        GPU_CU(gpu_cu.CtxSynchronize());
    bool ok = st == TILERT_ERR_ARGS && strstr(msg, want) && strstr(msg, want2);
    printf("  -> %s: %s\n", tilert_status_string(st), msg);
    if (!ok)
        printf("  wanted TILERT_ERR_ARGS with '%s' and '%s'\n", want, want2);
    gpu_result(ok, "%s refused", label);
}

/* softmax bf16: wrong dtype, shape disagreement, misaligned data, argument count. */
static void refuse_softmax(tilert_kernel *k)
{
    int64_t shape[2] = {2, 127}, wide[2] = {2, 128};
    gpu_buf x = gpu_input(GPU_BF16, 2 * 128, 1), y = gpu_output(GPU_BF16, 2 * 128);
    gpu_buf h = gpu_input(GPU_F16, 2 * 127, 1);
    DLTensor tx = gpu_tensor(&x, 2, shape), ty = gpu_tensor(&y, 2, shape);
    DLTensor th = gpu_tensor(&h, 2, shape), tyw = gpu_tensor(&y, 2, wide);
    DLTensor txm = tx;
    txm.data = (char *)tx.data + 2;      /* bf16-aligned, not 16-byte aligned */
    tilert_arg dtype[] = {TENSOR(th), TENSOR(ty)}, shapes[] = {TENSOR(tx), TENSOR(tyw)};
    tilert_arg misaligned[] = {TENSOR(txm), TENSOR(ty)}, one[] = {TENSOR(tx)};
    expect_refused(k, dtype, 2, "f16 tensor for bf16 X", "param X", "dtype");
    expect_refused(k, shapes, 2, "Y is 2x128, X 2x127", "param Y", "127");
    expect_refused(k, misaligned, 2, "X data + 2 bytes", "param X", "aligned");
    expect_refused(k, one, 1, "1 argument for 2", "takes 2 arguments", "got 1");
    gpu_free(&x);
    gpu_free(&y);
    gpu_free(&h);
}

/* layernorm f32: missing scalar, W shape, a tensor for the scalar eps. */
static void refuse_layernorm(tilert_kernel *k)
{
    int64_t shape[2] = {3, 100}, wshape[1] = {99};
    gpu_buf x = gpu_input(GPU_F32, 300, 1), w = gpu_input(GPU_F32, 100, 1);
    gpu_buf y = gpu_output(GPU_F32, 300);
    DLTensor tx = gpu_tensor(&x, 2, shape), tw = gpu_tensor(&w, 1, &shape[1]);
    DLTensor ty = gpu_tensor(&y, 2, shape), tws = gpu_tensor(&w, 1, wshape);
    tilert_arg eps = {TILERT_ARG_FLOAT, {.f = layernorm_eps}};
    tilert_arg few[] = {TENSOR(tx), TENSOR(tw), TENSOR(tw), TENSOR(ty)};
    tilert_arg wbad[] = {TENSOR(tx), TENSOR(tws), TENSOR(tw), TENSOR(ty), eps};
    tilert_arg epst[] = {TENSOR(tx), TENSOR(tw), TENSOR(tw), TENSOR(ty), TENSOR(tw)};
    expect_refused(k, few, 4, "4 arguments for 5 (no eps)", "eps", "got 4");
    expect_refused(k, wbad, 5, "W has 99 elements, X 100 columns", "param W", "99");
    expect_refused(k, epst, 5, "a tensor for the scalar eps", "param eps", "scalar");
    gpu_free(&x);
    gpu_free(&w);
    gpu_free(&y);
}

/* transpose f32: Y given as M x N; vector_add: misaligned Z; a host pointer. */
static void refuse_transpose(tilert_kernel *k)
{
    int64_t shape[2] = {5, 7};
    gpu_buf x = gpu_input(GPU_F32, 35, 1), y = gpu_output(GPU_F32, 35);
    DLTensor tx = gpu_tensor(&x, 2, shape), ty = gpu_tensor(&y, 2, shape);
    tilert_arg args[] = {TENSOR(tx), TENSOR(ty)};
    expect_refused(k, args, 2, "Y 5x7 for X 5x7 (wants 7x5)", "param Y", "dim");
    gpu_free(&x);
    gpu_free(&y);
}

static void refuse_vector_add(tilert_kernel *k)
{
    static _Alignas(16) float host[64];   /* aligned: the check must be the memory's */
    int64_t n = 64;
    gpu_buf x = gpu_input(GPU_F32, 64, 1), z = gpu_output(GPU_F32, 64);
    DLTensor tx = gpu_tensor(&x, 1, &n), tz = gpu_tensor(&z, 1, &n), th = tx, tzm = tz;
    th.data = host;
    tzm.data = (char *)tz.data + 2;
    tilert_arg misaligned[] = {TENSOR(tx), TENSOR(tx), TENSOR(tzm)};
    tilert_arg hosted[] = {TENSOR(tx), TENSOR(th), TENSOR(tz)};
    expect_refused(k, misaligned, 3, "Z data + 2 bytes", "param Z", "aligned");
    expect_refused(k, hosted, 3, "Y in host memory", "param Y", "not CUDA memory");
    gpu_free(&x);
    gpu_free(&z);
}

typedef void refuse_test(tilert_kernel *);

static void refuse_with(tilert_driver *drv, const char *module, const char *kernel,
                        refuse_test *test)
{
    tilert_module *m = open_module(drv, module);
    tilert_kernel *k = m ? get_kernel(m, kernel) : NULL;
    if (k)
        test(k);
    tilert_module_free(m);
}

static void run_refusals(tilert_driver *drv)
{
    refuse_with(drv, "softmax_bf16_b128", "softmax", refuse_softmax);
    refuse_with(drv, "layernorm_f32_b128", "layernorm", refuse_layernorm);
    refuse_with(drv, "transpose_f32", "transpose", refuse_transpose);
    refuse_with(drv, "vector_add_b1024", "vector_add", refuse_vector_add);
}

/* ---- Driver ---------------------------------------------------------------------- */

static void run_all(tilert_driver *drv)
{
    run_refusals(drv);
    run_vector_add(drv);
    run_rowwise(drv, "softmax", test_softmax);
    run_rowwise(drv, "layernorm", test_layernorm);
    run_reduction(drv, "bm64_bn128_b4096", 4096);
    run_reduction(drv, "bm16_bn32_b1024", 1024);
    run_transpose(drv);
    gpu_context("[%s] done", arch);
    GPU_RT(tilert_synchronize(drv));
}

/* The archs to test: $TILEC_ARCHS, else the device's and sm_86 (which
 * every sm_86+ part runs). Writes up to `max` names into `out` (pointing
 * into `buf`); returns how many. */
static int pick_archs(const char *device_arch, int cc, char *buf, size_t len,
                      const char **out, int max)
{
    const char *env = getenv("TILEC_ARCHS");
    int n = 0;
    if (env && *env) {
        snprintf(buf, len, "%s", env);
        for (char *s = strtok(buf, ", "); s && n < max; s = strtok(NULL, ", "))
            out[n++] = s;
        return n;
    }
    out[n++] = device_arch;
    if (cc >= 86 && strcmp(device_arch, "sm_86") != 0)
        out[n++] = "sm_86";
    return n;
}

static int usage(void)
{
    fprintf(stderr, "usage: gpu_kernels [PTX_DIR | --list-configs]\n"
                    "  PTX_DIR (or $TILEC_PTX_DIR): a folder made by tests/gpu/make_ptx.sh\n");
#if HAVE_TILEC
    fprintf(stderr, "  without one, the kernels are compiled with %s\n", TILEC_EXE);
#endif
    return 1;
}

int main(int argc, char **argv)
{
    build_configs();
    if (argc == 2 && strcmp(argv[1], "--list-configs") == 0) {
        for (size_t i = 0; i < nconfigs; i++)
            printf("%s %s %s\n", configs[i].name, configs[i].tile, configs[i].defs);
        return 0;
    }
    if (argc > 2 || (argc == 2 && argv[1][0] == '-'))
        return usage();
    const char *dir = argc == 2 ? argv[1] : getenv("TILEC_PTX_DIR");
    if (dir && !*dir)
        dir = NULL;
    tilert_driver *drv = gpu_open();        /* exits 77 without a driver or device */
    gpu_cuda_init();
    if (dir && !is_dir(dir)) {
        fprintf(stderr, "no folder %s (make it with tests/gpu/make_ptx.sh)\n", dir);
        return 1;
    }
    if (!dir && !HAVE_TILEC) {
        fprintf(stderr, "built without tilec: give a PTX folder made by tests/gpu/make_ptx.sh\n");
        return usage();
    }
    char device_arch[16], archbuf[256];
    int major, minor;
    GPU_RT(tilert_device_arch(drv, 0, device_arch, sizeof device_arch));
    GPU_RT(tilert_device_capability(drv, 0, &major, &minor));
    uint64_t seed = gpu_seed();
    printf("device 0: compute capability %d.%d, target %s; seed %llu (TILEC_SEED=%llu repeats it)\n",
           major, minor, device_arch, (unsigned long long)seed, (unsigned long long)seed);
    const char *archs[8];
    int narchs = pick_archs(device_arch, major * 10 + minor, archbuf, sizeof archbuf, archs, 8);
    for (int i = 0; i < narchs; i++)
        if (select_arch(archs[i], dir, device_arch))
            run_all(drv);
    tilert_driver_close(drv);
    return gpu_summary();
}
