/* mem_prefetch.c - the L2 prefetch of the next wave's row that a LOAD
 * (lower_mem.c) of a one-row-per-block kernel issues after its own loads.
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
