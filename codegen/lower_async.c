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
    return LLVMBuildAdd(bld, LLVMBuildMul(bld, panel, cg_i32(cg, sv->rows * w), ""), x, "");
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
    if (op->code == OP_MBAR_ALLOC || op->code == OP_TMEM_ALLOC) {   /* rings: 8 bytes a slot; the tensor memory
                                                                         address: 8; unplaced ones after the buffers */
        int64_t bytes = op->code == OP_TMEM_ALLOC ? 8 : 8 * ir_type(f, op->res[0])->shape[0];
        if (op->iattr[1] >= 0)
            e->end = op->iattr[1] + bytes > e->end ? op->iattr[1] + bytes : e->end;
        else
            e->autoend = align_up(e->autoend, 8) + bytes;
        return true;
    }
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

int64_t cg_smem_place_ring(Cg *cg, Op *op, int64_t bytes)
{
    if (op->iattr[1] >= 0)   /* placed by smem_alloc */
        return op->iattr[1];
    int64_t off = align_up(cg->smem_auto, 8);
    cg->smem_auto = off + bytes;
    return off;
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
        LLVMValueRef p = LLVMBuildSelect(cg->b, pe, LLVMBuildGEP2(cg->b, c->ety, g, &o, 1, ""), cg_guard_ptr(cg), "");
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
 * kernel takes the arm (Func.sched.copy_interior: kernels with products,
 * but not the D=128 causal attention tile; the schedule pass decides). */
static bool interior_arm(const Cg *cg, const Copy *c)
{
    return c->mask && cg->f->sched.copy_interior;
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

/* ---- products in a block ---- */

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

static int lower_copy(Cg *cg, Op *op);

/* A copy that warp group g issues alone (decoupled turns, lower_chain.c
 * cg_chain_copy_group): behind a warp-uniform branch, lowered as if the
 * block were that group (thread ids from 0, half the warps). */
static int group_copy(Cg *cg, Op *op, int g)
{
    LLVMBasicBlockRef mine = cg_new_block(cg, "cp.group"), after = cg_new_block(cg, "cp.group.end");
    LLVMBuildCondBr(cg->b, cg_chain_in_group(cg, g), mine, after);
    LLVMPositionBuilderAtEnd(cg->b, mine);
    LLVMValueRef tid = cg->tid;
    int nwarps = cg->nwarps;
    cg->tid = LLVMBuildSub(cg->b, tid, cg_i32(cg, g * nwarps * 16), "gtid");
    cg->nwarps = nwarps / 2;
    int e = lower_copy(cg, op);
    cg->tid = tid;
    cg->nwarps = nwarps;
    LLVMBuildBr(cg->b, after);
    LLVMPositionBuilderAtEnd(cg->b, after);
    return e;
}

/* An async copy: the whole block's, or one warp group's alone. */
int cg_lower_async_copy(Cg *cg, Op *op)
{
    int g = cg_chain_copy_group(cg, op);
    if (g < 0)
        return lower_copy(cg, op);
    int e = group_copy(cg, op, g);
    int nwarps = cg->nwarps;
    if (cg->report && !e)
        sb_printf(cg->report, "  async copy at %d:%d: issued by warp group %d alone (warps %d-%d)\n", op->loc.line,
                  op->loc.col, g, g * nwarps / 2, g * nwarps / 2 + nwarps / 2 - 1);
    return e;
}

static int lower_copy(Cg *cg, Op *op)
{
    Copy c;
    if (copy_init(cg, op, &c))
        return 1;
    LLVMBasicBlockRef fast = cg_new_block(cg, "cp.async"), slow = cg_new_block(cg, "cp.sync"),
                      join = cg_new_block(cg, "cp.join");
    LLVMBuildCondBr(cg->b, copy_aligned(cg, &c), fast, slow);
    LLVMPositionBuilderAtEnd(cg->b, fast);
    int64_t cpr = c.sv->cols * c.sv->eb / 16;
    copy_arms(cg, &c, interior_test(cg, &c), 0, c.sv->rows * cpr / (32LL * cg->nwarps), join);
    LLVMPositionBuilderAtEnd(cg->b, slow);
    copy_all_sync(cg, &c);
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
    if (cg->report)
        sb_printf(cg->report, "  async copy at %d:%d: %lldx%lld, cp.async 16 B%s%s\n", op->loc.line, op->loc.col,
                  (long long)c.sv->rows, (long long)c.sv->cols, c.mask ? ", zero fill at the edges" : "",
                  interior_arm(cg, &c) ? " (an unmasked arm for windows wholly inside)" : "");
    return 0;
}

int cg_lower_async_sync(Cg *cg, Op *op)
{
    switch ((OpCode)op->code) {
    case OP_ASYNC_COMMIT:
        cg->tg->async_commit(cg);
        return 0;
    case OP_ASYNC_WAIT:
        cg->tg->async_wait(cg, (int)op->iattr[0]);
        return 0;
    case OP_BARRIER:
        if (!cg_chain_group_barrier(cg, op)) {
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
        if ((op->code == OP_DOT || op->code == OP_DOT_ASYNC || op->code == OP_TC_MMA) && i < 2)
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

bool cg_smem_load_is_view(Func *f, const Op *op)
{
    const Type *t = ir_type(f, op->res[0]);
    return t->kind == TY_TILE && t->rank == 2 && dot_only(f, op->res[0]);
}

bool cg_smem_load_to_regs(Func *f, const Op *op)
{
    return op->code == OP_SMEM_LOAD && !cg_smem_load_is_view(f, op);
}

int cg_lower_smem_load(Cg *cg, Op *op)
{
    const SmemView *sv = slot_view(cg, op, op->args[0], op->args[1]);
    const Type *t = ir_type(cg->f, op->res[0]);
    if (!sv)
        return 1;
    if (cg_smem_load_is_view(cg->f, op)) {
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
