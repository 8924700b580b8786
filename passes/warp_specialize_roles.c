/* warp_specialize_roles.c - the warp_specialize pass's rewrite: a loop the
 * driver (warp_specialize.c, whose header has the form) accepted becomes a
 * ws of a TMA producer and wgmma consumers on a full and an empty ring.
 */
#include "clone.h"
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

/* Trips of `for lo, hi, step`: (hi - lo + step - 1) / step (<= 0: none). */
static ValId trip_count(Builder *b, const Op *fo, ValId c1)
{
    if (const_is(b->f, fo->args[0], 0) && const_is(b->f, fo->args[2], 1))
        return fo->args[1];
    ValId span = bin(b, OP_SUB, fo->args[1], fo->args[0]);
    return bin(b, OP_DIV, bin(b, OP_SUB, bin(b, OP_ADD, span, fo->args[2]), c1), fo->args[2]);
}

static ValId new_ring(Builder *b, int stages, const char *name)
{
    int64_t s = stages;
    Type t = type_tile(DT_MBAR, 1, &s, SP_SHARED);
    Op *op = ir_build(b, OP_MBAR_ALLOC, NULL, 0, &t, 1);
    op->iattr[0] = 1;
    op->iattr[1] = -1;
    ir_val(b->f, op->res[0])->name = name;
    return op->res[0];
}

/* for c0, trips, c1 [, init] in block dst; returns the FOR. */
static Op *role_loop(Func *f, Block *dst, Loc loc, const ValId bounds[3], ValId init)
{
    ValId args[4] = { bounds[0], bounds[1], bounds[2], init };
    Builder b = ir_builder_at_end(f, dst);
    b.loc = loc;
    Type t = init ? *ir_type(f, init) : type_scalar(DT_I32);
    Op *fo = ir_build(&b, OP_FOR, args, init ? 4 : 3, &t, init ? 1 : 0);
    ir_block_add_arg(f, &fo->regions[0], type_scalar(DT_I32), NULL);
    if (init)
        ir_block_add_arg(f, &fo->regions[0], t, NULL);
    return fo;
}

typedef struct Trip { ValId slot, phase; } Trip;

/* slot = it mod S, phase = (it div S) & 1: what the protocol checker reads. */
static Trip trip_of(Builder *b, ValId it, ValId cs, ValId c1)
{
    Trip t = { bin(b, OP_REM, it, cs), 0 };
    t.phase = bin(b, OP_AND, bin(b, OP_DIV, it, cs), c1);
    return t;
}

static Op *op3(Builder *b, OpCode c, ValId x, ValId y, ValId z)
{
    ValId a[3] = { x, y, z };
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

static void emit_tma(const WsLoop *W, Builder *b, ValMap *m, int i, ValId slot, ValId full)
{
    const Op *c = W->opnd[i].copy;
    int n = c->nargs + 2;
    ValId *args = arena_alloc(W->f->mod->arena, sizeof(ValId) * (size_t)n);
    args[0] = W->opnd[i].buf, args[1] = slot, args[2] = full, args[3] = slot, args[4] = c->args[2];
    for (int k = 3; k < c->nargs; k++)
        args[2 + k] = clone_offset(W, m, b->blk, c->args[k]);
    Loc saved = b->loc;
    b->loc = c->loc;
    Op *t = build0(b, OP_TMA_LOAD, args, n);
    b->loc = saved;
    t->list = c->list, t->nlist = c->nlist, t->iattr[0] = c->iattr[0];
}

/* Producer trip: wait until the slot is empty, declare its bytes, copy. */
static void fill_producer(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, ValId full, ValId empty)
{
    Func *f = W->f;
    Op *fo = W->loop;
    Op *pf = role_loop(f, role, fo->loc, bounds, 0);
    Builder b = ir_builder_at_end(f, &pf->regions[0]);
    b.loc = fo->loc;
    ValId it = pf->regions[0].args[0], c1 = bounds[2];
    Trip t = trip_of(&b, it, cs, c1);
    op3(&b, OP_MBAR_WAIT, empty, t.slot, bin(&b, OP_XOR, t.phase, c1));
    op3(&b, OP_MBAR_EXPECT, full, t.slot, 0)->iattr[0] = W->stage_bytes;
    ValId iv = it;   /* the original loop's induction value of trip it */
    if (!const_is(f, fo->args[0], 0) || !const_is(f, fo->args[2], 1))
        iv = bin(&b, OP_ADD, fo->args[0], bin(&b, OP_MUL, it, fo->args[2]));
    ValMap m = pass_valmap_new(f, f->mod->arena);
    pass_valmap_set(&m, W->ahead, iv);
    for (int i = 0; i < WS_OPERANDS; i++)
        emit_tma(W, &b, &m, i, t.slot, full);
    build0(&b, OP_YIELD, NULL, 0);
}

/* Consumer trip: wait until the slot is full, the product, release. */
static Op *fill_consumer(WsLoop *W, Block *role, const ValId bounds[3], ValId cs, ValId full, ValId empty)
{
    Func *f = W->f;
    Op *fo = W->loop, *dot = W->dot;
    Op *cf = role_loop(f, role, fo->loc, bounds, fo->args[3]);
    Block *body = &cf->regions[0];
    Builder b = ir_builder_at_end(f, body);
    b.loc = fo->loc;
    Trip t = trip_of(&b, body->args[0], cs, bounds[2]);
    op3(&b, OP_MBAR_WAIT, full, t.slot, t.phase);
    ValId ops[3] = { 0, 0, body->args[1] };
    for (int i = 0; i < WS_OPERANDS; i++) {
        ValId a[2] = { W->opnd[i].buf, t.slot };
        b.loc = W->opnd[i].read->loc;
        ops[i] = ir_build1(&b, OP_SMEM_LOAD, a, 2, *ir_type(f, W->opnd[i].read->res[0]));
    }
    b.loc = dot->loc;
    Type tok = type_scalar(DT_TOKEN), acc = *ir_type(f, dot->res[0]);
    Op *da = ir_build(&b, OP_DOT_ASYNC, ops, 3, &tok, 1);
    da->iattr[0] = MMA_WGMMA;
    Op *dw = ir_build(&b, OP_DOT_WAIT, da->res, 1, &acc, 1);
    dw->iattr[0] = 0;
    b.loc = fo->loc;
    op3(&b, OP_MBAR_ARRIVE, empty, t.slot, 0);
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
        shared_visit(f, b->ops[i], &any);
        for (int g = 0; g < b->ops[i]->nregions && !any; g++)
            ir_walk(f, &b->ops[i]->regions[g], shared_visit, &any);
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
    to_named_bar(f, op, consumers);
    for (int g = 0; g < op->nregions; g++)
        ir_walk(f, &op->regions[g], to_named_bar, consumers);
}

/* Move the ops after the drain into the consumer role: a barrier there
 * syncs the consumers only (a named barrier over their threads), and one
 * with no shared access after it in the role is dropped. */
static void move_epilogue(WsLoop *W, Block *role)
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

/* Remove the loop's prologue (guarded copies and their commits), the loop
 * and its drain, then the pure ops only they used. */
static void remove_ring(WsLoop *W)
{
    Func *f = W->f;
    Block *top = &f->body;
    ir_block_remove(top, ir_block_index_of(top, W->drain[1]));
    ir_block_remove(top, ir_block_index_of(top, W->drain[0]));
    int at = ir_block_index_of(top, W->loop);
    ir_block_remove(top, at);
    for (int i = at - 1; i >= 0; i--) {
        if (!ws_prologue_stage(W, top->ops[i]))
            continue;
        if (i + 1 < top->nops && top->ops[i + 1]->code == OP_ASYNC_COMMIT)
            ir_block_remove(top, i + 1);
        ir_block_remove(top, i);
    }
    drop_dead(f, top);
}

void ws_rewrite(WsLoop *W)
{
    Func *f = W->f;
    Builder b = ir_builder_before(f, W->loop);
    ValId c0 = cst(&b, 0), c1 = cst(&b, 1), cs = cst(&b, W->stages);
    ValId bounds[3] = { c0, trip_count(&b, W->loop, c1), c1 };
    ValId full = new_ring(&b, W->stages, "full"), empty = new_ring(&b, W->stages, "empty");
    Op *ws = build0(&b, OP_WS, NULL, 0);
    ir_ws_add_role(f, ws, ROLE_PRODUCER, 1, W->prod_regs);
    ir_ws_add_role(f, ws, ROLE_CONSUMER, W->consumers, W->cons_regs);
    fill_producer(W, &ws->regions[0], bounds, cs, full, empty);
    Op *cf = fill_consumer(W, &ws->regions[1], bounds, cs, full, empty);
    move_epilogue(W, &ws->regions[1]);
    ir_replace_all_uses(f, W->loop->res[0], cf->res[0]);
    remove_ring(W);
    for (int i = 0; i < WS_OPERANDS; i++)   /* the ring's slots: S stages */
        ir_type(f, W->opnd[i].buf)->shape[0] = W->stages;
}
