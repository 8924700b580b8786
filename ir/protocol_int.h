/* protocol_int.h - the static protocol checker's state and helpers, shared
 * by protocol.c (the walk over WS regions, the persistent grid's two
 * levels, named barriers, the reports), protocol_scan.c (each role's ring
 * accesses as events of its trip), protocol_rings.c (arrivals, bytes,
 * refills and reads of each ring; one-shot rings) and protocol_tmem.c
 * (commit rings, tensor memory shared by roles). protocol.c's header
 * describes the model and what is proven. Not part of the IR's interface
 * (ir.h). */
#ifndef TILEC_PROTOCOL_INT_H
#define TILEC_PROTOCOL_INT_H

#include "ir.h"

enum { EXPR_OTHER, EXPR_SLOT, EXPR_PHASE, EXPR_PHASE_FLIP };
enum { MAX_EV = 256 };

typedef struct Ev {
    const Op *op;
    int flip;              /* MBAR_WAIT: 1 for the opposite parity */
    const Op *end;         /* SMEM_LOAD: the op its read lasts to */
    int at;                /* the index in the role's region (one-shot events) or the trip (others) of the op
                              that holds it */
    int lag;               /* 1: of trip it - 1 (a pipelined ring) */
} Ev;

typedef struct RoleScan {
    const Op *loop;        /* the role's ring loop, or NULL */
    const Op *drain;       /* the IF after it that ends its pipelined rings, or NULL */
    Ev ev[MAX_EV];
    int nev;
    Ev once[MAX_EV];       /* ring ops at the role's top level, and its reads of 1-slot buffers at slot 0 */
    int nonce;
    int64_t threads;
} RoleScan;

typedef struct Checker {
    const Func *f;
    Diag *d;
    int nerr;
    const Op *ws;
    RoleScan role[WS_MAXROLES];
    int64_t stages;        /* S, from the first ring access; 0 = none yet */
    /* A persistent grid (each role's ring loop inside its loop over tiles): */
    int level;             /* 0: one level; 1: the tile loops' rings; 2: the trip loops' rings */
    ValId base;            /* level 2: the scanned role's trips before this tile (its tile loop's carried value) */
    int lagkind;           /* level 2, the role being scanned: its accesses one trip late are of base + max(it - 1,
                              0) (1: each tile drains its own) or of max(base + it - 1, 0) (2: one trip late over
                              all the block's trips, drained once after the tiles); 0 none yet */
    bool lagmix;           /* a role mixes the two */
    bool gdrain;           /* scanning that drain after the tiles (its operands of max(total - 1, 0)) */
} Checker;

/* ---- reports (protocol.c) ---- */

/* "protocol: 'op': what" at op's Loc, counted in C->nerr. */
void prot_err(Checker *C, const Op *op, const char *fmt, ...) TC_PRINTF(3, 4);
/* "line:col" of op, in the diagnostics' arena. */
const char *prot_at(Checker *C, const Op *op);

/* ---- the IR of ring accesses ---- */

static inline const Op *def(const Checker *C, ValId v) { return ir_val(C->f, v)->def; }

/* v is a scalar CONST; *k = its value. */
static inline bool is_const(const Checker *C, ValId v, int64_t *k)
{
    const Op *d = def(C, v);
    if (!d || d->code != OP_CONST || ir_type(C->f, v)->kind != TY_SCALAR)
        return false;
    *k = d->iattr[0];
    return true;
}

static inline bool ring_op(OpCode c)
{
    return c == OP_MBAR_WAIT || c == OP_MBAR_ARRIVE || c == OP_MBAR_EXPECT || c == OP_TMA_LOAD || c == OP_TC_COMMIT;
}

static inline bool is_arrival(OpCode c) { return c == OP_MBAR_ARRIVE || c == OP_MBAR_EXPECT || c == OP_TC_COMMIT; }

/* The ring an event's op uses (a TMA_LOAD's completion ring); 0 for a read. */
static inline ValId ring_of(const Op *op)
{
    if (op->code == OP_TMA_LOAD)
        return op->args[2];
    return op->code == OP_SMEM_LOAD ? 0 : op->args[0];
}

/* ---- protocol_scan.c ---- */

/* An ir_walk visitor: sets *(bool *)ctx at a ring op and stops there. */
bool prot_has_ring_op(Func *f, Op *op, void *ctx);
/* The events of the trip of loop (the role's ring loop, or at level 1 its
 * loop over tiles) into R. */
void prot_scan_trip(Checker *C, RoleScan *R, const Op *loop);
/* Role r's region b: its one-shot operations, its trip loop's events and
 * its drain, into C->role[r]; every access it cannot place is reported. */
void prot_scan_role(Checker *C, int r, const Block *b);
/* Level 2, a role whose accesses one trip late run over all the block's
 * trips (C->lagkind 2): the drain after its tile loop (op, at the role's
 * top level, `if total > 0` with total the tile loop's trip count), then
 * the checks prot_scan_role left for it. */
void prot_scan_tiles_drain(Checker *C, RoleScan *R, const Op *op, ValId total);

/* ---- protocol_rings.c ---- */

void prot_check_rings(Checker *C, int nroles);     /* arrivals and bytes per phase */
void prot_check_buffers(Checker *C, int nroles);   /* every refill and the reads it may overwrite */
void prot_check_once(Checker *C, int nroles);      /* one-shot rings, then commit rings */
/* An event of any role's trip using ring or filling buf, or NULL. */
const Op *prot_in_trips(const Checker *C, int nroles, ValId ring, ValId buf);
/* Does R wait on the one-shot ring at its top level before index `at`? */
bool prot_waited_before(const RoleScan *R, ValId ring, int at);

/* ---- protocol_tmem.c ---- */

/* A TC_COMMIT at a role's top level on ring (a commit ring), or NULL. */
const Op *prot_once_commit(const Checker *C, int nroles, ValId ring);
/* The commit ring of `commit` (at role p's top level). */
void prot_check_commit_ring(Checker *C, int nroles, int p, const Op *commit);
/* Every pair of accesses of each tensor memory by two roles. */
void prot_check_tmem(Checker *C, int nroles);

#endif
