/* double_buffer.c - multi-stage pipelining of tile loads through shared
 * memory: a loop's operand loads become an S-slot ring of shared buffers
 * filled by asynchronous copies S-1 iterations ahead.
 *
 * Needs: verified IR, best after canonicalize and bounds (mask bits already
 * final: the prefetches are guarded by `iv' < hi`, so a window proved in
 * bounds for iv in lo..hi-1 stays in bounds).
 * Guarantees: results are unchanged (the interpreter gives bit-identical
 * output before and after) for any trip count, including 0, 1, fewer trips
 * than stages and trip counts that are not a multiple of S. Kernels with no
 * DOT and no `shared` load are not touched.
 *
 * Which loads: a LOAD directly in a FOR body whose result feeds a DOT operand
 * (directly or through TRANS) or whose type is `shared` (the user asked),
 * has no `other` value, keeps 1..3 dims, and whose offsets depend only on
 * the induction variable and values defined outside the loop (through pure
 * ops of the body, which are cloned). A qualifying LOAD outside any loop
 * becomes a 1-slot buffer. Every other load of such a kernel stays, with a
 * remark saying why; a computed tile declared `shared` gets a remark too
 * (its stores are staged by the code generator; otherwise it stays in
 * registers).
 *
 * Stages S: the loop's pipeline(S) hint, else min(4, budget / stage bytes)
 * (at least 1) with the budget the arch's shared-memory limit.
 *
 * Schedule for S >= 2 (it = (iv - lo) / step, slot = it % S):
 *   before the loop  smem_alloc per load; for i in 0..S-2:
 *                    if lo + i*step < hi { copies of iteration i into slot i }
 *                    async_commit (always: every thread commits the same
 *                    number of groups, so wait counts stay uniform)
 *   top of the body  async_wait {pending = S-2}   (iteration it's group done)
 *                    barrier                       (all threads' copies visible;
 *                                                  all reads of iteration it-1 done)
 *                    if iv + (S-1)*step < hi { copies of iteration it+S-1
 *                    into slot (it+S-1) % S }, async_commit
 *   the loads        smem_load buf, slot
 *   after the loop   async_wait {pending = 0}, barrier
 * The prefetch is issued right after the barrier, before the compute: it
 * overwrites the slot read by iteration it-1, which the barrier has just
 * retired, so no second barrier is needed and the copy overlaps the whole
 * compute of iteration it. In a body of chained products whose first
 * reduces over at most 64 it goes after that product (late_prefetch_at).
 * S = 1: copies, commit, wait 0, barrier at the top; smem_load; a barrier
 * at the end of the body before the next overwrite.
 * Outside loops: alloc, copy, commit, wait 0, barrier, smem_load in place;
 * then the wait, barrier and smem_load sink past the copy groups that follow
 * in the same block (a loop's prologue, and the pure ops and buffers it
 * needs), with wait {pending = groups passed}: attention's Q and its first
 * K/V stage are in flight together. They also sink past any other op that
 * does not read the loaded tile, short of a loop (an earlier tile's
 * epilogue: the next tile's Q lands while it runs).
 * The barrier after the loop lets smem_alloc reuse the ring's bytes later.
 * A loop over tiles that holds a pipelined loop is rotated: its next trip's
 * copies go right after the inner loop's drain (try_rotate).
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_LOADS = 16 };

typedef struct Loop {
    Func *f;
    Op *op;
    Block *body;
    ValId iv, lo, hi, step;
    Op *loads[MAX_LOADS];
    ValId bufs[MAX_LOADS];
    int nloads;
    int stages;
    bool late;               /* the prefetch sits after the first product (late_prefetch_at) */
    ValId *map;              /* clone map: value of the original body -> clone (0 = none) */
    uint32_t nmap;           /* values that existed before the transformation */
    struct Loop *outer;      /* rotation (below): values of this loop's body clone through outer */
    ValId cur;               /* rotation: what this loop's iv maps to in the copies being emitted */
} Loop;

/* ---- small helpers ---- */

static Type i32t(void) { return type_scalar(DT_I32); }

static ValId cst(Builder *b, int64_t v) { return ir_const_int(b, i32t(), v); }

static ValId bin(Builder *b, OpCode c, ValId x, ValId y)
{
    ValId a[2] = { x, y };
    return ir_build1(b, c, a, 2, c == OP_CMP ? type_scalar(DT_BOOL) : i32t());
}

static ValId cmp_lt(Builder *b, ValId x, ValId y)
{
    ValId r = bin(b, OP_CMP, x, y);
    ir_val(b->f, r)->def->iattr[0] = CMP_LT;
    return r;
}

static Op *build0(Builder *b, OpCode c, const ValId *args, int n) { return ir_build(b, c, args, n, NULL, 0); }

static const char *loc_str(Arena *a, const Func *f, Loc l)
{
    const char *file = l.file ? l.file : f->mod->source_name ? f->mod->source_name : "?";
    return arena_printf(a, "%s:%d:%d", file, l.line, l.col);
}

static const char *tensor_name(const Func *f, const Op *load)
{
    const char *n = ir_val(f, load->args[0])->name;
    return n ? n : "?";
}

static int64_t tile_bytes(const Type *t) { return type_numel(t) * (dtype_bits((DType)t->dtype) / 8); }

/* ---- analysis: which loads qualify ---- */

typedef struct UseScan { ValId v; bool dot; } UseScan;

static bool scan_dot_use(Func *f, Op *op, void *ctx)
{
    UseScan *u = ctx;
    for (int i = 0; i < op->nargs && !u->dot; i++) {
        if (op->args[i] != u->v)
            continue;
        if (op->code == OP_DOT && i < 2)
            u->dot = true;
        else if (op->code == OP_TRANS) {
            UseScan t = { op->res[0], false };
            ir_walk(f, &f->body, scan_dot_use, &t);
            u->dot = t.dot;
        }
    }
    return !u->dot;
}

static bool feeds_dot(Func *f, ValId v)
{
    UseScan u = { v, false };
    ir_walk(f, &f->body, scan_dot_use, &u);
    return u.dot;
}

/* Wanted in shared memory at all: a dot operand or declared `shared`. */
static bool wanted(Func *f, const Op *op)
{
    return op->code == OP_LOAD && (feeds_dot(f, op->res[0]) || ir_type(f, op->res[0])->space == SP_SHARED);
}

/* Why a wanted load cannot be staged (NULL: it can). */
static const char *shape_problem(Func *f, const Op *op)
{
    const Type *t = ir_type(f, op->res[0]);
    if (t->space == SP_REG)
        return "it is declared `reg` (the product reads it from registers; without a placement it would be staged)";
    if (op->iattr[1])
        return "it has an `other` value (async copies fill out-of-bounds elements with zero)";
    if (t->kind != TY_TILE)
        return "it loads a scalar";
    if (t->rank + 1 > TILE_MAXRANK)
        return "its tile has 4 dims (a buffer adds a stage dim)";
    if (t->shape[t->rank - 1] * (int64_t)dtype_bits((DType)t->dtype) % 128 != 0)
        return "its rows are not a multiple of 16 bytes (the unit of an async copy)";
    return NULL;
}

/* Does v depend only on the induction variable and values from outside the
 * loop, through pure region-free ops of the body? With L->outer set (a
 * rotated loop's inner loop), values from outside L must pass the same test
 * for the outer loop. */
static bool invariant_but_iv(const Loop *L, ValId v, int depth)
{
    if (v == L->iv)
        return true;
    for (int i = 1; i < L->body->nargs; i++)
        if (L->body->args[i] == v)
            return false;
    const Op *d = ir_val(L->f, v)->def;
    if (!d || d->parent != L->body)
        return L->outer ? invariant_but_iv(L->outer, v, 0) : true;
    if (!(op_info[d->code].flags & OPF_PURE) || d->nregions || depth > 64)
        return false;
    for (int i = 0; i < d->nargs; i++)
        if (!invariant_but_iv(L, d->args[i], depth + 1))
            return false;
    return true;
}

static bool offsets_ok(const Loop *L, const Op *load)
{
    for (int i = 1; i < load->nargs; i++)
        if (!invariant_but_iv(L, load->args[i], 0))
            return false;
    return true;
}

/* ---- cloning the offset computation ---- */

static ValId clone_val(Loop *L, Builder *b, ValId v);

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
static ValId clone_val(Loop *L, Builder *b, ValId v)
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

static void map_reset(Loop *L, ValId iv_new)
{
    memset(L->map, 0, sizeof(ValId) * L->nmap);
    L->map[L->iv] = iv_new;
    if (L->outer)
        map_reset(L->outer, L->outer->cur);
}

/* async_copy bufs[j], slot, tensor, offsets(iv := the mapped value) */
static void emit_copy(Loop *L, Builder *b, int j, ValId slot)
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
static void emit_guarded_stage(Loop *L, Builder *b, ValId cond, ValId ivv, ValId slot)
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

static Op *emit_wait(Builder *b, int64_t pending)
{
    Op *w = build0(b, OP_ASYNC_WAIT, NULL, 0);
    w->iattr[0] = pending;
    return w;
}

/* ---- the transformation ---- */

static ValId new_buffer(Func *f, Builder *b, const Op *load, int stages)
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
static void replace_load(Func *f, Op *load, ValId buf, ValId slot)
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
static void drop_dead(Func *f, Block *blk)
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

/* Rotated (an inner loop of a rotated loop, below): the buffers were made
 * before the outer loop and the prologue is emitted there and after this
 * loop, for the outer loop's first and next trips. */
static void transform_loop(Loop *L, bool rotated)
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
static bool reads_deep(const Op *op, ValId v)
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
static int stage_single(Func *f, Op *load)
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

/* ---- stage choice ---- */

static bool holds_op(const Block *b, const Op *target)
{
    for (int i = 0; i < b->nops; i++) {
        const Op *op = b->ops[i];
        if (op == target)
            return true;
        for (int r = 0; r < op->nregions; r++)
            if (holds_op(&op->regions[r], target))
                return true;
    }
    return false;
}

/* Bytes of the loads to be staged that are live while L runs: those not
 * in L itself and not in another loop (a sibling loop's rings are dead by
 * then, and smem_alloc reuses them), one slot each. */
static int64_t other_bytes(const Loop *L, const Block *b)
{
    int64_t bytes = 0;
    for (int i = 0; i < b->nops; i++) {
        Op *op = b->ops[i];
        if (op == L->op)
            continue;
        if (op->code == OP_FOR && !holds_op(&op->regions[0], L->op))
            continue;
        if (wanted(L->f, op))
            bytes += tile_bytes(ir_type(L->f, op->res[0]));
        for (int r = 0; r < op->nregions; r++)
            bytes += other_bytes(L, &op->regions[r]);
    }
    return bytes;
}

/* The stages of a loop's rings. A pipeline(S) hint is taken unless S stages
 * and the kernel's other buffers cannot fit the block's shared memory: then
 * the most stages that do, when one does, so that a kernel written for a
 * larger device still compiles (attention's 128 x 128 tiles at D = 128 on
 * sm_86: Q and one stage of K and V, 96 KB of 99). Without a hint, up to 4
 * stages that fit. */
static int choose_stages(PassCtx *ctx, const Loop *L, int64_t stage_bytes, StrBuf *why)
{
    if (L->op->iattr[0] > 0) {
        int hint = (int)L->op->iattr[0], s = hint;
        int64_t budget = pass_smem_limit(ctx->target, ctx->smem_per_block), other = other_bytes(L, &L->f->body);
        while (s > 1 && other + s * stage_bytes > budget)
            s--;
        if (other + s * stage_bytes > budget)   /* not even one stage fits: smem_alloc says so, for the hint */
            s = hint;
        if (s == hint)
            sb_printf(why, "pipeline(%d) hint", hint);
        else
            sb_printf(why, "pipeline(%d) hint, %d stage%s: %lld B a stage and %lld B of other buffers in the %lld B "
                      "of shared memory a block has on %s", hint, s, s == 1 ? "" : "s", (long long)stage_bytes,
                      (long long)other, (long long)budget, pass_target_name(ctx));
        return s;
    }
    int64_t budget = pass_smem_limit(ctx->target, ctx->smem_per_block);
    int64_t fit = stage_bytes > 0 ? budget / stage_bytes : 4;
    int s = fit >= 4 ? 4 : fit < 1 ? 1 : (int)fit;
    sb_printf(why, "no hint: %lld B per stage, %lld B of shared memory on %s fits %lld", (long long)stage_bytes,
              (long long)budget, pass_target_name(ctx), (long long)fit);
    return s;
}

/* ---- driver ---- */

typedef struct Found {
    Op **ops; int n, cap;
    Arena *a;
    int dots;                /* DOT ops seen */
} Found;

static void found_add(Found *fd, Op *op)
{
    if (fd->n == fd->cap) {
        fd->ops = arena_grow(fd->a, fd->ops, sizeof(Op *), (size_t)fd->n, (size_t)fd->cap * 2 + 8);
        fd->cap = fd->cap * 2 + 8;
    }
    fd->ops[fd->n++] = op;
}

static bool find_fors(Func *f, Op *op, void *ctx)
{
    Found *fd = ctx;
    (void)f;
    if (op->code == OP_FOR)
        found_add(fd, op);
    fd->dots += op->code == OP_DOT;
    return true;
}

static void remark_load(PassCtx *ctx, Func *f, const Op *ld, const char *why)
{
    pass_note(ctx, "load of %s at %s stays a global load: %s", tensor_name(f, ld), loc_str(f->mod->arena, f, ld->loc),
              why);
}

/* Collect the stageable loads of one loop; remark on the others. */
static void collect_loads(PassCtx *ctx, Loop *L)
{
    for (int i = 0; i < L->body->nops; i++) {
        Op *op = L->body->ops[i];
        if (!wanted(L->f, op))
            continue;
        const char *why = shape_problem(L->f, op);
        if (!why && !offsets_ok(L, op))
            why = "its offsets depend on values the loop computes from carried state, not only on the induction variable";
        if (!why && L->nloads == MAX_LOADS)
            why = "too many loads in one loop";
        if (why)
            remark_load(ctx, L->f, op, why);
        else
            L->loads[L->nloads++] = op;
    }
}

static void describe_loop(PassCtx *ctx, const Loop *L, const char *why)
{
    Func *f = L->f;
    StrBuf sb = { 0 };
    int64_t total = 0;
    for (int j = 0; j < L->nloads; j++) {
        const Type *t = ir_type(f, L->bufs[j]);
        int64_t slot = tile_bytes(t) / L->stages;
        total += tile_bytes(t);
        sb_printf(&sb, "%s%s ", j ? ", " : "", tensor_name(f, L->loads[j]));
        type_print(f, t, &sb);
        sb_printf(&sb, " (%lld B/stage)", (long long)slot);
    }
    pass_note(ctx, "loop at %s: %d stage%s (%s); %d load%s staged: %s; %lld B; %s", loc_str(f->mod->arena, f, L->op->loc),
              L->stages, L->stages == 1 ? "" : "s", why, L->nloads, L->nloads == 1 ? "" : "s", sb.buf,
              (long long)total,
              L->stages == 1 ? "no prefetch (copy, wait, barrier at the top; barrier at the end)"
                             : arena_printf(f->mod->arena, "prefetch %d iteration%s ahead, issued %s",
                                            L->stages - 1, L->stages == 2 ? "" : "s",
                                            L->late ? "after the first of the chained products"
                                                    : "after the top barrier"));
    sb_free(&sb);
}

static void pipeline_loop(PassCtx *ctx, Func *f, Op *fo)
{
    Loop L;
    memset(&L, 0, sizeof L);
    L.f = f, L.op = fo, L.body = &fo->regions[0];
    L.iv = L.body->args[0], L.lo = fo->args[0], L.hi = fo->args[1], L.step = fo->args[2];
    collect_loads(ctx, &L);
    if (!L.nloads)
        return;
    int64_t stage_bytes = 0;
    for (int j = 0; j < L.nloads; j++)
        stage_bytes += tile_bytes(ir_type(f, L.loads[j]->res[0]));
    StrBuf why = { 0 };
    L.stages = choose_stages(ctx, &L, stage_bytes, &why);
    L.nmap = f->nvals;
    L.map = arena_alloc(f->mod->arena, sizeof(ValId) * L.nmap);
    transform_loop(&L, false);
    describe_loop(ctx, &L, why.buf);
    sb_free(&why);
}

/* ---- rotation: a loop over tiles that copies its next trip under the
 * rest of this one ----
 *
 * A loop O (a persistent grid's loop over tiles) whose body holds one loop I
 * that pipelines (the key loop, S >= 2 stages) and, before I, loads that
 * qualify as O's own (attention's Q), none of them read after I. Left as it
 * is, O's loads become a ring copied whole trips ahead and every trip starts
 * with I's prologue and waits for it. Rotated (a loop without a pipeline
 * hint above 1):
 *   before O   smem_alloc: O's loads one slot each, I's S-slot ring;
 *              if lo < hi { O's copies for iv := lo }, commit; I's
 *              prologue (stages 0..S-2) for iv := lo, each also guarded
 *              by lo < hi
 *   O's body   at the first load's place: async_wait {pending = S-1}
 *              (this trip's O copies in; I's stages may still fly),
 *              barrier, smem_load; I pipelined without its prologue; I's
 *              drain (async_wait 0, barrier); then the same copies and
 *              prologue for iv + step, guarded by iv + step < hi: they
 *              land while the rest of the body (the tile's epilogue) runs
 *   after O    async_wait 0, barrier
 * After the drain O's load buffers are dead (nothing after I reads them)
 * and so is every slot of I's ring; the rest of the body must not use
 * them, which holds for what this pass makes (nothing else is staged
 * there) and for the code generator's scratch (inside a loop it lies after
 * the buffers). */

static bool count_fors(Func *f, Op *op, void *ctx)
{
    (void)f;
    *(int *)ctx += op->code == OP_FOR;
    return true;
}

static bool stageable_in(const Loop *L, const Op *op)
{
    return !shape_problem(L->f, op) && offsets_ok(L, op);
}

/* Copies of O's loads for iv := tv, then I's prologue for that trip, every
 * stage guarded by g too; at b. */
static void emit_rotated(Loop *I, Loop *O, Builder *b, ValId tv, ValId g)
{
    Func *f = O->f;
    ValId zero = cst(b, 0);
    Op *iff = build0(b, OP_IF, &g, 1);
    Builder t = ir_builder_at_end(f, &iff->regions[0]);
    t.loc = b->loc;
    O->outer = NULL;
    map_reset(O, tv);
    for (int j = 0; j < O->nloads; j++)
        emit_copy(O, &t, j, zero);
    build0(&t, OP_YIELD, NULL, 0);
    Builder e = ir_builder_at_end(f, &iff->regions[1]);
    e.loc = b->loc;
    build0(&e, OP_YIELD, NULL, 0);
    build0(b, OP_ASYNC_COMMIT, NULL, 0);
    O->cur = tv;
    map_reset(O, tv);
    ValId lo = clone_val(O, b, I->lo), hi = clone_val(O, b, I->hi), step = clone_val(O, b, I->step);
    I->outer = O;
    for (int i = 0; i < I->stages - 1; i++) {
        ValId ivi = i == 0 ? lo : bin(b, OP_ADD, lo, bin(b, OP_MUL, cst(b, i), step));
        ValId a[2] = { g, cmp_lt(b, ivi, hi) };
        ValId cond = ir_build1(b, OP_AND, a, 2, type_scalar(DT_BOOL));
        emit_guarded_stage(I, b, cond, ivi, cst(b, i));
    }
    I->outer = NULL;
}

/* Rotates fo when it qualifies (above); *inner gets I. False: fo is left
 * for pipeline_loop. */
static bool try_rotate(PassCtx *ctx, Func *f, Op *fo, Op **inner)
{
    if (fo->iattr[0] > 1)
        return false;
    Block *B = &fo->regions[0];
    int ii = -1, nfor = 0, ninner = 0;
    ir_walk(f, B, count_fors, &nfor);
    for (int i = 0; i < B->nops; i++)
        if (B->ops[i]->code == OP_FOR)
            ii = ii < 0 ? i : -2;
    if (ii < 0)
        return false;
    Op *io = B->ops[ii];
    ir_walk(f, &io->regions[0], count_fors, &ninner);
    if (nfor != 1 + ninner)
        return false;   /* one loop in the body, and no loop nested in an if */
    Loop O, I;
    memset(&O, 0, sizeof O);
    memset(&I, 0, sizeof I);
    O.f = f, O.op = fo, O.body = B, O.iv = B->args[0], O.lo = fo->args[0], O.hi = fo->args[1], O.step = fo->args[2];
    I.f = f, I.op = io, I.body = &io->regions[0], I.iv = I.body->args[0];
    I.lo = io->args[0], I.hi = io->args[1], I.step = io->args[2];
    for (int i = 0; i < B->nops; i++) {
        Op *op = B->ops[i];
        if (!wanted(f, op))
            continue;
        if (i > ii || !stageable_in(&O, op) || O.nloads == MAX_LOADS)
            return false;
        for (int k = ii + 1; k < B->nops; k++)
            if (reads_deep(B->ops[k], op->res[0]))
                return false;
        O.loads[O.nloads++] = op;
    }
    if (!O.nloads || !invariant_but_iv(&O, I.lo, 0) || !invariant_but_iv(&O, I.hi, 0) ||
        !invariant_but_iv(&O, I.step, 0))
        return false;
    int64_t stage_bytes = 0;
    for (int i = 0; i < I.body->nops; i++) {
        Op *op = I.body->ops[i];
        if (!wanted(f, op) || !stageable_in(&I, op))
            continue;
        I.outer = &O;   /* its offsets must also clone for the outer loop's next trip */
        bool ok = offsets_ok(&I, op);
        I.outer = NULL;
        if (!ok)
            return false;
        stage_bytes += tile_bytes(ir_type(f, op->res[0]));
    }
    if (!stage_bytes)
        return false;
    StrBuf why = { 0 };
    I.stages = choose_stages(ctx, &I, stage_bytes, &why);
    if (I.stages < 2) {
        sb_free(&why);
        return false;
    }
    collect_loads(ctx, &I);   /* the same loads, with remarks on the others */
    O.stages = 1;
    O.nmap = I.nmap = f->nvals;
    O.map = arena_alloc(f->mod->arena, sizeof(ValId) * O.nmap);
    I.map = arena_alloc(f->mod->arena, sizeof(ValId) * I.nmap);
    Builder pre = ir_builder_before(f, fo);
    pre.loc = fo->loc;
    for (int j = 0; j < O.nloads; j++)
        O.bufs[j] = new_buffer(f, &pre, O.loads[j], 1);
    for (int j = 0; j < I.nloads; j++)
        I.bufs[j] = new_buffer(f, &pre, I.loads[j], I.stages);
    emit_rotated(&I, &O, &pre, O.lo, cmp_lt(&pre, O.lo, O.hi));
    Builder nx = { f, B, ii + 1, io->loc };
    ValId tn = bin(&nx, OP_ADD, O.iv, O.step);
    emit_rotated(&I, &O, &nx, tn, cmp_lt(&nx, tn, O.hi));
    transform_loop(&I, true);   /* its drain goes in right after it, before the copies just made */
    Builder w = ir_builder_before(f, O.loads[0]);
    ValId slot = cst(&w, 0);
    emit_wait(&w, I.stages - 1);
    build0(&w, OP_BARRIER, NULL, 0);
    for (int j = 0; j < O.nloads; j++)
        replace_load(f, O.loads[j], O.bufs[j], slot);
    drop_dead(f, B);
    Builder post = { f, fo->parent, ir_block_index_of(fo->parent, fo) + 1, fo->loc };
    emit_wait(&post, 0);
    build0(&post, OP_BARRIER, NULL, 0);
    describe_loop(ctx, &I, why.buf);
    sb_free(&why);
    StrBuf names = { 0 };
    for (int j = 0; j < O.nloads; j++)
        sb_printf(&names, "%s%s", j ? ", " : "", tensor_name(f, O.loads[j]));
    pass_note(ctx, "loop at %s: rotated: %s in one slot%s; the next trip's copies of %s and the first %d "
              "stage%s of the loop at %s are issued right after that loop's drain, under the rest of the trip",
              loc_str(f->mod->arena, f, fo->loc), names.buf, O.nloads > 1 ? " each" : "", names.buf, I.stages - 1,
              I.stages == 2 ? "" : "s",
              loc_str(f->mod->arena, f, io->loc));
    sb_free(&names);
    *inner = io;
    return true;
}

static bool in_loop(const Found *fors, const Op *op)
{
    for (int i = 0; i < fors->n; i++)
        if (op->parent == &fors->ops[i]->regions[0])
            return true;
    return false;
}

static bool find_loads(Func *f, Op *op, void *ctx)
{
    Found *fd = ctx;
    if (wanted(f, op))
        found_add(fd, op);
    return true;
}

/* Qualifying loads outside loops; loads nested under an IF in a loop stay. */
static void stage_outside(PassCtx *ctx, Func *f, const Found *fors, Arena *a)
{
    Found lds = { NULL, 0, 0, a, 0 };
    ir_walk(f, &f->body, find_loads, &lds);
    for (int i = 0; i < lds.n; i++) {
        Op *ld = lds.ops[i];
        const char *why = shape_problem(f, ld);
        if (in_loop(fors, ld))
            continue;   /* a loop's own load that did not qualify: remarked already */
        bool nested = ld->parent != &f->body;
        if (!why && nested)
            why = "it sits inside a conditional or a loop region it does not belong to";
        if (why) {
            remark_load(ctx, f, ld, why);
            continue;
        }
        const char *name = tensor_name(f, ld), *at = loc_str(f->mod->arena, f, ld->loc);
        int groups = stage_single(f, ld);
        if (groups)
            pass_note(ctx, "load of %s at %s: 1-slot shared buffer (outside loops: copy; wait, barrier, read after "
                      "the next %d copy group%s, left in flight)", name, at, groups, groups > 1 ? "s" : "");
        else
            pass_note(ctx, "load of %s at %s: 1-slot shared buffer (outside loops: copy, wait, barrier, read)",
                      name, at);
    }
}

/* A tile declared `shared` that is computed rather than loaded: this pass
 * stages loads only; a store of it to global memory is staged by the code
 * generator when the tile holds a product's fragments (through shared
 * memory, out as 16-byte rows; its report line says what it did), any
 * other use reads registers. Say which instead of dropping the request
 * silently. */
typedef struct SharedUse {
    ValId v;
    bool stored;
} SharedUse;

static bool find_store_of(Func *f, Op *op, void *vctx)
{
    (void)f;
    SharedUse *u = vctx;
    if (op->code == OP_STORE && op->nargs > 0 && op->args[op->nargs - 1] == u->v)
        u->stored = true;
    return !u->stored;
}

static bool remark_computed_shared(Func *f, Op *op, void *vctx)
{
    PassCtx *ctx = vctx;
    bool computed = op->code != OP_LOAD && op->code != OP_SMEM_ALLOC && op->nres == 1;
    const Type *t = computed ? ir_type(f, op->res[0]) : NULL;
    if (!t || t->kind != TY_TILE || t->space != SP_SHARED)
        return true;
    SharedUse u = { op->res[0], false };
    ir_walk(f, &f->body, find_store_of, &u);
    if (u.stored)
        pass_note(ctx, "tile at %s is declared shared and computed: a store of it to global memory goes through "
                  "shared memory when it holds a product's fragments (out as 16-byte rows; the code generator's "
                  "store line says what it did); other uses read registers",
                  loc_str(f->mod->arena, f, op->loc));
    else
        pass_note(ctx, "tile at %s is declared shared but computed, not loaded, and not stored: it stays in "
                  "registers (loads of global windows and stores to global memory are what shared memory stages)",
                  loc_str(f->mod->arena, f, op->loc));
    return true;
}

static void run_func(PassCtx *ctx, Func *f)
{
    ir_walk(f, &f->body, remark_computed_shared, ctx);
    Arena *a = arena_new();
    Found fors = { NULL, 0, 0, a, 0 };
    ir_walk(f, &f->body, find_fors, &fors);
    Found lds = { NULL, 0, 0, a, 0 };
    ir_walk(f, &f->body, find_loads, &lds);
    if (lds.n == 0) {
        arena_free(a);
        return;   /* nothing wants shared memory: SIMT kernels stay untouched */
    }
    bool *done = arena_alloc(a, sizeof(bool) * (size_t)(fors.n + 1));
    memset(done, 0, sizeof(bool) * (size_t)(fors.n + 1));
    for (int i = 0; i < fors.n; i++) {
        Op *inner = NULL;
        if (done[i])
            continue;
        if (try_rotate(ctx, f, fors.ops[i], &inner)) {
            for (int k = i + 1; k < fors.n; k++)
                done[k] = done[k] || fors.ops[k] == inner;
            continue;
        }
        pipeline_loop(ctx, f, fors.ops[i]);
    }
    stage_outside(ctx, f, &fors, a);
    arena_free(a);
}

int pass_double_buffer(Module *m, PassCtx *ctx)
{
    for (int i = 0; i < m->nfuncs; i++)
        run_func(ctx, m->funcs[i]);
    return 0;
}
