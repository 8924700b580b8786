/* layout.c - distributed register layouts: construction, the static
 * (thread, register) -> coordinate map, and printing. See layout.h. */
#include "layout.h"

#include <string.h>

static int64_t pow2_floor(int64_t x)
{
    int64_t p = 1;
    while (p * 2 <= x)
        p *= 2;
    return p;
}

static int64_t pow2_divisor(int64_t x, int64_t cap)  /* largest 2^k | x, <= cap */
{
    int64_t p = 1;
    while (p * 2 <= cap && x % (p * 2) == 0)
        p *= 2;
    return p;
}

/* Spread `total` (a power of two) along the dims in order, each taking what
 * fits in cap[d]; the slowest dim takes the rest (replication). */
static void spread(const Layout *l, const int64_t *cap, int total, int *out)
{
    int left = total;
    for (int k = 0; k < l->prank; k++) {
        int d = l->order[k];
        int64_t t = pow2_floor(cap[d] > 0 ? cap[d] : 1);
        if (t > left)
            t = left;
        if (k == l->prank - 1)
            t = left;
        out[d] = (int)t;
        left /= (int)t;
    }
}

Layout layout_blocked(int rank, const int64_t *shape, int elem_bytes, bool contiguous, int nwarps)
{
    Layout l;
    memset(&l, 0, sizeof l);
    l.prank = rank;
    l.nwarps = nwarps;
    for (int d = 0; d < rank; d++) {
        l.pshape[d] = shape[d];
        l.order[d] = rank - 1 - d;
        l.spt[d] = 1;
        l.rpt[d] = 1;
    }
    if (rank == 0)
        return l;
    int vmax = elem_bytes > 0 && elem_bytes <= 16 ? 16 / elem_bytes : 1;
    l.spt[rank - 1] = contiguous ? (int)pow2_divisor(shape[rank - 1], vmax) : 1;
    int64_t cap[TILE_MAXRANK] = { 0 };
    for (int d = 0; d < rank; d++)
        cap[d] = shape[d] / l.spt[d];
    spread(&l, cap, 32, l.tpw);
    for (int d = 0; d < rank; d++)
        cap[d] = cap[d] / l.tpw[d];
    spread(&l, cap, nwarps, l.wpc);
    return l;
}

int layout_rank(const Layout *l)
{
    int n = 0;
    for (int d = 0; d < l->prank; d++)
        n += !(l->slice >> d & 1);
    return n;
}

int layout_pdim(const Layout *l, int axis)
{
    for (int d = 0; d < l->prank; d++)
        if (!(l->slice >> d & 1) && axis-- == 0)
            return d;
    return -1;
}

int layout_espt(const Layout *l, int d)
{
    return l->pshape[d] < l->spt[d] ? (int)l->pshape[d] : l->spt[d];
}

int layout_rpt(const Layout *l, int d) { return l->rpt[d] > 1 ? l->rpt[d] : 1; }

int layout_cta(const Layout *l, int d)
{
    return layout_espt(l, d) * l->tpw[d] * layout_rpt(l, d) * l->wpc[d];
}

int layout_nregs_dim(const Layout *l, int d)
{
    if (l->slice >> d & 1)
        return 1;
    int64_t cta = layout_cta(l, d);
    return layout_espt(l, d) * layout_rpt(l, d) * (int)((l->pshape[d] + cta - 1) / cta);
}

int layout_nregs(const Layout *l)
{
    int n = 1;
    for (int d = 0; d < l->prank; d++)
        n *= layout_nregs_dim(l, d);
    return n;
}

bool layout_may_wrap(const Layout *l, int d)
{
    if (l->slice >> d & 1)
        return false;
    int64_t cta = layout_cta(l, d);
    return cta * ((l->pshape[d] + cta - 1) / cta) != l->pshape[d];
}

void layout_reg_index(const Layout *l, int r, int idx[TILE_MAXRANK])
{
    for (int k = 0; k < l->prank; k++) {
        int d = l->order[k], n = layout_nregs_dim(l, d);
        idx[d] = r % n;
        r /= n;
    }
}

int layout_reg_of(const Layout *l, const int idx[TILE_MAXRANK])
{
    int r = 0;
    for (int k = l->prank - 1; k >= 0; k--) {
        int d = l->order[k];
        r = r * layout_nregs_dim(l, d) + idx[d];
    }
    return r;
}

int layout_lane_stride(const Layout *l, int d)
{
    int s = 1;
    for (int k = 0; k < l->prank && l->order[k] != d; k++)
        s *= l->tpw[l->order[k]];
    return s;
}

int layout_warp_stride(const Layout *l, int d)
{
    int s = 1;
    for (int k = 0; k < l->prank && l->order[k] != d; k++)
        s *= l->wpc[l->order[k]];
    return s;
}

int layout_lane_d(const Layout *l, int lane, int d) { return lane / layout_lane_stride(l, d) % l->tpw[d]; }
int layout_warp_d(const Layout *l, int warp, int d) { return warp / layout_warp_stride(l, d) % l->wpc[d]; }

bool layout_coord(const Layout *l, int t, int r, int64_t *coord)
{
    int idx[TILE_MAXRANK];
    bool primary = true;
    int n = 0;
    layout_reg_index(l, r, idx);
    for (int d = 0; d < l->prank; d++) {
        int es = layout_espt(l, d);
        int ld = layout_lane_d(l, t % 32, d), wd = layout_warp_d(l, t / 32, d);
        if (l->slice >> d & 1) {
            primary = primary && ld == 0 && wd == 0;
            continue;
        }
        int rp = layout_rpt(l, d), s = idx[d] / es % rp, rep = idx[d] / es / rp;
        int64_t u = (int64_t)rep * layout_cta(l, d) + (int64_t)wd * rp * l->tpw[d] * es +
                    (int64_t)s * l->tpw[d] * es + (int64_t)ld * es + idx[d] % es;
        primary = primary && u < l->pshape[d];
        coord[n++] = u % l->pshape[d];
    }
    return primary;
}

void layout_coord_parts(const Layout *l, int t, int r, int64_t *thread, int64_t *reg)
{
    int idx[TILE_MAXRANK];
    int n = 0;
    if (r >= 0)
        layout_reg_index(l, r, idx);
    for (int d = 0; d < l->prank; d++) {
        if (l->slice >> d & 1)
            continue;
        int es = layout_espt(l, d), rp = layout_rpt(l, d);
        if (t >= 0)
            thread[n] = (int64_t)layout_warp_d(l, t / 32, d) * rp * l->tpw[d] * es +
                        (int64_t)layout_lane_d(l, t % 32, d) * es;
        if (r >= 0) {
            int s = idx[d] / es % rp, rep = idx[d] / es / rp;
            reg[n] = (int64_t)rep * layout_cta(l, d) + (int64_t)s * l->tpw[d] * es + idx[d] % es;
        }
        n++;
    }
}

Layout layout_slice(const Layout *l, int axis)
{
    Layout s = *l;
    int d = layout_pdim(l, axis);
    if (d >= 0)
        s.slice |= 1u << d;
    return s;
}

/* Insert a trivial parent dim at parent position p (slowest in order). */
static Layout insert_trivial(const Layout *l, int p)
{
    Layout n = *l;
    for (int d = l->prank; d > p; d--) {
        n.pshape[d] = l->pshape[d - 1];
        n.spt[d] = l->spt[d - 1];
        n.tpw[d] = l->tpw[d - 1];
        n.wpc[d] = l->wpc[d - 1];
        n.rpt[d] = l->rpt[d - 1];
    }
    n.pshape[p] = 1;
    n.spt[p] = n.tpw[p] = n.wpc[p] = n.rpt[p] = 1;
    for (int k = 0; k < l->prank; k++)
        n.order[k] = l->order[k] + (l->order[k] >= p);
    n.order[l->prank] = p;
    unsigned lo = l->slice & ((1u << p) - 1);
    n.slice = lo | ((l->slice & ~((1u << p) - 1)) << 1);
    n.prank = l->prank + 1;
    return n;
}

Layout layout_expand(const Layout *l, int axis)
{
    int rank = layout_rank(l);
    int before = axis == 0 ? -1 : layout_pdim(l, axis - 1);
    int after = axis >= rank ? l->prank : layout_pdim(l, axis);
    for (int d = before + 1; d < after; d++)
        if (l->slice >> d & 1) {
            Layout n = *l;
            n.slice &= ~(1u << d);
            n.pshape[d] = 1;
            n.rpt[d] = 1;     /* one register along the new size-1 dim */
            return n;
        }
    return insert_trivial(l, before + 1);
}

Layout layout_with_shape(const Layout *l, const int64_t *shape)
{
    Layout n = *l;
    for (int a = 0, r = layout_rank(l); a < r; a++)
        n.pshape[layout_pdim(l, a)] = shape[a];
    return n;
}

/* A parent dim that no lane or warp spans and that holds one register a
 * thread (sliced, or of extent 1 in both) takes no thread-index bits: its
 * other parameters do not change the layout (the slices of a row a thread
 * of any width, and their expansions, are one layout). */
static bool trivial_slice(const Layout *a, const Layout *b, int d)
{
    bool one = (a->slice >> d & 1) || (a->pshape[d] == 1 && b->pshape[d] == 1);
    return one && a->tpw[d] == 1 && b->tpw[d] == 1 && a->wpc[d] == 1 && b->wpc[d] == 1 &&
           layout_nregs_dim(a, d) == 1 && layout_nregs_dim(b, d) == 1;
}

bool layout_eq(const Layout *a, const Layout *b)
{
    if (a->prank != b->prank || a->slice != b->slice || a->nwarps != b->nwarps)
        return false;
    for (int d = 0; d < a->prank; d++) {
        if (a->order[d] != b->order[d])
            return false;
        if (trivial_slice(a, b, d))
            continue;
        if (a->pshape[d] != b->pshape[d] || a->spt[d] != b->spt[d] || a->tpw[d] != b->tpw[d] ||
            a->wpc[d] != b->wpc[d] || layout_rpt(a, d) != layout_rpt(b, d))
            return false;
    }
    return true;
}

int layout_vec(const Layout *l)
{
    if (l->prank == 0)
        return 1;
    int d = l->order[0];
    if (l->slice >> d & 1 || layout_pdim(l, layout_rank(l) - 1) != d)
        return 1;
    return layout_espt(l, d);
}

static void print_arr(StrBuf *out, const char *name, const int *v, int n)
{
    sb_printf(out, " %s=[", name);
    for (int i = 0; i < n; i++)
        sb_printf(out, "%s%d", i ? "," : "", v[i]);
    sb_putc(out, ']');
}

void layout_print(const Layout *l, StrBuf *out)
{
    sb_puts(out, l->slice ? "slice(" : "");
    if (l->slice)
        for (int d = 0; d < l->prank; d++)
            if (l->slice >> d & 1)
                sb_printf(out, "%d,", d);
    sb_puts(out, "blocked{");
    print_arr(out, "spt", l->spt, l->prank);
    print_arr(out, "tpw", l->tpw, l->prank);
    if (layout_is_mma(l)) {
        int r[TILE_MAXRANK];
        for (int d = 0; d < l->prank; d++)
            r[d] = layout_rpt(l, d);
        print_arr(out, "rpt", r, l->prank);
    }
    print_arr(out, "wpc", l->wpc, l->prank);
    print_arr(out, "order", l->order, l->prank);
    sb_puts(out, " } ");
    for (int d = 0; d < l->prank; d++)
        sb_printf(out, "%s%lld", d ? "x" : "", (long long)l->pshape[d]);
    sb_puts(out, l->slice ? ")" : "");
}

/* ---- MMA layouts ---- */

bool layout_is_mma(const Layout *l)
{
    for (int d = 0; d < l->prank; d++)
        if (layout_rpt(l, d) > 1)
            return true;
    return false;
}

void layout_mma_warps(int64_t m, int64_t n, int nwarps, int *wm, int *wn)
{
    *wm = *wn = 1;
    while (*wm * *wn * 2 <= nwarps) {
        int64_t pm = m / *wm, pn = n / *wn;
        if (pn >= pm && pn % 32 == 0)
            *wn *= 2;
        else if (pm % 32 == 0)
            *wm *= 2;
        else if (pn % 32 == 0)
            *wn *= 2;
        else
            break;
    }
}

static Layout mma_base(int64_t m, int64_t n, int nwarps)
{
    Layout l;
    memset(&l, 0, sizeof l);
    l.prank = 2;
    l.nwarps = nwarps;
    l.pshape[0] = m;
    l.pshape[1] = n;
    l.order[0] = 1;
    l.order[1] = 0;
    l.spt[0] = 1;
    l.tpw[0] = 8;
    l.spt[1] = 2;
    l.tpw[1] = 4;
    return l;
}

Layout layout_mma_acc(int64_t m, int64_t n, int wm, int wn, int nwarps)
{
    Layout l = mma_base(m, n, nwarps);
    l.rpt[0] = (int)(m / (16 * wm)) * 2;
    l.wpc[0] = wm;
    l.rpt[1] = (int)(n / (8 * wn));
    l.wpc[1] = wn;
    return l;
}

Layout layout_wgmma_acc(int64_t m, int64_t n, int nwarps)
{
    Layout l = mma_base(m, n, nwarps);
    l.rpt[0] = 2;
    l.wpc[0] = nwarps;
    l.rpt[1] = (int)(n / 8);
    l.wpc[1] = 1;
    return l;
}

Layout layout_wgmma_a(int64_t m, int64_t k, int nwarps)
{
    Layout l = mma_base(m, k, nwarps);
    l.rpt[0] = 2;
    l.wpc[0] = nwarps;
    l.rpt[1] = 2;
    l.wpc[1] = 1;
    return l;
}

Layout layout_mma_a(int64_t m, int64_t k, int wm, int nwarps)
{
    Layout l = mma_base(m, k, nwarps);
    l.rpt[0] = (int)(m / (16 * wm)) * 2;
    l.wpc[0] = wm;
    l.rpt[1] = 2;
    l.wpc[1] = 1;
    return l;
}

/* c0, c1: row h = 0, cols e = 0, 1; c2, c3: row h = 1. */
int layout_mma_acc_reg(const Layout *l, int i, int j, int q)
{
    int idx[TILE_MAXRANK] = { 2 * i + q / 2, 2 * j + q % 2 };
    return layout_reg_of(l, idx);
}

/* a0, a1: (g, 2t+e); a2, a3: (g+8, ..); a4, a5: (g, 2t+8+e); a6, a7: (g+8, 2t+8+e). */
int layout_mma_a_reg(const Layout *l, int i, int kk, int q)
{
    int idx[TILE_MAXRANK] = { 2 * i + q / 2 % 2, (2 * kk + q / 4) * 2 + q % 2 };
    return layout_reg_of(l, idx);
}
