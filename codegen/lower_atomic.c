/* lower_atomic.c - ATOMIC_ADD of tile windows of global tensors (ir/ops.h):
 * `red.global.add` per element, or per 16-byte group where the target has
 * the vector form.
 *
 * The window access is a store's (mem_access.c): the value in the layout it
 * has (a product's accumulator keeps its fragments), each element added by
 * its primary owner only (copies of a broadcast add once), elements out of
 * the tensor's bounds skipped, a scalar value added by thread 0. A group of
 * `vec` contiguous f32 (the layout's run along a stride-1 last dim) is one
 * `red.global.add.v2/v4.f32` (TargetInfo.red_vec: sm_90 and later, PTX ISA
 * 8.1) when its rows are aligned (vec_ok) and all its elements lie inside
 * the row; else one `red.global.add` per element inside. Each group is one
 * inline asm block without a branch: the vector under one predicate, the
 * elements under their own. `red` returns nothing (no round trip, unlike
 * `atom`); the additions are relaxed at device scope, unordered with the
 * kernel's other memory accesses (what a kernel reads back of a tensor it
 * adds to is not defined until the launch ends).
 */
#include "cg_internal.h"

#include <stdio.h>

/* The PTX type of the addition. */
static const char *red_type(DType dt) { return dt == DT_F32 ? "f32" : dt == DT_U32 ? "u32" : "s32"; }

/* One group of n elements (words w[], 32-bit) at p: the first k (k <= 0:
 * none) lie inside and are added; all n as one vector when `vector`
 * (i1: aligned and k >= n, only when the target has vector red), else each
 * one below k. */
static void red_group(Cg *cg, const Access *ac, LLVMValueRef p, LLVMValueRef k, LLVMValueRef vector, int n,
                      LLVMValueRef *w)
{
    /* Operands: the n words, p, k, [vector]. */
    int ip = n, ik = n + 1, iv = n + 2;
    const char *ty = red_type(ac->dt);
    char code[2048], cons[128];
    size_t m = (size_t)snprintf(code, sizeof code, "{\n.reg .pred %%pv, %%pe;\n");
#define EMIT(...) m += (size_t)snprintf(code + m, sizeof code - m, __VA_ARGS__)
    if (vector) {
        EMIT("setp.ne.s32 %%pv, $%d, 0;\n@%%pv red.global.add.v%d.%s [$%d], {", iv, n, ty, ip);
        for (int e = 0; e < n; e++)
            EMIT("%s$%d", e ? ", " : "", e);
        EMIT("};\n");
    }
    for (int e = 0; e < n; e++) {
        if (vector)
            EMIT("setp.gt.and.s32 %%pe, $%d, %d, !%%pv;\n", ik, e);
        else
            EMIT("setp.gt.s32 %%pe, $%d, %d;\n", ik, e);
        EMIT("@%%pe red.global.add.%s [$%d+%d], $%d;\n", ty, ip, 4 * e, e);
    }
    EMIT("}");
#undef EMIT
    size_t c = exact_cons(cons, sizeof cons, n, "r", vector ? "l,r,r,~{memory}" : "l,r,~{memory}");
    words_asm_call(cg, code, m, cons, c, w, n, p, k, vector);
}

/* A value as the 32-bit word red.global.add takes. */
static LLVMValueRef word(Cg *cg, LLVMValueRef v)
{
    return LLVMBuildBitCast(cg->b, v, cg->t_i32, "");
}

/* The elements of register groups of `vec` (1: one element each). */
static void red_tile(Cg *cg, const Access *ac, const Layout *L, int vec, LLVMValueRef *vals)
{
    LLVMValueRef idx[TENSOR_MAXRANK];
    LLVMValueRef ok = vec > 1 ? vec_ok(cg, ac, vec) : NULL;
    bool vector = vec > 1 && cg->ti->red_vec && ac->dt == DT_F32 && (vec == 2 || vec == 4);
    for (int r = 0, n = layout_nregs(L); r < n; r += vec) {
        reg_index(cg, ac, L, r, idx);
        LLVMValueRef p = elem_addr(cg, ac, idx);
        LLVMValueRef rows = LLVMBuildAnd(cg->b, in_bounds_upto(cg, ac, idx, ac->rank - 1), cg_primary(cg, L, r), "");
        LLVMValueRef k;
        if (vec > 1) {
            k = row_room(cg, ac, idx, rows);
        } else {
            /* One element: inside (every masked dim) and primary -> 1, else 0. */
            LLVMValueRef in = LLVMBuildAnd(cg->b, in_bounds(cg, ac, idx), cg_primary(cg, L, r), "");
            k = LLVMBuildZExt(cg->b, in, cg->t_i32, "");
        }
        LLVMValueRef w[4];
        for (int e = 0; e < vec; e++)
            w[e] = word(cg, vals[r + e]);
        LLVMValueRef whole = NULL;
        if (vector)
            whole = LLVMBuildAnd(cg->b, ok, LLVMBuildICmp(cg->b, LLVMIntSGE, k, cg_i32(cg, vec), ""), "");
        red_group(cg, ac, p, k, whole, vec, w);
    }
}

int cg_lower_atomic_add(Cg *cg, Op *op)
{
    const Type *vt;
    const TileVal *v;
    Access ac;
    if (access_init_write(cg, op, &ac, &vt, &v))
        return 1;
    if (ac.dt != DT_F32 && ac.dt != DT_I32 && ac.dt != DT_U32) {
        diag_internal(cg->d, op->loc, "atomic_add on a %s tensor", dtype_name(ac.dt));
        return 1;
    }
    if (vt->kind != TY_TILE) {   /* a scalar: thread 0 adds it */
        LLVMValueRef in, p = scalar_write(cg, &ac, &in), w = word(cg, v->s);
        red_group(cg, &ac, p, LLVMBuildZExt(cg->b, in, cg->t_i32, ""), NULL, 1, &w);
        return 0;
    }
    const Layout *L = v->kind == TV_REGS ? v->L : cg_default_layout(cg, vt, last_contiguous(&ac));
    LLVMValueRef *vals = cg_materialize(cg, v, vt, L, op->loc);
    int vec = access_vec(&ac, L);
    if (vec > 4 || layout_nregs(L) % vec)
        vec = 1;
    red_tile(cg, &ac, L, vec, vals);
    bool vector = vec > 1 && cg->ti->red_vec && ac.dt == DT_F32;
    report_access(cg, op, "atomic add", L, vector ? vec : 1, 0, false);
    return 0;
}
