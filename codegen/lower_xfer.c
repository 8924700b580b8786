/* lower_xfer.c - data movement between threads: reductions (in-thread,
 * warp butterfly shuffles, then across warps through shared memory) and
 * layout conversions through shared memory (transpose included).
 *
 * Shared scratch is one static buffer per kernel, sized for the largest
 * user; every use starts with a barrier (an earlier user may still read it).
 */
#include "cg_internal.h"

#include <math.h>

#include "passes/smem_model.h"

/* Every barrier starts a new epoch: values from before it are recomputed,
 * not kept live, where lower_simt.c can (rematerialisation). A conversion
 * whose rows stay inside each warp group after decoupled turns
 * (Cg.xfer_groups) meets per group. */
void cg_xfer_barrier(Cg *cg)
{
    if (cg->xfer_groups)
        cg_chain_group_sync(cg);
    else
        cg->tg->barrier(cg);
    cg->epoch++;
}

/* ---- layout conversion ---- */

static int elem_bytes(DType dt)
{
    int b = dtype_bits(dt) / 8;
    return b ? b : 1;
}

/* Extent of logical dim k in the scratch: the last dim of a 2-d+ tile is
 * padded by `pad` elements so that column walks spread over banks. */
static int64_t padded_ext(const int64_t *shape, int k, int rank, int pad)
{
    return shape[k] + (k == rank - 1 && rank > 1 ? pad : 0);
}

/* Row-major offset (elements) of a logical coordinate in the padded
 * scratch. The coordinates and the offset are non-negative and below the
 * scratch size, so the arithmetic is marked as not wrapping: LLVM then
 * keeps each register's constant part out of the address (an immediate
 * offset of the access, the same base for every register of a thread)
 * instead of widening every sum to 64 bits on its own. */
static LLVMValueRef smem_offset(Cg *cg, LLVMValueRef *c, const int64_t *shape, int rank, int pad)
{
    LLVMValueRef o = cg_i32(cg, 0);
    for (int k = 0; k < rank; k++) {
        if (k > 0)
            o = cg_nowrap(LLVMBuildMul(cg->b, o, cg_i32(cg, padded_ext(shape, k, rank, pad)), ""));
        o = cg_nowrap(LLVMBuildAdd(cg->b, o, c[k], ""));
    }
    return o;
}

static int64_t smem_elems(const int64_t *shape, int rank, int pad)
{
    int64_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= padded_ext(shape, k, rank, pad);
    return n;
}

static void logical_shape(const Layout *L, int64_t *shape)
{
    for (int a = 0, r = layout_rank(L); a < r; a++)
        shape[a] = L->pshape[layout_pdim(L, a)];
}

/* Row padding of the scratch (elements). 4 bytes spread a column walk over
 * the banks; 16-bit tiles read back as 16-byte rows (the epilogue of a
 * product: bf16 pairs in, 16-byte vectors out) take 16 bytes, which keeps
 * the rows 16-byte aligned and the pair writes of 8 rows on distinct banks. */
static int xfer_pad(const Layout *to, int rank, int eb, const int *perm)
{
    if (rank <= 1)
        return 0;
    if (eb == 2 && !perm && layout_vec(to) * eb >= 16)
        return 16 / eb;
    return eb >= 4 ? 1 : 4 / eb;
}

/* Elements per shared-memory access for the registers of L: runs of
 * consecutive registers along the last logical dim that start aligned in the
 * padded row (at most 16 bytes; 1 when the map permutes or wraps). */
static int xfer_group(const Layout *L, const int64_t *shape, int rank, int eb, int pad, const int *perm,
                      DType dt)
{
    if (perm || rank < 1 || dt == DT_BOOL)
        return 1;
    int pd = layout_pdim(L, rank - 1), espt = layout_vec(L);
    int64_t row = padded_ext(shape, rank - 1, rank, pad);
    int g = espt < 16 / eb ? espt : 16 / eb;
    while (g > 1 && (espt % g || shape[rank - 1] % g || row % g || layout_may_wrap(L, pd)))
        g /= 2;
    return g > 1 ? g : 1;
}

int64_t cg_logical_numel(const Layout *L)
{
    int64_t shape[TILE_MAXRANK], n = 1;
    logical_shape(L, shape);
    for (int k = 0, rank = layout_rank(L); k < rank; k++)
        n *= shape[k];
    return n;
}

LLVMValueRef cg_logical_offset(Cg *cg, const Layout *L, int r)
{
    int rank = layout_rank(L);
    int64_t shape[TILE_MAXRANK];
    LLVMValueRef c[TILE_MAXRANK];
    logical_shape(L, shape);
    for (int k = 0; k < rank; k++)
        c[k] = cg_coord(cg, L, r, k);
    return smem_offset(cg, c, shape, rank, 0);
}

int64_t cg_convert_scratch_bytes(const Layout *to, DType dt, const int *perm)
{
    int rank = layout_rank(to), eb = elem_bytes(dt);
    int64_t shape[TILE_MAXRANK];
    logical_shape(to, shape);
    return smem_elems(shape, rank, xfer_pad(to, rank, eb, perm)) * eb;
}

/* The scratch elements of one side of a conversion: where register r of
 * L goes to (or comes from). When no coordinate of L wraps, register r's
 * element is register 0's plus a compile-time constant (cg_reg_offset), so
 * every access is one per-thread base pointer plus an immediate offset;
 * otherwise each register's coordinates are computed. */
typedef struct Slots {
    const Layout *L;
    const int *perm;
    LLVMValueRef sm, base;        /* base: register 0's element (affine maps) */
    LLVMTypeRef mty;
    const int64_t *shape;
    int rank, pad;
    bool affine;
    int64_t stride[TILE_MAXRANK]; /* elements per step of each logical dim */
} Slots;

static int slot_dim(const Slots *s, int k) { return layout_pdim(s->L, s->perm ? s->perm[k] : k); }

static LLVMValueRef slot_ptr(Cg *cg, const Slots *s, int r)
{
    LLVMValueRef c[TILE_MAXRANK];
    for (int k = 0; k < s->rank; k++)
        c[k] = cg_coord(cg, s->L, r, s->perm ? s->perm[k] : k);
    LLVMValueRef o = smem_offset(cg, c, s->shape, s->rank, s->pad);
    return LLVMBuildGEP2(cg->b, s->mty, s->sm, &o, 1, "");
}

static void slots_init(Cg *cg, Slots *s, const Layout *L, const int *perm, LLVMValueRef sm, LLVMTypeRef mty,
                       const int64_t *shape, int rank, int pad)
{
    *s = (Slots){ .L = L, .perm = perm, .sm = sm, .mty = mty, .shape = shape, .rank = rank, .pad = pad,
                  .affine = true };
    int64_t st = 1;
    for (int k = rank - 1; k >= 0; k--) {
        s->stride[k] = st;
        st *= padded_ext(shape, k, rank, pad);
        s->affine = s->affine && !layout_may_wrap(L, slot_dim(s, k));
    }
    if (s->affine)
        s->base = slot_ptr(cg, s, 0);
}

static LLVMValueRef slots_at(Cg *cg, const Slots *s, int r)
{
    if (!s->affine)
        return slot_ptr(cg, s, r);
    int64_t d = 0;
    for (int k = 0; k < s->rank; k++) {
        int p = slot_dim(s, k);
        d += (cg_reg_offset(s->L, r, p) - cg_reg_offset(s->L, 0, p)) * s->stride[k];
    }
    LLVMValueRef o = cg_i64(cg, d);
    return d ? LLVMBuildGEP2(cg->b, s->mty, s->base, &o, 1, "") : s->base;
}

/* The bank-conflict model (passes/bank_model.c) on warp 0's accesses to
 * the scratch for the registers of L, g elements an access: the byte
 * addresses the code computes (slot_ptr, smem_offset) for lanes 0-31, one
 * warp instruction per register group, wavefronts and ideal summed. Every
 * warp's accesses are warp 0's shifted by whole rows or tiles, the same
 * banks up to a rotation for the padded rows, so warp 0 stands for all. */
static SmemCost xfer_cost(const Layout *L, const int *perm, const int64_t *shape, int rank, int pad, int eb, int g)
{
    SmemCost tot = { 0, 0 };
    int64_t addr[32];
    for (int r = 0, n = layout_nregs(L); r < n; r += g) {
        for (int t = 0; t < 32; t++) {
            int64_t c[TILE_MAXRANK] = { 0 }, o = 0;
            layout_coord(L, t, r, c);
            for (int k = 0; k < rank; k++)
                o = o * padded_ext(shape, k, rank, pad) + c[perm ? perm[k] : k];
            addr[t] = o * eb;
        }
        SmemCost one = pass_smem_bank_cost(addr, 32, g * eb);
        tot.wavefronts += one.wavefronts;
        tot.ideal += one.ideal;
    }
    return tot;
}

LLVMValueRef *cg_convert_layout(Cg *cg, LLVMValueRef *regs, const Layout *from, const Layout *to,
                                DType dt, const int *perm)
{
    LLVMValueRef *same = perm ? NULL : cg_chain_renumber(cg, regs, from, to);
    if (same)
        return same;
    int rank = layout_rank(to), eb = elem_bytes(dt);
    int pad = xfer_pad(to, rank, eb, perm);
    int64_t shape[TILE_MAXRANK];
    logical_shape(to, shape);
    LLVMTypeRef mty = cg_mem_type(cg, dt);
    LLVMValueRef sm = cg_smem(cg, cg_convert_scratch_bytes(to, dt, perm));
    int gw = xfer_group(from, shape, rank, eb, pad, perm, dt), gr = xfer_group(to, shape, rank, eb, pad, perm, dt);
    cg_xfer_barrier(cg);
    Slots ws, rs;
    slots_init(cg, &ws, from, perm, sm, mty, shape, rank, pad);
    for (int r = 0, n = layout_nregs(from); r < n; r += gw) {
        LLVMValueRef p = slots_at(cg, &ws, r);
        LLVMValueRef v = dt == DT_BOOL ? LLVMBuildZExt(cg->b, regs[r], cg->t_i8, "") : regs[r];
        if (gw > 1) {
            v = LLVMGetUndef(LLVMVectorType(mty, (unsigned)gw));
            for (int e = 0; e < gw; e++)
                v = LLVMBuildInsertElement(cg->b, v, regs[r + e], cg_i32(cg, e), "");
        }
        LLVMSetAlignment(LLVMBuildStore(cg->b, v, p), (unsigned)(gw * eb));
    }
    cg_xfer_barrier(cg);
    int n = layout_nregs(to);
    LLVMValueRef *out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    slots_init(cg, &rs, to, NULL, sm, mty, shape, rank, pad);
    for (int r = 0; r < n; r += gr) {
        LLVMValueRef p = slots_at(cg, &rs, r);
        LLVMTypeRef vty = gr > 1 ? LLVMVectorType(mty, (unsigned)gr) : mty;
        LLVMValueRef v = LLVMBuildLoad2(cg->b, vty, p, "");
        LLVMSetAlignment(v, (unsigned)(gr * eb));
        if (gr > 1) {
            for (int e = 0; e < gr; e++)
                out[r + e] = LLVMBuildExtractElement(cg->b, v, cg_i32(cg, e), "");
            continue;
        }
        out[r] = dt == DT_BOOL ? LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->t_i8, 0, 0), "") : v;
    }
    if (cg->report) {
        sb_puts(cg->report, "  layout conversion through shared memory: ");
        layout_print(from, cg->report);
        sb_puts(cg->report, " -> ");
        layout_print(to, cg->report);
        if (gw > 1 || gr > 1)
            sb_printf(cg->report, " (%d-byte writes, %d-byte reads)", gw * eb, gr * eb);
        SmemCost w = xfer_cost(from, perm, shape, rank, pad, eb, gw), rd = xfer_cost(to, NULL, shape, rank, pad, eb, gr);
        sb_printf(cg->report, "; bank model, warp 0: st.shared %lld wavefronts (ideal %lld), ld.shared %lld (ideal "
                  "%lld)", (long long)w.wavefronts, (long long)w.ideal, (long long)rd.wavefronts, (long long)rd.ideal);
        sb_putc(cg->report, '\n');
    }
    return out;
}

/* ---- reductions ---- */

LLVMValueRef cg_red_identity(Cg *cg, const CgRed *rc)
{
    bool f = dtype_is_float(rc->acc), sg = dtype_is_signed(rc->acc);
    int bits = rc->acc == DT_BOOL ? 1 : dtype_bits(rc->acc);
    switch (rc->kind) {
    case RED_SUM: return LLVMConstNull(rc->ty);
    case RED_PROD: return f ? LLVMConstReal(rc->ty, 1.0) : LLVMConstInt(rc->ty, 1, 0);
    case RED_MAX:
        if (f)
            return LLVMConstReal(rc->ty, -INFINITY);
        return sg ? LLVMConstInt(rc->ty, 1ull << (bits - 1), 0) : LLVMConstNull(rc->ty);
    case RED_MIN:
        if (f)
            return LLVMConstReal(rc->ty, INFINITY);
        return sg ? LLVMConstInt(rc->ty, (1ull << (bits - 1)) - 1, 0) : LLVMConstAllOnes(rc->ty);
    default: return LLVMConstNull(rc->ty);
    }
}

LLVMValueRef cg_red_combine(Cg *cg, const CgRed *rc, LLVMValueRef a, LLVMValueRef b)
{
    bool f = dtype_is_float(rc->acc), sg = dtype_is_signed(rc->acc);
    LLVMValueRef ab[2] = { a, b };
    char name[48];
    const char *sfx = f ? (rc->acc == DT_F64 ? "f64" : "f32")
                        : rc->acc == DT_I64 || rc->acc == DT_U64 ? "i64" : rc->acc == DT_BOOL ? "i1"
                        : dtype_bits(rc->acc) == 8 ? "i8" : dtype_bits(rc->acc) == 16 ? "i16" : "i32";
    switch (rc->kind) {
    case RED_SUM: return f ? LLVMBuildFAdd(cg->b, a, b, "") : LLVMBuildAdd(cg->b, a, b, "");
    case RED_PROD: return f ? LLVMBuildFMul(cg->b, a, b, "") : LLVMBuildMul(cg->b, a, b, "");
    case RED_MAX:
        snprintf(name, sizeof name, "llvm.%s.%s", f ? "maxnum" : sg ? "smax" : "umax", sfx);
        return cg_call(cg, name, rc->ty, ab, 2);
    case RED_MIN:
        snprintf(name, sizeof name, "llvm.%s.%s", f ? "minnum" : sg ? "smin" : "umin", sfx);
        return cg_call(cg, name, rc->ty, ab, 2);
    default: return a;
    }
}

LLVMValueRef cg_shfl(Cg *cg, const char *mode, LLVMValueRef v, LLVMValueRef b, int c)
{
    LLVMTypeRef ty = LLVMTypeOf(v);
    LLVMValueRef args[4] = { cg_i32(cg, -1), NULL, b, cg_i32(cg, c) };
    char name[48];
    if (ty == cg->t_f32) {
        args[1] = v;
        snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.f32", mode);
        return cg_call(cg, name, cg->t_f32, args, 4);
    }
    snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.i32", mode);
    unsigned bits = LLVMGetTypeKind(ty) == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(ty) : 64;
    if (bits <= 32) {
        args[1] = LLVMBuildZExt(cg->b, v, cg->t_i32, "");
        LLVMValueRef r = cg_call(cg, name, cg->t_i32, args, 4);
        return bits == 32 ? r : LLVMBuildTrunc(cg->b, r, ty, "");
    }
    LLVMTypeRef v2 = LLVMVectorType(cg->t_i32, 2);
    LLVMValueRef w = LLVMBuildBitCast(cg->b, v, v2, ""), out = LLVMGetUndef(v2);
    for (int h = 0; h < 2; h++) {
        args[1] = LLVMBuildExtractElement(cg->b, w, cg_i32(cg, h), "");
        LLVMValueRef r = cg_call(cg, name, cg->t_i32, args, 4);
        out = LLVMBuildInsertElement(cg->b, out, r, cg_i32(cg, h), "");
    }
    return LLVMBuildBitCast(cg->b, out, ty, "");
}

LLVMValueRef cg_primary_along(Cg *cg, const Layout *L, int r, int p)
{
    Layout only = *L;
    only.slice = 0;
    for (int d = 0; d < L->prank; d++)
        if (d != p)
            only.pshape[d] = (int64_t)layout_cta(L, d) * ((L->pshape[d] + layout_cta(L, d) - 1) / layout_cta(L, d));
    return cg_primary(cg, &only, r);
}

/* Step 1: combine the registers of each thread that differ only along p. */
static LLVMValueRef *reduce_in_thread(Cg *cg, const CgRed *rc, const Layout *L, const Layout *Lr,
                                      LLVMValueRef *in, DType dt, int p)
{
    int nout = layout_nregs(Lr), idx[TILE_MAXRANK];
    LLVMValueRef *acc = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)nout);
    for (int r = 0, n = layout_nregs(L); r < n; r++) {
        layout_reg_index(L, r, idx);
        idx[p] = 0;
        int o = layout_reg_of(Lr, idx);
        LLVMValueRef x = cg_convert(cg, in[r], dt, rc->acc);
        if (layout_may_wrap(L, p))
            x = LLVMBuildSelect(cg->b, cg_primary_along(cg, L, r, p), x, cg_red_identity(cg, rc), "");
        acc[o] = acc[o] ? cg_red_combine(cg, rc, acc[o], x) : x;
    }
    return acc;
}

/* The logical (row-major) offset of thread t's output register r of Lr:
 * its partials' scratch words start at this times nw. */
static int64_t red_slot(const Layout *Lr, int t, int r)
{
    int rank = layout_rank(Lr);
    int64_t shape[TILE_MAXRANK], c[TILE_MAXRANK] = { 0 }, o = 0;
    logical_shape(Lr, shape);
    layout_coord(Lr, t, r, c);
    for (int k = 0; k < rank; k++)
        o = o * shape[k] + c[k];
    return o;
}

/* The partials are read spread over the lanes, then combined by a
 * butterfly (below), when the nw warps' partials are 8 to 32 words and
 * every thread of the block needs the same outputs (the threads differ
 * along p alone: a row sum of whole rows held by every thread). */
static bool red_spread(const Layout *L, int p)
{
    int nw = L->wpc[p];
    if (nw < 8 || nw > 32 || (nw & (nw - 1)))
        return false;
    for (int d = 0; d < L->prank; d++)
        if (d != p && (L->tpw[d] != 1 || L->wpc[d] != 1))
            return false;
    return true;
}

/* Step 3, spread: lane l reads partial l mod nw of output r0 + l / nw
 * (32 / nw outputs a load; a lane past the last output reads the last),
 * log2(nw) butterfly steps combine each nw-lane group's partials (every
 * lane of a group gets the same bits: the combinations commute), and each
 * output is taken from its group's first lane. Per output of a 16-warp
 * row sum: half a load, two shuffles and two combinations against four
 * 16-byte loads and 15 combinations in every thread. */
static void reduce_spread(Cg *cg, const CgRed *rc, const Layout *Lr, LLVMValueRef sm, int nw, LLVMValueRef *acc)
{
    int nout = layout_nregs(Lr), k = 32 / nw;
    LLVMValueRef grp = LLVMBuildUDiv(cg->b, cg->lane, cg_i32(cg, nw), "");
    LLVMValueRef part = LLVMBuildURem(cg->b, cg->lane, cg_i32(cg, nw), "");
    for (int r0 = 0; r0 < nout; r0 += k) {
        int n = nout - r0 < k ? nout - r0 : k;
        LLVMValueRef o = cg_i32(cg, (int)(red_slot(Lr, 0, r0 + n - 1) * nw));
        for (int j = n - 2; j >= 0; j--)
            o = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, grp, cg_i32(cg, j), ""),
                                cg_i32(cg, (int)(red_slot(Lr, 0, r0 + j) * nw)), o, "");
        o = LLVMBuildAdd(cg->b, o, part, "");
        LLVMValueRef x = LLVMBuildLoad2(cg->b, rc->ty, LLVMBuildGEP2(cg->b, rc->ty, sm, &o, 1, ""), "");
        for (int m = 1; m < nw; m *= 2)
            x = cg_red_combine(cg, rc, x, cg_shfl(cg, "bfly", x, cg_i32(cg, m), 31));
        for (int j = 0; j < n; j++)
            acc[r0 + j] = n == 1 ? x : cg_shfl(cg, "idx", x, cg_i32(cg, j * nw), 31);
    }
}

/* Step 3: partials of the wpc[p] warps along p meet in shared memory. */
static void reduce_across_warps(Cg *cg, const CgRed *rc, const Layout *L, const Layout *Lr,
                                LLVMValueRef *acc, int p)
{
    int nw = L->wpc[p], nout = layout_nregs(Lr);
    LLVMValueRef sm = cg_smem(cg, cg_logical_numel(Lr) * nw * elem_bytes(rc->acc));
    int ws = layout_warp_stride(L, p);
    LLVMValueRef wp = LLVMBuildURem(cg->b, LLVMBuildUDiv(cg->b, cg->warp, cg_i32(cg, ws), ""), cg_i32(cg, nw), "");
    LLVMValueRef *slot = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)nout);
    cg_xfer_barrier(cg);
    for (int r = 0; r < nout; r++) {
        slot[r] = LLVMBuildMul(cg->b, cg_logical_offset(cg, Lr, r), cg_i32(cg, nw), "");
        LLVMValueRef o = LLVMBuildAdd(cg->b, slot[r], wp, "");
        LLVMBuildStore(cg->b, acc[r], LLVMBuildGEP2(cg->b, rc->ty, sm, &o, 1, ""));
    }
    cg_xfer_barrier(cg);
    if (red_spread(L, p)) {
        reduce_spread(cg, rc, Lr, sm, nw, acc);
        return;
    }
    for (int r = 0; r < nout; r++) {
        LLVMValueRef v = NULL;
        for (int w = 0; w < nw; w++) {
            LLVMValueRef o = LLVMBuildAdd(cg->b, slot[r], cg_i32(cg, w), "");
            LLVMValueRef x = LLVMBuildLoad2(cg->b, rc->ty, LLVMBuildGEP2(cg->b, rc->ty, sm, &o, 1, ""), "");
            v = v ? cg_red_combine(cg, rc, v, x) : x;
        }
        acc[r] = v;
    }
}

static void cost_add(SmemCost *sum, const int64_t *addr, int eb)
{
    SmemCost one = pass_smem_bank_cost(addr, 32, eb);
    sum->wavefronts += one.wavefronts;
    sum->ideal += one.ideal;
}

/* The bank-conflict model of reduce_across_warps' scratch for warp 0
 * (another warp's slots are warp 0's moved by its position along p, a
 * whole word: the same pattern of banks): every lane stores register r's
 * partial at word (logical offset of its element) x nw + 0, then loads the
 * nw words from (logical offset) x nw, one load a warp, per register; or,
 * spread (red_spread), lane t loads word t mod nw of output r0 + t / nw. */
static void red_cost(const Layout *L, int p, const Layout *Lr, int nw, int eb, SmemCost *w, SmemCost *rd)
{
    int64_t addr[32], off[32];
    int nout = layout_nregs(Lr);
    bool spread = red_spread(L, p);
    *w = *rd = (SmemCost){ 0, 0 };
    for (int r = 0; r < nout; r++) {
        for (int t = 0; t < 32; t++) {
            off[t] = red_slot(Lr, t, r) * nw;
            addr[t] = off[t] * eb;
        }
        cost_add(w, addr, eb);
        for (int k = 0; k < nw && !spread; k++) {
            for (int t = 0; t < 32; t++)
                addr[t] = (off[t] + k) * eb;
            cost_add(rd, addr, eb);
        }
    }
    for (int r0 = 0; r0 < nout && spread; r0 += 32 / nw) {   /* the reads of reduce_spread */
        for (int t = 0; t < 32; t++) {
            int r = r0 + t / nw < nout ? r0 + t / nw : nout - 1;
            addr[t] = (red_slot(Lr, 0, r) * nw + t % nw) * eb;
        }
        cost_add(rd, addr, eb);
    }
}

int cg_lower_reduce(Cg *cg, Op *op)
{
    Func *f = cg->f;
    const Type *t = ir_type(f, op->args[0]), *rt = ir_type(f, op->res[0]);
    DType dt = (DType)t->dtype;
    int axis = (int)op->iattr[0];
    CgRed rc = { (ReduceKind)op->iattr[1], dt == DT_F16 || dt == DT_BF16 ? DT_F32 : dt, NULL };
    if (dt == DT_F8E4M3 || dt == DT_F8E5M2 || axis < 0 || axis >= t->rank || rc.kind >= RED_COUNT) {
        diag_error(cg->d, op->loc, "this reduction is not supported by the code generator yet");
        return 1;
    }
    rc.ty = cg_type(cg, rc.acc);
    const TileVal *v = &cg->vals[op->args[0]];
    const Layout *L = v->kind == TV_REGS ? v->L : cg_default_layout(cg, t, true);
    LLVMValueRef *in = cg_materialize(cg, v, t, L, op->loc);
    int p = layout_pdim(L, axis);
    const Layout *Lr = cg_layout_dup(cg, layout_slice(L, axis));
    LLVMValueRef *acc = reduce_in_thread(cg, &rc, L, Lr, in, dt, p);
    int nout = layout_nregs(Lr), ls = layout_lane_stride(L, p);
    for (int m = ls; m < ls * L->tpw[p]; m *= 2)
        for (int r = 0; r < nout; r++)
            acc[r] = cg_red_combine(cg, &rc, acc[r], cg_shfl(cg, "bfly", acc[r], cg_i32(cg, m), 31));
    if (L->wpc[p] > 1)
        reduce_across_warps(cg, &rc, L, Lr, acc, p);
    for (int r = 0; r < nout; r++)
        acc[r] = cg_convert(cg, acc[r], rc.acc, (DType)rt->dtype);
    if (rt->kind != TY_TILE)
        cg->vals[op->res[0]] = (TileVal){ .kind = TV_SCALAR, .s = acc[0] };
    else
        cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = Lr, .r = acc };
    if (cg->report) {
        sb_printf(cg->report, "  reduce %s axis %d at %d:%d: %d lanes shuffle, ", reduce_names[rc.kind], axis,
                  op->loc.line, op->loc.col, L->tpw[p]);
        if (L->wpc[p] > 1)
            sb_printf(cg->report, "%d warps via shared memory -> ", L->wpc[p]);
        else
            sb_puts(cg->report, "no shared memory -> ");
        layout_print(Lr, cg->report);
        if (L->wpc[p] > 1) {
            SmemCost w, rd;
            red_cost(L, p, Lr, L->wpc[p], elem_bytes(rc.acc), &w, &rd);
            sb_printf(cg->report, "; bank model, warp 0: st.shared %lld wavefronts (ideal %lld), ld.shared %lld "
                      "(ideal %lld)", (long long)w.wavefronts, (long long)w.ideal, (long long)rd.wavefronts,
                      (long long)rd.ideal);
        }
        sb_putc(cg->report, '\n');
    }
    return 0;
}
