/* lower_scan.c - SCAN (cumsum, cummax, cummin, cumprod; inclusive or
 * exclusive) of a register tile along one axis, in the operand's layout.
 *
 * Along the scanned parent dim p a thread's registers come in chunks of
 * espt consecutive elements; the chunks of one warp, one per lane along p,
 * form a segment, and the segments follow one another in the order (rep,
 * warp, s) of the layout's coordinate (layout.h: u = rep * cta + warp *
 * rpt * tpw * espt + s * tpw * espt + lane * espt + e). So:
 *   1. each thread scans its chunks in registers (a chunk's total);
 *   2. the tpw lanes along p scan the chunk totals with shuffles up
 *      (Kogge-Stone, log2(tpw) steps): the lanes before a thread, and the
 *      segment's total from its last lane (one indexed shuffle);
 *   3. segments: in registers when one warp spans the dim (wpc = 1), else
 *      every thread writes its segment totals to shared scratch, and after
 *      a barrier each thread combines the totals before its own;
 *   4. element = segments before + lanes before + the chunk's own scan.
 * Elements a layout holds twice along p (a tile shorter than the layout's
 * span: u >= the extent) count as the identity in steps 1-3; afterwards the
 * copies read their element's value from the primary owner through shared
 * scratch. 16-bit floats accumulate in f32, as reductions do; the order of
 * the float operations is not the interpreter's (a running sum in double).
 */
#include "cg_internal.h"

typedef struct Scan {
    CgRed rc;
    const Layout *L, *Lr;       /* the operand's layout and its slice without p */
    int p, espt, nchunk, tpw, wpc, rpt, ls;
    LLVMValueRef lane_d, warp_d;  /* this thread's lane and warp along p */
} Scan;

/* Register of L at row `row` (a register of Lr) and index i along p. */
static int reg_at(const Scan *s, int row, int i)
{
    int idx[TILE_MAXRANK];
    layout_reg_index(s->Lr, row, idx);
    idx[s->p] = i;
    return layout_reg_of(s->L, idx);
}

/* a then b; NULL stands for the identity (statically known). */
static LLVMValueRef comb(Cg *cg, const Scan *s, LLVMValueRef a, LLVMValueRef b)
{
    return !a ? b : !b ? a : cg_red_combine(cg, &s->rc, a, b);
}

static LLVMValueRef or_identity(Cg *cg, const Scan *s, LLVMValueRef v)
{
    return v ? v : cg_red_identity(cg, &s->rc);
}

/* Step 2: the chunk totals t of the lanes along p; *before: those of the
 * lanes before this one (NULL: none), *total: of all of them. */
static void lane_scan(Cg *cg, const Scan *s, LLVMValueRef t, LLVMValueRef *before, LLVMValueRef *total)
{
    LLVMBuilderRef b = cg->b;
    if (s->tpw == 1) {
        *before = NULL;
        *total = t;
        return;
    }
    LLVMValueRef inc = t;
    for (int k = 1; k < s->tpw; k *= 2) {
        LLVMValueRef y = cg_shfl(cg, "up", inc, cg_i32(cg, k * s->ls), 0);
        LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntUGE, s->lane_d, cg_i32(cg, k), "");
        inc = LLVMBuildSelect(b, ok, cg_red_combine(cg, &s->rc, y, inc), inc, "");
    }
    LLVMValueRef prev = cg_shfl(cg, "up", inc, cg_i32(cg, s->ls), 0);
    LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, s->lane_d, cg_i32(cg, 0), "");
    *before = LLVMBuildSelect(b, first, cg_red_identity(cg, &s->rc), prev, "");
    LLVMValueRef back = LLVMBuildMul(b, LLVMBuildSub(b, cg_i32(cg, s->tpw - 1), s->lane_d, ""), cg_i32(cg, s->ls), "");
    *total = cg_shfl(cg, "idx", inc, LLVMBuildAdd(b, cg->lane, back, ""), 31);
}

/* Step 3 across warps: tot[row][q] the segment totals of this thread's
 * chunks q; pre[row][q] receives the combination of the segments before. */
static void warp_scan(Cg *cg, const Scan *s, LLVMValueRef **tot, LLVMValueRef **pre, int nrows)
{
    LLVMBuilderRef b = cg->b;
    int nseg = s->nchunk * s->wpc, reps = s->nchunk / s->rpt;
    LLVMValueRef sm = cg_smem(cg, cg_logical_numel(s->Lr) * nseg * (dtype_bits(s->rc.acc) / 8));
    LLVMValueRef *base = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)nrows);
    LLVMValueRef mine = LLVMBuildMul(b, s->warp_d, cg_i32(cg, s->rpt), "");
    cg_xfer_barrier(cg);
    for (int row = 0; row < nrows; row++) {
        base[row] = LLVMBuildMul(b, cg_logical_offset(cg, s->Lr, row), cg_i32(cg, nseg), "");
        for (int q = 0; q < s->nchunk; q++) {
            int seg = q / s->rpt * s->wpc * s->rpt + q % s->rpt;
            LLVMValueRef o = LLVMBuildAdd(b, LLVMBuildAdd(b, base[row], cg_i32(cg, seg), ""), mine, "");
            LLVMBuildStore(b, tot[row][q], LLVMBuildGEP2(b, s->rc.ty, sm, &o, 1, ""));
        }
    }
    cg_xfer_barrier(cg);
    LLVMValueRef *ex = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)nseg);
    for (int row = 0; row < nrows; row++) {
        LLVMValueRef run = NULL;
        for (int k = 0; k < nseg; k++) {
            ex[k] = run;
            LLVMValueRef o = LLVMBuildAdd(b, base[row], cg_i32(cg, k), "");
            run = comb(cg, s, run, LLVMBuildLoad2(b, s->rc.ty, LLVMBuildGEP2(b, s->rc.ty, sm, &o, 1, ""), ""));
        }
        for (int rep = 0; rep < reps; rep++)
            for (int si = 0; si < s->rpt; si++) {
                int first = rep * s->wpc * s->rpt + si;
                LLVMValueRef v = or_identity(cg, s, ex[first]);
                for (int w = 1; w < s->wpc; w++) {
                    LLVMValueRef is = LLVMBuildICmp(b, LLVMIntEQ, s->warp_d, cg_i32(cg, w), "");
                    v = LLVMBuildSelect(b, is, ex[first + w * s->rpt], v, "");
                }
                pre[row][rep * s->rpt + si] = v;
            }
    }
}

/* Copies along p (u >= the extent) take their element's value from its
 * primary owner through shared scratch; the others write to a slot of
 * their own thread past the tile. */
static LLVMValueRef *fix_copies(Cg *cg, const Scan *s, LLVMValueRef *v, DType dt)
{
    LLVMBuilderRef b = cg->b;
    int64_t numel = cg_logical_numel(s->L);
    int n = layout_nregs(s->L), eb = dtype_bits(dt) / 8;
    LLVMTypeRef mty = cg_mem_type(cg, dt);
    LLVMValueRef sm = cg_smem(cg, (numel + (int64_t)cg->nwarps * 32) * eb);
    LLVMValueRef own = LLVMBuildAdd(b, cg->tid, cg_i32(cg, numel), "");
    LLVMValueRef *off = new_regs(cg, s->L), *out = new_regs(cg, s->L);
    cg_xfer_barrier(cg);
    for (int r = 0; r < n; r++) {
        off[r] = cg_logical_offset(cg, s->L, r);
        LLVMValueRef o = LLVMBuildSelect(b, cg_primary_along(cg, s->L, r, s->p), off[r], own, "");
        LLVMBuildStore(b, v[r], LLVMBuildGEP2(b, mty, sm, &o, 1, ""));
    }
    cg_xfer_barrier(cg);
    for (int r = 0; r < n; r++)
        out[r] = LLVMBuildLoad2(b, mty, LLVMBuildGEP2(b, mty, sm, &off[r], 1, ""), "");
    return out;
}

static void report(Cg *cg, const Op *op, const Scan *s, bool wrap)
{
    if (!cg->report)
        return;
    sb_printf(cg->report, "  scan %s%s axis %lld at %d:%d: %d lanes shuffle up, ", reduce_names[s->rc.kind],
              op->iattr[2] ? " exclusive" : "", (long long)op->iattr[0], op->loc.line, op->loc.col, s->tpw);
    if (s->wpc > 1)
        sb_printf(cg->report, "%d warps via shared memory", s->wpc);
    else
        sb_puts(cg->report, "no shared memory");
    if (wrap)
        sb_puts(cg->report, ", copies past the extent through shared memory");
    sb_puts(cg->report, " -> ");
    layout_print(s->L, cg->report);
    sb_putc(cg->report, '\n');
}

int cg_lower_scan(Cg *cg, Op *op)
{
    LLVMBuilderRef b = cg->b;
    const Type *t = ir_type(cg->f, op->args[0]);
    DType dt = (DType)t->dtype;
    int axis = (int)op->iattr[0];
    bool excl = op->iattr[2] != 0;
    Scan s = { .rc = { (ReduceKind)op->iattr[1], dt == DT_F16 || dt == DT_BF16 ? DT_F32 : dt, NULL } };
    if (dt == DT_F8E4M3 || dt == DT_F8E5M2 || dt == DT_BOOL || axis < 0 || axis >= t->rank ||
        s.rc.kind >= RED_COUNT) {
        diag_error(cg->d, op->loc, "this scan is not supported by the code generator yet");
        return 1;
    }
    s.rc.ty = cg_type(cg, s.rc.acc);
    const TileVal *v = &cg->vals[op->args[0]];
    const Layout *L = v->kind == TV_REGS ? v->L : cg_default_layout(cg, t, true);
    LLVMValueRef *in = cg_materialize(cg, v, t, L, op->loc);
    s.L = L;
    s.p = layout_pdim(L, axis);
    s.Lr = cg_layout_dup(cg, layout_slice(L, axis));
    s.espt = layout_espt(L, s.p);
    s.rpt = layout_rpt(L, s.p);
    s.nchunk = layout_nregs_dim(L, s.p) / s.espt;
    s.tpw = L->tpw[s.p];
    s.wpc = L->wpc[s.p];
    s.ls = layout_lane_stride(L, s.p);
    s.lane_d = LLVMBuildURem(b, LLVMBuildUDiv(b, cg->lane, cg_i32(cg, s.ls), ""), cg_i32(cg, s.tpw), "");
    s.warp_d = LLVMBuildURem(b, LLVMBuildUDiv(b, cg->warp, cg_i32(cg, layout_warp_stride(L, s.p)), ""),
                             cg_i32(cg, s.wpc), "");
    bool wrap = layout_may_wrap(L, s.p);
    int nrows = layout_nregs(s.Lr);
    LLVMValueRef *part = new_regs(cg, L), *out = new_regs(cg, L);
    LLVMValueRef **tot = arena_alloc(cg->a, sizeof(LLVMValueRef *) * (size_t)nrows);
    LLVMValueRef **lanes = arena_alloc(cg->a, sizeof(LLVMValueRef *) * (size_t)nrows);
    LLVMValueRef **pre = arena_alloc(cg->a, sizeof(LLVMValueRef *) * (size_t)nrows);
    for (int row = 0; row < nrows; row++) {   /* steps 1 and 2 */
        tot[row] = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)s.nchunk);
        lanes[row] = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)s.nchunk);
        pre[row] = arena_alloc(cg->a, sizeof(LLVMValueRef) * (size_t)s.nchunk);
        for (int q = 0; q < s.nchunk; q++) {
            LLVMValueRef run = NULL;
            for (int e = 0; e < s.espt; e++) {
                int r = reg_at(&s, row, q * s.espt + e);
                LLVMValueRef x = cg_convert(cg, in[r], dt, s.rc.acc);
                if (wrap)
                    x = LLVMBuildSelect(b, cg_primary_along(cg, L, r, s.p), x, cg_red_identity(cg, &s.rc), "");
                part[r] = run = comb(cg, &s, run, x);
            }
            lane_scan(cg, &s, run, &lanes[row][q], &tot[row][q]);
        }
    }
    if (s.wpc > 1) {   /* step 3 */
        warp_scan(cg, &s, tot, pre, nrows);
    } else {
        for (int row = 0; row < nrows; row++)
            for (int q = 0; q < s.nchunk; q++)
                pre[row][q] = q ? comb(cg, &s, pre[row][q - 1], tot[row][q - 1]) : NULL;
    }
    for (int row = 0; row < nrows; row++)   /* step 4 */
        for (int q = 0; q < s.nchunk; q++) {
            LLVMValueRef o = comb(cg, &s, pre[row][q], lanes[row][q]);
            for (int e = 0; e < s.espt; e++) {
                int r = reg_at(&s, row, q * s.espt + e);
                LLVMValueRef x = !excl ? comb(cg, &s, o, part[r])
                               : e ? comb(cg, &s, o, part[reg_at(&s, row, q * s.espt + e - 1)]) : o;
                out[r] = cg_convert(cg, or_identity(cg, &s, x), s.rc.acc, dt);
            }
        }
    if (wrap)
        out = fix_copies(cg, &s, out, dt);
    set_regs(cg, op->res[0], L, out);
    report(cg, op, &s, wrap);
    return 0;
}
