/* test_fa4num.c - FlashAttention 4's two numeric techniques as the
 * compiler applies them: the emulated exp2 (tc_exp2_emu, the exp2 op's
 * {emu = K} elements) against exp2 over a dense sweep and at the special
 * values, and the lazy_rescale and exp2_emu passes on examples/attention.tile
 * through the interpreter against the untransformed kernel and a double
 * reference. */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "passes/passes.h"
#include "ref.h"

#ifndef TILEC_SOURCE_DIR
#define TILEC_SOURCE_DIR "."
#endif

static uint32_t bits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* bf16 bit pattern of x rounded to nearest even (x from double: one rounding). */
static int bf16_bits(double x) { return (int)(bits((float)tc_round_to(DT_BF16, x)) >> 16); }

/* The sweep the documentation states (docs/language.md, "Accuracy of the
 * math ops"): every multiple of 2^-12 in [-127, 0] (520193 inputs, the
 * range an online softmax's exp2 sees), the emulated value rounded to
 * bf16 against exp2 in double rounded once to bf16. */
START_TEST(emu_sweep_within_one_bf16_ulp)
{
    long n = 0, ok = 0, n126 = 0, ok126 = 0;
    double worst_rel = 0;
    for (long i = 0; i <= 127L * 4096; i++) {
        float x = (float)(-(double)i / 4096.0);
        double want = exp2((double)x);
        float got = tc_exp2_emu(x);
        int d = abs(bf16_bits(got) - bf16_bits(want));
        n++, ok += d <= 1;
        if (x >= -126.0f) {
            n126++, ok126 += d <= 1;
            worst_rel = fmax(worst_rel, fabs((double)got - want) / want);
        }
    }
    printf("exp2 emulation: %ld of %ld inputs in [-127, 0] within 1 bf16 ulp (%.3f%%); [-126, 0]: %ld of %ld, "
           "worst relative error %.3g (2^%.2f)\n", ok, n, 100.0 * (double)ok / (double)n, ok126, n126, worst_rel,
           log2(worst_rel));
    ck_assert(ok * 100 >= n * 99);
    ck_assert_int_eq(ok126, n126);            /* every normal result */
    ck_assert(worst_rel < 0x1p-12);           /* the polynomial: about 2^-13 relative */
}
END_TEST

/* Every bf16 value in [-130, 16]: the inputs a bf16 kernel can hand it;
 * within 1 bf16 ulp from -126 on (below, results under 2^-126 flush to 0,
 * as ex2.approx.ftz's: emu_special_values checks those). */
START_TEST(emu_every_bf16_input)
{
    long n = 0, ok = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float x = tc_bf16_to_f32((uint16_t)h);
        if (!(x >= -130.0f && x <= 16.0f))
            continue;
        double want = exp2((double)x);
        n++, ok += x < -126.0f || abs(bf16_bits(tc_exp2_emu(x)) - bf16_bits(want)) <= 1;
    }
    ck_assert(n > 30000);
    ck_assert_int_eq(ok, n);
}
END_TEST

START_TEST(emu_special_values)
{
    ck_assert_uint_eq(bits(tc_exp2_emu(-INFINITY)), 0);          /* +0 */
    ck_assert_uint_eq(bits(tc_exp2_emu(0.0f)), bits(1.0f));
    ck_assert_uint_eq(bits(tc_exp2_emu(-0.0f)), bits(1.0f));
    static const float neg[] = { -126.5f, -127.0f, -128.0f, -150.0f, -1000.0f, -1e30f, -FLT_MAX };
    for (size_t i = 0; i < sizeof neg / sizeof neg[0]; i++)
        ck_assert_uint_eq(bits(tc_exp2_emu(neg[i])), 0);         /* no garbage from exponent underflow */
    ck_assert(isnan(tc_exp2_emu(NAN)));
    ck_assert(isnan(tc_exp2_emu(-NAN)));
    ck_assert(isinf(tc_exp2_emu(INFINITY)) && tc_exp2_emu(INFINITY) > 0);
    ck_assert(isinf(tc_exp2_emu(128.0f)) && isinf(tc_exp2_emu(1e9f)));
    for (int k = -126; k <= 127; k++)                              /* integers: exact powers of two */
        ck_assert_uint_eq(bits(tc_exp2_emu((float)k)), bits(ldexpf(1.0f, k)));
    ck_assert(tc_exp2_emu(8.5f) > 362.0f && tc_exp2_emu(8.5f) < 362.1f);   /* p up to 2^8 and past it */
    /* the element choice: one 8-column group in K, starting at column 0 */
    ck_assert(tc_exp2_emu_col(0, 8) && tc_exp2_emu_col(7, 8) && !tc_exp2_emu_col(8, 8) && tc_exp2_emu_col(64, 8));
    ck_assert(tc_exp2_emu_col(33, 4) && !tc_exp2_emu_col(31, 4) && !tc_exp2_emu_col(0, 0));
}
END_TEST

/* ---- the passes on examples/attention.tile ---- */

typedef struct Run {
    Arena *a;
    Diag d;
    Module *m;
    Func *f;
    char *src;
} Run;

/* Ops of a code (CMP: only `gt`, the lazy maximum's test; the masks
 * compare with `lt` and `ge`), and the exp2's {emu}. */
typedef struct Count { OpCode code; int n; int64_t emu; } Count;

static bool count_visit(Func *f, Op *op, void *vc)
{
    (void)f;
    Count *c = vc;
    if (op->code == c->code &&
        (op->code != OP_CMP || (op->iattr[0] == CMP_GT && ir_type(f, op->res[0])->kind == TY_TILE))) {
        c->n++;
        if (op->code == OP_EXP2 && op->iattr[0])
            c->emu = op->iattr[0];
    }
    return true;
}

static Count count(Func *f, OpCode code)
{
    Count c = { code, 0, 0 };
    ir_walk(f, &f->body, count_visit, &c);
    return c;
}

/* attention.tile (D = 16, 16 x 16 tiles) through the whole pipeline for
 * arch (sm_90a when NULL) with the two options (0 = the pass decides,
 * -1 = off, N), then the interpreter. */
static bool run_on(Run *r, const char *arch, int64_t lazy, int64_t emu, const InterpArg *args)
{
    memset(r, 0, sizeof *r);
    r->a = arena_new();
    diag_init(&r->d, r->a);
    char *path = arena_printf(r->a, "%s/examples/attention.tile", TILEC_SOURCE_DIR);
    size_t len;
    r->src = tc_read_file(path, &len);
    FeDefine defs[] = { { "D", "16" }, { "BM", "16" }, { "BN", "16" } };
    r->m = r->src ? fe_compile(r->a, path, r->src, len, defs, 3, &r->d) : NULL;
    PassCtx ctx = kit_pass_ctx(&r->d, arch ? arch : "sm_90a");
    ctx.lazy_rescale = lazy;
    ctx.exp2_emu = emu;
    if (!r->m || r->d.nerrors || passes_run(r->m, &ctx) || interp_run(r->m->funcs[0], args, 6, &r->d)) {
        kit_print_diag(&r->d);
        return false;
    }
    r->f = r->m->funcs[0];
    return true;
}

static bool run(Run *r, int64_t lazy, int64_t emu, const InterpArg *args)
{
    return run_on(r, NULL, lazy, emu, args);
}

static void run_free(Run *r)
{
    free(r->src);
    arena_free(r->a);
}

typedef struct Case { Ten q, k, v, o, lse; double scale; double *wo, *wl; } Case;

/* Scores spread over about 60 log2 units, so that the running maximum of
 * most rows grows past 8 in some key blocks and stays within 8 in others. */
static void case_new(Case *c, int64_t n)
{
    int64_t sq[4] = { 1, 2, n, 16 }, sl[3] = { 1, 2, n };
    uint64_t rng = 4242;
    c->q = ten_new(DT_BF16, 4, sq), c->k = ten_new(DT_BF16, 4, sq), c->v = ten_new(DT_BF16, 4, sq);
    c->o = ten_new(DT_BF16, 4, sq), c->lse = ten_new(DT_F32, 3, sl);
    ten_random(&c->q, &rng, 0.1, 1.0);
    ten_random(&c->k, &rng, 0.1, 1.0);
    ten_random(&c->v, &rng, 0.1, 1.0);
    for (int64_t j = 0; j < n; j++)   /* later keys larger: maxima that keep growing */
        for (int64_t e = 0; e < 16; e++)
            for (int64_t h = 0; h < 2; h++) {
                int64_t i = (h * n + j) * 16 + e;
                ten_set(&c->k, i, ten_get(&c->k, i) * (1.0 + 3.0 * (double)j / (double)n));
            }
    c->scale = 1.0;
    c->wo = malloc(sizeof(double) * (size_t)c->o.n);
    c->wl = malloc(sizeof(double) * (size_t)c->lse.n);
    ref_attention(1, 2, 2, n, 16, false, &c->q, &c->k, &c->v, 1.0, c->wo, c->wl);
}

static void case_args(Case *c, InterpArg *a)
{
    ten_poison(&c->o);
    ten_poison(&c->lse);
    a[0] = ten_arg(&c->q), a[1] = ten_arg(&c->k), a[2] = ten_arg(&c->v);
    a[3] = ten_arg(&c->o), a[4] = ten_arg(&c->lse), a[5] = scalar_arg(c->scale, 0);
}

static void case_free(Case *c)
{
    ten_free(&c->q), ten_free(&c->k), ten_free(&c->v), ten_free(&c->o), ten_free(&c->lse);
    free(c->wo), free(c->wl);
}

/* Copies of O and LSE of the last run. */
static double *snap(const Ten *t)
{
    double *s = malloc(sizeof(double) * (size_t)t->n);
    for (int64_t i = 0; i < t->n; i++)
        s[i] = ten_get(t, i);
    return s;
}

START_TEST(passes_match_untransformed)
{
    Case c;
    case_new(&c, 77);
    InterpArg a[6];
    Run r;
    /* untransformed: both off */
    case_args(&c, a);
    ck_assert(run(&r, -1, -1, a));
    ck_assert_int_eq(count(r.f, OP_CMP).n, 0);
    ck_assert_int_eq(count(r.f, OP_EXP2).emu, 0);
    run_free(&r);
    double *o0 = snap(&c.o), *l0 = snap(&c.lse);
    ck_assert(ref_check("attention, exact maximum", &c.o, c.wo, 1e-2) <= 1e-2);
    /* the passes' own choice at D = 16 on sm_90a: an exact maximum (16 columns), and every exp2 on
       the MUFU (the accumulators are registers: no emulation there, whatever the rates) */
    case_args(&c, a);
    ck_assert(run(&r, 0, 0, a));
    ck_assert_int_eq(count(r.f, OP_CMP).n, 0);
    ck_assert_int_eq(count(r.f, OP_EXP2).emu, 0);
    run_free(&r);
    ck_assert(ref_check("attention, default passes", &c.o, c.wo, 1e-2) <= 1e-2);
    /* on sm_100a (tensor memory) the MUFU would take 8 times the tensor cores' time
       (8192 / (16 (32 + 32))): one 8-column group in 4 emulated */
    case_args(&c, a);
    ck_assert(run_on(&r, "sm_100a", 0, 0, a));
    ck_assert_int_eq(count(r.f, OP_EXP2).emu, 4);
    run_free(&r);
    ck_assert(ref_check("attention, default passes on sm_100a", &c.o, c.wo, 1e-2) <= 1e-2);
    /* lazy maximum, threshold 8 and 2; then the emulated exp2 on every column, on half */
    static const int64_t opts[][2] = { { 8, -1 }, { 2, -1 }, { -1, 1 }, { -1, 2 }, { 8, 1 } };
    for (size_t t = 0; t < sizeof opts / sizeof opts[0]; t++) {
        case_args(&c, a);
        ck_assert(run(&r, opts[t][0], opts[t][1], a));
        ck_assert_int_eq(count(r.f, OP_CMP).n, opts[t][0] > 0 ? 1 : 0);
        ck_assert_int_eq(count(r.f, OP_EXP2).emu, opts[t][1] > 0 ? opts[t][1] : 0);
        run_free(&r);
        char what[64];
        snprintf(what, sizeof what, "attention, lazy %lld, emu %lld", (long long)opts[t][0], (long long)opts[t][1]);
        ck_assert(ref_check(what, &c.o, c.wo, 1e-2) <= 1e-2);
        ck_assert(ref_check(what, &c.lse, c.wl, 1e-4) <= 1e-4);
        int64_t differ = 0;
        double worst = 0;
        for (int64_t i = 0; i < c.o.n; i++) {
            differ += ten_get(&c.o, i) != o0[i];
            worst = fmax(worst, fabs(ten_get(&c.o, i) - o0[i]));
        }
        for (int64_t i = 0; i < c.lse.n; i++)
            worst = fmax(worst, fabs(ten_get(&c.lse, i) - l0[i]) * 1e-2);
        printf("%s: %lld of %lld O elements differ from the untransformed kernel's, by at most %.3g\n", what,
               (long long)differ, (long long)c.o.n, worst);
        ck_assert(differ > 0);        /* the transformation changed the arithmetic ... */
        ck_assert(worst <= 2e-2);     /* ... within a bf16 output's rounding (|O| <= 1) */
    }
    free(o0), free(l0);
    case_free(&c);
}
END_TEST

/* The pass decisions from the target and head dim (no interpreter). */
static Func *compile_only(Arena *a, Diag *d, const char *arch, const char *dd, int64_t lazy, int64_t emu)
{
    char *path = arena_printf(a, "%s/examples/attention.tile", TILEC_SOURCE_DIR);
    size_t len;
    char *src = tc_read_file(path, &len);
    FeDefine defs[] = { { "D", dd }, { "BM", "64" }, { "BN", "64" } };
    Module *m = src ? fe_compile(a, path, src, len, defs, 3, d) : NULL;
    PassCtx ctx = kit_pass_ctx(d, arch);
    ctx.lazy_rescale = lazy;
    ctx.exp2_emu = emu;
    bool ok = m && !d->nerrors && !passes_run(m, &ctx);
    free(src);
    if (!ok)
        kit_print_diag(d);
    return ok ? m->funcs[0] : NULL;
}

START_TEST(pass_decisions)
{
    static const struct { const char *arch, *d; int lazy; int64_t emu; } want[] = {
        { "sm_86", "64", 0, 0 },   { "sm_86", "128", 1, 0 },  { "sm_90a", "64", 0, 0 },
        { "sm_90a", "128", 1, 0 }, { "sm_100a", "64", 0, 4 }, { "sm_100a", "128", 1, 8 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        Arena *a = arena_new();
        Diag d;
        diag_init(&d, a);
        Func *f = compile_only(a, &d, want[i].arch, want[i].d, 0, 0);
        ck_assert_msg(f, "%s D=%s", want[i].arch, want[i].d);
        ck_assert_int_eq(count(f, OP_CMP).n, want[i].lazy);
        ck_assert_int_eq(count(f, OP_EXP2).emu, want[i].emu);
        f = compile_only(a, &d, want[i].arch, want[i].d, -1, -1);   /* both off */
        ck_assert(f && count(f, OP_CMP).n == 0 && count(f, OP_EXP2).emu == 0);
        f = compile_only(a, &d, want[i].arch, want[i].d, 3, 5);     /* both set */
        ck_assert(f && count(f, OP_CMP).n == 1 && count(f, OP_EXP2).emu == 5);
        arena_free(a);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("fa4num");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, emu_sweep_within_one_bf16_ulp);
    tcase_add_test(tc, emu_every_bf16_input);
    tcase_add_test(tc, emu_special_values);
    tcase_add_test(tc, passes_match_untransformed);
    tcase_add_test(tc, pass_decisions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tc_check_run(suite()); }
