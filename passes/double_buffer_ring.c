/* double_buffer_ring.c - the double_buffer pass's rewrite (double_buffer.c):
 * a loop's loads become an S-slot ring of shared buffers filled by
 * asynchronous copies (the schedule in double_buffer.c's header); a load
 * outside loops becomes a 1-slot buffer.
 */
#include "double_buffer_int.h"

#include <string.h>

/* ---- small helpers ---- */

static Type i32t(void) { return type_scalar(DT_I32); }

ValId cst(Builder *b, int64_t v) { return ir_const_int(b, i32t(), v); }

ValId bin(Builder *b, OpCode c, ValId x, ValId y)
{
    ValId a[2] = { x, y };
    return ir_build1(b, c, a, 2, c == OP_CMP ? type_scalar(DT_BOOL) : i32t());
}

ValId cmp_pred(Builder *b, CmpPred p, ValId x, ValId y)
{
    ValId r = bin(b, OP_CMP, x, y);
    ir_val(b->f, r)->def->iattr[0] = p;
    return r;
}

ValId cmp_lt(Builder *b, ValId x, ValId y) { return cmp_pred(b, CMP_LT, x, y); }

Op *build0(Builder *b, OpCode c, const ValId *args, int n) { return ir_build(b, c, args, n, NULL, 0); }

const char *tensor_name(const Func *f, const Op *load)
{
    const char *n = ir_val(f, load->args[0])->name;
    return n ? n : "?";
}

int64_t tile_bytes(const Type *t) { return type_numel(t) * (dtype_bits((DType)t->dtype) / 8); }

/* ---- cloning the offset computation ---- */

static ValId clone_op_result(Loop *L, Builder *b, const Op *d, ValId v)
{
    ValId args[8];
    ValId *ap = d->nargs <= 8 ? args : arena_alloc(L->f->mod->arena, sizeof(ValId) * d->nargs);
    for (int i = 0; i < d->nargs; i++)
        ap[i] = clone_val(L, b, d->args[i]);
    Type tys[4];
    for (int i = 0; i < d->nres && i < 4; i++)
        tys[i] = *ir_type(L->f, d->res[i]);
    Op *c = ir_build(b, (OpCode)d->code, ap, d->nargs, tys, d->nres);
    memcpy(c->iattr, d->iattr, sizeof c->iattr);
    c->fattr = d->fattr;
    c->list = d->list;
    c->nlist = d->nlist;
    c->loc = d->loc;
    ValId r = 0;
    for (int i = 0; i < d->nres; i++) {
        if (d->res[i] < L->nmap)
            L->map[d->res[i]] = c->res[i];
        if (d->res[i] == v)
            r = c->res[i];
    }
    return r;
}

/* The value of v with the iv replaced by L->map[iv] (set by the caller). */
ValId clone_val(Loop *L, Builder *b, ValId v)
{
    if (v < L->nmap && L->map[v])
        return L->map[v];
    const Op *d = ir_val(L->f, v)->def;
    if (d && d->parent == L->body)
        return clone_op_result(L, b, d, v);
    if (d && L->outer)
        return clone_val(L->outer, b, v);
    return v;
}

void map_reset(Loop *L, ValId iv_new)
{
    memset(L->map, 0, sizeof(ValId) * L->nmap);
    L->map[L->iv] = iv_new;
    if (L->outer)
        map_reset(L->outer, L->outer->cur);
}

/* async_copy bufs[j], slot, tensor, offsets(iv := the mapped value) */
void emit_copy(Loop *L, Builder *b, int j, ValId slot)
{
    const Op *ld = L->loads[j];
    int n = ld->nargs + 2;
    ValId *args = arena_alloc(L->f->mod->arena, sizeof(ValId) * (size_t)n);
    args[0] = L->bufs[j];
    args[1] = slot;
    args[2] = ld->args[0];
    for (int i = 1; i < ld->nargs; i++)
        args[2 + i] = clone_val(L, b, ld->args[i]);
    Op *c = build0(b, OP_ASYNC_COPY, args, n);
    c->list = ld->list;
    c->nlist = ld->nlist;
    c->iattr[0] = ld->iattr[0];
    c->loc = ld->loc;
}

/* if cond { copies of every load for iv := ivv into slot } ; async_commit */
void emit_guarded_stage(Loop *L, Builder *b, ValId cond, ValId ivv, ValId slot)
{
    Op *iff = build0(b, OP_IF, &cond, 1);
    Builder t = ir_builder_at_end(L->f, &iff->regions[0]);
    t.loc = b->loc;
    map_reset(L, ivv);
    for (int j = 0; j < L->nloads; j++)
        emit_copy(L, &t, j, slot);
    build0(&t, OP_YIELD, NULL, 0);
    Builder e = ir_builder_at_end(L->f, &iff->regions[1]);
    e.loc = b->loc;
    build0(&e, OP_YIELD, NULL, 0);
    build0(b, OP_ASYNC_COMMIT, NULL, 0);
}

Op *emit_wait(Builder *b, int64_t pending)
{
    Op *w = build0(b, OP_ASYNC_WAIT, NULL, 0);
    w->iattr[0] = pending;
    return w;
}

/* ---- the transformation ---- */

ValId new_buffer(Func *f, Builder *b, const Op *load, int stages)
{
    const Type *t = ir_type(f, load->res[0]);
    int64_t shape[TILE_MAXRANK];
    shape[0] = stages;
    for (int i = 0; i < t->rank; i++)
        shape[i + 1] = t->shape[i];
    Type bt = type_tile((DType)t->dtype, t->rank + 1, shape, SP_SHARED);
    Loc saved = b->loc;
    b->loc = load->loc;
    Op *op = ir_build(b, OP_SMEM_ALLOC, NULL, 0, &bt, 1);
    b->loc = saved;
    op->iattr[0] = SWZ_NONE;
    op->iattr[1] = -1;
    op->iattr[2] = 16;
    return op->res[0];
}

/* Replace the LOAD by smem_load buf, slot (same place, register tile). */
void replace_load(Func *f, Op *load, ValId buf, ValId slot)
{
    Builder b = ir_builder_before(f, load);
    Type t = *ir_type(f, load->res[0]);
    t.space = SP_REG;
    ValId args[2] = { buf, slot };
    ValId r = ir_build1(&b, OP_SMEM_LOAD, args, 2, t);
    ir_replace_all_uses(f, load->res[0], r);
    ir_block_remove(load->parent, ir_block_index_of(load->parent, load));
}

/* The prologue before the loop: stages 0..S-2, each guarded and committed. */
static void emit_prologue(Loop *L, Builder *b)
{
    for (int i = 0; i < L->stages - 1; i++) {
        ValId ivi = i == 0 ? L->lo : bin(b, OP_ADD, L->lo, bin(b, OP_MUL, cst(b, i), L->step));
        emit_guarded_stage(L, b, cmp_lt(b, ivi, L->hi), ivi, cst(b, i));
    }
}

/* Top of the body for S >= 2; returns the slot of this iteration. */
static ValId emit_body_head(Loop *L, Builder *b)
{
    int S = L->stages;
    ValId it = bin(b, OP_DIV, bin(b, OP_SUB, L->iv, L->lo), L->step);
    ValId cs = cst(b, S);
    ValId slot = bin(b, OP_REM, it, cs);
    emit_wait(b, S - 2);
    build0(b, OP_BARRIER, NULL, 0);
    ValId ahead = cst(b, S - 1);
    ValId ivn = bin(b, OP_ADD, L->iv, bin(b, OP_MUL, ahead, L->step));
    ValId nslot = bin(b, OP_REM, bin(b, OP_ADD, it, ahead), cs);
    emit_guarded_stage(L, b, cmp_lt(b, ivn, L->hi), ivn, nslot);
    return slot;
}

/* Top of the body for S = 1: copy, commit, wait 0, barrier. */
static ValId emit_body_head1(Loop *L, Builder *b)
{
    ValId slot = cst(b, 0);
    map_reset(L, L->iv);
    for (int j = 0; j < L->nloads; j++)
        emit_copy(L, b, j, slot);
    build0(b, OP_ASYNC_COMMIT, NULL, 0);
    emit_wait(b, 0);
    build0(b, OP_BARRIER, NULL, 0);
    return slot;
}

/* Drop pure ops of blk whose results are no longer used (the old offsets). */
void drop_dead(Func *f, Block *blk)
{
    Arena *scratch = arena_new();
    UseInfo u;
    ir_count_uses(f, &u, scratch);
    for (int i = blk->nops - 1; i >= 0; i--) {
        Op *op = blk->ops[i];
        bool dead = (op_info[op->code].flags & OPF_PURE) && !op->nregions && op->nres;
        for (int r = 0; dead && r < op->nres; r++)
            dead = u.count[op->res[r]] == 0;
        if (!dead)
            continue;
        for (int k = 0; k < op->nargs; k++)
            u.count[op->args[k]]--;
        ir_block_remove(blk, i);
    }
    arena_free(scratch);
}

/* Where the body's guarded prefetch (IF + commit) goes. Right after the
 * top barrier by default. In a body of chained products (two DOTs at its
 * top level, attention's q @ k^T and p @ v) whose first product reduces
 * over at most 64 elements, after that product instead: the warps start
 * their tensor-core work as soon as the barrier releases them and issue the
 * copies' address arithmetic while the first product drains; the slot the
 * copies overwrite is still the one the barrier retired, and the wait
 * counts are unchanged. Measured on an H200 (sm_86 PTX, bf16, 16384
 * tokens, mean of four runs, bench/RESULTS.md 2026-11-30 19:58):
 * attention at D=64 +0.3% to +1.5% on nine of ten rows (O staged: -0.5%
 * to +2.6%, nine of ten); at D=128 (a first product over 128) -1.4% to
 * -6% with fragment stores, so there it stays. Returns the index of the first DOT, or -1 for the default
 * place. */
static int late_prefetch_at(const Loop *L)
{
    Block *blk = L->body;
    int d[2] = { -1, -1 }, nd = 0;
    for (int i = 0; i < blk->nops && nd < 2; i++)
        if (blk->ops[i]->code == OP_DOT)
            d[nd++] = i;
    if (nd < 2)
        return -1;
    const Type *a = ir_type(L->f, blk->ops[d[0]]->args[0]);
    bool late = a->rank >= 1 && a->shape[a->rank - 1] <= 64;
    return late ? d[0] : -1;
}

/* Moves the guarded prefetch (the first IF followed by a commit) to just
 * after the op at index `at`. */
static void move_prefetch(Loop *L, int at)
{
    Block *blk = L->body;
    int ii = -1;
    for (int i = 0; i + 1 < at && ii < 0; i++)
        if (blk->ops[i]->code == OP_IF && blk->ops[i + 1]->code == OP_ASYNC_COMMIT)
            ii = i;
    if (ii < 0)
        return;
    Op *iff = blk->ops[ii], *com = blk->ops[ii + 1];
    ir_block_remove(blk, ii + 1);
    ir_block_remove(blk, ii);
    ir_block_insert(L->f, blk, at - 1, iff);
    ir_block_insert(L->f, blk, at, com);
    L->late = true;
}

/* Rotated (an inner loop of a rotated loop, double_buffer_rotate.c): the
 * buffers were made before the outer loop and the prologue is emitted there
 * and after this loop, for the outer loop's first and next trips. */
void transform_loop(Loop *L, bool rotated)
{
    Func *f = L->f;
    if (!rotated) {
        Builder pre = ir_builder_before(f, L->op);
        for (int j = 0; j < L->nloads; j++)
            L->bufs[j] = new_buffer(f, &pre, L->loads[j], L->stages);
        pre.loc = L->op->loc;
        emit_prologue(L, &pre);
    }
    Builder top = { f, L->body, 0, L->op->loc };
    ValId slot = L->stages >= 2 ? emit_body_head(L, &top) : emit_body_head1(L, &top);
    for (int j = 0; j < L->nloads; j++)
        replace_load(f, L->loads[j], L->bufs[j], slot);
    if (L->stages == 1) {
        Builder end = { f, L->body, L->body->nops - 1, L->op->loc };   /* before the yield */
        build0(&end, OP_BARRIER, NULL, 0);
    }
    int at = L->stages >= 2 ? late_prefetch_at(L) : -1;
    if (at >= 0)
        move_prefetch(L, at);
    Builder post = { f, L->op->parent, ir_block_index_of(L->op->parent, L->op) + 1, L->op->loc };
    emit_wait(&post, 0);
    build0(&post, OP_BARRIER, NULL, 0);
    drop_dead(f, L->body);
}

/* Does op take v as an operand? */
static bool reads(const Op *op, ValId v)
{
    for (int k = 0; k < op->nargs; k++)
        if (op->args[k] == v)
            return true;
    return false;
}

/* Does op or any op nested in it read v? */
bool reads_deep(const Op *op, ValId v)
{
    if (reads(op, v))
        return true;
    for (int r = 0; r < op->nregions; r++)
        for (int i = 0; i < op->regions[r].nops; i++)
            if (reads_deep(op->regions[r].ops[i], v))
                return true;
    return false;
}

/* True when op (an IF) holds only async copies and its yields, and no op in
 * it reads v: a loop prologue's guarded stage. */
static bool copies_only(const Op *op, ValId v)
{
    for (int r = 0; r < op->nregions; r++)
        for (int i = 0; i < op->regions[r].nops; i++) {
            const Op *o = op->regions[r].ops[i];
            if ((o->code != OP_ASYNC_COPY && o->code != OP_YIELD) || reads(o, v))
                return false;
        }
    return true;
}

/* Sink a 1-slot load's `wait 0, barrier, smem_load` (at blk->ops[w..w+2])
 * past the copy groups that follow it in the same block (a pipelined loop's
 * prologue, with the pure ops and buffers it needs): the wait then leaves
 * those groups pending (cp.async groups retire in order), so the loop's first
 * stage is in flight while the load's own copies land. Also passes any other
 * op but a loop that does not read the tile: a
 * later wait of those ops, if any, only retires this group early. Stops at
 * a loop or the first use of the loaded tile. Returns the groups passed. */
static int sink_wait(Func *f, Block *blk, int w)
{
    Op *wait = blk->ops[w], *bar = blk->ops[w + 1], *ld = blk->ops[w + 2];
    ValId v = ld->res[0];
    int groups = 0, to = -1;
    for (int j = w + 3; j < blk->nops; j++) {
        const Op *op = blk->ops[j];
        if (reads(op, v))
            break;
        if (op->code == OP_ASYNC_COMMIT) {
            groups++, to = j;
            continue;
        }
        bool ok = ((op_info[op->code].flags & OPF_PURE) && !op->nregions) || op->code == OP_SMEM_ALLOC ||
                  op->code == OP_ASYNC_COPY || (op->code == OP_IF && copies_only(op, v)) ||
                  (op->code != OP_FOR && !reads_deep(op, v));
        if (!ok)
            break;
    }
    if (to < 0)
        return 0;
    for (int i = 0; i < 3; i++)
        ir_block_remove(blk, w);
    to -= 3;
    ir_block_insert(f, blk, to + 1, wait);
    ir_block_insert(f, blk, to + 2, bar);
    ir_block_insert(f, blk, to + 3, ld);
    wait->iattr[0] = groups;
    return groups;
}

/* A qualifying load outside every loop: a 1-slot buffer, in place. */
int stage_single(Func *f, Op *load)
{
    Builder b = ir_builder_before(f, load);
    ValId buf = new_buffer(f, &b, load, 1);
    ValId slot = cst(&b, 0);
    int n = load->nargs + 2;
    ValId *args = arena_alloc(f->mod->arena, sizeof(ValId) * (size_t)n);
    args[0] = buf, args[1] = slot, args[2] = load->args[0];
    for (int i = 1; i < load->nargs; i++)
        args[2 + i] = load->args[i];
    Op *c = build0(&b, OP_ASYNC_COPY, args, n);
    c->list = load->list, c->nlist = load->nlist, c->iattr[0] = load->iattr[0];
    build0(&b, OP_ASYNC_COMMIT, NULL, 0);
    Op *w = emit_wait(&b, 0);
    build0(&b, OP_BARRIER, NULL, 0);
    replace_load(f, load, buf, slot);
    return sink_wait(f, w->parent, ir_block_index_of(w->parent, w));
}
