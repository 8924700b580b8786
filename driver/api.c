/* api.c - the public API (include/tilec.h): options, the compile flow
 * (read -> lex -> parse -> lower -> verify -> passes -> print -> codegen),
 * target resolution, and results that own everything they hand out.
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
#include <unistd.h>

#include "codegen/codegen.h"
#include "frontend/frontend.h"
#include "ir/ir.h"
#include "passes/passes.h"
#include "lib/cache.h"
#include "lib/version.h"
#include "report.h"
#include "result.h"
#include "roofline.h"
#include "target/target.h"

/* One compilation: the result being filled plus the scratch buffers. */
typedef struct Job {
    tilec_result *r;
    tilec_options o;
    const char *name;
    const TargetInfo *target;
    PassOptions popts;
    PassDims dims;
    StrBuf dump, timing, remarks, cgreport;
    StrBuf roofline;        /* the report's roofline, counted on the IR after the passes */
    TcClock t_start;
    bool ptxas_ran;         /* ptxas_run holds the check of tilec_options.ptxas */
    PtxasRun ptxas_run;
    bool portable;          /* compiling the portable variant (add_portable): PassCtx.portable */
    const AstModule *ast;   /* the source's AST (front_end), lowered again by add_portable */
    TileChoice *cands;      /* tilec_candidates_*: the tile choice's candidates go here; else NULL */
    const char *cand_kernel;   /* the kernel they are for (NULL: no `auto` param to choose) */
} Job;

/* ---- options ---- */

void tilec_options_init(tilec_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->opt_level = 3;
    opts->emit = TILEC_EMIT_PTX;
    opts->verify_each = 1;
}

/* Copy the caller's options; fields past its struct_size keep their defaults. */
static void copy_options(tilec_options *dst, const tilec_options *src)
{
    tilec_options_init(dst);
    if (!src)
        return;
    size_t n = src->struct_size;
    if (n == 0 || n > sizeof *dst)
        n = sizeof *dst;
    memcpy(dst, src, n);
    dst->struct_size = sizeof *dst;
}

/* ---- targets ---- */

/* Every name -arch accepts: each target's, and the generic names before
 * their family's targets (sm_100). */
static void arch_names(StrBuf *sb)
{
    int prev = 0, n = 0;
    for (int i = 0; i < tc_target_count(); i++) {
        const TargetInfo *t = tc_target_at(i);
        if (t->sm != prev) {
            char generic[16];
            snprintf(generic, sizeof generic, "sm_%d", t->sm);
            if (!tc_target(generic) && tc_target_resolve(generic, false, NULL))
                sb_printf(sb, "%s%s", n++ ? ", " : "", generic);
            prev = t->sm;
        }
        sb_printf(sb, "%s%s", n++ ? ", " : "", t->name);
    }
}

static void arch_error(Job *j, const char *arch)
{
    StrBuf sb = { 0 };
    arch_names(&sb);
    diag_error(&j->r->diag, (Loc){ 0 }, "unknown target architecture '%s' (valid: %s)", arch, sb.buf);
    sb_free(&sb);
}

/* Resolve the arch and say which target a generic name picked. */
static bool set_arch(Job *j)
{
    const char *a = j->o.arch, *other;
    const TargetInfo *t = tc_target_resolve(a, j->o.family_portable, &other);
    if (!t) {
        arch_error(j, a);
        return false;
    }
    j->r->arch = t->name;
    j->target = t;
    if (other) {
        if (j->o.family_portable)
            diag_remark(&j->r->diag, (Loc){ 0 }, "compiling for %s, the family-portable target for %s", t->name, a);
        else
            diag_remark(&j->r->diag, (Loc){ 0 },
                        "compiling for %s, the arch-specific target for %s; -family-portable gives %s", t->name, a,
                        other);
    }
    return true;
}

/* ---- option checks ---- */

static bool is_print_after_name(const char *n)
{
    return strcmp(n, "*") == 0 || strcmp(n, "lower") == 0 || pass_lookup(n) != NULL;
}

static void pass_names(StrBuf *sb)
{
    for (int i = 0; i < tc_npasses; i++)
        sb_printf(sb, "%s%s", i ? ", " : "", tc_pass_table[i].name);
}

static bool bad_pass_name(Job *j, const char *what, const char *n, size_t len)
{
    StrBuf sb = { 0 };
    pass_names(&sb);
    diag_error(&j->r->diag, (Loc){ 0 }, "unknown pass '%.*s' in %s (passes: %s)", (int)len, n, what,
               sb.buf ? sb.buf : "");
    sb_free(&sb);
    return false;
}

static bool check_pass_list(Job *j)
{
    const char *p = j->o.passes;
    while (p && *p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        if (n > 0) {
            if (n >= sizeof name)
                return bad_pass_name(j, "--passes", p, n);
            memcpy(name, p, n);
            name[n] = 0;
            if (!pass_lookup(name))
                return bad_pass_name(j, "--passes", p, n);
        }
        p = e ? e + 1 : NULL;
    }
    return true;
}

static bool check_options(Job *j)
{
    Diag *d = &j->r->diag;
    if (j->o.opt_level < 0 || j->o.opt_level > 3) {
        diag_error(d, (Loc){ 0 }, "optimisation level %d out of range (0..3)", j->o.opt_level);
        return false;
    }
    if ((unsigned)j->o.emit > TILEC_EMIT_PTX) {
        diag_error(d, (Loc){ 0 }, "unknown emit kind %d", (int)j->o.emit);
        return false;
    }
    if (j->o.warnings_off & ~(unsigned)TILEC_WARN_ALL) {
        diag_error(d, (Loc){ 0 }, "warnings_off 0x%x has bits that name no warning (valid: 0x%x)",
                   j->o.warnings_off, (unsigned)TILEC_WARN_ALL);
        return false;
    }
    if ((unsigned)j->o.debug_info > TILEC_DEBUG_FULL) {
        diag_error(d, (Loc){ 0 }, "unknown debug_info level %d (valid: 0, 1, 2)", (int)j->o.debug_info);
        return false;
    }
    if (j->o.ndefines && !j->o.defines) {
        diag_error(d, (Loc){ 0 }, "defines is NULL but ndefines is %zu", j->o.ndefines);
        return false;
    }
    for (size_t i = 0; i < j->o.ndefines; i++)
        if (!j->o.defines[i].name || !j->o.defines[i].value) {
            diag_error(d, (Loc){ 0 }, "define %zu has a NULL name or value", i);
            return false;
        }
    for (size_t i = 0; i < j->o.nprint_after; i++) {
        const char *n = j->o.print_after ? j->o.print_after[i] : NULL;
        if (!n || !is_print_after_name(n))
            return bad_pass_name(j, "--print-after", n ? n : "(null)", n ? strlen(n) : 6);
    }
    if (j->o.cache == TILEC_CACHE_DISK && (!j->o.cache_dir || !j->o.cache_dir[0])) {
        diag_error(d, (Loc){ 0 }, "TILEC_CACHE_DISK needs a folder (tilec_options.cache_dir)");
        return false;
    }
    if (j->o.ptxas && !tc_is_executable(j->o.ptxas)) {
        diag_error(d, (Loc){ 0 }, "ptxas '%s' is not an executable file", j->o.ptxas);
        return false;
    }
    StrBuf err = { 0 };
    if (pass_options_parse(j->o.pass_options, &j->popts, &err) || pass_dims_parse(j->o.dims, &j->dims, &err)) {
        diag_error(d, (Loc){ 0 }, "%s", err.buf);
        sb_free(&err);
        return false;
    }
    return check_pass_list(j) && set_arch(j);
}

/* ---- results ---- */

tilec_result *tc_result_new(void)
{
    Arena *a = arena_new();
    tilec_result *r = arena_alloc(a, sizeof *r);
    r->arena = a;
    diag_init(&r->diag, a);
    return r;
}

static void set_text(Job *j, tilec_output which, const StrBuf *sb)
{
    j->r->text[which] = arena_strndup(j->r->arena, sb->buf ? sb->buf : "", sb->len);
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

/* ---- the compile flow ---- */

static void time_row(Job *j, const char *what, TcClock t0)
{
    if (j->o.time_passes)
        tc_time_row(&j->timing, what, t0);
}

static bool wants_print(const Job *j, const char *name)
{
    for (size_t i = 0; i < j->o.nprint_after; i++)
        if (strcmp(j->o.print_after[i], "*") == 0 || strcmp(j->o.print_after[i], name) == 0)
            return true;
    return false;
}

static bool is_tir(const Job *j)
{
    if (j->o.language)
        return strcmp(j->o.language, "tir") == 0;
    size_t n = strlen(j->name);
    return n >= 4 && strcmp(j->name + n - 4, ".tir") == 0;
}

static bool check_language(Job *j)
{
    const char *l = j->o.language;
    if (l && strcmp(l, "tir") != 0 && strcmp(l, "tile") != 0) {
        diag_error(&j->r->diag, (Loc){ 0 }, "unknown input language '%s' (valid: tile, tir)", l);
        return false;
    }
    if (is_tir(j) && j->o.emit < TILEC_EMIT_TIR) {
        diag_error(&j->r->diag, (Loc){ j->name, 0, 0 }, "--emit=%s needs a .tile input, not Tile IR text",
                   j->o.emit == TILEC_EMIT_TOKENS ? "tokens" : "ast");
        return false;
    }
    return true;
}

/* What the passes read of the job: target, device options, dim sizes. */
static void job_pass_ctx(Job *j, PassCtx *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->diag = &j->r->diag;
    ctx->target = j->target;
    ctx->smem_per_block = j->popts.smem_per_block;
    ctx->sms = j->popts.sms;
    /* unset (-1) -> 0, the pass decides; 0 (off) -> -1 */
    ctx->lazy_rescale = j->popts.lazy_rescale < 0 ? 0 : j->popts.lazy_rescale == 0 ? -1 : j->popts.lazy_rescale;
    ctx->exp2_emu = j->popts.exp2_emu < 0 ? 0 : j->popts.exp2_emu == 0 ? -1 : j->popts.exp2_emu;
    ctx->tf32 = j->popts.tf32 == 1;
    ctx->dims = &j->dims;
    ctx->opt_level = j->o.opt_level;
    ctx->remarks = &j->remarks;
    ctx->portable = j->portable;
}

/* ---- tile sizes chosen by the compiler (`BM: int = auto`) ---- */

static bool is_auto(const AstParam *p)
{
    return p->deflt && p->deflt->kind == E_NAME && strcmp(p->deflt->name, "auto") == 0;
}

static bool defined(const Job *j, const char *name)
{
    for (size_t i = 0; i < j->o.ndefines; i++)
        if (strcmp(j->o.defines[i].name, name) == 0)
            return true;
    return false;
}

/* The first kernel's `auto` params that no define pins get values: the
 * kernel is lowered with distinct probe values (multiples of 16 that no
 * other extent is likely to take), pass_choose_tiles reads the roles they
 * play, and the choices join the defines (so every kernel of the file
 * that declares the same names takes them). */
static void choose_auto(Job *j, const AstModule *ast, FeDefine *defs, int *ndefs)
{
    static const int64_t probes[PASS_MAX_AUTO] = { 112, 176, 208, 272, 304, 368, 464, 496 };
    TileChoice tc = { .n = 0 };
    const AstKernel *k = NULL;
    for (int i = 0; i < ast->nkernels && !tc.n; i++)
        for (int c = 0; c < ast->kernels[i].nconsts && tc.n < PASS_MAX_AUTO; c++) {
            const AstParam *p = &ast->kernels[i].consts[c];
            if (is_auto(p) && strcmp(p->type_name, "int") == 0 && !defined(j, p->name)) {
                k = &ast->kernels[i];
                tc.name[tc.n] = p->name;
                tc.probe[tc.n] = probes[tc.n];
                tc.n++;
            }
        }
    /* tiles.candidate: the candidate to take (autotuning); the portable
     * variant keeps the choice */
    int64_t want = j->portable ? 0 : j->popts.tile_candidate < 0 ? 0 : j->popts.tile_candidate;
    if (!tc.n) {
        if (want > 0)
            diag_error(&j->r->diag, (Loc){ 0 }, "pass option tiles.candidate=%lld: no kernel of %s has an `auto` "
                       "tile param left to choose, so its one candidate is the kernel as written (0)",
                       (long long)want, j->name);
        return;
    }
    Arena *a = j->r->arena;
    int base = *ndefs;
    for (int i = 0; i < tc.n; i++)
        defs[base + i] = (FeDefine){ tc.name[i], arena_printf(a, "%lld", (long long)tc.probe[i]) };
    Diag pd;
    diag_init(&pd, a);
    Module *pm = fe_lower(a, ast, j->name, defs, base + tc.n, &pd);
    Func *pf = NULL;
    for (int i = 0; pm && i < pm->nfuncs; i++)
        if (strcmp(pm->funcs[i]->name, k->name) == 0)
            pf = pm->funcs[i];
    *ndefs = base + tc.n;
    if (!pf || pd.nerrors)
        return;   /* lowered again below with the probes: the errors show there */
    PassCtx ctx;
    job_pass_ctx(j, &ctx);
    StrBuf why = { 0 };
    if (pass_choose_tiles(pf, &ctx, &tc, &why)) {
        diag_error(&j->r->diag, k->loc, "%s", why.buf ? why.buf : "no tile size chosen");
    } else if (want >= tc.ncand) {
        diag_error(&j->r->diag, k->loc, "pass option tiles.candidate=%lld: the tile choice has %d candidate%s for "
                   "@%s on %s (0 to %d; `tilec --candidates` lists them)", (long long)want, tc.ncand,
                   tc.ncand == 1 ? "" : "s", k->name, pass_target_name(&ctx), tc.ncand - 1);
    } else {
        for (int i = 0; i < tc.n; i++)
            defs[base + i].value = arena_printf(a, "%lld", (long long)tc.cand[want][i]);
        sb_printf(&j->remarks, "tiles: @%s: %s\n", k->name, why.buf ? why.buf : "");
        if (want > 0) {
            sb_printf(&j->remarks, "tiles: @%s: tiles.candidate=%lld takes", k->name, (long long)want);
            for (int i = 0; i < tc.n; i++)
                sb_printf(&j->remarks, "%s %s = %lld", i ? ";" : "", tc.name[i], (long long)tc.cand[want][i]);
            sb_puts(&j->remarks, "\n");
        }
        if (j->cands) {
            *j->cands = tc;
            j->cand_kernel = k->name;
        }
    }
    sb_free(&why);
}

/* Front end: source -> Module (or tokens / AST output). NULL when it stops. */
static Module *lower_ast(Job *j, const AstModule *ast);

static Module *front_end(Job *j, const char *src, size_t len)
{
    Arena *a = j->r->arena;
    Diag *d = &j->r->diag;
    TcClock t0 = tc_clock();
    if (is_tir(j)) {
        if (j->popts.tile_candidate > 0)
            diag_error(d, (Loc){ 0 }, "pass option tiles.candidate=%lld: Tile IR input has no `auto` tile "
                       "params, so its one candidate is the IR as written (0)", (long long)j->popts.tile_candidate);
        Module *m = ir_parse(a, j->name, src, len, d);
        time_row(j, "parse-tir", t0);
        return d->nerrors ? NULL : m;
    }
    TokenList tl = fe_lex(a, j->name, src, len, d);
    time_row(j, "lex", t0);
    if (d->nerrors)
        return NULL;
    if (j->o.emit == TILEC_EMIT_TOKENS) {
        StrBuf sb = { 0 };
        fe_print_tokens(&tl, &sb);
        set_text(j, TILEC_OUT_TOKENS, &sb);
        sb_free(&sb);
        return NULL;
    }
    t0 = tc_clock();
    AstModule *ast = fe_parse(a, &tl, d);
    fe_tokens_release(a, &tl);
    time_row(j, "parse", t0);
    if (d->nerrors || !ast)
        return NULL;
    if (j->o.emit == TILEC_EMIT_AST) {
        StrBuf sb = { 0 };
        fe_print_ast(ast, &sb);
        set_text(j, TILEC_OUT_AST, &sb);
        sb_free(&sb);
        return NULL;
    }
    j->ast = ast;
    return lower_ast(j, ast);
}

/* The kernels of ast lowered to Tile IR: the caller's defines, and the
 * tiles of `= auto` params chosen (by the portable rules in portable mode). */
static Module *lower_ast(Job *j, const AstModule *ast)
{
    Arena *a = j->r->arena;
    Diag *d = &j->r->diag;
    FeDefine *defs = arena_alloc(a, sizeof(FeDefine) * (j->o.ndefines + PASS_MAX_AUTO + 1));
    for (size_t i = 0; i < j->o.ndefines; i++)
        defs[i] = (FeDefine){ j->o.defines[i].name, j->o.defines[i].value };
    int ndefs = (int)j->o.ndefines;
    TcClock t0 = tc_clock();
    choose_auto(j, ast, defs, &ndefs);
    if (d->nerrors)
        return NULL;
    Module *m = fe_lower(a, ast, j->name, defs, ndefs, d);
    time_row(j, "lower", t0);
    return d->nerrors ? NULL : m;
}

static void print_ir(Job *j, const Module *m, StrBuf *out)
{
    PrintOpts po = { j->o.print_locs != 0 };
    ir_print_module(m, &po, out);
}

/* Verify the input IR, print it for --print-after=lower, run the passes. */
static bool middle_end(Job *j, Module *m)
{
    Diag *d = &j->r->diag;
    TcClock t0 = tc_clock();
    if (ir_verify(m, is_tir(j) ? "parse" : "lower", d) || fe_check_limits(m, d))
        return false;
    time_row(j, "verify", t0);
    if (wants_print(j, "lower")) {
        sb_puts(&j->dump, "// -----// IR after lower //----- //\n");
        print_ir(j, m, &j->dump);
    }
    PassCtx ctx;
    job_pass_ctx(j, &ctx);
    ctx.print_after = j->o.print_after;
    ctx.nprint_after = (int)j->o.nprint_after;
    ctx.verify_each = j->o.verify_each != 0;
    ctx.time_passes = j->o.time_passes != 0;
    ctx.print_locs = j->o.print_locs != 0;
    ctx.dump = &j->dump;
    ctx.timing = &j->timing;
    ctx.only = j->o.passes;
    return passes_run(m, &ctx) == 0 && d->nerrors == 0;
}

/* Assemble the PTX with tilec_options.ptxas (unless ptxas_no_check). PTX
 * that ptxas rejects is a compiler bug (an internal error) and is not
 * handed out. */
static void check_ptx(Job *j)
{
    tilec_result *r = j->r;
    if (!j->o.ptxas || j->o.ptxas_no_check || !r->text[TILEC_OUT_PTX])
        return;
    j->ptxas_ran = true;
    j->ptxas_run.rc = tc_ptxas_run(r->arena, j->o.ptxas, r->arch, r->text[TILEC_OUT_PTX], &j->ptxas_run.log);
    if (j->ptxas_run.rc == 0)
        return;
    diag_error(&r->diag, (Loc){ j->name, 0, 0 }, "internal compiler error: ptxas rejected the PTX for %s: %s",
               r->arch, j->ptxas_run.log);
    r->text[TILEC_OUT_PTX] = NULL;
    r->text[TILEC_OUT_META] = NULL;
}

static void back_end(Job *j, Module *m)
{
    Diag *d = &j->r->diag;
    if (!cg_target_supported(j->target)) {
        diag_error(d, (Loc){ 0 }, "code generation for %s is not available in this build (use --emit=tir)",
                   j->r->arch);
        j->r->status = TILEC_ERR_UNSUPPORTED;
        return;
    }
    CgOptions co = { j->target, j->popts.smem_per_block, j->o.opt_level, j->o.emit == TILEC_EMIT_LLVM,
                     j->o.emit == TILEC_EMIT_PTX, (int)j->o.debug_info, NULL };
    char cwd[4096];
    if (co.debug_info && j->name[0] != '/' && getcwd(cwd, sizeof cwd))
        co.debug_dir = cwd;
    CgResult cr;
    memset(&cr, 0, sizeof cr);
    int nerr = cg_compile(m, &co, &cr, d, j->o.time_passes ? &j->timing : NULL);
    if (nerr == 0 && d->nerrors == 0) {
        tc_stamp_ptx(&cr.ptx);
        tc_stamp_meta(&cr.meta);
        if (co.want_llvm && cr.llvm_ir.buf)
            set_text(j, TILEC_OUT_LLVM, &cr.llvm_ir);
        if (co.want_ptx && cr.ptx.buf)
            set_text(j, TILEC_OUT_PTX, &cr.ptx);
        if (cr.meta.buf)
            set_text(j, TILEC_OUT_META, &cr.meta);
        check_ptx(j);
    }
    if (cr.report.buf)
        sb_putn(&j->cgreport, cr.report.buf, cr.report.len);
    sb_free(&cr.llvm_ir);
    sb_free(&cr.ptx);
    sb_free(&cr.meta);
    sb_free(&cr.report);
}

static void report_section(StrBuf *out, const char *title, const StrBuf *body)
{
    sb_printf(out, "== %s ==\n", title);
    if (body->len)
        sb_putn(out, body->buf, body->len);
    else
        sb_puts(out, "no decisions yet\n");
}

static void finish_outputs(Job *j)
{
    if (j->dump.len)
        set_text(j, TILEC_OUT_DUMP, &j->dump);
    if (j->o.time_passes) {
        StrBuf t = { 0 };
        sb_puts(&t, TC_TIME_HEADER);
        if (j->timing.buf)
            sb_putn(&t, j->timing.buf, j->timing.len);
        tc_time_row(&t, "total", j->t_start);
        set_text(j, TILEC_OUT_TIMING, &t);
        sb_free(&t);
    }
    if (j->o.report) {
        StrBuf rep = { 0 };
        sb_printf(&rep, "tilec report: %s for %s\n\n", j->name, j->r->arch ? j->r->arch : "?");
        report_section(&rep, "passes", &j->remarks);
        sb_putc(&rep, '\n');
        report_section(&rep, "code generation", &j->cgreport);
        /* Registers, spills and occupancy: runs ptxas, so only here. */
        StrBuf res = { 0 };
        tc_report_resources(j->r->arena, &res, j->r->arch, j->r->text[TILEC_OUT_META],
                            j->r->text[TILEC_OUT_PTX], j->o.ptxas, j->ptxas_ran ? &j->ptxas_run : NULL);
        sb_putc(&rep, '\n');
        report_section(&rep, "resources", &res);
        sb_free(&res);
        sb_puts(&rep, "\n== roofline ==\n");
        if (j->roofline.len)
            sb_putn(&rep, j->roofline.buf, j->roofline.len);
        else
            sb_puts(&rep, "no kernels counted (the roofline is counted on Tile IR after the passes)\n");
        set_text(j, TILEC_OUT_REPORT, &rep);
        sb_free(&rep);
    }
}

/* ---- the portable variant of warp-specialized kernels ---- */

static bool has_ws(Func *f) { return ir_find_op(f, OP_WS) != NULL; }

/* A warp-specialized kernel reads its tensors through TMA, which needs
 * 16-byte aligned bases and strides; tilec accepts any view. So the module
 * also carries each such kernel compiled without warp specialization,
 * named tilec_portable_NAME (the prefix is reserved), and the kernel names
 * it in its `fallback` metadata record: the runtime launches it, and says
 * so, for a view TMA cannot take. The source's AST is lowered again (the
 * IR of the first run has been rewritten; the tokens and the AST are
 * reused) in portable mode: `= auto` tiles take
 * the portable rules (PassCtx.portable reaches pass_choose_tiles too) and
 * the passes make no roles; its decisions are not reported twice. */
static void add_portable(Job *j, Module *m, const char *src, size_t len)
{
    bool any = false;
    for (int i = 0; i < m->nfuncs; i++)
        any |= has_ws(m->funcs[i]);
    if (!any || is_tir(j))
        return;
    StrBuf remarks = j->remarks, dump = j->dump, timing = j->timing;
    int time_passes = j->o.time_passes;
    memset(&j->remarks, 0, sizeof j->remarks);
    memset(&j->dump, 0, sizeof j->dump);
    j->o.time_passes = 0;
    j->portable = true;   /* the tile choice (front_end) and the passes alike */
    Module *p = j->ast ? lower_ast(j, j->ast) : front_end(j, src, len);
    bool ok = false;
    if (p) {
        PassCtx ctx;
        job_pass_ctx(j, &ctx);
        ctx.remarks = NULL;
        ctx.verify_each = j->o.verify_each != 0;
        ok = passes_run(p, &ctx) == 0 && j->r->diag.nerrors == 0;
    }
    j->portable = false;
    sb_free(&j->remarks);
    sb_free(&j->dump);
    j->remarks = remarks;
    j->dump = dump;
    j->timing = timing;
    j->o.time_passes = time_passes;
    if (!ok)
        return;
    int n = m->nfuncs;
    for (int i = 0; i < n; i++) {
        Func *f = m->funcs[i];
        if (!has_ws(f))
            continue;
        for (int k = 0; k < p->nfuncs; k++) {
            Func *g = p->funcs[k];
            if (strcmp(g->name, f->name) != 0 || has_ws(g))
                continue;
            size_t nl = strlen(f->name) + sizeof "tilec_portable_";
            char *name = arena_alloc(m->arena, nl);
            snprintf(name, nl, "tilec_portable_%s", f->name);
            g->name = name;
            g->mod = m;
            f->fallback = name;
            Func **fs = arena_alloc(m->arena, sizeof(Func *) * (size_t)(m->nfuncs + 1));
            memcpy(fs, m->funcs, sizeof(Func *) * (size_t)m->nfuncs);
            fs[m->nfuncs++] = g;
            m->funcs = fs;
        }
    }
}

static void run_job(Job *j, const char *src, size_t len)
{
    Module *m = front_end(j, src, len);
    if (!m || j->o.emit < TILEC_EMIT_TIR)
        return;
    if (!middle_end(j, m))
        return;
    if (j->o.report)   /* before the code generator: the IR the passes left */
        tc_report_roofline(j->r->arena, &j->roofline, m, &j->dims, j->target, j->popts.sms);
    if (j->o.keep_ir)
        j->r->module = m;   /* lives in the result's arena: tilec_interpret runs it */
    if (j->o.emit == TILEC_EMIT_TIR) {
        StrBuf sb = { 0 };
        print_ir(j, m, &sb);
        set_text(j, TILEC_OUT_TIR, &sb);
        sb_free(&sb);
    }
    if (j->o.emit >= TILEC_EMIT_LLVM) {
        add_portable(j, m, src, len);
        back_end(j, m);
    }
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
    copy_options(&j->o, opts);
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
    if (!check_options(&j) || !check_language(&j))
        r->status = TILEC_ERR_USAGE;
    else {
        cacheable = tc_cache_usable(&j.o);
        if (cacheable) {
            tc_cache_key(&key, j.name, text, len, &j.o, tilec_version());
            if (cache_fetch(r, &key, &j.o))
                return r->status;   /* nothing of this call's own to free yet */
        }
        run_job(&j, text, len);
    }
    if (r->status == TILEC_OK)
        r->status = status_from_diag(&r->diag, TILEC_ERR_INPUT);
    finish_outputs(&j);
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
    if (!check_options(&j) || !check_language(&j)) {
        r->status = TILEC_ERR_USAGE;
    } else {
        j.popts.tile_candidate = -1;   /* the list does not depend on the one taken */
        (void)front_end(&j, text, len);
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
        set_text(&j, TILEC_OUT_REPORT, &rep);
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

size_t tilec_num_passes(void) { return (size_t)tc_npasses; }

const char *tilec_pass_name(size_t i) { return i < (size_t)tc_npasses ? tc_pass_table[i].name : NULL; }

const char *tilec_pass_summary(size_t i)
{
    return i < (size_t)tc_npasses ? tc_pass_table[i].summary : NULL;
}

_Static_assert((int)TILEC_WARN_UNUSED_PARAM == (int)WARN_UNUSED_PARAM && (int)TILEC_WARN_DEAD_TILE == (int)WARN_DEAD_TILE &&
                   (int)TILEC_WARN_STORE_RACE == (int)WARN_STORE_RACE && (int)TILEC_WARN_ALL == (int)WARN_ALL,
               "tilec_warning and DiagWarn agree");

size_t tilec_num_warnings(void) { return DIAG_NWARN; }
const char *tilec_warning_name(size_t i) { return i < DIAG_NWARN ? diag_warn_names[i] : NULL; }
const char *tilec_warning_help(size_t i) { return i < DIAG_NWARN ? diag_warn_help[i] : NULL; }

static const PassOptionInfo *option_at(size_t i)
{
    return i < (size_t)tc_npass_options ? &tc_pass_options[i] : NULL;
}

size_t tilec_num_pass_options(void) { return (size_t)tc_npass_options; }
const char *tilec_pass_option_name(size_t i) { return option_at(i) ? option_at(i)->name : NULL; }
const char *tilec_pass_option_type(size_t i) { return option_at(i) ? option_at(i)->type : NULL; }
const char *tilec_pass_option_help(size_t i) { return option_at(i) ? option_at(i)->help : NULL; }
