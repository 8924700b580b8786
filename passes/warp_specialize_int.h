/* warp_specialize_int.h - what the files of the warp_specialize pass share:
 * warp_specialize.c (the driver: which loops qualify, the decisions and
 * the report) and warp_specialize_roles.c (the rewrite into roles). The
 * pass rebuilds the ring double_buffer made, so it uses that pass's
 * builders and helpers too (double_buffer_int.h).
 */
#ifndef TILEC_WARP_SPECIALIZE_INT_H
#define TILEC_WARP_SPECIALIZE_INT_H

#include "double_buffer_int.h"

enum {
    WS_OPERANDS = 2,           /* a product's staged operands: A and B */
    WS_MAX_BOX = 256,          /* a TMA box's extent per dim */
    WS_MAX_RANK = 5,           /* TMA tensor maps */
    WS_MAX_STAGES = 4,         /* stages without a pipeline hint */
    WS_TWO_GROUPS_ROWS = 128,  /* accumulator rows from which two consumer warp groups share them */
    WS_REG_HEADROOM = 16,      /* consumer registers beyond the accumulator (addresses, descriptors, the loop) */
    WS_NAMED_BAR = 1,          /* the id of a barrier the consumer role keeps (0 is the block's) */
    WS_MBAR_BYTES = 8,
};

/* One staged operand of the product: a ring buffer double_buffer made. */
typedef struct WsOperand {
    ValId buf;                 /* the SMEM_ALLOC result */
    Op *copy;                  /* the ASYNC_COPY refilling it in the loop's body */
    Op *read;                  /* the SMEM_LOAD the product reads */
    int64_t slot_bytes;
} WsOperand;

/* A loop that qualifies, and what the pass decided for it. */
typedef struct WsLoop {
    Func *f;
    Op *loop;                  /* the FOR, at the kernel's top level */
    Op *dot;                   /* its one product (mma = wgmma) */
    ValId ahead;               /* the induction value the body's copies fetch (iv + (S-1) * step) */
    WsOperand opnd[WS_OPERANDS];
    bool *in_loop;             /* per value: defined inside the loop (results and block args) */
    Op *drain[2];              /* the async_wait {0} and barrier after the loop */
    int consumers;             /* consumer warp groups */
    int prod_regs, cons_regs;  /* setmaxnreg budgets */
    int64_t acc_regs;          /* accumulator f32 registers per consumer thread */
    int stages;
    int64_t stage_bytes;       /* the operands' slots */
} WsLoop;

/* warp_specialize_roles.c */
/* Does v depend only on the fetched iteration and values from outside the loop? */
bool ws_offset_ok(const WsLoop *W, ValId v, int depth);
/* Is op (before the loop) a guarded prologue stage of the loop's ring? */
bool ws_prologue_stage(const WsLoop *W, const Op *op);
/* The loop into roles (warp_specialize.c's header has the form). */
void ws_rewrite(WsLoop *W);

#endif
