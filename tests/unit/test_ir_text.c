/* test_ir_text.c - the textual form of Tile IR: kernels built with the
 * Builder API print, parse back and print to the same text; parse errors
 * carry .tir positions and precise messages; floats round-trip exactly. */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ---- building kernels ---- */

static void kit_init(Kit *k, const char *name) { kit_init_at(k, name, "k.tile", 3); }

static ValId tensor1(Kit *k, const char *name, DType dt, const char *dim)
{
    Type t = type_scalar(dt);
    t.kind = TY_TENSOR;
    t.rank = 1;
    ir_add_dim(k->f, dim);
    t.dimsym[0] = (int16_t)ir_find_dim(k->f, dim);
    t.shape[0] = -1;
    return ir_add_param(k->f, name, t);
}

static Type tile1(DType dt, int64_t n) { return type_tile(dt, 1, &n, SP_ANY); }

/* grid: (cdiv(N, 1024), 1, 1) */
static void build_grid(Kit *k, ValId n)
{
    Builder g = ir_builder_at_end(k->f, &k->f->grid);
    g.loc = (Loc){ "k.tile", 1, 40 };
    Type i32 = type_scalar(DT_I32);
    ValId c = ir_const_int(&g, i32, 1023);
    ValId s = ir_build1(&g, OP_ADD, (ValId[]){ n, c }, 2, i32);
    ValId bs = ir_const_int(&g, i32, 1024);
    ValId q = ir_build1(&g, OP_DIV, (ValId[]){ s, bs }, 2, i32);
    ValId one = ir_const_int(&g, i32, 1);
    ir_build(&g, OP_YIELD, (ValId[]){ q, one, one }, 3, NULL, 0);
}

static void build_vector_add(Kit *k)
{
    kit_init(k, "vector_add");
    ValId x = tensor1(k, "X", DT_F32, "N"), y = tensor1(k, "Y", DT_F32, "N"), z = tensor1(k, "Z", DT_F32, "N");
    k->f->consts = arena_alloc(k->a, sizeof(ConstBinding) * 4);
    k->f->consts[0] = (ConstBinding){ "BLOCK", DT_I64, 1024, 0, DT_NONE };
    k->f->consts[1] = (ConstBinding){ "CAUSAL", DT_BOOL, 0, 0, DT_NONE };
    k->f->consts[2] = (ConstBinding){ "T", DT_NONE, 0, 0, DT_BF16 };
    k->f->consts[3] = (ConstBinding){ "SCALE", DT_F64, 0, 0.1, DT_NONE };
    k->f->nconsts = 4;
    build_grid(k, k->f->dims[0]);
    Type i32 = type_scalar(DT_I32), t = tile1(DT_F32, 1024);
    ValId bid = ir_build1(&k->b, OP_BLOCKID, NULL, 0, i32);
    ValId bs = ir_const_int(&k->b, i32, 1024);
    ValId off = ir_build1(&k->b, OP_MUL, (ValId[]){ bid, bs }, 2, i32);
    Op *lx = ir_build(&k->b, OP_LOAD, (ValId[]){ x, off }, 2, &t, 1);
    Op *ly = ir_build(&k->b, OP_LOAD, (ValId[]){ y, off }, 2, &t, 1);
    int64_t *ext = arena_alloc(k->a, sizeof(int64_t));
    ext[0] = 1024;
    lx->list = ly->list = ext;
    lx->nlist = ly->nlist = 1;
    lx->iattr[0] = ly->iattr[0] = 1;
    ValId s = ir_build1(&k->b, OP_ADD, (ValId[]){ lx->res[0], ly->res[0] }, 2, t);
    Op *st = ir_build(&k->b, OP_STORE, (ValId[]){ z, off, s }, 3, NULL, 0);
    st->list = ext;
    st->nlist = 1;
    st->iattr[0] = 1;
}

/* for i in 0..N step 1 { acc += x; m = if i < 4 { max(m, x) } else { m } } */
static void build_loop_kernel(Kit *k)
{
    kit_init(k, "loop");
    ValId x = tensor1(k, "X", DT_F32, "N");
    build_grid(k, k->f->dims[0]);
    Type i32 = type_scalar(DT_I32), t = tile1(DT_F32, 128), b1 = type_scalar(DT_BOOL);
    ValId zero = ir_const_int(&k->b, i32, 0), one = ir_const_int(&k->b, i32, 1);
    ValId fz = ir_const_float(&k->b, t, 0.0), ninf = ir_const_float(&k->b, t, -INFINITY);
    Type rt[2] = { t, t };
    Op *loop = ir_build(&k->b, OP_FOR, (ValId[]){ zero, k->f->dims[0], one, fz, ninf }, 5, rt, 2);
    loop->iattr[0] = 2;
    Block *body = ir_op_region(loop, 0);
    ValId iv = ir_block_add_arg(k->f, body, i32, "i");
    ValId acc = ir_block_add_arg(k->f, body, t, NULL), m = ir_block_add_arg(k->f, body, t, NULL);
    Builder lb = ir_builder_at_end(k->f, body);
    lb.loc = (Loc){ "k.tile", 5, 9 };
    Op *ld = ir_build(&lb, OP_LOAD, (ValId[]){ x, iv }, 2, &t, 1);
    ld->list = arena_alloc(k->a, sizeof(int64_t));
    ld->list[0] = 128;
    ld->nlist = 1;
    ld->iattr[0] = 1;
    ValId sum = ir_build1(&lb, OP_ADD, (ValId[]){ acc, ld->res[0] }, 2, t);
    ValId four = ir_const_int(&lb, i32, 4);
    Op *cmp = ir_build(&lb, OP_CMP, (ValId[]){ iv, four }, 2, &b1, 1);
    cmp->iattr[0] = CMP_LT;
    Op *iff = ir_build(&lb, OP_IF, (ValId[]){ cmp->res[0] }, 1, &t, 1);
    Builder tb = ir_builder_at_end(k->f, ir_op_region(iff, 0));
    ValId mx = ir_build1(&tb, OP_MAX, (ValId[]){ m, ld->res[0] }, 2, t);
    ir_build(&tb, OP_YIELD, &mx, 1, NULL, 0);
    Builder eb = ir_builder_at_end(k->f, ir_op_region(iff, 1));
    ir_build(&eb, OP_YIELD, &m, 1, NULL, 0);
    ir_build(&lb, OP_YIELD, (ValId[]){ sum, iff->res[0] }, 2, NULL, 0);
    Type r1 = type_scalar(DT_F32);
    Op *red = ir_build(&k->b, OP_REDUCE, &loop->res[0], 1, &r1, 1);
    red->iattr[1] = RED_SUM;
}

/* ---- printing and parsing ---- */

static char *print_mod(const Module *m, bool locs)
{
    StrBuf sb = { 0 };
    PrintOpts po = { locs };
    ir_print_module(m, &po, &sb);
    return sb_take(&sb);
}

static char *diag_text(const Diag *d)
{
    StrBuf sb = { 0 };
    diag_render(d, &sb);
    return sb.buf ? sb_take(&sb) : calloc(1, 1);
}

/* print -> parse -> print is the identity; returns the first text. */
static char *check_round_trip(const Module *m, bool locs)
{
    char *t1 = print_mod(m, locs);
    Arena *a = arena_new();
    Diag d;
    diag_init(&d, a);
    Module *m2 = ir_parse(a, "rt.tir", t1, strlen(t1), &d);
    char *errs = diag_text(&d);
    ck_assert_msg(m2 != NULL, "parse failed:\n%s\n--- text ---\n%s", errs, t1);
    char *t2 = print_mod(m2, locs);
    ck_assert_str_eq(t1, t2);
    free(t2);
    free(errs);
    arena_free(a);
    return t1;
}

/* Parse text expected to fail; returns the rendered diagnostics. */
static char *parse_fail(const char *text)
{
    Arena *a = arena_new();
    Diag d;
    diag_init(&d, a);
    Module *m = ir_parse(a, "bad.tir", text, strlen(text), &d);
    ck_assert_msg(m == NULL, "parse of bad input succeeded:\n%s", text);
    ck_assert_int_gt(d.nerrors, 0);
    char *s = diag_text(&d);
    arena_free(a);
    return s;
}

#define ASSERT_HAS(hay, needle) ck_assert_msg(strstr((hay), (needle)) != NULL, "missing '%s' in:\n%s", (needle), (hay))

/* ---- tests ---- */

START_TEST(vector_add_round_trip)
{
    Kit k;
    build_vector_add(&k);
    ck_assert_int_eq(ir_verify(k.m, "build", &k.d), 0);
    char *t = check_round_trip(k.m, false);
    ASSERT_HAS(t, "kernel @vector_add(%X: tensor<f32[N]>, %Y: tensor<f32[N]>, %Z: tensor<f32[N]>) dims(%N)");
    ASSERT_HAS(t, "consts(BLOCK: int = 1024, CAUSAL: bool = false, T: dtype = bf16, SCALE: float = 0.1)");
    ASSERT_HAS(t, "load %X, %");
    ASSERT_HAS(t, "{extents = [1024], mask = 1} : tile<1024xf32>");
    ASSERT_HAS(t, "grid:\n  %0 = const {value = 1023} : i32\n  %1 = add %N, %0 : i32\n");
    ASSERT_HAS(t, "yield %3, %4, %4\nbody:\n");
    ASSERT_HAS(t, "source \"k.tile\"");
    free(t);
    t = check_round_trip(k.m, true);
    ASSERT_HAS(t, "loc(3:1)");
    ASSERT_HAS(t, "loc(1:40)");
    free(t);
    arena_free(k.a);
}
END_TEST

START_TEST(loop_if_round_trip)
{
    Kit k;
    build_loop_kernel(&k);
    ck_assert_int_eq(ir_verify(k.m, "build", &k.d), 0);
    char *t = check_round_trip(k.m, false);
    ASSERT_HAS(t, "= for %5, %N, %6, %7, %8 {pipeline = 2} {\n  ^(%11: i32, %12: tile<128xf32>, %13: tile<128xf32>):\n");
    ASSERT_HAS(t, "const {value = -inf} : tile<128xf32>");
    ASSERT_HAS(t, "cmp %11, %16 {pred = lt} : bool");
    ASSERT_HAS(t, "} else {\n      yield %13\n    } : tile<128xf32>\n");
    ASSERT_HAS(t, "reduce %9 {axis = 0, kind = sum} : f32");
    free(t);
    free(check_round_trip(k.m, true));
    arena_free(k.a);
}
END_TEST

/* Parsed ops get their line in the .tir file, or loc(L:C) in the source file. */
START_TEST(parse_locations)
{
    const char *text =
        "// tilec tir\n"
        "source \"a.tile\"\n"
        "kernel @k(%X: tensor<f32[N]>) dims(%N) {\n"
        "grid:\n"
        "  %0 = const {value = 1} : i32 loc(7:3)\n"
        "  yield %0, %0, %0\n"
        "body:\n"
        "    %1 = block_id {axis = 0} : i32\n"
        "}\n";
    Arena *a = arena_new();
    Diag d;
    diag_init(&d, a);
    Module *m = ir_parse(a, "x.tir", text, strlen(text), &d);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m->source_name, "a.tile");
    Func *f = m->funcs[0];
    ck_assert_str_eq(f->grid.ops[0]->loc.file, "a.tile");
    ck_assert_int_eq(f->grid.ops[0]->loc.line, 7);
    ck_assert_int_eq(f->grid.ops[0]->loc.col, 3);
    ck_assert_str_eq(f->grid.ops[1]->loc.file, "x.tir");
    ck_assert_int_eq(f->grid.ops[1]->loc.line, 6);
    ck_assert_int_eq(f->grid.ops[1]->loc.col, 3);
    ck_assert_int_eq(f->body.ops[0]->loc.line, 8);
    ck_assert_int_eq(f->body.ops[0]->loc.col, 5);
    arena_free(a);
}
END_TEST

static void float_case(double v, const char *spelled)
{
    Kit k;
    kit_init(&k, "f");
    Builder g = ir_builder_at_end(k.f, &k.f->grid);
    ValId one = ir_const_int(&g, type_scalar(DT_I32), 1);
    ir_build(&g, OP_YIELD, (ValId[]){ one, one, one }, 3, NULL, 0);
    ir_const_float(&k.b, type_scalar(DT_F64), v);
    char *t = check_round_trip(k.m, false);
    char want[128];
    snprintf(want, sizeof want, "const {value = %s} : f64", spelled);
    ASSERT_HAS(t, want);
    Arena *a = arena_new();
    Diag d;
    diag_init(&d, a);
    Module *m = ir_parse(a, "f.tir", t, strlen(t), &d);
    double got = m->funcs[0]->body.ops[0]->fattr;
    if (isnan(v))
        ck_assert(isnan(got));
    else
        ck_assert_msg(memcmp(&got, &v, sizeof v) == 0, "%s: got %.17g want %.17g", spelled, got, v);
    arena_free(a);
    free(t);
    arena_free(k.a);
}

START_TEST(float_round_trip)
{
    float_case(0.1, "0.1");
    float_case(1e-30, "1e-30");
    float_case(-INFINITY, "-inf");
    float_case(INFINITY, "inf");
    float_case(NAN, "nan");
    float_case(1.0, "1.0");
    float_case(-0.0, "-0.0");
    float_case(1.0 / 3.0, "0.3333333333333333");
    float_case(5e-324, "5e-324");
    float_case(1.7976931348623157e308, "1.7976931348623157e+308");
    float_case(123456789.0, "123456789.0");
}
END_TEST

static const char *HDR = "kernel @k(%X: tensor<f32[N]>) dims(%N) {\ngrid:\n  %0 = const {value = 1} : i32\n"
                         "  yield %0, %0, %0\nbody:\n";

static char *bad_body(const char *body)
{
    static char buf[2048];
    snprintf(buf, sizeof buf, "%s%s}\n", HDR, body);
    return parse_fail(buf);
}

START_TEST(parse_errors)
{
    char *e;
    e = bad_body("  %1 = add %0, %7 : i32\n");
    ASSERT_HAS(e, "bad.tir:6:16: error: undefined value %7");
    free(e);
    e = bad_body("  %1 = foo %0 : i32\n");
    ASSERT_HAS(e, "bad.tir:6:8: error: unknown op 'foo'");
    free(e);
    e = bad_body("  %1 = add %0, %0 : \n");
    ASSERT_HAS(e, "bad.tir:6:21: error: expected type, got end of line");
    free(e);
    e = bad_body("  %1 = add %0, %0 : tile<0x4xf32>\n");
    ASSERT_HAS(e, "bad tile shape '0x4xf32'");
    free(e);
    e = bad_body("  %1 = add %0, %0 : tile<4xf33>\n");
    ASSERT_HAS(e, "unknown element type 'f33'");
    free(e);
    e = bad_body("  %0 = add %0, %0 : i32\n");
    ASSERT_HAS(e, "value %0 defined twice");
    free(e);
    e = bad_body("  %1 = add %0, %0 {axis = 1} : i32\n");
    ASSERT_HAS(e, "unknown attribute 'axis' for op 'add'");
    free(e);
    e = bad_body("  %1, %2 = add %0, %0 : i32\n");
    ASSERT_HAS(e, "op 'add' defines 2 result(s) but 1 result type(s) are given");
    free(e);
    e = bad_body("  %1 = cmp %0, %0 {pred = lq} : bool\n");
    ASSERT_HAS(e, "unknown predicate 'lq'");
    free(e);
    e = bad_body("  %1 = const {value = 1.5} : i32\n");
    ASSERT_HAS(e, "expected an integer");
    free(e);
    e = bad_body("  %1 = const {value = 99999999999999999999} : i64\n");
    ASSERT_HAS(e, "out of range");
    free(e);
    e = bad_body("  %1 = if %0 {\n    yield\n  } : i32\n");
    ASSERT_HAS(e, "op 'if' takes 2 region(s), got 1");
    free(e);
    e = bad_body("  %1 = add %0, %0 : i32 $\n");
    ASSERT_HAS(e, "bad.tir:6:25: error: unexpected character '$'");
    free(e);
    e = parse_fail("kernel @k(%X: tensor<f32[N]>) {\nbody:\n");
    ASSERT_HAS(e, "missing '}'");
    free(e);
    e = parse_fail("source \"a.tile\nkernel");
    ASSERT_HAS(e, "unterminated string");
    free(e);
    e = parse_fail("kernel k()");
    ASSERT_HAS(e, "expected a kernel name (@name)");
    free(e);
    /* Parsed but invalid IR: the verifier runs as pass 'parse'. */
    e = bad_body("  %1 = add %0, %N : i64\n");
    ASSERT_HAS(e, "bad.tir:6:3: error: verifier failed after pass 'parse': 'add': result type i64 should be i32");
    free(e);
}
END_TEST

/* Garbage, truncations and byte flips of valid text never crash. */
START_TEST(parse_never_crashes)
{
    Kit k;
    build_loop_kernel(&k);
    char *t = print_mod(k.m, true);
    size_t n = strlen(t);
    uint64_t s = 12345;
    for (int iter = 0; iter < 3000; iter++) {
        char *c = malloc(n + 1);
        memcpy(c, t, n + 1);
        size_t len = n;
        if (iter % 3 == 0)
            len = (size_t)(iter * 7919) % (n + 1);
        for (int j = 0; j < 1 + iter % 4; j++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            c[(s >> 33) % n] = (char)(s >> 17);
        }
        Arena *a = arena_new();
        Diag d;
        diag_init(&d, a);
        Module *m = ir_parse(a, "fz.tir", c, len, &d);
        if (m) {
            char *t2 = print_mod(m, true);
            free(t2);
        }
        arena_free(a);
        free(c);
    }
    free(t);
    arena_free(k.a);
}
END_TEST

START_TEST(layout_and_space_types)
{
    const char *text =
        "kernel @k(%s: f32) {\n"
        "grid:\n"
        "  %0 = const {value = 1} : i32\n"
        "  yield %0, %0, %0\n"
        "body:\n"
        "  %1 = splat %s : tile<16x8xf32, shared, #L3>\n"
        "  %2 = trans %1 : tile<8x16xf32, reg>\n"
        "}\n";
    Arena *a = arena_new();
    Diag d;
    diag_init(&d, a);
    Module *m = ir_parse(a, "l.tir", text, strlen(text), &d);
    ck_assert_ptr_nonnull(m);
    Type *t = ir_type(m->funcs[0], m->funcs[0]->body.ops[0]->res[0]);
    ck_assert_int_eq(t->layout, 3);
    ck_assert_int_eq(t->space, SP_SHARED);
    char *p = print_mod(m, false);
    ASSERT_HAS(p, "%1 = splat %s : tile<16x8xf32, shared, #L3>");
    ASSERT_HAS(p, "%2 = trans %1 : tile<8x16xf32, reg>");
    free(p);
    arena_free(a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ir_text");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, vector_add_round_trip);
    tcase_add_test(tc, loop_if_round_trip);
    tcase_add_test(tc, parse_locations);
    tcase_add_test(tc, float_round_trip);
    tcase_add_test(tc, parse_errors);
    tcase_add_test(tc, parse_never_crashes);
    tcase_add_test(tc, layout_and_space_types);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(suite());
}
