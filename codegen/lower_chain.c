/* lower_chain.c - kernels whose matrix products feed another product
 * (attention: s = q @ k^T, p = exp2(s - max), acc += bf16(p) @ v).
 *
 * The FlashAttention-2 structure: every warp owns whole rows of every
 * accumulator (a wm x 1 warp grid, e.g. 128 rows = 4 warps x 32 rows), so
 *  - the accumulator of the first product, cast elementwise, already is the
 *    A operand of the second one (lower_mma.c renumbers registers: no shared
 *    memory);
 *  - row reductions (rowmax, rowsum) combine in-thread and then over the 4
 *    lanes of a quad with butterfly shuffles (lower_xfer.c's generic path on
 *    a layout with wpc = 1 along the reduced dim): no shared memory;
 *  - the row vectors (max, sum) live in the slice of the accumulator layout,
 *    loop-carried as such; broadcasting them back over any accumulator of
 *    the same rows is a register renumbering (cg_chain_renumber).
 *
 * The warps and whether two warp groups take turns are the schedule pass's
 * (passes/schedule.c, Func.sched). Entry points: cg_chain_acc_warps (the
 * warp grid, from lower_mma.c), cg_chain_anchors
 * (default layouts of the accumulator shapes and their rows), and
 * cg_chain_renumber (a conversion that moves no data, from lower_xfer.c);
 * cg_chain_turns / cg_chain_turn (two warp groups taking turns at the
 * tensor cores, from codegen.c and lower_mma.c).
 */
#include "cg_internal.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

/* Warps only along M: wm = the warps that fit 16-row blocks, wn = 1. */
void cg_chain_acc_warps(const Cg *cg, int64_t m, int *wm, int *wn)
{
    *wm = pass_rows_warps(m, cg->nwarps);
    *wn = 1;
}

/* ---- default layouts ---- */

void cg_set_anchor(Cg *cg, int rank, const int64_t *shape, const Layout *L)
{
    int i = 0;
    while (i < cg->nanchors && !(cg->anchors[i].rank == rank &&
                                 memcmp(cg->anchors[i].shape, shape, sizeof(int64_t) * (size_t)rank) == 0))
        i++;
    if (i == (int)TC_COUNTOF(cg->anchors))
        return;
    if (i == cg->nanchors) {
        cg->nanchors++;
        cg->anchors[i].rank = rank;
        memcpy(cg->anchors[i].shape, shape, sizeof(int64_t) * (size_t)rank);
    }
    cg->anchors[i].L = L;
}

static bool anchor_visit(Func *f, Op *op, void *ctx)
{
    Cg *cg = ctx;
    if (op->code != OP_DOT)
        return true;
    const Type *t = ir_type(f, op->res[0]);
    if (t->rank != 2 || t->shape[0] % 16 || t->shape[1] % 8)
        return true;
    int wm, wn;
    cg_chain_acc_warps(cg, t->shape[0], &wm, &wn);
    const Layout *L = cg_layout_dup(cg, layout_mma_acc(t->shape[0], t->shape[1], wm, wn, cg->nwarps));
    cg_set_anchor(cg, 2, t->shape, L);
    cg_set_anchor(cg, 1, t->shape, cg_layout_dup(cg, layout_slice(L, 1)));
    return true;
}

/* Tiles of an accumulator's shape (masks from iota, splats, row vectors)
 * default to the accumulator layout and its row slice, so that they meet
 * the products' results without a conversion. */
void cg_chain_anchors(Cg *cg, Func *f)
{
    ir_walk(f, &f->body, anchor_visit, cg);
}

/* ---- conversions that move no data ---- */

static int64_t lin(const int64_t *c, const int64_t *shape, int rank)
{
    int64_t o = 0;
    for (int k = 0; k < rank; k++)
        o = o * shape[k] + c[k];
    return o;
}

/* map[i] = the register of `from` that holds the element `to` keeps in
 * register i, the same in every thread; false if some thread lacks one.
 * Thread 0 gives the candidate map; every other thread must then hold in
 * register map[i] of `from` the element of its register i of `to`. */
static bool same_thread_map(Cg *cg, const Layout *from, const Layout *to, int *map)
{
    int rank = layout_rank(to), nf = layout_nregs(from), nt = layout_nregs(to);
    int64_t shape[TILE_MAXRANK], numel = 1, c[TILE_MAXRANK], cf[TILE_MAXRANK];
    for (int a = 0; a < rank; a++) {
        shape[a] = to->pshape[layout_pdim(to, a)];
        if (from->pshape[layout_pdim(from, a)] != shape[a])
            return false;
        numel *= shape[a];
    }
    if (numel > (1 << 20))
        return false;
    int *at = arena_alloc(cg->a, sizeof(int) * (size_t)numel);
    for (int r = 0; r < nf; r++) {
        layout_coord(from, 0, r, c);
        at[lin(c, shape, rank)] = r + 1;
    }
    for (int r = 0; r < nt; r++) {
        layout_coord(to, 0, r, c);
        if ((map[r] = at[lin(c, shape, rank)] - 1) < 0)
            return false;
    }
    /* every other thread, from the thread and register parts of the
     * coordinates (layout_coord_parts), each worked out once */
    int64_t *rt = arena_alloc(cg->a, sizeof(int64_t) * (size_t)(nt + 1) * TILE_MAXRANK);
    int64_t *rf = arena_alloc(cg->a, sizeof(int64_t) * (size_t)(nf + 1) * TILE_MAXRANK);
    for (int r = 0; r < nt; r++)
        layout_coord_parts(to, -1, r, NULL, rt + (size_t)r * TILE_MAXRANK);
    for (int r = 0; r < nf; r++)
        layout_coord_parts(from, -1, r, NULL, rf + (size_t)r * TILE_MAXRANK);
    for (int t = 1; t < cg->nwarps * 32; t++) {
        layout_coord_parts(to, t, -1, c, NULL);
        layout_coord_parts(from, t, -1, cf, NULL);
        for (int r = 0; r < nt; r++)
            for (int a = 0; a < rank; a++)
                if ((c[a] + rt[(size_t)r * TILE_MAXRANK + a]) % shape[a] !=
                    (cf[a] + rf[(size_t)map[r] * TILE_MAXRANK + a]) % shape[a])
                    return false;
    }
    return true;
}

/* The map of same_thread_map for (from, to), or NULL when some thread
 * lacks an element. Worked out once per pair of layouts: the walk over
 * every thread and register is ~50k coordinates for a 128 x 128
 * accumulator, and attention converts between the same few layouts at
 * every row broadcast. */
struct CgRenumber {
    Layout from, to;
    int *map;
    struct CgRenumber *next;
};

static const int *renumber_map(Cg *cg, const Layout *from, const Layout *to)
{
    for (struct CgRenumber *e = cg->renum; e; e = e->next)
        if (layout_eq(&e->from, from) && layout_eq(&e->to, to))
            return e->map;
    struct CgRenumber *e = arena_alloc(cg->a, sizeof *e);
    e->from = *from;
    e->to = *to;
    e->map = arena_alloc(cg->a, sizeof(int) * (size_t)layout_nregs(to));
    if (!same_thread_map(cg, from, to, e->map))
        e->map = NULL;
    e->next = cg->renum;
    cg->renum = e;
    return e->map;
}

/* Registers of `to` picked from `from` when every thread already holds
 * what it needs (an accumulator's row vector against another accumulator
 * of the same rows, a broadcast of one): NULL otherwise. */
LLVMValueRef *cg_chain_renumber(Cg *cg, LLVMValueRef *regs, const Layout *from, const Layout *to)
{
    if (layout_rank(from) != layout_rank(to) || from->nwarps != to->nwarps || !layout_is_mma(from))
        return NULL;
    int nt = layout_nregs(to);
    const int *map = renumber_map(cg, from, to);
    if (!map)
        return NULL;
    LLVMValueRef *out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)nt);
    for (int r = 0; r < nt; r++)
        out[r] = regs[map[r]];
    return out;
}

/* ---- rescaling a loop-carried accumulator ---- */

/* Is op `acc * broadcast(rows)` (either order) with acc a loop-carried f32
 * tile (a block argument)? Then *x is acc's operand index. */
bool cg_chain_rescale(Cg *cg, Op *op, int *x)
{
    Func *f = cg->f;
    if (!cg->mma_rows_only || op->code != OP_MUL || op->nargs != 2)
        return false;
    for (int i = 0; i < 2; i++) {
        const Value *a = ir_val(f, op->args[i]);
        const Op *b = ir_val(f, op->args[1 - i])->def;
        if (!a->def && a->type.kind == TY_TILE && a->type.dtype == DT_F32 && b && b->code == OP_BROADCAST) {
            *x = i;
            return true;
        }
    }
    return false;
}

/* out[r] = x[r] * s[r], where s repeats a few row factors (a broadcast row
 * vector): when every factor held by the warp is exactly 1 (no row's
 * maximum moved: the usual case once an online softmax has seen a few key
 * blocks), the whole warp skips the multiplies (x * 1 == x exactly). The
 * vote keeps the branch uniform. Only for accumulators of 128+ registers
 * per thread (D = 128): at D = 64 the 64 multiplies saved per block are
 * few, and the branch moved ptxas' register use at the 255 limit into
 * spills (64 B at D = 64, BN = 128, causal). Returns out (n registers). */
LLVMValueRef *cg_chain_scale_or_skip(Cg *cg, LLVMValueRef *x, LLVMValueRef *s, int n)
{
    LLVMValueRef one = LLVMConstReal(cg->t_f32, 1.0), unit = NULL, uniq[CG_MAX_REPEATED];
    int *idx = arena_alloc(cg->a, sizeof(int) * (size_t)n), nu = n < 128 ? 0 : cg_repeated_values(s, n, uniq, idx);
    if (!nu)
        return NULL;   /* not a broadcast of a few row factors (or a small accumulator) */
    for (int k = 0; k < nu; k++) {
        LLVMValueRef eq = LLVMBuildFCmp(cg->b, LLVMRealOEQ, uniq[k], one, "");
        unit = unit ? LLVMBuildAnd(cg->b, unit, eq, "") : eq;
    }
    LLVMValueRef args[2] = { LLVMConstInt(cg->t_i32, 0xffffffffu, 0), unit };
    LLVMValueRef all = cg_call(cg, "llvm.nvvm.vote.all.sync", LLVMInt1TypeInContext(cg->ctx), args, 2);
    LLVMBasicBlockRef from = LLVMGetInsertBlock(cg->b);
    LLVMBasicBlockRef mul = cg_new_block(cg, "rescale"), join = cg_new_block(cg, "rescale.done");
    LLVMBuildCondBr(cg->b, all, join, mul);
    LLVMPositionBuilderAtEnd(cg->b, mul);
    LLVMValueRef *prod = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int r = 0; r < n; r++)
        prod[r] = LLVMBuildFMul(cg->b, x[r], s[r], "");
    LLVMBuildBr(cg->b, join);
    LLVMPositionBuilderAtEnd(cg->b, join);
    LLVMValueRef *out = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)n);
    for (int r = 0; r < n; r++) {
        out[r] = LLVMBuildPhi(cg->b, cg->t_f32, "");
        LLVMValueRef in[2] = { x[r], prod[r] };
        LLVMBasicBlockRef bb[2] = { from, mul };
        LLVMAddIncoming(out[r], in, bb, 2);
    }
    return out;
}

/* ---- two warp groups taking turns at the tensor cores ----
 * A loop body with exactly two products (attention: s = q @ k^T, then
 * acc += p @ v) on a block of 8k rows-only warps of 32 rows each (two
 * FlashAttention-2 tiles of 128 rows; the loop's block-wide barrier also
 * goes, below: decoupled turns): warps 0 .. n/2-1 form group 0 and the
 * rest group 1, so that each scheduler holds one warp of each. Named
 * barriers 1-3 order the groups' products within a trip:
 *   group 0: first product, arrive(1); softmax; sync(2); second product, arrive(3)
 *   group 1: sync(1); first product, arrive(2); softmax; sync(3); second product
 * so the products run as G0 first, G1 first, G0 second, G1 second, and each
 * group's softmax runs under the other group's products instead of both
 * groups' softmax leaving the tensor cores idle together. Each barrier
 * completes once per trip (n/2 warps arrive, n/2 wait), so the groups
 * stay in step with the loop's own top barrier; nothing else changes.
 * Measured on an H200 as hand-edited PTX of the same placement (sm_90a,
 * 256x64 tiles, one block of 8 warps, 2026-12-01 04:12): +7% to +9% over
 * the same tile without it (docs/codegen.md, bench/RESULTS.md). */

static bool direct_dots(const Block *b, const Op **first, const Op **second)
{
    int n = 0;
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i]->code == OP_DOT) {
            if (n < 2)
                (n ? second : first)[0] = b->ops[i];
            n++;
        }
    return n == 2;
}

LLVMValueRef cg_chain_in_group(Cg *cg, int g)
{
    LLVMValueRef in1 = LLVMBuildICmp(cg->b, LLVMIntUGE, cg->warp, cg_i32(cg, cg->nwarps / 2), "");
    return g ? in1 : LLVMBuildNot(cg->b, in1, "");
}

/* `@p INSTR` with p = (group == g): one predicated instruction, no branch
 * (cons: the asm constraints after the predicate's "r"). */
static LLVMValueRef group_asm(Cg *cg, int g, const char *instr, const char *cons)
{
    char code[128];
    snprintf(code, sizeof code, "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p %s }", instr);
    LLVMValueRef p = LLVMBuildZExt(cg->b, cg_chain_in_group(cg, g), cg->t_i32, "");
    LLVMTypeRef fty = LLVMFunctionType(cg->t_void, &cg->t_i32, 1, 0);
    LLVMValueRef as = LLVMGetInlineAsm(fty, code, strlen(code), (char *)cons, strlen(cons), 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(cg->b, fty, as, &p, 1, "");
}

static void convergent(Cg *cg, LLVMValueRef call)
{
    unsigned k = LLVMGetEnumAttributeKindForName("convergent", 10);
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(cg->ctx, k, 0));
}

/* `@p OP id, threads` (OP a barrier instruction: bar.sync, bar.arrive,
 * barrier.sync) for group g, convergent, keeping memory accesses on their
 * side of it (the decoupled turns' barriers order the groups' copies and
 * reads of shared slots). */
static void group_bar_op(Cg *cg, int g, const char *op, int id, int threads)
{
    char instr[64];
    snprintf(instr, sizeof instr, "%s %d, %d;", op, id, threads);
    convergent(cg, group_asm(cg, g, instr, "r,~{memory}"));
}

/* `@p bar.sync|bar.arrive id, threads` for group g. */
static void group_bar(Cg *cg, int g, bool sync, int id, int threads)
{
    group_bar_op(cg, g, sync ? "bar.sync" : "bar.arrive", id, threads);
}

/* A turn barrier: group g syncs on or arrives at barrier id with the whole
 * block counted. */
static void turn_bar(Cg *cg, int g, bool sync, int id)
{
    group_bar(cg, g, sync, id, cg->nwarps * 32);
}

/* A turn barrier both groups wait on, each at its own instruction: the
 * non-aligned `barrier.sync`. The aligned form (`bar.sync`) promises that
 * every participating thread executes the same instruction; two groups
 * waiting at two instructions break that promise (compute-sanitizer
 * synccheck: "divergent threads in block"). One group syncing while the
 * other arrives keeps the aligned forms.
 *
 * Group 0's wait is one predicated instruction. Group 1's comes right after
 * its first product, where the registers are fullest, and there a
 * predicated non-aligned barrier makes ptxas spill (sm_90: 24 bytes, about
 * 3% at D = 128; bench/RESULTS.md, 2026-12-05 and 12-06). So every warp
 * executes that one unpredicated: group 1's on barrier `id` with the block
 * counted, group 0's warps on a barrier of their own (TURN_WARP_BAR,
 * the group's threads counted), where they meet each other. (One barrier
 * of each warp's own, counting one warp, lets group 0 through at once but
 * loses compute-sanitizer racecheck the warps' barrier intervals: a
 * reported race across a later block-wide bar.sync; bench/RESULTS.md,
 * 2026-12-07.) */
#define TURN_WARP_BAR 7
static void turn_wait_apart(Cg *cg, int g, int id)
{
    if (g == 0) {
        group_bar_op(cg, g, "barrier.sync", id, cg->nwarps * 32);
        return;
    }
    LLVMValueRef in1 = cg_chain_in_group(cg, 1);
    LLVMValueRef a[2] = {
        LLVMBuildSelect(cg->b, in1, cg_i32(cg, id), cg_i32(cg, TURN_WARP_BAR), ""),
        LLVMBuildSelect(cg->b, in1, cg_i32(cg, cg->nwarps * 32), cg_i32(cg, cg->nwarps * 16), ""),
    };
    convergent(cg, cg_asm_call(cg, NULL, "barrier.sync $0, $1;", "r,r,~{memory}", a, 2));
}

void cg_chain_group_sync(Cg *cg)
{
    for (int g = 0; g < 2; g++)
        group_bar(cg, g, true, 4 + g, cg->nwarps * 16);
}

/* Decoupled turns (attention's 256-row tile; the
 * measurements in docs/codegen.md). With the turns, the
 * loop's block-wide top barrier (every thread's copies of this trip's K
 * and V have landed; every warp is done with the slots the next copies
 * overwrite) holds group 0's next first product back until group 1's
 * second product ends, and holds each group's warps in step. The turn
 * barriers already meet once per trip for each group (a bar.sync waits for
 * all its threads: group 0's warps meet at barrier 2, group 1's at 1 and
 * 3), so the top barrier can go if the copies move:
 *   group 0: K(j+1) copied by group 0 alone at the top of trip j, waited
 *     for just before barrier 2 of trip j (so its warps see each other's
 *     copies there, and group 1 sees them through barrier 1 of trip j+1);
 *     K(j-1)'s slot is free then: every warp passed barrier 2 of trip j-1.
 *   group 1: V(j+1) copied by group 1 alone after barrier 1 of trip j,
 *     which it syncs at the top of the trip (instead of right before its
 *     first product), waited for at the top of trip j+1 before barrier 1
 *     (its warps meet there; group 0 sees V through barrier 2); V(j-1)'s
 *     slot is free then: group 1's warps met at barrier 1 after their
 *     second product of j-1, group 0 arrived at barrier 3 after its own.
 * Before the loop every thread waits for its copies and the block meets
 * once (the first trip's K and V). Applied when the loop's copies fill
 * exactly the two products' B buffers and nothing else in it writes
 * shared memory. */

static ValId dot_smem_buffer(Func *f, ValId v)
{
    Op *d = ir_val(f, v)->def;
    if (d && d->code == OP_TRANS)
        d = ir_val(f, d->args[0])->def;
    return d && d->code == OP_SMEM_LOAD ? d->args[0] : 0;
}

typedef struct SplitScan { ValId buf[2]; int n[2], other; } SplitScan;

static bool split_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    SplitScan *s = ctx;
    if (op->code == OP_ASYNC_COPY) {
        if (op->args[0] == s->buf[0])
            s->n[0]++;
        else if (op->args[0] == s->buf[1])
            s->n[1]++;
        else
            s->other++;
    } else if (op->code == OP_SMEM_STORE) {
        s->other++;
    }
    return true;
}

static void split_turns(Cg *cg, Func *f, const Op *loop, const Op *a, const Op *b)
{
    const Block *body = &loop->regions[0];
    SplitScan s = { { dot_smem_buffer(f, a->args[1]), dot_smem_buffer(f, b->args[1]) }, { 0, 0 }, 0 };
    const Op *bar = NULL;
    int nbar = 0;
    for (int i = 0; i < body->nops; i++)
        if (body->ops[i]->code == OP_BARRIER) {
            bar = body->ops[i];
            nbar++;
        }
    ir_walk(f, (Block *)body, split_visit, &s);
    const char *why = !s.buf[0] || !s.buf[1] || s.buf[0] == s.buf[1] ? "the products' B operands are not two "
                      "shared buffers" : dot_smem_buffer(f, a->args[0]) == s.buf[1] ||
                      dot_smem_buffer(f, b->args[0]) == s.buf[0] ? "a product reads the other's buffer" :
                      !s.n[0] || !s.n[1] || s.other ? "the loop's copies fill other buffers (or not both)" :
                      nbar != 1 ? "not one barrier at the loop's top" :
                      cg->nsplit == (int)(sizeof cg->split / sizeof cg->split[0]) ? "too many loops" : NULL;
    if (why) {
        if (cg->report)
            sb_printf(cg->report, "  loop at %d:%d keeps its block-wide barrier (no decoupled turns: %s)\n",
                      loop->loc.line, loop->loc.col, why);
        return;
    }
    memset(&cg->split[cg->nsplit], 0, sizeof cg->split[0]);
    cg->split[cg->nsplit].buf[0] = s.buf[0];
    cg->split[cg->nsplit].buf[1] = s.buf[1];
    cg->split[cg->nsplit].bar = bar;
    cg->split[cg->nsplit].loop = loop;
    cg->split[cg->nsplit].dot[0] = a;
    cg->split[cg->nsplit].dot[1] = b;
    cg->nsplit++;
    if (cg->report)
        sb_printf(cg->report, "  loop at %d:%d: decoupled turns: group 0 alone copies the first product's buffer, "
                  "group 1 the second's, no block-wide barrier in the loop\n", loop->loc.line, loop->loc.col);
}

int cg_chain_copy_group(Cg *cg, const Op *op)
{
    for (int i = 0; i < cg->nsplit; i++) {
        for (int g = 0; g < 2; g++)
            if (op->args[0] == cg->split[i].buf[g])
                return g;
    }
    return -1;
}

static bool split_dot(Cg *cg, const Op *dot, int which)
{
    for (int i = 0; i < cg->nsplit; i++)
        if (cg->split[i].dot[which] == dot)
            return true;
    return false;
}

/* The drain after a decoupled loop (`for; async_wait 0; barrier`, double
 * buffer's): group 0 leaves the loop while group 1 still runs its last
 * second product, which reads the last V slot; in the turns group 1's
 * first product of that trip ended before group 0's second began (turn
 * barrier 2), so Q and the K slots are dead for both when group 0 gets
 * here. Group 0's warps meet on their own barrier (4), and arrive on
 * barrier 6 after their copies landed (the async_wait just before: the
 * last trip's K prefetch is group 0's); group 1's warps meet on 6, which
 * also tells them group 0's copies are in. The groups then go on apart
 * (Cg.groups_apart). Only for a loop in the kernel's body (not inside
 * another loop, whose next trip would copy into the slots group 1 still
 * reads) with nothing after the drain that writes shared memory without a
 * block barrier first (async copies, shared stores, loops and ifs). */
static bool split_drain(Cg *cg, const Op *op)
{
    const Block *b = op->parent;
    int i = b == &cg->f->body ? ir_block_index_of(b, op) : -1;
    if (i < 2 || b->ops[i - 1]->code != OP_ASYNC_WAIT || b->ops[i - 1]->iattr[0] != 0)
        return false;
    bool ours = false;
    for (int k = 0; k < cg->nsplit; k++)
        ours = ours || b->ops[i - 2] == cg->split[k].loop;
    for (int j = i + 1; ours && j < b->nops; j++) {
        const Op *o = b->ops[j];
        if (o->nregions > 0 || o->code == OP_ASYNC_COPY || o->code == OP_SMEM_STORE || o->code == OP_DOT)
            return false;
    }
    return ours;
}

bool cg_chain_group_barrier(Cg *cg, const Op *op)
{
    int n = cg->nwarps * 32;
    for (int i = 0; i < cg->nsplit; i++) {
        if (cg->split[i].bar == op) {
            turn_bar(cg, 1, true, 1);   /* group 1 waits for group 0's first product here */
            return true;
        }
    }
    if (split_drain(cg, op)) {
        group_bar(cg, 0, false, 6, n);
        group_bar(cg, 0, true, 4, n / 2);
        group_bar(cg, 1, true, 6, n);
        cg->groups_apart = true;
        return true;
    }
    return false;
}

void cg_chain_loop_entry(Cg *cg, const Op *forop)
{
    for (int i = 0; i < cg->nsplit; i++)
        if (cg->split[i].loop == forop) {
            cg->tg->async_wait(cg, 0);
            cg->tg->barrier(cg);
            return;
        }
}


typedef struct TurnFind { Cg *cg; int skipped; } TurnFind;

static bool turns_visit(Func *f, Op *op, void *ctx)
{
    TurnFind *tf = ctx;
    Cg *cg = tf->cg;
    if (op->code != OP_FOR)
        return true;
    const Op *a = NULL, *b = NULL;
    if (cg_count_dots(f, &op->regions[0]) != 2 || !direct_dots(&op->regions[0], &a, &b))
        return true;
    const Type *t = ir_type(f, a->res[0]);
    if (t->rank != 2 || t->shape[0] != 32LL * cg->nwarps) {
        if (cg->report)
            sb_printf(cg->report, "  loop at %d:%d: no turns (%lld rows on %d warps; turns need 32 rows a warp)\n",
                      op->loc.line, op->loc.col, (long long)(t->rank == 2 ? t->shape[0] : 0), cg->nwarps);
        return true;
    }
    if (cg->nturns == (int)(sizeof cg->turns / sizeof cg->turns[0])) {
        tf->skipped++;
        return true;
    }
    cg->turns[cg->nturns].dot[0] = a;
    cg->turns[cg->nturns].dot[1] = b;
    cg->nturns++;
    if (cg->report)
        sb_printf(cg->report, "  loop at %d:%d: warp groups take turns at the tensor cores (warps 0-%d, then %d-%d; "
                  "named barriers 1-3 around the products at %d:%d and %d:%d)\n", op->loc.line, op->loc.col,
                  cg->nwarps / 2 - 1, cg->nwarps / 2, cg->nwarps - 1, a->loc.line, a->loc.col, b->loc.line,
                  b->loc.col);
    split_turns(cg, f, op, a, b);
    return true;
}

void cg_chain_turns(Cg *cg, Func *f)
{
    if (f->sched.turns != SCHED_TURNS_DECOUPLED || cg->nwarps < 8 || cg->nwarps % 8)   /* the schedule's */
        return;
    TurnFind tf = { cg, 0 };
    ir_walk(f, &f->body, turns_visit, &tf);
    if (tf.skipped && cg->report)
        sb_printf(cg->report, "  turns: %d more loops left as they are\n", tf.skipped);
}

void cg_chain_turn(Cg *cg, const Op *dot, bool after)
{
    for (int i = 0; i < cg->nturns; i++) {
        int which = cg->turns[i].dot[0] == dot ? 0 : cg->turns[i].dot[1] == dot ? 1 : -1;
        if (which == 0 && !after) {
            if (!split_dot(cg, dot, 0))
                turn_bar(cg, 1, true, 1);    /* group 1 waits for group 0's first product */
        } else if (which == 0) {
            turn_bar(cg, 0, false, 1);
            /* group 0's second product may start. Decoupled, barrier 2
               also frees the K slot that group 1's first product just
               read (group 0 copies into it at the next trip's top), so
               group 1 syncs there rather than arrives: compute-sanitizer
               racecheck orders the sync before that copy, the arrival
               not (bench/RESULTS.md, 2026-12-03 20:40-21:05). */
            if (split_dot(cg, dot, 0))
                turn_wait_apart(cg, 1, 2);
            else
                turn_bar(cg, 1, false, 2);
        } else if (which == 1 && !after) {
            if (split_dot(cg, dot, 1)) {
                group_asm(cg, 0, "cp.async.wait_group 0;", "r,~{memory}");   /* group 0's K(j+1) in, before its warps meet at 2 */
                turn_wait_apart(cg, 0, 2);   /* group 1 waits at 2 too (above) */
            } else {
                turn_bar(cg, 0, true, 2);
            }
            turn_bar(cg, 1, true, 3);        /* group 1 waits for group 0's second product */
        } else if (which == 1) {
            turn_bar(cg, 0, false, 3);
        }
        if (which >= 0)
            return;
    }
}
