/* alloc.c - the allocator of libtilec's own code, jobs and their unwinding
 * (alloc.h).
 *
 * A job's table is an open-addressing hash set of the addresses of the
 * blocks it allocated and has not freed (linear probing, deletion by
 * backward shift), kept in plain malloc'd memory of its own: the table is
 * grown before the block it will record is allocated, so a failure to grow
 * it is an out-of-memory like any other and the table stays whole. Blocks
 * carry no header, so a block that outlives its job is an ordinary heap
 * block (free() works on it; the documented owners use tc_free).
 */
#include "alloc.h"

#include <assert.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Job {
    jmp_buf jb;
    uintptr_t *slots;       /* 0 = empty; cap a power of 2 (or 0) */
    size_t cap, n;
    TcCleanup *cleanups;    /* newest first */
    bool unwinding;
} Job;

static _Thread_local Job *cur;
static _Thread_local uint64_t count, fail_at;

/* ---- the table ---- */

static size_t slot_of(const Job *j, uintptr_t p)
{
    uint64_t h = (uint64_t)(p >> 4) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 29)) & (j->cap - 1);
}

static void table_put(Job *j, uintptr_t p)
{
    size_t i = slot_of(j, p);
    while (j->slots[i] && j->slots[i] != p)
        i = (i + 1) & (j->cap - 1);
    if (!j->slots[i]) {
        j->slots[i] = p;
        j->n++;
    }
}

/* Room for one more entry (at most half full), grown before the block it
 * will hold is allocated. */
static void table_reserve(Job *j)
{
    if ((j->n + 1) * 2 <= j->cap)
        return;
    size_t cap = j->cap ? j->cap * 2 : 256;
    uintptr_t *old = j->slots, *s = calloc(cap, sizeof *s);
    if (!s)
        tc_oom(cap * sizeof *s);
    size_t ocap = j->cap;
    j->slots = s;
    j->cap = cap;
    j->n = 0;
    for (size_t i = 0; i < ocap; i++)
        if (old[i])
            table_put(j, old[i]);
    free(old);
}

static bool table_find(const Job *j, uintptr_t p, size_t *at)
{
    if (!j->cap)
        return false;
    for (size_t i = slot_of(j, p); j->slots[i]; i = (i + 1) & (j->cap - 1))
        if (j->slots[i] == p) {
            *at = i;
            return true;
        }
    return false;
}

static bool table_remove(Job *j, uintptr_t p)
{
    size_t i;
    if (!table_find(j, p, &i))
        return false;
    /* Backward shift: move later entries of the probe run into the hole. */
    size_t mask = j->cap - 1;
    for (size_t k = (i + 1) & mask; j->slots[k]; k = (k + 1) & mask) {
        size_t home = slot_of(j, j->slots[k]);
        if (((k - home) & mask) >= ((k - i) & mask)) {
            j->slots[i] = j->slots[k];
            i = k;
        }
    }
    j->slots[i] = 0;
    j->n--;
    return true;
}

/* ---- allocation ---- */

void tc_oom(size_t n)
{
    Job *j = cur;
    if (!j || j->unwinding) {
        fprintf(stderr, "tilec: out of memory (%zu bytes)\n", n);
        abort();
    }
    /* Cleanups first, while the frames that own their resources are live;
     * their tc_free calls still update the table. */
    j->unwinding = true;
    for (TcCleanup *c = j->cleanups; c; c = c->next)
        c->fn(c->arg);
    for (size_t i = 0; i < j->cap; i++)
        if (j->slots[i])
            free((void *)j->slots[i]);
    free(j->slots);
    cur = NULL;
    longjmp(j->jb, 1);
}

/* The counted allocation inside a job: fails when injection says so. */
static void job_alloc_step(Job *j, size_t n)
{
    count++;
    if (fail_at && count == fail_at) {
        fail_at = 0;
        tc_oom(n);
    }
    table_reserve(j);
}

static void *fresh(size_t n, bool zero)
{
    Job *j = cur;
    if (j)
        job_alloc_step(j, n);
    void *p = zero ? calloc(1, n ? n : 1) : malloc(n ? n : 1);
    if (!p)
        tc_oom(n);
    if (j)
        table_put(j, (uintptr_t)p);
    return p;
}

void *tc_malloc(size_t n) { return fresh(n, false); }
void *tc_zalloc(size_t n) { return fresh(n, true); }

void *tc_try_zalloc(size_t n, size_t m)
{
    return m && n > SIZE_MAX / m ? NULL : calloc(n ? n : 1, m ? m : 1);
}

void *tc_realloc(void *p, size_t n)
{
    if (!p)
        return tc_malloc(n);
    Job *j = cur;
    size_t at;
    bool tracked = j && table_find(j, (uintptr_t)p, &at);
    if (j)
        job_alloc_step(j, n);
    void *q = realloc(p, n ? n : 1);
    if (!q)
        tc_oom(n);   /* p is still valid (and still recorded if it was) */
    if (tracked && q != p) {
        table_remove(j, (uintptr_t)p);
        table_put(j, (uintptr_t)q);
    }
    return q;
}

char *tc_strdup(const char *s)
{
    size_t n = strlen(s);
    char *p = tc_malloc(n + 1);
    memcpy(p, s, n + 1);
    return p;
}

void tc_free(void *p)
{
    if (!p)
        return;
    if (cur)
        table_remove(cur, (uintptr_t)p);
    free(p);
}

void tc_untrack(void *p)
{
    if (p && cur)
        table_remove(cur, (uintptr_t)p);
}

size_t tc_size_mul(size_t n, size_t m)
{
    if (m && n > SIZE_MAX / m)
        tc_oom(SIZE_MAX);
    return n * m;
}

size_t tc_size_add(size_t n, size_t m)
{
    if (n > SIZE_MAX - m)
        tc_oom(SIZE_MAX);
    return n + m;
}

/* ---- jobs ---- */

void tc_cleanup_push(TcCleanup *c, void (*fn)(void *), void *arg)
{
    c->fn = fn;
    c->arg = arg;
    c->next = NULL;
    if (cur) {
        c->next = cur->cleanups;
        cur->cleanups = c;
    }
}

void tc_cleanup_pop(TcCleanup *c)
{
    if (!cur)
        return;
    for (TcCleanup **l = &cur->cleanups; *l; l = &(*l)->next)
        if (*l == c) {
            *l = c->next;
            return;
        }
}

bool tc_job_run(void (*fn)(void *), void *arg)
{
    if (cur) {
        fn(arg);
        return true;
    }
    Job j;
    memset(&j, 0, sizeof j);
    cur = &j;
    if (setjmp(j.jb) != 0)
        return false;   /* tc_oom ran the cleanups, freed the blocks and left the job */
    fn(arg);
    assert(!j.cleanups && "a cleanup was left pushed at the end of a job");
    free(j.slots);
    cur = NULL;
    return true;
}

void tc_alloc_fail_at(uint64_t n)
{
    count = 0;
    fail_at = n;
}

uint64_t tc_alloc_count(void) { return count; }
