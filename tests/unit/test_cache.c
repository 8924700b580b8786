/* test_cache.c - the compile cache (lib/cache.c, docs/cache.md) within one
 * process: hits equal to fresh compilations, what is not cached, the key's
 * inputs, results outliving a cleared cache, damaged entries, the default
 * folder. tests/cache/run.sh covers several processes. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>

#include "check_main.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/cache.h"
#include "tilec.h"

static const char *const src =
    "kernel vadd<BLOCK: int = 256>(X: global f32[N], Y: global f32[N], Z: global f32[N])\n"
    "  grid(cdiv(N, BLOCK))\n"
    "{\n"
    "  let i = block.x * BLOCK;\n"
    "  Z[i : +BLOCK] = X[i : +BLOCK] + Y[i : +BLOCK];\n"
    "}\n";

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/tilec-test-cache-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
    ck_assert_int_eq(tilec_cache_clear(dir), TILEC_OK);
    rmdir(dir);
}

static int count_entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".tce") != NULL;
    if (d)
        closedir(d);
    return n;
}

static tilec_result *compile(tilec_cache_mode mode, const char *arch, const char *block)
{
    tilec_define def = { "BLOCK", block };
    tilec_options o;
    tilec_options_init(&o);
    o.cache = mode;
    o.cache_dir = dir;
    o.arch = arch;
    o.defines = &def;
    o.ndefines = 1;
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_string("vadd.tile", src, strlen(src), &o, &r), TILEC_OK);
    return r;
}

static void assert_same(const tilec_result *a, const tilec_result *b)
{
    for (int i = TILEC_OUT_TOKENS; i <= TILEC_OUT_REPORT; i++) {
        const char *x = tilec_result_text(a, (tilec_output)i), *y = tilec_result_text(b, (tilec_output)i);
        ck_assert(x == y || (x && y && strcmp(x, y) == 0));
    }
    ck_assert_str_eq(tilec_result_arch(a), tilec_result_arch(b));
    ck_assert_str_eq(tilec_result_diag_text(a), tilec_result_diag_text(b));
    ck_assert_uint_eq(tilec_result_num_diags(a), tilec_result_num_diags(b));
    for (size_t i = 0; i < tilec_result_num_diags(a); i++)
        ck_assert_str_eq(tilec_result_diag(a, i)->message, tilec_result_diag(b, i)->message);
}

START_TEST(test_hits)
{
    make_dir();
    tilec_result *off = compile(TILEC_CACHE_OFF, "sm_90", "256");
    tilec_result *a = compile(TILEC_CACHE_DISK, "sm_90", "256");
    tilec_result *b = compile(TILEC_CACHE_DISK, "sm_90", "256");
    ck_assert_int_eq(tilec_result_cache(off), TILEC_CACHE_OFF);
    ck_assert_int_eq(tilec_result_cache(a), TILEC_CACHE_OFF);
    ck_assert_int_eq(tilec_result_cache(b), TILEC_CACHE_MEMORY);
    ck_assert_uint_ge(tilec_result_num_diags(b), 1);   /* the remark about sm_90 -> sm_90a */
    assert_same(off, a);
    assert_same(off, b);
    ck_assert_int_eq(count_entries(), 1);
    /* Clearing drops the memory table and the file; b still holds its entry. */
    ck_assert_int_eq(tilec_cache_clear(dir), TILEC_OK);
    ck_assert_int_eq(count_entries(), 0);
    assert_same(off, b);
    tilec_result *c = compile(TILEC_CACHE_DISK, "sm_90", "256");
    ck_assert_int_eq(tilec_result_cache(c), TILEC_CACHE_OFF);
    tilec_result_free(b);
    tilec_result_free(c);
    /* A new disk entry, the memory table emptied: the next hit is from disk. */
    ck_assert_int_eq(tilec_cache_clear("/nonexistent/tilec-test"), TILEC_OK);
    tilec_result *d = compile(TILEC_CACHE_DISK, "sm_90", "256");
    ck_assert_int_eq(tilec_result_cache(d), TILEC_CACHE_DISK);
    assert_same(off, d);
    tilec_result_free(d);
    tilec_result_free(a);
    tilec_result_free(off);
    remove_dir();
}
END_TEST

START_TEST(test_misses)
{
    make_dir();
    tilec_result_free(compile(TILEC_CACHE_MEMORY, "sm_90a", "256"));
    ck_assert_int_eq(count_entries(), 0);   /* memory only */
    tilec_result *r = compile(TILEC_CACHE_MEMORY, "sm_90a", "128");
    ck_assert_int_eq(tilec_result_cache(r), TILEC_CACHE_OFF);
    tilec_result_free(r);
    r = compile(TILEC_CACHE_MEMORY, "sm_100a", "256");
    ck_assert_int_eq(tilec_result_cache(r), TILEC_CACHE_OFF);
    tilec_result_free(r);
    setenv("TILEC_TEST_CACHE_KEY", "1", 1);   /* the environment changes nothing the compiler makes */
    r = compile(TILEC_CACHE_MEMORY, "sm_90a", "256");
    ck_assert_int_eq(tilec_result_cache(r), TILEC_CACHE_MEMORY);
    tilec_result_free(r);
    unsetenv("TILEC_TEST_CACHE_KEY");
    r = compile(TILEC_CACHE_MEMORY, "sm_90a", "256");
    ck_assert_int_eq(tilec_result_cache(r), TILEC_CACHE_MEMORY);
    tilec_result_free(r);
    /* Runs that print per-run outputs are never cached. */
    tilec_options o;
    tilec_options_init(&o);
    o.cache = TILEC_CACHE_MEMORY;
    o.time_passes = 1;
    ck_assert(!tc_cache_usable(&o));
    o.time_passes = 0;
    o.report = 1;
    ck_assert(!tc_cache_usable(&o));
    o.report = 0;
    o.emit = TILEC_EMIT_TIR;
    ck_assert(!tc_cache_usable(&o));
    o.emit = TILEC_EMIT_PTX;
    ck_assert(tc_cache_usable(&o));
    remove_dir();
}
END_TEST

START_TEST(test_key)
{
    tilec_options o;
    tilec_options_init(&o);
    TcCacheKey k1, k2;
    tc_cache_key(&k1, "a.tile", src, strlen(src), &o, "0.1.0 (LLVM 22.1.8)");
    tc_cache_key(&k2, "a.tile", src, strlen(src), &o, "0.1.0 (LLVM 22.1.8)");
    ck_assert_str_eq(k1.hex, k2.hex);
    ck_assert_uint_eq(strlen(k1.hex), 32);
    tc_cache_key(&k2, "a.tile", src, strlen(src), &o, "0.1.1 (LLVM 22.1.8)");
    ck_assert_str_ne(k1.hex, k2.hex);
    tc_cache_key(&k2, "b.tile", src, strlen(src), &o, "0.1.0 (LLVM 22.1.8)");
    ck_assert_str_ne(k1.hex, k2.hex);
    tc_cache_key(&k2, "a.tile", src, strlen(src) - 1, &o, "0.1.0 (LLVM 22.1.8)");
    ck_assert_str_ne(k1.hex, k2.hex);
    o.opt_level = 2;
    tc_cache_key(&k2, "a.tile", src, strlen(src), &o, "0.1.0 (LLVM 22.1.8)");
    ck_assert_str_ne(k1.hex, k2.hex);
    o.opt_level = 3;
    o.pass_options = "target.smem-per-block=200704";
    tc_cache_key(&k2, "a.tile", src, strlen(src), &o, "0.1.0 (LLVM 22.1.8)");
    ck_assert_str_ne(k1.hex, k2.hex);
    o.pass_options = NULL;
    o.passes = "";   /* no passes differs from all passes (NULL) */
    tc_cache_key(&k2, "a.tile", src, strlen(src), &o, "0.1.0 (LLVM 22.1.8)");
    ck_assert_str_ne(k1.hex, k2.hex);
}
END_TEST

START_TEST(test_damaged_entry)
{
    make_dir();
    tilec_result *a = compile(TILEC_CACHE_DISK, "sm_90a", "64");
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[384] = "";
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tce"))
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    closedir(d);
    ck_assert(path[0]);
    /* One byte of the payload changed: the checksum no longer matches. */
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, -10, SEEK_END);
    int c = fgetc(f);
    fseek(f, -10, SEEK_END);
    fputc(c ^ 0x20, f);
    fclose(f);
    ck_assert_int_eq(tilec_cache_clear("/nonexistent/tilec-test"), TILEC_OK);   /* memory only */
    tilec_result *b = compile(TILEC_CACHE_DISK, "sm_90a", "64");
    ck_assert_int_eq(tilec_result_cache(b), TILEC_CACHE_OFF);
    assert_same(a, b);
    ck_assert_int_eq(tilec_cache_clear("/nonexistent/tilec-test"), TILEC_OK);
    tilec_result *c2 = compile(TILEC_CACHE_DISK, "sm_90a", "64");   /* rewritten whole by b */
    ck_assert_int_eq(tilec_result_cache(c2), TILEC_CACHE_DISK);
    tilec_result_free(a);
    tilec_result_free(b);
    tilec_result_free(c2);
    remove_dir();
}
END_TEST

/* The library has no default folder (it reads no environment): a disk
 * cache needs tilec_options.cache_dir, and clearing without a folder
 * empties the memory table only. The default folder is the tilec
 * command's and the Python package's (lit/cli/cache-default-dir.tile). */
START_TEST(test_disk_needs_dir)
{
    tilec_options o;
    tilec_options_init(&o);
    o.cache = TILEC_CACHE_DISK;
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_string("k.tile", src, strlen(src), &o, &r), TILEC_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilec_result_diag_text(r), "TILEC_CACHE_DISK needs a folder"));
    tilec_result_free(r);
    o.cache_dir = "";
    ck_assert_int_eq(tilec_compile_string("k.tile", src, strlen(src), &o, &r), TILEC_ERR_USAGE);
    tilec_result_free(r);
    ck_assert_int_eq(tilec_cache_clear(NULL), TILEC_OK);
}
END_TEST

static Suite *cache_suite(void)
{
    Suite *s = suite_create("cache");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_hits);
    tcase_add_test(tc, test_misses);
    tcase_add_test(tc, test_key);
    tcase_add_test(tc, test_damaged_entry);
    tcase_add_test(tc, test_disk_needs_dir);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(cache_suite());
}
