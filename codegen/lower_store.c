/* lower_store.c - STORE of tile windows of global tensors (the scheme is
 * lower_mem.c's): the groups of a stored tile, the element loop of the
 * unaligned path, whole and element-exact vectors.
 */
#include "cg_internal.h"

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
    LLVMValueRef words[4];
    LLVMValueRef w = LLVMBuildBitCast(cg->b, v, nw == 1 ? cg->t_i32 : LLVMVectorType(cg->t_i32, (unsigned)nw), "");
    for (int j = 0; j < nw; j++)
        words[j] = nw == 1 ? w : LLVMBuildExtractElement(cg->b, w, cg_i32(cg, j), "");
    words_asm_call(cg, code, n, cons, c, words, nw, p, k, aligned);
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
    const Type *vt;
    const TileVal *v;
    Access ac;
    if (access_init_write(cg, op, &ac, &vt, &v))
        return 1;
    if (vt->kind != TY_TILE) {   /* one thread writes a scalar */
        LLVMValueRef pred, p = scalar_write(cg, &ac, &pred);
        store_group(cg, &ac, p, pred, 1, to_mem(cg, v->s, ac.dt));
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
