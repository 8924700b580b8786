/* tiles.c - the tile sizes the compiler chooses for compile-time params
 * declared `= auto` (docs/language.md, "What the compiler decides").
 *
 * The driver lowers the kernel once with each auto param at a distinct
 * probe value, asks pass_choose_tiles which role each probe plays in the
 * products (accumulator rows, key columns, reduction step) and what to
 * take for it, then lowers the kernel again with the choices. The rules
 * read the TargetInfo, the device facts of the pass options
 * (target.smem-per-block, target.sms) and the dim sizes the caller gave
 * (tilec_options.dims); the measurements behind them are in
 * bench/RESULTS.md. On a target that takes warp-specialized roles
 * (sm_90a; not the module's portable variant, PassCtx.portable) chained
 * products get the tiles of the roles' form (choose_roles), on one with
 * tcgen05 roles (sm_100a) those of the tensor-memory form (choose_tc); the
 * portable variant and every other target keep the mma.sync rules.
 *
 * Each rule also lists its candidates (autotuning: tilec_candidates_file,
 * docs/internals.md "Candidates"): the tiles it weighs that fit the target,
 * its choice first. The runtime times them on the device and keeps the
 * fastest; the pass option tiles.candidate=K compiles the K-th. There is no
 * other table: a candidate is a shape this file's rules would take under
 * other device facts or sizes.
 *
 * Needs: the probe lowering of the kernel (verified IR, before any pass).
 */
#include "passes.h"

#include <string.h>

/* One shape a rule weighs: accumulator rows, columns (key columns of a
 * chain) and reduction step (a lone product's; 0 in a chain). */
typedef struct TileShape {
    int64_t bm, bn, bk;
} TileShape;
typedef struct ShapeList {
    TileShape s[PASS_MAX_CAND];
    int n;
} ShapeList;

static void add_shape(ShapeList *l, int64_t bm, int64_t bn, int64_t bk)
{
    for (int i = 0; i < l->n; i++)
        if (l->s[i].bm == bm && l->s[i].bn == bn && l->s[i].bk == bk)
            return;
    if (l->n < PASS_MAX_CAND)
        l->s[l->n++] = (TileShape){ bm, bn, bk };
}

/* Bytes of shared memory an attention block keeps: its query rows, two
 * stages of key and value columns, and, for a persistent grid, O's own
 * scratch (rows of D bf16 plus 16 bytes of padding). */
int64_t pass_chain_smem(int64_t rows, int64_t cols, int64_t d, bool scratch)
{
    int64_t b = rows * d * 2 + 2 * 2 * cols * d * 2;
    return scratch ? b + rows * (d * 2 + 16) : b;
}

/* Shared memory an SM of the device has: the block's opt-in maximum plus
 * the driver's reservation when target.smem-per-block names the device,
 * else the target's own. */
int64_t pass_sm_smem(const PassCtx *ctx)
{
    const TargetInfo *t = pass_target(ctx->target);
    if (ctx->smem_per_block)
        return ctx->smem_per_block + t->lim.smem_reserved;
    return t->lim.smem_per_sm;
}

int64_t pass_sm_smem_share(const PassCtx *ctx, int blocks)
{
    const TargetInfo *t = pass_target(ctx->target);
    return pass_sm_smem(ctx) / (blocks > 1 ? blocks : 1) - t->lim.smem_reserved;
}

bool pass_chain_persistent(const ChainInfo *ci, const PassCtx *ctx, int64_t n, int64_t nk)
{
    return ci->chained && ci->rows == 256 && ci->first_k == 128 && !ci->row_mask && ctx->sms > 0 && n >= 1024 &&
           nk >= 1024 && pass_chain_smem(256, ci->first_n, 128, true) <= pass_smem_limit(ctx->target, ctx->smem_per_block);
}

/* Three consumer warp groups (192 rows) over two (128): a block's rows
 * as the 192-row tile pads them, against the 128-row tile's at 1.1x the
 * speed. Measured on the H200 (bench/RESULTS.md, 2026-12-06 20:24), D =
 * 64, 128 key columns, no mask: 192 rows 1.06x-1.12x of 128 at N 4k-16k
 * (padding under 4%), 1.03x at 2k, 0.95x at 1k (12.5% padding); with the
 * causal mask 0.77x-0.86x (the diagonal's masked work grows with the
 * rows), so not a candidate there (choose_roles). N unknown: the long
 * rows the tile is for. */
static int64_t rows_padded_192(int64_t n) { return (n + 191) / 192 * 192; }

static bool three_groups_pay(int64_t n)
{
    return n <= 0 || rows_padded_192(n) * 10 < n * 11;
}

/* 64 x 64 tiles, one consumer warp group at three blocks an SM
 * (pass_chain_roles), over 128 x 128 for causal attention of few keys:
 * the blocks of an SM overlap each other's loads of Q, first trips and
 * epilogues, which the short rows of a causal grid cannot hide. Measured
 * on an H100 (bench/RESULTS.md, 2026-12-06 22:14), D = 64, bf16, x cuDNN:
 * 0.925 against 0.751 at 1k keys, 0.946 against 0.855 at 2k, 0.927
 * against 0.909 at 4k; without the mask 0.89 / 0.91 against 0.88 / 1.00
 * (192 rows), so causal only. Keys unknown: the long rows 128 rows are
 * for. */
enum { FEW_CAUSAL_KEYS = 4096 };

static bool three_blocks_pay(const ChainInfo *ci, int64_t nk)
{
    return ci->row_mask && nk > 0 && nk <= FEW_CAUSAL_KEYS;
}

/* Do `rows` x `cols` tiles take the roles (pass_chain_roles) with Q and
 * two stages of K and V in the block's shared memory? */
static bool roles_fit(const PassCtx *ctx, int64_t rows, int64_t cols, int64_t d, int64_t dout, int64_t limit,
                      ChainRoles *r)
{
    return pass_chain_roles(ctx, rows, cols, dout, r, NULL, NULL) && pass_chain_smem(rows, cols, d, false) <= limit;
}

/* Attention-like kernels on a target that takes warp-specialized roles:
 * 128 rows (two consumer warp groups of 64), or 192 (three) where they
 * keep the widest key block and pay (three_groups_pay), and the widest key
 * block of 128 or 64 whose S, O and P leave the consumers room for the
 * softmax (pass_chain_roles, the rule warp_specialize applies) and whose Q
 * and two stages of K and V fit the block's shared memory. False when none
 * does (the portable rules below choose). */
static bool choose_roles(const ChainInfo *ci, const PassCtx *ctx, int64_t n, int64_t nk, ShapeList *l,
                         StrBuf *why)
{
    int64_t d = ci->first_k, dout = ci->nchain ? ci->nchain : d;
    int64_t limit = pass_smem_limit(ctx->target, ctx->smem_per_block);
    Arena *a = arena_new();
    const char *wide = NULL;
    bool ok = false;
    /* 64 rows at three blocks an SM: the choice for causal rows of few
     * keys, else a candidate after the others where the mask is causal. */
    ChainRoles r1;
    bool small = ci->row_mask && roles_fit(ctx, 64, 64, d, dout, limit, &r1) && r1.blocks == 3;
    if (small && three_blocks_pay(ci, nk)) {
        add_shape(l, 64, 64, 0);
        ok = true;
        sb_printf(why, "head dim %lld, warp-specialized roles on %s: 64 x 64 (1 consumer warp group, %d blocks an "
                  "SM; S, O and P take %lld of the %d registers a consumer thread has; causal, %lld keys: the "
                  "blocks of an SM overlap each other's short rows)", (long long)d, pass_target_name(ctx), r1.blocks,
                  (long long)(r1.s_regs + r1.o_regs + r1.p_regs), r1.cons_regs, (long long)nk);
    }
    /* 192 rows only with the 128-column key block that 128 rows take too:
     * the choice when they pay, else a candidate after 128 x 128. */
    ChainRoles r3;
    bool three = !ci->row_mask && roles_fit(ctx, 192, 128, d, dout, limit, &r3) &&
                 roles_fit(ctx, 128, 128, d, dout, limit, NULL);
    if (three && three_groups_pay(n)) {
        add_shape(l, 192, 128, 0);
        ok = true;
        sb_printf(why, "head dim %lld, warp-specialized roles on %s: 192 x 128 (%d consumer warp groups of 64 rows; "
                  "S, O and P take %lld of the %d registers a consumer thread has; no mask and ", (long long)d,
                  pass_target_name(ctx), r3.consumers, (long long)(r3.s_regs + r3.o_regs + r3.p_regs), r3.cons_regs);
        if (n > 0)
            sb_printf(why, "%lld rows padded to %lld: three groups pay)", (long long)n, (long long)rows_padded_192(n));
        else
            sb_printf(why, "the rows' count unknown: three groups pay on long rows)");
    } else if (three) {
        add_shape(l, 128, 128, 0);
        add_shape(l, 192, 128, 0);
    }
    for (int64_t cols = 128; cols >= 64; cols /= 2) {
        ChainRoles r;
        const char *no = NULL;
        if (!pass_chain_roles(ctx, 128, cols, dout, &r, a, &no)) {
            if (!ok)
                wide = wide ? wide : arena_printf(a, "%lld key columns: %s", (long long)cols, no);
            continue;
        }
        if (pass_chain_smem(128, cols, d, false) > limit) {
            if (!ok)
                wide = wide ? wide : arena_printf(a, "%lld key columns: Q and two stages of K and V take %lld B "
                                                  "of the %lld B a block has", (long long)cols,
                                                  (long long)pass_chain_smem(128, cols, d, false), (long long)limit);
            continue;
        }
        add_shape(l, 128, cols, 0);   /* the first is the choice, the others candidates */
        if (ok)
            continue;
        ok = true;
        sb_printf(why, "head dim %lld, warp-specialized roles on %s: %lld x %lld (%d consumer warp groups of 64 rows; "
                  "S, O and P take %lld of the %d registers a consumer thread has)", (long long)d,
                  pass_target_name(ctx), 128LL, (long long)cols, r.consumers,
                  (long long)(r.s_regs + r.o_regs + r.p_regs), r.cons_regs);
        if (wide)
            sb_printf(why, "; not %s", wide);
    }
    if (small && !three_blocks_pay(ci, nk))
        add_shape(l, 64, 64, 0);
    if (!ok)
        sb_printf(why, "head dim %lld: no warp-specialized roles (%s); ", (long long)d, wide ? wide : "?");
    arena_free(a);
    return ok;
}

/* Attention-like kernels on a target with tcgen05 and tensor memory
 * (sm_100a): FlashAttention 4's two query tiles of 128 rows a block (two
 * softmax warp groups sharing each K and V tile), else one; the widest key
 * block of 128 or 64 whose S, P and O fit tensor memory and whose softmax
 * peak fits a softmax thread (pass_chain_tc_roles, the rule
 * warp_specialize applies), with Q and two stages of K and V in the
 * block's shared memory. False when none does. */
static bool choose_tc(const ChainInfo *ci, const PassCtx *ctx, ShapeList *l, StrBuf *why)
{
    int64_t d = ci->first_k, dout = ci->nchain ? ci->nchain : d;
    int64_t limit = pass_smem_limit(ctx->target, ctx->smem_per_block);
    Arena *a = arena_new();
    const char *first = NULL;
    bool ok = false;
    for (int64_t rows = 256; rows >= 128; rows /= 2)
        for (int64_t cols = 128; cols >= 64; cols /= 2) {
            TcChainRoles r;
            const char *no = NULL;
            if (!pass_chain_tc_roles(ctx, rows, cols, dout, &r, a, &no) ||
                (pass_chain_smem(rows, cols, d, false) > limit &&
                 (no = arena_printf(a, "Q and two stages of K and V take %lld B of the %lld B a block has",
                                    (long long)pass_chain_smem(rows, cols, d, false), (long long)limit)))) {
                if (!ok)
                    first = first ? first : arena_printf(a, "%lld x %lld: %s", (long long)rows, (long long)cols, no);
                continue;
            }
            add_shape(l, rows, cols, 0);   /* the first is the choice, the others candidates */
            if (ok)
                continue;
            ok = true;
            sb_printf(why, "head dim %lld, tcgen05 roles on %s: %lld x %lld (%d softmax warp group%s of 128 rows; S, "
                      "P and O in %lld columns of tensor memory)", (long long)d, pass_target_name(ctx),
                      (long long)rows, (long long)cols, r.softmax, r.softmax > 1 ? "s" : "",
                      (long long)r.tmem_cols);
            if (first)
                sb_printf(why, "; not %s", first);
        }
    if (!ok)
        sb_printf(why, "head dim %lld: no tcgen05 roles (%s); ", (long long)d, first ? first : "?");
    arena_free(a);
    return ok;
}

/* Attention-like kernels (a product fed by a product): the choice first
 * in l, then the other shapes the rules weigh that fit. */
static void choose_chain(const ChainInfo *ci, const PassCtx *ctx, const Func *f, ShapeList *l, StrBuf *why)
{
    if (pass_target_tc_roles(ctx) && choose_tc(ci, ctx, l, why))
        return;
    int64_t n = pass_dim_size(ctx->dims, f, ci->rows_dim), nk = pass_dim_size(ctx->dims, f, ci->keys_dim);
    if (pass_target_roles(ctx) && choose_roles(ci, ctx, n, nk, l, why))
        return;
    int64_t d = ci->first_k;
    int64_t limit = pass_smem_limit(ctx->target, ctx->smem_per_block);
    /* 32 rows a warp keep the score tile and the accumulator in registers
     * while D + BN <= 192 (schedule's warp rule): BN = 128 at D <= 64, else 64. */
    int64_t bm = 128, bn = d + 128 <= 192 ? 128 : 64;
    sb_printf(why, "head dim %lld: %lld x %lld (32 rows a warp, score and output tiles in registers)", (long long)d,
              (long long)bm, (long long)bn);
    if (bn == 128 && 2 * pass_chain_smem(bm, bn, d, false) > pass_sm_smem(ctx)) {
        bn = 64;   /* two blocks an SM, whose barriers overlap each other's products */
        sb_printf(why, "; BN = 64 so that two blocks fit the SM's %lld bytes", (long long)pass_sm_smem(ctx));
    }
    /* The portable variant a module carries on a tensor-memory target
     * (sm_100a: the fallback for views TMA cannot take): ptxas 13.0 for
     * that family spills the 128 x 64 tile at D = 128 (8 B; 0 at BN = 32,
     * 247 registers), and the fallback's speed matters less than a clean
     * assembly. */
    if (ctx->portable && ctx->target && ctx->target->tmem && d == 128 && bn == 64) {
        bn = 32;
        sb_printf(why, "; BN = 32 in the portable variant of %s (the family's ptxas spills 128 x 64 at D = 128)",
                  pass_target_name(ctx));
    }
    bool big_ok = d == 128 && !ci->row_mask && pass_chain_smem(256, 64, d, false) <= limit;
    if (d != 128 || ci->row_mask || !n || !nk) {
        if (d == 128 && !ci->row_mask)
            sb_puts(why, "; no 256-row tile: the query and key lengths are not known (tilec_options.dims)");
    } else {
        /* Two warp groups taking turns at the tensor cores on 256 rows share
         * each K and V tile: half the copies per FLOP. From 2k tokens, or from
         * 1k where the grid can be persistent (launch). */
        ChainInfo big = *ci;
        big.rows = 256;
        big.first_n = 64;
        bool persistent = pass_chain_persistent(&big, ctx, n, nk);
        if ((persistent || (n >= 2048 && nk >= 2048)) && big_ok) {
            bm = 256;
            bn = 64;
            sb_printf(why, "; 256 x 64 for %lld query and %lld key rows: two warp groups take turns, sharing K and V%s",
                      (long long)n, (long long)nk, persistent ? " (a persistent grid: launch)" : "");
        }
    }
    add_shape(l, bm, bn, 0);
    if (ctx->portable)
        return;   /* the fallback variant takes the choice alone */
    /* The candidates: the shapes above under other sizes and device facts. */
    if (d + 128 <= 192 && pass_chain_smem(128, 128, d, false) <= limit)
        add_shape(l, 128, 128, 0);
    if (pass_chain_smem(128, 64, d, false) <= limit)
        add_shape(l, 128, 64, 0);
    if (big_ok)
        add_shape(l, 256, 64, 0);
}

/* An f8e4m3 / f8e5m2 product that takes wgmma in warp-specialized roles
 * (pass_target_roles, both operands K-major: pass_f8_kmajor_problem): the
 * bf16 roles' tiles with a step of 128 bytes of K, so that a row of each
 * operand's slot is one 128-byte swizzle atom (128 elements of K; bf16's
 * 64 are the same 128 bytes) and a slot is one TMA box; two stages of
 * 1-byte elements at 256 x 128 x 128 take the bytes 256 x 128 x 64 bf16
 * does. The candidates: 128 x 256 and 128 x 128 over 128, and the three
 * over steps of 64 (64-byte rows, a 64-byte swizzle), where two stages
 * fit and the consumers' registers hold the accumulator and the
 * promotion's temporary (pass_lone_roles_fit: not 128 x 256, whose 128 +
 * 128 registers a thread exceed 232). False when the product does not
 * take that form. */
static bool choose_f8_wgmma(const ChainInfo *ci, const PassCtx *ctx, const Func *f, ShapeList *l, StrBuf *why)
{
    DType dt = (DType)ir_type(f, ci->first->args[0])->dtype;
    if ((dt != DT_F8E4M3 && dt != DT_F8E5M2) || !pass_target_roles(ctx) || pass_f8_kmajor_problem(f, ci->first))
        return false;
    static const TileShape shapes[] = { { 256, 128, 128 }, { 128, 256, 128 }, { 128, 128, 128 },
                                        { 256, 128, 64 },  { 128, 256, 64 },  { 128, 128, 64 } };
    int64_t limit = pass_smem_limit(ctx->target, ctx->smem_per_block);
#define TWO_STAGES(t) (2 * ((t).bm * (t).bk + (t).bk * (t).bn))   /* 1-byte elements */
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        if (TWO_STAGES(shapes[i]) > limit || !pass_lone_roles_fit(dt, shapes[i].bm, shapes[i].bn))
            continue;
        if (!l->n)
            sb_printf(why, "an f8 product on wgmma m64nNk32 (both operands K-major): %lld x %lld accumulator tiles "
                      "over steps of %lld, rows of %lld bytes in one swizzle atom (two stages of 1-byte elements: "
                      "%lld of %lld B)", (long long)shapes[i].bm, (long long)shapes[i].bn, (long long)shapes[i].bk,
                      (long long)shapes[i].bk, (long long)TWO_STAGES(shapes[i]), (long long)limit);
        add_shape(l, shapes[i].bm, shapes[i].bn, shapes[i].bk);
    }
#undef TWO_STAGES
    return l->n > 0;
}

/* A lone product: examples/gemm.tile's 256 x 128 over steps of 64 where two
 * stages of its operands fit the block's shared memory (its epilogue then
 * goes through the dead buffers), else 128 x 128 over steps of 32. The
 * candidates: those two, 128 x 256 over 64 and 128 x 128 over 64, where two
 * stages fit. An f8 product on wgmma takes choose_f8_wgmma's tiles. */
static void choose_lone(const ChainInfo *ci, const PassCtx *ctx, const Func *f, ShapeList *l, StrBuf *why)
{
    if (choose_f8_wgmma(ci, ctx, f, l, why))
        return;
    static const TileShape shapes[] = { { 256, 128, 64 }, { 128, 256, 64 }, { 128, 128, 64 }, { 128, 128, 32 } };
    int64_t esz = dtype_bits((DType)ir_type(f, ci->first->args[0])->dtype) / 8;
    esz = esz > 0 ? esz : 2;
    int64_t limit = pass_smem_limit(ctx->target, ctx->smem_per_block);
#define TWO_STAGES(t) (2 * ((t).bm * (t).bk + (t).bk * (t).bn) * esz)
    int64_t two = TWO_STAGES(shapes[0]);
    bool big = two <= limit;
    if (big)
        sb_printf(why, "a product: 256 x 128 accumulator tiles over steps of 64 (two stages: %lld of %lld B)",
                  (long long)two, (long long)limit);
    else
        sb_printf(why, "a product: 128 x 128 accumulator tiles over steps of 32 (two stages of 256 x 128 x 64 "
                  "would take %lld of %lld B)", (long long)two, (long long)limit);
    const TileShape *pick = big ? &shapes[0] : &shapes[3];
    add_shape(l, pick->bm, pick->bn, pick->bk);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && !ctx->portable; i++)
        if (TWO_STAGES(shapes[i]) <= limit)
            add_shape(l, shapes[i].bm, shapes[i].bn, shapes[i].bk);
#undef TWO_STAGES
}

int pass_choose_tiles(const Func *probe, const PassCtx *ctx, TileChoice *tc, StrBuf *why)
{
    ChainInfo ci;
    pass_chain_info(probe, &ci);
    int64_t rows = ci.rows, cols = ci.first_n, red = ci.first_k;
    if (!ci.first) {
        sb_printf(why, "@%s has no product: `auto` chooses only the tile extents of products; pin %s with -D%s=",
                  probe->name, tc->name[0], tc->name[0]);
        return 1;
    }
    ShapeList l = { .n = 0 };
    if (ci.chained)
        choose_chain(&ci, ctx, probe, &l, why);
    else
        choose_lone(&ci, ctx, probe, &l, why);
    tc->ncand = 0;
    for (int c = 0; c < l.n; c++) {
        const TileShape *t = &l.s[c];
        int64_t *v = tc->cand[tc->ncand];
        for (int i = 0; i < tc->n; i++) {
            int64_t p = tc->probe[i];
            v[i] = p == rows ? t->bm : p == cols ? t->bn : p == red && t->bk ? t->bk : 0;
            if (!v[i]) {
                sb_printf(why, "; %s = auto is neither the products' rows, columns nor reduction step: pin it with "
                          "-D%s=", tc->name[i], tc->name[i]);
                return 1;
            }
            if (c == 0) {
                tc->value[i] = v[i];
                sb_printf(why, "; %s = %lld", tc->name[i], (long long)v[i]);
            }
        }
        /* params pinned by defines play no part here: shapes that differ only
         * there are one candidate */
        bool dup = false;
        for (int k = 0; k < tc->ncand && !dup; k++)
            dup = memcmp(tc->cand[k], v, sizeof(int64_t) * (size_t)tc->n) == 0;
        tc->ncand += !dup;
    }
    return 0;
}
