/* api.c - the public API (include/tilec.h): the calls that compile or list
 * candidates, each as a job that makes one result, the compile cache
 * around them, the results' accessors and the version. The options are
 * checked in options.c and the compilation itself runs in job.c.
 *
 * A tilec_result owns one Arena; every string it returns (outputs, diagnostic
 * files and messages, rendered text) lives in that arena and dies with
 * tilec_result_free, except that a cache hit's texts point into the cache
 * entry, which the result holds a reference on (lib/cache.c). Each call
 * that allocates runs as a job (lib/alloc.h, tc_result_job): out of memory
 * anywhere in it returns TILEC_ERR_NOMEM and leaves nothing allocated. Apart from
 * the cache's in-memory table the library keeps no global mutable state:
 * the only static data is read-only tables and the version string, built
 * once under pthread_once.
 */
#define _POSIX_C_SOURCE 200809L
#include "tilec.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "lib/cache.h"
#include "lib/version.h"
#include "job.h"

/* ---- results ---- */

tilec_result *tc_result_new(void)
{
    Arena *a = arena_new();
    tilec_result *r = arena_alloc(a, sizeof *r);
    r->arena = a;
    diag_init(&r->diag, a);
    return r;
}

/* Internal errors: diag_internal(), and the verifier failing on IR that the
 * compiler made (after lowering or a pass; not on .tir input it parsed). */
static bool is_internal(const char *msg)
{
    static const char vpre[] = "verifier failed after pass '";
    if (strncmp(msg, "internal compiler error", 23) == 0)
        return true;
    return strncmp(msg, vpre, sizeof vpre - 1) == 0 && strncmp(msg + sizeof vpre - 1, "parse'", 6) != 0;
}

/* The status that the errors collected so far stand for. */
static tilec_status status_from_diag(const Diag *d, tilec_status input_kind)
{
    if (d->nerrors == 0)
        return TILEC_OK;
    for (int i = 0; i < d->n; i++)
        if (d->recs[i].sev == SEV_ERROR && is_internal(d->recs[i].msg))
            return TILEC_ERR_INTERNAL;
    return input_kind;
}

/* Copy the Diag records into the public records and render them. */
void tc_result_finish_diags(tilec_result *r)
{
    Diag *d = &r->diag;
    r->ndiags = (size_t)d->n;
    r->diags = arena_alloc(r->arena, sizeof(tilec_diag) * (r->ndiags ? r->ndiags : 1));
    for (int i = 0; i < d->n; i++) {
        const DiagRec *x = &d->recs[i];
        r->diags[i] = (tilec_diag){ (tilec_severity)x->sev, x->loc.file ? x->loc.file : "",
                                    x->loc.line, x->loc.col, x->msg };
    }
    StrBuf sb = { 0 };
    diag_render(d, &sb);
    /* A source line may hold NUL bytes; the text is a C string, so they
     * render as spaces (like other non-printable bytes under the caret). */
    for (size_t i = 0; i < sb.len; i++)
        if (sb.buf[i] == 0)
            sb.buf[i] = ' ';
    r->diag_text = arena_strndup(r->arena, sb.buf ? sb.buf : "", sb.len);
    sb_free(&sb);
}

/* ---- the compile cache (lib/cache.c) ---- */

/* Fill r from a cache entry for key k; false on a miss. */
static bool cache_fetch(tilec_result *r, const TcCacheKey *k, const tilec_options *o)
{
    TcCacheEntry e;
    tilec_cache_mode from = tc_cache_fetch(k, o->cache, o->cache_dir, tilec_version(), r->arena, &e, &r->cache_ref);
    if (from == TILEC_CACHE_OFF)
        return false;
    r->status = TILEC_OK;
    r->from_cache = from;
    r->arch = e.arch;
    memcpy(r->text, e.text, sizeof r->text);
    r->diags = (tilec_diag *)e.diags;
    r->ndiags = e.ndiags;
    r->diag_text = e.diag_text ? e.diag_text : "";
    return true;
}

static void cache_store(const tilec_result *r, const TcCacheKey *k, const tilec_options *o)
{
    TcCacheEntry e = { r->arch, { 0 }, r->diags, r->ndiags, r->diag_text };
    memcpy(e.text, r->text, sizeof e.text);
    tc_cache_put(k, o->cache, o->cache_dir, tilec_version(), &e);
}

tilec_cache_mode tilec_result_cache(const tilec_result *r) { return r ? r->from_cache : TILEC_CACHE_OFF; }

/* A job on `len` bytes of `src` (copied) into r, with a copy of opts:
 * the source registered for diagnostics, r->status TILEC_OK. Returns the
 * copied text. */
static char *job_begin(Job *j, tilec_result *r, const char *name, const char *src, size_t len,
                       const tilec_options *opts)
{
    memset(j, 0, sizeof *j);
    j->r = r;
    j->t_start = tc_clock();
    tc_options_copy(&j->o, opts);
    j->name = arena_strdup(r->arena, name);
    char *text = arena_strndup(r->arena, src, len);
    diag_add_source(&r->diag, j->name, text, len);
    r->diag.warn_off = j->o.warnings_off;
    r->diag.warn_error = j->o.warnings_as_errors != 0;
    r->status = TILEC_OK;
    return text;
}

/* The job's own buffers (r's are kept). */
static void job_free(Job *j)
{
    sb_free(&j->dump);
    sb_free(&j->timing);
    sb_free(&j->remarks);
    sb_free(&j->cgreport);
    sb_free(&j->roofline);
}

/* Compile `len` bytes of `src` (copied). `r` already holds any earlier diags. */
static tilec_status compile(tilec_result *r, const char *name, const char *src, size_t len,
                            const tilec_options *opts)
{
    Job j;
    char *text = job_begin(&j, r, name, src, len, opts);
    TcCacheKey key;
    bool cacheable = false;
    if (!tc_job_check_options(&j) || !tc_job_check_language(&j))
        r->status = TILEC_ERR_USAGE;
    else {
        cacheable = tc_cache_usable(&j.o);
        if (cacheable) {
            tc_cache_key(&key, j.name, text, len, &j.o, tilec_version());
            if (cache_fetch(r, &key, &j.o))
                return r->status;   /* nothing of this call's own to free yet */
        }
        tc_job_compile(&j, text, len);
    }
    if (r->status == TILEC_OK)
        r->status = status_from_diag(&r->diag, TILEC_ERR_INPUT);
    tc_job_finish_outputs(&j);
    job_free(&j);
    tc_result_finish_diags(r);
    if (cacheable && r->status == TILEC_OK)
        cache_store(r, &key, &j.o);
    return r->status;
}

/* The tile choice's candidates for `len` bytes of `src` (copied): the
 * front end to lowering (the choice runs on the probe lowering, and the
 * kernel is lowered with it so that the source's errors show), no passes,
 * no code, no cache. */
static tilec_status list_candidates(tilec_result *r, const char *name, const char *src, size_t len,
                                    const tilec_options *opts)
{
    Job j;
    char *text = job_begin(&j, r, name, src, len, opts);
    j.o.emit = TILEC_EMIT_TIR;   /* through lowering */
    j.o.time_passes = 0;
    j.o.report = 0;
    j.o.nprint_after = 0;
    TileChoice tc = { .n = 0 };
    j.cands = &tc;
    if (!tc_job_check_options(&j) || !tc_job_check_language(&j)) {
        r->status = TILEC_ERR_USAGE;
    } else {
        j.popts.tile_candidate = -1;   /* the list does not depend on the one taken */
        (void)tc_job_front_end(&j, text, len);
    }
    if (r->status == TILEC_OK)
        r->status = status_from_diag(&r->diag, TILEC_ERR_INPUT);
    if (r->status == TILEC_OK) {
        /* no `auto` param (or Tile IR): one candidate, the kernel as written */
        size_t n = j.cand_kernel ? (size_t)tc.ncand : 1;
        r->cands = arena_alloc(r->arena, sizeof(char *) * n);
        r->ncands = n;
        for (size_t c = 0; c < n; c++) {
            StrBuf sb = { 0 };
            for (int i = 0; j.cand_kernel && i < tc.n; i++)
                sb_printf(&sb, "%s%s=%lld", i ? "," : "", tc.name[i], (long long)tc.cand[c][i]);
            r->cands[c] = arena_strndup(r->arena, sb.buf ? sb.buf : "", sb.len);
            sb_free(&sb);
        }
        StrBuf rep = { 0 };
        if (j.remarks.len)
            sb_putn(&rep, j.remarks.buf, j.remarks.len);
        else
            sb_printf(&rep, "tiles: %s: no `auto` tile param to choose: one candidate, the kernel as written\n",
                      j.name);
        tc_job_set_text(&j, TILEC_OUT_REPORT, &rep);
        sb_free(&rep);
    }
    job_free(&j);
    tc_result_finish_diags(r);
    return r->status;
}

/* A result that holds one usage / I/O error. */
static tilec_result *fail_early(tilec_status st, const char *file, const char *msg)
{
    tilec_result *r = tc_result_new();
    diag_error(&r->diag, (Loc){ file ? arena_strdup(r->arena, file) : NULL, 0, 0 }, "%s", msg);
    r->status = st;
    tc_result_finish_diags(r);
    return r;
}

/* One compile call as a job (lib/alloc.h): out of memory anywhere in it
 * frees everything it made, the result included. */
typedef struct Call {
    ResultCall rc;
    const char *name, *src, *path;
    size_t len;
    const tilec_options *opts;
    bool list;              /* tilec_candidates_*: list the tile choice's candidates instead */
} Call;

static void compile_string_job(void *p)
{
    Call *c = p;
    if (!c->src) {
        c->rc.r = fail_early(c->rc.st = TILEC_ERR_USAGE, NULL, "source text is NULL");
        return;
    }
    c->rc.r = tc_result_new();
    c->rc.st = (c->list ? list_candidates : compile)(c->rc.r, c->name ? c->name : "<string>", c->src, c->len,
                                                     c->opts);
}

static void compile_file_job(void *p)
{
    Call *c = p;
    if (!c->path) {
        c->rc.r = fail_early(c->rc.st = TILEC_ERR_USAGE, NULL, "file path is NULL");
        return;
    }
    char *text = tc_read_file(c->path, &c->len);
    if (!text) {
        char ebuf[128] = "unknown error", msg[1200];
        strerror_r(errno, ebuf, sizeof ebuf);
        snprintf(msg, sizeof msg, "cannot open '%s': %s", c->path, ebuf);
        c->rc.r = fail_early(c->rc.st = TILEC_ERR_IO, NULL, msg);
        return;
    }
    c->name = c->path;
    c->src = text;
    compile_string_job(c);
    tc_free(text);
}

tilec_status tc_result_job(void (*job)(void *), ResultCall *c, tilec_result **out)
{
    if (out)
        *out = NULL;
    if (!tc_job_run(job, c))
        return TILEC_ERR_NOMEM;
    if (out)
        *out = c->r;
    else
        tilec_result_free(c->r);
    return c->st;
}

tilec_status tilec_compile_string(const char *name, const char *src, size_t len,
                                  const tilec_options *opts, tilec_result **out)
{
    Call c = { .name = name, .src = src, .len = len, .opts = opts };
    return tc_result_job(compile_string_job, &c.rc, out);
}

tilec_status tilec_compile_file(const char *path, const tilec_options *opts, tilec_result **out)
{
    Call c = { .path = path, .opts = opts };
    return tc_result_job(compile_file_job, &c.rc, out);
}

tilec_status tilec_candidates_string(const char *name, const char *src, size_t len, const tilec_options *opts,
                                     tilec_result **out)
{
    Call c = { .name = name, .src = src, .len = len, .opts = opts, .list = true };
    return tc_result_job(compile_string_job, &c.rc, out);
}

tilec_status tilec_candidates_file(const char *path, const tilec_options *opts, tilec_result **out)
{
    Call c = { .path = path, .opts = opts, .list = true };
    return tc_result_job(compile_file_job, &c.rc, out);
}

size_t tilec_result_num_candidates(const tilec_result *r) { return r ? r->ncands : 0; }

const char *tilec_result_candidate(const tilec_result *r, size_t i)
{
    return r && i < r->ncands ? r->cands[i] : NULL;
}

void tilec_result_free(tilec_result *r)
{
    if (!r)
        return;
    tc_cache_release(r->cache_ref);
    arena_free(r->arena);
}

/* ---- accessors ---- */

tilec_status tilec_result_status(const tilec_result *r) { return r ? r->status : TILEC_ERR_USAGE; }

const char *tilec_result_text(const tilec_result *r, tilec_output which)
{
    return r && (unsigned)which < NOUT ? r->text[which] : NULL;
}

const char *tilec_result_arch(const tilec_result *r) { return r ? r->arch : NULL; }

size_t tilec_result_num_diags(const tilec_result *r) { return r ? r->ndiags : 0; }

const tilec_diag *tilec_result_diag(const tilec_result *r, size_t i)
{
    return r && i < r->ndiags ? &r->diags[i] : NULL;
}

const char *tilec_result_diag_text(const tilec_result *r) { return r ? r->diag_text : NULL; }

const char *tilec_status_string(tilec_status s)
{
    switch (s) {
    case TILEC_OK: return "ok";
    case TILEC_ERR_INPUT: return "input error";
    case TILEC_ERR_USAGE: return "usage error";
    case TILEC_ERR_IO: return "I/O error";
    case TILEC_ERR_NOMEM: return "out of memory";
    case TILEC_ERR_INTERNAL: return "internal compiler error";
    case TILEC_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown status";
}

/* The version string is built once (it asks codegen for LLVM's version). */
static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static char version_buf[128];

static void version_init(void)
{
    const char *llvm = cg_llvm_version(), *git = tc_build_commit();
    snprintf(version_buf, sizeof version_buf, "%d.%d.%d (%s%s%s%s%s)", TILEC_VERSION_MAJOR,
             TILEC_VERSION_MINOR, TILEC_VERSION_PATCH, *git ? "git " : "", git, *git ? ", " : "",
             llvm && strcmp(llvm, "none") != 0 ? "LLVM " : "no LLVM",
             llvm && strcmp(llvm, "none") != 0 ? llvm : "");
}

const char *tilec_version(void)
{
    pthread_once(&version_once, version_init);
    return version_buf;
}

const char *tilec_commit(void) { return tc_build_commit(); }
