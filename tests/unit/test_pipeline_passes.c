/* test_pipeline_passes.c - the passes keep results bit-identical: each
 * kernel is compiled, interpreted on random inputs (the reference), then
 * after EACH pass of the pipeline verified and interpreted again on the
 * same inputs; outputs must match bit for bit. Trip counts cover 0 (hi <=
 * lo), 1, fewer than the stages, and non-multiples of them. On sm_90a the
 * GEMM (also with f8 operands on wgmma, B given as [N, K] rows) and the
 * attention example become warp-specialized roles (warp_specialize): they
 * run under several interleavings of their roles too, and the protocol
 * pass proves their rings.
 * Also: the shared-memory limit diagnostic, and kernels without dots are
 * left untouched. */
#include <check.h>

#include "check_main.h"
#include "kit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "passes/passes.h"
#include "ref.h"

#ifndef TILEC_SOURCE_DIR
#define TILEC_SOURCE_DIR "."
#endif

/* gemm with the element type as a parameter (examples/gemm.tile is bf16). */
static const char gemm_t_src[] =
    "kernel gemm<BM: int = 32, BN: int = 32, BK: int = 16, STAGES: int = 3, T: dtype = f16>(\n"
    "    A: global T[M, K], B: global T[K, N], C: global T[M, N])\n"
    "  grid(cdiv(N, BN), cdiv(M, BM))\n"
    "{\n"
    "  tile acc: reg f32[BM, BN] = 0;\n"
    "  for k in 0 .. cdiv(K, BK) pipeline(STAGES) {\n"
    "    tile a: shared T[BM, BK] = A[block.y * BM : +BM, k * BK : +BK];\n"
    "    tile b: shared T[BK, BN] = B[k * BK : +BK, block.x * BN : +BN];\n"
    "    acc += a @ b;\n"
    "  }\n"
    "  C[block.y * BM : +BM, block.x * BN : +BN] = T(acc);\n"
    "}\n";

/* A loop with runtime bounds and step 2: hi <= lo gives zero trips; the
 * induction variable does not start at 0. */
static const char gemm_range_src[] =
    "kernel gr<BM: int = 16, BN: int = 16, BK: int = 16, STAGES: int = 3>(\n"
    "    A: global bf16[M, K], B: global bf16[K, N], C: global f32[M, N], lo: i32, hi: i32)\n"
    "  grid(cdiv(N, BN), cdiv(M, BM))\n"
    "{\n"
    "  tile acc: reg f32[BM, BN] = 1;\n"
    "  for k in lo .. hi step 2 pipeline(STAGES) {\n"
    "    tile a: shared bf16[BM, BK] = A[block.y * BM : +BM, k * BK : +BK];\n"
    "    tile b: shared bf16[BK, BN] = B[k * BK : +BK, block.x * BN : +BN];\n"
    "    acc += a @ b;\n"
    "  }\n"
    "  C[block.y * BM : +BM, block.x * BN : +BN] = acc;\n"
    "}\n";

/* examples/gemm.tile as it was with a pipeline(STAGES) pin (the same lines:
 * the messages below name them): the hint rules of the stage choice, and
 * the GEMM cases over each number of stages. */
static const char gemm_pinned[] =
    "// gemm.tile - C = A @ B with f32 accumulation (T: bf16 or f16): one BM x BN\n"
    "// tile of C per block, K walked in BK steps through a multi-stage pipeline.\n"
    "// Blocks take C's tiles in bands of GROUP tile rows, column by column, so\n"
    "// that the blocks running together share A's rows and B's columns in L2;\n"
    "// C leaves through shared memory as 16-byte rows.\n"
    "kernel gemm<T: dtype = bf16, BM: int = 256, BN: int = 128, BK: int = 64, STAGES: int = 2, GROUP: int = 8>(\n"
    "    A: global T[M, K], B: global T[K, N], C: global T[M, N])\n"
    "  grid(cdiv(M, BM) * cdiv(N, BN))\n"
    "{\n"
    "  let band = GROUP * cdiv(N, BN);              // blocks per band\n"
    "  let r0 = block.x / band * GROUP;             // the band's first tile row\n"
    "  let rows = min(cdiv(M, BM) - r0, GROUP);     // the last band may be narrower\n"
    "  let bm = r0 + block.x % band % rows;\n"
    "  let bn = block.x % band / rows;\n"
    "  tile acc: reg f32[BM, BN] = 0;\n"
    "  for k in 0 .. cdiv(K, BK) pipeline(STAGES) {\n"
    "    tile a: shared T[BM, BK] = A[bm * BM : +BM, k * BK : +BK];\n"
    "    tile b: shared T[BK, BN] = B[k * BK : +BK, bn * BN : +BN];\n"
    "    acc += a @ b;\n"
    "  }\n"
    "  tile c: shared T[BM, BN] = T(acc);\n"
    "  C[bm * BM : +BM, bn * BN : +BN] = c;\n"
    "}\n"
;

/* tests/perf/gemm_f8_nt.tile with a pipeline(STAGES) pin: A [M, K] and B
 * given as [N, K] rows of f8 (T), C bf16. Both operands are K-major, so on
 * sm_90a the product takes wgmma m64nNk32 in roles (mma_select). */
static const char gemm_f8_nt_pinned[] =
    "kernel gemm<T: dtype = f8e4m3, BM: int = 256, BN: int = 128, BK: int = 128, STAGES: int = 2, GROUP: int = 8>(\n"
    "    A: global T[M, K], B: global T[N, K], C: global bf16[M, N])\n"
    "  grid(cdiv(M, BM) * cdiv(N, BN))\n"
    "{\n"
    "  let band = GROUP * cdiv(N, BN);\n"
    "  let r0 = block.x / band * GROUP;\n"
    "  let rows = min(cdiv(M, BM) - r0, GROUP);\n"
    "  let bm = r0 + block.x % band % rows;\n"
    "  let bn = block.x % band / rows;\n"
    "  tile acc: reg f32[BM, BN] = 0;\n"
    "  for k in 0 .. cdiv(K, BK) pipeline(STAGES) {\n"
    "    tile a: shared T[BM, BK] = A[bm * BM : +BM, k * BK : +BK];\n"
    "    tile b: shared T[BN, BK] = B[bn * BN : +BN, k * BK : +BK];\n"
    "    acc += a @ b^T;\n"
    "  }\n"
    "  tile c: shared bf16[BM, BN] = bf16(acc);\n"
    "  C[bm * BM : +BM, bn * BN : +BN] = c;\n"
    "}\n"
;

static char *read_example(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/examples/%s", TILEC_SOURCE_DIR, name);
    char *s = tc_read_file(path, len);
    ck_assert_msg(s != NULL, "cannot read %s", path);
    return s;
}

typedef struct Prog {
    Arena *a;
    Diag d;
    Module *m;
    Func *f;
} Prog;

/* The device facts and dim sizes the next run_passes gives the launch pass
 * (tilec_options.dims, target.sms); reset by each attention case. g_sms:
 * > 0 the SM count told (target.sms), 0 one tile a block
 * (warp_specialize.persistent=0), -1 not told (the persistent grids read
 * num_sms(), TC_INTERP_SMS in the interpreter). */
static PassDims g_dims;
static int64_t g_sms, g_smem;

static int64_t g_exp2_emu;   /* PassCtx.exp2_emu for run_passes (0: the pass decides) */

static int run_passes(Prog *p, const char *only, const char *arch)
{
    PassCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.dims = &g_dims;
    ctx.sms = g_sms > 0 ? g_sms : 0;
    ctx.one_tile = g_sms == 0;
    ctx.smem_per_block = g_smem;
    ctx.exp2_emu = g_exp2_emu;
    ctx.diag = &p->d;
    ctx.target = tc_target(arch);
    ctx.opt_level = 2;
    ctx.verify_each = true;
    ctx.only = only;
    int n = passes_run(p->m, &ctx);
    if (n)
        kit_print_diag(&p->d);
    return n;
}

static void prog_compile(Prog *p, const char *file, const char *src, size_t len, const FeDefine *defs, int ndefs)
{
    p->a = arena_new();
    diag_init(&p->d, p->a);
    diag_add_source(&p->d, file, src, len);
    p->m = fe_compile(p->a, file, src, len, defs, ndefs, &p->d);
    if (!p->m)
        kit_print_diag(&p->d);
    ck_assert_ptr_nonnull(p->m);
    p->f = p->m->funcs[0];
}

/* ---- running and comparing ---- */

typedef struct Run {
    Ten *tens; int ntens;       /* every tensor argument, inputs first */
    int nin;                    /* inputs (not poisoned) */
    InterpArg args[16]; int nargs;
    const int *argmap;          /* per kernel arg: tensor index, or -1 - scalar index */
    const InterpArg *scalars;
} Run;

static void run_interp(Prog *p, Run *r)
{
    for (int i = r->nin; i < r->ntens; i++)
        ten_poison(&r->tens[i]);
    for (int k = 0; k < r->nargs; k++)
        r->args[k] = r->argmap[k] >= 0 ? ten_arg(&r->tens[r->argmap[k]]) : r->scalars[-1 - r->argmap[k]];
    int rc = interp_run(p->f, r->args, r->nargs, &p->d);
    if (rc)
        kit_print_diag(&p->d);
    ck_assert_int_eq(rc, 0);
}

/* Snapshot the outputs' bytes. */
static unsigned char **snapshot(const Run *r)
{
    unsigned char **s = calloc((size_t)r->ntens, sizeof *s);
    for (int i = r->nin; i < r->ntens; i++) {
        size_t n = (size_t)(r->tens[i].n ? r->tens[i].n : 1) * ten_esize(r->tens[i].dt);
        s[i] = malloc(n);
        memcpy(s[i], r->tens[i].data, n);
    }
    return s;
}

static void compare(const Run *r, unsigned char **ref, const char *what)
{
    for (int i = r->nin; i < r->ntens; i++) {
        size_t n = (size_t)(r->tens[i].n ? r->tens[i].n : 1) * ten_esize(r->tens[i].dt);
        ck_assert_msg(memcmp(ref[i], r->tens[i].data, n) == 0, "%s: output %d differs from the reference", what, i);
    }
}

static void free_snapshot(const Run *r, unsigned char **s)
{
    for (int i = 0; i < r->ntens; i++)
        free(s[i]);
    free(s);
}

static bool has_op_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    return op->code != *(int *)ctx;
}

static bool has_op(Func *f, OpCode c)
{
    int code = c;
    return !ir_walk(f, &f->body, has_op_visit, &code);
}

static bool pending1_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    *(int *)ctx += op->code == OP_DOT_WAIT && op->iattr[0] == 1;
    return true;
}

/* DOT_WAITs {pending = 1}: the first product of a trip retired while the
 * second product of the trip before flies (the pipelined chain). */
static int waits_pending1(Func *f)
{
    int n = 0;
    ir_walk(f, &f->body, pending1_visit, &n);
    return n;
}

/* The passes before double_buffer, the reference, then each of the three
 * passes with the interpreter after it. */
/* The interpreter's outputs on the IR as lowered are the reference; they
 * must come out bit for bit the same after each step of the pipeline. */
static void check_passes(Prog *p, Run *r, const char *arch, const char *what, bool expect_buffers)
{
    run_interp(p, r);
    unsigned char **ref = snapshot(r);
    static const char *const steps[] = { "launch",        "canonicalize",    "bounds",  "mma_select",
                                         "mask_split",    "double_buffer",   "warp_specialize",
                                         "swizzle",       "smem_alloc",      "schedule", "protocol" };
    for (size_t i = 0; i < TC_COUNTOF(steps); i++) {
        ck_assert_msg(run_passes(p, steps[i], arch) == 0, "%s: pass %s failed", what, steps[i]);
        run_interp(p, r);
        char buf[256];
        snprintf(buf, sizeof buf, "%s after %s", what, steps[i]);
        compare(r, ref, buf);
    }
    ck_assert_int_eq(has_op(p->f, OP_SMEM_ALLOC), expect_buffers);
    ck_assert_int_eq(p->f->smem_bytes > 0, expect_buffers);
    free_snapshot(r, ref);
}

/* ---- gemm ---- */

static const int64_t sizes[][3] = {   /* M, N, K: 1, 17, 64, 100 mixed */
    { 1, 1, 1 }, { 17, 17, 17 }, { 64, 64, 64 }, { 100, 100, 100 },
    { 17, 100, 1 }, { 100, 17, 64 }, { 64, 1, 100 }, { 1, 64, 17 },
};

static void gemm_case(const char *file, const char *src, size_t len, DType dt, int stages, const int64_t *mnk,
                      const char *tiles[3])
{
    char st[8];
    snprintf(st, sizeof st, "%d", stages);
    FeDefine defs[5] = { { "BM", tiles[0] }, { "BN", tiles[1] }, { "BK", tiles[2] }, { "STAGES", st },
                         { "T", dt == DT_F16 ? "f16" : "bf16" } };
    Prog p;
    prog_compile(&p, file, src, len, defs, strstr(src, "T: dtype") ? 5 : 4);
    int64_t M = mnk[0], N = mnk[1], K = mnk[2];
    int64_t sa[2] = { M, K }, sb[2] = { K, N }, sc[2] = { M, N };
    Ten t[3] = { ten_new(dt, 2, sa), ten_new(dt, 2, sb), ten_new(dt, 2, sc) };
    uint64_t rng = 0x1234u + (uint64_t)(M * 131 + N * 17 + K) + (uint64_t)stages * 7;
    ten_random(&t[0], &rng, -1, 1);
    ten_random(&t[1], &rng, -1, 1);
    static const int argmap[3] = { 0, 1, 2 };
    Run r = { t, 3, 2, { { 0 } }, 3, argmap, NULL };
    char what[128];
    snprintf(what, sizeof what, "%s %s S=%d tiles %s/%s/%s M=%lld N=%lld K=%lld", file, dtype_name(dt), stages,
             tiles[0], tiles[1], tiles[2], (long long)M, (long long)N, (long long)K);
    check_passes(&p, &r, "sm_86", what, true);
    for (int i = 0; i < 3; i++)
        ten_free(&t[i]);
    arena_free(p.a);
}

START_TEST(gemm_example_bf16)
{
    const char *tiles[3] = { "32", "32", "16" };
    for (int s = 1; s <= 4; s++)
        for (size_t i = 0; i < TC_COUNTOF(sizes); i++)
            gemm_case("gemm.tile", gemm_pinned, sizeof gemm_pinned - 1, DT_BF16, s, sizes[i], tiles);
}
END_TEST

START_TEST(gemm_f16_and_bf16)
{
    const char *tiles[2][3] = { { "32", "32", "16" }, { "16", "32", "32" } };
    for (int d = 0; d < 2; d++)
        for (int s = 1; s <= 4; s++)
            for (size_t i = 0; i < TC_COUNTOF(sizes); i += 2)
                gemm_case("gemm_t.tile", gemm_t_src, strlen(gemm_t_src), d ? DT_BF16 : DT_F16, s, sizes[i],
                          tiles[(i / 2 + (size_t)s) % 2]);
}
END_TEST

/* Runtime bounds: zero trips (hi == lo, hi < lo), one trip, a few, step 2. */
START_TEST(gemm_runtime_range)
{
    static const int64_t ranges[][2] = { { 0, 0 }, { 5, 3 }, { 3, 4 }, { 1, 8 }, { 0, 7 }, { -3, 6 } };
    for (int s = 1; s <= 4; s++)
        for (size_t k = 0; k < TC_COUNTOF(ranges); k++) {
            char st[8];
            snprintf(st, sizeof st, "%d", s);
            FeDefine defs[1] = { { "STAGES", st } };
            Prog p;
            prog_compile(&p, "gr.tile", gemm_range_src, strlen(gemm_range_src), defs, 1);
            int64_t sa[2] = { 20, 130 }, sb[2] = { 130, 33 }, sc[2] = { 20, 33 };
            Ten t[3] = { ten_new(DT_BF16, 2, sa), ten_new(DT_BF16, 2, sb), ten_new(DT_F32, 2, sc) };
            uint64_t rng = 99 + k;
            ten_random(&t[0], &rng, -1, 1);
            ten_random(&t[1], &rng, -1, 1);
            InterpArg sc2[2] = { scalar_arg(0, ranges[k][0]), scalar_arg(0, ranges[k][1]) };
            static const int argmap[5] = { 0, 1, 2, -1, -2 };
            Run r = { t, 3, 2, { { 0 } }, 5, argmap, sc2 };
            char what[96];
            snprintf(what, sizeof what, "range %lld..%lld step 2, S=%d", (long long)ranges[k][0],
                     (long long)ranges[k][1], s);
            check_passes(&p, &r, "sm_90a", what, true);
            for (int i = 0; i < 3; i++)
                ten_free(&t[i]);
            arena_free(p.a);
        }
}
END_TEST

/* ---- gemm in warp-specialized roles (sm_90a) ---- */

static bool ws_count_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    *(int *)ctx += op->code == OP_WS;
    return true;
}

/* Top-level FOR ops of a block; *inner: the FOR in the first one's body. */
static int count_fors(const Block *b, const Op **first)
{
    int n = 0;
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i]->code == OP_FOR && n++ == 0 && first)
            *first = b->ops[i];
    return n;
}

/* The WS op at the kernel's top level. */
static const Op *find_ws(Func *f)
{
    for (int i = 0; i < f->body.nops; i++)
        if (f->body.ops[i]->code == OP_WS)
            return f->body.ops[i];
    return NULL;
}

/* The kernel's roles under seeded interleavings, and with copies landing
 * at once: each run gives the outputs of ref. */
static void check_interleavings(Prog *p, Run *r, unsigned char **ref, const char *what)
{
    for (uint64_t seed = 0; seed < 4; seed++) {
        for (int k = r->nin; k < r->ntens; k++)
            ten_poison(&r->tens[k]);
        for (int k = 0; k < r->nargs; k++)
            r->args[k] = r->argmap[k] >= 0 ? ten_arg(&r->tens[r->argmap[k]]) : r->scalars[-1 - r->argmap[k]];
        InterpOpts o = { seed ? seed * 0x9e3779b9u : 0, seed == 0 };
        int rc = interp_run_opts(p->f, r->args, r->nargs, &o, &p->d);
        if (rc)
            kit_print_diag(&p->d);
        ck_assert_int_eq(rc, 0);
        char run[160];
        snprintf(run, sizeof run, "%s, seed %llu", what, (unsigned long long)seed);
        compare(r, ref, run);
    }
}

/* The GEMM example with its pipeline pin (gemm_pinned) at sm_90a with tiles
 * BM/BN/BK and pipeline(S): its loop becomes roles (`consumers` warp
 * groups at `regs` registers), bit-identical after every pass for each K,
 * then under seeded interleavings of the roles (and with copies landing at
 * once). `sms` as g_sms: told of sms SMs (> 0) or not told (-1: num_sms()), the roles loop over the tiles of a
 * persistent grid of min(sms, tiles) blocks, the ring running on across a
 * block's tiles. */
/* A GEMM source for roles_case: its file name, text, operand dtype (the
 * define T), and whether B is given as [N, K] rows (`a @ b^T`). */
typedef struct RolesSrc {
    const char *file, *src;
    size_t len;
    const char *dt;
    bool nt;
} RolesSrc;

static void roles_case(const RolesSrc *rs, const char *tiles[3], int stages, int consumers, int regs,
                       const int64_t *ks, int nk, int64_t m, int64_t n, int64_t sms)
{
    g_sms = sms;
    char st[8];
    snprintf(st, sizeof st, "%d", stages);
    FeDefine defs[5] = { { "BM", tiles[0] }, { "BN", tiles[1] }, { "BK", tiles[2] }, { "STAGES", st },
                         { "T", rs->dt } };
    DType dt = strcmp(rs->dt, "f8e4m3") == 0 ? DT_F8E4M3 : strcmp(rs->dt, "f8e5m2") == 0 ? DT_F8E5M2 : DT_BF16;
    for (int i = 0; i < nk; i++) {
        Prog p;
        prog_compile(&p, rs->file, rs->src, rs->len, defs, 5);
        int64_t sa[2] = { m, ks[i] }, sb[2] = { ks[i], n }, sc[2] = { m, n };
        if (rs->nt)
            sb[0] = n, sb[1] = ks[i];
        Ten t[3] = { ten_new(dt, 2, sa), ten_new(dt, 2, sb), ten_new(DT_BF16, 2, sc) };
        uint64_t rng = 0x5eedu + (uint64_t)(ks[i] * 7 + stages);
        ten_random(&t[0], &rng, -1, 1);
        ten_random(&t[1], &rng, -1, 1);
        static const int argmap[3] = { 0, 1, 2 };
        Run r = { t, 3, 2, { { 0 } }, 3, argmap, NULL };
        char what[128];
        snprintf(what, sizeof what, "%s %s sm_90a tiles %s/%s/%s S=%d M=%lld N=%lld K=%lld", rs->file, rs->dt,
                 tiles[0], tiles[1], tiles[2], stages, (long long)m, (long long)n, (long long)ks[i]);
        check_passes(&p, &r, "sm_90a", what, true);
        unsigned char **ref = snapshot(&r);   /* the reference's outputs: check_passes compared them */
        int nws = 0;
        ir_walk(p.f, &p.f->body, ws_count_visit, &nws);
        ck_assert_msg(nws == 1, "%s: %d ws ops", what, nws);
        const Op *ws = find_ws(p.f);
        ck_assert_ptr_nonnull(ws);
        ck_assert_int_eq(ws->nlist, 6);
        ck_assert_int_eq(ws->list[3], ROLE_CONSUMER);
        ck_assert_int_eq(ws->list[4], consumers);
        ck_assert_int_eq(ws->list[5], regs);
        ck_assert_int_eq(p.f->sched.warps, 4 * (1 + consumers));
        ck_assert(!has_op(p.f, OP_ASYNC_COPY) && !has_op(p.f, OP_BARRIER) && has_op(p.f, OP_TMA_LOAD));
        ck_assert(has_op(p.f, OP_DOT_ASYNC) && !has_op(p.f, OP_DOT));
        ck_assert_int_eq(has_op(p.f, OP_TRANS), rs->nt);   /* B read K-major */
        for (int k = 0; k < ws->nregions; k++) {   /* persistent: a loop over tiles around the trip loop */
            const Op *tl = NULL, *trips = NULL;
            ck_assert_int_eq(count_fors(&ws->regions[k], &tl), 1);
            ck_assert_int_eq(count_fors(&tl->regions[0], &trips), sms ? 1 : 0);
        }
        int64_t grid[3];
        InterpArg ga[3] = { ten_arg(&t[0]), ten_arg(&t[1]), ten_arg(&t[2]) };
        ck_assert_int_eq(interp_grid(p.f, ga, 3, grid, &p.d), 0);
        int64_t tiles_mn = (m + atoi(tiles[0]) - 1) / atoi(tiles[0]) * ((n + atoi(tiles[1]) - 1) / atoi(tiles[1]));
        int64_t smc = sms > 0 ? sms : TC_INTERP_SMS;   /* not told: num_sms() */
        ck_assert_int_eq(grid[0], sms && smc < tiles_mn ? smc : tiles_mn);
        check_interleavings(&p, &r, ref, what);
        free_snapshot(&r, ref);
        for (int k = 0; k < 3; k++)
            ten_free(&t[k]);
        arena_free(p.a);
    }
    g_sms = 0;
}

static void gemm_roles_case(const char *tiles[3], int stages, int consumers, int regs, const int64_t *ks, int nk,
                            int64_t m, int64_t n, int64_t sms)
{
    const RolesSrc rs = { "gemm.tile", gemm_pinned, sizeof gemm_pinned - 1, "bf16", false };
    roles_case(&rs, tiles, stages, consumers, regs, ks, nk, m, n, sms);
}

/* The example's own tiles (256 x 128 x 64, pipeline(2)): 2 consumer warp
 * groups at 232 registers; 0, 1, 2 (= S) and 10 trips. */
START_TEST(gemm_roles_example)
{
    const char *tiles[3] = { "256", "128", "64" };
    static const int64_t ks[] = { 0, 64, 100, 581 };
    gemm_roles_case(tiles, 2, 2, 232, ks, (int)TC_COUNTOF(ks), 100, 130, 0);
}
END_TEST

/* A persistent grid: 2 blocks over 3 x 3 tiles (the first takes five);
 * then the SM count not told: num_sms(), the interpreter's 4 blocks. */
START_TEST(gemm_roles_persistent)
{
    const char *tiles[3] = { "128", "64", "32" };
    static const int64_t ks[] = { 0, 32, 50, 330 };
    gemm_roles_case(tiles, 3, 2, 232, ks, (int)TC_COUNTOF(ks), 300, 150, 2);
    gemm_roles_case(tiles, 3, 2, 232, ks + 1, 2, 300, 150, -1);
}
END_TEST

/* 128 rows: two consumer warp groups of 64; 3 and 4 stages with 0, 1,
 * fewer trips than stages, and 11 trips. */
START_TEST(gemm_roles_stages)
{
    const char *tiles[3] = { "128", "64", "32" };
    static const int64_t ks3[] = { 0, 32, 50, 330 }, ks4[] = { 70 };
    gemm_roles_case(tiles, 3, 2, 232, ks3, (int)TC_COUNTOF(ks3), 150, 70, 0);
    gemm_roles_case(tiles, 4, 2, 232, ks4, (int)TC_COUNTOF(ks4), 150, 70, 0);
}
END_TEST

/* 64 rows: one consumer warp group at 256 registers; one stage. */
START_TEST(gemm_roles_one_group)
{
    const char *tiles[3] = { "64", "64", "32" };
    static const int64_t ks[] = { 0, 32, 200 };
    gemm_roles_case(tiles, 1, 1, 256, ks, (int)TC_COUNTOF(ks), 100, 70, 0);
}
END_TEST

/* f8 products on wgmma m64nNk32 (tests/perf/gemm_f8_nt.tile: B given as
 * [N, K] rows) in roles: e4m3 at the tiles the compiler chooses (256 x 128
 * over steps of 128, 2 stages) and e5m2 at 128 x 64 over 64 (3 stages,
 * persistent over 2 blocks); 0, 1, fewer trips than stages, a partial
 * last step and many trips, bit-identical after every pass and under
 * seeded interleavings of the roles. The same kernel on bf16 takes the
 * roles too (B read K-major, m64nNk16). */
START_TEST(gemm_roles_f8)
{
    const RolesSrc e4 = { "gemm_f8_nt.tile", gemm_f8_nt_pinned, sizeof gemm_f8_nt_pinned - 1, "f8e4m3", true };
    const RolesSrc e5 = { "gemm_f8_nt.tile", gemm_f8_nt_pinned, sizeof gemm_f8_nt_pinned - 1, "f8e5m2", true };
    const RolesSrc bf = { "gemm_f8_nt.tile", gemm_f8_nt_pinned, sizeof gemm_f8_nt_pinned - 1, "bf16", true };
    const char *big[3] = { "256", "128", "128" }, *small[3] = { "128", "64", "64" };
    static const int64_t ks[] = { 0, 128, 200, 1100 }, ks5[] = { 0, 64, 100, 700 }, ksb[] = { 0, 64, 330 };
    roles_case(&e4, big, 2, 2, 232, ks, (int)TC_COUNTOF(ks), 100, 130, 0);
    roles_case(&e5, small, 3, 2, 232, ks5, (int)TC_COUNTOF(ks5), 300, 150, 2);
    roles_case(&bf, small, 3, 2, 232, ksb, (int)TC_COUNTOF(ksb), 150, 70, 0);
}
END_TEST

/* ---- gemm on tcgen05 (sm_100a) ---- */

/* The three tcgen05 roles (producer, mma, `last` x n warp groups) of the
 * kernel's ws, within the register file; returns it. */
static const Op *check_tc_roles(Func *f, const char *what, int last, int n)
{
    const Op *ws = find_ws(f);
    ck_assert_msg(ws != NULL, "%s: no roles", what);
    ck_assert_int_eq(ws->nlist, 9);
    ck_assert_int_eq(ws->list[0], ROLE_PRODUCER);
    ck_assert_int_eq(ws->list[3], ROLE_MMA);
    ck_assert_int_eq(ws->list[6], last);
    ck_assert_int_eq(ws->list[7], n);
    ck_assert_int_le(128 * (ws->list[2] + ws->list[5] + n * ws->list[8]), 65536);
    ck_assert_int_eq(f->sched.warps, 4 * (2 + n));
    ck_assert(has_op(f, OP_TC_MMA) && has_op(f, OP_TC_COMMIT) && has_op(f, OP_TMEM_LOAD) && has_op(f, OP_TMEM_ALLOC) &&
              has_op(f, OP_TMA_LOAD));
    return ws;
}

/* The GEMM example at sm_100a with tiles BM/BN/BK and pipeline(S): its
 * loop becomes a producer, an mma role and BM / 128 epilogue warp groups
 * around an accumulator in tensor memory, bit-identical after every pass
 * for each K (so equal to the sm_90a roles, which the same reference
 * checks), and under seeded interleavings. */
static void gemm_tc_case(const char *tiles[3], int stages, const int64_t *ks, int nk, int64_t m, int64_t n)
{
    char st[8];
    snprintf(st, sizeof st, "%d", stages);
    FeDefine defs[4] = { { "BM", tiles[0] }, { "BN", tiles[1] }, { "BK", tiles[2] }, { "STAGES", st } };
    int epi = atoi(tiles[0]) / 128;
    for (int i = 0; i < nk; i++) {
        Prog p;
        prog_compile(&p, "gemm.tile", gemm_pinned, sizeof gemm_pinned - 1, defs, 4);
        int64_t sa[2] = { m, ks[i] }, sb[2] = { ks[i], n }, sc[2] = { m, n };
        Ten t[3] = { ten_new(DT_BF16, 2, sa), ten_new(DT_BF16, 2, sb), ten_new(DT_BF16, 2, sc) };
        uint64_t rng = 0x7c05u + (uint64_t)(ks[i] * 5 + stages);
        ten_random(&t[0], &rng, -1, 1);
        ten_random(&t[1], &rng, -1, 1);
        static const int argmap[3] = { 0, 1, 2 };
        Run r = { t, 3, 2, { { 0 } }, 3, argmap, NULL };
        char what[128];
        snprintf(what, sizeof what, "gemm sm_100a tiles %s/%s/%s S=%d M=%lld N=%lld K=%lld", tiles[0], tiles[1],
                 tiles[2], stages, (long long)m, (long long)n, (long long)ks[i]);
        check_passes(&p, &r, "sm_100a", what, true);
        unsigned char **ref = snapshot(&r);
        check_tc_roles(p.f, what, ROLE_EPILOGUE, epi);
        ck_assert(!has_op(p.f, OP_DOT_ASYNC) && !has_op(p.f, OP_ASYNC_COPY) && !has_op(p.f, OP_BARRIER));
        check_interleavings(&p, &r, ref, what);
        free_snapshot(&r, ref);
        for (int k = 0; k < 3; k++)
            ten_free(&t[k]);
        arena_free(p.a);
    }
}

/* The example's tiles: two epilogue warp groups (256 rows); 0, 1, 2 (= S)
 * and 10 trips. */
START_TEST(gemm_tc_example)
{
    const char *tiles[3] = { "256", "128", "64" };
    static const int64_t ks[] = { 0, 64, 100, 581 };
    gemm_tc_case(tiles, 2, ks, (int)TC_COUNTOF(ks), 100, 130);
}
END_TEST

/* 128 rows: one epilogue warp group; 3 stages with fewer trips than
 * stages and more. */
START_TEST(gemm_tc_stages)
{
    const char *tiles[3] = { "128", "64", "32" };
    static const int64_t ks[] = { 0, 32, 50, 330 };
    gemm_tc_case(tiles, 3, ks, (int)TC_COUNTOF(ks), 150, 70);
}
END_TEST

/* A source through the whole pipeline on sm_90a (wgmma roles) and on
 * sm_100a (tcgen05 roles), each run by the interpreter on r's tensors:
 * the outputs equal bit for bit ("what" names the case). pending1: trip
 * loops of the sm_90a roles that wait with one product in flight (-1:
 * not checked). */
static void check_tc_against_sm90(const char *file, const char *src, size_t len, const FeDefine *defs, int ndefs,
                                  Run *r, int pending1, const char *what)
{
    unsigned char **ref = NULL;
    static const char *const archs[2] = { "sm_90a", "sm_100a" };
    for (int a = 0; a < 2; a++) {
        Prog p;
        prog_compile(&p, file, src, len, defs, ndefs);
        ck_assert_int_eq(run_passes(&p, NULL, archs[a]), 0);
        ck_assert_msg(find_ws(p.f) != NULL, "%s: %s: no roles", what, archs[a]);
        ck_assert(has_op(p.f, a ? OP_TC_MMA : OP_DOT_ASYNC));
        ck_assert(!has_op(p.f, a ? OP_DOT_ASYNC : OP_TC_MMA));
        if (pending1 >= 0)
            ck_assert_int_eq(waits_pending1(p.f), a ? 0 : pending1);
        run_interp(&p, r);
        if (a)
            compare(r, ref, what);
        else
            ref = snapshot(r);
        arena_free(p.a);
    }
    free_snapshot(r, ref);
}

/* The GEMM example with the whole pipeline on sm_90a (wgmma consumer
 * roles) and on sm_100a (tcgen05: an mma role and epilogue warp groups
 * around tensor memory), the same tiles and inputs: C equal bit for bit,
 * for 0, 1, 2 (= S) and 10 trips. */
START_TEST(gemm_tc_matches_sm90)
{
    FeDefine defs[4] = { { "BM", "128" }, { "BN", "64" }, { "BK", "32" }, { "STAGES", "2" } };
    static const int64_t ks[] = { 0, 32, 64, 330 };
    const int64_t m = 150, n = 70;
    for (size_t i = 0; i < TC_COUNTOF(ks); i++) {
        int64_t sa[2] = { m, ks[i] }, sb[2] = { ks[i], n }, sc[2] = { m, n };
        Ten t[3] = { ten_new(DT_BF16, 2, sa), ten_new(DT_BF16, 2, sb), ten_new(DT_BF16, 2, sc) };
        uint64_t rng = 0x9e11u + (uint64_t)ks[i];
        ten_random(&t[0], &rng, -1, 1);
        ten_random(&t[1], &rng, -1, 1);
        static const int argmap[3] = { 0, 1, 2 };
        Run r = { t, 3, 2, { { 0 } }, 3, argmap, NULL };
        char what[96];
        snprintf(what, sizeof what, "gemm K=%lld: sm_100a against sm_90a", (long long)ks[i]);
        check_tc_against_sm90("gemm.tile", gemm_pinned, sizeof gemm_pinned - 1, defs, 4, &r, -1, what);
        for (int k = 0; k < 3; k++)
            ten_free(&t[k]);
    }
}
END_TEST

/* ---- attention ---- */

/* The example's Q, K, V (random in [-1, 1] from seed), O and LSE for
 * sizes { Z, H, N, HK, NK, D }. */
static void attention_tensors(Ten t[5], const int64_t *sz, uint64_t seed)
{
    int64_t sq[4] = { sz[0], sz[1], sz[2], sz[5] }, sk[4] = { sz[0], sz[3], sz[4], sz[5] };
    int64_t sl[3] = { sz[0], sz[1], sz[2] };
    t[0] = ten_new(DT_BF16, 4, sq);
    t[1] = ten_new(DT_BF16, 4, sk);
    t[2] = ten_new(DT_BF16, 4, sk);
    t[3] = ten_new(DT_BF16, 4, sq);
    t[4] = ten_new(DT_F32, 3, sl);
    for (int k = 0; k < 3; k++)
        ten_random(&t[k], &seed, -1, 1);
}

/* Does the outer loop's body copy again after its inner loop (the rotated
 * next-trip copies)? */
static bool copies_after_inner(const Op *outer)
{
    const Block *b = &outer->regions[0];
    bool seen = false;
    for (int i = 0; i < b->nops; i++) {
        const Op *o = b->ops[i];
        seen = seen || o->code == OP_FOR;
        for (int k = 0; seen && o->code == OP_IF && k < o->regions[0].nops; k++)
            if (o->regions[0].ops[k]->code == OP_ASYNC_COPY)
                return true;
    }
    return false;
}

typedef struct Staged { bool staged, tma; } Staged;

static bool staged_visit(Func *f, Op *op, void *ctx)
{
    Staged *s = ctx;
    if (op->code == OP_STORE && ir_type(f, op->args[op->nargs - 1])->space == SP_SHARED) {
        s->staged = true;
        s->tma = s->tma || op->iattr[1];
    }
    return true;
}

/* Does f store a tile declared (or made) shared to a tensor? */
static bool has_staged_store(Func *f)
{
    Staged s = { false, false };
    ir_walk(f, &f->body, staged_visit, &s);
    return s.staged;
}

/* Does f store such a tile in one TMA store (the store's `tma`)? */
static bool has_tma_store(Func *f)
{
    Staged s = { false, false };
    ir_walk(f, &f->body, staged_visit, &s);
    return s.tma;
}

/* The example with D = BM = BN = 16, or (big) the 256-row tile of D = 128
 * that the launch pass makes persistent when told of 1k query and key
 * rows, 3 SMs and 227 KB a block: 3 blocks over 2 heads x 2 query tiles (block 0 takes
 * two), its loop over tiles rotated (the next tile's Q and first K/V stage
 * copied right after the key loop). Told of 37 keys, the 16-row tile
 * stages its output (a short key loop); the causal kernel takes its
 * longest rows first instead. */
static void attention_case_with(const char *causal, bool big)
{
    size_t len;
    char *src = read_example("attention.tile", &len);
    FeDefine defs[4] = { { "D", big ? "128" : "16" }, { "BM", big ? "256" : "16" }, { "BN", big ? "64" : "16" },
                         { "CAUSAL", causal } };
    StrBuf err = { 0 };
    ck_assert_int_eq(pass_dims_parse(big ? "N=1024,NK=1024" : "N=37,NK=37", &g_dims, &err), 0);
    g_sms = 3;
    g_smem = big ? 232448 : 0;   /* an H200's blocks: room for the 256-row tile */
    Prog p;
    prog_compile(&p, "attention.tile", src, len, defs, 4);
    bool persistent = big && causal[0] == 'f';
    int64_t d = big ? 128 : 16, Z = 1, H = big ? 4 : 2, HK = big ? 2 : 1, N = big ? 300 : 37;
    Ten t[5];
    attention_tensors(t, (int64_t[]){ Z, H, N, HK, N, d }, 7);
    InterpArg scale = scalar_arg(0.25, 0);
    static const int argmap[6] = { 0, 1, 2, 3, 4, -1 };
    Run r = { t, 5, 3, { { 0 } }, 6, argmap, &scale };
    char what[96];
    snprintf(what, sizeof what, "attention causal=%s D=%lld", causal, (long long)d);
    check_passes(&p, &r, "sm_86", what, true);
    const Op *outer = NULL, *inner = NULL;
    ck_assert_int_eq(count_fors(&p.f->body, &outer), 1);
    ck_assert_int_eq(count_fors(&outer->regions[0], &inner), persistent ? 1 : 0);
    if (persistent)   /* rotated: the next trip's copies follow the key loop */
        ck_assert(copies_after_inner(outer));
    int64_t grid[3];
    InterpArg args[6];
    for (int i = 0; i < 5; i++)
        args[i] = ten_arg(&t[i]);
    args[5] = scale;
    ck_assert_int_eq(interp_grid(p.f, args, 6, grid, &p.d), 0);
    if (persistent) {   /* min(SMs, tiles) */
        ck_assert(grid[0] == 3 && grid[1] == 1 && grid[2] == 1);
    } else if (causal[0] == 't') {   /* (heads of a group, query blocks, groups) */
        int64_t qb = (N + (big ? 255 : 15)) / (big ? 256 : 16);
        ck_assert(grid[1] == qb && grid[0] * grid[2] == Z * H);
    }
    ck_assert_msg(has_staged_store(p.f), "%s: O is not staged", what);
    for (int i = 0; i < 5; i++)
        ten_free(&t[i]);
    arena_free(p.a);
    free(src);
    memset(&g_dims, 0, sizeof g_dims);
    g_sms = g_smem = 0;
}

/* ---- attention in warp-specialized roles (sm_90a) ---- */

/* The example at sm_90a with D / BM / BN pinned (mostly small): its key
 * loop becomes roles (Q by TMA once on its own ring, K and V on rings of
 * the pipeline(2) stages, `consumers` warp groups), bit-identical to the
 * IR as lowered after every pass for each key length (0 keys: no trip,
 * the consumers wait for Q alone; 1 trip, fewer than the stages; 2 = S;
 * many, with a ragged tail), then under seeded interleavings of the roles.
 * H = 4 query heads over HK = 2 key heads (GQA); N = 70 (a ragged query
 * tail); with `dims` the launch pass is told the sizes. Where the grid
 * takes the longest tiles first (causal), or a persistent grid's O has rows
 * of whole 128-byte panels (D = 64: one TMA store), the launch pass stages O through shared
 * memory (the epilogue's named barrier in the consumers); elsewhere it is
 * stored from registers. `sms` as g_sms: told of sms SMs (> 0) or not told (-1: num_sms()), the roles loop over the tiles of a persistent
 * grid of min(sms x its blocks an SM, tiles) blocks: with 3 SMs and 4 tiles (4 heads, one
 * query tile each), block 0 takes two, and the rings run on from its
 * first tile's trips into its second's; the causal kernel keeps one tile
 * a block (its grid takes the longest loops first). */
static void attention_roles_case(const char *causal, const char *bm, int consumers, const int64_t *nks, int nnk,
                                 bool dims, const char *dn, const char *bn, int64_t sms)
{
    size_t len;
    char *src = read_example("attention.tile", &len);
    FeDefine defs[4] = { { "D", dn }, { "BM", bm }, { "BN", bn }, { "CAUSAL", causal } };
    for (int i = 0; i < nnk; i++) {
        int64_t d = atoi(dn), Z = 1, H = 4, HK = 2, N = 70, NK = nks[i];
        char dl[64];   /* told the sizes, the launch pass stages O through shared memory (a short key loop) */
        snprintf(dl, sizeof dl, "N=%lld,NK=%lld", (long long)N, (long long)(NK ? NK : 1));
        StrBuf err = { 0 };
        memset(&g_dims, 0, sizeof g_dims);
        ck_assert_int_eq(dims ? pass_dims_parse(dl, &g_dims, &err) : 0, 0);
        g_sms = sms;
        bool persist = sms && causal[0] == 'f';   /* causal: the longest loops first, one tile a block */
        Prog p;
        prog_compile(&p, "attention.tile", src, len, defs, 4);
        Ten t[5];
        attention_tensors(t, (int64_t[]){ Z, H, N, HK, NK, d }, 11 + (uint64_t)NK);
        InterpArg scale = scalar_arg(0.25, 0);
        static const int argmap[6] = { 0, 1, 2, 3, 4, -1 };
        Run r = { t, 5, 3, { { 0 } }, 6, argmap, &scale };
        char what[128];
        snprintf(what, sizeof what, "attention sm_90a causal=%s BM=%s NK=%lld", causal, bm, (long long)NK);
        check_passes(&p, &r, "sm_90a", what, true);
        unsigned char **ref = snapshot(&r);
        const Op *ws = find_ws(p.f);
        ck_assert_msg(ws != NULL, "%s: no roles", what);
        ck_assert_int_eq(ws->nlist, 6);
        /* one consumer group of these small tiles: three blocks an SM (24 / 136) */
        int blocks = ir_ws_blocks(ws);
        ck_assert_int_eq(blocks, consumers == 1 ? 3 : 1);
        ck_assert_int_eq(p.f->sched.min_blocks, blocks);
        ck_assert_int_eq(ws->list[2], consumers == 3 ? 32 : 24);
        ck_assert_int_eq(ws->list[4], consumers);
        ck_assert_int_eq(ws->list[5], consumers == 3 ? 160 : consumers == 2 ? 240 : 136);
        ck_assert_int_eq(p.f->sched.warps, 4 * (1 + consumers));
        ck_assert(!has_op(p.f, OP_ASYNC_COPY) && !has_op(p.f, OP_ASYNC_WAIT) && !has_op(p.f, OP_DOT));
        ck_assert(has_op(p.f, OP_TMA_LOAD) && has_op(p.f, OP_DOT_ASYNC));
        /* staged: the causal grid (longest first), or on a persistent grid rows of whole 128-byte
         * panels and at least 128 columns (sms 0 here is warp_specialize.persistent=0); through
         * one TMA store (`tma`) on either grid where the rows are such */
        bool tma_rows = (d * 2) % 128 == 0 && d >= 128 && atoi(bm) <= 256;
        ck_assert_int_eq(has_staged_store(p.f), causal[0] == 't' || (sms != 0 && tma_rows));
        ck_assert_int_eq(has_tma_store(p.f), has_staged_store(p.f) && tma_rows);
        /* persistent: each role one loop over tiles holding its trip loop */
        for (int k = 0; k < ws->nregions; k++) {
            const Op *tl = NULL, *trips = NULL;
            ck_assert_int_eq(count_fors(&ws->regions[k], &tl), 1);
            ck_assert_int_eq(count_fors(&tl->regions[0], &trips), persist ? 1 : 0);
        }
        if (persist) {   /* Q's ring: two slots (the next tile's Q loads under this tile's trips) */
            const Op *tl = NULL;
            count_fors(&ws->regions[0], &tl);
            int qslots = 0;
            for (int k = 0; k < tl->regions[0].nops; k++)
                if (tl->regions[0].ops[k]->code == OP_TMA_LOAD)
                    qslots = (int)ir_type(p.f, tl->regions[0].ops[k]->args[0])->shape[0];
            ck_assert_int_eq(qslots, 2);
            int64_t grid[3];
            InterpArg args[6];
            for (int k = 0; k < 5; k++)
                args[k] = ten_arg(&t[k]);
            args[5] = scale;
            ck_assert_int_eq(interp_grid(p.f, args, 6, grid, &p.d), 0);
            int64_t smc = sms > 0 ? sms : TC_INTERP_SMS;   /* not told: num_sms() */
            ck_assert(grid[0] == (smc * blocks < 4 * ((N + atoi(bm) - 1) / atoi(bm)) ? smc * blocks
                                  : 4 * ((N + atoi(bm) - 1) / atoi(bm))) && grid[1] == 1 && grid[2] == 1);
        }
        check_interleavings(&p, &r, ref, what);
        free_snapshot(&r, ref);
        for (int k = 0; k < 5; k++)
            ten_free(&t[k]);
        arena_free(p.a);
    }
    memset(&g_dims, 0, sizeof g_dims);
    g_sms = 0;
    free(src);
}

static const int64_t attn_nks[] = { 0, 9, 32, 100 };   /* 0, 1, 2 (= S) and 7 trips of 16 keys */

START_TEST(attention_roles)
{
    attention_roles_case("false", "128", 2, attn_nks, (int)TC_COUNTOF(attn_nks), true, "16", "16", 0);
}
END_TEST

START_TEST(attention_roles_causal)
{
    attention_roles_case("true", "128", 2, attn_nks, (int)TC_COUNTOF(attn_nks), false, "16", "16", 0);
}
END_TEST

/* The persistent grid: 3 blocks over 4 tiles; then one block over all 4,
 * Q's ring of two slots taken twice round. */
START_TEST(attention_roles_persistent)
{
    attention_roles_case("false", "128", 2, attn_nks, (int)TC_COUNTOF(attn_nks), true, "16", "16", 3);
    attention_roles_case("false", "128", 2, attn_nks, (int)TC_COUNTOF(attn_nks), true, "16", "16", 1);
    attention_roles_case("false", "128", 2, attn_nks + 2, 2, true, "16", "16", -1);   /* num_sms() */
}
END_TEST

/* Causal with the SM count known: its grid takes the longest loops first
 * and it stays one tile a block. */
START_TEST(attention_roles_causal_sms)
{
    attention_roles_case("true", "128", 2, attn_nks, (int)TC_COUNTOF(attn_nks), true, "16", "16", 3);
}
END_TEST

START_TEST(attention_roles_persistent_d64)
{
    static const int64_t nks[] = { 0, 200 };
    attention_roles_case("false", "128", 2, nks, 2, false, "64", "128", 3);
}
END_TEST

/* 64 rows: one consumer warp group, at three blocks an SM (24 / 136
 * registers) for these small tiles; causal (one tile a block) and
 * persistent over 2 SMs: 6 blocks for the 8 tiles (2 query tiles of 4
 * heads), blocks 0 and 1 taking two. */
START_TEST(attention_roles_one_group)
{
    attention_roles_case("true", "64", 1, attn_nks + 2, 2, true, "16", "16", 0);
    static const int64_t nks[] = { 0, 200 };
    attention_roles_case("false", "64", 1, nks, 2, false, "16", "16", 2);
}
END_TEST

/* 192 rows: three consumer warp groups at 32 / 160 registers (FlashAttention
 * 3's D = 64 tile when BM = 192 is pinned), small and at D = 64 x 128 keys,
 * one tile a block and persistent. */
START_TEST(attention_roles_three_groups)
{
    attention_roles_case("false", "192", 3, attn_nks, (int)TC_COUNTOF(attn_nks), true, "16", "16", 0);
    attention_roles_case("true", "192", 3, attn_nks + 2, 2, true, "16", "16", 0);
    static const int64_t nks[] = { 0, 200 };
    attention_roles_case("false", "192", 3, nks, 2, false, "64", "128", 3);
}
END_TEST

/* The tile the compiler takes for D = 64 (128 x 128, 128B swizzles): no
 * keys, and one full block and a ragged one. */
START_TEST(attention_roles_d64)
{
    static const int64_t nks[] = { 0, 200 };
    attention_roles_case("false", "128", 2, nks, 2, false, "64", "128", 0);
}
END_TEST

/* ---- attention on tcgen05 (sm_100a) ---- */

/* The example at sm_100a with D / BM / BN pinned: its key loop becomes a
 * producer, an mma role and BM / 128 softmax warp groups with S, P and O
 * in tensor memory, bit-identical to the IR as lowered after every pass
 * (hence to the sm_90a roles, which the same reference checks) for each
 * key length (0 keys: the output is the stored initial value; 1 trip,
 * fewer than the stages; 2 = S; many, with a ragged tail), then under
 * seeded interleavings of the roles. GQA (H = 4 over HK = 2), N = 70. */
static void attention_tc_case(const char *causal, const char *bm, const int64_t *nks, int nnk, const char *dn,
                              const char *bn)
{
    size_t len;
    char *src = read_example("attention.tile", &len);
    FeDefine defs[4] = { { "D", dn }, { "BM", bm }, { "BN", bn }, { "CAUSAL", causal } };
    int softmax = atoi(bm) / 128;
    for (int i = 0; i < nnk; i++) {
        int64_t d = atoi(dn), Z = 1, H = 4, HK = 2, N = 70, NK = nks[i];
        memset(&g_dims, 0, sizeof g_dims);
        Prog p;
        prog_compile(&p, "attention.tile", src, len, defs, 4);
        Ten t[5];
        attention_tensors(t, (int64_t[]){ Z, H, N, HK, NK, d }, 13 + (uint64_t)NK);
        InterpArg scale = scalar_arg(0.25, 0);
        static const int argmap[6] = { 0, 1, 2, 3, 4, -1 };
        Run r = { t, 5, 3, { { 0 } }, 6, argmap, &scale };
        char what[128];
        snprintf(what, sizeof what, "attention sm_100a causal=%s BM=%s D=%s BN=%s NK=%lld", causal, bm, dn, bn,
                 (long long)NK);
        check_passes(&p, &r, "sm_100a", what, true);
        unsigned char **ref = snapshot(&r);
        check_tc_roles(p.f, what, ROLE_CONSUMER, softmax);
        ck_assert(has_op(p.f, OP_TMEM_STORE));
        ck_assert(!has_op(p.f, OP_DOT_ASYNC) && !has_op(p.f, OP_DOT) && !has_op(p.f, OP_ASYNC_COPY) &&
                  !has_op(p.f, OP_ASYNC_WAIT));
        check_interleavings(&p, &r, ref, what);
        free_snapshot(&r, ref);
        for (int k = 0; k < 5; k++)
            ten_free(&t[k]);
        arena_free(p.a);
    }
    free(src);
}

/* The example with the whole pipeline on sm_90a (wgmma roles, the second
 * product pipelined across trips) and on sm_100a (tcgen05 roles), the same
 * tiles, inputs and exp2 emulation (one 8-column group in 4, which the
 * exp2_emu pass picks on sm_100a alone): O and LSE equal bit for bit,
 * causal or not, for 0, 1, 2 and 7 trips. */
START_TEST(attention_tc_matches_sm90)
{
    size_t len;
    char *src = read_example("attention.tile", &len);
    g_exp2_emu = 4;
    for (int c = 0; c < 2; c++)
        for (size_t i = 0; i < TC_COUNTOF(attn_nks); i++) {
            FeDefine defs[4] = { { "D", "16" }, { "BM", "128" }, { "BN", "16" }, { "CAUSAL", c ? "true" : "false" } };
            int64_t Z = 1, H = 4, HK = 2, N = 70, NK = attn_nks[i];
            memset(&g_dims, 0, sizeof g_dims);
            Ten t[5];
            attention_tensors(t, (int64_t[]){ Z, H, N, HK, NK, 16 }, 29 + (uint64_t)NK);
            InterpArg scale = scalar_arg(0.25, 0);
            static const int argmap[6] = { 0, 1, 2, 3, 4, -1 };
            Run r = { t, 5, 3, { { 0 } }, 6, argmap, &scale };
            char what[96];
            snprintf(what, sizeof what, "attention causal=%d NK=%lld: sm_100a against sm_90a", c, (long long)NK);
            check_tc_against_sm90("attention.tile", src, len, defs, 4, &r, 1, what);
            for (int k = 0; k < 5; k++)
                ten_free(&t[k]);
        }
    free(src);
    g_exp2_emu = 0;
}
END_TEST

START_TEST(attention_tc) { attention_tc_case("false", "128", attn_nks, (int)TC_COUNTOF(attn_nks), "16", "16"); }
END_TEST

START_TEST(attention_tc_causal) { attention_tc_case("true", "128", attn_nks, (int)TC_COUNTOF(attn_nks), "16", "16"); }
END_TEST

/* Two softmax warp groups (256 rows) and the D = 64 tile. */
START_TEST(attention_tc_two_groups)
{
    static const int64_t nks[] = { 0, 200 };
    attention_tc_case("true", "256", nks, 2, "16", "32");
    attention_tc_case("false", "128", nks, 2, "64", "64");
}
END_TEST

START_TEST(attention_plain) { attention_case_with("false", false); }
END_TEST

START_TEST(attention_causal) { attention_case_with("true", false); }
END_TEST

START_TEST(attention_persistent) { attention_case_with("false", true); }
END_TEST

START_TEST(attention_persistent_causal) { attention_case_with("true", true); }
END_TEST

/* ---- the limit and untouched kernels ---- */



START_TEST(smem_limit_lists_buffers)
{
    size_t len = sizeof gemm_pinned - 1;
    const char *src = gemm_pinned;
    FeDefine defs[4] = { { "BM", "256" }, { "BN", "256" }, { "BK", "128" }, { "STAGES", "4" } };
    Prog p;
    prog_compile(&p, "gemm.tile", src, len, defs, 4);
    PassCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.diag = &p.d;
    ctx.target = tc_target("sm_86");
    ctx.verify_each = true;
    ck_assert_int_ne(passes_run(p.m, &ctx), 0);
    ck_assert_int_eq(p.d.nerrors, 1);
    const char *msg = p.d.recs[0].msg;
    ck_assert_ptr_nonnull(strstr(msg, "kernel 'gemm' needs 524288 bytes of shared memory"));
    ck_assert_ptr_nonnull(strstr(msg, "101376 bytes (99 KB) one block may use on sm_86"));
    ck_assert_ptr_nonnull(strstr(msg, "A at gemm.tile:17:"));
    ck_assert_ptr_nonnull(strstr(msg, "tile<4x256x128xbf16, shared>, 4 stages of 65536 B = 262144 B at offset"));
    ck_assert_ptr_nonnull(strstr(msg, "B at gemm.tile:18:"));
    ck_assert_ptr_nonnull(strstr(msg, "tile<4x128x256xbf16, shared>"));
    ck_assert_int_eq(p.d.recs[0].loc.line, 6);
    arena_free(p.a);
    /* the same kernel fits on sm_90a (227 KB)? 512 KB does not either */
}
END_TEST

START_TEST(smem_limit_fits_sm90)
{
    size_t len = sizeof gemm_pinned - 1;
    const char *src = gemm_pinned;
    FeDefine defs[4] = { { "BM", "128" }, { "BN", "128" }, { "BK", "64" }, { "STAGES", "4" } };
    Prog p;
    prog_compile(&p, "gemm.tile", src, len, defs, 4);
    ck_assert_int_eq(run_passes(&p, NULL, "sm_90a"), 0);   /* warp-specialized: + 2 rings of 4 mbarriers */
    ck_assert_int_eq(p.f->smem_bytes, 4 * 2 * 128 * 64 * 2 + 2 * 4 * 8);
    arena_free(p.a);
    Prog q;
    prog_compile(&q, "gemm.tile", src, len, defs, 4);
    PassCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.diag = &q.d;
    ctx.target = tc_target("sm_86");
    StrBuf rem = { 0 };
    ctx.remarks = &rem;
    /* 128 KB > 99 KB: the pipeline(4) hint gives way to 3 stages (96 KB) */
    ck_assert_int_eq(passes_run(q.m, &ctx), 0);
    ck_assert_int_eq(q.f->smem_bytes, 3 * 2 * 128 * 64 * 2);
    ck_assert_ptr_nonnull(strstr(rem.buf, "pipeline(4) hint, 3 stages"));
    sb_free(&rem);
    arena_free(q.a);
}
END_TEST

/* Stage choice without a hint: min(4, budget / stage bytes). */
START_TEST(stages_from_budget)
{
    static const char src[] =
        "kernel g<BM: int = 128>(A: global bf16[M, K], B: global bf16[K, N], C: global f32[M, N])\n"
        "  grid(1) {\n"
        "  tile acc: reg f32[BM, BM] = 0;\n"
        "  for k in 0 .. cdiv(K, 64) {\n"
        "    acc += A[0 : +BM, k * 64 : +64] @ B[k * 64 : +64, 0 : +BM];\n"
        "  }\n"
        "  C[0 : +BM, 0 : +BM] = acc;\n"
        "}\n";
    static const struct { const char *bm, *arch; int64_t bytes; } cases[] = {
        { "128", "sm_86", 3 * 32768 },            /* 32 KB per stage: 99 KB fits 3 */
        { "128", "sm_90a", 4 * (32768 + 16) },    /* capped at 4; warp-specialized: two mbarriers a stage */
        { "256", "sm_86", 1 * 65536 },            /* 64 KB per stage: 1 */
        { "256", "sm_90a", 3 * 65536 },           /* no roles (256 accumulator registers a thread): 227 KB fits 3 */
    };
    for (size_t i = 0; i < TC_COUNTOF(cases); i++) {
        FeDefine defs[1] = { { "BM", cases[i].bm } };
        Prog p;
        prog_compile(&p, "g.tile", src, strlen(src), defs, 1);
        ck_assert_int_eq(run_passes(&p, NULL, cases[i].arch), 0);
        ck_assert_int_eq(p.f->smem_bytes, cases[i].bytes);
        arena_free(p.a);
    }
}
END_TEST

START_TEST(no_dot_untouched)
{
    static const char *const names[] = { "softmax.tile", "vector_add.tile", "layernorm.tile", "transpose.tile" };
    for (size_t i = 0; i < TC_COUNTOF(names); i++) {
        size_t len;
        char *src = read_example(names[i], &len);
        Prog p;
        prog_compile(&p, names[i], src, len, NULL, 0);
        ck_assert_int_eq(run_passes(&p, "canonicalize,bounds,mask_split", "sm_86"), 0);
        StrBuf before = { 0 }, after = { 0 };
        ir_print_module(p.m, NULL, &before);
        ck_assert_int_eq(run_passes(&p, "double_buffer,swizzle,smem_alloc", "sm_86"), 0);
        ir_print_module(p.m, NULL, &after);
        ck_assert_str_eq(before.buf, after.buf);
        ck_assert_int_eq(p.f->smem_bytes, 0);
        sb_free(&before);
        sb_free(&after);
        arena_free(p.a);
        free(src);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("pipeline_passes");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, gemm_example_bf16);
    tcase_add_test(tc, gemm_f16_and_bf16);
    tcase_add_test(tc, gemm_runtime_range);
    tcase_add_test(tc, gemm_roles_example);
    tcase_add_test(tc, gemm_roles_stages);
    tcase_add_test(tc, gemm_roles_one_group);
    tcase_add_test(tc, gemm_roles_f8);
    tcase_add_test(tc, gemm_roles_persistent);
    tcase_add_test(tc, gemm_tc_example);
    tcase_add_test(tc, gemm_tc_stages);
    tcase_add_test(tc, gemm_tc_matches_sm90);
    tcase_add_test(tc, attention_plain);
    tcase_add_test(tc, attention_causal);
    tcase_add_test(tc, attention_persistent);
    tcase_add_test(tc, attention_persistent_causal);
    tcase_add_test(tc, smem_limit_lists_buffers);
    tcase_add_test(tc, smem_limit_fits_sm90);
    tcase_add_test(tc, stages_from_budget);
    tcase_add_test(tc, no_dot_untouched);
    suite_add_tcase(s, tc);
    TCase *roles = tcase_create("attention_roles");   /* CK_RUN_CASE=attention_roles runs these alone */
    tcase_set_timeout(roles, 300);
    tcase_add_test(roles, attention_roles);
    tcase_add_test(roles, attention_roles_causal);
    tcase_add_test(roles, attention_roles_one_group);
    tcase_add_test(roles, attention_roles_d64);
    tcase_add_test(roles, attention_roles_three_groups);
    tcase_add_test(roles, attention_roles_persistent);
    tcase_add_test(roles, attention_roles_causal_sms);
    tcase_add_test(roles, attention_roles_persistent_d64);
    tcase_add_test(roles, attention_tc);
    tcase_add_test(roles, attention_tc_matches_sm90);
    tcase_add_test(roles, attention_tc_causal);
    tcase_add_test(roles, attention_tc_two_groups);
    suite_add_tcase(s, roles);
    return s;
}

int main(void)
{
    return tc_check_run(suite());
}
