/* simt_values.c - the registers of SIMT tiles (lower_simt.c): coordinates
 * of register slots, materialising a tile value in a layout, and the
 * recomputation of 16-bit float chains after barriers.
 */
#include "cg_internal.h"

#include <stdint.h>

/* ---- coordinates of register slots ---- */

/* Is the kernel being lowered a SIMT one (no tensor-core products)? Only
 * those take the compile-time forms below (shifts with no-wrap flags, the
 * unaligned-path changes of lower_mem.c): tensor-core kernels keep the IR
 * their tuning was measured on (attention sits at 255 registers, where a
 * different but equivalent IR spilled). */
bool cg_simt_kernel(const Cg *cg)
{
    return LLVMGetStringAttributeAtIndex(cg->fn, LLVMAttributeFunctionIndex, "tilec.simt", 10) != NULL;
}

/* log2 of x if x is a power of two, else -1. */
static int exact_log2(int64_t x)
{
    int k = 0;
    if (x <= 0 || (x & (x - 1)))
        return -1;
    while (((int64_t)1 << k) < x)
        k++;
    return k;
}

/* (id / stride) % n for the lane or warp id, whose values lie in [0, range).
 * Written as shifts and masks when stride and n are powers of two (they are
 * for every layout today), so that the IR reaches the backend in the form
 * instcombine would give it. */
static LLVMValueRef bits_of(Cg *cg, LLVMValueRef id, int stride, int n, int range)
{
    if (n <= 1)
        return cg_i32(cg, 0);
    int ls = exact_log2(stride), ln = exact_log2(n);
    if (ls < 0 || ln < 0) {
        LLVMValueRef v = stride > 1 ? LLVMBuildUDiv(cg->b, id, cg_i32(cg, stride), "") : id;
        return LLVMBuildURem(cg->b, v, cg_i32(cg, n), "");
    }
    LLVMValueRef v = ls > 0 ? LLVMBuildLShr(cg->b, id, cg_i32(cg, ls), "") : id;
    if ((int64_t)stride * n < range)
        v = LLVMBuildAnd(cg->b, v, cg_i32(cg, n - 1), "");
    return v;
}

static LLVMValueRef lane_bits(Cg *cg, const Layout *L, int p)
{
    return bits_of(cg, cg->lane, layout_lane_stride(L, p), L->tpw[p], 32);
}

/* The warp id is below the kernel's warp count (nvvm.maxntid). */
static LLVMValueRef warp_bits(Cg *cg, const Layout *L, int p)
{
    return bits_of(cg, cg->warp, layout_warp_stride(L, p), L->wpc[p], cg->nwarps);
}

/* x * c for a small non-negative x (no wrap): a shift when c is a power of two. */
static LLVMValueRef scale(Cg *cg, LLVMValueRef x, int64_t c)
{
    int k = exact_log2(c);
    if (k == 0)
        return x;
    return cg_nowrap(k > 0 ? LLVMBuildShl(cg->b, x, cg_i32(cg, k), "") : LLVMBuildMul(cg->b, x, cg_i32(cg, c), ""));
}

/* a + b for small non-negative a, b (no wrap). */
static LLVMValueRef add_nw(Cg *cg, LLVMValueRef a, LLVMValueRef b)
{
    if (LLVMIsAConstantInt(b) && LLVMConstIntGetZExtValue(b) == 0)
        return a;
    if (LLVMIsAConstantInt(a) && LLVMConstIntGetZExtValue(a) == 0)
        return b;
    return cg_nowrap(LLVMBuildAdd(cg->b, a, b, ""));
}

/* The part of register r's coordinate along p that is a compile-time constant. */
int64_t cg_reg_offset(const Layout *L, int r, int p)
{
    int idx[TILE_MAXRANK];
    layout_reg_index(L, r, idx);
    int es = layout_espt(L, p), rp = layout_rpt(L, p);
    return (int64_t)(idx[p] / es / rp) * layout_cta(L, p) + (int64_t)(idx[p] / es % rp) * L->tpw[p] * es +
           idx[p] % es;
}

static LLVMValueRef unwrapped(Cg *cg, const Layout *L, int r, int p)
{
    int es = layout_espt(L, p), rp = layout_rpt(L, p);
    int64_t k = cg_reg_offset(L, r, p);
    LLVMValueRef u = scale(cg, lane_bits(cg, L, p), es);
    u = add_nw(cg, u, scale(cg, warp_bits(cg, L, p), (int64_t)rp * L->tpw[p] * es));
    return add_nw(cg, u, cg_i32(cg, k));
}

LLVMValueRef cg_coord(Cg *cg, const Layout *L, int r, int axis)
{
    int p = layout_pdim(L, axis);
    LLVMValueRef u = unwrapped(cg, L, r, p);
    if (!layout_may_wrap(L, p))
        return u;
    if (exact_log2(L->pshape[p]) >= 0)
        return LLVMBuildAnd(cg->b, u, cg_i32(cg, L->pshape[p] - 1), "");
    return LLVMBuildURem(cg->b, u, cg_i32(cg, L->pshape[p]), "");
}

LLVMValueRef cg_primary(Cg *cg, const Layout *L, int r)
{
    LLVMValueRef ok = LLVMConstInt(cg->t_i1, 1, 0);
    for (int p = 0; p < L->prank; p++) {
        LLVMValueRef c = NULL;
        if (L->slice >> p & 1) {
            if (L->tpw[p] * L->wpc[p] == 1)
                continue;
            LLVMValueRef ld = lane_bits(cg, L, p), wd = warp_bits(cg, L, p);
            c = LLVMBuildICmp(cg->b, LLVMIntEQ, LLVMBuildOr(cg->b, ld, wd, ""), cg_i32(cg, 0), "");
        } else if (layout_may_wrap(L, p)) {
            c = LLVMBuildICmp(cg->b, LLVMIntULT, unwrapped(cg, L, r, p), cg_i32(cg, L->pshape[p]), "");
        }
        if (c)
            ok = LLVMBuildAnd(cg->b, ok, c, "");
    }
    return ok;
}

/* ---- materialising tile values ---- */

LLVMValueRef *new_regs(Cg *cg, const Layout *L)
{
    return arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)layout_nregs(L));
}

/* ---- rematerialisation ----
 * A tile computed elementwise from 16-bit float loads (the widening cast,
 * then cheap arithmetic, index compares, selects and exp)
 * is not kept live across a barrier: its first use after one recomputes it
 * from the loaded registers, which stay packed two per 32-bit register. The
 * reductions of softmax / layernorm then keep half the registers live.
 * The widening of a recomputation is written as bit operations (alternating
 * shl and prmt), never as the fpext of the first computation, so that CSE
 * in LLVM or ptxas cannot merge it back and revive the long live range.
 * Only at the top level of the body (depth 0): a recomputation cached there
 * dominates every later use. Only in "wide" rows (Func.sched.wide):
 * ptxas schedules the recomputed code with more registers unless capped;
 * with a cap of 40 it helps bf16 [16384] softmax (docs/codegen.md). */

static bool remat_code(OpCode c)
{
    switch (c) {
    case OP_CAST: case OP_ADD: case OP_SUB: case OP_MUL: case OP_NEG: case OP_MIN: case OP_MAX:
    case OP_ABS: case OP_CMP: case OP_SELECT: case OP_EXP: case OP_EXP2:
        return true;
    default:
        return false;
    }
}

/* May op's result be recomputed later? Every register operand must be
 * recomputable itself, an index tile, or (for a cast) a 16-bit load. */
bool remat_ok(Cg *cg, Op *op)
{
    if (!cg->f->sched.wide || cg->depth > 0 || !remat_code((OpCode)op->code))
        return false;
    bool src = false;
    for (int i = 0; i < op->nargs; i++) {
        const TileVal *v = &cg->vals[op->args[i]];
        if (v->kind == TV_SCALAR || v->kind == TV_SPLAT)
            continue;
        if (v->kind == TV_IOTA || (v->kind == TV_REGS && (v->def || (v->leaf && op->code == OP_CAST)))) {
            src = true;
            continue;
        }
        return false;
    }
    return src;
}

static LLVMValueRef prmt(Cg *cg, LLVMValueRef w, bool high)
{
    static const char lo[] = "prmt.b32 $0, $1, 0, 0x1044;", hi[] = "prmt.b32 $0, $1, 0, 0x3244;";
    LLVMTypeRef ft = LLVMFunctionType(cg->t_i32, &cg->t_i32, 1, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(ft, (char *)(high ? hi : lo), sizeof lo - 1, (char *)"=r,r", 4, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(cg->b, ft, fn, &w, 1, "");
}

/* bf16 -> f32 by bit operations on the 32-bit register that holds it: an
 * element taken out of a loaded vector is widened from the packed pair
 * (so only the packed registers stay live); shl / and, or prmt on even
 * generations. */
static LLVMValueRef widen_bf16(Cg *cg, LLVMValueRef x, int gen)
{
    LLVMValueRef w, vec = LLVMIsAExtractElementInst(x) ? LLVMGetOperand(x, 0) : NULL;
    LLVMValueRef ix = vec ? LLVMGetOperand(x, 1) : NULL;
    bool high = false;
    if (vec && LLVMIsAConstantInt(ix) && LLVMGetVectorSize(LLVMTypeOf(vec)) % 2 == 0) {
        unsigned i = (unsigned)LLVMConstIntGetZExtValue(ix), n = LLVMGetVectorSize(LLVMTypeOf(vec));
        LLVMValueRef words = LLVMBuildBitCast(cg->b, vec, LLVMVectorType(cg->t_i32, n / 2), "");
        w = LLVMBuildExtractElement(cg->b, words, cg_i32(cg, i / 2), "");
        high = i % 2;
    } else {
        w = LLVMBuildZExt(cg->b, LLVMBuildBitCast(cg->b, x, cg->t_i16, ""), cg->t_i32, "");
    }
    if (gen % 2 == 0)
        w = prmt(cg, w, high);
    else if (high)
        w = LLVMBuildAnd(cg->b, w, cg_i32(cg, (int32_t)0xffff0000), "");
    else
        w = LLVMBuildShl(cg->b, w, cg_i32(cg, 16), "");
    return LLVMBuildBitCast(cg->b, w, cg->t_f32, "");
}

static DType elem_dtype(Cg *cg, Op *op)
{
    return (DType)ir_type(cg->f, op->args[op->code == OP_SELECT ? 1 : 0])->dtype;
}

/* The value of v in cg->vals to recompute now, or NULL. */
static TileVal *remat_target(Cg *cg, const TileVal *v)
{
    if (!v->def || v->epoch == cg->epoch || cg->depth > 0 || v < cg->vals || v >= cg->vals + cg->f->nvals)
        return NULL;
    return &cg->vals[v - cg->vals];
}

static LLVMValueRef unwrapped(Cg *cg, const Layout *L, int r, int p);

/* A compare of an index tile with a uniform value S as `offset_r pred
 * (S - base)`: one subtraction, then a compare of a constant with it per
 * register, instead of an index (base + offset_r) and a compare per
 * register (layernorm's `iota(BLOCK) < N`: 64 adds fewer per thread at
 * [16384]). NULL: not that pattern. */
typedef struct IotaCmp {
    Op *op;
    int ia;                  /* which operand is the index tile */
    int p;                   /* its layout dim */
    LLVMValueRef t;          /* S - base */
} IotaCmp;

/* Is op such a compare in layout L? Emits t. */
static bool iota_cmp_init(Cg *cg, Op *op, const Layout *L, IotaCmp *ic)
{
    if (!op || op->code != OP_CMP || op->nargs != 2)
        return false;
    const TileVal *a = &cg->vals[op->args[0]], *b = &cg->vals[op->args[1]];
    int ia = a->kind == TV_IOTA ? 0 : b->kind == TV_IOTA ? 1 : -1;
    const TileVal *u = ia == 0 ? b : a, *io = ia == 0 ? a : b;
    if (ia < 0 || (u->kind != TV_SCALAR && u->kind != TV_SPLAT) || elem_dtype(cg, op) != DT_I32)
        return false;
    int p = layout_pdim(L, io->axis);
    if (layout_may_wrap(L, p))
        return false;
    *ic = (IotaCmp){ op, ia, p, LLVMBuildSub(cg->b, u->s, unwrapped(cg, L, 0, p), "") };
    return true;
}

/* The compare for index offset k (from the thread's first index). */
static LLVMValueRef iota_cmp_at(Cg *cg, const IotaCmp *ic, int64_t off)
{
    LLVMValueRef k = cg_i32(cg, off), ab[2] = { ic->ia == 0 ? k : ic->t, ic->ia == 0 ? ic->t : k };
    return elem(cg, ic->op, DT_I32, DT_BOOL, ab);
}

LLVMValueRef *iota_cmp(Cg *cg, Op *op, const Layout *L)
{
    IotaCmp ic;
    if (!iota_cmp_init(cg, op, L, &ic))
        return NULL;
    int n = layout_nregs(L);
    LLVMValueRef *out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int r = 0; r < n; r++)
        out[r] = iota_cmp_at(cg, &ic, cg_reg_offset(L, r, ic.p) - cg_reg_offset(L, 0, ic.p));
    return out;
}

/* `where(iota pred S, a, b)` with an ordered pred: the compare is monotone
 * in the index, so it holds for all of a thread's indices when it holds
 * for its first and its last. A thread for which it does takes a as it is
 * (a branch that only the warps at the end of the range split on); the
 * others compare and select per register. Layernorm's `where(iota(BLOCK)
 * < N, x - mean, 0)`: every thread of a full row skips 64 compares and 64
 * selects; [16384] 90.6% of copy bandwidth against 88.0% selecting (H200,
 * same process). */
LLVMValueRef *guarded_select(Cg *cg, Op *op, const Layout *L)
{
    Op *c = ir_val(cg->f, op->args[0])->def;
    IotaCmp ic;
    if (op->code != OP_SELECT || !c || c->code != OP_CMP || c->iattr[0] < CMP_LT || c->iattr[0] > CMP_GE ||
        !iota_cmp_init(cg, c, L, &ic))
        return NULL;
    const Type *rt = ir_type(cg->f, op->res[0]);
    LLVMValueRef *a = cg_materialize(cg, &cg->vals[op->args[1]], ir_type(cg->f, op->args[1]), L, op->loc);
    LLVMValueRef *b = cg_materialize(cg, &cg->vals[op->args[2]], ir_type(cg->f, op->args[2]), L, op->loc);
    int n = layout_nregs(L);
    int64_t lo = 0, hi = 0, base = cg_reg_offset(L, 0, ic.p);
    for (int r = 0; r < n; r++) {
        int64_t k = cg_reg_offset(L, r, ic.p) - base;
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    LLVMValueRef all = LLVMBuildAnd(cg->b, iota_cmp_at(cg, &ic, lo), iota_cmp_at(cg, &ic, hi), "where.all");
    LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b), some = cg_new_block(cg, "where.some"),
                      join = cg_new_block(cg, "where.join");
    LLVMBuildCondBr(cg->b, all, join, some);
    LLVMPositionBuilderAtEnd(cg->b, some);
    LLVMValueRef *sel = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int r = 0; r < n; r++)
        sel[r] = LLVMBuildSelect(cg->b, iota_cmp_at(cg, &ic, cg_reg_offset(L, r, ic.p) - base), a[r], b[r], "");
    LLVMBasicBlockRef last = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
    if (cg->report)
        sb_printf(cg->report, "  select at %d:%d: on an index compare; threads whose indices +%lld..+%lld all pass skip "
                  "the compares and selects (one branch)\n", op->loc.line, op->loc.col, (long long)lo, (long long)hi);
    LLVMValueRef *out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int r = 0; r < n; r++) {
        out[r] = LLVMBuildPhi(cg->b, cg_type(cg, (DType)rt->dtype), "");
        LLVMValueRef in[2] = { a[r], sel[r] };
        LLVMBasicBlockRef bb[2] = { from, last };
        LLVMAddIncoming(out[r], in, bb, 2);
    }
    return out;
}

/* Recomputed (rematerialisation), the compare alternates between that form
 * and the indices' so that CSE does not merge a recomputation with the
 * computation before it and keep its predicates live across barriers. */
static LLVMValueRef *remat_iota_cmp(Cg *cg, TileVal *v)
{
    if (v->gen % 2 == 1)
        return NULL;
    return iota_cmp(cg, v->def, v->L);
}

static LLVMValueRef *remat(Cg *cg, TileVal *v)
{
    Op *op = v->def;
    DType dt = elem_dtype(cg, op), rdt = (DType)ir_type(cg->f, op->res[0])->dtype;
    bool widen = op->code == OP_CAST && dt == DT_BF16 && rdt == DT_F32 && cg->vals[op->args[0]].leaf;
    v->gen++;
    LLVMValueRef *out = remat_iota_cmp(cg, v);
    if (out) {
        v->r = out;
        v->epoch = cg->epoch;
        return out;
    }
    LLVMValueRef *in[3], a[3];
    for (int i = 0; i < op->nargs && i < 3; i++)
        in[i] = cg_materialize(cg, &cg->vals[op->args[i]], ir_type(cg->f, op->args[i]), v->L, op->loc);
    int n = layout_nregs(v->L);
    out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < op->nargs && i < 3; i++)
            a[i] = in[i][r];
        out[r] = widen ? widen_bf16(cg, a[0], v->gen) : elem(cg, op, dt, rdt, a);
    }
    v->r = out;
    v->epoch = cg->epoch;
    return out;
}

/* A narrow load's elements are taken out of its packed vectors where they
 * are first used (at the top level), so that a load issued early (W, B of
 * layernorm) stays packed, two elements per register, until then. */
static void place_extracts(Cg *cg, const TileVal *v)
{
    if (v < cg->vals || v >= cg->vals + cg->f->nvals)
        return;
    TileVal *m = &cg->vals[v - cg->vals];
    m->lazy = false;
    if (cg->depth > 0)
        return;
    for (int i = 0, n = layout_nregs(v->L); i < n; i++) {
        LLVMValueRef x = v->r[i];
        if (LLVMIsAExtractElementInst(x) && !LLVMGetFirstUse(x)) {
            LLVMInstructionRemoveFromParent(x);
            LLVMInsertIntoBuilder(cg->b, x);
        }
    }
}

/* A broadcast tile wanted in another layout L (a bias row added to an
 * accumulator): its source (the size-1 dims kept) converted to L with the
 * source's shape instead of the whole tile: the same registers, each slot
 * holding its column's value, through a scratch of the source's size (a
 * 128-float row: 512 B, not the 64 KB of a 128 x 128 f32 tile). NULL when
 * L with the source's shape does not keep L's registers per dim. */
static LLVMValueRef *broadcast_in(Cg *cg, const TileVal *v, const Layout *L, Loc loc)
{
    const Type *st = ir_type(cg->f, v->bsrc);
    const TileVal *s = &cg->vals[v->bsrc];
    if (s->kind != TV_REGS || st->kind != TY_TILE || st->rank != layout_rank(L))
        return NULL;
    Layout ls = layout_with_shape(L, st->shape);
    bool same = true;
    for (int d = 0; d < L->prank; d++) {
        if (layout_nregs_dim(&ls, d) == layout_nregs_dim(L, d))
            continue;
        if (L->slice & (1u << d) || ls.pshape[d] != 1)
            return NULL;
        same = false;   /* a size-1 dim that L repeats in registers (a wgmma accumulator's row blocks) */
    }
    LLVMValueRef *src = cg_materialize(cg, s, st, cg_layout_dup(cg, ls), loc);
    if (same)
        return src;
    /* Register r of L holds its column's value: the source register at the
     * same indices, the size-1 dims' index taken modulo their registers. */
    int n = layout_nregs(L);
    LLVMValueRef *out = new_regs(cg, L);
    for (int r = 0; r < n; r++) {
        int idx[TILE_MAXRANK];
        layout_reg_index(L, r, idx);
        for (int d = 0; d < L->prank; d++)
            idx[d] %= layout_nregs_dim(&ls, d);
        out[r] = src[layout_reg_of(&ls, idx)];
    }
    return out;
}

LLVMValueRef *cg_materialize(Cg *cg, const TileVal *v, const Type *t, const Layout *L, Loc loc)
{
    int n = layout_nregs(L);
    LLVMValueRef *r;
    switch (v->kind) {
    case TV_SPLAT:
    case TV_SCALAR:
        r = new_regs(cg, L);
        for (int i = 0; i < n; i++)
            r[i] = v->s;
        return r;
    case TV_IOTA:
        r = new_regs(cg, L);
        for (int i = 0; i < n; i++)
            r[i] = cg_convert(cg, cg_coord(cg, L, i, v->axis), DT_I32, (DType)t->dtype);
        return r;
    case TV_REGS: {
        LLVMValueRef *b = v->bsrc && !layout_eq(v->L, L) ? broadcast_in(cg, v, L, loc) : NULL;
        if (b)
            return b;
        if (v->lazy)
            place_extracts(cg, v);
        TileVal *m = remat_target(cg, v);
        LLVMValueRef *regs = m ? remat(cg, m) : v->r;
        if (layout_eq(v->L, L))
            return regs;
        return cg_convert_layout(cg, regs, v->L, L, (DType)t->dtype, NULL);
    }
    case TV_SMEM:
        return cg_smem_read(cg, v->sv, (DType)t->dtype, L);
    default:
        diag_internal(cg->d, loc, "tile value used before it was defined");
        r = new_regs(cg, L);
        for (int i = 0; i < n; i++)
            r[i] = LLVMGetUndef(cg_type(cg, (DType)t->dtype));
        return r;
    }
}

void set_regs(Cg *cg, ValId v, const Layout *L, LLVMValueRef *r)
{
    cg->vals[v] = (TileVal){ .kind = TV_REGS, .L = L, .r = r };
}
