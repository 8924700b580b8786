/* gpu_gather_shape.c - register shape ops and indexed windows on the GPU
 * (docs/language.md, "Gather and scatter", "Indexing tiles",
 * "Concatenation, reshape and transpose"), exactly against C references:
 * slices of f32 rows, a concat swapping column halves, reshape + transpose
 * + reshape of a block's elements, a bf16 concat of row halves; gathers of
 * f32 rows through i32 and i64 ids (some outside the table: 0 or `other`)
 * and of bf16 rows (16-byte vectors), of rows not aligned to vectors (an odd
 * row length, an odd column offset: elements), a scatter of rows to
 * distinct ids (some outside: dropped);
 * examples/gather_rows.tile (gather_rows and scatter_rows, bf16, D = 256:
 * 16-byte vectors; the f32 kernels' 48-wide rows: elements).
 * Tails: row counts that are not multiples of the blocks' tiles. Outputs
 * start poisoned and are followed by a poisoned guard zone that must stay so.
 *
 *   gpu_gather_shape                 compile with TILEC_EXE into TILEC_WORK_DIR, then test
 *   gpu_gather_shape DIR             test precompiled DIR/ARCH/<module>.ptx + .meta
 *                                    (tests/gpu/make_ptx.sh writes them)
 *   gpu_gather_shape --print-source  the test's own kernels, for make_ptx.sh
 *   gpu_gather_shape --interp        the same checks on the IR interpreter
 *                                    (tilec_interpret; builds with the compiler)
 *
 * Exit 0 if every check passed, 77 without a CUDA driver or device (not in
 * --interp), 1 otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_harness.h"

static const char gs_src[] =
    "kernel shapes(X: global f32[M, 64], S: global f32[M, 32], C: global f32[M, 64], R: global f32[M, 64],\n"
    "              B: global bf16[M, 64], BB: global bf16[M, 64])\n"
    "  grid(cdiv(M, 16))\n"
    "{\n"
    "  let m0 = block.x * 16;\n"
    "  tile x = X[m0 : +16, :];\n"
    "  S[m0 : +16, :] = x[:, 8 : 40];\n"
    "  C[m0 : +16, :] = concat(x[:, 32 : +32], x[:, 0 : 32], 1);\n"
    "  R[m0 : +16, :] = reshape(transpose(reshape(x, [32, 32])), [16, 64]);\n"
    "  tile b = B[m0 : +16, :];\n"
    "  BB[m0 : +16, :] = concat(b[8 : 16, :], b[0 : +8, :], 0);\n"
    "}\n"
    "\n"
    "kernel gather(E: global f32[V, 48], I: global i32[N], J: global i64[N], Y: global f32[N, 48],\n"
    "              Z: global f32[N, 48], H: global bf16[V, 64], G: global bf16[N, 64], E2: global f32[V, 46],\n"
    "              Y2: global f32[N, 32], Y3: global f32[N, 32])\n"
    "  grid(cdiv(N, 32))\n"
    "{\n"
    "  let r0 = block.x * 32;\n"
    "  tile i = I[r0 : +32];\n"
    "  Y[r0 : +32, :] = E[i, :];\n"
    "  Z[r0 : +32, :] = load(E[J[r0 : +32], 0 : +48], -1.0);\n"
    "  G[r0 : +32, :] = H[i, :];\n"
    "  Y2[r0 : +32, :] = E2[i, 0 : +32];\n"
    "  Y3[r0 : +32, :] = E[i, 1 : +32];\n"
    "}\n"
    "\n"
    "kernel scatter(X: global f32[N, 48], I: global i32[N], Y: global f32[V, 48]) grid(cdiv(N, 32)) {\n"
    "  let r0 = block.x * 32;\n"
    "  Y[load(I[r0 : +32], -1), :] = X[r0 : +32, :];\n"
    "}\n";

/* The modules: this file's kernels and examples/gather_rows.tile. */

static const ModSpec specs[] = {
    { "gather_shape", NULL, "" },
    { "gather_rows", "gather_rows", "" },
};
enum { NMOD = sizeof specs / sizeof specs[0] };


static double val_at(const HostT *t, size_t i)
{
    if (esize(t->dt) == 2)
        return gpu_get(GPU_BF16, t->data, i);
    return f32_at(t, i);
}

/* ---- the checks ---- */

static int32_t i32_at(const HostT *t, size_t i)
{
    int32_t v;
    memcpy(&v, t->data + 4 * i, 4);
    return v;
}

static int64_t i64_at(const HostT *t, size_t i)
{
    int64_t v;
    memcpy(&v, t->data + 8 * i, 8);
    return v;
}

static void set_i32(HostT *t, size_t i, int32_t v) { memcpy(t->data + 4 * i, &v, 4); }
static void set_i64(HostT *t, size_t i, int64_t v) { memcpy(t->data + 8 * i, &v, 8); }

/* x[r][c] of an [rows, n] tensor, 0 past the rows (a masked tile row). */
static double at_or0(const HostT *t, int64_t r, int64_t c, int64_t rows, int64_t n)
{
    return r < rows ? val_at(t, (size_t)(r * n + c)) : 0.0;
}

static void check_shapes(Mod *m, const char *arch, int64_t rows)
{
    char label[128];
    snprintf(label, sizeof label, "%s slice/concat/reshape %lldx64", arch, (long long)rows);
    gpu_context("%s", label);
    HostT x = host_t("f32", 2, rows, 64), s = host_t("f32", 2, rows, 32), c = host_t("f32", 2, rows, 64);
    HostT r = host_t("f32", 2, rows, 64), b = host_t("bf16", 2, rows, 64), bb = host_t("bf16", 2, rows, 64);
    fill(&x, 4);
    fill(&b, 4);
    Arg a[6] = { { &x, 0, 0, false }, { &s, 0, 0, false }, { &c, 0, 0, false }, { &r, 0, 0, false },
                 { &b, 0, 0, false }, { &bb, 0, 0, false } };
    bool ok = run_kernel(m, "shapes", a, 6, label);
    int64_t bad = 0;
    for (int64_t i = 0; ok && i < rows; i++) {
        int64_t m0 = i / 16 * 16, ri = i - m0;
        for (int64_t j = 0; j < 64; j++) {
            size_t k = (size_t)(i * 64 + j);
            if (j < 32)
                bad += val_at(&s, (size_t)(i * 32 + j)) != val_at(&x, k - (size_t)j + (size_t)(j + 8));
            bad += val_at(&c, k) != val_at(&x, (size_t)(i * 64 + (j + 32) % 64));
            int64_t f = ri * 64 + j, src = (f % 32) * 32 + f / 32;   /* the block's element order */
            bad += val_at(&r, k) != at_or0(&x, m0 + src / 64, src % 64, rows, 64);
            int64_t sr = ri < 8 ? ri + 8 : ri - 8;
            bad += val_at(&bb, k) != at_or0(&b, m0 + sr, j, rows, 64);
        }
    }
    gpu_result(ok && bad == 0, "%s: %lld elements wrong", label, (long long)bad);
    free(x.data), free(s.data), free(c.data), free(r.data), free(b.data), free(bb.data);
}

static void check_gather(Mod *m, const char *arch, int64_t n, int64_t v)
{
    char label[128];
    snprintf(label, sizeof label, "%s gather N=%lld V=%lld", arch, (long long)n, (long long)v);
    gpu_context("%s", label);
    HostT e = host_t("f32", 2, v, 48), ids = host_t("i32", 1, n, 0), jds = host_t("i64", 1, n, 0);
    HostT y = host_t("f32", 2, n, 48), z = host_t("f32", 2, n, 48), h = host_t("bf16", 2, v, 64);
    HostT g = host_t("bf16", 2, n, 64), e2 = host_t("f32", 2, v, 46), y2 = host_t("f32", 2, n, 32);
    HostT y3 = host_t("f32", 2, n, 32);
    fill(&e, 4);
    fill(&h, 4);
    fill(&e2, 4);
    for (int64_t t = 0; t < n; t++) {
        int32_t id = (int32_t)(fabsf(gpu_frand(1.0f)) * (float)(v + 4)) - 2;   /* -2 .. v+1 */
        set_i32(&ids, (size_t)t, id);
        set_i64(&jds, (size_t)t, t % 5 == 4 ? ((int64_t)1 << 32) + id : (int64_t)id);
    }
    Arg a[10] = { { &e, 0, 0, false }, { &ids, 0, 0, false }, { &jds, 0, 0, false }, { &y, 0, 0, false },
                  { &z, 0, 0, false }, { &h, 0, 0, false }, { &g, 0, 0, false }, { &e2, 0, 0, false },
                  { &y2, 0, 0, false }, { &y3, 0, 0, false } };
    bool ok = run_kernel(m, "gather", a, 10, label);
    int64_t bad = 0;
    for (int64_t t = 0; ok && t < n; t++) {
        int64_t id = i32_at(&ids, (size_t)t), jd = i64_at(&jds, (size_t)t);
        bool in = id >= 0 && id < v, jn = jd >= 0 && jd < v;
        for (int64_t j = 0; j < 48; j++) {
            bad += val_at(&y, (size_t)(t * 48 + j)) != (in ? val_at(&e, (size_t)(id * 48 + j)) : 0.0);
            bad += val_at(&z, (size_t)(t * 48 + j)) != (jn ? val_at(&e, (size_t)(jd * 48 + j)) : -1.0);
        }
        for (int64_t j = 0; j < 64; j++)
            bad += val_at(&g, (size_t)(t * 64 + j)) != (in ? val_at(&h, (size_t)(id * 64 + j)) : 0.0);
        for (int64_t j = 0; j < 32; j++) {   /* rows not aligned to vectors: elements */
            bad += val_at(&y2, (size_t)(t * 32 + j)) != (in ? val_at(&e2, (size_t)(id * 46 + j)) : 0.0);
            bad += val_at(&y3, (size_t)(t * 32 + j)) != (in ? val_at(&e, (size_t)(id * 48 + 1 + j)) : 0.0);
        }
    }
    gpu_result(ok && bad == 0, "%s: %lld elements wrong", label, (long long)bad);
    free(e.data), free(ids.data), free(jds.data), free(y.data), free(z.data), free(h.data), free(g.data);
    free(e2.data), free(y2.data), free(y3.data);
}

/* Distinct ids: row t goes to (t * 7 + 3) mod (v + 3) - 1, every third id moved past the table. */
static int32_t scatter_id(int64_t t, int64_t v)
{
    return t % 3 == 2 ? (int32_t)(v + t) : (int32_t)((t * 7 + 3) % (v + 3)) - 1;
}

static void check_scatter(Mod *m, const char *arch, const char *kernel, const char *dt, int64_t d, int64_t n,
                          int64_t v)
{
    char label[128];
    snprintf(label, sizeof label, "%s %s %s N=%lld V=%lld", arch, kernel, dt, (long long)n, (long long)v);
    gpu_context("%s", label);
    HostT x = host_t(dt, 2, n, d), ids = host_t("i32", 1, n, 0), y = host_t(dt, 2, v, d);
    fill(&x, 4);
    fill(&y, 4);
    int64_t vd = v * d;
    double *want = calloc((size_t)vd, sizeof(double));
    for (int64_t k = 0; k < vd; k++)
        want[k] = val_at(&y, (size_t)k);
    for (int64_t t = 0; t < n; t++) {
        int32_t id = scatter_id(t, v);
        for (int64_t u = 0; u < t && id >= 0; u++)
            if (scatter_id(u, v) == id)
                id = -1;   /* keep the ids distinct */
        set_i32(&ids, (size_t)t, id);
        for (int64_t j = 0; id >= 0 && id < v && j < d; j++)
            want[id * d + j] = val_at(&x, (size_t)(t * d + j));
    }
    Arg a[3] = { { &x, 0, 0, false }, { &ids, 0, 0, false }, { &y, 0, 0, false } };
    bool ok = run_kernel(m, kernel, a, 3, label);
    int64_t bad = 0;
    for (int64_t k = 0; ok && k < vd; k++)
        bad += val_at(&y, (size_t)k) != want[k];
    gpu_result(ok && bad == 0, "%s: %lld elements wrong", label, (long long)bad);
    free(want);
    free(x.data), free(ids.data), free(y.data);
}

/* examples/gather_rows.tile's gather_rows: bf16, D = 256. */
static void check_gather_rows(Mod *m, const char *arch, int64_t n, int64_t v)
{
    char label[128];
    snprintf(label, sizeof label, "%s examples/gather_rows N=%lld V=%lld", arch, (long long)n, (long long)v);
    gpu_context("%s", label);
    HostT e = host_t("bf16", 2, v, 256), ids = host_t("i32", 1, n, 0), y = host_t("bf16", 2, n, 256);
    fill(&e, 4);
    for (int64_t t = 0; t < n; t++)
        set_i32(&ids, (size_t)t, (int32_t)(fabsf(gpu_frand(1.0f)) * (float)(v + 2)) - 1);
    Arg a[3] = { { &e, 0, 0, false }, { &ids, 0, 0, false }, { &y, 0, 0, false } };
    bool ok = run_kernel(m, "gather_rows", a, 3, label);
    int64_t bad = 0;
    for (int64_t t = 0; ok && t < n; t++) {
        int64_t id = i32_at(&ids, (size_t)t);
        for (int64_t j = 0; j < 256; j++)
            bad += val_at(&y, (size_t)(t * 256 + j)) != (id >= 0 && id < v ? val_at(&e, (size_t)(id * 256 + j)) : 0.0);
    }
    gpu_result(ok && bad == 0, "%s: %lld elements wrong", label, (long long)bad);
    free(e.data), free(ids.data), free(y.data);
}

static void run_all(Mod *mods, const char *arch)
{
    static const int64_t rows[] = { 1, 16, 45, 200 };
    for (int i = 0; i < 4; i++)
        check_shapes(&mods[0], arch, rows[i]);
    static const int64_t nv[][2] = { { 1, 1 }, { 32, 7 }, { 77, 50 }, { 1000, 333 } };
    for (int i = 0; i < 4; i++) {
        check_gather(&mods[0], arch, nv[i][0], nv[i][1]);
        check_scatter(&mods[0], arch, "scatter", "f32", 48, nv[i][0], nv[i][1]);
        check_gather_rows(&mods[1], arch, nv[i][0], nv[i][1]);
        check_scatter(&mods[1], arch, "scatter_rows", "bf16", 256, nv[i][0], nv[i][1]);
    }
}

int main(int argc, char **argv)
{
    static const Harness h = { gs_src, "gather_shape.tile", specs, NMOD, run_all };
    return harness_main(&h, argc, argv);
}
