/* warp_specialize_seam.c - the seam between a persistent attention's
 * tiles: the last second product of a tile (O += P V of its last trip)
 * is issued in the next tile's first trip, beside that tile's first
 * product, where the pipelined form issues a product of zeros; the
 * softmax of that trip runs while both fly, and the tile's epilogue
 * follows there. Without it every tile ends with its last product
 * waited alone and begins with a product of zeros: two products' time a
 * tile in which the tensor cores do nothing useful.
 *
 * Needs: a consumer role that warp_specialize_persist.c made a loop over
 * tiles around the pipelined trip loop of warp_specialize_chain.c: the
 * tile's body holds the trip loop (carrying the second product's
 * accumulator O and its A operand P, whose product is issued a trip late
 * with the ring's slot of base + max(it - 1, 0)), then the drain (`if T
 * > 0`: the last trip's product, its result standing for O), then the
 * epilogue, then `yield base + T`; the trip count T the same in every
 * tile (it does not read the tile's index). Any other form is left as it
 * is, and the report says why.
 *
 * The form (G = base + it, the trip's index among all the block's trips):
 *   for n in 0 .. NT carrying (base, the trip loop's values of the tile
 *                              before: O, P, the row statistics) {
 *     the tile's ops before the trip loop (Q's wait)
 *     for it in 0 .. T carrying (the values, O and P from the tile before):
 *       ...; the second product of trip max(G - 1, 0): its wait under
 *       `if G != 1`, its release under `if G > 0`
 *       %o = dot_wait (the second product)
 *       if it == 0 {
 *         if base > 0 { the epilogue of tile n - 1 on %o }
 *         yield O's first value
 *       } else { yield %o }   (the rescale reads this)
 *     Q's release
 *     if T <= 0 { the epilogue of tile n, as before }
 *     yield base + T, the trip loop's results
 *   }
 *   if total > 0 { the drain of trip total - 1; the epilogue of tile NT - 1 }
 * Every ring keeps its slots and phases: the second product's ring is
 * taken one trip late over all the block's trips (G), as the pipelined
 * form takes it over one tile's, and the drain runs once, after the last
 * tile (the static checker proves this form, ir/protocol.c). The first
 * trip of the block still issues its product of zeros (there is no tile
 * before it). Results are bit-identical for every trip count: a tile's O
 * after its first trip is O's first value rescaled, as before, whatever
 * the product of its first trip returned.
 */
#include "warp_specialize_int.h"

#include <string.h>

enum { SLICE_DEPTH = 64 };

static bool is_arg_of(const Block *b, ValId v)
{
    for (int i = 0; i < b->nargs; i++)
        if (b->args[i] == v)
            return true;
    return false;
}

/* Does v (in block B's scope) depend on an argument of B? */
static bool reads_args(Func *f, const Block *B, ValId v, int depth)
{
    if (is_arg_of(B, v))
        return true;
    const Op *d = ir_val(f, v)->def;
    if (!d || d->parent != B || depth > SLICE_DEPTH)
        return depth > SLICE_DEPTH;
    for (int i = 0; i < d->nargs; i++)
        if (reads_args(f, B, d->args[i], depth + 1))
            return true;
    return false;
}

/* Clone into dst the pure ops of B's top level that v needs, through m.
 * A value of B that reads none of B's arguments and is defined
 * before index `visible` stands for itself (dst sees it). False when v needs an impure op or an
 * argument of B that m does not map. */
static bool slice(Func *f, const Block *B, ValId v, ValMap *m, Block *dst, int visible, int depth)
{
    if (pass_valmap_get(m, v) != v)
        return true;
    if (is_arg_of(B, v))
        return false;
    Op *d = ir_val(f, v)->def;
    if (!d || d->parent != B)
        return true;
    if (visible && ir_block_index_of(B, d) < visible && !reads_args(f, B, v, 0))
        return true;
    if (depth > SLICE_DEPTH || d->nregions || !(op_info[d->code].flags & OPF_PURE))
        return false;
    for (int i = 0; i < d->nargs; i++)
        if (!slice(f, B, d->args[i], m, dst, visible, depth + 1))
            return false;
    pass_clone_op(f, d, m, dst);
    return true;
}

typedef struct SliceAll { Func *f; const Block *B; ValMap *m; Block *dst; int visible; bool ok; } SliceAll;

static bool slice_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    SliceAll *s = ctx;
    for (int i = 0; i < op->nargs && s->ok; i++)
        s->ok = slice(s->f, s->B, op->args[i], s->m, s->dst, s->visible, 0);
    return s->ok;
}

/* The epilogue ops (ops[0 .. n), of B's top level) cloned into dst through
 * m, each after the ops of B it needs; false when one needs what cannot
 * be cloned (nothing is then appended that matters: the caller gives up
 * before any of it is used). */
static bool clone_epilogue(Func *f, const Block *B, Op **ops, int n, ValMap *m, Block *dst, int visible)
{
    for (int i = 0; i < n; i++) {
        SliceAll s = { f, B, m, dst, visible, true };
        ir_walk_op(f, ops[i], slice_visit, &s);
        if (!s.ok)
            return false;
        pass_clone_op(f, ops[i], m, dst);
    }
    return true;
}

/* The ops of tmp moved into b before index at. */
static void move_before(Func *f, Block *tmp, Block *b, int at)
{
    for (int i = 0; i < tmp->nops; i++)
        ir_block_insert(f, b, at + i, tmp->ops[i]);
    tmp->nops = 0;
}

/* max(v - 1, 0)? */
static bool before_of(Func *f, ValId v, ValId it)
{
    const Op *d = ir_val(f, v)->def;
    if (!d || d->code != OP_MAX || d->nargs != 2)
        return false;
    const Op *s = ir_val(f, d->args[0])->def, *z = ir_val(f, d->args[1])->def;
    return s && s->code == OP_SUB && s->args[0] == it && z && z->code == OP_CONST && z->iattr[0] == 0;
}

/* cond = cmp(v, k) {pred}? */
static bool cmp_of(Func *f, ValId cond, ValId v, CmpPred pred, int64_t k)
{
    const Op *d = ir_val(f, cond)->def;
    if (!d || d->code != OP_CMP || d->nargs != 2 || d->iattr[0] != pred || d->args[0] != v)
        return false;
    const Op *c = ir_val(f, d->args[1])->def;
    return c && c->code == OP_CONST && c->iattr[0] == k;
}

static bool uses_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    ValId *v = ctx;
    for (int i = 0; i < op->nargs && *v; i++)
        if (op->args[i] == *v)
            *v = 0;
    return *v != 0;
}

typedef struct Swap { ValId from, to; const Op *skip; } Swap;

static bool swap_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    Swap *s = ctx;
    if (op == s->skip)
        return false;
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i] == s->from)
            op->args[i] = s->to;
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

static bool has_rings(Func *f, Op *op)
{
    bool any = false;
    for (int g = 0; g < op->nregions && !any; g++)
        ir_walk(f, &op->regions[g], ring_visit, &any);
    return any;
}

/* Does an op read v or a result of ops[0 .. n)? */
typedef struct Reads { Op **ops; int n; ValId v; bool found; } Reads;

static bool reads_visit(Func *f, Op *op, void *ctx)
{
    Reads *r = ctx;
    for (int a = 0; a < op->nargs && !r->found; a++) {
        const Op *d = ir_val(f, op->args[a])->def;
        r->found = op->args[a] == r->v;
        for (int i = 0; i < r->n && !r->found && d; i++)
            r->found = d == r->ops[i];
    }
    return !r->found;
}

/* The parts of the consumer's tile body the seam needs. */
typedef struct Seam {
    Op *tl, *tr, *dr;          /* the tile loop, the trip loop, the drain */
    Block *B;                  /* the tile loop's body */
    Op **epi; int nepi;        /* the epilogue: B's ops after the drain but the yield's */
    Op *pv, *dw;               /* the second product in the trip loop, and its dot_wait */
    int oi, pi;                /* the trip loop's carried O and P (indices of its values) */
    ValId T;                   /* the trip count */
} Seam;

typedef struct Stored { int64_t bytes; } Stored;

static bool stored_visit(Func *f, Op *op, void *ctx)
{
    if (op->code == OP_STORE && op->nargs)
        ((Stored *)ctx)->bytes += tile_bytes(ir_type(f, op->args[op->nargs - 1]));
    return true;
}

/* Why the consumer role cannot take the seam (NULL: it can; s filled).
 * r: the roles' registers, for the room the tile before's epilogue needs
 * in the first trip beside the trip's own values. */
static const char *find(Func *f, Block *role, const ChainRoles *r, Seam *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < role->nops; i++)
        if (role->ops[i]->code == OP_FOR && has_rings(f, role->ops[i]))
            s->tl = role->ops[i];
    if (!s->tl || s->tl->nres != 1 || role->ops[role->nops - 1] != s->tl)
        return "the consumers do not loop over tiles";
    Block *B = s->B = &s->tl->regions[0];
    int tri = -1, dri = -1;
    for (int i = 0; i < B->nops; i++) {
        Op *op = B->ops[i];
        if (tri < 0 && op->code == OP_FOR && has_rings(f, op))
            tri = i;
        else if (tri >= 0 && op->code == OP_IF && op->nres == 1 && has_rings(f, op))
            dri = i;
    }
    if (tri < 0 || dri < 0)
        return "the tile has no drain after its trip loop (the second product is not pipelined)";
    s->tr = B->ops[tri], s->dr = B->ops[dri];
    s->T = s->tr->args[1];
    if (reads_args(f, B, s->T, 0))
        return "the trip count differs between tiles";
    if (!cmp_of(f, s->dr->args[0], s->T, CMP_GT, 0))
        return "the drain is not `if T > 0`";
    Block *tb = &s->tr->regions[0];
    for (int i = 0; i < tb->nops && !s->pv; i++) {
        Op *op = tb->ops[i];
        if (op->code == OP_DOT_ASYNC && op->nargs == 3 && is_arg_of(tb, op->args[0]) && is_arg_of(tb, op->args[2]))
            s->pv = op;
    }
    if (!s->pv)
        return "no product in the trip loop accumulates onto a carried value";
    for (int i = 0; i < tb->nops && !s->dw; i++)
        if (tb->ops[i]->code == OP_DOT_WAIT && tb->ops[i]->args[0] == s->pv->res[0] && tb->ops[i]->iattr[0] == 0)
            s->dw = tb->ops[i];
    if (!s->dw)
        return "the second product is not waited for in its trip";
    for (int i = 1; i < tb->nargs; i++) {
        if (tb->args[i] == s->pv->args[2])
            s->oi = i - 1;
        if (tb->args[i] == s->pv->args[0])
            s->pi = i - 1;
    }
    for (int i = 0; i < s->tr->nres; i++) {   /* the first values: constants, or from outside the tile */
        ValId v = s->tr->args[3 + i];
        const Op *d = ir_val(f, v)->def;
        if (reads_args(f, B, v, 0) || (d && d->parent == B && d->code != OP_CONST))
            return "the trip loop's first values are not constants";
    }
    const Op *y = B->ops[B->nops - 1];
    const Op *yd = ir_val(f, y->args[0])->def;
    s->epi = arena_alloc(f->mod->arena, sizeof(Op *) * (size_t)B->nops);
    for (int i = dri + 1; i + 1 < B->nops; i++)
        if (B->ops[i] != yd)
            s->epi[s->nepi++] = B->ops[i];
    for (int i = 0; i < s->nepi; i++)
        if (has_rings(f, s->epi[i]))
            return "the epilogue takes ring operations";
    /* Only the ops that read O (through the drain's result) wait for the
     * next tile; the rest (LSE) stays at the tile's end, so that the row
     * maximum is not held through the next tile's trips. */
    int m = 0;
    for (int i = 0; i < s->nepi; i++) {
        Reads rd = { s->epi, m, s->dr->res[0], false };
        ir_walk_op(f, s->epi[i], reads_visit, &rd);
        if (rd.found)
            s->epi[m++] = s->epi[i];
    }
    s->nepi = m;
    if (!m)
        return "the epilogue does not read the second product's result";
    /* In the first trip the tile before's O, the values it stores, this
     * trip's P and the softmax's working registers live together. */
    Stored st = { 0 };
    for (int i = 0; i < s->nepi; i++)
        ir_walk_op(f, s->epi[i], stored_visit, &st);
    int64_t threads = (int64_t)r->consumers * WG_THREADS;
    int64_t need = r->o_regs + (st.bytes / 4 + threads - 1) / threads + r->p_regs + WS_PIPE_HEADROOM;
    if (need > r->cons_regs)
        return arena_printf(f->mod->arena, "the tile before's O (%lld registers a consumer thread), the values its "
                            "epilogue stores (%lld) and P (%lld) would leave the softmax fewer than %d of the %d "
                            "registers", (long long)r->o_regs, (long long)((st.bytes / 4 + threads - 1) / threads),
                            (long long)r->p_regs, WS_PIPE_HEADROOM, r->cons_regs);
    if (yd && yd->parent == B && ir_block_index_of(B, yd) > dri) {
        for (int i = 0; i < yd->nargs; i++) {
            const Op *a = ir_val(f, yd->args[i])->def;
            if (a && a->parent == B && ir_block_index_of(B, a) > dri)
                return "the tile's count reads the epilogue";
        }
    }
    return NULL;
}

/* The trip loop's lagged ring operands of base + max(it - 1, 0) become
 * max(G - 1, 0), and its guards of the trip before (`it != 1`, `it > 0`)
 * guards of G. */
static void global_lag(Func *f, Seam *s, ValId base)
{
    Block *tb = &s->tr->regions[0];
    ValId it = tb->args[0];
    Builder b = ir_builder_before(f, tb->ops[0]);
    b.loc = s->tr->loc;
    ValId g = bin(&b, OP_ADD, base, it);
    ValId gl = bin(&b, OP_MAX, bin(&b, OP_SUB, g, cst(&b, 1)), cst(&b, 0));
    for (int i = 0; i < tb->nops; i++) {
        Op *op = tb->ops[i];
        if (op->code == OP_ADD && op->nargs == 2 && op->args[0] == base && before_of(f, op->args[1], it)) {
            ir_replace_all_uses(f, op->res[0], gl);
            continue;
        }
        if (op->code != OP_IF || !has_rings(f, op))
            continue;
        Builder c = ir_builder_before(f, op);
        c.loc = op->loc;
        if (cmp_of(f, op->args[0], it, CMP_NE, 1))
            op->args[0] = cmp_pred(&c, CMP_NE, g, cst(&c, 1));
        else if (cmp_of(f, op->args[0], it, CMP_GT, 0))
            op->args[0] = cmp_pred(&c, CMP_GT, g, cst(&c, 0));
    }
}

/* The drain of the block's last trip after the tile loop: the tile's
 * drain cloned through m, its ring operands of max(total - 1, 0). */
static Op *last_drain(Func *f, const Seam *s, ValMap *m, Block *role, ValId total)
{
    Op *dr = s->dr;
    Builder db = ir_builder_at_end(f, role);
    db.loc = dr->loc;
    pass_valmap_set(m, dr->args[0], cmp_pred(&db, CMP_GT, total, cst(&db, 0)));
    pass_valmap_set(m, s->T, total);
    ValId last = bin(&db, OP_MAX, bin(&db, OP_SUB, total, cst(&db, 1)), cst(&db, 0));
    Block *dt = &dr->regions[0];
    for (int i = 0; i < dt->nops; i++) {
        Op *ring = dt->ops[i];
        if (ring->code == OP_IF && ring->regions[0].nops)
            ring = ring->regions[0].ops[0];
        if (ring->code != OP_MBAR_WAIT && ring->code != OP_MBAR_ARRIVE && ring->code != OP_SMEM_LOAD)
            continue;
        for (int a = 1; a < ring->nargs && a < 3; a++) {   /* rem(x, S), and(div(x, S), 1) */
            const Op *d = ir_val(f, ring->args[a])->def;
            if (!d || pass_valmap_get(m, ring->args[a]) != ring->args[a])
                continue;
            const Op *dv = d->code == OP_AND ? ir_val(f, d->args[0])->def : NULL;
            ValId S = d->code == OP_REM ? d->args[1] : dv && dv->code == OP_DIV ? dv->args[1] : 0;
            const Op *sd = S ? ir_val(f, S)->def : NULL;
            if (!sd || sd->code != OP_CONST)
                continue;
            ValId Sc = cst(&db, sd->iattr[0]);
            pass_valmap_set(m, ring->args[a], d->code == OP_REM ? bin(&db, OP_REM, last, Sc)
                                              : bin(&db, OP_AND, bin(&db, OP_DIV, last, Sc), cst(&db, 1)));
        }
    }
    Block tmp = { 0 };
    SliceAll sa = { f, s->B, m, &tmp, 0, true };
    ir_walk_op(f, dr, slice_visit, &sa);
    move_before(f, &tmp, role, role->nops);
    return pass_clone_op(f, dr, m, role);
}

/* The index in trip body tb of the first op after dw that reads its
 * result (the rescale), or the yield's. */
static int first_use(Func *f, Block *tb, const Op *dw)
{
    for (int i = ir_block_index_of(tb, dw) + 1; i < tb->nops; i++) {
        ValId v = dw->res[0];
        for (int a = 0; a < tb->ops[i]->nargs; a++)
            if (tb->ops[i]->args[a] == v)
                return i;
        bool deep = false;
        for (int g = 0; g < tb->ops[i]->nregions && !deep; g++) {
            ValId w = v;
            ir_walk(f, &tb->ops[i]->regions[g], uses_visit, &w);
            deep = w == 0;
        }
        if (deep)
            return i;
    }
    return tb->nops - 1;
}

/* The pure ops after `at` in block b that read nothing computed at or
 * after it moved before it (P's conversion to 16 bits: the tile before's
 * epilogue then runs beside P's 16-bit registers, not its f32 ones). */
static void hoist_before(Func *f, Block *b, Op *at)
{
    for (int i = ir_block_index_of(b, at) + 1; i + 1 < b->nops; i++) {
        Op *op = b->ops[i];
        if (op->nregions || !(op_info[op->code].flags & OPF_PURE))
            continue;
        int lim = ir_block_index_of(b, at);
        bool ok = true;
        for (int a = 0; a < op->nargs && ok; a++) {
            const Op *d = ir_val(f, op->args[a])->def;
            ok = !d || d->parent != b || ir_block_index_of(b, d) < lim;
        }
        if (!ok)
            continue;
        ir_block_remove(b, i);
        ir_block_insert(f, b, lim, op);
    }
}

/* The seam on the consumer role of ws; why not, or NULL. Nothing is
 * changed unless it succeeds (the checks and a dry run of the epilogue's
 * clone come first). */
static const char *seam(Func *f, Op *ws, const ChainRoles *r, Seam *s)
{
    Block *role = &ws->regions[1];
    const char *why = find(f, role, r, s);
    if (why)
        return why;
    Block *B = s->B;
    Op *tl = s->tl, *tr = s->tr, *dr = s->dr;
    int k = tr->nres;
    Loc loc = tl->loc;
    {   /* the epilogue can be computed again for another tile */
        Block scratch = { 0 };
        Builder sb = ir_builder_at_end(f, &scratch);
        ValId one = cst(&sb, 1);
        ValMap m = pass_valmap_new(f, f->mod->arena);
        pass_valmap_set(&m, B->args[0], one);
        for (int i = 0; i < k; i++)
            pass_valmap_set(&m, tr->res[i], one);
        pass_valmap_set(&m, dr->res[0], one);
        if (!clone_epilogue(f, B, s->epi, s->nepi, &m, &scratch, 0))
            return "the epilogue needs values of the tile that cannot be computed again";
    }
    ValId n = B->args[0], base = B->args[1];
    /* The new tile loop carries base, then the trip loop's values (their
     * first values cloned before it). */
    ValId *inits = arena_alloc(f->mod->arena, sizeof(ValId) * (size_t)(k + 1));
    inits[0] = tl->args[3];
    ValMap cm = pass_valmap_new(f, f->mod->arena);
    Block consts = { 0 };
    for (int i = 0; i < k; i++) {
        ValId v = tr->args[3 + i];
        const Op *d = ir_val(f, v)->def;
        if (d && d->parent == B) {
            pass_clone_op(f, d, &cm, &consts);
            v = pass_valmap_get(&cm, v);
        }
        inits[1 + i] = v;
    }
    move_before(f, &consts, role, ir_block_index_of(role, tl));
    ValId bounds[3] = { tl->args[0], tl->args[1], tl->args[2] };
    Block hold = { 0 };
    Op *tl2 = ws_role_loop(f, &hold, loc, bounds, inits, k + 1);
    Block *B2 = &tl2->regions[0];
    ValId *prev = &B2->args[2];
    /* the trip loop starts from the tile before's O and P */
    ValId o_first = tr->args[3 + s->oi];
    tr->args[3 + s->oi] = prev[s->oi];
    tr->args[3 + s->pi] = prev[s->pi];
    global_lag(f, s, base);
    /* trip 0: the tile before's epilogue on the second product's result;
     * O's first value for the rescale */
    Block *tb = &tr->regions[0];
    int use = first_use(f, tb, s->dw);
    Builder wb = ir_builder_before(f, tb->ops[use]);
    wb.loc = loc;
    Type ot = *ir_type(f, s->dw->res[0]);
    ValId first = cmp_pred(&wb, CMP_EQ, tb->args[0], cst(&wb, 0));
    Op *iff = ir_build(&wb, OP_IF, &first, 1, &ot, 1);
    {
        Builder t = ir_builder_at_end(f, &iff->regions[0]);
        t.loc = loc;
        ValId any = cmp_pred(&t, CMP_GT, base, cst(&t, 0));
        Op *ep = build0(&t, OP_IF, &any, 1);
        Builder e = ir_builder_at_end(f, &ep->regions[0]);
        e.loc = loc;
        ValMap m = pass_valmap_new(f, f->mod->arena);
        pass_valmap_set(&m, n, bin(&e, OP_SUB, n, cst(&e, 1)));
        for (int i = 0; i < k; i++)
            pass_valmap_set(&m, tr->res[i], prev[i]);
        pass_valmap_set(&m, dr->res[0], s->dw->res[0]);
        clone_epilogue(f, B, s->epi, s->nepi, &m, &ep->regions[0], ir_block_index_of(B, tr));
        build0(&e, OP_YIELD, NULL, 0);
        Builder x = ir_builder_at_end(f, &ep->regions[1]);
        x.loc = loc;
        build0(&x, OP_YIELD, NULL, 0);
        build0(&t, OP_YIELD, &o_first, 1);
        Builder el = ir_builder_at_end(f, &iff->regions[1]);
        el.loc = loc;
        build0(&el, OP_YIELD, s->dw->res, 1);
    }
    Swap sw = { s->dw->res[0], iff->res[0], iff };
    for (int i = ir_block_index_of(tb, iff) + 1; i < tb->nops; i++)
        ir_walk_op(f, tb->ops[i], swap_visit, &sw);
    hoist_before(f, tb, iff);
    /* after the tile loop: the drain of the block's last trip and the
     * last tile's epilogue */
    ir_block_insert(f, role, ir_block_index_of(role, tl) + 1, tl2);
    ValId total = tl2->res[0];
    ValMap m = pass_valmap_new(f, f->mod->arena);
    for (int i = 0; i < k; i++)
        pass_valmap_set(&m, tr->res[i], tl2->res[1 + i]);
    Op *dr2 = last_drain(f, s, &m, role, total);
    Block *d2 = &dr2->regions[0];
    Op *dy = d2->ops[d2->nops - 1];
    ValMap me = pass_valmap_new(f, f->mod->arena);
    Builder nb = ir_builder_before(f, dy);
    nb.loc = loc;
    pass_valmap_set(&me, n, bin(&nb, OP_SUB, tl->args[1], cst(&nb, 1)));
    for (int i = 0; i < k; i++)
        pass_valmap_set(&me, tr->res[i], tl2->res[1 + i]);
    pass_valmap_set(&me, dr->res[0], dy->args[0]);
    Block etmp = { 0 };
    clone_epilogue(f, B, s->epi, s->nepi, &me, &etmp, 0);
    move_before(f, &etmp, d2, d2->nops - 1);
    /* in the tile: the drain goes; without trips the epilogue runs as
     * before, on O's first value */
    ir_block_remove(B, ir_block_index_of(B, dr));
    Builder eb = ir_builder_before(f, s->epi[0]);
    eb.loc = loc;
    ValId none = cmp_pred(&eb, CMP_LE, s->T, cst(&eb, 0));
    Op *zero = build0(&eb, OP_IF, &none, 1);
    for (int i = 0; i < s->nepi; i++) {
        ir_block_remove(B, ir_block_index_of(B, s->epi[i]));
        ir_block_append(f, &zero->regions[0], s->epi[i]);
    }
    ir_replace_all_uses(f, dr->res[0], o_first);
    Builder zt = ir_builder_at_end(f, &zero->regions[0]);
    zt.loc = loc;
    build0(&zt, OP_YIELD, NULL, 0);
    Builder ze = ir_builder_at_end(f, &zero->regions[1]);
    ze.loc = loc;
    build0(&ze, OP_YIELD, NULL, 0);
    Op *y = B->ops[B->nops - 1];
    ValId *ys = arena_alloc(f->mod->arena, sizeof(ValId) * (size_t)(k + 1));
    ys[0] = y->args[0];
    for (int i = 0; i < k; i++)
        ys[1 + i] = tr->res[i];
    ir_block_remove(B, B->nops - 1);
    Builder yb = ir_builder_at_end(f, B);
    yb.loc = y->loc;
    build0(&yb, OP_YIELD, ys, k + 1);
    /* the body into the new loop, which takes the old one's place */
    for (int i = 0; i < B->nops; i++)
        ir_block_append(f, B2, B->ops[i]);
    B->nops = 0;
    ir_replace_all_uses(f, n, B2->args[0]);
    ir_replace_all_uses(f, base, B2->args[1]);
    ir_replace_all_uses(f, tl->res[0], tl2->res[0]);
    ir_block_remove(role, ir_block_index_of(role, tl));
    drop_dead(f, B2);
    drop_dead(f, role);
    return NULL;
}

bool ws_seam(PassCtx *ctx, Func *f, Op *ws, const ChainRoles *r, const char *at)
{
    Seam s;
    const char *why = seam(f, ws, r, &s);
    if (why) {
        pass_note(ctx, "@%s: loop at %s: each tile ends with its last second product waited alone (no seam: %s)",
                  f->name, at, why);
        return false;
    }
    pass_note(ctx, "@%s: loop at %s: the seam between tiles: a tile's last second product is issued in the next "
              "tile's first trip beside its first product (in place of a product of zeros), the softmax runs while "
              "both fly, and the tile's epilogue follows there; the block's last tile drains after the loop",
              f->name, at);
    return true;
}
