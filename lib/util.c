/* util.c - arenas, string buffers, diagnostics, small helpers. */
#define _POSIX_C_SOURCE 200809L
#include "util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <stdint.h>

/* ---- fatal errors ---- */

void tc_fatal(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "tilec: internal error at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* ---- arena: a list of chunks, bump allocation ---- */

typedef struct Chunk {
    struct Chunk *next;
    size_t used, size;
    bool own;               /* holds one block over ARENA_CHUNK / 2 bytes, alone */
    _Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
    Chunk *head;
};

enum { ARENA_CHUNK = 64 * 1024, ARENA_ZERO_STEP = 4096 };

/* How far a shared chunk is zero or handed out: arena_alloc keeps it
 * zeroed up to its bump pointer rounded up to a page (a chunk of its own
 * comes zeroed whole). */
static size_t zeroed_to(const Chunk *c)
{
    size_t z = (c->used + ARENA_ZERO_STEP - 1) / ARENA_ZERO_STEP * ARENA_ZERO_STEP;
    return z < c->size ? z : c->size;
}

Arena *arena_new(void)
{
    Arena *a = tc_malloc(sizeof *a);
    a->head = NULL;
    return a;
}

void *arena_alloc(Arena *a, size_t n)
{
    n = tc_size_add(n, 15 + sizeof(Chunk)) - sizeof(Chunk);
    n &= ~(size_t)15;
    Chunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t sz = n > ARENA_CHUNK / 2 ? n : ARENA_CHUNK;
        /* A shared chunk is zeroed a page at a time as the bump pointer
         * reaches it, not at once: it comes from the heap (under malloc's
         * mmap threshold), which calloc memsets whole, and each page
         * touched is a page fault (about 17 us on a virtual machine) that
         * a short-lived arena (a compile-cache hit uses a few hundred
         * bytes) never needs. A block with a chunk of its own is zeroed by
         * calloc (large ones are fresh pages from the kernel, zero until
         * touched). */
        bool own = n > ARENA_CHUNK / 2;
        c = own ? tc_zalloc(sizeof(Chunk) + sz) : tc_malloc(sizeof(Chunk) + sz);
        c->size = sz;
        c->used = 0;
        c->own = own;
        /* A large block gets its own chunk behind the head so the head's
         * free space is not wasted. */
        if (a->head && own) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->data + c->used;
    size_t z = zeroed_to(c);
    c->used += n;
    if (!c->own && zeroed_to(c) > z)
        memset(c->data + z, 0, zeroed_to(c) - z);
    return p;
}

/* A block over ARENA_CHUNK / 2 bytes has a chunk of its own (arena_alloc),
 * so growing it reallocates that chunk in place of a copy that would leave
 * the old block behind: an array grown by doubling then costs its final size
 * once, not twice, and large old pages are moved rather than copied. */
static void *grow_own_chunk(Arena *a, void *old, size_t oldsz, size_t newsz)
{
    Chunk **link = &a->head;
    while (*link && (*link)->data != (unsigned char *)old)
        link = &(*link)->next;
    Chunk *c = *link;
    if (!c)
        return NULL;
    size_t sz = (newsz + 15) & ~(size_t)15;
    Chunk *n = tc_realloc(c, sizeof(Chunk) + sz);
    *link = n;
    memset(n->data + oldsz, 0, sz - oldsz);
    n->size = n->used = sz;
    return n->data;
}

void *arena_grow(Arena *a, void *old, size_t elem, size_t oldn, size_t newn)
{
    void *p = arena_alloc(a, tc_size_mul(elem, newn));
    if (old && oldn)
        memcpy(p, old, elem * (oldn < newn ? oldn : newn));
    return p;
}

void *arena_grow_move(Arena *a, void *old, size_t elem, size_t oldn, size_t newn)
{
    if (old && newn > oldn && elem * oldn > ARENA_CHUNK / 2) {
        void *p = grow_own_chunk(a, old, elem * oldn, tc_size_mul(elem, newn));
        if (p)
            return p;
    }
    return arena_grow(a, old, elem, oldn, newn);
}

void arena_release(Arena *a, void *p)
{
    if (!p)
        return;
    for (Chunk **link = &a->head; *link; link = &(*link)->next) {
        Chunk *c = *link;
        if (c->own && c->data == (unsigned char *)p) {
            *link = c->next;
            tc_free(c);
            return;
        }
    }
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, tc_size_add(n, 1));
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void arena_free(Arena *a)
{
    if (!a)
        return;
    for (Chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        tc_free(c);
    }
    tc_free(a);
}

/* ---- string buffers ---- */

static void sb_reserve(StrBuf *sb, size_t extra)
{
    size_t need = tc_size_add(sb->len, tc_size_add(extra, 1));
    if (need <= sb->cap)
        return;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    sb->buf = tc_realloc(sb->buf, cap);
    sb->cap = cap;
}

void sb_putn(StrBuf *sb, const char *s, size_t n)
{
    sb_reserve(sb, n);
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = 0;
}

void sb_putc(StrBuf *sb, char c) { sb_putn(sb, &c, 1); }
void sb_puts(StrBuf *sb, const char *s) { sb_putn(sb, s, strlen(s)); }

void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    sb_reserve(sb, (size_t)n);
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void sb_printf(StrBuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void sb_put_double(StrBuf *sb, double v)
{
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    sb_puts(sb, buf);
    if (!strpbrk(buf, ".eE"))
        sb_puts(sb, ".0");
}

char *sb_take(StrBuf *sb)
{
    char *p = sb->buf;
    if (!p) {
        p = tc_malloc(1);
        p[0] = 0;
    }
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    return p;
}

void sb_free(StrBuf *sb)
{
    tc_free(sb->buf);
    sb->buf = NULL;
    sb->len = sb->cap = 0;
}

/* ---- diagnostics ---- */

void diag_init(Diag *d, Arena *a)
{
    memset(d, 0, sizeof *d);
    d->arena = a;
    d->max_errors = 50;
}

void diag_add_source(Diag *d, const char *file, const char *text, size_t len)
{
    if (d->nsrcs == (int)TC_COUNTOF(d->srcs))
        return;
    d->srcs[d->nsrcs].file = file;
    d->srcs[d->nsrcs].text = text;
    d->srcs[d->nsrcs].len = len;
    d->nsrcs++;
}

bool diag_too_many(const Diag *d)
{
    return d->nerrors >= (d->max_errors ? d->max_errors : 50);
}

void diag_vreport(Diag *d, Severity sev, Loc loc, const char *fmt, va_list ap)
{
    if (sev == SEV_ERROR && diag_too_many(d)) {
        d->nerrors++;
        return;
    }
    /* A note that follows a suppressed error is suppressed too; past
     * DIAG_MAX_RECORDS records, everything but errors is dropped. */
    if (sev == SEV_NOTE && diag_too_many(d))
        return;
    if (sev != SEV_ERROR && d->n >= DIAG_MAX_RECORDS) {
        d->ndropped++;
        return;
    }
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 16;
        d->recs = arena_grow(d->arena, d->recs, sizeof *d->recs, (size_t)d->n, (size_t)cap);
        d->cap = cap;
    }
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    /* A message quotes the source (names, tokens): at most DIAG_MAX_MSG
     * bytes of it are kept, ending in "...". */
    size_t len = (size_t)(n < 0 ? 0 : n);
    if (len > DIAG_MAX_MSG)
        len = DIAG_MAX_MSG;
    char *msg = arena_alloc(d->arena, len + 1);
    vsnprintf(msg, len + 1, fmt, ap);
    if ((size_t)(n < 0 ? 0 : n) > len)
        memcpy(msg + len - 3, "...", 3);
    d->recs[d->n++] = (DiagRec){ sev, loc, msg };
    if (sev == SEV_ERROR)
        d->nerrors++;
}

#define DIAG_FN(NAME, SEV)                                  \
    void NAME(Diag *d, Loc loc, const char *fmt, ...)       \
    {                                                       \
        va_list ap;                                         \
        va_start(ap, fmt);                                  \
        diag_vreport(d, SEV, loc, fmt, ap);                 \
        va_end(ap);                                         \
    }
DIAG_FN(diag_error, SEV_ERROR)
DIAG_FN(diag_warning, SEV_WARNING)
DIAG_FN(diag_note, SEV_NOTE)
DIAG_FN(diag_remark, SEV_REMARK)
#undef DIAG_FN

const char *const diag_warn_names[DIAG_NWARN] = { "unused-param", "dead-tile", "store-race" };
const char *const diag_warn_help[DIAG_NWARN] = {
    "a runtime param (tensor or scalar) the kernel body never names",
    "a tile or let whose value is never read (names starting with _ are exempt)",
    "a store whose window is the same for blocks that differ along a grid axis of more than one block",
};

bool diag_warn(Diag *d, DiagWarn w, Loc loc, const char *fmt, ...)
{
    if (d->warn_off & (unsigned)w)
        return false;
    int i = 0;
    while (i < DIAG_NWARN - 1 && !((unsigned)w & (1u << i)))
        i++;
    StrBuf sb = { 0 };
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    if (d->warn_error)
        diag_error(d, loc, "%s [-Werror,-W%s]", sb.buf ? sb.buf : "", diag_warn_names[i]);
    else
        diag_warning(d, loc, "%s [-W%s]", sb.buf ? sb.buf : "", diag_warn_names[i]);
    sb_free(&sb);
    return true;
}

void diag_internal_at(Diag *d, Loc loc, const char *cfile, int cline, const char *fmt, ...)
{
    StrBuf sb = { 0 };
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    /* Strip the build directory from the C file name. */
    const char *base = cfile;
    for (const char *p = cfile; *p; p++)
        if (*p == '/' && (strncmp(p + 1, "frontend/", 9) == 0 || strncmp(p + 1, "ir/", 3) == 0 ||
                          strncmp(p + 1, "passes/", 7) == 0 || strncmp(p + 1, "codegen/", 8) == 0 ||
                          strncmp(p + 1, "lib/", 4) == 0 || strncmp(p + 1, "runtime/", 8) == 0))
            base = p + 1;
    diag_error(d, loc, "internal compiler error at %s:%d: %s", base, cline, sb.buf ? sb.buf : "");
    sb_free(&sb);
}

static const char *sev_name(Severity s)
{
    switch (s) {
    case SEV_ERROR: return "error";
    case SEV_WARNING: return "warning";
    case SEV_NOTE: return "note";
    case SEV_REMARK: return "remark";
    }
    return "error";
}

/* Find the text of line `line` of `file`; returns its start and length,
 * the length counted no further than `max` bytes (*more: the line goes on). */
static bool find_line(const Diag *d, const char *file, int line, size_t max, const char **start, size_t *len,
                      bool *more)
{
    for (int i = 0; i < d->nsrcs; i++) {
        if (!file || !d->srcs[i].file || strcmp(file, d->srcs[i].file) != 0)
            continue;
        const char *p = d->srcs[i].text, *end = p + d->srcs[i].len;
        for (int l = 1; l < line && p < end; p++)
            if (*p == '\n')
                l++;
        if (p > end || (p == end && line > 1 && p[-1] != '\n'))
            return false;
        const char *e = p;
        while (e < end && *e != '\n' && (size_t)(e - p) < max)
            e++;
        *start = p;
        *len = (size_t)(e - p);
        *more = e < end && *e != '\n';
        return true;
    }
    return false;
}

/* The source line of r and a caret under its column. A long line shows
 * only DIAG_EXCERPT bytes on each side of the caret, "..." marking what is
 * left out; tabs are kept so the caret lines up in a terminal. */
static void render_excerpt(const Diag *d, const DiagRec *r, StrBuf *out)
{
    size_t col = r->loc.col > 0 ? (size_t)r->loc.col : 1;
    const char *ls;
    size_t ll;
    bool more;
    if (r->loc.line <= 0 || !find_line(d, r->loc.file, r->loc.line, col - 1 + DIAG_EXCERPT, &ls, &ll, &more))
        return;
    size_t from = col - 1 > DIAG_EXCERPT ? col - 1 - DIAG_EXCERPT : 0;
    if (from > ll)
        from = ll;
    if (from)
        sb_puts(out, "...");
    sb_putn(out, ls + from, ll - from);
    sb_puts(out, more ? "...\n" : "\n");
    if (from)
        sb_puts(out, "   ");
    for (size_t c = from + 1; c < col && c - 1 < ll; c++)
        sb_putc(out, ls[c - 1] == '\t' ? '\t' : ' ');
    sb_puts(out, "^\n");
}

void diag_render(const Diag *d, StrBuf *out)
{
    size_t start = out->len;
    int i;
    for (i = 0; i < d->n && out->len - start < DIAG_MAX_TEXT; i++) {
        const DiagRec *r = &d->recs[i];
        if (r->loc.file && r->loc.line > 0)
            sb_printf(out, "%s:%d:%d: ", r->loc.file, r->loc.line, r->loc.col);
        else if (r->loc.file)
            sb_printf(out, "%s: ", r->loc.file);
        sb_printf(out, "%s: %s\n", sev_name(r->sev), r->msg);
        render_excerpt(d, r, out);
    }
    if (i < d->n)
        sb_printf(out, "note: %d more diagnostics not shown (output limit)\n", d->n - i);
    if (d->nerrors > (d->max_errors ? d->max_errors : 50))
        sb_printf(out, "note: %d more errors not shown\n", d->nerrors - (d->max_errors ? d->max_errors : 50));
    if (d->ndropped)
        sb_printf(out, "note: %d more warnings, notes and remarks not shown\n", d->ndropped);
}

/* ---- misc ---- */

uint64_t tc_hash64(const void *data, size_t n, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

double tc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

TcClock tc_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (TcClock){ tc_now(), (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 };
}

void tc_time_row(StrBuf *out, const char *what, TcClock t0)
{
    TcClock t = tc_clock();
    sb_printf(out, "%12.3f%12.3f  %s\n", (t.wall - t0.wall) * 1e3, (t.cpu - t0.cpu) * 1e3, what);
}

static void close_fd(void *fd) { close((int)(intptr_t)fd); }

/* One read of the whole file into a block of its size (fstat), not
 * through stdio's buffer and a 64 KB one on the stack: a compile-cache hit
 * reads its source first in a fresh process, where each page touched is a
 * page fault (docs/cache.md). Files whose size is not known (pipes) grow
 * the block as they are read. */
char *tc_read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    TcCleanup cl;
    tc_cleanup_push(&cl, close_fd, (void *)(intptr_t)fd);
    struct stat st;
    /* the size, a byte for the read that finds the end, the NUL */
    size_t cap = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 2 : 4096;
    char *buf = tc_malloc(cap);
    size_t n = 0;
    int err = 0;
    for (;;) {
        if (n + 1 >= cap) {
            cap = tc_size_mul(cap, 2);
            buf = tc_realloc(buf, cap);
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            err = 1;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    tc_cleanup_pop(&cl);
    close(fd);
    if (err) {
        tc_free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

bool tc_write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        s += w;
        n -= (size_t)w;
    }
    return true;
}
