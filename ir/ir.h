/* ir.h - Tile IR: typed SSA over tiles, structured control flow.
 *
 * A Module holds kernels (Func). A Func owns a value table: values are small
 * indexes (ValId) into func->vals, never raw pointers; 0 is "no value".
 * Ops live in Blocks; FOR and IF ops own nested single-block regions.
 * Every op carries a source Loc. All memory comes from the module's Arena.
 *
 * Invariants the verifier (verify.c) checks between passes:
 *  - each value is defined exactly once, before its uses, in an enclosing block;
 *  - operand counts and types follow the op table (ops.h) and the op's rule;
 *  - elementwise ops see operands of one identical type (scalar or tile):
 *    the front end inserts SPLAT / EXPAND / BROADCAST / CAST explicitly;
 *  - region blocks end in YIELD with values matching the parent's results.
 */
#ifndef TILEC_IR_H
#define TILEC_IR_H

#include "../lib/util.h"

typedef struct Func Func;
typedef struct Module Module;

/* ---- element types ---- */
typedef enum DType {
    DT_NONE = 0,
#define DTYPE(E, s, b, c) DT_##E,
#include "dtypes.h"
#undef DTYPE
    DT_COUNT
} DType;

const char *dtype_name(DType t);          /* "bf16"; "?" for DT_NONE */
DType dtype_lookup(const char *s, size_t n);  /* data dtypes only; DT_NONE if unknown */
DType dtype_lookup_ir(const char *s, size_t n);  /* also the opaque ones (mbar, token) */
bool dtype_is_opaque(DType t);            /* mbar, token: IR handles, no arithmetic */
int dtype_bits(DType t);
bool dtype_is_float(DType t);
bool dtype_is_int(DType t);               /* signed or unsigned, not bool */
bool dtype_is_signed(DType t);

/* ---- types ---- */
enum { TILE_MAXRANK = 4, TENSOR_MAXRANK = 8 };

typedef enum TypeKind { TY_SCALAR = 0, TY_TILE, TY_TENSOR } TypeKind;

/* Where a tile lives. SP_ANY = the compiler chooses (layout pass, later). */
typedef enum Space { SP_ANY = 0, SP_REG, SP_SHARED, SP_TMEM, SP_GLOBAL } Space;
const char *space_name(Space s);

typedef struct Type {
    uint8_t kind;        /* TypeKind */
    uint8_t dtype;       /* DType */
    uint8_t rank;        /* 0 for scalars */
    uint8_t space;       /* Space (tiles) */
    uint16_t layout;     /* index into Func.layouts (0 = unassigned); later passes */
    int64_t shape[TENSOR_MAXRANK];  /* tiles: static extents; tensors: static extent or -1 */
    int16_t dimsym[TENSOR_MAXRANK]; /* tensors: index into Func.dims, or -1 if static */
} Type;

Type type_scalar(DType dt);
Type type_tile(DType dt, int rank, const int64_t *shape, Space sp);
bool type_eq(const Type *a, const Type *b);        /* ignores layout/space for SP_ANY? no: exact */
bool type_same_shape(const Type *a, const Type *b);
int64_t type_numel(const Type *t);                  /* tiles: product of shape; scalars: 1 */
/* "i32", "tile<128x64xbf16>", "tile<128x64xbf16, shared>", "tensor<bf16[Z,H,N,128]>" */
void type_print(const Func *f, const Type *t, StrBuf *out);

/* ---- op table ---- */
enum { OPF_PURE = 1, OPF_ELEM = 2, OPF_TERM = 4 };
typedef enum OpCode {
#define OP(E, s, na, nr, ng, fl) OP_##E,
#include "ops.h"
#undef OP
    OP_COUNT
} OpCode;

typedef struct OpInfo {
    const char *name;
    int nargs, nres, nregions;   /* -1 = variadic */
    unsigned flags;
} OpInfo;
extern const OpInfo op_info[OP_COUNT];
OpCode op_lookup(const char *s, size_t n);   /* OP_COUNT if unknown */

typedef enum CmpPred { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_COUNT } CmpPred;
extern const char *const cmp_names[CMP_COUNT];      /* "eq" ... */
/* Shared-tile address transforms (SMEM_ALLOC iattr[0]). The XOR swizzles are
 * the PTX/TMA/wgmma 32/64/128-byte modes: 16-byte chunk index XOR (row bits). */
typedef enum SwizzleMode { SWZ_NONE = 0, SWZ_32B, SWZ_64B, SWZ_128B, SWZ_PAD, SWZ_COUNT } SwizzleMode;
extern const char *const swizzle_names[SWZ_COUNT];  /* "none" "32B" "64B" "128B" "pad" */
typedef enum ReduceKind { RED_SUM, RED_MAX, RED_MIN, RED_PROD, RED_COUNT } ReduceKind;
extern const char *const reduce_names[RED_COUNT];   /* "sum" ... */
/* WS roles: list = (RoleKind, warp groups, registers) per region. */
typedef enum RoleKind { ROLE_PRODUCER, ROLE_CONSUMER, ROLE_MMA, ROLE_EPILOGUE, ROLE_COUNT } RoleKind;
extern const char *const role_names[ROLE_COUNT];    /* "producer" "consumer" "mma" "epilogue" */
enum { WS_MAXROLES = 8, WG_THREADS = 128, BLOCK_REGS = 65536, NAMED_BAR_IDS = 16, WS_MAXBLOCKS = 4 };
/* WS iattr[0]: the blocks an SM its register budgets are for (`blocks`;
 * 0 or 1: one). The registers a thread has at the kernel's entry: the
 * SM's 65536 over the block's threads times those blocks, rounded down to
 * 8, at most 248; the budgets of the roles share that block's pool. */
static inline int ir_ws_entry_regs(int threads, int blocks)
{
    int r = BLOCK_REGS / (threads * (blocks > 1 ? blocks : 1)) / 8 * 8;
    return r > 255 ? 248 : r;
}
typedef enum NamedBarMode { NBAR_SYNC, NBAR_ARRIVE, NBAR_COUNT } NamedBarMode;
extern const char *const named_bar_modes[NBAR_COUNT]; /* "sync" "arrive" */
/* DOT / DOT_ASYNC iattr[0]: the matrix instruction family the mma_select
 * pass chose (MMA_NONE: not chosen; the code generator then takes mma_sync
 * where ir_mma_sync_problem finds none, else simt). MMA_SIMT: no tensor
 * core; each thread accumulates its own elements of the result on the
 * FMA (or integer) units, operands read from shared memory. */
typedef enum MmaKind { MMA_NONE = 0, MMA_SYNC, MMA_WGMMA, MMA_TCGEN05, MMA_SIMT, MMA_COUNT } MmaKind;
extern const char *const mma_names[MMA_COUNT];      /* "none" "mma_sync" "wgmma" "tcgen05" "simt" */
/* Why a[M,K] @ b[K,N] cannot run as mma.sync m16n8k16 f16/bf16 products
 * (m16n8k32 .s8 for i8), or NULL: 2-D tiles of bf16, f16, f8e4m3 or
 * f8e5m2 (f8 operands converted to f16 in registers, exactly), or i8; M, K
 * and N multiples of 16, K of 32 for i8. Static text. */
const char *ir_mma_sync_problem(const Type *a, const Type *b);
/* The same for f32 operands on mma.sync m16n8k8 .tf32 (operands rounded
 * to tf32: only where the mma_select.tf32 option asks): 2-D f32 tiles, M
 * and N multiples of 16, K of 8. */
const char *ir_mma_tf32_problem(const Type *a, const Type *b);
/* Why a[M,K] @ b[K,N] cannot run as wgmma m64nNkK instructions, or NULL:
 * f16 / bf16 operands (m64nNk16) or f8e4m3 / f8e5m2 ones (m64nNk32, f32
 * accumulation), M a multiple of 64, K of the instruction's K
 * (ir_wgmma_k), N of 8 (covered by instructions of at most WGMMA_MAX_N
 * columns). Static text. Types only: an 8-bit wgmma also needs both
 * operands K-major in shared memory (mma_select checks that). */
enum { WGMMA_M = 64, WGMMA_K = 16, WGMMA_MAX_N = 256, WGMMA_K_BYTES = 32 };
const char *ir_wgmma_problem(const Type *a, const Type *b);
/* K of one wgmma instruction for operands of dtype dt: 32 bytes of K, so
 * 16 for f16 / bf16 and 32 for f8e4m3 / f8e5m2. */
int64_t ir_wgmma_k(DType dt);
/* Why a[M,K] @ b[K,N] cannot run as tcgen05.mma kind::f16 instructions of
 * one CTA with its accumulator in tensor memory, or NULL: f16 / bf16
 * operands, M a multiple of 128 (one instruction a 128-row block), K of 16,
 * N a multiple of 16 up to 256, the M/128 blocks of N f32 columns within
 * the 512 columns of tensor memory. Static text. */
enum { TCGEN05_M = 128, TCGEN05_MAX_N = 256, TMEM_COLS = 512, TMEM_LANES = 128 };
const char *ir_tcgen05_problem(const Type *a, const Type *b);
/* Tensor-memory columns of a tile<M x N x T, tmem>: M / 128 blocks of N
 * 32-bit columns (f32) or N / 2 (16-bit: two elements a column). */
int64_t ir_tmem_cols(const Type *t);

/* ---- values, ops, blocks ---- */
typedef uint32_t ValId;

typedef struct Value {
    Type type;
    struct Op *def;        /* defining op; NULL for params, dims and block args */
    const char *name;      /* source name hint (arena) or NULL; printing ignores it */
} Value;

typedef struct Block {
    ValId *args; int nargs;
    struct Op **ops; int nops, capops;
} Block;

typedef struct Op {
    uint16_t code;          /* OpCode */
    uint16_t nargs, nres, nregions;
    ValId *args;
    ValId *res;
    Block *regions;         /* nregions blocks */
    int64_t iattr[4];       /* per-op meaning: see ops.h */
    double fattr;           /* CONST of float type */
    int64_t *list; int nlist;  /* per-op integer list: LOAD/STORE window extents */
    Loc loc;
    struct Block *parent;   /* block that holds this op (maintained by builders) */
} Op;
static inline int ir_ws_blocks(const Op *ws) { return ws->iattr[0] > 1 ? (int)ws->iattr[0] : 1; }

/* ---- kernels ---- */
typedef enum ParamKind { PK_TENSOR = 0, PK_SCALAR } ParamKind;

typedef struct ConstBinding {   /* a compile-time param after specialisation */
    const char *name;
    DType type;                 /* DT_I64 for `int`, DT_BOOL, DT_F64 for `float`; DT_NONE for `dtype` */
    int64_t ival; double fval; DType dval;
} ConstBinding;

/* How a kernel's blocks run (the schedule pass; printed as the kernel's
 * `schedule(...)` clause). kind SCHED_NONE: not decided yet. */
typedef enum SchedKind { SCHED_NONE = 0, SCHED_SIMT, SCHED_MMA, SCHED_CHAIN } SchedKind;
enum { SCHED_TURNS_NONE = 0, SCHED_TURNS_DECOUPLED = 1 };
typedef struct Schedule {
    uint8_t kind;           /* SchedKind: no products, products, products fed by products */
    uint8_t warps;          /* per block: 1, 2, 4, 8, 16 or 32 */
    uint8_t min_blocks;     /* blocks an SM the register cap is set for (.minnctapersm); 0: none */
    uint8_t turns;          /* SCHED_TURNS_*: warp groups taking turns at the tensor cores */
    bool wide;              /* SIMT: recomputed after barriers, ordered by first use */
    bool copy_interior;     /* masked async copies get an arm for windows wholly inside */
    bool pv_rows;           /* a product with A in registers issued row tile by row tile */
    bool epilogue_order;    /* products, none chained: the code outside the products' blocks
                               ordered by first use (an epilogue computed element by element) */
} Schedule;
const char *sched_kind_name(SchedKind k);   /* "simt", "mma", "chain"; "none" */

typedef struct Func {
    struct Module *mod;
    const char *name;
    Loc loc;
    Value *vals; uint32_t nvals, capvals;   /* vals[0] unused */
    Value *stale;                           /* earlier copies of vals, freed by ir_release_stale */
    ValId *params; int nparams;             /* runtime params, in source order */
    const char **dim_names; ValId *dims; int ndims;  /* named dims: i32 scalar values bound at launch */
    ConstBinding *consts; int nconsts;      /* specialised compile-time params (informational) */
    Block body;                              /* the kernel body; ends without a terminator */
    Block grid;                              /* computes the launch grid from dims/consts; ends in YIELD of 3 i32 */
    int64_t smem_bytes;                      /* dynamic shared memory of one block (smem_alloc pass); 0 = none */
    Schedule sched;                          /* the schedule pass's decisions */
    const char *fallback;                    /* a kernel of the module with the same params launched instead
                                                when a tensor cannot be read through TMA (driver/job.c), or NULL */
} Func;

typedef struct Module {
    Arena *arena;
    const char *source_name;
    Func **funcs; int nfuncs;
} Module;

/* ---- construction (ir.c) ---- */
Module *ir_module_new(Arena *a, const char *source_name);
Func *ir_func_new(Module *m, const char *name, Loc loc);
ValId ir_new_value(Func *f, Type t, const char *name_hint);
/* Free the copies of the value tables that growing them left behind.
 * ir_new_value copies the table to a larger block and keeps the old one
 * readable, since a caller may still hold a Type or Value pointer into it
 * (a pass reads an operand's type while it builds new values); between
 * the front end and the passes, and between two passes, nobody does.
 * Without this a table grown by doubling costs twice its size. */
void ir_release_stale(Module *m);
void ir_func_release_stale(Func *f);
ValId ir_add_param(Func *f, const char *name, Type t);        /* appended to params */
ValId ir_add_dim(Func *f, const char *name);                  /* i32 scalar; returns existing if named */
int ir_find_dim(const Func *f, const char *name);             /* index or -1 */
static inline Value *ir_val(const Func *f, ValId v) { return &f->vals[v]; }
static inline Type *ir_type(const Func *f, ValId v) { return &f->vals[v].type; }
/* The YIELD that ends block b (a region or the grid), or NULL. */
static inline Op *ir_block_yield(const Block *b)
{
    Op *y = b->nops ? b->ops[b->nops - 1] : NULL;
    return y && y->code == OP_YIELD ? y : NULL;
}
/* The value arm g (0 then, 1 else) of IF op iff yields for its result v; 0
 * if v is not a result of iff. */
static inline ValId ir_if_yield(const Op *iff, int g, ValId v)
{
    const Op *y = ir_block_yield(&iff->regions[g]);
    for (int i = 0; i < iff->nres; i++)
        if (iff->res[i] == v && y && i < y->nargs)
            return y->args[i];
    return 0;
}

/* Builder: appends ops to a block (or inserts before an op). */
typedef struct Builder {
    Func *f;
    Block *blk;
    int pos;       /* insert position in blk->ops; -1 = append */
    Loc loc;       /* loc stamped on new ops */
} Builder;
Builder ir_builder_at_end(Func *f, Block *b);
Builder ir_builder_before(Func *f, Op *op);
/* Create an op with the given operands and result types; results are fresh values. */
Op *ir_build(Builder *b, OpCode code, const ValId *args, int nargs, const Type *restys, int nres);
ValId ir_build1(Builder *b, OpCode code, const ValId *args, int nargs, Type resty); /* returns res[0] */
ValId ir_const_int(Builder *b, Type t, int64_t v);
ValId ir_const_float(Builder *b, Type t, double v);
Block *ir_op_region(Op *op, int i);
/* A WS op (nregions -1 in the table): gives it n empty regions. */
void ir_op_set_regions(Func *f, Op *op, int n);
/* WS: append a role (kind, warp groups, registers); returns its region. */
Block *ir_ws_add_role(Func *f, Op *ws, RoleKind kind, int wgs, int regs);
ValId ir_block_add_arg(Func *f, Block *b, Type t, const char *hint);
void ir_block_append(Func *f, Block *b, Op *op);
void ir_block_insert(Func *f, Block *b, int pos, Op *op);  /* pos -1 = append */
void ir_block_remove(Block *b, int pos);       /* does not free */
int ir_block_index_of(const Block *b, const Op *op);

/* Uses: rebuilt on demand (QBE's filluse). */
typedef struct UseInfo {
    uint32_t *count;      /* per value: number of uses as an operand */
} UseInfo;
void ir_count_uses(const Func *f, UseInfo *u, Arena *scratch);
/* Replace every use of `from` with `to` in the whole function. */
void ir_replace_all_uses(Func *f, ValId from, ValId to);
/* Walk every op, pre-order, recursing into regions. Return false to stop. */
typedef bool (*OpVisitor)(Func *f, Op *op, void *ctx);
bool ir_walk(Func *f, Block *b, OpVisitor fn, void *ctx);
/* The same over one op: the op, then the ops nested in its regions. */
bool ir_walk_op(Func *f, Op *op, OpVisitor fn, void *ctx);
/* The first op of this code in f's body (walk order), or NULL. */
Op *ir_find_op(Func *f, OpCode code);
/* Whether any op of f's body writes tensor t (a store, an atomic add or a
 * scatter into it): a tensor none writes is read-only for the launch. */
bool ir_tensor_written(Func *f, ValId t);

/* ---- textual form (print.c / parse.c) ---- */
typedef struct PrintOpts { bool locs; } PrintOpts;
void ir_print_module(const Module *m, const PrintOpts *o, StrBuf *out);
void ir_print_func(const Func *f, const PrintOpts *o, StrBuf *out);
/* Parse .tir text. Errors go to d with locations in `name`. NULL on error. */
Module *ir_parse(Arena *a, const char *name, const char *text, size_t len, Diag *d);

/* ---- verifier (verify.c) ---- */
/* Returns the number of errors reported to d (0 = clean). `after` names the
 * pass that just ran, for the message. */
int ir_verify(const Module *m, const char *after, Diag *d);

/* ---- interpreter (interp.c): the semantic reference ----
 * Runs one kernel on host memory. Tensors are strided host arrays of their
 * dtype's storage (bf16/f16 as uint16 bit patterns, fp8 as uint8). Scalars
 * are given as double / int64 by param kind. Named dims are taken from the
 * tensors' shapes and checked for agreement. */
typedef struct InterpArg {
    void *data;                        /* tensors */
    int rank;
    int64_t shape[TENSOR_MAXRANK];
    int64_t strides[TENSOR_MAXRANK];   /* in elements */
    double f; int64_t i;               /* scalars */
} InterpArg;
/* Run block (bx,by,bz). Returns 0 on success; errors (shape disagreement,
 * bad args) go to d. */
int interp_run_block(const Func *f, const InterpArg *args, int nargs,
                     const int64_t block[3], Diag *d);
/* Evaluate the grid, then run every block. */
int interp_run(const Func *f, const InterpArg *args, int nargs, Diag *d);
/* The schedule inside WS regions: seed 0 runs each role until it blocks,
 * then the next (round robin), and lands asynchronous copies and products
 * only when every role is blocked (or, with `eager`, as soon as they are
 * issued); any other seed picks the next role to step, or the next
 * asynchronous completion, pseudo-randomly from it. The protocol checks
 * (ir/interp_sched.c) are exact for the interleaving that runs: whether a
 * bug is reported does not depend on luck once its ops execute. */
typedef struct InterpOpts {
    uint64_t seed;
    bool eager;
} InterpOpts;
int interp_run_opts(const Func *f, const InterpArg *args, int nargs, const InterpOpts *o, Diag *d);
/* The SM count `num_sms()` takes in the interpreter's grid: it runs the
 * kernel as a device of this many SMs would launch it. */
#define TC_INTERP_SMS 4
/* Evaluate the grid rule only. */
int interp_grid(const Func *f, const InterpArg *args, int nargs, int64_t grid[3], Diag *d);

/* ---- analyses ---- */
/* The static protocol checker of barrier rings in WS regions (protocol.c):
 * proves, for any trip count, that each phase gets its arrivals and bytes,
 * reads sit between their full-wait and their release, refills wait for
 * every release, and named barriers agree on their thread counts. Returns
 * the number of errors reported to d. */
int ir_protocol_check(const Module *m, Diag *d);

/* ---- numeric helpers shared by interpreter, folding and codegen tests ---- */
double tc_round_to(DType dt, double x);     /* round x to dt's precision (RNE), ints wrap */
double tc_load_elem(DType dt, const void *p);
void tc_store_elem(DType dt, void *p, double x);
uint16_t tc_f32_to_bf16(float x);
float tc_bf16_to_f32(uint16_t h);
uint16_t tc_f32_to_f16(float x);
float tc_f16_to_f32(uint16_t h);
/* One element of an elementwise op (ir/elem_math.c): the interpreter's and
 * constant folding's common semantics. The float functions return false
 * for an op they do not compute; results are not yet rounded to a dtype. */
int64_t tc_wrap_int(DType dt, uint64_t u);  /* wrap to dt's width (bool: != 0) */
bool tc_float_unary(OpCode c, double x, double *r);
bool tc_float_binary(OpCode c, double a, double b, double *r);
/* 2^x on the FMA units (the exp2 op's {emu = K} elements): Cody-Waite
 * split x = n + f, n = floor(x), f in [0, 1); 2^f by the degree-3
 * polynomial TC_EXP2_EMU_C1..C3; 2^n added into the exponent bits. The
 * same f32 operations, in the same order and rounding, as the code
 * generator's sequence (codegen/simt_math.c cg_exp2_emu_f32), so the
 * interpreter matches the GPU bit for bit: 0 below -126 (as ex2.approx.ftz),
 * +inf from 128, NaN for NaN. */
#define TC_EXP2_EMU_C1 0.695146143436431884765625f
#define TC_EXP2_EMU_C2 0.227564394474029541015625f
#define TC_EXP2_EMU_C3 0.077119089663028717041015625f
#define TC_EXP2_EMU_GROUP 8   /* columns per group: the n8 block of a product's fragment */
float tc_exp2_emu(float x);
/* Is the element at last-dim index `col` emulated under {emu = every}? */
static inline bool tc_exp2_emu_col(int64_t col, int64_t every)
{
    return every > 0 && (col / TC_EXP2_EMU_GROUP) % every == 0;
}
int64_t tc_int_shift(OpCode c, DType dt, int64_t a, int64_t b);   /* OP_SHL, OP_SHR */

#endif
