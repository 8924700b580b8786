/* lower_mma.c - `@` (DOT) on tensor cores: mma.sync m16n8k16 with bf16 or
 * f16 operands and f32 accumulators, operands read from shared memory with
 * ldmatrix.
 *
 * Warps: the [M, N] accumulator is split over a wm x wn warp grid
 * (layout_mma_warps: 128 x 128 with 8 warps -> 2 x 4, warp tiles 64 x 32);
 * each warp holds tm x tn m16n8 fragments in the accumulator layout
 * (layout.h). The product runs as K/16 unrolled steps: per step, one
 * ldmatrix.x4 per m16 tile of A and per pair of n8 tiles of B, then tm * tn
 * mma.sync; the fragments of step k+1 are loaded before the products of
 * step k (register double buffering).
 *
 * Operands: a shared view (SMEM_LOAD of a pipeline slot, possibly through
 * TRANS) is read in place, with ldmatrix for [M, K] A / [N, K] B (B given
 * as TRANS) and ldmatrix.trans for [K, N] B / [K, M] A. A register operand
 * is written to the shared scratch (rows padded by 16 bytes, so ldmatrix
 * reads are conflict-free) unless it is already in the A-operand layout
 * (the accumulator of an earlier product with wn = 1 cast elementwise: the
 * FlashAttention-2 reuse), which needs no data movement at all.
 */
#include "cg_internal.h"

#include <string.h>

typedef struct Mma {
    Op *op;
    bool f16;
    int64_t m, n, k;
    int wm, wn, tm, tn;
    const Layout *L;               /* accumulator layout */
    const SmemView *av, *bv;       /* shared operands (NULL: A from registers) */
    LLVMValueRef *aregs;           /* A in the A-operand layout (registers) */
    const Layout *aL;
    LLVMValueRef wrow, wcol;       /* this warp's first row / column */
    LLVMValueRef l15, l7, hi8, mid8;  /* lane terms of the ldmatrix addresses */
} Mma;

/* ---- warps ---- */

static bool warps_visit(Func *f, Op *op, void *ctx)
{
    int *w = ctx;
    if (op->code != OP_DOT)
        return true;
    const Type *t = ir_type(f, op->res[0]);
    int64_t tiles = t->rank == 2 ? t->shape[0] * t->shape[1] / 1024 : 1;
    int n = 1;
    while (n * 2 <= tiles && n * 2 <= w[1])
        n *= 2;
    if (n > w[0])
        w[0] = n;
    return true;
}

/* One warp per 32 x 32 of the largest accumulator, at most 8 warps. */
int cg_mma_kernel_warps(Func *f, int max_warps)
{
    int w[2] = { 0, max_warps < 8 ? max_warps : 8 };
    ir_walk(f, &f->body, warps_visit, w);
    return w[0];
}

static Layout acc_layout(Cg *cg, int64_t m, int64_t n, int *wm, int *wn)
{
    layout_mma_warps(m, n, cg->nwarps, wm, wn);
    return layout_mma_acc(m, n, *wm, *wn, cg->nwarps);
}

/* The DOT that v comes from through elementwise ops (acc + a @ b), or NULL. */
static Op *dot_source(Func *f, ValId v, int depth)
{
    Op *def = ir_val(f, v)->def;
    if (!def || depth > 8)
        return NULL;
    if (def->code == OP_DOT)
        return def;
    if (!(op_info[def->code].flags & OPF_ELEM))
        return NULL;
    for (int i = 0; i < def->nargs; i++) {
        Op *d = dot_source(f, def->args[i], depth + 1);
        if (d)
            return d;
    }
    return NULL;
}

const Layout *cg_mma_carried_layout(Cg *cg, Op *forop, int i)
{
    Block *body = &forop->regions[0];
    Op *y = body->nops ? body->ops[body->nops - 1] : NULL;
    if (!y || y->code != OP_YIELD || i >= y->nargs)
        return NULL;
    Op *def = dot_source(cg->f, y->args[i], 0);
    if (!def || !type_same_shape(ir_type(cg->f, def->res[0]), ir_type(cg->f, y->args[i])))
        return NULL;
    const Type *t = ir_type(cg->f, def->res[0]);
    if (t->rank != 2 || t->shape[0] % 16 || t->shape[1] % 16)
        return NULL;
    int wm, wn;
    return cg_layout_dup(cg, acc_layout(cg, t->shape[0], t->shape[1], &wm, &wn));
}

/* ---- operands ---- */

/* Is L the A-operand register map of this product (same thread and
 * coordinate for every element, registers numbered as layout_mma_a)? */
static bool is_a_layout(const Mma *mm, const Layout *L)
{
    if (mm->wn != 1 || L->prank != 2 || L->slice || L->order[0] != 1 || L->pshape[0] != mm->m ||
        L->pshape[1] != mm->k)
        return false;
    return L->spt[0] == 1 && L->tpw[0] == 8 && layout_rpt(L, 0) == 2 * mm->tm && L->wpc[0] == mm->wm &&
           L->spt[1] == 2 && L->tpw[1] == 4 && L->wpc[1] == 1 && mm->k % (8 * layout_rpt(L, 1)) == 0;
}

static SmemView *scratch_view(Cg *cg, LLVMValueRef base, int64_t off, int64_t rows, int64_t cols, int eb)
{
    SmemView *sv = arena_alloc(cg->a, sizeof *sv);
    memset(sv, 0, sizeof *sv);
    LLVMValueRef o = cg_i64(cg, off);
    sv->base = LLVMBuildGEP2(cg->b, cg->t_i8, base, &o, 1, "");
    sv->rows = rows;
    sv->cols = cols;
    sv->eb = eb;
    sv->swz = SWZ_PAD;
    sv->pad = 16;
    sv->slots = 1;
    return sv;
}

/* Register operands go to the scratch: A as [M, K], B as [K, N]. */
static void stage_operands(Cg *cg, Mma *mm, bool stage_a, bool stage_b)
{
    Func *f = cg->f;
    Op *op = mm->op;
    int eb = 2;
    int64_t abytes = stage_a ? mm->m * (mm->k * eb + 16) : 0, bbytes = stage_b ? mm->k * (mm->n * eb + 16) : 0;
    LLVMValueRef base = cg_smem(cg, abytes + bbytes);
    cg->tg->barrier(cg);
    for (int i = 0; i < 2; i++) {
        if (!(i ? stage_b : stage_a))
            continue;
        const Type *t = ir_type(f, op->args[i]);
        const TileVal *v = &cg->vals[op->args[i]];
        const Layout *L = v->kind == TV_REGS ? v->L : cg_default_layout(cg, t, true);
        SmemView *sv = scratch_view(cg, base, i ? abytes : 0, t->shape[0], t->shape[1], eb);
        cg_smem_write(cg, sv, (DType)t->dtype, L, cg_materialize(cg, v, t, L, op->loc));
        if (i)
            mm->bv = sv;
        else
            mm->av = sv;
    }
    cg->tg->barrier(cg);
    if (cg->report)
        sb_printf(cg->report, "  dot at %d:%d: %s%s%s staged in shared memory for ldmatrix\n", op->loc.line,
                  op->loc.col, stage_a ? "A" : "", stage_a && stage_b ? " and " : "", stage_b ? "B" : "");
}

static int operands(Cg *cg, Mma *mm)
{
    const TileVal *a = &cg->vals[mm->op->args[0]], *b = &cg->vals[mm->op->args[1]];
    mm->av = a->kind == TV_SMEM ? a->sv : NULL;
    mm->bv = b->kind == TV_SMEM ? b->sv : NULL;
    if (!mm->av && a->kind == TV_REGS && is_a_layout(mm, a->L)) {
        mm->aregs = a->r;
        mm->aL = a->L;
    }
    bool sa = !mm->av && !mm->aregs, sb = !mm->bv;
    if (sa || sb)
        stage_operands(cg, mm, sa, sb);
    return 0;
}

/* ---- fragments ---- */

static LLVMValueRef lane_bits(Cg *cg, int shift, int mask, int mul)
{
    LLVMValueRef x = shift ? LLVMBuildLShr(cg->b, cg->lane, cg_i32(cg, shift), "") : cg->lane;
    x = LLVMBuildAnd(cg->b, x, cg_i32(cg, mask), "");
    return mul > 1 ? LLVMBuildMul(cg->b, x, cg_i32(cg, mul), "") : x;
}

static void lane_terms(Cg *cg, Mma *mm)
{
    mm->l15 = lane_bits(cg, 0, 15, 1);          /* P1 row: lanes 0-15 walk 16 rows */
    mm->hi8 = lane_bits(cg, 4, 1, 8);           /* P1 column / P2 row: lanes 16-31 +8 */
    mm->l7 = lane_bits(cg, 0, 7, 1);            /* P2 row inside a matrix */
    mm->mid8 = lane_bits(cg, 3, 1, 8);          /* P2 column: lanes 8-15, 24-31 +8 */
    LLVMValueRef wr = LLVMBuildURem(cg->b, LLVMBuildUDiv(cg->b, cg->warp, cg_i32(cg, mm->wn), ""), cg_i32(cg, mm->wm), "");
    LLVMValueRef wc = LLVMBuildURem(cg->b, cg->warp, cg_i32(cg, mm->wn), "");
    mm->wrow = LLVMBuildMul(cg->b, wr, cg_i32(cg, 16 * mm->tm), "");
    mm->wcol = LLVMBuildMul(cg->b, wc, cg_i32(cg, 8 * mm->tn), "");
}

/* ldmatrix.x4 of the 16 x 16 block at stored (r0, c0) (+ lane terms).
 * P1: lane l reads row r0 + (l & 15), column c0 + 8 (l >> 4);
 * P2: lane l reads row r0 + (l & 7) + 8 (l >> 4 & 1), column c0 + 8 (l >> 3 & 1). */
static void ldsm(Cg *cg, const Mma *mm, const SmemView *sv, bool p2, LLVMValueRef r0, LLVMValueRef c0,
                 bool trans, LLVMValueRef *out)
{
    LLVMValueRef row = LLVMBuildAdd(cg->b, r0, p2 ? LLVMBuildAdd(cg->b, mm->l7, mm->hi8, "") : mm->l15, "");
    LLVMValueRef col = LLVMBuildAdd(cg->b, c0, p2 ? mm->mid8 : mm->hi8, "");
    LLVMValueRef p = cg_smem_ptr(cg, sv, row, LLVMBuildMul(cg->b, col, cg_i32(cg, sv->eb), ""));
    cg->tg->ldmatrix_x4(cg, p, trans, out);
}

static LLVMValueRef pack2(Cg *cg, LLVMValueRef x, LLVMValueRef y)
{
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(x), 2);
    LLVMValueRef v = LLVMBuildInsertElement(cg->b, LLVMGetUndef(vt), x, cg_i32(cg, 0), "");
    v = LLVMBuildInsertElement(cg->b, v, y, cg_i32(cg, 1), "");
    return LLVMBuildBitCast(cg->b, v, cg->t_i32, "");
}

/* A fragments (4 x i32) of m16 tile i at k step kk. */
static void a_frag(Cg *cg, const Mma *mm, int i, int kk, LLVMValueRef *out)
{
    if (mm->aregs) {
        for (int q = 0; q < 4; q++)
            out[q] = pack2(cg, mm->aregs[layout_mma_a_reg(mm->aL, i, kk, 2 * q)],
                           mm->aregs[layout_mma_a_reg(mm->aL, i, kk, 2 * q + 1)]);
        return;
    }
    LLVMValueRef m0 = LLVMBuildAdd(cg->b, mm->wrow, cg_i32(cg, 16 * i), ""), k0 = cg_i32(cg, 16 * kk);
    if (mm->av->trans)            /* stored [K, M] */
        ldsm(cg, mm, mm->av, true, k0, m0, true, out);
    else                          /* stored [M, K] */
        ldsm(cg, mm, mm->av, false, m0, k0, false, out);
}

/* B fragments of n8 tiles 2jp, 2jp+1 at k step kk: out[0..1], out[2..3]. */
static void b_frag(Cg *cg, const Mma *mm, int jp, int kk, LLVMValueRef *out)
{
    LLVMValueRef n0 = LLVMBuildAdd(cg->b, mm->wcol, cg_i32(cg, 16 * jp), ""), k0 = cg_i32(cg, 16 * kk);
    if (mm->bv->trans)            /* stored [N, K] */
        ldsm(cg, mm, mm->bv, true, n0, k0, false, out);
    else                          /* stored [K, N] */
        ldsm(cg, mm, mm->bv, false, k0, n0, true, out);
}

typedef struct Frags { LLVMValueRef *a, *b; } Frags;   /* a: tm x 4, b: tn/2 x 4 */

static Frags load_frags(Cg *cg, const Mma *mm, int kk)
{
    Frags fr;
    fr.a = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)(4 * mm->tm));
    fr.b = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)(2 * mm->tn));
    for (int i = 0; i < mm->tm; i++)
        a_frag(cg, mm, i, kk, &fr.a[4 * i]);
    for (int jp = 0; jp < mm->tn / 2; jp++)
        b_frag(cg, mm, jp, kk, &fr.b[4 * jp]);
    return fr;
}

static void mma_step(Cg *cg, const Mma *mm, const Frags *fr, LLVMValueRef *acc)
{
    for (int i = 0; i < mm->tm; i++)
        for (int j = 0; j < mm->tn; j++) {
            LLVMValueRef c[4], d[4];
            int reg[4];
            for (int q = 0; q < 4; q++) {
                reg[q] = layout_mma_acc_reg(mm->L, i, j, q);
                c[q] = acc[reg[q]];
            }
            cg->tg->mma_16816(cg, mm->f16, &fr->a[4 * i], &fr->b[4 * (j / 2) + 2 * (j % 2)], c, d);
            for (int q = 0; q < 4; q++)
                acc[reg[q]] = d[q];
        }
}

/* ---- DOT ---- */

static int check_dot(Cg *cg, Op *op, Mma *mm)
{
    Func *f = cg->f;
    const Type *at = ir_type(f, op->args[0]), *bt = ir_type(f, op->args[1]), *ct = ir_type(f, op->res[0]);
    DType dt = (DType)at->dtype;
    if ((dt != DT_BF16 && dt != DT_F16) || bt->dtype != dt || ct->dtype != DT_F32) {
        diag_error(cg->d, op->loc, "matrix product '@' is not supported by the code generator yet for %s "
                   "tiles (the tensor-core path takes bf16 and f16 operands with f32 accumulation)", dtype_name(dt));
        return 1;
    }
    mm->m = at->shape[0];
    mm->k = at->shape[1];
    mm->n = bt->shape[1];
    if (mm->m % 16 || mm->n % 16 || mm->k % 16) {
        diag_error(cg->d, op->loc, "matrix product [%lld x %lld] @ [%lld x %lld]: the tensor-core path needs "
                   "every extent to be a multiple of 16", (long long)mm->m, (long long)mm->k, (long long)mm->k,
                   (long long)mm->n);
        return 1;
    }
    mm->op = op;
    mm->f16 = dt == DT_F16;
    return 0;
}

int cg_lower_dot(Cg *cg, Op *op)
{
    Mma mm;
    memset(&mm, 0, sizeof mm);
    if (check_dot(cg, op, &mm))
        return 1;
    mm.L = cg_layout_dup(cg, acc_layout(cg, mm.m, mm.n, &mm.wm, &mm.wn));
    mm.tm = (int)(mm.m / (16 * mm.wm));
    mm.tn = (int)(mm.n / (8 * mm.wn));
    const Type *ct = ir_type(cg->f, op->args[2]);
    LLVMValueRef *c = cg_materialize(cg, &cg->vals[op->args[2]], ct, mm.L, op->loc);
    int n = layout_nregs(mm.L);
    LLVMValueRef *acc = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    memcpy(acc, c, sizeof(LLVMValueRef) * (size_t)n);
    if (operands(cg, &mm))
        return 1;
    lane_terms(cg, &mm);
    int nk = (int)(mm.k / 16);
    Frags cur = load_frags(cg, &mm, 0);
    for (int kk = 0; kk < nk; kk++) {
        Frags next = kk + 1 < nk ? load_frags(cg, &mm, kk + 1) : cur;
        mma_step(cg, &mm, &cur, acc);
        cur = next;
    }
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = mm.L, .r = acc };
    if (cg->report) {
        sb_printf(cg->report, "  dot at %d:%d: mma.sync m16n8k16 %s, %lldx%lldx%lld, warps %dx%d (warp tile %lldx%lld), ",
                  op->loc.line, op->loc.col, mm.f16 ? "f16" : "bf16", (long long)mm.m, (long long)mm.n,
                  (long long)mm.k, mm.wm, mm.wn, (long long)(mm.m / mm.wm), (long long)(mm.n / mm.wn));
        sb_printf(cg->report, "A %s, B %s\n", mm.aregs ? "from registers (accumulator layout)" : mm.av->trans ? "ldmatrix.trans" : "ldmatrix",
                  mm.bv->trans ? "ldmatrix" : "ldmatrix.trans");
    }
    return 0;
}

int cg_lower_trans_view(Cg *cg, Op *op)
{
    const TileVal *v = &cg->vals[op->args[0]];
    SmemView *sv = arena_alloc(cg->a, sizeof *sv);
    *sv = *v->sv;
    sv->trans = !sv->trans;
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_SMEM, .sv = sv };
    return 0;
}

void cg_mma_prepare_store(Cg *cg, Op *op)
{
    ValId vv = op->args[op->nargs - 1];
    TileVal *v = &cg->vals[vv];
    const Type *t = ir_type(cg->f, vv);
    if (v->kind != TV_REGS || !layout_is_mma(v->L) || t->rank != 2 || op->nlist < 1 || op->list[op->nlist - 1] <= 0)
        return;
    const Layout *L = cg_default_layout(cg, t, true);
    int eb = dtype_bits((DType)t->dtype) / 8;
    int64_t need = t->shape[0] * (t->shape[1] + (eb >= 4 ? 1 : 4 / (eb ? eb : 1))) * (eb ? eb : 1);
    if (layout_vec(L) <= layout_vec(v->L) || (cg->dsmem && cg->dsmem_base + need > cg->tg->max_smem_dynamic))
        return;
    v->r = cg_convert_layout(cg, v->r, v->L, L, (DType)t->dtype, NULL);
    v->L = L;
}
