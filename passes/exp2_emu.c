/* exp2_emu.c - the exp2_emu pass: part of attention's softmax exp2 runs on
 * the FMA units instead of the MUFU (FlashAttention 4's emulated exp2),
 * where the MUFU, not the tensor cores, would set the pace.
 *
 * Needs: verified IR after mma_select (runs before mask_split and
 * warp_specialize, which carry the attribute along).
 * Recognizes: an `exp2` of a 2-D f32 tile (columns a multiple of 8) in a
 * loop body whose result, cast, is the A operand of a product in that body
 * (the P of attention's acc += bf16(p) @ v).
 * Decision (PassCtx.exp2_emu: 0 = the pass decides, -1 = off, K > 0): per
 * score element the tensor cores do 2 K1 + 2 N2 FLOPs (q @ k^T reduces over
 * K1, p @ v makes N2 columns) and the MUFU one ex2, at 16 a clock per SM
 * on every target tilec knows; the tensor cores do TargetInfo.mma_flops_clk
 * a clock. R = mma_flops_clk / (16 (2 K1 + 2 N2)) is the MUFU's time over
 * the tensor cores' (64 / D on sm_90a, 128 / D on sm_100a, 8 / D on sm_86).
 * R >= 2: K = 4 (25% of the elements); R >= 1: K = 8 (12.5%); else off
 * (FA4 emulates 10-25%). Only where the products' accumulators live in
 * tensor memory (TargetInfo.tmem): there the softmax threads do nothing
 * but the softmax, and their FMA units have room. Where the accumulators
 * are registers (wgmma, mma.sync) the same threads rescale O on the FMA
 * units, and the emulation measured slower on the H200 at R = 1
 * (bench/RESULTS.md, 2026-12-02 18:4x UTC: D = 64, 3-7%). The choice is stamped as `{emu = K}`: the
 * elements whose column c has (c / 8) % K == 0, one n8 block of a
 * product's fragment in K, the same registers in every thread (no
 * divergence). Values: tc_exp2_emu (ir/elem_math.c) on those elements,
 * within 1 bf16 ulp of exp2 (tests/unit/test_fa4num.c).
 * Guarantees: verified IR; each decision goes to the report.
 */
#include "passes.h"

enum { MUFU_EX2_CLK = 16 };

typedef struct Walk { PassCtx *ctx; ChainInfo ci; Op **pv; } Walk;

/* Marks in w->pv[v] the product whose A operand is cast(v), for every
 * such cast in f (one walk: linear in the kernel's size). */
static bool mark_visit(Func *f, Op *op, void *vw)
{
    Walk *w = vw;
    Op *c = op->code == OP_DOT ? ir_val(f, op->args[0])->def : NULL;
    if (c && c->code == OP_CAST && c->parent == op->parent)
        w->pv[c->args[0]] = op;
    return true;
}

static bool visit(Func *f, Op *op, void *vw)
{
    Walk *w = vw;
    if (op->code != OP_EXP2 || op->iattr[0] || !op->parent)
        return true;
    const Type *t = ir_type(f, op->res[0]);
    Op *pv = t->kind == TY_TILE && t->rank == 2 && t->dtype == DT_F32 && t->shape[1] % TC_EXP2_EMU_GROUP == 0
           ? w->pv[op->res[0]] : NULL;
    pv = pv && pv->parent == op->parent ? pv : NULL;
    if (!pv)
        return true;
    const char *at = pass_loc_str(f->mod->arena, f, op->loc);
    int64_t n2 = ir_type(f, pv->res[0])->shape[1], k1 = w->ci.first_k > 0 ? w->ci.first_k : n2;
    int64_t flops = w->ctx->target ? w->ctx->target->mma_flops_clk : 0;
    double r = (double)flops / (double)(MUFU_EX2_CLK * (2 * k1 + 2 * n2));
    int64_t opt = w->ctx->exp2_emu;
    bool tmem = w->ctx->target && w->ctx->target->tmem;
    int64_t every = opt > 0 ? opt : opt < 0 || !tmem ? 0 : r >= 2.0 ? 4 : r >= 1.0 ? 8 : 0;
    const char *why = opt > 0   ? "exp2_emu.every"
                    : opt < 0   ? "exp2_emu.every=0"
                    : every     ? "the MUFU would take at least the tensor cores' time"
                    : r < 1.0   ? "the tensor cores take longer than the MUFU"
                                : "the accumulators are registers: the softmax threads' FMA units also rescale them";
    if (!every) {
        pass_note(w->ctx, "@%s: exp2 at %s of the %lldx%lld score tile: all on the MUFU (%s; MUFU / tensor-core "
                  "time %.2f at K1 = %lld, N2 = %lld)", f->name, at, (long long)t->shape[0], (long long)t->shape[1],
                  why, r, (long long)k1, (long long)n2);
        return true;
    }
    op->iattr[0] = every;
    int64_t groups = t->shape[1] / TC_EXP2_EMU_GROUP, emu = (groups + every - 1) / every;
    pass_note(w->ctx, "@%s: exp2 at %s of the %lldx%lld score tile: {emu = %lld}, %lld of %lld 8-column groups "
              "(%.1f%% of the elements) on the FMA units (%s; MUFU / tensor-core time %.2f at K1 = %lld, N2 = %lld)",
              f->name, at, (long long)t->shape[0], (long long)t->shape[1], (long long)every, (long long)emu,
              (long long)groups, 100.0 * (double)emu / (double)groups, why, r, (long long)k1, (long long)n2);
    return true;
}

int pass_exp2_emu(Module *m, PassCtx *ctx)
{
    for (int i = 0; i < m->nfuncs; i++) {
        Func *f = m->funcs[i];
        Walk w = { ctx, { 0 }, arena_alloc(f->mod->arena, sizeof(Op *) * (size_t)f->nvals) };
        pass_chain_info(f, &w.ci);
        ir_walk(f, &f->body, mark_visit, &w);
        ir_walk(f, &f->body, visit, &w);
    }
    return 0;
}
