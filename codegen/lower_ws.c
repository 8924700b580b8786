/* lower_ws.c - warp-specialized kernels: roles (WS), named barriers,
 * mbarrier rings and TMA copies, through the family's Hopper hooks
 * (target.h; codegen/sm90/).
 *
 * Threads: the block is the roles' warp groups in order; role k holds
 * threads [128 b_k, 128 (b_k + g_k)) with b_k the warp groups before it.
 * Each role's code sees its own thread index, warps and barrier (Cg.tid,
 * nwarps, role_bar, role_threads): a block barrier inside a role meets
 * that role's threads on its own named barrier. The warp group index is
 * read through a shuffle from lane 0, so the branch to the roles and each
 * role's setmaxnreg are warp-uniform. Registers: the kernel declares
 * .maxntid (all roles' threads) and .minnctapersm B, the blocks an SM of
 * the WS op (`blocks`, 1 unless given), so every thread starts with
 * 65536 / (threads x B) registers (rounded down to 8, ir_ws_entry_regs);
 * each role raises or lowers its own to the budget the WS op gives it.
 *
 * Rings (MBAR_ALLOC): 8 bytes per slot in dynamic shared memory after the
 * buffers, initialised by thread 0 before the roles start (then a fence
 * for the async proxy and a block barrier). The IR counts one arrival per
 * MBAR_ARRIVE of a role; in the hardware each warp of the role arrives
 * (lane 0, after the warp has passed the ops before it: a wgmma.wait_group
 * retires the warp's part of the products), so a ring's count is the IR
 * count times the arriving role's warps. MBAR_EXPECT and TMA_LOAD are
 * issued by the role's leader (its thread 0): one arrival. A role that
 * needs only its leader runs on its first warp (role_leader_only).
 *
 * Tensor maps: every distinct (tensor param, box, swizzle) of the
 * kernel's TMA_LOADs is one hidden kernel param after the dims: a
 * 128-byte CUtensorMap passed as a __grid_constant__ (.param .align 64
 * .b8 [128]), described by a `tmap` metadata record in the same order;
 * the runtime encodes it at launch (docs/runtime.md). A box is one
 * swizzle panel: [rows x W / element bytes] for a W-byte swizzle, so a
 * window wider than W is copied as one box per panel.
 */
#include "cg_internal.h"
#include "passes/passes.h"

#include <string.h>

enum { WS_MAXTMAPS = 16, WS_MAXRINGS = 32 };

typedef struct CgTmap {
    ValId tensor;
    int rank;
    int64_t box[TENSOR_MAXRANK];   /* per tensor dim, outermost first */
    int swz;                       /* SwizzleMode of the buffers it fills */
    LLVMValueRef param;            /* the hidden param: ptr to the 128-byte map */
} CgTmap;

enum { WS_MAXSTORES = 8 };

typedef struct CgWs {
    int nwarps;                    /* every role's warps */
    int blocks;                    /* blocks an SM the register budgets are for (.minnctapersm) */
    int first_bar;                 /* named barrier ids from here on are the roles' own */
    CgTmap tmap[WS_MAXTMAPS];
    int ntmap;
    struct { ValId ring; int mult; } ring[WS_MAXRINGS];
    int nring;
    /* Stores of a tile declared shared that leave through one TMA store
     * (cg_ws_tma_store): the op and its tensor map. */
    struct { const Op *op; int tmap; } store[WS_MAXSTORES];
    int nstore;
    bool role_stored;              /* the role being lowered issued TMA stores: it waits for them at its end */
} CgWs;

/* ---- the plan: roles' warps, rings' multiplicities, tensor maps ---- */

typedef struct PlanCtx {
    Cg *cg;
    CgWs *ws;
    int role_warps;
    int nerr;
    int max_bar;
} PlanCtx;

static int ring_mult(PlanCtx *p, const Op *op, ValId ring, int mult)
{
    CgWs *ws = p->ws;
    for (int i = 0; i < ws->nring; i++)
        if (ws->ring[i].ring == ring) {
            if (ws->ring[i].mult != mult) {
                diag_error(p->cg->d, op->loc, "this barrier ring gets arrivals from roles of different sizes; "
                           "the code generator needs one arrival kind per ring");
                return 1;
            }
            return 0;
        }
    if (ws->nring == WS_MAXRINGS) {
        diag_error(p->cg->d, op->loc, "more than %d barrier rings in one kernel", WS_MAXRINGS);
        return 1;
    }
    ws->ring[ws->nring].ring = ring;
    ws->ring[ws->nring++].mult = mult;
    return 0;
}

/* The box of a TMA_LOAD (one swizzle panel) into tm; 0 if TMA can take it. */
static int tma_box(Cg *cg, const Op *op, CgTmap *tm)
{
    Func *f = cg->f;
    const Op *alloc = ir_val(f, op->args[0])->def;
    const Type *tt = ir_type(f, op->args[4]);
    int eb = dtype_bits((DType)tt->dtype) / 8;
    if (!alloc || alloc->code != OP_SMEM_ALLOC || eb < 1 || tt->rank > 5 || op->nlist != tt->rank) {
        diag_error(cg->d, op->loc, "TMA copy: needs a shared buffer and a window of a tensor of rank 1 to 5 "
                   "with a byte-sized dtype");
        return 1;
    }
    memset(tm, 0, sizeof *tm);
    tm->tensor = op->args[4];
    tm->rank = tt->rank;
    tm->swz = (int)alloc->iattr[0];
    int w = cg_swz_width(tm->swz);
    if (tm->swz == SWZ_PAD) {
        diag_error(cg->d, op->loc, "TMA copy into a padded buffer: TMA writes only the swizzled or plain layouts");
        return 1;
    }
    for (int d = 0; d < tt->rank; d++)
        tm->box[d] = op->list[d] > 0 ? op->list[d] : 1;
    int64_t inner = tm->box[tt->rank - 1];
    if (w && inner * eb > w) {
        if ((inner * eb) % w) {
            diag_error(cg->d, op->loc, "TMA copy: rows of %lld bytes are not whole %d-byte swizzle panels",
                       (long long)(inner * eb), w);
            return 1;
        }
        tm->box[tt->rank - 1] = w / eb;
    }
    for (int d = 0; d < tt->rank; d++)
        if (tm->box[d] > 256) {
            diag_error(cg->d, op->loc, "TMA copy: a box extent of %lld in dim %d (TMA boxes have at most 256 "
                       "elements per dim)", (long long)tm->box[d], d);
            return 1;
        }
    if ((tm->box[tt->rank - 1] * eb) % 16) {
        diag_error(cg->d, op->loc, "TMA copy: the inner box is %lld bytes; TMA needs a multiple of 16",
                   (long long)(tm->box[tt->rank - 1] * eb));
        return 1;
    }
    return 0;
}

/* The box of a STORE that can leave through TMA (a 2-D tile of 16-bit
 * elements declared shared, its rows whole 128-byte panels, the window's
 * other dims single elements) into tm, with the 128-byte swizzle: one box
 * per 64-column panel. False when the store keeps the other forms. */
static bool tma_store_box(Cg *cg, const Op *op, CgTmap *tm)
{
    Func *f = cg->f;
    const Type *tt = ir_type(f, op->args[0]), *vt = ir_type(f, op->args[op->nargs - 1]);
    int eb = dtype_bits((DType)vt->dtype) / 8, r = tt->rank;
    if (!cg->tg->tma_store || vt->kind != TY_TILE || vt->space != SP_SHARED || vt->rank != 2 ||
        tt->dtype != vt->dtype || r < 2 || r > 5 || op->nlist != r || op->nargs != r + 2)
        return false;
    int64_t rows = vt->shape[0], cols = vt->shape[1];
    if (op->list[r - 1] != cols || op->list[r - 2] != rows || !pass_tma_store_tile(rows, cols, eb * 8))
        return false;
    memset(tm, 0, sizeof *tm);
    tm->tensor = op->args[0];
    tm->rank = r;
    tm->swz = SWZ_128B;
    for (int d = 0; d < r - 2; d++) {
        if (op->list[d] > 1)
            return false;
        tm->box[d] = 1;
    }
    tm->box[r - 2] = rows;
    tm->box[r - 1] = 128 / eb;
    return true;
}

static int tmap_index(const CgWs *ws, const CgTmap *tm)
{
    for (int i = 0; i < ws->ntmap; i++) {
        const CgTmap *o = &ws->tmap[i];
        if (o->tensor == tm->tensor && o->swz == tm->swz && memcmp(o->box, tm->box, sizeof o->box) == 0)
            return i;
    }
    return -1;
}

static bool plan_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    PlanCtx *p = ctx;
    switch ((OpCode)op->code) {
    case OP_MBAR_ARRIVE:
        p->nerr += ring_mult(p, op, op->args[0], p->role_warps);
        break;
    case OP_MBAR_EXPECT: case OP_TC_COMMIT:   /* one thread arrives */
        p->nerr += ring_mult(p, op, op->args[0], 1);
        break;
    case OP_NAMED_BAR:
        if (op->iattr[0] > p->max_bar)
            p->max_bar = (int)op->iattr[0];
        break;
    case OP_TMA_LOAD: {
        CgTmap tm;
        if (tma_box(p->cg, op, &tm)) {
            p->nerr++;
            break;
        }
        if (tmap_index(p->ws, &tm) >= 0)
            break;
        if (p->ws->ntmap == WS_MAXTMAPS) {
            diag_error(p->cg->d, op->loc, "more than %d tensor maps in one kernel", WS_MAXTMAPS);
            p->nerr++;
            break;
        }
        p->ws->tmap[p->ws->ntmap++] = tm;
        break;
    }
    case OP_STORE: {   /* a `tma` store in a role: one TMA store when the map fits (else the other forms) */
        CgTmap tm;
        if (!op->iattr[1] || !p->role_warps || p->ws->nstore == WS_MAXSTORES || !tma_store_box(p->cg, op, &tm))
            break;
        int ti = tmap_index(p->ws, &tm);
        if (ti < 0) {
            if (p->ws->ntmap == WS_MAXTMAPS)
                break;
            ti = p->ws->ntmap++;
            p->ws->tmap[ti] = tm;
        }
        p->ws->store[p->ws->nstore].op = op;
        p->ws->store[p->ws->nstore++].tmap = ti;
        break;
    }
    default:
        break;
    }
    return true;
}

int cg_ws_plan(Cg *cg, Func *f)
{
    Op *ws_op = ir_find_op(f, OP_WS);
    cg->ws = NULL;
    cg->role_bar = cg->role_threads = 0;
    cg->role_leader = NULL;
    cg->tmem_word = NULL;   /* per kernel: a module may hold several */
    cg->tmem_cols = 0;
    if (!ws_op)
        return 0;
    if (!cg->tg->mbar_init || (!cg->tg->wgmma && !cg->tg->tc_mma)) {
        diag_error(cg->d, ws_op->loc, "warp-specialized roles need TMA, mbarriers and setmaxnreg, which %s "
                   "does not have", cg->ti->name);
        return 1;
    }
    CgWs *ws = arena_alloc(cg->a, sizeof *ws);
    memset(ws, 0, sizeof *ws);
    PlanCtx p = { cg, ws, 0, 0, 0 };
    for (int k = 0; k < ws_op->nregions; k++) {
        int wgs = (int)ws_op->list[3 * k + 1];
        ws->nwarps += wgs * 4;
        p.role_warps = wgs * 4;
        ir_walk(f, &ws_op->regions[k], plan_visit, &p);
    }
    ws->first_bar = p.max_bar + 1;
    ws->blocks = ir_ws_blocks(ws_op);
    if (ws->first_bar + ws_op->nregions > NAMED_BAR_IDS) {
        diag_error(cg->d, ws_op->loc, "the roles need %d named barriers of their own above id %d; there are %d",
                   ws_op->nregions, p.max_bar, NAMED_BAR_IDS);
        return 1;
    }
    if (ws->nwarps * 32 > cg->ti->lim.threads_per_block) {
        diag_error(cg->d, ws_op->loc, "the roles need %d threads; %s allows %d per block", ws->nwarps * 32,
                   cg->ti->name, cg->ti->lim.threads_per_block);
        return 1;
    }
    cg->ws = ws;
    return p.nerr;
}

int cg_ws_nwarps(const Cg *cg) { return cg->ws ? cg->ws->nwarps : 0; }
int cg_ws_blocks(const Cg *cg) { return cg->ws ? cg->ws->blocks : 0; }

int cg_ws_nparams(const Cg *cg) { return cg->ws ? cg->ws->ntmap : 0; }

LLVMTypeRef cg_ws_param_type(Cg *cg) { return LLVMPointerTypeInContext(cg->ctx, 0); }

/* The hidden params from index `first` on: byval [128 x i8], align 64,
 * nvvm.grid_constant (read in place in the param space). */
void cg_ws_bind(Cg *cg, unsigned first)
{
    if (!cg->ws)
        return;
    unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
    unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
    LLVMTypeRef map = LLVMArrayType2(cg->t_i8, 128);
    for (int i = 0; i < cg->ws->ntmap; i++) {
        unsigned idx = first + (unsigned)i + 1;
        LLVMAddAttributeAtIndex(cg->fn, idx, LLVMCreateTypeAttribute(cg->ctx, byval, map));
        LLVMAddAttributeAtIndex(cg->fn, idx, LLVMCreateEnumAttribute(cg->ctx, align, 64));
        LLVMAddAttributeAtIndex(cg->fn, idx, LLVMCreateStringAttribute(cg->ctx, "nvvm.grid_constant", 18, "", 0));
        cg->ws->tmap[i].param = LLVMGetParam(cg->fn, first + (unsigned)i);
    }
}

void cg_ws_meta(Cg *cg, StrBuf *out)
{
    static const char *const modes[SWZ_COUNT] = { "none", "32", "64", "128", "none" };
    for (int i = 0; cg->ws && i < cg->ws->ntmap; i++) {
        const CgTmap *tm = &cg->ws->tmap[i];
        const Value *v = ir_val(cg->f, tm->tensor);
        sb_printf(out, "tmap %s swizzle %s box", v->name ? v->name : "?", modes[tm->swz]);
        for (int d = 0; d < tm->rank; d++)
            sb_printf(out, " %lld", (long long)tm->box[d]);
        sb_putc(out, '\n');
    }
}

/* ---- default layouts ---- */

typedef struct AnchorCtx { Cg *cg; int nwarps; } AnchorCtx;

static bool anchor_visit(Func *f, Op *op, void *ctx)
{
    AnchorCtx *a = ctx;
    if (op->code == OP_TMEM_LOAD) {   /* the epilogue works on rows a thread */
        const Type *t = ir_type(f, op->res[0]);
        if (t->rank == 2 && t->shape[0] == 32 * a->nwarps) {
            const Layout *L = cg_layout_dup(a->cg, layout_tmem_rows(t->shape[0], t->shape[1], a->nwarps));
            cg_set_anchor(a->cg, 2, t->shape, L);
            cg_set_anchor(a->cg, 1, t->shape, cg_layout_dup(a->cg, layout_slice(L, 1)));
        }
        return true;
    }
    if (op->code != OP_DOT_ASYNC)
        return true;
    const Type *t = ir_type(f, op->args[2]);
    if (t->rank != 2 || t->shape[0] % (16 * a->nwarps) || t->shape[1] % 8)
        return true;
    const Layout *L = cg_layout_dup(a->cg, layout_wgmma_acc(t->shape[0], t->shape[1], a->nwarps));
    cg_set_anchor(a->cg, 2, t->shape, L);
    cg_set_anchor(a->cg, 1, t->shape, cg_layout_dup(a->cg, layout_slice(L, 1)));
    return true;
}

void cg_ws_anchors(Cg *cg, Func *f)
{
    Op *ws_op = ir_find_op(f, OP_WS);
    int nwarps = cg->nwarps;
    for (int k = 0; ws_op && k < ws_op->nregions; k++) {   /* loads in a role: the role's warps */
        cg->nwarps = (int)ws_op->list[3 * k + 1] * 4;
        cg_block_anchors(cg, &ws_op->regions[k]);
    }
    cg->nwarps = nwarps;
    for (int k = 0; ws_op && k < ws_op->nregions; k++) {
        AnchorCtx a = { cg, (int)ws_op->list[3 * k + 1] * 4 };
        ir_walk(f, &ws_op->regions[k], anchor_visit, &a);
    }
}

/* ---- rings ---- */

static int ring_count_mult(const Cg *cg, ValId ring)
{
    for (int i = 0; i < cg->ws->nring; i++)
        if (cg->ws->ring[i].ring == ring)
            return cg->ws->ring[i].mult;
    return 1;   /* never arrived on: the count as written */
}

LLVMValueRef cg_ring_slot(Cg *cg, ValId ring, ValId slot)
{
    LLVMValueRef o = LLVMBuildMul(cg->b, cg->vals[slot].s, cg_i32(cg, 8), "");
    return LLVMBuildGEP2(cg->b, cg->t_i8, cg->vals[ring].s, &o, 1, "");
}

LLVMBasicBlockRef cg_lead_begin(Cg *cg, LLVMValueRef cond)
{
    LLVMBasicBlockRef then = cg_new_block(cg, "lead"), after = cg_new_block(cg, "lead.end");
    LLVMBuildCondBr(cg->b, cond, then, after);
    LLVMPositionBuilderAtEnd(cg->b, then);
    return after;
}

void cg_lead_end(Cg *cg, LLVMBasicBlockRef after)
{
    LLVMBuildBr(cg->b, after);
    LLVMPositionBuilderAtEnd(cg->b, after);
}

LLVMValueRef cg_role_lead(Cg *cg)
{
    return cg->role_leader ? cg->role_leader : LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, 0), "");
}

static int lower_mbar_alloc(Cg *cg, Op *op)
{
    const Type *t = ir_type(cg->f, op->res[0]);
    int64_t slots = t->shape[0];
    int64_t off = cg_smem_place_ring(cg, op, slots * 8);
    LLVMValueRef o = cg_i64(cg, off);
    LLVMValueRef base = LLVMBuildGEP2(cg->b, cg->t_i8, cg->dsmem, &o, 1, "");
    cg->vals[op->res[0]] = (TileVal){ .kind = TV_SCALAR, .s = base };
    int count = (int)op->iattr[0] * ring_count_mult(cg, op->res[0]);
    LLVMBasicBlockRef after = cg_lead_begin(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, 0), ""));
    for (int64_t s = 0; s < slots; s++) {
        LLVMValueRef so = cg_i64(cg, 8 * s);
        cg->tg->mbar_init(cg, LLVMBuildGEP2(cg->b, cg->t_i8, base, &so, 1, ""), count);
    }
    cg_lead_end(cg, after);
    if (cg->report)
        sb_printf(cg->report, "  barrier ring at %d:%d: %lld mbarriers at offset %lld, %d arrivals per phase\n",
                  op->loc.line, op->loc.col, (long long)slots, (long long)off, count);
    return 0;
}

static int lower_tma_load(Cg *cg, Op *op)
{
    CgTmap tm;
    if (tma_box(cg, op, &tm))
        return 1;
    int ti = tmap_index(cg->ws, &tm);
    const TileVal *buf = &cg->vals[op->args[0]];
    if (ti < 0 || buf->kind != TV_SMEM) {
        diag_internal(cg->d, op->loc, "tma_load outside the kernel's plan");
        return 1;
    }
    const SmemView *sv = buf->sv;
    const Type *tt = ir_type(cg->f, op->args[4]);
    int r = tt->rank, eb = dtype_bits((DType)tt->dtype) / 8;
    int64_t inner = op->list[r - 1] > 0 ? op->list[r - 1] : 1, pbox = tm.box[r - 1];
    int64_t rows = 1;
    for (int d = 0; d + 1 < r; d++)
        rows *= tm.box[d];
    LLVMValueRef so = LLVMBuildMul(cg->b, LLVMBuildSExt(cg->b, cg->vals[op->args[1]].s, cg->t_i64, ""),
                                   cg_i64(cg, sv->slot_bytes), "");
    LLVMValueRef dst0 = LLVMBuildGEP2(cg->b, cg->t_i8, sv->base, &so, 1, "");
    LLVMValueRef bar = cg_ring_slot(cg, op->args[2], op->args[3]);
    LLVMBasicBlockRef after = cg_lead_begin(cg, cg_role_lead(cg));
    for (int64_t p = 0; p < inner / pbox; p++) {
        LLVMValueRef c[TENSOR_MAXRANK];
        for (int i = 0; i < r; i++)
            c[i] = cg->vals[op->args[5 + (r - 1 - i)]].s;
        c[0] = LLVMBuildAdd(cg->b, c[0], cg_i32(cg, p * pbox), "");
        LLVMValueRef po = cg_i64(cg, p * rows * pbox * eb);
        cg->tg->tma_load(cg, r, LLVMBuildGEP2(cg->b, cg->t_i8, dst0, &po, 1, ""), cg->ws->tmap[ti].param, c, bar);
    }
    cg_lead_end(cg, after);
    if (cg->report)
        sb_printf(cg->report, "  TMA copy at %d:%d: tensor map %d, %lld box%s of %lld x %lld, swizzle %s\n",
                  op->loc.line, op->loc.col, ti, (long long)(inner / pbox), inner / pbox == 1 ? "" : "es",
                  (long long)rows, (long long)pbox, swizzle_names[tm.swz]);
    return 0;
}

/* A tile declared shared that a role stores (the epilogue of a product,
 * as FlashAttention 3 writes O): its fragments go to a scratch in the
 * tensor map's layout (64-column panels of 128-byte rows, the 16-byte
 * chunks of row i XORed with i mod 8, the 128-byte swizzle; conflict-free
 * for the accumulator's 4-byte pairs), and the role's leader hands each
 * panel to TMA in one bulk group; the threads go on at once. Rows outside
 * the tensor are not written (TMA clips the box: the store's mask). The
 * scratch is reused by the next such store after the leader has waited
 * for the previous group's reads and the role has met; the role waits for
 * its groups at its end. -1: not such a store (the other forms); 0 done;
 * 1 error. */
int cg_ws_tma_store(Cg *cg, Op *op)
{
    int k = 0;
    while (cg->ws && cg->role_threads && k < cg->ws->nstore && cg->ws->store[k].op != op)
        k++;
    if (!cg->ws || !cg->role_threads || k == cg->ws->nstore)
        return -1;
    ValId vv = op->args[op->nargs - 1];
    const TileVal *v = &cg->vals[vv];
    const Type *t = ir_type(cg->f, vv);
    int g = v->kind == TV_REGS ? layout_vec(v->L) : 0, eb = 2;
    int64_t rows = t->shape[0], cols = t->shape[1], bytes = rows * cols * eb;
    int64_t limit = pass_smem_limit(cg->ti, cg->smem_per_block);
    /* a region of its own, 1024-byte aligned (the swizzle's period; the
     * dynamic array is), before the shared scratch (finish_smem places
     * that at dsmem_base): the TMA store may still read it while a later
     * op of the role (the next tile's) uses the shared scratch */
    int64_t at = (cg->dsmem_base + 1023) / 1024 * 1024;
    if (v->kind != TV_REGS || g < 1 || 16 % (g * eb) || !cg->dsmem || at + bytes + cg->smem_bytes > limit) {
        if (cg->report)
            sb_printf(cg->report, "  store at %d:%d: no TMA store (%s)\n", op->loc.line, op->loc.col,
                      v->kind != TV_REGS || g < 1 || 16 % (g * eb) ? "the fragments are not whole 16-byte chunks"
                                                                  : "its scratch exceeds the shared memory limit");
        return -1;
    }
    const CgTmap *tm = &cg->ws->tmap[cg->ws->store[k].tmap];
    cg->dsmem_base = (at + bytes + 127) / 128 * 128;
    LLVMValueRef ao = cg_i64(cg, at);
    LLVMValueRef base = LLVMBuildGEP2(cg->b, cg->t_i8, cg->dsmem, &ao, 1, "");
    /* the previous store has read the scratch */
    LLVMBasicBlockRef after = cg_lead_begin(cg, cg_role_lead(cg));
    cg->tg->bulk_wait(cg, 0, true);
    cg_lead_end(cg, after);
    cg->tg->barrier(cg);   /* the role's named barrier */
    LLVMTypeRef mty = cg_mem_type(cg, (DType)t->dtype);
    for (int r = 0, n = layout_nregs(v->L); r < n; r += g) {
        LLVMValueRef row = cg_coord(cg, v->L, r, 0), col = cg_coord(cg, v->L, r, 1);
        /* byte offset in the panels, then the 16-byte chunk XOR (row mod 8) */
        LLVMValueRef panel = LLVMBuildUDiv(cg->b, col, cg_i32(cg, 128 / eb), "");
        LLVMValueRef inner = LLVMBuildURem(cg->b, col, cg_i32(cg, 128 / eb), "");
        LLVMValueRef off = LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, panel, cg_i32(cg, rows * 128), ""),
                                        LLVMBuildAdd(cg->b, LLVMBuildMul(cg->b, row, cg_i32(cg, 128), ""),
                                                     LLVMBuildMul(cg->b, inner, cg_i32(cg, eb), ""), ""), "");
        LLVMValueRef x = LLVMBuildShl(cg->b, LLVMBuildAnd(cg->b, row, cg_i32(cg, 7), ""), cg_i32(cg, 4), "");
        off = LLVMBuildXor(cg->b, off, x, "");
        LLVMValueRef o64 = LLVMBuildZExt(cg->b, off, cg->t_i64, "");
        LLVMValueRef p = LLVMBuildGEP2(cg->b, cg->t_i8, base, &o64, 1, "");
        LLVMValueRef val = v->r[r];
        if (g > 1) {
            val = LLVMGetUndef(LLVMVectorType(mty, (unsigned)g));
            for (int e = 0; e < g; e++)
                val = LLVMBuildInsertElement(cg->b, val, v->r[r + e], cg_i32(cg, e), "");
        }
        LLVMSetAlignment(LLVMBuildStore(cg->b, val, p), (unsigned)(g * eb));
    }
    cg->tg->fence_async_smem(cg);
    cg->tg->barrier(cg);   /* the role's named barrier */
    int rank = tm->rank;
    int64_t npanel = cols * eb / 128;
    after = cg_lead_begin(cg, cg_role_lead(cg));
    for (int64_t pn = 0; pn < npanel; pn++) {
        LLVMValueRef c[TENSOR_MAXRANK];
        for (int i = 0; i < rank; i++)
            c[i] = cg->vals[op->args[1 + (rank - 1 - i)]].s;
        c[0] = LLVMBuildAdd(cg->b, c[0], cg_i32(cg, pn * (128 / eb)), "");
        LLVMValueRef po = cg_i64(cg, pn * rows * 128);
        cg->tg->tma_store(cg, rank, LLVMBuildGEP2(cg->b, cg->t_i8, base, &po, 1, ""), tm->param, c);
    }
    cg->tg->bulk_commit(cg);
    cg_lead_end(cg, after);
    cg->ws->role_stored = true;
    cg->epoch++;
    if (cg->report)
        sb_printf(cg->report, "  store at %d:%d: through %lld bytes of shared memory at offset %lld (128-byte swizzle) "
                  "and one TMA store of %lld box%s of %lld x %lld (tensor map %d), issued by the role's leader; the "
                  "next such store waits for it to be read\n", op->loc.line, op->loc.col, (long long)bytes,
                  (long long)at, (long long)npanel, npanel == 1 ? "" : "es", (long long)rows, (long long)(128 / eb),
                  cg->ws->store[k].tmap);
    return 0;
}

int cg_lower_ws_op(Cg *cg, Op *op)
{
    if (!cg->ws) {
        diag_error(cg->d, op->loc, "'%s' outside a kernel with warp-specialized roles", op_info[op->code].name);
        return 1;
    }
    switch ((OpCode)op->code) {
    case OP_MBAR_ALLOC:
        return lower_mbar_alloc(cg, op);
    case OP_MBAR_EXPECT: {
        LLVMValueRef bar = cg_ring_slot(cg, op->args[0], op->args[1]);
        LLVMBasicBlockRef after = cg_lead_begin(cg, cg_role_lead(cg));
        cg->tg->mbar_expect_tx(cg, bar, op->iattr[0]);
        cg_lead_end(cg, after);
        return 0;
    }
    case OP_MBAR_ARRIVE: {
        LLVMValueRef bar = cg_ring_slot(cg, op->args[0], op->args[1]);
        LLVMBasicBlockRef after = cg_lead_begin(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->lane, cg_i32(cg, 0), ""));
        cg->tg->mbar_arrive(cg, bar);
        cg_lead_end(cg, after);
        return 0;
    }
    case OP_MBAR_WAIT: {
        LLVMValueRef bar = cg_ring_slot(cg, op->args[0], op->args[1]);
        LLVMValueRef parity = LLVMBuildAnd(cg->b, cg->vals[op->args[2]].s, cg_i32(cg, 1), "");
        cg->tg->mbar_wait(cg, bar, parity);
        if (cg->role_lone)   /* the warp's lanes leave the wait together: none falls behind */
            cg_call(cg, "llvm.nvvm.bar.warp.sync", cg->t_void, (LLVMValueRef[]){ cg_i32(cg, -1) }, 1);
        return 0;
    }
    case OP_TMA_LOAD:
        return lower_tma_load(cg, op);
    case OP_NAMED_BAR:
        cg->tg->named_bar(cg, (int)op->iattr[0], (int)op->iattr[1], op->iattr[2] == NBAR_ARRIVE);
        return 0;
    default:
        break;
    }
    diag_internal(cg->d, op->loc, "not a warp-specialization op");
    return 1;
}

/* ---- roles ---- */

/* Does every op of the role only need its leader (thread 0)? Waits,
 * the leader's expects, TMA copies, tcgen05 products and commits, pure
 * ops, loops and branches; a slot read only as a product's operand view.
 * Such a role (a producer; sm_100a's product issuer) runs on its first
 * warp alone (the other warps of its warp groups leave at once), and the
 * warp's lanes leave each wait together (bar.warp.sync). Before, every
 * thread of the role ran its waits and nothing kept the threads that
 * issue nothing up with the rings: a thread two phases behind waits on a
 * parity that has come round again, for a phase that never completes,
 * and the block never ends (compute-sanitizer racecheck, which
 * serializes threads, caught lanes 1-31 of a producer warp so). Only the
 * leader waiting, the rest running the loops without waits, was as safe
 * but 5% slower (GEMM 4096^3 0.927x cuBLAS against 0.974-0.982x); the
 * first warp alone runs at the old speed (bench/RESULTS.md 2026-12-04
 * 16:21 and 17:32-17:46). */
static bool leader_only_visit(Func *f, Op *op, void *ctx)
{
    bool *ok = ctx;
    switch ((OpCode)op->code) {
    case OP_FOR: case OP_IF: case OP_YIELD: case OP_MBAR_WAIT: case OP_MBAR_EXPECT: case OP_TMA_LOAD:
    case OP_TC_MMA: case OP_TC_COMMIT:
        break;
    case OP_SMEM_LOAD:
        *ok = cg_smem_load_is_view(f, op);
        break;
    default:
        *ok = (op_info[op->code].flags & OPF_PURE) != 0;
        break;
    }
    return *ok;
}

static bool role_leader_only(Func *f, Block *body)
{
    bool ok = true;
    ir_walk(f, body, leader_only_visit, &ok);
    return ok;
}

int cg_lower_ws(Cg *cg, Op *op)
{
    CgWs *ws = cg->ws;
    if (!ws || cg->role_threads) {
        diag_error(cg->d, op->loc, "roles inside roles");
        return 1;
    }
    if (ws->nring) {
        cg->tg->mbar_init_fence(cg);
        cg->tg->barrier(cg);
    }
    LLVMValueRef sh[4] = { cg_i32(cg, -1), LLVMBuildLShr(cg->b, cg->tid, cg_i32(cg, 7), ""), cg_i32(cg, 0),
                           cg_i32(cg, 31) };
    LLVMValueRef wg = cg_call(cg, "llvm.nvvm.shfl.sync.idx.i32", cg->t_i32, sh, 4);
    LLVMBasicBlockRef done = cg_new_block(cg, "ws.end");
    LLVMValueRef tid = cg->tid, lane = cg->lane, warp = cg->warp;
    int nwarps = cg->nwarps, entry = ir_ws_entry_regs(ws->nwarps * 32, ws->blocks), base = 0, e = 0;
    for (int k = 0; k < op->nregions && !e; k++) {
        int wgs = (int)op->list[3 * k + 1], regs = (int)op->list[3 * k + 2];
        LLVMBasicBlockRef in = cg_new_block(cg, "role"), next = cg_new_block(cg, "role.next");
        LLVMValueRef rel = LLVMBuildSub(cg->b, wg, cg_i32(cg, base), "");
        LLVMBuildCondBr(cg->b, LLVMBuildICmp(cg->b, LLVMIntULT, rel, cg_i32(cg, wgs), ""), in, next);
        LLVMPositionBuilderAtEnd(cg->b, in);
        if (regs != entry)
            cg->tg->setmaxnreg(cg, regs, regs > entry);
        /* the thread index read again after setmaxnreg: no value from before it lives in the role */
        LLVMValueRef fresh = cg_asm_call(cg, cg->t_i32, "mov.u32 $0, %tid.x;", "=r", NULL, 0);
        cg->tid = LLVMBuildSub(cg->b, fresh, cg_i32(cg, 128 * base), "");
        cg_thread_ids(cg, cg->tid);
        cg->nwarps = wgs * 4;
        cg->role_threads = wgs * 128;
        cg->role_bar = ws->first_bar + k;
        cg->role_leader = LLVMBuildICmp(cg->b, LLVMIntEQ, cg->tid, cg_i32(cg, 0), "");
        bool lone = role_leader_only(cg->f, &op->regions[k]);
        if (cg->report)
            sb_printf(cg->report, "  role %d (%s): threads %d-%d, %d registers%s, barrier %d%s\n", k,
                      role_names[op->list[3 * k] < ROLE_COUNT ? op->list[3 * k] : 0], 128 * base,
                      128 * (base + wgs) - 1, regs, regs == entry ? "" : regs > entry ? " (setmaxnreg.inc)"
                                                                                 : " (setmaxnreg.dec)",
                      cg->role_bar, lone ? "; its first warp alone runs it (every op needs only the leader, thread 0)" : "");
        LLVMBasicBlockRef lone_end =
            lone ? cg_lead_begin(cg, LLVMBuildICmp(cg->b, LLVMIntEQ, cg->warp, cg_i32(cg, 0), "")) : NULL;
        cg->role_lone = lone;
        ws->role_stored = false;
        e = cg_lower_block(cg, &op->regions[k]);
        cg->role_lone = false;
        if (!e && ws->role_stored) {   /* its TMA stores have read their scratch before the block ends */
            LLVMBasicBlockRef after = cg_lead_begin(cg, cg_role_lead(cg));
            cg->tg->bulk_wait(cg, 0, false);
            cg_lead_end(cg, after);
        }
        if (!e && lone)
            cg_lead_end(cg, lone_end);
        if (!e) {
            cg_tmem_release(cg, ws->nwarps * 32, base == 0);   /* warp 0 (role 0's) frees tensor memory */
            LLVMBuildBr(cg->b, done);
        }
        LLVMPositionBuilderAtEnd(cg->b, next);
        base += wgs;
    }
    cg->tid = tid;
    cg->lane = lane;
    cg->warp = warp;
    cg->nwarps = nwarps;
    cg->role_threads = cg->role_bar = 0;
    cg->role_leader = NULL;
    if (e)
        return 1;
    LLVMBuildBr(cg->b, done);
    LLVMPositionBuilderAtEnd(cg->b, done);
    return 0;
}
