/* schedule.c - the schedule pass: how many warps a kernel's blocks have,
 * the register cap asked of ptxas, and the forms the code generator gives
 * products, copies and rows; written into the IR as Func.sched (printed as
 * the kernel's `schedule(...)` clause) and explained in the report.
 *
 * Needs: verified IR after the other passes (it reads the shapes of the
 * products, loads and stores as the code generator will see them).
 * Guarantees: every kernel's Func.sched is decided (kind != SCHED_NONE):
 *   kind      SIMT (no products), MMA (products, none fed by another) or
 *             CHAIN (a product's A operand comes from a product: attention);
 *   warps     per block: SIMT enough that each thread keeps about four
 *             16-byte accesses in flight over the largest tile (at most the
 *             target's SIMT warps); MMA one per 64 x 64 of the largest
 *             accumulator (at most 8); CHAIN one per 32 or 16 accumulator
 *             rows (below);
 *   min_blocks  the .minnctapersm asked of ptxas (0: none);
 *   wide      a SIMT row of 16+ warps recomputed after barriers and
 *             ordered by first use (codegen's lower_simt.c);
 *   turns     CHAIN on 8k warps of 32 rows: two warp groups take turns at
 *             the tensor cores, decoupled (no block-wide barrier in the loop);
 *   copy_interior, pv_rows  the copy and product forms (below);
 *   epilogue_order  products, none chained (a GEMM, warp-specialized or
 *             not): the code outside the products' blocks ordered by first
 *             use, so an epilogue such as gelu(acc + bias) is computed
 *             element by element (codegen's simt_sched.c).
 * A kernel with warp-specialized roles (ws) takes its warps from them: 4 per
 * warp group, and min_blocks the blocks an SM of its WS op (1 unless it says
 * more: the registers setmaxnreg divides).
 * A kernel whose schedule clause was given (a .tir file) keeps it: this pass
 * fills in only what is undecided. The rules were measured on an H200
 * (docs/codegen.md, bench/RESULTS.md); where a rule needs the target's
 * limits it reads the TargetInfo.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

int pass_rows_warps(int64_t m, int max_warps)
{
    int w = 1;
    while (w * 2 <= max_warps && m % (16 * w * 2) == 0)
        w *= 2;
    return w;
}

/* Warps for a kernel with chained products (at most 8 and max_warps):
 * one warp per 32 rows of the accumulators when a warp's two accumulators
 * take at most 192 f32 registers per thread (32 x (BN + D) / 32: D = 64
 * with BN = 128, D = 128 with BN = 64), else one per 16 rows; and never
 * fewer than 4 warps while each keeps 16 rows. 128 rows, BN + D <= 192 ->
 * 4 warps x 32 rows (the FlashAttention-2 warp tile: each K / V fragment
 * read by ldmatrix feeds two m16 tiles, and two blocks fit an SM); 128 rows
 * with D = BN = 128 -> 8 x 16 (4 x 32 spills); 64 rows -> 4 x 16.
 * 0 when the kernel has none. */
static int chain_warps(const ChainInfo *ci, int max_warps)
{
    if (!ci->chained || ci->rows <= 0 || ci->rows % 16)
        return 0;
    int64_t per = ci->nfirst + ci->nchain <= 192 ? ci->rows / 32 : ci->rows / 16;
    int cap = per > 8 ? 8 : per < 4 ? 4 : (int)per;
    return pass_rows_warps(ci->rows, max_warps < cap ? max_warps : cap);
}

/* ---- lone products ---- */

static bool mma_visit(Func *f, Op *op, void *ctx)
{
    int *w = ctx;
    if (op->code != OP_DOT)
        return true;
    const Type *t = ir_type(f, op->res[0]);
    int64_t elems = t->rank == 2 ? t->shape[0] * t->shape[1] : 1024;
    int64_t want = elems / 4096 > 4 ? elems / 4096 : elems / 1024 < 4 ? elems / 1024 : 4;
    int n = 1;
    while (n * 2 <= want && n * 2 <= w[1])
        n *= 2;
    if (n > w[0])
        w[0] = n;
    return true;
}

/* One warp per 64 x 64 of the largest accumulator (128 f32 registers per
 * thread), at most 8 warps; small accumulators keep up to 4 warps (one per
 * 32 x 32). Measured on an H200 (docs/codegen.md): 64 x 64 warp tiles read
 * a third less shared memory per mma than 64 x 32, and a 128 x 128 tile on
 * 4 warps leaves room for two blocks per SM, whose barriers then overlap
 * each other's products: 380 TFLOP/s against 289 with 8 warps. 0 when the
 * kernel has no product. */
static int mma_warps(const Func *f, int max_warps)
{
    int w[2] = { 0, max_warps < 8 ? max_warps : 8 };
    ir_walk((Func *)f, (Block *)&f->body, mma_visit, w);
    return w[0];
}

/* ---- SIMT kernels ---- */

static bool simt_visit(Func *f, Op *op, void *ctx)
{
    int64_t *best = ctx;   /* [0] = bytes-weighted work, [1] = elem bytes */
    for (int i = 0; i < op->nres; i++) {
        const Type *t = ir_type(f, op->res[i]);
        if (t->kind != TY_TILE)
            continue;
        int64_t n = type_numel(t);
        int eb = dtype_bits((DType)t->dtype) / 8;
        if (op->code == OP_LOAD || n > best[0]) {
            if (n >= best[0]) {
                best[0] = n;
                best[1] = eb ? eb : 1;
            }
        }
    }
    return true;
}

/* Enough warps that each thread keeps about four 16-byte accesses in flight
 * over the largest tile, clamped to 1..max_warps. Measured on an H200
 * (docs/codegen.md): for bf16 [4096] rows 4 warps beat 8 and 16 (fewer
 * warps share each cross-warp reduction, more bytes in flight per thread). */
static int simt_warps(const Func *f, int max_warps)
{
    int64_t best[2] = { 0, 4 };
    ir_walk((Func *)f, (Block *)&f->body, simt_visit, best);
    int64_t per_warp = 32 * (16 / best[1]) * 4;
    int w = 1;
    while (w < max_warps && (int64_t)w * 2 * per_warp <= best[0])
        w *= 2;
    return w;
}

typedef struct LoadSum { int64_t elems, bytes; } LoadSum;

static bool load_visit(Func *f, Op *op, void *ctx)
{
    LoadSum *s = ctx;
    const Type *t = op->code == OP_LOAD ? ir_type(f, op->res[0]) : NULL;
    if (t && t->kind == TY_TILE) {
        int bits = dtype_bits((DType)t->dtype);
        s->elems += type_numel(t);
        s->bytes += type_numel(t) * (bits >= 8 ? bits / 8 : 1);
    }
    return true;
}

/* Elements and bytes each thread loads. */
static LoadSum loaded(const Func *f, int nwarps)
{
    LoadSum s = { 0, 0 };
    ir_walk((Func *)f, (Block *)&f->body, load_visit, &s);
    s.elems /= 32 * nwarps;
    s.bytes /= 32 * nwarps;
    return s;
}

/* 32-bit registers a thread holds for the tiles loops carry (a loop's
 * results: accumulators and prefetched chunks; 16-bit elements two to a
 * register). */
static bool carried_visit(Func *f, Op *op, void *ctx)
{
    int64_t *words = ctx;
    if (op->code != OP_FOR)
        return true;
    for (int i = 0; i < op->nres; i++) {
        const Type *t = ir_type(f, op->res[i]);
        if (t->kind == TY_TILE) {
            int bits = dtype_bits((DType)t->dtype);
            *words += (type_numel(t) * (bits >= 8 ? bits : 8) + 31) / 32;
        }
    }
    return true;
}

static int64_t carried_words(const Func *f, int nwarps)
{
    int64_t words = 0;
    ir_walk((Func *)f, (Block *)&f->body, carried_visit, &words);
    return words / (32 * nwarps);
}

/* Blocks per SM a SIMT kernel asks ptxas for (.minnctapersm; 0: none).
 * Blocks of 16+ warps: two (rows that load X, W and B: bf16 [16384]
 * layernorm, 63 registers; the wide rows below ask for three). Smaller
 * blocks that load more than 64 elements per thread (layernorm: X, W and
 * B) ask for enough blocks to keep 32 warps when a thread loads at most
 * 256 bytes (registers <= 64: bf16 [4096] layernorm, 4 warps, 8 blocks:
 * 80 -> 64 registers, 86% -> 89% of copy bandwidth on an H200; 7 blocks
 * 87.6%), 16 warps for blocks of 8+ warps that load more (registers <=
 * 128), else 24 warps. Smaller ones get no hint: there it only loosens
 * ptxas' own budget (bf16 [4096] softmax: 48 -> 55 registers). */
static int simt_min_blocks(LoadSum s, int nwarps)
{
    if (nwarps >= 16)
        return 2;
    if (s.elems <= 64)
        return 0;
    int target = s.bytes <= 256 ? 32 : nwarps >= 8 ? 16 : 24;
    return (target + nwarps - 1) / nwarps;
}

/* A row of 16+ warps is "wide" (recomputed, scheduled, three blocks per
 * SM: 93.9% of copy bandwidth on an H200 for bf16 [16384] softmax against
 * 88.5% keeping f32 values live at 2 blocks) unless its threads load 64 or
 * more elements each (layernorm's X, W and B; rmsnorm's X and W, which
 * spilled 40 B under the wide cap of 40 registers): those keep their values
 * live at two blocks per SM, where the next wave's row prefetched to L2
 * covers the reductions (bf16 [16384] layernorm, bench/RESULTS.md
 * 2026-12-01 02:25: 16 warps at 63 registers 94.8-95.5% of copy bandwidth,
 * 8 warps at 126 registers 95.6-95.8%, compiled in three quarters of the
 * time). */
static bool simt_wide(LoadSum s, int nwarps) { return nwarps >= 16 && !(s.elems >= 64 && s.bytes <= 256); }

/* ---- the decision ---- */

/* ---- warp-specialized kernels ---- */

static bool ws_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    if (op->code == OP_WS)
        *(const Op **)ctx = op;
    return op->code != OP_WS;
}

/* The products of a warp-specialized kernel come from one source product
 * (a GEMM: the roles' copies of it) or several (chained: attention). */
typedef struct ProductLocs {
    Loc first;
    int n;
    bool several;
} ProductLocs;

static bool product_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    ProductLocs *p = ctx;
    if (op->code == OP_DOT || op->code == OP_DOT_ASYNC || op->code == OP_TC_MMA) {
        if (p->n++ == 0)
            p->first = op->loc;
        else if (op->loc.line != p->first.line || op->loc.col != p->first.col)
            p->several = true;
    }
    return true;
}

/* A kernel with ws roles runs 4 warps per warp group of its roles, and asks
 * for the blocks an SM its WS op's budgets are for (.minnctapersm, 1
 * unless the op says more): ptxas then knows the registers a thread has at
 * entry, which setmaxnreg moves between the roles. True when f has roles
 * (the decision in *s). */
static bool ws_schedule(const Func *f, Schedule *s, StrBuf *why)
{
    const Op *ws = NULL;
    ir_walk((Func *)f, (Block *)&f->body, ws_visit, &ws);
    if (!ws)
        return false;
    int wgs = 0;
    for (int i = 0; i + 2 < ws->nlist; i += 3)
        wgs += (int)ws->list[i + 1];
    memset(s, 0, sizeof *s);
    s->kind = SCHED_MMA;
    s->warps = (uint8_t)(wgs * (WG_THREADS / 32));
    s->min_blocks = (uint8_t)ir_ws_blocks(ws);
    sb_printf(why, "warp-specialized: %d warps (%d warp groups of roles); registers set for %d block%s an SM, which "
              "setmaxnreg divides between the roles", s->warps, wgs, s->min_blocks, s->min_blocks > 1 ? "s" : "");
    ProductLocs pl = { 0 };
    ir_walk((Func *)f, (Block *)&f->body, product_visit, &pl);
    s->epilogue_order = pl.n > 0 && !pl.several;
    if (s->epilogue_order)
        sb_puts(why, "; the epilogue computed element by element");
    return true;
}

void pass_schedule_kernel(const Func *f, const TargetInfo *t, Schedule *s, StrBuf *why)
{
    t = pass_target(t);
    if (ws_schedule(f, s, why))
        return;
    int max = t->lim.simt_warps;
    ChainInfo ci;
    pass_chain_info(f, &ci);
    int64_t rows = ci.rows;
    int cw = chain_warps(&ci, max), mw = cw ? cw : mma_warps(f, max);
    memset(s, 0, sizeof *s);
    if (cw) {
        s->kind = SCHED_CHAIN;
        s->warps = (uint8_t)cw;
        sb_printf(why, "chained products: %d warps, %lld accumulator rows (%lld a warp)", cw, (long long)rows,
                  (long long)(rows / cw));
    } else if (mw) {
        s->kind = SCHED_MMA;
        s->warps = (uint8_t)mw;
        sb_printf(why, "products: %d warps (one per 64 x 64 of the largest accumulator)", mw);
    } else {
        s->kind = SCHED_SIMT;
        s->warps = (uint8_t)simt_warps(f, max);
        sb_printf(why, "no products: %d warps (four 16-byte accesses in flight a thread)", s->warps);
    }
    if (s->kind == SCHED_SIMT) {
        LoadSum ls = loaded(f, s->warps);
        int64_t carried = carried_words(f, s->warps);
        /* The caps and the wide form were measured on rows without a loop
         * (softmax, layernorm). Tiles a loop carries stay live through
         * every trip on top of the trip's own values, which the load count
         * does not see: under those caps ptxas spilled 420-490 B a thread
         * of examples/layernorm_bwd.tile's loop (its dw and db, 16
         * registers a thread; 128-142 registers without a cap, no spill).
         * Such a kernel gets no cap. */
        if (carried > 0 && (simt_wide(ls, s->warps) || simt_min_blocks(ls, s->warps))) {
            s->wide = false;
            s->min_blocks = 0;
            sb_printf(why, "; loops carry %lld registers a thread: no register cap", (long long)carried);
        } else {
            s->wide = simt_wide(ls, s->warps);
            s->min_blocks = (uint8_t)(s->wide ? 3 : simt_min_blocks(ls, s->warps));
        }
        if (s->wide)
            sb_puts(why, "; a wide row: recomputed after barriers, ordered by first use");
    } else {
        s->min_blocks = s->warps >= 16 ? 2 : 0;
        s->epilogue_order = s->kind == SCHED_MMA && !ci.chained;
        if (s->epilogue_order)
            sb_puts(why, "; the epilogue computed element by element");
    }
    if (s->min_blocks > t->lim.blocks_per_sm)   /* ptxas ignores a cap above the SM's resident blocks */
        s->min_blocks = (uint8_t)t->lim.blocks_per_sm;
    if (s->min_blocks)
        sb_printf(why, "; registers capped for %d blocks an SM", s->min_blocks);
    /* Two groups of 4k warps holding 32 rows each, taking turns at the
     * tensor cores, one warp of each group per scheduler: +7% to +9% over
     * the same 256-row tile without (H200, 2026-12-01 04:12), decoupled
     * (no block-wide barrier in the loop) +1% to +4.5% more. */
    if (s->kind == SCHED_CHAIN && s->warps >= 8 && s->warps % 8 == 0 && rows == 32LL * s->warps) {
        s->turns = SCHED_TURNS_DECOUPLED;
        sb_printf(why, "; two warp groups of %d warps take decoupled turns at the tensor cores", s->warps / 2);
    } else if (s->kind == SCHED_CHAIN && s->warps >= 8) {
        sb_printf(why, "; no turns (%lld rows a warp; turns need 32)", (long long)(rows / s->warps));
    }
    /* Masked async copies get an arm without per-chunk bounds for windows
     * wholly inside the tensor in kernels with products: examples/gemm.tile
     * 381 / 370 -> 394 / 396 TFLOP/s (H200, 4096^3 / 8192^3), attention
     * +0.4% to +2.3%, except with a row mask over a first product of 128
     * or more (D=128 causal: -1.5% to -2.7%), which keeps it off. That
     * tile, with O staged, issues p @ v row tile by row tile: +1.8% to
     * +3.9% up to 32 key blocks, within the spread beyond (H200, sm_86 PTX;
     * bench/RESULTS.md 2026-11-30 20:26-21:06). */
    bool heavy_rows = s->kind == SCHED_CHAIN && ci.row_mask && ci.first_k >= 128;
    s->copy_interior = s->kind != SCHED_SIMT && !heavy_rows;
    s->pv_rows = heavy_rows && ci.staged;
    if (s->copy_interior)
        sb_puts(why, "; masked copies get an arm for windows wholly inside");
    else if (heavy_rows)
        sb_printf(why, "; a row mask over a first product of %lld: copies keep their bounds", (long long)ci.first_k);
    if (s->pv_rows)
        sb_puts(why, "; O staged: the second product row tile by row tile");
}

int pass_schedule(Module *m, PassCtx *ctx)
{
    for (int i = 0; i < m->nfuncs; i++) {
        Func *f = m->funcs[i];
        if (f->sched.kind != SCHED_NONE) {
            pass_note(ctx, "@%s: schedule given, kept", f->name);
            continue;
        }
        StrBuf why = { 0 };
        pass_schedule_kernel(f, ctx->target, &f->sched, &why);
        pass_note(ctx, "@%s: %s", f->name, why.buf ? why.buf : "");
        sb_free(&why);
    }
    return 0;
}
