/* double_buffer_analysis.c - which loads the double_buffer pass stages
 * (double_buffer.c) and how many stages a loop's ring gets.
 */
#include "double_buffer_int.h"

/* ---- analysis: which loads qualify ---- */

typedef struct UseScan { ValId v; bool dot; } UseScan;

static bool scan_dot_use(Func *f, Op *op, void *ctx)
{
    UseScan *u = ctx;
    for (int i = 0; i < op->nargs && !u->dot; i++) {
        if (op->args[i] != u->v)
            continue;
        if (op->code == OP_DOT && i < 2)
            u->dot = true;
        else if (op->code == OP_TRANS) {
            UseScan t = { op->res[0], false };
            ir_walk(f, &f->body, scan_dot_use, &t);
            u->dot = t.dot;
        }
    }
    return !u->dot;
}

static bool feeds_dot(Func *f, ValId v)
{
    UseScan u = { v, false };
    ir_walk(f, &f->body, scan_dot_use, &u);
    return u.dot;
}

/* Wanted in shared memory at all: a dot operand or declared `shared`. */
bool wanted(Func *f, const Op *op)
{
    return op->code == OP_LOAD && (feeds_dot(f, op->res[0]) || ir_type(f, op->res[0])->space == SP_SHARED);
}

/* Why a wanted load cannot be staged (NULL: it can). */
const char *shape_problem(Func *f, const Op *op)
{
    const Type *t = ir_type(f, op->res[0]);
    if (t->space == SP_REG)
        return "it is declared `reg` (the product reads it from registers; without a placement it would be staged)";
    if (op->iattr[1])
        return "it has an `other` value (async copies fill out-of-bounds elements with zero)";
    if (t->kind != TY_TILE)
        return "it loads a scalar";
    if (t->rank + 1 > TILE_MAXRANK)
        return "its tile has 4 dims (a buffer adds a stage dim)";
    if (t->shape[t->rank - 1] * (int64_t)dtype_bits((DType)t->dtype) % 128 != 0)
        return "its rows are not a multiple of 16 bytes (the unit of an async copy)";
    return NULL;
}

/* A load of one element of a tensor the kernel never writes (a page number
 * read from a block table): repeating it for a later trip reads the same
 * value, and the copies that need it run only for trips inside the loop's
 * bounds (emit_guarded_stage), where the loop itself would read it. */
static bool readonly_scalar_load(const Loop *L, const Op *d)
{
    if (d->code != OP_LOAD || d->nres != 1 || ir_type(L->f, d->res[0])->kind != TY_SCALAR || d->nregions)
        return false;
    return !ir_tensor_written(L->f, d->args[0]);
}

/* Does v depend only on the induction variable and values from outside the
 * loop, through pure region-free ops of the body and scalar loads of
 * tensors the kernel never writes (readonly_scalar_load)? With L->outer set
 * (a rotated loop's inner loop), values from outside L must pass the same
 * test for the outer loop. */
bool invariant_but_iv(const Loop *L, ValId v, int depth)
{
    if (v == L->iv)
        return true;
    for (int i = 1; i < L->body->nargs; i++)
        if (L->body->args[i] == v)
            return false;
    const Op *d = ir_val(L->f, v)->def;
    if (!d || d->parent != L->body)
        return L->outer ? invariant_but_iv(L->outer, v, 0) : true;
    if ((!(op_info[d->code].flags & OPF_PURE) && !readonly_scalar_load(L, d)) || d->nregions || depth > 64)
        return false;
    for (int i = 0; i < d->nargs; i++)
        if (!invariant_but_iv(L, d->args[i], depth + 1))
            return false;
    return true;
}

bool offsets_ok(const Loop *L, const Op *load)
{
    for (int i = 1; i < load->nargs; i++)
        if (!invariant_but_iv(L, load->args[i], 0))
            return false;
    return true;
}

/* ---- stage choice ---- */

static bool holds_op(const Block *b, const Op *target)
{
    for (int i = 0; i < b->nops; i++) {
        const Op *op = b->ops[i];
        if (op == target)
            return true;
        for (int r = 0; r < op->nregions; r++)
            if (holds_op(&op->regions[r], target))
                return true;
    }
    return false;
}

/* Bytes of the loads to be staged that are live while L runs: those not
 * in L itself and not in another loop (a sibling loop's rings are dead by
 * then, and smem_alloc reuses them), one slot each. */
static int64_t other_bytes(const Loop *L, const Block *b)
{
    int64_t bytes = 0;
    for (int i = 0; i < b->nops; i++) {
        Op *op = b->ops[i];
        if (op == L->op)
            continue;
        if (op->code == OP_FOR && !holds_op(&op->regions[0], L->op))
            continue;
        if (wanted(L->f, op))
            bytes += tile_bytes(ir_type(L->f, op->res[0]));
        for (int r = 0; r < op->nregions; r++)
            bytes += other_bytes(L, &op->regions[r]);
    }
    return bytes;
}

/* The stages of a loop's rings. A pipeline(S) hint is taken unless S stages
 * and the kernel's other buffers cannot fit the block's shared memory: then
 * the most stages that do, when one does, so that a kernel written for a
 * larger device still compiles (attention's 128 x 128 tiles at D = 128 on
 * sm_86: Q and one stage of K and V, 96 KB of 99). Without a hint, up to 4
 * stages that fit. */
int choose_stages(PassCtx *ctx, const Loop *L, int64_t stage_bytes, StrBuf *why)
{
    if (L->op->iattr[0] > 0) {
        int hint = (int)L->op->iattr[0], s = hint;
        int64_t budget = pass_smem_limit(ctx->target, ctx->smem_per_block), other = other_bytes(L, &L->f->body);
        while (s > 1 && other + s * stage_bytes > budget)
            s--;
        if (other + s * stage_bytes > budget)   /* not even one stage fits: smem_alloc says so, for the hint */
            s = hint;
        if (s == hint)
            sb_printf(why, "pipeline(%d) hint", hint);
        else
            sb_printf(why, "pipeline(%d) hint, %d stage%s: %lld B a stage and %lld B of other buffers in the %lld B "
                      "of shared memory a block has on %s", hint, s, s == 1 ? "" : "s", (long long)stage_bytes,
                      (long long)other, (long long)budget, pass_target_name(ctx));
        return s;
    }
    int64_t budget = pass_smem_limit(ctx->target, ctx->smem_per_block);
    int64_t fit = stage_bytes > 0 ? budget / stage_bytes : 4;
    int s = fit >= 4 ? 4 : fit < 1 ? 1 : (int)fit;
    sb_printf(why, "no hint: %lld B per stage, %lld B of shared memory on %s fits %lld", (long long)stage_bytes,
              (long long)budget, pass_target_name(ctx), (long long)fit);
    return s;
}
