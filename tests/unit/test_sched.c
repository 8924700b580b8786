/* test_sched.c - the schedule in Tile IR, through the interpreter.
 *
 * tests/unit/sched/gemm_ring.tir is a warp-specialized GEMM over a 3-stage
 * TMA ring (producer and consumer roles, full/empty barriers, an
 * asynchronous product per k step); gemm_plain.tir is the same GEMM without
 * a schedule. The ring's result must be bit-identical to the plain one for
 * trip counts 0, 1, 2 (< stages), 3 (= stages) and 10, under the
 * round-robin schedule and several seeded random interleavings. Then each
 * seeded protocol bug (a one-line change of the ring's text) must be
 * reported, under every schedule, with its message at the op that breaks
 * the protocol. chain_ring.tir / chain_plain.tir do the same for chained
 * products (attention's form without the softmax): Q on a one-shot ring
 * filled and waited once outside the loops, K and V on their own rings;
 * its seeded bugs are the one-shot ring's. */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

enum { M = 32, N = 32, MAXK = 80 };
/* Round robin with copies and products landing as late and as early as
 * possible, then seeded interleavings. */
static const InterpOpts scheds[] = { { 0, false }, { 0, true }, { 1, false }, { 2, false }, { 3, false },
                                     { 42, false }, { 1234, false }, { 987654321, false } };
enum { NSCHED = sizeof scheds / sizeof *scheds };

static char *read_text(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/unit/sched/%s", TILEC_SOURCE_DIR, name);
    FILE *fp = fopen(path, "rb");
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, fp), (size_t)n);
    s[n] = 0;
    fclose(fp);
    return s;
}

/* text with the one occurrence of `find` replaced (caller frees). */
static char *variant(const char *text, const char *find, const char *repl)
{
    const char *at = strstr(text, find);
    ck_assert_msg(at != NULL, "variant: '%s' not in the program", find);
    ck_assert_msg(strstr(at + 1, find) == NULL, "variant: '%s' is not unique", find);
    size_t pre = (size_t)(at - text), fl = strlen(find), rl = strlen(repl), tl = strlen(text);
    char *s = malloc(tl - fl + rl + 1);
    memcpy(s, text, pre);
    memcpy(s + pre, repl, rl);
    memcpy(s + pre + rl, at + fl, tl - pre - fl + 1);
    return s;
}

static int line_of(const char *text, const char *marker)
{
    const char *at = strstr(text, marker);
    ck_assert_msg(at != NULL, "marker '%s' not found", marker);
    int line = 1;
    for (const char *p = text; p < at; p++)
        line += *p == '\n';
    return line;
}

typedef struct Run {
    Arena *a;
    Diag d;
    Func *f;
} Run;

static void run_parse(Run *r, const char *text)
{
    r->a = arena_new();
    diag_init(&r->d, r->a);
    Module *m = ir_parse(r->a, "gemm_ring.tir", text, strlen(text), &r->d);
    if (!m)
        kit_print_diag(&r->d);
    ck_assert_ptr_nonnull(m);
    r->f = m->funcs[0];
}

/* Deterministic f16 inputs: small integers over 8, exact in f16. */
static uint16_t A[M * MAXK], B[MAXK * N];

static void init_inputs(void)
{
    for (int i = 0; i < M * MAXK; i++)
        A[i] = tc_f32_to_f16((float)((i * 7 + 3) % 17 - 8) / 8.0f);
    for (int i = 0; i < MAXK * N; i++)
        B[i] = tc_f32_to_f16((float)((i * 5 + 1) % 13 - 6) / 4.0f);
}

/* Runs f on A[M,K], B[K,N] into C (pre-filled with a sentinel). */
static int run_gemm(Run *r, int k, InterpOpts o, float *C)
{
    for (int i = 0; i < M * N; i++)
        C[i] = -12345.0f;
    InterpArg args[3];
    memset(args, 0, sizeof args);
    args[0] = (InterpArg){ .data = A, .rank = 2, .shape = { M, k }, .strides = { k, 1 } };
    args[1] = (InterpArg){ .data = B, .rank = 2, .shape = { k, N }, .strides = { N, 1 } };
    args[2] = (InterpArg){ .data = C, .rank = 2, .shape = { M, N }, .strides = { N, 1 } };
    return interp_run_opts(r->f, args, 3, &o, &r->d);
}

static char *rendered(const Diag *d)
{
    StrBuf sb = { 0 };
    diag_render(d, &sb);
    return sb.buf ? sb.buf : calloc(1, 1);
}

typedef int (*RunFn)(Run *r, int k, InterpOpts o, float *out);

/* The ring program gives the plain one's nout outputs bit for bit for 0,
 * 1, 2, 3 and 10 trips of 8, under every schedule. */
static void check_matches_plain(const char *plain_name, const char *ring_name, RunFn run, int nout)
{
    init_inputs();
    char *plain = read_text(plain_name), *ring = read_text(ring_name);
    static const int trips[] = { 0, 1, 2, 3, 10 };
    for (size_t t = 0; t < sizeof trips / sizeof *trips; t++) {
        int k = 8 * trips[t];
        float want[M * N], got[M * N];
        Run p;
        run_parse(&p, plain);
        ck_assert_int_eq(run(&p, k, scheds[0], want), 0);
        ck_assert(want[0] != -12345.0f);
        for (int s = 0; s < NSCHED; s++) {
            Run q;
            run_parse(&q, ring);
            int rc = run(&q, k, scheds[s], got);
            if (rc)
                kit_print_diag(&q.d);
            ck_assert_msg(rc == 0, "%s failed for %d trips, schedule %d", ring_name, trips[t], s);
            ck_assert_msg(memcmp(want, got, sizeof(float) * (size_t)nout) == 0, "%s differs for %d trips, schedule %d",
                          ring_name, trips[t], s);
            arena_free(q.a);
        }
        arena_free(p.a);
    }
    free(plain);
    free(ring);
}

START_TEST(ring_matches_plain) { check_matches_plain("gemm_plain.tir", "gemm_ring.tir", run_gemm, M * N); }
END_TEST

/* A protocol bug: a one-line change, the message, and the line it is at. */
typedef struct Bug {
    const char *name, *find, *repl;
    const char *msg, *msg2;     /* substrings of the error */
    const char *at;             /* marker of the op the error points to (NULL: not checked) */
    const char *alt;            /* a schedule may report the bug this way instead (NULL: none) */
    const char *static_msg;     /* what ir_protocol_check says (NULL: not a ring protocol bug) */
} Bug;

static const Bug bugs[] = {
    { "missing wait", "      mbar_wait %full, %t, %fph\n", "",
      "smem_load reads slot 0 before its full phase completed", "role 1 (consumer)", "%a = smem_load", NULL,
      "protocol: 'smem_load': reads slot it mod S with no mbar_wait on the full ring" },
    { "wrong parity", "mbar_wait %full, %t, %fph", "mbar_wait %full, %t, %xph",
      "smem_load reads slot 0 before its full phase completed", NULL, "%a = smem_load",
      /* copies landing at once: the consumer waits for the next phase */
      "deadlock: every role is blocked",
      "protocol: 'mbar_wait': waits on the full ring with parity ((it div S) & 1) ^ 1" },
    /* Parity 0 on every trip: trip 3 waits for slot 0's phase 1 with the
     * parity of phase 0. If the refill has not completed yet the wait
     * passes at once on the old phase (aliasing); if it has, the consumer
     * waits for the trip after next, which never comes. */
    { "stale parity", "mbar_wait %full, %t, %fph", "mbar_wait %full, %t, %c0",
      "mbar_wait passes on barrier slot 0 with no phase completed since role 1 (consumer) last waited on it",
      "parity aliasing", "mbar_wait %full", "deadlock: every role is blocked",
      "protocol: 'mbar_wait': cannot prove the protocol: the phase is not (it div S) & 1 or its opposite" },
    { "early release",
      "      %d = dot_wait %tok {pending = 0} : tile<16x16xf32>\n      mbar_arrive %empty, %t\n",
      "      mbar_arrive %empty, %t\n      %d = dot_wait %tok {pending = 0} : tile<16x16xf32>\n",
      "tma_load refills slot", "role 1 (consumer)", "tma_load %bufA", NULL,
      "protocol: 'mbar_arrive': releases slot it mod S before the read at" },
    { "expect bytes above the boxes", "{bytes = 512}", "{bytes = 1024}",
      "mbar_expect declared 1024 bytes for phase 0 of barrier slot 0, but the copies completing on it carry 512",
      NULL, "mbar_expect", NULL,
      "protocol: 'mbar_expect': mbar_expect declares 1024 bytes per phase of the ring, but the tma_loads "
      "completing on it carry 512" },
    /* Too few bytes declared: the phase completes on the first box. The
     * consumer may then read the second box's slot before its copy is
     * issued, a read before its full phase. */
    { "expect bytes below the boxes", "{bytes = 512}", "{bytes = 256}",
      "mbar_expect declared 256 bytes for phase 0 of barrier slot 0, but the copies completing on it carry",
      NULL, "mbar_expect", "smem_load reads slot 0 before its full phase completed",
      "protocol: 'mbar_expect': mbar_expect declares 256 bytes per phase of the ring, but the tma_loads "
      "completing on it carry 512" },
    { "arrival count", "%full = mbar_alloc {count = 1}", "%full = mbar_alloc {count = 2}",
      "deadlock: every role is blocked", "role 1 (consumer) at mbar_wait", NULL, NULL,
      "protocol: 'mbar_alloc': every phase of this ring expects 2 arrival(s), but a trip makes 1" },
    { "arrival above the count", "      mbar_expect %full, %s {bytes = 512}\n",
      "      mbar_expect %full, %s {bytes = 512}\n      mbar_arrive %full, %s\n",
      "mbar_arrive: arrival above the expected count 1 on barrier slot 0 in phase 0 (512 bytes still outstanding)",
      NULL, "mbar_arrive %full", NULL,
      "protocol: 'mbar_alloc': every phase of this ring expects 1 arrival(s), but a trip makes 2" },
    { "never arrives", "      mbar_arrive %empty, %t\n", "",
      "deadlock: every role is blocked: role 0 (producer) at mbar_wait",
      "0 phases completed, waits for parity 0; 0 of 1 arrivals", "mbar_wait %empty", NULL,
      "protocol: 'mbar_alloc': every phase of this ring expects 1 arrival(s), but a trip makes 0" },
    { "named barrier count", "named_bar {id = 1, threads = 256, mode = sync}\n    store",
      "named_bar {id = 1, threads = 384, mode = sync}\n    store",
      "named_bar 1: role", "threads, but the barrier was entered at", NULL, NULL,
      "protocol: 'named_bar': named barrier 1 counts" },
    /* Two consumer warp groups: 384 threads meet on a barrier of 256. If
     * the consumer's 256 arrive first they complete it alone and the
     * producer waits forever. */
    { "named barrier threads", "(consumer, 1, 232)", "(consumer, 2, 232)",
      "named_bar 1: 384 threads arrive, above its count 256", NULL, NULL, "deadlock: every role is blocked",
      "protocol: 'named_bar': named barrier 1 counts 256 threads, but the roles that meet on it bring 384" },
    { "accumulator before its wait", "      %d = dot_wait",
      "      %bad = add %a0, %a0 : tile<16x16xf32>\n      %d = dot_wait",
      "'add' uses the accumulator of the dot_async at", "before its dot_wait", "%bad = add", NULL, NULL },
};

/* Every schedule reports the bug in text (as `msg`, or as `alt` where the
 * interleaving reaches another of its symptoms first), and at least one
 * reports it as `msg`, at the op the marker names; run on k. */
static void check_bug_runs(const Bug *b, const char *text, RunFn run, int k)
{
    int hits = 0;
    for (int s = 0; s < NSCHED; s++) {
        float got[M * N];
        Run q;
        run_parse(&q, text);
        int rc = run(&q, k, scheds[s], got);
        char *msg = rendered(&q.d);
        ck_assert_msg(rc != 0, "%s: not reported (schedule %d)", b->name, s);
        bool main = strstr(msg, b->msg) && (!b->msg2 || strstr(msg, b->msg2));
        ck_assert_msg(main || (b->alt && strstr(msg, b->alt)), "%s (schedule %d): wrong message:\n%s", b->name,
                      s, msg);
        if (main && b->at) {
            char where[64];
            snprintf(where, sizeof where, "gemm_ring.tir:%d:", line_of(text, b->at));
            ck_assert_msg(strncmp(msg, where, strlen(where)) == 0, "%s (schedule %d): not at %s:\n%s", b->name,
                          s, where, msg);
        }
        hits += main;
        free(msg);
        arena_free(q.a);
    }
    ck_assert_msg(hits > 0, "%s: no schedule reports '%s'", b->name, b->msg);
}

/* The static checker rejects the bug in text with its message, or (no
 * static message: no ring protocol bug) accepts it. */
static void check_bug_static(const Bug *b, const char *text)
{
    Run q;
    run_parse(&q, text);
    int n = ir_protocol_check(q.f->mod, &q.d);
    char *msg = rendered(&q.d);
    if (b->static_msg) {
        ck_assert_msg(n > 0, "%s: accepted by the static checker", b->name);
        ck_assert_msg(strstr(msg, b->static_msg) != NULL, "%s: wrong static message:\n%s", b->name, msg);
    } else {
        ck_assert_msg(n == 0, "%s: rejected by the static checker:\n%s", b->name, msg);
    }
    free(msg);
    arena_free(q.a);
}

/* The static checker proves the rings of text. */
static void check_proved(const char *text)
{
    Run q;
    run_parse(&q, text);
    int n = ir_protocol_check(q.f->mod, &q.d);
    if (n)
        kit_print_diag(&q.d);
    ck_assert_int_eq(n, 0);
    arena_free(q.a);
}

START_TEST(seeded_bug)
{
    init_inputs();
    const Bug *b = &bugs[_i];
    char *ring = read_text("gemm_ring.tir"), *text = variant(ring, b->find, b->repl);
    check_bug_runs(b, text, run_gemm, 8 * 10);
    free(text);
    free(ring);
}
END_TEST

/* The static checker accepts the correct ring and rejects each seeded
 * bug with its message (the accumulator's early use is no ring protocol). */
/* The static checker proves the program in `file` and rejects each of
 * its n seeded bugs with its message (or accepts those that break no ring
 * protocol). */
static void check_static_all(const char *file, const Bug *all, size_t n)
{
    char *ring = read_text(file);
    check_proved(ring);
    for (size_t i = 0; i < n; i++) {
        char *text = variant(ring, all[i].find, all[i].repl);
        check_bug_static(&all[i], text);
        free(text);
    }
    free(ring);
}

/* One seeded bug of program `file` (a chain's): the interpreter reports
 * it under every schedule (unless b->msg is NULL: it runs correctly) and
 * the static checker as b->static_msg says. */
static void check_seeded(const Bug *b, const char *file, RunFn run, int k)
{
    init_inputs();
    char *ring = read_text(file), *text = variant(ring, b->find, b->repl);
    if (b->msg)
        check_bug_runs(b, text, run, k);
    check_bug_static(b, text);
    free(text);
    free(ring);
}

START_TEST(static_check) { check_static_all("gemm_ring.tir", bugs, sizeof bugs / sizeof *bugs); }
END_TEST

/* The correct ring is also correct under the one-step interleavings of
 * many seeds (a cheap sweep: one trip count above the stages). */
START_TEST(ring_many_seeds)
{
    init_inputs();
    char *plain = read_text("gemm_plain.tir"), *ring = read_text("gemm_ring.tir");
    float want[M * N], got[M * N];
    Run p;
    run_parse(&p, plain);
    ck_assert_int_eq(run_gemm(&p, 8 * 7, scheds[0], want), 0);
    for (uint64_t seed = 100; seed < 160; seed++) {
        Run q;
        run_parse(&q, ring);
        int rc = run_gemm(&q, 8 * 7, (InterpOpts){ seed, false }, got);
        if (rc)
            kit_print_diag(&q.d);
        ck_assert_int_eq(rc, 0);
        ck_assert(memcmp(want, got, sizeof want) == 0);
        arena_free(q.a);
    }
    arena_free(p.a);
    free(plain);
    free(ring);
}
END_TEST

/* ---- chained products on a one-shot ring (chain_ring.tir) ---- */

/* Runs the chain kernel on Q[M,16] (A's elements), K[NK,16] (B's) and
 * V[NK,16] (A's again) into O (pre-filled with a sentinel). */
static int run_chain(Run *r, int nk, InterpOpts o, float *out)
{
    for (int i = 0; i < M * 16; i++)
        out[i] = -12345.0f;
    InterpArg args[4];
    memset(args, 0, sizeof args);
    args[0] = (InterpArg){ .data = A, .rank = 2, .shape = { M, 16 }, .strides = { 16, 1 } };
    args[1] = (InterpArg){ .data = B, .rank = 2, .shape = { nk, 16 }, .strides = { 16, 1 } };
    args[2] = (InterpArg){ .data = A, .rank = 2, .shape = { nk, 16 }, .strides = { 16, 1 } };
    args[3] = (InterpArg){ .data = out, .rank = 2, .shape = { M, 16 }, .strides = { 16, 1 } };
    return interp_run_opts(r->f, args, 4, &o, &r->d);
}

/* The one-shot ring of Q and the K and V rings give the plain chain's
 * results bit for bit for 0 trips (Q is filled and waited for alone), 1,
 * 2 (= the stages), 3 and 10, under every schedule. */
START_TEST(chain_matches_plain) { check_matches_plain("chain_plain.tir", "chain_ring.tir", run_chain, M * 16); }
END_TEST

/* Protocol bugs of the one-shot ring (and of a read through a transpose).
 * msg NULL: the interpreter runs it correctly (the static checker cannot
 * prove it, and says so). */
static const Bug chain_bugs[] = {
    { "one-shot: missing wait", "    mbar_wait %fq, %c0, %c0\n", "",
      "smem_load reads slot 0 before its full phase completed", "role 1 (consumer)", "%q = smem_load", NULL,
      "protocol: 'smem_load': reads a one-shot buffer with no mbar_wait on its ring" },
    { "one-shot: parity 1", "mbar_wait %fq, %c0, %c0", "mbar_wait %fq, %c0, %c1",
      "smem_load reads slot 0 before its full phase completed", NULL, "%q = smem_load",
      /* the copy landed first: parity 1 waits for a second phase that never comes */
      "deadlock: every role is blocked",
      "protocol: 'mbar_wait': waits on a one-shot ring with a parity other than 0" },
    { "one-shot: wait after the read",
      "    mbar_wait %fq, %c0, %c0\n    %q = smem_load %bq, %c0 : tile<16x16xf16, reg>\n",
      "    %q = smem_load %bq, %c0 : tile<16x16xf16, reg>\n    mbar_wait %fq, %c0, %c0\n",
      "smem_load reads slot 0 before its full phase completed", NULL, "%q = smem_load", NULL,
      "protocol: 'smem_load': reads a one-shot buffer with no mbar_wait on its ring" },
    { "one-shot: expect bytes", "{bytes = 512}", "{bytes = 256}",
      "copies completing on phase 0 of barrier slot 0 carry more bytes than the 256 its mbar_expect declared", NULL,
      "mbar_expect %fq", "smem_load reads slot 0 before its full phase completed",
      "protocol: 'mbar_expect': mbar_expect declares 256 bytes for the one phase of the one-shot ring, but the "
      "tma_loads completing on it carry 512" },
    { "one-shot: arrival count", "%fq = mbar_alloc {count = 1}", "%fq = mbar_alloc {count = 2}",
      "deadlock: every role is blocked", "role 1 (consumer) at mbar_wait", NULL, NULL,
      "protocol: 'mbar_alloc': the one phase of this one-shot ring expects 2 arrival(s), but its fill makes 1" },
    { "one-shot: two slots", "%fq = mbar_alloc {count = 1} : tile<1xmbar, shared>",
      "%fq = mbar_alloc {count = 1} : tile<2xmbar, shared>", NULL, NULL, NULL, NULL,
      "protocol: 'mbar_expect': cannot prove the protocol: ring operations outside the role's trip loop take a "
      "one-shot ring and buffer (one slot, slot 0)" },
    /* k is read in place through its transpose until the dot_wait: a
     * release between the product and its wait lets the refill overwrite
     * it. */
    { "early release through a transpose",
      "      %sc = dot_wait %stok {pending = 0} : tile<16x8xf32>\n      mbar_arrive %ek, %t\n",
      "      mbar_arrive %ek, %t\n      %sc = dot_wait %stok {pending = 0} : tile<16x8xf32>\n",
      "tma_load refills slot", "role 1 (consumer)", "tma_load %bk", NULL,
      "protocol: 'mbar_arrive': releases slot it mod S before the read at" },
};

/* Each chain bug: reported by the interpreter (check_bug_runs) and by the
 * static checker with its message. */
START_TEST(chain_seeded_bug) { check_seeded(&chain_bugs[_i], "chain_ring.tir", run_chain, 8 * 10); }
END_TEST

/* The static checker proves the one-shot ring of Q beside the K and V
 * rings. */
START_TEST(chain_static_check)
{
    char *ring = read_text("chain_ring.tir");
    check_proved(ring);
    free(ring);
}
END_TEST

/* A ws built with the Builder API: a role added after another role's
 * region holds ops (the regions move; the ops' parent links follow),
 * verified, printed, parsed back to the same text. */
START_TEST(ws_builder)
{
    Kit k;
    kit_init_at(&k, "roles", "k.tile", 1);
    Builder g = ir_builder_at_end(k.f, &k.f->grid);
    ValId one = ir_const_int(&g, type_scalar(DT_I32), 1);
    ir_build(&g, OP_YIELD, (ValId[]){ one, one, one }, 3, NULL, 0);
    int64_t n = 2;
    Op *alloc = ir_build(&k.b, OP_MBAR_ALLOC, NULL, 0, (Type[]){ type_tile(DT_MBAR, 1, &n, SP_SHARED) }, 1);
    alloc->iattr[0] = 1;
    ValId ring = alloc->res[0], zero = ir_const_int(&k.b, type_scalar(DT_I32), 0);
    Op *ws = ir_build(&k.b, OP_WS, NULL, 0, NULL, 0);
    Builder p = ir_builder_at_end(k.f, ir_ws_add_role(k.f, ws, ROLE_PRODUCER, 1, 40));
    ir_build(&p, OP_MBAR_ARRIVE, (ValId[]){ ring, zero }, 2, NULL, 0);
    Builder c = ir_builder_at_end(k.f, ir_ws_add_role(k.f, ws, ROLE_CONSUMER, 1, 232));
    ir_build(&c, OP_MBAR_WAIT, (ValId[]){ ring, zero, zero }, 3, NULL, 0);
    ck_assert_int_eq(ws->nregions, 2);
    ck_assert_ptr_eq(ws->regions[0].ops[0]->parent, &ws->regions[0]);
    int nerr = ir_verify(k.m, "build", &k.d);
    if (nerr)
        kit_print_diag(&k.d);
    ck_assert_int_eq(nerr, 0);
    StrBuf a = { 0 }, b = { 0 };
    ir_print_module(k.m, NULL, &a);
    ck_assert_ptr_nonnull(strstr(a.buf, "ws {roles = [(producer, 1, 40), (consumer, 1, 232)]} {"));
    Module *m2 = ir_parse(k.a, "roles.tir", a.buf, strlen(a.buf), &k.d);
    ck_assert_ptr_nonnull(m2);
    ir_print_module(m2, NULL, &b);
    ck_assert_str_eq(a.buf, b.buf);
    InterpArg none[1];
    ck_assert_int_eq(interp_run(k.f, none, 0, &k.d), 0);
    sb_free(&a);
    sb_free(&b);
    kit_free(&k);
}
END_TEST

/* Products outside ws: the code outside is one thread, so a DOT_WAIT lands
 * what it waits for; {pending = 1} retires the older of two products and
 * gives a @ b + acc exactly as DOT does, and waiting on the newer one with
 * pending 1 leaves it in flight, an error. (Each product has its own
 * accumulator: a second product on one still in flight is an early use.) */
static const char *products =
    "kernel @p(%A: tensor<f16[16,16]>, %C: tensor<f32[16,16]>) {\n"
    "grid:\n"
    "  %g = const {value = 1} : i32\n"
    "  yield %g, %g, %g\n"
    "body:\n"
    "  %c0 = const {value = 0} : i32\n"
    "  %a = load %A, %c0, %c0 {extents = [16, 16], mask = 0} : tile<16x16xf16>\n"
    "  %z = const {value = 0.5} : tile<16x16xf32>\n"
    "  %z1 = const {value = 0.5} : tile<16x16xf32>\n"
    "  %z2 = const {value = 0.5} : tile<16x16xf32>\n"
    "  %t1 = dot_async %a, %a, %z1 : token\n"
    "  %t2 = dot_async %a, %a, %z2 : token\n"
    "  %r1 = dot_wait WAITED {pending = 1} : tile<16x16xf32>\n"
    "  %d = dot %a, %a, %z : tile<16x16xf32>\n"
    "  %e = sub %r1, %d : tile<16x16xf32>\n"
    "  store %C, %c0, %c0, %e {extents = [16, 16], mask = 0}\n"
    "  %r2 = dot_wait %t2 {pending = 0} : tile<16x16xf32>\n"
    "}\n";

/* ---- tensor memory (gemm_tc.tir: sm_100a's form) ---- */

enum { TM = 128, TN = 16, TMAXK = 160 };
static float tc_out[TM * TN];

/* Runs gemm_tc.tir on A[TM,K], B[K,TN] (the first rows and columns of A
 * and B) into tc_out; out is not used (its buffer is the other GEMM's). */
static int run_gemm_tc(Run *r, int k, InterpOpts o, float *out)
{
    static uint16_t a[TM * TMAXK], b[TMAXK * TN];
    (void)out;
    ck_assert_int_le(k, TMAXK);
    for (int i = 0; i < TM * k; i++)
        a[i] = tc_f32_to_f16((float)((i * 7 + 3) % 17 - 8) / 8.0f);
    for (int i = 0; i < k * TN; i++)
        b[i] = tc_f32_to_f16((float)((i * 5 + 1) % 13 - 6) / 4.0f);
    for (int i = 0; i < TM * TN; i++)
        tc_out[i] = -12345.0f;
    InterpArg args[3];
    memset(args, 0, sizeof args);
    args[0] = (InterpArg){ .data = a, .rank = 2, .shape = { TM, k }, .strides = { k, 1 } };
    args[1] = (InterpArg){ .data = b, .rank = 2, .shape = { k, TN }, .strides = { TN, 1 } };
    args[2] = (InterpArg){ .data = tc_out, .rank = 2, .shape = { TM, TN }, .strides = { TN, 1 } };
    return interp_run_opts(r->f, args, 3, &o, &r->d);
}

/* The exact product (multiples of 1/32 summed below 2^11: exact in f32). */
static void tc_reference(int k, float *want)
{
    for (int i = 0; i < TM; i++)
        for (int j = 0; j < TN; j++) {
            double acc = 0;
            for (int kk = 0; kk < k; kk++)
                acc += (double)(((i * k + kk) * 7 + 3) % 17 - 8) / 8.0 * (double)(((kk * TN + j) * 5 + 1) % 13 - 6) /
                       4.0;
            want[i * TN + j] = (float)acc;
        }
}

START_TEST(tc_matches_reference)
{
    char *text = read_text("gemm_tc.tir");
    static const int trips[] = { 0, 1, 2, 3, 10 };
    for (size_t t = 0; t < sizeof trips / sizeof *trips; t++) {
        int k = 16 * trips[t];
        float want[TM * TN];
        tc_reference(k, want);
        for (int s = 0; s < NSCHED; s++) {
            Run q;
            run_parse(&q, text);
            int rc = run_gemm_tc(&q, k, scheds[s], NULL);
            if (rc)
                kit_print_diag(&q.d);
            ck_assert_msg(rc == 0, "gemm_tc.tir failed for %d trips, schedule %d", trips[t], s);
            ck_assert_msg(memcmp(want, tc_out, sizeof want) == 0, "gemm_tc.tir differs for %d trips, schedule %d",
                          trips[t], s);
            arena_free(q.a);
        }
    }
    free(text);
}
END_TEST

static const Bug tc_bugs[] = {
    /* The slot released by an arrive while the product may still read it. */
    { "release by arrive", "tc_commit %empty, %t", "mbar_arrive %empty, %t",
      "tma_load refills slot", "still reads it", "tma_load %bufA", NULL,
      "protocol: 'tc_mma': cannot prove the protocol: the tc_mma reading a ring slot is not followed by a "
      "tc_commit in the same trip" },
    { "no wait for the accumulator", "    mbar_wait %done, %c0, %c0\n", "",
      "tmem_load", NULL, "%l = tmem_load", NULL,
      "protocol: 'tmem_load': reads tensor memory before a wait on the commit ring" },
    /* The accumulator's commit moved above the products: it arrives before
     * they write tensor memory. */
    { "accumulator committed before the products",
      "    for %c0, %nk, %c1 {\n    ^(%jt: i32):\n      %t = rem %jt, %c3 : i32\n      %q = div %jt, %c3 : i32\n"
      "      %fph = and %q, %c1 : i32\n      mbar_wait %full, %t, %fph\n"
      "      %a = smem_load %bufA, %t : tile<128x16xf16, reg>\n      %b = smem_load %bufB, %t : tile<16x16xf16, reg>\n"
      "      %add = cmp %jt, %c0 {pred = ne} : bool\n      tc_mma %a, %b, %tm, %add {mma = tcgen05}\n"
      "      tc_commit %empty, %t\n      yield\n    }\n    tc_commit %done, %c0\n",
      "    tc_commit %done, %c0\n    for %c0, %nk, %c1 {\n    ^(%jt: i32):\n      %t = rem %jt, %c3 : i32\n"
      "      %q = div %jt, %c3 : i32\n      %fph = and %q, %c1 : i32\n      mbar_wait %full, %t, %fph\n"
      "      %a = smem_load %bufA, %t : tile<128x16xf16, reg>\n      %b = smem_load %bufB, %t : tile<16x16xf16, reg>\n"
      "      %add = cmp %jt, %c0 {pred = ne} : bool\n      tc_mma %a, %b, %tm, %add {mma = tcgen05}\n"
      "      tc_commit %empty, %t\n      yield\n    }\n",
      "tmem_load", NULL, "%l = tmem_load", NULL,
      "protocol: 'for': writes tensor memory after the tc_commit at" },
    { "commit ring count", "%done = mbar_alloc {count = 1}", "%done = mbar_alloc {count = 2}",
      "deadlock: every role is blocked", "role 2 (epilogue) at mbar_wait", NULL, NULL,
      "protocol: 'mbar_alloc': the one phase of this commit ring expects 2 arrival(s), but its commits make 1" },
    { "commit ring parity", "mbar_wait %done, %c0, %c0", "mbar_wait %done, %c0, %c1",
      "tmem_load", NULL, "%l = tmem_load", NULL,
      "protocol: 'mbar_wait': waits on a one-shot ring with a parity other than 0" },
};

START_TEST(tc_seeded_bug)
{
    const Bug *b = &tc_bugs[_i];
    char *ring = read_text("gemm_tc.tir"), *text = variant(ring, b->find, b->repl);
    check_bug_runs(b, text, run_gemm_tc, 16 * 10);
    free(text);
    free(ring);
}
END_TEST

START_TEST(tc_static_check) { check_static_all("gemm_tc.tir", tc_bugs, sizeof tc_bugs / sizeof *tc_bugs); }
END_TEST

/* ---- chained products in tensor memory (chain_tc.tir: sm_100a's attention form) ---- */

enum { CM = 128 };
static float ctc_out[CM * 16];

/* Runs a chain of 128-row tiles on Q = A[CM,16], K = B[nk,16], V =
 * A[nk,16] into ctc_out (out is not used: it is the GEMM's size). */
static int run_chain_tc(Run *r, int nk, InterpOpts o, float *out)
{
    (void)out;
    for (int i = 0; i < CM * 16; i++)
        ctc_out[i] = -12345.0f;
    InterpArg args[4];
    memset(args, 0, sizeof args);
    args[0] = (InterpArg){ .data = A, .rank = 2, .shape = { CM, 16 }, .strides = { 16, 1 } };
    args[1] = (InterpArg){ .data = B, .rank = 2, .shape = { nk, 16 }, .strides = { 16, 1 } };
    args[2] = (InterpArg){ .data = A, .rank = 2, .shape = { nk, 16 }, .strides = { 16, 1 } };
    args[3] = (InterpArg){ .data = ctc_out, .rank = 2, .shape = { CM, 16 }, .strides = { 16, 1 } };
    return interp_run_opts(r->f, args, 4, &o, &r->d);
}

/* S, P and O in tensor memory give the plain chain's results bit for bit
 * for 0 trips (O is the stored initial value), 1, 2 (= the stages), 3 and
 * 10, under every schedule. */
START_TEST(chain_tc_matches_plain)
{
    init_inputs();
    char *plain = read_text("chain_tc_plain.tir"), *ring = read_text("chain_tc.tir");
    static const int trips[] = { 0, 1, 2, 3, 10 };
    static float want[CM * 16];
    for (size_t t = 0; t < sizeof trips / sizeof *trips; t++) {
        int k = 16 * trips[t];
        Run p;
        run_parse(&p, plain);
        ck_assert_int_eq(run_chain_tc(&p, k, scheds[0], NULL), 0);
        memcpy(want, ctc_out, sizeof want);
        ck_assert(want[0] != -12345.0f);
        for (int s = 0; s < NSCHED; s++) {
            Run q;
            run_parse(&q, ring);
            int rc = run_chain_tc(&q, k, scheds[s], NULL);
            if (rc)
                kit_print_diag(&q.d);
            ck_assert_msg(rc == 0, "chain_tc.tir failed for %d trips, schedule %d", trips[t], s);
            ck_assert_msg(memcmp(want, ctc_out, sizeof want) == 0, "chain_tc.tir differs for %d trips, schedule %d",
                          trips[t], s);
            arena_free(q.a);
        }
        arena_free(p.a);
    }
    free(plain);
    free(ring);
}
END_TEST

/* Each barrier of the tensor-memory handshake removed or misplaced: the
 * interpreter reports the race it opens and the static checker rejects
 * it. */
static const Bug ctc_bugs[] = {
    { "S read before its commit", "      mbar_wait %sf, %w, %wph\n", "",
      "tmem_load", NULL, "%sc = tmem_load", NULL,
      "protocol: 'tmem_load': tensor memory: the tmem_load and the tc_mma writing it at" },
    { "P read before it is stored", "      mbar_wait %pf, %t, %fph\n", "",
      "tc_mma reading it by", NULL, "tc_mma %tp", "tc_mma reads its A operand from tensor memory nothing wrote",
      "protocol: 'tmem_load': tensor memory: the tmem_load and the tc_mma writing it at" },
    { "P and O stored while the product runs", "      mbar_wait %od, %w, %wph\n", "",
      "the tc_mma at", NULL, NULL, "is not ordered after the tmem_load",
      "protocol: 'tmem_load': tensor memory: the tmem_load and the tc_mma writing it at" },
    { "arrival before the stores",
      "      tmem_store %tp, %p\n      %o = tmem_load %to : tile<128x16xf32, reg>\n      tmem_store %to, %o\n"
      "      mbar_arrive %pf, %w\n",
      "      mbar_arrive %pf, %w\n      tmem_store %tp, %p\n      %o = tmem_load %to : tile<128x16xf32, reg>\n"
      "      tmem_store %to, %o\n",
      "is not ordered after the tmem_store", NULL, "tc_mma %tp", "tc_mma reads its A operand from tensor memory nothing wrote",
      "protocol: 'tmem_store': tensor memory: the tmem_store and the tc_mma reading it at" },
    /* a plain arrive after the products' issue says nothing of their completion */
    { "O done by an arrive", "      tc_commit %od, %t\n", "      mbar_arrive %od, %t\n",
      "is not ordered after the tc_commit that completes the tc_mma at", NULL, "%acc = tmem_load", NULL,
      "protocol: 'tmem_load': tensor memory: the tmem_load and the tc_mma writing it at" },
};

START_TEST(chain_tc_seeded_bug) { check_seeded(&ctc_bugs[_i], "chain_tc.tir", run_chain_tc, 16 * 10); }
END_TEST

START_TEST(chain_tc_static_check) { check_static_all("chain_tc.tir", ctc_bugs, sizeof ctc_bugs / sizeof *ctc_bugs); }
END_TEST

/* ---- the pipelined chain (chain_pipe.tir: sm_90a's attention form) ---- */

/* The second product pipelined across trips gives chain_plain.tir's
 * results bit for bit for 0, 1, 2, 3 and 10 trips, under every schedule. */
START_TEST(chain_pipe_matches_plain) { check_matches_plain("chain_plain.tir", "chain_pipe.tir", run_chain, M * 16); }
END_TEST

/* Each guard of the pipelined ring removed or misplaced: the interpreter
 * reports what goes wrong (msg NULL: it runs correctly, and only the static
 * checker, which cannot prove it, says so). */
static const Bug pipe_bugs[] = {
    { "release in trip 0", "      if %pos {\n        mbar_arrive %ev, %tb\n        yield\n      } else {\n        yield\n      }\n",
      "      mbar_arrive %ev, %tb\n", "tma_load refills slot 0 while a product of role 1 (consumer) still reads it", NULL, NULL,
      "smem_load reads slot 0 before its full phase completed",
      "protocol: 'mbar_arrive': cannot prove the protocol: trip 0 would arrive for a trip before it" },
    { "wait skipped in trip 0", "%not1 = cmp %jt, %c1 {pred = ne}", "%not1 = cmp %jt, %c0 {pred = gt}",
      "smem_load reads slot 0 before its full phase completed", NULL, NULL, NULL,
      "protocol: 'if': cannot prove the protocol: ring operations nested in the trip's control flow" },
    { "s retired with nothing issued after it",
      "      %otok = dot_async %pp, %v, %o : token\n      %sc = dot_wait %stok {pending = 1} : tile<16x8xf32>\n",
      "      %sc = dot_wait %stok {pending = 1} : tile<16x8xf32>\n      %otok = dot_async %pp, %v, %o : token\n",
      "dot_wait {pending = 1} leaves its own product", NULL, NULL, NULL,
      "protocol: 'dot_async': cannot prove the protocol: the product reading a ring slot is not retired" },
    { "no release of the last trip", "      mbar_arrive %ev, %lt\n", "", NULL, NULL, NULL, NULL,
      "protocol: 'mbar_arrive': cannot prove the protocol: the drain after the loop does not repeat this access" },
    { "drain of trip hi", "%lp = max %lb, %c0 : i32", "%lp = max %nt, %c0 : i32", "deadlock: every role is blocked", NULL, NULL, NULL,
      "protocol: 'mbar_wait': cannot prove the protocol" },
};

START_TEST(chain_pipe_seeded_bug) { check_seeded(&pipe_bugs[_i], "chain_pipe.tir", run_chain, 8 * 10); }
END_TEST

START_TEST(chain_pipe_static_check) { check_static_all("chain_pipe.tir", pipe_bugs, sizeof pipe_bugs / sizeof *pipe_bugs); }
END_TEST

/* ---- the pipelined chain over a persistent grid (chain_persist.tir) ---- */

/* One block takes both query tiles, its roles looping over them: the
 * plain chain's results bit for bit for 0, 1, 2, 3 and 10 trips a tile,
 * under every schedule (the rings run on from the first tile's trips into
 * the second's; with 0 trips only Q's ring turns). */
START_TEST(chain_persist_matches_plain)
{
    check_matches_plain("chain_plain.tir", "chain_persist.tir", run_chain, M * 16);
}
END_TEST

/* The tile loop's bookkeeping broken, one way at a time: reported by the
 * interpreter under every schedule (msg NULL: only under some, a race)
 * and by the static checker. */
static const Bug persist_bugs[] = {
    { "producer's slots without the tiles before", "      %g = add %base, %it : i32",
      "      %g = add %c0, %it : i32", "deadlock: every role is blocked", NULL, NULL, "parity aliasing",
      "protocol: 'mbar_wait': cannot prove the protocol: operand #1 is not the slot" },
    { "base not advanced by the trips", "    %cnbase = add %cbase, %nt : i32", "    %cnbase = add %cbase, %c1 : i32",
      "parity aliasing", NULL, NULL, "deadlock: every role is blocked",
      "cannot prove the protocol: the loop over tiles does not add the trip loop's count" },
    { "Q released before its products", "    %q = smem_load %bq, %cqs : tile<16x16xf16, reg>\n",
      "    %q = smem_load %bq, %cqs : tile<16x16xf16, reg>\n    mbar_arrive %eq, %cqs\n",
      /* a race: the interpreter sees it only where the next tile's Q lands before the products end */
      NULL, NULL, NULL, NULL,
      "releases slot it mod S before the read at" },
    { "Q never released", "    mbar_arrive %eq, %cqs\n", "", "deadlock: every role is blocked", NULL, NULL, NULL,
      "the read is never released" },
    { "Q refilled on the wrong parity", "mbar_wait %eq, %qs, %qeph", "mbar_wait %eq, %qs, %qph", "deadlock: every role is blocked",
      NULL, NULL, NULL, "the wait before the refill at" },
};

START_TEST(chain_persist_seeded_bug) { check_seeded(&persist_bugs[_i], "chain_persist.tir", run_chain, 8 * 10); }
END_TEST

START_TEST(chain_persist_static_check)
{
    check_static_all("chain_persist.tir", persist_bugs, sizeof persist_bugs / sizeof *persist_bugs);
}
END_TEST

/* ---- the seam between a persistent chain's tiles (chain_seam.tir) ---- */

/* A tile's last second product issued in the next tile's first trip, its
 * store there, one drain after the tiles: the plain chain's results bit
 * for bit for 0, 1, 2, 3 and 10 trips a tile, under every schedule. */
START_TEST(chain_seam_matches_plain) { check_matches_plain("chain_plain.tir", "chain_seam.tir", run_chain, M * 16); }
END_TEST

/* The seam's guards, drain and lag broken one at a time: the interpreter
 * reports each under every schedule (msg NULL: the run is correct, the
 * last release having no waiter), and the static checker rejects each. */
static const Bug seam_bugs[] = {
    { "wait guarded by the tile's trip", "%not1 = cmp %jg, %c1 {pred = ne}", "%not1 = cmp %jt, %c1 {pred = ne}",
      "smem_load reads slot 0 before its full phase completed", NULL, NULL, NULL,
      "protocol: 'if': cannot prove the protocol: the guard is of the tile's trip but the slot of the block's trip before" },
    { "release guarded by the tile's trip", "%pos = cmp %jg, %c0 {pred = gt}", "%pos = cmp %jt, %c0 {pred = gt}",
      "deadlock: every role is blocked", NULL, NULL, NULL,
      "protocol: 'if': cannot prove the protocol: the guard is of the tile's trip but the slot of the block's trip before" },
    { "no release after the tiles", "      mbar_arrive %ev, %lt\n", "", NULL, NULL, NULL, NULL,
      "protocol: 'mbar_arrive': cannot prove the protocol: the drain after the loop does not repeat this access" },
    { "drain of the last tile's trips", "%lb = sub %cb, %c1 : i32", "%lb = sub %nt, %c1 : i32", "deadlock: every role is blocked", NULL, NULL, NULL,
      "protocol: 'mbar_wait': cannot prove the protocol: operand #1 is not the slot" },
    { "lag within the tile", "%jb = sub %jg, %c1 : i32", "%jb = sub %jt, %c1 : i32", "parity aliasing", NULL, NULL,
      "deadlock: every role is blocked",
      "protocol: 'mbar_wait': cannot prove the protocol: operand #1 is not the slot" },
};

START_TEST(chain_seam_seeded_bug) { check_seeded(&seam_bugs[_i], "chain_seam.tir", run_chain, 8 * 10); }
END_TEST

START_TEST(chain_seam_static_check)
{
    check_static_all("chain_seam.tir", seam_bugs, sizeof seam_bugs / sizeof *seam_bugs);
}
END_TEST

START_TEST(products_outside_ws)
{
    init_inputs();
    for (int bad = 0; bad < 2; bad++) {
        char *text = variant(products, "WAITED", bad ? "%t2" : "%t1");
        Run q;
        run_parse(&q, text);
        float C[16 * 16];
        InterpArg args[2];
        memset(args, 0, sizeof args);
        args[0] = (InterpArg){ .data = A, .rank = 2, .shape = { 16, 16 }, .strides = { 16, 1 } };
        args[1] = (InterpArg){ .data = C, .rank = 2, .shape = { 16, 16 }, .strides = { 16, 1 } };
        int rc = interp_run(q.f, args, 2, &q.d);
        char *msg = rendered(&q.d);
        if (!bad) {
            ck_assert_msg(rc == 0, "%s", msg);
            for (int i = 0; i < 16 * 16; i++)
                ck_assert(C[i] == 0.0f);
        } else {
            ck_assert_int_ne(rc, 0);
            ck_assert_msg(strstr(msg, "dot_wait {pending = 1} leaves its own product (issued at 12:3) in flight"),
                          "%s", msg);
        }
        free(msg);
        free(text);
        arena_free(q.a);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sched");
    TCase *tc = tcase_create("ring");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, ring_matches_plain);
    tcase_add_test(tc, ring_many_seeds);
    tcase_add_test(tc, static_check);
    tcase_add_test(tc, ws_builder);
    tcase_add_test(tc, products_outside_ws);
    tcase_add_loop_test(tc, seeded_bug, 0, (int)(sizeof bugs / sizeof *bugs));
    tcase_add_test(tc, chain_matches_plain);
    tcase_add_test(tc, chain_static_check);
    tcase_add_loop_test(tc, chain_seeded_bug, 0, (int)(sizeof chain_bugs / sizeof *chain_bugs));
    tcase_add_test(tc, tc_matches_reference);
    tcase_add_test(tc, tc_static_check);
    tcase_add_loop_test(tc, tc_seeded_bug, 0, (int)(sizeof tc_bugs / sizeof *tc_bugs));
    tcase_add_test(tc, chain_tc_matches_plain);
    tcase_add_test(tc, chain_tc_static_check);
    tcase_add_loop_test(tc, chain_tc_seeded_bug, 0, (int)(sizeof ctc_bugs / sizeof *ctc_bugs));
    tcase_add_test(tc, chain_pipe_matches_plain);
    tcase_add_test(tc, chain_pipe_static_check);
    tcase_add_loop_test(tc, chain_pipe_seeded_bug, 0, (int)(sizeof pipe_bugs / sizeof *pipe_bugs));
    tcase_add_test(tc, chain_persist_matches_plain);
    tcase_add_test(tc, chain_persist_static_check);
    tcase_add_loop_test(tc, chain_persist_seeded_bug, 0, (int)(sizeof persist_bugs / sizeof *persist_bugs));
    tcase_add_test(tc, chain_seam_matches_plain);
    tcase_add_test(tc, chain_seam_static_check);
    tcase_add_loop_test(tc, chain_seam_seeded_bug, 0, (int)(sizeof seam_bugs / sizeof *seam_bugs));
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tc_check_run(suite()); }
