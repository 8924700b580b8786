/* protocol_tmem.c - the static protocol checker's checks of tensor memory:
 * commit rings (one phase, its arrivals the TC_COMMITs a role makes after
 * its trip loop, read by TMEM_LOADs after a wait on it), and every pair of
 * accesses of one tensor memory by two roles, one of them a write, ordered
 * through the rings' arrivals and waits for every pair of trips, whatever
 * the trip count.
 *
 * Needs: the roles' events (protocol_scan.c). Guarantees: an access not so
 * ordered is an error at that op; one the model cannot place (outside the
 * trip loops of both roles) is reported as unproven.
 */
#include "protocol_int.h"

#include <string.h>

/* ---- commit rings (tensor memory) ---- */

/* A TC_COMMIT at a role's top level on ring (a commit ring), or NULL. */
const Op *prot_once_commit(const Checker *C, int nroles, ValId ring)
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
void prot_check_commit_ring(Checker *C, int nroles, int p, const Op *commit)
{
    ValId ring = commit->args[0];
    const Op *trip = prot_in_trips(C, nroles, ring, 0), *alloc = def(C, ring);
    if (trip) {
        prot_err(C, trip, "a commit ring (the tc_commit at %s) is also used in the trip loop: it has one phase only",
                 prot_at(C, commit));
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
        prot_err(C, alloc, "the one phase of this commit ring expects %lld arrival(s), but its commits make %lld",
                 (long long)alloc->iattr[0], (long long)arrivals);
    const Block *pb = &C->ws->regions[p];
    int cat = ir_block_index_of(pb, commit);
    TmemWrites w = { { 0 }, 0 };
    for (int i = 0; i < pb->nops; i++) {
        TmemWrites after = { { 0 }, 0 };
        tmem_writes(C, pb->ops[i], i < cat ? &w : &after);
        if (after.n)
            prot_err(C, pb->ops[i], "writes tensor memory after the tc_commit at %s that publishes it",
                     prot_at(C, commit));
    }
    for (int t = 0; t < w.n; t++)
        for (int q = 0; q < nroles; q++) {
            const Block *rb = &C->ws->regions[q];
            for (int j = 0; j < rb->nops; j++) {
                TmemRead r = { w.tm[t], NULL };
                ir_walk_op((Func *)C->f, rb->ops[j], tmem_read_visit, &r);
                if (!r.found)
                    continue;
                if (!prot_waited_before(&C->role[q], ring, j))
                    prot_err(C, r.found, "reads tensor memory before a wait on the commit ring (the tc_commit at %s "
                             "publishes it)", prot_at(C, commit));
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
        if (o->code == OP_TC_COMMIT && prot_once_commit(C, nroles, o->args[0]) == o &&
            prot_waited_before(&C->role[b], o->args[0], at))
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
        prot_err(C, y->op, "tensor memory: %s and %s at %s by another role: %s", tm_what(y), tm_what(x),
                 prot_at(C, x->op), why);
}

/* Has role r waited on a commit ring at its top level before index i? */
static bool after_commit_wait(const Checker *C, int nroles, int r, int i)
{
    const RoleScan *R = &C->role[r];
    for (int k = 0; k < R->nonce; k++)
        if (R->once[k].op->code == OP_MBAR_WAIT && R->once[k].at < i &&
            prot_once_commit(C, nroles, R->once[k].op->args[0]))
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
void prot_check_tmem(Checker *C, int nroles)
{
    TmList l = { { 0 }, 0 };
    ir_walk((Func *)C->f, (Block *)&C->f->body, tm_alloc_visit, &l);
    for (int i = 0; i < l.n; i++)
        check_tmem_in(C, nroles, l.tm[i]);
}
