/* test_mask_split.c - the mask_split pass never changes results: kernels are
 * compiled, run through canonicalize + bounds, interpreted, then split and
 * interpreted again on the same inputs; the outputs must be bit-identical,
 * and the loop must have been split where the masks allow it (attention:
 * the guarded form of bodies with products; others: the copied loop). */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "passes/passes.h"
#include "ref.h"

#ifndef TILEC_SOURCE_DIR
#define TILEC_SOURCE_DIR "."
#endif

typedef struct Prog {
    Arena *a;
    Diag d;
    Module *m;
    Func *f;
    StrBuf remarks;
} Prog;

static bool run_passes(Prog *p, const char *only)
{
    PassCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.diag = &p->d;
    ctx.target = tc_target("sm_90a");
    ctx.verify_each = true;
    ctx.remarks = &p->remarks;
    ctx.only = only;
    if (passes_run(p->m, &ctx) || p->d.nerrors) {
        kit_print_diag(&p->d);
        return false;
    }
    return true;
}

/* Compile `src` (canonicalize + bounds applied); NULL src reads FILE from examples/. */
static bool prog_load(Prog *p, const char *file, const char *src, const FeDefine *defs, int ndefs)
{
    memset(p, 0, sizeof *p);
    p->a = arena_new();
    diag_init(&p->d, p->a);
    size_t len = src ? strlen(src) : 0;
    char *text = (char *)src;
    if (!src) {
        char *path = arena_printf(p->a, "%s/examples/%s", TILEC_SOURCE_DIR, file);
        text = tc_read_file(path, &len);
        ck_assert_msg(text != NULL, "cannot read %s", path);
    }
    p->m = fe_compile(p->a, file, text, len, defs, ndefs, &p->d);
    if (!src)
        free(text);
    if (!p->m || p->d.nerrors) {
        kit_print_diag(&p->d);
        return false;
    }
    p->f = p->m->funcs[0];
    return run_passes(p, "canonicalize,bounds");
}

static void prog_free(Prog *p)
{
    sb_free(&p->remarks);
    arena_free(p->a);
}

typedef struct OpCount {
    OpCode code;
    int n;
} OpCount;

static bool count_op(Func *f, Op *op, void *ctx)
{
    OpCount *c = ctx;
    (void)f;
    c->n += op->code == c->code;
    return true;
}

/* ops of one kind in the kernel, nested ones included */
static int nops(Prog *p, OpCode code)
{
    OpCount c = { code, 0 };
    ir_walk(p->f, &p->f->body, count_op, &c);
    return c.n;
}

static int nfor(Prog *p) { return nops(p, OP_FOR); }

static void run(Prog *p, InterpArg *args, int nargs)
{
    if (interp_run(p->f, args, nargs, &p->d)) {
        kit_print_diag(&p->d);
        ck_abort_msg("interp_run failed");
    }
}

static void same_bits(const char *what, const Ten *a, const Ten *b)
{
    size_t bytes = (size_t)a->n * ten_esize(a->dt);
    ck_assert_msg(memcmp(a->data, b->data, bytes) == 0, "%s: outputs differ after mask_split", what);
}

/* ---- attention ---- */

typedef struct AttnCase {
    int64_t h, hk, n;
    bool causal;
} AttnCase;

/* A body with products keeps one loop, the masks behind an if. */
static void attention_case(const AttnCase *c)
{
    FeDefine defs[] = { { "D", "16" }, { "BM", "16" }, { "BN", "16" }, { "CAUSAL", c->causal ? "true" : "false" } };
    Prog p;
    ck_assert(prog_load(&p, "attention.tile", NULL, defs, 4));
    int64_t sq[4] = { 1, c->h, c->n, 16 }, sk[4] = { 1, c->hk, c->n, 16 }, sl[3] = { 1, c->h, c->n };
    uint64_t rng = 7 + (uint64_t)(c->n * 31 + c->hk * 5 + c->causal);
    Ten q = ten_new(DT_BF16, 4, sq), k = ten_new(DT_BF16, 4, sk), v = ten_new(DT_BF16, 4, sk);
    Ten o[2] = { ten_new(DT_BF16, 4, sq), ten_new(DT_BF16, 4, sq) };
    Ten lse[2] = { ten_new(DT_F32, 3, sl), ten_new(DT_F32, 3, sl) };
    ten_random(&q, &rng, 0.05, 2.0);
    ten_random(&k, &rng, 0.05, 2.0);
    ten_random(&v, &rng, 0.05, 2.0);
    for (int run_i = 0; run_i < 2; run_i++) {
        ten_poison(&o[run_i]);
        ten_poison(&lse[run_i]);
        InterpArg args[6] = { ten_arg(&q), ten_arg(&k), ten_arg(&v), ten_arg(&o[run_i]), ten_arg(&lse[run_i]),
                              scalar_arg(0.25, 0) };
        if (run_i == 1) {
            ck_assert_int_eq(nfor(&p), 1);
            int ifs = nops(&p, OP_IF);
            ck_assert(run_passes(&p, "mask_split"));
            ck_assert_int_eq(nfor(&p), 1);
            ck_assert_int_eq(nops(&p, OP_IF), ifs + 1);
        }
        run(&p, args, 6);
    }
    char what[96];
    snprintf(what, sizeof what, "attention H=%lld HK=%lld N=%lld causal=%d", (long long)c->h, (long long)c->hk,
             (long long)c->n, c->causal);
    same_bits(what, &o[0], &o[1]);
    same_bits(what, &lse[0], &lse[1]);
    ck_assert_msg(p.remarks.buf && strstr(p.remarks.buf, "n0 split at "), "%s: no split remark", what);
    ck_assert_msg(strstr(p.remarks.buf, "behind a uniform branch"),
                  "%s: %s", what, p.remarks.buf);
    ten_free(&q), ten_free(&k), ten_free(&v);
    for (int i = 0; i < 2; i++)
        ten_free(&o[i]), ten_free(&lse[i]);
    prog_free(&p);
}

START_TEST(attention_unchanged)
{
    static const int64_t ns[] = { 1, 15, 16, 37, 64 };
    /* _i: 5 sizes x causal x GQA (H/HK = 1 or 2) */
    AttnCase c = { 2, (_i / 10) ? 1 : 2, ns[_i % 5], (_i / 5) % 2 != 0 };
    attention_case(&c);
}
END_TEST

START_TEST(attention_remarks)
{
    FeDefine defs[] = { { "D", "16" }, { "BM", "16" }, { "BN", "16" }, { "CAUSAL", "true" } };
    Prog p;
    ck_assert(prog_load(&p, "attention.tile", NULL, defs, 4));
    ck_assert(run_passes(&p, "launch,mask_split"));   /* launch: the longest rows first */
    const char *r = p.remarks.buf;
    ck_assert(r != NULL);
    ck_assert_msg(strstr(r, "n0 split at min(NK - 16, (((num_blocks.y - 1) - block.y) * 16) - 15)"), "%s", r);
    ck_assert_msg(strstr(r, "masked once n0 >= (((num_blocks.y - 1) - block.y) * 16) + 16; the loop bound already excludes"), "%s", r);
    ck_assert_msg(strstr(r, "masked once n0 >= NK; the loop bound already excludes"), "%s", r);
    prog_free(&p);
}
END_TEST

/* ---- a tail mask with a non-zero lo and a step that does not divide ---- */

static const char tail_src[] =
    "kernel tail<BN: int = 8, LO: int = 3, CUT: int = 5>(X: global f32[N], Y: global f32[N]) grid(1) {\n"
    "  tile acc: f32[BN] = 0;\n"
    "  for i in LO .. N step BN {\n"
    "    tile x = X[i : +BN];\n"
    "    acc += where(iota(BN) + i < N - CUT, x, 0.0);\n"
    "    acc = where(i + CUT >= iota(BN), acc, -1.0);\n"
    "  }\n"
    "  Y[0 : +BN] = acc;\n"
    "}\n";

static void tail_case(int64_t n, const char *lo, const char *cut, int want_for)
{
    FeDefine defs[] = { { "LO", lo }, { "CUT", cut } };
    Prog p;
    ck_assert(prog_load(&p, "tail.tile", tail_src, defs, 2));
    Ten x = ten_new(DT_F32, 1, &n), y[2] = { ten_new(DT_F32, 1, &n), ten_new(DT_F32, 1, &n) };
    uint64_t rng = 99 + (uint64_t)n;
    ten_random(&x, &rng, 0.1, 3.0);
    for (int k = 0; k < 2; k++) {
        ten_poison(&y[k]);
        InterpArg args[2] = { ten_arg(&x), ten_arg(&y[k]) };
        if (k == 1) {
            ck_assert(run_passes(&p, "mask_split"));
            ck_assert_msg(nfor(&p) == want_for, "N=%lld LO=%s CUT=%s: %d loops; %s", (long long)n, lo, cut, nfor(&p), p.remarks.buf ? p.remarks.buf : "");
        }
        run(&p, args, 2);
    }
    char what[64];
    snprintf(what, sizeof what, "tail N=%lld LO=%s CUT=%s", (long long)n, lo, cut);
    same_bits(what, &y[0], &y[1]);
    ten_free(&x), ten_free(&y[0]), ten_free(&y[1]);
    prog_free(&p);
}

START_TEST(tail_unchanged)
{
    static const int64_t ns[] = { 1, 3, 8, 11, 12, 13, 20, 29, 64 };
    for (int i = 0; i < (int)TC_COUNTOF(ns); i++) {
        tail_case(ns[i], "3", "5", 2);
        tail_case(ns[i], "0", "0", 2);
        tail_case(ns[i], "7", "2", 2);
        tail_case(ns[i], "7", "-4", 1);   /* N + 4 may wrap at 32 bits: kept */
    }
}
END_TEST

/* A condition that is not affine in the iv (i * 2) or uses eq keeps the loop. */
static const char keep_src[] =
    "kernel keep<BN: int = 8>(X: global f32[N], Y: global f32[N]) grid(1) {\n"
    "  tile acc: f32[BN] = 0;\n"
    "  for i in 0 .. N step BN {\n"
    "    tile x = X[i : +BN];\n"
    "    acc += where(iota(BN) + i * 2 < N, x, 0.0);\n"
    "    acc = where(iota(BN) + i == N, acc, x);\n"
    "  }\n"
    "  Y[0 : +BN] = acc;\n"
    "}\n";

START_TEST(not_split)
{
    Prog p;
    ck_assert(prog_load(&p, "keep.tile", keep_src, NULL, 0));
    ck_assert(run_passes(&p, "mask_split"));
    ck_assert_int_eq(nfor(&p), 1);
    prog_free(&p);
}
END_TEST

static Suite *mask_split_suite(void)
{
    Suite *s = suite_create("mask_split");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, attention_unchanged, 0, 20);
    tcase_add_test(tc, attention_remarks);
    tcase_add_test(tc, tail_unchanged);
    tcase_add_test(tc, not_split);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(mask_split_suite());
}
