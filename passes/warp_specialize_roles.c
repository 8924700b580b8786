/* warp_specialize_roles.c - the warp_specialize pass's rewrite: a loop the
 * driver (warp_specialize.c, whose header has the form) accepted becomes a
 * ws of a TMA producer and wgmma consumers on a full and an empty ring.
 */
#include "warp_specialize_int.h"

#include <string.h>

bool ws_offset_ok(const WsLoop *W, ValId v, int depth)
{
    if (v == W->ahead || !W->in_loop[v])
        return true;
    const Op *d = ir_val(W->f, v)->def;
    if (!d || !(op_info[d->code].flags & OPF_PURE) || d->nregions || depth > 64)
        return false;
    for (int i = 0; i < d->nargs; i++)
        if (!ws_offset_ok(W, d->args[i], depth + 1))
            return false;
    return true;
}

static bool is_operand_buf(const WsLoop *W, ValId v) { return v == W->opnd[0].buf || v == W->opnd[1].buf; }

bool ws_prologue_stage(const WsLoop *W, const Op *op)
{
    if (op->code != OP_IF || op->nres)
        return false;
    bool copies = false;
    for (int g = 0; g < op->nregions; g++)
        for (int k = 0; k < op->regions[g].nops; k++) {
            const Op *o = op->regions[g].ops[k];
            if (o->code == OP_ASYNC_COPY && is_operand_buf(W, o->args[0]))
                copies = true;
            else if (o->code != OP_YIELD && !((op_info[o->code].flags & OPF_PURE) && !o->nregions))
                return false;
        }
    return copies;
}

/* ---- building ---- */

static bool const_is(const Func *f, ValId v, int64_t k)
{
    const Op *d = ir_val(f, v)->def;
    return d && d->code == OP_CONST && ir_type(f, v)->kind == TY_SCALAR && d->iattr[0] == k;
}

ValId ws_trip_count(Builder *b, const Op *fo, ValId c1)
{
    if (const_is(b->f, fo->args[0], 0) && const_is(b->f, fo->args[2], 1))
        return fo->args[1];
    ValId span = const_is(b->f, fo->args[0], 0) ? fo->args[1] : bin(b, OP_SUB, fo->args[1], fo->args[0]);
    return bin(b, OP_DIV, bin(b, OP_SUB, bin(b, OP_ADD, span, fo->args[2]), c1), fo->args[2]);
}

ValId ws_new_ring(Builder *b, int stages, const char *name)
{
    int64_t s = stages;
    Type t = type_tile(DT_MBAR, 1, &s, SP_SHARED);
    Op *op = ir_build(b, OP_MBAR_ALLOC, NULL, 0, &t, 1);
    op->iattr[0] = 1;
    op->iattr[1] = -1;
    ir_val(b->f, op->res[0])->name = name;
    return op->res[0];
}

Op *ws_role_loop(Func *f, Block *dst, Loc loc, const ValId bounds[3], const ValId *inits, int n)
{
    ValId *args = arena_alloc(f->mod->arena, sizeof(ValId) * (size_t)(3 + n));
    Type *ts = arena_alloc(f->mod->arena, sizeof(Type) * (size_t)(n + 1));
    memcpy(args, bounds, sizeof(ValId) * 3);
    for (int i = 0; i < n; i++) {
        args[3 + i] = inits[i];
        ts[i] = *ir_type(f, inits[i]);
    }
    Builder b = ir_builder_at_end(f, dst);
    b.loc = loc;
    Op *fo = ir_build(&b, OP_FOR, args, 3 + n, ts, n);
    ir_block_add_arg(f, &fo->regions[0], type_scalar(DT_I32), NULL);
    for (int i = 0; i < n; i++)
        ir_block_add_arg(f, &fo->regions[0], ts[i], NULL);
    return fo;
}

WsTrip ws_trip_of(Builder *b, ValId it, ValId cs, ValId c1)
{
    WsTrip t = { bin(b, OP_REM, it, cs), 0 };
    t.phase = bin(b, OP_AND, bin(b, OP_DIV, it, cs), c1);
    return t;
}

ValId ws_iv_of(Builder *b, const Op *fo, ValId it)
{
    if (const_is(b->f, fo->args[0], 0) && const_is(b->f, fo->args[2], 1))
        return it;
    ValId scaled = const_is(b->f, fo->args[2], 1) ? it : bin(b, OP_MUL, it, fo->args[2]);
    return const_is(b->f, fo->args[0], 0) ? scaled : bin(b, OP_ADD, fo->args[0], scaled);
}

Op *ws_ring_op(Builder *b, OpCode c, ValId ring, ValId slot, ValId phase)
{
    ValId a[3] = { ring, slot, phase };
    return build0(b, c, a, c == OP_MBAR_WAIT ? 3 : 2);
}

/* The value of v in the producer's trip: the fetched iteration's offsets
 * cloned after the map's induction value. */
static ValId clone_offset(const WsLoop *W, ValMap *m, Block *dst, ValId v)
{
    if (v == W->ahead || !W->in_loop[v] || (v < m->n && m->to[v]))
        return pass_valmap_get(m, v);
    const Op *d = ir_val(W->f, v)->def;
    for (int i = 0; i < d->nargs; i++)
        clone_offset(W, m, dst, d->args[i]);
    pass_clone_op(W->f, d, m, dst);
    return pass_valmap_get(m, v);
}

void ws_emit_tma(const WsLoop *W, Builder *b, ValMap *m, const Op *c, ValId buf, ValId slot, ValId full)
{
    int n = c->nargs + 2;
    ValId *args = arena_alloc(W->f->mod->arena, sizeof(ValId) * (size_t)n);
    args[0] = buf, args[1] = slot, args[2] = full, args[3] = slot, args[4] = c->args[2];
    for (int k = 3; k < c->nargs; k++)
        args[2 + k] = clone_offset(W, m, b->blk, c->args[k]);
    Loc saved = b->loc;
    b->loc = c->loc;
    Op *t = build0(b, OP_TMA_LOAD, args, n);
    b->loc = saved;
    t->list = c->list, t->nlist = c->nlist, t->iattr[0] = c->iattr[0];
}

void ws_fill_producer(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, ValId full, ValId empty)
{
    Func *f = W->f;
    Op *fo = W->loop;
    Op *pf = ws_role_loop(f, role, fo->loc, bounds, NULL, 0);
    Builder b = ir_builder_at_end(f, &pf->regions[0]);
    b.loc = fo->loc;
    ValId it = pf->regions[0].args[0], c1 = bounds[2];
    WsTrip t = ws_trip_of(&b, it, cs, c1);
    ws_ring_op(&b, OP_MBAR_WAIT, empty, t.slot, bin(&b, OP_XOR, t.phase, c1));
    ws_ring_op(&b, OP_MBAR_EXPECT, full, t.slot, 0)->iattr[0] = W->stage_bytes;
    ValId iv = ws_iv_of(&b, fo, it);   /* the original loop's induction value of trip it */
    ValMap m = pass_valmap_new(f, f->mod->arena);
    pass_valmap_set(&m, W->ahead, iv);
    for (int i = 0; i < WS_OPERANDS; i++)
        ws_emit_tma(W, &b, &m, W->opnd[i].copy, W->opnd[i].buf, t.slot, full);
    build0(&b, OP_YIELD, NULL, 0);
}

/* Consumer trip: wait until the slot is full, the product, release. */
static Op *fill_consumer(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, ValId full, ValId empty)
{
    Func *f = W->f;
    Op *fo = W->loop, *dot = W->dot;
    Op *cf = ws_role_loop(f, role, fo->loc, bounds, &fo->args[3], 1);
    Block *body = &cf->regions[0];
    Builder b = ir_builder_at_end(f, body);
    b.loc = fo->loc;
    WsTrip t = ws_trip_of(&b, body->args[0], cs, bounds[2]);
    ws_ring_op(&b, OP_MBAR_WAIT, full, t.slot, t.phase);
    ValId ops[3] = { 0, 0, body->args[1] };
    for (int i = 0; i < WS_OPERANDS; i++) {
        ValId a[2] = { W->opnd[i].buf, t.slot };
        b.loc = W->opnd[i].read->loc;
        ops[i] = ir_build1(&b, OP_SMEM_LOAD, a, 2, *ir_type(f, W->opnd[i].read->res[0]));
        if (W->opnd[i].trans) {   /* B stored [N, K]: read K-major */
            b.loc = W->opnd[i].trans->loc;
            ops[i] = ir_build1(&b, OP_TRANS, &ops[i], 1, *ir_type(f, W->opnd[i].trans->res[0]));
        }
    }
    b.loc = dot->loc;
    Type tok = type_scalar(DT_TOKEN), acc = *ir_type(f, dot->res[0]);
    Op *da = ir_build(&b, OP_DOT_ASYNC, ops, 3, &tok, 1);
    da->iattr[0] = MMA_WGMMA;
    Op *dw = ir_build(&b, OP_DOT_WAIT, da->res, 1, &acc, 1);
    dw->iattr[0] = 0;
    b.loc = fo->loc;
    ws_ring_op(&b, OP_MBAR_ARRIVE, empty, t.slot, 0);
    build0(&b, OP_YIELD, dw->res, 1);
    return cf;
}

/* ---- the epilogue ---- */

static bool shared_visit(Func *f, Op *op, void *ctx)
{
    bool *any = ctx;
    const Type *stored = op->code == OP_STORE ? ir_type(f, op->args[op->nargs - 1]) : NULL;
    *any = *any || op->code == OP_SMEM_LOAD || op->code == OP_SMEM_STORE || op->code == OP_ASYNC_COPY ||
           op->code == OP_TMA_LOAD || (stored && stored->kind == TY_TILE && stored->space == SP_SHARED);
    return !*any;
}

/* Does an op of b from index `from` on touch shared memory? */
static bool shared_after(Func *f, Block *b, int from)
{
    bool any = false;
    for (int i = from; i < b->nops && !any; i++) {
        ir_walk_op(f, b->ops[i], shared_visit, &any);
    }
    return any;
}

static bool to_named_bar(Func *f, Op *op, void *ctx)
{
    (void)f;
    if (op->code == OP_BARRIER) {
        op->code = OP_NAMED_BAR;
        op->iattr[0] = WS_NAMED_BAR;
        op->iattr[1] = *(int *)ctx * WG_THREADS;
        op->iattr[2] = NBAR_SYNC;
    }
    return true;
}

/* Every barrier in op (and its regions) a named barrier of the consumers. */
static void named_bars(Func *f, Op *op, int *consumers)
{
    ir_walk_op(f, op, to_named_bar, consumers);
}

/* A barrier among the moved ops syncs the consumers only (a named barrier
 * over their threads), and one with no shared access after it in the role
 * is dropped. */
void ws_move_epilogue(WsLoop *W, Block *role)
{
    Func *f = W->f;
    Block *top = &f->body;
    int from = ir_block_index_of(top, W->drain[1]) + 1, first = role->nops;
    while (top->nops > from) {
        Op *op = top->ops[from];
        ir_block_remove(top, from);
        ir_block_append(f, role, op);
    }
    for (int i = role->nops - 1; i >= first; i--) {
        Op *op = role->ops[i];
        if (op->code == OP_BARRIER && !shared_after(f, role, i + 1))
            ir_block_remove(role, i);
        else
            named_bars(f, op, &W->consumers);
    }
}

/* Chains: the once-loaded operand's copy, and every cp.async commit and
 * wait before the loop (the match saw no other copies), each wait with
 * the barrier that publishes its copies. */
static bool chain_bookkeeping(const WsLoop *W, const Op *op)
{
    return W->chain && (op == W->once.copy || op->code == OP_ASYNC_COMMIT || op->code == OP_ASYNC_WAIT);
}

void ws_remove_ring(WsLoop *W)
{
    Func *f = W->f;
    Block *top = &f->body;
    ir_block_remove(top, ir_block_index_of(top, W->drain[1]));
    ir_block_remove(top, ir_block_index_of(top, W->drain[0]));
    int at = ir_block_index_of(top, W->loop);
    ir_block_remove(top, at);
    for (int i = at - 1; i >= 0; i--) {
        Op *op = top->ops[i];
        if (chain_bookkeeping(W, op)) {
            if (op->code == OP_ASYNC_WAIT && i + 1 < top->nops && top->ops[i + 1]->code == OP_BARRIER)
                ir_block_remove(top, i + 1);
            ir_block_remove(top, i);
            continue;
        }
        if (!ws_prologue_stage(W, op))
            continue;
        if (i + 1 < top->nops && top->ops[i + 1]->code == OP_ASYNC_COMMIT)
            ir_block_remove(top, i + 1);
        ir_block_remove(top, i);
    }
    drop_dead(f, top);
}

WsRings ws_begin(WsLoop *W, Builder *b)
{
    WsRings r;
    ValId c0 = cst(b, 0), c1 = cst(b, 1);
    r.cs = cst(b, W->stages);
    r.bounds[0] = c0, r.bounds[1] = ws_trip_count(b, W->loop, c1), r.bounds[2] = c1;
    r.full = ws_new_ring(b, W->stages, "full");
    r.empty = ws_new_ring(b, W->stages, "empty");
    return r;
}

void ws_finish(WsLoop *W, Block *role, ValId acc)
{
    ws_move_epilogue(W, role);
    ir_replace_all_uses(W->f, W->loop->res[0], acc);
    ws_remove_ring(W);
    for (int i = 0; i < WS_OPERANDS; i++)   /* the ring's slots: S stages */
        ir_type(W->f, W->opnd[i].buf)->shape[0] = W->stages;
}

void ws_rewrite(PassCtx *ctx, WsLoop *W, const char *at)
{
    Func *f = W->f;
    Builder b = ir_builder_before(f, W->loop);
    WsRings r = ws_begin(W, &b);
    Op *ws = build0(&b, OP_WS, NULL, 0);
    ir_ws_add_role(f, ws, ROLE_PRODUCER, 1, W->prod_regs);
    ir_ws_add_role(f, ws, ROLE_CONSUMER, W->consumers, W->cons_regs);
    ws_fill_producer(W, &ws->regions[0], r.bounds, r.cs, r.full, r.empty);
    Op *cf = fill_consumer(W, &ws->regions[1], r.bounds, r.cs, r.full, r.empty);
    ws_finish(W, &ws->regions[1], cf->res[0]);
    ws_make_persistent(ctx, f, ws, r.cs, r.bounds[1], 0, at);
}
