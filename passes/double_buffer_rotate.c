/* double_buffer_rotate.c - rotation of a loop over tiles that holds a
 * pipelined loop (double_buffer.c): its next trip's copies go right after
 * the inner loop's drain.
 */
#include "double_buffer_int.h"

#include <string.h>

/* ---- rotation: a loop over tiles that copies its next trip under the
 * rest of this one ----
 *
 * A loop O (a persistent grid's loop over tiles) whose body holds one loop I
 * that pipelines (the key loop, S >= 2 stages) and, before I, loads that
 * qualify as O's own (attention's Q), none of them read after I. Left as it
 * is, O's loads become a ring copied whole trips ahead and every trip starts
 * with I's prologue and waits for it. Rotated (a loop without a pipeline
 * hint above 1):
 *   before O   smem_alloc: O's loads one slot each, I's S-slot ring;
 *              if lo < hi { O's copies for iv := lo }, commit; I's
 *              prologue (stages 0..S-2) for iv := lo, each also guarded
 *              by lo < hi
 *   O's body   at the first load's place: async_wait {pending = S-1}
 *              (this trip's O copies in; I's stages may still fly),
 *              barrier, smem_load; I pipelined without its prologue; I's
 *              drain (async_wait 0, barrier); then the same copies and
 *              prologue for iv + step, guarded by iv + step < hi: they
 *              land while the rest of the body (the tile's epilogue) runs
 *   after O    async_wait 0, barrier
 * After the drain O's load buffers are dead (nothing after I reads them)
 * and so is every slot of I's ring; the rest of the body must not use
 * them, which holds for what this pass makes (nothing else is staged
 * there) and for the code generator's scratch (inside a loop it lies after
 * the buffers). */

static bool count_fors(Func *f, Op *op, void *ctx)
{
    (void)f;
    *(int *)ctx += op->code == OP_FOR;
    return true;
}

static bool stageable_in(const Loop *L, const Op *op)
{
    return !shape_problem(L->f, op) && offsets_ok(L, op);
}

/* Copies of O's loads for iv := tv, then I's prologue for that trip, every
 * stage guarded by g too; at b. */
static void emit_rotated(Loop *I, Loop *O, Builder *b, ValId tv, ValId g)
{
    Func *f = O->f;
    ValId zero = cst(b, 0);
    Op *iff = build0(b, OP_IF, &g, 1);
    Builder t = ir_builder_at_end(f, &iff->regions[0]);
    t.loc = b->loc;
    O->outer = NULL;
    map_reset(O, tv);
    for (int j = 0; j < O->nloads; j++)
        emit_copy(O, &t, j, zero);
    build0(&t, OP_YIELD, NULL, 0);
    Builder e = ir_builder_at_end(f, &iff->regions[1]);
    e.loc = b->loc;
    build0(&e, OP_YIELD, NULL, 0);
    build0(b, OP_ASYNC_COMMIT, NULL, 0);
    O->cur = tv;
    map_reset(O, tv);
    ValId lo = clone_val(O, b, I->lo), hi = clone_val(O, b, I->hi), step = clone_val(O, b, I->step);
    I->outer = O;
    for (int i = 0; i < I->stages - 1; i++) {
        ValId ivi = i == 0 ? lo : bin(b, OP_ADD, lo, bin(b, OP_MUL, cst(b, i), step));
        ValId a[2] = { g, cmp_lt(b, ivi, hi) };
        ValId cond = ir_build1(b, OP_AND, a, 2, type_scalar(DT_BOOL));
        emit_guarded_stage(I, b, cond, ivi, cst(b, i));
    }
    I->outer = NULL;
}

/* Rotates fo when it qualifies (above); *inner gets I. False: fo is left
 * for pipeline_loop. */
bool try_rotate(PassCtx *ctx, Func *f, Op *fo, Op **inner)
{
    if (fo->iattr[0] > 1)
        return false;
    Block *B = &fo->regions[0];
    int ii = -1, nfor = 0, ninner = 0;
    ir_walk(f, B, count_fors, &nfor);
    for (int i = 0; i < B->nops; i++)
        if (B->ops[i]->code == OP_FOR)
            ii = ii < 0 ? i : -2;
    if (ii < 0)
        return false;
    Op *io = B->ops[ii];
    ir_walk(f, &io->regions[0], count_fors, &ninner);
    if (nfor != 1 + ninner)
        return false;   /* one loop in the body, and no loop nested in an if */
    Loop O, I;
    memset(&O, 0, sizeof O);
    memset(&I, 0, sizeof I);
    O.f = f, O.op = fo, O.body = B, O.iv = B->args[0], O.lo = fo->args[0], O.hi = fo->args[1], O.step = fo->args[2];
    I.f = f, I.op = io, I.body = &io->regions[0], I.iv = I.body->args[0];
    I.lo = io->args[0], I.hi = io->args[1], I.step = io->args[2];
    for (int i = 0; i < B->nops; i++) {
        Op *op = B->ops[i];
        if (!wanted(f, op))
            continue;
        if (i > ii || !stageable_in(&O, op) || O.nloads == MAX_LOADS)
            return false;
        for (int k = ii + 1; k < B->nops; k++)
            if (reads_deep(B->ops[k], op->res[0]))
                return false;
        O.loads[O.nloads++] = op;
    }
    if (!O.nloads || !invariant_but_iv(&O, I.lo, 0) || !invariant_but_iv(&O, I.hi, 0) ||
        !invariant_but_iv(&O, I.step, 0))
        return false;
    int64_t stage_bytes = 0;
    for (int i = 0; i < I.body->nops; i++) {
        Op *op = I.body->ops[i];
        if (!wanted(f, op) || !stageable_in(&I, op))
            continue;
        I.outer = &O;   /* its offsets must also clone for the outer loop's next trip */
        bool ok = offsets_ok(&I, op);
        I.outer = NULL;
        if (!ok)
            return false;
        stage_bytes += tile_bytes(ir_type(f, op->res[0]));
    }
    if (!stage_bytes)
        return false;
    StrBuf why = { 0 };
    I.stages = choose_stages(ctx, &I, stage_bytes, &why);
    if (I.stages < 2) {
        sb_free(&why);
        return false;
    }
    collect_loads(ctx, &I);   /* the same loads, with remarks on the others */
    O.stages = 1;
    O.nmap = I.nmap = f->nvals;
    O.map = arena_alloc(f->mod->arena, sizeof(ValId) * O.nmap);
    I.map = arena_alloc(f->mod->arena, sizeof(ValId) * I.nmap);
    Builder pre = ir_builder_before(f, fo);
    pre.loc = fo->loc;
    for (int j = 0; j < O.nloads; j++)
        O.bufs[j] = new_buffer(f, &pre, O.loads[j], 1);
    for (int j = 0; j < I.nloads; j++)
        I.bufs[j] = new_buffer(f, &pre, I.loads[j], I.stages);
    emit_rotated(&I, &O, &pre, O.lo, cmp_lt(&pre, O.lo, O.hi));
    Builder nx = { f, B, ii + 1, io->loc };
    ValId tn = bin(&nx, OP_ADD, O.iv, O.step);
    emit_rotated(&I, &O, &nx, tn, cmp_lt(&nx, tn, O.hi));
    transform_loop(&I, true);   /* its drain goes in right after it, before the copies just made */
    Builder w = ir_builder_before(f, O.loads[0]);
    ValId slot = cst(&w, 0);
    emit_wait(&w, I.stages - 1);
    build0(&w, OP_BARRIER, NULL, 0);
    for (int j = 0; j < O.nloads; j++)
        replace_load(f, O.loads[j], O.bufs[j], slot);
    drop_dead(f, B);
    Builder post = { f, fo->parent, ir_block_index_of(fo->parent, fo) + 1, fo->loc };
    emit_wait(&post, 0);
    build0(&post, OP_BARRIER, NULL, 0);
    describe_loop(ctx, &I, why.buf);
    sb_free(&why);
    StrBuf names = { 0 };
    for (int j = 0; j < O.nloads; j++)
        sb_printf(&names, "%s%s", j ? ", " : "", tensor_name(f, O.loads[j]));
    pass_note(ctx, "loop at %s: rotated: %s in one slot%s; the next trip's copies of %s and the first %d "
              "stage%s of the loop at %s are issued right after that loop's drain, under the rest of the trip",
              pass_loc_str(f->mod->arena, f, fo->loc), names.buf, O.nloads > 1 ? " each" : "", names.buf, I.stages - 1,
              I.stages == 2 ? "" : "s",
              pass_loc_str(f->mod->arena, f, io->loc));
    sb_free(&names);
    *inner = io;
    return true;
}
