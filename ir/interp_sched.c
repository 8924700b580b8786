/* interp_sched.c - the interpreter's schedule: WS roles run as coroutines,
 * mbarrier rings, named barriers, TMA copies and asynchronous products,
 * with the protocol checked exactly (ops.h documents the ops).
 *
 * Roles. Each region of a WS is a role with its own frame stack (blocks,
 * loop state), so a role can stop in the middle of a loop nest and resume.
 * A role blocks only at MBAR_WAIT (its phase not completed), NAMED_BAR sync
 * (not every thread arrived) and DOT_WAIT (too many of its products in
 * flight). Seed 0 runs the first role that can run until it blocks or
 * ends, then the next in order, and lands copies and products only when no
 * role can run (the latest completion: a read that is not ordered after
 * its copy sees it in flight). Any other seed picks, at each step, one op
 * of a runnable role or one completion, uniformly with a xorshift generator.
 * Every role blocked with nothing in flight is a deadlock.
 *
 * mbarriers are modelled as PTX has them: per phase, the arrivals still
 * missing (from the ring's count) and the transaction bytes outstanding
 * (MBAR_EXPECT raises them, a landing TMA_LOAD lowers them); the phase
 * completes when both reach zero, and MBAR_WAIT with parity P passes while
 * the current phase's parity is not P. Completions are asynchronous: a
 * TMA_LOAD's copy lands, and a DOT_ASYNC's product (computed at issue)
 * completes, at a later step; a role's products complete in issue order.
 *
 * Ordering is tracked with vector clocks (one entry per role, one for the
 * code outside WS): an arrive publishes the role's clock into the phase, a
 * wait that passes joins the last completed phase's clock, and a named
 * barrier joins all its participants. Hence the checks hold for every
 * interleaving, not only the one that ran:
 *  - a read (SMEM_LOAD) of a TMA-filled slot needs a wait of the reading
 *    role that observed the completion of the phase its copy lands in
 *    (missing wait, wrong parity);
 *  - a wait that passes with no phase completed since the same role's
 *    last wait on that barrier (a parity naming a phase two behind); the
 *    first wait on a fresh barrier with parity 1 passes (an empty ring);
 *  - a refill (TMA_LOAD) needs every other role's read of the slot ordered
 *    before it through an arrive it waited for, and no product reading the
 *    slot still in flight (early release, missing release); the previous
 *    copy into the slot must have landed;
 *  - arrivals above the ring's count, and a phase whose copies carry other
 *    bytes than its MBAR_EXPECTs declared;
 *  - any use of a DOT_ASYNC's accumulator before the DOT_WAIT retiring it;
 *  - roles meeting on one named barrier id with different thread counts,
 *    or more threads arriving than its count.
 * A named barrier's release is also a barrier for the cp.async protocol
 * (interp_mem.c: the threads it joins see each other's copies and reads):
 * a role that keeps a cp.async ring syncs on a named barrier over its own
 * threads. That protocol has one barrier count for the block, so it is
 * exact while one role at a time uses cp.async.
 * A slot's read lasts from the SMEM_LOAD until the DOT_WAIT that retires a
 * DOT_ASYNC fed by the loaded value or its TRANS (wgmma reads shared memory
 * in place).
 *
 * Tensor memory (TMEM_ALLOC, TC_MMA, TC_COMMIT, TMEM_LOAD, TMEM_STORE) and
 * its checks: interp_tmem.c.
 */
#include "sched_int.h"

#include <string.h>

/* ---- state ---- */

/* Appends v to a growing list of values (rings, tensor memories). */
void sched_val_push(Interp *I, ValId **list, int *n, int *cap, ValId v)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 8;
        *list = arena_grow(I->a, *list, sizeof(ValId), (size_t)*n, (size_t)c);
        *cap = c;
    }
    (*list)[(*n)++] = v;
}

static bool mark_tma(Func *f, Op *op, void *ctx)
{
    (void)f;
    if (op->code == OP_TMA_LOAD && op->nargs > 0)
        ((bool *)ctx)[op->args[0]] = true;
    return true;
}

Sched *sched_get(Interp *I)
{
    if (I->sched)
        return I->sched;
    Sched *S = arena_alloc(I->a, sizeof *S);
    memset(S, 0, sizeof *S);
    S->cur = MAIN;
    S->rng = I->seed ? I->seed : 1;
    S->tma_buf = arena_alloc(I->a, sizeof(bool) * I->f->nvals);
    memset(S->tma_buf, 0, sizeof(bool) * I->f->nvals);
    ir_walk((Func *)I->f, (Block *)&I->f->body, mark_tma, S->tma_buf);
    I->sched = S;
    return S;
}

const char *sched_role_desc(Interp *I, int r)
{
    Sched *S = I->sched;
    if (r == MAIN || !S->ws)
        return "the code outside ws";
    if (r >= LANES)
        return arena_printf(I->a, "the products of %s", sched_role_desc(I, r - LANES));
    int64_t k = S->ws->list[3 * r];
    return arena_printf(I->a, "role %d (%s)", r, k >= 0 && k < ROLE_COUNT ? role_names[k] : "?");
}

/* Operand i as a slot of a ring / buffer of `stages` slots; -1 after reporting. */
static int64_t slot_of(Interp *I, const Op *op, int i, int64_t stages, const char *what)
{
    int64_t s = ip_sint(I, op->args[i]);
    if (s < 0 || s >= stages) {
        diag_error(I->d, op->loc, "%s: %s slot %lld out of range 0..%lld", op_info[op->code].name, what,
                   (long long)s, (long long)stages - 1);
        return -1;
    }
    return s;
}

MBar *sched_mbar_at(Interp *I, const Op *op, int i, int64_t *slot)
{
    ValId ring = op->args[i];
    if (!I->slots[ring].mbar) {
        diag_internal(I->d, op->loc, "%s: operand %d is not a barrier ring", op_info[op->code].name, i);
        return NULL;
    }
    int64_t s = slot_of(I, op, i + 1, ir_type(I->f, ring)->shape[0], "barrier");
    if (slot)
        *slot = s;
    return s < 0 ? NULL : &I->slots[ring].mbar[s];
}

Fill *sched_fills(Interp *I, ValId buf)
{
    Slot *s = &I->slots[buf];
    if (!s->fill) {
        int64_t stages = ir_type(I->f, buf)->shape[0];
        s->fill = arena_alloc(I->a, sizeof(Fill) * (size_t)stages);
        memset(s->fill, 0, sizeof(Fill) * (size_t)stages);
    }
    return s->fill;
}

/* ---- barriers ---- */

static int exec_mbar_alloc(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    ValId v = op->res[0];
    int64_t n = ir_type(I->f, v)->shape[0];
    ip_out(I, v);
    MBar *m = arena_alloc(I->a, sizeof(MBar) * (size_t)n);
    memset(m, 0, sizeof(MBar) * (size_t)n);
    for (int64_t k = 0; k < n; k++)
        m[k].count = m[k].pending = op->iattr[0];
    I->slots[v].mbar = m;
    sched_val_push(I, &S->rings, &S->nrings, &S->caprings, v);
    return RUN_OK;
}

/* The phase completes when every arrival and every byte is in. */
static int mbar_settle(Interp *I, MBar *m, int64_t slot, Loc loc)
{
    if (m->pending || m->tx)
        return RUN_OK;
    if (m->issued != m->expected) {
        diag_error(I->d, m->expected ? m->expect_loc : loc,
                   "mbar_expect declared %lld bytes for phase %lld of barrier slot %lld, but the copies "
                   "completing on it carry %lld", (long long)m->expected, (long long)m->phase,
                   (long long)slot, (long long)m->issued);
        return RUN_ERR;
    }
    m->phase++;
    m->prev_expected = m->expected;
    m->prev_loc = m->expect_loc;
    m->done = m->clock;
    memset(&m->clock, 0, sizeof m->clock);
    m->pending = m->count;
    m->expected = m->issued = 0;
    return RUN_OK;
}

/* An arrival of the running role; extra (may be NULL): a clock the
 * arrival publishes beside the role's own (a commit's lane). */
int sched_mbar_arrive_with(Interp *I, const Op *op, MBar *m, int64_t slot, VClock *extra)
{
    Sched *S = I->sched;
    if (m->pending == 0) {
        diag_error(I->d, op->loc, "%s: arrival above the expected count %lld on barrier slot %lld in phase "
                   "%lld (%lld bytes still outstanding)", op_info[op->code].name, (long long)m->count,
                   (long long)slot, (long long)m->phase, (long long)m->tx);
        return RUN_ERR;
    }
    m->pending--;
    S->vc[S->cur].c[S->cur]++;
    sched_vc_join(&m->clock, &S->vc[S->cur]);
    if (extra) {
        extra->c[S->cur] = S->vc[S->cur].c[S->cur];
        sched_vc_join(&m->clock, extra);
    }
    return mbar_settle(I, m, slot, op->loc);
}

static int mbar_arrive(Interp *I, const Op *op, MBar *m, int64_t slot)
{
    return sched_mbar_arrive_with(I, op, m, slot, NULL);
}

static int exec_mbar(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    int64_t slot;
    MBar *m = sched_mbar_at(I, op, 0, &slot);
    if (!m)
        return RUN_ERR;
    if (op->code == OP_MBAR_EXPECT) {
        m->expected += op->iattr[0];
        m->tx += op->iattr[0];
        m->expect_loc = op->loc;
        m->exp_phase[S->cur] = m->phase + 1;
    }
    if (op->code != OP_MBAR_WAIT)
        return mbar_arrive(I, op, m, slot);
    if ((m->phase & 1) == (ip_sint(I, op->args[2]) & 1))
        return RUN_BLOCKED;
    if (m->waited[S->cur] && m->seen[S->cur] == m->phase) {
        diag_error(I->d, op->loc, "mbar_wait passes on barrier slot %lld with no phase completed since %s last "
                   "waited on it: parity %lld names a phase two behind (parity aliasing)", (long long)slot,
                   sched_role_desc(I, S->cur), (long long)(ip_sint(I, op->args[2]) & 1));
        return RUN_ERR;
    }
    sched_vc_join(&S->vc[S->cur], &m->done);
    m->seen[S->cur] = m->phase;
    m->waited[S->cur] = true;
    return RUN_OK;
}

static int exec_named_bar(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    int r = S->cur;
    Role *R = r == MAIN ? NULL : &S->roles[r];
    NBar *nb = &S->nb[op->iattr[0] & (NAMED_BAR_IDS - 1)];
    if (R && R->nb_gen >= 0) {   /* arrived before: waiting for the others */
        if (nb->gen <= R->nb_gen)
            return RUN_BLOCKED;
        R->nb_gen = -1;
        sched_vc_join(&S->vc[r], &nb->done);
        return RUN_OK;
    }
    if (nb->arrived == 0) {
        nb->threads = op->iattr[1];
        nb->loc = op->loc;
    } else if (nb->threads != op->iattr[1]) {
        diag_error(I->d, op->loc, "named_bar %lld: %s counts %lld threads, but the barrier was entered at "
                   "%d:%d with %lld", (long long)op->iattr[0], sched_role_desc(I, r), (long long)op->iattr[1],
                   nb->loc.line, nb->loc.col, (long long)nb->threads);
        return RUN_ERR;
    }
    nb->arrived += R ? R->threads : op->iattr[1];
    S->vc[r].c[r]++;
    sched_vc_join(&nb->clock, &S->vc[r]);
    if (nb->arrived > nb->threads) {
        diag_error(I->d, op->loc, "named_bar %lld: %lld threads arrive, above its count %lld",
                   (long long)op->iattr[0], (long long)nb->arrived, (long long)nb->threads);
        return RUN_ERR;
    }
    int64_t gen = nb->gen;
    if (nb->arrived == nb->threads) {
        nb->gen++;
        I->epoch++;   /* a barrier for the cp.async protocol of the threads it joins */
        nb->arrived = 0;
        nb->done = nb->clock;
        memset(&nb->clock, 0, sizeof nb->clock);
    }
    if (op->iattr[2] == NBAR_ARRIVE || nb->gen > gen) {
        if (op->iattr[2] != NBAR_ARRIVE)
            sched_vc_join(&S->vc[r], &nb->done);
        return RUN_OK;
    }
    if (!R)
        return RUN_BLOCKED;
    R->nb_gen = gen;
    return RUN_BLOCKED;
}

/* ---- TMA ---- */

int ip_sched_read(Interp *I, const Op *op, ValId buf, int64_t s, ValId res)
{
    Sched *S = I->sched;
    I->slots[res].src_buf = 0;
    if (!S || !S->tma_buf[buf])
        return 0;
    Fill *fl = &sched_fills(I, buf)[s];
    int r = S->cur;
    if (fl->state == FILL_NONE) {
        diag_error(I->d, op->loc, "%s reads slot %lld before its full phase completed: no copy into it "
                   "was issued yet (%s)", op_info[op->code].name, (long long)s, sched_role_desc(I, r));
        return 1;
    }
    MBar *m = &I->slots[fl->ring].mbar[fl->rslot];
    if (fl->state != FILL_LANDED || m->seen[r] <= fl->phase) {
        diag_error(I->d, op->loc, "%s reads slot %lld before its full phase completed: no mbar_wait of %s "
                   "observed phase %lld of barrier slot %lld (the copy has %s)", op_info[op->code].name,
                   (long long)s, sched_role_desc(I, r), (long long)fl->phase, (long long)fl->rslot,
                   fl->state == FILL_LANDED ? "landed" : "not landed");
        return 1;
    }
    if (fl->reader[r] != READ_FLYING) {
        fl->reader[r] = S->vc[r].c[r] + 1;
        fl->read_loc[r] = op->loc;
    }
    I->slots[res].src_buf = buf;
    I->slots[res].src_slot = s;
    return 0;
}

/* A refill of buffer slot s by the running role: every read ordered before. */
static int check_refill(Interp *I, const Op *op, Fill *fl, int64_t s)
{
    Sched *S = I->sched;
    if (fl->state == FILL_FLYING) {
        diag_error(I->d, op->loc, "tma_load refills slot %lld while its previous copy is still in flight",
                   (long long)s);
        return 1;
    }
    for (int r = 0; r < NCLK; r++) {
        if (!fl->reader[r] || r == S->cur)
            continue;
        if (fl->reader[r] == READ_FLYING) {
            diag_error(I->d, op->loc, "tma_load refills slot %lld while a product of %s still reads it "
                       "(loaded at %d:%d; not yet retired by its dot_wait or a tc_commit)", (long long)s,
                       sched_role_desc(I, r >= LANES ? r - LANES : r),
                       fl->read_loc[r].line, fl->read_loc[r].col);
            return 1;
        }
        if (S->vc[S->cur].c[r] < fl->reader[r]) {
            diag_error(I->d, op->loc, "tma_load refills slot %lld before its empty phase was released: the "
                       "read at %d:%d by %s is not followed by an mbar_arrive that %s waited for",
                       (long long)s, fl->read_loc[r].line, fl->read_loc[r].col, sched_role_desc(I, r),
                       sched_role_desc(I, S->cur));
            return 1;
        }
    }
    return 0;
}

static int exec_tma_load(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    ValId buf = op->args[0];
    const Type *bt = ir_type(I->f, buf);
    int64_t s = slot_of(I, op, 1, bt->shape[0], "buffer"), rslot;
    MBar *m = sched_mbar_at(I, op, 2, &rslot);
    Window w;
    bool bad = false;
    if (s < 0 || !m || ip_window_init(I, op, &w, 4, 0))
        return RUN_ERR;
    int64_t n = type_numel(bt) / bt->shape[0];
    if (n != w.n) {
        diag_internal(I->d, op->loc, "tma_load: box has %lld elements, slot %lld", (long long)w.n, (long long)n);
        return RUN_ERR;
    }
    Fill *fl = &sched_fills(I, buf)[s];
    if (check_refill(I, op, fl, s))
        return RUN_ERR;
    int64_t mine = m->exp_phase[S->cur] - 1;   /* the phase this role declared bytes for */
    if (mine >= 0 && mine < m->phase) {
        diag_error(I->d, mine == m->phase - 1 ? m->prev_loc : op->loc,
                   "mbar_expect declared %lld bytes for phase %lld of barrier slot %lld, but the copies "
                   "completing on it carry more: the tma_load at %d:%d comes after the phase completed",
                   (long long)(mine == m->phase - 1 ? m->prev_expected : -1), (long long)mine,
                   (long long)rslot, op->loc.line, op->loc.col);
        return RUN_ERR;
    }
    DType bd = (DType)bt->dtype;
    Elem *data = arena_alloc(I->a, sizeof(Elem) * (size_t)n);
    for (int64_t k = 0; k < n; k++) {
        void *p = ip_window_elem(I, op, &w, k, &bad);
        if (p)
            data[k] = ip_conv(w.dt, bd, ip_load_elem(w.dt, p));
        else
            memset(&data[k], 0, sizeof data[k]);
    }
    memset(fl, 0, sizeof *fl);
    *fl = (Fill){ .state = FILL_FLYING, .ring = op->args[2], .rslot = rslot, .phase = m->phase };
    int64_t bytes = n * dtype_bits(bd) / 8;
    m->issued += bytes;
    m->inflight++;
    if (S->ncopy == S->capcopy) {
        int cap = S->capcopy ? 2 * S->capcopy : 16;
        S->copy = arena_grow(I->a, S->copy, sizeof(Copy), (size_t)S->ncopy, (size_t)cap);
        S->capcopy = cap;
    }
    S->copy[S->ncopy++] = (Copy){ buf, op->args[2], s, rslot, n, bytes, data };
    return bad ? RUN_ERR : RUN_OK;
}

static int land_copy(Interp *I, int k)
{
    Sched *S = I->sched;
    Copy c = S->copy[k];
    memmove(&S->copy[k], &S->copy[k + 1], sizeof(Copy) * (size_t)(S->ncopy - k - 1));
    S->ncopy--;
    memcpy(I->slots[c.buf].e + c.slot * c.n, c.data, sizeof(Elem) * (size_t)c.n);
    sched_fills(I, c.buf)[c.slot].state = FILL_LANDED;
    MBar *m = &I->slots[c.ring].mbar[c.rslot];
    m->tx -= c.bytes;
    m->inflight--;
    if (m->pending == 0 && m->tx < 0) {
        diag_error(I->d, m->expect_loc, "copies completing on phase %lld of barrier slot %lld carry more "
                   "bytes than the %lld its mbar_expect declared", (long long)m->phase, (long long)c.rslot,
                   (long long)m->expected);
        return RUN_ERR;
    }
    return mbar_settle(I, m, c.rslot, m->expect_loc);
}

/* ---- asynchronous products ---- */

static int exec_dot_async(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    ValId acc = op->args[2];
    if (S->nprod == S->capprod) {
        int cap = S->capprod ? 2 * S->capprod : 16;
        S->prod = arena_grow(I->a, S->prod, sizeof(Product), (size_t)S->nprod, (size_t)cap);
        S->capprod = cap;
    }
    Product *p = &S->prod[S->nprod];
    memset(p, 0, sizeof *p);
    p->role = S->cur;
    p->acc = acc;
    p->loc = op->loc;
    p->val = arena_alloc(I->a, sizeof(Elem) * (size_t)ip_vnumel(I, acc));
    if (ip_dot(I, op->loc, op->args[0], op->args[1], acc, ir_type(I->f, acc), p->val))
        return RUN_ERR;
    for (int i = 0; i < 2; i++) {
        const Slot *src = &I->slots[op->args[i]];
        if (!src->src_buf)
            continue;
        Fill *fl = &sched_fills(I, src->src_buf)[src->src_slot];
        fl->reader[S->cur] = READ_FLYING;
        p->rbuf[i] = src->src_buf;
        p->rslot[i] = src->src_slot;
    }
    I->slots[acc].locked = S->nprod + 1;
    ip_out(I, op->res[0])[0].i = S->nprod++;
    return RUN_OK;
}

int sched_flying(Sched *S, int r)
{
    int n = 0;
    for (int i = S->pfirst; i < S->nprod; i++)
        n += S->prod[i].role == r && !S->prod[i].done;
    return n;
}

/* A role's products retire at its DOT_WAIT once complete: the accumulator
 * unlocks and the slots they read count as read now. */
static void retire(Interp *I, int r)
{
    Sched *S = I->sched;
    for (int i = 0; i < S->nprod; i++) {
        Product *p = &S->prod[i];
        if (p->role != r || !p->done || p->retired)
            continue;
        p->retired = true;
        if (I->slots[p->acc].locked == i + 1)
            I->slots[p->acc].locked = 0;
        for (int k = 0; k < 2; k++) {
            Fill *fl = p->rbuf[k] ? &sched_fills(I, p->rbuf[k])[p->rslot[k]] : NULL;
            if (fl && fl->reader[r] == READ_FLYING) {
                fl->reader[r] = S->vc[r].c[r] + 1;
                fl->read_loc[r] = p->loc;
            }
        }
    }
}

static int exec_dot_wait(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    if (sched_flying(S, S->cur) > op->iattr[0])
        return RUN_BLOCKED;
    int64_t id = ip_sint(I, op->args[0]);
    if (id < 0 || id >= S->nprod || S->prod[id].role != S->cur) {
        diag_error(I->d, op->loc, "dot_wait: the token is not a product issued by %s", sched_role_desc(I, S->cur));
        return RUN_ERR;
    }
    Product *p = &S->prod[id];
    int64_t later = 0;   /* the role's products issued after it: {pending = n} lets the last n fly */
    for (int64_t j = id + 1; j < S->nprod; j++)
        later += S->prod[j].role == S->cur;
    if (!p->done || later < op->iattr[0]) {
        diag_error(I->d, op->loc, "dot_wait {pending = %lld} leaves its own product (issued at %d:%d) in flight",
                   (long long)op->iattr[0], p->loc.line, p->loc.col);
        return RUN_ERR;
    }
    retire(I, S->cur);
    Elem *o = ip_out(I, op->res[0]);
    memcpy(o, p->val, sizeof(Elem) * (size_t)ip_vnumel(I, op->res[0]));
    return RUN_OK;
}

/* ---- completions ---- */

/* Completions that may happen now: copies (any), and each role's oldest
 * product in flight. ids: copy k as k, product i as -(i + 1). */
int sched_completions(Interp *I)
{
    Sched *S = I->sched;
    if (S->capids < S->ncopy + NCLK) {
        S->capids = 2 * (S->ncopy + NCLK);
        S->ids = arena_alloc(I->a, sizeof(int) * (size_t)S->capids);
    }
    int *ids = S->ids, n = 0;
    while (S->pfirst < S->nprod && S->prod[S->pfirst].done)
        S->pfirst++;
    for (int k = 0; k < S->ncopy; k++)
        ids[n++] = k;
    bool seen[NCLK] = { false };
    for (int i = S->pfirst; i < S->nprod; i++) {
        Product *p = &S->prod[i];
        if (!p->done && !seen[p->role]) {
            seen[p->role] = true;
            ids[n++] = -(i + 1);
        }
    }
    return n;
}

int sched_complete(Interp *I, int id)
{
    if (id >= 0)
        return land_copy(I, id);
    I->sched->prod[-id - 1].done = true;
    return RUN_OK;
}

/* The oldest completion first: copies before products. */
int sched_complete_first(Interp *I, bool *any)
{
    Sched *S = I->sched;
    int n = sched_completions(I);
    *any = n > 0;
    return n ? sched_complete(I, S->ids[0]) : RUN_OK;
}

/* ---- roles ---- */

int ip_sched_locked(Interp *I, const Op *op, int i)
{
    const Product *p = &I->sched->prod[I->slots[op->args[i]].locked - 1];
    diag_error(I->d, op->loc, "'%s' uses the accumulator of the dot_async at %d:%d before its dot_wait "
               "(operand #%d)", op_info[op->code].name, p->loc.line, p->loc.col, i);
    return 1;
}

/* ---- dispatch ---- */

static int exec_one(Interp *I, const Op *op)
{
    switch ((OpCode)op->code) {
    case OP_WS: return sched_run_ws(I, op);
    case OP_NAMED_BAR: return exec_named_bar(I, op);
    case OP_MBAR_ALLOC: return exec_mbar_alloc(I, op);
    case OP_MBAR_EXPECT: case OP_MBAR_ARRIVE: case OP_MBAR_WAIT: return exec_mbar(I, op);
    case OP_TMA_LOAD: return exec_tma_load(I, op);
    case OP_DOT_ASYNC: return exec_dot_async(I, op);
    case OP_DOT_WAIT: return exec_dot_wait(I, op);
    case OP_CONVERT_LAYOUT: return ip_copy_val(I, op->res[0], op->args[0], op->loc);
    case OP_TMEM_ALLOC: return sched_exec_tmem_alloc(I, op);
    case OP_TC_MMA: return sched_exec_tc_mma(I, op);
    case OP_TC_COMMIT: return sched_exec_tc_commit(I, op);
    case OP_TMEM_LOAD: return sched_exec_tmem_load(I, op);
    case OP_TMEM_STORE: return sched_exec_tmem_store(I, op);
    default: break;
    }
    diag_internal(I->d, op->loc, "interpreter: '%s' is not a schedule op", op_info[op->code].name);
    return RUN_ERR;
}

/* In a role, a wait that cannot pass returns RUN_BLOCKED to the scheduler;
 * outside WS the code is the only thread: completions land until it can. */
int ip_exec_sched(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    int rc = exec_one(I, op);
    while (rc == RUN_BLOCKED && S->cur == MAIN) {
        bool any;
        if (sched_complete_first(I, &any))
            return RUN_ERR;
        if (!any) {
            diag_error(I->d, op->loc, "deadlock: '%s' waits for what nothing can complete",
                       op_info[op->code].name);
            return RUN_ERR;
        }
        rc = exec_one(I, op);
    }
    return rc;
}
