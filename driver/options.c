/* options.c - the options of a compilation (tilec_options): defaults and
 * the copy of the caller's struct, the checks a Job runs before anything
 * is compiled (ranges, pass names, defines, language) with the target
 * resolution of -arch, and the tables the options name (passes, warnings,
 * pass options) as the public API lists them.
 *
 * Errors go to the job's diagnostics as usage errors; nothing here
 * allocates but those messages. The tables are read-only static data.
 */
#include "tilec.h"

#include <stdio.h>
#include <string.h>

#include "job.h"

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
void tc_options_copy(tilec_options *dst, const tilec_options *src)
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

bool tc_job_check_options(Job *j)
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

bool tc_job_is_tir(const Job *j)
{
    if (j->o.language)
        return strcmp(j->o.language, "tir") == 0;
    size_t n = strlen(j->name);
    return n >= 4 && strcmp(j->name + n - 4, ".tir") == 0;
}

bool tc_job_check_language(Job *j)
{
    const char *l = j->o.language;
    if (l && strcmp(l, "tir") != 0 && strcmp(l, "tile") != 0) {
        diag_error(&j->r->diag, (Loc){ 0 }, "unknown input language '%s' (valid: tile, tir)", l);
        return false;
    }
    if (tc_job_is_tir(j) && j->o.emit < TILEC_EMIT_TIR) {
        diag_error(&j->r->diag, (Loc){ j->name, 0, 0 }, "--emit=%s needs a .tile input, not Tile IR text",
                   j->o.emit == TILEC_EMIT_TOKENS ? "tokens" : "ast");
        return false;
    }
    return true;
}

/* ---- the tables the options name ---- */

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
