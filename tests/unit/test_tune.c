/* test_tune.c - autotuning without a GPU: the tile choice's candidates
 * (tilec_candidates_*, the pass option tiles.candidate: the choice is
 * candidate 0, candidate I compiles to what its defines give, errors),
 * libtilert's shape classes, the decision store (written, read, a changed
 * key misses, a damaged entry misses, cleared with the compile cache) and
 * tilert_tune's refusals that need no GPU, and its timing through a fake
 * driver whose kernels take known times. That every candidate of the
 * examples assembles with ptxas for sm_86 and sm_90a is
 * tests/candidates_ptxas.py (ctest cli/candidates_ptxas). */
#define _POSIX_C_SOURCE 200809L   /* mkdtemp */
#include <check.h>

#include "check_main.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tilec.h"
#include "tilert.h"
#include "runtime/rt.h"
#include "rtkit.h"

#define GEMM TILEC_SOURCE_DIR "/examples/gemm.tile"
#define ATTN TILEC_SOURCE_DIR "/examples/attention.tile"

static const char *const vadd_src =
    "kernel vadd<BLOCK: int = 1024>(X: global f32[N], Y: global f32[N], Z: global f32[N])\n"
    "  grid(cdiv(N, BLOCK))\n"
    "{\n"
    "  let i = block.x * BLOCK;\n"
    "  Z[i : +BLOCK] = X[i : +BLOCK] + Y[i : +BLOCK];\n"
    "}\n";

/* The candidates of a file for arch with defines "NAME=VALUE" (up to 4),
 * dims and pass options; the result (the caller frees it). */
static tilec_result *cands(const char *path, const char *arch, const char *const *defs, const char *dims,
                           const char *popts, tilec_status *st)
{
    tilec_options o;
    tilec_options_init(&o);
    o.arch = arch;
    o.dims = dims;
    o.pass_options = popts;
    tilec_define d[4];
    size_t n = 0;
    static char buf[4][64];
    for (; defs && defs[n]; n++) {
        snprintf(buf[n], sizeof buf[n], "%s", defs[n]);
        char *eq = strchr(buf[n], '=');
        *eq = 0;
        d[n] = (tilec_define){ buf[n], eq + 1 };
    }
    o.defines = d;
    o.ndefines = n;
    tilec_result *r = NULL;
    *st = tilec_candidates_file(path, &o, &r);
    return r;
}

/* r's candidates are exactly want[] (NULL-terminated). */
static void expect_cands(const tilec_result *r, const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    ck_assert_msg(tilec_result_num_candidates(r) == n, "%zu candidates, want %zu (first %s)",
                  tilec_result_num_candidates(r), n, tilec_result_candidate(r, 0));
    for (size_t i = 0; i < n; i++)
        ck_assert_str_eq(tilec_result_candidate(r, i), want[i]);
    ck_assert_ptr_null(tilec_result_candidate(r, n));
}

START_TEST(test_gemm_candidates)
{
    static const char *const want[] = { "BM=256,BN=128,BK=64", "BM=128,BN=256,BK=64", "BM=128,BN=128,BK=64",
                                        "BM=128,BN=128,BK=32", NULL };
    static const char *const archs[] = { "sm_86", "sm_90a", "sm_100a" };
    for (size_t a = 0; a < 3; a++) {
        tilec_status st;
        tilec_result *r = cands(GEMM, archs[a], NULL, NULL, NULL, &st);
        ck_assert_int_eq(st, TILEC_OK);
        expect_cands(r, want);
        ck_assert_ptr_nonnull(strstr(tilec_result_text(r, TILEC_OUT_REPORT), "tiles: @gemm: a product: 256 x 128"));
        ck_assert_ptr_null(tilec_result_text(r, TILEC_OUT_PTX));   /* nothing compiled */
        tilec_result_free(r);
    }
    /* a block of 64 KB: two stages of 256 x 128 x 64 (96 KB) do not fit;
     * the choice is the rule's 128 x 128 over 32, then the others that fit */
    tilec_status st;
    tilec_result *r = cands(GEMM, "sm_86", NULL, NULL, "target.smem-per-block=65536", &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=128,BN=128,BK=32", "BM=128,BN=128,BK=64", NULL });
    tilec_result_free(r);
    /* a pinned param takes no part: the rest are listed, without repeats */
    r = cands(GEMM, "sm_90a", (const char *const[]){ "BK=32", NULL }, NULL, NULL, &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=256,BN=128", "BM=128,BN=256", "BM=128,BN=128", NULL });
    tilec_result_free(r);
}
END_TEST

START_TEST(test_attention_candidates)
{
    tilec_status st;
    /* sm_90a: the warp-specialized roles' 192 rows (three consumer warp
     * groups: D = 64, no mask, long rows), then 128 rows with 128 or 64
     * key columns */
    tilec_result *r = cands(ATTN, "sm_90a", (const char *const[]){ "D=64", NULL }, NULL, NULL, &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=192,BN=128", "BM=128,BN=128", "BM=128,BN=64", NULL });
    tilec_result_free(r);
    /* 1024 rows: 192 pads them by 12.5%, so 128 x 128 first */
    r = cands(ATTN, "sm_90a", (const char *const[]){ "D=64", NULL }, "N=1024,NK=1024", NULL, &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=128,BN=128", "BM=192,BN=128", "BM=128,BN=64", NULL });
    tilec_result_free(r);
    /* 2048 rows: 3% padding, 192 rows */
    r = cands(ATTN, "sm_90a", (const char *const[]){ "D=64", NULL }, "N=2048,NK=2048", NULL, &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=192,BN=128", "BM=128,BN=128", "BM=128,BN=64", NULL });
    tilec_result_free(r);
    /* causal: never three groups, 64 x 64 at three blocks an SM a candidate
     * (keys unknown: the long rows of 128 x 128) and the choice for up to
     * 4k keys; D = 128: 192 rows would halve the key block */
    r = cands(ATTN, "sm_90a", (const char *const[]){ "D=64", "CAUSAL=true", NULL }, NULL, NULL, &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=128,BN=128", "BM=128,BN=64", "BM=64,BN=64", NULL });
    tilec_result_free(r);
    r = cands(ATTN, "sm_90a", (const char *const[]){ "D=64", "CAUSAL=true", NULL }, "N=4096,NK=4096", NULL, &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=64,BN=64", "BM=128,BN=128", "BM=128,BN=64", NULL });
    ck_assert_ptr_nonnull(strstr(tilec_result_text(r, TILEC_OUT_REPORT), "64 x 64 (1 consumer warp group, 3 blocks an SM"));
    tilec_result_free(r);
    r = cands(ATTN, "sm_90a", (const char *const[]){ "D=64", "CAUSAL=true", NULL }, "N=8192,NK=8192", NULL, &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=128,BN=128", "BM=128,BN=64", "BM=64,BN=64", NULL });
    tilec_result_free(r);
    r = cands(ATTN, "sm_90a", (const char *const[]){ "D=128", NULL }, NULL, NULL, &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=128,BN=128", "BM=128,BN=64", NULL });
    tilec_result_free(r);
    /* sm_100a: the tcgen05 roles' shapes that fit tensor memory */
    r = cands(ATTN, "sm_100a", (const char *const[]){ "D=128", NULL }, NULL, NULL, &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=256,BN=64", "BM=128,BN=128", "BM=128,BN=64", NULL });
    tilec_result_free(r);
    /* sm_86 PTX for a device of 227 KB a block, 4k tokens: the 256-row
     * tile first (the rule's choice for those sizes), then 128 x 64 */
    r = cands(ATTN, "sm_86", (const char *const[]){ "D=128", NULL }, "N=4096,NK=4096", "target.smem-per-block=232448",
              &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=256,BN=64", "BM=128,BN=64", NULL });
    tilec_result_free(r);
    /* ... and without the sizes the 128-row tile is the choice */
    r = cands(ATTN, "sm_86", (const char *const[]){ "D=128", NULL }, NULL, "target.smem-per-block=232448", &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=128,BN=64", "BM=256,BN=64", NULL });
    tilec_result_free(r);
    /* a causal mask rules the 256-row tile out */
    r = cands(ATTN, "sm_86", (const char *const[]){ "D=128", "CAUSAL=true", NULL }, "N=4096,NK=4096",
              "target.smem-per-block=232448", &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BM=128,BN=64", NULL });
    tilec_result_free(r);
    /* BM pinned: the key block alone */
    r = cands(ATTN, "sm_90a", (const char *const[]){ "D=64", "BM=128", NULL }, NULL, NULL, &st);
    ck_assert_int_eq(st, TILEC_OK);
    expect_cands(r, (const char *const[]){ "BN=128", "BN=64", NULL });
    tilec_result_free(r);
}
END_TEST

START_TEST(test_no_auto)
{
    tilec_options o;
    tilec_options_init(&o);
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_candidates_string("v.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    expect_cands(r, (const char *const[]){ "", NULL });
    ck_assert_ptr_nonnull(strstr(tilec_result_text(r, TILEC_OUT_REPORT), "no `auto` tile param"));
    tilec_result_free(r);
    /* a compile's result has no candidates */
    ck_assert_int_eq(tilec_compile_string("v.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    ck_assert_uint_eq(tilec_result_num_candidates(r), 0);
    ck_assert_ptr_null(tilec_result_candidate(r, 0));
    tilec_result_free(r);
    ck_assert_uint_eq(tilec_result_num_candidates(NULL), 0);
}
END_TEST

/* The PTX of one compilation (strdup'ed; NULL on failure). */
static char *ptx_of(const char *path, const char *arch, const char *popts, const char *defs)
{
    tilec_options o;
    tilec_options_init(&o);
    o.arch = arch;
    o.pass_options = popts;
    tilec_define d[4];
    char buf[256];
    size_t n = 0;
    if (defs) {
        snprintf(buf, sizeof buf, "%s", defs);
        for (char *p = strtok(buf, ","); p && n < 4; p = strtok(NULL, ",")) {
            char *eq = strchr(p, '=');
            *eq = 0;
            d[n++] = (tilec_define){ p, eq + 1 };
        }
    }
    o.defines = d;
    o.ndefines = n;
    tilec_result *r = NULL;
    tilec_status st = tilec_compile_file(path, &o, &r);
    char *out = st == TILEC_OK ? strdup(tilec_result_text(r, TILEC_OUT_PTX)) : NULL;
    if (st != TILEC_OK)
        fprintf(stderr, "%s", tilec_result_diag_text(r));
    tilec_result_free(r);
    return out;
}

/* The text of entry `name` in a PTX module: from its .entry to the next
 * .entry (or the end). */
static char *entry_of(const char *ptx, const char *name)
{
    char pat[128];
    snprintf(pat, sizeof pat, ".entry %s(", name);
    const char *b = strstr(ptx, pat);
    ck_assert_ptr_nonnull(b);
    const char *e = strstr(b + 1, ".entry ");
    return strndup(b, e ? (size_t)(e - b) : strlen(b));
}

/* tiles.candidate=I compiles what I's defines give: the whole module on
 * sm_86; on sm_90a the kernel itself (the defines also pin its portable
 * variant, which tiles.candidate leaves to its own choice). Candidate 0 is
 * the compile without the option. */
START_TEST(test_candidate_compiles_its_defines)
{
    char *plain = ptx_of(GEMM, "sm_86", NULL, NULL), *zero = ptx_of(GEMM, "sm_86", "tiles.candidate=0", NULL);
    ck_assert_ptr_nonnull(plain);
    ck_assert_str_eq(plain, zero);
    free(plain);
    free(zero);
    char *opt = ptx_of(GEMM, "sm_86", "tiles.candidate=2", NULL);
    char *def = ptx_of(GEMM, "sm_86", NULL, "BM=128,BN=128,BK=64");
    ck_assert_ptr_nonnull(opt);
    ck_assert_str_eq(opt, def);
    free(opt);
    free(def);
    opt = ptx_of(ATTN, "sm_90a", "tiles.candidate=2,target.sms=132", "D=64");
    def = ptx_of(ATTN, "sm_90a", "target.sms=132", "D=64,BM=128,BN=64");
    ck_assert_ptr_nonnull(opt);
    ck_assert_ptr_nonnull(def);
    char *eo = entry_of(opt, "attention"), *ed = entry_of(def, "attention");
    ck_assert_str_eq(eo, ed);
    /* the portable variant keeps the rule's own choice under the option */
    char *pp = ptx_of(ATTN, "sm_90a", "target.sms=132", "D=64");
    char *po = entry_of(pp, "tilec_portable_attention"), *pc = entry_of(opt, "tilec_portable_attention");
    ck_assert_str_eq(po, pc);
    free(pp);
    free(po);
    free(pc);
    free(eo);
    free(ed);
    free(opt);
    free(def);
}
END_TEST

START_TEST(test_candidate_errors)
{
    tilec_options o;
    tilec_options_init(&o);
    o.arch = "sm_90a";
    o.emit = TILEC_EMIT_TIR;
    tilec_result *r = NULL;
    /* past the list: a located error naming the count */
    o.pass_options = "tiles.candidate=4";
    ck_assert_int_eq(tilec_compile_file(GEMM, &o, &r), TILEC_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message,
                                 "pass option tiles.candidate=4: the tile choice has 4 candidates for @gemm on "
                                 "sm_90a (0 to 3;"));
    ck_assert_int_gt(tilec_result_diag(r, 0)->line, 0);
    tilec_result_free(r);
    /* the last one is fine */
    o.pass_options = "tiles.candidate=3";
    ck_assert_int_eq(tilec_compile_file(GEMM, &o, &r), TILEC_OK);
    ck_assert_ptr_nonnull(strstr(tilec_result_text(r, TILEC_OUT_TIR), "tile<128x128xf32"));
    tilec_result_free(r);
    /* nothing to choose */
    o.pass_options = "tiles.candidate=1";
    ck_assert_int_eq(tilec_compile_string("v.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message, "no kernel of v.tile has an `auto` tile param"));
    tilec_result_free(r);
    o.pass_options = "tiles.candidate=0";
    ck_assert_int_eq(tilec_compile_string("v.tile", vadd_src, strlen(vadd_src), &o, &r), TILEC_OK);
    tilec_result_free(r);
    /* out of the option's range: a usage error before anything compiles */
    o.pass_options = "tiles.candidate=6";
    ck_assert_int_eq(tilec_compile_file(GEMM, &o, &r), TILEC_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message, "tiles.candidate takes an integer (int) from 0 to 5"));
    tilec_result_free(r);
    /* the listing: the source's errors, usage errors, NULLs */
    o.pass_options = NULL;
    const char *bad = "kernel k<BM: int = auto>(X: global f32[N]) grid(1) {\n  let a = 1 +;\n}\n";
    ck_assert_int_eq(tilec_candidates_string("b.tile", bad, strlen(bad), &o, &r), TILEC_ERR_INPUT);
    ck_assert_uint_eq(tilec_result_num_candidates(r), 0);
    ck_assert_int_eq(tilec_result_diag(r, 0)->line, 2);
    tilec_result_free(r);
    const char *noprod = "kernel k<B: int = auto>(X: global f32[N]) grid(1) { X[0 : +B] = X[0 : +B]; }\n";
    ck_assert_int_eq(tilec_candidates_string("p.tile", noprod, strlen(noprod), &o, &r), TILEC_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag(r, 0)->message, "has no product"));
    tilec_result_free(r);
    o.arch = "sm_12";
    ck_assert_int_eq(tilec_candidates_file(GEMM, &o, &r), TILEC_ERR_USAGE);
    tilec_result_free(r);
    o.arch = "sm_90a";
    ck_assert_int_eq(tilec_candidates_string("x", NULL, 0, &o, &r), TILEC_ERR_USAGE);
    tilec_result_free(r);
    ck_assert_int_eq(tilec_candidates_file(TILEC_SOURCE_DIR "/examples/no-such.tile", &o, &r), TILEC_ERR_IO);
    tilec_result_free(r);
    /* tiles.candidate given to the listing changes nothing */
    o.pass_options = "tiles.candidate=3";
    ck_assert_int_eq(tilec_candidates_file(GEMM, &o, &r), TILEC_OK);
    ck_assert_uint_eq(tilec_result_num_candidates(r), 4);
    ck_assert_str_eq(tilec_result_candidate(r, 0), "BM=256,BN=128,BK=64");
    tilec_result_free(r);
    /* Tile IR input: one candidate, the IR as written; a later one is an error */
    const char *tir = "// tilec tir\n";
    o.pass_options = NULL;
    o.language = "tir";
    ck_assert_int_eq(tilec_candidates_string("m.tir", tir, strlen(tir), &o, &r), TILEC_OK);
    expect_cands(r, (const char *const[]){ "", NULL });
    tilec_result_free(r);
    o.pass_options = "tiles.candidate=1";
    ck_assert_int_eq(tilec_compile_string("m.tir", tir, strlen(tir), &o, &r), TILEC_ERR_INPUT);
    tilec_result_free(r);
}
END_TEST

/* ---- the runtime side ---- */

static const char *VA_META =
    "tilec-meta 1\n"
    "kernel va\n"
    "arch sm_86\n"
    "threads 128\n"
    "dim N\n"
    "dim M\n"
    "param X tensor f32 2 N M align 16\n"
    "param Z tensor f32 2 N M align 16\n"
    "grid N 128 cdiv ; M ; 1\n"
    "end\n";

START_TEST(test_shape_class)
{
    tilert_module *m;
    ck_assert_int_eq(tilert_module_from_meta(VA_META, &m), TILERT_OK);
    tilert_kernel *k = tilert_module_kernel_at(m, 0);
    static const int64_t sizes[][4] = { /* N, M, then their classes */
        { 1000, 1, 1024, 1 }, { 1024, 0, 1024, 0 }, { 1025, 7, 2048, 8 }, { 1, 3, 1, 4 }, { 3, 4097, 4, 8192 },
        { 0, 2, 0, 2 }
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        T x, z;
        mk(&x, kDLFloat, 32, 2, (int64_t[]){ sizes[i][0], sizes[i][1] });
        mk(&z, kDLFloat, 32, 2, (int64_t[]){ sizes[i][0], sizes[i][1] });
        tilert_arg args[2] = { { TILERT_ARG_TENSOR, { .tensor = &x.t } }, { TILERT_ARG_TENSOR, { .tensor = &z.t } } };
        char buf[64], want[64];
        snprintf(want, sizeof want, "N=%lld,M=%lld", (long long)sizes[i][2], (long long)sizes[i][3]);
        ck_assert_int_eq(tilert_shape_class(k, args, 2, buf, sizeof buf), TILERT_OK);
        ck_assert_str_eq(buf, want);
        /* too small a buffer: a usage error, not a cut class */
        ck_assert_int_eq(tilert_shape_class(k, args, 2, buf, 6), TILERT_ERR_USAGE);
        ck_assert_str_eq(buf, "");
    }
    /* arguments the kernel refuses are refused here too */
    T x, z;
    mk(&x, kDLFloat, 32, 2, (int64_t[]){ 10, 10 });
    mk(&z, kDLFloat, 32, 2, (int64_t[]){ 10, 11 });
    tilert_arg args[2] = { { TILERT_ARG_TENSOR, { .tensor = &x.t } }, { TILERT_ARG_TENSOR, { .tensor = &z.t } } };
    char buf[64];
    ck_assert_int_eq(tilert_shape_class(k, args, 2, buf, sizeof buf), TILERT_ERR_ARGS);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "param Z dim 1 (M) is 11"));
    ck_assert_int_eq(tilert_shape_class(k, args, 2, NULL, 0), TILERT_ERR_USAGE);
    tilert_module_free(m);
}
END_TEST

/* The files of folder d ending in ext. */
static int count_files(const char *d, const char *ext)
{
    DIR *dp = opendir(d);
    int n = 0;
    struct dirent *de;
    while (dp && (de = readdir(dp)) != NULL) {
        size_t l = strlen(de->d_name), e = strlen(ext);
        n += l >= e && strcmp(de->d_name + l - e, ext) == 0;
    }
    if (dp)
        closedir(dp);
    return n;
}

START_TEST(test_decision_store)
{
    char tmpl[] = "/tmp/tilec-tune-XXXXXX";
    char *base = mkdtemp(tmpl);
    ck_assert_ptr_nonnull(base);
    char dir[256], val[256];
    snprintf(dir, sizeof dir, "%s/a/b", base);   /* made when missing */
    const char *key = "tilec-tune 1|device=NVIDIA H200|cc=9.0|source=abc|class=M=4096,N=4096";
    ck_assert_int_eq(tilert_tune_load(dir, key, val, sizeof val), TILERT_ERR_NOT_FOUND);
    ck_assert_int_eq(tilert_tune_store(dir, key, "index=2 defines=BM=128,BN=128,BK=64"), TILERT_OK);
    ck_assert_int_eq(tilert_tune_load(dir, key, val, sizeof val), TILERT_OK);
    ck_assert_str_eq(val, "index=2 defines=BM=128,BN=128,BK=64");
    ck_assert_int_eq(count_files(dir, ".tune"), 1);
    /* any change of the key is a miss */
    ck_assert_int_eq(tilert_tune_load(dir, "tilec-tune 1|device=NVIDIA H200|cc=9.0|source=abc|class=M=4096,N=8192",
                                      val, sizeof val), TILERT_ERR_NOT_FOUND);
    ck_assert_int_eq(tilert_tune_load(dir, "tilec-tune 1|device=NVIDIA H100|cc=9.0|source=abc|class=M=4096,N=4096",
                                      val, sizeof val), TILERT_ERR_NOT_FOUND);
    /* a store replaces; a buffer too small is a usage error */
    ck_assert_int_eq(tilert_tune_store(dir, key, "index=0 defines=BM=256"), TILERT_OK);
    ck_assert_int_eq(tilert_tune_load(dir, key, val, sizeof val), TILERT_OK);
    ck_assert_str_eq(val, "index=0 defines=BM=256");
    ck_assert_int_eq(tilert_tune_load(dir, key, val, 5), TILERT_ERR_USAGE);
    /* a damaged entry is a miss, and the next store mends it */
    char path[512];
    DIR *dp = opendir(dir);
    struct dirent *de;
    while ((de = readdir(dp)) != NULL)
        if (strstr(de->d_name, ".tune"))
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    closedir(dp);
    FILE *f = fopen(path, "w");
    fputs("tilec-tune 1\nkey ", f);
    fclose(f);
    ck_assert_int_eq(tilert_tune_load(dir, key, val, sizeof val), TILERT_ERR_NOT_FOUND);
    ck_assert_int_eq(tilert_tune_store(dir, key, "index=1 defines=BM=128"), TILERT_OK);
    ck_assert_int_eq(tilert_tune_load(dir, key, val, sizeof val), TILERT_OK);
    ck_assert_str_eq(val, "index=1 defines=BM=128");
    /* one line each */
    ck_assert_int_eq(tilert_tune_store(dir, "a\nb", "x"), TILERT_ERR_USAGE);
    ck_assert_int_eq(tilert_tune_store(dir, key, "x\ny"), TILERT_ERR_USAGE);
    ck_assert_int_eq(tilert_tune_load(dir, NULL, val, sizeof val), TILERT_ERR_USAGE);
    ck_assert_int_eq(tilert_tune_store(NULL, key, "x"), TILERT_ERR_USAGE);
    /* a folder that cannot be made */
    snprintf(path, sizeof path, "%s/file", base);
    f = fopen(path, "w");
    fclose(f);
    snprintf(path, sizeof path, "%s/file/sub", base);
    ck_assert_int_eq(tilert_tune_store(path, key, "x"), TILERT_ERR_IO);
    /* clearing the compile cache's folder removes the decisions too, and
     * leaves other files */
    ck_assert_int_eq(tilec_cache_clear(dir), TILEC_OK);
    ck_assert_int_eq(count_files(dir, ".tune"), 0);
    ck_assert_int_eq(tilert_tune_load(dir, key, val, sizeof val), TILERT_ERR_NOT_FOUND);
    snprintf(path, sizeof path, "%s/file", base);
    ck_assert_int_eq(access(path, F_OK), 0);
    unlink(path);
    rmdir(dir);
    snprintf(path, sizeof path, "%s/a", base);
    rmdir(path);
    rmdir(base);
}
END_TEST

/* What tilert_tune refuses before it needs a GPU. */
START_TEST(test_tune_refusals)
{
    tilert_module *m;
    ck_assert_int_eq(tilert_module_from_meta(VA_META, &m), TILERT_OK);
    tilert_kernel *k = tilert_module_kernel_at(m, 0);
    T x, z;
    mk(&x, kDLFloat, 32, 2, (int64_t[]){ 100, 3 });
    mk(&z, kDLFloat, 32, 2, (int64_t[]){ 100, 3 });
    tilert_arg args[2] = { { TILERT_ARG_TENSOR, { .tensor = &x.t } }, { TILERT_ARG_TENSOR, { .tensor = &z.t } } };
    tilert_tune_result res;
    tilert_kernel *ks[TILERT_TUNE_MAX + 1];
    for (int i = 0; i <= TILERT_TUNE_MAX; i++)
        ks[i] = k;
    ck_assert_int_eq(tilert_tune(ks, 0, args, 2, NULL, NULL, &res), TILERT_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "0 candidates (1 to 16)"));
    ck_assert_int_eq(tilert_tune(ks, TILERT_TUNE_MAX + 1, args, 2, NULL, NULL, &res), TILERT_ERR_USAGE);
    ck_assert_int_eq(tilert_tune(NULL, 1, args, 2, NULL, NULL, &res), TILERT_ERR_USAGE);
    ck_assert_int_eq(tilert_tune(ks, 1, args, 2, NULL, NULL, NULL), TILERT_ERR_USAGE);
    ck_assert_int_eq(tilert_tune(ks, 2, args, 2, NULL, NULL, &res), TILERT_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "candidate 0 (kernel va) is metadata only"));
    ks[1] = NULL;
    tilert_tune_options o;
    tilert_tune_options_init(&o);
    ck_assert_int_eq(o.warmup, 2);
    ck_assert_int_eq(o.rounds, 5);
    ck_assert_int_eq(o.max_launches, 200);
    o.rounds = 0;
    ck_assert_int_eq(tilert_tune(ks, 1, args, 2, NULL, &o, &res), TILERT_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "options out of range"));
    o.rounds = 5;
    o.budget_ms = -1;
    ck_assert_int_eq(tilert_tune(ks, 1, args, 2, NULL, &o, &res), TILERT_ERR_USAGE);
    tilert_module_free(m);
}
END_TEST

/* ---- tilert_tune through a fake driver: kernels of known duration ---- */

static double gpu_now;              /* the fake GPU's clock, ms */
static double ev_time[64];
static int n_events, n_live_events, n_launches, fail_at;
static char launch_log[4096];       /* the kernels launched, one letter each */
static size_t log_len;

static CUresult f_ctx_current(CUcontext *c) { *c = (CUcontext)0x1000; return CUDA_SUCCESS; }
static CUresult f_ctx_device(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
static CUresult f_device_get(CUdevice *d, int i) { *d = i; return CUDA_SUCCESS; }
static CUresult f_ok_ctx(CUcontext c) { (void)c; return CUDA_SUCCESS; }
static CUresult f_ctx_pop(CUcontext *c) { *c = (CUcontext)0x1000; return CUDA_SUCCESS; }
static CUresult f_attr(int *v, int attr, CUdevice d)
{
    (void)d;
    *v = attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
    return CUDA_SUCCESS;
}
static CUresult f_name(char *s, int n, CUdevice d) { (void)d; snprintf(s, (size_t)n, "Fake GPU"); return CUDA_SUCCESS; }
static unsigned char loaded[64];     /* the first bytes of the last image loaded */
static size_t elf_len;               /* the length of the ELF image a test loads */
static CUresult f_load(CUmodule *m, const void *p, unsigned n, int *o, void **v)
{
    (void)n; (void)o; (void)v;
    /* as the driver does: an image starting with the ELF magic is a cubin
     * (its length known to the test), anything else NUL-terminated text */
    const unsigned char *c = p;
    int elf = c[0] == 0x7f && c[1] == 'E' && c[2] == 'L' && c[3] == 'F';
    size_t len = elf ? elf_len : strnlen(p, sizeof loaded - 1) + 1;
    memcpy(loaded, p, len < sizeof loaded ? len : sizeof loaded);
    *m = (CUmodule)0x2000;
    return CUDA_SUCCESS;
}
static CUresult f_unload(CUmodule m) { (void)m; return CUDA_SUCCESS; }
static CUresult f_get_function(CUfunction *f, CUmodule m, const char *name)
{
    (void)m;
    *f = (CUfunction)(uintptr_t)name;
    return CUDA_SUCCESS;
}
static CUresult f_func_attr(int *v, int a, CUfunction f) { (void)a; (void)f; *v = 1024; return CUDA_SUCCESS; }
static CUresult f_func_set(CUfunction f, int a, int v) { (void)f; (void)a; (void)v; return CUDA_SUCCESS; }
static CUresult f_pointer(void *v, int a, CUdeviceptr p) { (void)a; (void)p; *(int *)v = 0; return CUDA_SUCCESS; }
static CUresult f_error_name(CUresult r, const char **s) { (void)r; *s = "CUDA_ERROR_LAUNCH_FAILED"; return CUDA_SUCCESS; }
static CUresult f_error_string(CUresult r, const char **s) { (void)r; *s = "unspecified launch failure"; return CUDA_SUCCESS; }
/* kernel "k<ms>_<x>" takes <ms> milliseconds of the fake GPU's time */
static CUresult f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned smem, CUstream s, void **params, void **extra)
{
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)smem; (void)s; (void)params; (void)extra;
    const char *name = (const char *)f;
    if (++n_launches == fail_at)
        return 719;
    gpu_now += atof(name + 1);
    if (log_len + 1 < sizeof launch_log)
        launch_log[log_len++] = name[strlen(name) - 1];
    return CUDA_SUCCESS;
}
static CUresult f_event_create(CUevent *e, unsigned flags)
{
    (void)flags;
    if (n_events == 64)
        return 2;
    *e = (CUevent)(uintptr_t)(++n_events);
    n_live_events++;
    return CUDA_SUCCESS;
}
static CUresult f_event_record(CUevent e, CUstream s) { (void)s; ev_time[(uintptr_t)e - 1] = gpu_now; return CUDA_SUCCESS; }
static CUresult f_event_sync(CUevent e) { (void)e; return CUDA_SUCCESS; }
static CUresult f_event_elapsed(float *ms, CUevent a, CUevent b)
{
    *ms = (float)(ev_time[(uintptr_t)b - 1] - ev_time[(uintptr_t)a - 1]);
    return CUDA_SUCCESS;
}
static CUresult f_event_destroy(CUevent e) { (void)e; n_live_events--; return CUDA_SUCCESS; }

static tilert_driver fake;

static const char *FAKE_META =
    "tilec-meta 1\n"
    "kernel k1_a\narch sm_86\nthreads 128\ndim N\nparam X tensor f32 1 N align 16\ngrid N 128 cdiv ; 1 ; 1\nend\n"
    "kernel k3_b\narch sm_86\nthreads 128\ndim N\nparam X tensor f32 1 N align 16\ngrid N 128 cdiv ; 1 ; 1\nend\n"
    "kernel k2_c\narch sm_86\nthreads 128\ndim N\nparam X tensor f32 1 N align 16\ngrid N 128 cdiv ; 1 ; 1\nend\n";

static tilert_module *fake_module(void)
{
    memset(&fake, 0, sizeof fake);
    fake.CtxGetCurrent = f_ctx_current;
    fake.CtxGetDevice = f_ctx_device;
    fake.CtxPushCurrent = f_ok_ctx;
    fake.CtxPopCurrent = f_ctx_pop;
    fake.DeviceGetAttribute = f_attr;
    fake.DeviceGetName = f_name;
    fake.ModuleLoadDataEx = f_load;
    fake.ModuleUnload = f_unload;
    fake.ModuleGetFunction = f_get_function;
    fake.FuncGetAttribute = f_func_attr;
    fake.FuncSetAttribute = f_func_set;
    fake.PointerGetAttribute = f_pointer;
    fake.GetErrorName = f_error_name;
    fake.GetErrorString = f_error_string;
    fake.LaunchKernel = f_launch;
    fake.EventCreate = f_event_create;
    fake.EventRecord = f_event_record;
    fake.EventSynchronize = f_event_sync;
    fake.EventElapsedTime = f_event_elapsed;
    fake.EventDestroy = f_event_destroy;
    tilert_module *m;
    ck_assert_int_eq(tilert_module_from_meta(FAKE_META, &m), TILERT_OK);
    m->drv = &fake;             /* launchable through the fake */
    m->ptx = strdup("");
    gpu_now = 0;
    n_events = n_live_events = n_launches = fail_at = 0;
    log_len = 0;
    return m;
}

/* tilert_module_load_image: a cubin (ELF, NUL bytes inside) reaches the
 * driver byte for byte; PTX text with or without its final NUL loads;
 * PTX with a NUL inside and an empty image are refused. */
START_TEST(test_load_image)
{
    tilert_module *m = fake_module();    /* sets the fake driver up */
    tilert_module_free(m);
    static const unsigned char elf[40] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0xbe, 0,
                                           1, 0, 0, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0xff, 0, 0, 0, 0 };
    memset(loaded, 0xaa, sizeof loaded);
    elf_len = sizeof elf;
    ck_assert_int_eq(tilert_module_load_image(&fake, elf, sizeof elf, FAKE_META, &m), TILERT_OK);
    ck_assert_mem_eq(loaded, elf, sizeof elf);
    ck_assert_uint_eq(tilert_module_num_kernels(m), 3);
    tilert_module_free(m);
    const char ptx[] = ".version 8.0\n.target sm_86\n";
    ck_assert_int_eq(tilert_module_load_image(&fake, ptx, sizeof ptx, FAKE_META, &m), TILERT_OK);
    ck_assert_str_eq((const char *)loaded, ptx);
    tilert_module_free(m);
    ck_assert_int_eq(tilert_module_load_image(&fake, ptx, sizeof ptx - 1, FAKE_META, &m), TILERT_OK);
    ck_assert_str_eq((const char *)loaded, ptx);
    tilert_module_free(m);
    const char bad[] = ".version 8.0\0.target sm_86\n";
    ck_assert_int_eq(tilert_module_load_image(&fake, bad, sizeof bad, FAKE_META, &m), TILERT_ERR_USAGE);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "neither a cubin"));
    ck_assert_int_eq(tilert_module_load_image(&fake, ptx, 0, FAKE_META, &m), TILERT_ERR_USAGE);
    ck_assert_int_eq(tilert_module_load_image(NULL, ptx, sizeof ptx, FAKE_META, &m), TILERT_ERR_USAGE);
    ck_assert_int_eq(tilert_module_load_image(&fake, elf, sizeof elf, "not metadata", &m), TILERT_ERR_META);
    ck_assert_ptr_null(m);
}
END_TEST

START_TEST(test_tune_fake_driver)
{
    tilert_module *m = fake_module();
    tilert_kernel *a = tilert_module_kernel_at(m, 0), *b = tilert_module_kernel_at(m, 1),
                  *c = tilert_module_kernel_at(m, 2);
    T x;
    mk(&x, kDLFloat, 32, 1, (int64_t[]){ 1000 });
    tilert_arg args[1] = { { TILERT_ARG_TENSOR, { .tensor = &x.t } } };
    tilert_kernel *ks[3] = { b, a, c };   /* 3 ms, 1 ms, 2 ms */
    tilert_tune_result r;
    ck_assert_int_eq(tilert_tune(ks, 3, args, 1, NULL, NULL, &r), TILERT_OK);
    ck_assert_uint_eq(r.n, 3);
    ck_assert_uint_eq(r.best, 1);
    ck_assert(r.ms[0] == 3 && r.ms[1] == 1 && r.ms[2] == 2);
    ck_assert(r.min_ms[0] == 3 && r.min_ms[1] == 1 && r.min_ms[2] == 2);
    /* 300 ms over 5 rounds: 60 ms a round for 6 ms of launches, 10 each */
    ck_assert_int_eq(r.launches, 10);
    ck_assert_int_eq(r.rounds, 5);
    ck_assert_int_eq(n_launches, 3 * 2 + 5 * 3 * 10);
    /* the warm-up (2 each, in order), then each round rotated by one */
    ck_assert_int_eq((int)log_len, n_launches);
    ck_assert(memcmp(launch_log, "bbaacc", 6) == 0);
    static const char *const first[5] = { "b", "a", "c", "b", "a" };
    for (int round = 0; round < 5; round++)
        ck_assert_int_eq(launch_log[6 + round * 30], first[round][0]);
    ck_assert_int_eq(n_live_events, 0);   /* every event destroyed */
    ck_assert(r.wall_ms >= 0);
    /* options: rounds, budget, the launch cap, one warm-up */
    tilert_tune_options o;
    tilert_tune_options_init(&o);
    o.rounds = 3;
    o.budget_ms = 1e6;
    o.max_launches = 7;
    o.warmup = 1;
    n_launches = 0;
    log_len = 0;
    ck_assert_int_eq(tilert_tune(ks, 2, args, 1, NULL, &o, &r), TILERT_OK);
    ck_assert(r.launches == 7 && r.rounds == 3 && r.best == 1 && n_launches == 2 + 3 * 2 * 7);
    o.budget_ms = 0;
    ck_assert_int_eq(tilert_tune(ks, 2, args, 1, NULL, &o, &r), TILERT_OK);
    ck_assert_int_eq(r.launches, 1);
    /* an even number of rounds: the median is the middle two's mean */
    o.rounds = 2;
    ck_assert_int_eq(tilert_tune(ks, 3, args, 1, NULL, &o, &r), TILERT_OK);
    ck_assert(r.ms[2] == 2 && r.best == 1);
    /* a launch that fails names the candidate; the events are destroyed */
    n_launches = 0;
    fail_at = 4;
    ck_assert_int_eq(tilert_tune(ks, 3, args, 1, NULL, NULL, &r), TILERT_ERR_CUDA);
    ck_assert_msg(strstr(tilert_last_error(), "autotuning: candidate 1 (kernel k1_a): ") != NULL, "%s",
                  tilert_last_error());
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "CUDA_ERROR_LAUNCH_FAILED"));
    ck_assert_int_eq(n_live_events, 0);
    fail_at = 0;
    /* refused arguments name the candidate before anything runs */
    T y;
    mk(&y, kDLFloat, 16, 1, (int64_t[]){ 1000 });
    tilert_arg bad[1] = { { TILERT_ARG_TENSOR, { .tensor = &y.t } } };
    n_launches = 0;
    ck_assert_int_eq(tilert_tune(ks, 3, bad, 1, NULL, NULL, &r), TILERT_ERR_ARGS);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "autotuning: candidate 0 (kernel k3_b): "));
    ck_assert_int_eq(n_launches, 0);
    /* a driver without events */
    fake.EventElapsedTime = NULL;
    fake.EventElapsedTime1 = f_event_elapsed;
    ck_assert_int_eq(tilert_tune(ks, 3, args, 1, NULL, NULL, &r), TILERT_OK);   /* the older entry point */
    ck_assert_uint_eq(r.best, 1);
    fake.EventElapsedTime1 = NULL;
    ck_assert_int_eq(tilert_tune(ks, 3, args, 1, NULL, NULL, &r), TILERT_ERR_NO_DRIVER);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "autotuning needs the driver's CUDA events"));
    /* the device's name */
    char name[64];
    fake.DeviceGet = f_device_get;
    ck_assert_int_eq(tilert_device_name(&fake, 0, name, sizeof name), TILERT_OK);
    ck_assert_str_eq(name, "Fake GPU");
    ck_assert_int_eq(tilert_device_name(&fake, 0, name, 1), TILERT_ERR_USAGE);
    tilert_module_free(m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tune");
    TCase *tc = tcase_create("tune");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_gemm_candidates);
    tcase_add_test(tc, test_attention_candidates);
    tcase_add_test(tc, test_no_auto);
    tcase_add_test(tc, test_candidate_compiles_its_defines);
    tcase_add_test(tc, test_candidate_errors);
    tcase_add_test(tc, test_shape_class);
    tcase_add_test(tc, test_decision_store);
    tcase_add_test(tc, test_tune_refusals);
    tcase_add_test(tc, test_tune_fake_driver);
    tcase_add_test(tc, test_load_image);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tc_check_run(suite()); }
