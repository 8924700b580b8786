/* verify_int.h - the verifier's state and helpers, shared by verify.c
 * (definitions and scopes, arity, blocks, kernels), verify_ops.c (the type
 * rules of the core ops), verify_sched.c (the schedule's ops: roles,
 * barriers, asynchronous products) and verify_tile.c (scans, random
 * words). Not part of the IR's interface (ir.h). */
#ifndef TILEC_VERIFY_INT_H
#define TILEC_VERIFY_INT_H

#include "ir.h"

enum { VS_UNSEEN = 0, VS_LIVE = 1, VS_DEAD = 2 };

typedef struct Verifier {
    const Func *f;
    Diag *d;
    Arena *scratch;       /* the per-value tables, freed when ir_verify returns (verification
                             runs between every two passes: nothing of it stays in the IR's
                             or the diagnostics' arena) */
    const char *after;
    int nerr;
    uint8_t *state;       /* per value: VS_* */
    uint32_t *ndefs;      /* per value: its definitions, counted when first needed (NULL before) */
    ValId *stack;         /* values defined, in order, for scope exits */
    uint32_t nstack, capstack;
    int ws_depth;         /* WS ops enclosing the op being checked */
    uint32_t *role;       /* per value: the WS role that defines it (0 = none) */
    uint32_t cur_role, nroles;  /* the role being checked; roles numbered so far */
} Verifier;

static inline const Type *T(Verifier *V, ValId v) { return ir_type(V->f, v); }
static inline bool is_scalar(const Type *t) { return t->kind == TY_SCALAR; }
static inline bool is_tile(const Type *t) { return t->kind == TY_TILE; }
static inline bool is_i32(const Type *t) { return t->kind == TY_SCALAR && t->dtype == DT_I32; }
static inline bool is_numeric(DType d) { return dtype_is_int(d) || dtype_is_float(d); }
/* Same kind, shape and dtype (space and layout ignored). */
static inline bool same_st(const Type *a, const Type *b) { return type_same_shape(a, b) && a->dtype == b->dtype; }
static inline bool valid_id(Verifier *V, ValId v) { return v > 0 && v < V->f->nvals; }

/* "verifier failed after pass 'P': 'op': what" at op's Loc. */
void vfy_err(Verifier *V, const Op *op, const char *fmt, ...) TC_PRINTF(3, 4);
const char *vfy_tstr(Verifier *V, const Type *t);

/* verify_ops.c: the type rule of op, once its operands, results and counts
 * are checked (here, in verify_tile.c or in verify_sched.c). */
void vfy_op_rule(Verifier *V, const Op *op);
void vfy_result_is(Verifier *V, const Op *op, const Type *want, const char *rule);
/* The window of a LOAD-like op whose tensor is operand `base`. */
bool vfy_window_type(Verifier *V, const Op *op, const Type *tt, int base, int nextra, Type *win);
/* Operands #0, #1 are an smem_alloc buffer and an i32 slot; *slot = its shape. */
bool vfy_buffer_slot(Verifier *V, const Op *op, Type *slot);
/* a[M,K] @ b[K,N] + acc[M,N] for DOT and DOT_ASYNC; false after reporting. */
bool vfy_dot_operands(Verifier *V, const Op *op);
/* DOT / DOT_ASYNC: iattr[0] a MmaKind, wgmma only on shapes it takes. */
void vfy_mma_kind(Verifier *V, const Op *op);
/* REDUCE / SCAN: iattr[0] an axis of the tile operand, iattr[1] a
 * ReduceKind; false after reporting. */
bool vfy_axis_kind(Verifier *V, const Op *op);

/* verify_sched.c: the type rule of a schedule op (WS, NAMED_BAR, MBAR_*,
 * TMA_LOAD, DOT_ASYNC, DOT_WAIT, CONVERT_LAYOUT); false if op is none. */
bool vfy_sched_rule(Verifier *V, const Op *op);
/* verify_tile.c: the type rule of SCAN, PHILOX, SLICE, CONCAT, RESHAPE,
 * GATHER or SCATTER; false if op is none. */
bool vfy_tile_rule(Verifier *V, const Op *op);

#endif
