/* interp_int.h - the interpreter's state and helpers, shared by its files:
 * interp.c (values, arithmetic, shapes, control flow, dispatch),
 * interp_mem.c (tensor windows, shared buffers, async copies),
 * interp_tile.c (scans, random words),
 * interp_sched.c, interp_tmem.c and interp_roles.c (WS roles, barriers,
 * TMA, asynchronous products, tensor memory; sched_int.h) and
 * interp_launch.c (argument binding, the grid, the public entry points).
 * Not part of the IR's interface (ir.h). */
#ifndef TILEC_INTERP_INT_H
#define TILEC_INTERP_INT_H

#include "ir.h"

typedef union Elem {
    double f;
    int64_t i;
} Elem;

/* Protocol state of one slot of a shared buffer (interp_mem.c). */
typedef struct SyncSlot {
    int64_t group;              /* group of its last copy (-1 = none pending) */
    int64_t landed;             /* barrier epoch in which that copy was retired */
    int64_t read;               /* barrier epoch of its last read (-1 = none) */
} SyncSlot;

struct MBar;                    /* interp_sched.c */
struct Fill;

typedef struct Slot {
    Elem *e;                    /* numel elements; NULL until defined */
    const InterpArg *tensor;    /* tensor params */
    SyncSlot *sync;             /* shared buffers: one per stage */
    struct MBar *mbar;          /* barrier rings: one per slot */
    struct Fill *fill;          /* buffers filled by TMA_LOAD: one per stage */
    ValId src_buf;              /* SMEM_LOAD results of such a buffer: where from */
    int64_t src_slot;
    int64_t locked;             /* accumulators of a DOT_ASYNC in flight: product id + 1 */
    struct Tmem *tmem;          /* tensor memory (TMEM_ALLOC results) */
} Slot;

typedef struct Sched Sched;

typedef struct Interp {
    const Func *f;
    Arena *a;                   /* where value buffers come from */
    Diag *d;
    Slot *slots;                /* per ValId */
    int64_t block[3], grid[3];
    int64_t committed;          /* async groups committed (the open group's id) */
    int64_t retired;            /* groups an ASYNC_WAIT has retired */
    int64_t epoch;              /* BARRIERs passed */
    uint64_t seed;              /* the schedule of WS roles (InterpOpts) */
    bool eager;
    Sched *sched;               /* barriers, roles, async work; per block, made on first use */
} Interp;

/* ---- values (interp.c) ---- */
static inline bool ip_intlike(DType dt) { return dt == DT_BOOL || dtype_is_int(dt); }
static inline DType ip_vdt(const Interp *I, ValId v) { return (DType)ir_type(I->f, v)->dtype; }
static inline int64_t ip_vnumel(const Interp *I, ValId v) { return type_numel(ir_type(I->f, v)); }
static inline const Elem *ip_in(const Interp *I, ValId v) { return I->slots[v].e; }
static inline int64_t ip_sint(const Interp *I, ValId v) { return I->slots[v].e[0].i; }
/* The buffer of a value being defined (allocated once, then reused). */
static inline Elem *ip_out(Interp *I, ValId v)
{
    Slot *s = &I->slots[v];
    if (!s->e)
        s->e = arena_alloc(I->a, sizeof(Elem) * (size_t)ip_vnumel(I, v));
    return s->e;
}
int64_t ip_wrap_int(DType dt, int64_t v);
/* a OP b on integers of dtype dt, wrapped; false for a division by zero
 * (or a divisor() over 2^32). */
bool ip_int_binary(OpCode c, DType dt, int64_t a, int64_t b, int64_t *r);
Elem ip_conv(DType from, DType to, Elem x);
double ip_as_double(DType dt, Elem x);
Elem ip_load_elem(DType dt, const void *p);
void ip_store_elem(DType dt, void *p, Elem x);
int ip_copy_val(Interp *I, ValId dst, ValId src, Loc loc);
int ip_check_operands(Interp *I, const Op *op);
int ip_exec_op(Interp *I, const Op *op);
int ip_run_block(Interp *I, const Block *b, const Op **term);
/* a @ b + c into o (rt: the result's type); 1 after an internal error. */
int ip_dot(Interp *I, Loc loc, ValId a, ValId b, ValId c, const Type *rt, Elem *o);

/* ---- memory (interp_mem.c) ---- */
/* A LOAD/STORE window: the tensor, offsets and extents per tensor dim. */
typedef struct Window {
    const InterpArg *t;
    DType dt;
    int rank;
    int64_t off[TENSOR_MAXRANK], ext[TENSOR_MAXRANK];
    int64_t n;        /* elements in the window */
} Window;
int ip_window_init(Interp *I, const Op *op, Window *w, int base, int nextra);
void *ip_window_elem(Interp *I, const Op *op, const Window *w, int64_t k, bool *bad);
/* LOAD, STORE, ATOMIC_ADD, GATHER, SCATTER, SMEM_*, ASYNC_*, BARRIER. */
int ip_exec_mem(Interp *I, const Op *op);

/* REDUCE / SCAN op along its axis iattr[0] (kind iattr[1]): the operand as
 * outer x len x inner; false (an internal error reported) for a bad axis
 * or kind, or a result of other than rnumel elements. */
bool ip_axis_split(Interp *I, const Op *op, int64_t rnumel, int64_t *outer, int64_t *len, int64_t *inner);

/* ---- scans and random words (interp_tile.c) ---- */
/* SCAN, PHILOX, SLICE, CONCAT, RESHAPE. */
int ip_exec_tile(Interp *I, const Op *op);

/* ---- the schedule (interp_sched.c) ---- */
/* WS, NAMED_BAR, MBAR_*, TMA_LOAD, DOT_ASYNC, DOT_WAIT, CONVERT_LAYOUT and
 * the tensor memory ops (interp_tmem.c). */
int ip_exec_sched(Interp *I, const Op *op);
/* An SMEM_LOAD of buffer[slot] into res: the full-phase check of a
 * TMA-filled slot and the read's record (for the refill check). */
int ip_sched_read(Interp *I, const Op *op, ValId buf, int64_t slot, ValId res);
/* Reports op's operand i: the accumulator of a DOT_ASYNC before its wait. */
int ip_sched_locked(Interp *I, const Op *op, int i);

#endif
