/* test_examples.c - end to end on the example programs (dropout against
 * ir/philox.h's numbers, exactly; rmsnorm, cross_entropy with ignored
 * targets, layernorm_bwd with its atomic sums added into DW and DB,
 * decode_attention through a shuffled block table): each
 * example program
 * is compiled (fe_compile), run through the pass pipeline, verified, then
 * interpreted on small random inputs and compared with a plain-C reference
 * computed in double. Tolerances follow the output dtype. */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "passes/passes.h"
#include "ref.h"
#include "ir/philox.h"

#ifndef TILEC_SOURCE_DIR
#define TILEC_SOURCE_DIR "."
#endif

/* ---- compiling an example ---- */

typedef struct Prog {
    Arena *a;
    Diag d;
    char *src;
    Module *m;
    Func *f;
} Prog;

/* Does the kernel source declare a compile-time param NAME? (decides which
 * defines to pass: an unknown define is an error) */
static bool has_const(const char *src, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(src, name); p; p = strstr(p + 1, name)) {
        const char *q = p + n;
        while (*q == ' ')
            q++;
        bool start = p == src || p[-1] == '<' || p[-1] == ',' || p[-1] == ' ' || p[-1] == '\n' || p[-1] == '(';
        if (start && *q == ':') {
            const char *k = q + 1;
            while (*k == ' ')
                k++;
            if (!strncmp(k, "int", 3) || !strncmp(k, "bool", 4) || !strncmp(k, "float", 5) || !strncmp(k, "dtype", 5))
                return true;
        }
    }
    return false;
}

static bool prog_load(Prog *p, const char *file, const char *kernel, const FeDefine *defs, int ndefs)
{
    memset(p, 0, sizeof *p);
    p->a = arena_new();
    diag_init(&p->d, p->a);
    char *path = arena_printf(p->a, "%s/examples/%s", TILEC_SOURCE_DIR, file);
    size_t len;
    p->src = tc_read_file(path, &len);
    if (!p->src) {
        fprintf(stderr, "cannot read %s\n", path);
        return false;
    }
    FeDefine used[16];
    int nused = 0;
    for (int i = 0; i < ndefs && nused < 16; i++)
        if (has_const(p->src, defs[i].name))
            used[nused++] = defs[i];
    p->m = fe_compile(p->a, path, p->src, len, used, nused, &p->d);
    if (!p->m || p->d.nerrors) {
        kit_print_diag(&p->d);
        return false;
    }
    PassCtx ctx = kit_pass_ctx(&p->d, "sm_90a");
    if (passes_run(p->m, &ctx) || ir_verify(p->m, "the pass pipeline", &p->d)) {
        kit_print_diag(&p->d);
        return false;
    }
    for (int i = 0; i < p->m->nfuncs; i++)
        if (!strcmp(p->m->funcs[i]->name, kernel))
            p->f = p->m->funcs[i];
    if (!p->f)
        fprintf(stderr, "%s: no kernel '%s'\n", file, kernel);
    return p->f != NULL;
}

static void prog_free(Prog *p)
{
    free(p->src);
    arena_free(p->a);
}

static DType param_dtype(const Prog *p, const char *name)
{
    for (int i = 0; i < p->f->nparams; i++) {
        const Value *v = ir_val(p->f, p->f->params[i]);
        if (v->name && !strcmp(v->name, name))
            return (DType)v->type.dtype;
    }
    return DT_NONE;
}

/* Arguments in the kernel's param order, looked up by name. */
typedef struct Binding {
    const char *name;
    InterpArg arg;
} Binding;

static bool prog_run(Prog *p, const Binding *b, int nb)
{
    InterpArg args[16];
    if (p->f->nparams > 16)
        return false;
    for (int i = 0; i < p->f->nparams; i++) {
        const char *pn = ir_val(p->f, p->f->params[i])->name;
        int j = 0;
        while (j < nb && !(pn && !strcmp(b[j].name, pn)))
            j++;
        if (j == nb) {
            fprintf(stderr, "%s: param %d '%s' has no test binding\n", p->f->name, i, pn ? pn : "?");
            return false;
        }
        args[i] = b[j].arg;
    }
    if (interp_run(p->f, args, p->f->nparams, &p->d)) {
        kit_print_diag(&p->d);
        return false;
    }
    return true;
}

static double tol_for(DType dt)
{
    return dt == DT_BF16 ? 1e-2 : dt == DT_F16 ? 2e-3 : 1e-5;
}

/* ---- vector add ---- */

static void run_vector_add(int64_t n)
{
    Prog p;
    FeDefine defs[] = { { "BLOCK", "256" } };
    ck_assert(prog_load(&p, "vector_add.tile", "vector_add", defs, 1));
    DType dt = param_dtype(&p, "X");
    uint64_t rng = 0x9e3779b97f4a7c15ull + (uint64_t)n;
    Ten x = ten_new(dt, 1, &n), y = ten_new(dt, 1, &n), z = ten_new(dt, 1, &n);
    ten_random(&x, &rng, 0.1, 4.0);
    ten_random(&y, &rng, 0.1, 4.0);
    ten_poison(&z);
    Binding b[] = { { "X", ten_arg(&x) }, { "Y", ten_arg(&y) }, { "Z", ten_arg(&z) } };
    ck_assert(prog_run(&p, b, 3));
    double *want = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        want[i] = tc_round_to(dt, ten_get(&x, i) + ten_get(&y, i));
    char what[64];
    snprintf(what, sizeof what, "vector_add N=%lld", (long long)n);
    ck_assert(ref_check(what, &z, want, 1e-7) <= 1e-7);
    free(want);
    ten_free(&x), ten_free(&y), ten_free(&z);
    prog_free(&p);
}

START_TEST(vector_add_sizes)
{
    static const int64_t ns[] = { 1, 127, 1000 };
    run_vector_add(ns[_i]);
}
END_TEST

/* ---- row softmax ---- */

static const char *const dtype_names[] = { "f32", "bf16", "f16" };

static int64_t pow2_at_least(int64_t n, int64_t lo)
{
    int64_t b = lo;
    while (b < n)
        b *= 2;
    return b;
}

/* p <- examples/NAME.tile's kernel NAME for rows of `cols` elements of
 * dtype tname: BLOCK the power of two at or above cols (at least 16). */
static void load_row_kernel(Prog *p, const char *name, int64_t cols, const char *tname)
{
    char blk[32], file[64];
    snprintf(blk, sizeof blk, "%lld", (long long)pow2_at_least(cols, 16));
    snprintf(file, sizeof file, "%s.tile", name);
    FeDefine defs[] = { { "BLOCK", blk }, { "T", tname } };
    ck_assert(prog_load(p, file, name, defs, 2));
}

static void run_softmax(int64_t rows, int64_t cols, const char *tname)
{
    Prog p;
    load_row_kernel(&p, "softmax", cols, tname);
    DType dt = param_dtype(&p, "X");
    int64_t shape[2] = { rows, cols };
    uint64_t rng = 1234567 + (uint64_t)(rows * 1000 + cols);
    Ten x = ten_new(dt, 2, shape), y = ten_new(param_dtype(&p, "Y"), 2, shape);
    ten_random(&x, &rng, 0.05, 6.0);
    ten_poison(&y);
    Binding b[] = { { "X", ten_arg(&x) }, { "Y", ten_arg(&y) } };
    ck_assert(prog_run(&p, b, 2));
    double *want = malloc(sizeof(double) * (size_t)(rows * cols));
    for (int64_t r = 0; r < rows; r++) {
        double mx = -INFINITY, s = 0;
        for (int64_t c = 0; c < cols; c++)
            mx = fmax(mx, ten_get(&x, r * cols + c));
        for (int64_t c = 0; c < cols; c++)
            s += exp(ten_get(&x, r * cols + c) - mx);
        for (int64_t c = 0; c < cols; c++)
            want[r * cols + c] = exp(ten_get(&x, r * cols + c) - mx) / s;
    }
    char what[96];
    snprintf(what, sizeof what, "softmax %lldx%lld %s", (long long)rows, (long long)cols, tname);
    ck_assert(ref_check(what, &y, want, tol_for(y.dt)) <= tol_for(y.dt));
    free(want);
    ten_free(&x), ten_free(&y);
    prog_free(&p);
}

START_TEST(softmax_shapes)
{
    static const int64_t cols[] = { 1, 127, 1000 };
    for (int t = 0; t < 3; t++)
        run_softmax(3, cols[_i], dtype_names[t]);
}
END_TEST

/* ---- layernorm: Y = (X - mean) / sqrt(var + eps) * W + B, per row ---- */

static void run_layernorm(int64_t rows, int64_t cols, const char *tname)
{
    Prog p;
    load_row_kernel(&p, "layernorm", cols, tname);
    DType dt = param_dtype(&p, "X");
    int64_t shape[2] = { rows, cols };
    uint64_t rng = 777 + (uint64_t)cols;
    Ten x = ten_new(dt, 2, shape), y = ten_new(param_dtype(&p, "Y"), 2, shape);
    Ten w = ten_new(param_dtype(&p, "W"), 1, &cols), bb = ten_new(param_dtype(&p, "B"), 1, &cols);
    ten_random(&x, &rng, 0.1, 3.0);
    ten_random(&w, &rng, 0.5, 1.5);
    ten_random(&bb, &rng, 0.1, 1.0);
    ten_poison(&y);
    double eps = 1e-5;
    Binding b[] = { { "X", ten_arg(&x) }, { "W", ten_arg(&w) }, { "B", ten_arg(&bb) },
                    { "Y", ten_arg(&y) }, { "eps", scalar_arg(eps, 0) } };
    ck_assert(prog_run(&p, b, 5));
    double *want = malloc(sizeof(double) * (size_t)(rows * cols));
    for (int64_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; c++)
            mean += ten_get(&x, r * cols + c) / (double)cols;
        for (int64_t c = 0; c < cols; c++) {
            double dv = ten_get(&x, r * cols + c) - mean;
            var += dv * dv / (double)cols;
        }
        for (int64_t c = 0; c < cols; c++)
            want[r * cols + c] = (ten_get(&x, r * cols + c) - mean) / sqrt(var + eps) * ten_get(&w, c) + ten_get(&bb, c);
    }
    char what[96];
    snprintf(what, sizeof what, "layernorm %lldx%lld %s", (long long)rows, (long long)cols, tname);
    ck_assert(ref_check(what, &y, want, tol_for(y.dt)) <= tol_for(y.dt));
    free(want);
    ten_free(&x), ten_free(&y), ten_free(&w), ten_free(&bb);
    prog_free(&p);
}

START_TEST(layernorm_shapes)
{
    static const int64_t cols[] = { 1, 127, 1000 };
    for (int t = 0; t < 3; t++)
        run_layernorm(3, cols[_i], dtype_names[t]);
}
END_TEST

/* ---- rmsnorm: Y = X / sqrt(mean(X^2) + eps) * W, per row ---- */

static void run_rmsnorm(int64_t rows, int64_t cols, const char *tname)
{
    Prog p;
    load_row_kernel(&p, "rmsnorm", cols, tname);
    DType dt = param_dtype(&p, "X");
    int64_t shape[2] = { rows, cols };
    uint64_t rng = 4711 + (uint64_t)cols;
    Ten x = ten_new(dt, 2, shape), y = ten_new(param_dtype(&p, "Y"), 2, shape);
    Ten w = ten_new(param_dtype(&p, "W"), 1, &cols);
    ten_random(&x, &rng, 0.1, 3.0);
    ten_random(&w, &rng, 0.5, 1.5);
    ten_poison(&y);
    double eps = 1e-5;
    Binding b[] = { { "X", ten_arg(&x) }, { "W", ten_arg(&w) }, { "Y", ten_arg(&y) }, { "eps", scalar_arg(eps, 0) } };
    ck_assert(prog_run(&p, b, 4));
    double *want = malloc(sizeof(double) * (size_t)(rows * cols));
    for (int64_t r = 0; r < rows; r++) {
        double ms = 0;
        for (int64_t c = 0; c < cols; c++)
            ms += ten_get(&x, r * cols + c) * ten_get(&x, r * cols + c) / (double)cols;
        for (int64_t c = 0; c < cols; c++)
            want[r * cols + c] = ten_get(&x, r * cols + c) / sqrt(ms + (double)(float)eps) * ten_get(&w, c);
    }
    char what[96];
    snprintf(what, sizeof what, "rmsnorm %lldx%lld %s", (long long)rows, (long long)cols, tname);
    ck_assert(ref_check(what, &y, want, tol_for(y.dt)) <= tol_for(y.dt));
    free(want);
    ten_free(&x), ten_free(&y), ten_free(&w);
    prog_free(&p);
}

START_TEST(rmsnorm_shapes)
{
    static const int64_t cols[] = { 1, 127, 1000 };
    for (int t = 0; t < 3; t++)
        run_rmsnorm(3, cols[_i], dtype_names[t]);
}
END_TEST

/* ---- cross_entropy: L[m] = logsumexp(X[m, :]) - X[m, Tgt[m]] (0 for a
 * target outside the row) ---- */

static void run_cross_entropy(int64_t rows, int64_t v, const char *tname, const char *iname)
{
    FeDefine defs[] = { { "BN", "64" }, { "T", tname }, { "I", iname } };
    Prog p;
    ck_assert(prog_load(&p, "cross_entropy.tile", "cross_entropy", defs, 3));
    int64_t shape[2] = { rows, v };
    uint64_t rng = 8086 + (uint64_t)(v * 7 + rows);
    Ten x = ten_new(param_dtype(&p, "X"), 2, shape), tgt = ten_new(param_dtype(&p, "Tgt"), 1, &rows);
    Ten l = ten_new(param_dtype(&p, "L"), 1, &rows);
    ten_random(&x, &rng, 0.05, 8.0);
    for (int64_t r = 0; r < rows; r++)   /* every fifth target outside the row: -100 (ignore_index) or V */
        ten_set(&tgt, r, r % 5 == 3 ? (r % 2 ? -100.0 : (double)v) : (double)(int64_t)(ref_rand(&rng) * (double)v));
    ten_poison(&l);
    Binding b[] = { { "X", ten_arg(&x) }, { "Tgt", ten_arg(&tgt) }, { "L", ten_arg(&l) } };
    ck_assert(prog_run(&p, b, 3));
    double *want = malloc(sizeof(double) * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) {
        int64_t t = (int64_t)ten_get(&tgt, r);
        double mx = -INFINITY, s = 0;
        for (int64_t c = 0; c < v; c++)
            mx = fmax(mx, ten_get(&x, r * v + c));
        for (int64_t c = 0; c < v; c++)
            s += exp(ten_get(&x, r * v + c) - mx);
        want[r] = t >= 0 && t < v ? mx + log(s) - ten_get(&x, r * v + t) : 0.0;
    }
    char what[96];
    snprintf(what, sizeof what, "cross_entropy %lldx%lld %s %s", (long long)rows, (long long)v, tname, iname);
    ck_assert(ref_check(what, &l, want, 1e-5) <= 1e-5);
    for (int64_t r = 0; r < rows; r++)   /* ignored rows are exactly 0 */
        if (want[r] == 0.0)
            ck_assert_msg(ten_get(&l, r) == 0.0, "%s: row %lld: %g for an ignored target", what, (long long)r,
                          ten_get(&l, r));
    free(want);
    ten_free(&x), ten_free(&tgt), ten_free(&l);
    prog_free(&p);
}

START_TEST(cross_entropy_shapes)
{
    /* V: one element, within one chunk, a chunk and one, several chunks with a tail */
    static const int64_t vs[] = { 1, 50, 65, 300 };
    run_cross_entropy(7, vs[_i], "bf16", "i64");
    run_cross_entropy(6, vs[_i], "f32", "i32");
}
END_TEST

/* ---- layernorm_bwd: dx, and dw / db added into DW / DB ---- */

static void run_layernorm_bwd(int64_t rows, int64_t cols, const char *tname, const char *file)
{
    char blk[32];
    snprintf(blk, sizeof blk, "%lld", (long long)pow2_at_least(cols, 16));
    FeDefine defs[] = { { "BLOCK", blk }, { "R", "4" }, { "G", "2" }, { "T", tname }, { "S", "2" } };
    Prog p;
    ck_assert(prog_load(&p, file, "layernorm_bwd", defs, 5));
    DType dt = param_dtype(&p, "X");
    int64_t shape[2] = { rows, cols };
    uint64_t rng = 1789 + (uint64_t)(cols * 3 + rows);
    Ten x = ten_new(dt, 2, shape), dy = ten_new(dt, 2, shape), dx = ten_new(dt, 2, shape);
    Ten w = ten_new(param_dtype(&p, "W"), 1, &cols), mean = ten_new(DT_F32, 1, &rows), rstd = ten_new(DT_F32, 1, &rows);
    Ten dw = ten_new(DT_F32, 1, &cols), db = ten_new(DT_F32, 1, &cols);
    ten_random(&x, &rng, 0.1, 3.0);
    ten_random(&dy, &rng, 0.1, 2.0);
    ten_random(&w, &rng, 0.5, 1.5);
    ten_random(&dw, &rng, 0.1, 1.0);   /* the kernel adds into DW and DB */
    ten_random(&db, &rng, 0.1, 1.0);
    ten_poison(&dx);
    double eps = 1e-5;
    for (int64_t r = 0; r < rows; r++) {   /* the forward's saved statistics, f32 */
        double m = 0, var = 0;
        for (int64_t c = 0; c < cols; c++)
            m += ten_get(&x, r * cols + c) / (double)cols;
        for (int64_t c = 0; c < cols; c++)
            var += (ten_get(&x, r * cols + c) - m) * (ten_get(&x, r * cols + c) - m) / (double)cols;
        ten_set(&mean, r, m);
        ten_set(&rstd, r, 1.0 / sqrt(var + eps));
    }
    double *wdx = malloc(sizeof(double) * (size_t)(rows * cols));
    double *wdw = malloc(sizeof(double) * (size_t)cols), *wdb = malloc(sizeof(double) * (size_t)cols);
    for (int64_t c = 0; c < cols; c++)
        wdw[c] = ten_get(&dw, c), wdb[c] = ten_get(&db, c);
    for (int64_t r = 0; r < rows; r++) {
        double m = ten_get(&mean, r), rs = ten_get(&rstd, r), c1 = 0, c2 = 0;
        for (int64_t c = 0; c < cols; c++) {
            double xh = (ten_get(&x, r * cols + c) - m) * rs, g = ten_get(&dy, r * cols + c) * ten_get(&w, c);
            c1 += g * xh / (double)cols;
            c2 += g / (double)cols;
            wdw[c] += ten_get(&dy, r * cols + c) * xh;
            wdb[c] += ten_get(&dy, r * cols + c);
        }
        for (int64_t c = 0; c < cols; c++) {
            double xh = (ten_get(&x, r * cols + c) - m) * rs, g = ten_get(&dy, r * cols + c) * ten_get(&w, c);
            wdx[r * cols + c] = (g - c2 - xh * c1) * rs;
        }
    }
    Binding b[] = { { "X", ten_arg(&x) }, { "DY", ten_arg(&dy) }, { "W", ten_arg(&w) }, { "Mean", ten_arg(&mean) },
                    { "Rstd", ten_arg(&rstd) }, { "DX", ten_arg(&dx) }, { "DW", ten_arg(&dw) }, { "DB", ten_arg(&db) } };
    ck_assert(prog_run(&p, b, 8));
    char what[96];
    snprintf(what, sizeof what, "layernorm_bwd %lldx%lld %s", (long long)rows, (long long)cols, tname);
    double tol = tol_for(dt) * 2;
    ck_assert(ref_check(what, &dx, wdx, tol) <= tol);
    ck_assert(ref_check(what, &dw, wdw, 1e-5) <= 1e-5);
    ck_assert(ref_check(what, &db, wdb, 1e-5) <= 1e-5);
    free(wdx), free(wdw), free(wdb);
    ten_free(&x), ten_free(&dy), ten_free(&dx), ten_free(&w), ten_free(&mean), ten_free(&rstd);
    ten_free(&dw), ten_free(&db);
    prog_free(&p);
}

START_TEST(layernorm_bwd_shapes)
{
    /* rows: one, not a multiple of R, not a multiple of a block's R * G = 8 */
    static const int64_t sh[][2] = { { 1, 1 }, { 6, 127 }, { 37, 100 } };
    for (int t = 0; t < 3; t++)
        run_layernorm_bwd(sh[_i][0], sh[_i][1], dtype_names[t], "layernorm_bwd.tile");
}
END_TEST

/* The persistent form (num_sms() in the grid: the interpreter's
 * TC_INTERP_SMS blocks, each striding over the groups of R rows; 37 rows
 * make 10 groups, 3, 3, 2 and 2 a block) through its shared-memory ring. */
START_TEST(layernorm_bwd_persistent)
{
    static const int64_t sh[][2] = { { 1, 1 }, { 6, 127 }, { 37, 100 } };
    for (int t = 0; t < 3; t++)
        run_layernorm_bwd(sh[_i][0], sh[_i][1], dtype_names[t], "../tests/perf/layernorm_bwd_persistent.tile");
    Prog p;
    FeDefine defs[] = { { "BLOCK", "128" }, { "R", "4" } };
    ck_assert(prog_load(&p, "../tests/perf/layernorm_bwd_persistent.tile", "layernorm_bwd", defs, 2));
    int64_t shape[2] = { 37, 100 }, cols = 100, rows = 37, grid[3];
    Ten x = ten_new(DT_BF16, 2, shape), w = ten_new(DT_BF16, 1, &cols), v = ten_new(DT_F32, 1, &rows);
    Ten f = ten_new(DT_F32, 1, &cols);   /* X, DY, W, Mean, Rstd, DX, DW, DB */
    InterpArg args[8] = { ten_arg(&x), ten_arg(&x), ten_arg(&w), ten_arg(&v), ten_arg(&v), ten_arg(&x),
                          ten_arg(&f), ten_arg(&f) };
    ck_assert_int_eq(interp_grid(p.f, args, 8, grid, &p.d), 0);
    ck_assert(grid[0] == TC_INTERP_SMS && grid[1] == 1 && grid[2] == 1);   /* min(cdiv(37, 4), 4) */
    ten_free(&x), ten_free(&w), ten_free(&v), ten_free(&f);
    prog_free(&p);
}
END_TEST

/* ---- GEMM ---- */

static void run_gemm(int64_t m, int64_t n, int64_t k)
{
    FeDefine defs[] = { { "BM", "32" }, { "BN", "32" }, { "BK", "16" } };
    Prog p;
    ck_assert(prog_load(&p, "gemm.tile", "gemm", defs, 3));
    int64_t sa[2] = { m, k }, sb[2] = { k, n }, sc[2] = { m, n };
    uint64_t rng = 42 + (uint64_t)(m * 10007 + n * 101 + k);
    Ten a = ten_new(param_dtype(&p, "A"), 2, sa), b = ten_new(param_dtype(&p, "B"), 2, sb);
    Ten c = ten_new(param_dtype(&p, "C"), 2, sc);
    ten_random(&a, &rng, 0.1, 1.0);
    ten_random(&b, &rng, 0.1, 1.0);
    ten_poison(&c);
    Binding bind[] = { { "A", ten_arg(&a) }, { "B", ten_arg(&b) }, { "C", ten_arg(&c) } };
    ck_assert(prog_run(&p, bind, 3));
    double *want = malloc(sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t q = 0; q < k; q++)
                s += ten_get(&a, i * k + q) * ten_get(&b, q * n + j);
            want[i * n + j] = s;
        }
    char what[96];
    snprintf(what, sizeof what, "gemm M=%lld N=%lld K=%lld", (long long)m, (long long)n, (long long)k);
    ck_assert(ref_check(what, &c, want, tol_for(c.dt)) <= tol_for(c.dt));
    free(want);
    ten_free(&a), ten_free(&b), ten_free(&c);
    prog_free(&p);
}

START_TEST(gemm_shapes)
{
    static const int64_t sz[] = { 1, 17, 128, 100 };
    /* a spread of (M, N, K) combinations, including every size on each axis */
    run_gemm(sz[_i], sz[(_i + 1) % 4], sz[(_i + 2) % 4]);
    run_gemm(sz[_i], sz[_i], sz[_i]);
    run_gemm(sz[(_i + 3) % 4], sz[_i], sz[(_i + 1) % 4]);
}
END_TEST

/* ---- attention forward ---- */

typedef struct AttnCase {
    int64_t z, h, hk, n, d;
    bool causal, stage_o;
} AttnCase;

/* Reference O and LSE for one (z, h) in double. LSE is in log2 units of
 * scale * log2(e) * QK^T: max + log2(sum exp2(s - max)). */
static void run_attention(const AttnCase *c)
{
    char dd[16];
    snprintf(dd, sizeof dd, "%lld", (long long)c->d);
    FeDefine defs[] = { { "D", dd }, { "BM", "16" }, { "BN", "16" }, { "CAUSAL", c->causal ? "true" : "false" } };
    Prog p;
    ck_assert(prog_load(&p, "attention.tile", "attention", defs, 4));
    int64_t sq[4] = { c->z, c->h, c->n, c->d }, sk[4] = { c->z, c->hk, c->n, c->d }, sl[3] = { c->z, c->h, c->n };
    uint64_t rng = 99 + (uint64_t)(c->n * 131 + c->d * 7 + c->hk * 3 + c->causal);
    Ten q = ten_new(param_dtype(&p, "Q"), 4, sq), k = ten_new(param_dtype(&p, "K"), 4, sk);
    Ten v = ten_new(param_dtype(&p, "V"), 4, sk), o = ten_new(param_dtype(&p, "O"), 4, sq);
    Ten lse = ten_new(param_dtype(&p, "LSE"), 3, sl);
    ten_random(&q, &rng, 0.05, 1.0);
    ten_random(&k, &rng, 0.05, 1.0);
    ten_random(&v, &rng, 0.05, 1.0);
    ten_poison(&o);
    ten_poison(&lse);
    double scale = 1.0 / sqrt((double)c->d);
    Binding b[] = { { "Q", ten_arg(&q) }, { "K", ten_arg(&k) }, { "V", ten_arg(&v) },
                    { "O", ten_arg(&o) }, { "LSE", ten_arg(&lse) }, { "scale", scalar_arg(scale, 0) } };
    ck_assert(prog_run(&p, b, 6));
    double *wo = malloc(sizeof(double) * (size_t)o.n), *wl = malloc(sizeof(double) * (size_t)lse.n);
    ref_attention(c->z, c->h, c->hk, c->n, c->d, c->causal, &q, &k, &v, (double)(float)scale, wo, wl);
    char what[128];
    snprintf(what, sizeof what, "attention Z=%lld H=%lld HK=%lld N=%lld D=%lld causal=%d stage_o=%d",
             (long long)c->z, (long long)c->h, (long long)c->hk, (long long)c->n, (long long)c->d, c->causal,
             c->stage_o);
    ck_assert(ref_check(what, &o, wo, 1e-2) <= 1e-2);
    ck_assert(ref_check(what, &lse, wl, 1e-3) <= 1e-3);
    free(wo), free(wl);
    ten_free(&q), ten_free(&k), ten_free(&v), ten_free(&o), ten_free(&lse);
    prog_free(&p);
}

START_TEST(attention_cases)
{
    /* _i: bit 0 causal, bit 1 GQA (H/HK = 4), bit 2 D = 32, bit 3 O staged through shared memory */
    AttnCase c = { 2, (_i & 2) ? 4 : 2, (_i & 2) ? 1 : 2, 37, (_i & 4) ? 32 : 16, (_i & 1) != 0, (_i & 8) != 0 };
    run_attention(&c);
}
END_TEST

/* ---- reductions: row_sum and partial_sum (two kernels in one file) ---- */

START_TEST(reduction_kernels)
{
    FeDefine defs[] = { { "BM", "16" }, { "BN", "32" }, { "BLOCK", "64" } };
    Prog p;
    ck_assert(prog_load(&p, "reduction.tile", "row_sum", defs, 3));
    int64_t m = 37, n = 100, sx[2] = { m, n };
    uint64_t rng = 2024;
    Ten x = ten_new(DT_F32, 2, sx), s = ten_new(DT_F32, 1, &m);
    ten_random(&x, &rng, 0.1, 2.0);
    ten_poison(&s);
    Binding b[] = { { "X", ten_arg(&x) }, { "S", ten_arg(&s) } };
    ck_assert(prog_run(&p, b, 2));
    double want[37];
    for (int64_t i = 0; i < m; i++) {
        want[i] = 0;
        for (int64_t j = 0; j < n; j++)
            want[i] += ten_get(&x, i * n + j);
    }
    ck_assert(ref_check("row_sum 37x100", &s, want, 1e-6) <= 1e-6);
    prog_free(&p);
    ck_assert(prog_load(&p, "reduction.tile", "partial_sum", defs, 3));
    int64_t nx = 1000, nb = (nx + 63) / 64;
    Ten v = ten_new(DT_F32, 1, &nx), ps = ten_new(DT_F32, 1, &nb);
    ten_random(&v, &rng, 0.1, 2.0);
    ten_poison(&ps);
    Binding b2[] = { { "X", ten_arg(&v) }, { "P", ten_arg(&ps) } };
    ck_assert(prog_run(&p, b2, 2));
    double pw[16] = { 0 };
    for (int64_t i = 0; i < nx; i++)
        pw[i / 64] += ten_get(&v, i);
    ck_assert(ref_check("partial_sum N=1000", &ps, pw, 1e-6) <= 1e-6);
    ten_free(&x), ten_free(&s), ten_free(&v), ten_free(&ps);
    prog_free(&p);
}
END_TEST

/* ---- transpose ---- */

START_TEST(transpose_tiles)
{
    FeDefine defs[] = { { "BM", "16" }, { "BN", "16" }, { "T", dtype_names[_i] } };
    Prog p;
    ck_assert(prog_load(&p, "transpose.tile", "transpose", defs, 3));
    int64_t m = 37, n = 50, sx[2] = { m, n }, sy[2] = { n, m };
    uint64_t rng = 31337 + (uint64_t)_i;
    Ten x = ten_new(param_dtype(&p, "X"), 2, sx), y = ten_new(param_dtype(&p, "Y"), 2, sy);
    ten_random(&x, &rng, 0.1, 5.0);
    ten_poison(&y);
    Binding b[] = { { "X", ten_arg(&x) }, { "Y", ten_arg(&y) } };
    ck_assert(prog_run(&p, b, 2));
    double *want = malloc(sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            want[j * m + i] = ten_get(&x, i * n + j);
    ck_assert(ref_check("transpose 37x50", &y, want, 0.0) <= 0.0);   /* exact */
    free(want);
    ten_free(&x), ten_free(&y);
    prog_free(&p);
}
END_TEST

/* ---- dropout: Y = X * mask / (1 - p), mask = rand(seed, i) >= p ---- */

static void run_dropout(int64_t n, const char *tname, double p, int64_t seed)
{
    FeDefine defs[] = { { "BLOCK", "256" }, { "T", tname } };
    Prog pr;
    ck_assert(prog_load(&pr, "dropout.tile", "dropout", defs, 2));
    DType dt = param_dtype(&pr, "X");
    uint64_t rng = 777 + (uint64_t)n;
    Ten x = ten_new(dt, 1, &n), y = ten_new(dt, 1, &n);
    ten_random(&x, &rng, 0.1, 4.0);
    ten_poison(&y);
    Binding b[] = { { "X", ten_arg(&x) }, { "Y", ten_arg(&y) }, { "p", scalar_arg(p, 0) },
                    { "seed", scalar_arg(0, seed) } };
    ck_assert(prog_run(&pr, b, 4));
    double *want = malloc(sizeof(double) * (size_t)n);
    float scale = 1.0f / (1.0f - (float)p);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        bool keep = tc_philox_rand(seed, (uint32_t)i) >= (float)p;
        kept += keep;
        want[i] = keep ? tc_round_to(dt, (double)((float)ten_get(&x, i) * scale)) : 0.0;
    }
    char what[96];
    snprintf(what, sizeof what, "dropout N=%lld %s p=%g", (long long)n, tname, p);
    ck_assert(ref_check(what, &y, want, 0.0) <= 0.0);   /* exact */
    if (n >= 1000)
        ck_assert_msg(fabs((double)kept / (double)n - (1.0 - p)) < 0.05, "%s: kept %lld", what, (long long)kept);
    free(want);
    ten_free(&x), ten_free(&y);
    prog_free(&pr);
}

START_TEST(dropout_cases)
{
    static const int64_t ns[] = { 1, 1000, 4097 };
    static const double ps[] = { 0.0, 0.3, 0.9 };
    for (int t = 0; t < 2; t++)
        run_dropout(ns[_i], dtype_names[t], ps[_i], _i == 2 ? -123456789012345LL : 42);
}
END_TEST

/* ---- cumsum: Y[m, n] = X[m, 0] + ... + X[m, n] ---- */

START_TEST(cumsum_shapes)
{
    static const int64_t mn[][2] = { { 3, 1000 }, { 5, 1 }, { 9, 129 } };
    FeDefine defs[] = { { "BM", "4" }, { "BN", "64" } };
    Prog p;
    ck_assert(prog_load(&p, "cumsum.tile", "cumsum", defs, 2));
    int64_t m = mn[_i][0], n = mn[_i][1], shape[2] = { m, n };
    uint64_t rng = 4242 + (uint64_t)_i;
    Ten x = ten_new(DT_F32, 2, shape), y = ten_new(DT_F32, 2, shape);
    ten_random(&x, &rng, 0.1, 2.0);
    ten_poison(&y);
    Binding b[] = { { "X", ten_arg(&x) }, { "Y", ten_arg(&y) } };
    ck_assert(prog_run(&p, b, 2));
    double *want = malloc(sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < m; i++) {
        double acc = 0;
        for (int64_t j = 0; j < n; j++)
            want[i * n + j] = acc += ten_get(&x, i * n + j);
    }
    char what[64];
    snprintf(what, sizeof what, "cumsum %lldx%lld", (long long)m, (long long)n);
    ck_assert(ref_check(what, &y, want, 1e-6) <= 1e-6);
    free(want);
    ten_free(&x), ten_free(&y);
    prog_free(&p);
}
END_TEST

/* ---- gather_rows / scatter_rows: Y[t] = E[Ids[t]]; Y[Ids[t]] = X[t] ---- */

START_TEST(gather_scatter_rows)
{
    static const int64_t nv[][2] = { { 37, 50 }, { 1, 3 }, { 64, 16 } };   /* N ids, V table rows */
    int64_t n = nv[_i][0], v = nv[_i][1], d = 64;
    FeDefine defs[] = { { "R", "16" }, { "D", "64" }, { "T", "f32" } };
    uint64_t rng = 99 + (uint64_t)_i;
    int64_t se[2] = { v, d }, sy[2] = { n, d };
    Ten e = ten_new(DT_F32, 2, se), ids = ten_new(DT_I32, 1, &n), y = ten_new(DT_F32, 2, sy);
    ten_random(&e, &rng, 0.1, 4.0);
    for (int64_t t = 0; t < n; t++)   /* some ids below 0 or past the table */
        ten_set(&ids, t, (double)((int64_t)(ref_rand(&rng) * (double)(v + 6)) - 3));
    ten_poison(&y);
    Prog p;
    ck_assert(prog_load(&p, "gather_rows.tile", "gather_rows", defs, 3));
    Binding b[] = { { "E", ten_arg(&e) }, { "Ids", ten_arg(&ids) }, { "Y", ten_arg(&y) } };
    ck_assert(prog_run(&p, b, 3));
    double *want = calloc((size_t)(n * d), sizeof(double));
    for (int64_t t = 0; t < n; t++) {
        int64_t id = (int64_t)ten_get(&ids, t);
        for (int64_t j = 0; j < d; j++)
            want[t * d + j] = id >= 0 && id < v ? ten_get(&e, id * d + j) : 0.0;
    }
    char what[64];
    snprintf(what, sizeof what, "gather_rows N=%lld V=%lld", (long long)n, (long long)v);
    ck_assert(ref_check(what, &y, want, 0.0) <= 0.0);   /* exact */
    prog_free(&p);
    /* scatter_rows: the rows of Y (the table's shape) that distinct ids name */
    for (int64_t t = 0; t < n; t++)
        ten_set(&ids, t, (double)(t % 3 == 2 ? v + t : (t * 7 + 1) % (v + 2) - 1));
    for (int64_t t = 0; t < n; t++)   /* keep the first of equal ids only */
        for (int64_t u = 0; u < t; u++)
            if (ten_get(&ids, u) == ten_get(&ids, t))
                ten_set(&ids, t, -1);
    Ten yt = ten_new(DT_F32, 2, se);
    ten_random(&yt, &rng, 0.1, 4.0);
    double *want2 = calloc((size_t)(v * d), sizeof(double));
    for (int64_t i = 0; i < v * d; i++)
        want2[i] = ten_get(&yt, i);
    for (int64_t t = 0; t < n; t++) {
        int64_t id = (int64_t)ten_get(&ids, t);
        for (int64_t j = 0; id >= 0 && id < v && j < d; j++)
            want2[id * d + j] = ten_get(&y, t * d + j);
    }
    ck_assert(prog_load(&p, "gather_rows.tile", "scatter_rows", defs, 3));
    Binding b2[] = { { "X", ten_arg(&y) }, { "Ids", ten_arg(&ids) }, { "Y", ten_arg(&yt) } };
    ck_assert(prog_run(&p, b2, 3));
    snprintf(what, sizeof what, "scatter_rows N=%lld V=%lld", (long long)n, (long long)v);
    ck_assert(ref_check(what, &yt, want2, 0.0) <= 0.0);
    free(want), free(want2);
    ten_free(&e), ten_free(&ids), ten_free(&y), ten_free(&yt);
    prog_free(&p);
}
END_TEST


/* ---- decode_attention: one query token per (sequence, head) against a
 * paged cache read through a shuffled block table, split over the keys,
 * then the splits combined (decode_combine) ---- */

static void run_decode_attention(int64_t hk, int64_t g, const int64_t *lens, int64_t nb)
{
    const int64_t d = 32, page = 32, chunk = 64;   /* two trips of 16 keys a page */
    FeDefine defs[] = { { "D", "32" },     { "G", g == 4 ? "4" : "2" }, { "PAGE", "32" },
                        { "BN", "16" },    { "CHUNK", "64" },           { "SB", "2" } };
    int64_t h = hk * g, mp = 0, npages = 2, maxlen = 0;
    for (int64_t b = 0; b < nb; b++) {
        int64_t pages = (lens[b] + page - 1) / page;
        mp = pages > mp ? pages : mp;
        npages += (lens[b] + page - 1) / page;
        maxlen = lens[b] > maxlen ? lens[b] : maxlen;
    }
    int64_t s = (maxlen + chunk - 1) / chunk;
    uint64_t rng = 5150 + (uint64_t)(hk * 10 + g);
    int64_t sq[3] = { nb, h, d }, sc[4] = { npages, page, hk, d }, sbt[2] = { nb, mp };
    int64_t sop[4] = { nb, h, s, d }, slp[3] = { nb, h, s };
    Ten q = ten_new(DT_BF16, 3, sq), kc = ten_new(DT_BF16, 4, sc), vc = ten_new(DT_BF16, 4, sc);
    Ten bt = ten_new(DT_I32, 2, sbt), ln = ten_new(DT_I32, 1, &nb), o = ten_new(DT_BF16, 3, sq);
    Ten op = ten_new(DT_F32, 4, sop), lp = ten_new(DT_F32, 3, slp);
    ten_random(&q, &rng, 0.1, 2.0);
    ten_random(&kc, &rng, 0.1, 2.0);
    ten_random(&vc, &rng, 0.1, 2.0);
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)npages);   /* pages in a random order */
    for (int64_t i = 0; i < npages; i++)
        perm[i] = i;
    for (int64_t i = npages - 1; i > 0; i--) {
        int64_t j = (int64_t)(ref_rand(&rng) * (double)(i + 1)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int64_t at = 0;
    for (int64_t b = 0; b < nb; b++) {
        ten_set(&ln, b, (double)lens[b]);
        for (int64_t j = 0; j < mp; j++)
            ten_set(&bt, b * mp + j, j < (lens[b] + page - 1) / page ? (double)perm[at++] : -1.0);
    }
    ten_poison(&op), ten_poison(&lp), ten_poison(&o);
    double scale = 1.0 / sqrt((double)d);
    Prog p;
    ck_assert(prog_load(&p, "decode_attention.tile", "decode_attention", defs, 6));
    Binding b1[] = { { "Q", ten_arg(&q) }, { "Kc", ten_arg(&kc) }, { "Vc", ten_arg(&vc) }, { "BT", ten_arg(&bt) },
                     { "Lens", ten_arg(&ln) }, { "Op", ten_arg(&op) }, { "Lp", ten_arg(&lp) },
                     { "scale", scalar_arg(scale, 0) } };
    ck_assert(prog_run(&p, b1, 8));
    prog_free(&p);
    ck_assert(prog_load(&p, "decode_attention.tile", "decode_combine", defs, 6));
    Binding b2[] = { { "Op", ten_arg(&op) }, { "Lp", ten_arg(&lp) }, { "Lens", ten_arg(&ln) }, { "O", ten_arg(&o) } };
    ck_assert(prog_run(&p, b2, 4));
    prog_free(&p);
    double *want = calloc((size_t)(nb * h * d), sizeof(double)), *sc2 = malloc(sizeof(double) * (size_t)maxlen);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t qh = 0; qh < h; qh++) {
            int64_t kh = qh / g;
            double mx = -INFINITY, sum = 0;
            for (int64_t t = 0; t < lens[b]; t++) {
                int64_t row = ((int64_t)ten_get(&bt, b * mp + t / page) * page + t % page) * hk + kh;
                double dot = 0;
                for (int64_t e = 0; e < d; e++)
                    dot += ten_get(&q, (b * h + qh) * d + e) * ten_get(&kc, row * d + e);
                sc2[t] = dot * scale;
                mx = fmax(mx, sc2[t]);
            }
            for (int64_t t = 0; t < lens[b]; t++)
                sum += exp(sc2[t] - mx);
            for (int64_t t = 0; t < lens[b]; t++) {
                int64_t row = ((int64_t)ten_get(&bt, b * mp + t / page) * page + t % page) * hk + kh;
                for (int64_t e = 0; e < d; e++)
                    want[(b * h + qh) * d + e] += exp(sc2[t] - mx) / sum * ten_get(&vc, row * d + e);
            }
        }
    char what[96];
    snprintf(what, sizeof what, "decode_attention HK=%lld G=%lld", (long long)hk, (long long)g);
    ck_assert(ref_check(what, &o, want, 1e-2) <= 1e-2);
    free(want), free(sc2), free(perm);
    ten_free(&q), ten_free(&kc), ten_free(&vc), ten_free(&bt), ten_free(&ln), ten_free(&o), ten_free(&op), ten_free(&lp);
}

START_TEST(decode_attention_cases)
{
    /* lengths: one key, within a page, a page and one, several splits with a
     * tail (5 splits of 64: the combine's loop takes 2 a trip) */
    static const int64_t lens[] = { 1, 17, 300, 64 };   /* 300: 5 splits, 10 pages */
    if (_i == 0)
        run_decode_attention(2, 4, lens, 4);   /* 8 query heads on 2 KV heads */
    else
        run_decode_attention(3, 2, lens, 3);   /* G = 2: the 16-row window reaches past H */
}
END_TEST

static Suite *examples_suite(void)
{
    Suite *s = suite_create("examples");
    TCase *tc = tcase_create("e2e");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, vector_add_sizes, 0, 3);
    tcase_add_loop_test(tc, softmax_shapes, 0, 3);
    tcase_add_loop_test(tc, layernorm_shapes, 0, 3);
    tcase_add_loop_test(tc, rmsnorm_shapes, 0, 3);
    tcase_add_loop_test(tc, cross_entropy_shapes, 0, 4);
    tcase_add_loop_test(tc, layernorm_bwd_shapes, 0, 3);
    tcase_add_loop_test(tc, layernorm_bwd_persistent, 0, 3);
    tcase_add_loop_test(tc, gemm_shapes, 0, 4);
    tcase_add_loop_test(tc, attention_cases, 0, 16);
    tcase_add_test(tc, reduction_kernels);
    tcase_add_loop_test(tc, transpose_tiles, 0, 3);
    tcase_add_loop_test(tc, dropout_cases, 0, 3);
    tcase_add_loop_test(tc, cumsum_shapes, 0, 3);
    tcase_add_loop_test(tc, gather_scatter_rows, 0, 3);
    tcase_add_loop_test(tc, decode_attention_cases, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(examples_suite());
}
