/* sm100/tcgen05.c - tensor memory and tcgen05 products (sm_100a): the
 * sm100 family's hooks (target.h; each one PTX instruction in inline
 * assembly, with its exact text) and the lowering of TMEM_ALLOC, TC_MMA,
 * TC_COMMIT, TMEM_LOAD and TMEM_STORE (ops.h).
 *
 * Allocation: warp 0 of the block allocates the kernel's columns before
 * the roles start (tcgen05.alloc writes the address to the TMEM_ALLOC's
 * shared word), gives up its permit, and frees them at the end of its
 * role, once a block barrier that every role's end meets says every role
 * is done (cg_tmem_release; each role ends on its own, so no value lives
 * from one role's registers, set by setmaxnreg, into a shared tail). Readers of
 * the word pass the block barrier that starts the roles first, with the
 * tcgen05 fences around it.
 *
 * Products: the issuing role's thread 0 runs, per k16 step and 128-row
 * block of the accumulator, one tcgen05.mma.cta_group::1.kind::f16 of the
 * whole N (M = 128, N <= 256) into the block's columns (column + i N);
 * the first step of a trip accumulates only when the TC_MMA's flag says
 * so. Descriptors are wgmma's (sm90/wgmma.c: start >> 4, LBO >> 4, SBO >>
 * 4, the swizzle in [61, 64) with 128B 2, 64B 4, 32B 6, the same bits as
 * wgmma's 2-bit field at 62) plus the version 1 at bit 46 (fastpaths:
 * the UMMA SmemDescriptor). The instruction descriptor (PTX ISA, "Instruction
 * descriptor", kind::f16): D f32 (1 << 4), A and B bf16 1 / f16 0 at 7 and
 * 10, B transposed (MN-major, stored [K, N]) at 16, N >> 3 at 17, M >> 4
 * at 24.
 *
 * Reading back: warp w of the reading role takes tensor-memory lanes
 * 32 (w % 4) .. + 31 (the lanes a warp may access) of the 128-row block
 * w / 4, so thread t holds row t; 32 columns per tcgen05.ld.32x32b.x32,
 * one wait for all (layout_tmem_rows). Writing (tcgen05.st) is the same
 * in reverse, 16-bit elements two to a column. A product whose A operand
 * is tensor memory (attention's P) names A's columns instead of a
 * descriptor. A load or store ends with tcgen05.fence::before_thread_sync
 * (ordered before the arrival that hands the memory to the products).
 */
#include "../cg_internal.h"

#include <stdio.h>
#include <string.h>

enum { LD_COLS = 32 };

/* ---- hooks ---- */

void cg_tg_tmem_alloc(Cg *cg, LLVMValueRef word, int cols)
{
    LLVMValueRef a[2] = { cg_saddr(cg, word), cg_i32(cg, cols) };
    cg_asm_call(cg, NULL,
                "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [$0], $1;\n\t"
                "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;",
                "r,r,~{memory}", a, 2);
}

void cg_tg_tmem_dealloc(Cg *cg, LLVMValueRef taddr, int cols)
{
    LLVMValueRef a[2] = { taddr, cg_i32(cg, cols) };
    cg_asm_call(cg, NULL, "tcgen05.dealloc.cta_group::1.sync.aligned.b32 $0, $1;", "r,r,~{memory}", a, 2);
}

/* tcgen05.mma with A a descriptor (l: `$1`) or tensor memory (r: `[$1]`). */
static void tc_mma_asm(Cg *cg, LLVMValueRef taddr, LLVMValueRef a_op, bool a_tmem, LLVMValueRef desc_b,
                       LLVMValueRef idesc, LLVMValueRef accumulate)
{
    LLVMValueRef a[5] = { taddr, a_op, desc_b, idesc, accumulate };
    cg_asm_call(cg, NULL,
                a_tmem ? "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, $4, 0;\n\t"
                         "tcgen05.mma.cta_group::1.kind::f16 [$0], [$1], $2, $3, p;\n\t}"
                       : "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, $4, 0;\n\t"
                         "tcgen05.mma.cta_group::1.kind::f16 [$0], $1, $2, $3, p;\n\t}",
                a_tmem ? "r,r,l,r,r,~{memory}" : "r,l,l,r,r,~{memory}", a, 5);
}

void cg_tg_tc_mma(Cg *cg, LLVMValueRef taddr, LLVMValueRef desc_a, LLVMValueRef desc_b, LLVMValueRef idesc,
                  LLVMValueRef accumulate)
{
    tc_mma_asm(cg, taddr, desc_a, false, desc_b, idesc, accumulate);
}

void cg_tg_tc_mma_ts(Cg *cg, LLVMValueRef taddr, LLVMValueRef a_taddr, LLVMValueRef desc_b, LLVMValueRef idesc,
                     LLVMValueRef accumulate)
{
    tc_mma_asm(cg, taddr, a_taddr, true, desc_b, idesc, accumulate);
}

void cg_tg_tc_commit(Cg *cg, LLVMValueRef bar)
{
    LLVMValueRef a = cg_saddr(cg, bar);
    cg_asm_call(cg, NULL, "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [$0];",
                "r,~{memory}", &a, 1);
}

void cg_tg_tmem_ld(Cg *cg, LLVMValueRef taddr, int n, LLVMValueRef *out)
{
    StrBuf code = { 0 }, cons = { 0 };
    sb_printf(&code, "tcgen05.ld.sync.aligned.32x32b.x%d.b32 {", n);
    for (int i = 0; i < n; i++) {
        sb_printf(&code, "%s$%d", i ? ", " : "", i);
        sb_printf(&cons, "%s=r", i ? "," : "");
    }
    sb_printf(&code, "}, [$%d];", n);
    sb_puts(&cons, ",r,~{memory}");
    LLVMTypeRef *ft = arena_alloc(cg->a, sizeof(LLVMTypeRef) * (size_t)n);
    for (int i = 0; i < n; i++)
        ft[i] = cg->t_i32;
    LLVMTypeRef rt = LLVMStructTypeInContext(cg->ctx, ft, (unsigned)n, 0), pt = cg->t_i32;
    LLVMTypeRef fty = LLVMFunctionType(rt, &pt, 1, 0);
    LLVMValueRef as = LLVMGetInlineAsm(fty, code.buf, code.len, cons.buf, cons.len, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef r = LLVMBuildCall2(cg->b, fty, as, &taddr, 1, "");
    for (int i = 0; i < n; i++)
        out[i] = LLVMBuildExtractValue(cg->b, r, (unsigned)i, "");
    sb_free(&code);
    sb_free(&cons);
}

void cg_tg_tmem_wait_ld(Cg *cg) { cg_asm_call(cg, NULL, "tcgen05.wait::ld.sync.aligned;", "~{memory}", NULL, 0); }

void cg_tg_tmem_st(Cg *cg, LLVMValueRef taddr, int n, LLVMValueRef *in)
{
    StrBuf code = { 0 }, cons = { 0 };
    sb_printf(&code, "tcgen05.st.sync.aligned.32x32b.x%d.b32 [$0], {", n);
    sb_puts(&cons, "r");
    for (int i = 0; i < n; i++) {
        sb_printf(&code, "%s$%d", i ? ", " : "", i + 1);
        sb_puts(&cons, ",r");
    }
    sb_puts(&code, "};");
    sb_puts(&cons, ",~{memory}");
    LLVMValueRef *a = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)(n + 1));
    a[0] = taddr;
    memcpy(a + 1, in, sizeof(LLVMValueRef) * (size_t)n);
    cg_asm_call(cg, NULL, code.buf, cons.buf, a, n + 1);
    sb_free(&code);
    sb_free(&cons);
}

void cg_tg_tmem_wait_st(Cg *cg) { cg_asm_call(cg, NULL, "tcgen05.wait::st.sync.aligned;", "~{memory}", NULL, 0); }

void cg_tg_tc_fence(Cg *cg, bool after)
{
    cg_asm_call(cg, NULL, after ? "tcgen05.fence::after_thread_sync;" : "tcgen05.fence::before_thread_sync;",
                "~{memory}", NULL, 0);
}

/* ---- layouts ---- */

Layout layout_tmem_rows(int64_t m, int64_t n, int nwarps)
{
    Layout l;
    memset(&l, 0, sizeof l);
    l.prank = 2;
    l.pshape[0] = m, l.pshape[1] = n;
    l.spt[0] = 1, l.spt[1] = (int)n;
    l.tpw[0] = 32, l.tpw[1] = 1;
    l.wpc[0] = nwarps, l.wpc[1] = 1;
    l.rpt[0] = l.rpt[1] = 1;
    l.order[0] = 1, l.order[1] = 0;
    l.nwarps = nwarps;
    return l;
}

/* ---- lowering ---- */

/* The block's tensor memory address (read from the shared word after the
 * barrier that starts the roles). */
static LLVMValueRef tmem_base(Cg *cg)
{
    cg->tg->tc_fence(cg, true);
    return LLVMBuildLoad2(cg->b, cg->t_i32, cg->tmem_word, "tmem");
}

/* Warp 0 of the block allocates and frees tensor memory (.sync.aligned:
 * the whole warp). */
static LLVMValueRef warp0(Cg *cg) { return LLVMBuildICmp(cg->b, LLVMIntEQ, cg->warp, cg_i32(cg, 0), ""); }

static int lower_tmem_alloc(Cg *cg, Op *op)
{
    if (op->iattr[1] < 0 || op->iattr[2] < 32 || !cg->dsmem) {
        diag_internal(cg->d, op->loc, "tmem_alloc not placed by smem_alloc");
        return 1;
    }
    if (cg->tmem_word) {   /* a later allocation of the kernel: columns of the one the first made */
        if (op->iattr[2] != cg->tmem_cols) {
            diag_internal(cg->d, op->loc, "tensor memory allocations planned apart (%lld and %d columns)",
                          (long long)op->iattr[2], cg->tmem_cols);
            return 1;
        }
        cg->vals[op->res[0]] = (TileVal){ .kind = TV_SCALAR, .s = cg->tmem_word };
        return 0;
    }
    LLVMValueRef o = cg_i64(cg, op->iattr[1]);
    cg->tmem_word = LLVMBuildGEP2(cg->b, cg->t_i8, cg->dsmem, &o, 1, "tmem.word");
    cg->tmem_cols = (int)op->iattr[2];
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_SCALAR, .s = cg->tmem_word };
    LLVMBasicBlockRef after = cg_lead_begin(cg, warp0(cg));
    cg->tg->tmem_alloc(cg, cg->tmem_word, cg->tmem_cols);
    cg_lead_end(cg, after);
    cg->tg->tc_fence(cg, false);
    if (cg->report)
        sb_printf(cg->report, "  tensor memory at %d:%d: %d columns (warp 0 allocates, address word at offset %lld)\n",
                  op->loc.line, op->loc.col, cg->tmem_cols, (long long)op->iattr[1]);
    return 0;
}

void cg_tmem_release(Cg *cg, int threads, bool frees)
{
    if (!cg->tmem_word)
        return;
    cg->tg->tc_fence(cg, false);
    cg->tg->named_bar(cg, 0, threads, false);
    if (!frees)
        return;
    LLVMBasicBlockRef after = cg_lead_begin(cg, warp0(cg));
    cg->tg->tmem_dealloc(cg, tmem_base(cg), cg->tmem_cols);
    cg_lead_end(cg, after);
}

enum { UMMA_DESC_VERSION = 1 };   /* tcgen05's shared-memory descriptors: version 1 at bit 46 */

static int lower_tc_mma(Cg *cg, Op *op)
{
    Func *f = cg->f;
    const Type *at = ir_type(f, op->args[0]), *bt = ir_type(f, op->args[1]);
    const TileVal *av = &cg->vals[op->args[0]], *bv = &cg->vals[op->args[1]];
    const Op *alloc = ir_val(f, op->args[2])->def;
    int64_t m = at->shape[0], k = at->shape[1], n = bt->shape[1];
    bool f16 = at->dtype == DT_F16;
    if (!cg->tmem_word || !alloc) {
        diag_internal(cg->d, op->loc, "tc_mma before its tensor memory is allocated");
        return 1;
    }
    bool ts = at->space == SP_TMEM;
    const Op *a_alloc = ts ? ir_val(f, op->args[0])->def : NULL;
    if ((!ts && (av->kind != TV_SMEM || av->sv->trans || !cg_desc_ok(av->sv))) || (ts && !a_alloc) ||
        bv->kind != TV_SMEM || !cg_desc_ok(bv->sv)) {
        diag_error(cg->d, op->loc, "tcgen05 reads A from a swizzled shared buffer (stored [M, K]) or tensor "
                   "memory and B from a swizzled shared buffer; these operands are not");
        return 1;
    }
    const SmemView *sa = ts ? NULL : av->sv, *sb = bv->sv;
    int wa = ts ? 0 : cg_swz_width(sa->swz), wb = cg_swz_width(sb->swz);
    uint64_t version = (uint64_t)UMMA_DESC_VERSION << 46;
    bool b_mn = !sb->trans;   /* stored [K, N]: MN-major, the instruction transposes it */
    uint32_t idesc = (1u << 4) | ((f16 ? 0u : 1u) << 7) | ((f16 ? 0u : 1u) << 10) | ((b_mn ? 1u : 0u) << 16) |
                     ((uint32_t)(n >> 3) << 17) | ((uint32_t)(TCGEN05_M >> 4) << 24);
    LLVMValueRef first = LLVMBuildZExt(cg->b, cg->vals[op->args[3]].s, cg->t_i32, "");
    LLVMBasicBlockRef after = cg_lead_begin(cg, cg_role_lead(cg));
    LLVMValueRef base = tmem_base(cg);
    LLVMValueRef abase = ts ? NULL : LLVMBuildPtrToInt(cg->b, sa->base, cg->t_i32, "");
    LLVMValueRef bbase = LLVMBuildPtrToInt(cg->b, sb->base, cg->t_i32, "");
    for (int64_t kk = 0; kk < k / 16; kk++) {
        LLVMValueRef db = cg_desc_b(cg, bbase, sb, kk, version);
        for (int64_t i = 0; i < m / TCGEN05_M; i++) {
            LLVMValueRef d = LLVMBuildAdd(cg->b, base, cg_i32(cg, alloc->iattr[0] + i * n), "");
            LLVMValueRef acc = kk ? cg_i32(cg, 1) : first, id = cg_i32(cg, (int64_t)idesc);
            if (ts) {   /* A's 16-bit block i: k / 2 columns from its first, 8 a k16 step */
                int64_t col = a_alloc->iattr[0] + i * (k / 2) + kk * (WGMMA_K / 2);
                cg->tg->tc_mma_ts(cg, d, LLVMBuildAdd(cg->b, base, cg_i32(cg, col), ""), db, id, acc);
            } else {
                cg->tg->tc_mma(cg, d, cg_desc_a(cg, abase, sa, i * TCGEN05_M, kk, version), db, id, acc);
            }
        }
    }
    cg_lead_end(cg, after);
    if (cg->report) {
        char as[64];
        if (ts)
            snprintf(as, sizeof as, "A in tensor memory at column %lld", (long long)a_alloc->iattr[0]);
        else
            snprintf(as, sizeof as, "A K-major %dB swizzle", wa);
        sb_printf(cg->report, "  tc_mma at %d:%d: tcgen05.mma kind::f16 m128n%lldk16 %s, %lldx%lldx%lld in %lld "
                  "block%s a k step, %s, B %s %dB swizzle, accumulator at column %lld\n",
                  op->loc.line, op->loc.col, (long long)n, f16 ? "f16" : "bf16", (long long)m, (long long)n,
                  (long long)k, (long long)(m / TCGEN05_M), m / TCGEN05_M == 1 ? "" : "s", as,
                  b_mn ? "MN-major" : "K-major", wb, (long long)alloc->iattr[0]);
    }
    return 0;
}

static int lower_tc_commit(Cg *cg, Op *op)
{
    LLVMValueRef bar = cg_ring_slot(cg, op->args[0], op->args[1]);
    LLVMBasicBlockRef after = cg_lead_begin(cg, cg_role_lead(cg));
    cg->tg->tc_commit(cg, bar);
    cg_lead_end(cg, after);
    return 0;
}

/* The thread's row of tensor memory t (a TMEM_ALLOC result of m rows, c
 * 32-bit columns a 128-row block): warp w reads lanes 32 (w % 4) .. + 31
 * of block w / 4. NULL (and an error) unless a row a thread fits. */
static LLVMValueRef tmem_row(Cg *cg, Op *op, ValId t, int64_t *cols)
{
    const Type *tt = ir_type(cg->f, t);
    const Op *alloc = ir_val(cg->f, t)->def;
    int64_t m = tt->shape[0], c = ir_tmem_cols(tt) / (m / TCGEN05_M);
    if (!cg->tmem_word || !alloc || cg->nwarps * 32 != m || c % 8) {
        diag_error(cg->d, op->loc, "%s of [%lld x %lld] by %d warps: a row a thread (one thread a row, its 32-bit "
                   "columns a multiple of 8)", op_info[op->code].name, (long long)m, (long long)tt->shape[1],
                   cg->nwarps);
        return NULL;
    }
    *cols = c;
    LLVMValueRef base = tmem_base(cg);
    LLVMValueRef q = LLVMBuildAnd(cg->b, cg->warp, cg_i32(cg, 3), ""), blk = LLVMBuildLShr(cg->b, cg->warp, cg_i32(cg, 2), "");
    LLVMValueRef lanes = LLVMBuildShl(cg->b, LLVMBuildMul(cg->b, q, cg_i32(cg, 32), ""), cg_i32(cg, 16), "");
    LLVMValueRef col0 = LLVMBuildAdd(cg->b, cg_i32(cg, alloc->iattr[0]), LLVMBuildMul(cg->b, blk, cg_i32(cg, c), ""), "");
    return LLVMBuildAdd(cg->b, LLVMBuildAdd(cg->b, base, lanes, ""), col0, "");
}

/* The thread's n 32-bit columns from row's in pieces of 32 (the last ones
 * halved as they fit): loaded into v, or stored from it; then the wait. */
static void tmem_columns(Cg *cg, LLVMValueRef row, int64_t n, LLVMValueRef *v, bool store)
{
    for (int64_t c = 0; c < n;) {
        int piece = LD_COLS;
        while (piece > n - c)
            piece /= 2;
        LLVMValueRef at = LLVMBuildAdd(cg->b, row, cg_i32(cg, c), "");
        if (store)
            cg->tg->tmem_st(cg, at, piece, &v[c]);
        else
            cg->tg->tmem_ld(cg, at, piece, &v[c]);
        c += piece;
    }
    if (store)
        cg->tg->tmem_wait_st(cg);
    else
        cg->tg->tmem_wait_ld(cg);
}

static int lower_tmem_load(Cg *cg, Op *op)
{
    const Type *t = ir_type(cg->f, op->res[0]);
    int64_t m = t->shape[0], n = t->shape[1], cols = 0;
    if (t->dtype != DT_F32) {
        diag_error(cg->d, op->loc, "tmem_load reads f32 tensor memory here, not %s", dtype_name((DType)t->dtype));
        return 1;
    }
    LLVMValueRef row = tmem_row(cg, op, op->args[0], &cols);
    if (!row)
        return 1;
    const Layout *L = cg_layout_dup(cg, layout_tmem_rows(m, n, cg->nwarps));
    LLVMValueRef *r = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    tmem_columns(cg, row, n, r, false);
    cg->tg->tc_fence(cg, false);   /* the reads before the arrival that lets a product overwrite them */
    for (int64_t i = 0; i < n; i++)
        r[i] = LLVMBuildBitCast(cg->b, r[i], cg->t_f32, "");
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = L, .r = r };
    if (cg->report)
        sb_printf(cg->report, "  tmem_load at %d:%d: %lld x %lld f32, a row a thread (tcgen05.ld.32x32b, %d "
                  "columns a load)\n", op->loc.line, op->loc.col, (long long)m, (long long)n, LD_COLS);
    return 0;
}

/* Registers in the row layout into tensor memory: f32 one a column,
 * 16-bit two (element 2j in the low half). */
static int lower_tmem_store(Cg *cg, Op *op)
{
    const Type *t = ir_type(cg->f, op->args[1]);
    int64_t m = t->shape[0], n = t->shape[1], cols = 0;
    bool half = dtype_bits((DType)t->dtype) == 16;
    if (t->dtype != DT_F32 && !half) {
        diag_error(cg->d, op->loc, "tmem_store writes f32, bf16 or f16, not %s", dtype_name((DType)t->dtype));
        return 1;
    }
    LLVMValueRef row = tmem_row(cg, op, op->args[0], &cols);
    if (!row)
        return 1;
    const Layout *L = cg_layout_dup(cg, layout_tmem_rows(m, n, cg->nwarps));
    LLVMValueRef *v = cg_materialize(cg, &cg->vals[op->args[1]], t, L, op->loc);
    LLVMValueRef *w = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)cols);
    LLVMTypeRef pair = LLVMVectorType(cg_type(cg, (DType)t->dtype), 2);
    for (int64_t c = 0; c < cols; c++) {
        if (!half) {
            w[c] = LLVMBuildBitCast(cg->b, v[c], cg->t_i32, "");
            continue;
        }
        LLVMValueRef p = LLVMGetUndef(pair);
        p = LLVMBuildInsertElement(cg->b, p, v[2 * c], cg_i32(cg, 0), "");
        p = LLVMBuildInsertElement(cg->b, p, v[2 * c + 1], cg_i32(cg, 1), "");
        w[c] = LLVMBuildBitCast(cg->b, p, cg->t_i32, "");
    }
    tmem_columns(cg, row, cols, w, true);
    cg->tg->tc_fence(cg, false);   /* the writes before the arrival that lets a product read them */
    if (cg->report)
        sb_printf(cg->report, "  tmem_store at %d:%d: %lld x %lld %s, a row a thread (tcgen05.st.32x32b, %lld "
                  "columns)\n", op->loc.line, op->loc.col, (long long)m, (long long)n,
                  dtype_name((DType)t->dtype), (long long)cols);
    return 0;
}

int cg_lower_tc_op(Cg *cg, Op *op)
{
    if (!cg->tg->tc_mma) {
        diag_error(cg->d, op->loc, "'%s' needs tensor memory and tcgen05, which %s does not have",
                   op_info[op->code].name, cg->ti->name);
        return 1;
    }
    switch ((OpCode)op->code) {
    case OP_TMEM_ALLOC: return lower_tmem_alloc(cg, op);
    case OP_TC_MMA: return lower_tc_mma(cg, op);
    case OP_TC_COMMIT: return lower_tc_commit(cg, op);
    case OP_TMEM_LOAD: return lower_tmem_load(cg, op);
    case OP_TMEM_STORE: return lower_tmem_store(cg, op);
    default: break;
    }
    diag_internal(cg->d, op->loc, "not a tensor-memory op");
    return 1;
}
