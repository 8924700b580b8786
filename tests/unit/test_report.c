/* test_report.c - the resources part of --report (driver/report.c): parsing
 * `ptxas -v` output, the theoretical occupancy against hand-computed
 * cases, running a (stand-in) ptxas without a shell from a temporary
 * directory whose name has spaces and quotes, and the report lines when
 * ptxas or the PTX is missing. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>

#include "check_main.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver/report.h"

/* ---- the ptxas -v parser ---- */

static const char ptxas13[] =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'gemm' for 'sm_90a'\n"
    "ptxas info    : Function properties for gemm\n"
    "    24 bytes stack frame, 20 bytes spill stores, 16 bytes spill loads\n"
    "ptxas info    : Used 255 registers, used 1 barriers, 24 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 574.532 ms\n"
    "ptxas info    : Compiling entry function 'softmax' for 'sm_90a'\n"
    "ptxas info    : Function properties for softmax\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 48 registers, used 0 barriers, 384 bytes smem, 400 bytes cmem[0]\n";

START_TEST(parse_ptxas13)
{
    Arena *a = arena_new();
    PtxasInfo pi = tc_ptxas_parse(a, ptxas13);
    ck_assert_int_eq(pi.n, 2);
    const PtxasFunc *g = tc_ptxas_find(&pi, "gemm");
    ck_assert_ptr_nonnull(g);
    ck_assert(g->entry);
    ck_assert_int_eq(g->regs, 255);
    ck_assert_int_eq(g->barriers, 1);
    ck_assert_int_eq(g->stack, 24);
    ck_assert_int_eq(g->spill_stores, 20);
    ck_assert_int_eq(g->spill_loads, 16);
    ck_assert_int_eq(g->smem, -1);
    ck_assert(g->compile_ms > 574.5 && g->compile_ms < 574.6);
    const PtxasFunc *s = tc_ptxas_find(&pi, "softmax");
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->regs, 48);
    ck_assert_int_eq(s->barriers, 0);
    ck_assert_int_eq(s->smem, 384);
    ck_assert_int_eq(s->spill_stores, 0);
    ck_assert(s->compile_ms < 0);
    ck_assert_ptr_null(tc_ptxas_find(&pi, "attention"));
    arena_free(a);
}
END_TEST

/* Older ptxas: no "Compiling entry" line for a callee, no barriers item;
 * a callee's properties come first and must not be given to the entry. */
START_TEST(parse_callee_and_old_format)
{
    static const char text[] =
        "ptxas info    : Function properties for helper\n"
        "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Compiling entry function 'k' for 'sm_86'\n"
        "ptxas info    : Function properties for k\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 32 registers, 1024 bytes smem, 352 bytes cmem[0]";   /* no final newline */
    Arena *a = arena_new();
    PtxasInfo pi = tc_ptxas_parse(a, text);
    ck_assert_int_eq(pi.n, 2);
    const PtxasFunc *h = tc_ptxas_find(&pi, "helper");
    ck_assert(!h->entry);
    ck_assert_int_eq(h->stack, 8);
    ck_assert_int_eq(h->regs, -1);
    const PtxasFunc *k = tc_ptxas_find(&pi, "k");
    ck_assert(k->entry);
    ck_assert_int_eq(k->regs, 32);
    ck_assert_int_eq(k->barriers, -1);
    ck_assert_int_eq(k->smem, 1024);
    ck_assert_int_eq(k->stack, 0);
    arena_free(a);
}
END_TEST

START_TEST(parse_garbage)
{
    Arena *a = arena_new();
    ck_assert_int_eq(tc_ptxas_parse(a, NULL).n, 0);
    ck_assert_int_eq(tc_ptxas_parse(a, "").n, 0);
    ck_assert_int_eq(tc_ptxas_parse(a, "ptxas fatal   : Unresolved extern function 'f'\n").n, 0);
    PtxasInfo pi = tc_ptxas_parse(a, "ptxas info    : Compiling entry function 'x\n"
                                     "ptxas info    : Used -3 registers, used 99999999999999 barriers\n");
    ck_assert_int_eq(pi.n, 1);
    ck_assert_str_eq(pi.funcs[0].name, "x");
    ck_assert_int_eq(pi.funcs[0].regs, -1);
    ck_assert_int_eq(pi.funcs[0].barriers, -1);
    arena_free(a);
}
END_TEST

/* ---- occupancy, by hand ---- */

START_TEST(arch_table)
{
    const TargetInfo *h = tc_target("sm_90a");
    ck_assert_ptr_nonnull(h);
    ck_assert_int_eq(h->lim.smem_per_sm, 233472);
    ck_assert_int_eq(h->lim.smem_per_block, 232448);
    ck_assert_int_eq(tc_target("sm_86")->lim.threads_per_sm, 1536);
    ck_assert_int_eq(tc_target("sm_100f")->lim.blocks_per_sm, 32);
    ck_assert_ptr_nonnull(tc_target("sm_90"));
    ck_assert_ptr_nonnull(tc_target("sm_100a"));
    ck_assert_ptr_null(tc_target("sm_100"));   /* never a resolved target */
    ck_assert_ptr_null(tc_target("sm_70"));
    ck_assert_ptr_null(tc_target(NULL));
}
END_TEST

START_TEST(occupancy_registers)
{
    const TargetInfo *h = tc_target("sm_90");
    /* 255 regs: 255*32 = 8160 -> 8192 per warp; 16384 per sub-partition
     * holds 2 warps -> 8 warps/SM -> 2 blocks of 4 warps; 8/64 = 12.5%. */
    Occupancy o = tc_occupancy(h, 128, 255, 0);
    ck_assert_int_eq(o.regs_per_warp, 8192);
    ck_assert_int_eq(o.blocks, 2);
    ck_assert_int_eq(o.warps, 8);
    ck_assert_int_eq(o.max_warps, 64);
    ck_assert(o.percent > 12.49 && o.percent < 12.51);
    ck_assert_int_eq(o.limiters, OCC_REGS);
    /* 48 regs: 1536 per warp; 16384/1536 = 10 per sub-partition -> 40
     * warps -> 10 blocks (block slots 32, threads 16 blocks) = 62.5%. */
    o = tc_occupancy(h, 128, 48, 0);
    ck_assert_int_eq(o.regs_per_warp, 1536);
    ck_assert_int_eq(o.blocks, 10);
    ck_assert_int_eq(o.warps, 40);
    ck_assert(o.percent > 62.49 && o.percent < 62.51);
    ck_assert_int_eq(o.limiters, OCC_REGS);
    /* 32 regs: 1024 per warp -> 64 warps: registers and threads tie at 16. */
    o = tc_occupancy(h, 128, 32, 0);
    ck_assert_int_eq(o.blocks, 16);
    ck_assert_int_eq(o.limiters, OCC_REGS | OCC_THREADS);
    ck_assert(o.percent > 99.9);
}
END_TEST

START_TEST(occupancy_shared_memory)
{
    /* attention on sm_90a: 256 threads, 245 regs (7840 -> 7936 per warp,
     * 2 per sub-partition -> 8 warps -> 1 block), 163840 B + 1 KB reserved
     * = 164864 B (233472 / 164864 -> 1 block): both limit, 8/64 warps. */
    Occupancy o = tc_occupancy(tc_target("sm_90a"), 256, 245, 163840);
    ck_assert_int_eq(o.regs_per_warp, 7936);
    ck_assert_int_eq(o.smem_per_block, 164864);
    ck_assert_int_eq(o.blocks, 1);
    ck_assert_int_eq(o.warps, 8);
    ck_assert_int_eq(o.limiters, OCC_REGS | OCC_SMEM);
    /* sm_86, 256 threads, 32 regs, 48 KB: registers 8 blocks, threads
     * 48/8 = 6, shared memory 102400 / 50176 = 2 -> 16 of 48 warps. */
    o = tc_occupancy(tc_target("sm_86"), 256, 32, 49152);
    ck_assert_int_eq(o.blocks, 2);
    ck_assert_int_eq(o.warps, 16);
    ck_assert_int_eq(o.max_warps, 48);
    ck_assert_int_eq(o.limiters, OCC_SMEM);
    ck_assert(o.percent > 33.33 && o.percent < 33.34);
    /* Shared memory is counted in 128-byte units: 100 + 1024 -> 1152. */
    o = tc_occupancy(tc_target("sm_90a"), 128, 32, 100);
    ck_assert_int_eq(o.smem_per_block, 1152);
}
END_TEST

START_TEST(occupancy_blocks_and_unknown_registers)
{
    /* sm_86, one warp per block, 67 regs (2144 -> 2304; 7 per sub-partition
     * -> 28 warps): the 16 block slots limit first -> 16/48 warps. */
    Occupancy o = tc_occupancy(tc_target("sm_86"), 32, 67, 0);
    ck_assert_int_eq(o.blocks, 16);
    ck_assert_int_eq(o.limiters, OCC_BLOCKS);
    /* Registers unknown: only threads, slots and shared memory count. */
    o = tc_occupancy(tc_target("sm_90a"), 1024, -1, 0);
    ck_assert_int_eq(o.blocks, 2);
    ck_assert_int_eq(o.warps, 64);
    ck_assert_int_eq(o.limiters, OCC_THREADS);
    /* 40 threads round up to 2 warps. */
    o = tc_occupancy(tc_target("sm_90a"), 40, 32, 0);
    ck_assert_int_eq(o.warps_per_block, 2);
}
END_TEST

START_TEST(occupancy_cannot_run)
{
    const TargetInfo *h = tc_target("sm_90a");
    Occupancy o = tc_occupancy(h, 128, 32, 232449);        /* 1 B over the opt-in maximum */
    ck_assert_int_eq(o.blocks, 0);
    ck_assert_ptr_nonnull(strstr(o.why_zero, "shared memory"));
    ck_assert_int_eq(tc_occupancy(h, 128, 32, 232448).blocks, 1);
    o = tc_occupancy(h, 1024, 255, 0);                      /* 32 warps x 8192 > 65536 */
    ck_assert_int_eq(o.blocks, 0);
    ck_assert_ptr_nonnull(strstr(o.why_zero, "registers per block"));
    o = tc_occupancy(h, 2048, 16, 0);
    ck_assert_int_eq(o.blocks, 0);
    ck_assert_ptr_nonnull(strstr(o.why_zero, "1024 threads"));
}
END_TEST

/* ---- running ptxas ---- */

/* A stand-in ptxas in a directory whose name has spaces and quotes: it
 * checks it got exactly its 5 arguments (the PTX path, however named, is
 * one argument) and that the PTX file holds what was given, then prints
 * ptxas -v lines to stderr. */
static char *fake_ptxas(char *dir)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    static char path[512];
    snprintf(path, sizeof path, "%s/fake ptxas", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("#!/bin/sh\n"
          "[ $# -eq 5 ] && [ \"$1\" = -arch=sm_90a ] && [ \"$2\" = -v ] || { echo 'ptxas fatal   : bad args' >&2; exit 1; }\n"
          "grep -q '.entry k' \"$5\" || { echo 'ptxas error   : no entry' >&2; exit 2; }\n"
          "echo \"ptxas info    : Compiling entry function 'k' for 'sm_90a'\" >&2\n"
          "echo 'ptxas info    : Function properties for k' >&2\n"
          "echo '    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads' >&2\n"
          "echo 'ptxas info    : Used 40 registers, used 1 barriers' >&2\n",
          f);
    fclose(f);
    chmod(path, 0755);
    return path;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

START_TEST(run_without_shell)
{
    char dir[] = "/tmp/tilec test '$(x)' ;XXXXXX";
    const char *ptxas = fake_ptxas(dir);
    Arena *a = arena_new();
    const char *log = NULL;
    ck_assert_int_eq(tc_ptxas_run(a, ptxas, "sm_90a", ".visible .entry k()\n{\n}\n", &log), 0);
    PtxasInfo pi = tc_ptxas_parse(a, log);
    ck_assert_int_eq(tc_ptxas_find(&pi, "k")->regs, 40);
    ck_assert_int_eq(count_entries(dir), 1);                 /* temporaries removed */
    ck_assert_int_eq(tc_ptxas_run(a, ptxas, "sm_90a", "// nothing\n", &log), -1);
    ck_assert_str_eq(log, "ptxas error   : no entry");
    ck_assert_int_eq(tc_ptxas_run(a, ptxas, "sm_86", ".entry k", &log), -1);
    ck_assert_str_eq(log, "ptxas fatal   : bad args");
    ck_assert_int_eq(count_entries(dir), 1);
    arena_free(a);
    unlink(ptxas);
    rmdir(dir);
}
END_TEST


/* ---- the report text ---- */

static const char meta2[] = "tilec-meta 1\nkernel a\narch sm_90a\nthreads 128\nsmem 98304\nend\n"
                            "kernel b\narch sm_90a\nthreads 32\nsmem 0\nend\n";

START_TEST(report_without_ptx_or_ptxas)
{
    Arena *a = arena_new();
    StrBuf sb = { 0 };
    tc_report_resources(a, &sb, "sm_90a", meta2, NULL, NULL, NULL);
    ck_assert_ptr_nonnull(strstr(sb.buf, "kernel a (sm_90a)\n  threads: 128 per block (4 warps)\n"));
    ck_assert_ptr_nonnull(strstr(sb.buf, "kernel b (sm_90a)\n  threads: 32 per block (1 warp)\n"));
    ck_assert_ptr_nonnull(strstr(sb.buf, "registers: unknown (no PTX was produced"));
    /* 98304 + 1024 B: 233472 / 99328 = 2 blocks, 8 warps. */
    ck_assert_ptr_nonnull(strstr(sb.buf, "occupancy: at most 2 blocks/SM, 8 warps/SM of 64, 12.5%; "
                                         "limited by shared memory: 99328 B per block (registers not counted)"));
    sb_free(&sb);
    tc_report_resources(a, &sb, "sm_90a", meta2, ".entry a", NULL, NULL);   /* no ptxas given */
    ck_assert_ptr_nonnull(strstr(sb.buf, "registers: unknown (ptxas not found; set TILEC_PTXAS or --ptxas=PATH"));
    sb_free(&sb);
    tc_report_resources(a, &sb, "sm_90a", NULL, NULL, NULL, NULL);
    ck_assert_ptr_nonnull(strstr(sb.buf, "no kernels compiled"));
    sb_free(&sb);
    arena_free(a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("report");
    tcase_add_test(tc, parse_ptxas13);
    tcase_add_test(tc, parse_callee_and_old_format);
    tcase_add_test(tc, parse_garbage);
    tcase_add_test(tc, arch_table);
    tcase_add_test(tc, occupancy_registers);
    tcase_add_test(tc, occupancy_shared_memory);
    tcase_add_test(tc, occupancy_blocks_and_unknown_registers);
    tcase_add_test(tc, occupancy_cannot_run);
    tcase_add_test(tc, run_without_shell);
    tcase_add_test(tc, report_without_ptx_or_ptxas);
    suite_add_tcase(s, tc);
    return tc_check_run(s);
}
