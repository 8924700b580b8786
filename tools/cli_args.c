/* cli_args.c - what the `tilec` command is told: the command line
 * (options spelt the nvcc/clang way, --help) and the host's settings that
 * the library never reads (the default ptxas and cache folder, from the
 * environment).
 */
#define _GNU_SOURCE
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

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
char *cli_host_ptxas(void)
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
char *cli_host_cache_dir(void)
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

int cli_usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "tilec: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see tilec --help)\n");
    return EXIT_USAGE;
}

void cli_print_help(void)
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
        return cli_usage_error("bad define '%s': expected -DNAME=VALUE", text);
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
    return cli_usage_error("unknown --emit kind '%s' (valid: tokens, ast, tir, llvm, ptx, meta)", k);
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
            return cli_usage_error("option '%s' needs an architecture", a);
        c->o.arch = v;
        return 0;
    }
    if (strcmp(a, "-o") == 0 || strcmp(a, "-x") == 0) {
        if (*i + 1 >= argc)
            return cli_usage_error("option '%s' needs an argument", a);
        *(a[1] == 'o' ? &c->out : &c->lang) = argv[++*i];
        return 0;
    }
    if (strncmp(a, "-D", 2) == 0) {
        if (a[2])
            return add_define(c, a + 2);
        if (*i + 1 >= argc)
            return cli_usage_error("option '%s' needs NAME=VALUE", a);
        return add_define(c, argv[++*i]);
    }
    if (strncmp(a, "--emit=", 7) == 0)
        return set_emit(c, a + 7);
    if (is_opt(a, "--pass-option")) {
        if (!(v = opt_value(argc, argv, i, "--pass-option")))
            return cli_usage_error("option '%s' needs NAME=VALUE", a);
        return add_entry(&c->popt, v);
    }
    if (is_opt(a, "--dim")) {
        if (!(v = opt_value(argc, argv, i, "--dim")))
            return cli_usage_error("option '%s' needs NAME=VALUE", a);
        return add_entry(&c->dims, v);
    }
    if (strncmp(a, "--report=", 9) == 0) {
        if (!a[9])
            return cli_usage_error("option '%s' needs a file name", a);
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
            return cli_usage_error("option '%s' needs a file name", a);
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

int cli_parse_args(Cli *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            if (c->file)
                return cli_usage_error("more than one input file ('%s')", a);
            c->file = a;
            continue;
        }
        int rc = parse_warning(c, a);
        if (rc < 0)
            rc = parse_valued(c, argc, argv, &i);
        if (rc < 0)
            rc = parse_flag(c, a);
        if (rc < 0)
            return cli_usage_error("unknown option '%s'", a);
        if (rc)
            return rc;
    }
    return 0;
}
