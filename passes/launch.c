/* launch.c - the launch pass: how a kernel's blocks take its tiles, and how
 * a kernel with chained products writes its output tile.
 *
 * Needs: verified IR straight from the front end (a grid of block ids
 * x, y, z; the pass runs first, so that every later pass sees the tiles'
 * indices as it rewrites them).
 * Guarantees, each only where its rule holds (docs/internals.md, "launch"):
 *   longest first  a kernel whose loop trip count grows with block.x (a
 *                  causal mask: query block m reads m + 1 key blocks) on a
 *                  grid (X, Y, 1) gets the grid (G, X, Y / G): G of the Y
 *                  rows (heads) at a time, about 256 blocks, so that their
 *                  keys and values stay in L2, and within them the blocks
 *                  with the longest loops first; the short ones fill the
 *                  end of the launch;
 *   persistent     a kernel with chained products on 256-row tiles (two
 *                  warp groups taking turns) that takes no warp-specialized
 *                  roles (pass_chain_roles: warp_specialize makes those
 *                  persistent itself, carrying the rings across tiles),
 *                  without a row mask, for 1k+ query and key rows
 *                  (tilec_options.dims) on a device whose SM count is
 *                  known (target.sms): min(SMs, X * Y) blocks
 *                  looping over the tiles t = block.x, block.x + SMs, ...
 *                  (x = t % X, y = t / X); double_buffer then rotates that
 *                  loop (the next tile's copies under this one's epilogue);
 *   staged output  the output tile of a kernel with chained products
 *                  leaves through shared memory (the dead key/value
 *                  buffers) as 16-byte rows where the key loop is short:
 *                  256-row tiles, else at most 4096 keys without a row
 *                  mask, at most 16 key blocks with one (32 at D >= 128);
 *                  in a kernel that takes roles, where its grid takes
 *                  the longest tiles first (one tile a block), unless the
 *                  staging beside Q and two stages of K and V would not
 *                  fit (D = 256);
 *                  a lone product's 16-bit output tile (a GEMM's C)
 *                  when the product is in a loop.
 * The numbers behind the rules were measured on an H200 (bench/RESULTS.md).
 */
#include "passes.h"

#include "clone.h"

#include <string.h>

static Type i32(void) { return type_scalar(DT_I32); }

static ValId op2(Builder *b, OpCode c, ValId x, ValId y)
{
    ValId a[2] = { x, y };
    return ir_build1(b, c, a, 2, i32());
}

static ValId launch_value(Builder *b, OpCode c, int axis)
{
    Op *op = ir_build(b, c, NULL, 0, (Type[]){ i32() }, 1);
    op->iattr[0] = axis;
    return op->res[0];
}

/* ---- what depends on what ---- */

static int64_t const_of(const Func *f, ValId v)
{
    const Op *d = ir_val(f, v)->def;
    return d && d->code == OP_CONST && ir_type(f, v)->rank == 0 ? d->iattr[0] : -1;
}

/* Does v grow (never shrink) with block.x, through additions, products
 * with a positive constant, min and max? */
static bool grows_with_x(const Func *f, ValId v, int depth)
{
    const Op *d = v ? ir_val(f, v)->def : NULL;
    if (!d || depth > 32)
        return false;
    if (d->code == OP_BLOCKID)
        return d->iattr[0] == 0;
    if (d->code == OP_MUL) {
        for (int i = 0; i < 2; i++) {
            if (const_of(f, d->args[1 - i]) > 0 && grows_with_x(f, d->args[i], depth + 1))
                return true;
        }
        return false;
    }
    if (d->code == OP_ADD || d->code == OP_MIN || d->code == OP_MAX)
        return grows_with_x(f, d->args[0], depth + 1) || grows_with_x(f, d->args[1], depth + 1);
    return false;
}

/* Does v depend on the block id of `axis` at all? */
static bool uses_axis(const Func *f, ValId v, int axis, int depth)
{
    const Op *d = v ? ir_val(f, v)->def : NULL;
    if (!d || depth > 64)
        return false;
    if (d->code == OP_BLOCKID || d->code == OP_NBLOCKS)
        return d->iattr[0] == axis;
    for (int i = 0; i < d->nargs; i++)
        if (uses_axis(f, d->args[i], axis, depth + 1))
            return true;
    return false;
}

typedef struct LaunchScan { bool triangle; } LaunchScan;

static bool loop_visit(Func *f, Op *op, void *ctx)
{
    LaunchScan *ls = ctx;
    if (op->code == OP_FOR && grows_with_x(f, op->args[1], 0) && !uses_axis(f, op->args[1], 1, 0))
        ls->triangle = true;
    return true;
}

/* ---- rewriting the block ids ---- */

typedef struct IdOps { Op *ops[64]; int n; } IdOps;

static bool id_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    IdOps *ids = ctx;
    if ((op->code == OP_BLOCKID || op->code == OP_NBLOCKS) && ids->n < (int)TC_COUNTOF(ids->ops))
        ids->ops[ids->n++] = op;
    return ids->n < (int)TC_COUNTOF(ids->ops);
}

/* Every use of the kernel's former block ids and counts (collected before
 * the new ones are built) becomes the value given per axis. */
static void replace_ids(Func *f, const IdOps *ids, const ValId bid[3], const ValId nb[3])
{
    for (int i = 0; i < ids->n; i++) {
        const Op *op = ids->ops[i];
        int ax = (int)op->iattr[0];
        ir_replace_all_uses(f, op->res[0], op->code == OP_BLOCKID ? bid[ax] : nb[ax]);
    }
}

/* Move the body's ops from `from` on into a new block. */
static void take_ops(Func *f, int from, Block *dst)
{
    for (int i = from; i < f->body.nops; i++)
        ir_block_append(f, dst, f->body.ops[i]);
    f->body.nops = from;
}

/* Grid (X, Y, 1) -> (G, X, Y / G), G = divisor(Y, max(1, 256 / X)). */
static void longest_first(Func *f, Op *gy, const IdOps *ids)
{
    Builder g = ir_builder_before(f, gy);
    ValId gx_ = gy->args[0], gy_ = gy->args[1];
    ValId one = ir_const_int(&g, i32(), 1);
    ValId per = op2(&g, OP_DIV, ir_const_int(&g, i32(), 256), op2(&g, OP_MAX, gx_, one));   /* X may be 0 */
    ValId grp = op2(&g, OP_DIVISOR, gy_, op2(&g, OP_MAX, per, one));
    ValId nz = op2(&g, OP_DIV, gy_, grp);
    gy->args[0] = grp;
    gy->args[1] = gx_;
    gy->args[2] = nz;

    Block pre = { 0 };
    Builder b = ir_builder_at_end(f, &pre);
    b.loc = f->loc;
    ValId bx = launch_value(&b, OP_BLOCKID, 0), by = launch_value(&b, OP_BLOCKID, 1);
    ValId bz = launch_value(&b, OP_BLOCKID, 2), nbx = launch_value(&b, OP_NBLOCKS, 0);
    ValId nby = launch_value(&b, OP_NBLOCKS, 1), nbz = launch_value(&b, OP_NBLOCKS, 2);
    ValId one_b = ir_const_int(&b, i32(), 1), zero = ir_const_int(&b, i32(), 0);
    ValId bid[3] = { op2(&b, OP_SUB, op2(&b, OP_SUB, nby, one_b), by), op2(&b, OP_ADD, op2(&b, OP_MUL, bz, nbx), bx),
                     zero };
    ValId nb[3] = { nby, op2(&b, OP_MUL, nbx, nbz), one_b };
    replace_ids(f, ids, bid, nb);
    for (int i = pre.nops - 1; i >= 0; i--)
        ir_block_insert(f, &f->body, 0, pre.ops[i]);
}

/* Grid (X, Y, 1) -> (min(SMs, X * Y), 1, 1), the body a loop over the
 * tiles t = block.x, block.x + num_blocks.x, ... < X * Y, with x = t % X
 * and y = t / X. */
static void make_persistent(Func *f, Op *gy, int64_t sms, const IdOps *ids)
{
    Block rest = { 0 };
    take_ops(f, 0, &rest);
    /* X and Y computed again in the body, from the dims, as the grid does. */
    ValMap m = pass_valmap_new(f, f->mod->arena);
    for (int i = 0; i + 1 < f->grid.nops; i++)
        pass_clone_op(f, f->grid.ops[i], &m, &f->body);
    ValId X = pass_valmap_get(&m, gy->args[0]), Y = pass_valmap_get(&m, gy->args[1]);
    Builder b = ir_builder_at_end(f, &f->body);
    b.loc = f->loc;
    ValId total = op2(&b, OP_MUL, X, Y);
    ValId lh[3] = { launch_value(&b, OP_BLOCKID, 0), total, launch_value(&b, OP_NBLOCKS, 0) };
    Op *loop = ir_build(&b, OP_FOR, lh, 3, NULL, 0);
    Block *lb = ir_op_region(loop, 0);
    ValId t = ir_block_add_arg(f, lb, i32(), "t");
    Builder in = ir_builder_at_end(f, lb);
    in.loc = f->loc;
    ValId zero = ir_const_int(&in, i32(), 0), one = ir_const_int(&in, i32(), 1);
    ValId bid[3] = { op2(&in, OP_REM, t, X), op2(&in, OP_DIV, t, X), zero };
    ValId nb[3] = { X, Y, one };
    for (int i = 0; i < rest.nops; i++)
        ir_block_append(f, lb, rest.ops[i]);
    Builder end = ir_builder_at_end(f, lb);
    ir_build(&end, OP_YIELD, NULL, 0, NULL, 0);
    replace_ids(f, ids, bid, nb);

    Builder g = ir_builder_before(f, gy);
    ValId gtotal = op2(&g, OP_MUL, gy->args[0], gy->args[1]);
    gy->args[0] = op2(&g, OP_MIN, ir_const_int(&g, i32(), sms), gtotal);
    gy->args[1] = gy->args[2];
}

/* ---- the output tile ---- */

bool pass_tma_store_tile(int64_t rows, int64_t cols, int bits)
{
    return bits == 16 && rows <= 256 && cols * bits / 8 % 128 == 0;
}

/* A staged rows x cols tile of `bits`-bit elements leaves in one TMA store
 * (STORE `tma`; codegen's cg_ws_tma_store, where warp-specialized roles
 * compute it): on sm_90, a tile TMA can take (pass_tma_store_tile) of at
 * least 128 columns (measured: D = 64 attention 2-6% slower than from
 * registers or as 16-byte rows, D = 128 up to 5% faster; bench/RESULTS.md
 * 2026-12-07 23:06). */
static bool tma_tile(const PassCtx *ctx, int64_t rows, int64_t cols, int bits)
{
    return ctx->target && ctx->target->family == TF_SM90 && cols >= 128 && pass_tma_store_tile(rows, cols, bits);
}

typedef struct StoreScan { Op *store; int n; } StoreScan;

static bool store_visit(Func *f, Op *op, void *ctx)
{
    StoreScan *ss = ctx;
    if (op->code == OP_STORE && ir_type(f, op->args[op->nargs - 1])->rank == 2) {
        ss->store = op;
        ss->n++;
    }
    return true;
}

/* The store of the one 2-D tile a kernel stores; else NULL. */
static Op *one_store(Func *f)
{
    StoreScan ss = { NULL, 0 };
    ir_walk(f, &f->body, store_visit, &ss);
    return ss.n == 1 ? ss.store : NULL;
}

/* Does st store a value that comes from an op of its own (placement open)
 * used only there? */
static bool placement_open(Func *f, const Op *st)
{
    ValId v = st->args[st->nargs - 1];
    if (!ir_val(f, v)->def || ir_type(f, v)->space != SP_ANY)
        return false;
    UseInfo u;
    ir_count_uses(f, &u, f->mod->arena);
    return u.count[v] == 1;
}

/* The one 2-D tile a kernel stores, when its placement is open; else NULL. */
static Op *output_store(Func *f)
{
    Op *st = one_store(f);
    return st && placement_open(f, st) ? st : NULL;
}

static bool grid_plain(const Func *f, Op **gy)
{
    *gy = ir_block_yield(&f->grid);
    if (!*gy || (*gy)->nargs != 3 || const_of(f, (*gy)->args[2]) != 1)
        return false;
    for (int i = 0; i < f->grid.nops; i++)   /* an order already chosen, a grid sized by the device */
        if (f->grid.ops[i]->code == OP_DIVISOR || f->grid.ops[i]->code == OP_NUMSMS)
            return false;
    return true;
}

static void launch_kernel(Func *f, PassCtx *ctx)
{
    ChainInfo ci;
    pass_chain_info(f, &ci);
    int64_t n = pass_dim_size(ctx->dims, f, ci.rows_dim), nk = pass_dim_size(ctx->dims, f, ci.keys_dim);
    /* Chained products that take warp-specialized roles (the rule
     * warp_specialize applies) keep their grid here: the roles are built
     * around the key loop at the kernel's top level, and warp_specialize
     * makes their own persistent grid afterwards. */
    bool roles = ci.chained && pass_chain_roles(ctx, ci.rows, ci.first_n, ci.nchain, NULL, NULL, NULL);
    LaunchScan ls = { false };
    ir_walk(f, &f->body, loop_visit, &ls);
    Op *gy = NULL;
    bool plain = grid_plain(f, &gy);
    IdOps ids = { .n = 0 };
    ir_walk(f, &f->body, id_visit, &ids);
    bool few_ids = ids.n < (int)TC_COUNTOF(ids.ops);
    bool ordered = ls.triangle && plain && few_ids;
    if (ordered) {
        longest_first(f, gy, &ids);
        pass_note(ctx, "@%s: the loop's trip count grows with block.x: grid (G, X, Y / G), G of Y at a time "
                  "(about 256 blocks), the longest loops first", f->name);
    } else if (ls.triangle) {
        pass_note(ctx, "@%s: the loop's trip count grows with block.x, but the grid is not (X, Y, 1): order kept",
                  f->name);
    } else if (roles) {
        pass_note(ctx, "@%s: the key loop takes warp-specialized roles on %s: the grid as written (warp_specialize "
                  "makes it persistent, of the SM count target.sms gives or, without it, of num_sms(), unless "
                  "warp_specialize.persistent=0)", f->name, pass_target_name(ctx));
    } else if (pass_chain_persistent(&ci, ctx, n, nk) && plain && few_ids) {
        make_persistent(f, gy, ctx->sms, &ids);
        pass_note(ctx, "@%s: persistent: min(%lld, tiles) blocks loop over the tiles (256 rows, %lld x %lld)",
                  f->name, (long long)ctx->sms, (long long)n, (long long)nk);
    }
    if (!ci.chained) {
        /* A lone product in a loop (a GEMM's K loop, whose ring buffers
         * are dead after it): its 16-bit output tile (C, its epilogue
         * applied) leaves through shared memory as 16-byte rows, as
         * examples/gemm.tile writes it, instead of 4-byte fragment pairs;
         * on sm_90 in one TMA store (tma_tile), the kernel's own shared
         * tile too. */
        bool top = false;
        for (int i = 0; ci.first && i < f->body.nops; i++)
            top = top || f->body.ops[i] == ci.first;
        Op *st = ci.first && !top ? one_store(f) : NULL;
        Type *ct = st ? ir_type(f, st->args[st->nargs - 1]) : NULL;
        bool own = ct && ct->space == SP_SHARED;   /* declared shared by the kernel */
        if (!ct || dtype_bits((DType)ct->dtype) != 16 || (!own && !placement_open(f, st)))
            return;
        ct->space = SP_SHARED;
        st->iattr[1] = tma_tile(ctx, ct->shape[0], ct->shape[1], 16);
        if (!own || st->iattr[1])
            pass_note(ctx, "@%s: the output tile leaves through shared memory %s", f->name, st->iattr[1]
                      ? "in one TMA store where warp-specialized roles compute it (else as 16-byte rows)"
                      : "as 16-byte rows (a product's fragments)");
        return;
    }
    bool stage;
    /* On sm_90 the roles' staged tile leaves in one TMA store that the
     * consumers do not wait for (codegen's cg_ws_tma_store; FlashAttention
     * 3's epilogue), so a persistent grid stages it too: where its rows are
     * whole 128-byte panels of 16-bit elements, at most 256 rows, and at
     * least 128 columns. A narrower tile (D = 64: 32 accumulator registers a
     * consumer thread) leaves faster from registers, or as 16-byte rows
     * where the grid is ordered, than through the TMA store's two meetings
     * of the role (docs/internals.md, "launch"). */
    Op *out = output_store(f);
    const Type *ot = roles && out ? ir_type(f, out->args[out->nargs - 1]) : NULL;
    bool tma = ot && tma_tile(ctx, ot->shape[0], ot->shape[1], dtype_bits((DType)ot->dtype));
    if (roles)   /* one tile a block of uneven lengths: warp_specialize keeps a grid ordered longest first */
        stage = ordered || (tma && !ctx->one_tile);
    else if (ci.rows == 256)
        stage = true;
    else if (!nk)
        stage = false;
    else if (ci.row_mask)
        stage = (nk + ci.first_n - 1) / ci.first_n <= (ci.first_k >= 128 ? 32 : 16);
    else
        stage = nk <= 4096;
    int64_t need = pass_chain_smem(ci.rows, ci.first_n, ci.first_k, true), limit = pass_smem_limit(ctx->target,
                                                                                                  ctx->smem_per_block);
    if (stage && roles && need > limit) {   /* the roles' two stages of K and V come first */
        stage = false;
        pass_note(ctx, "@%s: the output tile is stored from registers: through shared memory beside Q and two stages "
                  "of K and V it would take %lld B of the %lld B a block has", f->name, (long long)need,
                  (long long)limit);
    }
    Op *st = stage ? out : NULL;
    if (st) {
        ir_type(f, st->args[st->nargs - 1])->space = SP_SHARED;
        st->iattr[1] = tma;
        if (tma)
            pass_note(ctx, "@%s: the output tile leaves through shared memory in one TMA store (warp-specialized "
                      "roles on %s: %s)", f->name, pass_target_name(ctx),
                      ordered ? "one tile a block, longest first" : "the consumers go on to the next tile under it");
        else
            pass_note(ctx, "@%s: the output tile leaves through shared memory as 16-byte rows (%s)", f->name,
                      roles       ? "warp-specialized roles, one tile a block, longest first: the block ends with its stores"
                      : ci.rows == 256 ? "256-row tile"
                                       : "a short key loop");
    } else if (roles && !stage) {
        pass_note(ctx, "@%s: the output tile is stored from registers: %s", f->name,
                  ctx->one_tile ? "one tile a block (warp_specialize.persistent=0), staged only where the grid "
                                  "takes the longest tiles first"
                                : "the roles' persistent grid loads the next tile under this one's stores");
    }
}

int pass_launch(Module *m, PassCtx *ctx)
{
    for (int i = 0; i < m->nfuncs; i++)
        launch_kernel(m->funcs[i], ctx);
    return 0;
}
