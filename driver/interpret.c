/* interpret.c - the interpreter mode of the public API (tilec_interpret in
 * include/tilec.h): a kernel of a result compiled with keep_ir runs in the
 * IR interpreter (ir/interp*.c) on host memory.
 *
 * The argument checks mirror the runtime's launch checks (runtime/check.c):
 * count, rank, dtype, no negative stride, innermost stride 1, no NULL data;
 * the interpreter then checks static extents and named dims as it binds
 * them, evaluates the grid and runs every block. The new result quotes the
 * compiled source in its diagnostics from its own copy, so it may outlive
 * the compiled result.
 */
#include "tilec.h"

#include <string.h>

#include "result.h"

static tilec_status fail(tilec_result *r, tilec_status st)
{
    r->status = st;
    return st;
}

static const Func *find_kernel(tilec_result *r, const Module *m, const char *name)
{
    if (!name && m->nfuncs == 1)
        return m->funcs[0];
    for (int i = 0; name && i < m->nfuncs; i++)
        if (strcmp(m->funcs[i]->name, name) == 0)
            return m->funcs[i];
    StrBuf sb = { 0 };
    for (int i = 0; i < m->nfuncs; i++)
        sb_printf(&sb, "%s%s", i ? ", " : "", m->funcs[i]->name);
    if (name)
        diag_error(&r->diag, (Loc){ 0 }, "no kernel '%s' (kernels: %s)", name, sb.buf ? sb.buf : "none");
    else
        diag_error(&r->diag, (Loc){ 0 }, "the module has %d kernels (%s): name one", m->nfuncs, sb.buf ? sb.buf : "");
    sb_free(&sb);
    return NULL;
}

static const char *param_name(const Func *f, int p)
{
    const char *n = ir_val(f, f->params[p])->name;
    return n ? n : "?";
}

/* One tensor argument: the runtime's layout checks, then into *ia. */
static bool tensor_arg(tilec_result *r, const Func *f, int p, const tilec_arg *a, InterpArg *ia)
{
    Diag *d = &r->diag;
    const Type *t = ir_type(f, f->params[p]);
    const char *name = param_name(f, p);
    if (a->rank != t->rank || !a->shape) {
        diag_error(d, f->loc, "param %s: expected a rank-%d tensor, got %s", name, t->rank,
                   a->shape ? "another rank" : "no shape");
        if (a->shape)
            diag_note(d, f->loc, "the argument has rank %d", a->rank);
        return false;
    }
    const char *want = dtype_name((DType)t->dtype);
    if (a->dtype && strcmp(a->dtype, want) != 0) {
        diag_error(d, f->loc, "param %s: tensor dtype is %s but the kernel wants %s", name, a->dtype, want);
        return false;
    }
    ia->data = a->data;
    ia->rank = a->rank;
    int64_t run = 1;
    bool empty = false;
    for (int k = a->rank - 1; k >= 0; k--) {
        ia->shape[k] = a->shape[k];
        ia->strides[k] = a->strides ? a->strides[k] : run;
        empty |= a->shape[k] == 0;
        if (a->shape[k] > 0 && __builtin_mul_overflow(run, a->shape[k], &run)) {
            diag_error(d, f->loc, "param %s: tensor size overflows 64 bits", name);
            return false;
        }
        if (ia->strides[k] < 0) {
            diag_error(d, f->loc, "param %s dim %d has negative stride %lld; pass a copy with positive strides",
                       name, k, (long long)ia->strides[k]);
            return false;
        }
    }
    if (ia->strides[a->rank - 1] != 1 && a->shape[a->rank - 1] > 1) {
        diag_error(d, f->loc, "param %s: innermost stride is %lld but the kernel needs 1 (a contiguous last dim)",
                   name, (long long)ia->strides[a->rank - 1]);
        return false;
    }
    if (!empty && !a->data) {
        diag_error(d, f->loc, "param %s: data pointer is NULL", name);
        return false;
    }
    return true;
}

static tilec_status run(tilec_result *r, const tilec_result *c, const char *kernel, const tilec_arg *args,
                        size_t nargs)
{
    Diag *d = &r->diag;
    if (!c || !c->module) {
        diag_error(d, (Loc){ 0 }, "%s", !c ? "compiled result is NULL"
                                           : c->status != TILEC_OK ? "the compilation failed: nothing to run"
                                                                   : "the result holds no IR: compile with "
                                                                     "tilec_options.keep_ir set");
        return fail(r, TILEC_ERR_USAGE);
    }
    for (int i = 0; i < c->diag.nsrcs; i++)
        diag_add_source(d, arena_strdup(r->arena, c->diag.srcs[i].file),
                        arena_strndup(r->arena, c->diag.srcs[i].text, c->diag.srcs[i].len), c->diag.srcs[i].len);
    const Func *f = find_kernel(r, c->module, kernel);
    if (!f)
        return fail(r, TILEC_ERR_USAGE);
    if (nargs != (size_t)f->nparams || (nargs && !args)) {
        diag_error(d, f->loc, "kernel %s takes %d arguments, got %zu%s", f->name, f->nparams, nargs,
                   nargs && !args ? " (args is NULL)" : "");
        return fail(r, TILEC_ERR_USAGE);
    }
    InterpArg *ia = arena_alloc(r->arena, sizeof *ia * (nargs + 1));
    for (int p = 0; p < f->nparams; p++) {
        const Type *t = ir_type(f, f->params[p]);
        if (t->kind == TY_TENSOR) {
            if (!tensor_arg(r, f, p, &args[p], &ia[p]))
                return fail(r, TILEC_ERR_USAGE);
        } else {
            ia[p].f = args[p].f;
            ia[p].i = args[p].i;
        }
    }
    if (interp_run(f, ia, f->nparams, d) || d->nerrors)
        return fail(r, TILEC_ERR_INPUT);
    return fail(r, TILEC_OK);
}

typedef struct InterpCall {
    ResultCall rc;
    const tilec_result *compiled;
    const char *kernel;
    const tilec_arg *args;
    size_t nargs;
} InterpCall;

static void interpret_job(void *p)
{
    InterpCall *c = p;
    c->rc.r = tc_result_new();
    c->rc.st = run(c->rc.r, c->compiled, c->kernel, c->args, c->nargs);
    tc_result_finish_diags(c->rc.r);
}

tilec_status tilec_interpret(const tilec_result *compiled, const char *kernel, const tilec_arg *args, size_t nargs,
                             tilec_result **out)
{
    InterpCall c = { { NULL, TILEC_OK }, compiled, kernel, args, nargs };
    return tc_result_job(interpret_job, &c.rc, out);
}

/* ---- kernels and params of a result with IR ---- */

static const Func *kernel_at(const tilec_result *r, size_t i)
{
    return r && r->module && i < (size_t)r->module->nfuncs ? r->module->funcs[i] : NULL;
}

size_t tilec_result_num_kernels(const tilec_result *r) { return r && r->module ? (size_t)r->module->nfuncs : 0; }

const char *tilec_result_kernel_name(const tilec_result *r, size_t kernel)
{
    const Func *f = kernel_at(r, kernel);
    return f ? f->name : NULL;
}

size_t tilec_result_kernel_num_params(const tilec_result *r, size_t kernel)
{
    const Func *f = kernel_at(r, kernel);
    return f ? (size_t)f->nparams : 0;
}

int tilec_result_kernel_param(const tilec_result *r, size_t kernel, size_t param, const char **name,
                              const char **dtype, int *rank)
{
    const Func *f = kernel_at(r, kernel);
    if (!f || param >= (size_t)f->nparams)
        return 1;
    const Type *t = ir_type(f, f->params[param]);
    if (name)
        *name = param_name(f, (int)param);
    if (dtype)
        *dtype = dtype_name((DType)t->dtype);
    if (rank)
        *rank = t->kind == TY_TENSOR ? t->rank : 0;
    return 0;
}
