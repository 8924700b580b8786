/* chain.c - what a kernel's products look like: which products are fed by
 * products (attention's p @ v after q @ k^T), their accumulators' rows and
 * widths, the first product's reduction (the head dim), whether the scores
 * carry a row mask, and which named dims the first product's rows and
 * columns run along. Read by the schedule pass (warps and forms), the
 * launch pass (persistence, launch order, output staging) and the tile
 * choice (tiles.c).
 *
 * Needs: verified IR, at any point of the pipeline.
 */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct CarriedFind { ValId v; Op *loop; int idx; } CarriedFind;

static bool carried_visit(Func *f, Op *op, void *ctx)
{
    (void)f;
    CarriedFind *cf = ctx;
    if (op->code != OP_FOR || cf->loop)
        return !cf->loop;
    const Block *b = &op->regions[0];
    for (int i = 1; i < b->nargs; i++)
        if (b->args[i] == cf->v) {
            cf->loop = op;
            cf->idx = i - 1;
            return false;
        }
    return true;
}

/* What from_dot knows of each value: not yet asked, being asked (a cycle
 * through a loop-carried value answers no), no, yes. */
enum { FD_NEW, FD_BUSY, FD_NO, FD_YES };
typedef struct DotScan { const Func *f; uint8_t *st; } DotScan;

static bool from_dot(DotScan *ds, ValId v, int depth);

/* A loop-carried value (a FOR's region argument, or the FOR's result for
 * it) comes from a DOT when its initial value and the value the body
 * yields for it both do (a score tile computed one key block ahead). */
static bool loop_value_from_dot(DotScan *ds, const Op *loop, int idx, int depth)
{
    const Op *y = ir_block_yield(&loop->regions[0]);
    return y && idx < y->nargs && 3 + idx < loop->nargs &&
           from_dot(ds, loop->args[3 + idx], depth + 1) && from_dot(ds, y->args[idx], depth + 1);
}

static bool from_dot_uncached(DotScan *ds, ValId v, int depth)
{
    Func *f = (Func *)ds->f;
    Op *def = ir_val(f, v)->def;
    if (!def) {
        CarriedFind cf = { v, NULL, 0 };
        ir_walk(f, &f->body, carried_visit, &cf);
        return cf.loop && loop_value_from_dot(ds, cf.loop, cf.idx, depth);
    }
    if (def->code == OP_DOT)
        return true;
    if (def->code == OP_FOR) {   /* a loop's final value of a carried tile */
        for (int i = 0; i < def->nres; i++)
            if (def->res[i] == v)
                return loop_value_from_dot(ds, def, i, depth);
        return false;
    }
    if (def->code == OP_IF) {   /* a guarded mask (mask_split): either arm's value */
        for (int g = 0; g < 2; g++) {
            ValId y = ir_if_yield(def, g, v);
            if (y && from_dot(ds, y, depth + 1))
                return true;
        }
        return false;
    }
    if (!(op_info[def->code].flags & OPF_ELEM) && def->code != OP_BROADCAST && def->code != OP_EXPAND)
        return false;
    for (int i = 0; i < def->nargs; i++)
        if (from_dot(ds, def->args[i], depth + 1))
            return true;
    return false;
}

/* Does v come from a DOT result through elementwise / shape ops (or a
 * loop-carried tile of such results)? Each value is asked once. */
static bool from_dot(DotScan *ds, ValId v, int depth)
{
    if (depth > 64 || v == 0 || v >= ds->f->nvals)
        return false;
    if (ds->st[v] != FD_NEW)
        return ds->st[v] == FD_YES;
    ds->st[v] = FD_BUSY;
    bool yes = from_dot_uncached(ds, v, depth);
    ds->st[v] = yes ? FD_YES : FD_NO;
    return yes;
}

typedef struct ChainScan {
    DotScan ds;
    bool chained;          /* some DOT's A operand comes from a DOT */
    int64_t mgcd;          /* rows of every DOT accumulator (all must split alike) */
    int64_t nfirst, nchain;  /* widest accumulator of a first / a chained DOT */
} ChainScan;

static bool chain_visit(Func *f, Op *op, void *ctx)
{
    ChainScan *cs = ctx;
    if (op->code != OP_DOT)
        return true;
    const Type *t = ir_type(f, op->res[0]);
    int64_t m = t->rank == 2 ? t->shape[0] : 0;
    int64_t n = t->rank == 2 ? t->shape[1] : 0;
    if (!cs->mgcd || m < cs->mgcd)
        cs->mgcd = m;
    bool chained = from_dot(&cs->ds, op->args[0], 0);
    cs->chained |= chained;
    int64_t *w = chained ? &cs->nchain : &cs->nfirst;
    if (n > *w)
        *w = n;
    return true;
}


/* The named dim (index into f->dims) that axis `axis` of tile v runs
 * along, following casts, layout conversions and transposes back to a
 * LOAD of a tensor; -1 when v comes from anything else or the dim is
 * static. */
static int tile_axis_dim(const Func *f, ValId v, int axis)
{
    for (int depth = 0; depth < 16 && v; depth++) {
        const Op *def = ir_val(f, v)->def;
        if (!def)
            return -1;
        if (def->code == OP_TRANS) {
            axis = 1 - axis;
            v = def->args[0];
        } else if (def->code == OP_CAST || def->code == OP_CONVERT_LAYOUT) {
            v = def->args[0];
        } else if (def->code == OP_LOAD) {
            const Type *t = ir_type(f, def->args[0]);
            int seen = 0;
            for (int d = 0; d < def->nlist && d < t->rank; d++)
                if (def->list[d] != 0 && seen++ == axis)
                    return t->dimsym[d];
            return -1;
        } else {
            return -1;
        }
    }
    return -1;
}

static bool first_visit(Func *f, Op *op, void *ctx)
{
    ChainInfo *ci = ctx;
    if (op->code == OP_IOTA && op->iattr[0] == 0 && ir_type(f, op->res[0])->rank == 2)
        ci->row_mask = true;
    if (op->code == OP_STORE && ir_type(f, op->args[op->nargs - 1])->space == SP_SHARED)
        ci->staged = true;
    if (op->code == OP_DOT && !ci->first) {
        const Type *a = ir_type(f, op->args[0]), *r = ir_type(f, op->res[0]);
        ci->first = op;
        ci->first_k = a->rank == 2 ? a->shape[1] : 0;
        ci->first_n = r->rank == 2 ? r->shape[1] : 0;
        ci->rows_dim = tile_axis_dim(f, op->args[0], 0);
        ci->keys_dim = tile_axis_dim(f, op->args[1], 1);
    }
    return true;
}

void pass_chain_info(const Func *f, ChainInfo *ci)
{
    ChainScan cs = { { f, tc_zalloc(f->nvals ? f->nvals : 1) }, false, 0, 0, 0 };
    memset(ci, 0, sizeof *ci);
    ci->rows_dim = ci->keys_dim = -1;
    if (cs.ds.st) {
        ir_walk((Func *)f, (Block *)&f->body, chain_visit, &cs);
        tc_free(cs.ds.st);
    }
    ci->chained = cs.chained;
    ci->rows = cs.mgcd;
    ci->nfirst = cs.nfirst;
    ci->nchain = cs.nchain;
    ir_walk((Func *)f, (Block *)&f->body, first_visit, ci);
}
