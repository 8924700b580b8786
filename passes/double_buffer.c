/* double_buffer.c - multi-stage pipelining of tile loads through shared
 * memory: a loop's operand loads become an S-slot ring of shared buffers
 * filled by asynchronous copies S-1 iterations ahead.
 *
 * Needs: verified IR, best after canonicalize and bounds (mask bits already
 * final: the prefetches are guarded by `iv' < hi`, so a window proved in
 * bounds for iv in lo..hi-1 stays in bounds).
 * Guarantees: results are unchanged (the interpreter gives bit-identical
 * output before and after) for any trip count, including 0, 1, fewer trips
 * than stages and trip counts that are not a multiple of S. Kernels with no
 * DOT and no `shared` load are not touched.
 *
 * Which loads: a LOAD directly in a FOR body whose result feeds a DOT operand
 * (directly or through TRANS) or whose type is `shared` (the user asked),
 * has no `other` value, keeps 1..3 dims, and whose offsets depend only on
 * the induction variable and values defined outside the loop (through pure
 * ops of the body, which are cloned). A qualifying LOAD outside any loop
 * becomes a 1-slot buffer. Every other load of such a kernel stays, with a
 * remark saying why; a computed tile declared `shared` gets a remark too
 * (its stores are staged by the code generator; otherwise it stays in
 * registers).
 *
 * Stages S: the loop's pipeline(S) hint, else min(4, budget / stage bytes)
 * (at least 1) with the budget the arch's shared-memory limit.
 *
 * Schedule for S >= 2 (it = (iv - lo) / step, slot = it % S):
 *   before the loop  smem_alloc per load; for i in 0..S-2:
 *                    if lo + i*step < hi { copies of iteration i into slot i }
 *                    async_commit (always: every thread commits the same
 *                    number of groups, so wait counts stay uniform)
 *   top of the body  async_wait {pending = S-2}   (iteration it's group done)
 *                    barrier                       (all threads' copies visible;
 *                                                  all reads of iteration it-1 done)
 *                    if iv + (S-1)*step < hi { copies of iteration it+S-1
 *                    into slot (it+S-1) % S }, async_commit
 *   the loads        smem_load buf, slot
 *   after the loop   async_wait {pending = 0}, barrier
 * The prefetch is issued right after the barrier, before the compute: it
 * overwrites the slot read by iteration it-1, which the barrier has just
 * retired, so no second barrier is needed and the copy overlaps the whole
 * compute of iteration it. In a body of chained products whose first
 * reduces over at most 64 it goes after that product (late_prefetch_at).
 * S = 1: copies, commit, wait 0, barrier at the top; smem_load; a barrier
 * at the end of the body before the next overwrite.
 * Outside loops: alloc, copy, commit, wait 0, barrier, smem_load in place;
 * then the wait, barrier and smem_load sink past the copy groups that follow
 * in the same block (a loop's prologue, and the pure ops and buffers it
 * needs), with wait {pending = groups passed}: attention's Q and its first
 * K/V stage are in flight together. They also sink past any other op that
 * does not read the loaded tile, short of a loop (an earlier tile's
 * epilogue: the next tile's Q lands while it runs).
 * The barrier after the loop lets smem_alloc reuse the ring's bytes later.
 * A loop over tiles that holds a pipelined loop is rotated: its next trip's
 * copies go right after the inner loop's drain (try_rotate).
 *
 * This file is the driver; which loads and how many stages are in
 * double_buffer_analysis.c, the ring rewrite in double_buffer_ring.c,
 * the rotation in double_buffer_rotate.c (shared: double_buffer_int.h).
 */
#include "double_buffer_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- driver ---- */

typedef struct Found {
    Op **ops; int n, cap;
    Arena *a;
    int dots;                /* DOT ops seen */
} Found;

static void found_add(Found *fd, Op *op)
{
    if (fd->n == fd->cap) {
        fd->ops = arena_grow(fd->a, fd->ops, sizeof(Op *), (size_t)fd->n, (size_t)fd->cap * 2 + 8);
        fd->cap = fd->cap * 2 + 8;
    }
    fd->ops[fd->n++] = op;
}

static bool find_fors(Func *f, Op *op, void *ctx)
{
    Found *fd = ctx;
    (void)f;
    if (op->code == OP_FOR)
        found_add(fd, op);
    fd->dots += op->code == OP_DOT;
    return true;
}

static void remark_load(PassCtx *ctx, Func *f, const Op *ld, const char *why)
{
    pass_note(ctx, "load of %s at %s stays a global load: %s", tensor_name(f, ld), pass_loc_str(f->mod->arena, f, ld->loc),
              why);
}

/* Collect the stageable loads of one loop; remark on the others. */
void collect_loads(PassCtx *ctx, Loop *L)
{
    for (int i = 0; i < L->body->nops; i++) {
        Op *op = L->body->ops[i];
        if (!wanted(L->f, op))
            continue;
        const char *why = shape_problem(L->f, op);
        if (!why && !offsets_ok(L, op))
            why = "its offsets depend on values the loop computes from carried state, not only on the induction variable";
        if (!why && L->nloads == MAX_LOADS)
            why = "too many loads in one loop";
        if (why)
            remark_load(ctx, L->f, op, why);
        else
            L->loads[L->nloads++] = op;
    }
}

void describe_loop(PassCtx *ctx, const Loop *L, const char *why)
{
    Func *f = L->f;
    StrBuf sb = { 0 };
    int64_t total = 0;
    for (int j = 0; j < L->nloads; j++) {
        const Type *t = ir_type(f, L->bufs[j]);
        int64_t slot = tile_bytes(t) / L->stages;
        total += tile_bytes(t);
        sb_printf(&sb, "%s%s ", j ? ", " : "", tensor_name(f, L->loads[j]));
        type_print(f, t, &sb);
        sb_printf(&sb, " (%lld B/stage)", (long long)slot);
    }
    pass_note(ctx, "loop at %s: %d stage%s (%s); %d load%s staged: %s; %lld B; %s", pass_loc_str(f->mod->arena, f, L->op->loc),
              L->stages, L->stages == 1 ? "" : "s", why, L->nloads, L->nloads == 1 ? "" : "s", sb.buf,
              (long long)total,
              L->stages == 1 ? "no prefetch (copy, wait, barrier at the top; barrier at the end)"
                             : arena_printf(f->mod->arena, "prefetch %d iteration%s ahead, issued %s",
                                            L->stages - 1, L->stages == 2 ? "" : "s",
                                            L->late ? "after the first of the chained products"
                                                    : "after the top barrier"));
    sb_free(&sb);
}

static void pipeline_loop(PassCtx *ctx, Func *f, Op *fo)
{
    Loop L;
    memset(&L, 0, sizeof L);
    L.f = f, L.op = fo, L.body = &fo->regions[0];
    L.iv = L.body->args[0], L.lo = fo->args[0], L.hi = fo->args[1], L.step = fo->args[2];
    collect_loads(ctx, &L);
    if (!L.nloads)
        return;
    int64_t stage_bytes = 0;
    for (int j = 0; j < L.nloads; j++)
        stage_bytes += tile_bytes(ir_type(f, L.loads[j]->res[0]));
    StrBuf why = { 0 };
    L.stages = choose_stages(ctx, &L, stage_bytes, &why);
    L.nmap = f->nvals;
    L.map = arena_alloc(f->mod->arena, sizeof(ValId) * L.nmap);
    transform_loop(&L, false);
    describe_loop(ctx, &L, why.buf);
    sb_free(&why);
}

static bool in_loop(const Found *fors, const Op *op)
{
    for (int i = 0; i < fors->n; i++)
        if (op->parent == &fors->ops[i]->regions[0])
            return true;
    return false;
}

static bool find_loads(Func *f, Op *op, void *ctx)
{
    Found *fd = ctx;
    if (wanted(f, op))
        found_add(fd, op);
    return true;
}

/* Qualifying loads outside loops; loads nested under an IF in a loop stay. */
static void stage_outside(PassCtx *ctx, Func *f, const Found *fors, Arena *a)
{
    Found lds = { NULL, 0, 0, a, 0 };
    ir_walk(f, &f->body, find_loads, &lds);
    for (int i = 0; i < lds.n; i++) {
        Op *ld = lds.ops[i];
        const char *why = shape_problem(f, ld);
        if (in_loop(fors, ld))
            continue;   /* a loop's own load that did not qualify: remarked already */
        bool nested = ld->parent != &f->body;
        if (!why && nested)
            why = "it sits inside a conditional or a loop region it does not belong to";
        if (why) {
            remark_load(ctx, f, ld, why);
            continue;
        }
        const char *name = tensor_name(f, ld), *at = pass_loc_str(f->mod->arena, f, ld->loc);
        int groups = stage_single(f, ld);
        if (groups)
            pass_note(ctx, "load of %s at %s: 1-slot shared buffer (outside loops: copy; wait, barrier, read after "
                      "the next %d copy group%s, left in flight)", name, at, groups, groups > 1 ? "s" : "");
        else
            pass_note(ctx, "load of %s at %s: 1-slot shared buffer (outside loops: copy, wait, barrier, read)",
                      name, at);
    }
}

/* A tile declared `shared` that is computed rather than loaded: this pass
 * stages loads only; a store of it to global memory is staged by the code
 * generator when the tile holds a product's fragments (through shared
 * memory, out as 16-byte rows; its report line says what it did), any
 * other use reads registers. Say which instead of dropping the request
 * silently. */
typedef struct SharedUse {
    ValId v;
    bool stored;
} SharedUse;

static bool find_store_of(Func *f, Op *op, void *vctx)
{
    (void)f;
    SharedUse *u = vctx;
    if (op->code == OP_STORE && op->nargs > 0 && op->args[op->nargs - 1] == u->v)
        u->stored = true;
    return !u->stored;
}

static bool remark_computed_shared(Func *f, Op *op, void *vctx)
{
    PassCtx *ctx = vctx;
    bool computed = op->code != OP_LOAD && op->code != OP_SMEM_ALLOC && op->nres == 1;
    const Type *t = computed ? ir_type(f, op->res[0]) : NULL;
    if (!t || t->kind != TY_TILE || t->space != SP_SHARED)
        return true;
    SharedUse u = { op->res[0], false };
    ir_walk(f, &f->body, find_store_of, &u);
    if (u.stored)
        pass_note(ctx, "tile at %s is declared shared and computed: a store of it to global memory goes through "
                  "shared memory when it holds a product's fragments (out as 16-byte rows; the code generator's "
                  "store line says what it did); other uses read registers",
                  pass_loc_str(f->mod->arena, f, op->loc));
    else
        pass_note(ctx, "tile at %s is declared shared but computed, not loaded, and not stored: it stays in "
                  "registers (loads of global windows and stores to global memory are what shared memory stages)",
                  pass_loc_str(f->mod->arena, f, op->loc));
    return true;
}

static void run_func(PassCtx *ctx, Func *f)
{
    ir_walk(f, &f->body, remark_computed_shared, ctx);
    Arena *a = arena_new();
    Found fors = { NULL, 0, 0, a, 0 };
    ir_walk(f, &f->body, find_fors, &fors);
    Found lds = { NULL, 0, 0, a, 0 };
    ir_walk(f, &f->body, find_loads, &lds);
    if (lds.n == 0) {
        arena_free(a);
        return;   /* nothing wants shared memory: SIMT kernels stay untouched */
    }
    bool *done = arena_alloc(a, sizeof(bool) * (size_t)(fors.n + 1));
    memset(done, 0, sizeof(bool) * (size_t)(fors.n + 1));
    for (int i = 0; i < fors.n; i++) {
        Op *inner = NULL;
        if (done[i])
            continue;
        if (try_rotate(ctx, f, fors.ops[i], &inner)) {
            for (int k = i + 1; k < fors.n; k++)
                done[k] = done[k] || fors.ops[k] == inner;
            continue;
        }
        pipeline_loop(ctx, f, fors.ops[i]);
    }
    stage_outside(ctx, f, &fors, a);
    arena_free(a);
}

int pass_double_buffer(Module *m, PassCtx *ctx)
{
    for (int i = 0; i < m->nfuncs; i++)
        run_func(ctx, m->funcs[i]);
    return 0;
}
