/* layout.h - distributed register layouts of tiles (Triton-style).
 *
 * A Blocked layout spreads a tile of rank r over the threads of a block:
 * per dim d, each thread holds spt[d] contiguous elements, tpw[d] lanes of a
 * warp and wpc[d] warps tile the dim, and the pattern repeats reps[d] times.
 * order[0] is the fastest-varying dim (lanes, warps and registers are
 * numbered along it first). A Slice layout is a blocked parent with some
 * dims reduced away (bit d of `slice`): the threads that shared a reduced
 * dim hold replicated copies of the result.
 *
 * Register numbering (per thread): each parent dim has an index
 * i_d in [0, nregs_d) with i_d = rep * espt_d + e; register r linearises
 * the indices along `order`, so the espt elements of the fastest dim are
 * consecutive registers (one 16-byte vector for a coalesced layout).
 *
 * Each dim may also repeat its lane pattern rpt[d] times inside a warp
 * before the next warp starts (register index s, between the lane and the
 * warp); rpt = 1 everywhere for the coalesced layouts. The per-dim register
 * index is i_d = (rep * rpt_d + s) * espt_d + e.
 *
 * Logical coordinate of (thread t, register r) in dim d:
 *   u_d = rep * cta_d + warp_d * rpt_d * tpw_d * espt_d + s * tpw_d * espt_d
 *         + lane_d * espt_d + e
 *   c_d = u_d mod pshape_d        (cta_d = espt_d * tpw_d * rpt_d * wpc_d)
 * A slot is the primary owner of its element when u_d < pshape_d in every
 * kept dim and lane_d = warp_d = 0 in every sliced dim; every element has
 * exactly one primary owner (tests/unit/test_codegen.c checks this).
 *
 * MMA layouts (mma.sync m16n8k16) are blocked layouts with rpt > 1: the
 * accumulator [M, N] of a warp grid wm x wn (warp w at row block w / wn,
 * column block w % wn) has rows  spt 1, tpw 8, rpt 2*tm, wpc wm  and
 * columns  spt 2, tpw 4, rpt tn, wpc wn  (tm m16 tiles and tn n8 tiles per
 * warp): lane l holds (l/4 + 8h, 2(l%4) + e) of each m16n8 tile, h, e in
 * {0, 1}, as the PTX fragment c0..c3. The A operand [M, K] is the same with
 * columns spt 2, tpw 4, rpt 2, wpc 1 per k16 step (a0..a7), which maps every
 * element to the same thread as the accumulator [M, K] of a grid with wn = 1:
 * an accumulator feeds the next product's A operand by renumbering registers.
 */
#ifndef TILEC_CG_LAYOUT_H
#define TILEC_CG_LAYOUT_H

#include "../ir/ir.h"

typedef struct Layout {
    int prank;                         /* rank of the blocked parent */
    int64_t pshape[TILE_MAXRANK];      /* parent shape (sliced dims keep theirs) */
    int spt[TILE_MAXRANK], tpw[TILE_MAXRANK], wpc[TILE_MAXRANK];
    int rpt[TILE_MAXRANK];             /* lane-pattern repeats per warp (0 or 1: none) */
    int order[TILE_MAXRANK];           /* order[0] = fastest dim */
    unsigned slice;                    /* bit d: parent dim d reduced away */
    int nwarps;
} Layout;

/* The coalesced layout for a tile: 16-byte vectors along the last dim when
 * `contiguous` (the last dim is stride-1 in memory), lanes then warps along
 * the fastest dims. */
Layout layout_blocked(int rank, const int64_t *shape, int elem_bytes, bool contiguous, int nwarps);
Layout layout_slice(const Layout *l, int axis);                /* drop logical dim */
Layout layout_expand(const Layout *l, int axis);               /* insert size-1 dim */
Layout layout_with_shape(const Layout *l, const int64_t *shape); /* same params, new logical shape */
bool layout_eq(const Layout *a, const Layout *b);

int layout_rank(const Layout *l);
int layout_pdim(const Layout *l, int axis);   /* parent dim of logical dim `axis` */
int layout_espt(const Layout *l, int d);      /* effective elements per thread (parent dim) */
int layout_rpt(const Layout *l, int d);       /* rpt, at least 1 */
int layout_cta(const Layout *l, int d);       /* espt * tpw * rpt * wpc */
int layout_nregs_dim(const Layout *l, int d); /* 1 for sliced dims */
int layout_nregs(const Layout *l);
bool layout_may_wrap(const Layout *l, int d); /* some u_d >= pshape_d */
/* Register r <-> per-parent-dim indices. */
void layout_reg_index(const Layout *l, int r, int idx[TILE_MAXRANK]);
int layout_reg_of(const Layout *l, const int idx[TILE_MAXRANK]);
/* Lane / warp position of thread t along parent dim d. */
int layout_lane_d(const Layout *l, int lane, int d);
int layout_warp_d(const Layout *l, int warp, int d);
int layout_lane_stride(const Layout *l, int d);   /* lane-id stride of dim d */
int layout_warp_stride(const Layout *l, int d);
/* Static map: logical coordinate of (thread t, register r); returns whether
 * the slot is the element's primary owner. */
bool layout_coord(const Layout *l, int t, int r, int64_t *coord);
/* layout_coord split in a thread part and a register part: coord[n] =
 * (thread[n] + reg[n]) % pshape of the n-th unsliced dim. t < 0 or r < 0
 * skips that part. */
void layout_coord_parts(const Layout *l, int t, int r, int64_t *thread, int64_t *reg);
/* Contiguous elements per register group along the fastest logical dim. */
int layout_vec(const Layout *l);
/* ---- MMA layouts (mma.sync m16n8k16; see the top of this file) ---- */
/* Warp grid for an [M, N] accumulator with `nwarps` warps: start from 1 x 1
 * and double the dim whose per-warp extent is larger (N on ties) while the
 * warp tile stays at least 16 x 16; wm * wn may end below nwarps (the other
 * warps then hold copies). 128 x 128 with 8 warps -> 2 x 4 (64 x 32 each). */
void layout_mma_warps(int64_t m, int64_t n, int nwarps, int *wm, int *wn);
/* Needs m % (16 wm) == 0 and n % (16 wn) == 0. */
Layout layout_mma_acc(int64_t m, int64_t n, int wm, int wn, int nwarps);
/* The accumulator [m, n] of wgmma m64nNk16 products over nwarps / 4 warp
 * groups: warp w holds rows 16w .. 16w + 15 of every 16 * nwarps rows
 * (warp group g the m64 blocks at 64g + 16 * nwarps * i), each row's
 * fragments as mma.sync's c0..c3 per n8 tile: layout_mma_acc_reg(l, i, j,
 * q) is register q of n8 tile j in the i-th row block. Needs
 * m % (16 * nwarps) == 0 and n % 8 == 0. */
Layout layout_wgmma_acc(int64_t m, int64_t n, int nwarps);
/* The A operand [m, k] of such products from registers: the same rows,
 * per k16 step a0..a3 as mma.sync's (layout_mma_a_reg(l, i, kk, q)); an
 * accumulator [m, k] of layout_wgmma_acc holds every element in the same
 * thread, so it feeds the next product by renumbering registers. */
Layout layout_wgmma_a(int64_t m, int64_t k, int nwarps);
/* A operand [m, k] of the warp grid's row blocks (replicated over wn). */
Layout layout_mma_a(int64_t m, int64_t k, int wm, int nwarps);
/* The three per-fragment register numbers of an accumulator layout:
 * register of c[q] (q = 0..3) of m16 tile i, n8 tile j of this warp. */
int layout_mma_acc_reg(const Layout *l, int i, int j, int q);
int layout_mma_a_reg(const Layout *l, int i, int kk, int q);   /* a[q], q = 0..7 */
bool layout_is_mma(const Layout *l);

/* "blocked{spt=[1,8] tpw=[1,32] wpc=[1,4] order=[1,0]} 4x4096" / "slice(1, ...)" */
void layout_print(const Layout *l, StrBuf *out);

#endif
