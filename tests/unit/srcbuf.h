/* srcbuf.h - a growing text buffer for tests that build large sources
 * (test_hostile.c, test_linear_time.c): put appends a string (a failed
 * allocation fails the test); the caller frees Buf.s. */
#ifndef TILEC_TEST_SRCBUF_H
#define TILEC_TEST_SRCBUF_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

typedef struct Buf { char *s; size_t n, cap; } Buf;

static inline void put(Buf *b, const char *s)
{
    size_t n = strlen(s);
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        ck_assert_ptr_nonnull(b->s);
    }
    memcpy(b->s + b->n, s, n + 1);
    b->n += n;
}

/* The header of the one-tensor kernel both tests build their bodies in. */
static const char src_head[] = "kernel k(X: global f32[N])\n  grid(1)\n{\n";

#endif
