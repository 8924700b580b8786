/* lower_mem.c - LOAD of tile windows of global tensors. STORE is in
 * lower_store.c, the window access both share in mem_access.c and the L2
 * prefetch of the next wave's row in mem_prefetch.c; the scheme below
 * covers all four.
 *
 * Element (tile coordinate c) of a window at offsets o lives at
 * base + sum_d (o_d + c_k(d)) * stride_d (i64, stride of the last dim = 1).
 * When the layout gives each thread `vec` contiguous elements along a
 * stride-1 last dim, the access is one 16-byte vector per group; that path
 * runs when every row start is aligned (one uniform runtime test of the
 * strides and the last offset; the runtime guarantees 16-byte aligned base
 * pointers), else one small runtime loop moves element e of every group
 * per iteration (groups packed in vectors). Masked dims (iattr[0] bit d)
 * are predicated: an element or a vector of a row out of the tensor
 * reads the module's guard bytes (cg_guard_ptr) and takes `other` (or
 * zero), stores are skipped. No access touches a byte outside the
 * window's row: a vector across a masked row end is element-exact (one
 * inline asm block per group: the whole vector when the group lies
 * inside, else each element inside, load_group_exact / load_group_pieces);
 * the groups of a store that straddle the end are element-exact too, or go
 * through the element loop. Loads of tensors the kernel never writes carry
 * !invariant.load (ld.global.nc). Stores
 * build each narrow group's vector once, before their branches. A rank-1
 * window at an offset known to be a multiple of the vector gets no
 * alignment test and no unaligned path. A row window with a masked last
 * dim loads with no masks at all when that dim lies wholly inside the row
 * (one uniform test, ahead of the alignment branch).
 */
#include "cg_internal.h"

#include <stdlib.h>
#include <string.h>

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

/* `other` all zero bits (a constant): what the guard bytes read as, so a
 * masked-out element that reads them needs no select. */
static bool guard_value(LLVMValueRef other) { return other && LLVMIsConstant(other) && LLVMIsNull(other); }

/* One element at p if pred, else `other` (read at the guard address). */
static LLVMValueRef load_elem(Cg *cg, const Access *ac, LLVMValueRef p, LLVMValueRef pred, LLVMValueRef other,
                              bool vol)
{
    LLVMValueRef v;
    if (!is_true(pred))
        p = LLVMBuildSelect(cg->b, pred, p, cg_guard_ptr(cg), "");
    load_raw(cg, ac, p, 1, vol, &v);
    return is_true(pred) || guard_value(other) ? v : LLVMBuildSelect(cg->b, pred, v, other, "");
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

/* Elements of the row left from idx's last-dim index: size - index, or 0
 * when the group's row is out (pred false) or the index is negative. */
LLVMValueRef row_room(Cg *cg, const Access *ac, LLVMValueRef *idx, LLVMValueRef pred)
{
    LLVMValueRef k = LLVMBuildSub(cg->b, ac->ta->size[ac->rank - 1], idx[ac->rank - 1], "");
    pred = LLVMBuildAnd(cg->b, pred, last_ok(cg, ac, idx, 0), "");   /* also rejects idx < 0 */
    return LLVMBuildSelect(cg->b, pred, k, cg_i32(cg, 0), "");
}

/* The start of an exact group's asm block: %pf = "the group moves whole"
 * (k = $ik >= vec, and $ia != 0 when ia >= 0: the alignment flag). */
size_t exact_head(char *code, size_t size, int bits, int vec, int ik, int ia)
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
size_t exact_cons(char *cons, size_t size, int nw, const char *word, const char *rest)
{
    size_t c = 0;
    for (int j = 0; j < nw; j++)
        c += (size_t)snprintf(cons + c, size - c, "%s,", word);
    return c + (size_t)snprintf(cons + c, size - c, "%s", rest);
}

/* Element-exact groups: 16- or 32-bit elements, whole words, at most 16
 * bytes. */
bool exact_group_ok(const Access *ac, int vec)
{
    int bits = dtype_bits(ac->dt);
    return ac->dt != DT_BOOL && (bits == 16 || bits == 32) &&
           vec * bits % 32 == 0 && vec * bits <= 128;
}

/* Calls a group's asm (nw 32-bit words out) and returns its vec elements
 * (memory type). With `per_word` (elements of up to 32 bits), each word
 * is taken apart on its own (a legal 32-bit vector of 16- or 8-bit
 * elements, or the element itself): one vector of the whole group taken
 * apart cost the backend's type legalisation and DAG combining ~0.35M
 * instructions per group (layernorm [4096] W and B: 63.5M -> 60.6M to
 * compile, the PTX the same). Without it, the words are one vector of the
 * group's elements, taken apart: a diamond's join (whole_vector) then
 * passes that vector to its phi (there the words cost more). */
static void group_asm_call(Cg *cg, const Access *ac, const char *code, size_t n, const char *cons, size_t c,
                           LLVMValueRef *args, LLVMTypeRef *at, unsigned na, int vec, bool per_word,
                           LLVMValueRef *out)
{
    int bits = dtype_bits(ac->dt), nw = vec * bits / 32, epw = 32 / bits;
    LLVMTypeRef el[4] = { cg->t_i32, cg->t_i32, cg->t_i32, cg->t_i32 };
    LLVMTypeRef rt = nw == 1 ? cg->t_i32 : LLVMStructTypeInContext(cg->ctx, el, (unsigned)nw, 0);
    LLVMTypeRef ft = LLVMFunctionType(rt, at, na, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(ft, (char *)code, n, (char *)cons, c, 0, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef r = LLVMBuildCall2(cg->b, ft, fn, args, na, "");
    if (per_word && bits <= 32) {
        LLVMTypeRef wt = epw == 1 ? ac->mty : LLVMVectorType(ac->mty, (unsigned)epw);
        for (int j = 0; j < nw; j++) {
            LLVMValueRef w = LLVMBuildBitCast(cg->b, nw == 1 ? r : LLVMBuildExtractValue(cg->b, r, (unsigned)j, ""),
                                              wt, "");
            for (int e = 0; e < epw; e++)
                out[j * epw + e] = epw == 1 ? w : LLVMBuildExtractElement(cg->b, w, cg_i32(cg, e), "");
        }
        return;
    }
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
    bool other = uother && !guard_value(uother);
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
    LLVMValueRef args[4];
    LLVMTypeRef at[4];
    unsigned na = 0;
    args[na] = p, at[na++] = LLVMTypeOf(p);
    args[na] = k, at[na++] = cg->t_i32;
    if (other)
        args[na] = LLVMBuildBitCast(cg->b, uother, it, ""), at[na++] = it;
    if (aligned)
        args[na] = LLVMBuildZExt(cg->b, aligned, cg->t_i32, ""), at[na++] = cg->t_i32;
    group_asm_call(cg, ac, code, n, cons, c, args, at, na, vec, false, out);
}

/* Element-exact groups without a branch: any element of 8 to 64 bits,
 * whole 32-bit words, at most 16 bytes. */
static bool pieces_ok(const Access *ac, int vec)
{
    int bits = dtype_bits(ac->dt);
    return bits >= 8 && bits <= 64 && vec * bits % 32 == 0 && vec * bits <= 128;
}

/* The part of a group inside the row when it ends inside the group: the
 * elements [0, k) for k inside [lo, hi), as aligned power-of-two pieces
 * read into the group's words ($0.., address $ip, k $ik): the left half
 * [lo, mid) of m elements when mid <= k < hi, that is when k / m (%q<log2
 * m>, or k itself) is mid / m, then the same inside each half. A piece
 * narrower than a word that starts one is loaded zero-extended (the rest
 * of that word lies at or past k); one inside a word (8-bit elements) is
 * inserted with bfi. */
static size_t tail_pieces(char *code, size_t size, const char *q, int bits, int ip, int ik, int lo, int hi)
{
    if (hi - lo < 2)
        return 0;
    int mid = (lo + hi) / 2, m = mid - lo, pb = m * bits, w = lo * bits / 32, bit = lo * bits % 32,
        at = lo * bits / 8, lg = 0;
    while ((1 << lg) < m)
        lg++;
    size_t n = lg ? (size_t)snprintf(code, size, "setp.eq.s32 %%pe, %%q%d, %d;\n", lg, mid / m)
                  : (size_t)snprintf(code, size, "setp.eq.s32 %%pe, $%d, %d;\n", ik, mid);
#define EMIT(...) n += (size_t)snprintf(code + n, size - n, __VA_ARGS__)
    if (pb < 32 && bit)
        EMIT("@%%pe ld.global%s.u%d %%t, [$%d+%d];\n@%%pe bfi.b32 $%d, %%t, $%d, %d, %d;\n", q, pb, ip, at, w, w, bit,
             pb);
    else if (pb < 32)
        EMIT("@%%pe ld.global%s.u%d $%d, [$%d+%d];\n", q, pb, w, ip, at);
    else if (pb == 32)
        EMIT("@%%pe ld.global%s.b32 $%d, [$%d+%d];\n", q, w, ip, at);
    else
        EMIT("@%%pe ld.global%s.v2.b32 {$%d, $%d}, [$%d+%d];\n", q, w, w + 1, ip, at);
#undef EMIT
    n += tail_pieces(code + n, size - n, q, bits, ip, ik, lo, mid);
    return n + tail_pieces(code + n, size - n, q, bits, ip, ik, mid, hi);
}

/* One group of `vec` elements at p whose first k lie inside (k <= 0:
 * none), element-exact and branch free, in one inline asm block: the
 * whole vector read (unpredicated) from p when k >= vec, else from the
 * guard bytes (zero, cg_guard_ptr; the address selected outside); then,
 * when the row ends inside the group, its elements [0, k) as aligned
 * pieces (tail_pieces) read into the same words, each under its own
 * predicate. The elements at and past k are zero. For the
 * masked vectors that take no exact group with a branch
 * (load_group_exact): under a register cap, where that branch cost ptxas
 * spills (and so did every other element-exact form tried here: this one
 * keeps the unpredicated vector load of the branch-free form, and ptxas
 * allocates it as before), 8- and 64-bit elements, a non-uniform
 * `other`. Nothing outside [p, p + k elements) is read: not the next
 * row's bytes, not past the tensor's end (issue 32: bf16 layernorm's W
 * at N = 4097 read 16 bytes at byte 8192 of 8194). */
static void load_group_pieces(Cg *cg, const Access *ac, LLVMValueRef p, LLVMValueRef k, int vec, LLVMValueRef *out)
{
    int bits = dtype_bits(ac->dt), nw = vec * bits / 32;
    const char *q = ac->readonly ? ".nc" : "";
    LLVMValueRef ps = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGE, k, cg_i32(cg, vec), ""), p,
                                      cg_guard_ptr(cg), "");
    /* Operands: the nw words out, then p, k, ps. */
    LLVMValueRef args[3] = { p, k, ps };
    LLVMTypeRef at[3] = { LLVMTypeOf(p), cg->t_i32, LLVMTypeOf(p) };
    char code[4096], cons[256];
    size_t n = (size_t)snprintf(code, sizeof code, "{\n.reg .pred %%pe;\n.reg .b32 %%q<%d>;\n%s", 5,
                                bits == 8 ? ".reg .b32 %t;\n" : "");
    if (nw == 1)
        n += (size_t)snprintf(code + n, sizeof code - n, "ld.global%s.b32 $0, [$%d];\n", q, nw + 2);
    else {
        n += (size_t)snprintf(code + n, sizeof code - n, "ld.global%s.v%d.b32 {", q, nw);
        for (int j = 0; j < nw; j++)
            n += (size_t)snprintf(code + n, sizeof code - n, "%s$%d", j ? ", " : "", j);
        n += (size_t)snprintf(code + n, sizeof code - n, "}, [$%d];\n", nw + 2);
    }
    for (int lg = 1; (2 << lg) <= vec; lg++)   /* k / m for the pieces of m = 2^lg elements */
        n += (size_t)snprintf(code + n, sizeof code - n, "shr.u32 %%q%d, $%d, %d;\n", lg, nw + 1, lg);
    n += tail_pieces(code + n, sizeof code - n, q, bits, nw, nw + 1, 0, vec);
    n += (size_t)snprintf(code + n, sizeof code - n, "}");
    size_t c = exact_cons(cons, sizeof cons, nw, "=r", "l,r,l");
    group_asm_call(cg, ac, code, n, cons, c, args, at, 3, vec, true, out);
}

/* Masked vectors of a masked last dim: element-exact groups, with the
 * branch (exact, load_group_exact: a uniform `other`, 16- and 32-bit
 * elements) or without (load_group_pieces; then a nonzero `other` is
 * selected per element, unless the lanes past the end are dead). */
static void load_vecs_masked(Cg *cg, const Access *ac, const Layout *L, int vec, LLVMValueRef uother,
                             LLVMValueRef *other, bool exact, LLVMValueRef aligned, LLVMValueRef *out)
{
    LLVMValueRef idx[TENSOR_MAXRANK];
    bool zero = guard_value(uother) || ac->dead_tail;
    for (int r = 0, n = layout_nregs(L); r < n; r += vec) {
        reg_index(cg, ac, L, r, idx);
        LLVMValueRef p = elem_addr(cg, ac, idx), k = row_room(cg, ac, idx, in_bounds_upto(cg, ac, idx, ac->rank - 1));
        if (exact) {
            load_group_exact(cg, ac, p, k, vec, uother, aligned, &out[r]);
            continue;
        }
        load_group_pieces(cg, ac, p, k, vec, &out[r]);
        for (int e = 0; e < vec; e++) {
            out[r + e] = from_mem(cg, out[r + e], ac->dt);
            if (!zero)
                out[r + e] = LLVMBuildSelect(cg->b, LLVMBuildICmp(cg->b, LLVMIntSGT, k, cg_i32(cg, e), ""),
                                             out[r + e], other[r + e], "");
        }
    }
}

/* Vectors whose last dim is not masked: a group of a row out of the
 * tensor reads the guard address and takes `other` (which the guard's
 * zero bytes already are when `other` is zero: no select). */
static void load_vecs(Cg *cg, const Access *ac, const Layout *L, int vec, LLVMValueRef *other, LLVMValueRef *out)
{
    LLVMValueRef idx[TENSOR_MAXRANK];
    for (int r = 0, n = layout_nregs(L); r < n; r += vec) {
        reg_index(cg, ac, L, r, idx);
        LLVMValueRef p = elem_addr(cg, ac, idx), pred = in_bounds_upto(cg, ac, idx, ac->rank - 1);
        if (!is_true(pred))
            p = LLVMBuildSelect(cg->b, pred, p, cg_guard_ptr(cg), "");
        load_raw(cg, ac, p, vec, false, &out[r]);
        for (int e = 0; e < vec && !is_true(pred); e++)
            if (!guard_value(other[r + e]))
                out[r + e] = LLVMBuildSelect(cg->b, pred, out[r + e], other[r + e], "");
    }
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
            p = LLVMBuildSelect(cg->b, ok, p, cg_guard_ptr(cg), "");
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

typedef struct TileCtx {
    const Access *ac;
    LLVMValueRef ok;         /* vector alignment test (vec_ok) */
    const Layout *L;
    int vec;
    LLVMValueRef *other;
    LLVMValueRef uniform;    /* uniform `other` (zero if none), or NULL */
    bool exact;              /* exact groups with a branch (a path behind a branch, or no register cap) */
    bool took_exact;         /* some path loaded exact groups with a branch */
    bool took_pieces;          /* some path loaded exact groups without a branch */
} TileCtx;

/* Arm 0: aligned vectors (a masked last dim: element-exact groups, with
 * a branch where t->exact allows); arm 1: the element loop. */
static void tile_arm(Cg *cg, void *ctx, int arm, LLVMValueRef *out)
{
    TileCtx *t = ctx;
    if (arm == 1) {
        load_loop(cg, t->ac, t->L, t->vec, t->other, t->uniform, out);
    } else if (!last_masked(t->ac)) {
        load_vecs(cg, t->ac, t->L, t->vec, t->other, out);
    } else if (t->exact && t->uniform && exact_group_ok(t->ac, t->vec)) {
        load_vecs_masked(cg, t->ac, t->L, t->vec, t->uniform, t->other, true, NULL, out);
        t->took_exact = true;
    } else if (pieces_ok(t->ac, t->vec)) {
        load_vecs_masked(cg, t->ac, t->L, t->vec, t->uniform, t->other, false, NULL, out);
        t->took_pieces = true;
    } else {
        load_elems(cg, t->ac, t->L, t->other, out);
    }
}

/* The aligned masked vectors, or (not aligned) the element loop. */
static void tile_general(Cg *cg, TileCtx *t, LLVMValueRef *out)
{
    if (is_true(t->ok))
        tile_arm(cg, t, 0, out);
    else if (t->uniform && last_masked(t->ac) && exact_group_ok(t->ac, t->vec)) {
        /* Element-exact groups take unaligned rows too: no element loop. */
        load_vecs_masked(cg, t->ac, t->L, t->vec, t->uniform, t->other, true, t->ok, out);
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

/* Exact groups with a branch on the branch-free path too? In kernels
 * without a register cap (.minnctapersm: vector_add) yes; under one
 * (layernorm's W and B, 2-8 groups per thread) the branch in each group
 * cost ptxas 104-196 B of spills, so those take the predicated groups
 * (load_group_pieces; docs/codegen.md, "Element-exact row tails"). */
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
    TileCtx t = { ac, vec_ok(cg, ac, vec), L, vec, other, uother, exact_hot(cg), false, false };
    if (!last_masked(ac) || !cg_simt_kernel(cg) || is_true(t.ok)) {
        tile_general(cg, &t, out);
        *tail = t.took_exact * 1 + t.took_pieces * 2;
        return out;
    }
    diamond(cg, LLVMBuildAnd(cg->b, t.ok, last_full(cg, ac), "ld.full"), n, vec, tile_full_arm, &t, out);
    *tail = t.took_exact * 1 + t.took_pieces * 2;
    return out;
}

/* tail: 1 = the row tail moves in exact groups with a branch (some path),
 * 2 = in exact groups without (load_group_pieces; dead: their lanes past
 * the end unused). */
void report_access(Cg *cg, Op *op, const char *what, const Layout *L, int vec, int tail, bool dead)
{
    if (!cg->report)
        return;
    sb_printf(cg->report, "  %s %s at %d:%d: ", what, ir_val(cg->f, op->args[0])->name ? ir_val(cg->f, op->args[0])->name : "?",
              op->loc.line, op->loc.col);
    layout_print(L, cg->report);
    sb_printf(cg->report, ", %d-byte accesses%s%s\n", vec * dtype_bits((DType)ir_type(cg->f, op->args[0])->dtype) / 8,
              op->iattr[0] ? ", masked" : "",
              (tail & 2) && dead ? " (element-exact at the row end, in pieces; lanes past the end unused)"
              : (tail & 2)       ? " (element-exact at the row end, in pieces)"
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
 * Only the values go: the group across the end still reads only its
 * elements inside the row (load_group_pieces). */
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

bool dead_tail(Cg *cg, const Op *op)
{
    if (op->code != OP_LOAD || !tail_window(cg->f, op))
        return false;
    DeadTail dt = { op, tc_zalloc(cg->f->nvals), true };
    if (!dt.taint)
        return false;
    dt.taint[op->res[0]] = 1;
    ir_walk(cg->f, &cg->f->body, dead_tail_visit, &dt);
    tc_free(dt.taint);
    return dt.ok;
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
    else
        prefetch_next_trip(cg, &ac, rt);
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_REGS, .L = L, .r = regs, .leaf = ac.dt == DT_BF16,
                                      .lazy = access_vec(&ac, L) > 1 && dtype_bits(ac.dt) < 32 };
    report_access(cg, op, "load", L, access_vec(&ac, L), tail, ac.dead_tail);
    return 0;
}
