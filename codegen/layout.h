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
 * Logical coordinate of (thread t, register r) in dim d:
 *   u_d = rep * cta_d + warp_d * tpw_d * espt_d + lane_d * espt_d + e
 *   c_d = u_d mod pshape_d                 (cta_d = espt_d * tpw_d * wpc_d)
 * A slot is the primary owner of its element when u_d < pshape_d in every
 * kept dim and lane_d = warp_d = 0 in every sliced dim; every element has
 * exactly one primary owner (tests/unit/test_codegen.c checks this).
 */
#ifndef TILEC_CG_LAYOUT_H
#define TILEC_CG_LAYOUT_H

#include "../ir/ir.h"

typedef struct Layout {
    int prank;                         /* rank of the blocked parent */
    int64_t pshape[TILE_MAXRANK];      /* parent shape (sliced dims keep theirs) */
    int spt[TILE_MAXRANK], tpw[TILE_MAXRANK], wpc[TILE_MAXRANK];
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
int layout_cta(const Layout *l, int d);       /* espt * tpw * wpc */
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
/* Contiguous elements per register group along the fastest logical dim. */
int layout_vec(const Layout *l);
/* "blocked{spt=[1,8] tpw=[1,32] wpc=[1,4] order=[1,0]} 4x4096" / "slice(1, ...)" */
void layout_print(const Layout *l, StrBuf *out);

#endif
