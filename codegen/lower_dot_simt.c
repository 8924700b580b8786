/* lower_dot_simt.c - `@` (DOT) on the FMA units: the simt family of the
 * mma_select pass, for the products no tensor-core form computes exactly
 * (f32 unless the mma_select.tf32 option asks for tf32, f64) and for those
 * whose extents mma.sync does not take (not multiples of 16, any dtype;
 * i8 with K not a multiple of 32).
 *
 * The result keeps the mma.sync accumulator layout where its extents allow
 * (the same warp grid: a loop-carried accumulator, the epilogue and the
 * staged store see what a tensor-core product gives), else the tile's
 * default layout. A thread computes each of its registers' elements in
 * full: C[r, c] + sum over k of A[r, k] B[k, c]. Operands are read from
 * shared memory, a shared view in place (any swizzle, transposed or not),
 * a register operand through a row-major scratch written between two
 * barriers (cg_dot_stage). The K steps run as a loop unrolled by up to 4;
 * per step a thread loads one element of A per distinct row of its
 * registers and one of B per distinct column (2 tm and 2 tn in the mma
 * layout, for 4 tm tn products), then one multiply-add per register:
 *   f32, bf16, f16, f8  f32 fma (the products of the narrow types are
 *                       exact in f32);
 *   f64                 f64 fma from the accumulator's value widened,
 *                       rounded once to the f32 result; 16 registers at a
 *                       time (a K loop each), so the f64 sums stay within
 *                       the register file;
 *   i8                  i32 multiply and add, wrapping (exact modulo 2^32,
 *                       as the interpreter).
 */
#include "cg_internal.h"

#include <string.h>

typedef struct SimtDot {
    Op *op;
    DType dt;                        /* operand dtype */
    int64_t m, n, k;
    const SmemView *sv[2];           /* A [M, K], B [K, N] (logical) */
    const Layout *L;
    /* per register: index of its row (A) and column (B) among the distinct ones */
    int *ri, *ci;
    LLVMValueRef *rows, *cols;       /* distinct coordinates (i32) */
    int64_t *roff, *coff;            /* their constant parts (the key) */
    int nrows, ncols;
} SimtDot;

/* The compute type's value of one loaded element. */
static LLVMValueRef widen(Cg *cg, const SimtDot *s, LLVMValueRef x)
{
    switch (s->dt) {
    case DT_F64: return x;
    case DT_F32: return x;
    case DT_I8: return LLVMBuildSExt(cg->b, x, cg->t_i32, "");
    default: return cg_convert(cg, x, s->dt, DT_F32);   /* bf16, f16, f8: exact */
    }
}

/* Element (r, c) of operand view sv (logical coordinates). */
static LLVMValueRef load_elem(Cg *cg, const SimtDot *s, const SmemView *sv, LLVMValueRef r, LLVMValueRef c)
{
    LLVMValueRef sr = sv->trans ? c : r, sc = sv->trans ? r : c;
    LLVMValueRef b = sv->eb > 1 ? LLVMBuildMul(cg->b, sc, cg_i32(cg, sv->eb), "") : sc;
    LLVMValueRef v = LLVMBuildLoad2(cg->b, cg_mem_type(cg, s->dt), cg_smem_ptr(cg, sv, sr, b), "");
    LLVMSetAlignment(v, (unsigned)sv->eb);
    return widen(cg, s, v);
}

/* Distinct keys of a register coordinate along logical dim `axis`. */
static int distinct(Cg *cg, const Layout *L, int axis, int *idx, LLVMValueRef *vals, int64_t *keys)
{
    int n = layout_nregs(L), cnt = 0, p = layout_pdim(L, axis);
    for (int r = 0; r < n; r++) {
        int64_t key = cg_reg_offset(L, r, p);
        int j = 0;
        while (j < cnt && keys[j] != key)
            j++;
        if (j == cnt) {
            keys[cnt] = key;
            vals[cnt++] = cg_coord(cg, L, r, axis);
        }
        idx[r] = j;
    }
    return cnt;
}

/* One multiply-add into acc. */
static LLVMValueRef madd(Cg *cg, LLVMValueRef a, LLVMValueRef b, LLVMValueRef acc, DType dt)
{
    if (dt == DT_I8)
        return LLVMBuildAdd(cg->b, acc, LLVMBuildMul(cg->b, a, b, ""), "");
    LLVMValueRef args[3] = { a, b, acc };
    return cg_call(cg, dt == DT_F64 ? "llvm.fma.f64" : "llvm.fma.f32", dt == DT_F64 ? cg->t_f64 : cg->t_f32,
                   args, 3);
}

/* K step kv (i32) for the registers [r0, r1): acc[r - r0] += A[row, kv] B[kv, col]. */
static void kstep(Cg *cg, const SimtDot *s, LLVMValueRef kv, int r0, int r1, LLVMValueRef *acc)
{
    LLVMValueRef *av = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)s->nrows);
    LLVMValueRef *bv = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)s->ncols);
    memset(av, 0, sizeof(LLVMValueRef) * (size_t)s->nrows);
    memset(bv, 0, sizeof(LLVMValueRef) * (size_t)s->ncols);
    for (int r = r0; r < r1; r++) {
        int i = s->ri[r], j = s->ci[r];
        if (!av[i])
            av[i] = load_elem(cg, s, s->sv[0], s->rows[i], kv);
        if (!bv[j])
            bv[j] = load_elem(cg, s, s->sv[1], kv, s->cols[j]);
        acc[r - r0] = madd(cg, av[i], bv[j], acc[r - r0], s->dt);
    }
}

/* The K loop over registers [r0, r1) with accumulators acc (replaced by the sums). */
static void kloop(Cg *cg, const SimtDot *s, int r0, int r1, LLVMValueRef *acc, int unroll)
{
    int n = r1 - r0;
    int64_t trips = s->k / unroll;
    if (trips <= 1) {
        for (int u = 0; u < s->k; u++)
            kstep(cg, s, cg_i32(cg, u), r0, r1, acc);
        return;
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b), head = cg_new_block(cg, "simt.k"),
                      done = cg_new_block(cg, "simt.kdone");
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    LLVMValueRef kv = LLVMBuildPhi(cg->b, cg->t_i32, "k"), zero = cg_i32(cg, 0);
    LLVMAddIncoming(kv, &zero, &pre, 1);
    LLVMValueRef *ph = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int i = 0; i < n; i++) {
        ph[i] = LLVMBuildPhi(cg->b, LLVMTypeOf(acc[i]), "acc");
        LLVMAddIncoming(ph[i], &acc[i], &pre, 1);
        acc[i] = ph[i];
    }
    for (int u = 0; u < unroll; u++)
        kstep(cg, s, u ? LLVMBuildAdd(cg->b, kv, cg_i32(cg, u), "") : kv, r0, r1, acc);
    LLVMValueRef next = LLVMBuildAdd(cg->b, kv, cg_i32(cg, unroll), "");
    LLVMValueRef more = LLVMBuildICmp(cg->b, LLVMIntSLT, next, cg_i32(cg, s->k), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMBuildCondBr(cg->b, more, head, done);
    LLVMAddIncoming(kv, &next, &latch, 1);
    for (int i = 0; i < n; i++)
        LLVMAddIncoming(ph[i], &acc[i], &latch, 1);
    LLVMPositionBuilderAtEnd(cg->b, done);
}

int cg_lower_dot_simt(Cg *cg, Op *op)
{
    Func *f = cg->f;
    const Type *at = ir_type(f, op->args[0]), *bt = ir_type(f, op->args[1]), *ct = ir_type(f, op->args[2]);
    const Type *rt = ir_type(f, op->res[0]);
    SimtDot s;
    memset(&s, 0, sizeof s);
    s.op = op;
    s.dt = (DType)at->dtype;
    if (at->rank != 2 || bt->rank != 2 || rt->rank != 2 || bt->dtype != at->dtype || ct->dtype != rt->dtype ||
        (s.dt == DT_BOOL) || (dtype_is_int(s.dt) && s.dt != DT_I8)) {
        diag_error(cg->d, op->loc, "matrix product '@' of %s tiles is not supported by the code generator",
                   dtype_name(s.dt));
        return 1;
    }
    s.m = at->shape[0];
    s.k = at->shape[1];
    s.n = bt->shape[1];
    s.L = cg_mma_acc_layout(cg, s.m, s.n);
    if (!s.L)
        s.L = cg_default_layout(cg, rt, true);
    LLVMValueRef *c = cg_materialize(cg, &cg->vals[op->args[2]], ct, s.L, op->loc);
    int n = layout_nregs(s.L);
    s.ri = arena_alloc(cg->a, sizeof(int) * (size_t)n);
    s.ci = arena_alloc(cg->a, sizeof(int) * (size_t)n);
    s.rows = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    s.cols = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    s.roff = arena_alloc(cg->a, sizeof(int64_t) * (size_t)n);
    s.coff = arena_alloc(cg->a, sizeof(int64_t) * (size_t)n);

    bool stage[2];
    for (int i = 0; i < 2; i++) {
        const TileVal *v = &cg->vals[op->args[i]];
        stage[i] = v->kind != TV_SMEM;
        s.sv[i] = stage[i] ? NULL : v->sv;
    }
    if (stage[0] || stage[1]) {
        const SmemView **sv = cg_dot_stage(cg, op, stage, s.dt, "the FMA units");
        for (int i = 0; i < 2; i++)
            if (stage[i])
                s.sv[i] = sv[i];
    }
    s.nrows = distinct(cg, s.L, 0, s.ri, s.rows, s.roff);
    s.ncols = distinct(cg, s.L, 1, s.ci, s.cols, s.coff);

    /* All registers in one K loop; f64 sums 16 registers at a time. */
    int unroll = s.k % 4 == 0 ? 4 : s.k % 2 == 0 ? 2 : 1;
    LLVMValueRef *out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    int chunk = s.dt == DT_F64 ? 16 : n;
    for (int r0 = 0; r0 < n;) {
        int r1 = r0 + chunk < n ? r0 + chunk : n;
        int cnt = r1 - r0;
        LLVMValueRef *acc = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)cnt);
        for (int i = 0; i < cnt; i++)
            acc[i] = s.dt == DT_F64 ? LLVMBuildFPExt(cg->b, c[r0 + i], cg->t_f64, "") : c[r0 + i];
        kloop(cg, &s, r0, r1, acc, unroll);
        for (int i = 0; i < cnt; i++)
            out[r0 + i] = s.dt == DT_F64 ? LLVMBuildFPTrunc(cg->b, acc[i], cg->t_f32, "") : acc[i];
        r0 = r1;
    }
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = s.L, .r = out };
    if (cg->report)
        sb_printf(cg->report, "  dot at %d:%d: simt, %s, %lldx%lldx%lld, %d registers a thread (%d rows x %d "
                  "columns of A and B a k step), A %s, B %s, k loop unrolled by %d\n", op->loc.line, op->loc.col,
                  s.dt == DT_I8 ? "i32 multiply-add" : s.dt == DT_F64 ? "f64 fma" : "f32 fma", (long long)s.m,
                  (long long)s.n, (long long)s.k, n, s.nrows, s.ncols, stage[0] ? "from the scratch" : "in place",
                  stage[1] ? "from the scratch" : "in place", unroll);
    return 0;
}
