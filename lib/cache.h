/* cache.h - the compile cache behind tilec_options.cache (lib/cache.c,
 * docs/cache.md): finished compilations keyed by a hash of everything that
 * decides their output, kept in this process's memory and in files under a
 * cache folder. Internal to libtilec; only lib/api.c calls it. */
#ifndef TILEC_LIB_CACHE_H
#define TILEC_LIB_CACHE_H

#include "tilec.h"
#include "util.h"

/* A cached compilation: what a tilec_result hands out. Strings may be NULL. */
enum { TC_CACHE_NTEXT = TILEC_OUT_REPORT + 1 };
typedef struct TcCacheEntry {
    const char *arch;
    const char *text[TC_CACHE_NTEXT];
    const tilec_diag *diags;
    size_t ndiags;
    const char *diag_text;
} TcCacheEntry;

typedef struct TcCacheKey {
    uint64_t h[2];            /* 128 bits over the key material */
    char hex[33];             /* h as the entry's file name */
} TcCacheKey;

/* Whether a compilation with these options may come from the cache: PTX
 * output without per-run extras (IR dumps, timing, the report). */
bool tc_cache_usable(const tilec_options *o);

/* The key of compiling `src` as `name` with options `o` by compiler
 * `version`: the source, name, defines, arch, every option that changes
 * the output (the pass options among them) and the version. */
void tc_cache_key(TcCacheKey *k, const char *name, const char *src, size_t len, const tilec_options *o,
                  const char *version);

/* Look `k` up: this process's memory first, then (mode DISK) the folder
 * `dir` (the folder the caller gave; the library has no default). On a hit *e points into the entry (its
 * diagnostic records are copied into `a`), *ref holds a reference that
 * keeps it alive until tc_cache_release(*ref), and the result is
 * TILEC_CACHE_MEMORY or TILEC_CACHE_DISK; a miss (or an unreadable, torn
 * or foreign entry) is TILEC_CACHE_OFF with *ref NULL. `version` must
 * match the one the entry was written by. */
tilec_cache_mode tc_cache_fetch(const TcCacheKey *k, tilec_cache_mode mode, const char *dir,
                                const char *version, Arena *a, TcCacheEntry *e, void **ref);
void tc_cache_release(void *ref);   /* NULL is a no-op */

/* Store a finished compilation in memory and (mode DISK) in `dir`: written
 * to a temporary file and renamed into place, so that a reader sees a
 * whole entry or none. Failures to write are silent (a cache is optional). */
void tc_cache_put(const TcCacheKey *k, tilec_cache_mode mode, const char *dir, const char *version,
                  const TcCacheEntry *e);

#endif
