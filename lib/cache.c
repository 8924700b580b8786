/* cache.c - the compile cache (cache.h, docs/cache.md).
 *
 * An entry is one serialized TcCacheEntry, a Blob: the bytes of its file,
 * read-only, mapped from the file or held in the heap, and reference
 * counted. A hit hands out pointers into the Blob (its strings are stored
 * NUL-terminated) plus a reference that the result drops when freed, so
 * a hit copies nothing but the diagnostic records: on the machines this
 * was measured on, touching fresh pages (~10 us per page fault) was most
 * of the cost of a hit. In memory: a table of Blobs shared by the
 * process's threads under one mutex, oldest evicted first past
 * MEM_ENTRIES or MEM_BYTES. On disk: one file per key,
 * DIR/<32 hex digits>.tce, written as DIR/.tmp-XXXXXX and renamed into
 * place, so that concurrent processes each install a whole entry and a
 * reader never sees a torn one; a file whose header, key, compiler version
 * or checksum does not match is a miss (and is overwritten by the next
 * store). Entries are never modified in place (a mapped one must not
 * shrink). This is the one piece of libtilec with process-wide mutable
 * state.
 *
 * File layout (host byte order; a cache folder is not shared across
 * machines of different endianness):
 *   "TILECCE1"  u64 key[2]  str version  u64 payload_len  u64 payload_hash  payload
 * payload: str arch, NTEXT x str text, u32 ndiags, ndiags x (u32 severity,
 * i32 line, i32 col, str file, str message), str diag_text;
 * str = u32 (length + 1, 0 for NULL) then the bytes and a NUL.
 */
#define _DEFAULT_SOURCE   /* MAP_POPULATE */
#define _POSIX_C_SOURCE 200809L
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>


static const char MAGIC[8] = { 'T', 'I', 'L', 'E', 'C', 'C', 'E', '1' };
enum { MEM_ENTRIES = 256 };
#define MEM_BYTES ((size_t)256 << 20)
#define ENTRY_EXT ".tce"
#ifdef MAP_POPULATE
#define MAP_POPULATE_IF_ANY MAP_POPULATE   /* map every page now: one call, not a fault per page */
#else
#define MAP_POPULATE_IF_ANY 0
#endif

/* ---- hashing ---- */

/* MurmurHash64A (Austin Appleby, public domain), seeded twice for 128 bits. */
static uint64_t murmur64(const void *data, size_t len, uint64_t seed)
{
    const uint64_t m = 0xc6a4a7935bd1e995ull;
    const int r = 47;
    uint64_t h = seed ^ (len * m);
    const unsigned char *p = data, *end = p + (len & ~(size_t)7);
    for (; p != end; p += 8) {
        uint64_t k;
        memcpy(&k, p, 8);
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    uint64_t t = 0;
    for (size_t i = len & 7; i > 0; i--)
        t = (t << 8) | p[i - 1];
    if (len & 7) {
        h ^= t;
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

/* Key material: each field as its length, then its bytes (NULL differs from ""). */
static void put_field(StrBuf *sb, const char *s, size_t n)
{
    uint64_t len = s ? (uint64_t)n + 1 : 0;
    sb_putn(sb, (const char *)&len, sizeof len);
    if (s)
        sb_putn(sb, s, n);
}

static void put_cstr(StrBuf *sb, const char *s) { put_field(sb, s, s ? strlen(s) : 0); }

static void put_int(StrBuf *sb, long long v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", v);
    put_cstr(sb, num);
}

bool tc_cache_usable(const tilec_options *o)
{
    return o->cache != TILEC_CACHE_OFF && o->emit == TILEC_EMIT_PTX && o->nprint_after == 0 && !o->time_passes &&
           !o->report && !o->keep_ir;
}

void tc_cache_key(TcCacheKey *k, const char *name, const char *src, size_t len, const tilec_options *o,
                  const char *version)
{
    StrBuf sb = { 0 };
    put_cstr(&sb, "tilec-cache-key 3");
    put_cstr(&sb, version);
    put_cstr(&sb, name);
    put_field(&sb, src, len);
    put_cstr(&sb, o->arch);
    put_int(&sb, o->family_portable != 0);
    put_int(&sb, o->opt_level);
    put_int(&sb, o->emit);
    put_int(&sb, o->verify_each != 0);
    put_int(&sb, o->print_locs != 0);
    put_cstr(&sb, o->passes);
    put_cstr(&sb, o->language);
    put_cstr(&sb, o->pass_options);
    put_cstr(&sb, o->dims);
    put_int(&sb, (long long)(o->warnings_off & TILEC_WARN_ALL));
    put_int(&sb, o->warnings_as_errors != 0);
    put_int(&sb, (long long)o->debug_info);
    /* Line information names the source's folder: a relative name is
     * completed with the working directory (driver/job.c). */
    char cwd[4096];
    if (o->debug_info && name && name[0] != '/' && getcwd(cwd, sizeof cwd))
        put_cstr(&sb, cwd);
    put_cstr(&sb, o->ptxas_no_check ? NULL : o->ptxas);   /* checked or not (a report is not cached) */
    put_int(&sb, (long long)o->ndefines);
    for (size_t i = 0; i < o->ndefines; i++) {
        put_cstr(&sb, o->defines[i].name);
        put_cstr(&sb, o->defines[i].value);
    }
    k->h[0] = murmur64(sb.buf, sb.len, 0x74696c6563ull);
    k->h[1] = murmur64(sb.buf, sb.len, 0x9e3779b97f4a7c15ull);
    snprintf(k->hex, sizeof k->hex, "%016llx%016llx", (unsigned long long)k->h[0], (unsigned long long)k->h[1]);
    sb_free(&sb);
}

/* ---- serialization ---- */

static void put_u32(StrBuf *sb, uint32_t v) { sb_putn(sb, (const char *)&v, sizeof v); }
static void put_u64(StrBuf *sb, uint64_t v) { sb_putn(sb, (const char *)&v, sizeof v); }

static void put_str(StrBuf *sb, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_u32(sb, s ? (uint32_t)n + 1 : 0);
    if (s)
        sb_putn(sb, s, n + 1);
}

/* The whole file: header, then payload. */
static void serialize(StrBuf *out, const TcCacheKey *k, const char *version, const TcCacheEntry *e)
{
    StrBuf p = { 0 };
    put_str(&p, e->arch);
    for (int i = 0; i < TC_CACHE_NTEXT; i++)
        put_str(&p, e->text[i]);
    put_u32(&p, (uint32_t)e->ndiags);
    for (size_t i = 0; i < e->ndiags; i++) {
        const tilec_diag *d = &e->diags[i];
        put_u32(&p, (uint32_t)d->severity);
        put_u32(&p, (uint32_t)d->line);
        put_u32(&p, (uint32_t)d->col);
        put_str(&p, d->file);
        put_str(&p, d->message);
    }
    put_str(&p, e->diag_text);
    sb_putn(out, MAGIC, sizeof MAGIC);
    put_u64(out, k->h[0]);
    put_u64(out, k->h[1]);
    put_str(out, version);
    put_u64(out, p.len);
    put_u64(out, murmur64(p.buf, p.len, 0));
    sb_putn(out, p.buf, p.len);
    sb_free(&p);
}

typedef struct Reader {
    const unsigned char *p, *end;
    bool bad;
} Reader;

static uint64_t get_n(Reader *r, size_t n)
{
    uint64_t v = 0;
    if ((size_t)(r->end - r->p) < n) {
        r->bad = true;
        return 0;
    }
    if (n == 4) {
        uint32_t w;
        memcpy(&w, r->p, 4);
        v = w;
    } else
        memcpy(&v, r->p, 8);
    r->p += n;
    return v;
}

/* A string of the blob (NULL when absent or when the reader is bad). */
static const char *get_str(Reader *r)
{
    uint64_t n = get_n(r, 4);
    if (r->bad || n == 0)
        return NULL;
    if ((uint64_t)(r->end - r->p) < n || r->p[n - 1] != 0) {
        r->bad = true;
        return NULL;
    }
    const char *s = (const char *)r->p;
    r->p += n;
    return s;
}

/* Check a whole file's header against k and version (and the payload's
 * checksum when `sum`); on success *payload covers the payload. */
static bool check_header(const unsigned char *buf, size_t len, const TcCacheKey *k, const char *version,
                         bool sum, Reader *payload)
{
    Reader r = { buf, buf + len, false };
    if (len < sizeof MAGIC || memcmp(buf, MAGIC, sizeof MAGIC) != 0)
        return false;
    r.p += sizeof MAGIC;
    uint64_t h0 = get_n(&r, 8), h1 = get_n(&r, 8);
    const char *v = get_str(&r);
    if (r.bad || h0 != k->h[0] || h1 != k->h[1] || !v || strcmp(v, version) != 0)
        return false;
    uint64_t plen = get_n(&r, 8), phash = get_n(&r, 8);
    if (r.bad || plen != (uint64_t)(r.end - r.p) || (sum && murmur64(r.p, plen, 0) != phash))
        return false;
    *payload = r;
    return true;
}

/* Point e into the payload; only the diagnostic records go to `a`. */
static bool deserialize(Reader *r, Arena *a, TcCacheEntry *e)
{
    memset(e, 0, sizeof *e);
    e->arch = get_str(r);
    for (int i = 0; i < TC_CACHE_NTEXT; i++)
        e->text[i] = get_str(r);
    uint64_t n = get_n(r, 4);
    if (r->bad || n > (uint64_t)(r->end - r->p))
        return false;
    tilec_diag *d = arena_alloc(a, sizeof *d * (n ? n : 1));
    for (uint64_t i = 0; i < n && !r->bad; i++) {
        d[i].severity = (tilec_severity)get_n(r, 4);
        d[i].line = (int)get_n(r, 4);
        d[i].col = (int)get_n(r, 4);
        d[i].file = get_str(r);
        d[i].message = get_str(r);
        if (!d[i].file)
            d[i].file = "";
        if (!d[i].message)
            d[i].message = "";
    }
    e->diags = d;
    e->ndiags = (size_t)n;
    e->diag_text = get_str(r);
    return !r->bad && r->p == r->end;
}

/* ---- blobs and the memory table ---- */

typedef struct Blob {
    unsigned char *data;
    size_t len;
    bool mapped;              /* munmap, else free */
    int refs;                 /* under mem_lock */
} Blob;

typedef struct MemEntry {
    uint64_t h[2];
    Blob *blob;
} MemEntry;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static MemEntry mem[MEM_ENTRIES];
static size_t mem_first, mem_count, mem_bytes;   /* a ring, oldest at mem_first */

static Blob *blob_new(unsigned char *data, size_t len, bool mapped)
{
    Blob *b = tc_malloc(sizeof *b);
    *b = (Blob){ data, len, mapped, 1 };
    return b;
}

/* A blob goes into the table, shared by every thread: it leaves the job
 * that allocated it (alloc.h), which must not free it on the way out. */
static void blob_untrack(Blob *b)
{
    if (!b->mapped)
        tc_untrack(b->data);
    tc_untrack(b);
}

/* Drop a reference; mem_lock held. */
static void blob_unref_locked(Blob *b)
{
    if (!b || --b->refs > 0)
        return;
    if (b->mapped)
        munmap(b->data, b->len);
    else
        tc_free(b->data);
    tc_free(b);
}

void tc_cache_release(void *ref)
{
    if (!ref)
        return;
    pthread_mutex_lock(&mem_lock);
    blob_unref_locked(ref);
    pthread_mutex_unlock(&mem_lock);
}

/* Point e into blob b's payload, holding a reference on b that an unwind
 * drops (deserialize allocates; no lock is held across it). */
static bool blob_entry(Blob *b, const TcCacheKey *k, const char *version, bool sum, Arena *a, TcCacheEntry *e)
{
    TcCleanup cl;
    tc_cleanup_push(&cl, tc_cache_release, b);
    Reader r;
    bool ok = check_header(b->data, b->len, k, version, sum, &r) && deserialize(&r, a, e);
    tc_cleanup_pop(&cl);
    return ok;
}

static void mem_drop_oldest(void)
{
    MemEntry *m = &mem[mem_first];
    mem_bytes -= m->blob->len;
    blob_unref_locked(m->blob);
    memset(m, 0, sizeof *m);
    mem_first = (mem_first + 1) % MEM_ENTRIES;
    mem_count--;
}

/* A hit takes a reference on the blob for the caller (*ref). The blob was
 * checked in full when it entered the table; it is read outside the lock
 * (its bytes never change). */
static bool mem_fetch(const TcCacheKey *k, const char *version, Arena *a, TcCacheEntry *e, void **ref)
{
    Blob *b = NULL;
    pthread_mutex_lock(&mem_lock);
    for (size_t i = 0; i < mem_count && !b; i++) {
        MemEntry *m = &mem[(mem_first + i) % MEM_ENTRIES];
        if (m->h[0] == k->h[0] && m->h[1] == k->h[1]) {
            b = m->blob;
            b->refs++;
        }
    }
    pthread_mutex_unlock(&mem_lock);
    if (!b)
        return false;
    if (!blob_entry(b, k, version, false, a, e)) {
        tc_cache_release(b);
        return false;
    }
    *ref = b;
    return true;
}

/* The table takes a reference of its own on b. */
static void mem_put(const TcCacheKey *k, Blob *b)
{
    pthread_mutex_lock(&mem_lock);
    b->refs++;
    for (size_t i = 0; i < mem_count; i++) {
        MemEntry *m = &mem[(mem_first + i) % MEM_ENTRIES];
        if (m->h[0] == k->h[0] && m->h[1] == k->h[1]) {   /* replaced: same key, newer text */
            mem_bytes += b->len - m->blob->len;
            blob_unref_locked(m->blob);
            m->blob = b;
            pthread_mutex_unlock(&mem_lock);
            return;
        }
    }
    while (mem_count && (mem_count == MEM_ENTRIES || mem_bytes + b->len > MEM_BYTES))
        mem_drop_oldest();
    mem[(mem_first + mem_count) % MEM_ENTRIES] = (MemEntry){ { k->h[0], k->h[1] }, b };
    mem_count++;
    mem_bytes += b->len;
    pthread_mutex_unlock(&mem_lock);
}

static void mem_clear(void)
{
    pthread_mutex_lock(&mem_lock);
    while (mem_count)
        mem_drop_oldest();
    mem_first = 0;
    pthread_mutex_unlock(&mem_lock);
}

/* ---- disk ---- */

/* dir (NULL or "": none, only the memory table). Caller frees. */
static char *resolve_dir(const char *dir)
{
    return dir && dir[0] ? tc_strdup(dir) : NULL;
}

static char *entry_path(const char *dir, const TcCacheKey *k)
{
    size_t n = strlen(dir) + sizeof k->hex + sizeof ENTRY_EXT + 2;
    char *p = tc_malloc(n);
    snprintf(p, n, "%s/%s%s", dir, k->hex, ENTRY_EXT);
    return p;
}

/* mkdir -p */
static bool make_dirs(const char *dir)
{
    char *p = tc_strdup(dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                tc_free(p);
                return false;
            }
            *s = '/';
        }
    bool ok = mkdir(p, 0777) == 0 || errno == EEXIST;
    tc_free(p);
    return ok;
}

/* The file mapped read-only (the page cache's pages, no copy); NULL if
 * absent. The blob is allocated first: nothing is mapped or open while
 * allocating. */
static Blob *map_file(const char *path)
{
    Blob *b = blob_new(NULL, 0, true);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    void *p = MAP_FAILED;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < ((uint64_t)1 << 32))
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE_IF_ANY, fd, 0);
    if (fd >= 0)
        close(fd);
    if (p == MAP_FAILED) {
        tc_free(b);
        return NULL;
    }
    b->data = p;
    b->len = (size_t)st.st_size;
    return b;
}

static void disk_put(const char *dir, const TcCacheKey *k, const StrBuf *file)
{
    if (!make_dirs(dir))
        return;
    size_t n = strlen(dir) + 16;
    char *tmp = tc_malloc(n);
    char *path = entry_path(dir, k);   /* before the file exists: no allocation while it does */
    snprintf(tmp, n, "%s/.tmp-XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd >= 0) {
        bool ok = tc_write_all(fd, file->buf, file->len);
        ok = close(fd) == 0 && ok;
        if (!ok || rename(tmp, path) != 0)
            unlink(tmp);
    }
    tc_free(path);
    tc_free(tmp);
}

/* ---- the interface ---- */

tilec_cache_mode tc_cache_fetch(const TcCacheKey *k, tilec_cache_mode mode, const char *dir,
                                const char *version, Arena *a, TcCacheEntry *e, void **ref)
{
    *ref = NULL;
    if (mem_fetch(k, version, a, e, ref))
        return TILEC_CACHE_MEMORY;
    if (mode != TILEC_CACHE_DISK)
        return TILEC_CACHE_OFF;
    char *d = resolve_dir(dir);
    char *path = d ? entry_path(d, k) : NULL;
    Blob *b = path ? map_file(path) : NULL;
    tc_free(path);
    tc_free(d);
    if (!b || !blob_entry(b, k, version, true, a, e)) {
        tc_cache_release(b);
        return TILEC_CACHE_OFF;
    }
    blob_untrack(b);
    mem_put(k, b);
    *ref = b;
    return TILEC_CACHE_DISK;
}

void tc_cache_put(const TcCacheKey *k, tilec_cache_mode mode, const char *dir, const char *version,
                  const TcCacheEntry *e)
{
    StrBuf file = { 0 };
    serialize(&file, k, version, e);
    if (mode == TILEC_CACHE_DISK) {
        char *d = resolve_dir(dir);
        if (d)
            disk_put(d, k, &file);
        tc_free(d);
    }
    size_t len = file.len;
    Blob *b = blob_new((unsigned char *)sb_take(&file), len, false);
    blob_untrack(b);
    mem_put(k, b);
    tc_cache_release(b);
}

/* An entry, a leftover temporary file, or a tuning decision the runtime
 * keeps in the same folder (<16 hex digits>.tune, runtime/tune.c). */
static bool is_cache_file(const char *name)
{
    size_t n = strlen(name), x = sizeof ENTRY_EXT - 1;
    return strncmp(name, ".tmp-", 5) == 0 || (n == 32 + x && strcmp(name + 32, ENTRY_EXT) == 0) ||
           (n == 16 + 5 && strcmp(name + 16, ".tune") == 0);
}

/* Entries are removed by name relative to the open folder; nothing is
 * allocated (no job needed: lib/alloc.h). */
tilec_status tilec_cache_clear(const char *dir)
{
    mem_clear();
    if (!dir || !dir[0])   /* no folder named: the in-memory cache only */
        return TILEC_OK;
    DIR *dp = opendir(dir);
    if (!dp)
        return errno == ENOENT ? TILEC_OK : TILEC_ERR_IO;
    tilec_status st = TILEC_OK;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL)
        if (is_cache_file(de->d_name) && unlinkat(dirfd(dp), de->d_name, 0) != 0 && errno != ENOENT)
            st = TILEC_ERR_IO;
    closedir(dp);
    return st;
}

