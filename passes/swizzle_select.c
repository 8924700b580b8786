/* swizzle_select.c - the swizzle selection analysis: for one shared tile and
 * the instructions that write and read it, pick the layout (identity,
 * padding or a 32B/64B/128B XOR swizzle) with the fewest predicted
 * wavefronts under the bank-conflict model (bank_model.c).
 *
 * Needs: the tile's dtype and 2-D shape, and its uses (access kind, whether
 * a TMA / wgmma / tcgen05 descriptor must describe it, weight).
 * Guarantees: the chosen layout is admissible for every use (every pattern
 * covers it; descriptor users get a descriptor mode: the widest swizzle the
 * rows allow, when one does); no admissible candidate has fewer weighted
 * wavefronts; among equals it prefers
 * descriptor modes, then the smaller footprint, then identity, then the
 * widest swizzle.
 * The decision records the wavefronts each use would take on the identity
 * layout and takes on the chosen one, and a one-line explanation for the
 * kernel's report. The thin pass that stamps the choice on the IR lives
 * apart from this file.
 */
#include "smem_model.h"

#include <stdio.h>
#include <string.h>

#define MAX_CANDS 8

static bool use_needs_desc(const SmemUse *u)
{
    return u->needs_desc || u->kind == SA_TMA || u->kind == SA_MMA_DESC;
}

static int64_t use_weight(const SmemUse *u) { return u->weight > 0 ? u->weight : 1; }

/* Candidates in preference order for equal cost: identity, swizzles from
 * the widest (fewest column panels: fewer TMA boxes and descriptors),
 * paddings. Returns how many. */
static int make_candidates(int eb, int64_t rows, int64_t cols, const SmemUse *uses,
                           int nuses, SmemCandidate *c)
{
    int n = 0, widest = 0;
    c[n++].layout = pass_smem_identity(eb, rows, cols);
    for (int b = 3; b >= 1; b--) {
        SmemLayout l = pass_smem_swizzled(eb, rows, cols, b);
        if (pass_smem_swizzle_width(b) <= l.row_bytes)
            c[n++].layout = l;
    }
    for (int i = 0; i < nuses; i++)
        if (pass_smem_access_width(uses[i].kind) > widest)
            widest = pass_smem_access_width(uses[i].kind);
    int small = widest > eb ? widest : eb;   /* keeps accesses and elements aligned */
    if (small < 4)
        small = 4;
    if (small < 16)
        c[n++].layout = pass_smem_padded(eb, rows, cols, small);
    c[n++].layout = pass_smem_padded(eb, rows, cols, 16);
    return n;
}

/* Why candidate l cannot serve the uses, or NULL. */
static const char *excluded_why(const SmemLayout *l, const SmemUse *uses, int nuses)
{
    const char *why = pass_smem_layout_check(l);
    if (why)
        return why;
    for (int i = 0; i < nuses; i++) {
        if ((why = pass_smem_access_check(l, uses[i].kind)))
            return why;
        if (use_needs_desc(&uses[i]) && !pass_smem_desc_ok(l))
            return "a descriptor cannot describe padding";
        if (uses[i].kind == SA_MMA_DESC && l->xform == SMX_IDENTITY && l->row_bytes > 16)
            return "wgmma/tcgen05 no-swizzle mode is not row-major";
    }
    return NULL;
}

/* Descriptor users (TMA boxes, wgmma operands) take the widest admissible
 * swizzle: a box and a run of descriptors per W-byte panel, so the fewest
 * panels; the others are excluded. No swizzle fits rows of 16 bytes: then
 * the model chooses among what is left. */
static void keep_widest(SmemCandidate *c, int n, const SmemUse *uses, int nuses)
{
    bool desc = false;
    for (int i = 0; i < nuses; i++)
        desc = desc || use_needs_desc(&uses[i]);
    int w = -1;
    for (int i = 0; desc && i < n; i++)
        if (!c[i].excluded && c[i].layout.xform == SMX_SWIZZLE &&
            (w < 0 || c[i].layout.swz_bits > c[w].layout.swz_bits))
            w = i;
    for (int i = 0; w >= 0 && i < n; i++)
        if (i != w && !c[i].excluded)
            c[i].excluded = "descriptor users take the widest swizzle the rows allow";
}

/* Costs candidate c; ac[i] receives use i's cover cost (admissible only). */
static void eval_candidate(SmemCandidate *c, const SmemUse *uses, int nuses, SmemAccessCost *ac)
{
    c->bytes = pass_smem_size(&c->layout);
    c->align = pass_smem_align(&c->layout);
    c->excluded = excluded_why(&c->layout, uses, nuses);
    if (c->excluded)
        return;
    for (int i = 0; i < nuses; i++) {
        ac[i] = pass_smem_access_cost(&c->layout, uses[i].kind);
        c->wavefronts += use_weight(&uses[i]) * ac[i].total.wavefronts;
    }
}

/* Is a strictly better than b? (cost, then descriptor modes, then bytes;
 * candidate order decides the rest.) */
static bool better(const SmemCandidate *a, const SmemCandidate *b)
{
    if (a->wavefronts != b->wavefronts)
        return a->wavefronts < b->wavefronts;
    if (pass_smem_desc_ok(&a->layout) != pass_smem_desc_ok(&b->layout))
        return pass_smem_desc_ok(&a->layout);
    return a->bytes < b->bytes;
}

/* Format x / n compactly: "4", "2.5". */
static void fmt_ratio(char *buf, size_t n, int64_t x, int64_t d)
{
    if (d <= 0)
        d = 1;
    if (x % d == 0)
        snprintf(buf, n, "%lld", (long long)(x / d));
    else
        snprintf(buf, n, "%.2g", (double)x / (double)d);
}

/* "ldmatrix: 4 wavefronts/instr (was 32: 8-way conflict)" */
static void explain_use(const SmemUseCost *u, bool first, StrBuf *sb)
{
    char after[32], before[32], way[32];
    fmt_ratio(after, sizeof after, u->after.wavefronts, u->ninstr);
    fmt_ratio(before, sizeof before, u->before.wavefronts, u->ninstr);
    sb_printf(sb, "%s: %s%s (was %s", pass_smem_access_name(u->kind), after,
              first ? " wavefronts/instr" : "", before);
    if (u->before.wavefronts > u->before.ideal) {
        fmt_ratio(way, sizeof way, u->before.wavefronts, u->before.ideal);
        sb_printf(sb, ": %s-way conflict", way);
    }
    sb_putc(sb, ')');
    if (u->after.wavefronts > u->after.ideal) {
        fmt_ratio(way, sizeof way, u->after.wavefronts, u->after.ideal);
        sb_printf(sb, " [still %s-way]", way);
    }
}

static const char *make_explain(Arena *a, DType dt, const SmemDecision *dec)
{
    StrBuf sb = { 0 };
    char name[32];
    pass_smem_layout_name(&dec->layout, name, sizeof name);
    sb_printf(&sb, "smem tile %lldx%lld %s (%lld B rows): %s",
              (long long)dec->layout.rows, (long long)dec->layout.cols, dtype_name(dt),
              (long long)dec->layout.row_bytes, name);
    for (int i = 0; i < dec->nuses; i++) {
        sb_puts(&sb, i == 0 ? "; " : ", ");
        explain_use(&dec->uses[i], i == 0, &sb);
    }
    char *s = arena_strdup(a, sb.buf ? sb.buf : "");
    sb_free(&sb);
    return s;
}

/* Per use: before = on the identity layout (idc, or computed here when
 * NULL: identity was excluded), after = on the chosen one (chc). */
static void fill_use_costs(Arena *a, const SmemUse *uses, int nuses, SmemDecision *dec,
                           const SmemAccessCost *idc, const SmemAccessCost *chc)
{
    SmemLayout id = pass_smem_identity(dec->layout.elem_bytes, dec->layout.rows, dec->layout.cols);
    dec->uses = arena_alloc(a, sizeof(SmemUseCost) * (size_t)(nuses > 0 ? nuses : 1));
    dec->nuses = nuses;
    for (int i = 0; i < nuses; i++) {
        SmemUseCost *u = &dec->uses[i];
        SmemAccessCost b = idc ? idc[i] : pass_smem_access_cost(&id, uses[i].kind);
        SmemAccessCost c = chc[i];
        int64_t w = use_weight(&uses[i]);
        u->kind = uses[i].kind;
        u->ninstr = c.ninstr;
        u->before = b.total;
        u->after = c.total;
        dec->before += w * b.total.wavefronts;
        dec->after += w * c.total.wavefronts;
        dec->ideal += w * c.total.ideal;
    }
}

/* The first use whose pattern cannot cover the tile at all. */
static const char *uses_check(const SmemLayout *id, const SmemUse *uses, int nuses, int *which)
{
    for (int i = 0; i < nuses; i++) {
        const char *why = pass_smem_access_check(id, uses[i].kind);
        if (why) {
            *which = i;
            return why;
        }
    }
    return NULL;
}

/* "no shared layout of tile 64x24 bf16 serves all its uses: identity (...), ..." */
static const char *no_layout_msg(Arena *a, DType dt, int64_t rows, int64_t cols,
                                 const SmemDecision *dec)
{
    StrBuf sb = { 0 };
    char name[32];
    sb_printf(&sb, "no shared layout of tile %lldx%lld %s serves all its uses:",
              (long long)rows, (long long)cols, dtype_name(dt));
    for (int i = 0; i < dec->ncands; i++) {
        pass_smem_layout_name(&dec->cands[i].layout, name, sizeof name);
        sb_printf(&sb, "%s %s (%s)", i ? "," : "", name, dec->cands[i].excluded);
    }
    char *s = arena_strdup(a, sb.buf);
    sb_free(&sb);
    return s;
}

static int fail(Arena *a, SmemDecision *out, Diag *d, Loc loc, const char *msg)
{
    out->explain = arena_strdup(a, msg);
    if (d)
        diag_error(d, loc, "%s", msg);
    return 1;
}

int pass_smem_select(Arena *a, DType dt, int64_t rows, int64_t cols,
                     const SmemUse *uses, int nuses, SmemDecision *out,
                     Diag *d, Loc loc)
{
    memset(out, 0, sizeof *out);
    int eb = dtype_bits(dt) / 8, which = 0;
    SmemLayout id = pass_smem_identity(eb > 0 ? eb : 1, rows, cols);
    const char *why = pass_smem_layout_check(&id);
    if (!why && (why = uses_check(&id, uses, nuses, &which)))
        why = arena_printf(a, "shared tile %lldx%lld %s cannot be accessed by %s: %s",
                           (long long)rows, (long long)cols, dtype_name(dt),
                           pass_smem_access_name(uses[which].kind), why);
    if (why)
        return fail(a, out, d, loc, why);
    out->cands = arena_alloc(a, sizeof(SmemCandidate) * MAX_CANDS);
    out->ncands = make_candidates(id.elem_bytes, rows, cols, uses, nuses, out->cands);
    /* costs[i * nuses + u]: candidate i, use u (reused for the use table) */
    SmemAccessCost *costs = arena_alloc(a, sizeof(SmemAccessCost) * MAX_CANDS
                                               * (size_t)(nuses > 0 ? nuses : 1));
    int best = -1;
    for (int i = 0; i < out->ncands; i++)
        eval_candidate(&out->cands[i], uses, nuses, costs + (size_t)i * nuses);
    keep_widest(out->cands, out->ncands, uses, nuses);
    for (int i = 0; i < out->ncands; i++)
        if (!out->cands[i].excluded && (best < 0 || better(&out->cands[i], &out->cands[best])))
            best = i;
    if (best < 0)
        return fail(a, out, d, loc, no_layout_msg(a, dt, rows, cols, out));
    out->layout = out->cands[best].layout;
    out->bytes = out->cands[best].bytes;
    out->align = out->cands[best].align;
    out->desc_ok = pass_smem_desc_ok(&out->layout);
    /* make_candidates() puts identity first */
    fill_use_costs(a, uses, nuses, out, out->cands[0].excluded ? NULL : costs,
                   costs + (size_t)best * nuses);
    out->explain = make_explain(a, dt, out);
    return 0;
}

void pass_smem_decision_print(const SmemDecision *dec, StrBuf *out)
{
    char name[32];
    sb_printf(out, "// %s\n", dec->explain ? dec->explain : "");
    for (int i = 0; i < dec->nuses; i++) {
        const SmemUseCost *u = &dec->uses[i];
        sb_printf(out, "//   %-22s %lld instr: %lld -> %lld wavefronts (ideal %lld)\n",
                  pass_smem_access_name(u->kind), (long long)u->ninstr,
                  (long long)u->before.wavefronts, (long long)u->after.wavefronts,
                  (long long)u->after.ideal);
    }
    for (int i = 0; i < dec->ncands; i++) {
        const SmemCandidate *c = &dec->cands[i];
        pass_smem_layout_name(&c->layout, name, sizeof name);
        if (c->excluded)
            sb_printf(out, "//   candidate %-13s excluded: %s\n", name, c->excluded);
        else
            sb_printf(out, "//   candidate %-13s %lld wavefronts, %lld B, align %d\n", name,
                      (long long)c->wavefronts, (long long)c->bytes, c->align);
    }
}
