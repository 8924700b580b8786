/* test_arena.c - lib/util.c's arena: every block it hands out is zero
 * (chunks are zeroed a page at a time as the bump pointer reaches them, a
 * block with a chunk of its own by calloc), never overlaps another block,
 * keeps its 16-byte alignment, and a block grown in place (arena_grow_move)
 * keeps its bytes with the new ones zero. The blocks are filled with
 * non-zero bytes as soon as they are checked, so that a byte handed out
 * twice or a chunk whose tail was not zeroed shows up.
 */
#include <check.h>

#include "check_main.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

static bool all_byte(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return false;
    return true;
}

static bool all_zero(const unsigned char *p, size_t n) { return all_byte(p, n, 0); }

typedef struct Block {
    unsigned char *p;
    size_t n;
    unsigned char fill;
} Block;

/* Leaves freed heap blocks full of non-zero bytes, which the next arena's
 * chunks then reuse: fresh pages from the kernel are zero anyway and would
 * hide a chunk that is not zeroed. */
static void dirty_heap(void)
{
    Arena *d = arena_new();
    for (int i = 0; i < 64; i++)
        memset(arena_alloc(d, 20000), 0x5a, 20000);
    arena_free(d);
    for (int i = 0; i < 16; i++) {
        void *p = malloc(65536 + 64);
        memset(p, 0xa5, 65536 + 64);
        free(p);
    }
}

START_TEST(zeroed_and_disjoint)
{
    dirty_heap();
    Arena *a = arena_new();
    enum { N = 4000 };
    Block *b = calloc(N, sizeof *b);
    unsigned seed = 12345;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        /* mostly small, some across a page, some over half a chunk (own chunks) */
        size_t n = (seed >> 8) % 97 == 0 ? 33000 + (seed >> 4) % 70000 : (seed >> 8) % 5000 + 1;
        unsigned char *p = arena_alloc(a, n);
        ck_assert_msg(((uintptr_t)p & 15) == 0, "block %d of %zu bytes not 16-byte aligned", i, n);
        ck_assert_msg(all_zero(p, n), "block %d of %zu bytes not zero", i, n);
        b[i] = (Block){ p, n, (unsigned char)(1 + i % 250) };
        memset(p, b[i].fill, n);
    }
    for (int i = 0; i < N; i++)   /* no later block overwrote an earlier one */
        ck_assert_msg(all_byte(b[i].p, b[i].n, b[i].fill), "block %d overwritten", i);
    free(b);
    arena_free(a);
}
END_TEST

START_TEST(grow_move_keeps_bytes)
{
    dirty_heap();
    Arena *a = arena_new();
    size_t n = 40000;   /* over half a chunk: a chunk of its own, grown in place */
    unsigned char *p = arena_alloc(a, n);
    memset(p, 7, n);
    unsigned char *small = arena_alloc(a, 100);
    ck_assert(all_zero(small, 100));
    memset(small, 9, 100);
    unsigned char *q = arena_grow_move(a, p, 1, n, 3 * n);
    ck_assert_msg(all_byte(q, n, 7), "bytes lost when grown");
    ck_assert_msg(all_zero(q + n, 2 * n), "the grown part is not zero");
    ck_assert(all_byte(small, 100, 9));
    unsigned char *after = arena_alloc(a, 5000);   /* the shared chunk goes on zeroed */
    ck_assert(all_zero(after, 5000));
    arena_free(a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("arena");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, zeroed_and_disjoint);
    tcase_add_test(tc, grow_move_keeps_bytes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tc_check_run(suite()); }
