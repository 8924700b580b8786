/* lower_simt.c - Tile IR ops -> LLVM IR for SIMT tiles: scalars, elementwise
 * math, casts, shape ops (splat / iota / expand / broadcast / trans) and
 * random words (philox).
 * Register coordinates, materialisation and recomputation are in
 * simt_values.c, structured control flow and the op dispatch (DOT and the
 * shared-memory ops to lower_mma.c and lower_async.c) in simt_control.c,
 * the instruction order after optimisation in simt_sched.c.
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

#include <math.h>
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

/* ---- f8 (e4m3, e5m2) <-> wider types, in integer and exact float steps ----
 * An f8 value is an i8 of its bits. Every e4m3 and e5m2 value is an f16
 * value, so f8 -> anything goes through its f16 bits (exact); anything ->
 * f8 rounds once, to nearest even, from f32 (f16, bf16 and integers first
 * converted to f32, exactly in the range f8 can hold) or from f64 itself,
 * as the interpreter's tc_round_to: e4m3 saturates at +-448 (no infinity),
 * e5m2 overflows to infinity; NaN keeps its sign (e4m3 S.1111.111, e5m2
 * S.11111.10). No f8 instruction is used: sm_86 has none. */

static bool is_f8(DType t) { return t == DT_F8E4M3 || t == DT_F8E5M2; }

LLVMValueRef cg_f8_to_f16_bits(Cg *cg, LLVMValueRef byte, DType from)
{
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef i16 = cg->t_i16;
    LLVMValueRef x = LLVMBuildZExt(b, byte, i16, "");
    if (from == DT_F8E5M2)   /* e5m2 is the top byte of an f16 */
        return LLVMBuildShl(b, x, LLVMConstInt(i16, 8, 0), "");
    LLVMValueRef m7 = LLVMBuildAnd(b, x, LLVMConstInt(i16, 0x7f, 0), "");
    LLVMValueRef sign = LLVMBuildAnd(b, x, LLVMConstInt(i16, 0x80, 0), "");
    sign = LLVMBuildShl(b, sign, LLVMConstInt(i16, 8, 0), "");
    /* normal: exponent rebiased 7 -> 15, mantissa 3 -> 10 bits */
    LLVMValueRef norm = LLVMBuildShl(b, m7, LLVMConstInt(i16, 7, 0), "");
    norm = LLVMBuildAdd(b, norm, LLVMConstInt(i16, 0x2000, 0), "");
    /* subnormal m * 2^-9 (m = 0..7): the top byte of its f16 from a table */
    LLVMValueRef sh = LLVMBuildShl(b, LLVMBuildZExt(b, m7, cg->t_i64, ""), cg_i64(cg, 3), "");
    LLVMValueRef tab = LLVMBuildLShr(b, cg_i64(cg, (int64_t)0x232221201E1C1800LL), sh, "");
    LLVMValueRef sub = LLVMBuildShl(b, LLVMBuildAnd(b, LLVMBuildTrunc(b, tab, i16, ""), LLVMConstInt(i16, 0xff, 0), ""),
                                    LLVMConstInt(i16, 8, 0), "");
    LLVMValueRef mag = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, m7, LLVMConstInt(i16, 8, 0), ""), sub, norm, "");
    LLVMValueRef nan = LLVMBuildICmp(b, LLVMIntEQ, m7, LLVMConstInt(i16, 0x7f, 0), "");
    mag = LLVMBuildSelect(b, nan, LLVMConstInt(i16, 0x7e00, 0), mag, "");
    return LLVMBuildOr(b, mag, sign, "");
}

/* Round x (f32 or f64) to f8 `to`: the i8 bits. */
static LLVMValueRef round_to_f8(Cg *cg, LLVMValueRef x, bool f64, DType to)
{
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef ft = f64 ? cg->t_f64 : cg->t_f32, it = f64 ? cg->t_i64 : cg->t_i32;
    int sm = f64 ? 52 : 23, sbias = f64 ? 1023 : 127, emask = f64 ? 0x7ff : 0xff;
    bool e4 = to == DT_F8E4M3;
    int mt = e4 ? 3 : 2, emin = e4 ? -6 : -14;
    double maxv = e4 ? 448.0 : 57344.0;
    LLVMValueRef bits = LLVMBuildBitCast(b, x, it, "");
    LLVMValueRef a = cg_call(cg, f64 ? "llvm.fabs.f64" : "llvm.fabs.f32", ft, &x, 1);
    LLVMValueRef ex = LLVMBuildAnd(b, LLVMBuildLShr(b, bits, LLVMConstInt(it, (unsigned)sm, 0), ""),
                                   LLVMConstInt(it, (unsigned)emask, 0), "");
    ex = LLVMBuildSub(b, LLVMBuildTrunc(b, ex, cg->t_i32, ""), cg_i32(cg, sbias), "");   /* floor(log2 |x|) */
    LLVMValueRef lo = cg_i32(cg, emin);
    ex = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, ex, lo, ""), lo, ex, "");      /* subnormal quantum */
    /* q = 2^(ex - mt) and 1 / q, built from their exponent fields */
    LLVMValueRef qe = LLVMBuildAdd(b, ex, cg_i32(cg, sbias - mt), "");
    LLVMValueRef ie = LLVMBuildSub(b, cg_i32(cg, sbias + mt), ex, "");
    LLVMValueRef sh = LLVMConstInt(it, (unsigned)sm, 0);
    LLVMValueRef q = LLVMBuildBitCast(b, LLVMBuildShl(b, LLVMBuildZExt(b, qe, it, ""), sh, ""), ft, "");
    LLVMValueRef iq = LLVMBuildBitCast(b, LLVMBuildShl(b, LLVMBuildZExt(b, ie, it, ""), sh, ""), ft, "");
    LLVMValueRef n = LLVMBuildFMul(b, a, iq, "");
    n = cg_call(cg, f64 ? "llvm.roundeven.f64" : "llvm.roundeven.f32", ft, &n, 1);
    LLVMValueRef r = LLVMBuildFMul(b, n, q, "");
    LLVMValueRef over = LLVMBuildFCmp(b, LLVMRealOGT, r, LLVMConstReal(ft, maxv), "");
    r = LLVMBuildSelect(b, over, LLVMConstReal(ft, e4 ? maxv : INFINITY), r, "");
    /* r is an f16 value: e5m2 is its top byte; e4m3 that of r * 2^-8 shifted by 7 */
    if (e4)
        r = LLVMBuildFMul(b, r, LLVMConstReal(ft, 1.0 / 256.0), "");
    LLVMValueRef h = LLVMBuildBitCast(b, LLVMBuildFPTrunc(b, r, cg->t_f16, ""), cg->t_i16, "");
    h = LLVMBuildLShr(b, h, LLVMConstInt(cg->t_i16, e4 ? 7 : 8, 0), "");
    LLVMValueRef nan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    h = LLVMBuildSelect(b, nan, LLVMConstInt(cg->t_i16, e4 ? 0x7f : 0x7e, 0), h, "");
    LLVMValueRef sign = LLVMBuildICmp(b, LLVMIntSLT, bits, LLVMConstInt(it, 0, 0), "");
    LLVMValueRef sbit = LLVMBuildSelect(b, sign, LLVMConstInt(cg->t_i16, 0x80, 0), LLVMConstInt(cg->t_i16, 0, 0), "");
    h = LLVMBuildOr(b, h, sbit, "");
    return LLVMBuildTrunc(b, h, cg->t_i8, "");
}

LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, DType from, DType to)
{
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef rt = cg_type(cg, to);
    if (from == to)
        return v;
    if (is_f8(from)) {
        v = LLVMBuildBitCast(b, cg_f8_to_f16_bits(cg, v, from), cg->t_f16, "");
        return cg_convert(cg, v, DT_F16, to);
    }
    if (is_f8(to)) {
        if (from == DT_F64)
            return round_to_f8(cg, v, true, to);
        return round_to_f8(cg, cg_convert(cg, v, from, DT_F32), false, to);
    }
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
    case OP_SQRT: case OP_FLOOR: case OP_CEIL: case OP_ROUND:   /* exact in f64 */
        if (dt == DT_F64)
            return call_ovl(cg, code == OP_SQRT ? "llvm.sqrt" : code == OP_FLOOR ? "llvm.floor"
                                : code == OP_CEIL ? "llvm.ceil" : "llvm.roundeven", a, 1);
        break;
    case OP_POW:
        return cg_convert(cg, cg_pow_f32(cg, to_f32(cg, a[0], dt), to_f32(cg, a[1], dt)), DT_F32, dt);
    default:
        break;
    }
    LLVMValueRef x = to_f32(cg, a[0], dt);
    return cg_convert(cg, cg_math_f32(cg, code, x), DT_F32, dt);
}

/* a[0] << a[1], a[0] >> a[1] with the count read as unsigned and clamped:
 * at or above the width, 0 (`<<`, unsigned `>>`) or the sign (signed `>>`),
 * never LLVM's poison. */
static LLVMValueRef int_shift(Cg *cg, OpCode code, bool sg, LLVMValueRef *a)
{
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef t = LLVMTypeOf(a[0]);
    LLVMValueRef top = LLVMConstInt(t, LLVMGetIntTypeWidth(t) - 1, 0);
    LLVMValueRef over = LLVMBuildICmp(b, LLVMIntUGT, a[1], top, "");
    LLVMValueRef n = LLVMBuildSelect(b, over, top, a[1], "");
    if (code == OP_SHR && sg)
        return LLVMBuildAShr(b, a[0], n, "");
    LLVMValueRef r = code == OP_SHL ? LLVMBuildShl(b, a[0], n, "") : LLVMBuildLShr(b, a[0], n, "");
    return LLVMBuildSelect(b, over, LLVMConstNull(t), r, "");
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
    case OP_SHL: case OP_SHR: return int_shift(cg, code, sg, a);
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
LLVMValueRef elem(Cg *cg, Op *op, DType dt, DType rdt, LLVMValueRef *a)
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
    bool float_only = c == OP_EXP || c == OP_EXP2 || c == OP_LOG || c == OP_LOG2 || c == OP_RSQRT ||
                      c == OP_TANH || c == OP_SQRT || c == OP_ERF || c == OP_SIGMOID || c == OP_SIN ||
                      c == OP_COS || c == OP_FLOOR || c == OP_CEIL || c == OP_ROUND || c == OP_POW;
    if ((dt == DT_F8E4M3 || dt == DT_F8E5M2) && c != OP_CAST) {
        diag_error(cg->d, op->loc, "'%s' on %s tiles is not supported by the code generator yet; "
                   "cast them to a wider float first", op_info[c].name, dtype_name(dt));
        return false;
    }
    if (!is_f(dt) && float_only) {
        diag_error(cg->d, op->loc, "'%s' needs a float operand, got %s", op_info[c].name, dtype_name(dt));
        return false;
    }
    return true;
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

/* A float quotient whose only uses convert it to f16 or bf16 (or whose
 * operands are f16 or bf16): `div.full.f32` (2 ulp of f32, well below half
 * an ulp of the narrower result) instead of the IEEE division subroutine,
 * whose branch per element keeps ptxas from interleaving an epilogue such
 * as `bf16(z / (1 + exp(-1.702 * z)))` (docs/language.md, "Accuracy"). */
static bool narrow_visit(Func *f, Op *op, void *ctx)
{
    uint8_t *u = ctx;
    bool narrow = op->code == OP_CAST && (ir_type(f, op->res[0])->dtype == DT_BF16 ||
                                          ir_type(f, op->res[0])->dtype == DT_F16);
    for (int i = 0; i < op->nargs; i++)
        if (u[op->args[i]] != 2)
            u[op->args[i]] = narrow ? 1 : 2;
    return true;
}

static bool narrow_quotient(Cg *cg, Op *op, DType dt)
{
    if (op->code != OP_DIV || (dt != DT_F32 && dt != DT_F16 && dt != DT_BF16))
        return false;
    if (dt != DT_F32)
        return true;
    if (!cg->narrow_uses) {
        cg->narrow_uses = arena_alloc(cg->a, cg->f->nvals);
        memset(cg->narrow_uses, 0, cg->f->nvals);
        ir_walk(cg->f, &cg->f->body, narrow_visit, cg->narrow_uses);
    }
    return cg->narrow_uses[op->res[0]] == 1;
}

static LLVMValueRef div_full(Cg *cg, LLVMValueRef *a, DType dt)
{
    LLVMValueRef x[2] = { to_f32(cg, a[0], dt), to_f32(cg, a[1], dt) };
    return cg_convert(cg, cg_call(cg, "llvm.nvvm.div.full", cg->t_f32, x, 2), DT_F32, dt);
}

/* exp(a - b) of f32 tiles whose b repeats a few values (a row vector
 * broadcast: softmax's `exp(s - m[:, *])`): ex2(fma(a, log2 e, -(b log2 e)))
 * with b log2 e once per distinct value, one instruction an element fewer
 * than the difference and its scaling (docs/language.md, accuracy of
 * `exp`). NULL: lower as written. */
static LLVMValueRef *exp_of_difference(Cg *cg, Op *op, DType dt, const Layout *L, int n)
{
    Op *d = op->code == OP_EXP && dt == DT_F32 ? ir_val(cg->f, op->args[0])->def : NULL;
    if (!d || d->code != OP_SUB || n < 8)
        return NULL;
    LLVMValueRef *b = cg_materialize(cg, &cg->vals[d->args[1]], ir_type(cg->f, d->args[1]), L, op->loc);
    LLVMValueRef uniq[CG_MAX_REPEATED];
    int *idx = arena_alloc(cg->a, sizeof(int) * (size_t)n), nu = cg_repeated_values(b, n, uniq, idx);
    if (!nu)
        return NULL;
    LLVMValueRef *a = cg_materialize(cg, &cg->vals[d->args[0]], ir_type(cg->f, d->args[0]), L, op->loc);
    LLVMValueRef l2e = LLVMConstReal(cg->t_f32, 1.4426950408889634), *out = new_regs(cg, L);
    for (int k = 0; k < nu; k++)
        uniq[k] = LLVMBuildFNeg(cg->b, LLVMBuildFMul(cg->b, uniq[k], l2e, ""), "");
    for (int r = 0; r < n; r++) {
        LLVMValueRef x[3] = { a[r], l2e, uniq[idx[r]] };
        out[r] = cg->tg->exp2_f32(cg, cg_call(cg, "llvm.fma.f32", cg->t_f32, x, 3));
    }
    return out;
}

/* exp2 {emu = K} (ir/ops.h): which of a thread's registers of L hold an
 * emulated element. A register whose column group (last dim / 8) is the
 * same in every thread is decided here: 1 on the FMA units, 0 on the MUFU
 * (mma.sync and wgmma fragments: a thread's n8 block is its register's);
 * any other register gets 2 and its i1 in pred[r] from the column index,
 * both sequences computed (no branch). Notes the split in the report. */
static signed char *exp2_emu_plan(Cg *cg, Op *op, const Layout *L, int n, LLVMValueRef **pred)
{
    signed char *kind = arena_alloc(cg->a, (size_t)n);
    const Type *t = ir_type(cg->f, op->res[0]);
    int64_t every = op->iattr[0], coord[TILE_MAXRANK];
    int last = 0, pd = layout_pdim(L, t->rank - 1), nemu = 0, ndyn = 0;
    for (int d = 0; d < pd; d++)
        last += !(L->slice >> d & 1);
    *pred = NULL;
    for (int r = 0; r < n; r++) {
        kind[r] = -1;
        for (int th = 0; th < 32 * L->nwarps && kind[r] != 2; th++) {
            layout_coord(L, th, r, coord);
            signed char k = tc_exp2_emu_col(coord[last], every);
            kind[r] = kind[r] < 0 || kind[r] == k ? k : 2;
        }
        nemu += kind[r] == 1;
        ndyn += kind[r] == 2;
    }
    if (ndyn) {
        Type it = *t;
        it.dtype = DT_I32;
        TileVal iota = { .kind = TV_IOTA, .axis = (uint8_t)(t->rank - 1) };
        LLVMValueRef *col = cg_materialize(cg, &iota, &it, L, op->loc);
        *pred = new_regs(cg, L);
        for (int r = 0; r < n; r++) {
            if (kind[r] != 2)
                continue;
            LLVMValueRef g = LLVMBuildUDiv(cg->b, col[r], LLVMConstInt(cg->t_i32, TC_EXP2_EMU_GROUP, 0), "");
            g = LLVMBuildURem(cg->b, g, LLVMConstInt(cg->t_i32, (unsigned long long)every, 0), "");
            (*pred)[r] = LLVMBuildICmp(cg->b, LLVMIntEQ, g, LLVMConstInt(cg->t_i32, 0, 0), "");
        }
    }
    if (cg->report)
        sb_printf(cg->report, "  exp2 at %d:%d: {emu = %lld}: %d of %d registers a thread on the FMA units%s%s\n",
                  op->loc.line, op->loc.col, (long long)every, nemu, n, ndyn ? ", chosen at run time in " : "",
                  ndyn ? "the rest (the layout's column groups differ between threads)" : " (fixed per register)");
    return kind;
}

/* The result's registers, marked for recomputation where allowed. */
static int elem_result(Cg *cg, Op *op, const Layout *L, LLVMValueRef *regs)
{
    set_regs(cg, op->res[0], L, regs);
    if (remat_ok(cg, op)) {
        cg->vals[op->res[0]].def = op;
        cg->vals[op->res[0]].epoch = cg->epoch;
    }
    return 0;
}

int lower_elem(Cg *cg, Op *op)
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
    bool emu = op->code == OP_EXP2 && op->iattr[0] > 0;
    all_uniform = all_uniform && !(emu && rt->kind == TY_TILE);   /* not the same on every column */
    if (all_uniform) {
        LLVMValueRef s = emu ? cg_exp2_emu_f32(cg, a[0]) : elem(cg, op, dt, (DType)rt->dtype, a);
        cg->vals[op->res[0]] = (TileVal){ .kind = rt->kind == TY_TILE ? TV_SPLAT : TV_SCALAR, .s = s };
        return 0;
    }
    const Layout *L = pick_layout(cg, op);
    if (!L)
        L = cg_default_layout(cg, rt, true);
    LLVMValueRef *cmp = iota_cmp(cg, op, L);
    if (!cmp)
        cmp = guarded_select(cg, op, L);
    if (cmp)
        return elem_result(cg, op, L, cmp);
    LLVMValueRef *ed = exp_of_difference(cg, op, dt, L, layout_nregs(L));
    if (ed)
        return elem_result(cg, op, L, ed);
    LLVMValueRef *in[3];
    for (int i = 0; i < op->nargs; i++)
        in[i] = cg_materialize(cg, &cg->vals[op->args[i]], ir_type(f, op->args[i]), L, op->loc);
    int n = layout_nregs(L), xi;
    LLVMValueRef *out = new_regs(cg, L), inv = uniform_recip(cg, op, dt), *skip = NULL;
    LLVMValueRef *recips = inv ? NULL : repeated_recips(cg, op, dt, in[1], n);
    bool full = !inv && !recips && narrow_quotient(cg, op, dt);
    if (dt == DT_F32 && cg_chain_rescale(cg, op, &xi))
        skip = cg_chain_scale_or_skip(cg, in[xi], in[1 - xi], n);
    LLVMValueRef *pred = NULL;
    signed char *emu_kind = emu ? exp2_emu_plan(cg, op, L, n, &pred) : NULL;
    for (int r = 0; r < n; r++) {
        for (int i = 0; i < op->nargs; i++)
            a[i] = in[i][r];
        if (emu_kind && emu_kind[r]) {
            LLVMValueRef e = cg_exp2_emu_f32(cg, a[0]);
            out[r] = emu_kind[r] == 1 ? e : LLVMBuildSelect(cg->b, pred[r], e, elem(cg, op, dt, dt, a), "");
            continue;
        }
        out[r] = skip ? skip[r]
               : inv ? LLVMBuildFMul(cg->b, a[0], inv, "")
               : recips ? LLVMBuildFMul(cg->b, a[0], recips[r], "")
               : full ? div_full(cg, a, dt)
               : elem(cg, op, dt, (DType)rt->dtype, a);
    }
    return elem_result(cg, op, L, out);
}

/* ---- constants, launch values ---- */

static LLVMValueRef const_value(Cg *cg, Op *op, DType dt)
{
    if (is_f(dt))
        return LLVMConstReal(cg_type(cg, dt), op->fattr);
    return LLVMConstInt(cg_type(cg, dt), (unsigned long long)op->iattr[0], dtype_is_signed(dt));
}

int lower_const(Cg *cg, Op *op)
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

int lower_sreg(Cg *cg, Op *op)
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

int lower_splat(Cg *cg, Op *op)
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

int lower_iota(Cg *cg, Op *op)
{
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_IOTA, .axis = (uint8_t)op->iattr[0] };
    return 0;
}

int lower_expand(Cg *cg, Op *op)
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

int lower_broadcast(Cg *cg, Op *op)
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

int lower_trans(Cg *cg, Op *op)
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

/* The leaves of x's tree of adds (and disjoint ors, which are adds), the
 * constants summed into *c: x = leaves + *c modulo 2^bits. False when
 * there are more than `max` non-constant leaves. */
static bool add_leaves(LLVMValueRef x, LLVMValueRef *leaf, int *n, int max, uint64_t *c, int depth)
{
    if (LLVMIsAConstantInt(x)) {
        *c += LLVMConstIntGetZExtValue(x);
        return true;
    }
    LLVMValueRef in = LLVMIsAInstruction(x);
    LLVMOpcode opc = in ? LLVMGetInstructionOpcode(in) : (LLVMOpcode)0;
    if (depth < 6 && in && (opc == LLVMAdd || (opc == LLVMOr && LLVMGetIsDisjoint(in))))
        return add_leaves(LLVMGetOperand(in, 0), leaf, n, max, c, depth + 1) &&
               add_leaves(LLVMGetOperand(in, 1), leaf, n, max, c, depth + 1);
    if (*n == max)
        return false;
    leaf[(*n)++] = x;
    return true;
}

/* Offset x (i32 or i64) as counter q = x >> 2 and word w = x & 3, built
 * as a + j with j = the low two bits of x's constant part: offsets that
 * differ only there (a thread's consecutive elements of iota(B) + i0)
 * get the same a, so their counters are one value once LLVM knows a's
 * low bits are 0, and their rounds one computation. Exact also where
 * a + j wraps. */
static void philox_counter(Cg *cg, LLVMValueRef x, bool wide, LLVMValueRef *q, LLVMValueRef *w)
{
    LLVMBuilderRef b = cg->b;
    LLVMTypeRef t = wide ? cg->t_i64 : cg->t_i32;
    LLVMValueRef leaf[8], a = x;
    int n = 0;
    uint64_t c = 0;
    unsigned j = 0;
    if (add_leaves(x, leaf, &n, 8, &c, 0)) {
        j = (unsigned)(c & 3);
        a = LLVMConstInt(t, c & ~(uint64_t)3, 0);
        for (int i = n - 1; i >= 0; i--)
            a = LLVMBuildAdd(b, leaf[i], a, "");
    }
    LLVMValueRef s = LLVMBuildAdd(b, LLVMBuildAnd(b, a, LLVMConstInt(t, 3, 0), ""), LLVMConstInt(t, j, 0), "");
    LLVMValueRef two = LLVMConstInt(t, 2, 0);
    *q = LLVMBuildAnd(b, LLVMBuildAdd(b, LLVMBuildLShr(b, a, two, ""), LLVMBuildLShr(b, s, two, ""), ""),
                      LLVMConstInt(t, wide ? UINT64_MAX >> 2 : UINT32_MAX >> 2, 0), "");
    *w = LLVMBuildAnd(b, wide ? LLVMBuildTrunc(b, s, cg->t_i32, "") : s, cg_i32(cg, 3), "");
}

/* PHILOX: per offset o, word (o & 3) of Philox4x32-10 at counter o >> 2
 * (ir/philox.h), in the layout of the offsets (a uniform offset gives a
 * uniform word). A thread's registers whose offsets differ only in their
 * low two bits (consecutive offsets from a multiple of 4) build the same
 * rounds (philox_counter), which early-cse keeps once. */
int cg_lower_philox(Cg *cg, Op *op)
{
    const Type *ot = ir_type(cg->f, op->args[1]), *rt = ir_type(cg->f, op->res[0]);
    LLVMBuilderRef b = cg->b;
    LLVMValueRef seed = cg->vals[op->args[0]].s;
    LLVMValueRef k0 = LLVMBuildTrunc(b, seed, cg->t_i32, "");
    LLVMValueRef k1 = LLVMBuildTrunc(b, LLVMBuildLShr(b, seed, cg_i64(cg, 32), ""), cg->t_i32, "");
    bool wide = dtype_bits((DType)ot->dtype) == 64;
    const TileVal *v = &cg->vals[op->args[1]];
    const Layout *L = NULL;
    LLVMValueRef *in = NULL, one = v->s;
    int n = 1;
    if (v->kind != TV_SCALAR && v->kind != TV_SPLAT) {
        L = v->kind == TV_REGS ? v->L : cg_default_layout(cg, rt, true);
        in = cg_materialize(cg, v, ot, L, op->loc);
        n = layout_nregs(L);
    }
    LLVMValueRef *out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int r = 0; r < n; r++) {
        LLVMValueRef q, w;
        philox_counter(cg, in ? in[r] : one, wide, &q, &w);
        LLVMValueRef lo = wide ? LLVMBuildTrunc(b, q, cg->t_i32, "") : q;
        LLVMValueRef hi = wide ? LLVMBuildTrunc(b, LLVMBuildLShr(b, q, cg_i64(cg, 32), ""), cg->t_i32, "")
                               : cg_i32(cg, 0);
        out[r] = cg_philox_word(cg, lo, hi, k0, k1, w);
    }
    if (!L)
        cg->vals[op->res[0]] = (TileVal){ .kind = rt->kind == TY_TILE ? TV_SPLAT : TV_SCALAR, .s = out[0] };
    else
        set_regs(cg, op->res[0], L, out);
    return 0;
}
