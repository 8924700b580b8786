/* srcbuf.h - a growing text buffer for tests that build large sources
 * (test_hostile.c, test_linear_time.c): put appends a string (a failed
 * allocation fails the test); the caller frees Buf.s; let_chain builds the
 * long straight-line kernel both use. */
#ifndef TILEC_TEST_SRCBUF_H
#define TILEC_TEST_SRCBUF_H

#include <check.h>
#include <stdio.h>
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

/* A kernel body of n chained lets (`let a(i+1) = a(i) + 1;`): the caller frees it. */
static inline char *let_chain(int n)
{
    Buf b = { 0 };
    char line[64];
    put(&b, src_head);
    put(&b, "  let a0 = block.x;\n");
    for (int i = 0; i < n; i++) {
        snprintf(line, sizeof line, "  let a%d = a%d + 1;\n", i + 1, i);
        put(&b, line);
    }
    snprintf(line, sizeof line, "  X[a%d] = 1.0;\n}\n", n);
    put(&b, line);
    return b.s;
}

#endif
