/* cli_out.c - the outputs of the `tilec` command: the standard input read
 * in, files written, and -o X.ptx with X.meta written as an atomic pair.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

char *cli_read_stdin(size_t *len)
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

int cli_write_file(const char *path, const char *text)
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
                rc = cli_write_file(paths[k], texts[k]);
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

int cli_emit_outputs(const Cli *c, const tilec_result *r)
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
