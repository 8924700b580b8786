/* simt_sched.c - after optimisation, the use-driven instruction order of
 * a SIMT kernel's basic blocks.
 */
#include "cg_internal.h"

#include <stdint.h>
#include <string.h>

/* ---- schedule: compute each value where it is first needed ----
 * The lowering emits a tile op at a time (all registers of `x - m`, then
 * all of `exp`, ...), so every intermediate tile is live at once: 32 f32
 * registers per op for a [4096] row on 4 warps. After optimisation this
 * reorders each basic block of a SIMT kernel: instructions with effects
 * (loads, stores, calls, barriers, shuffles) keep their order; pure
 * arithmetic moves to just before its first user, depth first, so a chain
 * is consumed element by element (a reduction folds each value as it is
 * made). Loads stay where they are, all issued before the first use.
 * For the kernels codegen.c marks "tilec.sched" (schedule_simt): every
 * block of a wide SIMT kernel; in a tensor-core kernel ("epilogue") only
 * the blocks without tensor-core or fragment-load instructions, so the
 * main loops keep the order lower_mma.c and lower_chain.c chose, and an
 * epilogue such as `gelu(acc + bias)` is computed element by element
 * instead of keeping every intermediate tile of the accumulator's size
 * live (division and other subroutines split ptxas's scheduling regions,
 * so it cannot interleave them itself). */

typedef struct Sched {
    LLVMValueRef *key;        /* open addressing on instruction pointers */
    uint8_t *state;           /* 1 pending (this block), 2 placed */
    size_t cap;
    LLVMBuilderRef b;
} Sched;

static size_t sched_slot(const Sched *s, LLVMValueRef v)
{
    size_t h = ((size_t)(uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ull & (s->cap - 1);
    while (s->key[h] && s->key[h] != v)
        h = (h + 1) & (s->cap - 1);
    return h;
}

static bool sched_pure_call(LLVMValueRef I)
{
    static const char *const ok[] = { "llvm.nvvm.ex2", "llvm.nvvm.lg2", "llvm.nvvm.div.full", "llvm.nvvm.rsqrt", "llvm.nvvm.sqrt",
                                      "llvm.nvvm.fmax", "llvm.nvvm.fmin", "llvm.nvvm.tanh", "llvm.tanh", "llvm.sin", "llvm.cos",
                                      "llvm.floor", "llvm.ceil", "llvm.roundeven", "llvm.copysign", "llvm.maxnum",
                                      "llvm.minnum", "llvm.fabs", "llvm.sqrt", "llvm.exp2", "llvm.fma",
                                      "llvm.smax", "llvm.smin", "llvm.umax", "llvm.umin", "llvm.abs" };
    LLVMValueRef callee = LLVMGetCalledValue(I);
    if (callee && LLVMIsAInlineAsm(callee)) {
        const char *s = NULL;
        size_t n = 0;
        s = LLVMGetInlineAsmAsmString(callee, &n);
        return !LLVMGetInlineAsmHasSideEffects(callee) && n >= 4 && strncmp(s, "prmt", 4) == 0;
    }
    if (!callee || !LLVMIsAFunction(callee))
        return false;
    size_t n = 0;
    const char *name = LLVMGetValueName2(callee, &n);
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strncmp(name, ok[i], strlen(ok[i])) == 0)
            return true;
    return false;
}

static bool sched_movable(LLVMValueRef I)
{
    LLVMOpcode op = LLVMGetInstructionOpcode(I);
    if (op == LLVMCall)
        return sched_pure_call(I);
    return (op >= LLVMAdd && op <= LLVMXor) || op == LLVMFNeg || (op >= LLVMTrunc && op <= LLVMAddrSpaceCast) ||
           op == LLVMICmp || op == LLVMFCmp || op == LLVMSelect || op == LLVMExtractElement ||
           op == LLVMInsertElement || op == LLVMShuffleVector || op == LLVMGetElementPtr;
}

/* Pure, and every user is a non-phi instruction of the same block. */
static bool sched_sinkable(LLVMValueRef I, LLVMBasicBlockRef bb)
{
    if (!sched_movable(I))
        return false;
    LLVMUseRef u = LLVMGetFirstUse(I);
    if (!u)
        return false;
    for (; u; u = LLVMGetNextUse(u)) {
        LLVMValueRef user = LLVMGetUser(u);
        if (!LLVMIsAInstruction(user) || LLVMIsAPHINode(user) || LLVMGetInstructionParent(user) != bb)
            return false;
    }
    return true;
}

static void sched_place(Sched *s, LLVMValueRef I)
{
    size_t h = sched_slot(s, I);
    if (s->key[h] != I || s->state[h] != 1)
        return;
    s->state[h] = 2;
    for (int k = 0, n = LLVMGetNumOperands(I); k < n; k++) {
        LLVMValueRef o = LLVMGetOperand(I, (unsigned)k);
        if (o && LLVMIsAInstruction(o))
            sched_place(s, o);
    }
    LLVMInstructionRemoveFromParent(I);
    LLVMInsertIntoBuilder(s->b, I);
}

/* An mma, wgmma, tcgen05 or ldmatrix instruction (intrinsic or asm). */
static bool sched_tensor_core(LLVMValueRef I)
{
    if (LLVMGetInstructionOpcode(I) != LLVMCall)
        return false;
    LLVMValueRef callee = LLVMGetCalledValue(I);
    const char *s = NULL;
    size_t n = 0;
    if (callee && LLVMIsAInlineAsm(callee))
        s = LLVMGetInlineAsmAsmString(callee, &n);
    else if (callee && LLVMIsAFunction(callee))
        s = LLVMGetValueName2(callee, &n);
    static const char *const pat[] = { "mma", "ldmatrix", "tcgen05" };
    for (size_t i = 0; s && i < n; i++)
        for (size_t p = 0; p < sizeof pat / sizeof pat[0]; p++)
            if (n - i >= strlen(pat[p]) && memcmp(s + i, pat[p], strlen(pat[p])) == 0)
                return true;
    return false;
}

/* Scratch outside the job's heap (tc_try_zalloc): this runs on the second
 * module's emission thread too (compile.c), where no job can unwind; a
 * block whose arrays cannot be had keeps its order. */
static void sched_block(LLVMBasicBlockRef bb, LLVMBuilderRef b, bool epilogue)
{
    size_t n = 0;
    for (LLVMValueRef I = LLVMGetFirstInstruction(bb); I; I = LLVMGetNextInstruction(I)) {
        if (epilogue && sched_tensor_core(I))
            return;
        n++;
    }
    if (n < 8)
        return;
    Sched s = { .cap = 16, .b = b };
    while (s.cap < 2 * n)
        s.cap *= 2;
    s.key = tc_try_zalloc(s.cap, sizeof(LLVMValueRef));
    s.state = tc_try_zalloc(s.cap, 1);
    LLVMValueRef *order = tc_try_zalloc(n, sizeof(LLVMValueRef));
    if (s.key && s.state && order) {
        size_t i = 0;
        for (LLVMValueRef I = LLVMGetFirstInstruction(bb); I; I = LLVMGetNextInstruction(I)) {
            order[i++] = I;
            size_t h = sched_slot(&s, I);
            s.key[h] = I;
            s.state[h] = 1;
        }
        /* Anchors (phis, effects, values used elsewhere) in their order;
         * pure values on demand. The block is rebuilt at its end as it goes. */
        LLVMPositionBuilderAtEnd(b, bb);
        for (i = 0; i < n; i++) {
            LLVMValueRef I = order[i];
            if (LLVMIsAPHINode(I)) {
                s.state[sched_slot(&s, I)] = 2;
                continue;
            }
            if (sched_sinkable(I, bb))
                continue;
            sched_place(&s, I);
        }
    }
    tc_free(s.key);
    tc_free(s.state);
    tc_free(order);
}

void cg_schedule_simt(LLVMContextRef ctx, LLVMValueRef fn, bool epilogue)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
        sched_block(bb, b, epilogue);
    LLVMDisposeBuilder(b);
}
