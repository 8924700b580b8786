/* test_hostile.c - sources built to hurt the compiler, through the public
 * API (include/tilec.h), as a JIT host would hand them over:
 *  - deep nesting (10,000-term flat sums, 10,000 `^T`, deep parentheses,
 *    unary chains, blocks, ternaries, calls, a 10,000-long chain of lets)
 *    compiled inside a thread with a 256 KB stack: each one compiles or is
 *    rejected with a located error, and the thread returns;
 *  - diagnostics bounded: a 4 MB one-line source full of errors gives a
 *    few kilobytes of text;
 * test_linear_time.c checks compile time against the number of statements.
 */
#define _POSIX_C_SOURCE 200809L
#include <check.h>

#include "check_main.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "srcbuf.h"
#include "tilec.h"

/* ---- building sources ---- */

static void rep(Buf *b, const char *s, int n)
{
    for (int i = 0; i < n; i++)
        put(b, s);
}

/* `kernel ... { let a = <pre>x<post>; X[0 : +16] = ... }` */
static char *wrap_let(const char *pre, int npre, const char *mid, const char *post, int npost)
{
    Buf b = { 0 };
    put(&b, src_head);
    put(&b, "  let a = ");
    rep(&b, pre, npre);
    put(&b, mid);
    rep(&b, post, npost);
    put(&b, ";\n  X[0] = f32(a);\n}\n");
    return b.s;
}

/* n is the nesting: 10,000 (rejected) or just under the limit (compiles) */
static char *flat_sum(int n) { return wrap_let("1 + ", n - 1, "1", "", 0); }
static char *parens(int n) { return wrap_let("(", n, "1", ")", n); }
static char *negations(int n) { return wrap_let("-", n, "1", "", 0); }
static char *ternaries(int n) { return wrap_let("block.x == 0 ? 1 : ", n, "2", "", 0); }
static char *calls(int n) { return wrap_let("max(block.x, ", n, "2", ")", n); }

static char *transposes(int n)
{
    Buf b = { 0 };
    put(&b, "kernel k(X: global f32[N, N])\n  grid(1)\n{\n  let t = X[0 : +16, 0 : +16]");
    rep(&b, "^T", n);
    put(&b, ";\n  X[0 : +16, 0 : +16] = t;\n}\n");
    return b.s;
}

static char *blocks(int n)
{
    Buf b = { 0 };
    put(&b, src_head);
    rep(&b, "if block.x == 0 {\n", n);
    put(&b, "X[0] = 1.0;\n");
    rep(&b, "}\n", n);
    put(&b, "}\n");
    return b.s;
}

static char *loops(int n)
{
    Buf b = { 0 };
    put(&b, src_head);
    rep(&b, "for i in 0 .. N {\n", 1);
    for (int i = 1; i < n; i++) {
        char line[64];
        snprintf(line, sizeof line, "for i%d in 0 .. 2 {\n", i);
        put(&b, line);
    }
    put(&b, "X[i] = 1.0;\n");
    rep(&b, "}\n", n);
    put(&b, "}\n");
    return b.s;
}

static char *grid_sum(int n)
{
    Buf b = { 0 };
    put(&b, "kernel k(X: global f32[N])\n  grid(N");
    rep(&b, " + 1", n);
    put(&b, ")\n{\n  X[block.x] = 1.0;\n}\n");
    return b.s;
}

/* ---- compiling in a small thread ---- */

typedef struct Job {
    const char *src;
    tilec_emit emit;
    tilec_status st;
    int located;     /* the first error has a line and column */
} Job;

static void *compile_job(void *p)
{
    Job *j = p;
    tilec_options o;
    tilec_options_init(&o);
    o.emit = j->emit;
    tilec_result *r = NULL;
    j->st = tilec_compile_string("deep.tile", j->src, strlen(j->src), &o, &r);
    const tilec_diag *d = tilec_result_diag(r, 0);
    for (size_t i = 0; d && i < tilec_result_num_diags(r); d = tilec_result_diag(r, ++i))
        if (d->severity == TILEC_SEV_ERROR)
            break;
    j->located = d && d->line > 0 && d->col > 0;
    if (j->st != TILEC_OK && j->st != TILEC_ERR_INPUT)
        fprintf(stderr, "%s\n", tilec_result_diag_text(r));
    tilec_result_free(r);
    return NULL;
}

/* The stack of the compiling thread: 256 KB, a common size for the worker
 * threads of a JIT host. An AddressSanitizer build (-O0, redzones around
 * every local) needs about four times the stack per frame, so there the
 * same depth gets 1 MB. */
#if defined(__SANITIZE_ADDRESS__)
enum { STACK_BYTES = 1024 * 1024 };
#else
enum { STACK_BYTES = 256 * 1024 };
#endif

/* Compile in a thread with a STACK_BYTES stack; the result is a clean
 * success or a located input error. */
static void small_stack_want(char *src, tilec_emit emit, int want_ok)
{
    Job j = { src, emit, -1, 0 };
    pthread_attr_t attr;
    pthread_t t;
    ck_assert_int_eq(pthread_attr_init(&attr), 0);
    ck_assert_int_eq(pthread_attr_setstacksize(&attr, STACK_BYTES), 0);
    ck_assert_int_eq(pthread_create(&t, &attr, compile_job, &j), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
    ck_assert_msg(j.st == TILEC_OK || (j.st == TILEC_ERR_INPUT && j.located),
                  "status %d, located %d", (int)j.st, j.located);
    ck_assert_msg(!want_ok || j.st == TILEC_OK, "status %d under the limit", (int)j.st);
    free(src);
}

static void small_stack(char *src, tilec_emit emit) { small_stack_want(src, emit, 0); }
/* Just under a limit: must compile. */
static void near_limit(char *src, tilec_emit emit) { small_stack_want(src, emit, 1); }

START_TEST(test_flat_sum)
{
    small_stack(flat_sum(10000), TILEC_EMIT_PTX);
    near_limit(flat_sum(255), TILEC_EMIT_PTX);
}
END_TEST
START_TEST(test_parens)
{
    small_stack(parens(10000), TILEC_EMIT_PTX);
    near_limit(parens(200), TILEC_EMIT_PTX);
}
END_TEST
START_TEST(test_negations)
{
    small_stack(negations(10000), TILEC_EMIT_PTX);
    near_limit(negations(200), TILEC_EMIT_PTX);
}
END_TEST
START_TEST(test_ternaries)
{
    small_stack(ternaries(10000), TILEC_EMIT_PTX);
    near_limit(ternaries(120), TILEC_EMIT_PTX);
}
END_TEST
START_TEST(test_calls)
{
    small_stack(calls(10000), TILEC_EMIT_PTX);
    near_limit(calls(120), TILEC_EMIT_PTX);
}
END_TEST
START_TEST(test_transposes)
{
    small_stack(transposes(10000), TILEC_EMIT_PTX);
    near_limit(transposes(250), TILEC_EMIT_PTX);
}
END_TEST
START_TEST(test_blocks)
{
    small_stack(blocks(10000), TILEC_EMIT_PTX);
    near_limit(blocks(200), TILEC_EMIT_PTX);
}
END_TEST
START_TEST(test_loops)
{
    small_stack(loops(10000), TILEC_EMIT_PTX);
    near_limit(loops(60), TILEC_EMIT_PTX);
}
END_TEST
START_TEST(test_grid_sum)
{
    small_stack(grid_sum(10000), TILEC_EMIT_PTX);
    near_limit(grid_sum(30), TILEC_EMIT_PTX);
}
END_TEST
START_TEST(test_let_chain) { small_stack(let_chain(10000), TILEC_EMIT_PTX); }
END_TEST
START_TEST(test_ast_print)
{
    small_stack(flat_sum(10000), TILEC_EMIT_AST);
    near_limit(flat_sum(255), TILEC_EMIT_AST);
}
END_TEST

/* ---- diagnostic floods ---- */

/* A 10 MB one-line source full of errors: at most 50 errors are kept, each
 * excerpt is a window of the line, and the text stays far below 1 MB. */
START_TEST(test_diag_flood)
{
    Buf b = { 0 };
    put(&b, "kernel k(X: global f32[N]) grid(1) { ");
    for (int i = 0; i < 100000; i++)
        put(&b, "let q = $ + undefined_name_that_is_long ; ");
    put(&b, "}\n");
    ck_assert_uint_gt(b.n, 4000000);
    tilec_options o;
    tilec_options_init(&o);
    tilec_result *r = NULL;
    ck_assert_int_eq(tilec_compile_string("flood.tile", b.s, b.n, &o, &r), TILEC_ERR_INPUT);
    const char *text = tilec_result_diag_text(r);
    ck_assert_uint_lt(strlen(text), 64 * 1024);
    ck_assert_uint_le(tilec_result_num_diags(r), 250);
    ck_assert_ptr_nonnull(strstr(text, "more errors not shown"));
    tilec_result_free(r);
    free(b.s);
}
END_TEST

static Suite *hostile_suite(void)
{
    Suite *s = suite_create("hostile");
    TCase *tc = tcase_create("deep");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_flat_sum);
    tcase_add_test(tc, test_parens);
    tcase_add_test(tc, test_negations);
    tcase_add_test(tc, test_ternaries);
    tcase_add_test(tc, test_calls);
    tcase_add_test(tc, test_transposes);
    tcase_add_test(tc, test_blocks);
    tcase_add_test(tc, test_loops);
    tcase_add_test(tc, test_grid_sum);
    tcase_add_test(tc, test_let_chain);
    tcase_add_test(tc, test_ast_print);
    tcase_add_test(tc, test_diag_flood);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tc_check_run(hostile_suite()); }
