/* interp_launch.c - the interpreter's entry points: binding arguments to
 * params and named dims, evaluating the grid, running blocks.
 */
#include "interp_int.h"

#include <string.h>

/* ---- binding and launch ---- */

static const char *param_name(const Func *f, int p)
{
    const char *n = ir_val(f, f->params[p])->name;
    return n ? n : "?";
}

/* Check one tensor arg against its param type; bind named dims. */
static int bind_tensor(Interp *I, int p, const InterpArg *a, int64_t *dimv, int *dimsrc)
{
    const Func *f = I->f;
    const Type *t = ir_type(f, f->params[p]);
    if (a->rank != t->rank) {
        diag_error(I->d, f->loc, "argument %d ('%s'): expected a rank-%d tensor, got rank %d",
                   p, param_name(f, p), t->rank, a->rank);
        return 1;
    }
    int64_t numel = 1;
    for (int i = 0; i < t->rank; i++) {
        int64_t e = a->shape[i];
        int s = t->dimsym[i];
        numel *= e;
        if (e < 0 || e > INT32_MAX) {
            diag_error(I->d, f->loc, "argument %d ('%s'): dim %d has extent %lld, outside 0..%d",
                       p, param_name(f, p), i, (long long)e, INT32_MAX);
            return 1;
        }
        if (s < 0 && e != t->shape[i]) {
            diag_error(I->d, f->loc, "argument %d ('%s'): dim %d must be %lld, got %lld",
                       p, param_name(f, p), i, (long long)t->shape[i], (long long)e);
            return 1;
        }
        if (s >= 0 && dimsrc[s] >= 0 && dimv[s] != e) {
            diag_error(I->d, f->loc, "argument %d ('%s'): dim '%s' is %lld here but %lld in argument %d ('%s')",
                       p, param_name(f, p), f->dim_names[s], (long long)e, (long long)dimv[s],
                       dimsrc[s], param_name(f, dimsrc[s]));
            return 1;
        }
        if (s >= 0 && dimsrc[s] < 0) {
            dimv[s] = e;
            dimsrc[s] = p;
        }
    }
    if (numel > 0 && !a->data) {
        diag_error(I->d, f->loc, "argument %d ('%s'): tensor data is NULL", p, param_name(f, p));
        return 1;
    }
    I->slots[f->params[p]].tensor = a;
    return 0;
}

static int bind_args(Interp *I, const InterpArg *args, int nargs)
{
    const Func *f = I->f;
    if (nargs != f->nparams) {
        diag_error(I->d, f->loc, "kernel '%s' takes %d arguments, got %d", f->name, f->nparams, nargs);
        return 1;
    }
    int64_t *dimv = arena_alloc(I->a, sizeof(int64_t) * (size_t)(f->ndims + 1));
    int *dimsrc = arena_alloc(I->a, sizeof(int) * (size_t)(f->ndims + 1));
    for (int s = 0; s < f->ndims; s++)
        dimsrc[s] = -1;
    for (int p = 0; p < f->nparams; p++) {
        ValId v = f->params[p];
        const Type *t = ir_type(f, v);
        if (t->kind == TY_TENSOR) {
            if (bind_tensor(I, p, &args[p], dimv, dimsrc))
                return 1;
            continue;
        }
        Elem *e = ip_out(I, v);
        if (ip_intlike((DType)t->dtype))
            e->i = ip_wrap_int((DType)t->dtype, args[p].i);
        else
            e->f = tc_round_to((DType)t->dtype, args[p].f);
    }
    for (int s = 0; s < f->ndims; s++) {
        if (dimsrc[s] < 0) {
            diag_error(I->d, f->loc, "named dim '%s' is not the extent of any tensor argument", f->dim_names[s]);
            return 1;
        }
        ip_out(I, f->dims[s])[0].i = dimv[s];
    }
    return 0;
}

/* Evaluate Func.grid into I->grid; an empty grid block means (1, 1, 1). */
static int eval_grid(Interp *I)
{
    const Op *y = NULL;
    I->grid[0] = I->grid[1] = I->grid[2] = 1;
    if (ip_run_block(I, &I->f->grid, &y))
        return 1;
    if (!y) {
        if (I->f->grid.nops == 0)
            return 0;
        diag_internal(I->d, I->f->loc, "grid block does not end in yield");
        return 1;
    }
    for (int i = 0; i < y->nargs && i < 3; i++) {
        I->grid[i] = ip_sint(I, y->args[i]);
        if (I->grid[i] < 0) {
            diag_error(I->d, y->loc, "grid dim %d is negative (%lld)", i, (long long)I->grid[i]);
            return 1;
        }
    }
    return 0;
}

static int interp_setup(Interp *I, const Func *f, const InterpArg *args, int nargs, Arena *a, Diag *d)
{
    memset(I, 0, sizeof *I);
    I->f = f;
    I->a = a;
    I->d = d;
    I->slots = arena_alloc(a, sizeof(Slot) * f->nvals);
    if (bind_args(I, args, nargs))
        return 1;
    return eval_grid(I);
}

static int run_body(Interp *I)
{
    const Op *y = NULL;
    if (ip_run_block(I, &I->f->body, &y))
        return 1;
    if (y) {
        diag_internal(I->d, y->loc, "kernel body ends in yield");
        return 1;
    }
    return 0;
}

int interp_grid(const Func *f, const InterpArg *args, int nargs, int64_t grid[3], Diag *d)
{
    Arena *a = arena_new();
    Interp I;
    int rc = interp_setup(&I, f, args, nargs, a, d);
    for (int i = 0; i < 3; i++)
        grid[i] = rc ? 0 : I.grid[i];
    arena_free(a);
    return rc;
}

int interp_run_block(const Func *f, const InterpArg *args, int nargs, const int64_t block[3], Diag *d)
{
    Arena *a = arena_new();
    Interp I;
    int rc = interp_setup(&I, f, args, nargs, a, d);
    if (!rc) {
        memcpy(I.block, block, sizeof I.block);
        rc = run_body(&I);
    }
    arena_free(a);
    return rc;
}

int interp_run(const Func *f, const InterpArg *args, int nargs, Diag *d)
{
    InterpOpts o = { 0 };
    return interp_run_opts(f, args, nargs, &o, d);
}

int interp_run_opts(const Func *f, const InterpArg *args, int nargs, const InterpOpts *o, Diag *d)
{
    Arena *a = arena_new();
    Interp I;
    int rc = interp_setup(&I, f, args, nargs, a, d);
    I.seed = o ? o->seed : 0;
    I.eager = o && o->eager;
    /* Values bound so far (params, dims, grid) survive every block; body
     * values live in a per-block arena. */
    size_t ssz = sizeof(Slot) * f->nvals;
    Slot *saved = rc ? NULL : arena_alloc(a, ssz);
    if (saved)
        memcpy(saved, I.slots, ssz);
    for (int64_t z = 0; !rc && z < I.grid[2]; z++)
        for (int64_t y = 0; !rc && y < I.grid[1]; y++)
            for (int64_t x = 0; !rc && x < I.grid[0]; x++) {
                Arena *ba = arena_new();
                memcpy(I.slots, saved, ssz);
                I.a = ba;
                I.block[0] = x, I.block[1] = y, I.block[2] = z;
                I.committed = I.retired = I.epoch = 0;
                I.sched = NULL;
                rc = run_body(&I);
                arena_free(ba);
            }
    arena_free(a);
    return rc;
}
