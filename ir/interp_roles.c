/* interp_roles.c - WS roles as coroutines: each role's frame stack (loops
 * and branches it is inside), the one-step scheduler (round robin for seed
 * 0, seeded random otherwise), and the deadlock report. interp_sched.c's
 * header describes the model.
 */
#include "sched_int.h"

#include <string.h>

static uint64_t rnd(Sched *S)
{
    S->rng ^= S->rng >> 12;
    S->rng ^= S->rng << 25;
    S->rng ^= S->rng >> 27;
    return S->rng * UINT64_C(2685821657736338717);
}

static const Op *role_op(const Role *R)
{
    const Frame *f = &R->fr[R->depth - 1];
    return f->pc < f->b->nops ? f->b->ops[f->pc] : NULL;
}

static bool defined(Interp *I, const Op *op)
{
    for (int i = 0; i < op->nargs; i++)
        if (!I->slots[op->args[i]].e)
            return false;
    return true;
}

/* Whether role r's next op is a wait that cannot pass yet (no side effects). */
static bool blocked(Interp *I, int r)
{
    Sched *S = I->sched;
    Role *R = &S->roles[r];
    const Op *op = role_op(R);
    if (R->done || !op || !defined(I, op))
        return false;
    switch (op->code) {
    case OP_MBAR_WAIT: {
        ValId ring = op->args[0];
        int64_t s = ip_sint(I, op->args[1]);
        if (!I->slots[ring].mbar || s < 0 || s >= ir_type(I->f, ring)->shape[0])
            return false;
        return (I->slots[ring].mbar[s].phase & 1) == (ip_sint(I, op->args[2]) & 1);
    }
    case OP_NAMED_BAR:
        return R->nb_gen >= 0 && S->nb[op->iattr[0] & (NAMED_BAR_IDS - 1)].gen <= R->nb_gen;
    case OP_DOT_WAIT:
        return sched_flying(S, r) > op->iattr[0];
    default:
        return false;
    }
}

static int set_body_args(Interp *I, const Op *loop, int64_t iv)
{
    const Block *body = &loop->regions[0];
    ip_out(I, body->args[0])[0].i = ip_wrap_int(ip_vdt(I, body->args[0]), iv);
    for (int i = 0; i < loop->nres; i++)
        if (ip_copy_val(I, body->args[1 + i], loop->res[i], loop->loc))
            return RUN_ERR;
    return RUN_OK;
}

static int push(Interp *I, Role *R, const Op *op, const Block *b)
{
    if (R->depth == MAX_FRAMES) {
        diag_error(I->d, op->loc, "regions nested deeper than %d in a ws role", MAX_FRAMES);
        return RUN_ERR;
    }
    R->fr[R->depth++] = (Frame){ b, 0, op, 0, 0, 0 };
    return RUN_OK;
}

static int enter_for(Interp *I, Role *R, const Op *op)
{
    int ninit = op->nargs - 3;
    if (ninit < 0 || op->nres != ninit || op->nregions != 1 || op->regions[0].nargs != ninit + 1) {
        diag_internal(I->d, op->loc, "malformed for: %d operands, %d results", op->nargs, op->nres);
        return RUN_ERR;
    }
    int64_t lo = ip_sint(I, op->args[0]), hi = ip_sint(I, op->args[1]), step = ip_sint(I, op->args[2]);
    if (step <= 0) {
        diag_error(I->d, op->loc, "loop step must be positive (got %lld)", (long long)step);
        return RUN_ERR;
    }
    for (int i = 0; i < ninit; i++)
        if (ip_copy_val(I, op->res[i], op->args[3 + i], op->loc))
            return RUN_ERR;
    if (lo >= hi) {
        R->fr[R->depth - 1].pc++;
        return RUN_OK;
    }
    if (push(I, R, op, &op->regions[0]))
        return RUN_ERR;
    Frame *f = &R->fr[R->depth - 1];
    f->iv = lo, f->hi = hi, f->step = step;
    return set_body_args(I, op, lo);
}

/* The end of a frame's block (or its YIELD): next trip, or back to the parent. */
static int leave_block(Interp *I, Role *R)
{
    Frame *f = &R->fr[R->depth - 1];
    const Op *y = role_op(R);
    if (y && ip_check_operands(I, y))
        return RUN_ERR;
    if (!f->op) {
        R->done = true;
        return RUN_OK;
    }
    const Op *op = f->op;
    int n = y ? y->nargs : 0;
    if (n != op->nres) {
        diag_internal(I->d, op->loc, "%s region yields %d values, expected %d", op_info[op->code].name, n,
                      op->nres);
        return RUN_ERR;
    }
    for (int i = 0; i < n; i++)
        if (ip_copy_val(I, op->res[i], y->args[i], op->loc))
            return RUN_ERR;
    if (op->code == OP_FOR && f->iv + f->step < f->hi) {
        f->iv += f->step;
        f->pc = 0;
        return set_body_args(I, op, f->iv);
    }
    R->depth--;
    R->fr[R->depth - 1].pc++;
    return RUN_OK;
}

/* One op of role r (or one control transition). */
static int role_step(Interp *I, int r)
{
    Sched *S = I->sched;
    Role *R = &S->roles[r];
    S->cur = r;
    const Op *op = role_op(R);
    int rc;
    if (!op || op->code == OP_YIELD)
        rc = leave_block(I, R);
    else if (op->code == OP_FOR)
        rc = ip_check_operands(I, op) ? RUN_ERR : enter_for(I, R, op);
    else if (op->code == OP_IF)
        rc = ip_check_operands(I, op) ? RUN_ERR
             : push(I, R, op, &op->regions[ip_in(I, op->args[0])[0].i != 0 ? 0 : 1]);
    else if ((rc = ip_exec_op(I, op)) == RUN_OK)
        R->fr[R->depth - 1].pc++;
    S->cur = MAIN;
    return rc == RUN_ERR ? RUN_ERR : RUN_OK;
}

static const char *wait_desc(Interp *I, int r)
{
    Sched *S = I->sched;
    const Op *op = role_op(&S->roles[r]);
    const char *what = arena_printf(I->a, "%s at %s %d:%d", sched_role_desc(I, r), op_info[op->code].name,
                                    op->loc.line, op->loc.col);
    if (op->code == OP_MBAR_WAIT) {
        int64_t s = ip_sint(I, op->args[1]);
        const MBar *m = &I->slots[op->args[0]].mbar[s];
        return arena_printf(I->a, "%s (barrier slot %lld: %lld phases completed, waits for parity %lld; %lld "
                            "of %lld arrivals, %lld bytes outstanding)", what, (long long)s,
                            (long long)m->phase, (long long)(ip_sint(I, op->args[2]) & 1),
                            (long long)(m->count - m->pending), (long long)m->count, (long long)m->tx);
    }
    if (op->code == OP_NAMED_BAR) {
        const NBar *nb = &S->nb[op->iattr[0] & (NAMED_BAR_IDS - 1)];
        return arena_printf(I->a, "%s (%lld of %lld threads arrived)", what, (long long)nb->arrived,
                            (long long)nb->threads);
    }
    return what;
}

/* Every role blocked, nothing in flight: name a byte count that can never
 * balance if there is one, else every role's wait. */
static int deadlock(Interp *I, const Op *at)
{
    Sched *S = I->sched;
    for (int k = 0; k < S->nrings; k++) {
        const Type *t = ir_type(I->f, S->rings[k]);
        for (int64_t s = 0; s < t->shape[0]; s++) {
            const MBar *m = &I->slots[S->rings[k]].mbar[s];
            if (m->pending == 0 && m->tx && !m->inflight) {
                diag_error(I->d, m->expect_loc, "mbar_expect declared %lld bytes for phase %lld of barrier "
                           "slot %lld, but the copies completing on it carry %lld", (long long)m->expected,
                           (long long)m->phase, (long long)s, (long long)m->issued);
                return RUN_ERR;
            }
        }
    }
    StrBuf sb = { 0 };
    int first = -1;
    for (int r = 0; r < S->nroles; r++)
        if (!S->roles[r].done) {
            sb_printf(&sb, "%s%s", first < 0 ? "" : "; ", wait_desc(I, r));
            if (first < 0)
                first = r;
        }
    Loc loc = first >= 0 ? role_op(&S->roles[first])->loc : at->loc;
    diag_error(I->d, loc, "deadlock: every role is blocked: %s", sb.buf ? sb.buf : "");
    sb_free(&sb);
    return RUN_ERR;
}

/* One scheduling decision; RUN_BLOCKED when nothing can move. */
static int sched_step(Interp *I, int *rr)
{
    Sched *S = I->sched;
    int run[WS_MAXROLES], nrun = 0;
    for (int k = 0; k < S->nroles; k++) {
        int r = (*rr + k) % S->nroles;
        if (!S->roles[r].done && !blocked(I, r))
            run[nrun++] = r;
    }
    int nev = sched_completions(I);
    const int *ids = S->ids;
    if (!nrun && !nev)
        return RUN_BLOCKED;
    if (!I->seed && I->eager && nev)
        return sched_complete(I, ids[0]);
    if (I->seed) {
        int k = (int)(rnd(S) % (uint64_t)(nrun + nev));
        return k < nrun ? role_step(I, run[k]) : sched_complete(I, ids[k - nrun]);
    }
    if (!nrun)
        return sched_complete(I, ids[0]);
    int r = run[0];
    while (!S->roles[r].done && !blocked(I, r))
        if (role_step(I, r))
            return RUN_ERR;
    *rr = (r + 1) % S->nroles;
    return RUN_OK;
}

int sched_run_ws(Interp *I, const Op *ws)
{
    Sched *S = sched_get(I);
    if (S->ws) {
        diag_error(I->d, ws->loc, "ws nested in another ws");
        return RUN_ERR;
    }
    int n = ws->nregions;
    Role *roles = arena_alloc(I->a, sizeof(Role) * (size_t)n);
    S->vc[MAIN].c[MAIN]++;
    for (int r = 0; r < n; r++) {
        memset(&roles[r], 0, sizeof roles[r]);
        roles[r].depth = 1;
        roles[r].fr[0] = (Frame){ &ws->regions[r], 0, NULL, 0, 0, 0 };
        roles[r].nb_gen = -1;
        roles[r].threads = ws->list[3 * r + 1] * WG_THREADS;
        sched_vc_join(&S->vc[r], &S->vc[MAIN]);
    }
    S->roles = roles, S->nroles = n, S->ws = ws;
    int rr = 0, rc = RUN_OK;
    for (;;) {
        bool alive = false;
        for (int r = 0; r < n; r++)
            alive |= !roles[r].done;
        if (!alive)
            break;
        rc = sched_step(I, &rr);
        if (rc == RUN_BLOCKED)
            rc = deadlock(I, ws);
        if (rc)
            break;
    }
    for (bool any = true; !rc && any;)   /* what is still in flight lands */
        rc = sched_complete_first(I, &any);
    for (int r = 0; r < n; r++)
        sched_vc_join(&S->vc[MAIN], &S->vc[r]);
    S->roles = NULL, S->nroles = 0, S->ws = NULL, S->cur = MAIN;
    return rc ? RUN_ERR : RUN_OK;
}

