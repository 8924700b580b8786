/* lower_shape.c - the register shape ops that move elements between
 * threads (SLICE, CONCAT, RESHAPE) and the windows read or written through
 * an index tile (GATHER, SCATTER), on the SIMT path.
 *
 * SLICE, CONCAT and RESHAPE go through shared scratch: every register of
 * the operand(s) is written at its element's row-major offset (copies of
 * an element write the same value to the same place), a barrier, and every
 * register of the result (the default layout of its shape) reads its
 * element: a slice at start + its coordinate in the operand's shape, a
 * reshape at its own row-major offset (the order is the same), a concat
 * at its offset in the result's shape, where the operands were written
 * with the second one shifted along the axis.
 *
 * GATHER and SCATTER: the index tile goes to scratch once; each register
 * of the window tile reads the index of its coordinate along the indexed
 * dim, computes its element's address in 64 bits and whether it lies
 * inside the tensor (the index in 0 .. extent - 1, and the masked dims as
 * a window's), then loads (an element outside reads the module's guard
 * bytes and takes `other`) or, its primary owner only, stores behind a
 * branch. A gather or scatter whose last dim is the tensor's, unmasked and
 * not the indexed one moves each thread's run along it as one vector of up
 * to 16 bytes when the rows are aligned to it (a uniform test; else
 * elements).
 */
#include "cg_internal.h"

static int elem_bytes(DType dt)
{
    int b = dtype_bits(dt) / 8;
    return b ? b : 1;
}

/* Registers of tile value v in its own layout (a symbolic one takes the
 * default layout of its shape); *L receives the layout. */
static LLVMValueRef *regs_of(Cg *cg, ValId id, const Layout **L, Loc loc)
{
    const TileVal *v = &cg->vals[id];
    const Type *t = ir_type(cg->f, id);
    *L = v->kind == TV_REGS ? v->L : cg_default_layout(cg, t, true);
    return cg_materialize(cg, v, t, *L, loc);
}

/* Row-major offset in `shape` of register r's coordinates plus `shift`. */
static LLVMValueRef offset_in(Cg *cg, const Layout *L, int r, const int64_t *shape, int rank, const int64_t *shift)
{
    LLVMValueRef o = cg_i32(cg, 0);
    for (int k = 0; k < rank; k++) {
        if (k > 0)
            o = cg_nowrap(LLVMBuildMul(cg->b, o, cg_i32(cg, shape[k]), ""));
        LLVMValueRef c = cg_coord(cg, L, r, k);
        if (shift && shift[k])
            c = cg_nowrap(LLVMBuildAdd(cg->b, c, cg_i32(cg, shift[k]), ""));
        o = cg_nowrap(LLVMBuildAdd(cg->b, o, c, ""));
    }
    return o;
}

static void scratch_write(Cg *cg, LLVMValueRef sm, DType dt, const Layout *L, LLVMValueRef *regs,
                          const int64_t *shape, int rank, const int64_t *shift)
{
    LLVMTypeRef mty = cg_mem_type(cg, dt);
    for (int r = 0, n = layout_nregs(L); r < n; r++) {
        LLVMValueRef o = offset_in(cg, L, r, shape, rank, shift);
        LLVMValueRef v = dt == DT_BOOL ? LLVMBuildZExt(cg->b, regs[r], cg->t_i8, "") : regs[r];
        LLVMBuildStore(cg->b, v, LLVMBuildGEP2(cg->b, mty, sm, &o, 1, ""));
    }
}

static LLVMValueRef scratch_read_at(Cg *cg, LLVMValueRef sm, DType dt, LLVMValueRef o)
{
    LLVMTypeRef mty = cg_mem_type(cg, dt);
    LLVMValueRef v = LLVMBuildLoad2(cg->b, mty, LLVMBuildGEP2(cg->b, mty, sm, &o, 1, ""), "");
    return dt == DT_BOOL ? LLVMBuildICmp(cg->b, LLVMIntNE, v, LLVMConstInt(cg->t_i8, 0, 0), "") : v;
}

static void report_shape(Cg *cg, const Op *op, const Layout *L)
{
    if (!cg->report)
        return;
    sb_printf(cg->report, "  %s at %d:%d through shared memory -> ", op_info[op->code].name, op->loc.line,
              op->loc.col);
    layout_print(L, cg->report);
    sb_putc(cg->report, '\n');
}

/* SLICE, CONCAT, RESHAPE. */
int cg_lower_shape(Cg *cg, Op *op)
{
    Func *f = cg->f;
    const Type *rt = ir_type(f, op->res[0]), *at = ir_type(f, op->args[0]);
    DType dt = (DType)rt->dtype;
    const TileVal *v0 = &cg->vals[op->args[0]];
    if (op->code != OP_CONCAT && (v0->kind == TV_SPLAT || v0->kind == TV_SCALAR)) {
        cg->vals[op->res[0]] = (TileVal){ .kind = TV_SPLAT, .s = v0->s };   /* a part of one value */
        return 0;
    }
    if (dt == DT_F8E4M3 || dt == DT_F8E5M2) {
        diag_error(cg->d, op->loc, "'%s' of %s tiles is not supported by the code generator yet; cast them first",
                   op_info[op->code].name, dtype_name(dt));
        return 1;
    }
    const Layout *La, *Lb = NULL;
    LLVMValueRef *ra = regs_of(cg, op->args[0], &La, op->loc), *rb = NULL;
    if (op->code == OP_CONCAT)
        rb = regs_of(cg, op->args[1], &Lb, op->loc);
    const Layout *L = cg_default_layout(cg, rt, true);
    /* the shape the scratch is laid out in: the operand's for a slice, else the result's */
    const Type *st = op->code == OP_SLICE ? at : rt;
    LLVMValueRef sm = cg_smem(cg, type_numel(st) * elem_bytes(dt));
    cg_xfer_barrier(cg);
    if (op->code == OP_CONCAT) {
        int64_t shift[TILE_MAXRANK] = { 0 };
        scratch_write(cg, sm, dt, La, ra, rt->shape, rt->rank, shift);
        shift[op->iattr[0]] = at->shape[op->iattr[0]];
        scratch_write(cg, sm, dt, Lb, rb, rt->shape, rt->rank, shift);
    } else {
        scratch_write(cg, sm, dt, La, ra, at->shape, at->rank, NULL);
    }
    cg_xfer_barrier(cg);
    LLVMValueRef *out = new_regs(cg, L);
    for (int r = 0, n = layout_nregs(L); r < n; r++) {
        LLVMValueRef o = op->code == OP_SLICE ? offset_in(cg, L, r, at->shape, at->rank, op->list)
                                              : offset_in(cg, L, r, rt->shape, rt->rank, NULL);
        out[r] = scratch_read_at(cg, sm, dt, o);
    }
    set_regs(cg, op->res[0], L, out);
    report_shape(cg, op, L);
    return 0;
}

/* ---- GATHER, SCATTER ---- */

typedef struct Indexed {
    const Type *tt;        /* the tensor */
    TensorArg *ta;
    int rank, g, gpos;     /* tensor rank, the indexed dim, its position among the tile's dims */
    int tdim[TILE_MAXRANK];
    DType dt, ixdt;
    LLVMValueRef ixsm;     /* the index tile in scratch */
} Indexed;

static int indexed_init(Cg *cg, Op *op, Indexed *x, int ntile)
{
    x->tt = ir_type(cg->f, op->args[0]);
    x->ta = &cg->tens[op->args[0]];
    x->rank = x->tt->rank;
    x->dt = (DType)x->tt->dtype;
    x->g = (int)op->iattr[2];
    int k = 0;
    for (int d = 0; d < x->rank; d++)
        if (op->list[d] > 0) {
            if (d == x->g)
                x->gpos = k;
            if (k < TILE_MAXRANK)
                x->tdim[k] = d;
            k++;
        }
    if (k != ntile || x->g < 0 || x->g >= x->rank) {
        diag_internal(cg->d, op->loc, "malformed %s", op_info[op->code].name);
        return 1;
    }
    if (x->dt == DT_F8E4M3 || x->dt == DT_F8E5M2) {
        diag_error(cg->d, op->loc, "'%s' of %s tensors is not supported by the code generator yet",
                   op_info[op->code].name, dtype_name(x->dt));
        return 1;
    }
    ValId iv = op->args[1 + x->rank];
    const Type *it = ir_type(cg->f, iv);
    x->ixdt = (DType)it->dtype;
    const Layout *Li;
    LLVMValueRef *ri = regs_of(cg, iv, &Li, op->loc);
    x->ixsm = cg_smem(cg, type_numel(it) * elem_bytes(x->ixdt));
    cg_xfer_barrier(cg);
    scratch_write(cg, x->ixsm, x->ixdt, Li, ri, it->shape, 1, NULL);
    cg_xfer_barrier(cg);
    return 0;
}

/* The address of register r's element (layout L of the window tile) and
 * whether it lies inside the tensor. */
static LLVMValueRef indexed_addr(Cg *cg, Op *op, const Indexed *x, const Layout *L, int r, LLVMValueRef *ok)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef idx[TENSOR_MAXRANK];
    for (int d = 0; d < x->rank; d++)
        idx[d] = LLVMBuildSExt(b, cg->vals[op->args[1 + d]].s, cg->t_i64, "");
    *ok = LLVMConstInt(cg->t_i1, 1, 0);
    for (int k = 0; k < layout_rank(L); k++) {
        int d = x->tdim[k];
        LLVMValueRef c = cg_coord(cg, L, r, k);
        if (d == x->g) {
            LLVMValueRef i = scratch_read_at(cg, x->ixsm, x->ixdt, c);
            if (x->ixdt != DT_I64)
                i = LLVMBuildSExt(b, i, cg->t_i64, "");
            idx[d] = LLVMBuildAdd(b, idx[d], i, "");
        } else {
            idx[d] = LLVMBuildAdd(b, idx[d], LLVMBuildZExt(b, c, cg->t_i64, ""), "");
        }
        if (d == x->g || (op->iattr[0] >> d & 1)) {
            LLVMValueRef size = LLVMBuildZExt(b, x->ta->size[d], cg->t_i64, "");
            *ok = LLVMBuildAnd(b, *ok, LLVMBuildICmp(b, LLVMIntULT, idx[d], size, ""), "");
        }
    }
    LLVMValueRef o = NULL;
    for (int d = 0; d < x->rank; d++) {
        LLVMValueRef t = d + 1 < x->rank ? LLVMBuildMul(b, idx[d], x->ta->stride[d], "") : idx[d];
        o = o ? LLVMBuildAdd(b, o, t, "") : t;
    }
    return LLVMBuildGEP2(b, cg_mem_type(cg, x->dt), x->ta->base, &o, 1, "");
}

static void report_indexed(Cg *cg, const Op *op, const Layout *L, int vec)
{
    if (!cg->report)
        return;
    sb_printf(cg->report, "  %s at %d:%d: ", op_info[op->code].name, op->loc.line, op->loc.col);
    if (vec > 1)
        sb_printf(cg->report, "%d-byte vectors along rows aligned to them, else ",
                  vec * elem_bytes((DType)ir_type(cg->f, op->args[0])->dtype));
    sb_puts(cg->report, "element by element; the index through shared memory -> ");
    layout_print(L, cg->report);
    sb_putc(cg->report, '\n');
}

/* Elements per vector of a gather or scatter: the layout's run along the last dim
 * (at most 16 bytes) when the window's last dim is the tensor's, kept,
 * not the indexed one and not masked, and every run of registers is
 * consecutive along it; 1 otherwise. */
static int indexed_vec(const Op *op, const Indexed *x, const Layout *L, const Type *rt)
{
    int last = x->rank - 1, k = rt->rank - 1, eb = elem_bytes(x->dt);
    if (op->list[last] <= 0 || x->g == last || (op->iattr[0] >> last & 1) || x->dt == DT_BOOL)
        return 1;
    int p = layout_pdim(L, k), v = layout_vec(L);
    if (v > 16 / eb)
        v = 16 / eb;
    if (v < 2 || rt->shape[k] % v || layout_may_wrap(L, p))
        return 1;
    for (int r = 0, n = layout_nregs(L); r < n; r += v) {
        int i0[TILE_MAXRANK], i1[TILE_MAXRANK];
        layout_reg_index(L, r, i0);
        for (int e = 1; e < v; e++) {
            if (r + e >= n)
                return 1;
            layout_reg_index(L, r + e, i1);
            for (int d = 0; d < L->prank; d++)
                if (d != p && i1[d] != i0[d])
                    return 1;
            if (cg_reg_offset(L, r + e, p) != cg_reg_offset(L, r, p) + e)
                return 1;
        }
    }
    return v;
}

/* i1, uniform: every row of the window starts aligned to a vector of vec
 * elements: the strides of the outer dims and the last dim's offset are
 * multiples of vec (the base is 16-byte aligned). */
static LLVMValueRef rows_aligned(Cg *cg, Op *op, const Indexed *x, int vec)
{
    LLVMBuilderRef b = cg->b;
    LLVMValueRef ok = LLVMConstInt(cg->t_i1, 1, 0), m64 = cg_i64(cg, vec - 1);
    for (int d = 0; d + 1 < x->rank; d++)
        ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, x->ta->stride[d], m64, ""), cg_i64(cg, 0), ""),
                          "");
    LLVMValueRef o = cg->vals[op->args[x->rank]].s;
    return LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, o, cg_i32(cg, vec - 1), ""), cg_i32(cg, 0), ""),
                        "");
}

typedef struct GatherArm {
    Op *op;
    const Indexed *x;
    const Layout *L;
    int vec;
    LLVMValueRef other;
} GatherArm;

/* Arm 0: vectors of `vec` elements (the rows aligned to them); arm 1:
 * one element at a time. An element or vector outside the tensor reads the
 * guard bytes and takes `other`. */
static void gather_arm(Cg *cg, void *ctx, int arm, LLVMValueRef *out)
{
    const GatherArm *g = ctx;
    const Indexed *x = g->x;
    int vec = arm == 0 ? g->vec : 1, eb = elem_bytes(x->dt);
    LLVMTypeRef mty = cg_mem_type(cg, x->dt), vty = vec > 1 ? LLVMVectorType(mty, (unsigned)vec) : mty;
    LLVMValueRef guard = cg_guard_ptr(cg);
    for (int r = 0, n = layout_nregs(g->L); r < n; r += vec) {
        LLVMValueRef ok, p = indexed_addr(cg, g->op, x, g->L, r, &ok);
        p = LLVMBuildSelect(cg->b, ok, p, guard, "");
        LLVMValueRef v = LLVMBuildLoad2(cg->b, vty, p, "");
        LLVMSetAlignment(v, (unsigned)(vec * eb));
        for (int e = 0; e < vec; e++) {
            LLVMValueRef w = vec > 1 ? LLVMBuildExtractElement(cg->b, v, cg_i32(cg, e), "") : v;
            out[r + e] = LLVMBuildSelect(cg->b, ok, from_mem(cg, w, x->dt), g->other, "");
        }
    }
}

int cg_lower_gather(Cg *cg, Op *op)
{
    const Type *rt = ir_type(cg->f, op->res[0]);
    Indexed x;
    if (indexed_init(cg, op, &x, rt->rank))
        return 1;
    const Layout *L = cg_default_layout(cg, rt, true);
    LLVMValueRef other = op->iattr[1] ? cg->vals[op->args[op->nargs - 1]].s : LLVMConstNull(cg_type(cg, x.dt));
    GatherArm g = { op, &x, L, indexed_vec(op, &x, L, rt), other };
    int n = layout_nregs(L);
    LLVMValueRef *out = new_regs(cg, L);
    if (g.vec > 1)
        diamond(cg, rows_aligned(cg, op, &x, g.vec), n, g.vec, gather_arm, &g, out);
    else
        gather_arm(cg, &g, 1, out);
    set_regs(cg, op->res[0], L, out);
    report_indexed(cg, op, L, g.vec);
    return 0;
}

/* The stores of a scatter's registers, vectors of `vec` (the rows aligned
 * to them) or elements, each behind a branch on its being inside the
 * tensor and its primary owner's (the elements of a vector differ along
 * the last dim only, which does not wrap: they share both). */
static void scatter_arm(Cg *cg, Op *op, const Indexed *x, const Layout *L, LLVMValueRef *rv, int vec)
{
    int eb = elem_bytes(x->dt);
    LLVMTypeRef mty = cg_mem_type(cg, x->dt);
    for (int r = 0, n = layout_nregs(L); r < n; r += vec) {
        LLVMValueRef ok, p = indexed_addr(cg, op, x, L, r, &ok);
        ok = LLVMBuildAnd(cg->b, ok, cg_primary(cg, L, r), "");
        LLVMBasicBlockRef st = cg_new_block(cg, "scatter"), join = cg_new_block(cg, "scatter.j");
        LLVMBuildCondBr(cg->b, ok, st, join);
        LLVMPositionBuilderAtEnd(cg->b, st);
        LLVMValueRef v = to_mem(cg, rv[r], x->dt);
        if (vec > 1) {
            v = LLVMGetUndef(LLVMVectorType(mty, (unsigned)vec));
            for (int e = 0; e < vec; e++)
                v = LLVMBuildInsertElement(cg->b, v, to_mem(cg, rv[r + e], x->dt), cg_i32(cg, e), "");
        }
        LLVMSetAlignment(LLVMBuildStore(cg->b, v, p), (unsigned)(vec * eb));
        LLVMBuildBr(cg->b, join);
        LLVMPositionBuilderAtEnd(cg->b, join);
    }
}

int cg_lower_scatter(Cg *cg, Op *op)
{
    ValId vv = op->args[op->nargs - 1];
    const Type *vt = ir_type(cg->f, vv);
    Indexed x;
    if (indexed_init(cg, op, &x, vt->rank))
        return 1;
    const Layout *L;
    LLVMValueRef *rv = regs_of(cg, vv, &L, op->loc);
    int vec = indexed_vec(op, &x, L, vt);
    if (vec > 1) {
        LLVMBasicBlockRef bv = cg_new_block(cg, "scatter.vec"), be = cg_new_block(cg, "scatter.elem");
        LLVMBasicBlockRef join = cg_new_block(cg, "scatter.done");
        LLVMBuildCondBr(cg->b, rows_aligned(cg, op, &x, vec), bv, be);
        LLVMPositionBuilderAtEnd(cg->b, bv);
        scatter_arm(cg, op, &x, L, rv, vec);
        LLVMBuildBr(cg->b, join);
        LLVMPositionBuilderAtEnd(cg->b, be);
        scatter_arm(cg, op, &x, L, rv, 1);
        LLVMBuildBr(cg->b, join);
        LLVMPositionBuilderAtEnd(cg->b, join);
    } else {
        scatter_arm(cg, op, &x, L, rv, 1);
    }
    report_indexed(cg, op, L, vec);
    return 0;
}
