/* util.h - shared support for every layer of tilec: arenas, string
 * buffers, source locations and the diagnostic collector.
 *
 * Ownership: everything allocated from an Arena lives until arena_free().
 * A compilation owns one Arena; IR, AST and interned names all live in it.
 */
#ifndef TILEC_UTIL_H
#define TILEC_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "alloc.h"

#define TC_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define TC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TC_NORETURN __attribute__((noreturn))
#define TC_NOINLINE __attribute__((noinline))
#define TC_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define TC_PRINTF(f, a)
#define TC_NORETURN
#define TC_NOINLINE
#define TC_ALWAYS_INLINE inline
#endif

/* ---- arena (its chunks come from tc_zalloc: alloc.h) ---- */
typedef struct Arena Arena;
Arena *arena_new(void);
void *arena_alloc(Arena *a, size_t n);          /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) TC_PRINTF(2, 3);
void arena_free(Arena *a);                      /* NULL is a no-op */
/* Grow an arena array (old contents copied; old block stays in the arena). */
void *arena_grow(Arena *a, void *old, size_t elem, size_t oldn, size_t newn);
/* The same, for an array that nobody points into: a large old block is
 * reallocated (and so freed), not left behind; `oldn` must be the count it
 * was allocated with. Arrays grown by doubling this way cost their final
 * size once (the lexer's tokens, the parser's lists). */
void *arena_grow_move(Arena *a, void *old, size_t elem, size_t oldn, size_t newn);
/* Free a block arena_grow_move grew into a chunk of its own (nobody may
 * point into it any more); any other block stays until arena_free. */
void arena_release(Arena *a, void *p);

/* Fatal internal error: prints and aborts. Library code reports internal
 * errors through diag_internal() where it can instead; out of memory is
 * tc_oom() (alloc.h). */
TC_NORETURN void tc_fatal(const char *file, int line, const char *fmt, ...) TC_PRINTF(3, 4);
#define TC_FATAL(...) tc_fatal(__FILE__, __LINE__, __VA_ARGS__)

/* ---- string buffer (heap, owned by the StrBuf) ---- */
typedef struct StrBuf {
    char *buf;   /* NUL-terminated when non-NULL */
    size_t len, cap;
} StrBuf;
void sb_putc(StrBuf *sb, char c);
void sb_puts(StrBuf *sb, const char *s);
void sb_putn(StrBuf *sb, const char *s, size_t n);
void sb_printf(StrBuf *sb, const char *fmt, ...) TC_PRINTF(2, 3);
void sb_vprintf(StrBuf *sb, const char *fmt, va_list ap);
/* The shortest decimal that reads back (strtod) as exactly v, with ".0"
 * added when it would otherwise read as an integer. Finite v only. */
void sb_put_double(StrBuf *sb, double v);
char *sb_take(StrBuf *sb);   /* caller owns the result (tc_free()); sb is reset */
void sb_free(StrBuf *sb);

/* ---- source locations ---- */
typedef struct Loc {
    const char *file;   /* interned in the compilation arena; may be NULL */
    int line, col;      /* 1-based; 0 = unknown */
} Loc;

/* ---- diagnostics ----
 * The library collects diagnostics and keeps going; only the CLI exits.
 * Each source file registered with diag_add_source() lets errors print the
 * source line and a caret. */
typedef enum { SEV_ERROR = 0, SEV_WARNING = 1, SEV_NOTE = 2, SEV_REMARK = 3 } Severity;

typedef struct DiagRec {
    Severity sev;
    Loc loc;
    char *msg;          /* arena-owned */
} DiagRec;

/* Bounds on what diagnostics cost, whatever the source (docs/language.md,
 * "Limits"): a message keeps at most DIAG_MAX_MSG bytes; a source excerpt
 * at most DIAG_EXCERPT bytes each side of the caret; at most
 * DIAG_MAX_RECORDS records besides errors (errors stop at max_errors);
 * rendering stops past DIAG_MAX_TEXT bytes. */
enum { DIAG_MAX_MSG = 1024, DIAG_EXCERPT = 120, DIAG_MAX_RECORDS = 200, DIAG_MAX_TEXT = 256 * 1024 };

typedef struct Diag {
    Arena *arena;
    DiagRec *recs;
    int n, cap;
    int nerrors;
    int max_errors;     /* stop collecting after this many errors (0 = 50) */
    int ndropped;       /* warnings, notes and remarks past DIAG_MAX_RECORDS */
    struct { const char *file; const char *text; size_t len; } srcs[8];
    int nsrcs;
    unsigned warn_off;  /* DiagWarn bits that are not reported (-Wno-NAME) */
    bool warn_error;    /* warnings are reported as errors (-Werror) */
} Diag;

/* The warning groups, one bit each (tilec_warning in include/tilec.h has
 * the same values): diag_warn_names[i] is bit 1 << i's name, as in
 * -Wunused-param. */
typedef enum DiagWarn {
    WARN_UNUSED_PARAM = 1,   /* a runtime param the kernel never names */
    WARN_DEAD_TILE = 2,      /* a tile or let whose value is never read */
    WARN_STORE_RACE = 4,     /* a store that blocks differing along a grid axis all make */
    WARN_ALL = 7
} DiagWarn;
enum { DIAG_NWARN = 3 };
extern const char *const diag_warn_names[DIAG_NWARN];
extern const char *const diag_warn_help[DIAG_NWARN];

void diag_init(Diag *d, Arena *a);
void diag_add_source(Diag *d, const char *file, const char *text, size_t len);
void diag_error(Diag *d, Loc loc, const char *fmt, ...) TC_PRINTF(3, 4);
void diag_warning(Diag *d, Loc loc, const char *fmt, ...) TC_PRINTF(3, 4);
void diag_note(Diag *d, Loc loc, const char *fmt, ...) TC_PRINTF(3, 4);
void diag_remark(Diag *d, Loc loc, const char *fmt, ...) TC_PRINTF(3, 4);
/* A warning of group w, tagged [-Wname] ([-Werror,-Wname] and an error
 * under warn_error); nothing when w is in warn_off. Returns whether it was
 * reported (a note that explains it should follow only then). */
bool diag_warn(Diag *d, DiagWarn w, Loc loc, const char *fmt, ...) TC_PRINTF(4, 5);
void diag_vreport(Diag *d, Severity sev, Loc loc, const char *fmt, va_list ap);
/* An internal compiler error: says so, with the C source position. */
#define diag_internal(d, loc, ...) diag_internal_at((d), (loc), __FILE__, __LINE__, __VA_ARGS__)
void diag_internal_at(Diag *d, Loc loc, const char *cfile, int cline, const char *fmt, ...) TC_PRINTF(5, 6);
/* Render every record as `file:line:col: error: msg`, source line, caret. */
void diag_render(const Diag *d, StrBuf *out);
bool diag_too_many(const Diag *d);

/* ---- misc ---- */
uint64_t tc_hash64(const void *data, size_t n, uint64_t seed);  /* FNV-1a */
double tc_now(void);  /* monotonic seconds */
/* A --time-passes reading: wall-clock seconds and the calling thread's CPU
 * seconds (the compile runs on one thread; CPU time leaves out the time the
 * thread waits for a core while other processes run). */
typedef struct TcClock { double wall, cpu; } TcClock;
TcClock tc_clock(void);
/* One --time-passes row: wall and CPU milliseconds since t0, then `what`. */
void tc_time_row(StrBuf *out, const char *what, TcClock t0);
#define TC_TIME_HEADER "===-- tilec pass timing --===\n   wall (ms)    cpu (ms)  stage\n"
/* Read a whole file into memory with a NUL sentinel. NULL on error
 * (errno set). Caller frees (tc_free). */
char *tc_read_file(const char *path, size_t *len);
/* Write all n bytes of s to fd, retrying short writes and EINTR; false on
 * any other error (errno set). */
bool tc_write_all(int fd, const char *s, size_t n);

#endif
