/* test_mma.c - the tensor-core path: MMA accumulator / operand layouts
 * (coverage, the m16n8k16 fragment map, the accumulator -> A operand
 * identity) and the PTX of examples/gemm.tile through the front end, the
 * passes and the code generator (mma.sync, ldmatrix, cp.async), assembled
 * by ptxas for sm_86, sm_90a and sm_100a when the CUDA toolkit is there;
 * the experiment that issues a loop's copies between the k steps keeps
 * the same copies and commit groups. */
#define _POSIX_C_SOURCE 200809L   /* strdup */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/layout.h"
#include "frontend/frontend.h"
#include "passes/passes.h"

#define PTXAS "/usr/local/cuda/bin/ptxas"

static void check_coverage(const Layout *l)
{
    int nthreads = l->nwarps * 32, nregs = layout_nregs(l);
    int64_t m = l->pshape[0], n = l->pshape[1];
    int *owners = calloc((size_t)(m * n), sizeof(int));
    for (int t = 0; t < nthreads; t++)
        for (int r = 0; r < nregs; r++) {
            int64_t c[2];
            bool prim = layout_coord(l, t, r, c);
            ck_assert(c[0] >= 0 && c[0] < m && c[1] >= 0 && c[1] < n);
            owners[c[0] * n + c[1]] += prim;
        }
    for (int64_t i = 0; i < m * n; i++)
        ck_assert_msg(owners[i] >= 1, "element %lld has no owner", (long long)i);
    free(owners);
}

START_TEST(warp_grid)
{
    int wm, wn;
    layout_mma_warps(128, 128, 8, &wm, &wn);
    ck_assert(wm == 2 && wn == 4);
    layout_mma_warps(64, 64, 4, &wm, &wn);
    ck_assert(wm == 2 && wn == 2);
    layout_mma_warps(16, 16, 8, &wm, &wn);
    ck_assert(wm == 1 && wn == 1);
    layout_mma_warps(128, 256, 8, &wm, &wn);
    ck_assert_int_eq(wm * wn, 8);
    ck_assert(128 % (16 * wm) == 0 && 256 % (16 * wn) == 0);
}
END_TEST

/* The accumulator holds c0..c3 of every m16n8 tile of the warp's block at
 * the PTX fragment positions; every element has exactly one owner. */
START_TEST(acc_layout)
{
    static const int64_t shapes[][2] = { { 128, 128 }, { 64, 64 }, { 16, 16 }, { 128, 256 }, { 256, 64 } };
    for (size_t s = 0; s < TC_COUNTOF(shapes); s++) {
        int64_t m = shapes[s][0], n = shapes[s][1];
        int wm, wn;
        layout_mma_warps(m, n, 8, &wm, &wn);
        Layout l = layout_mma_acc(m, n, wm, wn, wm * wn);
        ck_assert(layout_is_mma(&l));
        check_coverage(&l);
        int tm = (int)(m / (16 * wm)), tn = (int)(n / (8 * wn));
        ck_assert_int_eq(layout_nregs(&l), tm * tn * 4);
        for (int t = 0; t < wm * wn * 32; t++) {
            int lane = t % 32, w = t / 32, g = lane / 4, tig = lane % 4;
            for (int i = 0; i < tm; i++)
                for (int j = 0; j < tn; j++)
                    for (int q = 0; q < 4; q++) {
                        int64_t c[2];
                        ck_assert(layout_coord(&l, t, layout_mma_acc_reg(&l, i, j, q), c));
                        ck_assert_int_eq(c[0], (w / wn) * 16 * tm + 16 * i + g + 8 * (q / 2));
                        ck_assert_int_eq(c[1], (w % wn) * 8 * tn + 8 * j + 2 * tig + q % 2);
                    }
        }
    }
}
END_TEST

/* A operand fragments a0..a7 of m16 tile i, k step kk; with wn = 1 the
 * accumulator [M, K] puts every element on the same thread (FA-2 reuse). */
START_TEST(a_layout)
{
    int64_t m = 128, k = 64;
    int wm = 4;
    Layout a = layout_mma_a(m, k, wm, 4), acc = layout_mma_acc(m, k, wm, 1, 4);
    check_coverage(&a);
    int tm = (int)(m / (16 * wm));
    for (int t = 0; t < 128; t++) {
        int lane = t % 32, w = t / 32, g = lane / 4, tig = lane % 4;
        for (int i = 0; i < tm; i++)
            for (int kk = 0; kk < k / 16; kk++)
                for (int q = 0; q < 8; q++) {
                    int64_t c[2], c2[2];
                    layout_coord(&a, t, layout_mma_a_reg(&a, i, kk, q), c);
                    ck_assert_int_eq(c[0], w * 16 * tm + 16 * i + g + 8 * (q / 2 % 2));
                    ck_assert_int_eq(c[1], 16 * kk + 2 * tig + q % 2 + 8 * (q / 4));
                    layout_coord(&acc, t, layout_mma_a_reg(&acc, i, kk, q), c2);
                    ck_assert(c[0] == c2[0] && c[1] == c2[1]);
                }
    }
}
END_TEST

/* The blocked layouts are unchanged by the rpt field. */
START_TEST(blocked_unchanged)
{
    int64_t shape[2] = { 128, 64 };
    Layout l = layout_blocked(2, shape, 2, true, 8);
    ck_assert(!layout_is_mma(&l));
    ck_assert_int_eq(layout_cta(&l, 1), 64);
    ck_assert_int_eq(layout_nregs(&l), 128 * 64 / 256);
    StrBuf b = { 0 };
    layout_print(&l, &b);
    ck_assert_msg(!strstr(b.buf, "rpt"), "%s", b.buf);
    sb_free(&b);
}
END_TEST

static char *read_file(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = malloc((size_t)len + 1);
    ck_assert(fread(s, 1, (size_t)len, fp) == (size_t)len);
    s[len] = 0;
    fclose(fp);
    *n = (size_t)len;
    return s;
}

static void ptxas_check(const char *ptx, const char *arch)
{
    char path[256], cmd[640];
    snprintf(path, sizeof path, "/tmp/tilec_mma_%d_%s.ptx", (int)getpid(), arch);
    FILE *fp = fopen(path, "w");
    ck_assert(fp != NULL);
    fputs(ptx, fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "%s -arch=%s %s -o %s.cubin", PTXAS, arch, path, path);
    ck_assert_msg(system(cmd) == 0, "ptxas -arch=%s rejected gemm (%s)", arch, path);
    remove(path);
    strcat(path, ".cubin");
    remove(path);
}

START_TEST(gemm_ptx)
{
    static const char *const archs[] = { "sm_86", "sm_90a", "sm_100a" };
    static const char *const want[] = { "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                                        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                                        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                                        "cp.async.cg.shared.global", "cp.async.wait_group", NULL };
    /* sm_90a: a producer warp group (TMA into mbarrier rings) and two
     * consumer warp groups (wgmma), each with its register budget. */
    static const char *const want90[] = { "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                                          "mbarrier.try_wait.parity.shared::cta.b64",
                                          "mbarrier.arrive.expect_tx.shared::cta.b64",
                                          "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
                                          "wgmma.wait_group.sync.aligned", "setmaxnreg.inc.sync.aligned.u32 232",
                                          "setmaxnreg.dec.sync.aligned.u32 40", ".maxntid 384", NULL };
    /* sm_100a: the same producer, an mma role issuing tcgen05 products
     * into tensor memory, two epilogue warp groups reading it back. */
    static const char *const want100[] = { "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
                                           "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
                                           "tcgen05.mma.cta_group::1.kind::f16",
                                           "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
                                           "tcgen05.ld.sync.aligned.32x32b.x32.b32", "tcgen05.wait::ld.sync.aligned",
                                           "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
                                           "setmaxnreg.inc.sync.aligned.u32 216", ".maxntid 512", NULL };
    size_t n;
    char *src = read_file(TILEC_SOURCE_DIR "/examples/gemm.tile", &n);
    bool ptxas = access(PTXAS, X_OK) == 0;
    for (size_t i = 0; i < TC_COUNTOF(archs); i++) {
        Arena *a = arena_new();
        Diag d;
        diag_init(&d, a);
        /* the tiles the compiler chooses for its `auto` params on these
         * targets (the driver's choice, which fe_compile does not run) */
        static const FeDefine tiles[] = { { "BM", "256" }, { "BN", "128" }, { "BK", "64" } };
        Module *m = fe_compile(a, "gemm.tile", src, n, tiles, 3, &d);
        ck_assert(m != NULL);
        PassCtx pc = { .diag = &d, .target = tc_target(archs[i]), .opt_level = 3, .verify_each = true };
        ck_assert_int_eq(passes_run(m, &pc), 0);
        CgOptions o = { .target = tc_target(archs[i]), .opt_level = 3, .want_ptx = true };
        CgResult res;
        memset(&res, 0, sizeof res);
        StrBuf err = { 0 };
        int e = cg_compile(m, &o, &res, &d, NULL);
        diag_render(&d, &err);
        ck_assert_msg(e == 0, "%s: %s", archs[i], err.buf ? err.buf : "");
        bool hopper = strcmp(archs[i], "sm_90a") == 0, blackwell = strcmp(archs[i], "sm_100a") == 0;
        const char *const *w = hopper ? want90 : blackwell ? want100 : want;
        for (int k = 0; w[k]; k++)
            ck_assert_msg(strstr(res.ptx.buf, w[k]), "%s: PTX lacks '%s'", archs[i], w[k]);
        if (hopper || blackwell)   /* the roles' 12 (16) warps and the tensor maps after the dims */
            ck_assert(strstr(res.meta.buf, hopper ? "threads 384\n" : "threads 512\n") &&
                      strstr(res.meta.buf, "tmap A swizzle 128 box 256 64\n"));
        else
            ck_assert(strstr(res.meta.buf, "threads 256\n") && !strstr(res.meta.buf, "smem 0\n"));   /* 256x128: 8 warps */
        if (ptxas)
            ptxas_check(res.ptx.buf, archs[i]);
        sb_free(&err), sb_free(&res.ptx), sb_free(&res.meta), sb_free(&res.llvm_ir), sb_free(&res.report);
        arena_free(a);
    }
    if (!ptxas)
        printf("note: %s not found: gemm PTX not assembled (not counted as verified)\n", PTXAS);
    free(src);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mma");
    TCase *tc = tcase_create("mma");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, warp_grid);
    tcase_add_test(tc, acc_layout);
    tcase_add_test(tc, a_layout);
    tcase_add_test(tc, blocked_unchanged);
    tcase_add_test(tc, gemm_ptx);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(suite());
}
