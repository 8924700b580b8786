/* bank_model.c - shared-memory layouts (identity, padding, XOR swizzle),
 * the bank-conflict model, and the warp access patterns it is applied to.
 *
 * Needs: nothing but the SmemLayout description (smem_model.h).
 * Guarantees: pass_smem_offset() is injective on the tile (a bijection onto
 * [0, size) for identity and swizzle layouts); pass_smem_bank_cost() counts,
 * per phase of a warp request, the most distinct 4-byte words that share a
 * bank, and never returns fewer wavefronts than the ideal it reports.
 */
#include "smem_model.h"

#include <stdio.h>
#include <string.h>

/* ---- layouts ---- */

static SmemLayout layout_base(int elem_bytes, int64_t rows, int64_t cols)
{
    SmemLayout l = { 0 };
    l.elem_bytes = elem_bytes;
    l.rows = rows;
    l.cols = cols;
    l.row_bytes = cols * elem_bytes;
    return l;
}

SmemLayout pass_smem_identity(int elem_bytes, int64_t rows, int64_t cols)
{
    return layout_base(elem_bytes, rows, cols);
}

SmemLayout pass_smem_padded(int elem_bytes, int64_t rows, int64_t cols, int pad_bytes)
{
    SmemLayout l = layout_base(elem_bytes, rows, cols);
    l.xform = SMX_PAD;
    l.pad_bytes = pad_bytes;
    return l;
}

SmemLayout pass_smem_swizzled(int elem_bytes, int64_t rows, int64_t cols, int swz_bits)
{
    SmemLayout l = layout_base(elem_bytes, rows, cols);
    l.xform = SMX_SWIZZLE;
    l.swz_bits = swz_bits;
    return l;
}

int64_t pass_smem_swizzle(int64_t off, int b, int m, int s)
{
    int64_t mask = ((INT64_C(1) << b) - 1) << (m + s);
    return off ^ ((off & mask) >> s);
}

int pass_smem_swizzle_width(int swz_bits) { return 16 << swz_bits; }

const char *pass_smem_layout_check(const SmemLayout *l)
{
    if (l->rows <= 0 || l->cols <= 0 || l->elem_bytes <= 0)
        return "empty tile";
    if (l->xform == SMX_PAD && (l->pad_bytes <= 0 || l->pad_bytes % 4 != 0
                                || l->pad_bytes % l->elem_bytes != 0))
        return "padding must be a positive multiple of 4 bytes";
    if (l->xform != SMX_SWIZZLE)
        return NULL;
    if (l->swz_bits < 1 || l->swz_bits > 3)
        return "swizzle must be 32B, 64B or 128B";
    if (l->row_bytes % pass_smem_swizzle_width(l->swz_bits) != 0)
        return "row bytes are not a multiple of the swizzle width";
    if (l->rows % 8 != 0)
        return "rows are not a multiple of the swizzle repeat (8)";
    return NULL;
}

int64_t pass_smem_offset_bytes(const SmemLayout *l, int64_t row, int64_t colbyte)
{
    switch (l->xform) {
    case SMX_PAD:
        return row * (l->row_bytes + l->pad_bytes) + colbyte;
    case SMX_SWIZZLE: {
        int64_t w = pass_smem_swizzle_width(l->swz_bits);
        int64_t panel = colbyte / w;
        int64_t inner = row * w + colbyte % w;
        return panel * l->rows * w + pass_smem_swizzle(inner, l->swz_bits, 4, 3);
    }
    case SMX_IDENTITY:
        break;
    }
    return row * l->row_bytes + colbyte;
}

int64_t pass_smem_offset(const SmemLayout *l, int64_t row, int64_t col)
{
    return pass_smem_offset_bytes(l, row, col * l->elem_bytes);
}

int64_t pass_smem_size(const SmemLayout *l)
{
    if (l->xform == SMX_PAD)
        return l->rows * (l->row_bytes + l->pad_bytes);
    return l->rows * l->row_bytes;
}

int pass_smem_align(const SmemLayout *l)
{
    /* A swizzle is computed on the offset from the tile base, which equals
     * the hardware's (address-based) pattern only if the base is aligned to
     * the repeat: 8 rows of W bytes. */
    if (l->xform == SMX_SWIZZLE)
        return 8 * pass_smem_swizzle_width(l->swz_bits);
    return 16;
}

bool pass_smem_desc_ok(const SmemLayout *l) { return l->xform != SMX_PAD; }

void pass_smem_layout_name(const SmemLayout *l, char *buf, size_t n)
{
    if (l->xform == SMX_PAD)
        snprintf(buf, n, "pad %dB", l->pad_bytes);
    else if (l->xform == SMX_SWIZZLE)
        snprintf(buf, n, "swizzle %dB", pass_smem_swizzle_width(l->swz_bits));
    else
        snprintf(buf, n, "identity");
}

/* ---- the bank-conflict model ---- */

/* Threads per phase: 128 bytes of a request are served together. */
static int phase_threads(int bytes)
{
    int t = 128 / (bytes < 4 ? 4 : bytes);
    return t > SMEM_WARP ? SMEM_WARP : t;
}

/* Most distinct words one phase can touch: 128 / bytes threads of at most
 * bytes / 4 + 1 words each (32 threads of at most 2 below 4 bytes). */
#define PHASE_MAX_WORDS (SMEM_WARP * 2)

/* One phase: threads [t0, t1). The distinct words are kept per bank, so a
 * new word is compared only with those already on its bank. */
static SmemCost phase_cost(const int64_t *addr, int t0, int t1, int bytes)
{
    int64_t seen[SMEM_BANKS][PHASE_MAX_WORDS];
    int nwords = 0, per_bank[SMEM_BANKS] = { 0 };
    SmemCost c = { 0, 0 };
    for (int t = t0; t < t1; t++) {
        if (addr[t] < 0)
            continue;
        int64_t first = addr[t] / SMEM_BANK_BYTES;
        int64_t last = (addr[t] + bytes - 1) / SMEM_BANK_BYTES;
        for (int64_t w = first; w <= last; w++) {
            int b = (int)(w % SMEM_BANKS), j = 0;
            while (j < per_bank[b] && seen[b][j] != w)
                j++;
            if (j < per_bank[b] || j == PHASE_MAX_WORDS)
                continue;
            seen[b][per_bank[b]++] = w;
            nwords++;
            if (per_bank[b] > c.wavefronts)
                c.wavefronts = per_bank[b];
        }
    }
    c.ideal = (nwords + SMEM_BANKS - 1) / SMEM_BANKS;
    return c;
}

SmemCost pass_smem_bank_cost(const int64_t *addr, int nthreads, int bytes)
{
    SmemCost c = { 0, 0 };
    int step = phase_threads(bytes);
    if (nthreads > SMEM_WARP)
        nthreads = SMEM_WARP;
    for (int t0 = 0; t0 < nthreads; t0 += step) {
        int t1 = t0 + step < nthreads ? t0 + step : nthreads;
        SmemCost p = phase_cost(addr, t0, t1, bytes);
        c.wavefronts += p.wavefronts;
        c.ideal += p.ideal;
    }
    return c;
}

/* ---- access patterns ---- */

typedef enum Pattern { PAT_CHUNKS16, PAT_MATRIX, PAT_ROW, PAT_COL } Pattern;

/* ORDER SA: one entry per SmemAccessKind. */
static const struct {
    const char *name;
    Pattern pat;
    int width;
    bool write;
} sa_info[SA_NKINDS] = {
    [SA_CP_ASYNC16] = { "cp.async 16B", PAT_CHUNKS16, 16, true },
    [SA_ST_V4] = { "st.shared.v4", PAT_CHUNKS16, 16, true },
    [SA_LD_V4] = { "ld.shared.v4", PAT_CHUNKS16, 16, false },
    [SA_LDMATRIX] = { "ldmatrix", PAT_MATRIX, 16, false },
    [SA_LDMATRIX_TRANS] = { "ldmatrix.trans", PAT_MATRIX, 16, false },
    [SA_ROW4] = { "4B row-wise", PAT_ROW, 4, false },
    [SA_COL4] = { "4B column-wise", PAT_COL, 4, false },
    [SA_ROW2] = { "2B row-wise", PAT_ROW, 2, false },
    [SA_COL2] = { "2B column-wise", PAT_COL, 2, false },
    [SA_TMA] = { "TMA", PAT_CHUNKS16, 16, true },
    [SA_MMA_DESC] = { "wgmma/tcgen05 operand", PAT_MATRIX, 16, false },
};

const char *pass_smem_access_name(SmemAccessKind k) { return k < SA_NKINDS ? sa_info[k].name : "?"; }
int pass_smem_access_width(SmemAccessKind k) { return k < SA_NKINDS ? sa_info[k].width : 0; }
bool pass_smem_access_is_write(SmemAccessKind k) { return k < SA_NKINDS && sa_info[k].write; }

const char *pass_smem_access_check(const SmemLayout *l, SmemAccessKind k)
{
    if (k >= SA_NKINDS)
        return "unknown access kind";
    int w = sa_info[k].width;
    if (l->row_bytes % w != 0)
        return w == 16 ? "row bytes are not a multiple of 16" : "row bytes are not a multiple of the access width";
    if (sa_info[k].pat == PAT_MATRIX && l->rows % 8 != 0)
        return "rows are not a multiple of 8 (one 8x16-byte matrix)";
    return NULL;
}

static int64_t cdiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t pass_smem_access_ninstr(const SmemLayout *l, SmemAccessKind k)
{
    int w = sa_info[k].width;
    int64_t units = l->row_bytes / w;            /* accesses per row */
    switch (sa_info[k].pat) {
    case PAT_CHUNKS16:
    case PAT_ROW:
        return cdiv64(l->rows * units, SMEM_WARP);
    case PAT_MATRIX:
        return cdiv64((l->rows / 8) * units, 4);
    case PAT_COL:
        return cdiv64(l->rows, SMEM_WARP) * units;
    }
    return 0;
}

/* ldmatrix.x4 matrix q of instruction i -> (8-row group, 16-byte chunk).
 * The standard order covers a 16-row x 32-byte block per instruction:
 * q = 0..3 -> (rows 0-7, chunk 0), (rows 8-15, chunk 0), (rows 0-7, chunk 1),
 * (rows 8-15, chunk 1) -- the A fragment of m16n8k16, and with .trans the
 * B fragment of a [K,N] tile. Odd shapes take matrices chunk by chunk. */
static bool matrix_at(const SmemLayout *l, int64_t i, int q, int64_t *grp, int64_t *chunk)
{
    int64_t ngrp = l->rows / 8, nch = l->row_bytes / 16;
    if (ngrp % 2 == 0 && nch % 2 == 0) {
        int64_t rb = i / (nch / 2), cp = i % (nch / 2);
        *grp = 2 * rb + (q & 1);
        *chunk = 2 * cp + (q >> 1);
        return true;
    }
    int64_t m = 4 * i + q;
    *grp = m % ngrp;
    *chunk = m / ngrp;
    return *chunk < nch;
}

/* Logical (row, colbyte) of thread t in instruction i; false if inactive. */
static bool thread_pos(const SmemLayout *l, SmemAccessKind k, int64_t i, int t,
                       int64_t *row, int64_t *cb)
{
    int w = sa_info[k].width;
    int64_t units = l->row_bytes / w;
    switch (sa_info[k].pat) {
    case PAT_CHUNKS16:
    case PAT_ROW: {
        int64_t g = i * SMEM_WARP + t;
        *row = g / units;
        *cb = (g % units) * w;
        return *row < l->rows;
    }
    case PAT_MATRIX: {
        int64_t grp, chunk;
        if (!matrix_at(l, i, t / 8, &grp, &chunk))
            return false;
        *row = grp * 8 + t % 8;
        *cb = chunk * 16;
        return true;
    }
    case PAT_COL:
        *row = (i / units) * SMEM_WARP + t;
        *cb = (i % units) * w;
        return *row < l->rows;
    }
    return false;
}

int pass_smem_access_addrs(const SmemLayout *l, SmemAccessKind k, int64_t i,
                           int64_t addr[SMEM_WARP])
{
    for (int t = 0; t < SMEM_WARP; t++) {
        int64_t row, cb;
        addr[t] = thread_pos(l, k, i, t, &row, &cb) ? pass_smem_offset_bytes(l, row, cb) : -1;
    }
    return sa_info[k].width;
}

static void cost_add(SmemAccessCost *c, SmemCost ic, int64_t times)
{
    c->total.wavefronts += times * ic.wavefronts;
    c->total.ideal += times * ic.ideal;
    if (ic.wavefronts > c->worst)
        c->worst = ic.wavefronts;
}

static SmemCost instr_cost(const SmemLayout *l, SmemAccessKind k, int64_t i)
{
    int64_t addr[SMEM_WARP];
    int bytes = pass_smem_access_addrs(l, k, i, addr);
    return pass_smem_bank_cost(addr, SMEM_WARP, bytes);
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Periodicity of pattern k over the instructions (see pass_smem_access_cost):
 * the first *nfull instructions have every thread active, and two of them
 * whose indices are equal modulo the returned period P address the same
 * (row mod 8, column byte mod 128) pairs thread by thread, shifted by one
 * whole number of 8-row groups and one of 128-byte column blocks. */
static int64_t access_period(const SmemLayout *l, SmemAccessKind k, int64_t *nfull)
{
    int w = sa_info[k].width;
    int64_t units = l->row_bytes / w, ngrp = l->rows / 8, nch = l->row_bytes / 16;
    switch (sa_info[k].pat) {
    case PAT_CHUNKS16:
    case PAT_ROW:   /* 32 P threads span a multiple of 8 whole rows */
        *nfull = l->rows * units / SMEM_WARP;
        return 8 * units / gcd64(SMEM_WARP, 8 * units);
    case PAT_COL:   /* next 32-row block: same column; 128 / w columns on: +128 B */
        *nfull = (l->rows / SMEM_WARP) * units;
        return units % (128 / w) == 0 ? 128 / w : units;
    case PAT_MATRIX:
        if (ngrp % 2 == 0 && nch % 2 == 0) {   /* next 16-row band; or +4 chunk pairs */
            *nfull = pass_smem_access_ninstr(l, k);
            return (nch / 2) % 4 == 0 ? 4 : nch / 2;
        }
        *nfull = ngrp * nch / 4;               /* 8 ngrp matrices on: 8 chunks on */
        return 2 * ngrp;
    }
    *nfull = 0;
    return 1;
}

/* Cover the tile once with pattern k. A layout maps (row + 8 g, colbyte +
 * 128 c) to its (row, colbyte) offset plus a constant that depends only on
 * g and c (identity and padding are linear; a swizzle's XOR reads only the
 * row mod 8 and the byte inside its W <= 128-byte panel), and a warp
 * request shifted by a multiple of 4 bytes has the same cost (its words
 * move to other banks as a whole). So the full instructions repeat with
 * the period of access_period(): one of each residue is simulated and
 * counted as often as it occurs; the partial ones at the end are simulated
 * one by one. Ill-formed inputs take the direct route. */
SmemAccessCost pass_smem_access_cost(const SmemLayout *l, SmemAccessKind k)
{
    SmemAccessCost c = { 0 };
    c.ninstr = pass_smem_access_ninstr(l, k);
    int64_t nfull = 0, period = 1;
    if (!pass_smem_layout_check(l) && !pass_smem_access_check(l, k))
        period = access_period(l, k, &nfull);
    if (nfull > c.ninstr)
        nfull = c.ninstr;
    for (int64_t r = 0; r < period && r < nfull; r++)
        cost_add(&c, instr_cost(l, k, r), (nfull - 1 - r) / period + 1);
    for (int64_t i = nfull; i < c.ninstr; i++)
        cost_add(&c, instr_cost(l, k, i), 1);
    return c;
}
