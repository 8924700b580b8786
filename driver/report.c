/* report.c - the `== resources ==` section of `tilec --report`: per kernel,
 * threads, registers and spills (from `ptxas -v` where a ptxas is found),
 * shared memory per block, and the theoretical occupancy on the target.
 *
 * ptxas (tilec_options.ptxas: the library looks nothing up) runs only when
 * a report is asked for or the PTX is checked, and PTX was produced: the PTX
 * goes to an anonymous memory file (memfd_create, named to ptxas as
 * /proc/self/fd/N; a private mkstemp file under /tmp where there is no
 * memfd or no /proc), ptxas is started with posix_spawn and an argument
 * vector (no shell, so no file name is ever interpreted) and the process's
 * environment, and its stdout and stderr go to a second such file. No
 * setting is read from the environment.
 *
 * Occupancy follows the CUDA occupancy calculator: registers are allocated
 * per warp in units of 256 within each of the SM's 4 sub-partitions; shared
 * memory per block is static + dynamic + the driver's per-block reservation,
 * in 128-byte units; the per-arch limits are the target's TargetInfo.
 */
#define _GNU_SOURCE
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ptxas inherits the process's environment, as any program it starts;
 * nothing here reads it. */
extern char **environ;

/* ---- parsing `ptxas -v` ---- */

static PtxasFunc *func_get(Arena *a, PtxasInfo *pi, const char *name, size_t len)
{
    for (int i = 0; i < pi->n; i++)
        if (strlen(pi->funcs[i].name) == len && strncmp(pi->funcs[i].name, name, len) == 0)
            return &pi->funcs[i];
    pi->funcs = arena_grow(a, pi->funcs, sizeof *pi->funcs, (size_t)pi->n, (size_t)pi->n + 1);
    PtxasFunc *f = &pi->funcs[pi->n++];
    *f = (PtxasFunc){ arena_strndup(a, name, len), false, -1, -1, -1, -1, -1, -1, -1.0 };
    return f;
}

static bool starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* One comma-separated item: "Used N registers", "used N barriers",
 * "N bytes smem", "N bytes stack frame", "N bytes spill stores/loads". */
static void parse_item(PtxasFunc *f, const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    bool used = starts(s, "Used ") || starts(s, "used ");
    if (used)
        s += 5;
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < 0 || v > INT_MAX)
        return;
    s = end;
    if (used && starts(s, " register"))
        f->regs = (int)v;
    else if (used && starts(s, " barrier"))
        f->barriers = (int)v;
    else if (starts(s, " bytes smem"))
        f->smem = (int)v;
    else if (starts(s, " bytes stack frame"))
        f->stack = (int)v;
    else if (starts(s, " bytes spill stores"))
        f->spill_stores = (int)v;
    else if (starts(s, " bytes spill loads"))
        f->spill_loads = (int)v;
}

static void parse_items(PtxasFunc *f, const char *s, const char *e)
{
    char item[256];
    while (s < e) {
        const char *c = memchr(s, ',', (size_t)(e - s));
        size_t n = (size_t)((c ? c : e) - s);
        if (n >= sizeof item)
            n = sizeof item - 1;
        memcpy(item, s, n);
        item[n] = 0;
        parse_item(f, item);
        s = c ? c + 1 : e;
    }
}

/* The message of a "ptxas info    : MSG" line, else the line itself. */
static const char *info_msg(const char *s, const char *e)
{
    if (!starts(s, "ptxas info"))
        return s;
    const char *c = memchr(s, ':', (size_t)(e - s));
    if (!c)
        return s;
    for (c++; c < e && *c == ' '; c++)
        ;
    return c;
}

/* One line; *cur is the function the last "Compiling entry function" or
 * "Function properties for" line named (the lines after it describe it). */
static void parse_line(Arena *a, PtxasInfo *pi, PtxasFunc **cur, const char *s, const char *e)
{
    const char *m = info_msg(s, e);
    if (starts(m, "Compiling entry function '")) {
        m += strlen("Compiling entry function '");
        const char *q = memchr(m, '\'', (size_t)(e - m));
        *cur = func_get(a, pi, m, (size_t)((q ? q : e) - m));
        (*cur)->entry = true;
    } else if (starts(m, "Function properties for ")) {
        m += strlen("Function properties for ");
        const char *t = e;
        while (t > m && (t[-1] == ' ' || t[-1] == '\r' || t[-1] == ':'))
            t--;
        *cur = func_get(a, pi, m, (size_t)(t - m));
    } else if (*cur && starts(m, "Compile time =")) {
        (*cur)->compile_ms = strtod(m + strlen("Compile time ="), NULL);
    } else if (*cur) {
        parse_items(*cur, m, e);
    }
}

PtxasInfo tc_ptxas_parse(Arena *a, const char *text)
{
    PtxasInfo pi = { 0 };
    PtxasFunc *cur = NULL;
    const char *s = text ? text : "";
    while (*s) {
        const char *e = strchr(s, '\n');
        if (!e)
            e = s + strlen(s);
        parse_line(a, &pi, &cur, s, e);
        s = *e ? e + 1 : e;
    }
    return pi;
}

const PtxasFunc *tc_ptxas_find(const PtxasInfo *pi, const char *name)
{
    for (int i = 0; i < pi->n; i++)
        if (strcmp(pi->funcs[i].name, name) == 0)
            return &pi->funcs[i];
    return NULL;
}

/* ---- finding and running ptxas ---- */

bool tc_is_executable(const char *path)
{
    struct stat st;
    return path && *path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* A private file for the PTX or ptxas's output, at or above fd 3 and
 * close-on-exec (so that a ptxas another thread starts meanwhile does not
 * inherit it): an anonymous memory file, or (no memfd_create, or no /proc
 * to name it through) a mkstemp file under /tmp, whose name goes to
 * `path` (else path is ""). */
static int private_file(char *path)
{
    path[0] = 0;
    int fd = -1;
#ifdef MFD_CLOEXEC
    struct stat st;
    if (stat("/proc/self/fd", &st) == 0)
        fd = memfd_create("tilec-ptxas", MFD_CLOEXEC);
#endif
    if (fd < 0) {
        snprintf(path, PATH_MAX, "/tmp/tilec-ptxas-XXXXXX");
        fd = mkostemp(path, O_CLOEXEC);
        if (fd < 0)
            return -1;
    }
    if (fd < 3) {   /* a host that closed its stdin, stdout or stderr */
        int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        close(fd);
        fd = hi;
    }
    return fd;
}

static void private_file_close(int fd, const char *path)
{
    if (fd >= 0)
        close(fd);
    if (path[0])
        unlink(path);
}

/* Start ptxas on ptx_path (the file at ptx_fd: its own name, or
 * /proc/self/fd/PTX_CHILD_FD in the child) with stdout and stderr into
 * log_fd; its exit status, or -1. */
enum { PTX_CHILD_FD = 3 };

static int spawn_wait(const char *ptxas, const char *arch, const char *ptx_path, int ptx_fd, int log_fd)
{
    char archopt[64];
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    char *argv[] = { (char *)ptxas, archopt, "-v", "-o", "/dev/null", (char *)ptx_path, NULL };
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, log_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
    /* After the log's: log_fd may be PTX_CHILD_FD itself. dup2 clears
     * close-on-exec on the copy; when ptx_fd already is PTX_CHILD_FD the
     * copy is made through a second number. */
    if (ptx_fd == PTX_CHILD_FD) {
        posix_spawn_file_actions_adddup2(&fa, ptx_fd, PTX_CHILD_FD + 1);
        posix_spawn_file_actions_adddup2(&fa, PTX_CHILD_FD + 1, PTX_CHILD_FD);
    } else {
        posix_spawn_file_actions_adddup2(&fa, ptx_fd, PTX_CHILD_FD);
    }
    pid_t pid;
    int rc = posix_spawn(&pid, ptxas, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The whole of the file at fd, from its start. */
static const char *read_back(Arena *a, int fd)
{
    StrBuf sb = { 0 };
    char buf[4096];
    ssize_t n;
    if (lseek(fd, 0, SEEK_SET) == 0)
        while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
            if (n > 0)
                sb_putn(&sb, buf, (size_t)n);
    const char *text = sb.buf ? arena_strndup(a, sb.buf, sb.len) : "";
    sb_free(&sb);
    return text;
}

/* The line to show when ptxas failed: its first error, else its first line,
 * without the temporary file's name ("ptxas /tmp/tilec-ptxas-X, line 3;
 * fatal : ..." -> "line 3; fatal : ..."). */
static const char *first_error(Arena *a, const char *log, int rc, const char *ptx_path)
{
    if (!*log)
        return arena_printf(a, "exit status %d, no output", rc);
    const char *s = strstr(log, "error");
    if (!s)
        s = strstr(log, "fatal");
    const char *b = s ? s : log;
    while (b > log && b[-1] != '\n')
        b--;
    const char *e = strchr(b, '\n');
    size_t pn = strlen(ptx_path);
    if (strncmp(b, "ptxas ", 6) == 0 && strncmp(b + 6, ptx_path, pn) == 0 && strncmp(b + 6 + pn, ", ", 2) == 0)
        b += 6 + pn + 2;
    size_t n = e ? (size_t)(e - b) : strlen(b);
    return n ? arena_strndup(a, b, n) : "no output";
}

/* The two private files of a ptxas run (private_file: memory files, or
 * files under /tmp whose names are kept): closed and removed at its end,
 * or by the unwinding of an out-of-memory (lib/alloc.h). */
typedef struct PtxasFiles {
    char ptx_file[PATH_MAX], log_file[PATH_MAX];
    int pfd, lfd;
} PtxasFiles;

static void ptxas_files_drop(void *p)
{
    PtxasFiles *t = p;
    private_file_close(t->pfd, t->ptx_file);
    private_file_close(t->lfd, t->log_file);
    t->pfd = t->lfd = -1;
    t->ptx_file[0] = t->log_file[0] = 0;
}

int tc_ptxas_run(Arena *a, const char *ptxas, const char *arch, const char *ptx, const char **log)
{
    PtxasFiles t;
    t.lfd = -1;
    t.log_file[0] = 0;
    t.pfd = private_file(t.ptx_file);
    if (t.pfd < 0) {
        *log = arena_printf(a, "cannot create a temporary file: %s", strerror(errno));
        return -1;
    }
    TcCleanup cl;
    tc_cleanup_push(&cl, ptxas_files_drop, &t);
    t.lfd = private_file(t.log_file);
    char ptx_path[PATH_MAX];
    if (t.ptx_file[0])
        snprintf(ptx_path, sizeof ptx_path, "%s", t.ptx_file);
    else
        snprintf(ptx_path, sizeof ptx_path, "/proc/self/fd/%d", PTX_CHILD_FD);
    bool ok = t.lfd >= 0 && tc_write_all(t.pfd, ptx, strlen(ptx));
    int rc = ok ? spawn_wait(ptxas, arch, ptx_path, t.pfd, t.lfd) : -1;
    *log = t.lfd >= 0 ? read_back(a, t.lfd) : "";
    tc_cleanup_pop(&cl);
    ptxas_files_drop(&t);
    if (rc == 0)
        return 0;
    *log = !ok ? "cannot write the PTX to a temporary file"
         : rc < 0 ? arena_printf(a, "could not run %s", ptxas) : first_error(a, *log, rc, ptx_path);
    return -1;
}

/* ---- occupancy ---- */

static int round_up(int x, int unit) { return (x + unit - 1) / unit * unit; }

/* The per-block limits: a block that breaks one cannot launch at all. */
static const char *block_misfit(const TargetInfo *al, int threads, int regs, int smem, int regs_per_warp)
{
    if (threads > 1024)
        return "more than 1024 threads per block";
    if (regs > al->lim.regs_per_thread)
        return "more registers per thread than the target has";
    if (regs > 0 && regs_per_warp * round_up(threads, 32) / 32 > al->lim.regs_per_block)
        return "more registers per block than the target has";
    if (smem > al->lim.smem_per_block)
        return "more shared memory per block than the target allows";
    return NULL;
}

Occupancy tc_occupancy(const TargetInfo *al, int threads, int regs, int smem)
{
    Occupancy o = { 0 };
    o.warps_per_block = threads > 0 ? round_up(threads, 32) / 32 : 1;
    o.max_warps = al->lim.threads_per_sm / 32;
    o.smem_per_block = round_up((smem > 0 ? smem : 0) + al->lim.smem_reserved, 128);
    int by[4] = { o.max_warps / o.warps_per_block, al->lim.blocks_per_sm, INT_MAX,
                  al->lim.smem_per_sm / o.smem_per_block };
    if (regs >= 0) {
        o.regs_per_warp = round_up((regs > 0 ? regs : 1) * 32, 256);
        int warps = al->lim.regs_per_sm / 4 / o.regs_per_warp * 4;   /* 4 sub-partitions */
        by[2] = warps / o.warps_per_block;
    }
    o.why_zero = block_misfit(al, threads, regs, smem, o.regs_per_warp);
    int blocks = INT_MAX;
    for (int i = 0; i < 4; i++)
        blocks = by[i] < blocks ? by[i] : blocks;
    o.blocks = o.why_zero ? 0 : blocks;
    for (int i = 0; i < 4 && !o.why_zero; i++)
        if (by[i] == blocks)
            o.limiters |= 1 << i;   /* OCC_THREADS, OCC_BLOCKS, OCC_REGS, OCC_SMEM */
    if (o.blocks == 0 && !o.why_zero)
        o.why_zero = (o.limiters & OCC_REGS) ? "not enough registers on the SM" : "not enough shared memory on the SM";
    o.warps = o.blocks * o.warps_per_block;
    o.percent = 100.0 * o.warps / o.max_warps;
    return o;
}

/* ---- the report ---- */

typedef struct MetaKernel {
    const char *name;
    int threads, smem;
} MetaKernel;

/* The kernels of the metadata text: name, threads, dynamic smem. */
static int meta_kernels(Arena *a, const char *meta, MetaKernel **out)
{
    int n = 0;
    MetaKernel *k = NULL;
    for (const char *s = meta ? meta : ""; *s;) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > 7 && starts(s, "kernel ")) {
            k = arena_grow(a, k, sizeof *k, (size_t)n, (size_t)n + 1);
            k[n++] = (MetaKernel){ arena_strndup(a, s + 7, len - 7), 0, 0 };
        } else if (n && starts(s, "threads ")) {
            k[n - 1].threads = atoi(s + 8);
        } else if (n && starts(s, "smem ")) {
            k[n - 1].smem = atoi(s + 5);
        }
        s = e ? e + 1 : s + len;
    }
    *out = k;
    return n;
}

static void put_limiters(StrBuf *out, const Occupancy *o, const MetaKernel *k, const PtxasFunc *f)
{
    const char *sep = "";
    sb_puts(out, "; limited by ");
    if (o->limiters & OCC_REGS) {
        sb_printf(out, "registers: %d regs x %d threads", f->regs, k->threads);
        sep = ", and ";
    }
    if (o->limiters & OCC_SMEM) {
        sb_printf(out, "%sshared memory: %d B per block", sep, o->smem_per_block);
        sep = ", and ";
    }
    if (o->limiters & OCC_THREADS) {
        sb_printf(out, "%sthreads: %d per block", sep, k->threads);
        sep = ", and ";
    }
    if (o->limiters & OCC_BLOCKS)
        sb_printf(out, "%sblocks per SM: %d", sep, o->blocks);
}

static void put_occupancy(StrBuf *out, const TargetInfo *al, const MetaKernel *k, const PtxasFunc *f)
{
    int regs = f ? f->regs : -1;
    int smem = k->smem + (f && f->smem > 0 ? f->smem : 0);
    Occupancy o = tc_occupancy(al, k->threads, regs, smem);
    if (o.blocks == 0) {
        sb_printf(out, "  occupancy: 0 (the block cannot run on %s: %s)\n", al->name, o.why_zero);
        return;
    }
    sb_printf(out, "  occupancy: %s%d block%s/SM, %d warps/SM of %d, %.1f%%", regs < 0 ? "at most " : "",
              o.blocks, o.blocks == 1 ? "" : "s", o.warps, o.max_warps, o.percent);
    put_limiters(out, &o, k, f);
    if (regs < 0)
        sb_puts(out, " (registers not counted)");
    sb_putc(out, '\n');
}

static void put_ptxas_lines(StrBuf *out, const PtxasFunc *f)
{
    sb_printf(out, "  registers: %d per thread", f->regs);
    if (f->barriers >= 0)
        sb_printf(out, ", %d barrier%s", f->barriers, f->barriers == 1 ? "" : "s");
    sb_putc(out, '\n');
    if (f->spill_stores > 0 || f->spill_loads > 0)
        sb_printf(out, "  spills: %d B stores, %d B loads (%d B stack frame)\n", f->spill_stores,
                  f->spill_loads, f->stack > 0 ? f->stack : 0);
    else
        sb_printf(out, "  spills: none (%d B stack frame)\n", f->stack > 0 ? f->stack : 0);
}

static void put_kernel(StrBuf *out, const TargetInfo *al, const char *arch, const MetaKernel *k,
                       const PtxasFunc *f, const char *why)
{
    sb_printf(out, "kernel %s (%s)\n", k->name, arch);
    int warps = (k->threads + 31) / 32;
    sb_printf(out, "  threads: %d per block (%d warp%s)\n", k->threads, warps, warps == 1 ? "" : "s");
    if (f && f->regs >= 0)
        put_ptxas_lines(out, f);
    else
        sb_printf(out, "  registers: unknown (%s)\n", f ? "ptxas did not report them" : why);
    int st = f && f->smem > 0 ? f->smem : 0;
    sb_printf(out, "  shared memory: %d B dynamic + %d B static", k->smem, st);
    if (al)
        sb_printf(out, " + %d B reserved per block (max %d B per block, %d B per SM)", al->lim.smem_reserved,
                  al->lim.smem_per_block, al->lim.smem_per_sm);
    sb_putc(out, '\n');
    if (al)
        put_occupancy(out, al, k, f && f->regs >= 0 ? f : NULL);
    else
        sb_printf(out, "  occupancy: unknown (no SM limits for %s)\n", arch);
    if (f && f->compile_ms >= 0)
        sb_printf(out, "  ptxas time: %.1f ms\n", f->compile_ms);
}

/* Run `ptxas` on the PTX (unless `done` holds that run already); *why says
 * why there is no information. */
static PtxasInfo ptxas_info(Arena *a, const char *arch, const char *ptx, const char *ptxas, const PtxasRun *done,
                            const char **why)
{
    PtxasInfo pi = { 0 };
    const char *log = done ? done->log : "";
    if (!ptx && !done) {
        *why = "no PTX was produced; ptxas runs on --emit=ptx";
    } else if (!ptxas && !done) {
        *why = "ptxas not found; set TILEC_PTXAS or --ptxas=PATH (tilec_options.ptxas in the C API)";
    } else if (done ? done->rc != 0 : tc_ptxas_run(a, ptxas, arch, ptx, &log) != 0) {
        *why = arena_printf(a, "ptxas failed: %s", log);
    } else {
        pi = tc_ptxas_parse(a, log);
        *why = "ptxas did not describe this kernel";
    }
    return pi;
}

void tc_report_resources(Arena *a, StrBuf *out, const char *arch, const char *meta, const char *ptx,
                         const char *ptxas, const PtxasRun *done)
{
    MetaKernel *ks;
    int n = meta_kernels(a, meta, &ks);
    if (n == 0 || !arch) {
        sb_puts(out, "no kernels compiled (resources are known after code generation)\n");
        return;
    }
    const char *why = "";
    PtxasInfo pi = ptxas_info(a, arch, ptx, ptxas, done, &why);
    const TargetInfo *al = tc_target(arch);
    for (int i = 0; i < n; i++)
        put_kernel(out, al, arch, &ks[i], tc_ptxas_find(&pi, ks[i].name), why);
}
