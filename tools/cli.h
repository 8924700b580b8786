/* cli.h - what the files of the `tilec` command share: the parsed command
 * line (Cli), the exit statuses, and per file the functions it gives the
 * others. tilec.c runs the command; cli_args.c reads the command line and
 * the host's settings; cli_out.c writes the outputs. Not installed.
 */
#ifndef TILEC_CLI_H
#define TILEC_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "tilec.h"

enum { EXIT_INPUT = 1, EXIT_USAGE = 2, EXIT_IO = 3, EXIT_INTERNAL = 4 };

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
    char *ptxas_found;        /* the default ptxas (cli_host_ptxas), heap */
    char *cache_dir_found;    /* the default cache folder (cli_host_cache_dir), heap */
} Cli;

/* ---- tilec.c ---- */

/* realloc, or the end of the command (exit status 4) when out of memory. */
void *cli_realloc(void *p, size_t n);

/* ---- cli_args.c ---- */

/* `tilec: error: ` fmt (with arg) ` (see tilec --help)`; EXIT_USAGE. */
int cli_usage_error(const char *fmt, const char *arg);
void cli_print_help(void);
/* argv into c; 0, or the exit status of a usage error (printed). */
int cli_parse_args(Cli *c, int argc, char **argv);
/* The default ptxas and cache folder, from the environment (heap; NULL: none). */
char *cli_host_ptxas(void);
char *cli_host_cache_dir(void);

/* ---- cli_out.c ---- */

/* The standard input, NUL-terminated (heap); *len its bytes. */
char *cli_read_stdin(size_t *len);
/* text into path; 0 or EXIT_IO (printed). */
int cli_write_file(const char *path, const char *text);
/* The output of r to -o FILE (with FILE.meta beside a PTX file, the pair
 * written atomically) or stdout; 0 or EXIT_IO. */
int cli_emit_outputs(const Cli *c, const tilec_result *r);

#endif
