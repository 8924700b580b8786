/* cache_probe.c - drives the compile cache for tests/cache/run.sh.
 *
 *   cache_probe compile DIR FILE [ARCH [NAME=VALUE]]
 *       compile FILE with TILEC_CACHE_DISK in DIR; prints
 *       "compile: miss|memory|disk <wall us> ptx <hash> cpu <thread CPU us>"
 *   cache_probe twice DIR FILE
 *       the same twice in one process (the second a memory hit)
 *   cache_probe verify DIR FILE
 *       compile without the cache and from it: the cached result must be a
 *       disk hit with the same status, arch, outputs and diagnostics
 *   cache_probe version DIR FILE VERSION
 *       look FILE's key up on disk as compiler VERSION ("current": this
 *       one) would (lib/cache.h):
 *       prints "version VERSION: hit|miss KEY"
 * Exit status 0, or 1 when a check fails. */
#define _GNU_SOURCE   /* RUSAGE_THREAD */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "lib/cache.h"
#include "tilec.h"

static double clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double now_us(void) { return clock_us(CLOCK_MONOTONIC); }

static double cpu_us;   /* the thread CPU time of the last compile */
static long faults;     /* the page faults (minor and major) of the last compile */

static long thread_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_minflt + ru.ru_majflt;
}

static unsigned long long fnv(const char *s)
{
    unsigned long long h = 1469598103934665603ull;
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static tilec_define def;

static void options(tilec_options *o, const char *dir, int argc, char **argv)
{
    tilec_options_init(o);
    o->cache = dir ? TILEC_CACHE_DISK : TILEC_CACHE_OFF;
    o->cache_dir = dir;
    o->arch = argc > 4 ? argv[4] : "sm_90a";
    if (argc > 5) {
        char *eq = strchr(argv[5], '=');
        if (eq) {
            *eq = 0;
            def = (tilec_define){ argv[5], eq + 1 };
            o->defines = &def;
            o->ndefines = 1;
        }
    }
}

static tilec_result *compile(const char *dir, int argc, char **argv, double *us)
{
    tilec_options o;
    options(&o, dir, argc, argv);
    tilec_result *r = NULL;
    long f0 = thread_faults();
    double t0 = now_us(), c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
    tilec_status st = tilec_compile_file(argv[3], &o, &r);
    *us = now_us() - t0;
    cpu_us = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
    faults = thread_faults() - f0;
    if (st != TILEC_OK) {
        fprintf(stderr, "cache_probe: %s:\n%s", tilec_status_string(st), r ? tilec_result_diag_text(r) : "");
        tilec_result_free(r);
        exit(1);
    }
    return r;
}

static int report(const tilec_result *r, double us)
{
    static const char *const from[] = { "miss", "memory", "disk" };
    printf("compile: %s %.1f ptx %016llx cpu %.1f faults %ld\n", from[tilec_result_cache(r)], us,
           fnv(tilec_result_text(r, TILEC_OUT_PTX)), cpu_us, faults);
    return 0;
}

static int same(const char *a, const char *b) { return (!a && !b) || (a && b && strcmp(a, b) == 0); }

static int verify(int argc, char **argv)
{
    double us;
    tilec_result *fresh = compile(NULL, argc, argv, &us);
    tilec_result *hit = compile(argv[2], argc, argv, &us);
    int ok = tilec_result_cache(hit) == TILEC_CACHE_DISK && same(tilec_result_arch(fresh), tilec_result_arch(hit)) &&
             same(tilec_result_diag_text(fresh), tilec_result_diag_text(hit)) &&
             tilec_result_num_diags(fresh) == tilec_result_num_diags(hit);
    for (int i = TILEC_OUT_TOKENS; i <= TILEC_OUT_REPORT; i++)
        ok = ok && same(tilec_result_text(fresh, (tilec_output)i), tilec_result_text(hit, (tilec_output)i));
    for (size_t i = 0; ok && i < tilec_result_num_diags(hit); i++) {
        const tilec_diag *a = tilec_result_diag(fresh, i), *b = tilec_result_diag(hit, i);
        ok = a->severity == b->severity && a->line == b->line && a->col == b->col && same(a->file, b->file) &&
             same(a->message, b->message);
    }
    printf("verify: the entry is %s (%zu diagnostics, %zu bytes of PTX)\n",
           ok ? "a disk hit equal to a fresh compilation" : "NOT equal to a fresh compilation",
           tilec_result_num_diags(hit), strlen(tilec_result_text(hit, TILEC_OUT_PTX)));
    tilec_result_free(fresh);
    tilec_result_free(hit);
    return !ok;
}

/* The key of FILE (sm_90a, no defines) as compiler `version` ("current":
 * this one) would compute it, looked up on disk. */
static int version(char **argv)
{
    const char *v = strcmp(argv[4], "current") == 0 ? tilec_version() : argv[4];
    tilec_options o;
    options(&o, argv[2], 4, argv);
    size_t n = 0;
    char *src = tc_read_file(argv[3], &n);
    if (!src)
        return 1;
    TcCacheKey k;
    tc_cache_key(&k, argv[3], src, n, &o, v);
    free(src);
    Arena *a = arena_new();
    TcCacheEntry e;
    void *ref;
    tilec_cache_mode m = tc_cache_fetch(&k, TILEC_CACHE_DISK, argv[2], v, a, &e, &ref);
    tc_cache_release(ref);
    arena_free(a);
    printf("version %s: %s %s\n", v, m == TILEC_CACHE_DISK ? "hit" : "miss", k.hex);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: cache_probe compile|twice|verify|version DIR FILE [...]\n");
        return 1;
    }
    double us;
    if (strcmp(argv[1], "verify") == 0)
        return verify(argc, argv);
    if (strcmp(argv[1], "version") == 0 && argc > 4)
        return version(argv);
    int times = strcmp(argv[1], "twice") == 0 ? 2 : 1;
    for (int i = 0; i < times; i++) {
        tilec_result *r = compile(argv[2], argc, argv, &us);
        report(r, us);
        tilec_result_free(r);
    }
    return 0;
}
