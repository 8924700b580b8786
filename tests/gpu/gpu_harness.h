/* gpu_harness.h - what the GPU tests of the language's ops share: host
 * tensors with poisoned outputs and guard zones, a kernel run on the GPU
 * (tilert, every CUDA call checked) or on the IR interpreter
 * (tilec_interpret), and the test's main: compile its own kernels and
 * examples with TILEC_EXE (or take DIR/ARCH/<module>.ptx), run its checks
 * per arch, `--print-source`, `--list-modules`, `--interp`. Included by one test file each
 * (its compile definitions TILEC_EXE, TILEC_WORK_DIR, TILEC_EXAMPLES,
 * TILEC_INTERP decide what is built). */
#ifndef TILEC_GPU_HARNESS_H
#define TILEC_GPU_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"
#ifdef TILEC_INTERP
#include "tilec.h"
#endif

/* A module of the test: its own kernels or an example. */
typedef struct ModSpec {
    const char *name;     /* DIR/ARCH/<name>.ptx */
    const char *example;  /* examples/<example>.tile, or NULL: the test's source */
    const char *defs;     /* -D options */
} ModSpec;

/* ---- running a kernel on host arrays: GPU or interpreter ---- */

enum { GUARD = 64, MAXARGS = 12 };

typedef struct HostT {
    const char *dt;        /* "f32", "bf16", "f16", "i32", "i64", "u32", "i8", "f8e4m3", "f8e5m2" */
    int rank;
    int64_t shape[4];      /* host_t: rank 1 or 2; host_tn: up to 4 */
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
    if (!strcmp(dt, "i8") || !strcmp(dt, "f8e4m3") || !strcmp(dt, "f8e5m2"))
        return 1;
    return strcmp(dt, "bf16") == 0 || strcmp(dt, "f16") == 0 ? 2 : strcmp(dt, "i64") == 0 ? 8 : 4;
}
static size_t numel(const HostT *t)
{
    size_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= (size_t)t->shape[d];
    return n;
}

/* A poisoned tensor (0xff bytes, one element more than it holds) of rank
 * 1 to 4. */
static HostT host_tn(const char *dt, int rank, const int64_t *shape)
{
    HostT t = { dt, rank, { 1, 1, 1, 1 }, NULL };
    memcpy(t.shape, shape, sizeof(int64_t) * (size_t)rank);
    t.data = gpu_calloc(numel(&t) + 1, esize(dt));
    memset(t.data, 0xff, (numel(&t) + 1) * esize(dt));
    return t;
}

/* host_tn of rank 1 ([m]) or 2 ([m, n]). */
static HostT host_t(const char *dt, int rank, int64_t m, int64_t n)
{
    int64_t shape[2] = { m, n };
    return host_tn(dt, rank, shape);
}

static DLDataType dl_of(const char *dt)
{
    DLDataType d = { kDLFloat, 32, 1 };
    if (!strcmp(dt, "bf16"))
        d.code = kDLBfloat, d.bits = 16;
    else if (!strcmp(dt, "f16"))
        d.bits = 16;
    else if (!strcmp(dt, "i32"))
        d.code = kDLInt;
    else if (!strcmp(dt, "i64"))
        d.code = kDLInt, d.bits = 64;
    else if (!strcmp(dt, "u32"))
        d.code = kDLUInt;
    else if (!strcmp(dt, "i8"))
        d.code = kDLInt, d.bits = 8;
    else if (!strcmp(dt, "f8e4m3") || !strcmp(dt, "f8e5m2"))
        d.code = kDLUInt, d.bits = 8;   /* f8 travels as its bytes */
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

enum { HARNESS_MAXMODS = 8 };

/* The test: its kernels' source (written to TILEC_WORK_DIR/file), its
 * modules and the checks to run on them for an arch ("interp" with
 * --interp). */
typedef struct Harness {
    const char *src, *file;
    const ModSpec *specs;
    int nmod;
    void (*run_all)(Mod *mods, const char *arch);
} Harness;


static void source_path(const Harness *h, const ModSpec *s, char *src, size_t len)
{
#if defined(TILEC_EXAMPLES) && defined(TILEC_WORK_DIR)
    if (s->example) {
        snprintf(src, len, "%s/%s.tile", TILEC_EXAMPLES, s->example);
        return;
    }
    snprintf(src, len, "%s/%s", TILEC_WORK_DIR, h->file);
    FILE *f = fopen(src, "w");
    if (!f || fputs(h->src, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", src);
        exit(1);
    }
#else
    (void)h, (void)s, (void)src, (void)len;
    fprintf(stderr, "built without TILEC_EXAMPLES and TILEC_WORK_DIR\n");
    exit(1);
#endif
}

#ifdef TILEC_INTERP
static int interp_main(const Harness *h)
{
    Mod mods[HARNESS_MAXMODS];
    int nmod = h->nmod;
    printf("interpreter, seed %llu\n", (unsigned long long)gpu_seed());
    for (int i = 0; i < nmod; i++) {
        char src[4096];
        source_path(h, &h->specs[i], src, sizeof src);
        tilec_options o;
        tilec_options_init(&o);
        o.keep_ir = 1;
        /* "-DNAME=VALUE ... [--pass-option NAME=VALUE ...]": the words'
         * defines; a pass option changes how the GPU computes, not what
         * the interpreter does, so it and its value are passed over */
        enum { MAXDEFS = 8 };
        char words[256];
        tilec_define d[MAXDEFS];
        size_t nd = 0;
        bool skip = false;
        snprintf(words, sizeof words, "%s", h->specs[i].defs);
        for (char *w = words, *next; *w; w = next) {
            while (*w == ' ')
                w++;
            if (!*w)
                break;
            next = w + strcspn(w, " ");
            if (*next)
                *next++ = '\0';
            if (skip || strcmp(w, "--pass-option") == 0) {
                skip = !skip;
                continue;
            }
            char *eq = strchr(w, '=');
            if (strncmp(w, "-D", 2) != 0 || !eq || nd == MAXDEFS) {
                printf("%s: cannot read the define '%s'\n", h->specs[i].name, w);
                return 1;
            }
            *eq = '\0';
            d[nd].name = w + 2;
            d[nd].value = eq + 1;
            nd++;
        }
        o.defines = nd ? d : NULL;
        o.ndefines = nd;
        if (tilec_compile_file(src, &o, &mods[i].ir) != TILEC_OK) {
            printf("%s: %s\n", src, mods[i].ir ? tilec_result_diag_text(mods[i].ir) : "?");
            return 1;
        }
        mods[i].rt = NULL;
    }
    interp_mode = true;
    h->run_all(mods, "interp");
    for (int i = 0; i < nmod; i++)
        tilec_result_free(mods[i].ir);
    return gpu_summary();
}
#endif

static int harness_main(const Harness *h, int argc, char **argv)
{
    int nmod = h->nmod;
    if (nmod > HARNESS_MAXMODS) {
        fprintf(stderr, "%d modules: at most %d\n", nmod, HARNESS_MAXMODS);
        return 1;
    }
    if (argc == 2 && strcmp(argv[1], "--print-source") == 0) {
        fputs(h->src, stdout);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--list-modules") == 0) {   /* "NAME EXAMPLE|- DEFINES...": make_ptx.sh */
        for (int i = 0; i < nmod; i++)
            printf("%s %s %s\n", h->specs[i].name, h->specs[i].example ? h->specs[i].example : "-",
                   h->specs[i].defs);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--interp") == 0) {
#ifdef TILEC_INTERP
        return interp_main(h);
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
        Mod mods[HARNESS_MAXMODS];
        bool have = true;
        for (int i = 0; i < nmod && have; i++) {
            char ptx[4096], meta[4096];
            if (dir) {
                snprintf(ptx, sizeof ptx, "%s/%s/%s.ptx", dir, ga.list[ai], h->specs[i].name);
                snprintf(meta, sizeof meta, "%s/%s/%s.meta", dir, ga.list[ai], h->specs[i].name);
                FILE *f = fopen(ptx, "r");
                have = f != NULL;
                if (f)
                    fclose(f);
                else
                    printf("== %s: no %s, not tested\n", ga.list[ai], ptx);
            } else {
#ifdef TILEC_EXE
                char src[4096], cmd[16384];
                source_path(h, &h->specs[i], src, sizeof src);
                snprintf(ptx, sizeof ptx, "%s/%s_%s.ptx", TILEC_WORK_DIR, h->specs[i].name, ga.list[ai]);
                snprintf(meta, sizeof meta, "%s/%s_%s.meta", TILEC_WORK_DIR, h->specs[i].name, ga.list[ai]);
                snprintf(cmd, sizeof cmd, "'%s' '%s' -arch=%s %s -o '%s'", TILEC_EXE, src, ga.list[ai], h->specs[i].defs,
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
        h->run_all(mods, ga.list[ai]);
        for (int i = 0; i < nmod; i++)
            tilert_module_free(mods[i].rt);
    }
    GPU_RT(tilert_synchronize(drv));
    tilert_driver_close(drv);
    return gpu_summary();
}

#endif
