/* codegen.c - one kernel: Tile IR -> LLVM IR (the driver is compile.c).
 *
 * Needs: a verified Func and a Cg whose context and module are set
 * (compile.c). Makes the kernel with the ABI of codegen.h, its shared
 * memory, and its metadata text the runtime validates launches against.
 */
#include "cg_internal.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

const Target *cg_family(TargetFamily f)
{
    switch (f) {
    case TF_SM80:
        return &cg_family_sm80;
    case TF_SM90:
        return &cg_family_sm90;
    case TF_SM100:
        return &cg_family_sm100;
    }
    return NULL;
}

bool cg_target_supported(const TargetInfo *t) { return t && cg_family(t->family) != NULL; }

const char *cg_llvm_version(void)
{
#ifdef TILEC_LLVM_VERSION
    return TILEC_LLVM_VERSION;
#else
    static char buf[32];
    unsigned ma, mi, pa;
    LLVMGetVersion(&ma, &mi, &pa);
    snprintf(buf, sizeof buf, "%u.%u.%u", ma, mi, pa);
    return buf;
#endif
}

/* ---- helpers shared by the lowering files ---- */

LLVMTypeRef cg_type(Cg *cg, DType dt)
{
    switch (dt) {
    case DT_BOOL: return cg->t_i1;
    case DT_I8: case DT_U8: case DT_F8E4M3: case DT_F8E5M2: return cg->t_i8;
    case DT_I16: case DT_U16: return cg->t_i16;
    case DT_I32: case DT_U32: return cg->t_i32;
    case DT_I64: case DT_U64: return cg->t_i64;
    case DT_F16: return cg->t_f16;
    case DT_BF16: return cg->t_bf16;
    case DT_F32: return cg->t_f32;
    case DT_F64: return cg->t_f64;
    default: return cg->t_i32;
    }
}

LLVMTypeRef cg_mem_type(Cg *cg, DType dt) { return dt == DT_BOOL ? cg->t_i8 : cg_type(cg, dt); }

LLVMValueRef cg_call(Cg *cg, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n)
{
    LLVMTypeRef pt[8];
    for (int i = 0; i < n && i < 8; i++)
        pt[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, pt, (unsigned)n, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(cg->mod, name);
    if (!fn)
        fn = LLVMAddFunction(cg->mod, name, fty);
    return LLVMBuildCall2(cg->b, fty, fn, args, (unsigned)n, "");
}

LLVMValueRef cg_call1(Cg *cg, const char *name, LLVMTypeRef ret, LLVMValueRef x)
{
    return cg_call(cg, name, ret, &x, 1);
}

LLVMValueRef cg_approx(LLVMValueRef v)
{
    if (LLVMIsAInstruction(v))
        LLVMSetFastMathFlags(v, LLVMGetFastMathFlags(v) | LLVMFastMathApproxFunc);
    return v;
}

LLVMValueRef cg_nowrap(LLVMValueRef v)
{
    if (LLVMIsAInstruction(v)) {
        switch (LLVMGetInstructionOpcode(v)) {
        case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMShl:
            LLVMSetNUW(v, 1);
            LLVMSetNSW(v, 1);
            break;
        default:
            break;
        }
    }
    return v;
}

LLVMValueRef cg_i32(Cg *cg, int64_t v) { return LLVMConstInt(cg->t_i32, (unsigned long long)v, 1); }
LLVMValueRef cg_i64(Cg *cg, int64_t v) { return LLVMConstInt(cg->t_i64, (unsigned long long)v, 1); }

LLVMBasicBlockRef cg_new_block(Cg *cg, const char *name)
{
    return LLVMAppendBasicBlockInContext(cg->ctx, cg->fn, name);
}

/* The thread index through an opaque move: what is computed from it stays
 * where it is written instead of being hoisted out of a loop or merged with
 * the same computation before it, and kept live across the loop (thread
 * coordinates are cheap to recompute; registers are not free next to a
 * 64 x 64 warp tile's accumulators). */
LLVMValueRef cg_opaque_tid(Cg *cg)
{
    LLVMTypeRef fty = LLVMFunctionType(cg->t_i32, &cg->t_i32, 1, 0);
    static const char code[] = "mov.b32 $0, $1;", cons[] = "=r,r";
    LLVMValueRef as = LLVMGetInlineAsm(fty, (char *)code, sizeof code - 1, (char *)cons, sizeof cons - 1, 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(cg->b, fty, as, &cg->tid, 1, "");
}

void cg_thread_ids(Cg *cg, LLVMValueRef tid)
{
    cg->lane = LLVMBuildAnd(cg->b, tid, cg_i32(cg, 31), "lane");
    cg->warp = LLVMBuildLShr(cg->b, tid, cg_i32(cg, 5), "warp");
}

LLVMValueRef cg_smem(Cg *cg, int64_t bytes)
{
    if (cg->scratch_over_buffers && cg->dsmem && bytes <= cg->dsmem_base)
        return cg->dsmem;   /* the buffers' space: every buffer is dead here (mma_store.c) */
    if (!cg->smem) {
        LLVMTypeRef ty = LLVMArrayType2(cg->t_i8, 1);
        cg->smem = LLVMAddGlobalInAddressSpace(cg->mod, ty, "tilec.smem.tmp", 3);
    }
    if (bytes > cg->smem_bytes)
        cg->smem_bytes = bytes;
    return cg->smem;
}

Layout *cg_layout_dup(Cg *cg, Layout l)
{
    Layout *p = arena_alloc(cg->a, sizeof *p);
    *p = l;
    return p;
}

static const Layout *anchor_of(Cg *cg, int rank, const int64_t *shape)
{
    for (int i = 0; i < cg->nanchors; i++)
        if (cg->anchors[i].rank == rank && memcmp(cg->anchors[i].shape, shape, sizeof(int64_t) * (size_t)rank) == 0)
            return cg->anchors[i].L;
    return NULL;
}

static void add_anchor(Cg *cg, int rank, const int64_t *shape, const Layout *L)
{
    if (cg->nanchors == (int)TC_COUNTOF(cg->anchors) || anchor_of(cg, rank, shape))
        return;
    cg->anchors[cg->nanchors].rank = rank;
    memcpy(cg->anchors[cg->nanchors].shape, shape, sizeof(int64_t) * (size_t)rank);
    cg->anchors[cg->nanchors++].L = L;
}

typedef struct AnchorWalk { Cg *cg; bool replace; } AnchorWalk;

static void put_anchor(const AnchorWalk *w, int rank, const int64_t *shape, const Layout *L)
{
    if (w->replace)
        cg_set_anchor(w->cg, rank, shape, L);
    else
        add_anchor(w->cg, rank, shape, L);
}

static bool anchor_visit(Func *f, Op *op, void *ctx)
{
    const AnchorWalk *w = ctx;
    Cg *cg = w->cg;
    const Type *t = op->nres ? ir_type(f, op->res[0]) : NULL;
    if (!t || t->kind != TY_TILE)
        return true;
    if (op->code == OP_LOAD || op->code == OP_GATHER || cg_smem_load_to_regs(f, op)) {
        int bytes = dtype_bits((DType)t->dtype) / 8;
        bool contig = op->code == OP_SMEM_LOAD || (op->nlist > 0 && op->list[op->nlist - 1] > 0);
        put_anchor(w, t->rank, t->shape,
                   cg_layout_dup(cg, layout_blocked(t->rank, t->shape, bytes ? bytes : 1, contig, cg->nwarps)));
    } else if (op->code == OP_REDUCE) {
        const Type *it = ir_type(f, op->args[0]);
        const Layout *in = anchor_of(cg, it->rank, it->shape);
        if (in)
            put_anchor(w, t->rank, t->shape, cg_layout_dup(cg, layout_slice(in, (int)op->iattr[0])));
    }
    return true;
}

void cg_find_anchors(Cg *cg, Func *f)
{
    cg->nanchors = 0;
    AnchorWalk w = { cg, false };
    ir_walk(f, &f->body, anchor_visit, &w);
}

void cg_block_anchors(Cg *cg, Block *b)
{
    AnchorWalk w = { cg, true };
    ir_walk(cg->f, b, anchor_visit, &w);
}

const Layout *cg_default_layout(Cg *cg, const Type *t, bool contiguous)
{
    const Layout *a = contiguous ? anchor_of(cg, t->rank, t->shape) : NULL;
    if (a)
        return a;
    int bytes = dtype_bits((DType)t->dtype) / 8;
    return cg_layout_dup(cg, layout_blocked(t->rank, t->shape, bytes ? bytes : 1, contiguous, cg->nwarps));
}

/* ---- kernel signature (ORDER ABI: see codegen.h) ---- */

static LLVMTypeRef kernel_type(Cg *cg, Func *f)
{
    LLVMTypeRef pt[128];
    int n = 0;
    for (int i = 0; i < f->nparams && n < 100; i++) {
        const Type *t = ir_type(f, f->params[i]);
        if (t->kind == TY_TENSOR) {
            pt[n++] = cg->t_ptr;
            for (int d = 0; d + 1 < t->rank; d++)
                pt[n++] = cg->t_i64;
        } else {
            pt[n++] = cg_mem_type(cg, (DType)t->dtype);
        }
    }
    for (int i = 0; i < f->ndims && n < 127; i++)
        pt[n++] = cg->t_i32;
    for (int i = 0; i < cg_ws_nparams(cg) && n < 128; i++)
        pt[n++] = cg_ws_param_type(cg);
    return LLVMFunctionType(cg->t_void, pt, (unsigned)n, 0);
}

static LLVMValueRef tensor_extent(Cg *cg, Func *f, const Type *t, int d)
{
    if (t->dimsym[d] >= 0)
        return cg->vals[f->dims[t->dimsym[d]]].s;
    return cg_i32(cg, t->shape[d]);
}

static void bind_params(Cg *cg, Func *f)
{
    unsigned k = 0;
    LLVMValueRef fn = cg->fn;
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
    unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
    for (int i = 0; i < f->nparams; i++) {
        ValId v = f->params[i];
        const Type *t = ir_type(f, v);
        if (t->kind != TY_TENSOR) {
            LLVMValueRef p = LLVMGetParam(fn, k++);
            if (t->dtype == DT_BOOL)
                p = LLVMBuildTrunc(cg->b, p, cg->t_i1, "");
            cg->vals[v] = (TileVal){ .kind = TV_SCALAR, .s = p };
            continue;
        }
        LLVMAddAttributeAtIndex(fn, k + 1, LLVMCreateEnumAttribute(cg->ctx, noalias, 0));
        LLVMAddAttributeAtIndex(fn, k + 1, LLVMCreateEnumAttribute(cg->ctx, align, 16));
        cg->tens[v].base = LLVMGetParam(fn, k++);
        for (int d = 0; d + 1 < t->rank; d++)
            cg->tens[v].stride[d] = LLVMGetParam(fn, k++);
        cg->tens[v].stride[t->rank - 1] = cg_i64(cg, 1);
    }
    for (int i = 0; i < f->ndims; i++)
        cg->vals[f->dims[i]] = (TileVal){ .kind = TV_SCALAR, .s = LLVMGetParam(fn, k++) };
    cg_ws_bind(cg, k);
    for (int i = 0; i < f->nparams; i++) {
        const Type *t = ir_type(f, f->params[i]);
        for (int d = 0; t->kind == TY_TENSOR && d < t->rank; d++)
            cg->tens[f->params[i]].size[d] = tensor_extent(cg, f, t, d);
    }
}

static void kernel_entry(Cg *cg)
{
    LLVMBasicBlockRef entry = cg_new_block(cg, "entry");
    LLVMPositionBuilderAtEnd(cg->b, entry);
    cg->tid = cg_call(cg, "llvm.nvvm.read.ptx.sreg.tid.x", cg->t_i32, NULL, 0);
    cg_thread_ids(cg, cg->tid);
}

/* Kernels with shared buffers or tensor-core products use dynamic shared
 * memory: one extern array per module, the buffers at their offsets and the
 * scratch above them. */
static void setup_dynamic_smem(Cg *cg, Func *f, bool mma)
{
    int64_t end = cg_smem_buffers_end(cg, f);
    cg->dsmem = NULL;
    cg->dsmem_base = 0;
    if (end <= 0 && !mma)
        return;
    cg->dsmem = LLVMGetNamedGlobal(cg->mod, "tilec_dsmem");
    if (!cg->dsmem) {
        cg->dsmem = LLVMAddGlobalInAddressSpace(cg->mod, LLVMArrayType2(cg->t_i8, 0), "tilec_dsmem", 3);
        LLVMSetLinkage(cg->dsmem, LLVMExternalLinkage);
        LLVMSetAlignment(cg->dsmem, 1024);
    }
    cg->dsmem_base = (end + 127) / 128 * 128;
}

/* Dynamic shared bytes of the kernel (0: static scratch only). */
static int64_t dynamic_smem_bytes(const Cg *cg)
{
    return cg->dsmem ? cg->dsmem_base + cg->smem_bytes : 0;
}

/* Resize the shared scratch now that every user has asked for its bytes. */
static void finish_smem(Cg *cg)
{
    if (!cg->smem)
        return;
    if (cg->dsmem) {
        LLVMValueRef o = cg_i64(cg, cg->dsmem_base);
        LLVMValueRef p = LLVMConstInBoundsGEP2(cg->t_i8, cg->dsmem, &o, 1);
        LLVMReplaceAllUsesWith(cg->smem, p);
        LLVMDeleteGlobal(cg->smem);
        cg->smem = NULL;
        return;
    }
    char name[256];
    snprintf(name, sizeof name, "%s.smem", cg->f->name);
    LLVMTypeRef ty = LLVMArrayType2(cg->t_i8, (uint64_t)cg->smem_bytes);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(cg->mod, ty, name, 3);
    LLVMSetInitializer(g, LLVMGetUndef(ty));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, 16);
    LLVMReplaceAllUsesWith(cg->smem, g);
    LLVMDeleteGlobal(cg->smem);
    cg->smem = NULL;
}

/* ---- metadata ---- */

static int grid_rpn(Cg *cg, Func *f, ValId v, StrBuf *out, int depth)
{
    static const struct { OpCode op; const char *tok; } bin[] = {
        { OP_ADD, "+" }, { OP_SUB, "-" }, { OP_MUL, "*" }, { OP_DIV, "/" },
        { OP_REM, "%" }, { OP_MIN, "min" }, { OP_MAX, "max" }, { OP_DIVISOR, "divisor" },
    };
    for (int i = 0; i < f->ndims; i++)
        if (f->dims[i] == v) {
            sb_printf(out, " %s", f->dim_names[i]);
            return 0;
        }
    Op *op = ir_val(f, v)->def;
    if (!op || depth > 64) {
        diag_error(cg->d, f->loc, "kernel '%s': the grid may use only named dims and constants", f->name);
        return 1;
    }
    if (op->code == OP_CONST) {
        sb_printf(out, " %lld", (long long)op->iattr[0]);
        return 0;
    }
    if (op->code == OP_NUMSMS) {
        sb_puts(out, " num_sms()");
        return 0;
    }
    if (op->code == OP_CAST && dtype_is_int((DType)ir_type(f, op->args[0])->dtype))
        return grid_rpn(cg, f, op->args[0], out, depth + 1);
    for (size_t i = 0; i < TC_COUNTOF(bin); i++)
        if (op->code == bin[i].op) {
            int e = grid_rpn(cg, f, op->args[0], out, depth + 1);
            e += grid_rpn(cg, f, op->args[1], out, depth + 1);
            sb_printf(out, " %s", bin[i].tok);
            return e;
        }
    diag_error(cg->d, op->loc, "the grid expression uses '%s', which the launch rule cannot express; "
               "use + - * / %% min max cdiv divisor num_sms() of named dims and constants", op_info[op->code].name);
    return 1;
}

static int emit_grid(Cg *cg, Func *f, StrBuf *out)
{
    Op *y = ir_block_yield(&f->grid);
    sb_puts(out, "grid");
    if (!y) {
        sb_puts(out, " 1 ; 1 ; 1\n");
        return 0;
    }
    int e = 0;
    for (int i = 0; i < 3; i++) {
        if (i)
            sb_puts(out, " ;");
        if (i < y->nargs)
            e += grid_rpn(cg, f, y->args[i], out, 0);
        else
            sb_puts(out, " 1");
    }
    sb_putc(out, '\n');
    return e;
}

static int emit_meta(Cg *cg, Func *f, StrBuf *out)
{
    sb_printf(out, "tilec-meta 1\nkernel %s\narch %s\nthreads %d\nsmem %lld\ncluster 1 1 1\n",
              f->name, cg->ti->name, cg->nwarps * 32, (long long)dynamic_smem_bytes(cg));
    for (int i = 0; i < f->ndims; i++)
        sb_printf(out, "dim %s\n", f->dim_names[i]);
    for (int i = 0; i < f->nparams; i++) {
        const Value *v = ir_val(f, f->params[i]);
        const Type *t = &v->type;
        const char *name = v->name ? v->name : "?";
        if (t->kind != TY_TENSOR) {
            sb_printf(out, "param %s scalar %s\n", name, dtype_name((DType)t->dtype));
            continue;
        }
        sb_printf(out, "param %s tensor %s %d", name, dtype_name((DType)t->dtype), t->rank);
        for (int d = 0; d < t->rank; d++) {
            if (t->dimsym[d] >= 0)
                sb_printf(out, " %s", f->dim_names[t->dimsym[d]]);
            else
                sb_printf(out, " %lld", (long long)t->shape[d]);
        }
        sb_puts(out, " align 16\n");
    }
    sb_puts(out, "writes");      /* the tensors it stores to: the runtime rejects overlaps with them */
    for (int i = 0; i < f->nparams; i++) {
        const Value *v = ir_val(f, f->params[i]);
        if (v->type.kind == TY_TENSOR && !cg_tensor_readonly(cg, f->params[i]))
            sb_printf(out, " %s", v->name ? v->name : "?");
    }
    sb_putc(out, '\n');
    cg_ws_meta(cg, out);
    if (f->fallback)
        sb_printf(out, "fallback %s\n", f->fallback);
    int e = emit_grid(cg, f, out);
    sb_puts(out, "end\n");
    return e;
}

/* ---- one kernel ---- */

void cg_init_types(Cg *cg)
{
    LLVMContextRef c = cg->ctx;
    cg->t_void = LLVMVoidTypeInContext(c);
    cg->t_i1 = LLVMInt1TypeInContext(c);
    cg->t_i8 = LLVMInt8TypeInContext(c);
    cg->t_i16 = LLVMInt16TypeInContext(c);
    cg->t_i32 = LLVMInt32TypeInContext(c);
    cg->t_i64 = LLVMInt64TypeInContext(c);
    cg->t_f16 = LLVMHalfTypeInContext(c);
    cg->t_bf16 = LLVMBFloatTypeInContext(c);
    cg->t_f32 = LLVMFloatTypeInContext(c);
    cg->t_f64 = LLVMDoubleTypeInContext(c);
    cg->t_ptr = LLVMPointerTypeInContext(c, 1);
    cg->t_sptr = LLVMPointerTypeInContext(c, 3);
}

int cg_gen_kernel(Cg *cg, Func *f, StrBuf *meta)
{
    cg->f = f;
    cg->vals = arena_alloc(cg->a, sizeof(TileVal) * f->nvals);
    /* tensors are params, whose ids come first: one TensorArg per value up
     * to the last param (136 bytes each), not per value of the kernel */
    ValId last_param = 0;
    for (int i = 0; i < f->nparams; i++)
        last_param = f->params[i] > last_param ? f->params[i] : last_param;
    cg->tens = arena_alloc(cg->a, sizeof(TensorArg) * ((size_t)last_param + 1));
    /* The schedule pass decides; a kernel whose IR carries no schedule (a
     * pipeline run without that pass) gets the pass's decision here. */
    if (f->sched.kind == SCHED_NONE) {
        StrBuf why = { 0 };
        pass_schedule_kernel(f, cg->ti, &f->sched, &why);
        sb_free(&why);
    }
    const Schedule *sc = &f->sched;
    bool mma = sc->kind != SCHED_SIMT;
    cg->mma_rows_only = sc->kind == SCHED_CHAIN;
    cg->nwarps = sc->warps;
    if (cg_ws_plan(cg, f))
        return 1;
    if (cg->ws) {   /* the roles' warps; .minnctapersm (the roles' blocks an SM) so that ptxas knows the registers at entry */
        cg->nwarps = cg_ws_nwarps(cg);
        cg->mma_rows_only = false;
    }
    cg->narrow_uses = NULL;
    cg->smem = NULL;
    cg->smem_bytes = 0;
    cg->epoch = cg->depth = 0;
    cg->fn = LLVMAddFunction(cg->mod, f->name, kernel_type(cg, f));
    LLVMSetFunctionCallConv(cg->fn, 71 /* ptx_kernel */);
    cg_debug_kernel(cg, f);
    char nt[16];
    snprintf(nt, sizeof nt, "%d", cg->nwarps * 32);
    LLVMAddAttributeAtIndex(cg->fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(cg->ctx, "nvvm.maxntid", 12, nt, (unsigned)strlen(nt)));
    cg->minct = cg->ws ? cg_ws_blocks(cg) : sc->min_blocks;
    if (cg->minct > 0) {
        char mc[16];
        snprintf(mc, sizeof mc, "%d", cg->minct);
        LLVMAddAttributeAtIndex(cg->fn, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(cg->ctx, "nvvm.minctasm", 13, mc, (unsigned)strlen(mc)));
    }
    if (!mma)
        LLVMAddAttributeAtIndex(cg->fn, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(cg->ctx, "tilec.simt", 10, "", 0));
    if (sc->wide || sc->epilogue_order)   /* compile.c: schedule_simt */
        LLVMAddAttributeAtIndex(cg->fn, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(cg->ctx, "tilec.sched", 11, sc->wide ? "" : "epilogue",
                                                          sc->wide ? 0 : 8));
    cg_find_anchors(cg, f);
    if (cg->ws)
        cg_ws_anchors(cg, f);
    if (cg->mma_rows_only)
        cg_chain_anchors(cg, f);
    cg->nturns = 0;
    cg->nsplit = 0;
    cg->groups_apart = false;   /* set by this kernel's decoupled-loop drain, if any */
    kernel_entry(cg);
    setup_dynamic_smem(cg, f, mma);
    bind_params(cg, f);
    if (cg->report)
        sb_printf(cg->report, "kernel %s (%s): %d threads (%d warps)\n", f->name, cg->ti->name,
                  cg->nwarps * 32, cg->nwarps);
    if (cg->mma_rows_only)
        cg_chain_turns(cg, f);
    int e = cg_lower_block(cg, &f->body);
    if (!e)
        LLVMBuildRetVoid(cg->b);
    finish_smem(cg);
    if (cg->report && cg->dsmem)
        sb_printf(cg->report, "  dynamic shared memory: %lld bytes (buffers %lld, scratch %lld)\n",
                  (long long)dynamic_smem_bytes(cg), (long long)cg->dsmem_base, (long long)cg->smem_bytes);
    else if (cg->report)
        sb_printf(cg->report, "  static shared memory: %lld bytes\n", (long long)cg->smem_bytes);
    if (!e && cg->dsmem && dynamic_smem_bytes(cg) > pass_smem_limit(cg->ti, cg->smem_per_block)) {
        diag_error(cg->d, f->loc, "kernel '%s' needs %lld bytes of shared memory (buffers %lld, scratch %lld); "
                   "%s allows %d; use smaller tiles or fewer pipeline stages", f->name,
                   (long long)dynamic_smem_bytes(cg), (long long)cg->dsmem_base, (long long)cg->smem_bytes,
                   cg->ti->name, (int)pass_smem_limit(cg->ti, cg->smem_per_block));
        e++;
    } else if (!e && !cg->dsmem && cg->smem_bytes > cg->ti->lim.smem_static) {
        diag_error(cg->d, f->loc, "kernel '%s' needs %lld bytes of shared memory for reductions and "
                   "layout conversions; %s allows %d", f->name, (long long)cg->smem_bytes,
                   cg->ti->name, cg->ti->lim.smem_static);
        e++;
    }
    cg_debug_kernel_end(cg);
    return e + emit_meta(cg, f, meta);
}
