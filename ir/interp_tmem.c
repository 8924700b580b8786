/* interp_tmem.c - the interpreter's tensor memory and tcgen05 products,
 * run by the schedule (interp_sched.c's header describes the model:
 * roles, rings, vector clocks).
 *
 * Tensor memory (TMEM_ALLOC, TC_MMA, TC_COMMIT, TMEM_LOAD, TMEM_STORE). A
 * TC_MMA computes at issue into its tensor memory (a role's products run
 * in order); the slots and tensor memory it reads stay read, and the
 * accumulator unpublished, until the role's next TC_COMMIT, whose arrival
 * publishes them on the role's product lane (sched_int.h: the issuing
 * role itself does not learn it, so a plain arrive after the commit
 * publishes nothing about the products). A TMEM_LOAD or TMEM_STORE is done when
 * it is; the role's next arrival publishes it. Checked: a refill of a slot
 * a TC_MMA still reads (a release by mbar_arrive instead of the commit); a
 * TMEM_LOAD of tensor memory never written, written by a product no
 * TC_COMMIT followed yet, or not ordered after that commit's arrival (or
 * another role's store's) through a wait of the reading role; a
 * TMEM_STORE while another role's product writes or reads it, or before
 * that product's commit or another role's access was observed; a TC_MMA
 * reading or writing tensor memory another role loaded or stored, before
 * that role's next arrival was observed; a product accumulating into
 * tensor memory nothing wrote.
 */
#include "sched_int.h"

#include <string.h>

int sched_exec_tmem_alloc(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    ValId v = op->res[0];
    Elem *e = ip_out(I, v);
    memset(e, 0, sizeof(Elem) * (size_t)ip_vnumel(I, v));
    Tmem *t = arena_alloc(I->a, sizeof *t);
    memset(t, 0, sizeof *t);
    t->writer = t->reader = t->toucher = -1;
    I->slots[v].tmem = t;
    sched_val_push(I, &S->tmems, &S->ntmem, &S->captmem, v);
    return RUN_OK;
}

/* Is role cur ordered after the last load or store of t by another role
 * (that role arrived after it, and cur observed the arrival)? */
static bool after_touch(Interp *I, const Op *op, const Tmem *t, const char *what)
{
    Sched *S = sched_get(I);
    if (t->toucher < 0 || t->toucher == S->cur || S->vc[S->cur].c[t->toucher] >= t->touched)
        return true;
    diag_error(I->d, op->loc, "%s by %s is not ordered after the %s at %d:%d by %s: no mbar_wait observed an "
               "arrival of that role after it", what, sched_role_desc(I, S->cur), t->stored ? "tmem_store" :
               "tmem_load", t->tloc.line, t->tloc.col, sched_role_desc(I, t->toucher));
    return false;
}

/* The role's load or store of t is done: its next arrival publishes it. */
static void touch(Interp *I, const Op *op, Tmem *t, bool store)
{
    Sched *S = sched_get(I);
    t->toucher = S->cur;
    t->stored = store;
    t->touched = S->vc[S->cur].c[S->cur] + 1;
    t->tloc = op->loc;
}

int sched_exec_tc_mma(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    ValId tv = op->args[2];
    Tmem *t = I->slots[tv].tmem, *ta = I->slots[op->args[0]].tmem;
    int64_t n = ip_vnumel(I, tv);
    bool acc = I->slots[op->args[3]].e[0].i != 0;
    if (!t) {
        diag_internal(I->d, op->loc, "tc_mma into tensor memory the interpreter did not allocate");
        return RUN_ERR;
    }
    if (ta && !ta->written) {
        diag_error(I->d, op->loc, "tc_mma reads its A operand from tensor memory nothing wrote");
        return RUN_ERR;
    }
    if (acc && !t->written) {
        diag_error(I->d, op->loc, "tc_mma accumulates into tensor memory nothing wrote");
        return RUN_ERR;
    }
    if ((ta && !after_touch(I, op, ta, "tc_mma reading it")) || !after_touch(I, op, t, "tc_mma into it"))
        return RUN_ERR;
    if (!acc)   /* overwrite: the product alone */
        memset(I->slots[tv].e, 0, sizeof(Elem) * (size_t)n);
    Elem *o = arena_alloc(I->a, sizeof(Elem) * (size_t)n);
    if (ip_dot(I, op->loc, op->args[0], op->args[1], tv, ir_type(I->f, tv), o))
        return RUN_ERR;
    memcpy(I->slots[tv].e, o, sizeof(Elem) * (size_t)n);
    t->written = true;
    t->writer = S->cur;
    t->uncommitted = true;
    t->loc = op->loc;
    if (ta) {
        ta->reader = S->cur;
        ta->read_open = true;
        ta->rloc = op->loc;
    }
    for (int i = 0; i < 2; i++) {
        const Slot *src = &I->slots[op->args[i]];
        if (!src->src_buf)
            continue;
        Fill *fl = &sched_fills(I, src->src_buf)[src->src_slot];
        fl->reader[sched_lane(S->cur)] = READ_FLYING;
        fl->read_loc[sched_lane(S->cur)] = op->loc;
        if (S->ntcread == S->captcread) {
            int cap = S->captcread ? 2 * S->captcread : 8;
            S->tcread = arena_grow(I->a, S->tcread, sizeof(TcRead), (size_t)S->ntcread, (size_t)cap);
            S->captcread = cap;
        }
        S->tcread[S->ntcread++] = (TcRead){ S->cur, src->src_buf, src->src_slot };
    }
    return RUN_OK;
}

/* The role's products are done when its commit arrives: their reads are
 * released and their accumulators published by that arrival. */
int sched_exec_tc_commit(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    int r = S->cur;
    int64_t slot;
    MBar *m = sched_mbar_at(I, op, 0, &slot);
    if (!m)
        return RUN_ERR;
    if (r == MAIN) {
        diag_error(I->d, op->loc, "tc_commit outside the warp-specialized roles");
        return RUN_ERR;
    }
    int lane = sched_lane(r);
    int64_t next = ++S->commits[r];   /* the lane entry the arrival publishes */
    int keep = 0;
    for (int i = 0; i < S->ntcread; i++) {
        TcRead *rd = &S->tcread[i];
        if (rd->role != r) {
            S->tcread[keep++] = *rd;
            continue;
        }
        Fill *fl = &sched_fills(I, rd->buf)[rd->slot];
        if (fl->reader[lane] == READ_FLYING) {
            fl->reader[lane] = next;
            fl->read_loc[lane] = op->loc;
        }
    }
    S->ntcread = keep;
    for (int i = 0; i < S->ntmem; i++) {
        Tmem *t = I->slots[S->tmems[i]].tmem;
        if (t->writer == r && t->uncommitted) {
            t->uncommitted = false;
            t->ready = next;
        }
        if (t->reader == r && t->read_open) {
            t->read_open = false;
            t->read_done = next;
        }
    }
    VClock pub = S->vc[r];   /* the arrival publishes the lane; the role itself does not learn it */
    pub.c[lane] = next;
    return sched_mbar_arrive_with(I, op, m, slot, &pub);
}

int sched_exec_tmem_load(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    Tmem *t = I->slots[op->args[0]].tmem;
    if (!t || !t->written) {
        diag_error(I->d, op->loc, "tmem_load reads tensor memory nothing wrote");
        return RUN_ERR;
    }
    if (!after_touch(I, op, t, "tmem_load"))
        return RUN_ERR;
    if (t->writer < 0)
        ;
    else if (t->uncommitted) {
        diag_error(I->d, op->loc, "tmem_load reads tensor memory the tc_mma at %d:%d writes, with no tc_commit "
                   "after that product", t->loc.line, t->loc.col);
        return RUN_ERR;
    }
    else if (S->vc[S->cur].c[sched_lane(t->writer)] < t->ready) {
        diag_error(I->d, op->loc, "tmem_load by %s is not ordered after the tc_commit that completes the tc_mma at "
                   "%d:%d: no mbar_wait observed that commit's arrival", sched_role_desc(I, S->cur), t->loc.line,
                   t->loc.col);
        return RUN_ERR;
    }
    touch(I, op, t, false);
    return ip_copy_val(I, op->res[0], op->args[0], op->loc);
}

int sched_exec_tmem_store(Interp *I, const Op *op)
{
    Sched *S = sched_get(I);
    Tmem *t = I->slots[op->args[0]].tmem;
    if (!t) {
        diag_internal(I->d, op->loc, "tmem_store into tensor memory the interpreter did not allocate");
        return RUN_ERR;
    }
    if (t->writer >= 0 && (t->uncommitted || S->vc[S->cur].c[sched_lane(t->writer)] < t->ready)) {
        diag_error(I->d, op->loc, "tmem_store by %s while the tc_mma at %d:%d may still write it: %s",
                   sched_role_desc(I, S->cur), t->loc.line, t->loc.col, t->uncommitted ?
                   "no tc_commit after that product" : "no mbar_wait observed the arrival of its tc_commit");
        return RUN_ERR;
    }
    if (t->reader >= 0 && (t->read_open || S->vc[S->cur].c[sched_lane(t->reader)] < t->read_done)) {
        diag_error(I->d, op->loc, "tmem_store by %s while the tc_mma at %d:%d may still read it: %s",
                   sched_role_desc(I, S->cur), t->rloc.line, t->rloc.col, t->read_open ?
                   "no tc_commit after that product" : "no mbar_wait observed the arrival of its tc_commit");
        return RUN_ERR;
    }
    if (!after_touch(I, op, t, "tmem_store"))
        return RUN_ERR;
    if (ip_copy_val(I, op->args[0], op->args[1], op->loc))
        return RUN_ERR;
    t->written = true;
    t->writer = t->reader = -1;
    touch(I, op, t, true);
    return RUN_OK;
}
