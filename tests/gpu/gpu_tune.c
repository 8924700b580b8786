/* gpu_tune.c - autotuning on the GPU (docs/runtime.md, "Autotuning"):
 * tilert_tune times two kernels of one computation, Z = X, one of them
 * made slow on purpose (a loop of REP exact steps), and must pick the fast
 * one whichever order they come in, with consistent times and the outputs
 * right afterwards; then the four candidates the compiler lists for
 * examples/gemm.tile (compiled with tiles.candidate=I for the device's
 * arch) are tuned on a 512^3 bf16 product and the winner's result is
 * checked against a C reference. Also the refusals that need a GPU, the
 * shape class of real arguments and the device's name.
 *
 *   gpu_tune                 compile with TILEC_EXE into TILEC_WORK_DIR, then test
 *   gpu_tune DIR             test precompiled DIR/ARCH/tune.ptx and
 *                            DIR/ARCH/gemm_cand_I.ptx (+ .meta; tests/gpu/make_ptx.sh)
 *   gpu_tune --print-source  the Z = X kernels' source, for make_ptx.sh
 *
 * Exit 0 if every check passed, 77 without a CUDA driver or device, 1
 * otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_util.h"

static const char tune_src[] =
    "kernel tune_fast<BLOCK: int = 256>(X: global f32[N], Z: global f32[N])\n"
    "  grid(cdiv(N, BLOCK))\n"
    "{\n"
    "  let i = block.x * BLOCK;\n"
    "  Z[i : +BLOCK] = X[i : +BLOCK];\n"
    "}\n"
    "\n"
    "kernel tune_slow<BLOCK: int = 256, REP: int = 512>(X: global f32[N], Z: global f32[N])\n"
    "  grid(cdiv(N, BLOCK))\n"
    "{\n"
    "  let i = block.x * BLOCK;\n"
    "  tile x: reg f32[BLOCK] = X[i : +BLOCK];\n"
    "  tile acc: reg f32[BLOCK] = x;\n"
    "  for r in 0 .. REP { acc = acc * 0.5 + x * 0.5; }\n"   /* exact: acc stays x */
    "  Z[i : +BLOCK] = acc;\n"
    "}\n";

#define NCAND 4   /* examples/gemm.tile's candidates on every target (tests/unit/test_tune.c) */
#ifndef TILEC_GEMM
#define TILEC_GEMM "examples/gemm.tile"
#endif

/* PTX + metadata paths of module `name` for arch: DIR/ARCH/NAME.ptx, or
 * compiled now into TILEC_WORK_DIR (with `extra` tilec arguments) from
 * `src` (a path) or, when NULL, tune_src. */
static void module_paths(const char *dir, const char *arch, const char *name, const char *src, const char *extra,
                         char *ptx, char *meta, size_t len)
{
    if (dir) {
        snprintf(ptx, len, "%s/%s/%s.ptx", dir, arch, name);
        snprintf(meta, len, "%s/%s/%s.meta", dir, arch, name);
        return;
    }
#if defined(TILEC_EXE) && defined(TILEC_WORK_DIR)
    char file[4096], cmd[16384];
    if (!src) {
        snprintf(file, sizeof file, "%s/tune.tile", TILEC_WORK_DIR);
        FILE *f = fopen(file, "w");
        if (!f || fputs(tune_src, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", file);
            exit(1);
        }
        src = file;
    }
    snprintf(ptx, len, "%s/%s_%s.ptx", TILEC_WORK_DIR, name, arch);
    snprintf(meta, len, "%s/%s_%s.meta", TILEC_WORK_DIR, name, arch);
    snprintf(cmd, sizeof cmd, "'%s' '%s' -arch=%s %s -o '%s'", TILEC_EXE, src, arch, extra, ptx);
    gpu_run_tilec(cmd);
#else
    (void)arch; (void)name; (void)src; (void)extra; (void)ptx; (void)meta; (void)len;
    fprintf(stderr, "built without TILEC_EXE\n");
    exit(1);
#endif
}

static void test_copy(tilert_driver *drv, tilert_module *mod)
{
    tilert_kernel *fast = NULL, *slow = NULL;
    GPU_RT(tilert_module_get_kernel(mod, "tune_fast", &fast));
    GPU_RT(tilert_module_get_kernel(mod, "tune_slow", &slow));
    const size_t n = (size_t)1 << 22;
    gpu_buf x = gpu_input(GPU_F32, n, 100), z = gpu_output(GPU_F32, n);
    int64_t shape = (int64_t)n;
    DLTensor tx = gpu_tensor(&x, 1, &shape), tz = gpu_tensor(&z, 1, &shape);
    tilert_arg args[2] = { { TILERT_ARG_TENSOR, { .tensor = &tx } }, { TILERT_ARG_TENSOR, { .tensor = &tz } } };
    for (int order = 0; order < 2; order++) {
        gpu_context("tilert_tune, the fast kernel %s", order ? "second" : "first");
        tilert_kernel *ks[2] = { order ? slow : fast, order ? fast : slow };
        tilert_tune_result res;
        GPU_RT(tilert_tune(ks, 2, args, 2, NULL, NULL, &res));
        size_t f = (size_t)order, s = 1 - f;
        printf("  %s: %.4f ms (best round %.4f), %s: %.4f ms (%.4f); %d launches x %d rounds, %.1f ms wall\n",
               tilert_kernel_name(ks[0]), res.ms[0], res.min_ms[0], tilert_kernel_name(ks[1]), res.ms[1],
               res.min_ms[1], res.launches, res.rounds, res.wall_ms);
        gpu_result(res.n == 2 && res.best == f, "the fast kernel wins (candidate %zu of 2, want %zu)", res.best, f);
        gpu_result(res.ms[f] > 0 && res.ms[s] > 2 * res.ms[f] && res.min_ms[f] <= res.ms[f] &&
                       res.min_ms[s] <= res.ms[s],
                   "times: the slow one more than twice the fast one, each best round no slower than its median");
        gpu_result(res.rounds == 5 && res.launches >= 1 && res.launches <= 200 && res.wall_ms > 0,
                   "rounds %d, launches %d, wall %.1f ms", res.rounds, res.launches, res.wall_ms);
    }
    double *got = gpu_calloc(n, sizeof *got);
    gpu_result(gpu_fetch(&z, got, "Z"), "outputs written");
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += got[i] != gpu_get(GPU_F32, x.host, i);
    gpu_result(bad == 0, "Z == X after tuning (%zu elements differ)", bad);
    /* a budget of 0: one launch a round, still a decision */
    tilert_tune_options o;
    tilert_tune_options_init(&o);
    o.budget_ms = 0;
    o.rounds = 3;
    o.warmup = 1;
    tilert_tune_result res;
    tilert_kernel *one[2] = { slow, fast };
    GPU_RT(tilert_tune(one, 2, args, 2, NULL, &o, &res));
    gpu_result(res.launches == 1 && res.rounds == 3 && res.best == 1, "budget 0: 1 launch x 3 rounds, best %zu",
               res.best);
    /* one candidate: timed all the same */
    GPU_RT(tilert_tune(one + 1, 1, args, 2, NULL, NULL, &res));
    gpu_result(res.n == 1 && res.best == 0 && res.ms[0] > 0, "one candidate");
    /* arguments a candidate refuses: named, nothing launched */
    int64_t other = (int64_t)n - 1;
    DLTensor tz2 = gpu_tensor(&z, 1, &other);
    tilert_arg bad_args[2] = { { TILERT_ARG_TENSOR, { .tensor = &tx } }, { TILERT_ARG_TENSOR, { .tensor = &tz2 } } };
    tilert_status st = tilert_tune(one, 2, bad_args, 2, NULL, NULL, &res);
    gpu_result(st == TILERT_ERR_ARGS && strstr(tilert_last_error(), "candidate 0 (kernel tune_slow)") != NULL,
               "refused arguments name the candidate: %s", tilert_last_error());
    char cls[64], name[256];
    GPU_RT(tilert_shape_class(fast, args, 2, cls, sizeof cls));
    gpu_result(strcmp(cls, "N=4194304") == 0, "shape class %s", cls);
    GPU_RT(tilert_device_name(drv, 0, name, sizeof name));
    gpu_result(name[0] != 0, "device name '%s'", name);
    free(got);
    gpu_free(&x);
    gpu_free(&z);
}

/* The compiler's candidates for the GEMM, tuned on a 512^3 bf16 product. */
static void test_gemm(tilert_driver *drv, const char *dir, const char *arch)
{
    (void)drv;
    const int64_t m = 512, nn = 512, k = 512;
    tilert_module *mods[NCAND];
    tilert_kernel *ks[NCAND];
    for (int i = 0; i < NCAND; i++) {
        char ptx[4096], meta[4096], name[32], extra[64];
        snprintf(name, sizeof name, "gemm_cand_%d", i);
        snprintf(extra, sizeof extra, "--pass-option tiles.candidate=%d", i);
        module_paths(dir, arch, name, TILEC_GEMM, extra, ptx, meta, sizeof ptx);
        GPU_RT(tilert_module_load_files(drv, ptx, meta, &mods[i]));
        GPU_RT(tilert_module_get_kernel(mods[i], "gemm", &ks[i]));
    }
    gpu_buf a = gpu_input(GPU_BF16, (size_t)(m * k), 1), b = gpu_input(GPU_BF16, (size_t)(k * nn), 1);
    gpu_buf c = gpu_output(GPU_BF16, (size_t)(m * nn));
    int64_t sa[2] = { m, k }, sb[2] = { k, nn }, sc[2] = { m, nn };
    DLTensor ta = gpu_tensor(&a, 2, sa), tb = gpu_tensor(&b, 2, sb), tc = gpu_tensor(&c, 2, sc);
    tilert_arg args[3] = { { TILERT_ARG_TENSOR, { .tensor = &ta } }, { TILERT_ARG_TENSOR, { .tensor = &tb } },
                           { TILERT_ARG_TENSOR, { .tensor = &tc } } };
    gpu_context("tilert_tune of gemm's candidates (%s)", arch);
    tilert_tune_result res;
    GPU_RT(tilert_tune(ks, NCAND, args, 3, NULL, NULL, &res));
    double lo = res.ms[0];
    for (int i = 0; i < NCAND; i++) {
        printf("  candidate %d: %.4f ms (best round %.4f)%s\n", i, res.ms[i], res.min_ms[i],
               (size_t)i == res.best ? "  <- kept" : "");
        lo = res.ms[i] < lo ? res.ms[i] : lo;
    }
    gpu_result(res.n == NCAND && res.best < NCAND && res.ms[res.best] == lo, "%s: gemm candidate %zu kept, %.1f ms wall",
               arch, res.best, res.wall_ms);
    GPU_RT(tilert_launch(ks[res.best], args, 3, NULL));
    GPU_RT(tilert_synchronize(drv));
    double *ref = gpu_calloc((size_t)(m * nn), sizeof *ref), *got = gpu_calloc((size_t)(m * nn), sizeof *got);
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < k; l++) {
            double av = gpu_get(GPU_BF16, a.host, (size_t)(i * k + l));
            for (int64_t j = 0; j < nn; j++)
                ref[i * nn + j] += av * gpu_get(GPU_BF16, b.host, (size_t)(l * nn + j));
        }
    bool written = gpu_fetch(&c, got, "C");
    double err = gpu_rel_err(got, ref, (size_t)(m * nn));
    gpu_result(written && err < 1e-2, "%s: the kept candidate's C, relative error %.2e", arch, err);
    free(ref);
    free(got);
    gpu_free(&a);
    gpu_free(&b);
    gpu_free(&c);
    for (int i = 0; i < NCAND; i++)
        tilert_module_free(mods[i]);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--print-source") == 0) {
        fputs(tune_src, stdout);
        return 0;
    }
    const char *dir = argc == 2 ? argv[1] : NULL;
    gpu_archs ga;
    tilert_driver *drv = gpu_test_open(&ga);   /* exits 77 without a GPU */
    char ptx[4096], meta[4096];
    module_paths(dir, "sm_86", "tune", NULL, "", ptx, meta, sizeof ptx);
    tilert_module *mod;
    GPU_RT(tilert_module_load_files(drv, ptx, meta, &mod));
    gpu_cuda_init();
    test_copy(drv, mod);
    tilert_module_free(mod);
    test_gemm(drv, dir, ga.device);
    GPU_RT(tilert_synchronize(drv));
    tilert_driver_close(drv);
    return gpu_summary();
}
