/* test_verify.c - the Tile IR verifier: valid kernels verify clean; each
 * broken invariant (scoping, arity, type rules, regions, windows, grid) is
 * reported once with the op's location, its name and what is wrong. */
#include <check.h>

#include "check_main.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

typedef struct Kit {
    Arena *a;
    Module *m;
    Func *f;
    Builder b;
    Diag d;
    ValId x, n;    /* tensor X: f32[N], dim N */
} Kit;

static const Type *I32(void)
{
    static Type t;
    t = type_scalar(DT_I32);
    return &t;
}

static Type tile1(DType dt, int64_t n) { return type_tile(dt, 1, &n, SP_ANY); }
static Type tile2(DType dt, int64_t m, int64_t n) { return type_tile(dt, 2, (int64_t[]){ m, n }, SP_ANY); }

/* A kernel with X: f32[N], a valid grid (N, 1, 1), an empty body. */
static void kit_init(Kit *k)
{
    k->a = arena_new();
    k->m = ir_module_new(k->a, "v.tile");
    k->f = ir_func_new(k->m, "k", (Loc){ "v.tile", 1, 1 });
    diag_init(&k->d, k->a);
    Type t = type_scalar(DT_F32);
    t.kind = TY_TENSOR;
    t.rank = 1;
    k->n = ir_add_dim(k->f, "N");
    t.dimsym[0] = 0;
    t.shape[0] = -1;
    k->x = ir_add_param(k->f, "X", t);
    Builder g = ir_builder_at_end(k->f, &k->f->grid);
    g.loc = (Loc){ "v.tile", 1, 30 };
    ValId one = ir_const_int(&g, *I32(), 1);
    ir_build(&g, OP_YIELD, (ValId[]){ k->n, one, one }, 3, NULL, 0);
    k->b = ir_builder_at_end(k->f, &k->f->body);
    k->b.loc = (Loc){ "v.tile", 2, 5 };
}

static char *verify_text(Kit *k, int *nerr)
{
    *nerr = ir_verify(k->m, "test", &k->d);
    StrBuf sb = { 0 };
    diag_render(&k->d, &sb);
    return sb.buf ? sb_take(&sb) : calloc(1, 1);
}

/* Exactly the expected errors (count), the first containing `want`. */
static void expect_errors(Kit *k, int count, const char *want)
{
    int n;
    char *s = verify_text(k, &n);
    ck_assert_msg(n == count, "expected %d error(s), got %d:\n%s", count, n, s);
    ck_assert_msg(strstr(s, want) != NULL, "missing '%s' in:\n%s", want, s);
    ck_assert_msg(strstr(s, "verifier failed after pass 'test': ") != NULL, "no pass name in:\n%s", s);
    free(s);
    arena_free(k->a);
}

static Op *load1(Kit *k, Builder *b, ValId off, int64_t ext, Type rt)
{
    Op *ld = ir_build(b, OP_LOAD, (ValId[]){ k->x, off }, 2, &rt, 1);
    ld->list = arena_alloc(k->a, sizeof(int64_t));
    ld->list[0] = ext;
    ld->nlist = 1;
    ld->iattr[0] = 1;
    return ld;
}

/* ---- valid IR ---- */

START_TEST(valid_kernel_is_clean)
{
    Kit k;
    kit_init(&k);
    Type t = tile1(DT_F32, 128), f32 = type_scalar(DT_F32), b1 = type_scalar(DT_BOOL);
    ValId zero = ir_const_int(&k.b, *I32(), 0), one = ir_const_int(&k.b, *I32(), 1);
    ValId init = ir_const_float(&k.b, t, 0.0);
    Op *loop = ir_build(&k.b, OP_FOR, (ValId[]){ zero, k.n, one, init }, 4, &t, 1);
    Block *body = ir_op_region(loop, 0);
    ValId iv = ir_block_add_arg(k.f, body, *I32(), NULL), acc = ir_block_add_arg(k.f, body, t, NULL);
    Builder lb = ir_builder_at_end(k.f, body);
    ValId ld = load1(&k, &lb, iv, 128, t)->res[0];
    Op *c = ir_build(&lb, OP_CMP, (ValId[]){ iv, zero }, 2, &b1, 1);
    Op *iff = ir_build(&lb, OP_IF, &c->res[0], 1, &t, 1);
    Builder tb = ir_builder_at_end(k.f, ir_op_region(iff, 0));
    ValId s = ir_build1(&tb, OP_ADD, (ValId[]){ acc, ld }, 2, t);
    ir_build(&tb, OP_YIELD, &s, 1, NULL, 0);
    Builder eb = ir_builder_at_end(k.f, ir_op_region(iff, 1));
    ir_build(&eb, OP_YIELD, &acc, 1, NULL, 0);
    ir_build(&lb, OP_YIELD, &iff->res[0], 1, NULL, 0);
    Op *r = ir_build(&k.b, OP_REDUCE, &loop->res[0], 1, &f32, 1);
    r->iattr[1] = RED_MAX;
    Type t21 = tile2(DT_F32, 128, 1), t24 = tile2(DT_F32, 128, 4);
    Op *e = ir_build(&k.b, OP_EXPAND, &loop->res[0], 1, &t21, 1);
    e->iattr[0] = 1;
    ValId bc = ir_build1(&k.b, OP_BROADCAST, &e->res[0], 1, t24);
    ValId tr = ir_build1(&k.b, OP_TRANS, &bc, 1, tile2(DT_F32, 4, 128));
    ValId acc2 = ir_const_float(&k.b, tile2(DT_F32, 128, 128), 0.0);
    ir_build1(&k.b, OP_DOT, (ValId[]){ bc, tr, acc2 }, 3, tile2(DT_F32, 128, 128));
    Op *st = ir_build(&k.b, OP_STORE, (ValId[]){ k.x, zero, r->res[0] }, 3, NULL, 0);
    st->list = arena_alloc(k.a, sizeof(int64_t));
    st->nlist = 1;
    int n;
    char *txt = verify_text(&k, &n);
    ck_assert_msg(n == 0, "valid IR rejected:\n%s", txt);
    free(txt);
    arena_free(k.a);
}
END_TEST

/* ---- scoping ---- */

START_TEST(use_before_def)
{
    Kit k;
    kit_init(&k);
    Op *add = ir_build(&k.b, OP_ADD, (ValId[]){ k.n, k.n }, 2, I32(), 1);
    ValId later = ir_const_int(&k.b, *I32(), 3);
    add->args[1] = later;
    expect_errors(&k, 1, "v.tile:2:5: error: verifier failed after pass 'test': 'add': operand #1 is used before its definition");
}
END_TEST

START_TEST(undefined_value)
{
    Kit k;
    kit_init(&k);
    ValId ghost = ir_new_value(k.f, *I32(), NULL);
    ir_build(&k.b, OP_ADD, (ValId[]){ k.n, ghost }, 2, I32(), 1);
    expect_errors(&k, 1, "'add': operand #1 is never defined");
}
END_TEST

START_TEST(region_arg_outside_region)
{
    Kit k;
    kit_init(&k);
    ValId zero = ir_const_int(&k.b, *I32(), 0);
    Op *loop = ir_build(&k.b, OP_FOR, (ValId[]){ zero, k.n, zero }, 3, NULL, 0);
    ValId iv = ir_block_add_arg(k.f, ir_op_region(loop, 0), *I32(), NULL);
    Builder lb = ir_builder_at_end(k.f, ir_op_region(loop, 0));
    ir_build(&lb, OP_YIELD, NULL, 0, NULL, 0);
    ir_build(&k.b, OP_ADD, (ValId[]){ iv, zero }, 2, I32(), 1);
    expect_errors(&k, 1, "'add': operand #0 is used outside the region (or grid) that defines it");
}
END_TEST

START_TEST(grid_value_in_body)
{
    Kit k;
    kit_init(&k);
    ValId gv = k.f->grid.ops[0]->res[0];
    ir_build(&k.b, OP_ADD, (ValId[]){ gv, gv }, 2, I32(), 1);
    expect_errors(&k, 2, "operand #0 is used outside the region (or grid)");
}
END_TEST

START_TEST(defined_twice)
{
    Kit k;
    kit_init(&k);
    Op *a = ir_build(&k.b, OP_ADD, (ValId[]){ k.n, k.n }, 2, I32(), 1);
    Op *b = ir_build(&k.b, OP_SUB, (ValId[]){ k.n, k.n }, 2, I32(), 1);
    b->res[0] = a->res[0];
    expect_errors(&k, 2, "'sub': result #0 is defined a second time");
}
END_TEST

/* ---- arity and type rules ---- */

START_TEST(wrong_arity)
{
    Kit k;
    kit_init(&k);
    ir_build(&k.b, OP_ADD, &k.n, 1, I32(), 1);
    expect_errors(&k, 1, "'add': takes 2 operand(s), got 1");
}
END_TEST

START_TEST(elementwise_mismatch)
{
    Kit k;
    kit_init(&k);
    ValId f = ir_const_float(&k.b, type_scalar(DT_F32), 1.0);
    ir_build(&k.b, OP_MUL, (ValId[]){ k.n, f }, 2, I32(), 1);
    expect_errors(&k, 1, "'mul': operand types differ: i32 vs f32");
}
END_TEST

START_TEST(elementwise_result_shape)
{
    Kit k;
    kit_init(&k);
    ValId t = ir_const_float(&k.b, tile1(DT_F32, 64), 1.0);
    ir_build(&k.b, OP_EXP, &t, 1, (Type[]){ tile1(DT_F32, 32) }, 1);
    expect_errors(&k, 1, "'exp': result type tile<32xf32> should be tile<64xf32> (the operand type)");
}
END_TEST

START_TEST(cmp_result_not_bool)
{
    Kit k;
    kit_init(&k);
    ir_build(&k.b, OP_CMP, (ValId[]){ k.n, k.n }, 2, I32(), 1);
    expect_errors(&k, 1, "'cmp': result type i32 should be bool (bool of the operand shape)");
}
END_TEST

START_TEST(bad_dot_shapes)
{
    Kit k;
    kit_init(&k);
    ValId a = ir_const_float(&k.b, tile2(DT_BF16, 64, 32), 0.0);
    ValId b = ir_const_float(&k.b, tile2(DT_BF16, 16, 64), 0.0);
    ValId c = ir_const_float(&k.b, tile2(DT_F32, 64, 64), 0.0);
    ir_build1(&k.b, OP_DOT, (ValId[]){ a, b, c }, 3, tile2(DT_F32, 64, 64));
    expect_errors(&k, 1, "'dot': shapes do not fit [M,K] x [K,N] + [M,N]: tile<64x32xbf16> x tile<16x64xbf16>");
}
END_TEST

START_TEST(dot_accumulator_dtype)
{
    Kit k;
    kit_init(&k);
    ValId a = ir_const_float(&k.b, tile2(DT_BF16, 64, 32), 0.0);
    ValId b = ir_const_float(&k.b, tile2(DT_BF16, 32, 64), 0.0);
    ValId c = ir_const_float(&k.b, tile2(DT_BF16, 64, 64), 0.0);
    ir_build1(&k.b, OP_DOT, (ValId[]){ a, b, c }, 3, tile2(DT_BF16, 64, 64));
    expect_errors(&k, 1, "'dot': accumulator must be f32 for bf16 operands");
}
END_TEST

START_TEST(bad_broadcast_and_splat)
{
    Kit k;
    kit_init(&k);
    ValId t = ir_const_float(&k.b, tile2(DT_F32, 2, 4), 0.0);
    ir_build1(&k.b, OP_BROADCAST, &t, 1, tile2(DT_F32, 8, 4));
    ir_build1(&k.b, OP_SPLAT, &k.n, 1, tile1(DT_F32, 4));
    int n;
    char *s = verify_text(&k, &n);
    ck_assert_int_eq(n, 2);
    ck_assert_msg(strstr(s, "'broadcast': dim 0 of tile<2x4xf32> is neither 8 nor 1"), "%s", s);
    ck_assert_msg(strstr(s, "'splat': changes the dtype: i32 to tile<4xf32>"), "%s", s);
    free(s);
    arena_free(k.a);
}
END_TEST

START_TEST(reduce_result)
{
    Kit k;
    kit_init(&k);
    ValId t = ir_const_float(&k.b, tile2(DT_F32, 2, 4), 0.0);
    Op *r = ir_build(&k.b, OP_REDUCE, &t, 1, (Type[]){ tile1(DT_F32, 4) }, 1);
    r->iattr[0] = 1;
    expect_errors(&k, 1, "'reduce': result type tile<4xf32> should be tile<2xf32> (the reduced operand type)");
}
END_TEST

/* ---- regions ---- */

START_TEST(yield_count_mismatch)
{
    Kit k;
    kit_init(&k);
    Type t = tile1(DT_F32, 16);
    ValId zero = ir_const_int(&k.b, *I32(), 0), init = ir_const_float(&k.b, t, 0.0);
    Op *loop = ir_build(&k.b, OP_FOR, (ValId[]){ zero, k.n, zero, init }, 4, &t, 1);
    Block *body = ir_op_region(loop, 0);
    ir_block_add_arg(k.f, body, *I32(), NULL);
    ir_block_add_arg(k.f, body, t, NULL);
    Builder lb = ir_builder_at_end(k.f, body);
    lb.loc = (Loc){ "v.tile", 9, 7 };
    ir_build(&lb, OP_YIELD, NULL, 0, NULL, 0);
    expect_errors(&k, 1, "v.tile:9:7: error: verifier failed after pass 'test': 'yield': yields 0 value(s) but the enclosing 'for' has 1 result(s)");
}
END_TEST

START_TEST(for_carried_type_mismatch)
{
    Kit k;
    kit_init(&k);
    Type t = tile1(DT_F32, 16);
    ValId zero = ir_const_int(&k.b, *I32(), 0), init = ir_const_float(&k.b, t, 0.0);
    Op *loop = ir_build(&k.b, OP_FOR, (ValId[]){ zero, k.n, zero, init }, 4, &t, 1);
    Block *body = ir_op_region(loop, 0);
    ir_block_add_arg(k.f, body, *I32(), NULL);
    ValId arg = ir_block_add_arg(k.f, body, tile1(DT_F16, 16), NULL);
    Builder lb = ir_builder_at_end(k.f, body);
    ir_build(&lb, OP_YIELD, &arg, 1, NULL, 0);
    int n;
    char *s = verify_text(&k, &n);
    ck_assert_int_eq(n, 2);
    ck_assert_msg(strstr(s, "'for': carried value #0: region argument is tile<16xf16> but result is tile<16xf32>"), "%s", s);
    ck_assert_msg(strstr(s, "'yield': yielded value #0 is tile<16xf16> but result #0 of 'for' is tile<16xf32>"), "%s", s);
    free(s);
    arena_free(k.a);
}
END_TEST

START_TEST(if_rules)
{
    Kit k;
    kit_init(&k);
    Op *iff = ir_build(&k.b, OP_IF, &k.n, 1, I32(), 1);
    Builder tb = ir_builder_at_end(k.f, ir_op_region(iff, 0));
    ir_build(&tb, OP_YIELD, &k.n, 1, NULL, 0);
    int n;
    char *s = verify_text(&k, &n);
    ck_assert_int_eq(n, 2);
    ck_assert_msg(strstr(s, "'if': condition must be a bool scalar, got i32"), "%s", s);
    ck_assert_msg(strstr(s, "'if': region 1 does not end in 'yield'"), "%s", s);
    free(s);
    arena_free(k.a);
}
END_TEST

START_TEST(yield_misplaced)
{
    Kit k;
    kit_init(&k);
    ir_build(&k.b, OP_YIELD, NULL, 0, NULL, 0);
    expect_errors(&k, 1, "'yield': 'yield' may only be the last op of a region or of the grid block");
}
END_TEST

START_TEST(grid_rules)
{
    Kit k;
    kit_init(&k);
    k.f->grid.ops[1]->nargs = 2;
    expect_errors(&k, 1, "v.tile:1:30: error: verifier failed after pass 'test': 'yield': the grid block yields 2 value(s), needs 3 i32");
}
END_TEST

/* ---- memory ---- */

START_TEST(load_extents_wrong)
{
    Kit k;
    kit_init(&k);
    ValId zero = ir_const_int(&k.b, *I32(), 0);
    Op *ld = load1(&k, &k.b, zero, 128, tile1(DT_F32, 64));
    (void)ld;
    Op *ld2 = load1(&k, &k.b, zero, 128, tile1(DT_F32, 128));
    ld2->nlist = 0;
    int n;
    char *s = verify_text(&k, &n);
    ck_assert_int_eq(n, 2);
    ck_assert_msg(strstr(s, "'load': result type tile<64xf32> should be tile<128xf32> (the window type)"), "%s", s);
    ck_assert_msg(strstr(s, "'load': has 0 window extents for a rank-1 tensor"), "%s", s);
    free(s);
    arena_free(k.a);
}
END_TEST

START_TEST(load_operand_rules)
{
    Kit k;
    kit_init(&k);
    ValId f = ir_const_float(&k.b, type_scalar(DT_F32), 0.0);
    load1(&k, &k.b, f, 128, tile1(DT_F32, 128));
    Op *bad = ir_build(&k.b, OP_LOAD, (ValId[]){ k.x }, 1, (Type[]){ tile1(DT_F32, 128) }, 1);
    (void)bad;
    ir_build(&k.b, OP_ADD, (ValId[]){ k.x, k.x }, 2, I32(), 1);
    int n;
    char *s = verify_text(&k, &n);
    ck_assert_msg(n == 4, "%d:\n%s", n, s);
    ck_assert_msg(strstr(s, "'load': offset operand #1 must be an i32 scalar, got f32"), "%s", s);
    ck_assert_msg(strstr(s, "'load': needs 2 operands for a rank-1 tensor, got 1"), "%s", s);
    ck_assert_msg(strstr(s, "'add': operand #0 is a tensor; only load/store take tensors"), "%s", s);
    free(s);
    arena_free(k.a);
}
END_TEST

START_TEST(store_value_mismatch)
{
    Kit k;
    kit_init(&k);
    ValId zero = ir_const_int(&k.b, *I32(), 0);
    ValId v = ir_const_float(&k.b, tile1(DT_F16, 128), 0.0);
    Op *st = ir_build(&k.b, OP_STORE, (ValId[]){ k.x, zero, v }, 3, NULL, 0);
    st->list = arena_alloc(k.a, sizeof(int64_t));
    st->list[0] = 128;
    st->nlist = 1;
    expect_errors(&k, 1, "'store': stored value tile<128xf16> does not match the window type tile<128xf32>");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("verify");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, valid_kernel_is_clean);
    tcase_add_test(tc, use_before_def);
    tcase_add_test(tc, undefined_value);
    tcase_add_test(tc, region_arg_outside_region);
    tcase_add_test(tc, grid_value_in_body);
    tcase_add_test(tc, defined_twice);
    tcase_add_test(tc, wrong_arity);
    tcase_add_test(tc, elementwise_mismatch);
    tcase_add_test(tc, elementwise_result_shape);
    tcase_add_test(tc, cmp_result_not_bool);
    tcase_add_test(tc, bad_dot_shapes);
    tcase_add_test(tc, dot_accumulator_dtype);
    tcase_add_test(tc, bad_broadcast_and_splat);
    tcase_add_test(tc, reduce_result);
    tcase_add_test(tc, yield_count_mismatch);
    tcase_add_test(tc, for_carried_type_mismatch);
    tcase_add_test(tc, if_rules);
    tcase_add_test(tc, yield_misplaced);
    tcase_add_test(tc, grid_rules);
    tcase_add_test(tc, load_extents_wrong);
    tcase_add_test(tc, load_operand_rules);
    tcase_add_test(tc, store_value_mismatch);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(suite());
}
