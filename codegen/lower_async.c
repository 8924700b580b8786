/* lower_async.c - shared buffers and asynchronous copies: SMEM_ALLOC,
 * ASYNC_COPY (cp.async 16-byte global -> shared, zero fill at tensor
 * edges), ASYNC_COMMIT / ASYNC_WAIT (cp.async wait groups), BARRIER,
 * SMEM_LOAD and SMEM_STORE; and (experiment) a pipelined loop's prefetch
 * copies handed to its DOT to issue between the k steps.
 *
 * Shared buffers live in the kernel's dynamic shared memory at the byte
 * offset SMEM_ALLOC carries (iattr[1], from the smem_alloc pass; buffers it
 * left at -1 are packed here in program order). A buffer tile<S x R x C>
 * holds S slots of R x C elements, slot_bytes apart (the slot footprint
 * rounded up to the buffer's alignment). Inside a slot, (row, byte b) is at
 * cg_smem_offset: row-major, row-padded, or CUTLASS Swizzle<B,4,3> applied
 * to the offset inside [R x W] column panels (W = 32/64/128 bytes), the
 * convention of passes/smem_model.h. cp.async writes and ldmatrix reads use
 * this one function.
 *
 * An SMEM_LOAD whose users are all DOT operands (directly or through TRANS)
 * stays a view: the DOT reads the slot with ldmatrix when it runs. This
 * relies on what the double_buffer pass guarantees: a slot is not written
 * between its SMEM_LOAD and the DOTs that read it.
 */
#include "cg_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- address of (row, byte) in a shared tile ---- */

static int64_t row_pitch(const SmemView *sv)
{
    return sv->cols * sv->eb + (sv->swz == SWZ_PAD ? sv->pad : 0);
}

static int swz_bits(int swz) { return swz == SWZ_32B ? 1 : swz == SWZ_64B ? 2 : swz == SWZ_128B ? 3 : 0; }

LLVMValueRef cg_smem_offset(Cg *cg, const SmemView *sv, LLVMValueRef row, LLVMValueRef b)
{
    LLVMBuilderRef bld = cg->b;
    int bits = swz_bits(sv->swz);
    if (!bits)
        return LLVMBuildAdd(bld, LLVMBuildMul(bld, row, cg_i32(cg, row_pitch(sv)), ""), b, "");
    int64_t w = 16 << bits;
    LLVMValueRef panel = LLVMBuildLShr(bld, b, cg_i32(cg, 4 + bits), "");
    LLVMValueRef x = LLVMBuildAdd(bld, LLVMBuildMul(bld, row, cg_i32(cg, w), ""),
                                  LLVMBuildAnd(bld, b, cg_i32(cg, w - 1), ""), "");
    LLVMValueRef sel = LLVMBuildAnd(bld, LLVMBuildLShr(bld, x, cg_i32(cg, 3), ""), cg_i32(cg, ((1 << bits) - 1) << 4), "");
    x = LLVMBuildXor(bld, x, sel, "");
    return LLVMBuildAdd(bld, LLVMBuildMul(bld, panel, cg_i32(cg, (sv->prows ? sv->prows : sv->rows) * w), ""), x, "");
}

LLVMValueRef cg_smem_ptr(Cg *cg, const SmemView *sv, LLVMValueRef row, LLVMValueRef b)
{
    LLVMValueRef o = cg_smem_offset(cg, sv, row, b);
    return LLVMBuildGEP2(cg->b, cg->t_i8, sv->base, &o, 1, "");
}

/* ---- buffers ---- */

static int64_t align_up(int64_t x, int64_t a) { return a > 1 ? (x + a - 1) / a * a : x; }

static int buffer_shape(const Type *t, int64_t *slots, int64_t *rows, int64_t *cols)
{
    if (t->kind != TY_TILE || t->rank < 2 || t->rank > 3)
        return 1;
    *slots = t->shape[0];
    *rows = t->rank == 3 ? t->shape[1] : 1;
    *cols = t->shape[t->rank - 1];
    return 0;
}

static int64_t buffer_align(const Op *op) { return op->iattr[2] > 16 ? op->iattr[2] : 16; }

static int64_t buffer_slot_bytes(const Op *op, const Type *t)
{
    int64_t s, r, c;
    if (buffer_shape(t, &s, &r, &c))
        return 0;
    int eb = dtype_bits((DType)t->dtype) / 8;
    int64_t pitch = c * (eb ? eb : 1) + (op->iattr[0] == SWZ_PAD ? op->iattr[3] : 0);
    return align_up(r * pitch, buffer_align(op));
}

typedef struct EndCtx { int64_t end, autoend; } EndCtx;

static bool end_visit(Func *f, Op *op, void *ctx)
{
    EndCtx *e = ctx;
    if (op->code != OP_SMEM_ALLOC)
        return true;
    const Type *t = ir_type(f, op->res[0]);
    int64_t bytes = buffer_slot_bytes(op, t) * (t->kind == TY_TILE ? t->shape[0] : 1);
    if (op->iattr[1] >= 0) {
        if (op->iattr[1] + bytes > e->end)
            e->end = op->iattr[1] + bytes;
    } else {
        e->autoend = align_up(e->autoend, buffer_align(op)) + bytes;
    }
    return true;
}

int64_t cg_smem_buffers_end(Cg *cg, Func *f)
{
    EndCtx e = { f->smem_bytes, 0 };
    ir_walk(f, &f->body, end_visit, &e);
    cg->smem_auto = align_up(e.end, 1024);
    return e.autoend ? cg->smem_auto + e.autoend : e.end;
}

int cg_lower_smem_alloc(Cg *cg, Op *op)
{
    const Type *t = ir_type(cg->f, op->res[0]);
    SmemView *sv = arena_alloc(cg->a, sizeof *sv);
    int64_t off = op->iattr[1];
    if (buffer_shape(t, &sv->slots, &sv->rows, &sv->cols) || !cg->dsmem) {
        diag_internal(cg->d, op->loc, "smem_alloc needs a tile<S x R x C> result in a kernel with dynamic shared memory");
        return 1;
    }
    sv->eb = dtype_bits((DType)t->dtype) / 8;
    sv->swz = (int)op->iattr[0];
    sv->pad = (int)op->iattr[3];
    sv->slot_bytes = buffer_slot_bytes(op, t);
    int bits = swz_bits(sv->swz);
    if (bits && ((sv->cols * sv->eb) % (16 << bits) != 0 || sv->rows % 8 != 0)) {
        diag_error(cg->d, op->loc, "a %s swizzle needs rows of a multiple of %d bytes and a multiple of 8 rows; "
                   "this buffer has %lld x %lld bytes", swizzle_names[sv->swz], 16 << bits,
                   (long long)sv->rows, (long long)(sv->cols * sv->eb));
        return 1;
    }
    if (off < 0) {
        off = align_up(cg->smem_auto, buffer_align(op));
        cg->smem_auto = off + sv->slot_bytes * sv->slots;
    }
    LLVMValueRef o = cg_i64(cg, off);
    sv->base = LLVMBuildGEP2(cg->b, cg->t_i8, cg->dsmem, &o, 1, "");
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_SMEM, .sv = sv };
    if (cg->report)
        sb_printf(cg->report, "  shared buffer at %d:%d: %lld slots of %lldx%lld, %s, offset %lld, %lld bytes per slot\n",
                  op->loc.line, op->loc.col, (long long)sv->slots, (long long)sv->rows, (long long)sv->cols,
                  swizzle_names[sv->swz < SWZ_COUNT ? sv->swz : 0], (long long)off, (long long)sv->slot_bytes);
    return 0;
}

/* The slot `slot` (i32 value) of a buffer, as a tile view. */
static const SmemView *slot_view(Cg *cg, Op *op, ValId buf, ValId slot)
{
    const TileVal *b = &cg->vals[buf];
    if (b->kind != TV_SMEM) {
        diag_internal(cg->d, op->loc, "'%s' of something that is not a shared buffer", op_info[op->code].name);
        return NULL;
    }
    SmemView *sv = arena_alloc(cg->a, sizeof *sv);
    *sv = *b->sv;
    LLVMValueRef o = LLVMBuildMul(cg->b, LLVMBuildSExt(cg->b, cg->vals[slot].s, cg->t_i64, ""),
                                  cg_i64(cg, sv->slot_bytes), "");
    sv->base = LLVMBuildGEP2(cg->b, cg->t_i8, sv->base, &o, 1, "");
    sv->slots = 1;
    return sv;
}

/* ---- asynchronous copies ---- */

typedef struct Copy {
    Op *op;
    const SmemView *sv;
    const Type *tt;
    TensorArg *ta;
    int rank, rdim, cdim;         /* tensor rank; tensor dims of the tile's rows (-1) and columns */
    unsigned mask;
    LLVMValueRef off[TENSOR_MAXRANK];
    LLVMTypeRef ety;
    int vec;                      /* elements per 16-byte chunk */
} Copy;

static int copy_init(Cg *cg, Op *op, Copy *c)
{
    Func *f = cg->f;
    c->op = op;
    c->sv = slot_view(cg, op, op->args[0], op->args[1]);
    c->tt = ir_type(f, op->args[2]);
    c->ta = &cg->tens[op->args[2]];
    c->rank = c->tt->rank;
    c->mask = (unsigned)op->iattr[0];
    if (!c->sv)
        return 1;
    if (c->tt->kind != TY_TENSOR || op->nlist != c->rank || op->nargs != 3 + c->rank) {
        diag_internal(cg->d, op->loc, "malformed async_copy");
        return 1;
    }
    int kept[TILE_MAXRANK], nk = 0;
    for (int d = 0; d < c->rank; d++) {
        c->off[d] = cg->vals[op->args[3 + d]].s;
        if (op->list[d] > 0 && nk < TILE_MAXRANK)
            kept[nk++] = d;
    }
    c->rdim = nk == 2 ? kept[0] : -1;
    c->cdim = nk ? kept[nk - 1] : -1;
    c->ety = cg_mem_type(cg, (DType)c->tt->dtype);
    c->vec = c->sv->eb ? 16 / c->sv->eb : 0;
    if (nk < 1 || nk > 2 || c->cdim != c->rank - 1 || c->vec < 1 || (c->sv->cols * c->sv->eb) % 16) {
        diag_error(cg->d, op->loc, "asynchronous copies need a 1-D or 2-D window whose last dim is the tensor's "
                   "innermost and whose rows are a multiple of 16 bytes");
        return 1;
    }
    return 0;
}

/* Tensor indices of chunk (row, first column) of the window. */
static void chunk_index(Cg *cg, const Copy *c, LLVMValueRef row, LLVMValueRef col, LLVMValueRef *idx)
{
    for (int d = 0; d < c->rank; d++)
        idx[d] = c->off[d];
    if (c->rdim >= 0)
        idx[c->rdim] = LLVMBuildAdd(cg->b, c->off[c->rdim], row, "");
    idx[c->cdim] = LLVMBuildAdd(cg->b, c->off[c->cdim], col, "");
}

static LLVMValueRef global_ptr(Cg *cg, const Copy *c, LLVMValueRef *idx)
{
    return cg_tensor_elem_ptr(cg, c->ta, c->ety, c->rank, idx);
}

/* i1: every masked dim other than the columns is inside the tensor. */
static LLVMValueRef rows_ok(Cg *cg, const Copy *c, LLVMValueRef *idx)
{
    LLVMValueRef ok = LLVMConstInt(cg->t_i1, 1, 0);
    for (int d = 0; d < c->rank; d++)
        if (d != c->cdim && (c->mask >> d & 1))
            ok = LLVMBuildAnd(cg->b, ok, LLVMBuildICmp(cg->b, LLVMIntULT, idx[d], c->ta->size[d], ""), "");
    return ok;
}

/* Bytes of the chunk inside the tensor (0..16). */
static LLVMValueRef chunk_bytes(Cg *cg, const Copy *c, LLVMValueRef *idx)
{
    LLVMValueRef ok = rows_ok(cg, c, idx), n = cg_i32(cg, 16);
    if (c->mask >> c->cdim & 1) {
        LLVMValueRef rem = LLVMBuildSub(cg->b, c->ta->size[c->cdim], idx[c->cdim], "");
        LLVMValueRef lo = LLVMBuildICmp(cg->b, LLVMIntSLE, rem, cg_i32(cg, 0), "");
        LLVMValueRef full = LLVMBuildICmp(cg->b, LLVMIntSGE, rem, cg_i32(cg, c->vec), "");
        LLVMValueRef part = LLVMBuildMul(cg->b, rem, cg_i32(cg, c->sv->eb), "");
        n = LLVMBuildSelect(cg->b, lo, cg_i32(cg, 0), LLVMBuildSelect(cg->b, full, n, part, ""), "");
    }
    return LLVMBuildSelect(cg->b, ok, n, cg_i32(cg, 0), "");
}

static void copy_chunk_async(Cg *cg, const Copy *c, LLVMValueRef *idx, LLVMValueRef sptr, LLVMValueRef g)
{
    if (!g)
        g = global_ptr(cg, c, idx);
    if (!c->mask) {
        cg->tg->cp_async16(cg, sptr, g, NULL);
        return;
    }
    LLVMValueRef n = chunk_bytes(cg, c, idx);
    g = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT, n, cg_i32(cg, 0), ""), g, c->ta->base, "");
    cg->tg->cp_async16(cg, sptr, g, n);
}

/* Unaligned rows: element loads, one 16-byte shared store per chunk. */
static void copy_chunk_sync(Cg *cg, const Copy *c, LLVMValueRef *idx, LLVMValueRef sptr)
{
    LLVMValueRef ok = rows_ok(cg, c, idx), v = LLVMGetUndef(LLVMVectorType(c->ety, (unsigned)c->vec));
    LLVMValueRef g = global_ptr(cg, c, idx);
    for (int e = 0; e < c->vec; e++) {
        LLVMValueRef pe = ok, o = cg_i64(cg, e);
        if (c->mask >> c->cdim & 1) {
            LLVMValueRef i = LLVMBuildAdd(cg->b, idx[c->cdim], cg_i32(cg, e), "");
            pe = LLVMBuildAnd(cg->b, pe, LLVMBuildICmp(cg->b, LLVMIntULT, i, c->ta->size[c->cdim], ""), "");
        }
        LLVMValueRef p = LLVMBuildSelect(cg->b, pe, LLVMBuildGEP2(cg->b, c->ety, g, &o, 1, ""), c->ta->base, "");
        LLVMValueRef x = LLVMBuildLoad2(cg->b, c->ety, p, "");
        LLVMSetAlignment(x, (unsigned)c->sv->eb);
        x = LLVMBuildSelect(cg->b, pe, x, LLVMConstNull(c->ety), "");
        v = LLVMBuildInsertElement(cg->b, v, x, cg_i32(cg, e), "");
    }
    LLVMSetAlignment(LLVMBuildStore(cg->b, v, sptr), 16);
}

/* When every thread copies whole rows steps apart (nthreads a multiple of
 * the chunks per row, as many chunks for every thread, and a row step that
 * keeps the swizzle phase), chunk i of a thread is chunk 0 moved down
 * i * step rows: its shared address is a constant offset from chunk 0's
 * (an immediate) and its global address chunk i - 1's plus step rows
 * (one 64-bit add), instead of a full index computation per chunk whose
 * loop-invariant parts would each hold registers across the K loop. */
static bool copy_regular(Cg *cg, const Copy *c, int64_t *step)
{
    int64_t cpr = c->sv->cols * c->sv->eb / 16, total = c->sv->rows * cpr, nthr = 32LL * cg->nwarps;
    *step = nthr / cpr;
    bool swz = c->sv->swz != SWZ_NONE && c->sv->swz != SWZ_PAD;
    return c->rdim >= 0 && nthr % cpr == 0 && total % nthr == 0 && total > nthr && (!swz || *step % 8 == 0);
}

/* Chunks i0 .. i1-1 of this thread (of rows * chunks-per-row / threads). */
static void copy_rows(Cg *cg, const Copy *c, int64_t step, int64_t i0, int64_t i1, LLVMValueRef tid)
{
    int64_t cpr = c->sv->cols * c->sv->eb / 16;
    LLVMValueRef row0 = LLVMBuildUDiv(cg->b, tid, cg_i32(cg, cpr), "");
    LLVMValueRef ch = LLVMBuildURem(cg->b, tid, cg_i32(cg, cpr), ""), idx[TENSOR_MAXRANK];
    chunk_index(cg, c, row0, LLVMBuildMul(cg->b, ch, cg_i32(cg, c->vec), ""), idx);
    LLVMValueRef s0 = cg_smem_ptr(cg, c->sv, row0, LLVMBuildMul(cg->b, ch, cg_i32(cg, 16), ""));
    LLVMValueRef g = global_ptr(cg, c, idx), r0 = idx[c->rdim];
    LLVMValueRef gstep = LLVMBuildMul(cg->b, cg_i64(cg, step), c->ta->stride[c->rdim], "");
    int64_t sstep = step * (c->sv->swz == SWZ_NONE || c->sv->swz == SWZ_PAD ? row_pitch(c->sv) : 16 << swz_bits(c->sv->swz));
    if (i0) {
        LLVMValueRef o = LLVMBuildMul(cg->b, gstep, cg_i64(cg, i0), "");
        g = LLVMBuildGEP2(cg->b, c->ety, g, &o, 1, "");
    }
    for (int64_t i = i0; i < i1; i++) {
        LLVMValueRef o = cg_i64(cg, i * sstep);
        LLVMValueRef sp = i ? LLVMBuildGEP2(cg->b, cg->t_i8, s0, &o, 1, "") : s0;
        if (i > i0)
            g = LLVMBuildGEP2(cg->b, c->ety, g, &gstep, 1, "");
        if (i)
            idx[c->rdim] = LLVMBuildAdd(cg->b, r0, cg_i32(cg, i * step), "");
        copy_chunk_async(cg, c, idx, sp, g);
    }
}

/* Every thread copies chunks tid, tid + nthreads, ... of the slot. */
static void copy_all(Cg *cg, const Copy *c)
{
    int64_t cpr = c->sv->cols * c->sv->eb / 16, total = c->sv->rows * cpr, nthr = 32LL * cg->nwarps, step;
    LLVMValueRef tid = cg->tid;
    if (copy_regular(cg, c, &step)) {
        copy_rows(cg, c, step, 0, c->sv->rows * cpr / nthr, tid);
        return;
    }
    for (int64_t i = 0; i * nthr < total; i++) {
        LLVMValueRef id = LLVMBuildAdd(cg->b, tid, cg_i32(cg, i * nthr), ""), idx[TENSOR_MAXRANK];
        LLVMBasicBlockRef cont = NULL;
        if ((i + 1) * nthr > total) {
            LLVMBasicBlockRef doit = cg_new_block(cg, "cp.do");
            cont = cg_new_block(cg, "cp.cont");
            LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, id, cg_i32(cg, total), ""), doit, cont);
            LLVMPositionBuilderAtEnd(cg->b, doit);
        }
        LLVMValueRef row = LLVMBuildUDiv(cg->b, id, cg_i32(cg, cpr), "");
        LLVMValueRef ch = LLVMBuildURem(cg->b, id, cg_i32(cg, cpr), "");
        chunk_index(cg, c, row, LLVMBuildMul(cg->b, ch, cg_i32(cg, c->vec), ""), idx);
        LLVMValueRef sptr = cg_smem_ptr(cg, c->sv, row, LLVMBuildMul(cg->b, ch, cg_i32(cg, 16), ""));
        copy_chunk_async(cg, c, idx, sptr, NULL);
        if (cont) {
            LLVMBuildBr(cg->b, cont);
            LLVMPositionBuilderAtEnd(cg->b, cont);
        }
    }
}

/* Unaligned rows (rare): a loop over this thread's chunks, one at a time,
 * that the optimizer can neither unroll nor hoist from (the index steps
 * through an opaque add), so that this path needs few registers where it
 * stands: inside the K loop, next to the accumulators. */
static void copy_all_sync(Cg *cg, const Copy *c)
{
    int64_t cpr = c->sv->cols * c->sv->eb / 16, total = c->sv->rows * cpr, nthr = 32LL * cg->nwarps;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b), head = cg_new_block(cg, "cps.head"),
                      body = cg_new_block(cg, "cps.body"), exit = cg_new_block(cg, "cps.exit");
    LLVMValueRef id0 = cg_opaque_tid(cg), idx[TENSOR_MAXRANK];
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    LLVMValueRef id = LLVMBuildPhi(cg->b, cg->t_i32, "cps.id");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, id, cg_i32(cg, total), ""), body, exit);
    LLVMPositionBuilderAtEnd(cg->b, body);
    LLVMValueRef row = LLVMBuildUDiv(cg->b, id, cg_i32(cg, cpr), "");
    LLVMValueRef ch = LLVMBuildURem(cg->b, id, cg_i32(cg, cpr), "");
    chunk_index(cg, c, row, LLVMBuildMul(cg->b, ch, cg_i32(cg, c->vec), ""), idx);
    copy_chunk_sync(cg, c, idx, cg_smem_ptr(cg, c->sv, row, LLVMBuildMul(cg->b, ch, cg_i32(cg, 16), "")));
    LLVMTypeRef fty = LLVMFunctionType(cg->t_i32, &cg->t_i32, 1, 0);
    char code[64];
    snprintf(code, sizeof code, "add.s32 $0, $1, %lld;", (long long)nthr);
    LLVMValueRef as = LLVMGetInlineAsm(fty, code, strlen(code), (char *)"=r,r", 4, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef nid = LLVMBuildCall2(cg->b, fty, as, &id, 1, "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, head);
    LLVMAddIncoming(id, &id0, &pre, 1);
    LLVMAddIncoming(id, &nid, &latch, 1);
    LLVMPositionBuilderAtEnd(cg->b, exit);
}

/* Chunks a .. z-1 of this thread's chunks of one copy (regular copies;
 * any other is issued whole). */
static void copy_part(Cg *cg, const Copy *c, int64_t a, int64_t z)
{
    int64_t step;
    if (copy_regular(cg, c, &step))
        copy_rows(cg, c, step, a, z, cg->tid);
    else
        copy_all(cg, c);
}

/* copy_part, then a branch to join; with `interior` (i1, or NULL), first
 * an arm without per-chunk bounds for a window wholly inside the tensor. */
static void copy_arms(Cg *cg, const Copy *c, LLVMValueRef interior, int64_t a, int64_t z, LLVMBasicBlockRef join)
{
    if (interior) {
        LLVMBasicBlockRef in = cg_new_block(cg, "cp.interior"), edge = cg_new_block(cg, "cp.edge");
        LLVMBuildCondBr(cg->b, interior, in, edge);
        LLVMPositionBuilderAtEnd(cg->b, in);
        Copy ci = *c;
        ci.mask = 0;
        copy_part(cg, &ci, a, z);
        LLVMBuildBr(cg->b, join);
        LLVMPositionBuilderAtEnd(cg->b, edge);
    }
    copy_part(cg, c, a, z);
    LLVMBuildBr(cg->b, join);
}

/* i1: is the whole window inside the tensor along every masked dim? (one
 * block-uniform test; the copies of an interior window need no per-chunk
 * bounds, src sizes or pointer selects: most blocks of a large problem take
 * that arm, only the edge blocks the masked one). */
static LLVMValueRef copy_interior(Cg *cg, const Copy *c)
{
    LLVMValueRef ok = NULL;
    for (int d = 0; d < c->rank; d++) {
        if (!(c->mask >> d & 1))
            continue;
        int64_t ext = d == c->cdim ? c->sv->cols : d == c->rdim ? c->sv->rows : 1;
        LLVMValueRef end = LLVMBuildAdd(cg->b, LLVMBuildSExt(cg->b, c->off[d], cg->t_i64, ""), cg_i64(cg, ext), "");
        LLVMValueRef in = LLVMBuildICmp(cg->b, LLVMIntSLE, end, LLVMBuildSExt(cg->b, c->ta->size[d], cg->t_i64, ""), "");
        in = LLVMBuildAnd(cg->b, in, LLVMBuildICmp(cg->b, LLVMIntSGE, c->off[d], cg_i32(cg, 0), ""), "");
        ok = ok ? LLVMBuildAnd(cg->b, ok, in, "") : in;
    }
    return ok;
}

/* Does a copy get the arm for interior windows? When it is masked and the
 * kernel asks for the arm (cg->copy_interior: TILEC_COPY_INTERIOR, by
 * default on for products that feed no other product; tilec.attention
 * asks for it on the attention tiles where it measured faster). */
static bool interior_arm(const Cg *cg, const Copy *c)
{
    return c->mask && cg->copy_interior;
}

/* The interior test when the copy gets the arm, else NULL. */
static LLVMValueRef interior_test(Cg *cg, const Copy *c)
{
    return interior_arm(cg, c) ? copy_interior(cg, c) : NULL;
}

/* i1: are all rows and the window start 16-byte aligned in global memory? */
static LLVMValueRef copy_aligned(Cg *cg, const Copy *c)
{
    LLVMValueRef bits = LLVMBuildSExt(cg->b, c->off[c->cdim], cg->t_i64, "");
    for (int d = 0; d + 1 < c->rank; d++)
        bits = LLVMBuildOr(cg->b, bits, c->ta->stride[d], "");
    bits = LLVMBuildAnd(cg->b, bits, cg_i64(cg, c->vec - 1), "");
    return LLVMBuildICmp(cg->b, LLVMIntEQ, bits, cg_i64(cg, 0), "cp.aligned");
}

/* ---- prefetch copies issued between the k steps of a DOT ----
 * Experiment, off by default (TILEC_XP_INTERLEAVE=1 turns it on): on an
 * H200 it measured no faster than the copies where they stand (370 / 355
 * TFLOP/s against 361 / 377 at 4096^3 / 8192^3, docs/codegen.md), and the
 * version measured had a bug since fixed (one condition for all copies, see
 * cg_deferred_copies_emit) that this fix has not been measured with.
 * The double_buffer schedule of a loop body is: wait, barrier, IF (guard)
 * { copies of a later iteration into the retired slot }, commit,
 * smem_loads, DOT. Lowered as it stands, every iteration is one burst
 * (all copies, then all products). When the body has exactly this shape
 * and one DOT, the copies' cp.async go between the DOT's k16 steps
 * instead (1/K16 of the chunks per step, each copy under `guard && its
 * rows aligned`) and the commit after the last part: the same copies into
 * the same slot, in the same commit group, so the wait counts are
 * unchanged; the slot written is still the one the top barrier retired,
 * which the DOT does not read. A copy whose rows are not 16-byte aligned
 * still takes the synchronous path where the IF stands.
 * TILEC_XP_COPY_POS places the parts in a k step (see
 * cg_deferred_copies_emit). */

typedef struct PfLoop {
    Op *forop, *ifop, *commit, *dot;
    Op *wait, *barrier;           /* the body's top wait + barrier */
    bool early;                   /* the DOT issues them before its last k step */
} PfLoop;

enum { PF_MAX_LOOPS = 16, PF_MAX_COPIES = 8 };

struct CgPrefetch {
    PfLoop loops[PF_MAX_LOOPS];
    int n;
    struct CgCopies *collect;     /* re-lowering at the DOT: copies are recorded here */
};

struct CgCopies {
    Copy c[PF_MAX_COPIES];
    int64_t chunks[PF_MAX_COPIES];   /* per-thread chunks (1: issued whole) */
    int n;
    int64_t total;
    LLVMValueRef ok[PF_MAX_COPIES];  /* i1 per copy: the guard, and its rows aligned */
    LLVMValueRef in[PF_MAX_COPIES];  /* i1 per masked copy: its window inside the tensor (NULL: unmasked) */
    int where;                       /* place in a k step (cg_deferred_copies_emit) */
    const PfLoop *loop;
};

static bool scalar_pure(Func *f, const Op *op)
{
    return (op_info[op->code].flags & OPF_PURE) && op->nregions == 0 && op->nres == 1 &&
           ir_type(f, op->res[0])->kind != TY_TILE;
}

static bool pf_then_ok(Func *f, const Block *b)
{
    int ncopy = 0;
    for (int i = 0; i < b->nops; i++) {
        const Op *op = b->ops[i];
        if (op->code == OP_ASYNC_COPY)
            ncopy++;
        else if (op->code != OP_YIELD && !scalar_pure(f, op))
            return false;
    }
    return ncopy > 0 && ncopy <= PF_MAX_COPIES;
}

static bool from_smem_load(Func *f, ValId v)
{
    Op *d = ir_val(f, v)->def;
    if (d && d->code == OP_TRANS)
        d = ir_val(f, d->args[0])->def;
    return d && d->code == OP_SMEM_LOAD;
}

static bool count_dots(Func *f, Op *op, void *ctx)
{
    (void)f;
    *(int *)ctx += op->code == OP_DOT;
    return true;
}

int cg_count_dots(Func *f, Block *b)
{
    int n = 0;
    ir_walk(f, b, count_dots, &n);
    return n;
}

/* Early fragments (TILEC_XP_EARLY_FRAGS=0 turns them off): the body's top
 * wait + barrier move to just before the DOT's last k step (after the
 * last part of the copies and their commit), where every fragment of the
 * current slot is already in registers, so the step-0 fragments of the
 * next slot load before the last products; the first iteration's wait +
 * barrier + fragments go to the preheader. Needs pending >= 1 (S >= 3:
 * the wait then leaves the group just committed in flight) and the DOT's
 * result yielded directly (the DOT ends the body). */
static bool pf_early_ok(Func *f, Block *b, int j, Op *wait)
{
    int early = tc_knob("TILEC_XP_EARLY_FRAGS", 1);
    Op *dot = b->ops[j], *y = j + 1 < b->nops ? b->ops[j + 1] : NULL;
    if (early <= 0 || !wait || wait->iattr[0] < 1 || !y || y->code != OP_YIELD || j + 2 != b->nops)
        return false;
    for (int k = 0; k < y->nargs; k++)
        if (y->args[k] == dot->res[0])
            return ir_type(f, dot->res[0])->kind == TY_TILE;
    return false;
}

static void pf_record(Cg *cg, struct CgPrefetch *pf, Op *forop, int i, int j)
{
    Block *b = &forop->regions[0];
    PfLoop *l = &pf->loops[pf->n++];
    *l = (PfLoop){ .forop = forop, .ifop = b->ops[i], .commit = b->ops[i + 1], .dot = b->ops[j] };
    int k = i - 1;
    while (k >= 0 && scalar_pure(cg->f, b->ops[k]))
        k--;
    if (k >= 1 && b->ops[k]->code == OP_BARRIER && b->ops[k - 1]->code == OP_ASYNC_WAIT) {
        l->barrier = b->ops[k];
        l->wait = b->ops[k - 1];
    }
    l->early = pf_early_ok(cg->f, b, j, l->wait);
}

/* The IF / commit / DOT of a FOR body of the double_buffer shape, if any. */
static void pf_scan_for(Cg *cg, struct CgPrefetch *pf, Op *forop)
{
    Func *f = cg->f;
    Block *b = &forop->regions[0];
    int ndots = cg_count_dots(f, b);
    for (int i = 0; ndots == 1 && i + 1 < b->nops && pf->n < PF_MAX_LOOPS; i++) {
        Op *ifop = b->ops[i];
        if (ifop->code != OP_IF || ifop->nres || ifop->nregions != 2 || b->ops[i + 1]->code != OP_ASYNC_COMMIT ||
            !pf_then_ok(f, &ifop->regions[0]) || ifop->regions[1].nops > 1)
            continue;
        for (int j = i + 2; j < b->nops; j++) {
            Op *op = b->ops[j];
            if (op->code == OP_DOT) {
                if (from_smem_load(f, op->args[0]) && from_smem_load(f, op->args[1]))
                    pf_record(cg, pf, forop, i, j);
                break;
            }
            if (op->code != OP_SMEM_LOAD && op->code != OP_TRANS && !scalar_pure(f, op))
                break;
        }
        return;
    }
}

static bool pf_visit(Func *f, Op *op, void *ctx)
{
    Cg *cg = ctx;
    (void)f;
    if (op->code == OP_FOR)
        pf_scan_for(cg, cg->pf, op);
    return true;
}

static struct CgPrefetch *pf_get(Cg *cg)
{
    if (!cg->pf) {
        cg->pf = arena_alloc(cg->a, sizeof *cg->pf);
        memset(cg->pf, 0, sizeof *cg->pf);
        if (tc_knob("TILEC_XP_INTERLEAVE", 0) > 0)
            ir_walk(cg->f, &cg->f->body, pf_visit, cg);
    }
    return cg->pf;
}

static const PfLoop *pf_find(Cg *cg, const Op *op)
{
    struct CgPrefetch *pf = pf_get(cg);
    for (int i = 0; i < pf->n; i++) {
        const PfLoop *l = &pf->loops[i];
        if (op == l->commit || op == l->dot || op->parent == &l->ifop->regions[0])
            return l;
    }
    return NULL;
}

static int pf_collect(Cg *cg, struct CgCopies *dc, Op *op)
{
    if (dc->n == PF_MAX_COPIES || copy_init(cg, op, &dc->c[dc->n]))
        return 1;
    const Copy *c = &dc->c[dc->n];
    int64_t step, cpr = c->sv->cols * c->sv->eb / 16;
    dc->chunks[dc->n] = copy_regular(cg, c, &step) ? c->sv->rows * cpr / (32LL * cg->nwarps) : 1;
    dc->total += dc->chunks[dc->n++];
    return 0;
}

struct CgCopies *cg_deferred_copies(Cg *cg, Op *dot)
{
    const PfLoop *l = pf_find(cg, dot);
    if (!l || l->dot != dot)
        return NULL;
    struct CgCopies *dc = arena_alloc(cg->a, sizeof *dc);
    memset(dc, 0, sizeof *dc);
    cg->pf->collect = dc;
    int e = cg_lower_block(cg, &l->ifop->regions[0]);
    cg->pf->collect = NULL;
    if (e)
        return NULL;
    dc->where = tc_knob("TILEC_XP_COPY_POS", 1);   /* experiments: 0, 1 (default), 2 */
    dc->loop = l;
    for (int i = 0; i < dc->n; i++) {
        dc->ok[i] = LLVMBuildAnd(cg->b, cg->vals[l->ifop->args[0]].s, copy_aligned(cg, &dc->c[i]), "");
        dc->in[i] = interior_test(cg, &dc->c[i]);
    }
    return dc;
}


/* Chunks lo .. hi-1 (over all copies) of this thread, each copy's under
 * its own condition: the guard and that copy's alignment (a copy whose
 * rows are not aligned took the synchronous path where the IF stands). */
void cg_deferred_copies_emit(Cg *cg, struct CgCopies *dc, int part, int nparts, int where)
{
    if (where >= 0 && where != dc->where)
        return;
    int64_t lo = dc->total * part / nparts, hi = dc->total * (part + 1) / nparts, base = 0;
    for (int k = 0; k < dc->n; base += dc->chunks[k++]) {
        int64_t a = (lo > base ? lo : base) - base, z = (hi < base + dc->chunks[k] ? hi : base + dc->chunks[k]) - base;
        if (a >= z)
            continue;
        LLVMBasicBlockRef doit = cg_new_block(cg, "pf.copy"), cont = cg_new_block(cg, "pf.cont");
        LLVMBuildCondBr(cg->b, dc->ok[k], doit, cont);
        LLVMPositionBuilderAtEnd(cg->b, doit);
        copy_arms(cg, &dc->c[k], dc->in[k], a, z, cont);
        LLVMPositionBuilderAtEnd(cg->b, cont);
    }
    if (part == nparts - 1)
        cg->tg->async_commit(cg);
}

Op *cg_deferred_early(Cg *cg, const struct CgCopies *dc, int *pending)
{
    (void)cg;
    if (!dc->loop->early)
        return NULL;
    *pending = (int)dc->loop->wait->iattr[0];
    return dc->loop->forop;
}

LLVMValueRef cg_slot_base(Cg *cg, ValId operand, bool next)
{
    Func *f = cg->f;
    Op *d = ir_val(f, operand)->def;
    if (d && d->code == OP_TRANS)
        d = ir_val(f, d->args[0])->def;
    if (!d || d->code != OP_SMEM_LOAD || cg->vals[d->args[0]].kind != TV_SMEM)
        return NULL;
    const SmemView *buf = cg->vals[d->args[0]].sv;
    if (!next)
        return buf->base;
    LLVMValueRef s = LLVMBuildAdd(cg->b, cg->vals[d->args[1]].s, cg_i32(cg, 1), "");
    s = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntEQ, s, cg_i32(cg, buf->slots), ""), cg_i32(cg, 0), s, "");
    LLVMValueRef o = LLVMBuildMul(cg->b, LLVMBuildSExt(cg->b, s, cg->t_i64, ""), cg_i64(cg, buf->slot_bytes), "");
    return LLVMBuildGEP2(cg->b, cg->t_i8, buf->base, &o, 1, "");
}

static int lower_copy(Cg *cg, Op *op);

/* A copy that warp group g issues alone (decoupled turns, lower_chain.c
 * cg_chain_copy_group): behind a warp-uniform branch, lowered as if the
 * block were that group (thread ids from 0, half the warps); part `part`
 * of `parts` runs of the window's rows (copy_select_part). */
static int group_copy(Cg *cg, Op *op, int g, int part, int parts)
{
    LLVMBasicBlockRef mine = cg_new_block(cg, "cp.group"), after = cg_new_block(cg, "cp.group.end");
    LLVMBuildCondBr(cg->b, cg_chain_in_group(cg, g), mine, after);
    LLVMPositionBuilderAtEnd(cg->b, mine);
    LLVMValueRef tid = cg->tid;
    int nwarps = cg->nwarps;
    cg->tid = LLVMBuildSub(cg->b, tid, cg_i32(cg, g * nwarps * 16), "gtid");
    cg->nwarps = nwarps / 2;
    cg->copy_part = part, cg->copy_parts = parts;
    int e = lower_copy(cg, op);
    cg->copy_part = 0, cg->copy_parts = 0;
    cg->tid = tid;
    cg->nwarps = nwarps;
    LLVMBuildBr(cg->b, after);
    LLVMPositionBuilderAtEnd(cg->b, after);
    return e;
}

/* An async copy: the whole block's, one group's alone, or (the first
 * product's A with the turns carried across a loop's trips) each group its
 * own half of the rows. */
int cg_lower_async_copy(Cg *cg, Op *op)
{
    int g = pf_get(cg)->collect ? -1 : cg_chain_copy_group(cg, op);
    if (g < 0)
        return lower_copy(cg, op);
    int e = g == 2 ? group_copy(cg, op, 0, 0, 2) || group_copy(cg, op, 1, 1, 2) : group_copy(cg, op, g, 0, 1);
    int nwarps = cg->nwarps;
    if (cg->report && !e && g == 2)
        sb_printf(cg->report, "  async copy at %d:%d: each warp group copies the half of the rows its warps read\n",
                  op->loc.line, op->loc.col);
    else if (cg->report && !e)
        sb_printf(cg->report, "  async copy at %d:%d: issued by warp group %d alone (warps %d-%d)\n", op->loc.line,
                  op->loc.col, g, g * nwarps / 2, g * nwarps / 2 + nwarps / 2 - 1);
    return e;
}

/* Part cg->copy_part of cg->copy_parts equal runs of the window's rows:
 * the global offset and the shared view move by that many rows (a whole
 * number of 8-row swizzle periods, so the pattern is the same; a swizzled
 * tile's column panels keep their height, SmemView.prows). */
static int copy_select_part(Cg *cg, Copy *c)
{
    if (cg->copy_parts <= 1)
        return 0;
    int64_t rows = c->sv->rows / cg->copy_parts;
    if (c->rdim < 0 || c->sv->rows % cg->copy_parts || rows % 8 || c->sv->trans) {
        diag_internal(cg->d, c->op->loc, "a copy split by warp group needs whole 8-row runs");
        return 1;
    }
    SmemView *sv = arena_alloc(cg->a, sizeof *sv);
    *sv = *c->sv;
    int64_t at = rows * cg->copy_part, bits = swz_bits(sv->swz);
    LLVMValueRef o = cg_i64(cg, at * (bits ? 16 << bits : row_pitch(sv)));   /* row `at` of the first panel */
    sv->base = LLVMBuildGEP2(cg->b, cg->t_i8, sv->base, &o, 1, "");
    sv->prows = sv->prows ? sv->prows : sv->rows;
    sv->rows = rows;
    c->sv = sv;
    c->off[c->rdim] = LLVMBuildAdd(cg->b, c->off[c->rdim], cg_i32(cg, at), "");
    return 0;
}

static int lower_copy(Cg *cg, Op *op)
{
    Copy c;
    if (pf_get(cg)->collect)
        return pf_collect(cg, cg->pf->collect, op);
    if (copy_init(cg, op, &c) || copy_select_part(cg, &c))
        return 1;
    bool deferred = pf_find(cg, op) != NULL;   /* cp.async issued by the DOT */
    LLVMBasicBlockRef fast = deferred ? NULL : cg_new_block(cg, "cp.async"), slow = cg_new_block(cg, "cp.sync"),
                      join = cg_new_block(cg, "cp.join");
    LLVMBuildCondBr(cg->b, copy_aligned(cg, &c), deferred ? join : fast, slow);
    if (!deferred) {
        LLVMPositionBuilderAtEnd(cg->b, fast);
        int64_t cpr = c.sv->cols * c.sv->eb / 16;
        copy_arms(cg, &c, interior_test(cg, &c), 0, c.sv->rows * cpr / (32LL * cg->nwarps), join);
    }
    LLVMPositionBuilderAtEnd(cg->b, slow);
    copy_all_sync(cg, &c);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
    if (cg->report)
        sb_printf(cg->report, "  async copy at %d:%d: %lldx%lld, cp.async 16 B%s%s%s\n", op->loc.line, op->loc.col,
                  (long long)c.sv->rows, (long long)c.sv->cols, c.mask ? ", zero fill at the edges" : "",
                  interior_arm(cg, &c) ? " (an unmasked arm for windows wholly inside)" : "",
                  deferred ? ", issued between the k steps of the product" : "");
    return 0;
}

int cg_lower_async_sync(Cg *cg, Op *op)
{
    switch ((OpCode)op->code) {
    case OP_ASYNC_COMMIT:
        if (!pf_find(cg, op))      /* else committed by the DOT after its copies */
            cg->tg->async_commit(cg);
        return 0;
    case OP_ASYNC_WAIT:
    case OP_BARRIER:
        for (int i = 0; i < pf_get(cg)->n; i++)
            if (cg->pf->loops[i].early && (op == cg->pf->loops[i].wait || op == cg->pf->loops[i].barrier))
                return 0;       /* issued by the DOT (early fragments) */
        if (op->code == OP_ASYNC_WAIT)
            cg->tg->async_wait(cg, (int)op->iattr[0]);
        else if (!cg_chain_group_barrier(cg, op)) {
            cg->tg->barrier(cg);
            cg->groups_apart = false;   /* the block meets again */
        }
        return 0;
    default: break;
    }
    diag_internal(cg->d, op->loc, "not a synchronisation op");
    return 1;
}

/* ---- shared tiles <-> registers ---- */

/* Elements per shared access for layout L: its contiguous run, at most 16
 * bytes, when the run stays inside a row of the stored tile. */
static int smem_vec(const SmemView *sv, const Layout *L)
{
    int v = layout_vec(L), cap = sv->eb ? 16 / sv->eb : 1;
    if (sv->trans || v > cap)
        v = sv->trans ? 1 : cap;
    return v > 0 && sv->cols % v == 0 ? v : 1;
}

static LLVMValueRef reg_ptr(Cg *cg, const SmemView *sv, const Layout *L, int r)
{
    int rank = layout_rank(L);
    LLVMValueRef c0 = rank == 2 ? cg_coord(cg, L, r, 0) : cg_i32(cg, 0);
    LLVMValueRef c1 = cg_coord(cg, L, r, rank - 1);
    if (sv->trans) {
        LLVMValueRef t = c0;
        c0 = c1;
        c1 = t;
    }
    return cg_smem_ptr(cg, sv, c0, LLVMBuildMul(cg->b, c1, cg_i32(cg, sv->eb), ""));
}

LLVMValueRef *cg_smem_read(Cg *cg, const SmemView *sv, DType dt, const Layout *L)
{
    int n = layout_nregs(L), vec = smem_vec(sv, L);
    LLVMTypeRef ety = cg_mem_type(cg, dt), vty = vec > 1 ? LLVMVectorType(ety, (unsigned)vec) : ety;
    LLVMValueRef *out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int r = 0; r < n; r += vec) {
        LLVMValueRef v = LLVMBuildLoad2(cg->b, vty, reg_ptr(cg, sv, L, r), "");
        LLVMSetAlignment(v, (unsigned)(vec * sv->eb));
        for (int e = 0; e < vec; e++) {
            LLVMValueRef x = vec > 1 ? LLVMBuildExtractElement(cg->b, v, cg_i32(cg, e), "") : v;
            out[r + e] = dt == DT_BOOL ? LLVMBuildICmp(cg->b, LLVMIntNE, x, LLVMConstInt(cg->t_i8, 0, 0), "") : x;
        }
    }
    return out;
}

void cg_smem_write(Cg *cg, const SmemView *sv, DType dt, const Layout *L, LLVMValueRef *regs)
{
    int n = layout_nregs(L), vec = smem_vec(sv, L);
    LLVMTypeRef ety = cg_mem_type(cg, dt);
    for (int r = 0; r < n; r += vec) {
        LLVMValueRef v = vec > 1 ? LLVMGetUndef(LLVMVectorType(ety, (unsigned)vec)) : NULL;
        for (int e = 0; e < vec; e++) {
            LLVMValueRef x = dt == DT_BOOL ? LLVMBuildZExt(cg->b, regs[r + e], cg->t_i8, "") : regs[r + e];
            v = vec > 1 ? LLVMBuildInsertElement(cg->b, v, x, cg_i32(cg, e), "") : x;
        }
        LLVMSetAlignment(LLVMBuildStore(cg->b, v, reg_ptr(cg, sv, L, r)), (unsigned)(vec * sv->eb));
    }
}

/* Are all users of v DOT operands (directly, or through TRANS)? */
typedef struct UseCtx { ValId v; bool ok; } UseCtx;

static bool dot_only(Func *f, ValId v);

static bool use_visit(Func *f, Op *op, void *ctx)
{
    UseCtx *u = ctx;
    for (int i = 0; i < op->nargs && u->ok; i++) {
        if (op->args[i] != u->v)
            continue;
        if (op->code == OP_DOT && i < 2)
            continue;
        u->ok = op->code == OP_TRANS && dot_only(f, op->res[0]);
    }
    return u->ok;
}

static bool dot_only(Func *f, ValId v)
{
    UseCtx u = { v, true };
    ir_walk(f, &f->body, use_visit, &u);
    return u.ok;
}

int cg_lower_smem_load(Cg *cg, Op *op)
{
    const SmemView *sv = slot_view(cg, op, op->args[0], op->args[1]);
    const Type *t = ir_type(cg->f, op->res[0]);
    if (!sv)
        return 1;
    if (t->kind == TY_TILE && t->rank == 2 && dot_only(cg->f, op->res[0])) {
        cg->vals[op->res[0]] = (TileVal){ .kind = TV_SMEM, .sv = sv };
        return 0;
    }
    const Layout *L = cg_default_layout(cg, t, true);
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = L, .r = cg_smem_read(cg, sv, (DType)t->dtype, L) };
    return 0;
}

int cg_lower_smem_store(Cg *cg, Op *op)
{
    const SmemView *sv = slot_view(cg, op, op->args[0], op->args[1]);
    const Type *t = ir_type(cg->f, op->args[2]);
    const TileVal *v = &cg->vals[op->args[2]];
    if (!sv)
        return 1;
    const Layout *L = v->kind == TV_REGS ? v->L : cg_default_layout(cg, t, true);
    cg_smem_write(cg, sv, (DType)t->dtype, L, cg_materialize(cg, v, t, L, op->loc));
    return 0;
}
