/* version.c - the version and git commit of this build (generated header
 * tilec_build_info.h, cmake/version.cmake), and the lines that stamp them
 * into the PTX header comment and the kernel metadata. */
#include "version.h"

#include <stdlib.h>
#include <string.h>

#include "tilec_build_info.h"

const char *tc_build_version(void) { return TILEC_BUILD_VERSION; }

const char *tc_build_commit(void) { return TILEC_BUILD_COMMIT; }

/* Replace sb's text by text[0..at) + ins + text[at..). */
static void insert_at(StrBuf *sb, size_t at, const char *ins)
{
    StrBuf out = { 0 };
    sb_putn(&out, sb->buf, at);
    sb_puts(&out, ins);
    sb_putn(&out, sb->buf + at, sb->len - at);
    sb_free(sb);
    *sb = out;
}

/* Offset just past the leading run of `//` comment lines. */
static size_t after_comments(const char *s, size_t len)
{
    size_t at = 0;
    while (at + 1 < len && s[at] == '/' && s[at + 1] == '/') {
        const char *nl = memchr(s + at, '\n', len - at);
        if (!nl)
            return len;
        at = (size_t)(nl - s) + 1;
    }
    return at;
}

void tc_stamp_ptx(StrBuf *ptx)
{
    if (!ptx->buf || !ptx->len)
        return;
    StrBuf line = { 0 };
    sb_printf(&line, "// tilec %s%s%s%s\n//\n", TILEC_BUILD_VERSION, *TILEC_BUILD_COMMIT ? " (git " : "",
              TILEC_BUILD_COMMIT, *TILEC_BUILD_COMMIT ? ")" : "");
    insert_at(ptx, after_comments(ptx->buf, ptx->len), line.buf);
    sb_free(&line);
}

void tc_stamp_meta(StrBuf *meta)
{
    if (!meta->buf || !meta->len)
        return;
    const char *nl = memchr(meta->buf, '\n', meta->len);
    if (!nl || strncmp(meta->buf, "tilec-meta ", 11) != 0)
        return;
    StrBuf line = { 0 };
    sb_printf(&line, "compiler tilec %s%s%s\n", TILEC_BUILD_VERSION, *TILEC_BUILD_COMMIT ? " " : "",
              TILEC_BUILD_COMMIT);
    insert_at(meta, (size_t)(nl - meta->buf) + 1, line.buf);
    sb_free(&line);
}
