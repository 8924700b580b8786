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
#include "gpu_util.h"
#ifdef TILEC_INTERP
#include "tilec.h"
#endif

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
typedef struct ModSpec {
    const char *name;     /* DIR/ARCH/<name>.ptx */
    const char *example;  /* examples/<example>.tile, or NULL: gs_src */
    const char *defs;     /* -D options */
} ModSpec;

static const ModSpec specs[] = {
    { "gather_shape", NULL, "" },
    { "gather_rows", "gather_rows", "" },
};
enum { NMOD = sizeof specs / sizeof specs[0] };

/* ---- running a kernel on host arrays: GPU or interpreter ---- */

enum { GUARD = 64, MAXARGS = 12 };

typedef struct HostT {
    const char *dt;        /* "f32", "bf16", "i32", "i64", "u32" */
    int rank;
    int64_t shape[2];
    unsigned char *data;   /* numel elements; outputs start poisoned (0xff) */
} HostT;

typedef struct Arg {
    HostT *t;              /* a tensor, or NULL: the scalar i */
    int64_t i;
    double f;
    bool isf;
} Arg;

typedef struct Mod {
    tilert_module *rt;
#ifdef TILEC_INTERP
    tilec_result *ir;
#endif
} Mod;

static bool interp_mode;

static size_t esize(const char *dt)
{
    return strcmp(dt, "bf16") == 0 || strcmp(dt, "f16") == 0 ? 2 : strcmp(dt, "i64") == 0 ? 8 : 4;
}
static size_t numel(const HostT *t) { return (size_t)(t->rank == 1 ? t->shape[0] : t->shape[0] * t->shape[1]); }

static HostT host_t(const char *dt, int rank, int64_t m, int64_t n)
{
    HostT t = { dt, rank, { m, n }, NULL };
    t.data = gpu_calloc(numel(&t) + 1, esize(dt));
    memset(t.data, 0xff, (numel(&t) + 1) * esize(dt));
    return t;
}

static DLDataType dl_of(const char *dt)
{
    DLDataType d = { kDLFloat, 32, 1 };
    if (!strcmp(dt, "bf16"))
        d.code = kDLBfloat, d.bits = 16;
    else if (!strcmp(dt, "i32"))
        d.code = kDLInt;
    else if (!strcmp(dt, "i64"))
        d.code = kDLInt, d.bits = 64;
    else if (!strcmp(dt, "u32"))
        d.code = kDLUInt;
    return d;
}

/* Runs kernel k of m on the arguments; tensors come back into their host
 * arrays. False (printed) when the launch fails or a guard zone was written. */
static bool run_kernel(Mod *m, const char *k, Arg *a, int n, const char *label)
{
    if (n > MAXARGS) {
        printf("%s: %d arguments (at most %d)\n", label, n, MAXARGS);
        return false;
    }
#ifdef TILEC_INTERP
    if (interp_mode) {
        tilec_arg ta[MAXARGS];
        memset(ta, 0, sizeof ta);
        for (int i = 0; i < n; i++) {
            if (a[i].t) {
                ta[i].data = a[i].t->data;
                ta[i].rank = a[i].t->rank;
                ta[i].shape = a[i].t->shape;
                ta[i].dtype = a[i].t->dt;
            } else {
                ta[i].i = a[i].i;
                ta[i].f = a[i].f;
            }
        }
        tilec_result *out = NULL;
        tilec_status st = tilec_interpret(m->ir, k, ta, (size_t)n, &out);
        if (st != TILEC_OK)
            printf("%s: the interpreter failed: %s\n", label, out ? tilec_result_diag_text(out) : "?");
        tilec_result_free(out);
        return st == TILEC_OK;
    }
#endif
    tilert_kernel *kern = NULL;
    if (tilert_module_get_kernel(m->rt, k, &kern) != TILERT_OK) {
        printf("%s: no kernel %s\n", label, k);
        return false;
    }
    tilert_arg ra[MAXARGS];
    DLTensor dl[MAXARGS];
    CUdeviceptr dev[MAXARGS] = { 0 };
    unsigned char *stage[MAXARGS] = { NULL };
    for (int i = 0; i < n; i++) {
        if (!a[i].t) {
            ra[i] = a[i].isf ? (tilert_arg){ TILERT_ARG_FLOAT, { .f = a[i].f } }
                             : (tilert_arg){ TILERT_ARG_INT, { .i = a[i].i } };
            continue;
        }
        size_t bytes = numel(a[i].t) * esize(a[i].t->dt), all = bytes + GUARD * 4;
        stage[i] = gpu_calloc(all, 1);
        memcpy(stage[i], a[i].t->data, bytes);
        memset(stage[i] + bytes, 0xff, all - bytes);
        GPU_CU(gpu_cu.MemAlloc(&dev[i], all));
        GPU_CU(gpu_cu.HtoD(dev[i], stage[i], all));
        memset(&dl[i], 0, sizeof dl[i]);
        dl[i].data = (void *)(uintptr_t)dev[i];
        dl[i].device.device_type = kDLCUDA;
        dl[i].ndim = a[i].t->rank;
        dl[i].dtype = dl_of(a[i].t->dt);
        dl[i].shape = a[i].t->shape;
        ra[i] = (tilert_arg){ TILERT_ARG_TENSOR, { .tensor = &dl[i] } };
    }
    GPU_RT(tilert_launch(kern, ra, (size_t)n, NULL));
    GPU_CU(gpu_cu.CtxSynchronize());
    bool ok = true;
    for (int i = 0; i < n; i++) {
        if (!a[i].t)
            continue;
        size_t bytes = numel(a[i].t) * esize(a[i].t->dt), all = bytes + GUARD * 4;
        GPU_CU(gpu_cu.DtoH(stage[i], dev[i], all));
        for (size_t b = bytes; b < all; b++)
            if (stage[i][b] != 0xff) {
                printf("%s: argument %d written past its end (byte %zu)\n", label, i, b - bytes);
                ok = false;
                break;
            }
        memcpy(a[i].t->data, stage[i], bytes);
        GPU_CU(gpu_cu.MemFree(dev[i]));
        free(stage[i]);
    }
    return ok;
}

static float f32_at(const HostT *t, size_t i)
{
    float v;
    memcpy(&v, t->data + 4 * i, 4);
    return v;
}

static double val_at(const HostT *t, size_t i)
{
    if (esize(t->dt) == 2)
        return gpu_get(GPU_BF16, t->data, i);
    return f32_at(t, i);
}

static void set_f32(HostT *t, size_t i, float v)
{
    if (esize(t->dt) == 2)
        gpu_set(GPU_BF16, t->data, i, v);
    else
        memcpy(t->data + 4 * i, &v, 4);
}

static void fill(HostT *t, float scale)
{
    for (size_t i = 0; i < numel(t); i++)
        set_f32(t, i, gpu_frand(scale));
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

/* ---- modules ---- */

static void source_path(const ModSpec *s, char *src, size_t len)
{
#if defined(TILEC_EXAMPLES) && defined(TILEC_WORK_DIR)
    if (s->example) {
        snprintf(src, len, "%s/%s.tile", TILEC_EXAMPLES, s->example);
        return;
    }
    snprintf(src, len, "%s/gather_shape.tile", TILEC_WORK_DIR);
    FILE *f = fopen(src, "w");
    if (!f || fputs(gs_src, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", src);
        exit(1);
    }
#else
    (void)s, (void)src, (void)len;
    fprintf(stderr, "built without TILEC_EXAMPLES and TILEC_WORK_DIR\n");
    exit(1);
#endif
}

#ifdef TILEC_INTERP
static int interp_main(void)
{
    Mod mods[NMOD];
    printf("interpreter, seed %llu\n", (unsigned long long)gpu_seed());
    for (int i = 0; i < NMOD; i++) {
        char src[4096];
        source_path(&specs[i], src, sizeof src);
        tilec_options o;
        tilec_options_init(&o);
        o.keep_ir = 1;
        const char *def = strchr(specs[i].defs, '=');
        char name[32] = { 0 };
        tilec_define d;
        if (def) {   /* "-DNAME=VALUE" */
            snprintf(name, sizeof name, "%.*s", (int)(def - specs[i].defs - 2), specs[i].defs + 2);
            d.name = name;
            d.value = def + 1;
            o.defines = &d;
            o.ndefines = 1;
        }
        if (tilec_compile_file(src, &o, &mods[i].ir) != TILEC_OK) {
            printf("%s: %s\n", src, mods[i].ir ? tilec_result_diag_text(mods[i].ir) : "?");
            return 1;
        }
        mods[i].rt = NULL;
    }
    interp_mode = true;
    run_all(mods, "interp");
    for (int i = 0; i < NMOD; i++)
        tilec_result_free(mods[i].ir);
    return gpu_summary();
}
#endif

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--print-source") == 0) {
        fputs(gs_src, stdout);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--interp") == 0) {
#ifdef TILEC_INTERP
        return interp_main();
#else
        fprintf(stderr, "built without the compiler: no --interp\n");
        return 1;
#endif
    }
    const char *dir = argc == 2 ? argv[1] : NULL;
    gpu_archs ga;
    tilert_driver *drv = gpu_test_open(&ga);   /* exits 77 without a GPU */
    bool ctx = false;
    for (int ai = 0; ai < ga.n; ai++) {
        Mod mods[NMOD];
        bool have = true;
        for (int i = 0; i < NMOD && have; i++) {
            char ptx[4096], meta[4096];
            if (dir) {
                snprintf(ptx, sizeof ptx, "%s/%s/%s.ptx", dir, ga.list[ai], specs[i].name);
                snprintf(meta, sizeof meta, "%s/%s/%s.meta", dir, ga.list[ai], specs[i].name);
                FILE *f = fopen(ptx, "r");
                have = f != NULL;
                if (f)
                    fclose(f);
                else
                    printf("== %s: no %s, not tested\n", ga.list[ai], ptx);
            } else {
#ifdef TILEC_EXE
                char src[4096], cmd[16384];
                source_path(&specs[i], src, sizeof src);
                snprintf(ptx, sizeof ptx, "%s/%s_%s.ptx", TILEC_WORK_DIR, specs[i].name, ga.list[ai]);
                snprintf(meta, sizeof meta, "%s/%s_%s.meta", TILEC_WORK_DIR, specs[i].name, ga.list[ai]);
                snprintf(cmd, sizeof cmd, "'%s' '%s' -arch=%s %s -o '%s'", TILEC_EXE, src, ga.list[ai], specs[i].defs,
                         ptx);
                gpu_run_tilec(cmd);
#else
                fprintf(stderr, "built without TILEC_EXE\n");
                return 1;
#endif
            }
            if (have && !gpu_load_module(drv, ptx, meta, &mods[i].rt))
                return 1;
        }
        if (!have)
            continue;
        if (!ctx) {
            gpu_cuda_init();
            ctx = true;
        }
        run_all(mods, ga.list[ai]);
        for (int i = 0; i < NMOD; i++)
            tilert_module_free(mods[i].rt);
    }
    GPU_RT(tilert_synchronize(drv));
    tilert_driver_close(drv);
    return gpu_summary();
}
