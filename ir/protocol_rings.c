/* protocol_rings.c - the static protocol checker's checks of the rings:
 * the arrivals and bytes of every phase over all roles' trips, each refill
 * after a wait on its empty ring with the opposite parity, each read of a
 * refilled buffer after a wait on its full ring and released on the empty
 * ring only when it ends; the one-shot rings (filled once at a role's top
 * level) and the reads of their buffers.
 *
 * Needs: the roles' events (protocol_scan.c). Guarantees: each violation
 * of protocol.c's guarantees for rings and one-shot rings is an error at
 * the op that breaks it; commit rings are protocol_tmem.c's.
 */
#include "protocol_int.h"

/* ---- rings and buffers ---- */

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
        prot_err(C, alloc, "every phase of this ring expects %lld arrival(s), but a trip makes %lld "
                 "(mbar_arrive, mbar_expect and tc_commit over all roles)", (long long)alloc->iattr[0],
                 (long long)arrivals);
    if (declared != carried && (expect || alloc))
        prot_err(C, expect ? expect : alloc, "mbar_expect declares %lld bytes per phase of the ring, but the "
                 "tma_loads completing on it carry %lld", (long long)declared, (long long)carried);
}

void prot_check_rings(Checker *C, int nroles)
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
                prot_err(C, P->ev[j].op, "the wait before the refill at %s uses parity (it div S) & 1, but the "
                         "releases of trip it - S complete the phase of parity ((it div S) & 1) ^ 1",
                         prot_at(C, tma));
        }
    if (!empty) {
        prot_err(C, tma, "refills slot it mod S without waiting for its release (no mbar_wait with parity "
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
                prot_err(C, rd, "reads slot it mod S with no mbar_wait on the full ring (the tma_load at %s "
                         "completes on it) before it", prot_at(C, tma));
            else if (R->ev[w].flip)
                prot_err(C, R->ev[w].op, "waits on the full ring with parity ((it div S) & 1) ^ 1: it passes before "
                         "the copies of trip it land (the read at %s)", prot_at(C, rd));
            int end = pos_of(R, R->ev[k].end);
            int early = find(R, OP_MBAR_ARRIVE, 0, empty, k + 1, end);
            if (early < 0 && R->ev[k].end->code == OP_TC_COMMIT)
                early = find(R, OP_TC_COMMIT, 0, empty, k + 1, end);
            if (early >= 0)
                prot_err(C, R->ev[early].op, "releases slot it mod S before the read at %s ends (at %s), so the "
                         "refill at %s may overwrite it", prot_at(C, rd), prot_at(C, R->ev[k].end), prot_at(C, tma));
            else if (find(R, OP_MBAR_ARRIVE, 0, empty, end, R->nev) < 0 &&
                     find(R, OP_MBAR_EXPECT, 0, empty, end, R->nev) < 0 &&
                     find(R, OP_TC_COMMIT, 0, empty, end, R->nev) < 0)
                prot_err(C, rd, "the read is never released: no mbar_arrive on the empty ring that the refill at "
                         "%s waits on comes after it", prot_at(C, tma));
        }
    }
}

/* Every refill of every role's trip, and the reads of its buffer. */
void prot_check_buffers(Checker *C, int nroles)
{
    for (int r = 0; r < nroles; r++)
        for (int i = 0; i < C->role[r].nev; i++)
            if (C->role[r].ev[i].op->code == OP_TMA_LOAD)
                check_buffer(C, nroles, r, i);
}

/* ---- one-shot rings ---- */

/* Does an event of any role's trip use the ring or fill the buffer? */
const Op *prot_in_trips(const Checker *C, int nroles, ValId ring, ValId buf)
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
bool prot_waited_before(const RoleScan *R, ValId ring, int at)
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
    const Op *expect = NULL, *trip = prot_in_trips(C, nroles, ring, buf);
    if (trip) {
        prot_err(C, trip, "a one-shot ring or buffer (the tma_load at %s) is also used in the trip loop: it has one "
                 "phase only", prot_at(C, tma));
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
        prot_err(C, alloc, "the one phase of this one-shot ring expects %lld arrival(s), but its fill makes %lld "
                 "(mbar_arrive and mbar_expect over all roles)", (long long)alloc->iattr[0], (long long)arrivals);
    if (declared != carried)
        prot_err(C, expect ? expect : tma, "mbar_expect declares %lld bytes for the one phase of the one-shot ring, "
                 "but the tma_loads completing on it carry %lld", (long long)declared, (long long)carried);
    if (buf_fills > 1)
        prot_err(C, tma, "fills a one-shot buffer that another tma_load fills too: it is read after one phase only");
    for (int q = 0; q < nroles; q++) {
        const RoleScan *R = &C->role[q];
        for (int j = 0; j < R->nonce; j++) {
            const Op *rd = R->once[j].op;
            if (rd->code != OP_SMEM_LOAD || rd->args[0] != buf)
                continue;
            if (!prot_waited_before(R, ring, R->once[j].at))
                prot_err(C, rd, "reads a one-shot buffer with no mbar_wait on its ring (the tma_load at %s completes "
                         "on it) before it in the role", prot_at(C, tma));
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
            if (!once && prot_in_trips(C, nroles, 0, rd->args[0]))
                prot_err(C, rd, "cannot prove the protocol: reads a ring buffer outside the role's trip loop");
        }
}

void prot_check_once(Checker *C, int nroles)
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
                !prot_once_commit(C, nroles, o->args[0]))
                prot_err(C, o, "cannot prove the protocol: a one-shot ring operation on a ring that no one-shot "
                         "tma_load fills");
        }
    check_once_reads(C, nroles);
    for (int p = 0; p < nroles; p++)   /* each commit ring, at its first commit */
        for (int i = 0; i < C->role[p].nonce; i++) {
            const Op *o = C->role[p].once[i].op;
            if (o->code == OP_TC_COMMIT && prot_once_commit(C, nroles, o->args[0]) == o)
                prot_check_commit_ring(C, nroles, p, o);
        }
}
