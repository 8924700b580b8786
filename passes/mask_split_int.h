/* mask_split_int.h - what the files of the mask_split pass share:
 * mask_split.c (the driver, the split form), mask_split_analysis.c (ranges,
 * affine forms, the masking selects) and mask_split_guard.c (the guarded form).
 */
#ifndef TILEC_MASK_SPLIT_INT_H
#define TILEC_MASK_SPLIT_INT_H

#include "passes.h"

typedef struct Rng {
    int64_t lo, hi;
} Rng;

#define BIG (INT64_C(1) << 61)

typedef struct Ranges {
    const Func *f;
    Rng *r;                 /* per value: bounds of its i32 value */
    uint32_t n;             /* values covered (later ones: any i32) */
    Rng blocks[3], nblocks[3];
    bool exact;             /* the grid: exact arithmetic, no wrap clamp */
} Ranges;

enum { MAXATOM = 8 };

typedef struct Lin {
    int64_t c;                      /* constant */
    int64_t ix[TILE_MAXRANK];       /* coefficient of the index along each axis */
    int na;
    ValId atom[MAXATOM];            /* i32 scalars (the iv among them) */
    int64_t coef[MAXATOM];
} Lin;

/* Context of one loop's decomposition. */
typedef struct Dec {
    const Func *f;
    const Ranges *R;
    const bool *inside;     /* values defined in the loop's body (or NULL) */
    ValId iv;
    Rng ivr;                /* the iv's range for the wrap check */
    bool wrap;              /* some term may have wrapped at 32 bits */
} Dec;

typedef struct Mask {
    Op *sel;
    Lin rest;               /* the condition is: iv + rest + (index part) <= 0 */
    int64_t kmax, kmin;     /* the index part's extremes over the tile */
} Mask;

int64_t mn64(int64_t a, int64_t b);
bool fits32(Rng r);
Rng rng_binop(OpCode code, Rng a, Rng b);
Rng rng_of(const Ranges *R, ValId v);
void ranges_init(Ranges *R, const Func *f, Arena *a);
bool lin_acc(Lin *a, const Lin *b, int64_t sign);
bool lin_of(Dec *d, ValId v, Lin *out, Rng *vr);
bool cond_form(Dec *d, const Op *cmp, Lin *e);
bool mask_of(Dec *d, Op *sel, Mask *m);
Lin mask_first_partial(const Mask *m);
Lin mask_first_empty(const Mask *m);
bool guard_masks(Func *f, Op *loop, ValId split, const Mask *ms, int n, Arena *scratch);

#endif
