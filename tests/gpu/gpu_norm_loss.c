/* gpu_norm_loss.c - examples/rmsnorm.tile, cross_entropy.tile and
 * layernorm_bwd.tile on the GPU against C references in double, on fresh
 * random inputs (seed printed; $TILEC_SEED repeats a run):
 *   rmsnorm        bf16 rows up to its BLOCK (4096, 16384: two blocks an SM
 *                  with the next wave's row prefetched), f32; rows of 1,
 *                  127, 1000, BLOCK - 1 and BLOCK columns;
 *   cross_entropy  bf16 logits with i64 targets (the defaults: chunks of
 *                  8192) over 1, 1000, 8192, 8193 and 128256 (a 128k
 *                  vocabulary) columns, f32 logits with i32 targets; targets
 *                  at 0, at V - 1, and outside the row (-100, V: a loss of
 *                  exactly 0);
 *   layernorm_bwd  dx (bf16, f32) from the saved mean and rstd, and dw / db
 *                  added by atomic_add into DW and DB that start from random
 *                  values (so every block's sums must land, once); row counts
 *                  that are not multiples of a trip's R rows nor of a block's
 *                  R * G, columns not a multiple of the vector.
 * Tolerances (relative Frobenius error): bf16 outputs 1e-2 (layernorm_bwd's
 * dx 2e-2), f32 outputs 1e-5 (the losses and dw / db: f32 sums of up to
 * 128256 terms); ignored targets must give 0 exactly. Outputs start poisoned
 * (0xFF bytes: NaN) and are followed by a poisoned guard zone that must stay
 * so.
 *
 *   gpu_norm_loss                 compile with TILEC_EXE into TILEC_WORK_DIR, then test
 *   gpu_norm_loss DIR             test precompiled DIR/ARCH/<module>.ptx + .meta
 *                                 (tests/gpu/make_ptx.sh writes them from --list-modules)
 *   gpu_norm_loss --list-modules  "NAME EXAMPLE DEFINES" per module
 *   gpu_norm_loss --interp        the same checks on the IR interpreter, on
 *                                 smaller shapes (tilec_interpret; builds with
 *                                 the compiler)
 *
 * Exit 0 if every check passed, 77 without a CUDA driver or device (not in
 * --interp), 1 otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_harness.h"

static const char nl_src[] = "// gpu_norm_loss: examples only\n";

static const ModSpec specs[] = {
    { "rmsnorm_bf16_4096", "rmsnorm", "-DBLOCK=4096" },
    { "rmsnorm_f32_1024", "rmsnorm", "-DBLOCK=1024 -DT=f32" },
    { "rmsnorm_bf16_16384", "rmsnorm", "-DBLOCK=16384" },
    { "cross_entropy", "cross_entropy", "" },
    { "cross_entropy_f32_i32", "cross_entropy", "-DT=f32 -DI=i32 -DBN=4096" },
    { "layernorm_bwd", "layernorm_bwd", "" },
    { "layernorm_bwd_4096", "layernorm_bwd", "-DBLOCK=4096" },
    { "layernorm_bwd_f32", "layernorm_bwd", "-DT=f32 -DG=3" },
};
enum { NMOD = sizeof specs / sizeof specs[0] };
enum { M_RMS4096, M_RMS_F32, M_RMS16384, M_CE, M_CE_F32, M_LNB, M_LNB4096, M_LNB_F32 };

static const double eps = 1e-5;

static double val_at(const HostT *t, size_t i)
{
    if (esize(t->dt) == 2)
        return gpu_get(GPU_BF16, t->data, i);
    return f32_at(t, i);
}

static void set_int(HostT *t, size_t i, int64_t v)
{
    if (!strcmp(t->dt, "i64"))
        memcpy(t->data + 8 * i, &v, 8);
    else {
        int32_t w = (int32_t)v;
        memcpy(t->data + 4 * i, &w, 4);
    }
}

/* ||got - want|| / ||want|| over a tensor; a NaN or infinity in got is INFINITY. */
static double rel_err(const HostT *got, const double *want)
{
    size_t n = numel(got);
    double *g = gpu_calloc(n, sizeof(double));
    for (size_t i = 0; i < n; i++)
        g[i] = val_at(got, i);
    double e = gpu_rel_err(g, want, n);
    free(g);
    return e;
}

/* ---- rmsnorm: y = x / sqrt(mean(x^2) + eps) * w ---- */

static void check_rmsnorm(Mod *m, const char *arch, const char *mod, const char *dt, int64_t rows, int64_t cols)
{
    char label[160];
    snprintf(label, sizeof label, "%s %s %lldx%lld", arch, mod, (long long)rows, (long long)cols);
    gpu_context("%s", label);
    HostT x = host_t(dt, 2, rows, cols), w = host_t(dt, 1, cols, 0), y = host_t(dt, 2, rows, cols);
    fill(&x, 3);
    fill(&w, 1.5f);
    Arg a[4] = { { &x, 0, 0, false }, { &w, 0, 0, false }, { &y, 0, 0, false }, { NULL, 0, eps, true } };
    bool ok = run_kernel(m, "rmsnorm", a, 4, label);
    double *want = gpu_calloc((size_t)(rows * cols), sizeof(double));
    for (int64_t r = 0; r < rows; r++) {
        double ms = 0;
        for (int64_t c = 0; c < cols; c++)
            ms += val_at(&x, (size_t)(r * cols + c)) * val_at(&x, (size_t)(r * cols + c));
        double rs = 1.0 / sqrt(ms / (double)cols + (double)(float)eps);
        for (int64_t c = 0; c < cols; c++)
            want[r * cols + c] = val_at(&x, (size_t)(r * cols + c)) * rs * val_at(&w, (size_t)c);
    }
    double tol = esize(dt) == 2 ? 1e-2 : 1e-5, err = ok ? rel_err(&y, want) : INFINITY;
    gpu_result(ok && err <= tol, "%s: rel err %.2e (tol %.0e)", label, err, tol);
    free(want);
    free(x.data), free(w.data), free(y.data);
}

/* ---- cross_entropy: L[m] = logsumexp(X[m, :]) - X[m, Tgt[m]], 0 outside ---- */

static void check_cross_entropy(Mod *m, const char *arch, const char *mod, const char *dt, const char *it,
                                int64_t rows, int64_t v)
{
    char label[160];
    snprintf(label, sizeof label, "%s %s %lldx%lld targets %s", arch, mod, (long long)rows, (long long)v, it);
    gpu_context("%s", label);
    HostT x = host_t(dt, 2, rows, v), t = host_t(it, 1, rows, 0), l = host_t("f32", 1, rows, 0);
    fill(&x, 8);
    int64_t *tv = gpu_calloc((size_t)rows, sizeof(int64_t));
    for (int64_t r = 0; r < rows; r++) {
        int64_t k = (int64_t)(fabsf(gpu_frand(1.0f)) * (float)v);
        tv[r] = r % 7 == 1 ? 0 : r % 7 == 2 ? v - 1 : r % 7 == 3 ? -100 : r % 7 == 4 ? v : (k < v ? k : v - 1);
        set_int(&t, (size_t)r, tv[r]);
    }
    Arg a[3] = { { &x, 0, 0, false }, { &t, 0, 0, false }, { &l, 0, 0, false } };
    bool ok = run_kernel(m, "cross_entropy", a, 3, label);
    double *want = gpu_calloc((size_t)rows, sizeof(double));
    int64_t bad_ignored = 0;
    for (int64_t r = 0; r < rows; r++) {
        double mx = -INFINITY, s = 0;
        for (int64_t c = 0; c < v; c++)
            mx = fmax(mx, val_at(&x, (size_t)(r * v + c)));
        for (int64_t c = 0; c < v; c++)
            s += exp(val_at(&x, (size_t)(r * v + c)) - mx);
        bool hit = tv[r] >= 0 && tv[r] < v;
        want[r] = hit ? mx + log(s) - val_at(&x, (size_t)(r * v + tv[r])) : 0.0;
        bad_ignored += ok && !hit && f32_at(&l, (size_t)r) != 0.0f;
    }
    double err = ok ? rel_err(&l, want) : INFINITY;
    gpu_result(ok && err <= 1e-5 && bad_ignored == 0, "%s: rel err %.2e (tol 1e-05), %lld ignored rows not 0", label,
               err, (long long)bad_ignored);
    free(want), free(tv);
    free(x.data), free(t.data), free(l.data);
}

/* ---- layernorm_bwd: dx, and dw / db added into DW / DB ---- */

static void check_layernorm_bwd(Mod *m, const char *arch, const char *mod, const char *dt, int64_t rows,
                                int64_t cols)
{
    char label[160];
    snprintf(label, sizeof label, "%s %s %lldx%lld", arch, mod, (long long)rows, (long long)cols);
    gpu_context("%s", label);
    HostT x = host_t(dt, 2, rows, cols), dy = host_t(dt, 2, rows, cols), w = host_t(dt, 1, cols, 0);
    HostT mean = host_t("f32", 1, rows, 0), rstd = host_t("f32", 1, rows, 0), dx = host_t(dt, 2, rows, cols);
    HostT dw = host_t("f32", 1, cols, 0), db = host_t("f32", 1, cols, 0);
    fill(&x, 3);
    for (size_t i = 0; i < numel(&x); i++)   /* rows with a mean away from 0 */
        set_f32(&x, i, (float)val_at(&x, i) + 0.5f);
    fill(&dy, 2);
    fill(&w, 1.5f);
    fill(&dw, 1);   /* the kernel adds into DW and DB */
    fill(&db, 1);
    for (int64_t r = 0; r < rows; r++) {   /* the forward's statistics, saved in f32 */
        double mu = 0, var = 0;
        for (int64_t c = 0; c < cols; c++)
            mu += val_at(&x, (size_t)(r * cols + c)) / (double)cols;
        for (int64_t c = 0; c < cols; c++) {
            double d = val_at(&x, (size_t)(r * cols + c)) - mu;
            var += d * d / (double)cols;
        }
        set_f32(&mean, (size_t)r, (float)mu);
        set_f32(&rstd, (size_t)r, (float)(1.0 / sqrt(var + eps)));
    }
    double *wdx = gpu_calloc((size_t)(rows * cols), sizeof(double));
    double *wdw = gpu_calloc((size_t)cols, sizeof(double)), *wdb = gpu_calloc((size_t)cols, sizeof(double));
    for (int64_t c = 0; c < cols; c++)
        wdw[c] = f32_at(&dw, (size_t)c), wdb[c] = f32_at(&db, (size_t)c);
    for (int64_t r = 0; r < rows; r++) {
        double mu = f32_at(&mean, (size_t)r), rs = f32_at(&rstd, (size_t)r), c1 = 0, c2 = 0;
        for (int64_t c = 0; c < cols; c++) {
            size_t k = (size_t)(r * cols + c);
            double xh = (val_at(&x, k) - mu) * rs, g = val_at(&dy, k) * val_at(&w, (size_t)c);
            c1 += g * xh / (double)cols;
            c2 += g / (double)cols;
            wdw[c] += val_at(&dy, k) * xh;
            wdb[c] += val_at(&dy, k);
        }
        for (int64_t c = 0; c < cols; c++) {
            size_t k = (size_t)(r * cols + c);
            double xh = (val_at(&x, k) - mu) * rs, g = val_at(&dy, k) * val_at(&w, (size_t)c);
            wdx[k] = (g - c2 - xh * c1) * rs;
        }
    }
    Arg a[8] = { { &x, 0, 0, false },    { &dy, 0, 0, false }, { &w, 0, 0, false },  { &mean, 0, 0, false },
                 { &rstd, 0, 0, false }, { &dx, 0, 0, false }, { &dw, 0, 0, false }, { &db, 0, 0, false } };
    bool ok = run_kernel(m, "layernorm_bwd", a, 8, label);
    double tol = esize(dt) == 2 ? 2e-2 : 1e-5;
    double ex = ok ? rel_err(&dx, wdx) : INFINITY, ew = ok ? rel_err(&dw, wdw) : INFINITY;
    double eb = ok ? rel_err(&db, wdb) : INFINITY;
    gpu_result(ok && ex <= tol && ew <= 1e-5 && eb <= 1e-5,
               "%s: rel err dx %.2e (tol %.0e), dw %.2e, db %.2e (tol 1e-05)", label, ex, tol, ew, eb);
    free(wdx), free(wdw), free(wdb);
    free(x.data), free(dy.data), free(w.data), free(mean.data), free(rstd.data), free(dx.data), free(dw.data),
        free(db.data);
}

static void run_all(Mod *mods, const char *arch)
{
    /* The interpreter runs every element of every op on the host: the same
     * cases on fewer rows and the shorter rows. */
    bool in = interp_mode;
    int64_t rows = in ? 3 : 37;
    static const int64_t rms_cols[] = { 1, 127, 1000, 4095, 4096 };
    for (int i = 0; i < 5; i++)
        check_rmsnorm(&mods[M_RMS4096], arch, "rmsnorm bf16 BLOCK=4096", "bf16", i ? rows : 1, rms_cols[i]);
    check_rmsnorm(&mods[M_RMS_F32], arch, "rmsnorm f32 BLOCK=1024", "f32", rows, 1000);
    check_rmsnorm(&mods[M_RMS_F32], arch, "rmsnorm f32 BLOCK=1024", "f32", rows, 1024);
    check_rmsnorm(&mods[M_RMS16384], arch, "rmsnorm bf16 BLOCK=16384", "bf16", in ? 2 : 300, 16384);
    check_rmsnorm(&mods[M_RMS16384], arch, "rmsnorm bf16 BLOCK=16384", "bf16", in ? 2 : 37, 12345);

    static const int64_t vs[] = { 1, 1000, 8192, 8193, 128256 };
    for (int i = 0; i < 5; i++)
        check_cross_entropy(&mods[M_CE], arch, "cross_entropy bf16", "bf16", "i64", in ? 8 : 37 + 100 * (i == 2),
                            in && vs[i] > 10000 ? 20000 : vs[i]);
    check_cross_entropy(&mods[M_CE_F32], arch, "cross_entropy f32 BN=4096", "f32", "i32", in ? 8 : 37, 4097);
    check_cross_entropy(&mods[M_CE_F32], arch, "cross_entropy f32 BN=4096", "f32", "i32", in ? 8 : 21,
                        in ? 9000 : 50000);

    static const int64_t lnb[][2] = { { 1, 1 }, { 37, 127 }, { 300, 1000 }, { 129, 1024 } };
    for (int i = 0; i < 4; i++)
        check_layernorm_bwd(&mods[M_LNB], arch, "layernorm_bwd bf16 BLOCK=1024", "bf16",
                            in && lnb[i][0] > 40 ? lnb[i][0] / 10 : lnb[i][0], lnb[i][1]);
    check_layernorm_bwd(&mods[M_LNB4096], arch, "layernorm_bwd bf16 BLOCK=4096", "bf16", in ? 5 : 300, 4096);
    check_layernorm_bwd(&mods[M_LNB4096], arch, "layernorm_bwd bf16 BLOCK=4096", "bf16", in ? 6 : 133, 4000);
    check_layernorm_bwd(&mods[M_LNB_F32], arch, "layernorm_bwd f32 G=3", "f32", in ? 13 : 37, 1000);
    check_layernorm_bwd(&mods[M_LNB_F32], arch, "layernorm_bwd f32 G=3", "f32", in ? 14 : 50, 1);
}

int main(int argc, char **argv)
{
    static const Harness h = { nl_src, "norm_loss.tile", specs, NMOD, run_all };
    return harness_main(&h, argc, argv);
}
