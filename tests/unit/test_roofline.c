/* test_roofline.c - the report's roofline (driver/roofline.c): exact FLOP,
 * MUFU and byte counts of the examples after the passes (sm_90a, sm_86,
 * sm_100a), against formulas written out here by hand: the GEMM at 4096^3
 * (A read once per column block, B once per row block) and with tails,
 * vector_add with and without a tail block, softmax with a masked row,
 * attention non-causal and causal (the causal key loop summed over query
 * blocks), gather_rows and scatter_rows (the indexed rows counted, in
 * 32-byte sectors), dropout (Philox on the integer multipliers), the
 * missing-dims answer, the times and the report text. */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <string.h>

#include "driver/result.h"
#include "driver/roofline.h"

typedef struct Compiled {
    tilec_result *r;
    const Func *f;
    PassDims dims;
} Compiled;

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The example `file` compiled to Tile IR for arch with the given dims and
 * defines ("BM=128,BN=64"); its kernel `name`. */
static Compiled compile_kernel(const char *file, const char *name, const char *arch, const char *dims,
                               const char *defs)
{
    Compiled c;
    memset(&c, 0, sizeof c);
    tilec_options o;
    tilec_options_init(&o);
    o.arch = arch;
    o.emit = TILEC_EMIT_TIR;
    o.keep_ir = 1;
    o.dims = dims;
    static char dbuf[256];
    static tilec_define dv[8];
    size_t nd = 0;
    if (defs) {
        snprintf(dbuf, sizeof dbuf, "%s", defs);
        for (char *p = dbuf; p && *p && nd < 8;) {
            char *comma = strchr(p, ','), *eq = strchr(p, '=');
            if (comma)
                *comma = 0;
            *eq = 0;
            dv[nd++] = (tilec_define){ p, eq + 1 };
            p = comma ? comma + 1 : NULL;
        }
    }
    o.defines = dv;
    o.ndefines = nd;
    char path[512];
    snprintf(path, sizeof path, TILEC_SOURCE_DIR "/examples/%s.tile", file);
    tilec_status st = tilec_compile_file(path, &o, &c.r);
    if (st != TILEC_OK)
        fprintf(stderr, "%s\n", c.r ? c.r->diag_text : "(no result)");
    ck_assert_int_eq(st, TILEC_OK);
    ck_assert_ptr_nonnull(c.r->module);
    for (int i = 0; i < c.r->module->nfuncs; i++)
        if (strcmp(c.r->module->funcs[i]->name, name) == 0)
            c.f = c.r->module->funcs[i];
    ck_assert_ptr_nonnull(c.f);
    StrBuf err = { 0 };
    ck_assert_int_eq(pass_dims_parse(dims, &c.dims, &err), 0);
    return c;
}

/* The example `name`'s kernel `name`. */
static Compiled compile(const char *name, const char *arch, const char *dims, const char *defs)
{
    return compile_kernel(name, name, arch, dims, defs);
}

enum { SMS = 132 };   /* the device the counts assume for a grid of num_sms() (an H200's SMs) */

/* The blocks of a grid of `tiles` tiles: on sm_90a the wgmma roles' persistent
 * grid of num_sms() (min(SMS, tiles)) where `persistent`, else one a tile. */
static int64_t grid_blocks(const char *arch, int64_t tiles, bool persistent)
{
    return persistent && strcmp(arch, "sm_90a") == 0 && tiles > SMS ? SMS : tiles;
}

static RoofCounts count(const Compiled *c)
{
    RoofCounts rc;
    const char *why = NULL;
    int st = tc_roofline_count(c->r->arena, c->f, &c->dims, SMS, &rc, &why);
    if (st != 0)
        fprintf(stderr, "not counted: %s\n", why);
    ck_assert_int_eq(st, 0);
    ck_assert(!rc.bounded);
    return rc;
}

/* ---- gemm: C[M,N] = A[M,K] @ B[K,N], bf16, BM 256, BN 128, BK 64 ---- */

static void check_gemm(const char *arch, int64_t M, int64_t N, int64_t K)
{
    char dims[128];
    snprintf(dims, sizeof dims, "M=%lld,N=%lld,K=%lld", (long long)M, (long long)N, (long long)K);
    Compiled c = compile("gemm", arch, dims, NULL);
    RoofCounts rc = count(&c);
    const int64_t BM = 256, BN = 128;
    ck_assert_int_eq(rc.blocks, grid_blocks(arch, cdiv(M, BM) * cdiv(N, BN), true));
    /* 2 M N K on whole tiles: the products run on BM x BN x BK tiles,
     * tails included (the tensor cores multiply the zero-filled rows too). */
    int64_t BK = 64;
    ck_assert_int_eq(rc.tc_flops, 2 * (cdiv(M, BM) * BM) * (cdiv(N, BN) * BN) * (cdiv(K, BK) * BK));
    /* A's rows of a block read once per column block, B's columns once per
     * row block (true extents at the tails), C written once. */
    int64_t a = M * K * 2 * cdiv(N, BN), b = K * N * 2 * cdiv(M, BM), cc = M * N * 2;
    ck_assert_int_eq(rc.load_bytes, a + b);
    ck_assert_int_eq(rc.store_bytes, cc);
    ck_assert_int_eq(rc.atomic_bytes, 0);
    ck_assert_int_eq(rc.dram_bytes, M * K * 2 + K * N * 2 + M * N * 2);
    ck_assert_int_eq(rc.mufu, 0);
    /* every tile goes through shared memory: written by the copy, read by the product */
    ck_assert_int_eq(rc.smem_bytes % 2, 0);
    tilec_result_free(c.r);
}

START_TEST(gemm_4096)
{
    check_gemm("sm_90a", 4096, 4096, 4096);
    Compiled c = compile("gemm", "sm_90a", "M=4096,N=4096,K=4096", NULL);
    RoofCounts rc = count(&c);
    ck_assert_int_eq(rc.tc_flops, 2LL * 4096 * 4096 * 4096);
    ck_assert_int_eq(rc.load_bytes, 4096LL * 4096 * 2 * (4096 / 128) + 4096LL * 4096 * 2 * (4096 / 256));
    ck_assert_int_eq(rc.smem_bytes, 2 * rc.load_bytes);
    ck_assert_int_eq(rc.dram_bytes, 3LL * 4096 * 4096 * 2);
    /* 132 SMs at 1980 MHz x 4096 FLOP a clock: 2 4096^3 / 1.0705e15 s */
    RoofTimes t = tc_roofline_times(&rc, tc_target("sm_90a"), 0);
    ck_assert_int_eq(t.bound, RB_TENSOR);
    double want = 2.0 * 4096 * 4096 * 4096 / (4096.0 * 132 * 1.98e9);
    ck_assert(t.t[RB_TENSOR] > want * 0.9999 && t.t[RB_TENSOR] < want * 1.0001);
    ck_assert(t.t[RB_MEMORY] > 0 && t.t[RB_MEMORY] < t.t[RB_TENSOR]);
    /* target.sms: 66 SMs take twice as long */
    RoofTimes h = tc_roofline_times(&rc, tc_target("sm_90a"), 66);
    ck_assert(h.t[RB_TENSOR] > 1.9999 * t.t[RB_TENSOR] && h.t[RB_TENSOR] < 2.0001 * t.t[RB_TENSOR]);
    ck_assert_int_eq(h.sms, 66);
    tilec_result_free(c.r);
}
END_TEST

START_TEST(gemm_tails_and_arches)
{
    check_gemm("sm_90a", 1000, 1000, 1000);
    check_gemm("sm_86", 4096, 4096, 4096);
    check_gemm("sm_86", 1000, 700, 300);
    check_gemm("sm_100a", 4096, 2048, 1024);
}
END_TEST

/* ---- vector_add: Z = X + Y, f32, BLOCK 1024 ---- */

START_TEST(vector_add)
{
    int64_t sizes[] = { 4096, 5000, 1 };
    for (int i = 0; i < 3; i++) {
        int64_t n = sizes[i];
        char dims[64];
        snprintf(dims, sizeof dims, "N=%lld", (long long)n);
        Compiled c = compile("vector_add", "sm_90a", dims, NULL);
        RoofCounts rc = count(&c);
        ck_assert_int_eq(rc.blocks, cdiv(n, 1024));
        ck_assert_int_eq(rc.tc_flops, 0);
        ck_assert_int_eq(rc.mufu, 0);
        ck_assert_int_eq(rc.elem, rc.blocks * 1024);   /* the add, on whole tiles */
        ck_assert_int_eq(rc.load_bytes, 2 * n * 4);    /* the tail block by its true extent */
        ck_assert_int_eq(rc.store_bytes, n * 4);
        ck_assert_int_eq(rc.dram_bytes, 3 * n * 4);
        RoofTimes t = tc_roofline_times(&rc, tc_target("sm_90a"), 0);
        ck_assert_int_eq(t.bound, RB_MEMORY);
        double want = 3.0 * n * 4 / 4.8e12;
        ck_assert(t.t[RB_MEMORY] > want * 0.9999 && t.t[RB_MEMORY] < want * 1.0001);
        tilec_result_free(c.r);
    }
}
END_TEST

/* ---- softmax: one block per row, BLOCK 1024, bf16 ---- */

START_TEST(softmax)
{
    Compiled c = compile("softmax", "sm_90a", "M=4096,N=1000", NULL);
    RoofCounts rc = count(&c);
    ck_assert_int_eq(rc.blocks, 4096);
    ck_assert_int_eq(rc.load_bytes, 4096LL * 1000 * 2);   /* the row's 1000 elements, not 1024 */
    ck_assert_int_eq(rc.store_bytes, 4096LL * 1000 * 2);
    ck_assert_int_eq(rc.dram_bytes, 2 * 4096LL * 1000 * 2);
    /* exp over the whole tile, and e / sum (an f32 division: rcp) */
    ck_assert_int_eq(rc.mufu, 4096LL * 2 * 1024);
    ck_assert_int_eq(rc.tc_flops, 0);
    RoofTimes t = tc_roofline_times(&rc, tc_target("sm_90a"), 0);
    ck_assert_int_eq(t.bound, RB_MEMORY);
    tilec_result_free(c.r);
}
END_TEST

/* ---- attention: D 128, BM 128, BN 64 pinned ---- */

typedef struct AttnWant {
    int64_t flops, loads, stores, mufu, dram;
} AttnWant;

/* By hand: per (z, h) and query block m, trips = cdiv(hi, BN) with hi =
 * NK, or min(NK, (m + 1) BM) when causal; a trip multiplies two BM x BN x
 * D products, reads BN rows of K and of V, and takes exp2 of the BM x BN
 * scores and of the BM corrections; a block reads Q once, writes O and
 * LSE, and takes BM x D divisions and BM log2 at its end. emu_cols of
 * the BN score columns compute exp2 on the FMA units (the exp2_emu pass:
 * on sm_100a at D = 128, one 8-column group in 8, so 8 of 64). pipelined
 * (sm_90a: warp_specialize's second product a trip late): a block with a
 * trip also runs trip 0's second product of zeros. */
static AttnWant attention_by_hand(int64_t Z, int64_t H, int64_t HK, int64_t N, int64_t NK, bool causal,
                                  int64_t emu_cols, bool pipelined)
{
    const int64_t D = 128, BM = 128, BN = 64;
    AttnWant w = { 0 };
    for (int64_t m = 0; m < cdiv(N, BM); m++) {
        int64_t hi = causal ? (NK < (m + 1) * BM ? NK : (m + 1) * BM) : NK;
        int64_t trips = cdiv(hi, BN);
        int64_t rows = N - m * BM < BM ? N - m * BM : BM;
        int64_t keys = 0;   /* key rows read: the last window by its true extent */
        for (int64_t t = 0; t < trips; t++)
            keys += NK - t * BN < BN ? NK - t * BN : BN;
        w.flops += trips * 2 * (2 * BM * BN * D);
        if (pipelined && trips)   /* trip 0's second product, of zeros (P of "trip -1") */
            w.flops += 2 * BM * BN * D;
        w.loads += rows * D * 2 + 2 * keys * D * 2;
        w.stores += rows * D * 2 + rows * 4;
        w.mufu += trips * (BM * (BN - emu_cols) + BM) + BM * D + BM;
    }
    w.flops *= Z * H;
    w.loads *= Z * H;
    w.stores *= Z * H;
    w.mufu *= Z * H;
    w.dram = 2 * Z * H * N * D * 2 + 2 * Z * HK * NK * D * 2 + Z * H * N * 4;
    (void)HK;
    return w;
}

static void check_attention(const char *arch, int64_t Z, int64_t H, int64_t HK, int64_t N, int64_t NK, bool causal)
{
    char dims[128];
    snprintf(dims, sizeof dims, "Z=%lld,H=%lld,HK=%lld,N=%lld,NK=%lld", (long long)Z, (long long)H, (long long)HK,
             (long long)N, (long long)NK);
    Compiled c = compile("attention", arch, dims, causal ? "BM=128,BN=64,CAUSAL=true" : "BM=128,BN=64");
    RoofCounts rc = count(&c);
    AttnWant w = attention_by_hand(Z, H, HK, N, NK, causal, strcmp(arch, "sm_100a") == 0 ? 8 : 0,
                                   strcmp(arch, "sm_90a") == 0);
    ck_assert_int_eq(rc.blocks, grid_blocks(arch, cdiv(N, 128) * Z * H, !causal));
    ck_assert_int_eq(rc.tc_flops, w.flops);
    ck_assert_int_eq(rc.load_bytes, w.loads);
    ck_assert_int_eq(rc.store_bytes, w.stores);
    ck_assert_int_eq(rc.mufu, w.mufu);
    ck_assert_int_eq(rc.dram_bytes, w.dram);
    if (causal)
        ck_assert(rc.block_dependent && rc.sampled == rc.blocks);   /* summed over every block */
    tilec_result_free(c.r);
}

START_TEST(attention_noncausal)
{
    check_attention("sm_90a", 1, 32, 32, 4096, 4096, false);
    /* grouped heads, tails in both the queries and the keys */
    check_attention("sm_90a", 2, 8, 2, 1000, 1500, false);
    /* the same counts on mma.sync (sm_86) and on tcgen05 (sm_100a: tc_mma, tensor memory) */
    check_attention("sm_86", 1, 4, 4, 2048, 2048, false);
    check_attention("sm_100a", 1, 4, 4, 2048, 2048, false);
    ck_assert_int_eq(attention_by_hand(1, 32, 32, 4096, 4096, false, 0, false).flops, 4LL * 32 * 4096 * 4096 * 128);
}
END_TEST

START_TEST(attention_causal)
{
    check_attention("sm_90a", 1, 32, 32, 4096, 4096, true);
    check_attention("sm_90a", 2, 4, 4, 1024, 1024, true);
    check_attention("sm_86", 1, 4, 2, 1000, 1000, true);
    check_attention("sm_100a", 1, 4, 4, 2048, 2048, true);
    /* causal at N = NK: sum over m of (m + 1) BM / BN trips: about half the work */
    AttnWant w = attention_by_hand(1, 32, 32, 4096, 4096, true, 0, false);
    /* 32 heads x 32 query blocks, block m running 2 (m + 1) trips of 64 keys */
    ck_assert_int_eq(w.flops, 32LL * (2 * (32 * 33 / 2)) * 4 * 128 * 64 * 128);
    ck_assert_int_eq(w.flops, attention_by_hand(1, 32, 32, 4096, 4096, false, 0, false).flops * 33 / 64);
}
END_TEST

/* Past the budget of evaluated ops a block-dependent count walks an even
 * sample of blocks (the longest block's walk sets its size) and scales
 * it: causal attention over 32768 queries and keys. */
START_TEST(attention_causal_sampled)
{
    Compiled c = compile("attention", "sm_90a", "Z=1,H=16,HK=16,N=32768,NK=32768", "BM=128,BN=64,CAUSAL=true");
    RoofCounts rc = count(&c);
    AttnWant w = attention_by_hand(1, 16, 16, 32768, 32768, true, 0, true);
    ck_assert_int_eq(rc.blocks, 256 * 16);
    ck_assert(rc.block_dependent);
    ck_assert_int_lt(rc.sampled, rc.blocks);
    ck_assert_int_gt(rc.sampled, 16);
    double err = (double)rc.tc_flops / (double)w.flops - 1.0;
    ck_assert_msg(err < 0.02 && err > -0.02, "sampled FLOPs off by %.3f%%", err * 100);
    ck_assert_int_eq(rc.dram_bytes, w.dram);   /* every tensor still read at least once */
    StrBuf sb = { 0 };
    tc_report_roofline(c.r->arena, &sb, c.r->module, &c.dims, tc_target("sm_90a"), 0);
    ck_assert_ptr_nonnull(strstr(sb.buf, "; estimated from "));
    sb_free(&sb);
    tilec_result_free(c.r);
}
END_TEST

/* ---- what is missing, and the text ---- */

START_TEST(missing_dims_and_text)
{
    Compiled c = compile("gemm", "sm_90a", "M=4096,N=4096,K=4096", NULL);
    PassDims some;
    StrBuf err = { 0 };
    ck_assert_int_eq(pass_dims_parse("N=4096", &some, &err), 0);
    RoofCounts rc;
    const char *why = NULL;
    ck_assert_int_eq(tc_roofline_count(c.r->arena, c.f, &some, 0, &rc, &why), -1);
    ck_assert_str_eq(why, "M, K");
    StrBuf sb = { 0 };
    tc_report_roofline(c.r->arena, &sb, c.r->module, &some, tc_target("sm_90a"), 0);
    ck_assert_ptr_nonnull(strstr(sb.buf, "kernel gemm (sm_90a): dims missing: M, K (give them with --dim"));
    sb_free(&sb);
    tc_report_roofline(c.r->arena, &sb, c.r->module, &c.dims, tc_target("sm_90a"), 0);
    ck_assert_ptr_nonnull(strstr(sb.buf, "kernel gemm (sm_90a), predicted\n"));
    ck_assert_ptr_nonnull(strstr(sb.buf, "  tensor cores: 137438953472 FLOP (137.4 GFLOP)\n"));
    ck_assert_ptr_nonnull(strstr(sb.buf, "bound: tensor cores; predicted time 128.4 us"));
    sb_free(&sb);
    tc_report_roofline(c.r->arena, &sb, NULL, &c.dims, tc_target("sm_90a"), 0);
    ck_assert_ptr_nonnull(strstr(sb.buf, "no kernels"));
    sb_free(&sb);
    tilec_result_free(c.r);
}
END_TEST

/* Every target row has its peak numbers. */
/* ---- gather_rows / scatter_rows: R 16 rows of D 256 bf16 a block ---- */

START_TEST(gather_scatter)
{
    /* The indexed side moves its rows too: gather_rows reads N rows of E
     * (wherever the ids put them) and writes N rows of Y; scatter_rows
     * reads N rows of X and writes N rows of Y. Each row is 512 bytes,
     * whole 32-byte sectors; the ids are read once. */
    const int64_t n = 1 << 20, v = 1 << 20, row = 256 * 2;
    const char *kernels[] = { "gather_rows", "scatter_rows" };
    for (int i = 0; i < 2; i++) {
        Compiled c = compile_kernel("gather_rows", kernels[i], "sm_90a", "V=1048576,N=1048576", NULL);
        RoofCounts rc = count(&c);
        ck_assert_int_eq(rc.blocks, n / 16);
        ck_assert_int_eq(rc.load_bytes, n * 4 + n * row);
        ck_assert_int_eq(rc.store_bytes, n * row);
        ck_assert_int_eq(rc.dram_bytes, n * 4 + n * row + (i == 0 ? n : v) * row);
        RoofTimes t = tc_roofline_times(&rc, tc_target("sm_90a"), 0);
        ck_assert_int_eq(t.bound, RB_MEMORY);
        double want = (double)(n * 4 + 2 * n * row) / 4.8e12;
        ck_assert(t.t[RB_MEMORY] > want * 0.9999 && t.t[RB_MEMORY] < want * 1.0001);
        tilec_result_free(c.r);
    }
    /* Rows of 8 bf16 (16 bytes) at random places: each takes a whole
     * 32-byte sector of the table, the rows written in order do not. */
    Compiled c = compile_kernel("gather_rows", "gather_rows", "sm_90a", "V=1048576,N=4096", "D=8");
    RoofCounts rc = count(&c);
    ck_assert_int_eq(rc.load_bytes, 4096 * 4 + 4096 * 32);
    ck_assert_int_eq(rc.store_bytes, 4096 * 16);
    tilec_result_free(c.r);
}
END_TEST

/* ---- dropout: a Philox4x32-10 counter per four elements on the integer multipliers ---- */

START_TEST(dropout_philox)
{
    /* 2^28 f32 elements: 2 GiB through DRAM (447 us at 4.8 TB/s) and 9
     * IMAD slots an element (roofline.c: a counter's 15 wide and 2 high
     * products at 2 slots and 2 low ones, for four elements) at 64 a clock
     * on 132 SMs at 1980 MHz: 144 us; DRAM is the bound. */
    const int64_t n = (int64_t)1 << 28;
    Compiled c = compile("dropout", "sm_90a", "N=268435456", "T=f32");
    RoofCounts rc = count(&c);
    ck_assert_int_eq(rc.imul, n * 9);
    ck_assert_int_eq(rc.dram_bytes, 2 * n * 4);
    RoofTimes t = tc_roofline_times(&rc, tc_target("sm_90a"), 0);
    ck_assert_int_eq(t.bound, RB_MEMORY);
    double want = 9.0 * (double)n / (64.0 * 132 * 1.98e9);
    ck_assert(t.t[RB_IMUL] > want * 0.9999 && t.t[RB_IMUL] < want * 1.0001);
    ck_assert(t.t[RB_IMUL] > 144e-6 && t.t[RB_IMUL] < 145e-6);
    ck_assert(t.t[RB_MEMORY] > 447e-6 && t.t[RB_MEMORY] < 448e-6);
    tilec_result_free(c.r);
}
END_TEST

START_TEST(target_peaks)
{
    for (int i = 0; i < tc_target_count(); i++) {
        const TargetInfo *t = tc_target_at(i);
        ck_assert_ptr_nonnull(t->peak.device);
        ck_assert_int_gt(t->peak.sms, 0);
        ck_assert_int_gt(t->peak.clock_mhz, 0);
        ck_assert_int_gt(t->peak.mem_gbs, 0);
        ck_assert_int_eq(t->peak.mufu_clk, 16);
        ck_assert_int_eq(t->peak.smem_bytes_clk, 128);
        ck_assert_int_eq(t->peak.imul_clk, 64);
    }
    ck_assert_int_eq(tc_target("sm_90a")->peak.sms, 132);
    ck_assert_int_eq(tc_target("sm_90a")->peak.clock_mhz, 1980);
    ck_assert_int_eq(tc_target("sm_90a")->peak.mem_gbs, 4800);
    ck_assert_int_eq(tc_target("sm_80")->peak.sms, 108);
    ck_assert_int_eq(tc_target("sm_86")->peak.sms, 82);
    ck_assert_int_eq(tc_target("sm_100a")->peak.sms, 148);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("roofline");
    TCase *tc = tcase_create("roofline");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gemm_4096);
    tcase_add_test(tc, gemm_tails_and_arches);
    tcase_add_test(tc, vector_add);
    tcase_add_test(tc, softmax);
    tcase_add_test(tc, attention_noncausal);
    tcase_add_test(tc, attention_causal);
    tcase_add_test(tc, attention_causal_sampled);
    tcase_add_test(tc, missing_dims_and_text);
    tcase_add_test(tc, gather_scatter);
    tcase_add_test(tc, dropout_philox);
    tcase_add_test(tc, target_peaks);
    suite_add_tcase(s, tc);
    return tc_check_run(s);
}
