/* test_oom.c - out of memory through the public API, by allocation-failure
 * injection (lib/alloc.h), as SQLite's test harness does it: a call is made
 * once counting the allocations of the compiler's own code, then again for
 * every N from 1 to that count with the N-th allocation failing. Each of
 * those calls must return TILEC_ERR_NOMEM with *out NULL, and leave nothing
 * behind: no file descriptor stays open, the number of live heap blocks
 * (this program's malloc counts them, LLVM's included) is what it was
 * before the call (the plain build), and LeakSanitizer finds no leak (the
 * ASan build, scripts/test.sh).
 *
 * Covered: every example in examples/ compiled to PTX for sm_86, sm_90a
 * and sm_100a; vector_add with each emit stage, pass dumps and timing, the
 * decisions report (which runs ptxas where installed), line info, a cache
 * in memory and on disk (a miss that stores, then a hit), a file compile,
 * Tile IR text input, the interpreter, and the tile choice's candidates
 * (tilec_candidates_string, and a compile with tiles.candidate). Every N, no stride: the counts
 * are small (arena chunks are 64 KB), a few thousand calls in all.
 *
 * What it cannot reach: LLVM's own allocations (C++ new inside LLVM), which
 * are not the compiler's and cannot be made to fail from here.
 */
#define _GNU_SOURCE
#include <check.h>

#include "check_main.h"
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/alloc.h"
#include "lib/util.h"
#include "tilec.h"

#ifndef TILEC_SOURCE_DIR
#define TILEC_SOURCE_DIR "."
#endif

/* ---- live heap blocks ---- */

#if defined(__SANITIZE_ADDRESS__)
#define HEAP_CHECK 0   /* LeakSanitizer checks at exit instead */
static long live_blocks(void) { return 0; }
#else
#define HEAP_CHECK 1
/* glibc's allocator under a count of the blocks in use (glibc documents
 * replacing malloc this way; every thread's and LLVM's allocations come
 * here too). */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
static long nlive;

static void *counted(void *p)
{
    if (p)
        __atomic_add_fetch(&nlive, 1, __ATOMIC_RELAXED);
    return p;
}

void *malloc(size_t n) { return counted(__libc_malloc(n)); }
void *calloc(size_t n, size_t m) { return counted(__libc_calloc(n, m)); }
void *memalign(size_t a, size_t n) { return counted(__libc_memalign(a, n)); }
void *aligned_alloc(size_t a, size_t n) { return counted(__libc_memalign(a, n)); }
void *valloc(size_t n) { return counted(__libc_memalign((size_t)sysconf(_SC_PAGESIZE), n)); }
void *pvalloc(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return counted(__libc_memalign(pg, (n + pg - 1) / pg * pg));
}

int posix_memalign(void **out, size_t a, size_t n)
{
    void *p = counted(__libc_memalign(a, n));
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void free(void *p)
{
    if (p)
        __atomic_sub_fetch(&nlive, 1, __ATOMIC_RELAXED);
    __libc_free(p);
}

void *realloc(void *p, size_t n)
{
    if (!p)
        return malloc(n);
    void *q = __libc_realloc(p, n);
    if (!q && n == 0)
        __atomic_sub_fetch(&nlive, 1, __ATOMIC_RELAXED);   /* glibc freed it */
    return q;
}

static long live_blocks(void) { return __atomic_load_n(&nlive, __ATOMIC_RELAXED); }
#endif

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* One API call to repeat: returns its status and stores its result. */
typedef tilec_status (*Call)(void *ctx, tilec_result **out);

typedef struct Counts { unsigned long calls, failures; } Counts;
static Counts total;

/* Run call once clean (it must give `want`), then once for each N failing
 * its N-th allocation. */
static void sweep(const char *what, Call call, void *ctx, tilec_status want)
{
    tilec_result *r = NULL;
    tc_alloc_fail_at(0);
    tilec_status st = call(ctx, &r);
    uint64_t n = tc_alloc_count();
    ck_assert_msg(st == want, "%s: status %d, expected %d: %s", what, (int)st, (int)want,
                  r ? tilec_result_diag_text(r) : "");
    tilec_result_free(r);
    ck_assert_msg(n > 0, "%s: no allocation counted", what);
    /* A warm heap: the clean call has made whatever LLVM keeps for good. */
    long base = live_blocks();
    int fds = open_fds();
    for (uint64_t i = 1; i <= n; i++) {
        tc_alloc_fail_at(i);
        r = (tilec_result *)1;
        st = call(ctx, &r);
        ck_assert_msg(st == TILEC_ERR_NOMEM, "%s: allocation %llu of %llu failed, status %d", what,
                      (unsigned long long)i, (unsigned long long)n, (int)st);
        ck_assert_msg(r == NULL, "%s: allocation %llu failed, *out not NULL", what, (unsigned long long)i);
        ck_assert_msg(open_fds() == fds, "%s: allocation %llu failed, a file left open", what, (unsigned long long)i);
        long live = live_blocks();
        ck_assert_msg(live == base, "%s: allocation %llu of %llu failed, %ld heap blocks left behind", what,
                      (unsigned long long)i, (unsigned long long)n, live - base);
        total.failures++;
    }
    tc_alloc_fail_at(0);
    /* And a clean call still works after all that. */
    st = call(ctx, &r);
    ck_assert_int_eq(st, want);
    tilec_result_free(r);
    total.calls += n + 2;
    fprintf(stderr, "oom: %s: %llu allocations, each failed once\n", what, (unsigned long long)n);
}

/* ---- compiling a string ---- */

typedef struct Src {
    const char *name;
    char *text;
    size_t len;
    tilec_options o;
} Src;

static tilec_status call_string(void *ctx, tilec_result **out)
{
    Src *s = ctx;
    return tilec_compile_string(s->name, s->text, s->len, &s->o, out);
}

static void src_load(Src *s, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/examples/%s", TILEC_SOURCE_DIR, name);
    memset(s, 0, sizeof *s);
    s->name = name;
    s->text = tc_read_file(path, &s->len);
    ck_assert_msg(s->text != NULL, "cannot read %s", path);
    tilec_options_init(&s->o);
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }
static int is_tile(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 5 && strcmp(e->d_name + n - 5, ".tile") == 0;
}

/* Every example for every target, to PTX. */
START_TEST(test_examples)
{
    static const char *const archs[] = { "sm_86", "sm_90a", "sm_100a" };
    struct dirent **ents;
    int n = scandir(TILEC_SOURCE_DIR "/examples", &ents, is_tile, by_name);
    ck_assert_int_gt(n, 0);
    for (int i = 0; i < n; i++) {
        Src s;
        src_load(&s, ents[i]->d_name);
        for (size_t a = 0; a < TC_COUNTOF(archs); a++) {
            char what[300];
            snprintf(what, sizeof what, "%s for %s", s.name, archs[a]);
            s.o.arch = archs[a];
            sweep(what, call_string, &s, TILEC_OK);
        }
        tc_free(s.text);
        free(ents[i]);
    }
    free(ents);
}
END_TEST

/* vector_add through the other paths of a compilation. */
START_TEST(test_options)
{
    Src s;
    src_load(&s, "vector_add.tile");
    static const tilec_emit emits[] = { TILEC_EMIT_TOKENS, TILEC_EMIT_AST, TILEC_EMIT_TIR, TILEC_EMIT_LLVM };
    static const char *const names[] = { "tokens", "ast", "tir", "llvm" };
    for (size_t i = 0; i < TC_COUNTOF(emits); i++) {
        s.o.emit = emits[i];
        char what[64];
        snprintf(what, sizeof what, "vector_add --emit=%s", names[i]);
        sweep(what, call_string, &s, TILEC_OK);
    }
    tilec_options_init(&s.o);
    static const char *const all[] = { "*" };
    s.o.print_after = all;
    s.o.nprint_after = 1;
    s.o.time_passes = 1;
    s.o.print_locs = 1;
    sweep("vector_add --print-after=* --time-passes", call_string, &s, TILEC_OK);
    tilec_options_init(&s.o);
    s.o.report = 1;
    if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
        s.o.ptxas = "/usr/local/cuda/bin/ptxas";   /* the report's resources and the PTX check run it */
    s.o.dims = "N=5000";                            /* the report's roofline counts the kernel */
    sweep("vector_add --report --dim N=5000", call_string, &s, TILEC_OK);
    tilec_options_init(&s.o);
    s.o.debug_info = TILEC_DEBUG_FULL;
    sweep("vector_add -g", call_string, &s, TILEC_OK);
    tilec_options_init(&s.o);
    s.o.dims = "N=4096";
    sweep("vector_add --dim N=4096", call_string, &s, TILEC_OK);
    /* Input errors take the diagnostic paths. */
    static const char bad[] = "kernel k(X: global f32[N]) grid(1) {\n  let a = 1 +;\n  X[0] = nope;\n}\n";
    Src e = { "bad.tile", (char *)bad, sizeof bad - 1, { 0 } };
    tilec_options_init(&e.o);
    sweep("a source with errors", call_string, &e, TILEC_ERR_INPUT);
    tc_free(s.text);
}
END_TEST

/* A compile under a name of its own: always a cache miss (the key has the name). */
static tilec_status call_miss(void *ctx, tilec_result **out)
{
    static unsigned serial;
    Src *s = ctx;
    char name[64];
    snprintf(name, sizeof name, "softmax-%u.tile", serial++);
    return tilec_compile_string(name, s->text, s->len, &s->o, out);
}

/* A hit on disk: the memory table emptied first (tilec_cache_clear of a
 * folder that does not exist allocates nothing and removes no file). */
static tilec_status call_disk_hit(void *ctx, tilec_result **out)
{
    ck_assert_int_eq(tilec_cache_clear("/nonexistent/tilec-oom"), TILEC_OK);
    tilec_status st = call_string(ctx, out);
    ck_assert_int_eq(tilec_cache_clear("/nonexistent/tilec-oom"), TILEC_OK);   /* as it was */
    return st;
}

/* The cache: misses that store, and hits, in memory and on disk. */
START_TEST(test_cache)
{
    Src s;
    src_load(&s, "softmax.tile");
    char dir[] = "/tmp/tilec-oom-cache-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    s.o.cache = TILEC_CACHE_MEMORY;
    sweep("softmax, memory cache misses", call_miss, &s, TILEC_OK);
    tilec_result *r = NULL;
    ck_assert_int_eq(call_string(&s, &r), TILEC_OK);   /* stored: the sweep's calls hit */
    tilec_result_free(r);
    sweep("softmax, memory cache hits", call_string, &s, TILEC_OK);
    ck_assert_int_eq(tilec_cache_clear(dir), TILEC_OK);
    s.o.cache = TILEC_CACHE_DISK;
    s.o.cache_dir = dir;
    sweep("softmax, disk cache misses", call_miss, &s, TILEC_OK);
    ck_assert_int_eq(call_string(&s, &r), TILEC_OK);   /* stored on disk (and in memory) */
    tilec_result_free(r);
    sweep("softmax, disk cache hits", call_disk_hit, &s, TILEC_OK);
    ck_assert_int_eq(tilec_cache_clear(dir), TILEC_OK);
    ck_assert_int_eq(rmdir(dir), 0);
    tc_free(s.text);
}
END_TEST

/* ---- a file, Tile IR text, the interpreter ---- */

typedef struct FileCall { const char *path; tilec_options o; } FileCall;

static tilec_status call_file(void *ctx, tilec_result **out)
{
    FileCall *f = ctx;
    return tilec_compile_file(f->path, &f->o, out);
}

START_TEST(test_file_and_tir)
{
    FileCall f = { TILEC_SOURCE_DIR "/examples/layernorm.tile", { 0 } };
    tilec_options_init(&f.o);
    sweep("layernorm.tile as a file", call_file, &f, TILEC_OK);
    /* Its Tile IR as input, compiled to PTX. */
    f.o.emit = TILEC_EMIT_TIR;
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_file(f.path, &f.o, &r), TILEC_OK);
    const char *tir = tilec_result_text(r, TILEC_OUT_TIR);
    Src s = { "layernorm.tir", (char *)tir, strlen(tir), { 0 } };
    tilec_options_init(&s.o);
    sweep("layernorm as Tile IR text", call_string, &s, TILEC_OK);
    tilec_result_free(r);
}
END_TEST

/* ---- the tile choice's candidates (autotuning) ---- */

static tilec_status call_candidates(void *ctx, tilec_result **out)
{
    Src *s = ctx;
    return tilec_candidates_string(s->name, s->text, s->len, &s->o, out);
}

START_TEST(test_candidates)
{
    Src s;
    src_load(&s, "gemm.tile");
    s.o.arch = "sm_90a";
    sweep("gemm.tile's candidates", call_candidates, &s, TILEC_OK);
    s.o.pass_options = "tiles.candidate=2";
    s.o.emit = TILEC_EMIT_TIR;
    sweep("gemm.tile, tiles.candidate=2", call_string, &s, TILEC_OK);
    s.o.pass_options = "tiles.candidate=5";
    sweep("gemm.tile, tiles.candidate past the list", call_string, &s, TILEC_ERR_INPUT);
    tc_free(s.text);
    src_load(&s, "vector_add.tile");
    sweep("vector_add.tile's candidates (none to choose)", call_candidates, &s, TILEC_OK);
    tc_free(s.text);
}
END_TEST

typedef struct InterpCall { const tilec_result *c; tilec_arg *args; } InterpCall;

static tilec_status call_interpret(void *ctx, tilec_result **out)
{
    InterpCall *ic = ctx;
    return tilec_interpret(ic->c, NULL, ic->args, 3, out);
}

START_TEST(test_interpret)
{
    Src s;
    src_load(&s, "vector_add.tile");
    s.o.emit = TILEC_EMIT_TIR;
    s.o.keep_ir = 1;
    sweep("vector_add kept for the interpreter", call_string, &s, TILEC_OK);
    tilec_result *c = NULL;
    ck_assert_int_eq(call_string(&s, &c), TILEC_OK);
    enum { N = 3000 };
    static float x[N], y[N], z[N];
    int64_t n = N;
    tilec_arg a[3] = { { x, 1, &n, NULL, "f32", 0, 0 }, { y, 1, &n, NULL, "f32", 0, 0 },
                       { z, 1, &n, NULL, "f32", 0, 0 } };
    InterpCall ic = { c, a };
    sweep("vector_add in the interpreter", call_interpret, &ic, TILEC_OK);
    tilec_result_free(c);
    tc_free(s.text);
}
END_TEST

/* tc_try_zalloc (the instruction scheduler's scratch, which may run on a
 * thread without a job): outside the job's record and its fault
 * injection, zeroed, NULL on an overflowing size, never an unwind. */
typedef struct TryJob { unsigned char *p; void *big; } TryJob;

static void try_job(void *arg)
{
    TryJob *t = arg;
    tc_alloc_fail_at(1);   /* the job's next recorded allocation would fail */
    t->p = tc_try_zalloc(64, 4);
    t->big = tc_try_zalloc(SIZE_MAX / 2, 4);
    tc_alloc_fail_at(0);
}

START_TEST(test_try_zalloc)
{
    TryJob t = { 0 };
    ck_assert(tc_job_run(try_job, &t));   /* no unwind */
    ck_assert_ptr_nonnull(t.p);
    ck_assert_ptr_null(t.big);
    for (int i = 0; i < 256; i++)
        ck_assert_uint_eq(t.p[i], 0);
    tc_free(t.p);   /* survived the job: it was never recorded */
}
END_TEST

START_TEST(test_summary)
{
    fprintf(stderr, "oom: %lu calls, %lu with an allocation failing, all TILEC_ERR_NOMEM\n", total.calls,
            total.failures);
}
END_TEST

static Suite *oom_suite(void)
{
    Suite *s = suite_create("oom");
    TCase *tc = tcase_create("inject");
    tcase_set_timeout(tc, 1800);
    tcase_add_test(tc, test_examples);
    tcase_add_test(tc, test_options);
    tcase_add_test(tc, test_cache);
    tcase_add_test(tc, test_file_and_tir);
    tcase_add_test(tc, test_interpret);
    tcase_add_test(tc, test_candidates);
    tcase_add_test(tc, test_try_zalloc);
    tcase_add_test(tc, test_summary);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tc_check_run(oom_suite()); }
