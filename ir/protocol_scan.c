/* protocol_scan.c - the static protocol checker's view of each role: its
 * ring accesses (waits, arrivals, expects, TMA copies, commits, reads of
 * ring slots) as events in the order of its trip, every slot and phase
 * operand proven `it mod S` and `(it div S) & 1` or its opposite (of trip
 * it - 1 for a pipelined ring, of base + it in a persistent grid), how
 * long each read lasts (the product that reads it, retired), the guarded
 * accesses of the trip before, the drain after the loop, and the one-shot
 * operations at the role's top level.
 *
 * Needs: verified IR; C->level and C->base set (protocol.c). Guarantees:
 * a role's events are what protocol_rings.c and protocol_tmem.c check as
 * its trip; an access that cannot be put in this form is reported as
 * unproven and left out. protocol.c's header describes the model.
 */
#include "protocol_int.h"

/* ---- affine forms ---- */

/* v = base + iv (level 2: the trip's index among all the block's trips)? */
static bool block_trip(const Checker *C, ValId v, ValId iv)
{
    const Op *g = def(C, v);
    return C->level == 2 && g && g->code == OP_ADD && g->nargs == 2 &&
           ((g->args[0] == C->base && g->args[1] == iv) || (g->args[1] == C->base && g->args[0] == iv));
}

/* v = max(x - 1, 0) with x = iv (the trip before iv's, clamped at 0) or,
 * with `block`, x = base + iv (the block's trip before, across tiles). */
static bool before_of(const Checker *C, ValId v, ValId iv, bool block)
{
    const Op *d = def(C, v);
    int64_t k;
    if (!d || d->code != OP_MAX || d->nargs != 2)
        return false;
    for (int i = 0; i < 2; i++) {
        const Op *s = def(C, d->args[i]);
        if (is_const(C, d->args[1 - i], &k) && k == 0 && s && s->code == OP_SUB && s->nargs == 2 &&
            (block ? block_trip(C, s->args[0], iv) : s->args[0] == iv) && is_const(C, s->args[1], &k) && k == 1)
            return true;
    }
    return false;
}

static bool is_before(const Checker *C, ValId v, ValId iv) { return before_of(C, v, iv, false); }
static bool of_block(const Checker *C, ValId v, ValId iv) { return before_of(C, v, iv, true); }

/* A level-2 access one trip late of this kind (C->lagkind); a role that
 * takes both kinds is marked (C->lagmix). */
static void note_lag(Checker *C, int kind)
{
    if (C->lagkind && C->lagkind != kind)
        C->lagmix = true;
    C->lagkind = kind;
}

/* v = op(iv, S) with S constant (either order for commutative ops), or
 * op(max(iv - 1, 0), S) with *lag = 1. */
static bool of_iv(Checker *C, const Op *d, OpCode code, ValId iv, int64_t *k, int *lag)
{
    if (!d || d->code != code || d->nargs != 2)
        return false;
    ValId x = d->args[0];
    const Op *a = def(C, x);
    int kind = 0;
    if (C->level == 2 && C->gdrain) {   /* the drain after the tiles: of max(total - 1, 0) */
        if (!is_before(C, x, iv))
            return false;
    } else if (C->level == 2 && a && a->code == OP_ADD && a->nargs == 2 &&
               (a->args[0] == C->base || a->args[1] == C->base)) {
        x = a->args[a->args[0] == C->base];   /* base + x: trip x of this tile, after the tiles before */
        kind = 1;
    } else if (C->level == 2 && of_block(C, x, iv)) {
        *lag = 1;   /* max(base + it - 1, 0): the block's trip before, across tiles */
        note_lag(C, 2);
        return is_const(C, d->args[1], k);
    } else if (C->level == 2) {
        return false;
    }
    if ((x == iv || is_before(C, x, iv)) && is_const(C, d->args[1], k)) {
        *lag = x != iv;
        if (*lag && kind)
            note_lag(C, 1);
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
        prot_err(C, op, "cannot prove the protocol: the operands name the slots of different trips");
        return false;
    }
    e->lag = lag;
    if (x != EXPR_SLOT || S != n || (C->stages && S != C->stages)) {
        prot_err(C, op, "cannot prove the protocol: operand #%d is not the slot `it mod %lld` of the trip", i,
                 (long long)(C->stages ? C->stages : n));
        return false;
    }
    C->stages = S;
    return true;
}

/* ---- collecting a role's trip ---- */

bool prot_has_ring_op(Func *f, Op *op, void *ctx)
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
        prot_err(n->C, op, "cannot prove the protocol: a product reading a ring slot inside the loop is not retired by "
                 "a dot_wait in its own block");
    if (reads && op->code == OP_TC_MMA)
        prot_err(n->C, op, "cannot prove the protocol: a tc_mma inside a nested loop reads a slot of the loop around "
                 "it");
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
                prot_err(C, op, "cannot prove the protocol: the tc_mma reading a ring slot is not followed by a "
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
            prot_err(C, op, "cannot prove the protocol: the product reading a ring slot is not retired by a "
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
            prot_err(C, op, "cannot prove the protocol: the phase is not (it div S) & 1 or its opposite");
            return false;
        }
        if (lag != e->lag) {
            prot_err(C, op, "cannot prove the protocol: the slot and the phase are of different trips");
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
        prot_err(C, e->op, "cannot prove the protocol: more than %d ring operations in one trip", MAX_EV);
        return false;
    }
    R->ev[R->nev++] = *e;
    return true;
}

/* cond is `x pred k` with x = v (*kind 1) or, at level 2, x = base + v
 * (*kind 2: the block's trip)? */
static bool guard(const Checker *C, ValId cond, ValId v, CmpPred pred, int64_t want, int *kind)
{
    const Op *d = def(C, cond);
    int64_t k;
    if (!d || d->code != OP_CMP || d->nargs != 2 || d->iattr[0] != pred || !is_const(C, d->args[1], &k) || k != want)
        return false;
    if (kind)
        *kind = d->args[0] == v ? 1 : 2;
    return d->args[0] == v || (kind && block_trip(C, d->args[0], v));
}

/* cond is `v > 0` (cmp gt v, 0)? */
static bool positive(const Checker *C, ValId cond, ValId v)
{
    return guard(C, cond, v, CMP_GT, 0, NULL);
}

/* An IF of the trip (iv: the trip; the loop's hi in the drain) holding
 * ring operations of the trip before, the else arm empty: arrivals under
 * `if iv > 0`, waits under `if iv != 1`. */
static void scan_guarded(Checker *C, RoleScan *R, const Op *op, int at, ValId iv)
{
    const Block *t = &op->regions[0], *e = &op->regions[1];
    int gk = 0;   /* 1: a guard of the trip, 2: of the block's trip (base + it) */
    bool gt = op->code == OP_IF && guard(C, op->args[0], iv, CMP_GT, 0, &gk);
    bool ne = op->code == OP_IF && !gt && guard(C, op->args[0], iv, CMP_NE, 1, &gk);
    bool ok = (gt || ne) && !op->nres && e->nops <= 1;
    for (int j = 0; ok && j < t->nops; j++)   /* not a wait under `it > 0`: trip 0 reads its slot unwaited */
        ok = t->ops[j]->code == OP_YIELD || (ne && t->ops[j]->code == OP_MBAR_WAIT) ||
             (gt && t->ops[j]->code == OP_MBAR_ARRIVE);
    if (!ok) {
        prot_err(C, op, "cannot prove the protocol: ring operations nested in the trip's control flow (only arrivals "
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
            prot_err(C, t->ops[j], "cannot prove the protocol: under `if it > 0` a ring operation names the slot of "
                     "trip it, not of trip it - 1");
            continue;
        }
        if (!C->gdrain && (gk == 2) != (C->lagkind == 2)) {
            prot_err(C, op, "cannot prove the protocol: the guard is of %s but the slot of %s", gk == 2 ?
                     "the block's trip (base + it)" : "the tile's trip", C->lagkind == 2 ?
                     "the block's trip before (max(base + it - 1, 0))" : "the tile's trip before");
            continue;
        }
        if (!add_ev(C, R, &ev))
            return;
    }
}

void prot_scan_trip(Checker *C, RoleScan *R, const Op *loop)
{
    const Block *b = &loop->regions[0];
    ValId iv = b->args[0];
    for (int i = 0; i < b->nops; i++) {
        const Op *op = b->ops[i];
        if (op->nregions) {
            bool any = false;
            for (int g = 0; g < op->nregions; g++)
                ir_walk((Func *)C->f, &op->regions[g], prot_has_ring_op, &any);
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
            prot_err(C, op, "cannot prove the protocol: trip 0 would %s for a trip before it (only under `if it > 0`)",
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
static void scan_drain(Checker *C, RoleScan *R, const Op *op, ValId hi)
{
    const Block *t = &op->regions[0];
    bool any = false;
    ir_walk((Func *)C->f, (Block *)&op->regions[1], prot_has_ring_op, &any);
    if (R->drain || any || !positive(C, op->args[0], hi)) {
        prot_err(C, op, "cannot prove the protocol: ring operations after the role's trip loop other than one drain "
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
            ir_walk((Func *)C->f, (Block *)&o->regions[0], prot_has_ring_op, &nested);
            if (!nested)
                continue;
            int before = C->nerr;
            scan_guarded(C, &G, o, j, hi);
            if (C->nerr != before || G.nev != 1 || G.ev[0].op->code != OP_MBAR_WAIT) {
                if (C->nerr == before)
                    prot_err(C, o, "cannot prove the protocol: the drain's guarded ring operations are not one wait");
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
            prot_err(C, o, "releases the last trip's slot before the drain's read of it ends");
            return;
        }
        while (k < R->nev && !R->ev[k].lag)
            k++;
        const Op *m = k < R->nev ? R->ev[k].op : NULL;
        if (!e.lag || !m || m->code != o->code || m->args[0] != o->args[0] || e.flip != R->ev[k].flip) {
            prot_err(C, o, "cannot prove the protocol: the drain after the loop does not repeat the trip's accesses "
                     "of its pipelined rings, in order, for the last trip");
            return;
        }
        k++;
    }
    while (k < R->nev && !R->ev[k].lag)
        k++;
    if (k < R->nev)
        prot_err(C, R->ev[k].op, "cannot prove the protocol: the drain after the loop does not repeat this access of "
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
                prot_err(C, a, "cannot prove the protocol: a role accesses one ring both in the trip and one trip late "
                         "(at %s)", prot_at(C, b));
                return;
            }
        }
    for (int i = 0; i < R->nev && !R->drain; i++)
        if (R->ev[i].lag) {
            prot_err(C, R->ev[i].op, "cannot prove the protocol: an access one trip late with no drain after the loop "
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
        prot_err(C, op, "cannot prove the protocol: ring operations outside the role's trip loop take a one-shot ring "
                 "and buffer (one slot, slot 0)");
        return;
    }
    if (op->code == OP_MBAR_WAIT && !is_zero(C, op, 2)) {
        prot_err(C, op, "waits on a one-shot ring with a parity other than 0: it passes at once, before the ring's "
                 "only phase (0) completes");
        return;
    }
    if (R->nonce == MAX_EV) {
        prot_err(C, op, "cannot prove the protocol: more than %d one-shot operations in one role", MAX_EV);
        return;
    }
    R->once[R->nonce++] = (Ev){ op, 0, NULL, at, 0 };
}

void prot_scan_role(Checker *C, int r, const Block *b)
{
    RoleScan *R = &C->role[r];
    C->lagkind = 0;
    C->lagmix = false;
    for (int i = 0; i < b->nops; i++) {
        Op *op = b->ops[i];
        bool any = false;
        for (int g = 0; g < op->nregions; g++)
            ir_walk((Func *)C->f, &op->regions[g], prot_has_ring_op, &any);
        if (ring_op(op->code)) {
            if (C->level != 2)   /* level 2: the tile loop's own rings, level 1's */
                scan_once(C, R, op, i);
            continue;
        }
        if (once_read(C, op) && R->nonce < MAX_EV)
            R->once[R->nonce++] = (Ev){ op, 0, NULL, i, 0 };
        if (any && op->code == OP_IF && R->loop) {
            scan_drain(C, R, op, R->loop->args[1]);
            continue;
        }
        if (any && op->code != OP_FOR) {
            prot_err(C, op, "cannot prove the protocol: ring operations outside the role's trip loop");
            continue;
        }
        if (!any)
            continue;
        int64_t lo, step;
        if (R->loop || !is_const(C, op->args[0], &lo) || lo != 0 || !is_const(C, op->args[2], &step) ||
            step != 1) {
            prot_err(C, op, "cannot prove the protocol: ring traffic needs one loop `for 0, %%hi, 1` per role");
            continue;
        }
        R->loop = op;
        prot_scan_trip(C, R, op);
    }
    if (C->lagmix)
        prot_err(C, R->loop, "cannot prove the protocol: the trip loop takes rings one trip late both within the "
                 "tile and across tiles");
    if (C->lagkind != 2)   /* else after the drain that follows the tiles */
        check_lags(C, R);
}

void prot_scan_tiles_drain(Checker *C, RoleScan *R, const Op *op, ValId total)
{
    if (!op) {
        check_lags(C, R);
        return;
    }
    C->gdrain = true;
    scan_drain(C, R, op, total);
    C->gdrain = false;
    check_lags(C, R);
}
