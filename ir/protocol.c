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
 * as one trip loop would. The tile loop may carry more values after base
 * (registers from one tile into the next). A role may instead take a
 * pipelined ring one trip late over all the block's trips (the seam
 * between tiles): slot and phase of max(g - 1, 0) with g = base + it, its
 * waits under `if g != 1`, its arrivals under `if g > 0`, and one drain
 * after the tile loop, at the role's top level, `if total > 0` repeating
 * the accesses for max(total - 1, 0), total the tile loop's first result
 * (the block's trip count): over g this is the one-level pipelined form
 * above. A role takes every such ring one way, and each guard names the
 * trip its ring's slot is of.
 * A ring access it cannot put in this form is reported as unproven.
 *
 * Files (protocol_int.h): this one walks the WS regions, takes a
 * persistent grid's two levels and checks named barriers;
 * protocol_scan.c collects each role's ring accesses, protocol_rings.c
 * checks the rings and one-shot rings, protocol_tmem.c the commit rings
 * and tensor memory.
 */
#include "protocol_int.h"

#include <string.h>

void prot_err(Checker *C, const Op *op, const char *fmt, ...)
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

const char *prot_at(Checker *C, const Op *op)
{
    return arena_printf(C->d->arena, "%d:%d", op->loc.line, op->loc.col);
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
                prot_err(C, op, "named barrier %d counts %lld threads here but %lld at %s", id, (long long)op->iattr[1],
                         (long long)first->iattr[1], prot_at(C, first));
        }
        if (first && threads != first->iattr[1] && first->iattr[2] == NBAR_SYNC)
            prot_err(C, first, "named barrier %d counts %lld threads, but the roles that meet on it bring %lld",
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
            ir_walk((Func *)C->f, (Block *)&b->ops[i]->regions[0], prot_has_ring_op, &any);
        if (any)
            return b->ops[i];
    }
    return NULL;
}

/* A role's loop over tiles: its one op holding ring traffic, a FOR whose
 * body holds a FOR with ring traffic, or that FOR and one IF after it (a
 * drain after the tiles, *after); NULL when the role has none. */
static const Op *tile_loop_of(const Checker *C, const Block *role, const Op **after)
{
    const Op *found = NULL;
    *after = NULL;
    for (int i = 0; i < role->nops; i++) {
        const Op *op = role->ops[i];
        bool any = ring_op(op->code);
        for (int g = 0; g < op->nregions && !any; g++)
            ir_walk((Func *)C->f, &op->regions[g], prot_has_ring_op, &any);
        if (!any)
            continue;
        if (found && !*after && op->code == OP_IF) {
            *after = op;
            continue;
        }
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
    if (tl->nargs < 4 || b->nargs != tl->nargs - 2 || !y || y->code != OP_YIELD || y->nargs != b->nargs - 1 ||
        !is_const(C, tl->args[3], &k) || k != 0) {
        prot_err(C, tl, "cannot prove the protocol: the loop over tiles does not carry the trips before the tile "
                 "first (from 0)");
        return 0;
    }
    ValId base = b->args[1];
    const Op *a = def(C, y->args[0]);
    if (!a || a->code != OP_ADD || a->nargs != 2 ||
        !((a->args[0] == base && a->args[1] == trips->args[1]) || (a->args[1] == base && a->args[0] == trips->args[1]))) {
        prot_err(C, y, "cannot prove the protocol: the loop over tiles does not add the trip loop's count to the trips "
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
static void check_levels(Checker *C, const Op *ws, const Op **tl, const Op **after)
{
    int n = ws->nregions;
    C->level = 1;
    for (int r = 0; r < n; r++) {
        int64_t lo, step;
        C->role[r].threads = ws->list[3 * r + 1] * WG_THREADS;
        if (!is_const(C, tl[r]->args[0], &lo) || lo != 0 || !is_const(C, tl[r]->args[2], &step) || step != 1 ||
            tl[r]->args[1] != tl[0]->args[1]) {
            prot_err(C, tl[r], "cannot prove the protocol: the loops over tiles are not `for 0, %%tiles, 1` to one "
                     "bound");
            return;
        }
        C->role[r].loop = tl[r];
        prot_scan_trip(C, &C->role[r], tl[r]);
    }
    prot_check_rings(C, n);
    prot_check_buffers(C, n);
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
        prot_scan_role(C, r, tb);
        if (C->lagkind == 2)
            prot_scan_tiles_drain(C, &C->role[r], after[r], tl[r]->res[0]);
        else if (after[r])
            prot_err(C, after[r], "cannot prove the protocol: ring operations after the loop over tiles, which "
                     "takes no ring one trip late across tiles");
        if (r > 0 && C->role[0].loop &&
            !same_expr(C, trips->args[1], C->role[0].loop->args[1], tb->args[0], tl[0]->regions[0].args[0], 0))
            prot_err(C, trips, "cannot prove the protocol: the roles' trip loops run to bounds not shown equal (the "
                     "same pure expression of the tile)");
    }
    prot_check_rings(C, n);
    prot_check_once(C, n);
    prot_check_buffers(C, n);
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
    const Op *tl[WS_MAXROLES] = { 0 }, *after[WS_MAXROLES] = { 0 };
    int ntl = 0;
    for (int r = 0; r < n && r < WS_MAXROLES; r++)
        ntl += (tl[r] = tile_loop_of(C, &ws->regions[r], &after[r])) != NULL;
    if (ntl == n && n <= WS_MAXROLES) {
        check_levels(C, ws, tl, after);
        check_named_bars(C, ws);
        return;
    }
    const Op *loop0 = NULL;
    for (int r = 0; r < n && r < WS_MAXROLES; r++) {
        C->role[r].threads = ws->list[3 * r + 1] * WG_THREADS;
        prot_scan_role(C, r, &ws->regions[r]);
        const Op *l = C->role[r].loop;
        if (l && loop0 && l->args[1] != loop0->args[1])
            prot_err(C, l, "cannot prove the protocol: the roles' trip loops run to different bounds");
        loop0 = loop0 ? loop0 : l;
    }
    prot_check_rings(C, n);
    prot_check_once(C, n);
    prot_check_tmem(C, n);
    prot_check_buffers(C, n);
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
