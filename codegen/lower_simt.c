/* lower_simt.c - Tile IR ops -> LLVM IR for SIMT tiles: scalars, elementwise
 * math, casts, shape ops (splat / iota / expand / broadcast / trans) and
 * structured control flow; it dispatches DOT and the shared-memory ops to
 * lower_mma.c and lower_async.c.
 *
 * A tile lives in registers as one LLVM value per register slot of its
 * layout (fully unrolled, compile-time indices only). SPLAT and IOTA stay
 * symbolic until a consumer picks the layout. An elementwise op computes in
 * the layout of its register operand with the fewest registers per thread;
 * other operands are converted to it (cg_convert_layout). An f32 tile
 * divided by a uniform value multiplies by one reciprocal. In rows of 16+
 * warps ("wide", codegen.c): recomputation after barriers and a use-driven
 * instruction order after optimisation.
 */
#include "cg_internal.h"

#include <stdint.h>
#include <string.h>

static const char *type_suffix(Cg *cg, LLVMTypeRef t)
{
    if (t == cg->t_f32) return "f32";
    if (t == cg->t_f64) return "f64";
    if (t == cg->t_f16) return "f16";
    if (t == cg->t_bf16) return "bf16";
    if (t == cg->t_i64) return "i64";
    if (t == cg->t_i16) return "i16";
    if (t == cg->t_i8) return "i8";
    if (t == cg->t_i1) return "i1";
    return "i32";
}

static LLVMValueRef call_ovl(Cg *cg, const char *base, LLVMValueRef *args, int n)
{
    char name[96];
    LLVMTypeRef t = LLVMTypeOf(args[0]);
    snprintf(name, sizeof name, "%s.%s", base, type_suffix(cg, t));
    return cg_call(cg, name, t, args, n);
}

/* ---- conversions between dtypes ---- */

static bool is_f(DType t) { return dtype_is_float(t); }

static LLVMValueRef to_f32(Cg *cg, LLVMValueRef v, DType from)
{
    if (from == DT_F32)
        return v;
    return dtype_bits(from) < 32 ? LLVMBuildFPExt(cg->b, v, cg->t_f32, "")
                                 : LLVMBuildFPTrunc(cg->b, v, cg->t_f32, "");
}

static LLVMValueRef float_to_int(Cg *cg, LLVMValueRef v, DType from, DType to)
{
    char name[64];
    if (from != DT_F32 && from != DT_F64) {
        v = to_f32(cg, v, from);
        from = DT_F32;
    }
    LLVMTypeRef rt = cg_type(cg, to);
    snprintf(name, sizeof name, "llvm.fpto%si.sat.%s.%s", dtype_is_signed(to) ? "s" : "u",
             type_suffix(cg, rt), from == DT_F32 ? "f32" : "f64");
    return cg_call(cg, name, rt, &v, 1);
}

LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, DType from, DType to)
{
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef rt = cg_type(cg, to);
    if (from == to)
        return v;
    if (to == DT_BOOL)
        return is_f(from) ? LLVMBuildFCmp(b, LLVMRealUNE, v, LLVMConstNull(LLVMTypeOf(v)), "")
                          : LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
    if (!is_f(from) && !is_f(to)) {
        int fb = from == DT_BOOL ? 1 : dtype_bits(from), tb = dtype_bits(to);
        if (fb == tb)
            return v;
        if (fb > tb)
            return LLVMBuildTrunc(b, v, rt, "");
        return dtype_is_signed(from) ? LLVMBuildSExt(b, v, rt, "") : LLVMBuildZExt(b, v, rt, "");
    }
    if (!is_f(from))
        return dtype_is_signed(from) ? LLVMBuildSIToFP(b, v, rt, "") : LLVMBuildUIToFP(b, v, rt, "");
    if (!is_f(to))
        return float_to_int(cg, v, from, to);
    if ((from == DT_BF16 && to == DT_F16) || (from == DT_F16 && to == DT_BF16))
        v = to_f32(cg, v, from), from = DT_F32;
    if (dtype_bits(from) < dtype_bits(to))
        return LLVMBuildFPExt(b, v, rt, "");
    return LLVMBuildFPTrunc(b, v, rt, "");
}

/* ---- elementwise math on one element ---- */

/* Transcendentals run in f32 on the MUFU hardware approximations. */
static LLVMValueRef math_f32(Cg *cg, OpCode code, LLVMValueRef x)
{
    const Target *tg = cg->tg;
    LLVMBuilderRef b = cg->b;
    switch (code) {
    case OP_EXP2: return tg->exp2_f32(cg, x);
    case OP_EXP: return tg->exp2_f32(cg, LLVMBuildFMul(b, x, LLVMConstReal(cg->t_f32, 1.4426950408889634), ""));
    case OP_LOG2: return tg->log2_f32(cg, x);
    case OP_LOG: return LLVMBuildFMul(b, tg->log2_f32(cg, x), LLVMConstReal(cg->t_f32, 0.6931471805599453), "");
    case OP_SQRT: return cg_call1(cg, "llvm.sqrt.f32", cg->t_f32, x);
    case OP_RSQRT: return tg->rsqrt_f32(cg, x);
    case OP_TANH: return tg->tanh_f32(cg, x);
    default: return x;
    }
}

static LLVMValueRef float_op(Cg *cg, OpCode code, DType dt, LLVMValueRef *a)
{
    LLVMBuilderRef b = cg->b;
    switch (code) {
    case OP_ADD: return LLVMBuildFAdd(b, a[0], a[1], "");
    case OP_SUB: return LLVMBuildFSub(b, a[0], a[1], "");
    case OP_MUL: return LLVMBuildFMul(b, a[0], a[1], "");
    case OP_DIV: return LLVMBuildFDiv(b, a[0], a[1], "");
    case OP_REM: return LLVMBuildFRem(b, a[0], a[1], "");
    case OP_MIN: return call_ovl(cg, "llvm.minnum", a, 2);
    case OP_MAX: return call_ovl(cg, "llvm.maxnum", a, 2);
    case OP_NEG: return LLVMBuildFNeg(b, a[0], "");
    case OP_ABS: return call_ovl(cg, "llvm.fabs", a, 1);
    case OP_SQRT:
        if (dt == DT_F64)
            return call_ovl(cg, "llvm.sqrt", a, 1);
        break;
    default:
        break;
    }
    LLVMValueRef x = to_f32(cg, a[0], dt);
    return cg_convert(cg, math_f32(cg, code, x), DT_F32, dt);
}

static LLVMValueRef int_op(Cg *cg, OpCode code, DType dt, LLVMValueRef *a)
{
    LLVMBuilderRef b = cg->b;
    bool sg = dtype_is_signed(dt);
    switch (code) {
    case OP_ADD: return LLVMBuildAdd(b, a[0], a[1], "");
    case OP_SUB: return LLVMBuildSub(b, a[0], a[1], "");
    case OP_MUL: return LLVMBuildMul(b, a[0], a[1], "");
    case OP_DIV: return sg ? LLVMBuildSDiv(b, a[0], a[1], "") : LLVMBuildUDiv(b, a[0], a[1], "");
    case OP_REM: return sg ? LLVMBuildSRem(b, a[0], a[1], "") : LLVMBuildURem(b, a[0], a[1], "");
    case OP_MIN: return call_ovl(cg, dt == DT_BOOL ? "llvm.umin" : sg ? "llvm.smin" : "llvm.umin", a, 2);
    case OP_MAX: return call_ovl(cg, dt == DT_BOOL ? "llvm.umax" : sg ? "llvm.smax" : "llvm.umax", a, 2);
    case OP_AND: return LLVMBuildAnd(b, a[0], a[1], "");
    case OP_OR: return LLVMBuildOr(b, a[0], a[1], "");
    case OP_XOR: return LLVMBuildXor(b, a[0], a[1], "");
    case OP_NEG: return LLVMBuildNeg(b, a[0], "");
    case OP_NOT: return LLVMBuildNot(b, a[0], "");
    case OP_ABS: {
        if (!sg)
            return a[0];
        LLVMValueRef args[2] = { a[0], LLVMConstInt(cg->t_i1, 0, 0) };
        return cg_call(cg, dt == DT_I64 ? "llvm.abs.i64" : dt == DT_I32 ? "llvm.abs.i32"
                           : dt == DT_I16 ? "llvm.abs.i16" : "llvm.abs.i8", LLVMTypeOf(a[0]), args, 2);
    }
    default: return NULL;
    }
}

static LLVMValueRef cmp_op(Cg *cg, CmpPred p, DType dt, LLVMValueRef *a)
{
    static const LLVMRealPredicate fp[] = { LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE };
    static const LLVMIntPredicate sp[] = { LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE };
    static const LLVMIntPredicate up[] = { LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE };
    if (is_f(dt))
        return LLVMBuildFCmp(cg->b, fp[p], a[0], a[1], "");
    return LLVMBuildICmp(cg->b, dtype_is_signed(dt) ? sp[p] : up[p], a[0], a[1], "");
}

/* One element of an elementwise op; `dt` is the dtype of operand 0 (of the
 * value operands for SELECT). */
static LLVMValueRef elem(Cg *cg, Op *op, DType dt, DType rdt, LLVMValueRef *a)
{
    switch ((OpCode)op->code) {
    case OP_CMP: return cmp_op(cg, (CmpPred)op->iattr[0], dt, a);
    case OP_SELECT: return LLVMBuildSelect(cg->b, a[0], a[1], a[2], "");
    case OP_CAST: return cg_convert(cg, a[0], dt, rdt);
    default: break;
    }
    if (is_f(dt))
        return float_op(cg, (OpCode)op->code, dt, a);
    return int_op(cg, (OpCode)op->code, dt, a);
}

static bool elem_supported(Cg *cg, Op *op, DType dt)
{
    OpCode c = (OpCode)op->code;
    bool transc = c == OP_EXP || c == OP_EXP2 || c == OP_LOG || c == OP_LOG2 || c == OP_RSQRT || c == OP_TANH;
    if (dt == DT_F8E4M3 || dt == DT_F8E5M2) {
        diag_error(cg->d, op->loc, "'%s' on %s tiles is not supported by the code generator yet; "
                   "load f8 data and cast it on the tensor-core path", op_info[c].name, dtype_name(dt));
        return false;
    }
    if (!is_f(dt) && (transc || c == OP_SQRT)) {
        diag_error(cg->d, op->loc, "'%s' needs a float operand, got %s", op_info[c].name, dtype_name(dt));
        return false;
    }
    return true;
}

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

static LLVMValueRef *new_regs(Cg *cg, const Layout *L)
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
 * dominates every later use. Only in "wide" rows (codegen.c simt_wide):
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
static bool remat_ok(Cg *cg, Op *op)
{
    if (!cg->remat || cg->depth > 0 || !remat_code((OpCode)op->code))
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

static LLVMValueRef elem(Cg *cg, Op *op, DType dt, DType rdt, LLVMValueRef *a);

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

static LLVMValueRef *iota_cmp(Cg *cg, Op *op, const Layout *L)
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
static LLVMValueRef *guarded_select(Cg *cg, Op *op, const Layout *L)
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
    for (int d = 0; d < L->prank; d++)
        if (layout_nregs_dim(&ls, d) != layout_nregs_dim(L, d))
            return NULL;
    return cg_materialize(cg, s, st, cg_layout_dup(cg, ls), loc);
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

static void set_regs(Cg *cg, ValId v, const Layout *L, LLVMValueRef *r)
{
    cg->vals[v] = (TileVal){ .kind = TV_REGS, .L = L, .r = r };
}

/* ---- elementwise ops ---- */

static const Layout *pick_layout(Cg *cg, Op *op)
{
    const Layout *best = NULL;
    for (int i = 0; i < op->nargs; i++) {
        const TileVal *v = &cg->vals[op->args[i]];
        if (v->kind == TV_REGS && (!best || layout_nregs(v->L) < layout_nregs(best)))
            best = v->L;
    }
    return best;
}

/* An f32 tile divided by a uniform value: one correctly rounded reciprocal,
 * then a multiply per element (at most 1 ulp from the quotient) instead of
 * an IEEE division subroutine per element. NULL: divide normally. */
static LLVMValueRef uniform_recip(Cg *cg, Op *op, DType dt)
{
    const TileVal *d = op->code == OP_DIV && dt == DT_F32 ? &cg->vals[op->args[1]] : NULL;
    if (!d || (d->kind != TV_SCALAR && d->kind != TV_SPLAT))
        return NULL;
    return LLVMBuildFDiv(cg->b, LLVMConstReal(cg->t_f32, 1.0), d->s, "");
}

/* An f32 tile divided by a tile whose registers repeat a few values (a
 * broadcast row vector, e.g. attention's `acc / l[:, *]`): one reciprocal
 * per distinct divisor, then multiplies, as uniform_recip. NULL: divide
 * normally. */
int cg_repeated_values(LLVMValueRef *v, int n, LLVMValueRef *uniq, int *idx)
{
    int nu = 0;
    for (int r = 0; r < n; r++) {
        int k = 0;
        while (k < nu && uniq[k] != v[r])
            k++;
        if (k == nu) {
            if (nu == CG_MAX_REPEATED || (nu + 1) * 4 > n)
                return 0;
            uniq[nu++] = v[r];
        }
        idx[r] = k;
    }
    return nu;
}

static LLVMValueRef *repeated_recips(Cg *cg, Op *op, DType dt, LLVMValueRef *d, int n)
{
    if (op->code != OP_DIV || dt != DT_F32 || !d || n < 8)
        return NULL;
    LLVMValueRef uniq[CG_MAX_REPEATED], *out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    int *idx = arena_alloc(cg->a, sizeof(int) * (size_t)n), nu = cg_repeated_values(d, n, uniq, idx);
    if (!nu)
        return NULL;
    for (int k = 0; k < nu; k++)
        uniq[k] = LLVMBuildFDiv(cg->b, LLVMConstReal(cg->t_f32, 1.0), uniq[k], "");
    for (int r = 0; r < n; r++)
        out[r] = uniq[idx[r]];
    return out;
}

static int lower_elem(Cg *cg, Op *op)
{
    Func *f = cg->f;
    DType dt = (DType)ir_type(f, op->args[op->code == OP_SELECT ? 1 : 0])->dtype;
    const Type *rt = ir_type(f, op->res[0]);
    if (!elem_supported(cg, op, dt) || (op->code == OP_CAST && !elem_supported(cg, op, (DType)rt->dtype)))
        return 1;
    LLVMValueRef a[3];
    bool all_uniform = true;
    for (int i = 0; i < op->nargs; i++) {
        const TileVal *v = &cg->vals[op->args[i]];
        all_uniform = all_uniform && (v->kind == TV_SCALAR || v->kind == TV_SPLAT);
        a[i] = v->s;
    }
    if (all_uniform) {
        LLVMValueRef s = elem(cg, op, dt, (DType)rt->dtype, a);
        cg->vals[op->res[0]] = (TileVal){ .kind = rt->kind == TY_TILE ? TV_SPLAT : TV_SCALAR, .s = s };
        return 0;
    }
    const Layout *L = pick_layout(cg, op);
    if (!L)
        L = cg_default_layout(cg, rt, true);
    LLVMValueRef *cmp = iota_cmp(cg, op, L);
    if (!cmp)
        cmp = guarded_select(cg, op, L);
    if (cmp) {
        set_regs(cg, op->res[0], L, cmp);
        if (remat_ok(cg, op)) {
            cg->vals[op->res[0]].def = op;
            cg->vals[op->res[0]].epoch = cg->epoch;
        }
        return 0;
    }
    LLVMValueRef *in[3];
    for (int i = 0; i < op->nargs; i++)
        in[i] = cg_materialize(cg, &cg->vals[op->args[i]], ir_type(f, op->args[i]), L, op->loc);
    int n = layout_nregs(L), xi;
    LLVMValueRef *out = new_regs(cg, L), inv = uniform_recip(cg, op, dt), *skip = NULL;
    LLVMValueRef *recips = inv ? NULL : repeated_recips(cg, op, dt, in[1], n);
    if (dt == DT_F32 && cg_chain_rescale(cg, op, &xi))
        skip = cg_chain_scale_or_skip(cg, in[xi], in[1 - xi], n);
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < op->nargs; i++)
            a[i] = in[i][r];
        out[r] = skip ? skip[r]
               : inv ? LLVMBuildFMul(cg->b, a[0], inv, "")
               : recips ? LLVMBuildFMul(cg->b, a[0], recips[r], "")
               : elem(cg, op, dt, (DType)rt->dtype, a);
    }
    set_regs(cg, op->res[0], L, out);
    if (remat_ok(cg, op)) {
        cg->vals[op->res[0]].def = op;
        cg->vals[op->res[0]].epoch = cg->epoch;
    }
    return 0;
}

/* ---- constants, launch values ---- */

static LLVMValueRef const_value(Cg *cg, Op *op, DType dt)
{
    if (is_f(dt))
        return LLVMConstReal(cg_type(cg, dt), op->fattr);
    return LLVMConstInt(cg_type(cg, dt), (unsigned long long)op->iattr[0], dtype_is_signed(dt));
}

static int lower_const(Cg *cg, Op *op)
{
    const Type *t = ir_type(cg->f, op->res[0]);
    if (t->dtype == DT_F8E4M3 || t->dtype == DT_F8E5M2) {
        diag_error(cg->d, op->loc, "f8 constants are not supported by the code generator yet");
        return 1;
    }
    LLVMValueRef s = const_value(cg, op, (DType)t->dtype);
    cg->vals[op->res[0]] = (TileVal){ .kind = t->kind == TY_TILE ? TV_SPLAT : TV_SCALAR, .s = s };
    return 0;
}

static int lower_sreg(Cg *cg, Op *op)
{
    static const char *const ctaid[] = { "llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y",
                                         "llvm.nvvm.read.ptx.sreg.ctaid.z" };
    static const char *const nctaid[] = { "llvm.nvvm.read.ptx.sreg.nctaid.x", "llvm.nvvm.read.ptx.sreg.nctaid.y",
                                          "llvm.nvvm.read.ptx.sreg.nctaid.z" };
    int ax = (int)op->iattr[0];
    if (ax < 0 || ax > 2) {
        diag_internal(cg->d, op->loc, "block axis %d out of range", ax);
        return 1;
    }
    const char *name = op->code == OP_BLOCKID ? ctaid[ax] : nctaid[ax];
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_SCALAR, .s = cg_call(cg, name, cg->t_i32, NULL, 0) };
    return 0;
}

/* ---- shape ops ---- */

static int lower_splat(Cg *cg, Op *op)
{
    const Type *t = ir_type(cg->f, op->res[0]);
    TileVal *src = &cg->vals[op->args[0]];
    if (t->kind != TY_TILE || src->kind != TV_SCALAR) {
        diag_internal(cg->d, op->loc, "splat of a non-scalar");
        return 1;
    }
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_SPLAT, .s = src->s };
    return 0;
}

static int lower_iota(Cg *cg, Op *op)
{
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_IOTA, .axis = (uint8_t)op->iattr[0] };
    return 0;
}

static int lower_expand(Cg *cg, Op *op)
{
    const TileVal *v = &cg->vals[op->args[0]];
    int axis = (int)op->iattr[0];
    TileVal r = *v;
    r.def = NULL;   /* recomputation happens in the operand's layout only */
    r.leaf = false;
    if (v->kind == TV_IOTA)
        r.axis = (uint8_t)(v->axis >= axis ? v->axis + 1 : v->axis);
    else if (v->kind == TV_SCALAR)
        r.kind = TV_SPLAT;
    else if (v->kind == TV_REGS)
        r.L = cg_layout_dup(cg, layout_expand(v->L, axis));
    cg->vals[op->res[0]] = r;
    return 0;
}

static int lower_broadcast(Cg *cg, Op *op)
{
    const TileVal *v = &cg->vals[op->args[0]];
    const Type *st = ir_type(cg->f, op->args[0]), *t = ir_type(cg->f, op->res[0]);
    if (v->kind != TV_REGS) {
        cg->vals[op->res[0]] = *v;
        return 0;
    }
    const Layout *L = cg_layout_dup(cg, layout_with_shape(v->L, t->shape));
    LLVMValueRef *out = new_regs(cg, L);
    int n = layout_nregs(L), idx[TILE_MAXRANK];
    for (int r = 0; r < n; r++) {
        layout_reg_index(L, r, idx);
        for (int a = 0; a < t->rank; a++)
            if (st->shape[a] == 1)
                idx[layout_pdim(L, a)] = 0;
        out[r] = v->r[layout_reg_of(v->L, idx)];
    }
    set_regs(cg, op->res[0], L, out);
    cg->vals[op->res[0]].bsrc = op->args[0];
    return 0;
}

static int lower_trans(Cg *cg, Op *op)
{
    const TileVal *v = &cg->vals[op->args[0]];
    const Type *t = ir_type(cg->f, op->res[0]);
    TileVal r = *v;
    r.def = NULL;
    r.leaf = false;
    if (v->kind == TV_IOTA)
        r.axis = (uint8_t)(1 - v->axis);
    if (v->kind != TV_REGS) {
        cg->vals[op->res[0]] = r;
        return 0;
    }
    static const int perm[2] = { 1, 0 };
    const Layout *L = cg_default_layout(cg, t, true);
    set_regs(cg, op->res[0], L, cg_convert_layout(cg, v->r, v->L, L, (DType)t->dtype, perm));
    return 0;
}

/* ---- structured control flow ---- */

/* The layout a loop-carried tile keeps: the init's, or that of a load of
 * the same shape in the body (so the carried value needs no conversion). */
static bool find_load_layout(Func *f, Op *op, void *ctx)
{
    const Type **want = ctx;
    const Type *t = op->nres ? ir_type(f, op->res[0]) : NULL;
    if (op->code == OP_LOAD && t && t->kind == TY_TILE && type_same_shape(t, want[0])) {
        want[1] = t;
        return false;
    }
    return true;
}

static const Layout *carried_layout(Cg *cg, Op *op, int i)
{
    const TileVal *v = &cg->vals[op->args[3 + i]];
    const Type *t = ir_type(cg->f, op->res[i]);
    if (v->kind == TV_REGS)
        return v->L;
    const Layout *mma = cg_mma_carried_layout(cg, op, i);
    if (mma)
        return mma;
    const Type *want[2] = { t, NULL };
    ir_walk(cg->f, &op->regions[0], find_load_layout, want);
    if (want[1]) {
        Type lt = *t;
        lt.dtype = want[1]->dtype;
        return cg_default_layout(cg, &lt, true);
    }
    return cg_default_layout(cg, t, true);
}

/* Values carried by phis: scalars as one phi, tiles as one phi per register. */
typedef struct Carried {
    const Layout *L;     /* NULL: scalar */
    LLVMValueRef *phi;
    int n;
} Carried;

static void make_phis(Cg *cg, Carried *c, const Type *t)
{
    LLVMTypeRef ty = cg_type(cg, (DType)t->dtype);
    c->n = c->L ? layout_nregs(c->L) : 1;
    c->phi = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)c->n);
    for (int r = 0; r < c->n; r++)
        c->phi[r] = LLVMBuildPhi(cg->b, ty, "");
}

static TileVal carried_val(const Carried *c)
{
    if (!c->L)
        return (TileVal){ .kind = TV_SCALAR, .s = c->phi[0] };
    return (TileVal){ .kind = TV_REGS, .L = c->L, .r = c->phi };
}

static bool has_loop(Func *f, Op *op, void *ctx)
{
    (void)f;
    *(bool *)ctx |= op->code == OP_FOR;
    return true;
}

/* Thread ids from an opaque copy of tid (a side-effecting asm, which no
 * pass moves), so that what is computed from them stays where it is
 * computed. Inside a loop that holds another loop (a persistent grid's
 * loop over tiles), LICM would otherwise hoist every lane-derived
 * constant of the body (the epilogue's columns, its scratch addresses)
 * out of the outer loop, and each would hold a register through the inner
 * loop: 29 more values live across attention's key loop, which left ptxas
 * too few registers to overlap the row-max shuffles (12% slower). */
static void fresh_ids(Cg *cg)
{
    cg->tid = cg_opaque_tid(cg);
    cg_thread_ids(cg, cg->tid);
}

static int lower_for(Cg *cg, Op *op)
{
    Func *f = cg->f;
    int nc = op->nres;
    Block *body = &op->regions[0];
    Op *y = ir_block_yield(body);
    bool outer = false;
    ir_walk(f, body, has_loop, &outer);
    LLVMValueRef ids[3] = { cg->tid, cg->lane, cg->warp };
    if (!y || y->nargs != nc || body->nargs != nc + 1) {
        diag_internal(cg->d, op->loc, "malformed for loop");
        return 1;
    }
    Carried *c = arena_alloc(cg->a, sizeof(Carried) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++)
        c[i + 1].L = ir_type(f, op->res[i])->kind == TY_TILE ? carried_layout(cg, op, i) : NULL;
    cg_chain_loop_entry(cg, op);
    /* Materialise inits in the preheader, before the header's phis exist. */
    LLVMValueRef **init = arena_alloc(cg->a, sizeof(LLVMValueRef *) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++)
        if (c[i + 1].L)
            init[i] = cg_materialize(cg, &cg->vals[op->args[3 + i]], ir_type(f, op->args[3 + i]), c[i + 1].L, op->loc);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b), head = cg_new_block(cg, "for.head"),
                      bodyb = cg_new_block(cg, "for.body"), exit = cg_new_block(cg, "for.exit");
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    c[0].L = NULL;
    make_phis(cg, &c[0], ir_type(f, op->args[0]));
    LLVMAddIncoming(c[0].phi[0], &cg->vals[op->args[0]].s, &pre, 1);
    for (int i = 0; i < nc; i++) {
        make_phis(cg, &c[i + 1], ir_type(f, op->res[i]));
        LLVMValueRef one = cg->vals[op->args[3 + i]].s;
        LLVMValueRef *r = c[i + 1].L ? init[i] : &one;
        for (int k = 0; k < c[i + 1].n; k++)
            LLVMAddIncoming(c[i + 1].phi[k], &r[k], &pre, 1);
    }
    LLVMValueRef cond = LLVMBuildICmp(cg->b, LLVMIntSLT, c[0].phi[0], cg->vals[op->args[1]].s, "");
    LLVMBuildCondBr(cg->b, cond, bodyb, exit);
    LLVMPositionBuilderAtEnd(cg->b, bodyb);
    for (int i = 0; i <= nc; i++)
        cg->vals[body->args[i]] = carried_val(&c[i]);
    cg->depth++;   /* until the yields are materialised in the latch */
    if (outer) {
        fresh_ids(cg);
        if (cg->report)
            sb_printf(cg->report, "  loop at %d:%d: thread ids taken afresh at the top of its body and after each "
                      "inner loop (lane-derived values are not held across the inner loops)\n", op->loc.line,
                      op->loc.col);
    }
    cg->loops++;
    int e = cg_lower_block(cg, body);
    cg->loops--;
    if (e)
        return 1;
    LLVMValueRef next = LLVMBuildAdd(cg->b, c[0].phi[0], cg->vals[op->args[2]].s, "");
    /* Yield values are materialised in the latch before the back edge. */
    LLVMValueRef **yv = arena_alloc(cg->a, sizeof(LLVMValueRef *) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++) {
        const TileVal *v = &cg->vals[y->args[i]];
        yv[i] = c[i + 1].L ? cg_materialize(cg, v, ir_type(f, y->args[i]), c[i + 1].L, y->loc) : NULL;
    }
    cg->depth--;
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMAddIncoming(c[0].phi[0], &next, &latch, 1);
    for (int i = 0; i < nc; i++) {
        LLVMValueRef one = cg->vals[y->args[i]].s;
        LLVMValueRef *r = yv[i] ? yv[i] : &one;
        for (int k = 0; k < c[i + 1].n; k++)
            LLVMAddIncoming(c[i + 1].phi[k], &r[k], &latch, 1);
    }
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, exit);
    for (int i = 0; i < nc; i++)
        cg->vals[op->res[i]] = carried_val(&c[i + 1]);
    if (outer) {   /* after the outer loop: the ids of the code around it */
        cg->tid = ids[0];
        cg->lane = ids[1];
        cg->warp = ids[2];
    } else if (cg->loops > 0) {
        fresh_ids(cg);   /* after an inner loop: ids for the rest of the outer body */
    }
    return 0;
}

static const Layout *if_layout(Cg *cg, const TileVal *a, const TileVal *b, const Type *t)
{
    if (a->kind == TV_REGS)
        return a->L;
    if (b->kind == TV_REGS)
        return b->L;
    if (a->kind == TV_SPLAT && b->kind == TV_SPLAT)
        return NULL;
    return cg_default_layout(cg, t, true);
}

static int lower_if(Cg *cg, Op *op)
{
    Func *f = cg->f;
    int nr = op->nres;
    LLVMBasicBlockRef thenb = cg_new_block(cg, "if.then"), elseb = cg_new_block(cg, "if.else"),
                      join = cg_new_block(cg, "if.join"), ends[2];
    LLVMBuildCondBr(cg->b, cg->vals[op->args[0]].s, thenb, elseb);
    Op *ys[2];
    cg->depth++;   /* until the yields are materialised in the arms */
    for (int k = 0; k < 2; k++) {
        LLVMPositionBuilderAtEnd(cg->b, k ? elseb : thenb);
        ys[k] = ir_block_yield(&op->regions[k]);
        if (cg_lower_block(cg, &op->regions[k]))
            return 1;
        ends[k] = LLVMGetInsertBlock(cg->b);
        if (nr && (!ys[k] || ys[k]->nargs != nr)) {
            diag_internal(cg->d, op->loc, "malformed if");
            return 1;
        }
    }
    Carried *c = arena_alloc(cg->a, sizeof(Carried) * (size_t)(nr + 1));
    for (int i = 0; i < nr; i++) {
        const Type *t = ir_type(f, op->res[i]);
        c[i].L = t->kind == TY_TILE ? if_layout(cg, &cg->vals[ys[0]->args[i]], &cg->vals[ys[1]->args[i]], t) : NULL;
    }
    LLVMValueRef **vals[2];
    for (int k = 0; k < 2; k++) {
        LLVMPositionBuilderAtEnd(cg->b, ends[k]);
        vals[k] = arena_alloc(cg->a, sizeof(LLVMValueRef *) * (size_t)(nr + 1));
        for (int i = 0; i < nr; i++) {
            const TileVal *v = &cg->vals[ys[k]->args[i]];
            vals[k][i] = c[i].L ? cg_materialize(cg, v, ir_type(f, ys[k]->args[i]), c[i].L, op->loc) : NULL;
        }
        ends[k] = LLVMGetInsertBlock(cg->b);
        LLVMBuildBr(cg->b, join);
    }
    cg->depth--;
    LLVMPositionBuilderAtEnd(cg->b, join);
    for (int i = 0; i < nr; i++) {
        make_phis(cg, &c[i], ir_type(f, op->res[i]));
        for (int k = 0; k < 2; k++) {
            LLVMValueRef one = cg->vals[ys[k]->args[i]].s;
            LLVMValueRef *r = vals[k][i] ? vals[k][i] : &one;
            for (int j = 0; j < c[i].n; j++)
                LLVMAddIncoming(c[i].phi[j], &r[j], &ends[k], 1);
        }
        TileVal v = carried_val(&c[i]);
        if (!c[i].L && ir_type(f, op->res[i])->kind == TY_TILE)
            v.kind = TV_SPLAT;
        cg->vals[op->res[i]] = v;
    }
    return 0;
}

/* ---- dispatch ---- */

static int lower_op(Cg *cg, Op *op)
{
    switch ((OpCode)op->code) {
    case OP_CONST: return lower_const(cg, op);
    case OP_BLOCKID: case OP_NBLOCKS: return lower_sreg(cg, op);
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM: case OP_MIN: case OP_MAX:
    case OP_AND: case OP_OR: case OP_XOR: case OP_CMP: case OP_NEG: case OP_NOT: case OP_ABS:
    case OP_EXP: case OP_EXP2: case OP_LOG: case OP_LOG2: case OP_SQRT: case OP_RSQRT: case OP_TANH:
    case OP_SELECT: case OP_CAST:
        return lower_elem(cg, op);
    case OP_DIVISOR:   /* the front end folds it or keeps it to the grid, which is evaluated at launch */
        diag_internal(cg->d, op->loc, "divisor() outside the grid reached the code generator");
        return 1;
    case OP_SPLAT: return lower_splat(cg, op);
    case OP_EXPAND: return lower_expand(cg, op);
    case OP_BROADCAST: return lower_broadcast(cg, op);
    case OP_IOTA: return lower_iota(cg, op);
    case OP_REDUCE: return cg_lower_reduce(cg, op);
    case OP_TRANS:
        return cg->vals[op->args[0]].kind == TV_SMEM ? cg_lower_trans_view(cg, op) : lower_trans(cg, op);
    case OP_DOT: return cg_lower_dot(cg, op);
    case OP_LOAD: return cg_lower_load(cg, op);
    case OP_STORE:
        cg_mma_prepare_store(cg, op);
        return cg_lower_store(cg, op);
    case OP_SMEM_ALLOC: return cg_lower_smem_alloc(cg, op);
    case OP_ASYNC_COPY: return cg_lower_async_copy(cg, op);
    case OP_ASYNC_COMMIT: case OP_ASYNC_WAIT: case OP_BARRIER: return cg_lower_async_sync(cg, op);
    case OP_SMEM_LOAD: return cg_lower_smem_load(cg, op);
    case OP_SMEM_STORE: return cg_lower_smem_store(cg, op);
    case OP_FOR: return lower_for(cg, op);
    case OP_IF: return lower_if(cg, op);
    case OP_YIELD: return 0;   /* read by the parent FOR / IF */
    case OP_WS: case OP_NAMED_BAR: case OP_MBAR_ALLOC: case OP_MBAR_EXPECT: case OP_MBAR_ARRIVE: case OP_MBAR_WAIT:
    case OP_TMA_LOAD: case OP_DOT_ASYNC: case OP_DOT_WAIT: case OP_CONVERT_LAYOUT:
        /* the schedule's ops: interpreted and checked, not lowered yet */
        diag_error(cg->d, op->loc, "'%s' (a schedule op) has no lowering for %s in this version; the interpreter "
                   "runs it", op_info[op->code].name, cg->ti->name);
        return 1;
    case OP_COUNT: break;
    }
    diag_internal(cg->d, op->loc, "op '%s' has no lowering", op->code < OP_COUNT ? op_info[op->code].name : "?");
    return 1;
}

int cg_lower_block(Cg *cg, Block *blk)
{
    for (int i = 0; i < blk->nops; i++)
        if (lower_op(cg, blk->ops[i]))
            return 1;
    return 0;
}

/* ---- schedule: compute each value where it is first needed ----
 * The lowering emits a tile op at a time (all registers of `x - m`, then
 * all of `exp`, ...), so every intermediate tile is live at once: 32 f32
 * registers per op for a [4096] row on 4 warps. After optimisation this
 * reorders each basic block of a SIMT kernel: instructions with effects
 * (loads, stores, calls, barriers, shuffles) keep their order; pure
 * arithmetic moves to just before its first user, depth first, so a chain
 * is consumed element by element (a reduction folds each value as it is
 * made). Loads stay where they are, all issued before the first use.
 * Only for the kernels codegen.c marks "tilec.sched" (schedule_simt). */

typedef struct Sched {
    LLVMValueRef *key;        /* open addressing on instruction pointers */
    uint8_t *state;           /* 1 pending (this block), 2 placed */
    size_t cap;
    LLVMBuilderRef b;
} Sched;

static size_t sched_slot(const Sched *s, LLVMValueRef v)
{
    size_t h = ((size_t)(uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ull & (s->cap - 1);
    while (s->key[h] && s->key[h] != v)
        h = (h + 1) & (s->cap - 1);
    return h;
}

static bool sched_pure_call(LLVMValueRef I)
{
    static const char *const ok[] = { "llvm.nvvm.ex2", "llvm.nvvm.lg2", "llvm.nvvm.rsqrt", "llvm.nvvm.sqrt",
                                      "llvm.nvvm.fmax", "llvm.nvvm.fmin", "llvm.nvvm.tanh", "llvm.maxnum",
                                      "llvm.minnum", "llvm.fabs", "llvm.sqrt", "llvm.exp2", "llvm.fma",
                                      "llvm.smax", "llvm.smin", "llvm.umax", "llvm.umin", "llvm.abs" };
    LLVMValueRef callee = LLVMGetCalledValue(I);
    if (callee && LLVMIsAInlineAsm(callee)) {
        const char *s = NULL;
        size_t n = 0;
        s = LLVMGetInlineAsmAsmString(callee, &n);
        return !LLVMGetInlineAsmHasSideEffects(callee) && n >= 4 && strncmp(s, "prmt", 4) == 0;
    }
    if (!callee || !LLVMIsAFunction(callee))
        return false;
    size_t n = 0;
    const char *name = LLVMGetValueName2(callee, &n);
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strncmp(name, ok[i], strlen(ok[i])) == 0)
            return true;
    return false;
}

static bool sched_movable(LLVMValueRef I)
{
    LLVMOpcode op = LLVMGetInstructionOpcode(I);
    if (op == LLVMCall)
        return sched_pure_call(I);
    return (op >= LLVMAdd && op <= LLVMXor) || op == LLVMFNeg || (op >= LLVMTrunc && op <= LLVMAddrSpaceCast) ||
           op == LLVMICmp || op == LLVMFCmp || op == LLVMSelect || op == LLVMExtractElement ||
           op == LLVMInsertElement || op == LLVMShuffleVector || op == LLVMGetElementPtr;
}

/* Pure, and every user is a non-phi instruction of the same block. */
static bool sched_sinkable(LLVMValueRef I, LLVMBasicBlockRef bb)
{
    if (!sched_movable(I))
        return false;
    LLVMUseRef u = LLVMGetFirstUse(I);
    if (!u)
        return false;
    for (; u; u = LLVMGetNextUse(u)) {
        LLVMValueRef user = LLVMGetUser(u);
        if (!LLVMIsAInstruction(user) || LLVMIsAPHINode(user) || LLVMGetInstructionParent(user) != bb)
            return false;
    }
    return true;
}

static void sched_place(Sched *s, LLVMValueRef I)
{
    size_t h = sched_slot(s, I);
    if (s->key[h] != I || s->state[h] != 1)
        return;
    s->state[h] = 2;
    for (int k = 0, n = LLVMGetNumOperands(I); k < n; k++) {
        LLVMValueRef o = LLVMGetOperand(I, (unsigned)k);
        if (o && LLVMIsAInstruction(o))
            sched_place(s, o);
    }
    LLVMInstructionRemoveFromParent(I);
    LLVMInsertIntoBuilder(s->b, I);
}

static void sched_block(Cg *cg, LLVMBasicBlockRef bb, LLVMBuilderRef b)
{
    size_t n = 0;
    for (LLVMValueRef I = LLVMGetFirstInstruction(bb); I; I = LLVMGetNextInstruction(I))
        n++;
    if (n < 8)
        return;
    Sched s = { .cap = 16, .b = b };
    while (s.cap < 2 * n)
        s.cap *= 2;
    s.key = arena_alloc(cg->a, sizeof(LLVMValueRef) * s.cap);
    s.state = arena_alloc(cg->a, s.cap);
    memset(s.key, 0, sizeof(LLVMValueRef) * s.cap);
    memset(s.state, 0, s.cap);
    LLVMValueRef *order = arena_alloc(cg->a, sizeof(LLVMValueRef) * n);
    size_t i = 0;
    for (LLVMValueRef I = LLVMGetFirstInstruction(bb); I; I = LLVMGetNextInstruction(I)) {
        order[i++] = I;
        size_t h = sched_slot(&s, I);
        s.key[h] = I;
        s.state[h] = 1;
    }
    /* Anchors (phis, effects, values used elsewhere) in their order; pure
     * values on demand. The block is rebuilt at its end as it goes. */
    LLVMPositionBuilderAtEnd(b, bb);
    for (i = 0; i < n; i++) {
        LLVMValueRef I = order[i];
        if (LLVMIsAPHINode(I)) {
            s.state[sched_slot(&s, I)] = 2;
            continue;
        }
        if (sched_sinkable(I, bb))
            continue;
        sched_place(&s, I);
    }
}

void cg_schedule_simt(Cg *cg, LLVMValueRef fn)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(cg->ctx);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
        sched_block(cg, bb, b);
    LLVMDisposeBuilder(b);
}
