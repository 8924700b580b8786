/* tilec.c - the command-line compiler: a thin client of libtilec
 * (include/tilec.h) with nvcc/clang conventions.
 *
 * Exit status: 0 success, 1 errors in the input, 2 usage errors, 3 I/O
 * errors, 4 internal compiler errors. Diagnostics, --print-after dumps,
 * --time-passes and --report go to stderr (the report to --report=FILE when
 * given); the output goes to -o FILE or stdout.
 *
 * This file runs the command (compile, --candidates, --clear-cache) and
 * sets up its heap and code pages; the command line is read in
 * cli_args.c and the outputs written in cli_out.c (cli.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__) || defined(__linux__)
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "cli.h"

/* The command's own allocations: out of memory ends it with exit status 4
 * (as TILEC_ERR_NOMEM from the library does), never with a crash. Nothing
 * is allocated while a temporary output file exists. */
void *cli_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("tilec: error: out of memory\n", stderr);
        exit(EXIT_INTERNAL);
    }
    return q;
}


static int exit_code(tilec_status s)
{
    switch (s) {
    case TILEC_OK: return 0;
    case TILEC_ERR_USAGE: return EXIT_USAGE;
    case TILEC_ERR_IO: return EXIT_IO;
    case TILEC_ERR_INTERNAL: case TILEC_ERR_NOMEM: return EXIT_INTERNAL;
    case TILEC_ERR_INPUT: case TILEC_ERR_UNSUPPORTED: return EXIT_INPUT;
    }
    return EXIT_INTERNAL;
}

/* Usage errors found by the library print like the CLI's own. */
static void print_diags(const tilec_result *r)
{
    if (tilec_result_status(r) != TILEC_ERR_USAGE) {
        fputs(tilec_result_diag_text(r), stderr);
        return;
    }
    for (size_t i = 0; i < tilec_result_num_diags(r); i++) {
        const tilec_diag *d = tilec_result_diag(r, i);
        if (d->severity == TILEC_SEV_ERROR)
            fprintf(stderr, "tilec: error: %s (see tilec --help)\n", d->message);
    }
}

static tilec_status compile(const Cli *c, tilec_result **r)
{
    if (strcmp(c->file, "-") != 0)
        return tilec_compile_file(c->file, &c->o, r);
    size_t len = 0;
    char *src = cli_read_stdin(&len);
    if (!src) {
        fprintf(stderr, "tilec: error: cannot read the standard input\n");
        return TILEC_ERR_IO;
    }
    tilec_status st = tilec_compile_string("<stdin>", src, len, &c->o, r);
    free(src);
    return st;
}

/* --candidates: the listing to -o FILE or stdout: the choice's reasons as
 * `#` lines, then `I DEFINES` per candidate. */
static int list_candidates(const Cli *c)
{
    tilec_result *r = NULL;
    tilec_status st;
    if (strcmp(c->file, "-") != 0)
        st = tilec_candidates_file(c->file, &c->o, &r);
    else {
        size_t len = 0;
        char *src = cli_read_stdin(&len);
        st = tilec_candidates_string("<stdin>", src, len, &c->o, &r);
        free(src);
    }
    if (!r)
        return exit_code(st);
    print_diags(r);
    int rc = 0;
    if (st == TILEC_OK) {
        size_t cap = 256, n = 0;
        char *text = cli_realloc(NULL, cap);
        text[0] = 0;
        const char *why = tilec_result_text(r, TILEC_OUT_REPORT);
        for (size_t i = 0; i <= tilec_result_num_candidates(r); i++) {
            const char *line = i == 0 ? why : tilec_result_candidate(r, i - 1);
            size_t need = n + strlen(line ? line : "") + 64;
            if (need > cap)
                text = cli_realloc(text, cap = need * 2);
            if (i == 0)   /* the reasons, each line commented */
                for (const char *p = line; p && *p;) {
                    const char *e = strchr(p, '\n');
                    size_t l = e ? (size_t)(e - p) : strlen(p);
                    n += (size_t)snprintf(text + n, cap - n, "# %.*s\n", (int)l, p);
                    p = e ? e + 1 : NULL;
                }
            else
                n += (size_t)snprintf(text + n, cap - n, "%zu%s%s\n", i - 1, *line ? " " : "", line);
        }
        if (!c->out || strcmp(c->out, "-") == 0)
            fputs(text, stdout);
        else
            rc = cli_write_file(c->out, text);
        free(text);
    }
    tilec_result_free(r);
    return rc ? rc : exit_code(st);
}

static int run(Cli *c)
{
    c->o.defines = c->defs;
    c->o.ndefines = c->ndefs;
    c->o.print_after = c->pa;
    c->o.nprint_after = c->npa;
    c->o.language = c->lang;
    c->o.pass_options = c->popt;
    c->o.dims = c->dims;
    if (c->candidates)
        return list_candidates(c);
    /* The default ptxas checks the PTX; with --no-ptxas it still gives
     * --report its registers (unchecked). */
    if (c->no_ptxas)
        c->o.ptxas = NULL;
    if (!c->o.ptxas && c->o.emit == TILEC_EMIT_PTX && (!c->no_ptxas || c->o.report)) {
        c->ptxas_found = cli_host_ptxas();
        c->o.ptxas = c->ptxas_found;
        c->o.ptxas_no_check = c->no_ptxas;
    }
    tilec_result *r = NULL;
    tilec_status st = compile(c, &r);
    if (!r)
        return exit_code(st);
    print_diags(r);
    const char *dump = tilec_result_text(r, TILEC_OUT_DUMP);
    const char *timing = tilec_result_text(r, TILEC_OUT_TIMING);
    const char *report = tilec_result_text(r, TILEC_OUT_REPORT);
    if (dump)
        fputs(dump, stderr);
    if (timing)
        fputs(timing, stderr);
    int rc = cli_emit_outputs(c, r);
    if (report && c->report_file) {
        int wrc = cli_write_file(c->report_file, report);
        rc = rc ? rc : wrc;
    } else if (report)
        fputs(report, stderr);   /* never mixed into the output on stdout */
    tilec_result_free(r);
    return rc ? rc : exit_code(st);
}

/* --clear-cache: the folder of --cache-dir, or the default one. */
static int clear_cache(const Cli *c)
{
    tilec_status st = tilec_cache_clear(c->o.cache_dir);
    if (st != TILEC_OK)
        fprintf(stderr, "tilec: error: cannot clear the cache folder '%s': %s\n",
                c->o.cache_dir ? c->o.cache_dir : "(none)", strerror(errno));
    return st != TILEC_OK;
}

/* --cache and --clear-cache without --cache-dir: the default folder; with
 * none (no home), the memory cache only. */
static void set_cache_dir(Cli *c)
{
    if (c->o.cache_dir || (c->o.cache != TILEC_CACHE_DISK && !c->clear_cache))
        return;
    c->cache_dir_found = cli_host_cache_dir();
    c->o.cache_dir = c->cache_dir_found;
    if (!c->o.cache_dir && c->o.cache == TILEC_CACHE_DISK)
        c->o.cache = TILEC_CACHE_MEMORY;
}

/* The command's heap (not the library's business: a host process keeps its
 * own allocator settings). A compilation allocates ~35 MB in many small
 * blocks and frees most of them before it exits; where page faults and
 * brk/mmap calls are dear (virtual machines) the default glibc heap cost a
 * fifth of compiling examples/attention.tile. So: grow the heap 64 MB at a
 * time, serve every block below 64 MB from it, never give it back, and ask
 * for transparent huge pages on all of it: the break first moved to a 2 MB
 * boundary (glibc steps over a break moved by someone else), the first
 * 2 MB collapsed after the advice. The threads keep glibc's arenas of their
 * own (one arena shared by both modules of a split compilation cost more in
 * lock waits than a second arena's faults), and theirs gets the same
 * advice (cli_thread_heap).
 * docs/codegen.md, "Compile time of tensor-core kernels" and "Page faults,
 * and the two kernels of sm_90a", has the measurements. */
#ifndef MADV_COLLAPSE
#define TC_MADV_COLLAPSE 25     /* Linux 6.1; older kernels refuse it, harmlessly */
#else
#define TC_MADV_COLLAPSE MADV_COLLAPSE
#endif

#if defined(__GLIBC__) && defined(M_TOP_PAD) && defined(MADV_HUGEPAGE)
#define TC_HUGE_PAGE ((uintptr_t)2 << 20)

/* Huge pages for len bytes at a (2 MB aligned); the first 2 MB, where
 * malloc wrote its headers before the advice, made one huge page now, or
 * it stays 512 small ones. */
static void advise_huge(uintptr_t a, uintptr_t len)
{
    if (madvise((void *)a, len, MADV_HUGEPAGE) == 0 && len >= TC_HUGE_PAGE)
        madvise((void *)a, TC_HUGE_PAGE, TC_MADV_COLLAPSE);
}

/* A thread's malloc arena: glibc maps each in a region of its own aligned
 * to the region's size (64 MB on 64-bit hosts), made writable at once up to
 * the top pad (64 MB above: the whole region). The one made here goes back
 * to glibc's free list when its thread ends, and the library's next
 * thread that allocates (the target machine's, then the second module's
 * of a split compilation) takes it over with the huge-page advice on it:
 * attention sm_90a 2090 -> 870 faults, and even one-module compilations
 * gain (vector_add ~10 -> ~7.7 ms). Advice only: under another allocator
 * (a sanitizer's) the region may not be an arena, and the advice changes
 * no memory's contents wherever it lands. */
#define TC_ARENA_BYTES ((uintptr_t)64 << 20)
static void *arena_advise(void *arg)
{
    (void)arg;
    char *volatile p = malloc(64);      /* volatile: a pair of malloc and free may be elided */
    if (p)
        advise_huge((uintptr_t)p & ~(TC_ARENA_BYTES - 1), TC_ARENA_BYTES);
    free(p);
    return NULL;
}

static void cli_thread_heap(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, arena_advise, NULL) == 0)
        pthread_join(t, NULL);
}
#endif

static void cli_heap(void)
{
#if defined(__GLIBC__) && defined(M_TOP_PAD)
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    mallopt(M_TOP_PAD, 64 << 20);
#if defined(MADV_HUGEPAGE)
    const uintptr_t huge = TC_HUGE_PAGE;
    char *lo = sbrk(0);
    if (lo != (char *)-1) {
        uintptr_t a = ((uintptr_t)lo + huge - 1) & ~(huge - 1);
        if (a > (uintptr_t)lo && sbrk((intptr_t)(a - (uintptr_t)lo)) != (void *)-1)
            lo = (char *)a;
    }
    void *p = malloc(1 << 20);        /* grows the heap by the top pad: lo .. hi */
    char *hi = sbrk(0);
    if (p && lo != (char *)-1 && hi != (char *)-1 && hi > lo) {
        uintptr_t a = ((uintptr_t)lo + huge - 1) & ~(huge - 1);
        if ((uintptr_t)hi > a)
            advise_huge(a, (uintptr_t)hi - a);
    }
    free(p);
    cli_thread_heap();
#endif
#endif
}

/* The command's code (~33 MB of text, most of it LLVM): each first touch
 * of a page is a fault (~20 us of CPU on the build machine, ~550 of a
 * compilation's ~1100); mapping the program's read-only segments in one
 * call (MADV_POPULATE_READ, Linux 5.14, from the page cache) costs ~1.5 ms.
 * Advice only: an older kernel refuses it and the pages fault in as before. */
#if defined(__linux__) && defined(MADV_POPULATE_READ)
static int map_segment(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W))
            continue;
        uintptr_t b = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
        uintptr_t e = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        madvise((void *)b, e - b, MADV_POPULATE_READ);
    }
    return 1;   /* the program itself is the first object; the libraries are small */
}
#endif

static void cli_code(void)
{
#if defined(__linux__) && defined(MADV_POPULATE_READ)
    dl_iterate_phdr(map_segment, NULL);
#endif
}

/* Before the program's static constructors (LLVM registering its options
 * and passes), which have no priority and so run later. */
__attribute__((constructor(101))) static void cli_start(void)
{
    cli_code();
    cli_heap();
}

int main(int argc, char **argv)
{
    Cli c;
    memset(&c, 0, sizeof c);
    tilec_options_init(&c.o);
    int rc = cli_parse_args(&c, argc, argv);
    if (!rc)
        set_cache_dir(&c);
    if (!rc && c.help)
        cli_print_help();
    else if (!rc && c.version)
        printf("tilec %s\n", tilec_version());
    else if (!rc && c.clear_cache && clear_cache(&c) != 0)
        rc = EXIT_IO;
    else if (!rc && !c.file && !c.clear_cache)
        rc = cli_usage_error("%s", "no input file");
    else if (!rc && c.file)
        rc = run(&c);
    for (size_t i = 0; i < c.ndefs; i++)
        free((char *)c.defs[i].name);
    free(c.defs);
    free(c.pa);
    free(c.popt);
    free(c.dims);
    free(c.ptxas_found);
    free(c.cache_dir_found);
    return rc;
}
