/* double_buffer_int.h - what the files of the double_buffer pass share:
 * double_buffer.c (the driver), double_buffer_analysis.c (which loads,
 * how many stages), double_buffer_ring.c (the ring rewrite) and
 * double_buffer_rotate.c (rotation of a loop over tiles).
 */
#ifndef TILEC_DOUBLE_BUFFER_INT_H
#define TILEC_DOUBLE_BUFFER_INT_H

#include "passes.h"

enum { MAX_LOADS = 16 };

typedef struct Loop {
    Func *f;
    Op *op;
    Block *body;
    ValId iv, lo, hi, step;
    Op *loads[MAX_LOADS];
    ValId bufs[MAX_LOADS];
    int nloads;
    int stages;
    bool late;               /* the prefetch sits after the first product (late_prefetch_at) */
    ValId *map;              /* clone map: value of the original body -> clone (0 = none) */
    uint32_t nmap;           /* values that existed before the transformation */
    struct Loop *outer;      /* rotation (double_buffer_rotate.c): values of this loop's body clone through outer */
    ValId cur;               /* rotation: what this loop's iv maps to in the copies being emitted */
} Loop;

ValId cst(Builder *b, int64_t v);
ValId bin(Builder *b, OpCode c, ValId x, ValId y);
ValId cmp_pred(Builder *b, CmpPred p, ValId x, ValId y);   /* bool x p y */
ValId cmp_lt(Builder *b, ValId x, ValId y);
Op *build0(Builder *b, OpCode c, const ValId *args, int n);
const char *tensor_name(const Func *f, const Op *load);
int64_t tile_bytes(const Type *t);
bool wanted(Func *f, const Op *op);
const char *shape_problem(Func *f, const Op *op);
bool invariant_but_iv(const Loop *L, ValId v, int depth);
bool offsets_ok(const Loop *L, const Op *load);
ValId clone_val(Loop *L, Builder *b, ValId v);
void map_reset(Loop *L, ValId iv_new);
void emit_copy(Loop *L, Builder *b, int j, ValId slot);
void emit_guarded_stage(Loop *L, Builder *b, ValId cond, ValId ivv, ValId slot);
Op *emit_wait(Builder *b, int64_t pending);
ValId new_buffer(Func *f, Builder *b, const Op *load, int stages);
void replace_load(Func *f, Op *load, ValId buf, ValId slot);
void drop_dead(Func *f, Block *blk);
void transform_loop(Loop *L, bool rotated);
bool reads_deep(const Op *op, ValId v);
int stage_single(Func *f, Op *load);
int choose_stages(PassCtx *ctx, const Loop *L, int64_t stage_bytes, StrBuf *why);
void collect_loads(PassCtx *ctx, Loop *L);
void describe_loop(PassCtx *ctx, const Loop *L, const char *why);
bool try_rotate(PassCtx *ctx, Func *f, Op *fo, Op **inner);

#endif
