/* test_interp_gather_shape.c - the interpreter's semantics of the register
 * shape ops and of the indexed windows, against C references on random
 * inputs and random shapes:
 *  - slices of a tile (`t[a : b, :]`, `t[:, a : +n]`, a constant index
 *    dropping a dim, with `*` after it), on f32 and i32;
 *  - concat(a, b, AXIS) along each axis of 2-D and 3-D tiles;
 *  - reshape(t, [...]) (row-major order kept) and transpose(t) == t^T;
 *  - gathers `X[idx, 0 : +D]` with i32 and i64 indices, some outside the
 *    tensor (0 or `other`), along dim 0 and dim 1, and of a rank-1 tensor;
 *  - scatters `Y[idx, 0 : +D] = t`, indices outside the tensor dropped,
 *    and a compound `Y[idx, :] += t`;
 * each with and without the pass pipeline, bit for bit. */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit_src.h"

static InterpArg tensor3(void *data, int64_t a0, int64_t a1, int64_t a2)
{
    InterpArg a = kit_tensor1(data, a0 * a1 * a2);
    a.rank = 3;
    a.shape[0] = a0;
    a.shape[1] = a1;
    a.shape[2] = a2;
    a.strides[0] = a1 * a2;
    a.strides[1] = a2;
    a.strides[2] = 1;
    return a;
}

static unsigned rng = 12345;
static int rnd(int n)   /* 0 .. n-1 */
{
    rng = rng * 1103515245u + 12345u;
    return (int)((rng >> 8) % (unsigned)n);
}

static float rnd_f32(void) { return (float)(rnd(1 << 20) - (1 << 19)) / 4096.0f; }

static Func *build(KitProg *p, const char *src, int passes)
{
    return kit_prog_build(p, "gather.tile", src, passes != 0, NULL, 0);
}

/* ---- slices ---- */

START_TEST(slices_vs_reference)
{
    enum { R = 8, C = 16 };
    static float x[R * C], y0[R * C], y1[R * C], y2[C], y3[R * C];
    static int32_t xi[R * C], yi[R * C];
    for (int iter = 0; iter < 24; iter++) {
        int a = rnd(R), b = a + 1 + rnd(R - a);          /* rows a .. b-1 */
        int c = rnd(C), n = 1 + rnd(C - c);              /* cols c .. c+n-1 */
        int r = rnd(R);                                   /* one row, dropped */
        int c2 = rnd(C - 1), n2 = 1 + rnd(C - c2), a2 = rnd(R), m2 = 1 + rnd(R - a2);
        char src[2048];
        snprintf(src, sizeof src,
                 "kernel k(X: global f32[%d, %d], XI: global i32[%d, %d], Y0: global f32[%d, %d],\n"
                 "         Y1: global f32[%d, %d], Y2: global f32[%d], Y3: global f32[%d, %d],\n"
                 "         YI: global i32[%d, %d]) grid(1) {\n"
                 "  tile x = X[:, :];\n"
                 "  Y0[0 : +%d, :] = x[%d : %d, :];\n"
                 "  Y1[:, 0 : +%d] = x[:, %d : +%d];\n"
                 "  Y2[0 : +%d] = x[%d, :];\n"
                 "  Y3[0 : +%d, 0 : +%d] = x[%d : +%d, %d : %d] + x[%d, %d : +%d][*, :];\n"
                 "  YI[0 : +%d, 0 : +%d] = XI[:, :][%d : +%d, %d : +%d];\n"
                 "}\n",
                 R, C, R, C, R, C, R, C, C, R, C, R, C,
                 b - a, a, b, n, c, n, C, r, m2, n2, a2, m2, c2, c2 + n2, r, c2, n2, b - a, n, a, b - a, c, n);
        for (int i = 0; i < R * C; i++) {
            x[i] = rnd_f32();
            xi[i] = (int32_t)(rng ^ (unsigned)i);
            rnd(2);
        }
        for (int passes = 0; passes < 2; passes++) {
            KitProg p;
            Func *f = build(&p, src, passes);
            memset(y0, 0, sizeof y0), memset(y1, 0, sizeof y1), memset(y3, 0, sizeof y3), memset(yi, 0, sizeof yi);
            InterpArg args[7] = { kit_tensor2(x, R, C), kit_tensor2(xi, R, C), kit_tensor2(y0, R, C), kit_tensor2(y1, R, C),
                                  kit_tensor1(y2, C), kit_tensor2(y3, R, C), kit_tensor2(yi, R, C) };
            kit_prog_run(&p, f, args, 7);
            for (int i = 0; i < R; i++)
                for (int j = 0; j < C; j++) {
                    int k = i * C + j;
                    if (i < b - a)
                        ck_assert_msg(y0[k] == x[(a + i) * C + j], "rows %d:%d at %d,%d", a, b, i, j);
                    if (j < n)
                        ck_assert_msg(y1[k] == x[i * C + c + j], "cols %d:+%d at %d,%d", c, n, i, j);
                    if (i < m2 && j < n2)
                        ck_assert_msg(y3[k] == x[(a2 + i) * C + c2 + j] + x[r * C + c2 + j], "2-d slice at %d,%d",
                                      i, j);
                    if (i < b - a && j < n)
                        ck_assert_int_eq(yi[k], xi[(a + i) * C + c + j]);
                }
            for (int j = 0; j < C; j++)
                ck_assert(y2[j] == x[r * C + j]);
            arena_free(p.a);
        }
    }
}
END_TEST

/* ---- concat ---- */

START_TEST(concat_vs_reference)
{
    static float a[4 * 8 * 8], b[4 * 8 * 8], y[4 * 16 * 16];
    for (int iter = 0; iter < 24; iter++) {
        int rank = 2 + rnd(2), ax = rnd(rank);
        int sa[3], sb[3], sy[3];
        for (int d = 0; d < rank; d++) {
            sa[d] = 1 + rnd(d == 0 && rank == 3 ? 4 : 8);
            sb[d] = d == ax ? 1 + rnd(8) : sa[d];
            sy[d] = d == ax ? sa[d] + sb[d] : sa[d];
        }
        char src[1024], ta[64], tb[64], ty[64], wa[64], wy[64];
        if (rank == 2) {
            snprintf(ta, sizeof ta, "f32[%d, %d]", sa[0], sa[1]);
            snprintf(tb, sizeof tb, "f32[%d, %d]", sb[0], sb[1]);
            snprintf(ty, sizeof ty, "f32[%d, %d]", sy[0], sy[1]);
            snprintf(wa, sizeof wa, ":, :");
            snprintf(wy, sizeof wy, ":, :");
        } else {
            snprintf(ta, sizeof ta, "f32[%d, %d, %d]", sa[0], sa[1], sa[2]);
            snprintf(tb, sizeof tb, "f32[%d, %d, %d]", sb[0], sb[1], sb[2]);
            snprintf(ty, sizeof ty, "f32[%d, %d, %d]", sy[0], sy[1], sy[2]);
            snprintf(wa, sizeof wa, ":, :, :");
            snprintf(wy, sizeof wy, ":, :, :");
        }
        snprintf(src, sizeof src,
                 "kernel k(A: global %s, B: global %s, Y: global %s) grid(1) {\n"
                 "  Y[%s] = concat(A[%s], B[%s], %d);\n"
                 "}\n", ta, tb, ty, wy, wa, wa, ax);
        int na = 1, nb = 1, ny = 1;
        for (int d = 0; d < rank; d++)
            na *= sa[d], nb *= sb[d], ny *= sy[d];
        for (int i = 0; i < na; i++)
            a[i] = rnd_f32();
        for (int i = 0; i < nb; i++)
            b[i] = rnd_f32();
        for (int passes = 0; passes < 2; passes++) {
            KitProg p;
            Func *f = build(&p, src, passes);
            memset(y, 0, sizeof y);
            InterpArg args[3];
            if (rank == 2) {
                args[0] = kit_tensor2(a, sa[0], sa[1]), args[1] = kit_tensor2(b, sb[0], sb[1]);
                args[2] = kit_tensor2(y, sy[0], sy[1]);
            } else {
                args[0] = tensor3(a, sa[0], sa[1], sa[2]), args[1] = tensor3(b, sb[0], sb[1], sb[2]);
                args[2] = tensor3(y, sy[0], sy[1], sy[2]);
            }
            kit_prog_run(&p, f, args, 3);
            for (int k = 0; k < ny; k++) {
                int idx[3], rem = k;
                for (int d = rank - 1; d >= 0; d--)
                    idx[d] = rem % sy[d], rem /= sy[d];
                bool first = idx[ax] < sa[ax];
                if (!first)
                    idx[ax] -= sa[ax];
                const int *s = first ? sa : sb;
                int o = 0;
                for (int d = 0; d < rank; d++)
                    o = o * s[d] + idx[d];
                ck_assert_msg(y[k] == (first ? a[o] : b[o]), "%s axis %d element %d", src, ax, k);
            }
            arena_free(p.a);
        }
    }
}
END_TEST

/* ---- reshape and transpose ---- */

START_TEST(reshape_transpose_vs_reference)
{
    static const int shapes[][4] = { { 1, 64, 0, 0 }, { 2, 32, 0, 0 }, { 4, 16, 0, 0 }, { 8, 8, 0, 0 },
                                     { 2, 4, 8, 0 }, { 4, 2, 2, 4 }, { 64, 0, 0, 0 }, { 16, 4, 0, 0 } };
    enum { NS = sizeof shapes / sizeof shapes[0] };
    static float x[64], y[64], t[64];
    static int32_t xi[64], yi[64];
    for (int iter = 0; iter < 16; iter++) {
        const int *to = shapes[rnd(NS)];
        char sto[64];
        int n = 0;
        for (int d = 0; d < 4 && to[d]; d++)
            n += snprintf(sto + n, sizeof sto - (size_t)n, "%s%d", d ? ", " : "", to[d]);
        int r = 1 << (rnd(5) + 1), c = 64 / r;
        char src[1024];
        snprintf(src, sizeof src,
                 "kernel k(X: global f32[64], XI: global i32[8, 8], Y: global f32[64], T: global f32[%d, %d],\n"
                 "         YI: global i32[64]) grid(1) {\n"
                 "  Y[:] = reshape(reshape(X[:], [%s]), [64]);\n"
                 "  tile m = reshape(X[:], [%d, %d]);\n"
                 "  T[:, :] = transpose(m) + m^T;\n"
                 "  YI[:] = reshape(XI[:, :]^T, [64])[*, :, *][0, :, 0];\n"
                 "}\n", c, r, sto, r, c);
        for (int i = 0; i < 64; i++)
            x[i] = rnd_f32(), xi[i] = rnd(1 << 30) - (1 << 29);
        for (int passes = 0; passes < 2; passes++) {
            KitProg p;
            Func *f = build(&p, src, passes);
            InterpArg args[5] = { kit_tensor1(x, 64), kit_tensor2(xi, 8, 8), kit_tensor1(y, 64), kit_tensor2(t, c, r),
                                  kit_tensor1(yi, 64) };
            kit_prog_run(&p, f, args, 5);
            for (int i = 0; i < 64; i++) {
                ck_assert(y[i] == x[i]);
                ck_assert_int_eq(yi[i], xi[(i % 8) * 8 + i / 8]);
            }
            for (int i = 0; i < c; i++)
                for (int j = 0; j < r; j++)
                    ck_assert(t[i * r + j] == x[j * c + i] + x[j * c + i]);
            arena_free(p.a);
        }
    }
}
END_TEST

/* ---- gather ---- */

START_TEST(gathers_vs_reference)
{
    enum { M = 37, D = 24, R = 16 };
    static float x[M * D], y[R * D], z[R * D], yc[D * R], e[R];
    static int32_t idx[R];
    static int64_t idx64[R];
    for (int iter = 0; iter < 16; iter++) {
        for (int i = 0; i < M * D; i++)
            x[i] = rnd_f32();
        for (int i = 0; i < R; i++) {
            idx[i] = rnd(M + 8) - 4;                 /* some below 0, some past M */
            idx64[i] = rnd(4) == 0 ? (int64_t)rnd(3) * ((int64_t)1 << 32) + rnd(M) : rnd(M + 2);
        }
        int d0 = rnd(8);   /* a column offset; the window may run past D */
        char src[2048];
        snprintf(src, sizeof src,
                 "kernel k(X: global f32[M, D], I: global i32[%d], J: global i64[%d], Y: global f32[%d, %d],\n"
                 "         Z: global f32[%d, %d], YC: global f32[%d, %d], E: global f32[%d]) grid(1) {\n"
                 "  tile i = I[:];\n"
                 "  Y[:, :] = X[i, %d : +%d];\n"
                 "  Z[:, :] = load(X[J[:], 0 : +%d], -7.5);\n"
                 "  YC[:, :] = X[0 : +%d, i + 1];\n"
                 "  E[:] = load(X[i, %d], 2.0);\n"
                 "}\n",
                 R, R, R, D, R, D, D, R, R, d0, D, D, D, d0);
        for (int passes = 0; passes < 2; passes++) {
            KitProg p;
            Func *f = build(&p, src, passes);
            InterpArg args[7] = { kit_tensor2(x, M, D), kit_tensor1(idx, R), kit_tensor1(idx64, R), kit_tensor2(y, R, D),
                                  kit_tensor2(z, R, D), kit_tensor2(yc, D, R), kit_tensor1(e, R) };
            kit_prog_run(&p, f, args, 7);
            for (int r = 0; r < R; r++) {
                bool in = idx[r] >= 0 && idx[r] < M;
                for (int j = 0; j < D; j++) {
                    bool jn = d0 + j < D;
                    ck_assert_msg(y[r * D + j] == (in && jn ? x[idx[r] * D + d0 + j] : 0.0f), "Y %d %d", r, j);
                    bool in64 = idx64[r] >= 0 && idx64[r] < M;
                    ck_assert(z[r * D + j] == (in64 ? x[idx64[r] * D + j] : -7.5f));
                }
                ck_assert(e[r] == (in ? x[idx[r] * D + d0] : 2.0f));
                for (int j = 0; j < D; j++) {   /* YC[j, r] = X[j, i[r] + 1] */
                    int col = idx[r] + 1;
                    bool ok = j < M && col >= 0 && col < D;
                    ck_assert_msg(yc[j * R + r] == (ok ? x[j * D + col] : 0.0f), "YC %d %d", j, r);
                }
            }
            arena_free(p.a);
        }
    }
}
END_TEST

/* ---- scatter ---- */

START_TEST(scatters_vs_reference)
{
    enum { M = 29, D = 12, R = 16 };
    static float t[R * D], y[M * D], ref[M * D], acc[M * D], accref[M * D];
    static int32_t idx[R];
    const char *src =
        "kernel k(T: global f32[16, 12], I: global i32[16], Y: global f32[M, 12], A: global f32[M, 12]) grid(1) {\n"
        "  tile i = I[:];\n"
        "  Y[i, 0 : +12] = T[:, :];\n"
        "  A[i, :] += T[:, :] * 2.0;\n"
        "}\n";
    for (int iter = 0; iter < 16; iter++) {
        /* distinct indices (a shuffled range), some moved outside the tensor */
        int perm[M + 6];
        for (int i = 0; i < M + 6; i++)
            perm[i] = i - 3;
        for (int i = M + 5; i > 0; i--) {
            int j = rnd(i + 1), s = perm[i];
            perm[i] = perm[j], perm[j] = s;
        }
        for (int r = 0; r < R; r++)
            idx[r] = perm[r];
        for (int i = 0; i < R * D; i++)
            t[i] = rnd_f32();
        for (int i = 0; i < M * D; i++)
            ref[i] = y[i] = -1.0f, accref[i] = acc[i] = rnd_f32();
        for (int r = 0; r < R; r++)
            if (idx[r] >= 0 && idx[r] < M)
                for (int j = 0; j < D; j++) {
                    ref[idx[r] * D + j] = t[r * D + j];
                    accref[idx[r] * D + j] = acc[idx[r] * D + j] + t[r * D + j] * 2.0f;
                }
        for (int passes = 0; passes < 2; passes++) {
            KitProg p;
            Func *f = build(&p, src, passes);
            static float y2[M * D], a2[M * D];
            memcpy(y2, y, sizeof y), memcpy(a2, acc, sizeof acc);
            InterpArg args[4] = { kit_tensor2(t, R, D), kit_tensor1(idx, R), kit_tensor2(y2, M, D), kit_tensor2(a2, M, D) };
            kit_prog_run(&p, f, args, 4);
            for (int i = 0; i < M * D; i++) {
                ck_assert_msg(y2[i] == ref[i], "Y element %d", i);
                ck_assert_msg(a2[i] == accref[i], "A element %d", i);
            }
            arena_free(p.a);
        }
    }
}
END_TEST

static Suite *gather_shape_suite(void)
{
    Suite *s = suite_create("interp_gather_shape");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, slices_vs_reference);
    tcase_add_test(tc, concat_vs_reference);
    tcase_add_test(tc, reshape_transpose_vs_reference);
    tcase_add_test(tc, gathers_vs_reference);
    tcase_add_test(tc, scatters_vs_reference);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(gather_shape_suite());
}
