/* protocol.c - the static protocol checker of barrier rings in WS regions:
 * an analysis a pass can call (ir_protocol_check) after it builds a
 * schedule; it writes nothing.
 *
 * Needs: verified IR. In each WS, a role's ring traffic sits in the body of
 * one loop `for 0, %hi, 1` per role (the same %hi in every role), and every
 * ring and buffer access there names slot `it mod S` and, for waits,
 * phase `(it div S) & 1` or its opposite, S being the ring's and the
 * buffer's slot count. Trip `it` then touches slot it mod S once, in phase
 * it div S, so what one trip does is what every phase of every slot gets,
 * whatever the trip count T (0, 1, fewer than S, any other): the checks
 * below hold for all T at once. The one exception is a one-shot ring: a
 * ring and a buffer of one slot whose ops sit at a role's top level
 * (outside its trip loop, so they run once whatever T) at slot 0, with
 * waits of parity 0 (attention's Q, filled once before the loops).
 *
 * Guarantees (each violation is an error at the op that breaks it):
 *  - every phase of a ring receives exactly its arrivals (the ring's count:
 *    one per MBAR_ARRIVE and MBAR_EXPECT of a trip, over all roles) and,
 *    when TMA copies complete on it, exactly the bytes its MBAR_EXPECTs
 *    declare (the sum of the boxes);
 *  - every read (SMEM_LOAD of a TMA-filled buffer; it lasts until the
 *    DOT_WAIT {pending = 0} that retires a DOT_ASYNC it feeds) comes after
 *    a wait on the ring its copies complete on, with the full parity
 *    (it div S) & 1, and before an arrive on the ring that the producer
 *    waits on before refilling the slot;
 *  - every refill (TMA_LOAD) comes after a wait on that empty ring with
 *    parity ((it div S) & 1) ^ 1: trip it waits for the phase completed by
 *    the releases of trip it - S, and passes at once for it < S;
 *  - the roles that meet on a named barrier id agree on its thread count,
 *    and bring that many threads (128 per warp group);
 *  - a one-shot ring gets exactly its arrivals and bytes from its one fill,
 *    its buffer is filled by that fill alone and neither is used in a
 *    trip, every wait on it has parity 0 (its only phase; parity 1 passes
 *    at once), and every read of its buffer comes after such a wait in the
 *    reading role (at its top level, or in its trip loop after it).
 * A read lasts through a TRANS of it too (a product's B = k^T reads the
 * slot in place). A TC_COMMIT is an arrival of its role; a read feeding a
 * TC_MMA lasts until the next TC_COMMIT of the trip, which is then the
 * release (an mbar_arrive before it frees the slot while the hardware may
 * still read it). Tensor memory: a commit ring is a one-slot ring whose
 * one phase gets TC_COMMITs at a role's top level after its trip loop
 * (they arrive once the role's products are done); it gets exactly its
 * arrivals, no trip uses it, its waits have parity 0, and every TMEM_LOAD
 * of tensor memory that role's TC_MMAs write comes after such a wait in
 * the reading role.
 * Pipelined rings: a role may take every access of a ring one trip late
 * (the second product of attention's trip j - 1 issued in trip j): slot
 * `p mod S` and phase `(p div S) & 1` with p = max(it - 1, 0). Its waits
 * and reads may run in every trip (trip 0 waits for and reads trip 0's
 * slot, filled whatever happens after it), its arrivals only under
 * `if it > 0`, and after the loop an `if hi > 0` (the drain) repeats the
 * trip's accesses of the ring in order for p = max(hi - 1, 0). A wait of
 * such a ring may sit under `if it != 1` (in the drain `if hi != 1`):
 * trip 1's slot and phase are trip 0's, which trip 0 waited for. Trip t's
 * slot then gets its release once (in trip t + 1, or in the drain for
 * t = hi - 1), after every read of it, so the per-trip counts and orders
 * below hold as for an access of the trip itself. A DOT_WAIT {pending =
 * n} retires a product when n or more products are issued after it
 * before the wait (wgmma groups complete in order).
 * A persistent grid: each role's one op with ring traffic is a loop
 * `for 0, %tiles, 1` over tiles (one bound for all roles) whose body holds
 * the trip loop. Level 1 takes the tile loop as the trip loop of the rings
 * its body uses at its top level (attention's Q, a ring of one slot: slot
 * n mod 1), a read there lasting through the nested ops whose products
 * read it (each retired in its own block). Level 2 takes the trip loop as
 * above with every slot and phase of base + it (base + max(it - 1, 0)),
 * base the tile loop's one carried value, 0 at first and grown each tile
 * by the role's trip count, the roles' trip counts the same pure
 * expression of the tile: the trips of all the tiles then take each ring
 * as one trip loop would.
 * A ring access it cannot put in this form is reported as unproven.
 */
#include "ir.h"

#include <string.h>

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
} Checker;

static void perr(Checker *C, const Op *op, const char *fmt, ...) TC_PRINTF(3, 4);
static void perr(Checker *C, const Op *op, const char *fmt, ...)
{
    StrBuf sb = { 0 };
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    diag_error(C->d, op->loc, "protocol: '%s': %s", op_info[op->code].name, sb.buf ? sb.buf : "");
    sb_free(&sb);
    C->nerr++;
}

static const char *at(Checker *C, const Op *op)
{
    return arena_printf(C->d->arena, "%d:%d", op->loc.line, op->loc.col);
}

/* ---- affine forms ---- */

static const Op *def(const Checker *C, ValId v) { return ir_val(C->f, v)->def; }

static bool is_const(const Checker *C, ValId v, int64_t *k)
{
    const Op *d = def(C, v);
    if (!d || d->code != OP_CONST || ir_type(C->f, v)->kind != TY_SCALAR)
        return false;
    *k = d->iattr[0];
    return true;
}

/* v = max(iv - 1, 0): the trip before iv's, clamped at 0. */
static bool is_before(const Checker *C, ValId v, ValId iv)
{
    const Op *d = def(C, v);
    int64_t k;
    if (!d || d->code != OP_MAX || d->nargs != 2)
        return false;
    for (int i = 0; i < 2; i++) {
        const Op *s = def(C, d->args[i]);
        if (is_const(C, d->args[1 - i], &k) && k == 0 && s && s->code == OP_SUB && s->nargs == 2 &&
            s->args[0] == iv && is_const(C, s->args[1], &k) && k == 1)
            return true;
    }
    return false;
}

/* v = op(iv, S) with S constant (either order for commutative ops), or
 * op(max(iv - 1, 0), S) with *lag = 1. */
static bool of_iv(const Checker *C, const Op *d, OpCode code, ValId iv, int64_t *k, int *lag)
{
    if (!d || d->code != code || d->nargs != 2)
        return false;
    ValId x = d->args[0];
    const Op *a = def(C, x);
    if (C->level == 2 && a && a->code == OP_ADD && a->nargs == 2 && (a->args[0] == C->base || a->args[1] == C->base))
        x = a->args[a->args[0] == C->base];   /* base + x: trip x of this tile, after the tiles before */
    else if (C->level == 2)
        return false;
    if ((x == iv || is_before(C, x, iv)) && is_const(C, d->args[1], k)) {
        *lag = x != iv;
        return true;
    }
    return false;
}

/* slot = rem(iv, S); phase = and(div(iv, S), 1); its flip = xor(phase, 1);
 * *lag = 1 when iv is max(iv - 1, 0) in them. At level 2 every iv (or
 * max(iv - 1, 0)) is base + it. */
static int expr(Checker *C, ValId v, ValId iv, int64_t *S, int *lag)
{
    const Op *d = def(C, v);
    int64_t k;
    if (of_iv(C, d, OP_REM, iv, S, lag))
        return EXPR_SLOT;
    if (d && d->code == OP_XOR && d->nargs == 2) {
        for (int i = 0; i < 2; i++)
            if (is_const(C, d->args[1 - i], &k) && k == 1 && expr(C, d->args[i], iv, S, lag) == EXPR_PHASE)
                return EXPR_PHASE_FLIP;
        return EXPR_OTHER;
    }
    if (d && d->code == OP_AND && d->nargs == 2)
        for (int i = 0; i < 2; i++)
            if (is_const(C, d->args[1 - i], &k) && k == 1 && of_iv(C, def(C, d->args[i]), OP_DIV, iv, S, lag))
                return EXPR_PHASE;
    return EXPR_OTHER;
}

/* Operand i is slot it mod S of a ring / buffer of S slots (of trip it - 1
 * when e->lag: every operand of one access must agree). */
static bool slot_ok(Checker *C, const Op *op, int i, ValId iv, ValId ring, Ev *e)
{
    int64_t S = 0;
    int64_t n = ir_type(C->f, ring)->shape[0];
    int lag = 0;
    int x = expr(C, op->args[i], iv, &S, &lag);
    if (x == EXPR_SLOT && e->lag >= 0 && lag != e->lag) {
        perr(C, op, "cannot prove the protocol: the operands name the slots of different trips");
        return false;
    }
    e->lag = lag;
    if (x != EXPR_SLOT || S != n || (C->stages && S != C->stages)) {
        perr(C, op, "cannot prove the protocol: operand #%d is not the slot `it mod %lld` of the trip", i,
             (long long)(C->stages ? C->stages : n));
        return false;
    }
    C->stages = S;
    return true;
}

/* ---- collecting a role's trip ---- */

static bool ring_op(OpCode c)
{
    return c == OP_MBAR_WAIT || c == OP_MBAR_ARRIVE || c == OP_MBAR_EXPECT || c == OP_TMA_LOAD || c == OP_TC_COMMIT;
}

static bool is_arrival(OpCode c) { return c == OP_MBAR_ARRIVE || c == OP_MBAR_EXPECT || c == OP_TC_COMMIT; }

static bool has_ring_op(Func *f, Op *op, void *ctx)
{
    (void)f;
    if (ring_op(op->code))
        *(bool *)ctx = true;
    return !*(bool *)ctx;
}

/* The DOT_WAIT in block b after the DOT_ASYNC at index k that retires it
 * (pending = 0, or no more than the products issued after it before the
 * wait); NULL when there is none. */
static const Op *retiring_wait(const Block *b, int k)
{
    const Op *op = b->ops[k];
    int64_t later = 0;   /* products issued after it before the wait */
    for (int j = k + 1; j < b->nops; j++) {
        if (b->ops[j]->code == OP_DOT_WAIT && b->ops[j]->args[0] == op->res[0])
            return b->ops[j]->iattr[0] > later ? NULL : b->ops[j];
        later += b->ops[j]->code == OP_DOT_ASYNC;
    }
    return NULL;
}

/* A read used inside a nested op (attention's Q, read at a tile's top
 * level and used by the products of its trip loop): does op use v (or t),
 * and is every product there that reads it retired in its own block? */
typedef struct Nested { Checker *C; ValId v, t; bool uses; } Nested;

static bool nested_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    Nested *n = ctx;
    bool reads = false;
    for (int i = 0; i < op->nargs; i++)
        reads = reads || op->args[i] == n->v || (n->t && op->args[i] == n->t);
    n->uses = n->uses || reads;
    if (reads && op->code == OP_DOT_ASYNC && !retiring_wait(op->parent, ir_block_index_of(op->parent, op)))
        perr(n->C, op, "cannot prove the protocol: a product reading a ring slot inside the loop is not retired by "
             "a dot_wait in its own block");
    if (reads && op->code == OP_TC_MMA)
        perr(n->C, op, "cannot prove the protocol: a tc_mma inside a nested loop reads a slot of the loop around it");
    return true;
}

/* The DOT_WAIT {pending = 0} retiring the DOT_ASYNC that reads v (or its
 * transpose: wgmma reads k^T in place), or the read itself when no product
 * reads it; a nested op (a loop, an IF) whose products read it, when every
 * one of them retires inside; NULL when it cannot be placed. */
static const Op *read_end(Checker *C, const Block *b, int i, ValId v)
{
    const Op *end = b->ops[i];
    ValId t = 0;
    for (int k = i + 1; k < b->nops; k++) {
        const Op *op = b->ops[k];
        if (op->code == OP_TRANS && op->args[0] == v && !t)
            t = op->res[0];
        if (op->nregions) {
            Nested n = { C, v, t, false };
            for (int g = 0; g < op->nregions; g++)
                ir_walk((Func *)C->f, (Block *)&op->regions[g], nested_visit, &n);
            if (n.uses)
                end = op;
            continue;
        }
        if (op->code == OP_TC_MMA && (op->args[0] == v || op->args[1] == v)) {
            const Op *c = NULL;
            for (int j = k + 1; j < b->nops && !c; j++)
                if (b->ops[j]->code == OP_TC_COMMIT)
                    c = b->ops[j];
            if (!c) {
                perr(C, op, "cannot prove the protocol: the tc_mma reading a ring slot is not followed by a "
                     "tc_commit in the same trip");
                return NULL;
            }
            end = c;
            continue;
        }
        bool reads = op->code == OP_DOT_ASYNC &&
                     (op->args[0] == v || op->args[1] == v || (t && (op->args[0] == t || op->args[1] == t)));
        if (!reads)
            continue;
        const Op *w = retiring_wait(b, k);
        if (!w) {
            perr(C, op, "cannot prove the protocol: the product reading a ring slot is not retired by a "
                 "dot_wait in the same trip (pending = 0, or no more than the products issued after it)");
            return NULL;
        }
        end = w;
    }
    return end;
}

/* Operand i is the constant 0 (a one-shot ring's slot and phase). */
static bool is_zero(Checker *C, const Op *op, int i)
{
    int64_t k;
    return is_const(C, op->args[i], &k) && k == 0;
}

/* A read of a 1-slot buffer at slot 0 (a one-shot buffer's, checked with
 * the one-shot rings) rather than a ring slot of the trip. */
static bool once_read(Checker *C, const Op *op)
{
    return op->code == OP_SMEM_LOAD && ir_type(C->f, op->args[0])->shape[0] == 1 && is_zero(C, op, 1);
}

/* One ring access of block b (the trip's, or the drain's then-arm), op at
 * index i, with iv the trip's value (the loop's hi in the drain): its event
 * in *e; false (reported) when it cannot be placed. */
static bool ring_event(Checker *C, const Block *b, int i, ValId iv, Ev *e)
{
    const Op *op = b->ops[i];
    int64_t S;
    int lag = 0;
    switch (op->code) {
    case OP_MBAR_WAIT:
        if (!slot_ok(C, op, 1, iv, op->args[0], e))
            return false;
        switch (expr(C, op->args[2], iv, &S, &lag)) {
        case EXPR_PHASE: break;
        case EXPR_PHASE_FLIP: e->flip = 1; break;
        default:
            perr(C, op, "cannot prove the protocol: the phase is not (it div S) & 1 or its opposite");
            return false;
        }
        if (lag != e->lag) {
            perr(C, op, "cannot prove the protocol: the slot and the phase are of different trips");
            return false;
        }
        return true;
    case OP_MBAR_ARRIVE: case OP_MBAR_EXPECT: case OP_TC_COMMIT:
        return slot_ok(C, op, 1, iv, op->args[0], e);
    case OP_TMA_LOAD:
        return slot_ok(C, op, 1, iv, op->args[0], e) && slot_ok(C, op, 3, iv, op->args[2], e);
    case OP_SMEM_LOAD:
        return slot_ok(C, op, 1, iv, op->args[0], e) && (e->end = read_end(C, b, i, op->res[0])) != NULL;
    default:
        return false;
    }
}

static bool add_ev(Checker *C, RoleScan *R, const Ev *e)
{
    if (R->nev == MAX_EV) {
        perr(C, e->op, "cannot prove the protocol: more than %d ring operations in one trip", MAX_EV);
        return false;
    }
    R->ev[R->nev++] = *e;
    return true;
}

/* cond is `v > 0` (cmp gt v, 0)? */
static bool positive(const Checker *C, ValId cond, ValId v)
{
    const Op *d = def(C, cond);
    int64_t k;
    return d && d->code == OP_CMP && d->nargs == 2 && d->iattr[0] == CMP_GT && d->args[0] == v &&
           is_const(C, d->args[1], &k) && k == 0;
}

/* cond is `v != 1` (cmp ne v, 1)? */
static bool not_one(const Checker *C, ValId cond, ValId v)
{
    const Op *d = def(C, cond);
    int64_t k;
    return d && d->code == OP_CMP && d->nargs == 2 && d->iattr[0] == CMP_NE && d->args[0] == v &&
           is_const(C, d->args[1], &k) && k == 1;
}

/* An IF of the trip (iv: the trip; the loop's hi in the drain) holding
 * ring operations of the trip before, the else arm empty: arrivals under
 * `if iv > 0`, waits under `if iv != 1`. */
static void scan_guarded(Checker *C, RoleScan *R, const Op *op, int at, ValId iv)
{
    const Block *t = &op->regions[0], *e = &op->regions[1];
    bool gt = op->code == OP_IF && positive(C, op->args[0], iv), ne = op->code == OP_IF && not_one(C, op->args[0], iv);
    bool ok = (gt || ne) && !op->nres && e->nops <= 1;
    for (int j = 0; ok && j < t->nops; j++)   /* not a wait under `it > 0`: trip 0 reads its slot unwaited */
        ok = t->ops[j]->code == OP_YIELD || (ne && t->ops[j]->code == OP_MBAR_WAIT) ||
             (gt && t->ops[j]->code == OP_MBAR_ARRIVE);
    if (!ok) {
        perr(C, op, "cannot prove the protocol: ring operations nested in the trip's control flow (only arrivals "
             "of the trip before under `if it > 0`, its waits under `if it != 1`)");
        return;
    }
    for (int j = 0; j < t->nops; j++) {
        if (t->ops[j]->code == OP_YIELD)
            continue;
        Ev ev = { t->ops[j], 0, NULL, at, -1 };
        if (!ring_event(C, t, j, iv, &ev))
            continue;
        if (ev.lag != 1) {
            perr(C, t->ops[j], "cannot prove the protocol: under `if it > 0` a ring operation names the slot of "
                 "trip it, not of trip it - 1");
            continue;
        }
        if (!add_ev(C, R, &ev))
            return;
    }
}

static void scan_trip(Checker *C, RoleScan *R, const Op *loop)
{
    const Block *b = &loop->regions[0];
    ValId iv = b->args[0];
    for (int i = 0; i < b->nops; i++) {
        const Op *op = b->ops[i];
        if (op->nregions) {
            bool any = false;
            for (int g = 0; g < op->nregions; g++)
                ir_walk((Func *)C->f, &op->regions[g], has_ring_op, &any);
            if (any && C->level != 1)   /* level 1: the trip loop and its drain, level 2's */
                scan_guarded(C, R, op, i, iv);
            continue;
        }
        if (once_read(C, op)) {   /* in the trip loop: after the role's top-level ops before it */
            if (R->nonce < MAX_EV)
                R->once[R->nonce++] = (Ev){ op, 0, NULL, ir_block_index_of(loop->parent, loop), 0 };
            continue;
        }
        if (!ring_op(op->code) && op->code != OP_SMEM_LOAD)
            continue;
        Ev e = { op, 0, NULL, i, -1 };
        if (!ring_event(C, b, i, iv, &e))
            continue;
        if (e.lag && op->code != OP_MBAR_WAIT && op->code != OP_SMEM_LOAD) {
            perr(C, op, "cannot prove the protocol: trip 0 would %s for a trip before it (only under `if it > 0`)",
                 op->code == OP_TMA_LOAD ? "fill a slot" : "arrive");
            continue;
        }
        if (!add_ev(C, R, &e))
            return;
    }
}

/* The drain of a role's pipelined rings: `if hi > 0` after the trip loop
 * whose then-arm repeats, for p = max(hi - 1, 0), the accesses the trip
 * makes of those rings one trip late, in order (so the last trip's slot
 * is read and released as every other's). */
static void scan_drain(Checker *C, RoleScan *R, const Op *op)
{
    const Block *t = &op->regions[0];
    ValId hi = R->loop->args[1];
    bool any = false;
    ir_walk((Func *)C->f, (Block *)&op->regions[1], has_ring_op, &any);
    if (R->drain || any || !positive(C, op->args[0], hi)) {
        perr(C, op, "cannot prove the protocol: ring operations after the role's trip loop other than one drain "
             "(`if hi > 0`, the else arm without them)");
        return;
    }
    R->drain = op;
    int k = 0;        /* the next lagged event of the trip to match */
    int ends = -1;    /* where the drain's reads so far end */
    RoleScan G;   /* the drain's guarded waits, as events */
    G.nev = 0;
    for (int j = 0; j < t->nops; j++) {
        const Op *o = t->ops[j];
        Ev e = { o, 0, NULL, j, -1 };
        if (o->code == OP_IF) {
            bool nested = false;
            ir_walk((Func *)C->f, (Block *)&o->regions[0], has_ring_op, &nested);
            if (!nested)
                continue;
            int before = C->nerr;
            scan_guarded(C, &G, o, j, hi);
            if (C->nerr != before || G.nev != 1 || G.ev[0].op->code != OP_MBAR_WAIT) {
                if (C->nerr == before)
                    perr(C, o, "cannot prove the protocol: the drain's guarded ring operations are not one wait");
                return;
            }
            e = G.ev[0];
            G.nev = 0;
            o = e.op;
        } else if (!ring_op(o->code) && o->code != OP_SMEM_LOAD) {
            continue;
        } else if (!ring_event(C, t, j, hi, &e)) {
            continue;
        }
        if (e.end && ir_block_index_of(t, e.end) > ends)
            ends = ir_block_index_of(t, e.end);
        if (is_arrival(o->code) && j < ends) {
            perr(C, o, "releases the last trip's slot before the drain's read of it ends");
            return;
        }
        while (k < R->nev && !R->ev[k].lag)
            k++;
        const Op *m = k < R->nev ? R->ev[k].op : NULL;
        if (!e.lag || !m || m->code != o->code || m->args[0] != o->args[0] || e.flip != R->ev[k].flip) {
            perr(C, o, "cannot prove the protocol: the drain after the loop does not repeat the trip's accesses "
                 "of its pipelined rings, in order, for the last trip");
            return;
        }
        k++;
    }
    while (k < R->nev && !R->ev[k].lag)
        k++;
    if (k < R->nev)
        perr(C, R->ev[k].op, "cannot prove the protocol: the drain after the loop does not repeat this access of "
             "a pipelined ring for the last trip");
}

/* Every ring one role accesses: all of it in the trip itself, or all of it
 * one trip late. */
static void check_lags(Checker *C, const RoleScan *R)
{
    for (int i = 0; i < R->nev; i++)
        for (int j = 0; j < i; j++) {
            const Op *a = R->ev[i].op, *b = R->ev[j].op;
            ValId ra = a->code == OP_SMEM_LOAD ? a->args[0] : a->code == OP_TMA_LOAD ? a->args[2] : a->args[0];
            ValId rb = b->code == OP_SMEM_LOAD ? b->args[0] : b->code == OP_TMA_LOAD ? b->args[2] : b->args[0];
            if (ra == rb && R->ev[i].lag != R->ev[j].lag) {
                perr(C, a, "cannot prove the protocol: a role accesses one ring both in the trip and one trip late "
                     "(at %s)", at(C, b));
                return;
            }
        }
    for (int i = 0; i < R->nev && !R->drain; i++)
        if (R->ev[i].lag) {
            perr(C, R->ev[i].op, "cannot prove the protocol: an access one trip late with no drain after the loop "
                 "(`if hi > 0` repeating it for the last trip)");
            return;
        }
}

/* A ring op at the role's top level: one of a one-shot ring's (a ring and
 * a buffer of 1 slot, slot 0; waits with parity 0), run once per block. */
static void scan_once(Checker *C, RoleScan *R, const Op *op, int at)
{
    ValId ring = op->code == OP_TMA_LOAD ? op->args[2] : op->args[0];
    int slot = op->code == OP_TMA_LOAD ? 3 : 1;
    bool one = ir_type(C->f, ring)->shape[0] == 1 && is_zero(C, op, slot);
    if (op->code == OP_TMA_LOAD)
        one = one && ir_type(C->f, op->args[0])->shape[0] == 1 && is_zero(C, op, 1);
    if (!one) {
        perr(C, op, "cannot prove the protocol: ring operations outside the role's trip loop take a one-shot ring "
             "and buffer (one slot, slot 0)");
        return;
    }
    if (op->code == OP_MBAR_WAIT && !is_zero(C, op, 2)) {
        perr(C, op, "waits on a one-shot ring with a parity other than 0: it passes at once, before the ring's "
             "only phase (0) completes");
        return;
    }
    if (R->nonce == MAX_EV) {
        perr(C, op, "cannot prove the protocol: more than %d one-shot operations in one role", MAX_EV);
        return;
    }
    R->once[R->nonce++] = (Ev){ op, 0, NULL, at, 0 };
}

static void scan_role(Checker *C, int r, const Block *b)
{
    RoleScan *R = &C->role[r];
    for (int i = 0; i < b->nops; i++) {
        Op *op = b->ops[i];
        bool any = false;
        for (int g = 0; g < op->nregions; g++)
            ir_walk((Func *)C->f, &op->regions[g], has_ring_op, &any);
        if (ring_op(op->code)) {
            if (C->level != 2)   /* level 2: the tile loop's own rings, level 1's */
                scan_once(C, R, op, i);
            continue;
        }
        if (once_read(C, op) && R->nonce < MAX_EV)
            R->once[R->nonce++] = (Ev){ op, 0, NULL, i, 0 };
        if (any && op->code == OP_IF && R->loop) {
            scan_drain(C, R, op);
            continue;
        }
        if (any && op->code != OP_FOR) {
            perr(C, op, "cannot prove the protocol: ring operations outside the role's trip loop");
            continue;
        }
        if (!any)
            continue;
        int64_t lo, step;
        if (R->loop || !is_const(C, op->args[0], &lo) || lo != 0 || !is_const(C, op->args[2], &step) ||
            step != 1) {
            perr(C, op, "cannot prove the protocol: ring traffic needs one loop `for 0, %%hi, 1` per role");
            continue;
        }
        R->loop = op;
        scan_trip(C, R, op);
    }
    check_lags(C, R);
}

/* ---- the checks ---- */

/* The position of the first event of role R matching (code, operand a ==
 * v) at or after `from` and before `to`; -1 if none. */
static int find(const RoleScan *R, OpCode code, int a, ValId v, int from, int to)
{
    for (int i = from; i < to && i < R->nev; i++)
        if (R->ev[i].op->code == code && R->ev[i].op->args[a] == v)
            return i;
    return -1;
}

static int pos_of(const RoleScan *R, const Op *op)
{
    for (int i = 0; i < R->nev; i++)
        if (R->ev[i].op == op)
            return i;
    const Block *b = &R->loop->regions[0];   /* a DOT_WAIT: after the events before it */
    int k = ir_block_index_of(b, op), n = 0;
    for (int i = 0; i < R->nev; i++)
        n += R->ev[i].at < k;
    return n;
}

static ValId ring_of(const Op *op)
{
    if (op->code == OP_TMA_LOAD)
        return op->args[2];
    return op->code == OP_SMEM_LOAD ? 0 : op->args[0];
}

/* Arrivals and bytes per phase of one ring, over every role's trip. */
static void check_ring(Checker *C, int nroles, ValId ring)
{
    int64_t arrivals = 0, declared = 0, carried = 0;
    const Op *expect = NULL;
    for (int q = 0; q < nroles; q++)
        for (int j = 0; j < C->role[q].nev; j++) {
            const Op *o = C->role[q].ev[j].op;
            if (ring_of(o) != ring)
                continue;
            if (is_arrival(o->code))
                arrivals++;
            if (o->code == OP_MBAR_EXPECT) {
                declared += o->iattr[0];
                expect = expect ? expect : o;
            }
            if (o->code == OP_TMA_LOAD) {
                const Type *bt = ir_type(C->f, o->args[0]);
                carried += type_numel(bt) / bt->shape[0] * dtype_bits((DType)bt->dtype) / 8;
            }
        }
    const Op *alloc = def(C, ring);
    if (alloc && arrivals != alloc->iattr[0])
        perr(C, alloc, "every phase of this ring expects %lld arrival(s), but a trip makes %lld "
             "(mbar_arrive, mbar_expect and tc_commit over all roles)", (long long)alloc->iattr[0],
             (long long)arrivals);
    if (declared != carried && (expect || alloc))
        perr(C, expect ? expect : alloc, "mbar_expect declares %lld bytes per phase of the ring, but the "
             "tma_loads completing on it carry %lld", (long long)declared, (long long)carried);
}

static void check_rings(Checker *C, int nroles)
{
    ValId done[MAX_EV];
    int ndone = 0;
    for (int r = 0; r < nroles; r++)
        for (int i = 0; i < C->role[r].nev; i++) {
            ValId ring = ring_of(C->role[r].ev[i].op);
            bool seen = !ring;
            for (int k = 0; k < ndone && !seen; k++)
                seen = done[k] == ring;
            if (seen || ndone == MAX_EV)
                continue;
            done[ndone++] = ring;
            check_ring(C, nroles, ring);
        }
}

/* The refill of a buffer by role p and every read of it by another role. */
static void check_buffer(Checker *C, int nroles, int p, int i)
{
    const RoleScan *P = &C->role[p];
    const Op *tma = P->ev[i].op;
    ValId buf = tma->args[0], full = tma->args[2], empty = 0;
    for (int j = i - 1; j >= 0 && !empty; j--)
        if (P->ev[j].op->code == OP_MBAR_WAIT && P->ev[j].op->args[0] != full) {
            empty = P->ev[j].op->args[0];
            if (!P->ev[j].flip)
                perr(C, P->ev[j].op, "the wait before the refill at %s uses parity (it div S) & 1, but the "
                     "releases of trip it - S complete the phase of parity ((it div S) & 1) ^ 1",
                     at(C, tma));
        }
    if (!empty) {
        perr(C, tma, "refills slot it mod S without waiting for its release (no mbar_wait with parity "
             "((it div S) & 1) ^ 1 on an empty ring before it)");
        return;
    }
    for (int q = 0; q < nroles; q++) {
        const RoleScan *R = &C->role[q];
        if (q == p)
            continue;
        for (int k = find(R, OP_SMEM_LOAD, 0, buf, 0, R->nev); k >= 0;
             k = find(R, OP_SMEM_LOAD, 0, buf, k + 1, R->nev)) {
            const Op *rd = R->ev[k].op;
            int w = -1;
            for (int j = k - 1; j >= 0 && w < 0; j--)
                if (R->ev[j].op->code == OP_MBAR_WAIT && R->ev[j].op->args[0] == full)
                    w = j;
            if (w < 0)
                perr(C, rd, "reads slot it mod S with no mbar_wait on the full ring (the tma_load at %s "
                     "completes on it) before it", at(C, tma));
            else if (R->ev[w].flip)
                perr(C, R->ev[w].op, "waits on the full ring with parity ((it div S) & 1) ^ 1: it passes before "
                     "the copies of trip it land (the read at %s)", at(C, rd));
            int end = pos_of(R, R->ev[k].end);
            int early = find(R, OP_MBAR_ARRIVE, 0, empty, k + 1, end);
            if (early < 0 && R->ev[k].end->code == OP_TC_COMMIT)
                early = find(R, OP_TC_COMMIT, 0, empty, k + 1, end);
            if (early >= 0)
                perr(C, R->ev[early].op, "releases slot it mod S before the read at %s ends (at %s), so the "
                     "refill at %s may overwrite it", at(C, rd), at(C, R->ev[k].end), at(C, tma));
            else if (find(R, OP_MBAR_ARRIVE, 0, empty, end, R->nev) < 0 &&
                     find(R, OP_MBAR_EXPECT, 0, empty, end, R->nev) < 0 &&
                     find(R, OP_TC_COMMIT, 0, empty, end, R->nev) < 0)
                perr(C, rd, "the read is never released: no mbar_arrive on the empty ring that the refill at "
                     "%s waits on comes after it", at(C, tma));
        }
    }
}

/* Every refill of every role's trip, and the reads of its buffer. */
static void check_buffers(Checker *C, int nroles)
{
    for (int r = 0; r < nroles; r++)
        for (int i = 0; i < C->role[r].nev; i++)
            if (C->role[r].ev[i].op->code == OP_TMA_LOAD)
                check_buffer(C, nroles, r, i);
}

/* ---- one-shot rings ---- */

/* Does an event of any role's trip use the ring or fill the buffer? */
static const Op *in_trips(const Checker *C, int nroles, ValId ring, ValId buf)
{
    for (int q = 0; q < nroles; q++)
        for (int j = 0; j < C->role[q].nev; j++) {
            const Op *o = C->role[q].ev[j].op;
            if ((ring && ring_of(o) == ring) || (buf && o->code == OP_TMA_LOAD && o->args[0] == buf))
                return o;
        }
    return NULL;
}

/* The one-shot copy (at a role's top level) into buf, or completing on
 * ring; NULL when there is none. */
static const Op *once_fill(const Checker *C, int nroles, ValId buf, ValId ring)
{
    for (int p = 0; p < nroles; p++)
        for (int k = 0; k < C->role[p].nonce; k++) {
            const Op *o = C->role[p].once[k].op;
            if (o->code == OP_TMA_LOAD && ((buf && o->args[0] == buf) || (ring && o->args[2] == ring)))
                return o;
        }
    return NULL;
}

/* Does role R wait on the one-shot ring at its top level before the op at
 * index `at` of its region? */
static bool waited_before(const RoleScan *R, ValId ring, int at)
{
    for (int k = 0; k < R->nonce; k++)
        if (R->once[k].op->code == OP_MBAR_WAIT && R->once[k].op->args[0] == ring && R->once[k].at < at)
            return true;
    return false;
}

/* A one-shot ring (its TMA_LOAD tma at a role's top level): filled once
 * with exactly its arrivals and bytes, never used in a trip, and every
 * read of its buffer after a wait on it in the reading role. */
static void check_once_ring(Checker *C, int nroles, const Op *tma)
{
    ValId ring = tma->args[2], buf = tma->args[0];
    int64_t arrivals = 0, declared = 0, carried = 0, buf_fills = 0;
    const Op *expect = NULL, *trip = in_trips(C, nroles, ring, buf);
    if (trip) {
        perr(C, trip, "a one-shot ring or buffer (the tma_load at %s) is also used in the trip loop: it has one "
             "phase only", at(C, tma));
        return;
    }
    for (int q = 0; q < nroles; q++)
        for (int j = 0; j < C->role[q].nonce; j++) {
            const Op *o = C->role[q].once[j].op;
            if (o->code == OP_TMA_LOAD && o->args[0] == buf)
                buf_fills++;
            if (ring_of(o) != ring)
                continue;
            arrivals += is_arrival((OpCode)o->code);
            if (o->code == OP_MBAR_EXPECT) {
                declared += o->iattr[0];
                expect = expect ? expect : o;
            }
            if (o->code == OP_TMA_LOAD) {
                const Type *bt = ir_type(C->f, o->args[0]);
                carried += type_numel(bt) * dtype_bits((DType)bt->dtype) / 8;
            }
        }
    const Op *alloc = def(C, ring);
    if (alloc && arrivals != alloc->iattr[0])
        perr(C, alloc, "the one phase of this one-shot ring expects %lld arrival(s), but its fill makes %lld "
             "(mbar_arrive and mbar_expect over all roles)", (long long)alloc->iattr[0], (long long)arrivals);
    if (declared != carried)
        perr(C, expect ? expect : tma, "mbar_expect declares %lld bytes for the one phase of the one-shot ring, but "
             "the tma_loads completing on it carry %lld", (long long)declared, (long long)carried);
    if (buf_fills > 1)
        perr(C, tma, "fills a one-shot buffer that another tma_load fills too: it is read after one phase only");
    for (int q = 0; q < nroles; q++) {
        const RoleScan *R = &C->role[q];
        for (int j = 0; j < R->nonce; j++) {
            const Op *rd = R->once[j].op;
            if (rd->code != OP_SMEM_LOAD || rd->args[0] != buf)
                continue;
            if (!waited_before(R, ring, R->once[j].at))
                perr(C, rd, "reads a one-shot buffer with no mbar_wait on its ring (the tma_load at %s completes on "
                     "it) before it in the role", at(C, tma));
        }
    }
}

/* Reads outside the trips of buffers no one-shot copy fills: ring slots
 * (filled in a trip) the checker cannot place. */
static void check_once_reads(Checker *C, int nroles)
{
    for (int q = 0; q < nroles; q++)
        for (int j = 0; j < C->role[q].nonce; j++) {
            const Op *rd = C->role[q].once[j].op;
            if (rd->code != OP_SMEM_LOAD)
                continue;
            bool once = once_fill(C, nroles, rd->args[0], 0) != NULL;
            if (!once && in_trips(C, nroles, 0, rd->args[0]))
                perr(C, rd, "cannot prove the protocol: reads a ring buffer outside the role's trip loop");
        }
}

/* ---- commit rings (tensor memory) ---- */

/* A TC_COMMIT at a role's top level on ring (a commit ring), or NULL. */
static const Op *once_commit(const Checker *C, int nroles, ValId ring)
{
    for (int p = 0; p < nroles; p++)
        for (int k = 0; k < C->role[p].nonce; k++)
            if (C->role[p].once[k].op->code == OP_TC_COMMIT && C->role[p].once[k].op->args[0] == ring)
                return C->role[p].once[k].op;
    return NULL;
}

typedef struct TmemWrites { ValId tm[8]; int n; } TmemWrites;

static bool tmem_write_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    TmemWrites *w = ctx;
    if (op->code != OP_TC_MMA)
        return true;
    for (int i = 0; i < w->n; i++)
        if (w->tm[i] == op->args[2])
            return true;
    if (w->n < 8)
        w->tm[w->n++] = op->args[2];
    return true;
}

/* The TC_MMAs in op or its regions, by the tensor memory they write. */
static void tmem_writes(const Checker *C, const Op *op, TmemWrites *w)
{
    ir_walk_op((Func *)C->f, (Op *)op, tmem_write_visit, w);
}

typedef struct TmemRead { ValId tm; const Op *found; } TmemRead;

static bool tmem_read_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    TmemRead *r = ctx;
    if (!r->found && op->code == OP_TMEM_LOAD && op->args[0] == r->tm)
        r->found = op;
    return !r->found;
}

/* A commit ring: one phase, its arrivals all from top-level commits after
 * the committing role's products, and every tensor memory read of those
 * products after a wait on it in the reading role. */
static void check_commit_ring(Checker *C, int nroles, int p, const Op *commit)
{
    ValId ring = commit->args[0];
    const Op *trip = in_trips(C, nroles, ring, 0), *alloc = def(C, ring);
    if (trip) {
        perr(C, trip, "a commit ring (the tc_commit at %s) is also used in the trip loop: it has one phase only",
             at(C, commit));
        return;
    }
    int64_t arrivals = 0;
    for (int q = 0; q < nroles; q++)
        for (int j = 0; j < C->role[q].nonce; j++) {
            const Op *o = C->role[q].once[j].op;
            if (o->code != OP_MBAR_WAIT && ring_of(o) == ring)
                arrivals += is_arrival((OpCode)o->code);
        }
    if (alloc && arrivals != alloc->iattr[0])
        perr(C, alloc, "the one phase of this commit ring expects %lld arrival(s), but its commits make %lld",
             (long long)alloc->iattr[0], (long long)arrivals);
    const Block *pb = &C->ws->regions[p];
    int cat = ir_block_index_of(pb, commit);
    TmemWrites w = { { 0 }, 0 };
    for (int i = 0; i < pb->nops; i++) {
        TmemWrites after = { { 0 }, 0 };
        tmem_writes(C, pb->ops[i], i < cat ? &w : &after);
        if (after.n)
            perr(C, pb->ops[i], "writes tensor memory after the tc_commit at %s that publishes it", at(C, commit));
    }
    for (int t = 0; t < w.n; t++)
        for (int q = 0; q < nroles; q++) {
            const Block *rb = &C->ws->regions[q];
            for (int j = 0; j < rb->nops; j++) {
                TmemRead r = { w.tm[t], NULL };
                ir_walk_op((Func *)C->f, rb->ops[j], tmem_read_visit, &r);
                if (!r.found)
                    continue;
                if (!waited_before(&C->role[q], ring, j))
                    perr(C, r.found, "reads tensor memory before a wait on the commit ring (the tc_commit at %s "
                         "publishes it)", at(C, commit));
            }
        }
}

/* ---- tensor memory in the trips ---- */

/* An access of tensor memory: by a role's threads (TMEM_LOAD, TMEM_STORE:
 * done when the op is) or by its products (TC_MMA: done at its role's
 * next TC_COMMIT's arrival); in the trip loop at the index of the
 * top-level op of the trip that holds it, or before (-1) or after (-2)
 * the loop at the role's top level (at: that op's index there). */
typedef struct TmAcc { const Op *op; int role, pos, at; bool write, async; } TmAcc;

enum { TM_PRE = -1, TM_POST = -2, MAX_TM = 64 };

/* A synchronising edge: an arrival of role a at trip index q is observed
 * by the wait of role b at p, `off` trips later (0; S for a wait of the
 * opposite parity); commit: the arrival is a TC_COMMIT. */
typedef struct TmEdge { int a, q, b, p, off; bool commit; } TmEdge;

typedef struct TmScan { ValId tm; TmAcc acc[MAX_TM]; int n; int role, pos, at; } TmScan;

static bool tm_visit(Func *f, Op *op, void *ctx)
{
    TmScan *s = ctx;
    (void)f;
    for (int i = 0; i < op->nargs && s->n < MAX_TM; i++) {
        if (op->args[i] != s->tm)
            continue;
        bool tc = op->code == OP_TC_MMA, store = op->code == OP_TMEM_STORE;
        if (!tc && !store && op->code != OP_TMEM_LOAD)
            continue;
        s->acc[s->n++] = (TmAcc){ op, s->role, s->pos, s->at, store || (tc && i == 2), tc };
        break;
    }
    return true;
}

/* Index in the trip of role r of op (a top-level op of the trip), or -1. */
static int trip_pos(const Checker *C, int r, const Op *op)
{
    const Op *l = C->role[r].loop;
    return l && op->parent == &l->regions[0] ? ir_block_index_of(&l->regions[0], op) : -1;
}

static int tm_edges(const Checker *C, int nroles, TmEdge *e, int cap)
{
    int n = 0;
    for (int a = 0; a < nroles; a++)
        for (int i = 0; i < C->role[a].nev; i++) {
            const Op *ar = C->role[a].ev[i].op;
            if (!is_arrival((OpCode)ar->code) || ar->code == OP_MBAR_EXPECT)
                continue;
            for (int b = 0; b < nroles; b++)
                for (int j = 0; j < C->role[b].nev && n < cap; j++) {
                    const Ev *w = &C->role[b].ev[j];
                    if (b == a || w->op->code != OP_MBAR_WAIT || w->op->args[0] != ar->args[0])
                        continue;
                    e[n++] = (TmEdge){ a, trip_pos(C, a, ar), b, trip_pos(C, b, w->op),
                                       w->flip ? (int)C->stages : 0, ar->code == OP_TC_COMMIT };
                }
        }
    return n;
}

/* The fewest trips d such that access x in trip j happens before access y
 * (of another role) in trip j + d, through one edge; INT_MAX if none. An
 * access by products is done only at its role's next commit. */
static int tm_after(const TmEdge *e, int ne, const TmAcc *x, const TmAcc *y)
{
    int best = 1 << 30;
    for (int i = 0; i < ne; i++) {
        if (e[i].a != x->role || e[i].b != y->role || (x->async && !e[i].commit))
            continue;
        int k = e[i].q > x->pos ? 0 : 1;   /* the arrival's trip after x's */
        int d = k + e[i].off + (e[i].p < y->pos ? 0 : 1);
        if (d < best)
            best = d;
    }
    return best;
}

/* x (in a trip) before every trip of y's role, or after them all: an edge
 * in the same trip (the first trip's wait for x before the loop; the
 * last trip's arrival, waited in the last trip, for x after it). */
static bool tm_edge_same_trip(const TmEdge *e, int ne, int a, int b, int xpos, int ypos, bool async)
{
    for (int i = 0; i < ne; i++)
        if (e[i].a == a && e[i].b == b && e[i].off == 0 && (!async || e[i].commit) &&
            (xpos < 0 || e[i].q > xpos) && (ypos < 0 || e[i].p < ypos))
            return true;
    return false;
}

/* After the loops, a wait of role b (before its op at `at`) on a commit
 * ring role a commits to after its loop. */
static bool tm_after_commit_ring(const Checker *C, int nroles, int a, int b, int at)
{
    for (int k = 0; k < C->role[a].nonce; k++) {
        const Op *o = C->role[a].once[k].op;
        if (o->code == OP_TC_COMMIT && once_commit(C, nroles, o->args[0]) == o &&
            waited_before(&C->role[b], o->args[0], at))
            return true;
    }
    return false;
}

static const char *tm_what(const TmAcc *x)
{
    return x->op->code == OP_TC_MMA ? (x->write ? "the tc_mma writing it" : "the tc_mma reading it") :
           x->write ? "the tmem_store" : "the tmem_load";
}

/* Two accesses of one tensor memory by different roles, one a write:
 * ordered for every pair of trips, whatever the trip count. */
static void tm_pair(Checker *C, int nroles, const TmEdge *e, int ne, const TmAcc *x, const TmAcc *y)
{
    const char *why = NULL;
    if (x->pos >= 0 && y->pos >= 0) {
        int f = tm_after(e, ne, x, y), g = tm_after(e, ne, y, x);
        if (f > (1 << 29) || g > (1 << 29) || f + g > 1) {   /* every trip distance: x before y or y before x */
            Arena *a = C->d->arena;
            const char *fs = f > (1 << 29) ? "never" : arena_printf(a, "from %d trip%s later", f, f == 1 ? "" : "s");
            const char *gs = g > (1 << 29) ? "never" : arena_printf(a, "from %d trip%s later", g, g == 1 ? "" : "s");
            why = arena_printf(a, "no barrier orders them for every pair of trips (%s is before %s of a trip %s; "
                               "%s before %s %s)", tm_what(x), tm_what(y), fs, tm_what(y), tm_what(x), gs);
        }
    } else if (x->pos == TM_PRE || y->pos == TM_PRE) {
        const TmAcc *pre = x->pos == TM_PRE ? x : y, *in = pre == x ? y : x;
        if (in->pos >= 0 && !tm_edge_same_trip(e, ne, pre->role, in->role, -1, in->pos, pre->async))
            why = "the access before the loop is not ordered before the first trip's by a barrier of that trip";
        else if (in->pos < 0)
            why = "cannot prove the protocol: accesses outside the trip loops of two roles";
    } else {
        const TmAcc *post = x->pos == TM_POST ? x : y, *in = post == x ? y : x;
        if (in->pos >= 0 && !tm_edge_same_trip(e, ne, in->role, post->role, in->pos, -1, in->async) &&
            !tm_after_commit_ring(C, nroles, in->role, post->role, post->at))
            why = "the access after the loop is not ordered after the last trip's by a barrier of that trip or a "
                  "commit ring";
        else if (in->pos < 0)
            why = "cannot prove the protocol: accesses outside the trip loops of two roles";
    }
    if (why)
        perr(C, y->op, "tensor memory: %s and %s at %s by another role: %s", tm_what(y), tm_what(x), at(C, x->op),
             why);
}

/* Has role r waited on a commit ring at its top level before index i? */
static bool after_commit_wait(const Checker *C, int nroles, int r, int i)
{
    const RoleScan *R = &C->role[r];
    for (int k = 0; k < R->nonce; k++)
        if (R->once[k].op->code == OP_MBAR_WAIT && R->once[k].at < i && once_commit(C, nroles, R->once[k].op->args[0]))
            return true;
    return false;
}

static void check_tmem_in(Checker *C, int nroles, ValId tm)
{
    TmScan s;
    memset(&s, 0, sizeof s);
    s.tm = tm;
    for (int r = 0; r < nroles; r++) {
        const Block *rb = &C->ws->regions[r];
        const Op *l = C->role[r].loop;
        int lat = l ? ir_block_index_of(rb, l) : rb->nops;
        s.role = r;
        for (int i = 0; i < rb->nops; i++) {
            s.at = i;
            if (rb->ops[i] == l) {
                const Block *tb = &l->regions[0];
                for (int k = 0; k < tb->nops; k++) {
                    s.pos = k;
                    ir_walk_op((Func *)C->f, tb->ops[k], tm_visit, &s);
                }
                continue;
            }
            /* a role without a trip loop (an epilogue) is after the trips once it waited on a commit ring */
            s.pos = i > lat || (!l && after_commit_wait(C, nroles, r, i)) ? TM_POST : TM_PRE;
            ir_walk_op((Func *)C->f, rb->ops[i], tm_visit, &s);
        }
    }
    TmEdge e[MAX_EV];
    int ne = tm_edges(C, nroles, e, MAX_EV);
    for (int i = 0; i < s.n; i++)
        for (int j = i + 1; j < s.n; j++)
            if (s.acc[i].role != s.acc[j].role && (s.acc[i].write || s.acc[j].write))
                tm_pair(C, nroles, e, ne, &s.acc[i], &s.acc[j]);
}

typedef struct TmList { ValId tm[8]; int n; } TmList;

static bool tm_alloc_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    TmList *l = ctx;
    if (op->code == OP_TMEM_ALLOC && l->n < 8)
        l->tm[l->n++] = op->res[0];
    return true;
}

/* Every pair of accesses of each tensor memory by two roles, one of them
 * a write, ordered by the rings for all trip counts. */
static void check_tmem(Checker *C, int nroles)
{
    TmList l = { { 0 }, 0 };
    ir_walk((Func *)C->f, (Block *)&C->f->body, tm_alloc_visit, &l);
    for (int i = 0; i < l.n; i++)
        check_tmem_in(C, nroles, l.tm[i]);
}

static void check_once(Checker *C, int nroles)
{
    for (int p = 0; p < nroles; p++)   /* each one-shot buffer, at its first copy */
        for (int i = 0; i < C->role[p].nonce; i++) {
            const Op *o = C->role[p].once[i].op;
            if (o->code == OP_TMA_LOAD && once_fill(C, nroles, o->args[0], 0) == o)
                check_once_ring(C, nroles, o);
        }
    /* A one-shot wait, expect or arrive on a ring no one-shot copy fills. */
    for (int q = 0; q < nroles; q++)
        for (int j = 0; j < C->role[q].nonce; j++) {
            const Op *o = C->role[q].once[j].op;
            if (o->code != OP_SMEM_LOAD && o->code != OP_TMA_LOAD && !once_fill(C, nroles, 0, o->args[0]) &&
                !once_commit(C, nroles, o->args[0]))
                perr(C, o, "cannot prove the protocol: a one-shot ring operation on a ring that no one-shot "
                     "tma_load fills");
        }
    check_once_reads(C, nroles);
    for (int p = 0; p < nroles; p++)   /* each commit ring, at its first commit */
        for (int i = 0; i < C->role[p].nonce; i++) {
            const Op *o = C->role[p].once[i].op;
            if (o->code == OP_TC_COMMIT && once_commit(C, nroles, o->args[0]) == o)
                check_commit_ring(C, nroles, p, o);
        }
}

static bool named_bar_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    const Op **first = ctx;
    if (op->code == OP_NAMED_BAR && op->iattr[0] >= 0 && op->iattr[0] < NAMED_BAR_IDS && !first[op->iattr[0]])
        first[op->iattr[0]] = op;
    return true;
}

static void check_named_bars(Checker *C, const Op *ws)
{
    const Op *seen[WS_MAXROLES][NAMED_BAR_IDS];
    memset(seen, 0, sizeof seen);
    for (int r = 0; r < ws->nregions; r++)
        ir_walk((Func *)C->f, (Block *)&ws->regions[r], named_bar_visit, seen[r]);
    for (int id = 0; id < NAMED_BAR_IDS; id++) {
        const Op *first = NULL;
        int64_t threads = 0;
        for (int r = 0; r < ws->nregions; r++) {
            const Op *op = seen[r][id];
            if (!op)
                continue;
            threads += C->role[r].threads;
            if (!first)
                first = op;
            else if (op->iattr[1] != first->iattr[1])
                perr(C, op, "named barrier %d counts %lld threads here but %lld at %s", id, (long long)op->iattr[1],
                     (long long)first->iattr[1], at(C, first));
        }
        if (first && threads != first->iattr[1] && first->iattr[2] == NBAR_SYNC)
            perr(C, first, "named barrier %d counts %lld threads, but the roles that meet on it bring %lld",
                 id, (long long)first->iattr[1], (long long)threads);
    }
}

/* ---- a persistent grid: the ring loops inside loops over tiles ---- */

/* The first FOR of block b whose body holds ring traffic, or NULL. */
static const Op *ring_loop_in(const Checker *C, const Block *b)
{
    for (int i = 0; i < b->nops; i++) {
        bool any = false;
        if (b->ops[i]->code == OP_FOR)
            ir_walk((Func *)C->f, (Block *)&b->ops[i]->regions[0], has_ring_op, &any);
        if (any)
            return b->ops[i];
    }
    return NULL;
}

/* A role's loop over tiles: its one op holding ring traffic, a FOR whose
 * body holds a FOR with ring traffic; NULL when the role has none. */
static const Op *tile_loop_of(const Checker *C, const Block *role)
{
    const Op *found = NULL;
    for (int i = 0; i < role->nops; i++) {
        const Op *op = role->ops[i];
        bool any = ring_op(op->code);
        for (int g = 0; g < op->nregions && !any; g++)
            ir_walk((Func *)C->f, &op->regions[g], has_ring_op, &any);
        if (!any)
            continue;
        if (found || op->code != OP_FOR)
            return NULL;
        found = op;
    }
    return found && ring_loop_in(C, &found->regions[0]) ? found : NULL;
}

/* Do a (in the role whose tile is ia) and b (tile ib) compute the same
 * value: the same pure ops over the same values, the tiles' indices
 * standing for each other? */
static bool same_expr(const Checker *C, ValId a, ValId b, ValId ia, ValId ib, int depth)
{
    if (a == b || (a == ia && b == ib))
        return true;
    const Op *x = def(C, a), *y = def(C, b);
    if (!x || !y || depth > 64 || x->code != y->code || x->nargs != y->nargs || x->nres != 1 || y->nres != 1 ||
        x->nregions || y->nregions || !(op_info[x->code].flags & OPF_PURE) ||
        memcmp(x->iattr, y->iattr, sizeof x->iattr) || x->fattr != y->fattr ||
        !type_eq(ir_type(C->f, a), ir_type(C->f, b)))
        return false;
    for (int i = 0; i < x->nargs; i++)
        if (!same_expr(C, x->args[i], y->args[i], ia, ib, depth + 1))
            return false;
    return true;
}

/* The tile loop's carried trip count: its one carried value starts at 0
 * and grows by the trip loop's count each tile. */
static ValId tile_base(Checker *C, const Op *tl, const Op *trips)
{
    const Block *b = &tl->regions[0];
    const Op *y = b->nops ? b->ops[b->nops - 1] : NULL;
    int64_t k;
    if (tl->nargs != 4 || b->nargs != 2 || !y || y->code != OP_YIELD || y->nargs != 1 ||
        !is_const(C, tl->args[3], &k) || k != 0) {
        perr(C, tl, "cannot prove the protocol: the loop over tiles carries other than the trips before the tile "
             "(one value, from 0)");
        return 0;
    }
    ValId base = b->args[1];
    const Op *a = def(C, y->args[0]);
    if (!a || a->code != OP_ADD || a->nargs != 2 ||
        !((a->args[0] == base && a->args[1] == trips->args[1]) || (a->args[1] == base && a->args[0] == trips->args[1]))) {
        perr(C, y, "cannot prove the protocol: the loop over tiles does not add the trip loop's count to the trips "
             "before the tile");
        return 0;
    }
    return base;
}

/* Level 1: the rings each tile takes once (Q's), the tile loop as their
 * trip loop; level 2: the trip loops' rings, every slot and phase of
 * base + the trip, base the same in every role (the trip counts the same
 * expression of the tile), so that the trips of all tiles take them as
 * one trip loop would. */
static void check_levels(Checker *C, const Op *ws, const Op **tl)
{
    int n = ws->nregions;
    C->level = 1;
    for (int r = 0; r < n; r++) {
        int64_t lo, step;
        C->role[r].threads = ws->list[3 * r + 1] * WG_THREADS;
        if (!is_const(C, tl[r]->args[0], &lo) || lo != 0 || !is_const(C, tl[r]->args[2], &step) || step != 1 ||
            tl[r]->args[1] != tl[0]->args[1]) {
            perr(C, tl[r], "cannot prove the protocol: the loops over tiles are not `for 0, %%tiles, 1` to one bound");
            return;
        }
        C->role[r].loop = tl[r];
        scan_trip(C, &C->role[r], tl[r]);
    }
    check_rings(C, n);
    check_buffers(C, n);
    memset(C->role, 0, sizeof C->role);
    C->stages = 0;
    C->level = 2;
    for (int r = 0; r < n; r++) {
        const Block *tb = &tl[r]->regions[0];
        const Op *trips = ring_loop_in(C, tb);   /* the trip loop (tile_loop_of found it) */
        C->base = tile_base(C, tl[r], trips);
        if (!C->base)
            return;
        C->role[r].threads = ws->list[3 * r + 1] * WG_THREADS;
        scan_role(C, r, tb);
        if (r > 0 && C->role[0].loop &&
            !same_expr(C, trips->args[1], C->role[0].loop->args[1], tb->args[0], tl[0]->regions[0].args[0], 0))
            perr(C, trips, "cannot prove the protocol: the roles' trip loops run to bounds not shown equal (the same "
                 "pure expression of the tile)");
    }
    check_rings(C, n);
    check_once(C, n);
    check_buffers(C, n);
    C->level = 0;
    C->base = 0;
}

static void check_ws(Checker *C, const Op *ws)
{
    int n = ws->nregions;
    memset(C->role, 0, sizeof C->role);
    C->ws = ws;
    C->stages = 0;
    C->level = 0;   /* check_levels may have stopped at an error mid-way on an earlier ws */
    C->base = 0;
    const Op *tl[WS_MAXROLES] = { 0 };
    int ntl = 0;
    for (int r = 0; r < n && r < WS_MAXROLES; r++)
        ntl += (tl[r] = tile_loop_of(C, &ws->regions[r])) != NULL;
    if (ntl == n && n <= WS_MAXROLES) {
        check_levels(C, ws, tl);
        check_named_bars(C, ws);
        return;
    }
    const Op *loop0 = NULL;
    for (int r = 0; r < n && r < WS_MAXROLES; r++) {
        C->role[r].threads = ws->list[3 * r + 1] * WG_THREADS;
        scan_role(C, r, &ws->regions[r]);
        const Op *l = C->role[r].loop;
        if (l && loop0 && l->args[1] != loop0->args[1])
            perr(C, l, "cannot prove the protocol: the roles' trip loops run to different bounds");
        loop0 = loop0 ? loop0 : l;
    }
    check_rings(C, n);
    check_once(C, n);
    check_tmem(C, n);
    check_buffers(C, n);
    check_named_bars(C, ws);
}

static bool ws_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    if (op->code == OP_WS)
        check_ws(ctx, op);
    return true;
}

int ir_protocol_check(const Module *m, Diag *d)
{
    Checker C;
    memset(&C, 0, sizeof C);
    C.d = d;
    for (int i = 0; i < m->nfuncs; i++) {
        C.f = m->funcs[i];
        ir_walk((Func *)C.f, (Block *)&C.f->body, ws_visit, &C);
    }
    return C.nerr;
}
