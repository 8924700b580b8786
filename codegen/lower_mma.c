/* lower_mma.c - `@` (DOT) on tensor cores: mma.sync m16n8k16 with bf16 or
 * f16 operands and f32 accumulators, operands read from shared memory with
 * ldmatrix. f8e4m3 and f8e5m2 operands run as f16 products: each thread
 * loads the f8 elements of its f16 fragments from the shared tile (a
 * 16-bit load where the pair lies along the stored rows, else two bytes)
 * and converts them to f16 in registers, exactly (cg_f8_to_f16_bits); a
 * register f8 operand is converted on its way to the f16 scratch. i8
 * operands run as mma.sync m16n8k32 .s8 (s32 accumulators) and, where the
 * mma_select.tf32 option chose mma_sync for them, f32 operands as
 * m16n8k8 .tf32, their fragments loaded the same way (runs of four bytes;
 * single f32 elements rounded by cvt.rna.tf32). Products of the simt
 * family go to lower_dot_simt.c.
 *
 * Warps: the [M, N] accumulator is split over a wm x wn warp grid
 * (layout_mma_warps: 128 x 128 with 8 warps -> 2 x 4, warp tiles 64 x 32);
 * each warp holds tm x tn m16n8 fragments in the accumulator layout
 * (layout.h). The product runs as K/16 steps (unrolled, or a loop: see
 * dot_rolled): per step, one
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
 *
 * The fragments (lane terms, ldmatrix addresses, the element loads of f8,
 * i8 and tf32 operands) are mma_frag.c's; the store of a product's tile
 * through shared memory is mma_store.c's.
 */
#include "mma_frag.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

static Layout acc_layout(Cg *cg, int64_t m, int64_t n, int *wm, int *wn)
{
    if (cg->mma_rows_only)         /* attention: warps along M only (lower_chain.c) */
        cg_chain_acc_warps(cg, m, wm, wn);
    else
        layout_mma_warps(m, n, cg->nwarps, wm, wn);
    return layout_mma_acc(m, n, *wm, *wn, cg->nwarps);
}

/* The DOT that v comes from through elementwise ops (acc + a @ b), or NULL. */
static Op *dot_source(Func *f, ValId v, int depth)
{
    Op *def = ir_val(f, v)->def;
    if (!def || depth > 8)
        return NULL;
    if (def->code == OP_DOT || def->code == OP_DOT_WAIT)
        return def;
    if (def->code == OP_IF) {   /* a guarded mask (mask_split): either arm's value */
        for (int g = 0; g < 2; g++) {
            ValId y = ir_if_yield(def, g, v);
            Op *d = y ? dot_source(f, y, depth + 1) : NULL;
            if (d)
                return d;
        }
        return NULL;
    }
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
    Op *y = ir_block_yield(&forop->regions[0]);
    if (!y || i >= y->nargs)
        return NULL;
    Op *def = dot_source(cg->f, y->args[i], 0);
    if (!def || !type_same_shape(ir_type(cg->f, def->res[0]), ir_type(cg->f, y->args[i])))
        return NULL;
    const Type *t = ir_type(cg->f, def->res[0]);
    if (def->code == OP_DOT_WAIT)   /* an asynchronous product's accumulator */
        return cg_wgmma_acc_layout(cg, t->shape[0], t->shape[1]);
    if (t->rank != 2 || t->shape[0] % 16 || t->shape[1] % 16)
        return NULL;
    int wm, wn;
    return cg_layout_dup(cg, acc_layout(cg, t->shape[0], t->shape[1], &wm, &wn));
}

const Layout *cg_mma_acc_layout(Cg *cg, int64_t m, int64_t n)
{
    if (m % 16 || n % 16)
        return NULL;
    int wm, wn;
    return cg_layout_dup(cg, acc_layout(cg, m, n, &wm, &wn));
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

static bool is_f8(DType t) { return t == DT_F8E4M3 || t == DT_F8E5M2; }

const SmemView **cg_dot_stage(Cg *cg, Op *op, const bool stage[2], DType to, const char *what)
{
    Func *f = cg->f;
    const SmemView **out = arena_alloc(cg->a, 2 * sizeof *out);
    out[0] = out[1] = NULL;
    int eb = dtype_bits(to) / 8;
    int64_t bytes[2];
    for (int i = 0; i < 2; i++) {
        const Type *t = ir_type(f, op->args[i]);
        bytes[i] = stage[i] ? t->shape[0] * (t->shape[1] * eb + 16) : 0;
    }
    LLVMValueRef base = cg_smem(cg, bytes[0] + bytes[1]);
    cg->tg->barrier(cg);
    for (int i = 0; i < 2; i++) {
        if (!stage[i])
            continue;
        const Type *t = ir_type(f, op->args[i]);
        const TileVal *v = &cg->vals[op->args[i]];
        const Layout *L = v->kind == TV_REGS ? v->L : cg_default_layout(cg, t, true);
        SmemView *sv = scratch_view(cg, base, i ? bytes[0] : 0, t->shape[0], t->shape[1], eb);
        LLVMValueRef *r = cg_materialize(cg, v, t, L, op->loc);
        if ((DType)t->dtype != to) {
            int n = layout_nregs(L);
            LLVMValueRef *c = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
            for (int j = 0; j < n; j++)
                c[j] = cg_convert(cg, r[j], (DType)t->dtype, to);
            r = c;
        }
        cg_smem_write(cg, sv, to, L, r);
        out[i] = sv;
    }
    cg->tg->barrier(cg);
    if (cg->report)
        sb_printf(cg->report, "  dot at %d:%d: %s%s%s staged in shared memory%s for %s\n", op->loc.line, op->loc.col,
                  stage[0] ? "A" : "", stage[0] && stage[1] ? " and " : "", stage[1] ? "B" : "",
                  (DType)ir_type(f, op->args[0])->dtype != to ? " as f16" : "", what);
    return out;
}

static int operands(Cg *cg, Mma *mm)
{
    const TileVal *a = &cg->vals[mm->op->args[0]], *b = &cg->vals[mm->op->args[1]];
    mm->av = a->kind == TV_SMEM ? a->sv : NULL;
    mm->bv = b->kind == TV_SMEM ? b->sv : NULL;
    bool f8 = is_f8(mm->dt);
    mm->a8 = (f8 && mm->av) || mm->s8 || mm->tf32;   /* i8, f32: always read per element (staged first) */
    mm->b8 = (f8 && mm->bv) || mm->s8 || mm->tf32;
    if (!f8 && !mm->s8 && !mm->tf32 && !mm->av && a->kind == TV_REGS && is_a_layout(mm, a->L)) {
        mm->aregs = a->r;
        mm->aL = a->L;
    }
    bool st[2] = { !mm->av && !mm->aregs, !mm->bv };
    if (st[0] || st[1]) {
        const SmemView **sv = cg_dot_stage(cg, mm->op, st, f8 ? DT_F16 : mm->dt,
                                           mm->s8 || mm->tf32 ? "the fragments' loads" : "ldmatrix");
        if (st[0])
            mm->av = sv[0];
        if (st[1])
            mm->bv = sv[1];
    }
    return 0;
}

static void mma_rows(Cg *cg, const Mma *mm, const Frags *fr, LLVMValueRef *acc, int i0, int i1)
{
    for (int i = i0; i < i1; i++)
        for (int j = 0; j < mm->tn; j++) {
            LLVMValueRef c[4], d[4];
            int reg[4];
            for (int q = 0; q < 4; q++) {
                reg[q] = layout_mma_acc_reg(mm->L, i, j, q);
                c[q] = acc[reg[q]];
            }
            if (mm->s8)
                cg->tg->mma_16832_s8(cg, &fr->a[4 * i], &fr->b[4 * (j / 2) + 2 * (j % 2)], c, d);
            else if (mm->tf32)
                cg->tg->mma_1688_tf32(cg, &fr->a[4 * i], &fr->b[4 * (j / 2) + 2 * (j % 2)], c, d);
            else
                cg->tg->mma_16816(cg, mm->f16, &fr->a[4 * i], &fr->b[4 * (j / 2) + 2 * (j % 2)], c, d);
            for (int q = 0; q < 4; q++)
                acc[reg[q]] = d[q];
        }
}

static void mma_step(Cg *cg, const Mma *mm, const Frags *fr, LLVMValueRef *acc)
{
    mma_rows(cg, mm, fr, acc, 0, mm->tm);
}

/* ---- rolled k loop ----
 * A product whose operands both come from shared memory runs its K/16
 * steps as a loop (steps 0 .. K/16 - 2 load step k + 1's fragments and
 * issue step k's products; the last step's products follow the loop)
 * instead of K/16 unrolled copies: the accumulators and the current
 * fragments are loop-carried. LLVM and the NVPTX backend then see one
 * step's instructions (attention's q @ k^T: 32 mma.sync instead of 128
 * at D = 128), which is where most of the compile time goes; ptxas
 * unrolls the constant-trip loop again (the SASS of the attention tile
 * has the same 256 HMMA and instruction mix, within 3 instructions, as
 * the unrolled form: cuobjdump on the H200, 2026-11-30). Done for
 * products in kernels whose products feed products (attention), where it
 * measured the same speed as the unrolled steps on the H200 (sm_86 PTX,
 * 2026-11-30: every row within -2%/+3%, mean -0.2%) for 8% fewer
 * instructions executed by the compiler; a lone product (GEMM) keeps the
 * unrolled steps, whose ldmatrix order step_base fixes: rolled, gemm
 * measured 367.5 / 351.9 TFLOP/s against 384.8 / 366.9 unrolled. */

static LLVMValueRef *phis(Cg *cg, LLVMValueRef *v, int n, LLVMBasicBlockRef from, const char *name)
{
    LLVMValueRef *p = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int i = 0; i < n; i++) {
        p[i] = LLVMBuildPhi(cg->b, LLVMTypeOf(v[i]), name);
        LLVMAddIncoming(p[i], &v[i], &from, 1);
    }
    return p;
}

static void close_phis(LLVMValueRef *p, LLVMValueRef *v, int n, LLVMBasicBlockRef from)
{
    for (int i = 0; i < n; i++)
        LLVMAddIncoming(p[i], &v[i], &from, 1);
}

static void dot_rolled(Cg *cg, Mma *mm, LLVMValueRef *acc, int nacc, int nk)
{
    cg_mma_lane_terms(cg, mm);
    cg_mma_frag_addrs(cg, mm);
    Frags cur = cg_mma_load_frags(cg, mm, 0, NULL);
    int na = 4 * mm->tm, nb = 2 * mm->tn;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b), head = cg_new_block(cg, "kstep"),
                      done = cg_new_block(cg, "kdone");
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    LLVMValueRef zero = cg_i32(cg, 0);
    LLVMValueRef kv = phis(cg, &zero, 1, pre, "k")[0];
    LLVMValueRef *ap = phis(cg, acc, nacc, pre, "acc");
    Frags fp = { phis(cg, cur.a, na, pre, "fa"), phis(cg, cur.b, nb, pre, "fb") };
    LLVMValueRef k1 = LLVMBuildAdd(cg->b, kv, cg_i32(cg, 1), "");
    cg_mma_frag_k(cg, &mm->fa, k1);
    cg_mma_frag_k(cg, &mm->fb, k1);
    Frags next = cg_mma_load_frags(cg, mm, 0, NULL);
    mm->fa.kv = mm->fb.kv = mm->fa.kbase = mm->fb.kbase = mm->fa.Tk = mm->fb.Tk = NULL;
    memcpy(acc, ap, sizeof(LLVMValueRef) * (size_t)nacc);
    mma_step(cg, mm, &fp, acc);
    LLVMValueRef more = LLVMBuildICmp(cg->b, LLVMIntULT, k1, cg_i32(cg, nk - 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMBuildCondBr(cg->b, more, head, done);
    close_phis(&kv, &k1, 1, latch);
    close_phis(ap, acc, nacc, latch);
    close_phis(fp.a, next.a, na, latch);
    close_phis(fp.b, next.b, nb, latch);
    LLVMPositionBuilderAtEnd(cg->b, done);
    mma_step(cg, mm, &next, acc);
}

/* ---- DOT ---- */

static int check_dot(Cg *cg, Op *op, Mma *mm)
{
    Func *f = cg->f;
    const Type *at = ir_type(f, op->args[0]), *bt = ir_type(f, op->args[1]), *ct = ir_type(f, op->res[0]);
    DType dt = (DType)at->dtype;
    bool s8 = dt == DT_I8 && ct->dtype == DT_I32, tf32 = dt == DT_F32 && op->iattr[0] == MMA_SYNC;
    if ((dt != DT_BF16 && dt != DT_F16 && !is_f8(dt) && !s8 && !tf32) || bt->dtype != dt ||
        (ct->dtype != DT_F32 && !s8)) {
        diag_error(cg->d, op->loc, "matrix product '@' of %s tiles runs on the FMA units (mma = simt), not on "
                   "mma.sync (bf16, f16 and f8 operands with f32 accumulation, i8 with i32)", dtype_name(dt));
        return 1;
    }
    mm->m = at->shape[0];
    mm->k = at->shape[1];
    mm->n = bt->shape[1];
    mm->kstep = s8 ? 32 : tf32 ? 8 : 16;
    if (mm->m % 16 || mm->n % 16 || mm->k % mm->kstep || (mm->k % 16 && !tf32)) {
        diag_error(cg->d, op->loc, "matrix product [%lld x %lld] @ [%lld x %lld]: the tensor-core path needs "
                   "every extent to be a multiple of 16 (K of %d)", (long long)mm->m, (long long)mm->k,
                   (long long)mm->k, (long long)mm->n, mm->kstep);
        return 1;
    }
    mm->op = op;
    mm->dt = dt;
    mm->s8 = s8;
    mm->tf32 = tf32;
    mm->f16 = dt == DT_F16 || is_f8(dt);
    return 0;
}

int cg_lower_dot(Cg *cg, Op *op)
{
    const Type *at = ir_type(cg->f, op->args[0]), *bt = ir_type(cg->f, op->args[1]);
    if (op->iattr[0] == MMA_SIMT || (op->iattr[0] == MMA_NONE && ir_mma_sync_problem(at, bt)))
        return cg_lower_dot_simt(cg, op);
    Mma mm;
    memset(&mm, 0, sizeof mm);
    if (check_dot(cg, op, &mm))
        return 1;
    cg_chain_turn(cg, op, false);
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
    int nk = (int)(mm.k / mm.kstep);
    Frags cur;
    bool roll = !mm.aregs && !mm.a8 && !mm.b8 && nk >= 3 && cg->mma_rows_only;
    if (roll) {
        dot_rolled(cg, &mm, acc, n, nk);
        nk = 0;
    } else {
        cg_mma_lane_terms(cg, &mm);
        cg_mma_frag_addrs(cg, &mm);
        cur = cg_mma_load_frags(cg, &mm, 0, NULL);
    }
    /* Cg.pv_rows: a product with A from registers (attention's p @ v)
     * issues its mma.sync row tile by row tile (every k step and column
     * tile of rows 0-15, then rows 16-31, ...), each step's B fragments
     * loaded once in k order during the first row tile and reused: a row
     * tile's products wait only for its own P registers. */
    bool rows_outer = mm.aregs && cg->f->sched.pv_rows;
    if (rows_outer) {
        Frags *all = arena_alloc(cg->a, sizeof(Frags) * (size_t)nk);
        for (int i = 0; i < mm.tm; i++)
            for (int kk = 0; kk < nk; kk++) {
                if (i == 0)
                    all[kk] = kk == 0 ? cur : cg_mma_load_frags(cg, &mm, kk, NULL);
                mma_rows(cg, &mm, &all[kk], acc, i, i + 1);
            }
        nk = 0;
    }
    for (int kk = 0; kk < nk; kk++) {
        LLVMValueRef dep = kk > 0 ? acc[layout_mma_acc_reg(mm.L, mm.tm - 1, mm.tn - 1, 3)] : NULL;
        Frags next = cur;
        if (kk + 1 < nk)
            next = cg_mma_load_frags(cg, &mm, kk + 1, dep);
        mma_step(cg, &mm, &cur, acc);
        cur = next;
    }
    cg_chain_turn(cg, op, true);
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = mm.L, .r = acc };
    if (cg->report) {
        sb_printf(cg->report,
                  "  dot at %d:%d: mma.sync m16n8k%d %s%s%s, %lldx%lldx%lld, warps %dx%d (warp tile %lldx%lld), ",
                  op->loc.line, op->loc.col, mm.kstep, mm.s8 ? "s8" : mm.tf32 ? "tf32" : mm.f16 ? "f16" : "bf16",
                  is_f8(mm.dt) ? " from " : "",
                  is_f8(mm.dt) ? dtype_name(mm.dt) : "", (long long)mm.m, (long long)mm.n,
                  (long long)mm.k, mm.wm, mm.wn, (long long)(mm.m / mm.wm), (long long)(mm.n / mm.wn));
        sb_printf(cg->report, "A %s, B %s, %d k steps%s\n",
                  mm.a8 ? (mm.s8 ? "i8 loads" : mm.tf32 ? "f32 loads rounded to tf32" : "f8 loads converted to f16")
                  : mm.aregs ? "from registers (accumulator layout)" : mm.av->trans ? "ldmatrix.trans" : "ldmatrix",
                  mm.b8 ? (mm.s8 ? "i8 loads" : mm.tf32 ? "f32 loads rounded to tf32" : "f8 loads converted to f16")
                  : mm.bv->trans ? "ldmatrix" : "ldmatrix.trans",
                  (int)(mm.k / mm.kstep),
                  roll ? " in a loop" : rows_outer ? " unrolled, row tiles outermost" : " unrolled");
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
