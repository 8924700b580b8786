/* test_codegen.c - the SIMT code generator: layout maps (coverage, 16-byte
 * contiguity, coalescing, slice/expand/broadcast round trips) and kernels
 * built with the Builder API compiled to PTX for every arch, each checked
 * by ptxas when the CUDA toolkit is installed. */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/layout.h"

static const char *const ARCHS[] = { "sm_86", "sm_90a", "sm_100a", "sm_90", "sm_100f" };
#define PTXAS "/usr/local/cuda/bin/ptxas"

/* ---- layout maps ---- */

/* Every element of the logical shape has exactly one primary owner; every
 * (thread, register) maps inside the shape; layout_coord_parts gives the
 * same coordinates. */
static void check_coverage(const Layout *l)
{
    int rank = layout_rank(l), nthreads = l->nwarps * 32, nregs = layout_nregs(l);
    int64_t shape[TILE_MAXRANK], numel = 1;
    for (int a = 0; a < rank; a++) {
        shape[a] = l->pshape[layout_pdim(l, a)];
        numel *= shape[a];
    }
    int *owners = calloc((size_t)numel, sizeof(int));
    for (int t = 0; t < nthreads; t++)
        for (int r = 0; r < nregs; r++) {
            int64_t c[TILE_MAXRANK], lin = 0;
            bool prim = layout_coord(l, t, r, c);
            int64_t tp[TILE_MAXRANK], rp[TILE_MAXRANK];
            layout_coord_parts(l, t, r, tp, rp);
            for (int a = 0; a < rank; a++) {
                ck_assert(c[a] >= 0 && c[a] < shape[a]);
                ck_assert_int_eq((tp[a] + rp[a]) % shape[a], c[a]);   /* the split form agrees */
                lin = lin * shape[a] + c[a];
            }
            owners[lin] += prim;
        }
    for (int64_t i = 0; i < numel; i++)
        ck_assert_msg(owners[i] == 1, "element %lld has %d primary owners", (long long)i, owners[i]);
    free(owners);
}

START_TEST(layout_coverage)
{
    static const int64_t shapes[][4] = {
        { 1, 1024 }, { 1, 4096 }, { 1, 16384 }, { 1, 16 }, { 1, 100 }, { 2, 64, 64 }, { 2, 4, 1024 },
        { 2, 128, 64 }, { 2, 1, 8 }, { 2, 64, 1 }, { 3, 2, 16, 32 },
    };
    static const int bytes[] = { 1, 2, 4, 8 };
    for (size_t s = 0; s < TC_COUNTOF(shapes); s++)
        for (size_t b = 0; b < TC_COUNTOF(bytes); b++)
            for (int w = 1; w <= 16; w *= 2) {
                int rank = (int)shapes[s][0];
                Layout l = layout_blocked(rank, &shapes[s][1], bytes[b], true, w);
                check_coverage(&l);
                for (int ax = 0; ax < rank; ax++) {
                    Layout sl = layout_slice(&l, ax);
                    check_coverage(&sl);
                }
            }
}
END_TEST

/* Registers come in groups of `vec` consecutive elements of the last dim,
 * each group 16 bytes and aligned to its size. */
START_TEST(layout_contiguity)
{
    int64_t shape[2] = { 8, 4096 };
    for (int bytes = 1; bytes <= 8; bytes *= 2) {
        Layout l = layout_blocked(2, shape, bytes, true, 4);
        int vec = layout_vec(&l);
        ck_assert_int_eq(vec * bytes, 16);
        for (int t = 0; t < 128; t += 7)
            for (int r = 0; r < layout_nregs(&l); r += vec) {
                int64_t c0[2], c[2];
                layout_coord(&l, t, r, c0);
                ck_assert_int_eq(c0[1] % vec, 0);
                for (int e = 1; e < vec; e++) {
                    layout_coord(&l, t, r + e, c);
                    ck_assert(c[0] == c0[0] && c[1] == c0[1] + e);
                }
            }
    }
}
END_TEST

/* For each register group, the 32 lanes of a warp touch 512 contiguous
 * bytes of a row (one fully used set of cache lines). */
START_TEST(layout_coalescing)
{
    int64_t shape[1] = { 4096 };
    Layout l = layout_blocked(1, shape, 2, true, 4);
    int vec = layout_vec(&l);
    for (int w = 0; w < 4; w++)
        for (int r = 0; r < layout_nregs(&l); r += vec) {
            int64_t lo = INT64_MAX, hi = -1;
            for (int lane = 0; lane < 32; lane++) {
                int64_t c;
                layout_coord(&l, w * 32 + lane, r, &c);
                lo = c < lo ? c : lo;
                hi = c > hi ? c : hi;
            }
            ck_assert_int_eq((hi - lo + vec) * 2, 512);
            ck_assert_int_eq(lo % 256, 0);
        }
}
END_TEST

START_TEST(layout_slice_expand_roundtrip)
{
    int64_t shape[2] = { 4, 1024 };
    Layout l = layout_blocked(2, shape, 2, true, 8);
    for (int ax = 0; ax < 2; ax++) {
        Layout s = layout_slice(&l, ax);
        ck_assert_int_eq(layout_rank(&s), 1);
        Layout e = layout_expand(&s, ax);
        ck_assert_int_eq(layout_rank(&e), 2);
        ck_assert_int_eq(e.pshape[ax], 1);
        Layout b = layout_with_shape(&e, shape);
        ck_assert(layout_eq(&b, &l));
    }
    /* Expanding a blocked layout inserts a trivial dim that keeps the map. */
    int64_t s1[1] = { 256 };
    Layout o = layout_blocked(1, s1, 4, true, 2);
    Layout x = layout_expand(&o, 0);
    ck_assert_int_eq(layout_rank(&x), 2);
    ck_assert_int_eq(layout_nregs(&x), layout_nregs(&o));
    for (int t = 0; t < 64; t++)
        for (int r = 0; r < layout_nregs(&o); r++) {
            int64_t a, c[2];
            layout_coord(&o, t, r, &a);
            layout_coord(&x, t, r, c);
            ck_assert(c[0] == 0 && c[1] == a);
        }
}
END_TEST

/* ---- kernels built with the Builder ---- */

static void kit_init(Kit *k, const char *name) { kit_init_at(k, name, "test.tir", 1); }

static ValId tensor_param(Kit *k, const char *name, DType dt, int rank, const char *const *dims)
{
    Type t = type_scalar(dt);
    t.kind = TY_TENSOR;
    t.rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++) {
        ir_add_dim(k->f, dims[i]);
        t.dimsym[i] = (int16_t)ir_find_dim(k->f, dims[i]);
        t.shape[i] = -1;
    }
    return ir_add_param(k->f, name, t);
}

static Type tile(DType dt, int rank, int64_t m, int64_t n)
{
    int64_t s[2] = { rank == 1 ? n : m, n };
    return type_tile(dt, rank, s, SP_ANY);
}

static ValId i32c(Kit *k, int64_t v) { return ir_const_int(&k->b, type_scalar(DT_I32), v); }

static ValId op1(Kit *k, OpCode c, ValId a, Type t) { return ir_build1(&k->b, c, &a, 1, t); }
static ValId op2(Kit *k, OpCode c, ValId a, ValId b, Type t)
{
    ValId ab[2] = { a, b };
    return ir_build1(&k->b, c, ab, 2, t);
}

/* LOAD/STORE of a window; ext[d] = 0 drops dim d. */
static Op *window(Kit *k, OpCode code, ValId x, const ValId *off, const int64_t *ext, int rank, ValId val, Type t)
{
    ValId args[8];
    int n = 0;
    args[n++] = x;
    for (int d = 0; d < rank; d++)
        args[n++] = off[d];
    if (code == OP_STORE)
        args[n++] = val;
    Op *op = ir_build(&k->b, code, args, n, &t, code == OP_LOAD);
    op->list = arena_alloc(k->a, sizeof(int64_t) * (size_t)rank);
    op->nlist = rank;
    unsigned mask = 0;
    for (int d = 0; d < rank; d++) {
        op->list[d] = ext[d];
        mask |= ext[d] ? 1u << d : 0;
    }
    op->iattr[0] = mask;
    return op;
}

/* grid = (cdiv(dim, per), 1, 1) */
static void grid_cdiv(Kit *k, ValId dim, int64_t per)
{
    Builder g = ir_builder_at_end(k->f, &k->f->grid);
    Type i32 = type_scalar(DT_I32);
    ValId c = ir_const_int(&g, i32, per - 1), p = ir_const_int(&g, i32, per), one = ir_const_int(&g, i32, 1);
    ValId s[2] = { dim, c };
    ValId a = ir_build1(&g, OP_ADD, s, 2, i32);
    ValId q[2] = { a, p };
    ValId y[3] = { ir_build1(&g, OP_DIV, q, 2, i32), one, one };
    ir_build(&g, OP_YIELD, y, 3, NULL, 0);
}

/* Z[i0 : +1024] = X[i0 : +1024] + Y[i0 : +1024], f32 */
static void build_vector_add(Kit *k)
{
    kit_init(k, "vector_add");
    const char *dn[1] = { "N" };
    ValId X = tensor_param(k, "X", DT_F32, 1, dn), Y = tensor_param(k, "Y", DT_F32, 1, dn),
          Z = tensor_param(k, "Z", DT_F32, 1, dn);
    grid_cdiv(k, k->f->dims[0], 1024);
    Type i32 = type_scalar(DT_I32), t = tile(DT_F32, 1, 1, 1024);
    ValId i0 = op2(k, OP_MUL, ir_build1(&k->b, OP_BLOCKID, NULL, 0, i32), i32c(k, 1024), i32);
    int64_t ext[1] = { 1024 };
    ValId x = window(k, OP_LOAD, X, &i0, ext, 1, 0, t)->res[0];
    ValId y = window(k, OP_LOAD, Y, &i0, ext, 1, 0, t)->res[0];
    window(k, OP_STORE, Z, &i0, ext, 1, op2(k, OP_ADD, x, y, t), t);
}

static ValId block_x(Kit *k)
{
    Type i32 = type_scalar(DT_I32);
    return ir_build1(&k->b, OP_BLOCKID, NULL, 0, i32);
}

/* Rows of 4 x 1024 bf16: y = exp2(x - rowmax(x)) / rowsum(...) */
static void build_softmax_rows(Kit *k)
{
    kit_init(k, "softmax_rows");
    const char *dn[2] = { "M", "N" };
    ValId X = tensor_param(k, "X", DT_BF16, 2, dn), Y = tensor_param(k, "Y", DT_BF16, 2, dn);
    grid_cdiv(k, k->f->dims[0], 4);
    Type tb = tile(DT_BF16, 2, 4, 1024), tf = tile(DT_F32, 2, 4, 1024), col = tile(DT_F32, 2, 4, 1),
         vec = tile(DT_F32, 1, 1, 4), i32 = type_scalar(DT_I32);
    col.shape[0] = 4;
    vec.shape[0] = 4;
    ValId off[2] = { op2(k, OP_MUL, block_x(k), i32c(k, 4), i32), i32c(k, 0) };
    int64_t ext[2] = { 4, 1024 };
    ValId x = op1(k, OP_CAST, window(k, OP_LOAD, X, off, ext, 2, 0, tb)->res[0], tf);
    Op *r = ir_build(&k->b, OP_REDUCE, &x, 1, &vec, 1);
    r->iattr[0] = 1, r->iattr[1] = RED_MAX;
    Op *e = ir_build(&k->b, OP_EXPAND, &r->res[0], 1, &col, 1);
    e->iattr[0] = 1;
    ValId mb = op1(k, OP_BROADCAST, e->res[0], tf);
    ValId p = op1(k, OP_EXP2, op2(k, OP_SUB, x, mb, tf), tf);
    Op *s = ir_build(&k->b, OP_REDUCE, &p, 1, &vec, 1);
    s->iattr[0] = 1, s->iattr[1] = RED_SUM;
    Op *se = ir_build(&k->b, OP_EXPAND, &s->res[0], 1, &col, 1);
    se->iattr[0] = 1;
    ValId y = op2(k, OP_DIV, p, op1(k, OP_BROADCAST, se->res[0], tf), tf);
    window(k, OP_STORE, Y, off, ext, 2, op1(k, OP_CAST, y, tb), tb);
}

/* Y[n0 : +32, m0 : +32] = X[m0 : +32, n0 : +32]^T */
static void build_transpose(Kit *k)
{
    kit_init(k, "transpose");
    const char *dx[2] = { "M", "N" }, *dy[2] = { "N", "M" };
    ValId X = tensor_param(k, "X", DT_F32, 2, dx), Y = tensor_param(k, "Y", DT_F32, 2, dy);
    grid_cdiv(k, k->f->dims[0], 32);
    Type t = tile(DT_F32, 2, 32, 32), i32 = type_scalar(DT_I32);
    ValId m0 = op2(k, OP_MUL, block_x(k), i32c(k, 32), i32);
    ValId off[2] = { m0, i32c(k, 0) }, offt[2] = { off[1], off[0] };
    int64_t ext[2] = { 32, 32 };
    ValId x = window(k, OP_LOAD, X, off, ext, 2, 0, t)->res[0];
    window(k, OP_STORE, Y, offt, ext, 2, op1(k, OP_TRANS, x, t), t);
}

static bool have_ptxas(void) { return access(PTXAS, X_OK) == 0; }

static void ptxas_check(const char *ptx, const char *arch, const char *name)
{
    char path[256], cmd[640];
    snprintf(path, sizeof path, "/tmp/tilec_cg_%d_%s_%s.ptx", (int)getpid(), name, arch);
    FILE *fp = fopen(path, "w");
    ck_assert(fp != NULL);
    fputs(ptx, fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "%s -arch=%s %s -o %s.cubin", PTXAS, arch, path, path);
    int rc = system(cmd);
    ck_assert_msg(rc == 0, "ptxas -arch=%s rejected %s (%s)", arch, name, path);
    remove(path);
    snprintf(path + strlen(path), sizeof path - strlen(path), ".cubin");
    remove(path);
}

static void compile_all(Kit *k, const char *const *want)
{
    for (size_t i = 0; i < TC_COUNTOF(ARCHS); i++) {
        CgOptions o = { .target = tc_target(ARCHS[i]), .opt_level = 3, .want_llvm = true, .want_ptx = true };
        CgResult res;
        memset(&res, 0, sizeof res);
        double t0 = tc_now();
        int e = cg_compile(k->m, &o, &res, &k->d, NULL);
        double ms = (tc_now() - t0) * 1e3;
        StrBuf err = { 0 };
        diag_render(&k->d, &err);
        ck_assert_msg(e == 0, "%s: %s", ARCHS[i], err.buf ? err.buf : "");
        sb_free(&err);
        printf("codegen %-12s %-8s %6.2f ms\n", k->f->name, ARCHS[i], ms);
        for (int w = 0; want[w]; w++)
            ck_assert_msg(strstr(res.ptx.buf, want[w]), "%s: PTX lacks '%s'", ARCHS[i], want[w]);
        ck_assert(strstr(res.meta.buf, "tilec-meta 1\n") && strstr(res.meta.buf, "end\n"));
        ck_assert(strstr(res.llvm_ir.buf, "ptx_kernel"));
        if (have_ptxas())
            ptxas_check(res.ptx.buf, ARCHS[i], k->f->name);
        sb_free(&res.ptx), sb_free(&res.meta), sb_free(&res.llvm_ir), sb_free(&res.report);
    }
    if (!have_ptxas())
        printf("note: %s not found: PTX of %s not assembled (not counted as verified)\n", PTXAS, k->f->name);
}

START_TEST(cg_vector_add)
{
    Kit k;
    build_vector_add(&k);
    /* 16-byte accesses: v4.b32, or v2.b64 where LLVM packs f32 pairs (sm_100) */
    static const char *const want[] = { "ld.global.nc.v", "st.global.v", ".maxntid", NULL };
    compile_all(&k, want);
    CgOptions o = { .target = tc_target("sm_90a"), .opt_level = 3, .want_ptx = true };
    CgResult res;
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(cg_compile(k.m, &o, &res, &k.d, NULL), 0);
    ck_assert_msg(strstr(res.meta.buf, "kernel vector_add\narch sm_90a\nthreads 64\n"), "%s", res.meta.buf);
    ck_assert(strstr(res.meta.buf, "dim N\nparam X tensor f32 1 N align 16\n"));
    ck_assert_msg(strstr(res.meta.buf, "grid N 1023 + 1024 / ; 1 ; 1\n"), "%s", res.meta.buf);
    sb_free(&res.ptx), sb_free(&res.meta), sb_free(&res.report);
    arena_free(k.a);
}
END_TEST

START_TEST(cg_softmax_rows)
{
    Kit k;
    build_softmax_rows(&k);
    static const char *const want[] = { "ld.global.nc.v4.b32", "shfl.sync.bfly", "ex2.approx", "bar.sync", NULL };
    compile_all(&k, want);
    arena_free(k.a);
}
END_TEST

START_TEST(cg_transpose)
{
    Kit k;
    build_transpose(&k);
    static const char *const want[] = { "ld.global.nc.v4.b32", "st.shared", "bar.sync", "st.global.v4.b32", NULL };
    compile_all(&k, want);
    arena_free(k.a);
}
END_TEST

START_TEST(cg_dot_f32_simt)
{
    /* A product of f32 tiles with no family chosen (no mma_select): the
     * code generator takes the FMA units (ir_mma_sync_problem rejects
     * f32), not mma.sync. */
    Kit k;
    kit_init(&k, "mm");
    Type t = tile(DT_F32, 2, 16, 16);
    ValId z = ir_const_float(&k.b, t, 0.0);
    ValId args[3] = { z, z, z };
    ir_build1(&k.b, OP_DOT, args, 3, t);
    CgOptions o = { .target = tc_target("sm_86"), .opt_level = 3, .want_ptx = true };
    CgResult res;
    memset(&res, 0, sizeof res);
    ck_assert_int_eq(cg_compile(k.m, &o, &res, &k.d, NULL), 0);
    ck_assert(res.ptx.buf && !strstr(res.ptx.buf, "mma.sync"));
    sb_free(&res.ptx), sb_free(&res.meta), sb_free(&res.report);
    arena_free(k.a);
}
END_TEST

START_TEST(cg_archs)
{
    for (int i = 0; i < tc_target_count(); i++)   /* every target's family has a code generator */
        ck_assert(cg_target_supported(tc_target_at(i)));
    ck_assert(!cg_target_supported(NULL) && !tc_target("sm_75") && !tc_target("sm_100"));
    ck_assert_ptr_eq(tc_target_resolve("sm_100", false, NULL), tc_target("sm_100a"));
    ck_assert_ptr_eq(tc_target_resolve("sm_90", true, NULL), tc_target("sm_90"));
    ck_assert(tc_target("sm_90a")->mma & TC_MMA_WGMMA && !(tc_target("sm_86")->mma & TC_MMA_WGMMA));
    ck_assert(tc_target("sm_100a")->tmem && !tc_target("sm_90a")->tmem);
    ck_assert(strncmp(cg_llvm_version(), "22.", 3) == 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("codegen");
    TCase *l = tcase_create("layout");
    tcase_add_test(l, layout_coverage);
    tcase_add_test(l, layout_contiguity);
    tcase_add_test(l, layout_coalescing);
    tcase_add_test(l, layout_slice_expand_roundtrip);
    suite_add_tcase(s, l);
    TCase *c = tcase_create("kernels");
    tcase_set_timeout(c, 120);
    tcase_add_test(c, cg_archs);
    tcase_add_test(c, cg_vector_add);
    tcase_add_test(c, cg_softmax_rows);
    tcase_add_test(c, cg_transpose);
    tcase_add_test(c, cg_dot_f32_simt);
    suite_add_tcase(s, c);
    return s;
}

int main(void)
{
    return tc_check_run(suite());
}
