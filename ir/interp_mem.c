/* interp_mem.c - the interpreter's memory ops: windows of global tensors
 * (LOAD, STORE, ATOMIC_ADD; GATHER and SCATTER through an index tile) and
 * shared buffers with asynchronous copies (SMEM_ALLOC, ASYNC_COPY /
 * COMMIT / WAIT, BARRIER, SMEM_LOAD / STORE), with the
 * one-thread protocol checks that interp.c's header describes.
 */
#include "interp_int.h"

#include <string.h>

/* ---- memory ---- */

/* The tensor is operand `base` (0 for LOAD/STORE, 2 for ASYNC_COPY). */
int ip_window_init(Interp *I, const Op *op, Window *w, int base, int nextra)
{
    const Type *tt = ir_type(I->f, op->args[base]);
    w->t = I->slots[op->args[base]].tensor;
    w->dt = (DType)tt->dtype;
    w->rank = tt->rank;
    if (!w->t || op->nlist != w->rank || op->nargs != base + 1 + w->rank + nextra) {
        diag_internal(I->d, op->loc, "%s: malformed window (tensor rank %d, %d extents, %d operands)",
                      op_info[op->code].name, w->rank, op->nlist, op->nargs);
        return 1;
    }
    w->n = 1;
    for (int d = 0; d < w->rank; d++) {
        w->off[d] = ip_sint(I, op->args[base + 1 + d]);
        w->ext[d] = op->list[d];
        if (w->ext[d] < 0) {
            diag_internal(I->d, op->loc, "negative window extent");
            return 1;
        }
        if (w->ext[d])
            w->n *= w->ext[d];
    }
    return 0;
}

/* Address of window element k, or NULL when out of bounds. Reports (and sets
 * *bad) a window dim out of bounds whose mask bit is cleared. */
void *ip_window_elem(Interp *I, const Op *op, const Window *w, int64_t k, bool *bad)
{
    int64_t idx[TENSOR_MAXRANK], rem = k;
    for (int d = w->rank - 1; d >= 0; d--) {
        idx[d] = w->off[d];
        if (w->ext[d]) {
            idx[d] += rem % w->ext[d];
            rem /= w->ext[d];
        }
    }
    int64_t lin = 0;
    bool inb = true;
    for (int d = 0; d < w->rank; d++) {
        if (idx[d] >= 0 && idx[d] < w->t->shape[d]) {
            lin += idx[d] * w->t->strides[d];
            continue;
        }
        inb = false;
        if (w->ext[d] && !((op->iattr[0] >> d) & 1) && !*bad) {
            *bad = true;
            diag_error(I->d, op->loc, "%s out of bounds in dim %d (index %lld, extent %lld) "
                       "although the IR marks that dim as not needing a mask",
                       op_info[op->code].name, d, (long long)idx[d], (long long)w->t->shape[d]);
        }
    }
    if (!inb)
        return NULL;
    return (char *)w->t->data + lin * (dtype_bits(w->dt) / 8);
}

static int exec_load(Interp *I, const Op *op)
{
    Window w;
    bool has_other = op->iattr[1] != 0, bad = false;
    if (ip_window_init(I, op, &w, 0, has_other))
        return 1;
    ValId res = op->res[0];
    DType rd = ip_vdt(I, res);
    if (ip_vnumel(I, res) != w.n) {
        diag_internal(I->d, op->loc, "load: window has %lld elements, result %lld",
                      (long long)w.n, (long long)ip_vnumel(I, res));
        return 1;
    }
    ValId ov = has_other ? op->args[op->nargs - 1] : 0;
    Elem zero;
    memset(&zero, 0, sizeof zero);   /* 0 and 0.0 share the all-zero bits */
    Elem *o = ip_out(I, res);
    for (int64_t k = 0; k < w.n; k++) {
        void *p = ip_window_elem(I, op, &w, k, &bad);
        if (p)
            o[k] = ip_conv(w.dt, rd, ip_load_elem(w.dt, p));
        else if (ov)
            o[k] = ip_conv(ip_vdt(I, ov), rd, ip_in(I, ov)[ip_vnumel(I, ov) == 1 ? 0 : k]);
        else
            o[k] = zero;
    }
    return bad;
}

/* STORE, and ATOMIC_ADD: each element of the window plus the value's (in
 * the tensor's dtype: an f32 sum rounded to f32, an integer one wrapped by
 * the store). Blocks run one after another, so every addition lands; in
 * launch order, one of the orders a GPU may take. */
static int exec_store(Interp *I, const Op *op)
{
    Window w;
    bool bad = false, add = op->code == OP_ATOMIC_ADD;
    if (ip_window_init(I, op, &w, 0, 1))
        return 1;
    ValId val = op->args[op->nargs - 1];
    if (ip_vnumel(I, val) != w.n) {
        diag_internal(I->d, op->loc, "%s: window has %lld elements, value %lld", op_info[op->code].name,
                      (long long)w.n, (long long)ip_vnumel(I, val));
        return 1;
    }
    DType vd = ip_vdt(I, val);
    const Elem *x = ip_in(I, val);
    for (int64_t k = 0; k < w.n; k++) {
        void *p = ip_window_elem(I, op, &w, k, &bad);
        if (!p)
            continue;
        Elem e = ip_conv(vd, w.dt, x[k]);
        if (add) {
            Elem old = ip_load_elem(w.dt, p);
            if (dtype_is_float(w.dt))
                e.f += old.f;
            else
                e.i = (int64_t)((uint64_t)e.i + (uint64_t)old.i);
        }
        ip_store_elem(w.dt, p, e);
    }
    return bad;
}

/* GATHER and SCATTER: window element k, with the index tile's element
 * along dim iattr[2] added to that dim's offset; NULL when the element is
 * outside the tensor (an index out of range masks it; the other dims are
 * checked as a window's). */
static void *indexed_elem(Interp *I, const Op *op, const Window *w, const Elem *ix, int64_t k, bool *bad)
{
    int g = (int)op->iattr[2];
    int64_t rem = k, gi = 0;
    for (int d = w->rank - 1; d >= 0; d--)
        if (w->ext[d]) {
            if (d == g)
                gi = rem % w->ext[d];
            rem /= w->ext[d];
        }
    int64_t at;
    if (__builtin_add_overflow(w->off[g], ix[gi].i, &at) || at < 0 || at >= w->t->shape[g])
        return NULL;
    Window one = *w;
    one.off[g] = at - gi;   /* so that off + gi is the indexed element */
    return ip_window_elem(I, op, &one, k, bad);
}

static int exec_indexed(Interp *I, const Op *op)
{
    Window w;
    bool gather = op->code == OP_GATHER, has_other = gather && op->iattr[1] != 0, bad = false;
    if (ip_window_init(I, op, &w, 0, 1 + (gather ? has_other : 1)))
        return 1;
    int g = (int)op->iattr[2];
    ValId iv = op->args[1 + w.rank];
    if (g < 0 || g >= w.rank || ip_vnumel(I, iv) != w.ext[g]) {
        diag_internal(I->d, op->loc, "%s: malformed index", op_info[op->code].name);
        return 1;
    }
    const Elem *ix = ip_in(I, iv);
    if (gather) {
        ValId res = op->res[0], ov = has_other ? op->args[op->nargs - 1] : 0;
        DType rd = ip_vdt(I, res);
        Elem zero;
        memset(&zero, 0, sizeof zero);
        Elem *o = ip_out(I, res);
        for (int64_t k = 0; k < w.n; k++) {
            void *p = indexed_elem(I, op, &w, ix, k, &bad);
            o[k] = p    ? ip_conv(w.dt, rd, ip_load_elem(w.dt, p))
                 : ov ? ip_conv(ip_vdt(I, ov), rd, ip_in(I, ov)[0])
                      : zero;
        }
        return bad;
    }
    ValId val = op->args[op->nargs - 1];
    if (ip_vnumel(I, val) != w.n) {
        diag_internal(I->d, op->loc, "scatter: window has %lld elements, value %lld", (long long)w.n,
                      (long long)ip_vnumel(I, val));
        return 1;
    }
    DType vd = ip_vdt(I, val);
    const Elem *x = ip_in(I, val);
    for (int64_t k = 0; k < w.n; k++) {
        void *p = indexed_elem(I, op, &w, ix, k, &bad);
        if (p)
            ip_store_elem(w.dt, p, ip_conv(vd, w.dt, x[k]));
    }
    return bad;
}

/* ---- shared buffers ---- */

static int exec_smem_alloc(Interp *I, const Op *op)
{
    Elem *o = ip_out(I, op->res[0]);
    memset(o, 0, sizeof(Elem) * (size_t)ip_vnumel(I, op->res[0]));
    int64_t stages = ir_type(I->f, op->res[0])->shape[0];
    Slot *s = &I->slots[op->res[0]];
    if (!s->sync)
        s->sync = arena_alloc(I->a, sizeof(SyncSlot) * (size_t)stages);
    for (int64_t k = 0; k < stages; k++)
        s->sync[k] = (SyncSlot){ -1, -1, -1 };
    s->fill = NULL;   /* TMA fill state: made afresh on first use (interp_sched.c) */
    return 0;
}

static void exec_wait(Interp *I, const Op *op)
{
    int64_t r = I->committed - op->iattr[0];
    if (r > I->retired)
        I->retired = r;
}

/* The protocol check of an access to slot s of buffer operand 0. */
static int sync_access(Interp *I, const Op *op, int64_t s, bool write)
{
    SyncSlot *y = I->slots[op->args[0]].sync;
    if (!y)
        return 0;
    y += s;
    const char *name = op_info[op->code].name;
    if (write && y->read == I->epoch) {
        diag_error(I->d, op->loc, "%s overwrites slot %lld of a shared buffer read since the last barrier "
                   "(other threads may still be reading it)", name, (long long)s);
        return 1;
    }
    if (!write && y->group >= I->retired) {
        diag_error(I->d, op->loc, "%s reads slot %lld before an async_wait retired its copy", name, (long long)s);
        return 1;
    }
    if (!write && y->landed == I->epoch) {
        diag_error(I->d, op->loc, "%s reads slot %lld with no barrier since it was written "
                   "(other threads' parts may not be visible)", name, (long long)s);
        return 1;
    }
    if (write) {
        bool copy = op->code == OP_ASYNC_COPY;
        y->group = copy ? I->committed : -1;
        y->landed = copy ? -1 : I->epoch;   /* a store is visible to others after the next barrier */
    } else {
        y->read = I->epoch;
    }
    return 0;
}

/* A retired copy lands in the epoch of the wait that retired it: stamp the
 * slots at each wait. */
static void sync_land(Interp *I)
{
    for (uint32_t v = 1; v < I->f->nvals; v++) {
        SyncSlot *y = I->slots[v].sync;
        if (!y)
            continue;
        int64_t stages = ir_type(I->f, v)->shape[0];
        for (int64_t k = 0; k < stages; k++)
            if (y[k].group >= 0 && y[k].group < I->retired && y[k].landed < 0)
                y[k].landed = I->epoch;
    }
}

/* The first element of operand 0's slot given by operand 1; NULL after
 * reporting a slot out of range. *n = elements per slot. */
static Elem *buffer_slot(Interp *I, const Op *op, int64_t *n)
{
    const Type *bt = ir_type(I->f, op->args[0]);
    int64_t stages = bt->shape[0], s = ip_sint(I, op->args[1]);
    *n = type_numel(bt) / stages;
    if (s < 0 || s >= stages) {
        diag_error(I->d, op->loc, "%s: slot %lld out of range 0..%lld of the shared buffer",
                   op_info[op->code].name, (long long)s, (long long)stages - 1);
        return NULL;
    }
    if (sync_access(I, op, s, op->code != OP_SMEM_LOAD))
        return NULL;
    return I->slots[op->args[0]].e + s * *n;
}

static int exec_async_copy(Interp *I, const Op *op)
{
    Window w;
    bool bad = false;
    int64_t n;
    Elem *dst = buffer_slot(I, op, &n);
    if (!dst || ip_window_init(I, op, &w, 2, 0))
        return 1;
    if (n != w.n) {
        diag_internal(I->d, op->loc, "async_copy: window has %lld elements, slot %lld", (long long)w.n,
                      (long long)n);
        return 1;
    }
    DType bd = ip_vdt(I, op->args[0]);
    for (int64_t k = 0; k < w.n; k++) {
        void *p = ip_window_elem(I, op, &w, k, &bad);
        if (p)
            dst[k] = ip_conv(w.dt, bd, ip_load_elem(w.dt, p));
        else
            memset(&dst[k], 0, sizeof dst[k]);
    }
    return bad;
}

static int exec_smem_load(Interp *I, const Op *op)
{
    int64_t n;
    const Elem *src = buffer_slot(I, op, &n);
    if (!src)
        return 1;
    if (n != ip_vnumel(I, op->res[0])) {
        diag_internal(I->d, op->loc, "smem_load: slot has %lld elements, result %lld", (long long)n,
                      (long long)ip_vnumel(I, op->res[0]));
        return 1;
    }
    DType bd = ip_vdt(I, op->args[0]), rd = ip_vdt(I, op->res[0]);
    Elem *o = ip_out(I, op->res[0]);
    for (int64_t k = 0; k < n; k++)
        o[k] = ip_conv(bd, rd, src[k]);
    return ip_sched_read(I, op, op->args[0], ip_sint(I, op->args[1]), op->res[0]);
}

static int exec_smem_store(Interp *I, const Op *op)
{
    int64_t n;
    Elem *dst = buffer_slot(I, op, &n);
    if (!dst)
        return 1;
    ValId v = op->args[2];
    if (n != ip_vnumel(I, v)) {
        diag_internal(I->d, op->loc, "smem_store: slot has %lld elements, value %lld", (long long)n,
                      (long long)ip_vnumel(I, v));
        return 1;
    }
    DType bd = ip_vdt(I, op->args[0]), vd = ip_vdt(I, v);
    const Elem *x = ip_in(I, v);
    for (int64_t k = 0; k < n; k++)
        dst[k] = ip_conv(vd, bd, x[k]);
    return 0;
}

/* ---- dispatch ---- */

int ip_exec_mem(Interp *I, const Op *op)
{
    switch ((OpCode)op->code) {
    case OP_LOAD: return exec_load(I, op);
    case OP_STORE: case OP_ATOMIC_ADD: return exec_store(I, op);
    case OP_GATHER: case OP_SCATTER: return exec_indexed(I, op);
    case OP_SMEM_ALLOC: return exec_smem_alloc(I, op);
    case OP_ASYNC_COPY: return exec_async_copy(I, op);
    case OP_ASYNC_COMMIT: I->committed++; return 0;
    case OP_ASYNC_WAIT: exec_wait(I, op); sync_land(I); return 0;
    case OP_BARRIER: I->epoch++; return 0;
    case OP_SMEM_LOAD: return exec_smem_load(I, op);
    case OP_SMEM_STORE: return exec_smem_store(I, op);
    default: break;
    }
    diag_internal(I->d, op->loc, "interpreter: '%s' is not a memory op", op_info[op->code].name);
    return 1;
}
