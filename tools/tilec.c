/* tilec.c - the command-line compiler: a thin client of libtilec
 * (include/tilec.h) with nvcc/clang conventions.
 *
 * Exit status: 0 success, 1 errors in the input, 2 usage errors, 3 I/O
 * errors, 4 internal compiler errors. Diagnostics, --print-after dumps,
 * --time-passes and --report go to stderr (the report to --report=FILE when
 * given); the output goes to -o FILE or stdout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__) || defined(__linux__)
#include <link.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "tilec.h"

enum { EXIT_INPUT = 1, EXIT_USAGE = 2, EXIT_IO = 3, EXIT_INTERNAL = 4 };

/* The command's own allocations: out of memory ends it with exit status 4
 * (as TILEC_ERR_NOMEM from the library does), never with a crash. Nothing
 * is allocated while a temporary output file exists. */
static void *cli_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("tilec: error: out of memory\n", stderr);
        exit(EXIT_INTERNAL);
    }
    return q;
}

typedef struct Cli {
    tilec_options o;
    const char *file;
    const char *out;
    const char *lang;
    tilec_define *defs; size_t ndefs;
    const char **pa; size_t npa;
    char *popt;               /* --pass-option entries, comma-joined (heap) */
    char *dims;               /* --dim entries, comma-joined (heap) */
    int help, version;
    int clear_cache;          /* --clear-cache */
    int candidates;           /* --candidates: list the tile choice's candidates, compile nothing */
    int emit_meta;            /* --emit=meta: the metadata is the output */
    const char *report_file;  /* --report=FILE */
    int no_ptxas;             /* --no-ptxas */
    char *ptxas_found;        /* the default ptxas (host_ptxas), heap */
    char *cache_dir_found;    /* the default cache folder (host_cache_dir), heap */
} Cli;

/* ---- the host's settings: the environment is read here, not in libtilec ---- */

static bool is_executable(const char *path)
{
    struct stat st;
    return path && *path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    return d ? memcpy(d, s, n) : NULL;
}

/* The ptxas the command checks its PTX with unless told otherwise
 * (--ptxas=PATH, --no-ptxas): $TILEC_PTXAS when set (none if that is not
 * an executable file), else `ptxas` on $PATH, else
 * /usr/local/cuda/bin/ptxas; NULL when none exists. Heap. */
static char *host_ptxas(void)
{
    const char *env = getenv("TILEC_PTXAS");
    if (env && *env)
        return is_executable(env) ? dup_str(env) : NULL;
    for (const char *p = getenv("PATH"); p && *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char *cand = malloc(n + sizeof "/ptxas");
        if (n && cand) {
            snprintf(cand, n + sizeof "/ptxas", "%.*s/ptxas", (int)n, p);
            if (is_executable(cand))
                return cand;
        }
        free(cand);
        p = e ? e + 1 : NULL;
    }
    return is_executable("/usr/local/cuda/bin/ptxas") ? dup_str("/usr/local/cuda/bin/ptxas") : NULL;
}

/* The cache folder of --cache without --cache-dir (docs/cache.md):
 * $XDG_CACHE_HOME/tilec when XDG_CACHE_HOME is an absolute path (the XDG
 * spec ignores a relative one), else $HOME/.cache/tilec, else the password
 * database's home; NULL when none names a home. Heap. */
static char *host_cache_dir(void)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    const char *base = NULL, *sub = NULL;
    if (xdg && xdg[0] == '/')
        base = xdg, sub = "/tilec";
    else if (home && home[0])
        base = home, sub = "/.cache/tilec";
    else {
        struct passwd *pw = getpwuid(getuid());
        if (pw && pw->pw_dir && pw->pw_dir[0])
            base = pw->pw_dir, sub = "/.cache/tilec";
    }
    if (!base)
        return NULL;
    size_t n = strlen(base) + strlen(sub) + 1;
    char *d = malloc(n);
    if (d)
        snprintf(d, n, "%s%s", base, sub);
    return d;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "tilec: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see tilec --help)\n");
    return EXIT_USAGE;
}

static void print_help(void)
{
    printf("usage: tilec FILE [options]\n"
           "Compile a tile-language kernel (.tile) or Tile IR text (.tir) to PTX.\n"
           "FILE '-' reads the standard input (tile language; -x tir for Tile IR).\n\n"
           "options:\n"
           "  -arch=ARCH, -arch ARCH  target: sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_100a,\n"
           "                          sm_100f, sm_120\n"
           "                          (default sm_90a; sm_90/sm_100 pick the arch-specific target)\n"
           "  -family-portable        sm_100 gives family-portable sm_100f, sm_90 plain sm_90\n"
           "  -o FILE                 write the output to FILE (default: stdout); with\n"
           "                          --emit=ptx the kernel metadata goes beside it as FILE.meta\n"
           "                          when FILE is a regular file (-o /dev/null writes none)\n"
           "  -DNAME=VALUE, -D NAME=VALUE\n"
           "                          set a compile-time parameter of the kernel\n"
           "  --emit=KIND             tokens, ast, tir, llvm, ptx (default) or meta (the\n"
           "                          kernel metadata alone)\n"
           "  -O0 -O1 -O2 -O3         optimisation level (default -O3)\n"
           "  -x LANG                 input language: tile or tir (default: by extension)\n"
           "  --passes=LIST           run only these passes (comma-separated, table order);\n"
           "                          --passes= runs none\n"
           "  --pass-option NAME=VALUE\n"
           "                          set a typed pass option (repeatable; listed below)\n"
           "  --dim NAME=VALUE        a size the kernel will be launched with for named dim\n"
           "                          NAME (repeatable): tile sizes and the launch schedule\n"
           "                          are chosen for it; the kernel stays correct for any size\n"
           "  -lineinfo               line information in the PTX (.file/.loc naming .tile\n"
           "                          lines, for Nsight Compute and compute-sanitizer)\n"
           "  -g                      the same line information (no variable information)\n"
           "  -WNAME, -Wno-NAME       turn warning NAME on or off (all are on; listed below)\n"
           "  -Wall, -w               turn every warning on / off\n"
           "  -Werror, -Wno-error     report warnings as errors (exit status 1) / as warnings\n"
           "  --print-after=NAME      print the IR after pass NAME to stderr (repeatable;\n"
           "                          'lower' prints it before the first pass)\n"
           "  --print-after-all       print the IR after every pass\n"
           "  --print-locs            Tile IR text carries loc(line:col)\n"
           "  --no-verify             do not run the IR verifier between passes\n"
           "  --time-passes           print a per-stage timing table to stderr\n"
           "  --report                print what the compiler decided, and why (stderr)\n"
           "  --report=FILE           write that report to FILE instead (e.g. /dev/stdout)\n"
           "  --cache                 reuse an earlier identical compilation from the cache\n"
           "                          folder, and store this one there (docs/cache.md)\n"
           "  --cache-dir=DIR         the cache folder (implies --cache; default\n"
           "                          $XDG_CACHE_HOME/tilec, else ~/.cache/tilec)\n"
           "  --clear-cache           delete the cache folder's entries (then compile FILE, if given)\n"
           "  --candidates            list, one a line, the tiles the compiler would weigh for the\n"
           "                          kernel's `= auto` params with these options (the compiler's\n"
           "                          choice first: candidate 0), as I NAME=VALUE,...; compile\n"
           "                          candidate I with --pass-option tiles.candidate=I (autotuning)\n"
           "  --ptxas=PATH            assemble the PTX with this ptxas; PTX it rejects is an\n"
           "                          internal error (exit 4) and is not written. Default: the\n"
           "                          first of $TILEC_PTXAS, ptxas on $PATH and\n"
           "                          /usr/local/cuda/bin/ptxas that exists; none: no check\n"
           "  --no-ptxas              do not run ptxas on the PTX\n"
           "  --help                  show this help\n"
           "  --version               show the version\n\n"
           "passes (in pipeline order):\n");
    for (size_t i = 0; i < tilec_num_passes(); i++)
        printf("  %-22s  %s\n", tilec_pass_name(i), tilec_pass_summary(i));
    printf("\nwarnings (-WNAME / -Wno-NAME; docs/language.md, \"Warnings\"):\n");
    for (size_t i = 0; i < tilec_num_warnings(); i++)
        printf("  %-22s  %s\n", tilec_warning_name(i), tilec_warning_help(i));
    printf("\npass options (--pass-option NAME=VALUE; docs/internals.md, \"Pass options\"):\n");
    for (size_t i = 0; i < tilec_num_pass_options(); i++)
        printf("  %s=<%s>\n      %s\n", tilec_pass_option_name(i), tilec_pass_option_type(i),
               tilec_pass_option_help(i));
    printf("\nexit status: 0 success, 1 errors in the input, 2 usage error, 3 I/O error,\n"
           "4 internal compiler error\n");
}

/* -DNAME=VALUE: `text` is what follows -D. */
static int add_define(Cli *c, const char *text)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text || !eq[1])
        return usage_error("bad define '%s': expected -DNAME=VALUE", text);
    size_t n = (size_t)(eq - text);
    char *name = cli_realloc(NULL, n + 1);
    memcpy(name, text, n);
    name[n] = 0;
    c->defs = cli_realloc(c->defs, sizeof *c->defs * (c->ndefs + 1));
    c->defs[c->ndefs++] = (tilec_define){ name, eq + 1 };
    return 0;
}

static void add_print_after(Cli *c, const char *name)
{
    c->pa = cli_realloc(c->pa, sizeof *c->pa * (c->npa + 1));
    c->pa[c->npa++] = name;
}

static int set_emit(Cli *c, const char *k)
{
    static const char *const names[] = { "tokens", "ast", "tir", "llvm", "ptx" };
    c->emit_meta = strcmp(k, "meta") == 0;
    if (c->emit_meta) {
        c->o.emit = TILEC_EMIT_PTX;
        return 0;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(k, names[i]) == 0) {
            c->o.emit = (tilec_emit)i;
            return 0;
        }
    return usage_error("unknown --emit kind '%s' (valid: tokens, ast, tir, llvm, ptx, meta)", k);
}

/* The argument of an option spelt `-opt=V` or `-opt V`; NULL if missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *opt)
{
    const char *a = argv[*i];
    size_t n = strlen(opt);
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] == 0 && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

static bool is_opt(const char *a, const char *opt)
{
    size_t n = strlen(opt);
    return strncmp(a, opt, n) == 0 && (a[n] == 0 || a[n] == '=');
}

/* Appends one --pass-option or --dim entry to *list (checked by the
 * library with the rest). */
static int add_entry(char **list, const char *v)
{
    size_t n = *list ? strlen(*list) : 0, m = strlen(v);
    char *p = cli_realloc(*list, n + m + 2);
    if (n)
        p[n++] = ',';
    memcpy(p + n, v, m + 1);
    *list = p;
    return 0;
}

/* Options that take a value. Returns -1 if `a` is not one of them. */
static int parse_valued(Cli *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v;
    if (is_opt(a, "-arch") || is_opt(a, "--arch")) {
        if (!(v = opt_value(argc, argv, i, a[1] == '-' ? "--arch" : "-arch")))
            return usage_error("option '%s' needs an architecture", a);
        c->o.arch = v;
        return 0;
    }
    if (strcmp(a, "-o") == 0 || strcmp(a, "-x") == 0) {
        if (*i + 1 >= argc)
            return usage_error("option '%s' needs an argument", a);
        *(a[1] == 'o' ? &c->out : &c->lang) = argv[++*i];
        return 0;
    }
    if (strncmp(a, "-D", 2) == 0) {
        if (a[2])
            return add_define(c, a + 2);
        if (*i + 1 >= argc)
            return usage_error("option '%s' needs NAME=VALUE", a);
        return add_define(c, argv[++*i]);
    }
    if (strncmp(a, "--emit=", 7) == 0)
        return set_emit(c, a + 7);
    if (is_opt(a, "--pass-option")) {
        if (!(v = opt_value(argc, argv, i, "--pass-option")))
            return usage_error("option '%s' needs NAME=VALUE", a);
        return add_entry(&c->popt, v);
    }
    if (is_opt(a, "--dim")) {
        if (!(v = opt_value(argc, argv, i, "--dim")))
            return usage_error("option '%s' needs NAME=VALUE", a);
        return add_entry(&c->dims, v);
    }
    if (strncmp(a, "--report=", 9) == 0) {
        if (!a[9])
            return usage_error("option '%s' needs a file name", a);
        c->o.report = 1;
        c->report_file = a + 9;
        return 0;
    }
    if (strncmp(a, "--cache-dir=", 12) == 0) {
        c->o.cache = TILEC_CACHE_DISK;
        c->o.cache_dir = a + 12;
        return 0;
    }
    if (strncmp(a, "--ptxas=", 8) == 0) {
        if (!a[8])
            return usage_error("option '%s' needs a file name", a);
        c->o.ptxas = a + 8;
        return 0;
    }
    if (strncmp(a, "--passes=", 9) == 0) {
        c->o.passes = a + 9;
        return 0;
    }
    if (strncmp(a, "--print-after=", 14) == 0) {
        add_print_after(c, a + 14);
        return 0;
    }
    return -1;
}

/* -w, -Wall, -Werror, -Wno-error, -WNAME, -Wno-NAME. Returns -1 if `a` is
 * not a warning flag. */
static int parse_warning(Cli *c, const char *a)
{
    if (strcmp(a, "-w") == 0) {
        c->o.warnings_off = TILEC_WARN_ALL;
        return 0;
    }
    if (strncmp(a, "-W", 2) != 0)
        return -1;
    const char *n = a + 2;
    bool off = strncmp(n, "no-", 3) == 0;
    if (off)
        n += 3;
    if (strcmp(n, "error") == 0) {
        c->o.warnings_as_errors = !off;
        return 0;
    }
    if (strcmp(n, "all") == 0) {
        c->o.warnings_off = off ? TILEC_WARN_ALL : 0;
        return 0;
    }
    for (size_t i = 0; i < tilec_num_warnings(); i++)
        if (strcmp(n, tilec_warning_name(i)) == 0) {
            if (off)
                c->o.warnings_off |= 1u << i;
            else
                c->o.warnings_off &= ~(1u << i);
            return 0;
        }
    char names[256] = "";
    for (size_t i = 0; i < tilec_num_warnings(); i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", tilec_warning_name(i));
    fprintf(stderr, "tilec: error: unknown warning '%s' (warnings: %s; also all, error) (see tilec --help)\n", a,
            names);
    return EXIT_USAGE;
}

/* Flags without a value. Returns -1 if `a` is not one of them. */
static int parse_flag(Cli *c, const char *a)
{
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
        c->help = 1;
    else if (strcmp(a, "--version") == 0)
        c->version = 1;
    else if (strcmp(a, "-family-portable") == 0 || strcmp(a, "--family-portable") == 0)
        c->o.family_portable = 1;
    else if (strlen(a) == 3 && a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3')
        c->o.opt_level = a[2] - '0';
    else if (strcmp(a, "--print-after-all") == 0)
        add_print_after(c, "*");
    else if (strcmp(a, "--time-passes") == 0)
        c->o.time_passes = 1;
    else if (strcmp(a, "-lineinfo") == 0 || strcmp(a, "--lineinfo") == 0)
        c->o.debug_info = TILEC_DEBUG_LINES;
    else if (strcmp(a, "-g") == 0)
        c->o.debug_info = TILEC_DEBUG_FULL;
    else if (strcmp(a, "--print-locs") == 0)
        c->o.print_locs = 1;
    else if (strcmp(a, "--report") == 0)
        c->o.report = 1;
    else if (strcmp(a, "--cache") == 0)
        c->o.cache = TILEC_CACHE_DISK;
    else if (strcmp(a, "--clear-cache") == 0)
        c->clear_cache = 1;
    else if (strcmp(a, "--candidates") == 0)
        c->candidates = 1;
    else if (strcmp(a, "--no-verify") == 0)
        c->o.verify_each = 0;
    else if (strcmp(a, "--no-ptxas") == 0)
        c->no_ptxas = 1;
    else
        return -1;
    return 0;
}

static int parse_args(Cli *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            if (c->file)
                return usage_error("more than one input file ('%s')", a);
            c->file = a;
            continue;
        }
        int rc = parse_warning(c, a);
        if (rc < 0)
            rc = parse_valued(c, argc, argv, &i);
        if (rc < 0)
            rc = parse_flag(c, a);
        if (rc < 0)
            return usage_error("unknown option '%s'", a);
        if (rc)
            return rc;
    }
    return 0;
}

static char *read_stdin(size_t *len)
{
    size_t cap = 65536, n = 0, got;
    char *buf = cli_realloc(NULL, cap + 1);
    while ((got = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += got;
        if (n == cap)
            buf = cli_realloc(buf, (cap *= 2) + 1);
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "tilec: error: cannot write '%s': %s\n", path, strerror(errno));
        return EXIT_IO;
    }
    fputs(text, f);
    if (fclose(f) != 0) {
        fprintf(stderr, "tilec: error: cannot write '%s': %s\n", path, strerror(errno));
        return EXIT_IO;
    }
    return 0;
}

/* ---- atomic outputs ----
 * -o X.ptx writes X.ptx and X.meta as a pair: each goes to a temporary file
 * in the same folder (same file system, so rename is atomic), then, under an
 * exclusive lock on the folder, the metadata is renamed into place and then
 * the PTX. A reader never sees a half-written file, and concurrent writers
 * of the same -o leave a pair from one run, never one file of each. */

/* The name of a temporary file beside `path` (caller frees). */
static char *temp_name(const char *path)
{
    size_t n = strlen(path) + 16;
    char *tmp = cli_realloc(NULL, n);
    snprintf(tmp, n, "%s.tmp.XXXXXX", path);
    return tmp;
}

/* A temporary file beside `path` holding `text`, named from the pattern
 * `tmp` (temp_name's; mkstemp fills it in). On failure nothing is left. */
static int write_temp(const char *path, const char *text, char *tmp)
{
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fprintf(stderr, "tilec: error: cannot write '%s': %s\n", path, strerror(errno));
        return EXIT_IO;
    }
    fchmod(fd, 0644);
    FILE *f = fdopen(fd, "wb");
    bool ok = f && fputs(text, f) >= 0;
    ok = (f ? fclose(f) == 0 : (close(fd), false)) && ok;
    if (!ok) {
        fprintf(stderr, "tilec: error: cannot write '%s': %s\n", path, strerror(errno));
        unlink(tmp);
        return EXIT_IO;
    }
    return 0;
}

/* The folder of `path`, opened for flock (NULL-safe: -1 when it cannot). */
static int lock_folder(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096] = ".";
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)((size_t)(slash - path) + (slash == path)), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0)
        flock(fd, LOCK_EX);
    return fd;
}

/* Write paths[0..n) atomically, renaming them in that order. An output
 * that exists and is not a regular file (-o /dev/null) is written in place. */
static int write_together(const char *const *paths, const char *const *texts, int n)
{
    char *tmp[2] = { NULL, NULL };
    int rc = 0;
    struct stat st;
    for (int i = 0; i < n; i++)
        if (stat(paths[i], &st) == 0 && !S_ISREG(st.st_mode)) {
            for (int k = 0; k < n && !rc; k++)
                rc = write_file(paths[k], texts[k]);
            return rc;
        }
    for (int i = 0; i < n; i++)
        tmp[i] = temp_name(paths[i]);   /* before any file exists */
    bool made[2] = { false, false };
    for (int i = 0; i < n && !rc; i++)
        made[i] = !(rc = write_temp(paths[i], texts[i], tmp[i]));
    if (!rc) {
        int lock = lock_folder(paths[0]);
        for (int i = 0; i < n && !rc; i++)
            if (rename(tmp[i], paths[i]) != 0) {
                fprintf(stderr, "tilec: error: cannot write '%s': %s\n", paths[i], strerror(errno));
                rc = EXIT_IO;
            }
        if (lock >= 0)
            close(lock);    /* releases the flock */
    }
    for (int i = 0; i < n; i++) {
        if (made[i] && rc)
            unlink(tmp[i]);
        free(tmp[i]);
    }
    return rc;
}

/* X.ptx -> X.meta (or X.meta appended when there is no extension). */
static char *meta_path(const char *out)
{
    const char *slash = strrchr(out, '/');
    const char *dot = strrchr(out, '.');
    size_t n = (dot && (!slash || dot > slash)) ? (size_t)(dot - out) : strlen(out);
    char *p = cli_realloc(NULL, n + 6);
    memcpy(p, out, n);
    memcpy(p + n, ".meta", 6);
    return p;
}

static int emit_outputs(const Cli *c, const tilec_result *r)
{
    static const tilec_output by_emit[] = { TILEC_OUT_TOKENS, TILEC_OUT_AST, TILEC_OUT_TIR,
                                            TILEC_OUT_LLVM, TILEC_OUT_PTX };
    const char *text = tilec_result_text(r, c->emit_meta ? TILEC_OUT_META : by_emit[c->o.emit]);
    if (!text)
        return 0;
    if (!c->out || strcmp(c->out, "-") == 0) {
        fputs(text, stdout);
        return 0;
    }
    /* The metadata goes beside a PTX file, not beside /dev/null or a pipe. */
    const char *meta = tilec_result_text(r, TILEC_OUT_META);
    struct stat st;
    bool special = stat(c->out, &st) == 0 && !S_ISREG(st.st_mode);
    if (!meta || c->o.emit != TILEC_EMIT_PTX || c->emit_meta || special) {
        const char *paths[1] = { c->out }, *texts[1] = { text };
        return write_together(paths, texts, 1);
    }
    char *mp = meta_path(c->out);
    const char *paths[2] = { mp, c->out }, *texts[2] = { meta, text };   /* metadata first */
    int rc = write_together(paths, texts, 2);
    free(mp);
    return rc;
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
    char *src = read_stdin(&len);
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
        char *src = read_stdin(&len);
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
            rc = write_file(c->out, text);
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
        c->ptxas_found = host_ptxas();
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
    int rc = emit_outputs(c, r);
    if (report && c->report_file) {
        int wrc = write_file(c->report_file, report);
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
    c->cache_dir_found = host_cache_dir();
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
 * 2 MB collapsed after the advice, and one arena for every thread (the
 * target machine's would fault in an arena of its own 4 KB at a time).
 * docs/codegen.md, "Compile time of tensor-core kernels" and "Page faults,
 * and the two kernels of sm_90a", has the measurements. */
#ifndef MADV_COLLAPSE
#define TC_MADV_COLLAPSE 25     /* Linux 6.1; older kernels refuse it, harmlessly */
#else
#define TC_MADV_COLLAPSE MADV_COLLAPSE
#endif

static void cli_heap(void)
{
#if defined(__GLIBC__) && defined(M_TOP_PAD)
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    mallopt(M_TOP_PAD, 64 << 20);
    mallopt(M_ARENA_MAX, 1);
#if defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
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
        if ((uintptr_t)hi > a && madvise((void *)a, (uintptr_t)hi - a, MADV_HUGEPAGE) == 0 &&
            (uintptr_t)hi >= a + huge)
            /* malloc wrote its headers into the first 2 MB before the
             * advice: made one huge page now, or it stays 512 small ones */
            madvise((void *)a, huge, TC_MADV_COLLAPSE);
    }
    free(p);
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
    int rc = parse_args(&c, argc, argv);
    if (!rc)
        set_cache_dir(&c);
    if (!rc && c.help)
        print_help();
    else if (!rc && c.version)
        printf("tilec %s\n", tilec_version());
    else if (!rc && c.clear_cache && clear_cache(&c) != 0)
        rc = EXIT_IO;
    else if (!rc && !c.file && !c.clear_cache)
        rc = usage_error("%s", "no input file");
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
