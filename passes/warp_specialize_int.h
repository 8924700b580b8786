/* warp_specialize_int.h - what the files of the warp_specialize pass share:
 * warp_specialize.c (the driver: which loops qualify, the decisions and
 * the report for one product), warp_specialize_chain.c (the same for
 * chained products, and their rewrite) and warp_specialize_roles.c (the
 * rewrite of one product into roles, and the builders both rewrites use).
 * The pass rebuilds the ring double_buffer made, so it uses that pass's
 * builders and helpers too (double_buffer_int.h).
 */
#ifndef TILEC_WARP_SPECIALIZE_INT_H
#define TILEC_WARP_SPECIALIZE_INT_H

#include "clone.h"
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
    WS_ALIGN_SLACK = 1024,     /* bytes the placement of 128-byte swizzled buffers (1024-byte aligned) may add */
    WS_CHAIN_HEADROOM = 64,    /* consumer registers beyond S, O and P (the softmax's temporaries and row
                                  statistics, addresses, descriptors) */
    WS_CHAIN_HEADROOM_3 = 32,  /* the same for three consumer warp groups at 160 registers (FlashAttention 3's
                                  192-row D = 64 tile: S 64 + O 32 + P 32 = 128), and for one group in a
                                  block of several an SM */
    WS_CHAIN_BLOCKS = 3,       /* the most blocks an SM of one consumer warp group (64 rows): 3 at D = 64 with
                                  64 key columns (consumer 136 registers) measured 1.23x / 1.11x the 128-row
                                  tile's speed on causal attention at 1k / 2k tokens (bench/RESULTS.md
                                  2026-12-06 22:14) */
    WS_SHARED_PROD_REGS = 24,  /* the producer's budget in a block of several an SM */
    WS_PIPE_HEADROOM = 48,     /* the same with a second P in flight: the softmax of D = 128 (192 + 48 = 240)
                                  measured without spills and 13-17% faster (bench/RESULTS.md 2026-12-02) */
};

/* One staged operand of the product: a ring buffer double_buffer made. */
typedef struct WsOperand {
    ValId buf;                 /* the SMEM_ALLOC result */
    Op *copy;                  /* the ASYNC_COPY refilling it in the loop's body */
    Op *guard;                 /* the IF around it (the prefetch's `< hi`), or NULL */
    Op *read;                  /* the SMEM_LOAD the product reads */
    int64_t slot_bytes;
    /* chained products: */
    Op *trans;                 /* a TRANS between the read and the product (k^T), or NULL */
    Op *dot;                   /* the product it feeds */
    ValId full, empty;         /* its own rings (the rewrite's) */
} WsOperand;

/* A loop that qualifies, and what the pass decided for it. */
typedef struct WsLoop {
    Func *f;
    Op *loop;                  /* the FOR, at the kernel's top level */
    Op *dot;                   /* its one product (mma = wgmma or tcgen05) */
    ValId ahead;               /* the induction value the body's copies fetch (iv + (S-1) * step) */
    WsOperand opnd[WS_OPERANDS];
    bool *in_loop;             /* per value: defined inside the loop (results and block args) */
    Op *drain[2];              /* the async_wait {0} and barrier after the loop */
    int consumers;             /* consumer warp groups (tcgen05: epilogue warp groups) */
    int prod_regs, cons_regs;  /* setmaxnreg budgets */
    int mma_regs;              /* tcgen05 chains: the mma role's */
    bool tc_entry;             /* tcgen05 chains: every role at the count threads start with */
    int64_t acc_regs;          /* accumulator f32 registers per consumer thread */
    int stages;
    int64_t stage_bytes;       /* the operands' slots */
    /* chained products (warp_specialize_chain.c): opnd[0] feeds the first
     * product (K), opnd[1] the second (V) */
    bool chain;
    Op *dots[2];               /* s = q @ k^T, o = p @ v + o */
    WsOperand once;            /* the operand read from a 1-slot buffer filled once before the loop (Q) */
    ChainRoles roles;
    bool pipe;                 /* the second product pipelined across trips (ws_chain_pipe) */
    int pipe_at;               /* then: the loop-carried value it accumulates (the yield's operand) */
    /* chained products on tcgen05 (warp_specialize_chain_tc.c) */
    int acc_at;                /* the loop-carried value the second product accumulates */
    int64_t tmem_cols;         /* S, P and O's columns */
} WsLoop;

/* warp_specialize.c */
/* Operand `arg` (0 = A, 1 = B) of product dot as ring operand i: an
 * SMEM_LOAD (through a TRANS for chains) of a buffer refilled in the body
 * by the guarded prefetch; why not, or NULL. */
const char *ws_find_operand(WsLoop *W, int i, Op *dot, int arg);
/* Why the window of ring operand i cannot be a TMA box (NULL: it can). */
const char *ws_tma_problem(const WsLoop *W, const WsOperand *o, Arena *a);
/* The first op of the body that is not a product, an operand's read,
 * pure work or the ring's bookkeeping; NULL when there is none. */
const Op *ws_stray_op(const WsLoop *W);
/* Is buf used outside the loop other than by copies before it (the prologue)? */
bool ws_buffer_elsewhere(const WsLoop *W, ValId buf);
/* Why a ring operand's copy cannot become the producer's TMA (offsets of
 * more than the fetched iteration, its buffer used elsewhere, a window TMA
 * cannot take); NULL: none. Needs W->in_loop. */
const char *ws_rings_problem(const WsLoop *W, Arena *a);
/* Marks W->in_loop: the values the loop defines. */
void ws_mark_loop(WsLoop *W, Arena *a);
/* The tensor a copy reads, by its source name. */
const char *ws_copied(const Func *f, const Op *copy);
/* The drain (async_wait {0}, barrier) right after the loop; why not, or NULL. */
const char *ws_find_drain(WsLoop *W);

/* The most bytes of one shared-memory store (an epilogue staged through
 * shared memory) under the walked ops, into *(int64_t *)ctx (ir_walk). */
bool ws_staging_visit(Func *f, Op *op, void *ctx);
/* The shared memory one block may use: the target's (or
 * target.smem-per-block), with several blocks an SM each its share. */
int64_t ws_block_smem(const PassCtx *ctx, int blocks);

/* warp_specialize_chain.c */
/* A loop of two chained products; why not, or NULL (W->chain set). */
const char *ws_chain_match(WsLoop *W, Arena *a);
/* Consumer warp groups and registers (pass_chain_roles); why not, or NULL. */
const char *ws_chain_roles(const PassCtx *ctx, WsLoop *W, Arena *a);
void ws_chain_report(PassCtx *ctx, const WsLoop *W, const char *at, const char *stages_why);
void ws_chain_rewrite(PassCtx *ctx, WsLoop *W, const char *at);
/* Before the loop: the trips' bounds (0, T, 1), S, the one-shot ring of
 * the once-loaded operand and each ring operand's full and empty rings. */
typedef struct WsChainRings { ValId bounds[3], cs, qfull; } WsChainRings;
WsChainRings ws_chain_begin(WsLoop *W, Builder *b);
/* The chain's producer: Q once on the one-shot ring qfull, then per trip
 * K and V each on its own full and empty rings. */
void ws_chain_producer(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, ValId qfull);
/* The ring's bookkeeping in the body (cp.async waits, commits, barriers,
 * the ring copies and their guards). */
bool ws_chain_bookkeeping(const WsLoop *W, const Op *op);
/* The ring operand whose read (or TRANS of it) op is, or NULL. */
const WsOperand *ws_chain_ring_read(const WsLoop *W, const Op *op);

/* warp_specialize_persist.c: wgmma roles over a persistent grid (its
 * header has the form) */
/* The kernel just rewritten into ws (stage count cs, trip count trips,
 * the once-loaded operand's ring qfull or 0): each role loops over the
 * block's tiles and the grid becomes min(SMs, tiles) where it can take
 * that form; the report says which, and why not. */
void ws_make_persistent(PassCtx *ctx, Func *f, Op *ws, ValId cs, ValId trips, ValId qfull, const char *at);

/* warp_specialize_chain_tc.c: chained products on tcgen05 (its header has
 * the form) */
/* Softmax warp groups, registers, tensor memory; why not, or NULL. */
const char *ws_chain_tc_roles(const PassCtx *ctx, WsLoop *W, Arena *a);
void ws_chain_tc_report(PassCtx *ctx, const WsLoop *W, const char *at, const char *stages_why);
void ws_chain_tc_rewrite(WsLoop *W);

/* warp_specialize_roles.c */
/* Does v depend only on the fetched iteration and values from outside the loop? */
bool ws_offset_ok(const WsLoop *W, ValId v, int depth);
/* Is op (before the loop) a guarded prologue stage of the loop's ring? */
bool ws_prologue_stage(const WsLoop *W, const Op *op);
/* The loop into roles (warp_specialize.c's header has the form). */
void ws_rewrite(PassCtx *ctx, WsLoop *W, const char *at);
/* Before the loop: the trips' bounds (0, T, 1), the stage count S and a
 * full and an empty ring of S slots. */
typedef struct WsRings { ValId bounds[3], cs, full, empty; } WsRings;
WsRings ws_begin(WsLoop *W, Builder *b);
/* After the roles are built: the epilogue into role, the loop's result
 * replaced by acc, the loop, its prologue and drain removed, the buffers
 * given S slots. */
void ws_finish(WsLoop *W, Block *role, ValId acc);
/* The producer role's loop in block role: per trip, wait until the slot
 * is empty, declare its bytes on full, copy both operands by TMA. */
void ws_fill_producer(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, ValId full, ValId empty);

/* warp_specialize_tc.c: a tcgen05 product (its header has the form) */
/* Epilogue warp groups and registers; why not, or NULL. */
const char *ws_tc_roles(WsLoop *W, Arena *a);
void ws_tc_report(PassCtx *ctx, const WsLoop *W, const char *at, const char *stages_why);
void ws_tc_rewrite(WsLoop *W);

/* The builders both rewrites use (warp_specialize_roles.c). */
typedef struct WsTrip { ValId slot, phase; } WsTrip;
/* Trips of the loop: (hi - lo + step - 1) / step (<= 0: none). */
ValId ws_trip_count(Builder *b, const Op *fo, ValId c1);
/* A ring of `stages` mbarriers of count 1. */
ValId ws_new_ring(Builder *b, int stages, const char *name);
/* for c0, trips, c1 carrying inits[0..n) in block dst; returns the FOR. */
Op *ws_role_loop(Func *f, Block *dst, Loc loc, const ValId bounds[3], const ValId *inits, int n);
/* slot = it mod S, phase = (it div S) & 1: what the protocol checker reads. */
WsTrip ws_trip_of(Builder *b, ValId it, ValId cs, ValId c1);
/* The original loop's induction value in trip it: lo + it * step. */
ValId ws_iv_of(Builder *b, const Op *fo, ValId it);
/* mbar_wait ring, slot, phase / mbar_expect, mbar_arrive ring, slot. */
Op *ws_ring_op(Builder *b, OpCode c, ValId ring, ValId slot, ValId phase);
/* A tma_load of copy's window into buf[slot], completing on full[slot];
 * the offsets through the map (the fetched iteration's, cloned into b). */
void ws_emit_tma(const WsLoop *W, Builder *b, ValMap *m, const Op *copy, ValId buf, ValId slot, ValId full);
/* Move the ops after the drain into the consumer role (barriers become
 * the consumers' named barrier, or go). */
void ws_move_epilogue(WsLoop *W, Block *role);
/* Remove the loop's prologue, the loop and its drain (chains: also the
 * once-loaded operand's copy and the cp.async waits and commits before
 * the loop), then the pure ops only they used. */
void ws_remove_ring(WsLoop *W);

#endif
