/* alloc.h - the one allocator of libtilec's own code, and out-of-memory
 * as an error status.
 *
 * Every heap block of the compiler (arena chunks, string buffers, scratch
 * arrays, the cache's entries) comes from tc_malloc / tc_zalloc /
 * tc_realloc / tc_strdup and goes back through tc_free. None of them ever
 * returns NULL: an allocation that fails unwinds the current job.
 *
 * A job (tc_job_run) is one call of the public API: while it runs, every
 * block allocated on its thread is recorded in the job's table, and a
 * resource that is not memory (an LLVM context, a file, a child thread) is
 * held under a cleanup (tc_cleanup_push/pop). When an allocation fails,
 * the failing thread runs the cleanups newest first, frees every block
 * still recorded and longjmps back to tc_job_run, which returns false: the
 * API returns TILEC_ERR_NOMEM and nothing is left behind. When the job
 * returns normally its table is dropped and the blocks that survive (the
 * result's arena) are plain heap blocks again, for tc_free or free().
 *
 * The boundary: the jump crosses only libtilec's own C frames. No LLVM
 * code is ever on the stack between the failing allocation and
 * tc_job_run (LLVM calls back into no function of ours that allocates),
 * and LLVM's own allocations cannot be made to fail from here: LLVM
 * reports its out-of-memory itself. A block handed to an owner outside
 * the job (the compile cache's table, shared by threads) must leave the
 * job's table first: tc_untrack. A lock must not be held across an
 * allocation (nothing unlocks it on the way out).
 *
 * Outside a job (the tilec command's own code, tests calling internals) a
 * failed allocation prints a message and aborts, as before.
 *
 * Fault injection for tests: tc_alloc_fail_at(N) makes the N-th
 * allocation inside jobs on this thread fail (counted from the call);
 * tc_alloc_count() says how many there were.
 */
#ifndef TILEC_ALLOC_H
#define TILEC_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *tc_malloc(size_t n);
void *tc_zalloc(size_t n);                 /* zeroed */
void *tc_realloc(void *p, size_t n);       /* p NULL: tc_malloc; keeps p's job membership */
char *tc_strdup(const char *s);
void tc_free(void *p);                     /* NULL is a no-op */
/* n * m zeroed bytes outside every job (never recorded, never unwinds):
 * NULL when they cannot be had. For work that may run on a thread of its
 * own, where a failure must be handled in place (the code generator's
 * instruction scheduler); release with tc_free. */
void *tc_try_zalloc(size_t n, size_t m);
/* n * m bytes, or out of memory when the product overflows. */
size_t tc_size_mul(size_t n, size_t m);
size_t tc_size_add(size_t n, size_t m);
/* Take p out of the current job: it survives an unwind (its new owner frees it). */
void tc_untrack(void *p);

/* Out of memory: unwind the current job (never returns); abort outside one. */
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void tc_oom(size_t n);

/* A resource released when the job unwinds (on the failing thread, before
 * the memory is freed, newest first). Push when the resource is acquired,
 * pop (without running it) when it is released on the normal path; c
 * lives on the caller's stack. Outside a job both are no-ops. */
typedef struct TcCleanup {
    void (*fn)(void *);
    void *arg;
    struct TcCleanup *next;
} TcCleanup;
void tc_cleanup_push(TcCleanup *c, void (*fn)(void *), void *arg);
void tc_cleanup_pop(TcCleanup *c);

/* Run fn(arg) as a job; false when it ran out of memory (everything it
 * allocated is freed). A job started inside a job joins it. */
bool tc_job_run(void (*fn)(void *), void *arg);

/* Fault injection (tests): the n-th allocation from now inside a job on
 * this thread fails (0: none); the count of allocations inside jobs on
 * this thread since the last tc_alloc_fail_at. */
void tc_alloc_fail_at(uint64_t n);
uint64_t tc_alloc_count(void);

#endif
