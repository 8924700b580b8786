/* test_api.c - the public API (include/tilec.h): compiling strings with
 * defines, diagnostics as records, NULL handling, target resolution, the
 * pass list, and two threads compiling at once. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>

#include "check_main.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#include "tilec.h"
#include "splitk_src.h"

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
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message, "sm_80, sm_86, sm_89, sm_90, sm_90a"));
    tilec_result_free(r);
}
END_TEST

START_TEST(test_passes_and_version)
{
    ck_assert_uint_ge(tilec_num_passes(), 2);
    ck_assert_str_eq(tilec_pass_name(0), "launch");
    ck_assert_str_eq(tilec_pass_name(1), "lazy_rescale");
    ck_assert_str_eq(tilec_pass_name(2), "canonicalize");
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
    ck_assert_int_eq(tilec_num_pass_options(), 7);
    ck_assert_str_eq(tilec_pass_option_name(0), "target.smem-per-block");
    ck_assert_str_eq(tilec_pass_option_type(0), "bytes");
    ck_assert_str_eq(tilec_pass_option_name(1), "target.sms");
    ck_assert_ptr_nonnull(tilec_pass_option_help(1));
    ck_assert_str_eq(tilec_pass_option_name(2), "lazy_rescale.threshold");
    ck_assert_str_eq(tilec_pass_option_name(3), "exp2_emu.every");
    ck_assert_str_eq(tilec_pass_option_name(4), "tiles.candidate");
    ck_assert_str_eq(tilec_pass_option_name(5), "mma_select.tf32");
    ck_assert_str_eq(tilec_pass_option_name(6), "warp_specialize.persistent");
    ck_assert_ptr_null(tilec_pass_option_name(7));
}
END_TEST

/* The attention example's report (NULL when the compile fails) with the
 * given dim sizes and pass options, its BM and BN chosen (= auto). */
static char *auto_report(const char *dims, const char *popts, const char *causal, tilec_status *st)
{
    tilec_options o;
    tilec_options_init(&o);
    o.arch = "sm_86";
    o.report = 1;
    o.dims = dims;
    o.pass_options = popts;
    tilec_define d[1] = { { "CAUSAL", causal } };
    o.defines = d;
    o.ndefines = 1;
    tilec_result *r = NULL;
    *st = tilec_compile_file(TILEC_SOURCE_DIR "/examples/attention.tile", &o, &r);
    const char *rep = tilec_result_text(r, TILEC_OUT_REPORT);
    char *out = rep ? strdup(rep) : NULL;
    tilec_result_free(r);
    return out;
}

/* Tile sizes and the launch follow the dims and the device: 128 x 64 when
 * nothing is known; the persistent 256-row tile for 4k tokens on an H200;
 * longest rows first with the causal mask. */
START_TEST(test_auto_tiles)
{
    static const char *const h200 = "target.smem-per-block=232448,target.sms=132";
    static const struct { const char *dims, *popts, *causal, *want, *absent; } cases[] = {
        { NULL, NULL, "false", "BM = 128; BN = 64", "persistent" },
        { "N=4096,NK=4096", NULL, "false", "BM = 128; BN = 64", "persistent" },
        { "N=4096,NK=4096", h200, "false", "BM = 256; BN = 64", "longest" },
        { "N=4096,NK=4096", h200, "false", "persistent: min(132, tiles)", "longest" },
        { "N=512,NK=512", h200, "false", "BM = 128; BN = 64", "persistent" },
        { "N=4096,NK=4096", h200, "true", "the longest loops first", "persistent" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_status st;
        char *rep = auto_report(cases[i].dims, cases[i].popts, cases[i].causal, &st);
        ck_assert_int_eq(st, TILEC_OK);
        ck_assert_msg(rep && strstr(rep, cases[i].want), "case %zu: %s", i, rep ? rep : "(no report)");
        ck_assert_msg(!strstr(rep, cases[i].absent), "case %zu: %s", i, rep);
        free(rep);
    }
    tilec_status st;
    static const char *const bad[] = { "N", "N=0", "N=x", "=5", "N=99999999999", "1N=4" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        free(auto_report(bad[i], NULL, "false", &st));
        ck_assert_msg(st == TILEC_ERR_USAGE, "dims '%s': status %d", bad[i], (int)st);
    }
}
END_TEST

/* lazy_rescale.threshold and exp2_emu.every: the passes' choice when not
 * given (D = 128 on sm_86: a lazy maximum, exp2 on the MUFU), 0 = off,
 * a value = that value; each for its own compilation only. */
START_TEST(test_fa4_options)
{
    static const struct { const char *popts, *want, *absent; } cases[] = {
        { NULL, "grows by more than 8 (log2 units)", "{emu" },
        { "lazy_rescale.threshold=0", "exact (lazy_rescale.threshold=0)", "grows by more than" },
        { "lazy_rescale.threshold=4", "grows by more than 4 (log2 units)", "exact (" },
        { "exp2_emu.every=8", "{emu = 8}, 1 of 8 8-column groups (12.5% of the elements)", "all on the MUFU" },
        { "exp2_emu.every=0", "all on the MUFU (exp2_emu.every=0", "{emu" },
        { NULL, "grows by more than 8 (log2 units)", "{emu" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_status st;
        char *rep = auto_report(NULL, cases[i].popts, "false", &st);
        ck_assert_int_eq(st, TILEC_OK);
        ck_assert_msg(rep && strstr(rep, cases[i].want), "case %zu: %s", i, rep ? rep : "(no report)");
        ck_assert_msg(!strstr(rep, cases[i].absent), "case %zu: %s", i, rep);
        free(rep);
    }
}
END_TEST

START_TEST(test_bad_pass_options)
{
    const char *bad[] = { "nope=1", "target.smem-per-block", "target.smem-per-block=", "=1",
                          "target.smem-per-block=1x", "target.smem-per-block=1,,x=2",
                          "target.smem-per-block=232449", "target.smem-per-block=-1", "TILEC_PV_ROWS=1",
                          "lazy_rescale.threshold=-1", "lazy_rescale.threshold=33", "exp2_emu.every=-1",
                          "exp2_emu.every=1025", "exp2_emu.every=0.5", "exp2_emu=4", "mma_select.tf32=2",
                          "mma_select.tf32=-1", "mma_select.tf32=tf32", "warp_specialize.persistent=2",
                          "warp_specialize.persistent=-1", "warp_specialize.persistent=yes" };
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

/* Warnings: records with their [-Wname] tag, turned off by bit, made
 * errors by warnings_as_errors, unknown bits refused. */
static tilec_status compile_warn(unsigned off, int werror, tilec_result **r)
{
    static const char src[] = "kernel k(X: global f32[N], Y: global f32[N], S: f32) grid(cdiv(N, 64)) {\n"
                              "  let i = block.x * 64;\n"
                              "  tile t = X[i : +64] * 2.0;\n"
                              "  Y[i : +64] = X[i : +64];\n"
                              "}\n";
    tilec_options o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_TIR;
    o.warnings_off = off;
    o.warnings_as_errors = werror;
    return tilec_compile_string("w.tile", src, sizeof src - 1, &o, r);
}

START_TEST(test_warnings)
{
    tilec_result *r = NULL;
    ck_assert_int_eq(compile_warn(0, 0, &r), TILEC_OK);
    ck_assert_uint_eq(tilec_result_num_diags(r), 2);
    const tilec_diag *d = tilec_result_diag(r, 0);
    ck_assert_int_eq(d->severity, TILEC_SEV_WARNING);
    ck_assert_int_eq(d->line, 1);
    ck_assert_int_eq(d->col, 46);
    ck_assert_str_eq(d->message, "scalar param 'S' is never used [-Wunused-param]");
    d = tilec_result_diag(r, 1);
    ck_assert_int_eq(d->line, 3);
    ck_assert_str_eq(d->message, "tile 't' is never read [-Wdead-tile]");
    ck_assert_ptr_nonnull(tilec_result_text(r, TILEC_OUT_TIR));
    tilec_result_free(r);

    ck_assert_int_eq(compile_warn(TILEC_WARN_DEAD_TILE, 0, &r), TILEC_OK);
    ck_assert_uint_eq(tilec_result_num_diags(r), 1);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message, "[-Wunused-param]"));
    tilec_result_free(r);

    ck_assert_int_eq(compile_warn(TILEC_WARN_ALL, 1, &r), TILEC_OK);
    ck_assert_uint_eq(tilec_result_num_diags(r), 0);
    tilec_result_free(r);

    ck_assert_int_eq(compile_warn(TILEC_WARN_UNUSED_PARAM, 1, &r), TILEC_ERR_INPUT);
    d = tilec_result_diag(r, 0);
    ck_assert_int_eq(d->severity, TILEC_SEV_ERROR);
    ck_assert_str_eq(d->message, "tile 't' is never read [-Werror,-Wdead-tile]");
    ck_assert_ptr_null(tilec_result_text(r, TILEC_OUT_TIR));
    tilec_result_free(r);

    ck_assert_int_eq(compile_warn(8, 0, &r), TILEC_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message, "warnings_off 0x8"));
    tilec_result_free(r);

    ck_assert_uint_eq(tilec_num_warnings(), 3);
    ck_assert_str_eq(tilec_warning_name(0), "unused-param");
    ck_assert_str_eq(tilec_warning_name(2), "store-race");
    ck_assert_ptr_nonnull(tilec_warning_help(1));
    ck_assert_ptr_null(tilec_warning_name(3));
}
END_TEST

/* Line information: .loc/.file with debug_info, none without, a level
 * past TILEC_DEBUG_FULL refused. */
START_TEST(test_debug_info)
{
    tilec_options o;
    tilec_options_init(&o);
    o.arch = "sm_86";
    o.debug_info = TILEC_DEBUG_LINES;
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_string("/src/vadd.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    const char *ptx = tilec_result_text(r, TILEC_OUT_PTX);
    ck_assert_ptr_nonnull(strstr(ptx, ".file\t1 \"/src/vadd.tile\""));
    ck_assert_ptr_nonnull(strstr(ptx, ".loc\t1 5 "));   /* the store's line */
    ck_assert_ptr_null(strstr(ptx, ".debug_info"));
    tilec_result_free(r);
    o.debug_info = TILEC_DEBUG_NONE;
    ck_assert_int_eq(tilec_compile_string("/src/vadd.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    ck_assert_ptr_null(strstr(tilec_result_text(r, TILEC_OUT_PTX), ".loc"));
    tilec_result_free(r);
    o.debug_info = (tilec_debug_info)3;
    ck_assert_int_eq(tilec_compile_string("v.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_ERR_USAGE);
    tilec_result_free(r);
}
END_TEST

/* The interpreter mode: vector_add and a row softmax on host buffers
 * against plain C, then the launch checks and a failing kernel. */
static tilec_result *compile_ir(const char *src)
{
    tilec_options o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_TIR;
    o.keep_ir = 1;
    o.arch = "sm_86";
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_string("i.tile", src, strlen(src), &o, &r), TILEC_OK);
    return r;
}

START_TEST(test_interpret)
{
    tilec_result *c = compile_ir(vadd_src), *r = NULL;
    enum { N = 2500 };   /* 3 blocks of 1024, the last one partial */
    static float x[N], y[N], z[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i * 0.5f, y[i] = 1.0f - (float)i, z[i] = -7.0f;
    int64_t n = N;
    tilec_arg a[3] = { { x, 1, &n, NULL, "f32", 0, 0 }, { y, 1, &n, NULL, "f32", 0, 0 },
                       { z, 1, &n, NULL, NULL, 0, 0 } };
    ck_assert_int_eq(tilec_interpret(c, NULL, a, 3, &r), TILEC_OK);
    ck_assert_uint_eq(tilec_result_num_diags(r), 0);
    tilec_result_free(r);
    for (int i = 0; i < N; i++)
        ck_assert_float_eq(z[i], x[i] + y[i]);
    ck_assert_uint_eq(tilec_result_num_kernels(c), 1);
    ck_assert_str_eq(tilec_result_kernel_name(c, 0), "vadd");
    ck_assert_uint_eq(tilec_result_kernel_num_params(c, 0), 3);
    const char *pn, *pd;
    int rank;
    ck_assert_int_eq(tilec_result_kernel_param(c, 0, 2, &pn, &pd, &rank), 0);
    ck_assert_str_eq(pn, "Z");
    ck_assert_str_eq(pd, "f32");
    ck_assert_int_eq(rank, 1);
    ck_assert_int_ne(tilec_result_kernel_param(c, 0, 3, &pn, &pd, &rank), 0);
    ck_assert_ptr_null(tilec_result_kernel_name(c, 1));

    /* the launch checks */
    a[1].dtype = "bf16";
    ck_assert_int_eq(tilec_interpret(c, "vadd", a, 3, &r), TILEC_ERR_USAGE);
    ck_assert_str_eq(tilec_result_diag(r, 0)->message, "param Y: tensor dtype is bf16 but the kernel wants f32");
    tilec_result_free(r);
    a[1].dtype = NULL;
    int64_t m = N - 1;
    a[2].shape = &m;
    ck_assert_int_eq(tilec_interpret(c, NULL, a, 3, &r), TILEC_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag_text(r), "dim 'N' is 2499 here but 2500 in argument 0"));
    tilec_result_free(r);
    a[2].shape = &n;
    int64_t st = 2;
    a[0].strides = &st;
    ck_assert_int_eq(tilec_interpret(c, NULL, a, 3, &r), TILEC_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag_text(r), "param X: innermost stride is 2"));
    tilec_result_free(r);
    a[0].strides = NULL;
    ck_assert_int_eq(tilec_interpret(c, NULL, a, 2, &r), TILEC_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag_text(r), "kernel vadd takes 3 arguments, got 2"));
    tilec_result_free(r);
    ck_assert_int_eq(tilec_interpret(c, "nope", a, 3, &r), TILEC_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag_text(r), "no kernel 'nope' (kernels: vadd)"));
    tilec_result_free(r);
    tilec_result_free(c);

    /* a result without IR */
    c = compile_tir(vadd_src, NULL, 0);
    ck_assert_int_eq(tilec_interpret(c, NULL, a, 3, NULL), TILEC_ERR_USAGE);
    tilec_result_free(c);
    ck_assert_int_eq(tilec_interpret(NULL, NULL, a, 3, NULL), TILEC_ERR_USAGE);
}
END_TEST

START_TEST(test_interpret_softmax)
{
    static const char src[] =
        "kernel sm<BLOCK: int = 64>(X: global f32[M, N], Y: global f32[M, N], s: f32) grid(M) {\n"
        "  tile x = load(X[block.x, 0 : +BLOCK], other = -inf) * s;\n"
        "  tile e = exp(x - reduce(x, 0, max));\n"
        "  Y[block.x, 0 : +BLOCK] = e / reduce(e, 0, sum);\n"
        "}\n"
        "kernel div(X: global i32[N], Y: global i32[N], k: i32) grid(1) {\n"
        "  Y[0 : +4] = X[0 : +4] / k;\n"
        "}\n";
    tilec_result *c = compile_ir(src), *r = NULL;
    enum { M = 3, N = 50 };
    static float x[M][N], y[M][N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            x[i][j] = (float)((i * 7 + j * 3) % 11) * 0.25f;
    int64_t shape[2] = { M, N };
    tilec_arg a[3] = { { x, 2, shape, NULL, "f32", 0, 0 }, { y, 2, shape, NULL, "f32", 0, 0 }, { 0 } };
    a[2].f = 1.5;
    ck_assert_int_eq(tilec_interpret(c, "sm", a, 3, &r), TILEC_OK);
    tilec_result_free(r);
    for (int i = 0; i < M; i++) {
        double mx = -1e30, sum = 0;
        for (int j = 0; j < N; j++)
            mx = x[i][j] * 1.5 > mx ? x[i][j] * 1.5 : mx;
        for (int j = 0; j < N; j++)
            sum += exp(x[i][j] * 1.5 - mx);
        for (int j = 0; j < N; j++)
            ck_assert_double_eq_tol(y[i][j], exp(x[i][j] * 1.5 - mx) / sum, 1e-6);
    }
    /* a kernel that fails while running: the error names the source line */
    int32_t xi[4] = { 1, 2, 3, 4 }, yi[4] = { 0 };
    int64_t n4 = 4;
    tilec_arg b[3] = { { xi, 1, &n4, NULL, "i32", 0, 0 }, { yi, 1, &n4, NULL, "i32", 0, 0 }, { 0 } };
    b[2].i = 2;
    ck_assert_int_eq(tilec_interpret(c, "div", b, 3, NULL), TILEC_OK);
    ck_assert_int_eq(yi[3], 2);
    b[2].i = 0;
    ck_assert_int_eq(tilec_interpret(c, "div", b, 3, &r), TILEC_ERR_INPUT);
    const tilec_diag *d = tilec_result_diag(r, 0);
    ck_assert_int_eq(d->line, 7);
    ck_assert_ptr_nonnull(strstr(d->message, "division by zero"));
    tilec_result_free(r);
    ck_assert_int_eq(tilec_interpret(c, NULL, b, 3, &r), TILEC_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag_text(r), "the module has 2 kernels (sm, div): name one"));
    tilec_result_free(r);
    tilec_result_free(c);
}
END_TEST

/* tilec_options.ptxas: a rejection is an internal error without PTX or
 * metadata; a path that cannot run is a usage error; with ptxas_no_check
 * the PTX is not checked and the report runs that ptxas itself. The
 * library looks for no ptxas of its own: the tilec command does
 * ($TILEC_PTXAS, $PATH: lit/cli/ptxas-check.tile). */
START_TEST(test_ptxas_check)
{
    tilec_options o;
    tilec_options_init(&o);
    ck_assert_ptr_null(o.ptxas);
    ck_assert_int_eq(o.ptxas_no_check, 0);
    o.ptxas = TILEC_SOURCE_DIR "/tests/lit/cli/Inputs/ptxas-reject.sh";
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_string("k.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_ERR_INTERNAL);
    ck_assert_ptr_null(tilec_result_text(r, TILEC_OUT_PTX));
    ck_assert_ptr_null(tilec_result_text(r, TILEC_OUT_META));
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message, "ptxas rejected the PTX for sm_90a: line 13;"));
    tilec_result_free(r);
    o.ptxas_no_check = 1;
    o.report = 1;
    ck_assert_int_eq(tilec_compile_string("k.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    ck_assert_ptr_nonnull(tilec_result_text(r, TILEC_OUT_PTX));
    ck_assert_ptr_nonnull(strstr(tilec_result_text(r, TILEC_OUT_REPORT), "registers: unknown (ptxas failed: line 13;"));
    tilec_result_free(r);
    o.ptxas = NULL;
    ck_assert_int_eq(tilec_compile_string("k.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    ck_assert_ptr_nonnull(strstr(tilec_result_text(r, TILEC_OUT_REPORT), "registers: unknown (ptxas not found;"));
    tilec_result_free(r);
    o.report = 0;
    o.ptxas_no_check = 0;
    o.ptxas = TILEC_SOURCE_DIR "/tests/lit/cli/Inputs/ptxas-accept.sh";
    ck_assert_int_eq(tilec_compile_string("k.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    ck_assert_ptr_nonnull(tilec_result_text(r, TILEC_OUT_PTX));
    tilec_result_free(r);
    o.ptxas = "/nonexistent/ptxas";
    ck_assert_int_eq(tilec_compile_string("k.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_ERR_USAGE);
    tilec_result_free(r);
}
END_TEST

/* atomic_add in the interpreter: every block's additions land (blocks run
 * one after another): a one-pass column sum in f32 and i32, a counter
 * added to by a scalar, and a split-K product (each block adds its K
 * slice's A @ B to C). */
static const char colsum_src[] =
    "kernel colsum<BM: int = 4, BN: int = 8, T: dtype = f32>(X: global T[M, N], S: global T[N],\n"
    "    C: global i32[1])\n"
    "  grid(cdiv(N, BN), cdiv(M, BM))\n"
    "{\n"
    "  let n0 = block.x * BN;\n"
    "  atomic_add(S[n0 : +BN], colsum(X[block.y * BM : +BM, n0 : +BN]));\n"
    "  atomic_add(C[0], 1);\n"
    "}\n";


static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

START_TEST(test_interpret_atomic_add)
{
    enum { M = 10, N = 13 };
    int64_t xs[2] = { M, N }, ns = N, one = 1;
    int32_t cnt = 5;
    /* f32 */
    tilec_result *c = compile_ir(colsum_src), *r = NULL;
    static float x[M * N], s[N];
    for (int i = 0; i < M * N; i++)
        x[i] = (float)(i % 7) - 2.5f;
    for (int j = 0; j < N; j++)
        s[j] = 100.0f + (float)j;
    tilec_arg a[3] = { { x, 2, xs, NULL, "f32", 0, 0 }, { s, 1, &ns, NULL, "f32", 0, 0 },
                       { &cnt, 1, &one, NULL, "i32", 0, 0 } };
    ck_assert_int_eq(tilec_interpret(c, NULL, a, 3, &r), TILEC_OK);
    tilec_result_free(r);
    for (int j = 0; j < N; j++) {
        double want = 100.0 + j;
        for (int i = 0; i < M; i++)
            want += x[i * N + j];
        ck_assert_double_eq_tol(s[j], want, 1e-4);
    }
    ck_assert_int_eq(cnt, 5 + 2 * 3);   /* cdiv(13, 8) x cdiv(10, 4) blocks */
    tilec_result_free(c);
    /* i32: exact, wrapping */
    tilec_options o;
    tilec_options_init(&o);
    o.emit = TILEC_EMIT_TIR;
    o.keep_ir = 1;
    tilec_define d = { "T", "i32" };
    o.defines = &d;
    o.ndefines = 1;
    ck_assert_int_eq(tilec_compile_string("i.tile", colsum_src, strlen(colsum_src), &o, &c), TILEC_OK);
    static int32_t xi[M * N], si[N];
    for (int i = 0; i < M * N; i++)
        xi[i] = i * 37 - 200;
    for (int j = 0; j < N; j++)
        si[j] = INT32_MAX - j;   /* wraps */
    a[0].data = xi, a[0].dtype = "i32";
    a[1].data = si, a[1].dtype = "i32";
    ck_assert_int_eq(tilec_interpret(c, NULL, a, 3, &r), TILEC_OK);
    tilec_result_free(r);
    for (int j = 0; j < N; j++) {
        uint32_t want = (uint32_t)(INT32_MAX - j);
        for (int i = 0; i < M; i++)
            want += (uint32_t)xi[i * N + j];
        ck_assert_int_eq(si[j], (int32_t)want);
    }
    tilec_result_free(c);
    /* split-K, 16 x 16 x 16 tiles */
    enum { SM = 20, SN = 18, SK = 40 };
    tilec_define tiles[3] = { { "BM", "16" }, { "BN", "16" }, { "BK", "16" } };
    o.defines = tiles;
    o.ndefines = 3;
    ck_assert_int_eq(tilec_compile_string("i.tile", splitk_src, strlen(splitk_src), &o, &c), TILEC_OK);
    static uint16_t ab[SM * SK], bb[SK * SN];
    static float cc[SM * SN];
    for (int i = 0; i < SM * SK; i++)
        ab[i] = to_bf16((float)((i * 7) % 11) / 8.0f - 0.5f);
    for (int i = 0; i < SK * SN; i++)
        bb[i] = to_bf16((float)((i * 5) % 13) / 8.0f - 0.75f);
    for (int i = 0; i < SM * SN; i++)
        cc[i] = 1.0f;
    int64_t as[2] = { SM, SK }, bs[2] = { SK, SN }, cs[2] = { SM, SN };
    tilec_arg g[3] = { { ab, 2, as, NULL, "bf16", 0, 0 }, { bb, 2, bs, NULL, "bf16", 0, 0 },
                       { cc, 2, cs, NULL, "f32", 0, 0 } };
    ck_assert_int_eq(tilec_interpret(c, NULL, g, 3, &r), TILEC_OK);
    ck_assert_uint_eq(tilec_result_num_diags(r), 0);
    tilec_result_free(r);
    for (int i = 0; i < SM; i++)
        for (int j = 0; j < SN; j++) {
            double want = 1.0;
            for (int k = 0; k < SK; k++)
                want += (double)from_bf16(ab[i * SK + k]) * from_bf16(bb[k * SN + j]);
            ck_assert_double_eq_tol(cc[i * SN + j], want, 1e-3);
        }
    tilec_result_free(c);
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
    tcase_add_test(tc, test_interpret_atomic_add);
    tcase_add_test(tc, test_warnings);
    tcase_add_test(tc, test_debug_info);
    tcase_add_test(tc, test_interpret);
    tcase_add_test(tc, test_interpret_softmax);
    tcase_add_test(tc, test_ptxas_check);
    tcase_add_test(tc, test_pass_options);
    tcase_add_test(tc, test_auto_tiles);
    tcase_add_test(tc, test_bad_pass_options);
    suite_add_tcase(s, tc);
    TCase *fa4 = tcase_create("fa4");   /* six compilations of attention: more than the default 4 s */
    tcase_set_timeout(fa4, 120);
    tcase_add_test(fa4, test_fa4_options);
    suite_add_tcase(s, fa4);
    return s;
}

int main(void)
{
    return tc_check_run(api_suite());
}
