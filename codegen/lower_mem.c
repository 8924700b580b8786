/* lower_mem.c - LOAD / STORE of tile windows of global tensors.
 *
 * Element (tile coordinate c) of a window at offsets o lives at
 * base + sum_d (o_d + c_k(d)) * stride_d (i64, stride of the last dim = 1).
 * When the layout gives each thread `vec` contiguous elements along a
 * stride-1 last dim, the access is one 16-byte vector per group; that path
 * runs when every row start is aligned (one uniform runtime test of the
 * strides and the last offset; the runtime guarantees 16-byte aligned base
 * pointers), else one small runtime loop moves element e of every group
 * per iteration (groups packed in vectors). Masked dims (iattr[0] bit d)
 * are predicated: loads read a safe address and select `other` (or zero),
 * stores are skipped. A vector load is branch free: an aligned 16-byte
 * chunk whose first element is inside the tensor is read whole and the
 * elements past the end replaced; the groups of a store that straddle
 * the end go through the same element loop. Loads of tensors the kernel never writes carry
 * !invariant.load (ld.global.nc). With a zero `other`, the row tail of a
 * vector is cleared by word masks instead of per-element selects; stores
 * build each narrow group's vector once, before their branches. A rank-1
 * window at an offset known to be a multiple of the vector gets no
 * alignment test and no unaligned path. A row window with a masked last
 * dim loads with no masks at all when that dim lies wholly inside the row
 * (one uniform test, ahead of the alignment branch).
 */
#include "cg_internal.h"

#include <stdlib.h>
#include <string.h>


typedef struct Access {
    Op *op;
    const Type *tt;                 /* tensor type */
    TensorArg *ta;
    int rank;                       /* tensor rank */
    int tdim[TILE_MAXRANK];         /* tile dim k -> tensor dim */
    int ntile;
    LLVMValueRef off[TENSOR_MAXRANK];
    unsigned mask;
    DType dt;
    LLVMTypeRef mty;                /* in-memory element type */
    bool readonly;                  /* the kernel never stores to this tensor */
    bool dead_tail;                 /* lanes past the last dim are never observed (dead_tail) */
} Access;

typedef struct StoreFind { ValId t; bool found; } StoreFind;

static bool store_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    StoreFind *s = ctx;
    if (op->code == OP_STORE && op->args[0] == s->t)
        s->found = true;
    return !s->found;
}

/* A tensor the kernel never stores to is read-only for the whole launch
 * (params are noalias): its loads may use the non-coherent path (ld.global.nc). */
bool cg_tensor_readonly(Cg *cg, ValId t)
{
    StoreFind s = { t, false };
    ir_walk(cg->f, &cg->f->body, store_visit, &s);
    return !s.found;
}

/* prefetch.global.L2 [p] (a hint: no value, no fault on the addresses
 * these callers form, which lie inside their tensors). */
static void prefetch_l2(Cg *cg, LLVMValueRef p)
{
    LLVMTypeRef pt = LLVMTypeOf(p);
    LLVMTypeRef fty = LLVMFunctionType(cg->t_void, &pt, 1, 0);
    LLVMValueRef as = LLVMGetInlineAsm(fty, (char *)"prefetch.global.L2 [$0];", 24, (char *)"l", 1, 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMBuildCall2(cg->b, fty, as, &p, 1, "");
}

static int access_init(Cg *cg, Op *op, Access *ac, int ntile)
{
    Func *f = cg->f;
    ac->op = op;
    ac->tt = ir_type(f, op->args[0]);
    ac->ta = &cg->tens[op->args[0]];
    ac->rank = ac->tt->rank;
    ac->dt = (DType)ac->tt->dtype;
    ac->mty = cg_mem_type(cg, ac->dt);
    ac->mask = (unsigned)op->iattr[0];
    ac->readonly = op->code == OP_LOAD && cg_tensor_readonly(cg, op->args[0]);
    ac->ntile = 0;
    ac->dead_tail = false;
    if (ac->tt->kind != TY_TENSOR || op->nlist != ac->rank || op->nargs < 1 + ac->rank) {
        diag_internal(cg->d, op->loc, "malformed %s", op_info[op->code].name);
        return 1;
    }
    for (int d = 0; d < ac->rank; d++) {
        ac->off[d] = cg->vals[op->args[1 + d]].s;
        if (op->list[d] > 0 && ac->ntile < TILE_MAXRANK)
            ac->tdim[ac->ntile++] = d;
    }
    if (ac->ntile != ntile) {
        diag_internal(cg->d, op->loc, "window keeps %d dims but the tile has rank %d", ac->ntile, ntile);
        return 1;
    }
    return 0;
}

static bool last_contiguous(const Access *ac)
{
    return ac->ntile > 0 && ac->tdim[ac->ntile - 1] == ac->rank - 1;
}

/* Elements per vector access: the layout's contiguous run, at most 16 bytes. */
static int access_vec(const Access *ac, const Layout *L)
{
    if (!last_contiguous(ac))
        return 1;
    int v = layout_vec(L), cap = 128 / (dtype_bits(ac->dt) ? dtype_bits(ac->dt) : 8);
    return v < cap ? v : cap;
}

/* Tensor indices (i32) of register r's element. */
static void reg_index(Cg *cg, const Access *ac, const Layout *L, int r, LLVMValueRef *idx)
{
    for (int d = 0; d < ac->rank; d++)
        idx[d] = ac->off[d];
    for (int k = 0; k < ac->ntile; k++) {
        int d = ac->tdim[k];
        idx[d] = cg_simt_kernel(cg) ? LLVMBuildNSWAdd(cg->b, ac->off[d], cg_coord(cg, L, r, k), "")
                                    : LLVMBuildAdd(cg->b, ac->off[d], cg_coord(cg, L, r, k), "");
    }
}

LLVMValueRef cg_tensor_elem_ptr(Cg *cg, const TensorArg *ta, LLVMTypeRef ety, int rank,
                                LLVMValueRef *idx)
{
    LLVMValueRef o = NULL;
    for (int d = 0; d < rank; d++) {
        LLVMValueRef x = LLVMBuildSExt(cg->b, idx[d], cg->t_i64, "");
        if (d + 1 < rank)
            x = LLVMBuildMul(cg->b, x, ta->stride[d], "");
        o = o ? LLVMBuildAdd(cg->b, o, x, "") : x;
    }
    if (!o)
        o = cg_i64(cg, 0);
    return LLVMBuildGEP2(cg->b, ety, ta->base, &o, 1, "");
}

static LLVMValueRef elem_addr(Cg *cg, const Access *ac, LLVMValueRef *idx)
{
    return cg_tensor_elem_ptr(cg, ac->ta, ac->mty, ac->rank, idx);
}

static LLVMValueRef in_bounds_upto(Cg *cg, const Access *ac, LLVMValueRef *idx, int nd)
{
    LLVMValueRef ok = LLVMConstInt(cg->t_i1, 1, 0);
    for (int d = 0; d < nd; d++)
        if (ac->mask >> d & 1)
            ok = LLVMBuildAnd(cg->b, ok, LLVMBuildICmp(cg->b, LLVMIntULT, idx[d], ac->ta->size[d], ""), "");
    return ok;
}

static LLVMValueRef in_bounds(Cg *cg, const Access *ac, LLVMValueRef *idx)
{
    return in_bounds_upto(cg, ac, idx, ac->rank);
}

static bool last_masked(const Access *ac) { return ac->mask >> (ac->rank - 1) & 1; }

/* i1: is last-dim index idx_last + k inside the tensor? */
static LLVMValueRef last_ok(Cg *cg, const Access *ac, LLVMValueRef *idx, int k)
{
    LLVMValueRef i = LLVMBuildAdd(cg->b, idx[ac->rank - 1], cg_i32(cg, k), "");
    return LLVMBuildICmp(cg->b, LLVMIntULT, i, ac->ta->size[ac->rank - 1], "");
}

/* Two-way branch on c; returns the join block's phis of the two value sets.
 * With group > 1, narrow elements (16-bit, 8-bit) cross the join as vectors
 * of `group` (packed registers) and are taken apart after it. */
typedef void (*ArmFn)(Cg *cg, void *ctx, int arm, LLVMValueRef *out);
/* The vector (of type vt) whose elements 0..n-1 the values x[] are, when
 * each is `extractelement W, e` of one W: an arm's loaded vector, passed to
 * the join's phi as it is instead of rebuilt element by element. */
static LLVMValueRef whole_vector(LLVMValueRef *x, int n, LLVMTypeRef vt)
{
    LLVMValueRef w = NULL;
    for (int e = 0; e < n; e++) {
        if (!LLVMIsAInstruction(x[e]) || LLVMGetInstructionOpcode(x[e]) != LLVMExtractElement)
            return NULL;
        LLVMValueRef src = LLVMGetOperand(x[e], 0), idx = LLVMGetOperand(x[e], 1);
        if ((w && src != w) || LLVMTypeOf(src) != vt || !LLVMIsAConstantInt(idx) ||
            LLVMConstIntGetZExtValue(idx) != (unsigned long long)e)
            return NULL;
        w = src;
    }
    return w;
}

static void diamond(Cg *cg, LLVMValueRef c, int n, int group, ArmFn fn, void *ctx, LLVMValueRef *out)
{
    LLVMBasicBlockRef bb[2] = { cg_new_block(cg, "a"), cg_new_block(cg, "b") }, join = cg_new_block(cg, "j");
    LLVMValueRef *v[2];
    LLVMBuildCondBr(cg->b, c, bb[0], bb[1]);
    for (int k = 0; k < 2; k++) {
        v[k] = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)(n + 1));
        LLVMPositionBuilderAtEnd(cg->b, bb[k]);
        fn(cg, ctx, k, v[k]);
        bb[k] = LLVMGetInsertBlock(cg->b);
    }
    LLVMTypeRef et = LLVMTypeOf(v[0][0]);
    bool pack = group > 1 && n % group == 0 && LLVMGetTypeKind(et) != LLVMIntegerTypeKind &&
                LLVMGetTypeKind(et) != LLVMFloatTypeKind && LLVMGetTypeKind(et) != LLVMDoubleTypeKind;
    if (!pack)
        group = 1;
    for (int k = 0; k < 2; k++) {
        LLVMPositionBuilderAtEnd(cg->b, bb[k]);
        for (int i = 0; pack && i < n; i += group) {
            LLVMTypeRef vt = LLVMVectorType(et, (unsigned)group);
            LLVMValueRef w = whole_vector(v[k] + i, group, vt);
            if (!w) {
                w = LLVMGetUndef(vt);
                for (int e = 0; e < group; e++)
                    w = LLVMBuildInsertElement(cg->b, w, v[k][i + e], cg_i32(cg, e), "");
            }
            v[k][i] = w;
        }
        LLVMBuildBr(cg->b, join);
    }
    LLVMPositionBuilderAtEnd(cg->b, join);
    for (int i = 0; i < n; i += group) {   /* every phi first, then the extracts */
        out[i] = LLVMBuildPhi(cg->b, LLVMTypeOf(v[0][i]), "");
        LLVMValueRef in[2] = { v[0][i], v[1][i] };
        LLVMAddIncoming(out[i], in, bb, 2);
    }
    for (int i = 0; pack && i < n; i += group)
        for (int e = group - 1; e >= 0; e--)
            out[i + e] = LLVMBuildExtractElement(cg->b, out[i], cg_i32(cg, e), "");
}

/* A power of two that the i32 scalar v is known to be a multiple of (from
 * its Tile IR: constants, block ids times constants, sums), at most 2^20. */
static int64_t known_multiple(Func *f, ValId v, int depth)
{
    const int64_t cap = (int64_t)1 << 20;
    Op *d = v ? ir_val(f, v)->def : NULL;
    if (!d || depth > 16 || d->nres != 1 || ir_type(f, v)->kind == TY_TILE)
        return 1;
    switch ((OpCode)d->code) {
    case OP_CONST: {
        int64_t c = d->iattr[0], m = 1;
        if (c == 0)
            return cap;
        while (m < cap && c % (m * 2) == 0)
            m *= 2;
        return m;
    }
    case OP_MUL: {
        int64_t m = known_multiple(f, d->args[0], depth + 1) * known_multiple(f, d->args[1], depth + 1);
        return m < cap ? m : cap;
    }
    case OP_ADD: case OP_SUB: {
        int64_t a = known_multiple(f, d->args[0], depth + 1), b = known_multiple(f, d->args[1], depth + 1);
        return a < b ? a : b;
    }
    default:
        return 1;
    }
}

/* i1: may this access use 16-byte vectors of `vec` elements? A constant
 * true when the last offset is a known multiple of vec and no row stride
 * is involved (rank 1): then only the vector path is emitted. */
static LLVMValueRef vec_ok(Cg *cg, const Access *ac, int vec)
{
    bool off_ok = cg_simt_kernel(cg) && known_multiple(cg->f, ac->op->args[ac->rank], 0) % vec == 0;
    if (off_ok && ac->rank == 1)
        return LLVMConstInt(cg->t_i1, 1, 0);
    LLVMValueRef bits = off_ok ? NULL : LLVMBuildSExt(cg->b, ac->off[ac->rank - 1], cg->t_i64, "");
    for (int d = 0; d + 1 < ac->rank; d++)
        bits = bits ? LLVMBuildOr(cg->b, bits, ac->ta->stride[d], "") : ac->ta->stride[d];
    bits = LLVMBuildAnd(cg->b, bits, cg_i64(cg, vec - 1), "");
    return LLVMBuildICmp(cg->b, LLVMIntEQ, bits, cg_i64(cg, 0), "vec.ok");
}

static bool is_true(LLVMValueRef v)
{
    return LLVMIsAConstantInt(v) && LLVMConstIntGetZExtValue(v) == 1;
}

static LLVMValueRef from_mem(Cg *cg, LLVMValueRef v, DType dt)
{
    return dt == DT_BOOL ? LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->t_i8, 0, 0), "") : v;
}

static LLVMValueRef to_mem(Cg *cg, LLVMValueRef v, DType dt)
{
    return dt == DT_BOOL ? LLVMBuildZExt(cg->b, v, cg->t_i8, "") : v;
}

/* i1: does the window's whole last-dim range lie inside the tensor? */
static LLVMValueRef last_full(Cg *cg, const Access *ac)
{
    int d = ac->rank - 1;
    LLVMValueRef end = LLVMBuildAdd(cg->b, LLVMBuildSExt(cg->b, ac->off[d], cg->t_i64, ""),
                                    cg_i64(cg, ac->op->list[d]), "");
    LLVMValueRef lo = LLVMBuildICmp(cg->b, LLVMIntSGE, ac->off[d], cg_i32(cg, 0), "");
    LLVMValueRef hi = LLVMBuildICmp(cg->b, LLVMIntSLE, end, LLVMBuildSExt(cg->b, ac->ta->size[d], cg->t_i64, ""), "");
    return LLVMBuildAnd(cg->b, lo, hi, "");
}

/* ---- loads ---- */

/* A whole vector of type ty (`bytes` long) at p. */
static LLVMValueRef load_vec_value(Cg *cg, const Access *ac, LLVMTypeRef ty, LLVMValueRef p, int bytes, bool vol,
                                   bool vector)
{
    LLVMValueRef v = LLVMBuildLoad2(cg->b, ty, p, "");
    LLVMSetVolatile(v, vol);
    LLVMSetAlignment(v, (unsigned)(bytes > 0 ? bytes : 1));
    if (ac->readonly && !vol) {
        unsigned kind = LLVMGetMDKindIDInContext(cg->ctx, "invariant.load", 14);
        LLVMSetMetadata(v, kind, LLVMMetadataAsValue(cg->ctx, LLVMMDNodeInContext2(cg->ctx, NULL, 0)));
    }
    return v;
}

/* Load `n` elements at p (a vector when n > 1); returns the elements. */
static void load_raw(Cg *cg, const Access *ac, LLVMValueRef p, int n, bool vol, LLVMValueRef *out)
{
    LLVMTypeRef ty = n > 1 ? LLVMVectorType(ac->mty, (unsigned)n) : ac->mty;
    LLVMValueRef v = load_vec_value(cg, ac, ty, p, n * dtype_bits(ac->dt) / 8, vol, n > 1);
    for (int i = 0; i < n; i++)
        out[i] = from_mem(cg, n > 1 ? LLVMBuildExtractElement(cg->b, v, cg_i32(cg, i), "") : v, ac->dt);
}

/* One element at p if pred, else `other` (the address is made safe first). */
static LLVMValueRef load_elem(Cg *cg, const Access *ac, LLVMValueRef p, LLVMValueRef pred, LLVMValueRef other,
                              bool vol)
{
    LLVMValueRef v;
    if (!is_true(pred))
        p = LLVMBuildSelect(cg->b, pred, p, ac->ta->base, "");
    load_raw(cg, ac, p, 1, vol, &v);
    return is_true(pred) ? v : LLVMBuildSelect(cg->b, pred, v, other, "");
}

/* Element by element (no vector access applies). */
static void load_elems(Cg *cg, const Access *ac, const Layout *L, LLVMValueRef *other, LLVMValueRef *out)
{
    LLVMValueRef idx[TENSOR_MAXRANK];
    for (int r = 0, n = layout_nregs(L); r < n; r++) {
        reg_index(cg, ac, L, r, idx);
        LLVMValueRef p = elem_addr(cg, ac, idx);
        out[r] = load_elem(cg, ac, p, in_bounds(cg, ac, idx), other[r], false);
    }
}

/* 16-byte vectors, branch free, all in one basic block (so they are all in
 * flight together). Rows and offsets are vector-aligned here, so a vector is
 * one aligned 16-byte chunk: when its first element is inside the tensor the
 * chunk cannot cross into unmapped memory, and it is loaded whole; elements
 * past the end of a masked last dim are then replaced by `other`. */
/* Word w of the splat `other` (uniform), as 32 bits. */
static LLVMValueRef other_word(Cg *cg, const Access *ac, LLVMValueRef uother)
{
    int bits = dtype_bits(ac->dt);
    LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)bits);
    LLVMValueRef x = LLVMBuildZExt(cg->b, LLVMBuildBitCast(cg->b, uother, it, ""), cg->t_i32, ""), w = x;
    for (int sh = bits; sh < 32; sh += bits)
        w = LLVMBuildOr(cg->b, w, LLVMBuildShl(cg->b, x, cg_i32(cg, sh), ""), "");
    return w;
}

/* The tail of a masked row, on the packed 32-bit words of the vector: the
 * elements at or past k = size - index (0 when the row is out) take the
 * uniform `other` by and/or masks, so no per-element predicate outlives
 * the load (a select per element would be moved past the widening cast,
 * keeping 32 predicates live until the use). */
static LLVMValueRef mask_words(Cg *cg, const Access *ac, LLVMValueRef v, int vec, LLVMValueRef k, LLVMValueRef ow)
{
    int bits = dtype_bits(ac->dt), epw = 32 / bits, nw = vec / epw;
    LLVMTypeRef wt = LLVMVectorType(cg->t_i32, (unsigned)nw);
    LLVMValueRef w = LLVMBuildBitCast(cg->b, v, wt, "");
    for (int j = 0; j < nw; j++) {
        /* k inside means every lower element is: element e selects the
         * constant mask of elements 0..e (one compare + select each). */
        LLVMValueRef m = cg_i32(cg, 0);
        for (int e = 0; e < epw; e++) {
            uint32_t upto = (e + 1) * bits >= 32 ? 0xffffffffu : (1u << ((e + 1) * bits)) - 1;
            LLVMValueRef ok = LLVMBuildICmp(cg->b, LLVMIntSGT, k, cg_i32(cg, j * epw + e), "");
            m = LLVMBuildSelect(cg->b, ok, cg_i32(cg, (int32_t)upto), m, "");
        }
        LLVMValueRef x = LLVMBuildExtractElement(cg->b, w, cg_i32(cg, j), "");
        x = LLVMBuildAnd(cg->b, x, m, "");
        if (ow)
            x = LLVMBuildOr(cg->b, x, LLVMBuildAnd(cg->b, ow, LLVMBuildNot(cg->b, m, ""), ""), "");
        w = LLVMBuildInsertElement(cg->b, w, x, cg_i32(cg, j), "");
    }
    return LLVMBuildBitCast(cg->b, w, LLVMTypeOf(v), "");
}

/* Elements of the row left from idx's last-dim index: size - index, or 0
 * when the group's row is out (pred false) or the index is negative. */
static LLVMValueRef row_room(Cg *cg, const Access *ac, LLVMValueRef *idx, LLVMValueRef pred)
{
    LLVMValueRef k = LLVMBuildSub(cg->b, ac->ta->size[ac->rank - 1], idx[ac->rank - 1], "");
    pred = LLVMBuildAnd(cg->b, pred, last_ok(cg, ac, idx, 0), "");   /* also rejects idx < 0 */
    return LLVMBuildSelect(cg->b, pred, k, cg_i32(cg, 0), "");
}

/* The start of an exact group's asm block: %pf = "the group moves whole"
 * (k = $ik >= vec, and $ia != 0 when ia >= 0: the alignment flag). */
static size_t exact_head(char *code, size_t size, int bits, int vec, int ik, int ia)
{
    size_t n = (size_t)snprintf(code, size, "{\n.reg .pred %%pf, %%pe;\n");
    if (bits == 16)
        n += (size_t)snprintf(code + n, size - n, ".reg .b16 %%h<%d>;\n", vec);
    if (ia >= 0)
        n += (size_t)snprintf(code + n, size - n, "setp.ne.s32 %%pe, $%d, 0;\nsetp.ge.and.s32 %%pf, $%d, %d, %%pe;\n",
                              ia, ik, vec);
    else
        n += (size_t)snprintf(code + n, size - n, "setp.ge.s32 %%pf, $%d, %d;\n", ik, vec);
    return n;
}

/* An exact group's asm constraints: nw 32-bit words (`word`: "=r" out,
 * "r" in), then `rest` (the address, k and the optional operands). */
static size_t exact_cons(char *cons, size_t size, int nw, const char *word, const char *rest)
{
    size_t c = 0;
    for (int j = 0; j < nw; j++)
        c += (size_t)snprintf(cons + c, size - c, "%s,", word);
    return c + (size_t)snprintf(cons + c, size - c, "%s", rest);
}

/* Element-exact groups: 16- or 32-bit elements, whole words, at most 16
 * bytes. */
static bool exact_group_ok(const Access *ac, int vec)
{
    int bits = dtype_bits(ac->dt);
    return ac->dt != DT_BOOL && (bits == 16 || bits == 32) &&
           vec * bits % 32 == 0 && vec * bits <= 128;
}

/* One group of `vec` 16- or 32-bit elements at p whose first k lie inside
 * (k <= 0: none), element-exact: when k >= vec and the group is aligned
 * (`aligned`: an i1, NULL when known) one whole-vector load, else a load
 * of each element below k (any alignment) and `uother` (zero when NULL) in
 * the rest, behind a branch inside one inline asm block (labels in a { }
 * block are local to it). Nothing past the tensor's end is read, so
 * compute-sanitizer's memcheck has nothing to report, and LLVM sees one
 * call per group instead of the compares, selects and word masks of the
 * branch-free form or an element loop. Returns the elements (memory type). */
static void load_group_exact(Cg *cg, const Access *ac, LLVMValueRef p, LLVMValueRef k, int vec, LLVMValueRef uother,
                             LLVMValueRef aligned, LLVMValueRef *out)
{
    int bits = dtype_bits(ac->dt), bytes = bits / 8, nw = vec * bits / 32;
    bool other = uother && !LLVMIsNull(uother);
    if (aligned && is_true(aligned))
        aligned = NULL;
    /* Operands: the nw words out, then p, k, [other], [aligned]. */
    int ip = nw, ik = nw + 1, io = other ? nw + 2 : -1, ia = aligned ? nw + 2 + other : -1;
    const char *q = ac->readonly ? ".nc" : "";
    char code[2048];
    size_t n = exact_head(code, sizeof code, bits, vec, ik, ia);
#define EMIT(...) n += (size_t)snprintf(code + n, sizeof code - n, __VA_ARGS__)
    EMIT("@!%%pf bra PART;\n");
    if (nw == 1)
        EMIT("ld.global%s.b32 $0, [$%d];\n", q, ip);
    else {
        EMIT("ld.global%s.v%d.b32 {", q, nw);
        for (int j = 0; j < nw; j++)
            EMIT("%s$%d", j ? ", " : "", j);
        EMIT("}, [$%d];\n", ip);
    }
    EMIT("bra DONE;\nPART:\n");
    const char *dst = bits == 16 ? "%h" : "$";
    for (int e = 0; e < vec; e++) {
        if (other)
            EMIT("mov.b%d %s%d, $%d;\n", bits, dst, e, io);
        else
            EMIT("mov.b%d %s%d, 0;\n", bits, dst, e);
    }
    for (int e = 0; e < vec; e++)
        EMIT("setp.gt.s32 %%pe, $%d, %d;\n@%%pe ld.global%s.b%d %s%d, [$%d+%d];\n", ik, e,
             ac->readonly ? ".nc" : "", bits, dst, e, ip, e * bytes);
    for (int j = 0; bits == 16 && j < nw; j++)
        EMIT("mov.b32 $%d, {%%h%d, %%h%d};\n", j, 2 * j, 2 * j + 1);
    EMIT("DONE:\n}");
#undef EMIT
    char cons[256];
    char tail[32];
    snprintf(tail, sizeof tail, "l,r%s%s", other ? (bits == 16 ? ",h" : ",r") : "", aligned ? ",r" : "");
    size_t c = exact_cons(cons, sizeof cons, nw, "=r", tail);
    LLVMTypeRef it = LLVMIntTypeInContext(cg->ctx, (unsigned)bits);
    LLVMTypeRef el[4] = { cg->t_i32, cg->t_i32, cg->t_i32, cg->t_i32 };
    LLVMTypeRef rt = nw == 1 ? cg->t_i32 : LLVMStructTypeInContext(cg->ctx, el, (unsigned)nw, 0);
    LLVMValueRef args[4];
    LLVMTypeRef at[4];
    unsigned na = 0;
    args[na] = p, at[na++] = LLVMTypeOf(p);
    args[na] = k, at[na++] = cg->t_i32;
    if (other)
        args[na] = LLVMBuildBitCast(cg->b, uother, it, ""), at[na++] = it;
    if (aligned)
        args[na] = LLVMBuildZExt(cg->b, aligned, cg->t_i32, ""), at[na++] = cg->t_i32;
    LLVMTypeRef ft = LLVMFunctionType(rt, at, na, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(ft, code, n, cons, c, 0, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef r = LLVMBuildCall2(cg->b, ft, fn, args, na, "");
    /* The words as one vector of the group's elements, taken apart: a
     * diamond's join (whole_vector) then passes that vector to its phi. */
    LLVMValueRef w = r;
    if (nw > 1) {
        w = LLVMGetUndef(LLVMVectorType(cg->t_i32, (unsigned)nw));
        for (int j = 0; j < nw; j++)
            w = LLVMBuildInsertElement(cg->b, w, LLVMBuildExtractValue(cg->b, r, (unsigned)j, ""), cg_i32(cg, j), "");
    }
    w = LLVMBuildBitCast(cg->b, w, LLVMVectorType(ac->mty, (unsigned)vec), "");
    for (int e = 0; e < vec; e++)
        out[e] = LLVMBuildExtractElement(cg->b, w, cg_i32(cg, e), "");
}

/* Masked vectors with a uniform `other` (or zero): one load, word masks. */
static void load_vecs_masked(Cg *cg, const Access *ac, const Layout *L, int vec, LLVMValueRef uother, bool exact,
                             LLVMValueRef aligned, LLVMValueRef *out)
{
    LLVMValueRef idx[TENSOR_MAXRANK];
    LLVMValueRef ow = uother && !LLVMIsNull(uother) ? other_word(cg, ac, uother) : NULL;
    LLVMTypeRef ty = LLVMVectorType(ac->mty, (unsigned)vec);
    for (int r = 0, n = layout_nregs(L); r < n; r += vec) {
        reg_index(cg, ac, L, r, idx);
        LLVMValueRef p = elem_addr(cg, ac, idx), k = row_room(cg, ac, idx, in_bounds_upto(cg, ac, idx, ac->rank - 1));
        if (exact) {
            load_group_exact(cg, ac, p, k, vec, uother, aligned, &out[r]);
            continue;
        }
        p = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT, k, cg_i32(cg, 0), ""), p, ac->ta->base, "");
        LLVMValueRef v = load_vec_value(cg, ac, ty, p, vec * dtype_bits(ac->dt) / 8, false, true);
        if (!ac->dead_tail)
            v = mask_words(cg, ac, v, vec, k, ow);
        for (int e = 0; e < vec; e++)
            out[r + e] = LLVMBuildExtractElement(cg->b, v, cg_i32(cg, e), "");
    }
}

static void load_vecs(Cg *cg, const Access *ac, const Layout *L, int vec, LLVMValueRef *other, LLVMValueRef *out)
{
    LLVMValueRef idx[TENSOR_MAXRANK];
    for (int r = 0, n = layout_nregs(L); r < n; r += vec) {
        reg_index(cg, ac, L, r, idx);
        LLVMValueRef p = elem_addr(cg, ac, idx), pred = in_bounds_upto(cg, ac, idx, ac->rank - 1);
        if (last_masked(ac))
            pred = LLVMBuildAnd(cg->b, pred, last_ok(cg, ac, idx, 0), "");
        if (!is_true(pred))
            p = LLVMBuildSelect(cg->b, pred, p, ac->ta->base, "");
        load_raw(cg, ac, p, vec, false, &out[r]);
        for (int e = 0; e < vec && !ac->dead_tail; e++) {
            LLVMValueRef ok = pred;
            if (last_masked(ac) && e > 0)
                ok = LLVMBuildAnd(cg->b, pred, last_ok(cg, ac, idx, e), "");
            if (!is_true(ok))
                out[r + e] = LLVMBuildSelect(cg->b, ok, out[r + e], other[r + e], "");
        }
    }
}

/* ---- the unaligned path: one small loop over the elements of a vector ----
 *
 * When a row start is not vector-aligned, every `vec`-element group is
 * moved one element per iteration of a runtime loop of `vec` iterations
 * (all groups of the tile in the same loop). A group's elements travel
 * packed in one integer of vec * element bits, shifted by one element per
 * iteration (constant shifts), so the loop body indexes no register at run
 * time and its size does not grow with the vector width: the fallback
 * costs a few instructions per group instead of a few per element. */
typedef struct GroupLoop {
    int ng;                          /* groups (vectors) in the tile */
    int vec;
    LLVMTypeRef wt;                  /* a group: vector of vec memory elements */
    LLVMValueRef *p, *i, *rows;      /* per group: address of element 0, its last index, row predicate */
    LLVMBasicBlockRef head;
    LLVMValueRef e;                  /* iteration: element within the group (the phi) */
    LLVMValueRef eb;                 /* the same, as the body uses it (opaque copy) */
    int *j0;                         /* per group: the group whose row it shares (its own index: none) */
    int64_t *dcol;                   /* and the column distance to that group */
    LLVMValueRef *pe;                /* per group j0: p[j0] + the element index, this iteration */
    LLVMValueRef *ie;                /* per group j0: i[j0] + the element index, this iteration */
} GroupLoop;

/* The parent dims of L's rows and columns when register groups of one row
 * may address from each other: a 2-d tile of a tensor-core kernel, or a
 * 1-d tile of any kernel (*pr = -1: one row), over the tensor's last dim,
 * without wrap; *pc = -1 otherwise. */
static void row_dims(Cg *cg, const Access *ac, const Layout *L, int *pr, int *pc)
{
    *pr = *pc = -1;
    if (ac->ntile < 1 || ac->tdim[ac->ntile - 1] != ac->rank - 1)
        return;
    if (ac->ntile == 1) {
        int c = layout_pdim(L, 0);
        if (!layout_may_wrap(L, c))
            *pc = c;
        return;
    }
    if (cg_simt_kernel(cg) || ac->ntile != 2)
        return;
    int r = layout_pdim(L, 0), c = layout_pdim(L, 1);
    if (!layout_may_wrap(L, r) && !layout_may_wrap(L, c)) {
        *pr = r;
        *pc = c;
    }
}

/* The first group (of vec registers) before group j in j's row, or -1
 * (none, or pc < 0: no row-shared addressing; pr < 0: one row). */
static int row_first(const Layout *L, int vec, int j, int pr, int pc)
{
    for (int k = 0; pc >= 0 && k < j; k++)
        if (pr < 0 || cg_reg_offset(L, k * vec, pr) == cg_reg_offset(L, j * vec, pr))
            return k;
    return -1;
}

/* Group j's address: group j0's (ps[j0]) plus the compile-time column
 * distance (*dcol) when j0 >= 0, else from its indices (*dcol = 0). */
static LLVMValueRef group_addr(Cg *cg, const Access *ac, const Layout *L, int vec, int j, int j0, int pc,
                               LLVMValueRef *ps, LLVMValueRef *idx, int64_t *dcol)
{
    *dcol = 0;
    if (j0 < 0)
        return elem_addr(cg, ac, idx);
    *dcol = cg_reg_offset(L, j * vec, pc) - cg_reg_offset(L, j0 * vec, pc);
    LLVMValueRef d = cg_i64(cg, *dcol);
    return LLVMBuildGEP2(cg->b, ac->mty, ps[j0], &d, 1, "");
}

static void group_loop_init(Cg *cg, const Access *ac, const Layout *L, int vec, bool store, GroupLoop *g)
{
    LLVMValueRef idx[TENSOR_MAXRANK];
    g->vec = vec;
    g->ng = layout_nregs(L) / vec;
    g->wt = LLVMVectorType(ac->mty, (unsigned)vec);
    g->p = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)g->ng * 5);
    g->i = g->p + g->ng;
    g->rows = g->i + g->ng;
    g->pe = g->rows + g->ng;
    g->ie = g->pe + g->ng;
    g->j0 = arena_alloc(cg->a, sizeof(int) * (size_t)g->ng);
    g->dcol = arena_alloc(cg->a, sizeof(int64_t) * (size_t)g->ng);
    /* A group in the row of an earlier group (row_dims: 2-d tiles of
     * tensor-core kernels, 1-d tiles of any kernel), a compile-time column
     * distance away, addresses from that group's address plus a constant.
     * The element loops below index every group at the loop's index; with
     * one full address per group, the backend's
     * straight-line strength reduction searched them all for a basis, one
     * by one, which was over half of attention's PTX emission time
     * (docs/codegen.md), and found these constant distances in the end. */
    int pr, pc;
    row_dims(cg, ac, L, &pr, &pc);
    for (int j = 0; j < g->ng; j++) {
        reg_index(cg, ac, L, j * vec, idx);
        int j0 = row_first(L, vec, j, pr, pc);
        g->j0[j] = j0 >= 0 ? j0 : j;
        g->pe[j] = g->ie[j] = NULL;
        g->p[j] = group_addr(cg, ac, L, vec, j, j0, pc, g->p, idx, &g->dcol[j]);
        g->i[j] = idx[ac->rank - 1];
        g->rows[j] = in_bounds_upto(cg, ac, idx, ac->rank - 1);
        if (store)
            g->rows[j] = LLVMBuildAnd(cg->b, g->rows[j], cg_primary(cg, L, j * vec), "");
    }
}

/* Opens the loop: returns the block the loop is entered from. */
static LLVMBasicBlockRef group_loop_open(Cg *cg, GroupLoop *g)
{
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b);
    g->head = cg_new_block(cg, "el.loop");
    LLVMBuildBr(cg->b, g->head);
    LLVMPositionBuilderAtEnd(cg->b, g->head);
    g->e = LLVMBuildPhi(cg->b, cg->t_i32, "el");
    return pre;
}

/* Starts the body after the loop's phis. The body indexes with an opaque
 * copy of the counter (a PTX mov), so that the backend's loop strength
 * reduction sees no induction variable users: these loops run `vec`
 * iterations of a few instructions per group, LSR found nothing to gain
 * in them and its formula search was 10-25% of PTX emission time. */
static void group_loop_body(Cg *cg, GroupLoop *g)
{
    g->eb = g->e;
    if (!cg_simt_kernel(cg))
        return;
    LLVMTypeRef fty = LLVMFunctionType(cg->t_i32, &cg->t_i32, 1, 0);
    LLVMValueRef as = LLVMGetInlineAsm(fty, (char *)"mov.b32 $0, $1;", 15, (char *)"=r,r", 4, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    g->eb = LLVMBuildCall2(cg->b, fty, as, &g->e, 1, "el.b");
    unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6);
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddCallSiteAttribute(g->eb, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, mem, 0));
    LLVMAddCallSiteAttribute(g->eb, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, nounwind, 0));
}

/* Closes the loop; phis[0..n) start from init[0..n) and get their back-edge
 * values next[0..n). */
static void group_loop_close(Cg *cg, GroupLoop *g, LLVMBasicBlockRef pre, LLVMValueRef *phis, LLVMValueRef *init,
                             LLVMValueRef *next, int n)
{
    LLVMValueRef e1 = LLVMBuildAdd(cg->b, g->e, cg_i32(cg, 1), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b), exit = cg_new_block(cg, "el.done");
    LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntSLT, e1, cg_i32(cg, g->vec), ""), g->head, exit);
    LLVMValueRef zero = cg_i32(cg, 0);
    LLVMAddIncoming(g->e, &zero, &pre, 1);
    LLVMAddIncoming(g->e, &e1, &latch, 1);
    for (int k = 0; k < n; k++) {
        LLVMAddIncoming(phis[k], &init[k], &pre, 1);
        LLVMAddIncoming(phis[k], &next[k], &latch, 1);
    }
    LLVMPositionBuilderAtEnd(cg->b, exit);
}

/* The address of element e (this iteration) of group j: its row's first
 * group's (one GEP per row and iteration) plus the constant distance. */
static LLVMValueRef group_elem_ptr(Cg *cg, const Access *ac, GroupLoop *g, int j)
{
    int j0 = g->j0[j];
    if (!g->pe[j0])
        g->pe[j0] = LLVMBuildGEP2(cg->b, ac->mty, g->p[j0], &g->eb, 1, "");
    if (j0 == j)
        return g->pe[j0];
    LLVMValueRef d = cg_i64(cg, g->dcol[j]);
    return LLVMBuildGEP2(cg->b, ac->mty, g->pe[j0], &d, 1, "");
}

/* i1: is element e of group j inside the tensor (rows and last dim)? The
 * index, like the address, is its row's first group's (one add per row and
 * iteration) plus the constant distance: the groups' own indices would be
 * loop-invariant values live across the loop (the backend's straight-line
 * strength reduction rewrote them into this form). */
static LLVMValueRef group_elem_ok(Cg *cg, const Access *ac, GroupLoop *g, int j)
{
    if (!last_masked(ac))
        return g->rows[j];
    int j0 = g->j0[j];
    if (!g->ie[j0])
        g->ie[j0] = LLVMBuildAdd(cg->b, g->i[j0], g->eb, "");
    LLVMValueRef i = g->ie[j0];
    if (j0 != j)
        i = LLVMBuildAdd(cg->b, i, cg_i32(cg, g->dcol[j]), "");
    return LLVMBuildAnd(cg->b, g->rows[j],
                        LLVMBuildICmp(cg->b, LLVMIntULT, i, ac->ta->size[ac->rank - 1], ""), "");
}

/* The vector shifted down by one element; x (or undef) enters at the top. */
static LLVMValueRef group_shift(Cg *cg, const GroupLoop *g, LLVMValueRef w, LLVMValueRef x)
{
    LLVMValueRef m[64], top = LLVMGetUndef(g->wt);
    for (int e = 0; e < g->vec; e++)
        m[e] = cg_i32(cg, e + 1);
    if (x)
        top = LLVMBuildInsertElement(cg->b, top, x, cg_i32(cg, 0), "");
    return LLVMBuildShuffleVector(cg->b, w, top, LLVMConstVector(m, (unsigned)g->vec), "");
}

/* Packs `vec` register values (memory representation) into one vector. */
static LLVMValueRef group_pack(Cg *cg, const Access *ac, const GroupLoop *g, LLVMValueRef *v)
{
    LLVMValueRef w = ac->dt == DT_BOOL ? NULL : whole_vector(v, g->vec, g->wt);
    if (w)
        return w;
    w = LLVMGetUndef(g->wt);
    for (int e = 0; e < g->vec; e++)
        w = LLVMBuildInsertElement(cg->b, w, to_mem(cg, v[e], ac->dt), cg_i32(cg, e), "");
    return w;
}

/* Loads every group element by element; `other` is the uniform value (or
 * NULL: then other[] is packed and shifted along with the loaded values).
 * Iteration e loads element e of every group into the top of its vector
 * and shifts the vector down one element. */
static void load_loop(Cg *cg, const Access *ac, const Layout *L, int vec, LLVMValueRef *other, LLVMValueRef uother,
                      LLVMValueRef *out)
{
    GroupLoop g;
    group_loop_init(cg, ac, L, vec, false, &g);
    int ng = g.ng, np = uother ? ng : 2 * ng;
    /* phis: ng groups, then (non-uniform `other`) ng others */
    LLVMValueRef *phis = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)np * 3), *init = phis + np,
                 *next = init + np;
    for (int j = 0; j < ng; j++) {
        init[j] = LLVMGetUndef(g.wt);
        if (!uother)
            init[ng + j] = group_pack(cg, ac, &g, &other[j * vec]);
    }
    LLVMValueRef uo = uother ? to_mem(cg, uother, ac->dt) : NULL;
    LLVMBasicBlockRef pre = group_loop_open(cg, &g);
    for (int k = 0; k < np; k++)
        phis[k] = LLVMBuildPhi(cg->b, g.wt, "");
    group_loop_body(cg, &g);
    for (int j = 0; j < ng; j++) {
        LLVMValueRef ok = group_elem_ok(cg, ac, &g, j), x;
        LLVMValueRef p = group_elem_ptr(cg, ac, &g, j);
        if (!is_true(ok))
            p = LLVMBuildSelect(cg->b, ok, p, ac->ta->base, "");
        int bytes = dtype_bits(ac->dt) >= 8 ? dtype_bits(ac->dt) / 8 : 1;
        x = load_vec_value(cg, ac, ac->mty, p, bytes, false, false);
        if (!is_true(ok))
            x = LLVMBuildSelect(cg->b, ok, x,
                                uo ? uo : LLVMBuildExtractElement(cg->b, phis[ng + j], cg_i32(cg, 0), ""), "");
        next[j] = group_shift(cg, &g, phis[j], x);
        if (!uother)
            next[ng + j] = group_shift(cg, &g, phis[ng + j], NULL);
    }
    group_loop_close(cg, &g, pre, phis, init, next, np);
    for (int j = 0; j < ng; j++)
        for (int e = 0; e < vec; e++)
            out[j * vec + e] = from_mem(cg, LLVMBuildExtractElement(cg->b, next[j], cg_i32(cg, e), ""), ac->dt);
}

/* The groups (16-byte vectors) of a stored tile. Narrow (8/16-bit) groups
 * are built once, before the store's branches, and stored whole on every
 * path: the values then stay packed (two per 32-bit register) across the
 * branches instead of one register each, and no path rebuilds them. Wider
 * groups are built where they are stored (a <4 x float> built before the
 * branches crosses them as two 64-bit registers on sm_100, where v2f32 is
 * legal, and is stored as st.global.v2.b64). */
typedef struct Groups {
    LLVMValueRef *v;      /* per group: its vector, or NULL (built at the use) */
    LLVMValueRef *vals;   /* the register values */
    int vec;
} Groups;

static LLVMValueRef build_group(Cg *cg, const Access *ac, LLVMValueRef *vals, int vec)
{
    LLVMTypeRef vt = LLVMVectorType(ac->mty, (unsigned)vec);
    LLVMValueRef w = ac->dt == DT_BOOL ? NULL : whole_vector(vals, vec, vt);   /* a loaded vector, whole */
    if (w)
        return w;
    w = LLVMGetUndef(vt);
    for (int e = 0; e < vec; e++)
        w = LLVMBuildInsertElement(cg->b, w, to_mem(cg, vals[e], ac->dt), cg_i32(cg, e), "");
    return w;
}

static LLVMValueRef group_vec(Cg *cg, const Access *ac, const Groups *gs, int j)
{
    return gs->v[j] ? gs->v[j] : build_group(cg, ac, &gs->vals[j * gs->vec], gs->vec);
}

static Groups pack_groups(Cg *cg, const Access *ac, const Layout *L, int vec, LLVMValueRef *vals)
{
    int ng = layout_nregs(L) / vec;
    Groups gs = { arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)ng), vals, vec };
    bool narrow = dtype_bits(ac->dt) < 32 && ac->dt != DT_BOOL, simt = cg_simt_kernel(cg);
    if (narrow && !simt)   /* tensor-core kernels: the elements, taken out of the packed vector */
        gs.vals = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)ng * (size_t)vec);
    for (int j = 0; j < ng; j++) {
        gs.v[j] = narrow ? build_group(cg, ac, &vals[j * vec], vec) : NULL;
        for (int e = 0; narrow && !simt && e < vec; e++)
            gs.vals[j * vec + e] = LLVMBuildExtractElement(cg->b, gs.v[j], cg_i32(cg, e), "");
        if (!simt)
            gs.v[j] = NULL;
    }
    return gs;
}

/* Stores x (memory representation) at p if pred. */
static void store_raw(Cg *cg, const Access *ac, LLVMValueRef p, LLVMValueRef pred, LLVMValueRef x)
{
    LLVMBasicBlockRef cont = NULL;
    if (!is_true(pred)) {
        LLVMBasicBlockRef doit = cg_new_block(cg, "st.do");
        cont = cg_new_block(cg, "st.cont");
        LLVMBuildCondBr(cg->b, pred, doit, cont);
        LLVMPositionBuilderAtEnd(cg->b, doit);
    }
    LLVMValueRef st = LLVMBuildStore(cg->b, x, p);
    LLVMSetAlignment(st, (unsigned)(dtype_bits(ac->dt) >= 8 ? dtype_bits(ac->dt) / 8 : 1));
    if (cont) {
        LLVMBuildBr(cg->b, cont);
        LLVMPositionBuilderAtEnd(cg->b, cont);
    }
}

/* Stores every group (gs) element by element, except
 * groups `skip` says were stored whole (NULL: none). */
static void store_loop(Cg *cg, const Access *ac, const Layout *L, int vec, const Groups *gs, LLVMValueRef *skip)
{
    GroupLoop g;
    group_loop_init(cg, ac, L, vec, true, &g);
    int ng = g.ng;
    LLVMValueRef *init = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)ng * 3), *acc = init + ng,
                 *next = acc + ng;
    for (int j = 0; j < ng; j++) {
        init[j] = group_vec(cg, ac, gs, j);
        if (skip)
            g.rows[j] = LLVMBuildAnd(cg->b, g.rows[j], LLVMBuildNot(cg->b, skip[j], ""), "");
    }
    if (!cg_simt_kernel(cg) && vec <= 2) {
        /* Tensor-core kernels, pairs (bf16x2 accumulator fragments): the two
         * iterations written out, so that the backend's loop strength
         * reduction has no loop of ng groups to search formulas for and
         * every address is a constant away from its row's. Attention
         * sm_90a 144 -> 126 ms (D=128 200 -> 134) of compile time, no spills
         * on any sm_90a tile; on sm_86 (with the masks guarded in one loop,
         * mask_split.c) LSR was ~40% of llc's time on D=128 and the loop
         * form left 120-168 bytes of spills on D=64 BN=128 once ptxas
         * compiled the PTX for sm_90, the written-out form none
         * (docs/codegen.md). */
        for (int e = 0; e < vec; e++) {
            g.eb = cg_i32(cg, e);
            for (int j = 0; j < ng; j++)
                g.pe[j] = g.ie[j] = NULL;
            for (int j = 0; j < ng; j++) {
                LLVMValueRef x = LLVMBuildExtractElement(cg->b, init[j], cg_i32(cg, e), "");
                store_raw(cg, ac, group_elem_ptr(cg, ac, &g, j), group_elem_ok(cg, ac, &g, j), x);
            }
        }
        return;
    }
    LLVMBasicBlockRef pre = group_loop_open(cg, &g);
    for (int j = 0; j < ng; j++)
        acc[j] = LLVMBuildPhi(cg->b, g.wt, "");
    group_loop_body(cg, &g);
    for (int j = 0; j < ng; j++) {
        LLVMValueRef p = group_elem_ptr(cg, ac, &g, j);
        LLVMValueRef x = LLVMBuildExtractElement(cg->b, acc[j], cg_i32(cg, 0), "");
        store_raw(cg, ac, p, group_elem_ok(cg, ac, &g, j), x);
        next[j] = group_shift(cg, &g, acc[j], NULL);
    }
    group_loop_close(cg, &g, pre, acc, init, next, ng);
}

typedef struct TileCtx {
    const Access *ac;
    LLVMValueRef ok;         /* vector alignment test (vec_ok) */
    const Layout *L;
    int vec;
    LLVMValueRef *other;
    LLVMValueRef uother;     /* uniform `other` for word masks, or NULL */
    LLVMValueRef uniform;    /* uniform `other` (zero if none), or NULL */
    bool exact;              /* element-exact groups (a path behind a branch) */
    bool took_exact;         /* some path loaded element-exact groups */
    bool took_whole;         /* some masked path loaded whole aligned chunks */
} TileCtx;

/* Word masks when `other` is zero (one AND per word). With another value
 * (softmax's -inf) they cost and/andnot/or per word and measured 2% slower
 * on bf16 [16384] softmax than a select per element. */
static LLVMValueRef word_mask_other(LLVMValueRef uother)
{
    return uother && LLVMIsNull(uother) ? uother : NULL;
}

static bool word_maskable(const Access *ac, int vec)
{
    int bits = dtype_bits(ac->dt);
    return last_masked(ac) && ac->dt != DT_BOOL && bits >= 8 && bits <= 32 && vec * bits % 32 == 0;
}

static void tile_arm(Cg *cg, void *ctx, int arm, LLVMValueRef *out)
{
    TileCtx *t = ctx;
    if (arm == 0 && t->exact && t->uniform && last_masked(t->ac) && exact_group_ok(t->ac, t->vec)) {
        load_vecs_masked(cg, t->ac, t->L, t->vec, t->uniform, true, NULL, out);
        t->took_exact = true;
    } else if (arm == 0 && t->uother && word_maskable(t->ac, t->vec)) {
        load_vecs_masked(cg, t->ac, t->L, t->vec, t->uother, false, NULL, out);
        t->took_whole = true;
    } else if (arm == 0) {
        load_vecs(cg, t->ac, t->L, t->vec, t->other, out);
        t->took_whole |= last_masked(t->ac);
    } else {
        load_loop(cg, t->ac, t->L, t->vec, t->other, t->uniform, out);
    }
}

/* The aligned masked vectors, or (not aligned) the element loop. */
static void tile_general(Cg *cg, TileCtx *t, LLVMValueRef *out)
{
    if (is_true(t->ok))
        tile_arm(cg, t, 0, out);
    else if (t->uniform && last_masked(t->ac) && exact_group_ok(t->ac, t->vec)) {
        /* Element-exact groups take unaligned rows too: no element loop. */
        load_vecs_masked(cg, t->ac, t->L, t->vec, t->uniform, true, t->ok, out);
        t->took_exact = true;
    } else {
        t->exact = true;
        diamond(cg, t->ok, layout_nregs(t->L), t->vec, tile_arm, t, out);
    }
}

/* Arm 0: the row window lies wholly inside and is aligned: plain vectors,
 * no last-dim mask. Arm 1: the general paths. */
static void tile_full_arm(Cg *cg, void *ctx, int arm, LLVMValueRef *out)
{
    TileCtx *t = ctx;
    if (arm == 1) {
        t->exact = true;
        tile_general(cg, t, out);
        return;
    }
    Access inner = *t->ac;
    inner.mask &= ~(1u << (inner.rank - 1));
    load_vecs(cg, &inner, t->L, t->vec, t->other, out);
}

/* Element-exact groups on the branch-free path too? In kernels without a
 * register cap (.minnctapersm: vector_add) yes; under one (layernorm's W
 * and B, 2-8 groups per thread) the branch in each group cost ptxas
 * 104-196 B of spills, so those keep the whole aligned chunk
 * (docs/codegen.md, "Known"). */
static bool exact_hot(Cg *cg) { return cg->minct == 0; }

/* Three paths: when the window's last dim lies inside the row and rows are
 * aligned (one uniform test: the common case, BLOCK == N), unmasked
 * 16-byte vectors; when only aligned, masked vectors; else element by
 * element. The first arm is only added where the alignment test already
 * branches (a row window, X[row, 0 : +BLOCK]): a rank-1 window known to
 * be aligned keeps its branch-free masked vectors, since a new join there
 * (layernorm's W and B) makes the backend widen all of W before B's
 * branch, and bf16 [16384] then spills. */
static LLVMValueRef *load_tile(Cg *cg, const Access *ac, const Layout *L, LLVMValueRef *other, LLVMValueRef uother,
                               int *tail)
{
    int n = layout_nregs(L), vec = access_vec(ac, L);
    LLVMValueRef *out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    if (vec <= 1) {
        load_elems(cg, ac, L, other, out);
        return out;
    }
    TileCtx t = { ac, vec_ok(cg, ac, vec), L, vec, other, word_mask_other(uother), uother, exact_hot(cg), false, false };
    if (!last_masked(ac) || !cg_simt_kernel(cg) || is_true(t.ok)) {
        tile_general(cg, &t, out);
        *tail = t.took_exact * 1 + t.took_whole * 2;
        return out;
    }
    diamond(cg, LLVMBuildAnd(cg->b, t.ok, last_full(cg, ac), "ld.full"), n, vec, tile_full_arm, &t, out);
    *tail = t.took_exact * 1 + t.took_whole * 2;
    return out;
}

/* tail: 1 = the row tail moves element-exact (some path), 2 = a masked
 * path moves whole aligned chunks (dead: their lanes past the end unused). */
static void report_access(Cg *cg, Op *op, const char *what, const Layout *L, int vec, int tail, bool dead)
{
    if (!cg->report)
        return;
    sb_printf(cg->report, "  %s %s at %d:%d: ", what, ir_val(cg->f, op->args[0])->name ? ir_val(cg->f, op->args[0])->name : "?",
              op->loc.line, op->loc.col);
    layout_print(L, cg->report);
    sb_printf(cg->report, ", %d-byte accesses%s%s\n", vec * dtype_bits((DType)ir_type(cg->f, op->args[0])->dtype) / 8,
              op->iattr[0] ? ", masked" : "",
              (tail & 2) && dead ? " (lanes past the end unused: addresses guarded, values not)"
              : (tail & 2)       ? " (whole 16-byte chunks at the row end)"
              : (tail & 1)       ? " (element-exact at the row end)"
                                 : "");
}

/* ---- dead tail lanes ----
 * A masked load gives its lanes past the tensor's last dim the value
 * `other`. When the window is 1-d and masked in that dim only, and every
 * use of the loaded tile is an elementwise op on tiles of the same shape,
 * ending only in stores of 1-d windows over the same named last dim, from
 * the same start value (canonicalize's CSE gives equal constants one
 * value), masked there and nowhere else, then lane i of every
 * stored tile is written exactly where lane i of the load was inside: the
 * masked lanes' values are never observed, and the load need not set them
 * (layernorm's W and B: y = xc * r * w + b, stored to Y[row, 0 : +BLOCK]).
 * Only the values go: a 16-byte group wholly outside still reads nothing
 * (its address guard stays), and a group across the end reads the same
 * 16 aligned bytes as before. */
typedef struct DeadTail {
    const Op *load;
    uint8_t *taint;          /* per ValId: carries the load's lanes */
    bool ok;
} DeadTail;

/* A 1-d window over the tensor's last dim, masked there and nowhere else? */
static bool tail_window(const Func *f, const Op *op)
{
    const Type *tt = ir_type(f, op->args[0]);
    int r = tt->rank, kept = 0;
    if (r < 1 || op->nlist != r || op->list[r - 1] <= 0 || op->iattr[0] != (int64_t)1 << (r - 1) ||
        tt->dimsym[r - 1] < 0)
        return false;
    for (int d = 0; d < r; d++)
        kept += op->list[d] > 0;
    return kept == 1;
}

static bool dead_tail_visit(Func *f, Op *op, void *ctx)
{
    DeadTail *dt = ctx;
    int n = op->nargs, tainted = 0;
    for (int i = 0; i < n; i++)
        tainted += dt->taint[op->args[i]];
    if (!tainted)
        return true;
    const Op *ld = dt->load;
    if ((op_info[op->code].flags & OPF_ELEM) && op->nres == 1 &&
        type_same_shape(ir_type(f, op->res[0]), ir_type(f, ld->res[0]))) {
        dt->taint[op->res[0]] = 1;
        return true;
    }
    if (op->code == OP_STORE && tainted == 1 && dt->taint[op->args[n - 1]] && tail_window(f, op)) {
        const Type *lt = ir_type(f, ld->args[0]), *st = ir_type(f, op->args[0]);
        if (lt->dimsym[lt->rank - 1] == st->dimsym[st->rank - 1] &&
            ld->list[lt->rank - 1] == op->list[st->rank - 1] && ld->args[lt->rank] == op->args[st->rank])
            return true;
    }
    dt->ok = false;
    return false;
}

static bool dead_tail(Cg *cg, const Op *op)
{
    if (op->code != OP_LOAD || !tail_window(cg->f, op))
        return false;
    DeadTail dt = { op, calloc(cg->f->nvals, 1), true };
    if (!dt.taint)
        return false;
    dt.taint[op->res[0]] = 1;
    ir_walk(cg->f, &cg->f->body, dead_tail_visit, &dt);
    free(dt.taint);
    return dt.ok;
}

/* ---- L2 prefetch of the next wave's row ----
 * A kernel of one row per block (X[block.x, 0 : +BLOCK], a read-only
 * tensor, a 1-d grid, a register cap of one or two blocks per SM) loads its row and
 * then waits on reductions: with two blocks of 8 warps per SM little else
 * is in flight. Each block first asks L2 for the row that the block taking
 * its place will load: block.x + %nsmid x blocks per SM (the blocks of the
 * grid start in order as slots free up), one `prefetch.global.L2` per
 * 128-byte line, spread over the threads, only inside the tensor (rows <
 * M, columns < N). Measured on an H200 (bench/RESULTS.md 2026-12-01):
 * bf16 layernorm [8192 x 16384] 90.5% of copy bandwidth without it,
 * 91.4% with the prefetch before the row's own loads and 95.4% after them
 * (01:52, one run, the compiler's three forms side by side; 00:31 and
 * 00:27 agree: 89.6-90.1 / 91.7-92.1 / 94.5 by hand), so it goes after
 * the row's loads; two waves ahead 69%, so the kernel reads the SM count
 * (%nsmid) rather than assume one. Kernels with more blocks per SM lost:
 * softmax [16384] (3 blocks of 16 warps) 94.1% -> 75.8%, layernorm [4096]
 * (8 of 4) 93.4% -> 88.9%; they keep their loads alone. */
/* Is the kernel's grid one-dimensional (its y and z extents the constant
 * 1)? Then the blocks start in block.x order. */
static bool grid_1d(const Func *f)
{
    const Op *y = ir_block_yield(&f->grid);
    if (!y || y->nargs != 3)
        return false;
    for (int i = 1; i < 3; i++) {
        const Op *c = ir_val(f, y->args[i])->def;
        if (!c || c->code != OP_CONST || c->iattr[0] != 1)
            return false;
    }
    return true;
}

static bool prefetch_wanted(Cg *cg, const Access *ac, const Type *rt)
{
    if (!cg_simt_kernel(cg) || cg->minct <= 0 || cg->minct > 2 || cg->depth > 0 || !ac->readonly ||
        ac->op->code != OP_LOAD)
        return false;
    if (ac->rank != 2 || ac->ntile != 1 || ac->tdim[0] != 1 || rt->kind != TY_TILE || rt->rank != 1)
        return false;
    const Op *d = ir_val(cg->f, ac->op->args[1])->def;
    if (!d || d->code != OP_BLOCKID || d->iattr[0] != 0)
        return false;
    return grid_1d(cg->f);
}

/* Blocks per SM the distance counts: the register cap's, at most the
 * target's resident-block limit (fewer than resident is the safe side: a
 * row prefetched twice; more is not). */
static int prefetch_blocks(const Cg *cg)
{
    int n = cg->minct;
    if (n > cg->ti->lim.blocks_per_sm)
        n = cg->ti->lim.blocks_per_sm;
    return n;
}

static void prefetch_next_wave(Cg *cg, const Access *ac, int64_t elems)
{
    LLVMBuilderRef b = cg->b;
    int esize = dtype_bits(ac->dt) / 8;
    if (esize < 1)
        esize = 1;
    LLVMValueRef nsm = cg_call(cg, "llvm.nvvm.read.ptx.sreg.nsmid", cg->t_i32, NULL, 0);
    LLVMValueRef row = LLVMBuildAdd(b, ac->off[0], LLVMBuildMul(b, nsm, cg_i32(cg, prefetch_blocks(cg)), ""), "");
    LLVMValueRef room = LLVMBuildSub(b, ac->ta->size[1], ac->off[1], "");
    LLVMValueRef lim = cg_i32(cg, elems);
    LLVMValueRef n = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, room, lim, ""), room, lim, "");
    LLVMValueRef ok = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntULT, row, ac->ta->size[0], ""),
                                   LLVMBuildICmp(b, LLVMIntSGT, n, cg_i32(cg, 0), ""), "");
    LLVMBasicBlockRef doit = cg_new_block(cg, "l2pf"), cont = cg_new_block(cg, "l2pf.end");
    LLVMBuildCondBr(b, ok, doit, cont);
    LLVMPositionBuilderAtEnd(b, doit);
    LLVMValueRef idx[2] = { row, ac->off[1] };
    LLVMValueRef base = cg_tensor_elem_ptr(cg, ac->ta, ac->mty, 2, idx);
    LLVMValueRef bytes = LLVMBuildMul(b, n, cg_i32(cg, esize), "");
    LLVMValueRef last = LLVMBuildSub(b, bytes, cg_i32(cg, 1), "");
    LLVMValueRef span = LLVMBuildAdd(b, bytes, cg_i32(cg, 128), "");
    int nthreads = cg->nwarps * 32;
    int64_t lines = (elems * esize + 127) / 128 + 1, per_thread = (lines + nthreads - 1) / nthreads;
    for (int64_t k = 0; k < per_thread; k++) {
        LLVMValueRef line = LLVMBuildAdd(b, cg->tid, cg_i32(cg, k * nthreads), "");
        LLVMValueRef off = LLVMBuildMul(b, line, cg_i32(cg, 128), "");
        LLVMValueRef in = LLVMBuildICmp(b, LLVMIntSLT, off, span, "");
        LLVMValueRef at = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, off, last, ""), off, last, "");
        LLVMBasicBlockRef one = cg_new_block(cg, "l2pf.one"), next = cg_new_block(cg, "l2pf.next");
        LLVMBuildCondBr(b, in, one, next);
        LLVMPositionBuilderAtEnd(b, one);
        LLVMValueRef o64 = LLVMBuildZExt(b, at, cg->t_i64, "");
        prefetch_l2(cg, LLVMBuildGEP2(b, cg->t_i8, base, &o64, 1, ""));
        LLVMBuildBr(b, next);
        LLVMPositionBuilderAtEnd(b, next);
    }
    LLVMBuildBr(b, cont);
    LLVMPositionBuilderAtEnd(b, cont);
    if (cg->report) {
        char per[32] = "one line";
        if (per_thread > 1)
            snprintf(per, sizeof per, "%lld lines", (long long)per_thread);
        sb_printf(cg->report, "  load %s at %d:%d: the row block.x + %%nsmid x %d (the next wave's) "
                  "prefetched to L2 after the row's loads, %s per thread\n",
                  ir_val(cg->f, ac->op->args[0])->name ? ir_val(cg->f, ac->op->args[0])->name : "?",
                  ac->op->loc.line, ac->op->loc.col, prefetch_blocks(cg), per);
    }
}

int cg_lower_load(Cg *cg, Op *op)
{
    const Type *rt = ir_type(cg->f, op->res[0]);
    Access ac;
    if (access_init(cg, op, &ac, rt->kind == TY_TILE ? rt->rank : 0))
        return 1;
    ac.dead_tail = rt->kind == TY_TILE && dead_tail(cg, op);
    LLVMValueRef zero = LLVMConstNull(cg_type(cg, ac.dt));
    const TileVal *ov = op->iattr[1] ? &cg->vals[op->args[op->nargs - 1]] : NULL;
    if (rt->kind != TY_TILE) {
        LLVMValueRef idx[TENSOR_MAXRANK], out, other = ov ? ov->s : zero;
        for (int d = 0; d < ac.rank; d++)
            idx[d] = ac.off[d];
        out = load_elem(cg, &ac, elem_addr(cg, &ac, idx), in_bounds(cg, &ac, idx), other, false);
        cg->vals[op->res[0]] = (TileVal){ .kind = TV_SCALAR, .s = out };
        return 0;
    }
    bool pf = prefetch_wanted(cg, &ac, rt);   /* after the row's own loads: 95.4% of copy bandwidth, 91.4% before */
    const Layout *L = cg_default_layout(cg, rt, last_contiguous(&ac));
    int n = layout_nregs(L);
    LLVMValueRef *other;
    if (ov) {
        other = cg_materialize(cg, ov, ir_type(cg->f, op->args[op->nargs - 1]), L, op->loc);
    } else {
        other = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
        for (int r = 0; r < n; r++)
            other[r] = zero;
    }
    LLVMValueRef uother = !ov ? zero : ov->kind == TV_SPLAT || ov->kind == TV_SCALAR ? ov->s : NULL;
    int tail = 0;
    LLVMValueRef *regs = load_tile(cg, &ac, L, other, uother, &tail);
    if (pf)
        prefetch_next_wave(cg, &ac, rt->shape[0]);
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = L, .r = regs, .leaf = ac.dt == DT_BF16,
                                      .lazy = access_vec(&ac, L) > 1 && dtype_bits(ac.dt) < 32 };
    report_access(cg, op, "load", L, access_vec(&ac, L), tail, ac.dead_tail);
    return 0;
}

/* ---- stores ---- */




/* Stores v (memory representation: an element or a group's vector of n
 * elements) at p if pred. */
static void store_group(Cg *cg, const Access *ac, LLVMValueRef p, LLVMValueRef pred, int n, LLVMValueRef v)
{
    LLVMBasicBlockRef doit = NULL, cont = NULL;
    if (!is_true(pred)) {
        doit = cg_new_block(cg, "st.do");
        cont = cg_new_block(cg, "st.cont");
        LLVMBuildCondBr(cg->b, pred, doit, cont);
        LLVMPositionBuilderAtEnd(cg->b, doit);
    }
    LLVMValueRef st = LLVMBuildStore(cg->b, v, p);
    int bytes = n * dtype_bits(ac->dt) / 8;
    LLVMSetAlignment(st, (unsigned)(bytes > 0 ? bytes : 1));
    if (cont) {
        LLVMBuildBr(cg->b, cont);
        LLVMPositionBuilderAtEnd(cg->b, cont);
    }
}

static void store_elems(Cg *cg, const Access *ac, const Layout *L, LLVMValueRef *vals)
{
    LLVMValueRef idx[TENSOR_MAXRANK];
    for (int r = 0, n = layout_nregs(L); r < n; r++) {
        reg_index(cg, ac, L, r, idx);
        LLVMValueRef pred = LLVMBuildAnd(cg->b, in_bounds(cg, ac, idx), cg_primary(cg, L, r), "");
        store_group(cg, ac, elem_addr(cg, ac, idx), pred, 1, to_mem(cg, vals[r], ac->dt));
    }
}

/* Stores group j (gs) at p, element-exact: its first k elements (k <= 0:
 * none); one whole-vector store when k >= vec and the group is aligned
 * (`aligned`: i1, NULL when known), else one store per element below k,
 * all predicated in one inline asm block (no branch: with one per group,
 * as the loads have, ptxas spilled 20 B on bf16 [16384] layernorm). */
static void store_group_exact(Cg *cg, const Access *ac, LLVMValueRef p, LLVMValueRef k, int vec, LLVMValueRef aligned,
                              LLVMValueRef v)
{
    int bits = dtype_bits(ac->dt), bytes = bits / 8, nw = vec * bits / 32;
    if (aligned && is_true(aligned))
        aligned = NULL;
    /* Operands: the nw words, then p, k, [aligned]. */
    int ip = nw, ik = nw + 1, ia = aligned ? nw + 2 : -1;
    char code[2048];
    size_t n = exact_head(code, sizeof code, bits, vec, ik, ia);
#define EMIT(...) n += (size_t)snprintf(code + n, sizeof code - n, __VA_ARGS__)
    if (nw == 1)
        EMIT("@%%pf st.global.b32 [$%d], $0;\n", ip);
    else {
        EMIT("@%%pf st.global.v%d.b32 [$%d], {", nw, ip);
        for (int j = 0; j < nw; j++)
            EMIT("%s$%d", j ? ", " : "", j);
        EMIT("};\n");
    }
    for (int j = 0; bits == 16 && j < nw; j++)
        EMIT("mov.b32 {%%h%d, %%h%d}, $%d;\n", 2 * j, 2 * j + 1, j);
    EMIT("not.pred %%pf, %%pf;\n");
    for (int e = 0; e < vec; e++)
        EMIT("setp.gt.and.s32 %%pe, $%d, %d, %%pf;\n@%%pe st.global.b%d [$%d+%d], %s%d;\n", ik, e, bits, ip,
             e * bytes, bits == 16 ? "%h" : "$", e);
    EMIT("}");
#undef EMIT
    char cons[256];
    size_t c = exact_cons(cons, sizeof cons, nw, "r", aligned ? "l,r,r,~{memory}" : "l,r,~{memory}");
    LLVMValueRef args[8];
    LLVMTypeRef at[8];
    unsigned na = 0;
    LLVMValueRef w = LLVMBuildBitCast(cg->b, v, nw == 1 ? cg->t_i32 : LLVMVectorType(cg->t_i32, (unsigned)nw), "");
    for (int j = 0; j < nw; j++)
        args[na] = nw == 1 ? w : LLVMBuildExtractElement(cg->b, w, cg_i32(cg, j), ""), at[na++] = cg->t_i32;
    args[na] = p, at[na++] = LLVMTypeOf(p);
    args[na] = k, at[na++] = cg->t_i32;
    if (aligned)
        args[na] = LLVMBuildZExt(cg->b, aligned, cg->t_i32, ""), at[na++] = cg->t_i32;
    LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(cg->ctx), at, na, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(ft, code, n, cons, c, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMBuildCall2(cg->b, ft, fn, args, na, "");
}

/* Group j's address when no earlier group shares its row but its rows and
 * columns do not wrap (pr, pc >= 0): the previous group's address plus the
 * compile-time row distance times the tensor's row stride plus the column
 * distance (one 64-bit add per group; the row steps are the same few
 * products of the stride), instead of a full index computation per row. */
static LLVMValueRef row_step_addr(Cg *cg, const Access *ac, const Layout *L, int vec, int j, int pr, int pc,
                                  LLVMValueRef *ps)
{
    int64_t drow = cg_reg_offset(L, j * vec, pr) - cg_reg_offset(L, (j - 1) * vec, pr);
    int64_t dcol = cg_reg_offset(L, j * vec, pc) - cg_reg_offset(L, (j - 1) * vec, pc);
    LLVMValueRef o = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, cg_i64(cg, drow), ac->ta->stride[ac->tdim[0]], ""),
                                  cg_i64(cg, dcol), "");
    return LLVMBuildGEP2(cg->b, ac->mty, ps[j - 1], &o, 1, "");
}

/* Whole vectors (gs: the groups); with `full` (a masked last dim), only
 * the groups wholly inside the row (full[j] gets each group's predicate);
 * with `exact` (the alignment test), every group element-exact instead
 * (store_group_exact). */
static void store_vecs(Cg *cg, const Access *ac, const Layout *L, int vec, const Groups *gs, LLVMValueRef *full,
                       LLVMValueRef exact)
{
    LLVMValueRef idx[TENSOR_MAXRANK];
    int n = layout_nregs(L), pr, pc;
    LLVMValueRef *ps = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)(n / vec + 1));
    /* A group in the row of an earlier group (row_dims) addresses from
     * that group's address plus the compile-time column distance (as
     * group_loop_init does for the element loops): a full address per group
     * left the backend's SLSR a bucket of GEPs at variable column indices
     * off each row address to search, testing each find for poison. A
     * group in a new row steps from the previous group (row_step_addr). */
    row_dims(cg, ac, L, &pr, &pc);
    for (int r = 0; r < n; r += vec) {
        reg_index(cg, ac, L, r, idx);
        int64_t dcol;
        int j = r / vec, j0 = row_first(L, vec, j, pr, pc);
        LLVMValueRef p = j0 < 0 && j > 0 && pr >= 0 && pc >= 0
                             ? row_step_addr(cg, ac, L, vec, j, pr, pc, ps)
                             : group_addr(cg, ac, L, vec, j, j0, pc, ps, idx, &dcol);
        ps[j] = p;
        LLVMValueRef rows = LLVMBuildAnd(cg->b, in_bounds_upto(cg, ac, idx, ac->rank - 1), cg_primary(cg, L, r), "");
        if (exact) {
            store_group_exact(cg, ac, p, row_room(cg, ac, idx, rows), vec, exact, group_vec(cg, ac, gs, r / vec));
            continue;
        }
        if (full && last_masked(ac)) {
            rows = LLVMBuildAnd(cg->b, rows, last_ok(cg, ac, idx, vec - 1), "");
            full[r / vec] = rows;
        }
        store_group(cg, ac, p, rows, vec, group_vec(cg, ac, gs, r / vec));
    }
}

/* A masked last dim stored element-exact (store_group_exact) for every
 * group, no per-group branches and no element loop? Not under a register
 * cap: there ptxas moved the hot path's registers (docs/codegen.md). */
static bool store_exact(Cg *cg, const Access *ac, int vec)
{
    return last_masked(ac) && exact_group_ok(ac, vec) && cg->minct == 0;
}

/* Not the straight path: when aligned, whole vectors for the groups
 * inside the row, then one element loop for the rest (the row tail, or
 * every group when a row start is not aligned). */
static void store_general(Cg *cg, const Access *ac, const Layout *L, int vec, const Groups *gs, LLVMValueRef ok)
{
    int ng = layout_nregs(L) / vec;
    bool masked = last_masked(ac);
    LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b), vb = cg_new_block(cg, "st.vec"),
                      tb = cg_new_block(cg, "st.loop"), jb = masked ? tb : cg_new_block(cg, "st.join");
    LLVMValueRef *full = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)ng * 2), *skip = NULL;
    LLVMBuildCondBr(cg->b, ok, vb, tb);
    LLVMPositionBuilderAtEnd(cg->b, vb);
    store_vecs(cg, ac, L, vec, gs, full, NULL);
    LLVMBasicBlockRef vend = LLVMGetInsertBlock(cg->b);
    LLVMBuildBr(cg->b, jb);
    LLVMPositionBuilderAtEnd(cg->b, tb);
    if (masked) {
        LLVMValueRef f = LLVMConstInt(cg->t_i1, 0, 0);
        skip = full + ng;
        for (int j = 0; j < ng; j++) {
            skip[j] = LLVMBuildPhi(cg->b, cg->t_i1, "");
            LLVMAddIncoming(skip[j], &f, &from, 1);
            LLVMAddIncoming(skip[j], &full[j], &vend, 1);
        }
    }
    store_loop(cg, ac, L, vec, gs, skip);
    if (!masked) {
        LLVMBuildBr(cg->b, jb);
        LLVMPositionBuilderAtEnd(cg->b, jb);
    }
}

int cg_lower_store(Cg *cg, Op *op)
{
    ValId vv = op->args[op->nargs - 1];
    const Type *vt = ir_type(cg->f, vv);
    const TileVal *v = &cg->vals[vv];
    Access ac;
    if (access_init(cg, op, &ac, vt->kind == TY_TILE ? vt->rank : 0))
        return 1;
    if (vt->kind != TY_TILE) {
        LLVMValueRef idx[TENSOR_MAXRANK], s = v->s;
        for (int d = 0; d < ac.rank; d++)
            idx[d] = ac.off[d];
        /* One thread writes a scalar. */
        LLVMValueRef pred = LLVMBuildAnd(cg->b, in_bounds(cg, &ac, idx),
                                         LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, 0), ""), "");
        store_group(cg, &ac, elem_addr(cg, &ac, idx), pred, 1, to_mem(cg, s, ac.dt));
        return 0;
    }
    const Layout *L = v->kind == TV_REGS ? v->L : cg_default_layout(cg, vt, last_contiguous(&ac));
    LLVMValueRef *vals = cg_materialize(cg, v, vt, L, op->loc);
    int vec = access_vec(&ac, L);
    if (vec <= 1) {
        store_elems(cg, &ac, L, vals);
    } else {
        Groups gs = pack_groups(cg, &ac, L, vec, vals);
        LLVMValueRef ok = vec_ok(cg, &ac, vec);
        Access inner = ac;
        if (last_masked(&ac)) {
            /* Straight-line vectors when the window's last dim is wholly inside. */
            LLVMBasicBlockRef fb = cg_new_block(cg, "st.full"), gb = cg_new_block(cg, "st.gen"),
                              jb = cg_new_block(cg, "st.fj");
            LLVMBuildCondBr(cg->b, LLVMBuildAnd(cg->b, ok, last_full(cg, &ac), ""), fb, gb);
            LLVMPositionBuilderAtEnd(cg->b, fb);
            inner.mask &= ~(1u << (inner.rank - 1));
            store_vecs(cg, &inner, L, vec, &gs, NULL, NULL);
            LLVMBuildBr(cg->b, jb);
            LLVMPositionBuilderAtEnd(cg->b, gb);
            if (store_exact(cg, &ac, vec))
                store_vecs(cg, &ac, L, vec, &gs, NULL, ok);
            else
                store_general(cg, &ac, L, vec, &gs, ok);
            LLVMBuildBr(cg->b, jb);
            LLVMPositionBuilderAtEnd(cg->b, jb);
        } else if (is_true(ok)) {
            store_vecs(cg, &ac, L, vec, &gs, NULL, NULL);
        } else {
            store_general(cg, &ac, L, vec, &gs, ok);
        }
    }
    report_access(cg, op, "store", L, vec, 0, false);
    return 0;
}
