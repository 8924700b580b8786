/* warp_specialize_persist.c - a persistent grid for warp-specialized
 * wgmma roles (GEMM's one product, attention's chained ones, sm_90a): each
 * role loops over the tiles itself, so that the producer loads the next
 * tile's operands (attention: Q, K and V) while the consumers finish this
 * tile (the last trips' products, the epilogue), and the rings run on
 * across tiles.
 *
 * Needs: the kernel just rewritten by ws_rewrite or ws_chain_rewrite: its
 * body the ops before the loop (pure ops and allocations), then the WS
 * (the epilogue moved into the consumer role); a grid (X, Y, Z); the
 * device's SM count (target.sms; where it is not given, the grid reads
 * num_sms(), which the runtime evaluates on the launch device). Without
 * a once-loaded operand (GEMM) the Q ring below is left out.
 *
 * The form (n the block's tile count so far, base the trips before this
 * tile's, t = block.x + n * num_blocks.x its tile, QS Q's slots: 2 where
 * shared memory holds a second, else 1):
 *   %qe = mbar_alloc {count = 1} : tile<QS x mbar>     (Q's slot is free)
 *   NT = (X * Y * Z - block.x + num_blocks.x - 1) / num_blocks.x
 *   ws {
 *     for n in 0 .. NT carrying base = 0 {
 *       the ops before the loop again, block ids from t (x = t mod X,
 *       y = t / X mod Y, z = t / (X * Y)), grid sizes (X, Y, Z)
 *       mbar_wait %qe, n mod QS, ((n div QS) & 1) ^ 1  (Q's slot released)
 *       Q's expect and copy; the trip loop
 *       yield base + T
 *     }
 *   } {
 *     for n in 0 .. NT carrying base = 0 {
 *       the ops before the loop again; mbar_wait Q's ring, n mod QS, (n div QS) & 1
 *       the trip loop; mbar_arrive %qe, n mod QS (after the last wait of a
 *       product reading Q); the drain; the epilogue; yield base + T
 *     }
 *   }
 * and the grid (min(SMs x the blocks an SM, X * Y * Z), 1, 1). Every
 * ring slot and phase of the trips is taken of base + (the trip's index),
 * so each ring's phases run on across tiles as one trip loop of all the
 * tiles' trips would take them; Q's ring becomes a ring of QS slots
 * indexed by n.
 * The static checker proves both levels (ir/protocol.c).
 */
#include "warp_specialize_int.h"

#include <string.h>

static bool cs_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    ValId *cs = ctx;
    for (int i = 0; i < op->nargs && *cs; i++)
        if (op->args[i] == *cs && !(i == 1 && (op->code == OP_REM || op->code == OP_DIV)))
            *cs = 0;
    return *cs != 0;
}

/* Every use of the stage count is a ring slot's or phase's rem / div. */
static bool cs_only_rings(Func *f, const Op *ws, ValId cs)
{
    ValId v = cs;
    for (int r = 0; r < ws->nregions && v; r++)
        ir_walk(f, (Block *)&ws->regions[r], cs_visit, &v);
    return v != 0;
}

/* Why the kernel cannot take the persistent form (NULL: it can). */
static const char *persist_problem(const PassCtx *ctx, Func *f, const Op *ws, ValId cs)
{
    Block *top = &f->body;
    const Op *gy = ir_block_yield(&f->grid);
    if (ctx->one_tile)
        return "the option warp_specialize.persistent=0";
    if (!gy || gy->nargs != 3)
        return "the grid is not (X, Y, Z)";
    for (int i = 0; i < f->grid.nops; i++) {
        if (f->grid.ops[i]->code == OP_NUMSMS)
            return "the grid uses num_sms(): the kernel sizes its own grid by the device";
        if (f->grid.ops[i]->code == OP_DIVISOR)   /* the launch pass's longest loops first, in groups */
            return "the tiles' loops differ in length (the launch pass orders them longest first): the hardware's "
                   "block scheduler balances them better (a persistent grid measured 5-8% slower on causal "
                   "attention, H200)";
    }
    if (!top->nops || top->ops[top->nops - 1] != ws)
        return "ops follow the roles";
    for (int i = 0; i + 1 < top->nops; i++) {
        const Op *op = top->ops[i];
        if (op->code != OP_SMEM_ALLOC && op->code != OP_MBAR_ALLOC &&
            (!(op_info[op->code].flags & OPF_PURE) || op->nregions))
            return "an op before the roles is not pure";
    }
    if (!cs_only_rings(f, ws, cs))
        return "the stage count is used beyond the rings' slots";
    return NULL;
}

typedef struct Remap { const ValMap *m; } Remap;

static bool remap_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    const ValMap *m = ((Remap *)ctx)->m;
    for (int i = 0; i < op->nargs; i++)
        op->args[i] = pass_valmap_get(m, op->args[i]);
    return true;
}

typedef struct Based { ValId cs; Op **ops; int n, cap; Arena *a; } Based;

static bool based_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    Based *bs = ctx;
    if ((op->code == OP_REM || op->code == OP_DIV) && op->nargs == 2 && op->args[1] == bs->cs) {
        if (bs->n == bs->cap) {
            bs->ops = arena_grow(bs->a, bs->ops, sizeof(Op *), (size_t)bs->n, (size_t)bs->cap * 2 + 8);
            bs->cap = bs->cap * 2 + 8;
        }
        bs->ops[bs->n++] = op;
    }
    return true;
}

static bool ring_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    if (op->code == OP_MBAR_WAIT || op->code == OP_MBAR_ARRIVE || op->code == OP_MBAR_EXPECT ||
        op->code == OP_TMA_LOAD)
        *(bool *)ctx = true;
    return !*(bool *)ctx;
}

static bool holds_rings(Func *f, Op *op)
{
    bool any = false;
    for (int r = 0; r < op->nregions && !any; r++)
        ir_walk(f, &op->regions[r], ring_visit, &any);
    return any;
}

/* Does v read Q's buffer (its smem_load, or a trans of it)? */
static bool reads_q(const Func *f, ValId v, ValId qbuf)
{
    const Op *d = ir_val(f, v)->def;
    if (d && d->code == OP_TRANS)
        d = ir_val(f, d->args[0])->def;
    return d && d->code == OP_SMEM_LOAD && d->args[0] == qbuf;
}

typedef struct QWait { ValId qbuf; bool found; } QWait;

/* A dot_wait of a product that reads Q's buffer. */
static bool qwait_visit(Func *f, Op *op, void *ctx)
{
    QWait *q = ctx;
    if (op->code == OP_DOT_WAIT) {
        const Op *d = ir_val(f, op->args[0])->def;
        if (d && d->code == OP_DOT_ASYNC && (reads_q(f, d->args[0], q->qbuf) || reads_q(f, d->args[1], q->qbuf)))
            q->found = true;
    }
    return !q->found;
}

/* A block id or grid size read inside the role's ops (a loop body's
 * offsets, the epilogue's): that of tile t (id, g) in its place; true when
 * op is one (its uses moved, the op to drop), else the same for its
 * regions. */
static bool retile_id(Func *f, Op *op, const ValId id[3], const ValId g[3])
{
    if ((op->code == OP_BLOCKID || op->code == OP_NBLOCKS) && op->iattr[0] >= 0 && op->iattr[0] < 3) {
        ir_replace_all_uses(f, op->res[0], op->code == OP_BLOCKID ? id[op->iattr[0]] : g[op->iattr[0]]);
        return true;
    }
    for (int r = 0; r < op->nregions; r++) {
        Block *b = &op->regions[r];
        for (int i = 0; i < b->nops; i++)
            if (retile_id(f, b->ops[i], id, g))
                ir_block_remove(b, i--);
    }
    return false;
}

/* What a role's tile loop needs. */
typedef struct Tiles {
    const Block *pre;          /* the ops before the roles (allocations moved out) */
    ValId ntiles, g[3], bx, nb;
    ValId cs, trips;           /* the stage count and the trip count, as the ops before the roles made them */
    ValId qfull, qempty, qbuf; /* Q's ring, its new empty ring, its buffer */
    int qslots;                /* Q's slots: 2 where shared memory holds a second (the next tile's Q) */
    Loc loc;
} Tiles;

/* The role's ops into a loop over its tiles: the ops before the roles
 * cloned with the block ids of tile t, then the role's ops, their ring
 * slots and phases of base + the trip's index; Q's ring by the tile. */
static void tile_loop(Func *f, Block *role, int r, const Tiles *T)
{
    int n = role->nops;
    Op **ops = arena_alloc(f->mod->arena, sizeof(Op *) * (size_t)(n + 1));
    for (int i = 0; i < n; i++)
        ops[i] = role->ops[i];
    role->nops = 0;
    Builder rb = ir_builder_at_end(f, role);
    rb.loc = T->loc;
    ValId c0 = cst(&rb, 0), c1 = cst(&rb, 1);
    ValId bounds[3] = { c0, T->ntiles, c1 };
    Op *lp = ws_role_loop(f, role, T->loc, bounds, &c0, 1);
    Block *body = &lp->regions[0];
    ValId nt = body->args[0], base = body->args[1];
    Builder b = ir_builder_at_end(f, body);
    b.loc = T->loc;
    ValId t = bin(&b, OP_ADD, T->bx, bin(&b, OP_MUL, nt, T->nb));
    ValId id[3] = { bin(&b, OP_REM, t, T->g[0]), bin(&b, OP_REM, bin(&b, OP_DIV, t, T->g[0]), T->g[1]),
                    bin(&b, OP_DIV, t, bin(&b, OP_MUL, T->g[0], T->g[1])) };
    WsTrip q = ws_trip_of(&b, nt, T->qslots > 1 ? cst(&b, T->qslots) : c1, c1);
    ValMap m = pass_valmap_new(f, f->mod->arena);
    for (int i = 0; i < T->pre->nops; i++) {
        const Op *op = T->pre->ops[i];
        if (op->code == OP_BLOCKID || op->code == OP_NBLOCKS)
            pass_valmap_set(&m, op->res[0], op->code == OP_BLOCKID ? id[op->iattr[0]] : T->g[op->iattr[0]]);
        else
            pass_clone_op(f, op, &m, body);
    }
    Remap rm = { &m };
    Based bs = { pass_valmap_get(&m, T->cs), NULL, 0, 0, f->mod->arena };
    int first = body->nops;
    for (int i = 0; i < n; i++) {
        ir_walk_op(f, ops[i], remap_visit, &rm);
        ir_walk_op(f, ops[i], based_visit, &bs);
        ir_block_append(f, body, ops[i]);
    }
    for (int i = first; i < body->nops; i++)   /* placed first: the uses are found from the kernel's body */
        if (retile_id(f, body->ops[i], id, T->g))
            ir_block_remove(body, i--);
    for (int i = 0; i < bs.n; i++) {   /* rem x, S / div x, S -> of base + x */
        Builder a = ir_builder_before(f, bs.ops[i]);
        a.loc = bs.ops[i]->loc;
        bs.ops[i]->args[0] = bin(&a, OP_ADD, base, bs.ops[i]->args[0]);
    }
    int last = -1;   /* the last op holding ring traffic: the trip loop, or the drain after it */
    int qlast = -1;  /* the last op waiting for a product that reads Q */
    for (int i = 0; i < body->nops; i++) {
        Op *op = body->ops[i];
        if (holds_rings(f, op))
            last = i;
        QWait qw = { T->qbuf, false };
        if (T->qbuf && (ir_walk_op(f, op, qwait_visit, &qw), qw.found))
            qlast = i;
        if (!T->qfull)
            continue;
        if (op->code == OP_MBAR_EXPECT && op->args[0] == T->qfull) {
            Builder w = ir_builder_before(f, op);
            w.loc = op->loc;
            ws_ring_op(&w, OP_MBAR_WAIT, T->qempty, q.slot, bin(&w, OP_XOR, q.phase, c1));
            op->args[1] = q.slot;
            i = ir_block_index_of(body, op);
        } else if (op->code == OP_TMA_LOAD && op->args[2] == T->qfull) {
            op->args[1] = op->args[3] = q.slot;
        } else if (op->code == OP_MBAR_WAIT && op->args[0] == T->qfull) {
            op->args[1] = q.slot;
            op->args[2] = q.phase;
        } else if (op->code == OP_SMEM_LOAD && op->args[0] == T->qbuf) {
            op->args[1] = q.slot;
        }
    }
    if (r > 0 && T->qfull) {   /* the consumers release Q's slot after their last product that reads it */
        int at = qlast >= 0 ? qlast : last;
        Builder a = at + 1 < body->nops ? ir_builder_before(f, body->ops[at + 1]) : ir_builder_at_end(f, body);
        a.loc = T->loc;
        ws_ring_op(&a, OP_MBAR_ARRIVE, T->qempty, q.slot, 0);
    }
    Builder e = ir_builder_at_end(f, body);
    e.loc = T->loc;
    ValId next = bin(&e, OP_ADD, base, pass_valmap_get(&m, T->trips));
    build0(&e, OP_YIELD, &next, 1);
    drop_dead(f, body);
}

static ValId q_buffer(const Op *ws, ValId qfull)
{
    const Block *p = &ws->regions[0];
    for (int i = 0; i < p->nops; i++)
        if (p->ops[i]->code == OP_TMA_LOAD && p->ops[i]->args[2] == qfull)
            return p->ops[i]->args[0];
    return 0;
}

static bool alloc_visit(Func *f, Op *op, void *ctx)
{
    if (op->code == OP_SMEM_ALLOC || op->code == OP_MBAR_ALLOC)
        *(int64_t *)ctx += tile_bytes(ir_type(f, op->res[0]));
    return true;
}

/* Q's slots: a second where the block's shared memory (its share of the
 * SM's, several blocks an SM) holds it beside every other buffer and the
 * epilogue's staging, so that the producer loads the next tile's Q while
 * this tile's trips run. */
static int q_slots(const PassCtx *ctx, Func *f, const Op *ws, ValId qbuf)
{
    if (!qbuf)
        return 1;
    int64_t alloc = 0, staging = 0;
    ir_walk(f, &f->body, alloc_visit, &alloc);
    ir_walk(f, &f->body, ws_staging_visit, &staging);
    int64_t slot = tile_bytes(ir_type(f, qbuf)) + 2 * WS_MBAR_BYTES;
    return alloc + staging + slot + WS_ALIGN_SLACK <= ws_block_smem(ctx, ir_ws_blocks(ws)) ? 2 : 1;
}

static int persist(PassCtx *ctx, Func *f, Op *ws, ValId cs, ValId trips, ValId qfull)
{
    Block *top = &f->body;
    Op *gy = ir_block_yield(&f->grid);
    Tiles T;
    memset(&T, 0, sizeof T);
    T.cs = cs, T.trips = trips, T.qfull = qfull, T.loc = ws->loc;
    T.qbuf = qfull ? q_buffer(ws, qfull) : 0;
    T.qslots = q_slots(ctx, f, ws, T.qbuf);
    if (T.qslots > 1) {
        ir_type(f, T.qbuf)->shape[0] = T.qslots;
        ir_type(f, qfull)->shape[0] = T.qslots;
    }
    /* The allocations first; the other ops before the roles become each
     * tile's (cloned into each role's tile loop, then removed). */
    int nalloc = 0;
    for (int i = 0; top->ops[i] != ws; i++)
        if (top->ops[i]->code == OP_SMEM_ALLOC || top->ops[i]->code == OP_MBAR_ALLOC) {
            Op *op = top->ops[i];
            ir_block_remove(top, i);
            ir_block_insert(f, top, nalloc++, op);
        }
    Block pre = { 0 };
    pre.nops = ir_block_index_of(top, ws) - nalloc;
    pre.ops = arena_alloc(f->mod->arena, sizeof(Op *) * (size_t)(pre.nops + 1));
    for (int i = 0; i < pre.nops; i++) {
        pre.ops[i] = top->ops[nalloc];
        ir_block_remove(top, nalloc);
    }
    T.pre = &pre;
    /* Before the roles: Q's empty ring, the grid's sizes, the block's tiles. */
    Builder b = ir_builder_before(f, ws);
    b.loc = ws->loc;
    T.qempty = qfull ? ws_new_ring(&b, T.qslots, "empty") : 0;
    ValMap gm = pass_valmap_new(f, f->mod->arena);
    Block gb = { 0 };
    for (int i = 0; i + 1 < f->grid.nops; i++)
        pass_clone_op(f, f->grid.ops[i], &gm, &gb);
    for (int i = 0; i < gb.nops; i++)
        ir_block_insert(f, top, ir_block_index_of(top, ws), gb.ops[i]);
    b = ir_builder_before(f, ws);
    b.loc = ws->loc;
    for (int i = 0; i < 3; i++)
        T.g[i] = pass_valmap_get(&gm, gy->args[i]);
    ValId total = bin(&b, OP_MUL, bin(&b, OP_MUL, T.g[0], T.g[1]), T.g[2]);
    Type i32 = type_scalar(DT_I32);
    Op *bxo = ir_build(&b, OP_BLOCKID, NULL, 0, &i32, 1);
    Op *nbo = ir_build(&b, OP_NBLOCKS, NULL, 0, &i32, 1);
    bxo->iattr[0] = nbo->iattr[0] = 0;
    T.bx = bxo->res[0], T.nb = nbo->res[0];
    T.ntiles = bin(&b, OP_DIV, bin(&b, OP_SUB, bin(&b, OP_ADD, total, T.nb), bin(&b, OP_ADD, T.bx, cst(&b, 1))),
                   T.nb);
    for (int r = 0; r < ws->nregions; r++)
        tile_loop(f, &ws->regions[r], r, &T);
    drop_dead(f, top);
    Builder g = ir_builder_before(f, gy);
    g.loc = gy->loc;
    ValId gt = bin(&g, OP_MUL, bin(&g, OP_MUL, gy->args[0], gy->args[1]), gy->args[2]);
    ValId sms;
    if (ctx->sms > 0) {
        sms = ir_const_int(&g, i32, ctx->sms * ir_ws_blocks(ws));
    } else {   /* the device's SM count, asked by the runtime at launch */
        sms = ir_build(&g, OP_NUMSMS, NULL, 0, &i32, 1)->res[0];
        if (ir_ws_blocks(ws) > 1)
            sms = bin(&g, OP_MUL, sms, ir_const_int(&g, i32, ir_ws_blocks(ws)));
    }
    gy->args[0] = bin(&g, OP_MIN, sms, gt);
    gy->args[1] = gy->args[2] = ir_const_int(&g, i32, 1);
    return T.qslots;
}

void ws_make_persistent(PassCtx *ctx, Func *f, Op *ws, ValId cs, ValId trips, ValId qfull, const char *at)
{
    const char *why = persist_problem(ctx, f, ws, cs);
    if (why) {
        pass_note(ctx, "@%s: loop at %s: one tile a block (not persistent: %s)", f->name, at, why);
        return;
    }
    int qslots = persist(ctx, f, ws, cs, trips, qfull);
    int per_sm = ir_ws_blocks(ws);
    const char *count = ctx->sms > 0 ? arena_printf(f->mod->arena, "%lld", (long long)ctx->sms * per_sm)
                      : per_sm > 1      ? arena_printf(f->mod->arena, "num_sms() x %d", per_sm)
                                        : "num_sms()";
    pass_note(ctx, "@%s: loop at %s: persistent: min(%s, tiles) blocks%s, each role looping over the block's tiles "
              "(t = block.x + n * num_blocks.x); the rings run on across tiles (slots and phases of the trips "
              "before this tile's plus the trip's)%s", f->name, at, count,
              per_sm > 1 ? arena_printf(f->mod->arena, " (%d an SM)", per_sm) : "",
              !qfull ? ", so the producer fills the next tile's stages under this tile's epilogue"
              : qslots > 1 ? ", Q on a ring of two slots indexed by the tile that the consumers release after the "
                             "wait of their last product reading it, so the producer loads the next tile's Q while "
                             "this tile's trips run, and its first K and V under this tile's last products"
                           : ", Q on a ring of one slot per tile that the consumers release after the wait of their "
                             "last product reading it, so the producer loads the next tile's Q, K and V under this "
                             "tile's last products and epilogue (a second slot does not fit the shared memory)"
);
}
