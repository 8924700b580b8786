/* mma_store.c - the store of a product's tile (cg_mma_prepare_store): its
 * fragments moved to the coalesced layout (16-byte rows) through shared
 * memory before a STORE, over the dead pipeline buffers when every buffer
 * is dead at the store, else in a scratch after them; after decoupled
 * turns each warp group converts its own rows (group_rows).
 */
#include "cg_internal.h"
#include "passes/passes.h"

/* Is every shared buffer dead from `op` on: op in the function's top-level
 * block, every async copy before it retired by an `async_wait 0` (also at
 * top level, after the last copy), and no op after it that allocates,
 * copies into, reads or writes a buffer, multiplies (a product may read a
 * buffer in place) or uses a shared view made before it? Then a layout
 * conversion at op may use the buffers' space as its scratch (its first
 * barrier orders it after every read). */
static bool buffers_dead_at(Cg *cg, const Op *op)
{
    const Block *b = &cg->f->body;
    int at = -1;
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i] == op)
            at = i;
    if (at < 0)
        return false;
    bool waited = true;
    for (int i = 0; i < at; i++) {
        const Op *o = b->ops[i];
        if (o->code == OP_ASYNC_COPY || o->nregions > 0)
            waited = false;   /* a loop or if may hold copies: wait 0 after it */
        if (o->code == OP_ASYNC_WAIT)
            waited = o->iattr[0] == 0;
    }
    if (!waited)
        return false;
    for (int i = at + 1; i < b->nops; i++) {
        const Op *o = b->ops[i];
        if (o->nregions > 0 || o->code == OP_SMEM_ALLOC || o->code == OP_ASYNC_COPY || o->code == OP_SMEM_LOAD ||
            o->code == OP_SMEM_STORE || o->code == OP_DOT)
            return false;
        for (int k = 0; k < o->nargs; k++)   /* a view read in place later (a shared tile used after) */
            if (cg->vals[o->args[k]].kind == TV_SMEM)
                return false;
    }
    return true;
}

/* Does each warp of L hold one run of rows, warp w the w-th (warps only
 * along dim 0, one repeat)? Then rows [g * M / 2, (g + 1) * M / 2) belong
 * to warp group g. */
static bool rows_by_warp(const Layout *L, int nwarps)
{
    return L->prank == 2 && !L->slice && L->wpc[0] == nwarps && L->wpc[1] == 1 &&
           (int64_t)layout_espt(L, 0) * L->tpw[0] * layout_rpt(L, 0) * L->wpc[0] == L->pshape[0];
}

/* After decoupled turns (Cg.groups_apart) each warp group stages and
 * stores its own rows of a product's tile: the coalesced layout L is made
 * warp-major (each thread's rows one run, spt along dim 0 instead of
 * repeats: a warp still writes two 256-byte row pieces per instruction),
 * so that every row is written and read by one group's warps and the
 * conversion meets per group. The scratch lies over the dead buffers from
 * offset 0, group 0's rows first: they must miss the second product's
 * buffer, which group 1 still reads when group 0 gets there
 * (cg_chain_group_barrier); group 1 comes last. The whole scratch must fit
 * in the buffers' space. Not over the buffers (over false: the groups
 * stay apart across the trips of a loop over tiles, whose next copies fill
 * them), the scratch is its own after them, up to the arch's limit. *need
 * gets its size. */
static bool group_rows(Cg *cg, const TileVal *v, Layout *L, DType dt, int64_t *need, bool over)
{
    if (!cg->groups_apart || cg->nsplit != 1 || !rows_by_warp(v->L, cg->nwarps))
        return false;
    Layout W = *L;
    int64_t per = (int64_t)L->tpw[0] * L->wpc[0];
    if (L->pshape[0] % per)
        return false;
    W.spt[0] = (int)(L->pshape[0] / per);
    W.rpt[0] = 1;
    if (!rows_by_warp(&W, cg->nwarps) || layout_nregs(&W) != layout_nregs(L))
        return false;
    if (!over) {   /* a scratch of its own after the buffers (groups apart across a loop's trips) */
        int64_t bytes = cg_convert_scratch_bytes(&W, dt, NULL);
        if (cg->dsmem_base + bytes > pass_smem_limit(cg->ti, cg->smem_per_block))
            return false;
        *L = W;
        *need = bytes;
        return true;
    }
    const Op *alloc = ir_val(cg->f, cg->split[0].buf[1])->def;
    if (!alloc || alloc->code != OP_SMEM_ALLOC)
        return false;
    const Type *bt = ir_type(cg->f, cg->split[0].buf[1]);
    int64_t lo = alloc->iattr[1], hi = lo + type_numel(bt) * (dtype_bits((DType)bt->dtype) / 8);
    int64_t bytes = cg_convert_scratch_bytes(&W, dt, NULL);
    if (bytes > cg->dsmem_base || (lo < bytes / 2 && hi > 0))
        return false;
    *L = W;
    *need = bytes;
    return true;
}

void cg_mma_prepare_store(Cg *cg, Op *op)
{
    ValId vv = op->args[op->nargs - 1];
    TileVal *v = &cg->vals[vv];
    const Type *t = ir_type(cg->f, vv);
    if (v->kind != TV_REGS || !layout_is_mma(v->L) || t->rank != 2 || op->nlist < 1 || op->list[op->nlist - 1] <= 0) {
        if (t->space == SP_SHARED && cg->report)
            sb_printf(cg->report, "  store at %d:%d: the tile declared shared stays in registers (only a 2-D "
                      "product's fragments are staged; this layout stores its rows directly)\n",
                      op->loc.line, op->loc.col);
        return;
    }
    const Layout *L = cg_default_layout(cg, t, true);
    int eb = dtype_bits((DType)t->dtype) / 8;
    /* A tile declared `shared` (`tile o: shared bf16[BM, D] = ...; O[..] =
     * o;`) asks for this staging: its fragments go through shared memory
     * and leave as 16-byte rows. The dead pipeline buffers' space holds it
     * when every buffer is dead at the store; otherwise a scratch after
     * them, up to the arch's limit. For every other store it is the
     * compiler's choice: fragments stored directly unless the conversion
     * is cheap in shared memory. The dead-buffer form measured +3% to
     * +3.8% on attention at 1k tokens and -1.8% to -5.7% on D=128 causal
     * at 2k-16k on the H200 (2026-11-30 16:22), gemm within the spread,
     * for 14-21% more compile time (docs/codegen.md, "Epilogue"), so the
     * compiler does not pick it by itself and tilec.attention asks for it
     * on short rows only (examples/attention.tile's STAGE_O). */
    bool asked = t->space == SP_SHARED;
    bool over = cg->dsmem && asked && buffers_dead_at(cg, op);
    /* Chained products make the accumulator layout the tile's default
     * (cg_chain_anchors): the coalesced rows are then the plain blocked
     * layout, taken when the conversion costs no shared memory. */
    if ((over || asked) && layout_vec(L) <= layout_vec(v->L))
        L = cg_layout_dup(cg, layout_blocked(t->rank, t->shape, eb ? eb : 1, true, cg->nwarps));
    if (layout_vec(L) <= layout_vec(v->L)) {
        if (asked && cg->report)
            sb_printf(cg->report, "  store at %d:%d: the tile declared shared stays in registers (its fragments "
                      "already hold whole 16-byte rows)\n", op->loc.line, op->loc.col);
        return;
    }
    int64_t need = cg_convert_scratch_bytes(L, (DType)t->dtype, NULL);
    over = over && cg->dsmem_base >= need;
    /* Growing a pipelined kernel's shared memory by more than a quarter for
     * the epilogue costs blocks per SM: gemm 128x128x64 on sm_90a, 96 KB of
     * buffers + 33 KB of scratch -> one block per SM, 306 TFLOP/s against
     * 375 with the fragment stores (H200). When every buffer is dead at the
     * store (the epilogue after the pipelined loop), the conversion uses
     * their space instead and the kernel's shared memory does not grow. A
     * tile declared shared may grow it up to the arch's limit. */
    int64_t limit = pass_smem_limit(cg->ti, cg->smem_per_block);
    bool fits = cg->dsmem_base + need <= limit;
    if (!over && cg->dsmem && (!fits || (!asked && cg->dsmem_base > 0 && need > cg->dsmem_base / 4))) {
        if (asked && cg->report)
            sb_printf(cg->report, "  store at %d:%d: the tile declared shared stays in registers (fragment "
                      "stores): %lld bytes of scratch after %lld bytes of buffers exceed the %lld-byte limit\n",
                      op->loc.line, op->loc.col, (long long)need, (long long)cg->dsmem_base,
                      (long long)limit);
        return;
    }
    Layout W = *L;
    bool grouped = (over || cg->groups_apart) && group_rows(cg, v, &W, (DType)t->dtype, &need, over);
    if (grouped)
        L = cg_layout_dup(cg, W);
    cg->scratch_over_buffers = over;
    cg->xfer_groups = grouped;
    if (over) {
        /* The epilogue's thread coordinates from a fresh tid, not merged
         * with the prologue's and kept live across the loop: attention
         * D=128 causal 32 -> 8 B of spills (sm_90), 459M -> 403M
         * instructions to compile on sm_86 D=128. */
        cg_thread_ids(cg, cg_opaque_tid(cg));
    }
    v->r = cg_convert_layout(cg, v->r, v->L, L, (DType)t->dtype, NULL);
    cg->scratch_over_buffers = false;
    cg->xfer_groups = false;
    v->L = L;
    if (!over && asked && cg->report)
        sb_printf(cg->report, "  store at %d:%d: the tile declared shared goes out as 16-byte rows through %lld "
                  "bytes of shared memory after the buffers%s\n", op->loc.line, op->loc.col, (long long)need,
                  grouped ? "; each warp group its own rows, behind its own barrier" : "");
    if (over && cg->report)
        sb_printf(cg->report, "  store at %d:%d: converted to 16-byte rows through the dead buffers' shared memory "
                  "(%lld bytes at offset 0, no growth)%s\n", op->loc.line, op->loc.col, (long long)need,
                  grouped ? "; each warp group its own rows, behind its own barrier" : "");
}
