/* smem_model.h - shared-memory tile layouts, the bank-conflict model and the
 * swizzle selection analysis (bank_model.c, swizzle_select.c).
 *
 * A shared tile is a 2-D [rows x cols] array of elem_bytes-wide elements,
 * row_bytes = cols * elem_bytes. Its layout maps a logical (row, col) to a
 * byte offset from the tile's base through one transform:
 *   - identity: row-major, offset = row * row_bytes + col * elem_bytes;
 *   - padding:  row-major with pad_bytes of slack after each row;
 *   - swizzle:  CUTLASS Swizzle<B, 4, 3> on byte offsets (the PTX 32B / 64B /
 *     128B swizzle modes for B = 1, 2, 3: bits [7, 7+B) of the offset are
 *     XORed into bits [4, 4+B), i.e. the row index inside each 8-row group
 *     into the 16-byte-chunk index). The swizzle width W = 16 << B bytes; a
 *     tile whose rows are wider than W is stored as row_bytes / W column
 *     panels of [rows x W], each contiguous and swizzled on its own (one TMA
 *     box / one run of wgmma swizzle atoms per panel).
 * The model: 32 banks of 4 bytes; a warp request is served in phases (8
 * threads for 16-byte accesses, 16 for 8-byte, 32 for <= 4 bytes; each
 * 8x8 matrix of ldmatrix is one 8-thread phase); a phase costs as many
 * wavefronts as the most distinct 4-byte words any one bank holds in it
 * (threads reading the same word share it: broadcast).
 *
 * Everything here is pure computation: no IR, no allocation except the
 * decision's arrays and strings (from the caller's Arena).
 */
#ifndef TILEC_SMEM_MODEL_H
#define TILEC_SMEM_MODEL_H

#include "../ir/ir.h"

#define SMEM_BANKS 32
#define SMEM_BANK_BYTES 4
#define SMEM_WARP 32

/* ---- layouts ---- */

typedef enum SmemXform {
    SMX_IDENTITY = 0,
    SMX_PAD,          /* pad_bytes after every row */
    SMX_SWIZZLE,      /* Swizzle<swz_bits, 4, 3> per W-byte column panel */
} SmemXform;

typedef struct SmemLayout {
    int elem_bytes;           /* 1, 2, 4 or 8 */
    int64_t rows, cols;
    int64_t row_bytes;        /* cols * elem_bytes */
    SmemXform xform;
    int pad_bytes;            /* SMX_PAD: multiple of 4 */
    int swz_bits;             /* SMX_SWIZZLE: 1, 2, 3 = 32B, 64B, 128B */
} SmemLayout;

SmemLayout pass_smem_identity(int elem_bytes, int64_t rows, int64_t cols);
SmemLayout pass_smem_padded(int elem_bytes, int64_t rows, int64_t cols, int pad_bytes);
SmemLayout pass_smem_swizzled(int elem_bytes, int64_t rows, int64_t cols, int swz_bits);

/* CUTLASS Swizzle<B, M, S>: off ^ ((off & (((1 << B) - 1) << (M + S))) >> S). */
int64_t pass_smem_swizzle(int64_t off, int b, int m, int s);
/* Swizzle width in bytes (32, 64, 128) for B = 1, 2, 3. */
int pass_smem_swizzle_width(int swz_bits);

/* NULL when the layout is well formed, else why not (static text):
 * a swizzle needs row_bytes a multiple of its width and rows a multiple
 * of 8 (its repeat); padding a multiple of 4 bytes and of the element. */
const char *pass_smem_layout_check(const SmemLayout *l);

/* Byte offset of element (row, col) / of byte colbyte of row `row`. Rows
 * and columns must be in range. Both are injective on the tile; for
 * identity and swizzle layouts they are bijections onto [0, size). */
int64_t pass_smem_offset(const SmemLayout *l, int64_t row, int64_t col);
int64_t pass_smem_offset_bytes(const SmemLayout *l, int64_t row, int64_t colbyte);

int64_t pass_smem_size(const SmemLayout *l);    /* footprint in bytes */
int pass_smem_align(const SmemLayout *l);       /* base alignment the layout needs */
/* Whether a TMA / wgmma / tcgen05 descriptor mode exists for it (not padding). */
bool pass_smem_desc_ok(const SmemLayout *l);
/* "identity", "pad 16B", "swizzle 128B" into buf (always NUL-terminated). */
void pass_smem_layout_name(const SmemLayout *l, char *buf, size_t n);

/* ---- the bank-conflict model ---- */

typedef struct SmemCost {
    int64_t wavefronts;       /* what the model predicts */
    int64_t ideal;            /* the minimum for the same bytes */
} SmemCost;                   /* conflicts = wavefronts - ideal */

/* One warp instruction: thread t accesses `bytes` (1, 2, 4, 8 or 16,
 * naturally aligned) at byte address addr[t]; addr[t] < 0 means inactive.
 * nthreads <= 32. The generic "list of addresses" entry point. */
SmemCost pass_smem_bank_cost(const int64_t *addr, int nthreads, int bytes);

/* The access patterns the selection knows. ORDER SA: keep sa_info in
 * bank_model.c in step. */
typedef enum SmemAccessKind {
    SA_CP_ASYNC16 = 0,  /* write: cp.async 16 B, consecutive chunks along rows */
    SA_ST_V4,           /* write: st.shared.v4, same pattern */
    SA_LD_V4,           /* read: ld.shared.v4, same pattern */
    SA_LDMATRIX,        /* read: ldmatrix.x4, A [16x16] from [M,K] (or B^T from [N,K]) */
    SA_LDMATRIX_TRANS,  /* read: ldmatrix.x4.trans, B [16x16] from [K,N] */
    SA_ROW4,            /* 4-byte scalar accesses, consecutive along rows */
    SA_COL4,            /* 4-byte scalar accesses, thread t on row t, one column */
    SA_ROW2,            /* 2-byte scalar accesses along rows */
    SA_COL2,            /* 2-byte scalar accesses down a column */
    SA_TMA,             /* write by TMA: needs a descriptor; modeled as 16-byte row chunks */
    SA_MMA_DESC,        /* read by wgmma / tcgen05 through a smem descriptor: 8x16 B
                           core matrices, modeled like ldmatrix */
    SA_NKINDS
} SmemAccessKind;

const char *pass_smem_access_name(SmemAccessKind k);   /* "ldmatrix", "cp.async 16B" */
int pass_smem_access_width(SmemAccessKind k);          /* bytes per thread */
bool pass_smem_access_is_write(SmemAccessKind k);
/* NULL if the pattern can cover the tile, else why not (static text). */
const char *pass_smem_access_check(const SmemLayout *l, SmemAccessKind k);

/* The warp instructions that cover the tile once with pattern k: how many,
 * and the addresses of instruction i (returns the bytes per thread). */
int64_t pass_smem_access_ninstr(const SmemLayout *l, SmemAccessKind k);
int pass_smem_access_addrs(const SmemLayout *l, SmemAccessKind k, int64_t i,
                           int64_t addr[SMEM_WARP]);

typedef struct SmemAccessCost {
    int64_t ninstr;
    SmemCost total;           /* summed over the instructions */
    int64_t worst;            /* most wavefronts of any one instruction */
} SmemAccessCost;

/* Cover the tile once with pattern k. Requires pass_smem_access_check() == NULL. */
SmemAccessCost pass_smem_access_cost(const SmemLayout *l, SmemAccessKind k);

/* ---- swizzle selection ---- */

typedef struct SmemUse {
    SmemAccessKind kind;
    bool needs_desc;          /* a TMA / wgmma / tcgen05 descriptor must describe
                                 the tile (implied by SA_TMA and SA_MMA_DESC) */
    int weight;               /* times the tile is covered per use; 0 counts as 1 */
} SmemUse;

typedef struct SmemUseCost {
    SmemAccessKind kind;
    int64_t ninstr;
    SmemCost before;          /* identity layout */
    SmemCost after;           /* chosen layout */
} SmemUseCost;

typedef struct SmemCandidate {
    SmemLayout layout;
    const char *excluded;     /* NULL if admissible, else why not */
    int64_t wavefronts;       /* weighted total over the uses (admissible only) */
    int64_t bytes;
    int align;
} SmemCandidate;

typedef struct SmemDecision {
    SmemLayout layout;        /* the choice */
    int64_t bytes;            /* its footprint */
    int align;                /* 1024 (128B swizzle), 512 (64B), 256 (32B), else 16 */
    bool desc_ok;
    int64_t before, after, ideal;   /* weighted wavefronts over all uses */
    SmemUseCost *uses; int nuses;   /* arena-owned, in the order given */
    SmemCandidate *cands; int ncands;
    const char *explain;      /* arena-owned one-line report text */
} SmemDecision;

/* Choose the layout of a [rows x cols] tile of dt accessed by `uses`.
 * Candidates: identity; padding (16 B, and max(4, elem, widest access) B
 * when that is below 16); 32B/64B/128B swizzles whose width <= row_bytes (rows a
 * multiple of 8). Descriptor users exclude padding (and wgmma/tcgen05
 * identity for rows wider than 16 B: no canonical no-swizzle layout is
 * row-major) and take the widest admissible swizzle when there is one (one
 * TMA box and descriptor run per panel). Fewest weighted wavefronts wins; ties go to descriptor
 * modes, then less shared memory, then identity, then the widest swizzle
 * (fewest column panels).
 * Returns 0, or 1 after reporting to d (if non-NULL) at loc when no use can
 * cover the tile or no candidate is admissible (out->explain says why). */
int pass_smem_select(Arena *a, DType dt, int64_t rows, int64_t cols,
                     const SmemUse *uses, int nuses, SmemDecision *out,
                     Diag *d, Loc loc);

/* The decision as --print-after=swizzle shows it: the report line, one line
 * per use (before/after), and the candidate table. */
void pass_smem_decision_print(const SmemDecision *dec, StrBuf *out);

#endif
