/* mma_select.c - the mma_select pass: per matrix product (DOT), the
 * instruction family it runs on, from the target's TargetInfo and the
 * product's shapes and dtypes.
 *
 * Needs: verified IR with final shapes (after bounds; nothing later
 * changes a product's operands' shapes or dtypes).
 * Guarantees: every DOT carries its family in iattr[0] (a MmaKind,
 * printed `{mma = wgmma}`):
 *   wgmma     the target has it (TargetInfo.mma & TC_MMA_WGMMA: sm_90a)
 *             and the product fits m64nNk16 instructions
 *             (ir_wgmma_problem: M a multiple of 64, K of 16, N of 8, at
 *             most 256 columns an instruction); f8e4m3 and f8e5m2
 *             products fit m64nNk32 (native 8-bit operands, f32
 *             accumulation: K a multiple of 32) when both operands can be
 *             read K-major from shared memory (pass_f8_kmajor_problem: A
 *             stored [M, K], B given transposed from [N, K] rows, as in
 *             `a @ b^T`, both shared tiles), since an 8-bit wgmma cannot
 *             transpose;
 *   tcgen05   the target has it (TC_MMA_TCGEN05: sm_100a) and the product
 *             fits one CTA's tcgen05.mma kind::f16 with the accumulator in
 *             tensor memory (ir_tcgen05_problem: M a multiple of 128, K of
 *             16, N of 16 up to 256, at most 512 columns);
 *   mma_sync  otherwise: warp-level mma.sync m16n8k16, which every target
 *             has (ir_mma_sync_problem: M, K, N multiples of 16). f8e4m3
 *             and f8e5m2 products take it where wgmma does not (another
 *             target, or B stored [K, N]: N-major): their operands are
 *             converted to f16 in registers (exactly: every e4m3 and e5m2
 *             value is an f16 value), and only mma.sync reads both
 *             operands from registers;
 *             i8 products take mma.sync m16n8k32 .s8 (s32 accumulators,
 *             wrapping: exact as the interpreter) when K is a multiple of
 *             32;
 *             f32 products take mma.sync m16n8k8 .tf32 only where the
 *             option mma_select.tf32 = 1 asks (PassCtx.tf32; M, N
 *             multiples of 16, K of 8): the operands are rounded;
 *   simt      products no tensor-core form computes exactly (f32, f64)
 *             or whose extents do not fit (not multiples of 16; i8: K
 *             not of 32): each thread accumulates its own elements of the
 *             result on the FMA (integer) units.
 * A family already in the IR (a .tir file) is kept. Values are unchanged:
 * the family is how a product runs, not what it computes. Each choice and
 * its reason goes to the report.
 * warp_specialize reads the choice: only a pipelined loop whose product
 * is wgmma (or tcgen05) becomes roles; a tcgen05 product it leaves in
 * place goes back to mma_sync there, with the reason.
 */
#include "passes.h"

static bool is_f8(int dt) { return dt == DT_F8E4M3 || dt == DT_F8E5M2; }

const char *pass_f8_kmajor_problem(const Func *f, const Op *dot)
{
    const Op *da = ir_val(f, dot->args[0])->def, *db = ir_val(f, dot->args[1])->def;
    if (da && da->code == OP_TRANS)
        return "A is given transposed (stored [K, M]: M-major), and an 8-bit wgmma reads both operands K-major";
    if (!db || db->code != OP_TRANS)
        return "B is stored [K, N] (N-major), and an 8-bit wgmma cannot transpose: it reads both operands K-major "
               "(B given as [N, K] rows, `a @ b^T`, would be)";
    if (ir_type(f, dot->args[0])->space != SP_SHARED || ir_type(f, db->args[0])->space != SP_SHARED)
        return "an operand is a register tile, and an 8-bit wgmma reads both from shared memory here (declare them "
               "`shared`)";
    return NULL;
}

/* Why a product runs on the FMA (integer) units (the reason mma.sync does
 * not take it). */
static const char *simt_why(const Type *a, const char *nosync)
{
    switch (a->dtype) {
    case DT_F32:
        return "f32 products are exact in f32 on the FMA units only (tf32 tensor cores round the operands to 10 "
               "bits; the option mma_select.tf32 = 1 asks for them)";
    case DT_F64:
        return "f64 products on the FMA units in f64, each result rounded once to f32";
    default:   /* i8 included: mma.sync takes it, the shape does not fit */
        return nosync;
    }
}

/* The family of one product (into op->iattr[0]) and why, into why. */
static MmaKind choose(const TargetInfo *t, bool tf32, const Func *f, const Op *dot, const char **why)
{
    const Type *a = ir_type(f, dot->args[0]), *b = ir_type(f, dot->args[1]);
    if (a->dtype == DT_F32 && tf32) {
        const char *no = ir_mma_tf32_problem(a, b);
        if (!no) {
            *why = "the option mma_select.tf32 = 1: operands rounded to tf32 (10 mantissa bits), f32 accumulation";
            return MMA_SYNC;
        }
        *why = no;
        return MMA_SIMT;
    }
    const char *nosync = ir_mma_sync_problem(a, b);
    if (nosync) {
        *why = simt_why(a, nosync);
        return MMA_SIMT;
    }
    if (a->dtype == DT_I8) {
        *why = "i8 products on mma.sync m16n8k32 .s8 with s32 accumulators, exact and wrapping as the interpreter; "
               "every target has it";
        return MMA_SYNC;
    }
    if (is_f8(a->dtype)) {
        if (!t || !(t->mma & TC_MMA_WGMMA)) {
            *why = t && (t->mma & TC_MMA_TCGEN05)
                       ? "f8 operands are converted to f16 in registers, which only mma.sync takes (tcgen05's 8-bit "
                         "kind::f8f6f4 is not emitted)"
                       : "the target has no wgmma; f8 operands are converted to f16 in registers, which only "
                         "mma.sync takes";
            return MMA_SYNC;
        }
        const char *no = ir_wgmma_problem(a, b);
        if (!no)
            no = pass_f8_kmajor_problem(f, dot);
        if (no) {
            *why = no;
            return MMA_SYNC;
        }
        *why = "the target has wgmma with 8-bit operands, both K-major in shared memory (B given as [N, K] rows), "
               "and the shape fits m64nNk32";
        return MMA_WGMMA;
    }
    if (t && (t->mma & TC_MMA_TCGEN05)) {
        const char *no = ir_tcgen05_problem(a, b);
        *why = no ? no : "the target has tcgen05 and the shape fits one CTA's kind::f16 instructions";
        return no ? MMA_SYNC : MMA_TCGEN05;
    }
    if (!t || !(t->mma & TC_MMA_WGMMA)) {
        *why = "the target has no wgmma";
        return MMA_SYNC;
    }
    const char *no = ir_wgmma_problem(a, b);
    *why = no ? no : "the target has wgmma and the shape fits m64nNk16";
    return no ? MMA_SYNC : MMA_WGMMA;
}

static bool visit(Func *f, Op *op, void *vctx)
{
    PassCtx *ctx = vctx;
    if (op->code != OP_DOT)
        return true;
    const Type *a = ir_type(f, op->args[0]), *b = ir_type(f, op->args[1]);
    const char *at = pass_loc_str(f->mod->arena, f, op->loc);
    const char *shape = arena_printf(f->mod->arena, "[%lld x %lld] @ [%lld x %lld] %s", (long long)a->shape[0],
                                     (long long)a->shape[1], (long long)b->shape[0], (long long)b->shape[1],
                                     dtype_name((DType)a->dtype));
    if (op->iattr[0] != MMA_NONE) {
        pass_note(ctx, "@%s: product at %s %s: %s given, kept", f->name, at, shape, mma_names[op->iattr[0]]);
        return true;
    }
    const char *why;
    MmaKind k = choose(ctx->target, ctx->tf32, f, op, &why);
    if ((k == MMA_WGMMA || k == MMA_TCGEN05) && ctx->portable) {   /* the module's fallback variant keeps to mma.sync */
        k = MMA_SYNC;
        why = "the portable variant of a warp-specialized kernel";
    }
    op->iattr[0] = k;
    if (k == MMA_WGMMA) {
        int64_t n = b->shape[1] < WGMMA_MAX_N ? b->shape[1] : WGMMA_MAX_N;
        pass_note(ctx, "@%s: product at %s %s: wgmma m64n%lldk%lld%s (%s)", f->name, at, shape, (long long)n,
                  (long long)ir_wgmma_k((DType)a->dtype), is_f8(a->dtype) ? " f8, f32 accumulation" : "", why);
    } else if (k == MMA_TCGEN05) {
        pass_note(ctx, "@%s: product at %s %s: tcgen05.mma m128n%lldk16, accumulator in tensor memory (%s)", f->name,
                  at, shape, (long long)b->shape[1], why);
    } else if (k == MMA_SIMT) {
        pass_note(ctx, "@%s: product at %s %s: simt, %s accumulation in each thread (%s)", f->name, at, shape,
                  a->dtype == DT_I8 ? "i32" : a->dtype == DT_F64 ? "f64" : "f32 fma", why);
    } else {
        pass_note(ctx, "@%s: product at %s %s: mma_sync m16n8k%s (%s)", f->name, at, shape,
                  a->dtype == DT_I8 ? "32 s8" : is_f8(a->dtype) ? "16 f16, operands converted from f8 in registers"
                  : a->dtype == DT_F32 ? "8 tf32" : "16", why);
    }
    return true;
}

int pass_mma_select(Module *m, PassCtx *ctx)
{
    for (int i = 0; i < m->nfuncs; i++)
        ir_walk(m->funcs[i], &m->funcs[i]->body, visit, ctx);
    return 0;
}
