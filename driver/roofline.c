/* roofline.c - the `== roofline ==` section of `tilec --report`
 * (roofline.h): what a kernel's Tile IR after the passes does for the dim
 * sizes given, and the time the target's peak rates predict for it.
 *
 * Counting: a small evaluator walks the kernel's IR as the interpreter
 * would, but on i32/i64/bool scalars alone (the interpreter's integer
 * arithmetic, ip_int_binary): dims are their given sizes, block ids the
 * block being counted, num_blocks the evaluated grid, loop bounds and
 * branch conditions are evaluated and every loop trip is walked, with its
 * induction variable and carried scalars. Tiles carry no values; each op
 * that does work adds to the counts:
 *   dot, dot_async, tc_mma     2 M N K tensor-core FLOPs (a[M,K], b[K,N]);
 *   load, async_copy, tma_load window bytes from global memory, a masked
 *                              dim by its true extent (the part of
 *                              [offset, offset + extent) inside the tensor);
 *   store, atomic_add          window bytes to global memory, the same way;
 *   async_copy, tma_load,      bytes written to shared memory; smem_load
 *   smem_store                 bytes read from it (once a block: warps that
 *                              share an operand each read it, not counted);
 *   exp, exp2, log, ...        MUFU results (roofline.h lists the ops);
 *   philox, integer multiplies IMAD slots (below).
 * A scalar that depends on a block id is marked; when a loop bound, a
 * branch or a masked window's offset reads one, the counts differ per
 * block and every block is walked (a causal loop's hi = min(NK, m0 + BM)
 * is summed exactly), or, past a budget of evaluated ops, an even sample
 * of blocks scaled to the grid (the report says so). Otherwise one block
 * is walked and the counts multiplied by the grid's blocks. A branch on a
 * value the evaluator does not know (data) counts its then arm; a loop
 * with an unknown bound counts one trip; either marks the counts bounded.
 *
 * Times: each count over the target's peak rate (TargetInfo.peak; SMs
 * from target.sms when given): tensor cores mma_flops_clk x SMs x clock,
 * DRAM bandwidth on the bytes each tensor would move once (L2 catching
 * every re-read), MUFU 16 a clock a SM, shared memory 128 B a clock a SM,
 * integer multiplies 64 IMAD slots a clock a SM; per-SM units count
 * min(SMs, blocks) SMs. The prediction is the largest of the five (perfect
 * overlap); its unit is the bound.
 *
 * Integer multiplies. The CUDA C++ Programming Guide's throughput table
 * gives 64 32-bit integer multiplies (IMAD) a clock a SM on every arch
 * here: one pipe of 16 lanes in each of the 4 sub-partitions, a warp's
 * IMAD occupying it 2 clocks. A product whose high word is used (PTX
 * mul.wide.u32, mul.hi.u32: SASS IMAD.WIDE.U32, IMAD.HI.U32) occupies it
 * twice as long, 2 slots: on the H200, dropout's 16 elements a thread
 * compile to 13 IMAD.WIDE.U32, 3 IMAD.HI.U32 and 4 other IMADs an element,
 * and Nsight Compute found the FMA-heavy pipe busy 617 us of the kernel's
 * 742 (83%); 4 clocks a warp for the wide and high products and 2 for the
 * others make 587 us at the 1.95 GHz it ran at (2 clocks for all: 326
 * us). A philox counter (Philox4x32-10, ir/philox.h; its four words serve
 * four consecutive offsets) takes 10 rounds of two 32x32 -> 64-bit
 * products, less round 1's second, which multiplies the counter's word 2,
 * always 0: as compiled, 15 wide products, 2 high words and 2 low words,
 * 36 slots, TC_PHILOX_IMUL = 9 slots an element where a thread holds the
 * four offsets of each counter (the code generator computes the rounds
 * once for them; dropout's 1024-element blocks: 4 or 8 counters a thread).
 * Other offsets cost up to four times as much; the counter's arithmetic
 * and the rest of what the code generator adds is not counted (a floor).
 */
#include "roofline.h"

#include <stdio.h>
#include <string.h>

#include "ir/interp_int.h"

/* Ops evaluated before the count of a block-dependent kernel samples
 * blocks instead of walking them all, and before one block gives up. */
enum { ROOF_BUDGET = 20000000, ROOF_BLOCK_LIMIT = 50000000 };

/* Saturating at INT64_MAX: a grid of 2^31 x 2^31 x 2^31 blocks counts,
 * wrongly large, but without overflow. */
static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t sat_scale(int64_t a, double k)
{
    double x = (double)a * k + 0.5;
    return x >= 9.2e18 ? INT64_MAX : (int64_t)x;
}

typedef struct RVal {
    int64_t v;
    bool known;
    bool blk;                 /* depends on a block id */
} RVal;

typedef struct Roof {
    const Func *f;
    RVal *vals;
    int64_t *dimv;            /* per f->dims index */
    int64_t block[3], grid[3];
    int64_t sms;              /* num_sms() in the grid; 0: unknown */
    RoofCounts c;             /* this walk's counts */
    int64_t *tread, *twrite;  /* per param: bytes read from / written to the tensor */
    int64_t limit;            /* ops this walk may evaluate */
    bool over;
} Roof;

static RVal get(const Roof *R, ValId v) { return v ? R->vals[v] : (RVal){ 0, false, false }; }

static void set(Roof *R, ValId v, int64_t x, bool known, bool blk)
{
    if (v)
        R->vals[v] = (RVal){ known ? x : 0, known, blk };
}

static void decide(Roof *R, RVal v)
{
    if (v.blk)
        R->c.block_dependent = true;
}

static bool is_int_scalar(const Func *f, ValId v)
{
    const Type *t = ir_type(f, v);
    return t->kind == TY_SCALAR && (t->dtype == DT_BOOL || dtype_is_int((DType)t->dtype));
}

static int64_t bytes_of(int64_t numel, DType dt) { return (numel * dtype_bits(dt) + 7) / 8; }

static int param_index(const Func *f, ValId v)
{
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i] == v)
            return i;
    return -1;
}

static int64_t tensor_dim(const Roof *R, const Type *t, int d)
{
    if (t->shape[d] >= 0)
        return t->shape[d];
    int s = t->dimsym[d];
    return s >= 0 && s < R->f->ndims ? R->dimv[s] : 0;
}

static int64_t tensor_bytes(const Roof *R, const Type *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n = sat_mul(n, tensor_dim(R, t, d));
    return n < INT64_MAX / 8 ? bytes_of(n, (DType)t->dtype) : INT64_MAX;
}

/* Elements of a window (op->list extents, iattr[0] mask bits) along dim d
 * of `t` at offset offs[d]: a masked dim by the part inside the tensor
 * when the offset and the dim are known, else its whole extent. */
static int64_t window_extent(Roof *R, const Op *op, const Type *t, const ValId *offs, int d)
{
    int64_t ext = op->list[d], n = ext == 0 ? 1 : ext;
    if (ext > 0 && (op->iattr[0] >> d & 1)) {
        RVal off = get(R, offs[d]);
        decide(R, off);
        int64_t size = tensor_dim(R, t, d);
        if (off.known && size > 0) {
            int64_t lo = off.v > 0 ? off.v : 0, hi = off.v + ext < size ? off.v + ext : size;
            n = hi > lo ? hi - lo : 0;
        }
    }
    return n;
}

/* Bytes of the window of `tensor` at `offs` (op->list extents, iattr[0]
 * mask bits); masked dims by their true extents. */
static int64_t window_bytes(Roof *R, const Op *op, ValId tensor, const ValId *offs)
{
    const Type *t = ir_type(R->f, tensor);
    int64_t numel = 1;
    for (int d = 0; d < t->rank && d < op->nlist; d++)
        numel *= window_extent(R, op, t, offs, d);
    return bytes_of(numel, (DType)t->dtype);
}

/* Bytes of a gather's or scatter's window of `tensor` (op->list extents):
 * along the indexed dim iattr[2] element i sits at offset + index[i],
 * anywhere in the tensor, so that dim counts its whole extent (every index
 * taken as inside the tensor) and the other dims mask as window_bytes's.
 * Each index starts a run of contiguous bytes in DRAM: the window's
 * extent along the last dim (the whole window when the indexed dim is the
 * last, one element). DRAM and L2 move whole 32-byte sectors (CUDA C++
 * Best Practices Guide, "Coalesced Access to Global Memory"), and a run
 * at a random place starts at a sector boundary only by chance: it is
 * counted as its bytes rounded up to sectors (exact for a run of whole
 * aligned sectors, such as gather_rows' 512-byte rows; a floor for
 * unaligned runs, which touch one sector more). */
static int64_t indexed_bytes(Roof *R, const Op *op, ValId tensor, const ValId *offs)
{
    const Type *t = ir_type(R->f, tensor);
    int dim = (int)op->iattr[2], last = t->rank - 1;
    int64_t runs = 1, run = 1;
    for (int d = 0; d < t->rank && d < op->nlist; d++) {
        int64_t n = d == dim ? (op->list[d] == 0 ? 1 : op->list[d]) : window_extent(R, op, t, offs, d);
        if (d == last && d != dim)
            run = n;
        else
            runs = sat_mul(runs, n);
    }
    int64_t rb = bytes_of(run, (DType)t->dtype);
    return sat_mul(runs, (rb + 31) / 32 * 32);
}

static void global_access(Roof *R, const Op *op, int tensor_arg, bool write, int64_t *count)
{
    ValId tv = op->args[tensor_arg];
    int64_t b = op->code == OP_GATHER || op->code == OP_SCATTER ? indexed_bytes(R, op, tv, op->args + tensor_arg + 1)
                                                                : window_bytes(R, op, tv, op->args + tensor_arg + 1);
    *count = sat_add(*count, b);
    int p = param_index(R->f, tv);
    if (p >= 0)
        (write ? R->twrite : R->tread)[p] = sat_add((write ? R->twrite : R->tread)[p], b);
}

static int64_t numel_of(const Func *f, ValId v) { return type_numel(ir_type(f, v)); }

/* MUFU results an element of a float elementwise op takes (-1: none, an
 * FMA-pipe op counted in elem). */
static int mufu_cost(OpCode c, DType dt)
{
    switch (c) {
    case OP_EXP: case OP_EXP2: case OP_LOG: case OP_LOG2: case OP_SQRT: case OP_RSQRT: case OP_TANH:
    case OP_SIN: case OP_COS:
        return 1;
    case OP_SIGMOID: case OP_POW:
        return 2;
    case OP_DIV:
        return dt == DT_F32 ? 1 : -1;
    default:
        return -1;
    }
}

static void count_elem(Roof *R, const Op *op)
{
    const Func *f = R->f;
    DType dt = (DType)ir_type(f, op->res[0])->dtype;
    if (op->code == OP_MUL && dtype_is_int(dt)) {   /* a 64-bit low product: a wide one and two cross terms */
        R->c.imul = sat_add(R->c.imul, sat_mul(numel_of(f, op->res[0]), dtype_bits(dt) > 32 ? 4 : 1));
        return;
    }
    if (op->code == OP_CMP || op->code == OP_SELECT || op->code == OP_CAST || !dtype_is_float(dt))
        return;
    int64_t n = numel_of(f, op->res[0]);
    int cost = mufu_cost((OpCode)op->code, dt);
    if (cost < 0) {
        R->c.elem += n;
        return;
    }
    int64_t emu = 0;
    const Type *t = ir_type(f, op->res[0]);
    if (op->code == OP_EXP2 && op->iattr[0] > 0 && t->rank >= 1) {
        int64_t cols = t->shape[t->rank - 1], rows = n / (cols ? cols : 1), ec = 0;
        for (int64_t c = 0; c < cols; c++)
            ec += tc_exp2_emu_col(c, op->iattr[0]);
        emu = rows * ec;
    }
    R->c.mufu += (n - emu) * cost;
    R->c.elem += emu;
}

static void count_product(Roof *R, const Op *op, ValId a, ValId b)
{
    const Type *ta = ir_type(R->f, a), *tb = ir_type(R->f, b);
    if (ta->rank < 2 || tb->rank < 2)
        return;
    int64_t m = ta->shape[ta->rank - 2], k = ta->shape[ta->rank - 1], n = tb->shape[tb->rank - 1];
    if (op->code == OP_DOT && op->iattr[0] == MMA_SIMT) {   /* FMA units: one multiply-add an FMA-pipe op */
        R->c.elem += m * n * k;
        return;
    }
    R->c.tc_flops += 2 * m * n * k;
    if (op->code == OP_DOT && op->iattr[0] != MMA_WGMMA && op->iattr[0] != MMA_TCGEN05)
        R->c.sync_flops += 2 * m * n * k;
}

static void exec_block(Roof *R, const Block *b);

/* Scalar integer arithmetic, as the interpreter computes it. */
static void exec_scalar(Roof *R, const Op *op)
{
    const Func *f = R->f;
    ValId res = op->res[0];
    OpCode c = (OpCode)op->code;
    DType dt = (DType)ir_type(f, res)->dtype;
    if (op->nargs == 2) {
        RVal x = get(R, op->args[0]), y = get(R, op->args[1]);
        int64_t r = 0;
        bool blk = x.blk || y.blk, known = x.known && y.known;
        if (known && c == OP_CMP) {
            DType ot = (DType)ir_type(f, op->args[0])->dtype;
            int s = ot == DT_U64 ? ((uint64_t)x.v > (uint64_t)y.v) - ((uint64_t)x.v < (uint64_t)y.v)
                                 : (x.v > y.v) - (x.v < y.v);
            switch ((CmpPred)op->iattr[0]) {
            case CMP_EQ: r = s == 0; break;
            case CMP_NE: r = s != 0; break;
            case CMP_LT: r = s < 0; break;
            case CMP_LE: r = s <= 0; break;
            case CMP_GT: r = s > 0; break;
            default: r = s >= 0; break;
            }
        } else if (known) {
            known = ip_int_binary(c, dt, x.v, y.v, &r);
        }
        set(R, res, r, known, blk);
    } else if (op->nargs == 1) {
        RVal x = get(R, op->args[0]);
        int64_t r = x.v;
        if (c == OP_NEG)
            r = ip_wrap_int(dt, (int64_t)(0 - (uint64_t)x.v));
        else if (c == OP_NOT)
            r = dt == DT_BOOL ? !x.v : ip_wrap_int(dt, ~x.v);
        else if (c == OP_ABS)
            r = x.v < 0 ? ip_wrap_int(dt, (int64_t)(0 - (uint64_t)x.v)) : x.v;
        else if (c == OP_CAST)
            r = dt == DT_BOOL ? x.v != 0 : ip_wrap_int(dt, x.v);
        bool known = x.known && (c == OP_NEG || c == OP_NOT || c == OP_ABS || c == OP_CAST) &&
                     is_int_scalar(f, op->args[0]);
        set(R, res, r, known, x.blk);
    }
}

static void bind_yield(Roof *R, const Block *b, const ValId *to, int n)
{
    const Op *y = ir_block_yield(b);
    for (int i = 0; y && i < n && i < y->nargs; i++) {
        RVal v = get(R, y->args[i]);
        set(R, to[i], v.v, v.known, v.blk);
    }
}

static void exec_for(Roof *R, const Op *op)
{
    RVal lo = get(R, op->args[0]), hi = get(R, op->args[1]), st = get(R, op->args[2]);
    decide(R, lo);
    decide(R, hi);
    decide(R, st);
    const Block *body = &op->regions[0];
    int ncar = op->nargs - 3;
    for (int i = 0; i < ncar && i + 1 < body->nargs; i++) {
        RVal v = get(R, op->args[3 + i]);
        set(R, body->args[1 + i], v.v, v.known, v.blk);
    }
    bool ivblk = lo.blk || st.blk;
    if (!lo.known || !hi.known || !st.known || st.v <= 0) {
        R->c.bounded = true;
        set(R, body->args[0], 0, false, ivblk);
        exec_block(R, body);
        bind_yield(R, body, op->res, op->nres);
        return;
    }
    for (int64_t iv = lo.v; iv < hi.v && !R->over; iv += st.v) {
        set(R, body->args[0], iv, true, ivblk);
        exec_block(R, body);
        bind_yield(R, body, body->args + 1, ncar);
    }
    for (int i = 0; i < op->nres && i + 1 < body->nargs; i++) {
        RVal v = get(R, body->args[1 + i]);
        set(R, op->res[i], v.v, v.known, v.blk);
    }
}

static void exec_if(Roof *R, const Op *op)
{
    RVal c = get(R, op->args[0]);
    decide(R, c);
    int arm = 0;
    if (!c.known)
        R->c.bounded = true;
    else
        arm = c.v ? 0 : 1;
    exec_block(R, &op->regions[arm]);
    bind_yield(R, &op->regions[arm], op->res, op->nres);
    if (!c.known)
        for (int i = 0; i < op->nres; i++)
            set(R, op->res[i], 0, false, c.blk);
}

static void exec_op(Roof *R, const Op *op)
{
    const Func *f = R->f;
    if (++R->c.visited > R->limit) {
        R->over = true;
        return;
    }
    for (int i = 0; i < op->nres; i++)
        set(R, op->res[i], 0, false, false);
    OpCode c = (OpCode)op->code;
    switch (c) {
    case OP_CONST:
        if (is_int_scalar(f, op->res[0]))
            set(R, op->res[0], ip_wrap_int((DType)ir_type(f, op->res[0])->dtype, op->iattr[0]), true, false);
        return;
    case OP_NUMSMS:
        set(R, op->res[0], R->sms, R->sms > 0, false);
        return;
    case OP_BLOCKID:
    case OP_NBLOCKS: {
        int ax = (int)op->iattr[0];
        if (ax >= 0 && ax < 3)
            set(R, op->res[0], c == OP_BLOCKID ? R->block[ax] : R->grid[ax], true, c == OP_BLOCKID);
        return;
    }
    case OP_SELECT:
        if (is_int_scalar(f, op->res[0])) {
            RVal k = get(R, op->args[0]), x = get(R, op->args[1]), y = get(R, op->args[2]);
            RVal r = k.known ? (k.v ? x : y) : (RVal){ 0, false, false };
            set(R, op->res[0], r.v, r.known, k.blk || x.blk || y.blk);
        }
        return;
    case OP_REDUCE:
    case OP_SCAN:
        if (dtype_is_float((DType)ir_type(f, op->args[0])->dtype))
            R->c.elem += numel_of(f, op->args[0]);
        return;
    case OP_DOT:
    case OP_DOT_ASYNC:
    case OP_TC_MMA:
        count_product(R, op, op->args[0], op->args[1]);
        return;
    case OP_PHILOX:
        R->c.imul = sat_add(R->c.imul, sat_mul(numel_of(f, op->res[0]), TC_PHILOX_IMUL));
        return;
    case OP_LOAD:
        global_access(R, op, 0, false, &R->c.load_bytes);
        return;
    case OP_STORE:
        global_access(R, op, 0, true, &R->c.store_bytes);
        return;
    case OP_ATOMIC_ADD:
        global_access(R, op, 0, true, &R->c.atomic_bytes);
        return;
    case OP_GATHER:
        global_access(R, op, 0, false, &R->c.load_bytes);
        return;
    case OP_SCATTER:
        global_access(R, op, 0, true, &R->c.store_bytes);
        return;
    case OP_ASYNC_COPY:
    case OP_TMA_LOAD: {
        int64_t before = R->c.load_bytes;
        global_access(R, op, c == OP_ASYNC_COPY ? 2 : 4, false, &R->c.load_bytes);
        R->c.smem_bytes += R->c.load_bytes - before;
        return;
    }
    case OP_SMEM_LOAD:
        R->c.smem_bytes += bytes_of(numel_of(f, op->res[0]), (DType)ir_type(f, op->res[0])->dtype);
        return;
    case OP_SMEM_STORE:
        R->c.smem_bytes += bytes_of(numel_of(f, op->args[2]), (DType)ir_type(f, op->args[2])->dtype);
        return;
    case OP_FOR:
        exec_for(R, op);
        return;
    case OP_IF:
        exec_if(R, op);
        return;
    case OP_WS:
        for (int i = 0; i < op->nregions && !R->over; i++)
            exec_block(R, &op->regions[i]);
        return;
    default:
        break;
    }
    if (op_info[c].flags & OPF_ELEM) {
        if (op->nres == 1 && ir_type(f, op->res[0])->kind == TY_SCALAR && is_int_scalar(f, op->res[0]) &&
            (c == OP_CMP || c == OP_CAST || is_int_scalar(f, op->args[0])))
            exec_scalar(R, op);
        else if (op->nres == 1)
            count_elem(R, op);
    }
}

static void exec_block(Roof *R, const Block *b)
{
    for (int i = 0; i < b->nops && !R->over; i++)
        exec_op(R, b->ops[i]);
}

/* One walk of the body for linear block index `lin`. */
static void walk_block(Roof *R, int64_t lin)
{
    R->block[0] = lin % R->grid[0];
    R->block[1] = lin / R->grid[0] % R->grid[1];
    R->block[2] = lin / sat_mul(R->grid[0], R->grid[1]);
    exec_block(R, &R->f->body);
}

static void add_counts(RoofCounts *to, const RoofCounts *from, int64_t times)
{
    to->tc_flops = sat_add(to->tc_flops, sat_mul(from->tc_flops, times));
    to->sync_flops = sat_add(to->sync_flops, sat_mul(from->sync_flops, times));
    to->mufu = sat_add(to->mufu, sat_mul(from->mufu, times));
    to->elem = sat_add(to->elem, sat_mul(from->elem, times));
    to->imul = sat_add(to->imul, sat_mul(from->imul, times));
    to->load_bytes = sat_add(to->load_bytes, sat_mul(from->load_bytes, times));
    to->store_bytes = sat_add(to->store_bytes, sat_mul(from->store_bytes, times));
    to->atomic_bytes = sat_add(to->atomic_bytes, sat_mul(from->atomic_bytes, times));
    to->smem_bytes = sat_add(to->smem_bytes, sat_mul(from->smem_bytes, times));
    to->block_dependent |= from->block_dependent;
    to->bounded |= from->bounded;
}

int tc_roofline_count(Arena *a, const Func *f, const PassDims *dims, int64_t sms, RoofCounts *out,
                      const char **missing)
{
    memset(out, 0, sizeof *out);
    *missing = NULL;
    Roof R;
    memset(&R, 0, sizeof R);
    R.f = f;
    R.sms = sms;
    R.vals = arena_alloc(a, sizeof(RVal) * (f->nvals + 1));
    R.dimv = arena_alloc(a, sizeof(int64_t) * (size_t)(f->ndims + 1));
    R.tread = arena_alloc(a, sizeof(int64_t) * (size_t)(f->nparams + 1));
    R.twrite = arena_alloc(a, sizeof(int64_t) * (size_t)(f->nparams + 1));
    StrBuf miss = { 0 };
    for (int i = 0; i < f->ndims; i++) {
        R.dimv[i] = pass_dim_size(dims, f, i);
        if (R.dimv[i] <= 0)
            sb_printf(&miss, "%s%s", miss.len ? ", " : "", f->dim_names[i]);
        set(&R, f->dims[i], R.dimv[i], true, false);
    }
    if (miss.len) {
        *missing = arena_strndup(a, miss.buf, miss.len);
        sb_free(&miss);
        return -1;
    }
    R.limit = ROOF_BLOCK_LIMIT;
    exec_block(&R, &f->grid);
    const Op *gy = ir_block_yield(&f->grid);
    for (int i = 0; i < 3; i++) {
        RVal g = gy && i < gy->nargs ? get(&R, gy->args[i]) : (RVal){ 1, true, false };
        if (!g.known || g.v < 0) {
            *missing = "the grid depends on a value known only at launch";
            return -2;
        }
        R.grid[i] = out->grid[i] = g.v;
    }
    out->blocks = sat_mul(sat_mul(R.grid[0], R.grid[1]), R.grid[2]);
    if (out->blocks == 0)
        return 0;
    memset(&R.c, 0, sizeof R.c);
    walk_block(&R, 0);
    if (R.over) {
        *missing = "one block runs more ops than the count walks (loops too long)";
        return -2;
    }
    int64_t per = R.c.visited > 0 ? R.c.visited : 1;
    int64_t nwalk = 1, times = out->blocks;
    RoofCounts first = R.c;
    if (first.block_dependent && out->blocks > 1) {
        /* the last block too (a causal loop's longest), for the cost of a walk;
         * its counts are walked again below */
        int64_t *tr = R.tread, *tw = R.twrite;
        R.tread = arena_alloc(a, sizeof(int64_t) * (size_t)(f->nparams + 1));
        R.twrite = arena_alloc(a, sizeof(int64_t) * (size_t)(f->nparams + 1));
        memset(&R.c, 0, sizeof R.c);
        R.limit = ROOF_BLOCK_LIMIT;
        walk_block(&R, out->blocks - 1);
        R.tread = tr;
        R.twrite = tw;
        if (R.over) {
            *missing = "one block runs more ops than the count walks (loops too long)";
            return -2;
        }
        if (R.c.visited > per)
            per = R.c.visited;
    }
    if (first.block_dependent) {
        nwalk = out->blocks <= ROOF_BUDGET / per ? out->blocks : (ROOF_BUDGET / per > 0 ? ROOF_BUDGET / per : 1);
        times = 1;
    }
    add_counts(out, &first, times);
    out->visited = first.visited;
    for (int64_t s = 1; s < nwalk; s++) {
        memset(&R.c, 0, sizeof R.c);
        R.limit = ROOF_BLOCK_LIMIT;
        walk_block(&R, s * out->blocks / nwalk);
        if (R.over) {
            *missing = "one block runs more ops than the count walks (loops too long)";
            return -2;
        }
        add_counts(out, &R.c, 1);
        out->visited += R.c.visited;
    }
    out->sampled = R.c.block_dependent || first.block_dependent ? nwalk : 1;
    if (first.block_dependent && nwalk < out->blocks) {   /* a sample: scale to the grid */
        double k = (double)out->blocks / (double)nwalk;
        int64_t *fields[] = { &out->tc_flops, &out->sync_flops, &out->mufu, &out->elem, &out->imul, &out->load_bytes,
                              &out->store_bytes, &out->atomic_bytes, &out->smem_bytes };
        for (size_t i = 0; i < TC_COUNTOF(fields); i++)
            *fields[i] = sat_scale(*fields[i], k);
        for (int p = 0; p < f->nparams; p++) {
            R.tread[p] = sat_scale(R.tread[p], k);
            R.twrite[p] = sat_scale(R.twrite[p], k);
        }
    } else if (!first.block_dependent) {
        for (int p = 0; p < f->nparams; p++) {
            R.tread[p] = sat_mul(R.tread[p], out->blocks);
            R.twrite[p] = sat_mul(R.twrite[p], out->blocks);
        }
    }
    for (int p = 0; p < f->nparams; p++) {
        const Type *t = ir_type(f, f->params[p]);
        if (t->kind != TY_TENSOR)
            continue;
        int64_t size = tensor_bytes(&R, t);
        out->dram_bytes = sat_add(out->dram_bytes, sat_add(R.tread[p] < size ? R.tread[p] : size,
                                                           R.twrite[p] < size ? R.twrite[p] : size));
    }
    return 0;
}

/* ---- times ---- */

RoofTimes tc_roofline_times(const RoofCounts *c, const TargetInfo *t, int64_t sms)
{
    RoofTimes r;
    memset(&r, 0, sizeof r);
    const TargetPeaks *p = &t->peak;
    int64_t n = sms > 0 ? sms : p->sms;
    if (c->blocks > 0 && c->blocks < n)
        n = c->blocks;
    r.sms = (int)n;
    double clk = p->clock_mhz * 1e6, bw = p->mem_gbs * 1e9;
    if (n > 0 && clk > 0) {
        if (t->mma_flops_clk > 0)
            r.t[RB_TENSOR] = (double)c->tc_flops / ((double)t->mma_flops_clk * (double)n * clk);
        if (p->mufu_clk > 0)
            r.t[RB_MUFU] = (double)c->mufu / ((double)p->mufu_clk * (double)n * clk);
        if (p->smem_bytes_clk > 0)
            r.t[RB_SMEM] = (double)c->smem_bytes / ((double)p->smem_bytes_clk * (double)n * clk);
        if (p->imul_clk > 0)
            r.t[RB_IMUL] = (double)c->imul / ((double)p->imul_clk * (double)n * clk);
    }
    if (bw > 0) {
        r.t[RB_MEMORY] = (double)c->dram_bytes / bw;
        r.t_accessed = (double)(c->load_bytes + c->store_bytes + c->atomic_bytes) / bw;
    }
    r.bound = RB_TENSOR;
    for (int i = 1; i < RB_COUNT; i++)
        if (r.t[i] > r.t[r.bound])
            r.bound = (RoofBound)i;
    return r;
}

/* ---- the report ---- */

static const char *const bound_names[RB_COUNT] = { "tensor cores", "memory bandwidth", "MUFU (exp units)",
                                                   "shared memory", "integer multiplies" };

/* x with an SI prefix: "137.4 G". */
static void put_si(StrBuf *out, double x, const char *unit)
{
    static const char *const pre[] = { "", "k", "M", "G", "T", "P", "E" };
    int i = 0;
    while (x >= 1000.0 && i < 6) {
        x /= 1000.0;
        i++;
    }
    sb_printf(out, i ? "%.1f %s%s" : "%.0f %s%s", x, pre[i], unit);
}

static void put_time(StrBuf *out, double s)
{
    if (s >= 1.0)
        sb_printf(out, "%.3f s", s);
    else if (s >= 1e-3)
        sb_printf(out, "%.3f ms", s * 1e3);
    else if (s >= 1e-6 || s == 0)
        sb_printf(out, "%.1f us", s * 1e6);
    else
        sb_printf(out, "%.1f ns", s * 1e9);
}

static void put_dims(StrBuf *out, const Func *f, const PassDims *dims)
{
    for (int i = 0; i < f->ndims; i++)
        sb_printf(out, "%s%s=%lld", i ? ", " : "", f->dim_names[i], (long long)pass_dim_size(dims, f, i));
}

static void put_kernel(Arena *a, StrBuf *out, const Func *f, const PassDims *dims, const TargetInfo *t, int64_t sms)
{
    RoofCounts c;
    const char *why;
    sb_printf(out, "kernel %s (%s)", f->name, t->name);
    int rc = tc_roofline_count(a, f, dims, sms > 0 ? sms : t->peak.sms, &c, &why);
    if (rc != 0) {
        if (rc == -1)
            sb_printf(out, ": dims missing: %s (give them with --dim NAME=VALUE or tilec_options.dims)\n", why);
        else
            sb_printf(out, ": not counted: %s\n", why);
        return;
    }
    sb_puts(out, ", predicted\n  dims: ");
    if (f->ndims)
        put_dims(out, f, dims);
    else
        sb_puts(out, "none");
    sb_printf(out, "; grid %lld x %lld x %lld = %lld blocks; ", (long long)c.grid[0], (long long)c.grid[1],
              (long long)c.grid[2], (long long)c.blocks);
    if (!c.block_dependent)
        sb_puts(out, "every block alike");
    else if (c.sampled >= c.blocks)
        sb_printf(out, "summed over all %lld blocks", (long long)c.blocks);
    else
        sb_printf(out, "estimated from %lld of %lld blocks", (long long)c.sampled, (long long)c.blocks);
    if (c.bounded)
        sb_puts(out, "; a branch or trip count depends on data (then arm, one trip counted)");
    sb_putc(out, '\n');
    sb_printf(out, "  tensor cores: %lld FLOP (", (long long)c.tc_flops);
    put_si(out, (double)c.tc_flops, "FLOP)");
    if (c.sync_flops > 0 && (t->mma & (TC_MMA_WGMMA | TC_MMA_TCGEN05)))
        sb_printf(out, "; %lld of them on mma.sync, which runs below the peak counted here",
                  (long long)c.sync_flops);
    sb_putc(out, '\n');
    sb_printf(out, "  MUFU: %lld ops; other elementwise: %lld ops", (long long)c.mufu, (long long)c.elem);
    if (c.imul > 0)
        sb_printf(out, "; integer multiplies: %lld IMAD slots (a wide or high product 2)", (long long)c.imul);
    sb_putc(out, '\n');
    int64_t acc = c.load_bytes + c.store_bytes + c.atomic_bytes;
    sb_printf(out, "  global memory: %lld B accessed (loads %lld B, stores %lld B, atomics %lld B); DRAM %lld B (",
              (long long)acc, (long long)c.load_bytes, (long long)c.store_bytes, (long long)c.atomic_bytes,
              (long long)c.dram_bytes);
    put_si(out, (double)c.dram_bytes, "B: each tensor once)\n");
    sb_printf(out, "  shared memory: %lld B\n", (long long)c.smem_bytes);
    double ops = (double)(c.tc_flops + c.mufu + c.elem);
    if (c.dram_bytes > 0 && acc > 0)
        sb_printf(out, "  intensity: %.2f FLOP/B of DRAM, %.2f FLOP/B of accesses"
                       " (all FLOPs: tensor-core, MUFU and elementwise)\n",
                  ops / (double)c.dram_bytes, ops / (double)acc);
    RoofTimes r = tc_roofline_times(&c, t, sms);
    sb_printf(out, "  peaks: %s, %d SMs%s, %d MHz, %d GB/s, %d FLOP/clk/SM, %d MUFU/clk/SM, %d B/clk/SM shared, "
                   "%d IMAD/clk/SM\n",
              t->peak.device, sms > 0 ? (int)sms : t->peak.sms, sms > 0 ? " (target.sms)" : "", t->peak.clock_mhz,
              t->peak.mem_gbs, t->mma_flops_clk, t->peak.mufu_clk, t->peak.smem_bytes_clk, t->peak.imul_clk);
    sb_puts(out, "  time: tensor cores ");
    put_time(out, r.t[RB_TENSOR]);
    sb_puts(out, ", memory ");
    put_time(out, r.t[RB_MEMORY]);
    sb_puts(out, " (every access from DRAM: ");
    put_time(out, r.t_accessed);
    sb_puts(out, "), MUFU ");
    put_time(out, r.t[RB_MUFU]);
    sb_puts(out, ", shared memory ");
    put_time(out, r.t[RB_SMEM]);
    if (c.imul > 0) {
        sb_puts(out, ", integer multiplies ");
        put_time(out, r.t[RB_IMUL]);
    }
    sb_putc(out, '\n');
    sb_printf(out, "  bound: %s; predicted time ", bound_names[r.bound]);
    put_time(out, r.t[r.bound]);
    if (r.t[r.bound] > 0 && c.tc_flops > 0) {
        sb_puts(out, " (");
        put_si(out, (double)c.tc_flops / r.t[r.bound], "FLOP/s)");
    }
    if (r.sms < (sms > 0 ? sms : t->peak.sms))
        sb_printf(out, "; %d blocks use %d SMs", (int)c.blocks, r.sms);
    sb_putc(out, '\n');
}

void tc_report_roofline(Arena *a, StrBuf *out, const Module *m, const PassDims *dims, const TargetInfo *t,
                        int64_t sms)
{
    int n = 0;
    for (int i = 0; m && t && i < m->nfuncs; i++) {
        const Func *f = m->funcs[i];
        if (strncmp(f->name, "tilec_portable_", 15) == 0)
            continue;
        put_kernel(a, out, f, dims, t, sms);
        n++;
    }
    if (n == 0)
        sb_puts(out, "no kernels (the roofline is counted on Tile IR after the passes)\n");
}
