/* simt_control.c - structured control flow of SIMT tiles (FOR with its
 * loop-carried values, IF) and the dispatch of every op to its lowering.
 */
#include "cg_internal.h"

/* ---- structured control flow ---- */

/* The layout a loop-carried tile keeps: the init's, or that of a load of
 * the same shape in the body (a global load, or a read of a pipeline's
 * shared slot into registers; so the carried value needs no conversion),
 * else that of a load of the same rank whose extents are the carried
 * tile's where these are not 1, with those dims at 1: the layout of the
 * load's reductions expanded back (`acc += colsum(x)[*, :]` over x =
 * X[r : +R, 0 : +N] carries [1, N] in x's layout; examples/layernorm_bwd.tile). */
static bool find_load_layout(Func *f, Op *op, void *ctx)
{
    const Type **want = ctx;
    const Type *t = op->nres ? ir_type(f, op->res[0]) : NULL;
    if ((op->code != OP_LOAD && !cg_smem_load_to_regs(f, op)) || !t || t->kind != TY_TILE)
        return true;
    if (type_same_shape(t, want[0])) {
        want[1] = t;
        return false;
    }
    bool spans = t->rank == want[0]->rank && !want[2];
    for (int d = 0; spans && d < t->rank; d++)
        spans = want[0]->shape[d] == t->shape[d] || want[0]->shape[d] == 1;
    if (spans)
        want[2] = t;
    return true;
}

static const Layout *carried_layout(Cg *cg, Op *op, int i)
{
    const TileVal *v = &cg->vals[op->args[3 + i]];
    const Type *t = ir_type(cg->f, op->res[i]);
    if (v->kind == TV_REGS)
        return v->L;
    const Layout *mma = cg_mma_carried_layout(cg, op, i);
    if (mma)
        return mma;
    const Type *want[3] = { t, NULL, NULL };
    ir_walk(cg->f, &op->regions[0], find_load_layout, want);
    if (want[1]) {
        Type lt = *t;
        lt.dtype = want[1]->dtype;
        return cg_default_layout(cg, &lt, true);
    }
    if (want[2]) {
        Layout L = layout_with_shape(cg_default_layout(cg, want[2], true), t->shape);
        for (int a = 0; a < t->rank; a++)
            if (t->shape[a] == 1)
                L.rpt[layout_pdim(&L, a)] = 1;   /* one register along it, as layout_expand */
        return cg_layout_dup(cg, L);
    }
    return cg_default_layout(cg, t, true);
}

/* Values carried by phis: scalars as one phi, tiles as one phi per register. */
typedef struct Carried {
    const Layout *L;     /* NULL: scalar */
    LLVMValueRef *phi;
    int n;
} Carried;

static void make_phis(Cg *cg, Carried *c, const Type *t)
{
    LLVMTypeRef ty = cg_type(cg, (DType)t->dtype);
    c->n = c->L ? layout_nregs(c->L) : 1;
    c->phi = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)c->n);
    for (int r = 0; r < c->n; r++)
        c->phi[r] = LLVMBuildPhi(cg->b, ty, "");
}

static TileVal carried_val(const Carried *c)
{
    if (!c->L)
        return (TileVal){ .kind = TV_SCALAR, .s = c->phi[0] };
    return (TileVal){ .kind = TV_REGS, .L = c->L, .r = c->phi };
}

static bool has_loop(Func *f, Op *op, void *ctx)
{
    (void)f;
    *(bool *)ctx |= op->code == OP_FOR;
    return true;
}

/* Thread ids from an opaque copy of tid (a side-effecting asm, which no
 * pass moves), so that what is computed from them stays where it is
 * computed. Inside a loop that holds another loop (a persistent grid's
 * loop over tiles), LICM would otherwise hoist every lane-derived
 * constant of the body (the epilogue's columns, its scratch addresses)
 * out of the outer loop, and each would hold a register through the inner
 * loop: 29 more values live across attention's key loop, which left ptxas
 * too few registers to overlap the row-max shuffles (12% slower). */
static void fresh_ids(Cg *cg)
{
    cg->tid = cg_opaque_tid(cg);
    cg_thread_ids(cg, cg->tid);
}

static int lower_for(Cg *cg, Op *op)
{
    Func *f = cg->f;
    int nc = op->nres;
    Block *body = &op->regions[0];
    Op *y = ir_block_yield(body);
    bool outer = false;
    ir_walk(f, body, has_loop, &outer);
    LLVMValueRef ids[3] = { cg->tid, cg->lane, cg->warp };
    if (!y || y->nargs != nc || body->nargs != nc + 1) {
        diag_internal(cg->d, op->loc, "malformed for loop");
        return 1;
    }
    Carried *c = arena_alloc(cg->a, sizeof(Carried) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++)
        c[i + 1].L = ir_type(f, op->res[i])->kind == TY_TILE ? carried_layout(cg, op, i) : NULL;
    cg_chain_loop_entry(cg, op);
    /* Materialise inits in the preheader, before the header's phis exist. */
    LLVMValueRef **init = arena_alloc(cg->a, sizeof(LLVMValueRef *) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++)
        if (c[i + 1].L)
            init[i] = cg_materialize(cg, &cg->vals[op->args[3 + i]], ir_type(f, op->args[3 + i]), c[i + 1].L, op->loc);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(cg->b), head = cg_new_block(cg, "for.head"),
                      bodyb = cg_new_block(cg, "for.body"), exit = cg_new_block(cg, "for.exit");
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, head);
    c[0].L = NULL;
    make_phis(cg, &c[0], ir_type(f, op->args[0]));
    LLVMAddIncoming(c[0].phi[0], &cg->vals[op->args[0]].s, &pre, 1);
    for (int i = 0; i < nc; i++) {
        make_phis(cg, &c[i + 1], ir_type(f, op->res[i]));
        LLVMValueRef one = cg->vals[op->args[3 + i]].s;
        LLVMValueRef *r = c[i + 1].L ? init[i] : &one;
        for (int k = 0; k < c[i + 1].n; k++)
            LLVMAddIncoming(c[i + 1].phi[k], &r[k], &pre, 1);
    }
    LLVMValueRef cond = LLVMBuildICmp(cg->b, LLVMIntSLT, c[0].phi[0], cg->vals[op->args[1]].s, "");
    LLVMBuildCondBr(cg->b, cond, bodyb, exit);
    LLVMPositionBuilderAtEnd(cg->b, bodyb);
    for (int i = 0; i <= nc; i++)
        cg->vals[body->args[i]] = carried_val(&c[i]);
    cg->depth++;   /* until the yields are materialised in the latch */
    if (outer) {
        fresh_ids(cg);
        if (cg->report)
            sb_printf(cg->report, "  loop at %d:%d: thread ids taken afresh at the top of its body and after each "
                      "inner loop (lane-derived values are not held across the inner loops)\n", op->loc.line,
                      op->loc.col);
    }
    cg->loops++;
    const Op *outer_for = cg->cur_for;
    cg->cur_for = op;
    int e = cg_lower_block(cg, body);
    cg->cur_for = outer_for;
    cg->loops--;
    if (e)
        return 1;
    LLVMValueRef next = LLVMBuildAdd(cg->b, c[0].phi[0], cg->vals[op->args[2]].s, "");
    /* Yield values are materialised in the latch before the back edge. */
    LLVMValueRef **yv = arena_alloc(cg->a, sizeof(LLVMValueRef *) * (size_t)(nc + 1));
    for (int i = 0; i < nc; i++) {
        const TileVal *v = &cg->vals[y->args[i]];
        yv[i] = c[i + 1].L ? cg_materialize(cg, v, ir_type(f, y->args[i]), c[i + 1].L, y->loc) : NULL;
    }
    cg->depth--;
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(cg->b);
    LLVMAddIncoming(c[0].phi[0], &next, &latch, 1);
    for (int i = 0; i < nc; i++) {
        LLVMValueRef one = cg->vals[y->args[i]].s;
        LLVMValueRef *r = yv[i] ? yv[i] : &one;
        for (int k = 0; k < c[i + 1].n; k++)
            LLVMAddIncoming(c[i + 1].phi[k], &r[k], &latch, 1);
    }
    LLVMBuildBr(cg->b, head);
    LLVMPositionBuilderAtEnd(cg->b, exit);
    for (int i = 0; i < nc; i++)
        cg->vals[op->res[i]] = carried_val(&c[i + 1]);
    if (outer) {   /* after the outer loop: the ids of the code around it */
        cg->tid = ids[0];
        cg->lane = ids[1];
        cg->warp = ids[2];
    } else if (cg->loops > 0) {
        fresh_ids(cg);   /* after an inner loop: ids for the rest of the outer body */
    }
    return 0;
}

static const Layout *if_layout(Cg *cg, const TileVal *a, const TileVal *b, const Type *t)
{
    if (a->kind == TV_REGS)
        return a->L;
    if (b->kind == TV_REGS)
        return b->L;
    if (a->kind == TV_SPLAT && b->kind == TV_SPLAT)
        return NULL;
    return cg_default_layout(cg, t, true);
}

static int lower_if(Cg *cg, Op *op)
{
    Func *f = cg->f;
    int nr = op->nres;
    LLVMBasicBlockRef thenb = cg_new_block(cg, "if.then"), elseb = cg_new_block(cg, "if.else"),
                      join = cg_new_block(cg, "if.join"), ends[2];
    LLVMBuildCondBr(cg->b, cg->vals[op->args[0]].s, thenb, elseb);
    Op *ys[2];
    cg->depth++;   /* until the yields are materialised in the arms */
    for (int k = 0; k < 2; k++) {
        LLVMPositionBuilderAtEnd(cg->b, k ? elseb : thenb);
        ys[k] = ir_block_yield(&op->regions[k]);
        if (cg_lower_block(cg, &op->regions[k]))
            return 1;
        ends[k] = LLVMGetInsertBlock(cg->b);
        if (nr && (!ys[k] || ys[k]->nargs != nr)) {
            diag_internal(cg->d, op->loc, "malformed if");
            return 1;
        }
    }
    Carried *c = arena_alloc(cg->a, sizeof(Carried) * (size_t)(nr + 1));
    for (int i = 0; i < nr; i++) {
        const Type *t = ir_type(f, op->res[i]);
        c[i].L = t->kind == TY_TILE ? if_layout(cg, &cg->vals[ys[0]->args[i]], &cg->vals[ys[1]->args[i]], t) : NULL;
    }
    LLVMValueRef **vals[2];
    for (int k = 0; k < 2; k++) {
        LLVMPositionBuilderAtEnd(cg->b, ends[k]);
        vals[k] = arena_alloc(cg->a, sizeof(LLVMValueRef *) * (size_t)(nr + 1));
        for (int i = 0; i < nr; i++) {
            const TileVal *v = &cg->vals[ys[k]->args[i]];
            vals[k][i] = c[i].L ? cg_materialize(cg, v, ir_type(f, ys[k]->args[i]), c[i].L, op->loc) : NULL;
        }
        ends[k] = LLVMGetInsertBlock(cg->b);
        LLVMBuildBr(cg->b, join);
    }
    cg->depth--;
    LLVMPositionBuilderAtEnd(cg->b, join);
    for (int i = 0; i < nr; i++) {
        make_phis(cg, &c[i], ir_type(f, op->res[i]));
        for (int k = 0; k < 2; k++) {
            LLVMValueRef one = cg->vals[ys[k]->args[i]].s;
            LLVMValueRef *r = vals[k][i] ? vals[k][i] : &one;
            for (int j = 0; j < c[i].n; j++)
                LLVMAddIncoming(c[i].phi[j], &r[j], &ends[k], 1);
        }
        TileVal v = carried_val(&c[i]);
        if (!c[i].L && ir_type(f, op->res[i])->kind == TY_TILE)
            v.kind = TV_SPLAT;
        cg->vals[op->res[i]] = v;
    }
    return 0;
}

/* ---- dispatch ---- */

static int lower_op(Cg *cg, Op *op)
{
    cg_debug_loc(cg, op->loc);
    switch ((OpCode)op->code) {
    case OP_CONST: return lower_const(cg, op);
    case OP_BLOCKID: case OP_NBLOCKS: return lower_sreg(cg, op);
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM: case OP_MIN: case OP_MAX:
    case OP_AND: case OP_OR: case OP_XOR: case OP_CMP: case OP_NEG: case OP_NOT: case OP_ABS:
    case OP_EXP: case OP_EXP2: case OP_LOG: case OP_LOG2: case OP_SQRT: case OP_RSQRT: case OP_TANH:
    case OP_ERF: case OP_SIGMOID: case OP_SIN: case OP_COS: case OP_FLOOR: case OP_CEIL: case OP_ROUND:
    case OP_POW: case OP_SHL: case OP_SHR: case OP_SELECT: case OP_CAST:
        return lower_elem(cg, op);
    case OP_DIVISOR: case OP_NUMSMS:   /* grid only: the runtime evaluates the grid at launch */
        diag_internal(cg->d, op->loc, "%s outside the grid reached the code generator", op_info[op->code].name);
        return 1;
    case OP_SPLAT: return lower_splat(cg, op);
    case OP_EXPAND: return lower_expand(cg, op);
    case OP_BROADCAST: return lower_broadcast(cg, op);
    case OP_IOTA: return lower_iota(cg, op);
    case OP_REDUCE: return cg_lower_reduce(cg, op);
    case OP_SCAN: return cg_lower_scan(cg, op);
    case OP_SLICE: case OP_CONCAT: case OP_RESHAPE: return cg_lower_shape(cg, op);
    case OP_GATHER: return cg_lower_gather(cg, op);
    case OP_SCATTER: return cg_lower_scatter(cg, op);
    case OP_PHILOX: return cg_lower_philox(cg, op);
    case OP_TRANS:
        return cg->vals[op->args[0]].kind == TV_SMEM ? cg_lower_trans_view(cg, op) : lower_trans(cg, op);
    case OP_DOT: return cg_lower_dot(cg, op);
    case OP_LOAD: return cg_lower_load(cg, op);
    case OP_STORE: {
        int tma = cg_ws_tma_store(cg, op);
        if (tma >= 0)
            return tma;
        cg_mma_prepare_store(cg, op);
        return cg_lower_store(cg, op);
    }
    case OP_ATOMIC_ADD: return cg_lower_atomic_add(cg, op);
    case OP_SMEM_ALLOC: return cg_lower_smem_alloc(cg, op);
    case OP_ASYNC_COPY: return cg_lower_async_copy(cg, op);
    case OP_ASYNC_COMMIT: case OP_ASYNC_WAIT: case OP_BARRIER: return cg_lower_async_sync(cg, op);
    case OP_SMEM_LOAD: return cg_lower_smem_load(cg, op);
    case OP_SMEM_STORE: return cg_lower_smem_store(cg, op);
    case OP_FOR: return lower_for(cg, op);
    case OP_IF: return lower_if(cg, op);
    case OP_YIELD: return 0;   /* read by the parent FOR / IF */
    case OP_WS: return cg_lower_ws(cg, op);
    case OP_NAMED_BAR: case OP_MBAR_ALLOC: case OP_MBAR_EXPECT: case OP_MBAR_ARRIVE: case OP_MBAR_WAIT:
    case OP_TMA_LOAD:
        return cg_lower_ws_op(cg, op);
    case OP_DOT_ASYNC: return cg_lower_dot_async(cg, op);
    case OP_TMEM_ALLOC: case OP_TC_MMA: case OP_TC_COMMIT: case OP_TMEM_LOAD: case OP_TMEM_STORE: return cg_lower_tc_op(cg, op);
    case OP_DOT_WAIT: return cg_lower_dot_wait(cg, op);
    case OP_CONVERT_LAYOUT:   /* the value is unchanged; its users pick the registers they need */
        cg->vals[op->res[0]] = cg->vals[op->args[0]];
        return 0;
    case OP_COUNT: break;
    }
    diag_internal(cg->d, op->loc, "op '%s' has no lowering", op->code < OP_COUNT ? op_info[op->code].name : "?");
    return 1;
}

int cg_lower_block(Cg *cg, Block *blk)
{
    for (int i = 0; i < blk->nops; i++)
        if (lower_op(cg, blk->ops[i]))
            return 1;
    return 0;
}
