/* job.c - one compilation (job.h): the compile flow (read -> lex -> parse
 * -> lower -> verify -> passes -> print -> codegen), the tile sizes the
 * compiler chooses for `= auto` params, the portable variant of
 * warp-specialized kernels, and the outputs (dump, timing, report) it
 * leaves in the result.
 *
 * Everything the job makes lives in the result's arena, except its own
 * StrBufs (freed by driver/api.c when the job ends); the IR lives there
 * too and is kept with tilec_options.keep_ir.
 */
#define _POSIX_C_SOURCE 200809L
#include "tilec.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "ir/ir.h"
#include "lib/version.h"
#include "job.h"
#include "roofline.h"

/* ---- the compile flow ---- */

void tc_job_set_text(Job *j, tilec_output which, const StrBuf *sb)
{
    j->r->text[which] = arena_strndup(j->r->arena, sb->buf ? sb->buf : "", sb->len);
}

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
    ctx->one_tile = j->popts.persistent == 0;
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

Module *tc_job_front_end(Job *j, const char *src, size_t len)
{
    Arena *a = j->r->arena;
    Diag *d = &j->r->diag;
    TcClock t0 = tc_clock();
    if (tc_job_is_tir(j)) {
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
        tc_job_set_text(j, TILEC_OUT_TOKENS, &sb);
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
        tc_job_set_text(j, TILEC_OUT_AST, &sb);
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
    if (ir_verify(m, tc_job_is_tir(j) ? "parse" : "lower", d) || fe_check_limits(m, d))
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
            tc_job_set_text(j, TILEC_OUT_LLVM, &cr.llvm_ir);
        if (co.want_ptx && cr.ptx.buf)
            tc_job_set_text(j, TILEC_OUT_PTX, &cr.ptx);
        if (cr.meta.buf)
            tc_job_set_text(j, TILEC_OUT_META, &cr.meta);
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

void tc_job_finish_outputs(Job *j)
{
    if (j->dump.len)
        tc_job_set_text(j, TILEC_OUT_DUMP, &j->dump);
    if (j->o.time_passes) {
        StrBuf t = { 0 };
        sb_puts(&t, TC_TIME_HEADER);
        if (j->timing.buf)
            sb_putn(&t, j->timing.buf, j->timing.len);
        tc_time_row(&t, "total", j->t_start);
        tc_job_set_text(j, TILEC_OUT_TIMING, &t);
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
        tc_job_set_text(j, TILEC_OUT_REPORT, &rep);
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
    if (!any || tc_job_is_tir(j))
        return;
    StrBuf remarks = j->remarks, dump = j->dump, timing = j->timing;
    int time_passes = j->o.time_passes;
    memset(&j->remarks, 0, sizeof j->remarks);
    memset(&j->dump, 0, sizeof j->dump);
    j->o.time_passes = 0;
    j->portable = true;   /* the tile choice (tc_job_front_end) and the passes alike */
    Module *p = j->ast ? lower_ast(j, j->ast) : tc_job_front_end(j, src, len);
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

void tc_job_compile(Job *j, const char *src, size_t len)
{
    Module *m = tc_job_front_end(j, src, len);
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
        tc_job_set_text(j, TILEC_OUT_TIR, &sb);
        sb_free(&sb);
    }
    if (j->o.emit >= TILEC_EMIT_LLVM) {
        add_portable(j, m, src, len);
        back_end(j, m);
    }
}
