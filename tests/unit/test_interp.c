/* test_interp.c - the Tile IR interpreter (ir/interp.c) on kernels built
 * with the Builder API: windows with tails and masks, loops with carried
 * values, reductions, casts, products, and argument checking. */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ---- IR construction helpers ---- */

static void kit_init(Kit *k, const char *name) { kit_init_at(k, name, "test.tir", 1); }


/* A tensor param; dims[i] is a dim name, or NULL for the static extent ext[i]. */
static ValId tensor_param(Kit *k, const char *name, DType dt, int rank, const char *const *dims,
                          const int64_t *ext)
{
    Type t = type_scalar(dt);
    t.kind = TY_TENSOR;
    t.rank = (uint8_t)rank;
    for (int i = 0; i < rank; i++) {
        if (dims && dims[i]) {
            ir_add_dim(k->f, dims[i]);
            t.dimsym[i] = (int16_t)ir_find_dim(k->f, dims[i]);
            t.shape[i] = -1;
        } else {
            t.shape[i] = ext[i];
        }
    }
    return ir_add_param(k->f, name, t);
}

static Type tile1(DType dt, int64_t n) { return type_tile(dt, 1, &n, SP_ANY); }
static Type tile2(DType dt, int64_t m, int64_t n)
{
    int64_t s[2] = { m, n };
    return type_tile(dt, 2, s, SP_ANY);
}

static Op *op1(Kit *k, OpCode c, const ValId *args, int n, Type rt)
{
    return ir_build(&k->b, c, args, n, &rt, 1);
}

static ValId ci(Kit *k, int64_t v) { return ir_const_int(&k->b, type_scalar(DT_I32), v); }
static ValId bin(Kit *k, OpCode c, ValId x, ValId y)
{
    ValId a[2] = { x, y };
    return ir_build1(&k->b, c, a, 2, *ir_type(k->f, x));
}
static ValId un(Kit *k, OpCode c, ValId x, Type t) { return ir_build1(&k->b, c, &x, 1, t); }

/* LOAD of a window: offs[rank], ext[rank] (0 = scalar index); other may be 0. */
static ValId load(Kit *k, ValId tensor, const ValId *offs, const int64_t *ext, ValId other, Type rt)
{
    int rank = ir_type(k->f, tensor)->rank;
    ValId args[TENSOR_MAXRANK + 2];
    args[0] = tensor;
    memcpy(args + 1, offs, sizeof(ValId) * (size_t)rank);
    if (other)
        args[1 + rank] = other;
    Op *op = ir_build(&k->b, OP_LOAD, args, 1 + rank + (other ? 1 : 0), &rt, 1);
    op->list = arena_alloc(k->a, sizeof(int64_t) * (size_t)rank);
    memcpy(op->list, ext, sizeof(int64_t) * (size_t)rank);
    op->nlist = rank;
    for (int d = 0; d < rank; d++)
        op->iattr[0] |= ext[d] ? 1 << d : 0;
    op->iattr[1] = other != 0;
    return op->res[0];
}

static void store(Kit *k, ValId tensor, const ValId *offs, const int64_t *ext, ValId val)
{
    int rank = ir_type(k->f, tensor)->rank;
    ValId args[TENSOR_MAXRANK + 2];
    args[0] = tensor;
    memcpy(args + 1, offs, sizeof(ValId) * (size_t)rank);
    args[1 + rank] = val;
    Op *op = ir_build(&k->b, OP_STORE, args, 2 + rank, NULL, 0);
    op->list = arena_alloc(k->a, sizeof(int64_t) * (size_t)rank);
    memcpy(op->list, ext, sizeof(int64_t) * (size_t)rank);
    op->nlist = rank;
    for (int d = 0; d < rank; d++)
        op->iattr[0] |= ext[d] ? 1 << d : 0;
}

/* grid = (g0, 1, 1), built in Func.grid */
static void grid1(Kit *k, ValId (*g0)(Kit *))
{
    Builder saved = k->b;
    k->b = ir_builder_at_end(k->f, &k->f->grid);
    ValId g = g0(k), one = ci(k, 1);
    ValId y[3] = { g, one, one };
    ir_build(&k->b, OP_YIELD, y, 3, NULL, 0);
    k->b = saved;
}

static InterpArg targ1(void *data, int64_t n) { return kit_tensor1(data, n); }

static InterpArg targ2(void *data, int64_t m, int64_t n)
{
    InterpArg a = targ1(data, m);
    a.rank = 2;
    a.shape[1] = n;
    a.strides[0] = n;
    a.strides[1] = 1;
    return a;
}

static bool diag_has(const Diag *d, const char *s)
{
    for (int i = 0; i < d->n; i++)
        if (strstr(d->recs[i].msg, s))
            return true;
    return false;
}

/* ---- vector add with a tail ---- */

enum { VBLOCK = 256 };

static ValId vadd_grid(Kit *k)   /* (N + 255) / 256 */
{
    ValId n = k->f->dims[0];
    return bin(k, OP_DIV, bin(k, OP_ADD, n, ci(k, VBLOCK - 1)), ci(k, VBLOCK));
}

static void build_vadd(Kit *k)
{
    const char *dn[1] = { "N" };
    kit_init(k, "vector_add");
    ValId x = tensor_param(k, "X", DT_F32, 1, dn, NULL);
    ValId y = tensor_param(k, "Y", DT_F32, 1, dn, NULL);
    ValId z = tensor_param(k, "Z", DT_F32, 1, dn, NULL);
    grid1(k, vadd_grid);
    Type bt = type_scalar(DT_I32);
    ValId pid = ir_build1(&k->b, OP_BLOCKID, NULL, 0, bt);
    ValId off = bin(k, OP_MUL, pid, ci(k, VBLOCK));
    int64_t ext[1] = { VBLOCK };
    ValId a = load(k, x, &off, ext, 0, tile1(DT_F32, VBLOCK));
    ValId b = load(k, y, &off, ext, 0, tile1(DT_F32, VBLOCK));
    store(k, z, &off, ext, bin(k, OP_ADD, a, b));
}

START_TEST(vector_add_tail)
{
    Kit k;
    build_vadd(&k);
    enum { N = 1000, PAD = 1024 };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N), *z = malloc(sizeof(float) * PAD);
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i * 0.37 - 11.0);
        y[i] = (float)(1.0 / (i + 1.5));
    }
    for (int i = 0; i < PAD; i++)
        z[i] = -777.0f;
    InterpArg args[3] = { targ1(x, N), targ1(y, N), targ1(z, N) };
    int64_t grid[3];
    ck_assert_int_eq(interp_grid(k.f, args, 3, grid, &k.d), 0);
    ck_assert_int_eq(grid[0], 4);
    ck_assert_int_eq(grid[1], 1);
    int rc = interp_run(k.f, args, 3, &k.d);
    if (rc)
        kit_print_diag(&k.d);
    ck_assert_int_eq(rc, 0);
    for (int i = 0; i < N; i++)
        ck_assert_msg(z[i] == x[i] + y[i], "z[%d] = %g, want %g", i, z[i], x[i] + y[i]);
    for (int i = N; i < PAD; i++)
        ck_assert(z[i] == -777.0f);   /* the tail's stores were dropped */
    free(x), free(y), free(z);
    kit_free(&k);
}
END_TEST

START_TEST(dim_disagreement)
{
    Kit k;
    build_vadd(&k);
    float buf[16] = { 0 };
    InterpArg args[3] = { targ1(buf, 10), targ1(buf, 12), targ1(buf, 10) };
    ck_assert_int_ne(interp_run(k.f, args, 3, &k.d), 0);
    ck_assert(k.d.nerrors > 0);
    ck_assert(diag_has(&k.d, "'Y'"));
    ck_assert(diag_has(&k.d, "'N'"));
    /* wrong argument count */
    Diag d2;
    diag_init(&d2, k.a);
    ck_assert_int_ne(interp_run(k.f, args, 2, &d2), 0);
    ck_assert(diag_has(&d2, "takes 3 arguments, got 2"));
    /* wrong rank */
    Diag d3;
    diag_init(&d3, k.a);
    InterpArg bad[3] = { targ1(buf, 4), targ2(buf, 2, 2), targ1(buf, 4) };
    ck_assert_int_ne(interp_run(k.f, bad, 3, &d3), 0);
    ck_assert(diag_has(&d3, "'Y'"));
    kit_free(&k);
}
END_TEST

START_TEST(static_dim_mismatch)
{
    Kit k;
    kit_init(&k, "s");
    int64_t ext[2] = { 4, 8 };
    const char *dn[2] = { "M", NULL };
    tensor_param(&k, "A", DT_F32, 2, dn, ext);
    float buf[64] = { 0 };
    InterpArg args[1] = { targ2(buf, 4, 6) };
    ck_assert_int_ne(interp_run(k.f, args, 1, &k.d), 0);
    ck_assert(diag_has(&k.d, "'A'"));
    ck_assert(diag_has(&k.d, "must be 8"));
    kit_free(&k);
}
END_TEST

/* ---- loop with carried values ---- */

/* acc = 0; cnt = 0; for i in lo..hi step 1 { acc += X[i*8:+8]; cnt += 1 }
 * O[0:+8] = acc; C[0] = cnt */
static void build_loop(Kit *k, int64_t lo_v, int64_t hi_v)
{
    const char *dn[1] = { "N" };
    int64_t e8[1] = { 8 }, e1[1] = { 1 };
    kit_init(k, "loop");
    ValId x = tensor_param(k, "X", DT_F32, 1, dn, NULL);
    ValId o = tensor_param(k, "O", DT_F32, 1, NULL, e8);
    ValId c = tensor_param(k, "C", DT_I32, 1, NULL, e1);
    ValId zero = ir_const_float(&k->b, tile1(DT_F32, 8), 0.0);
    ValId cnt0 = ci(k, 0);
    ValId fargs[5] = { ci(k, lo_v), ci(k, hi_v), ci(k, 1), zero, cnt0 };
    Type rt[2] = { tile1(DT_F32, 8), type_scalar(DT_I32) };
    Op *fo = ir_build(&k->b, OP_FOR, fargs, 5, rt, 2);
    Block *body = ir_op_region(fo, 0);
    ValId iv = ir_block_add_arg(k->f, body, type_scalar(DT_I32), "i");
    ValId acc = ir_block_add_arg(k->f, body, rt[0], "acc");
    ValId cnt = ir_block_add_arg(k->f, body, rt[1], "cnt");
    Builder outer = k->b;
    k->b = ir_builder_at_end(k->f, body);
    ValId off = bin(k, OP_MUL, iv, ci(k, 8));
    ValId t = load(k, x, &off, e8, 0, tile1(DT_F32, 8));
    ValId y[2] = { bin(k, OP_ADD, acc, t), bin(k, OP_ADD, cnt, ci(k, 1)) };
    ir_build(&k->b, OP_YIELD, y, 2, NULL, 0);
    k->b = outer;
    ValId z = ci(k, 0);
    store(k, o, &z, e8, fo->res[0]);
    int64_t e0[1] = { 0 };
    store(k, c, &z, e0, fo->res[1]);
}

START_TEST(loop_carried)
{
    Kit k;
    build_loop(&k, 0, 4);
    float x[32], o[8];
    int32_t c[1] = { -1 };
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i % 7) * 0.5f + 0.25f;
    InterpArg args[3] = { targ1(x, 32), targ1(o, 8), targ1(c, 1) };
    int rc = interp_run(k.f, args, 3, &k.d);
    if (rc)
        kit_print_diag(&k.d);
    ck_assert_int_eq(rc, 0);
    for (int j = 0; j < 8; j++) {
        float want = 0;
        for (int i = 0; i < 4; i++)
            want += x[i * 8 + j];
        ck_assert(fabsf(o[j] - want) < 1e-6f);
    }
    ck_assert_int_eq(c[0], 4);
    kit_free(&k);
}
END_TEST

START_TEST(loop_zero_trips)
{
    Kit k;
    build_loop(&k, 3, 3);
    float x[32] = { 1 }, o[8];
    int32_t c[1] = { -1 };
    for (int j = 0; j < 8; j++)
        o[j] = 5;
    InterpArg args[3] = { targ1(x, 32), targ1(o, 8), targ1(c, 1) };
    ck_assert_int_eq(interp_run(k.f, args, 3, &k.d), 0);
    for (int j = 0; j < 8; j++)
        ck_assert(o[j] == 0.0f);   /* the inits */
    ck_assert_int_eq(c[0], 0);
    kit_free(&k);
}
END_TEST

/* ---- masked loads with `other` ---- */

START_TEST(masked_other)
{
    Kit k;
    const char *dn[1] = { "N" };
    int64_t e8[1] = { 8 };
    kit_init(&k, "masked");
    ValId x = tensor_param(&k, "X", DT_F32, 1, dn, NULL);
    ValId o = tensor_param(&k, "O", DT_F32, 1, NULL, e8);
    ValId off = ci(&k, -2);
    ValId other = ir_const_float(&k.b, type_scalar(DT_F32), -1.5);
    ValId t = load(&k, x, &off, e8, other, tile1(DT_F32, 8));
    ValId t0 = load(&k, x, &off, e8, 0, tile1(DT_F32, 8));
    ValId z = ci(&k, 0);
    store(&k, o, &z, e8, bin(&k, OP_ADD, t, t0));
    float xs[5] = { 1, 2, 3, 4, 5 }, os[8];
    InterpArg args[2] = { targ1(xs, 5), targ1(os, 8) };
    ck_assert_int_eq(interp_run(k.f, args, 2, &k.d), 0);
    float want[8] = { -1.5f, -1.5f, 2, 4, 6, 8, 10, -1.5f };
    for (int i = 0; i < 8; i++)
        ck_assert_msg(os[i] == want[i], "o[%d] = %g, want %g", i, os[i], want[i]);
    kit_free(&k);
}
END_TEST

/* A window dim whose mask bit is cleared but that runs out of bounds. */
START_TEST(cleared_mask_reported)
{
    Kit k;
    const char *dn[1] = { "N" };
    int64_t e8[1] = { 8 };
    kit_init(&k, "unsafe");
    ValId x = tensor_param(&k, "X", DT_F32, 1, dn, NULL);
    ValId z = ci(&k, 0);
    ValId t = load(&k, x, &z, e8, 0, tile1(DT_F32, 8));
    k.f->vals[t].def->iattr[0] = 0;
    float xs[5] = { 0 };
    InterpArg args[1] = { targ1(xs, 5) };
    ck_assert_int_ne(interp_run(k.f, args, 1, &k.d), 0);
    ck_assert(diag_has(&k.d, "out of bounds"));
    kit_free(&k);
}
END_TEST

/* ---- reductions, broadcast, iota/select, 2-D windows ---- */

START_TEST(reductions)
{
    Kit k;
    const char *dn[2] = { "M", "N" };
    int64_t e4[1] = { 4 }, e8[1] = { 8 }, w[2] = { 4, 8 };
    kit_init(&k, "red");
    ValId x = tensor_param(&k, "X", DT_F32, 2, dn, NULL);
    ValId rs = tensor_param(&k, "RS", DT_F32, 1, NULL, e4);
    ValId cm = tensor_param(&k, "CM", DT_F32, 1, NULL, e8);
    ValId bc = tensor_param(&k, "B", DT_F32, 2, NULL, w);
    ValId z = ci(&k, 0), zz[2] = { z, z };
    ValId t = load(&k, x, zz, w, 0, tile2(DT_F32, 4, 8));
    Op *r1 = op1(&k, OP_REDUCE, &t, 1, tile1(DT_F32, 4));
    r1->iattr[0] = 1, r1->iattr[1] = RED_SUM;
    Op *r2 = op1(&k, OP_REDUCE, &t, 1, tile1(DT_F32, 8));
    r2->iattr[0] = 0, r2->iattr[1] = RED_MAX;
    store(&k, rs, &z, e4, r1->res[0]);
    store(&k, cm, &z, e8, r2->res[0]);
    /* B = X - rowsum[:, *] broadcast */
    Op *ex = op1(&k, OP_EXPAND, &r1->res[0], 1, tile2(DT_F32, 4, 1));
    ex->iattr[0] = 1;
    ValId bb = un(&k, OP_BROADCAST, ex->res[0], tile2(DT_F32, 4, 8));
    store(&k, bc, zz, w, bin(&k, OP_SUB, t, bb));
    /* X is 3 x 5: the window reads zeros past the edge */
    float xs[15], rsv[4], cmv[8], bv[32];
    for (int i = 0; i < 15; i++)
        xs[i] = (float)((i * 7) % 11) - 4.0f;
    InterpArg args[4] = { targ2(xs, 3, 5), targ1(rsv, 4), targ1(cmv, 8), targ2(bv, 4, 8) };
    int rc = interp_run(k.f, args, 4, &k.d);
    if (rc)
        kit_print_diag(&k.d);
    ck_assert_int_eq(rc, 0);
    for (int i = 0; i < 4; i++) {
        float s = 0;
        for (int j = 0; j < 5 && i < 3; j++)
            s += xs[i * 5 + j];
        ck_assert(rsv[i] == s);
        for (int j = 0; j < 8; j++) {
            float xv = i < 3 && j < 5 ? xs[i * 5 + j] : 0.0f;
            ck_assert(bv[i * 8 + j] == xv - s);
        }
    }
    for (int j = 0; j < 8; j++) {
        float m = 0;   /* row 3 is out of bounds: 0 */
        for (int i = 0; i < 3 && j < 5; i++)
            m = fmaxf(m, xs[i * 5 + j]);
        ck_assert_msg(cmv[j] == m, "colmax[%d] = %g, want %g", j, cmv[j], m);
    }
    kit_free(&k);
}
END_TEST

/* ---- casts to bf16 ---- */

START_TEST(cast_bf16)
{
    Kit k;
    int64_t e16[1] = { 16 };
    kit_init(&k, "cast");
    ValId x = tensor_param(&k, "X", DT_F32, 1, NULL, e16);
    ValId o = tensor_param(&k, "O", DT_F32, 1, NULL, e16);
    ValId ob = tensor_param(&k, "OB", DT_BF16, 1, NULL, e16);
    ValId z = ci(&k, 0);
    ValId t = load(&k, x, &z, e16, 0, tile1(DT_F32, 16));
    ValId tb = un(&k, OP_CAST, t, tile1(DT_BF16, 16));
    store(&k, ob, &z, e16, tb);
    /* bf16 arithmetic rounds after every op: (tb + tb) * tb in bf16 */
    ValId p = bin(&k, OP_MUL, bin(&k, OP_ADD, tb, tb), tb);
    store(&k, o, &z, e16, un(&k, OP_CAST, p, tile1(DT_F32, 16)));
    float xs[16], os[16];
    uint16_t obs[16];
    for (int i = 0; i < 16; i++)
        xs[i] = 1.0f + (float)i * 0.0123f + (i & 1 ? 0x1p-8f : 0.0f);
    xs[15] = 1.0f + 0x1p-8f;   /* a tie: rounds to even (1.0) */
    InterpArg args[3] = { targ1(xs, 16), targ1(os, 16), targ1(obs, 16) };
    ck_assert_int_eq(interp_run(k.f, args, 3, &k.d), 0);
    for (int i = 0; i < 16; i++) {
        ck_assert_uint_eq(obs[i], tc_f32_to_bf16(xs[i]));
        double b = tc_round_to(DT_BF16, xs[i]);
        double want = tc_round_to(DT_BF16, tc_round_to(DT_BF16, b + b) * b);
        ck_assert(os[i] == (float)want);
    }
    ck_assert_uint_eq(obs[15], 0x3f80);
    kit_free(&k);
}
END_TEST

/* ---- DOT, TRANS, IOTA, CMP/SELECT, IF ---- */

START_TEST(dot_trans_select)
{
    Kit k;
    int64_t w23[2] = { 2, 3 }, w22[2] = { 2, 2 };
    kit_init(&k, "dot");
    ValId a = tensor_param(&k, "A", DT_BF16, 2, NULL, w23);
    ValId b = tensor_param(&k, "B", DT_BF16, 2, NULL, w23);   /* used as B^T */
    ValId c = tensor_param(&k, "C", DT_F32, 2, NULL, w22);
    ValId z = ci(&k, 0), zz[2] = { z, z };
    ValId ta = load(&k, a, zz, w23, 0, tile2(DT_BF16, 2, 3));
    ValId tb = load(&k, b, zz, w23, 0, tile2(DT_BF16, 2, 3));
    ValId tbt = un(&k, OP_TRANS, tb, tile2(DT_BF16, 3, 2));
    ValId acc = ir_const_float(&k.b, tile2(DT_F32, 2, 2), 0.5);
    ValId da[3] = { ta, tbt, acc };
    ValId d = ir_build1(&k.b, OP_DOT, da, 3, tile2(DT_F32, 2, 2));
    /* keep the diagonal: where(rows == cols, d, -d) */
    Op *rows = op1(&k, OP_IOTA, NULL, 0, tile2(DT_I32, 2, 2));
    rows->iattr[0] = 0;
    Op *cols = op1(&k, OP_IOTA, NULL, 0, tile2(DT_I32, 2, 2));
    cols->iattr[0] = 1;
    ValId ca[2] = { rows->res[0], cols->res[0] };
    Op *eq = op1(&k, OP_CMP, ca, 2, tile2(DT_BOOL, 2, 2));
    eq->iattr[0] = CMP_EQ;
    ValId sa[3] = { eq->res[0], d, un(&k, OP_NEG, d, tile2(DT_F32, 2, 2)) };
    ValId sel = ir_build1(&k.b, OP_SELECT, sa, 3, tile2(DT_F32, 2, 2));
    /* if (true) { yield sel * 2 } else { yield sel } */
    ValId cond = ir_const_int(&k.b, type_scalar(DT_BOOL), 1);
    Type rt = tile2(DT_F32, 2, 2);
    Op *ifo = ir_build(&k.b, OP_IF, &cond, 1, &rt, 1);
    Builder outer = k.b;
    k.b = ir_builder_at_end(k.f, ir_op_region(ifo, 0));
    ValId two = ir_const_float(&k.b, rt, 2.0);
    ValId y1 = bin(&k, OP_MUL, sel, two);
    ir_build(&k.b, OP_YIELD, &y1, 1, NULL, 0);
    k.b = ir_builder_at_end(k.f, ir_op_region(ifo, 1));
    ir_build(&k.b, OP_YIELD, &sel, 1, NULL, 0);
    k.b = outer;
    store(&k, c, zz, w22, ifo->res[0]);
    float af[6] = { 1, 2, 3, -1, 0.5f, 4 }, bf[6] = { 0.25f, 1, -2, 3, 1.5f, 0.125f };
    uint16_t ab[6], bb[6];
    for (int i = 0; i < 6; i++)
        ab[i] = tc_f32_to_bf16(af[i]), bb[i] = tc_f32_to_bf16(bf[i]);
    float cs[4];
    InterpArg args[3] = { targ2(ab, 2, 3), targ2(bb, 2, 3), targ2(cs, 2, 2) };
    int rc = interp_run(k.f, args, 3, &k.d);
    if (rc)
        kit_print_diag(&k.d);
    ck_assert_int_eq(rc, 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            double s = 0.5;
            for (int p = 0; p < 3; p++)
                s += af[i * 3 + p] * bf[j * 3 + p];
            double want = 2 * (i == j ? s : -s);
            ck_assert_msg(cs[i * 2 + j] == (float)want, "c[%d][%d] = %g, want %g", i, j, cs[i * 2 + j], want);
        }
    kit_free(&k);
}
END_TEST

/* ---- integer semantics and errors ---- */

START_TEST(int_ops)
{
    Kit k;
    int64_t e4[1] = { 4 };
    kit_init(&k, "ints");
    ValId o = tensor_param(&k, "O", DT_I32, 1, NULL, e4);
    ValId s = ir_add_param(k.f, "s", type_scalar(DT_I32));
    ValId big = ci(&k, 2147483647);
    ValId vals[4] = {
        bin(&k, OP_ADD, big, ci(&k, 1)),     /* wraps */
        bin(&k, OP_DIV, ci(&k, -7), ci(&k, 2)),
        bin(&k, OP_REM, ci(&k, -7), s),
        bin(&k, OP_DIV, ci(&k, 7), s),
    };
    int64_t e0[1] = { 0 };
    for (int i = 0; i < 4; i++) {
        ValId idx = ci(&k, i);
        store(&k, o, &idx, e0, vals[i]);
    }
    int32_t os[4];
    InterpArg args[2] = { targ1(os, 4) };
    memset(&args[1], 0, sizeof args[1]);
    args[1].i = 2;
    ck_assert_int_eq(interp_run(k.f, args, 2, &k.d), 0);
    ck_assert_int_eq(os[0], INT32_MIN);
    ck_assert_int_eq(os[1], -3);
    ck_assert_int_eq(os[2], -1);
    ck_assert_int_eq(os[3], 3);
    /* division by zero is an error, not a crash */
    args[1].i = 0;
    ck_assert_int_ne(interp_run(k.f, args, 2, &k.d), 0);
    ck_assert(diag_has(&k.d, "by zero"));
    kit_free(&k);
}
END_TEST

START_TEST(unknown_op)
{
    Kit k;
    kit_init(&k, "bad");
    ValId c = ci(&k, 1);
    k.f->vals[c].def->code = OP_COUNT + 3;
    ck_assert_int_ne(interp_run(k.f, NULL, 0, &k.d), 0);
    ck_assert(diag_has(&k.d, "internal compiler error"));
    kit_free(&k);
}
END_TEST

static Suite *interp_suite(void)
{
    Suite *s = suite_create("interp");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, vector_add_tail);
    tcase_add_test(tc, dim_disagreement);
    tcase_add_test(tc, static_dim_mismatch);
    tcase_add_test(tc, loop_carried);
    tcase_add_test(tc, loop_zero_trips);
    tcase_add_test(tc, masked_other);
    tcase_add_test(tc, cleared_mask_reported);
    tcase_add_test(tc, reductions);
    tcase_add_test(tc, cast_bf16);
    tcase_add_test(tc, dot_trans_select);
    tcase_add_test(tc, int_ops);
    tcase_add_test(tc, unknown_op);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(interp_suite());
}
