/* mem_access.c - the window access shared by LOAD and STORE (lower_mem.c,
 * lower_store.c): the Access of an op, element addresses and bounds tests,
 * vector width and alignment tests, the two-way branch over a tile's
 * values, and the element loop of the unaligned path.
 */
#include "cg_internal.h"

/* A tensor the kernel never stores to, adds to atomically or scatters
 * into is read-only for the whole launch (params are noalias): its loads may use the non-coherent path (ld.global.nc). */
bool cg_tensor_readonly(Cg *cg, ValId t)
{
    return !ir_tensor_written(cg->f, t);
}

int access_init(Cg *cg, Op *op, Access *ac, int ntile)
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

/* A STORE-like op (STORE, ATOMIC_ADD): its value operand (the last) and
 * type, and the window access of a tile of that type. */
int access_init_write(Cg *cg, Op *op, Access *ac, const Type **vt, const TileVal **v)
{
    ValId vv = op->args[op->nargs - 1];
    *vt = ir_type(cg->f, vv);
    *v = &cg->vals[vv];
    return access_init(cg, op, ac, (*vt)->kind == TY_TILE ? (*vt)->rank : 0);
}

/* A scalar written to the window's one element: its address, and in *pred
 * whether this thread writes it (thread 0, the element inside). */
LLVMValueRef scalar_write(Cg *cg, const Access *ac, LLVMValueRef *pred)
{
    LLVMValueRef idx[TENSOR_MAXRANK];
    for (int d = 0; d < ac->rank; d++)
        idx[d] = ac->off[d];
    *pred = LLVMBuildAnd(cg->b, in_bounds(cg, ac, idx), LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, 0), ""),
                         "");
    return elem_addr(cg, ac, idx);
}

/* A side-effecting inline asm (code, constraints cons: the nw words as
 * "r", then "l" p, "r" k and, with `flag`, "r" for it) called with those
 * operands: the element-exact stores and the atomic adds. */
void words_asm_call(Cg *cg, const char *code, size_t n, const char *cons, size_t c, LLVMValueRef *words, int nw,
                    LLVMValueRef p, LLVMValueRef k, LLVMValueRef flag)
{
    LLVMValueRef args[8];
    LLVMTypeRef at[8];
    unsigned na = 0;
    for (int j = 0; j < nw; j++)
        args[na] = words[j], at[na++] = cg->t_i32;
    args[na] = p, at[na++] = LLVMTypeOf(p);
    args[na] = k, at[na++] = cg->t_i32;
    if (flag)
        args[na] = LLVMBuildZExt(cg->b, flag, cg->t_i32, ""), at[na++] = cg->t_i32;
    LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(cg->ctx), at, na, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(ft, (char *)code, n, (char *)cons, c, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMBuildCall2(cg->b, ft, fn, args, na, "");
}

bool last_contiguous(const Access *ac)
{
    return ac->ntile > 0 && ac->tdim[ac->ntile - 1] == ac->rank - 1;
}

/* Elements per vector access: the layout's contiguous run, at most 16 bytes. */
int access_vec(const Access *ac, const Layout *L)
{
    if (!last_contiguous(ac))
        return 1;
    int v = layout_vec(L), cap = 128 / (dtype_bits(ac->dt) ? dtype_bits(ac->dt) : 8);
    return v < cap ? v : cap;
}

/* Tensor indices (i32) of register r's element. */
void reg_index(Cg *cg, const Access *ac, const Layout *L, int r, LLVMValueRef *idx)
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

/* The address a masked-out element or vector reads instead of its own,
 * so that the access needs no branch: 16 zero bytes of the module's own
 * (`tilec_guard`, 16-byte aligned), never a tensor's first bytes, which
 * do not exist when the tensor is empty (the runtime passes NULL) or
 * shorter than the vector. Externally visible, so that the optimiser
 * cannot know its contents and fold a load of it (that would make the
 * load of the real address unconditional). */
LLVMValueRef cg_guard_ptr(Cg *cg)
{
    LLVMValueRef g = LLVMGetNamedGlobal(cg->mod, "tilec_guard");
    if (!g) {
        LLVMTypeRef ty = LLVMArrayType2(cg->t_i8, 16);
        g = LLVMAddGlobalInAddressSpace(cg->mod, ty, "tilec_guard", 1);
        LLVMSetInitializer(g, LLVMConstNull(ty));
        LLVMSetAlignment(g, 16);
    }
    return g;
}

LLVMValueRef elem_addr(Cg *cg, const Access *ac, LLVMValueRef *idx)
{
    return cg_tensor_elem_ptr(cg, ac->ta, ac->mty, ac->rank, idx);
}

LLVMValueRef in_bounds_upto(Cg *cg, const Access *ac, LLVMValueRef *idx, int nd)
{
    LLVMValueRef ok = LLVMConstInt(cg->t_i1, 1, 0);
    for (int d = 0; d < nd; d++)
        if (ac->mask >> d & 1)
            ok = LLVMBuildAnd(cg->b, ok, LLVMBuildICmp(cg->b, LLVMIntULT, idx[d], ac->ta->size[d], ""), "");
    return ok;
}

LLVMValueRef in_bounds(Cg *cg, const Access *ac, LLVMValueRef *idx)
{
    return in_bounds_upto(cg, ac, idx, ac->rank);
}

bool last_masked(const Access *ac) { return ac->mask >> (ac->rank - 1) & 1; }

/* i1: is last-dim index idx_last + k inside the tensor? */
LLVMValueRef last_ok(Cg *cg, const Access *ac, LLVMValueRef *idx, int k)
{
    LLVMValueRef i = LLVMBuildAdd(cg->b, idx[ac->rank - 1], cg_i32(cg, k), "");
    return LLVMBuildICmp(cg->b, LLVMIntULT, i, ac->ta->size[ac->rank - 1], "");
}

/* Two-way branch on c; returns the join block's phis of the two value sets.
 * With group > 1, narrow elements (16-bit, 8-bit) cross the join as vectors
 * of `group` (packed registers) and are taken apart after it. */
/* The vector (of type vt) whose elements 0..n-1 the values x[] are, when
 * each is `extractelement W, e` of one W: an arm's loaded vector, passed to
 * the join's phi as it is instead of rebuilt element by element. */
LLVMValueRef whole_vector(LLVMValueRef *x, int n, LLVMTypeRef vt)
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

void diamond(Cg *cg, LLVMValueRef c, int n, int group, ArmFn fn, void *ctx, LLVMValueRef *out)
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
LLVMValueRef vec_ok(Cg *cg, const Access *ac, int vec)
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

bool is_true(LLVMValueRef v)
{
    return LLVMIsAConstantInt(v) && LLVMConstIntGetZExtValue(v) == 1;
}

LLVMValueRef from_mem(Cg *cg, LLVMValueRef v, DType dt)
{
    return dt == DT_BOOL ? LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->t_i8, 0, 0), "") : v;
}

LLVMValueRef to_mem(Cg *cg, LLVMValueRef v, DType dt)
{
    return dt == DT_BOOL ? LLVMBuildZExt(cg->b, v, cg->t_i8, "") : v;
}

/* i1: does the window's whole last-dim range lie inside the tensor? */
LLVMValueRef last_full(Cg *cg, const Access *ac)
{
    int d = ac->rank - 1;
    LLVMValueRef end = LLVMBuildAdd(cg->b, LLVMBuildSExt(cg->b, ac->off[d], cg->t_i64, ""),
                                    cg_i64(cg, ac->op->list[d]), "");
    LLVMValueRef lo = LLVMBuildICmp(cg->b, LLVMIntSGE, ac->off[d], cg_i32(cg, 0), "");
    LLVMValueRef hi = LLVMBuildICmp(cg->b, LLVMIntSLE, end, LLVMBuildSExt(cg->b, ac->ta->size[d], cg->t_i64, ""), "");
    return LLVMBuildAnd(cg->b, lo, hi, "");
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

/* The parent dims of L's rows and columns when register groups of one row
 * may address from each other: a 2-d tile of a tensor-core kernel, or a
 * 1-d tile of any kernel (*pr = -1: one row), over the tensor's last dim,
 * without wrap; *pc = -1 otherwise. */
void row_dims(Cg *cg, const Access *ac, const Layout *L, int *pr, int *pc)
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
int row_first(const Layout *L, int vec, int j, int pr, int pc)
{
    for (int k = 0; pc >= 0 && k < j; k++)
        if (pr < 0 || cg_reg_offset(L, k * vec, pr) == cg_reg_offset(L, j * vec, pr))
            return k;
    return -1;
}

/* Group j's address: group j0's (ps[j0]) plus the compile-time column
 * distance (*dcol) when j0 >= 0, else from its indices (*dcol = 0). */
LLVMValueRef group_addr(Cg *cg, const Access *ac, const Layout *L, int vec, int j, int j0, int pc,
                        LLVMValueRef *ps, LLVMValueRef *idx, int64_t *dcol)
{
    *dcol = 0;
    if (j0 < 0)
        return elem_addr(cg, ac, idx);
    *dcol = cg_reg_offset(L, j * vec, pc) - cg_reg_offset(L, j0 * vec, pc);
    LLVMValueRef d = cg_i64(cg, *dcol);
    return LLVMBuildGEP2(cg->b, ac->mty, ps[j0], &d, 1, "");
}

void group_loop_init(Cg *cg, const Access *ac, const Layout *L, int vec, bool store, GroupLoop *g)
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
LLVMBasicBlockRef group_loop_open(Cg *cg, GroupLoop *g)
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
void group_loop_body(Cg *cg, GroupLoop *g)
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
void group_loop_close(Cg *cg, GroupLoop *g, LLVMBasicBlockRef pre, LLVMValueRef *phis, LLVMValueRef *init,
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
LLVMValueRef group_elem_ptr(Cg *cg, const Access *ac, GroupLoop *g, int j)
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
LLVMValueRef group_elem_ok(Cg *cg, const Access *ac, GroupLoop *g, int j)
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
LLVMValueRef group_shift(Cg *cg, const GroupLoop *g, LLVMValueRef w, LLVMValueRef x)
{
    LLVMValueRef m[64], top = LLVMGetUndef(g->wt);
    for (int e = 0; e < g->vec; e++)
        m[e] = cg_i32(cg, e + 1);
    if (x)
        top = LLVMBuildInsertElement(cg->b, top, x, cg_i32(cg, 0), "");
    return LLVMBuildShuffleVector(cg->b, w, top, LLVMConstVector(m, (unsigned)g->vec), "");
}

/* Packs `vec` register values (memory representation) into one vector. */
LLVMValueRef group_pack(Cg *cg, const Access *ac, const GroupLoop *g, LLVMValueRef *v)
{
    LLVMValueRef w = ac->dt == DT_BOOL ? NULL : whole_vector(v, g->vec, g->wt);
    if (w)
        return w;
    w = LLVMGetUndef(g->wt);
    for (int e = 0; e < g->vec; e++)
        w = LLVMBuildInsertElement(cg->b, w, to_mem(cg, v[e], ac->dt), cg_i32(cg, e), "");
    return w;
}
