/* mem_prefetch.c - L2 prefetches a LOAD (lower_mem.c) issues after its
 * own loads: the next wave's row in a one-row-per-block kernel, and the
 * next trip's rows in a loop whose row moves by a constant a trip.
 */
#include "cg_internal.h"

/* prefetch.global.L2 [p] (a hint: no value, no fault on the addresses
 * these callers form, which lie inside their tensors). */
static void prefetch_l2(Cg *cg, LLVMValueRef p)
{
    LLVMTypeRef pt = LLVMTypeOf(p);
    LLVMTypeRef fty = LLVMFunctionType(cg->t_void, &pt, 1, 0);
    LLVMValueRef as = LLVMGetInlineAsm(fty, (char *)"prefetch.global.L2 [$0];", 24, (char *)"l", 1, 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMBuildCall2(cg->b, fty, as, &p, 1, "");
}

/* ---- L2 prefetch of the next wave's row ----
 * A kernel of one row per block (X[block.x, 0 : +BLOCK], a read-only
 * tensor, a 1-d grid, a register cap of one or two blocks per SM) loads its row and
 * then waits on reductions: with two blocks of 8 warps per SM little else
 * is in flight. Each block first asks L2 for the row that the block taking
 * its place will load: block.x + %nsmid x blocks per SM (the blocks of the
 * grid start in order as slots free up), one `prefetch.global.L2` per
 * 128-byte line, spread over the threads, only inside the tensor (rows <
 * M, columns < N). Measured on an H200 (bench/RESULTS.md 2026-12-01):
 * bf16 layernorm [8192 x 16384] 90.5% of copy bandwidth without it,
 * 91.4% with the prefetch before the row's own loads and 95.4% after them
 * (01:52, one run, the compiler's three forms side by side; 00:31 and
 * 00:27 agree: 89.6-90.1 / 91.7-92.1 / 94.5 by hand), so it goes after
 * the row's loads; two waves ahead 69%, so the kernel reads the SM count
 * (%nsmid) rather than assume one. Kernels with more blocks per SM lost:
 * softmax [16384] (3 blocks of 16 warps) 94.1% -> 75.8%, layernorm [4096]
 * (8 of 4) 93.4% -> 88.9%; they keep their loads alone. */
/* Is the kernel's grid one-dimensional (its y and z extents the constant
 * 1)? Then the blocks start in block.x order. */
static bool grid_1d(const Func *f)
{
    const Op *y = ir_block_yield(&f->grid);
    if (!y || y->nargs != 3)
        return false;
    for (int i = 1; i < 3; i++) {
        const Op *c = ir_val(f, y->args[i])->def;
        if (!c || c->code != OP_CONST || c->iattr[0] != 1)
            return false;
    }
    return true;
}

bool prefetch_wanted(Cg *cg, const Access *ac, const Type *rt)
{
    if (!cg_simt_kernel(cg) || cg->minct <= 0 || cg->minct > 2 || cg->depth > 0 || !ac->readonly ||
        ac->op->code != OP_LOAD)
        return false;
    if (ac->rank != 2 || ac->ntile != 1 || ac->tdim[0] != 1 || rt->kind != TY_TILE || rt->rank != 1)
        return false;
    const Op *d = ir_val(cg->f, ac->op->args[1])->def;
    if (!d || d->code != OP_BLOCKID || d->iattr[0] != 0)
        return false;
    return grid_1d(cg->f);
}

/* Blocks per SM the distance counts: the register cap's, at most the
 * target's resident-block limit (fewer than resident is the safe side: a
 * row prefetched twice; more is not). */
static int prefetch_blocks(const Cg *cg)
{
    int n = cg->minct;
    if (n > cg->ti->lim.blocks_per_sm)
        n = cg->ti->lim.blocks_per_sm;
    return n;
}

void prefetch_next_wave(Cg *cg, const Access *ac, int64_t elems)
{
    LLVMBuilderRef b = cg->b;
    int esize = dtype_bits(ac->dt) / 8;
    if (esize < 1)
        esize = 1;
    LLVMValueRef nsm = cg_call(cg, "llvm.nvvm.read.ptx.sreg.nsmid", cg->t_i32, NULL, 0);
    LLVMValueRef row = LLVMBuildAdd(b, ac->off[0], LLVMBuildMul(b, nsm, cg_i32(cg, prefetch_blocks(cg)), ""), "");
    LLVMValueRef room = LLVMBuildSub(b, ac->ta->size[1], ac->off[1], "");
    LLVMValueRef lim = cg_i32(cg, elems);
    LLVMValueRef n = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, room, lim, ""), room, lim, "");
    LLVMValueRef ok = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntULT, row, ac->ta->size[0], ""),
                                   LLVMBuildICmp(b, LLVMIntSGT, n, cg_i32(cg, 0), ""), "");
    LLVMBasicBlockRef doit = cg_new_block(cg, "l2pf"), cont = cg_new_block(cg, "l2pf.end");
    LLVMBuildCondBr(b, ok, doit, cont);
    LLVMPositionBuilderAtEnd(b, doit);
    LLVMValueRef idx[2] = { row, ac->off[1] };
    LLVMValueRef base = cg_tensor_elem_ptr(cg, ac->ta, ac->mty, 2, idx);
    LLVMValueRef bytes = LLVMBuildMul(b, n, cg_i32(cg, esize), "");
    LLVMValueRef last = LLVMBuildSub(b, bytes, cg_i32(cg, 1), "");
    LLVMValueRef span = LLVMBuildAdd(b, bytes, cg_i32(cg, 128), "");
    int nthreads = cg->nwarps * 32;
    int64_t lines = (elems * esize + 127) / 128 + 1, per_thread = (lines + nthreads - 1) / nthreads;
    for (int64_t k = 0; k < per_thread; k++) {
        LLVMValueRef line = LLVMBuildAdd(b, cg->tid, cg_i32(cg, k * nthreads), "");
        LLVMValueRef off = LLVMBuildMul(b, line, cg_i32(cg, 128), "");
        LLVMValueRef in = LLVMBuildICmp(b, LLVMIntSLT, off, span, "");
        LLVMValueRef at = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, off, last, ""), off, last, "");
        LLVMBasicBlockRef one = cg_new_block(cg, "l2pf.one"), next = cg_new_block(cg, "l2pf.next");
        LLVMBuildCondBr(b, in, one, next);
        LLVMPositionBuilderAtEnd(b, one);
        LLVMValueRef o64 = LLVMBuildZExt(b, at, cg->t_i64, "");
        prefetch_l2(cg, LLVMBuildGEP2(b, cg->t_i8, base, &o64, 1, ""));
        LLVMBuildBr(b, next);
        LLVMPositionBuilderAtEnd(b, next);
    }
    LLVMBuildBr(b, cont);
    LLVMPositionBuilderAtEnd(b, cont);
    if (cg->report) {
        char per[32] = "one line";
        if (per_thread > 1)
            snprintf(per, sizeof per, "%lld lines", (long long)per_thread);
        sb_printf(cg->report, "  load %s at %d:%d: the row block.x + %%nsmid x %d (the next wave's) "
                  "prefetched to L2 after the row's loads, %s per thread\n",
                  ir_val(cg->f, ac->op->args[0])->name ? ir_val(cg->f, ac->op->args[0])->name : "?",
                  ac->op->loc.line, ac->op->loc.col, prefetch_blocks(cg), per);
    }
}

/* ---- L2 prefetch of the next trip's rows ----
 * A SIMT kernel's loop that loads a window of rows of a read-only
 * [M, N] tensor each trip, at a row that moves by a constant d per trip
 * (layernorm_bwd: X[r0 + i R : +R, 0 : +BLOCK]), spends each trip's
 * reductions and stores with nothing of its own in flight. Right after
 * the trip's loads each thread asks L2 for lines of the rows the next
 * trip will load (rows r + d .. r + d + R - 1, those not in this trip's
 * window), one `prefetch.global.L2` per 128-byte line spread over the
 * threads, only inside the tensor: DRAM works through the trip, and the
 * next trip's loads meet L2. Measured on an H200 (bench/RESULTS.md
 * 2026-12-04 17:06): bf16 layernorm_bwd [32768 x 4096] 54.9% -> 68.1% of
 * copy bandwidth (G 32), 57.4% -> 72.7% (G 64). */

/* How much v grows per unit of the loop's trip variable (body arg 0):
 * true with *d set when v is the trip variable times a constant plus
 * values the loop does not change; false when that is not known. */
static bool trip_delta(const Func *f, const Block *body, ValId v, int64_t *d, int depth)
{
    if (v == body->args[0]) {
        *d = 1;
        return true;
    }
    for (int i = 1; i < body->nargs; i++)
        if (v == body->args[i])
            return false;   /* carried: changes by trips in unknown ways */
    const Op *def = ir_val((Func *)f, v)->def;
    if (!def || def->parent != body) {   /* defined before the loop (a value inside a nested region is not visible here) */
        *d = 0;
        return true;
    }
    if (depth > 8)
        return false;
    int64_t a = 0, b = 0;
    if (def->nargs == 2 && (def->code == OP_ADD || def->code == OP_SUB || def->code == OP_MUL)) {
        if (!trip_delta(f, body, def->args[0], &a, depth + 1) || !trip_delta(f, body, def->args[1], &b, depth + 1))
            return false;
        if (def->code != OP_MUL) {
            *d = def->code == OP_ADD ? a + b : a - b;
            return true;
        }
        if (a == 0 && b == 0) {
            *d = 0;
            return true;
        }
        const Op *c = ir_val((Func *)f, def->args[a == 0 ? 0 : 1])->def;   /* the factor that does not move */
        if ((a != 0 && b != 0) || !c || c->code != OP_CONST)
            return false;
        *d = (a != 0 ? a : b) * c->iattr[0];
        return true;
    }
    if (!(op_info[def->code].flags & OPF_PURE) || def->nregions)
        return false;
    for (int i = 0; i < def->nargs; i++)   /* any other pure op of values the loop does not change */
        if (!trip_delta(f, body, def->args[i], &a, depth + 1) || a != 0)
            return false;
    *d = 0;
    return true;
}

bool prefetch_next_trip(Cg *cg, const Access *ac, const Type *rt)
{
    const Op *L = cg->cur_for, *op = ac->op;
    if (!L || !cg_simt_kernel(cg) || !ac->readonly || op->code != OP_LOAD || ac->rank != 2 ||
        op->parent != &L->regions[0] || rt->kind != TY_TILE)
        return false;
    int64_t rows, cols;
    if (rt->rank == 2 && ac->ntile == 2 && ac->tdim[0] == 0 && ac->tdim[1] == 1) {
        rows = rt->shape[0];
        cols = rt->shape[1];
    } else if (rt->rank == 1 && ac->ntile == 1 && ac->tdim[0] == 1) {
        rows = 1;
        cols = rt->shape[0];
    } else {
        return false;
    }
    const Op *step = ir_val(cg->f, L->args[2])->def;
    int64_t d;
    if (!step || step->code != OP_CONST || step->iattr[0] <= 0 ||
        !trip_delta(cg->f, &L->regions[0], op->args[1], &d, 0) || d <= 0)
        return false;
    d *= step->iattr[0];
    int64_t fresh = d < rows ? d : rows;   /* the next window's rows this one does not hold */
    LLVMBuilderRef b = cg->b;
    int esize = dtype_bits(ac->dt) / 8;
    if (esize < 1)
        esize = 1;
    LLVMValueRef first = LLVMBuildAdd(b, ac->off[0], cg_i32(cg, d + rows - fresh), "");
    LLVMValueRef room = LLVMBuildSub(b, ac->ta->size[1], ac->off[1], "");
    LLVMValueRef lim = cg_i32(cg, cols);
    LLVMValueRef n = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, room, lim, ""), room, lim, "");
    LLVMValueRef bytes = LLVMBuildMul(b, n, cg_i32(cg, esize), "");
    LLVMValueRef last = LLVMBuildSub(b, bytes, cg_i32(cg, 1), "");
    LLVMValueRef span = LLVMBuildAdd(b, bytes, cg_i32(cg, 128), "");
    int nthreads = cg->nwarps * 32;
    int64_t lines = (cols * esize + 127) / 128 + 1, total = fresh * lines, per_thread = (total + nthreads - 1) / nthreads;
    for (int64_t k = 0; k < per_thread; k++) {
        LLVMValueRef li = LLVMBuildAdd(b, cg->tid, cg_i32(cg, k * nthreads), "");
        LLVMValueRef row = LLVMBuildAdd(b, first, LLVMBuildUDiv(b, li, cg_i32(cg, lines), ""), "");
        LLVMValueRef off = LLVMBuildMul(b, LLVMBuildURem(b, li, cg_i32(cg, lines), ""), cg_i32(cg, 128), "");
        LLVMValueRef ok = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntULT, li, cg_i32(cg, total), ""),
                                       LLVMBuildICmp(b, LLVMIntULT, row, ac->ta->size[0], ""), "");
        ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSLT, off, span, ""), "");
        ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSGT, n, cg_i32(cg, 0), ""), "");
        LLVMBasicBlockRef one = cg_new_block(cg, "l2trip"), next = cg_new_block(cg, "l2trip.end");
        LLVMBuildCondBr(b, ok, one, next);
        LLVMPositionBuilderAtEnd(b, one);
        LLVMValueRef idx[2] = { row, ac->off[1] };
        LLVMValueRef at = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, off, last, ""), off, last, "");
        LLVMValueRef o64 = LLVMBuildZExt(b, at, cg->t_i64, "");
        prefetch_l2(cg, LLVMBuildGEP2(b, cg->t_i8, cg_tensor_elem_ptr(cg, ac->ta, ac->mty, 2, idx), &o64, 1, ""));
        LLVMBuildBr(b, next);
        LLVMPositionBuilderAtEnd(b, next);
    }
    if (cg->report)
        sb_printf(cg->report, "  load %s at %d:%d: the next trip's %lld row%s (the row moves by %lld a trip) "
                  "prefetched to L2 after the trip's loads, %lld line%s a thread\n",
                  ir_val(cg->f, op->args[0])->name ? ir_val(cg->f, op->args[0])->name : "?", op->loc.line,
                  op->loc.col, (long long)fresh, fresh == 1 ? "" : "s", (long long)d, (long long)per_thread,
                  per_thread == 1 ? "" : "s");
    return true;
}
