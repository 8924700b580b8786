/* test_api.c - the public API (include/tilec.h): compiling strings with
 * defines, diagnostics as records, NULL handling, target resolution, the
 * pass list, and two threads compiling at once. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>

#include "check_main.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

static const char *const vadd_src =
    "kernel vadd<BLOCK: int = 1024>(X: global f32[N], Y: global f32[N], Z: global f32[N])\n"
    "  grid(cdiv(N, BLOCK))\n"
    "{\n"
    "  let i = block.x * BLOCK;\n"
    "  Z[i : +BLOCK] = X[i : +BLOCK] + Y[i : +BLOCK];\n"
    "}\n";

static tilec_result *compile_tir(const char *src, const tilec_define *defs, size_t ndefs)
{
    tilec_options o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_TIR;
    o.defines = defs;
    o.ndefines = ndefs;
    tilec_result *r = NULL;
    tilec_compile_string("k.tile", src, strlen(src), &o, &r);
    return r;
}

START_TEST(test_defines)
{
    tilec_define d = { "BLOCK", "256" };
    tilec_result *r = compile_tir(vadd_src, &d, 1);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(tilec_result_status(r), TILEC_OK);
    const char *tir = tilec_result_text(r, TILEC_OUT_TIR);
    ck_assert_ptr_nonnull(tir);
    ck_assert_ptr_nonnull(strstr(tir, "tile<256xf32>"));
    ck_assert_ptr_null(strstr(tir, "tile<1024xf32>"));
    ck_assert_ptr_null(tilec_result_text(r, TILEC_OUT_PTX));
    ck_assert_str_eq(tilec_result_arch(r), "sm_90a");
    tilec_result_free(r);
}
END_TEST

START_TEST(test_diag_records)
{
    const char *src = "kernel k(X: global f32[N]) grid(1) {\n  let a = 1 +;\n}\n";
    tilec_result *r = compile_tir(src, NULL, 0);
    ck_assert_int_eq(tilec_result_status(r), TILEC_ERR_INPUT);
    ck_assert_uint_ge(tilec_result_num_diags(r), 1);
    const tilec_diag *d = tilec_result_diag(r, 0);
    ck_assert_int_eq(d->severity, TILEC_SEV_ERROR);
    ck_assert_str_eq(d->file, "k.tile");
    ck_assert_int_eq(d->line, 2);
    ck_assert_int_eq(d->col, 14);
    ck_assert_ptr_nonnull(strstr(d->message, "expected expression"));
    ck_assert_ptr_null(tilec_result_diag(r, 1000));
    ck_assert_ptr_nonnull(strstr(tilec_result_diag_text(r), "k.tile:2:14: error:"));
    ck_assert_ptr_null(tilec_result_text(r, TILEC_OUT_TIR));
    tilec_result_free(r);
}
END_TEST

START_TEST(test_unknown_define)
{
    tilec_define d = { "NOPE", "1" };
    tilec_result *r = compile_tir(vadd_src, &d, 1);
    ck_assert_int_eq(tilec_result_status(r), TILEC_ERR_INPUT);
    ck_assert_uint_ge(tilec_result_num_diags(r), 1);
    tilec_result_free(r);
}
END_TEST

START_TEST(test_null_handling)
{
    tilec_result_free(NULL);
    tilec_options_init(NULL);
    ck_assert_int_eq(tilec_result_status(NULL), TILEC_ERR_USAGE);
    ck_assert_ptr_null(tilec_result_text(NULL, TILEC_OUT_TIR));
    ck_assert_ptr_null(tilec_result_diag(NULL, 0));
    ck_assert_uint_eq(tilec_result_num_diags(NULL), 0);
    tilec_result *r = (tilec_result *)1;
    ck_assert_int_eq(tilec_compile_string(NULL, NULL, 0, NULL, &r), TILEC_ERR_USAGE);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(tilec_result_status(r), TILEC_ERR_USAGE);
    tilec_result_free(r);
    ck_assert_int_eq(tilec_compile_file(NULL, NULL, NULL), TILEC_ERR_USAGE);
    /* NULL options: defaults (emit PTX); NULL name: "<string>". */
    ck_assert_int_ne(tilec_compile_string(NULL, "x", 1, NULL, &r), TILEC_OK);
    ck_assert_str_eq(tilec_result_diag(r, 0)->file, "<string>");
    tilec_result_free(r);
}
END_TEST

START_TEST(test_missing_file)
{
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_file("/nonexistent/x.tile", NULL, &r), TILEC_ERR_IO);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message,
                                 "cannot open '/nonexistent/x.tile': No such file or directory"));
    tilec_result_free(r);
}
END_TEST

START_TEST(test_arch)
{
    tilec_options o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_TIR;
    o.arch = "sm_100";
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_string("a.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    ck_assert_str_eq(tilec_result_arch(r), "sm_100a");
    ck_assert_int_eq(tilec_result_diag(r, 0)->severity, TILEC_SEV_REMARK);
    tilec_result_free(r);
    o.family_portable = 1;
    tilec_compile_string("a.tile", vadd_src, strlen(vadd_src), &o, &r);
    ck_assert_str_eq(tilec_result_arch(r), "sm_100f");
    tilec_result_free(r);
    o.arch = "sm_75";
    ck_assert_int_eq(tilec_compile_string("a.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message, "sm_86, sm_90, sm_90a"));
    tilec_result_free(r);
}
END_TEST

START_TEST(test_passes_and_version)
{
    ck_assert_uint_ge(tilec_num_passes(), 2);
    ck_assert_str_eq(tilec_pass_name(0), "canonicalize");
    ck_assert_ptr_nonnull(tilec_pass_summary(1));
    ck_assert_ptr_null(tilec_pass_name(tilec_num_passes()));
    ck_assert_int_eq(strncmp(tilec_version(), "0.1.0 (", 7), 0);
    ck_assert_str_eq(tilec_status_string(TILEC_OK), "ok");
}
END_TEST

START_TEST(test_observability)
{
    tilec_options o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_TIR;
    const char *pa[] = { "bounds" };
    o.print_after = pa;
    o.nprint_after = 1;
    o.time_passes = 1;
    o.report = 1;
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_string("a.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    ck_assert_ptr_nonnull(strstr(tilec_result_text(r, TILEC_OUT_DUMP), "IR after bounds"));
    ck_assert_ptr_nonnull(strstr(tilec_result_text(r, TILEC_OUT_TIMING), "canonicalize"));
    ck_assert_ptr_nonnull(strstr(tilec_result_text(r, TILEC_OUT_REPORT), "N is dynamic"));
    tilec_result_free(r);
}
END_TEST

/* ---- typed pass options (tilec_options.pass_options) ---- */

/* The 256 x 128 attention tile on sm_86 with `popts`: its status. Even with
 * one stage it needs 128 KB of shared memory, over sm_86's 99 KB a block. */
static tilec_status big_attention(const char *popts)
{
    tilec_options o;
    tilec_options_init(&o);
    o.arch = "sm_86";
    o.pass_options = popts;
    tilec_define d[2] = { { "BM", "256" }, { "BN", "128" } };   /* Q 64 KB, one stage of K and V 64 KB */
    o.defines = d;
    o.ndefines = 2;
    tilec_result *r = NULL;
    tilec_status st = tilec_compile_file(TILEC_SOURCE_DIR "/examples/attention.tile", &o, &r);
    if (st == TILEC_ERR_INPUT)
        ck_assert_ptr_nonnull(strstr(tilec_result_diag_text(r), "bytes of shared memory"));
    tilec_result_free(r);
    return st;
}

/* target.smem-per-block raises the shared memory a block may use to the
 * device's (sm_86 PTX for an H200), and only for the compilation given it. */
START_TEST(test_pass_options)
{
    ck_assert_int_eq(big_attention(NULL), TILEC_ERR_INPUT);
    ck_assert_int_eq(big_attention("target.smem-per-block=232448"), TILEC_OK);
    ck_assert_int_eq(big_attention("target.smem-per-block=100000"), TILEC_ERR_INPUT);
    ck_assert_int_eq(big_attention(NULL), TILEC_ERR_INPUT);   /* nothing left over from the last compile */
    ck_assert_int_eq(tilec_num_pass_options(), 1);
    ck_assert_str_eq(tilec_pass_option_name(0), "target.smem-per-block");
    ck_assert_str_eq(tilec_pass_option_type(0), "bytes");
    ck_assert_ptr_nonnull(tilec_pass_option_help(0));
    ck_assert_ptr_null(tilec_pass_option_name(1));
}
END_TEST

START_TEST(test_bad_pass_options)
{
    const char *bad[] = { "nope=1", "target.smem-per-block", "target.smem-per-block=", "=1",
                          "target.smem-per-block=1x", "target.smem-per-block=1,,x=2",
                          "target.smem-per-block=232449", "target.smem-per-block=-1", "TILEC_PV_ROWS=1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tilec_options o;
        tilec_options_init(&o);
        o.pass_options = bad[i];
        tilec_result *r = NULL;
        ck_assert_int_eq(tilec_compile_string("a.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_ERR_USAGE);
        ck_assert_int_eq(tilec_result_num_diags(r), 1);
        ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message, "pass option"));
        tilec_result_free(r);
    }
}
END_TEST

/* ---- two threads at once ---- */

typedef struct Work {
    const char *block;
    const char *expect;
    int ok;
} Work;

static void *worker(void *p)
{
    Work *w = p;
    w->ok = 1;
    for (int i = 0; i < 20; i++) {
        tilec_define d = { "BLOCK", w->block };
        tilec_result *r = compile_tir(vadd_src, &d, 1);
        const char *tir = tilec_result_text(r, TILEC_OUT_TIR);
        if (tilec_result_status(r) != TILEC_OK || !tir || !strstr(tir, w->expect))
            w->ok = 0;
        tilec_result_free(r);
    }
    return NULL;
}

/* tilec_options.ptxas: a rejection is an internal error without PTX or
 * metadata; a path that cannot run is a usage error; tilec_ptxas_find
 * follows $TILEC_PTXAS. */
START_TEST(test_ptxas_check)
{
    tilec_options o;
    tilec_options_init(&o);
    ck_assert_ptr_null(o.ptxas);
    o.ptxas = TILEC_SOURCE_DIR "/tests/lit/cli/Inputs/ptxas-reject.sh";
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_string("k.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_ERR_INTERNAL);
    ck_assert_ptr_null(tilec_result_text(r, TILEC_OUT_PTX));
    ck_assert_ptr_null(tilec_result_text(r, TILEC_OUT_META));
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message, "ptxas rejected the PTX for sm_90a: line 13;"));
    tilec_result_free(r);
    o.ptxas = TILEC_SOURCE_DIR "/tests/lit/cli/Inputs/ptxas-accept.sh";
    ck_assert_int_eq(tilec_compile_string("k.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    ck_assert_ptr_nonnull(tilec_result_text(r, TILEC_OUT_PTX));
    tilec_result_free(r);
    o.ptxas = "/nonexistent/ptxas";
    ck_assert_int_eq(tilec_compile_string("k.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_ERR_USAGE);
    tilec_result_free(r);

    char *old = getenv("TILEC_PTXAS") ? strdup(getenv("TILEC_PTXAS")) : NULL;
    char buf[8];
    setenv("TILEC_PTXAS", "/bin/sh", 1);
    ck_assert_uint_eq(tilec_ptxas_find(buf, sizeof buf), 7);
    ck_assert_str_eq(buf, "/bin/sh");
    ck_assert_uint_eq(tilec_ptxas_find(buf, 4), 7);
    ck_assert_str_eq(buf, "/bi");
    setenv("TILEC_PTXAS", "/nonexistent/ptxas", 1);
    ck_assert_uint_eq(tilec_ptxas_find(NULL, 0), 0);
    old ? setenv("TILEC_PTXAS", old, 1) : unsetenv("TILEC_PTXAS");
    free(old);
}
END_TEST

START_TEST(test_threads)
{
    Work a = { "128", "tile<128xf32>", 0 }, b = { "512", "tile<512xf32>", 0 };
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, worker, &a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, worker, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_int_eq(a.ok, 1);
    ck_assert_int_eq(b.ok, 1);
}
END_TEST

static Suite *api_suite(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_defines);
    tcase_add_test(tc, test_diag_records);
    tcase_add_test(tc, test_unknown_define);
    tcase_add_test(tc, test_null_handling);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_arch);
    tcase_add_test(tc, test_passes_and_version);
    tcase_add_test(tc, test_observability);
    tcase_add_test(tc, test_threads);
    tcase_add_test(tc, test_ptxas_check);
    tcase_add_test(tc, test_pass_options);
    tcase_add_test(tc, test_bad_pass_options);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(api_suite());
}
