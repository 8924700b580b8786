/* cg_internal.h - state shared by the code generator's files: the per-kernel
 * lowering context (Cg), tile values in registers, and LLVM helpers.
 *
 * codegen.c      driver: target machine, module, kernel signature, metadata
 * lower_simt.c   scalars, elementwise math, shape ops, control flow
 * lower_mem.c    global loads / stores (16-byte vectors, masks)
 * lower_xfer.c   reductions and layout conversions through shared memory
 * lower_scan.c   scans along an axis (cumsum and the like)
 * lower_shape.c  slice, concat, reshape; gather and scatter through an index tile
 * lower_async.c  shared buffers, cp.async copies, wait groups, barriers
 * lower_mma.c    `@` on tensor cores (ldmatrix + mma.sync m16n8k16)
 * mma_frag.c     its fragments: ldmatrix addresses, f8 / i8 / tf32 element loads
 * mma_store.c    a product's tile stored through shared memory (16-byte rows)
 * lower_dot_simt.c `@` on the FMA units (f32, f64, i8, odd extents)
 * lower_chain.c  products feeding products (attention): warps along M only
 */
#ifndef TILEC_CG_INTERNAL_H
#define TILEC_CG_INTERNAL_H

#include "codegen.h"

#include <stdio.h>
#include "layout.h"
#include "target.h"

#include <llvm-c/Core.h>

/* A tile value during lowering. SPLAT and IOTA stay symbolic until a
 * consumer needs registers in a concrete layout (cg_materialize). */
typedef enum TvKind { TV_NONE = 0, TV_SCALAR, TV_SPLAT, TV_IOTA, TV_REGS, TV_SMEM } TvKind;

/* A 2-D tile in shared memory (TV_SMEM): a slot of an SMEM_ALLOC buffer
 * read lazily by its consumers (DOT operands), or the buffer itself. Byte
 * offset of (row, byte b of the row) from `base`: see cg_smem_offset. */
typedef struct SmemView {
    LLVMValueRef base;       /* ptr addrspace(3): first byte of the tile (buffer: of slot 0) */
    int64_t rows, cols;      /* stored shape (a 1-D tile: rows = 1) */
    int eb;                  /* element bytes */
    int swz;                 /* SwizzleMode */
    int pad;                 /* SWZ_PAD: bytes after each row */
    bool trans;              /* the value is the transpose of the stored tile */
    int64_t slots, slot_bytes;  /* buffers: number of slots, bytes between slots */
} SmemView;

typedef struct TileVal {
    uint8_t kind;
    uint8_t axis;            /* IOTA: the dim along which the index grows */
    LLVMValueRef s;          /* SCALAR / SPLAT value */
    const Layout *L;         /* REGS */
    LLVMValueRef *r;         /* REGS: layout_nregs(L) values */
    const SmemView *sv;      /* SMEM */
    /* Rematerialisation (lower_simt.c): an elementwise value computed from
     * narrow loaded data is recomputed after a barrier instead of being kept
     * live across it. def: the op that recomputes it (NULL: keep); epoch:
     * Cg.epoch of `r`; leaf: `r` are the registers of a 16-bit float load. */
    Op *def;
    int epoch;
    int gen;                 /* recomputations so far (picks the widening form) */
    bool leaf;
    bool lazy;               /* r are unused extracts of packed loads: placed at the first use */
    ValId bsrc;              /* REGS made by BROADCAST: its source (size-1 dims), else 0 */
} TileVal;

typedef struct TensorArg {
    LLVMValueRef base;                    /* ptr addrspace(1) */
    LLVMValueRef stride[TENSOR_MAXRANK];  /* i64, elements; innermost = 1 */
    LLVMValueRef size[TENSOR_MAXRANK];    /* i32 extent */
} TensorArg;

typedef struct Cg {
    Arena *a;
    Diag *d;
    const Target *tg;           /* the family's lowering hooks */
    const TargetInfo *ti;       /* what the arch has (target/target.h) */
    int64_t smem_per_block;     /* option target.smem-per-block (0: the target's own) */
    Func *f;
    LLVMContextRef ctx;
    struct CgGate *gate;        /* pass gate on ctx (pass_gate.cpp) */
    int minct;                  /* the kernel's .minnctapersm (0: no register cap) */
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef fn;
    LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_f16, t_bf16, t_f32, t_f64, t_ptr, t_sptr;
    TileVal *vals;                        /* per ValId */
    TensorArg *tens;                      /* per ValId up to the last param: tensor params (sparse) */
    int nwarps;
    LLVMValueRef tid, lane, warp;         /* i32, computed at entry (fresh ones inside an outer loop: lower_for) */
    int loops;                            /* loops around the op being lowered */
    const Op *cur_for;                    /* the innermost FOR being lowered (NULL: none) */
    LLVMValueRef smem;                    /* placeholder global, resized at the end */
    int64_t smem_bytes;
    /* Dynamic shared memory (kernels with shared buffers or tensor-core
     * products): buffers at their SMEM_ALLOC offsets, the scratch above at
     * dsmem_base. */
    LLVMValueRef dsmem;                   /* extern shared array, or NULL: static scratch only */
    int64_t dsmem_base;                   /* Func.smem_bytes (or the buffers' end), 128-aligned */
    int64_t smem_auto;                    /* next offset for buffers the allocator left unplaced */
    bool scratch_over_buffers;            /* cg_smem hands out offset 0 of the (dead) buffers */
    StrBuf *report;
    int nerr;
    /* Per value: 1 when every use converts it to f16 or bf16, 2 when some
     * use does not (lower_simt.c: narrow_quotient); NULL until needed. */
    uint8_t *narrow_uses;
    /* Anchor layouts by tile shape (from loads, then their reductions):
     * values with no register operand (iota, splat) take these. */
    struct { int rank; int64_t shape[TILE_MAXRANK]; const Layout *L; } anchors[32];
    int nanchors;
    /* Rematerialisation (simt_values.c, in rows the schedule marks wide):
     * epoch counts barriers emitted so far; depth counts enclosing FOR/IF
     * regions (remat at depth 0 only). The other forms the schedule chose
     * (copy_interior, pv_rows) are read from f->sched where they apply. */
    int epoch, depth;
    /* Products feed products (attention): MMA warp grids are wm x 1 (lower_chain.c). */
    bool mma_rows_only;
    /* Register renumberings already worked out (lower_chain.c). */
    struct CgRenumber *renum;
    /* Two warp groups taking turns at the tensor cores (lower_chain.c):
     * the first and second DOT of each such loop body. */
    struct { const Op *dot[2]; } turns[8];
    int nturns;
    /* Decoupled turns (lower_chain.c), per loop: the shared buffers that
     * group 0 (K, read by the first product) and group 1 (V, read by the
     * second) fill alone, the loop's top barrier (which becomes group 1's
     * sync on turn barrier 1), the loop and its products. */
    struct { ValId buf[2]; const Op *bar, *loop, *dot[2]; } split[8];
    int nsplit;
    /* After such a loop the two groups go on apart: each meets only its own
     * warps (cg_chain_group_barrier lowers the loop's drain so), and a layout
     * conversion whose rows stay inside each group uses its group's barrier
     * (xfer_groups, lower_xfer.c) instead of the block's. */
    bool groups_apart, xfer_groups;
    struct CgDebug *dbg;        /* line information (debug_loc.c); NULL: none */
    /* Warp-specialized kernels (lower_ws.c): the kernel's plan (NULL: no
     * roles), and the role being lowered: its named barrier and threads
     * (role_threads 0: not in a role, barriers meet the whole block) and
     * whether this thread leads it (i1: the role's thread 0). */
    struct CgWs *ws;
    int role_bar, role_threads;
    LLVMValueRef role_leader;
    bool role_lone;   /* the role runs on its first warp, synced after each wait (lower_ws.c role_leader_only) */
    /* Tensor memory (sm100/tcgen05.c): the shared word holding its address
     * and the columns allocated (0: none). */
    LLVMValueRef tmem_word;
    int tmem_cols;
} Cg;

/* Bytes of a swizzle panel (32, 64, 128) of a SwizzleMode; 0: no XOR swizzle. */
static inline int cg_swz_width(int swz)
{
    return swz == SWZ_32B ? 32 : swz == SWZ_64B ? 64 : swz == SWZ_128B ? 128 : 0;
}

/* ---- lower_ws.c: warp-specialized kernels (roles, barrier rings, TMA) ---- */
/* Before the signature: finds the kernel's roles, rings and tensor maps
 * (Cg.ws; NULL without roles). Returns errors. */
int cg_ws_plan(Cg *cg, Func *f);
int cg_ws_nwarps(const Cg *cg);           /* every role's warps (0: no roles) */
int cg_ws_blocks(const Cg *cg);           /* the roles' blocks an SM (0: no roles) */
int cg_ws_nparams(const Cg *cg);          /* hidden tensor-map params after the dims */
LLVMTypeRef cg_ws_param_type(Cg *cg);
void cg_ws_bind(Cg *cg, unsigned first);  /* the hidden params start at param index `first` */
void cg_ws_meta(Cg *cg, StrBuf *out);     /* their `tmap` records */
int cg_lower_ws(Cg *cg, Op *op);
/* Tiles of an asynchronous product's shape (masks, splats, row vectors)
 * default to its accumulator layout and its row slice. */
void cg_ws_anchors(Cg *cg, Func *f);
int cg_lower_ws_op(Cg *cg, Op *op);       /* NAMED_BAR, MBAR_*, TMA_LOAD */
int cg_ws_tma_store(Cg *cg, Op *op);      /* a role's staged STORE as one TMA store: -1 not one, 0 done, 1 error */
/* The 8-byte mbarrier ring[slot] (ptr addrspace(3)). */
LLVMValueRef cg_ring_slot(Cg *cg, ValId ring, ValId slot);
/* The role's leader as an i1 (its thread 0; the block's outside roles). */
LLVMValueRef cg_role_lead(Cg *cg);
/* A block only the threads with cond run: cg_lead_begin branches into it
 * and returns the block after it, which cg_lead_end closes it into. */
LLVMBasicBlockRef cg_lead_begin(Cg *cg, LLVMValueRef cond);
void cg_lead_end(Cg *cg, LLVMBasicBlockRef after);
/* Offset in dynamic shared memory for a ring of `bytes` (lower_async.c). */
int64_t cg_smem_place_ring(Cg *cg, Op *op, int64_t bytes);

/* An inline-asm call with side effects and a memory clobber (sm90/hooks.c);
 * ret NULL: void; at most 8 args. */
LLVMValueRef cg_asm_call(Cg *cg, LLVMTypeRef ret, const char *code, const char *cons, LLVMValueRef *args, int n);

/* The 32-bit .shared address of a ptr addrspace(3) (sm90/hooks.c). */
LLVMValueRef cg_saddr(Cg *cg, LLVMValueRef p);

/* ---- sm100/tcgen05.c: tensor memory and tcgen05 products ---- */
/* TMEM_ALLOC, TC_MMA, TC_COMMIT, TMEM_LOAD, TMEM_STORE. */
int cg_lower_tc_op(Cg *cg, Op *op);
/* At the end of each role: a block barrier of all `threads` (every role's
 * end meets it), then, in the role that `frees` (warp 0's), warp 0 frees
 * tensor memory (nothing without a TMEM_ALLOC). */
void cg_tmem_release(Cg *cg, int threads, bool frees);
/* The layout of a TMEM_LOAD result [m, n] over nwarps warps (a row a
 * thread: warp w, lane l hold row 32 w + l, all n columns in registers). */
Layout layout_tmem_rows(int64_t m, int64_t n, int nwarps);

/* ---- sm90/wgmma.c: asynchronous products ---- */
/* Shared-memory matrix descriptors (wgmma's; tcgen05 adds its version bit
 * through extra): does the view take one (a 32/64/128B swizzle, 16-bit
 * elements, whole panels, rows in groups of 8)? cg_desc_a: the K-major
 * tile [rows, K] at base from row row0, k16 step kk; cg_desc_b: the B
 * operand at k16 step kk, MN-major when stored [K, N], else K-major. */
bool cg_desc_ok(const SmemView *sv);
LLVMValueRef cg_desc_a(Cg *cg, LLVMValueRef base, const SmemView *sa, int64_t row0, int64_t kk, uint64_t extra);
LLVMValueRef cg_desc_b(Cg *cg, LLVMValueRef base, const SmemView *sb, int64_t kk, uint64_t extra);
int cg_lower_dot_async(Cg *cg, Op *op);
int cg_lower_dot_wait(Cg *cg, Op *op);
const Layout *cg_wgmma_acc_layout(Cg *cg, int64_t m, int64_t n);

/* ---- debug_loc.c: line information (-lineinfo, -g) ---- */
typedef struct CgDebug CgDebug;
/* level: tilec_debug_info (0 none, 1 directives, 2 line tables); dir
 * completes a relative source name. */
void cg_debug_begin(Cg *cg, const char *source, const char *dir, int level);
void cg_debug_kernel(Cg *cg, const Func *f);   /* after cg->fn is made */
void cg_debug_loc(Cg *cg, Loc loc);            /* before an op is lowered */
void cg_debug_kernel_end(Cg *cg);
void cg_debug_end(Cg *cg);                     /* before the module is verified */
void cg_debug_drop(Cg *cg);                    /* unfinished: released unwinding (lib/alloc.h) */

/* ---- helpers (codegen.c) ---- */
LLVMTypeRef cg_type(Cg *cg, DType dt);            /* register type of a dtype */
LLVMTypeRef cg_mem_type(Cg *cg, DType dt);        /* in-memory type (bool -> i8) */
LLVMValueRef cg_call(Cg *cg, const char *name, LLVMTypeRef ret, LLVMValueRef *args, int n);
LLVMValueRef cg_call1(Cg *cg, const char *name, LLVMTypeRef ret, LLVMValueRef x);
/* v with nuw and nsw set when it is an add, sub, mul or shl instruction (a
 * folded constant is returned as it is): for index arithmetic on small
 * non-negative values, which then stays foldable into address offsets. */
LLVMValueRef cg_nowrap(LLVMValueRef v);
/* v with the `afn` flag set when it is a float instruction or call: the
 * NVPTX backend then lowers llvm.tanh / llvm.sin / llvm.cos / fdiv to the
 * MUFU approximations (tanh.approx, sin.approx, cos.approx, div.approx). */
LLVMValueRef cg_approx(LLVMValueRef v);
LLVMValueRef cg_i32(Cg *cg, int64_t v);
LLVMValueRef cg_i64(Cg *cg, int64_t v);
LLVMBasicBlockRef cg_new_block(Cg *cg, const char *name);
/* Shared-memory scratch of at least `bytes`, as a ptr addrspace(3). */
LLVMValueRef cg_smem(Cg *cg, int64_t bytes);
/* tid.x through an opaque inline-asm move (not merged with earlier uses). */
LLVMValueRef cg_opaque_tid(Cg *cg);
/* Sets cg->lane and cg->warp from a thread index (tid.x, or an opaque copy). */
void cg_thread_ids(Cg *cg, LLVMValueRef tid);
/* The layout a tile of this type gets when nothing else decides: the
 * anchor of its shape if any, else the coalesced blocked layout. */
const Layout *cg_default_layout(Cg *cg, const Type *t, bool contiguous);
Layout *cg_layout_dup(Cg *cg, Layout l);
void cg_find_anchors(Cg *cg, Func *f);
/* The anchors of the loads (and their reductions) in block b for cg->nwarps
 * warps, replacing those of the same shapes (a role's own warps). */
void cg_block_anchors(Cg *cg, Block *b);
/* Sets (or replaces) the anchor layout of a tile shape (lower_chain.c). */
void cg_set_anchor(Cg *cg, int rank, const int64_t *shape, const Layout *L);

/* ---- lower_simt.c, simt_values.c, simt_control.c, simt_sched.c ---- */
int cg_lower_block(Cg *cg, Block *blk);
/* The distinct values of v[0..n) in uniq (at most CG_MAX_REPEATED, and at
 * most n / 4: registers of a broadcast row vector) with idx[r] the index of
 * v[r]; returns their count, 0 if v does not repeat that few values. */
#define CG_MAX_REPEATED 16
int cg_repeated_values(LLVMValueRef *v, int n, LLVMValueRef *uniq, int *idx);
/* Registers of v in layout L (converting / materialising as needed). */
LLVMValueRef *cg_materialize(Cg *cg, const TileVal *v, const Type *t, const Layout *L, Loc loc);
/* Logical coordinate (i32) of register r along logical dim `axis` for this thread. */
LLVMValueRef cg_coord(Cg *cg, const Layout *L, int r, int axis);
int64_t cg_reg_offset(const Layout *L, int r, int p);   /* the constant part of register r's coordinate along p */
/* Is the kernel being lowered SIMT ("tilec.simt": no tensor-core products)? */
bool cg_simt_kernel(const Cg *cg);
/* i1: is this thread's register r the primary owner of its element? */
LLVMValueRef cg_primary(Cg *cg, const Layout *L, int r);
LLVMValueRef cg_convert(Cg *cg, LLVMValueRef v, DType from, DType to);
/* The f16 bits (i16) of an f8e4m3 / f8e5m2 value given as its i8 bits (exact). */
LLVMValueRef cg_f8_to_f16_bits(Cg *cg, LLVMValueRef byte, DType from);
/* After optimisation: pure values of a SIMT kernel move to their first use. */
void cg_schedule_simt(LLVMContextRef ctx, LLVMValueRef fn, bool epilogue);

/* ---- codegen.c: one kernel ---- */
void cg_init_types(Cg *cg);                           /* cg->t_* in cg->ctx */
int cg_gen_kernel(Cg *cg, Func *f, StrBuf *meta);     /* errors; metadata appended to meta */

/* ---- inside the SIMT lowering (lower_simt.c, simt_values.c, simt_control.c, simt_math.c) ---- */
/* A float math op (EXP .. ROUND, not POW) on an f32 value; x^y on f32 values. */
LLVMValueRef cg_math_f32(Cg *cg, OpCode code, LLVMValueRef x);
LLVMValueRef cg_exp2_emu_f32(Cg *cg, LLVMValueRef x);   /* exp2 {emu}: tc_exp2_emu's sequence */
LLVMValueRef cg_pow_f32(Cg *cg, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef elem(Cg *cg, Op *op, DType dt, DType rdt, LLVMValueRef *a);
LLVMValueRef *new_regs(Cg *cg, const Layout *L);
bool remat_ok(Cg *cg, Op *op);
LLVMValueRef *iota_cmp(Cg *cg, Op *op, const Layout *L);
LLVMValueRef *guarded_select(Cg *cg, Op *op, const Layout *L);
void set_regs(Cg *cg, ValId v, const Layout *L, LLVMValueRef *r);
int lower_elem(Cg *cg, Op *op);
int lower_const(Cg *cg, Op *op);
int lower_sreg(Cg *cg, Op *op);
int lower_splat(Cg *cg, Op *op);
int lower_iota(Cg *cg, Op *op);
int lower_expand(Cg *cg, Op *op);
int lower_broadcast(Cg *cg, Op *op);
int lower_trans(Cg *cg, Op *op);

/* ---- lower_mem.c, lower_store.c, mem_access.c ---- */
/* Address of element idx[0..rank-1] (i32 coordinates) of tensor `ta` with
 * element type `ety`: base + sum(idx[d] * stride[d]) in i64, innermost
 * stride 1. Shared by global loads/stores and cp.async copies. */
LLVMValueRef cg_tensor_elem_ptr(Cg *cg, const TensorArg *ta, LLVMTypeRef ety, int rank,
                                LLVMValueRef *idx);
/* 16 bytes of the module (ptr addrspace(1)) that a masked-out access reads
 * instead of its own address (mem_access.c). */
LLVMValueRef cg_guard_ptr(Cg *cg);
int cg_lower_load(Cg *cg, Op *op);
int cg_lower_store(Cg *cg, Op *op);
int cg_lower_atomic_add(Cg *cg, Op *op);   /* lower_atomic.c */
/* Does the kernel never store to tensor t? */
bool cg_tensor_readonly(Cg *cg, ValId t);

/* ---- inside the memory lowering (lower_mem.c, lower_store.c, mem_access.c,
 * mem_prefetch.c): a LOAD/STORE window access and the functions they share ---- */
typedef struct Access {
    Op *op;
    const Type *tt;                 /* tensor type */
    TensorArg *ta;
    int rank;                       /* tensor rank */
    int tdim[TILE_MAXRANK];         /* tile dim k -> tensor dim */
    int ntile;
    LLVMValueRef off[TENSOR_MAXRANK];
    unsigned mask;
    DType dt;
    LLVMTypeRef mty;                /* in-memory element type */
    bool readonly;                  /* the kernel never stores to this tensor */
    bool dead_tail;                 /* lanes past the last dim are never observed (dead_tail) */
} Access;

typedef void (*ArmFn)(Cg *cg, void *ctx, int arm, LLVMValueRef *out);

typedef struct GroupLoop {
    int ng;                          /* groups (vectors) in the tile */
    int vec;
    LLVMTypeRef wt;                  /* a group: vector of vec memory elements */
    LLVMValueRef *p, *i, *rows;      /* per group: address of element 0, its last index, row predicate */
    LLVMBasicBlockRef head;
    LLVMValueRef e;                  /* iteration: element within the group (the phi) */
    LLVMValueRef eb;                 /* the same, as the body uses it (opaque copy) */
    int *j0;                         /* per group: the group whose row it shares (its own index: none) */
    int64_t *dcol;                   /* and the column distance to that group */
    LLVMValueRef *pe;                /* per group j0: p[j0] + the element index, this iteration */
    LLVMValueRef *ie;                /* per group j0: i[j0] + the element index, this iteration */
} GroupLoop;

int access_init(Cg *cg, Op *op, Access *ac, int ntile);
int access_init_write(Cg *cg, Op *op, Access *ac, const Type **vt, const TileVal **v);
LLVMValueRef scalar_write(Cg *cg, const Access *ac, LLVMValueRef *pred);
void words_asm_call(Cg *cg, const char *code, size_t n, const char *cons, size_t c, LLVMValueRef *words, int nw,
                    LLVMValueRef p, LLVMValueRef k, LLVMValueRef flag);
bool last_contiguous(const Access *ac);
int access_vec(const Access *ac, const Layout *L);
void reg_index(Cg *cg, const Access *ac, const Layout *L, int r, LLVMValueRef *idx);
LLVMValueRef elem_addr(Cg *cg, const Access *ac, LLVMValueRef *idx);
LLVMValueRef in_bounds_upto(Cg *cg, const Access *ac, LLVMValueRef *idx, int nd);
LLVMValueRef in_bounds(Cg *cg, const Access *ac, LLVMValueRef *idx);
bool last_masked(const Access *ac);
LLVMValueRef last_ok(Cg *cg, const Access *ac, LLVMValueRef *idx, int k);
LLVMValueRef whole_vector(LLVMValueRef *x, int n, LLVMTypeRef vt);
void diamond(Cg *cg, LLVMValueRef c, int n, int group, ArmFn fn, void *ctx, LLVMValueRef *out);
LLVMValueRef vec_ok(Cg *cg, const Access *ac, int vec);
bool is_true(LLVMValueRef v);
LLVMValueRef from_mem(Cg *cg, LLVMValueRef v, DType dt);
LLVMValueRef to_mem(Cg *cg, LLVMValueRef v, DType dt);
LLVMValueRef last_full(Cg *cg, const Access *ac);
LLVMValueRef row_room(Cg *cg, const Access *ac, LLVMValueRef *idx, LLVMValueRef pred);
size_t exact_head(char *code, size_t size, int bits, int vec, int ik, int ia);
size_t exact_cons(char *cons, size_t size, int nw, const char *word, const char *rest);
bool exact_group_ok(const Access *ac, int vec);
void row_dims(Cg *cg, const Access *ac, const Layout *L, int *pr, int *pc);
int row_first(const Layout *L, int vec, int j, int pr, int pc);
LLVMValueRef group_addr(Cg *cg, const Access *ac, const Layout *L, int vec, int j, int j0, int pc,
                        LLVMValueRef *ps, LLVMValueRef *idx, int64_t *dcol);
void group_loop_init(Cg *cg, const Access *ac, const Layout *L, int vec, bool store, GroupLoop *g);
LLVMBasicBlockRef group_loop_open(Cg *cg, GroupLoop *g);
void group_loop_body(Cg *cg, GroupLoop *g);
void group_loop_close(Cg *cg, GroupLoop *g, LLVMBasicBlockRef pre, LLVMValueRef *phis, LLVMValueRef *init,
                      LLVMValueRef *next, int n);
LLVMValueRef group_elem_ptr(Cg *cg, const Access *ac, GroupLoop *g, int j);
LLVMValueRef group_elem_ok(Cg *cg, const Access *ac, GroupLoop *g, int j);
LLVMValueRef group_shift(Cg *cg, const GroupLoop *g, LLVMValueRef w, LLVMValueRef x);
LLVMValueRef group_pack(Cg *cg, const Access *ac, const GroupLoop *g, LLVMValueRef *v);
void report_access(Cg *cg, Op *op, const char *what, const Layout *L, int vec, int tail, bool dead);
bool dead_tail(Cg *cg, const Op *op);
bool prefetch_wanted(Cg *cg, const Access *ac, const Type *rt);
void prefetch_next_wave(Cg *cg, const Access *ac, int64_t elems);
/* L2 prefetch of the rows the next trip of the enclosing loop loads
 * (mem_prefetch.c): true (and done) when the load qualifies. */
bool prefetch_next_trip(Cg *cg, const Access *ac, const Type *rt);

/* ---- lower_xfer.c ---- */
int cg_lower_reduce(Cg *cg, Op *op);
/* A reduction's or scan's combining step: the kind, the dtype it
 * accumulates in (f32 for 16-bit floats) and its LLVM type. */
typedef struct CgRed {
    ReduceKind kind;
    DType acc;
    LLVMTypeRef ty;
} CgRed;
LLVMValueRef cg_red_identity(Cg *cg, const CgRed *rc);   /* 0, 1, -inf / the minimum, +inf / the maximum */
LLVMValueRef cg_red_combine(Cg *cg, const CgRed *rc, LLVMValueRef a, LLVMValueRef b);
/* llvm.nvvm.shfl.sync.MODE (bfly, up, idx) of any value of at most 64 bits,
 * through 32-bit lanes; b the lane mask / delta / source lane, c the clamp
 * operand (31 for bfly and idx, 0 for up). */
LLVMValueRef cg_shfl(Cg *cg, const char *mode, LLVMValueRef v, LLVMValueRef b, int c);
/* i1: is register r of L inside the tile along parent dim p (u_p < the
 * extent: not a wrapped copy)? */
LLVMValueRef cg_primary_along(Cg *cg, const Layout *L, int r, int p);
/* Elements of L's logical shape; the row-major offset (i32) of the
 * element register r of L holds in it (a wrapped copy: its element's). */
int64_t cg_logical_numel(const Layout *L);
LLVMValueRef cg_logical_offset(Cg *cg, const Layout *L, int r);
/* The block's barrier before and after a use of the shared scratch (the
 * warp group's when the rows stay in groups); starts a new epoch. */
void cg_xfer_barrier(Cg *cg);
/* lower_scan.c: SCAN (in-thread, warp shuffles up, warps through shared
 * memory) and PHILOX's per-element random words (lower_simt.c). */
int cg_lower_scan(Cg *cg, Op *op);

/* ---- lower_shape.c ---- */
int cg_lower_shape(Cg *cg, Op *op);     /* SLICE, CONCAT, RESHAPE */
int cg_lower_gather(Cg *cg, Op *op);
int cg_lower_scatter(Cg *cg, Op *op);
int cg_lower_philox(Cg *cg, Op *op);
/* Word w (0..3) of Philox4x32-10 (ir/philox.h) at counter (c0, c1, 0, 0)
 * and key (k0, k1), all i32 (simt_math.c). */
LLVMValueRef cg_philox_word(Cg *cg, LLVMValueRef c0, LLVMValueRef c1, LLVMValueRef k0, LLVMValueRef k1,
                            LLVMValueRef w);
/* Move registers from layout `from` to `to` through shared memory; `perm`
 * (or NULL) maps destination dim k to source dim perm[k] (transpose). */
LLVMValueRef *cg_convert_layout(Cg *cg, LLVMValueRef *regs, const Layout *from, const Layout *to,
                                DType dt, const int *perm);
/* Bytes of shared scratch cg_convert_layout takes for a conversion to `to`. */
int64_t cg_convert_scratch_bytes(const Layout *to, DType dt, const int *perm);

/* ---- lower_async.c ---- */
/* Bytes the kernel's shared buffers need (their offsets + sizes, or a
 * packing of the unplaced ones); 0 if it has none. */
int64_t cg_smem_buffers_end(Cg *cg, Func *f);
int cg_lower_smem_alloc(Cg *cg, Op *op);
int cg_lower_async_copy(Cg *cg, Op *op);
int cg_lower_async_sync(Cg *cg, Op *op);       /* ASYNC_COMMIT, ASYNC_WAIT, BARRIER */
int cg_lower_smem_load(Cg *cg, Op *op);
/* Is this SMEM_LOAD only a view of its slot for products (no thread reads
 * shared memory for it)? */
bool cg_smem_load_is_view(Func *f, const Op *op);
/* Is op an SMEM_LOAD whose threads read their slot into registers (not a
 * view)? Such a read takes and anchors layouts as a global load does. */
bool cg_smem_load_to_regs(Func *f, const Op *op);
int cg_lower_smem_store(Cg *cg, Op *op);
/* i32 byte offset of (row, byte b of the row) in a shared tile: row-major,
 * padded, or the CUTLASS Swizzle<B,4,3> on [rows x W] column panels. */
LLVMValueRef cg_smem_offset(Cg *cg, const SmemView *sv, LLVMValueRef row, LLVMValueRef b);
LLVMValueRef cg_smem_ptr(Cg *cg, const SmemView *sv, LLVMValueRef row, LLVMValueRef b);
/* Read a shared tile into registers of layout L / write registers into it. */
LLVMValueRef *cg_smem_read(Cg *cg, const SmemView *sv, DType dt, const Layout *L);
void cg_smem_write(Cg *cg, const SmemView *sv, DType dt, const Layout *L, LLVMValueRef *regs);

/* ---- lower_mma.c ---- */
int cg_lower_dot(Cg *cg, Op *op);
/* The mma.sync accumulator layout of an [m, n] result (the warp grid the
 * kernel's products use), or NULL when m or n is not a multiple of 16. */
const Layout *cg_mma_acc_layout(Cg *cg, int64_t m, int64_t n);
/* Operands i (stage[i]) of DOT op written to a shared scratch as
 * row-major [rows, cols] tiles of dtype `to` (rows padded by 16 bytes),
 * converted from their own dtype, between two barriers; their views (NULL
 * where not staged). `what` names the reader for the report. */
const SmemView **cg_dot_stage(Cg *cg, Op *op, const bool stage[2], DType to, const char *what);
/* lower_dot_simt.c: a DOT of the simt family (or of none, where mma.sync
 * does not take it): each thread accumulates its own elements. */
int cg_lower_dot_simt(Cg *cg, Op *op);
int cg_lower_trans_view(Cg *cg, Op *op);        /* TRANS of a shared tile: a transposed view */
/* The accumulator layout of the DOT that yields carried value i of FOR op, or NULL. */
const Layout *cg_mma_carried_layout(Cg *cg, Op *forop, int i);
/* mma_store.c: before a STORE of an accumulator-layout tile, move it to
 * the coalesced layout (16-byte stores) through shared memory. */
void cg_mma_prepare_store(Cg *cg, Op *op);

/* DOT ops in b and its nested regions (lower_async.c). */
int cg_count_dots(Func *f, Block *b);

/* ---- lower_chain.c (products that feed products: the FlashAttention-2 rule) ---- */
void cg_chain_acc_warps(const Cg *cg, int64_t m, int *wm, int *wn);
/* Accumulator shapes and their row vectors default to the MMA layouts. */
void cg_chain_anchors(Cg *cg, Func *f);
/* A layout conversion that moves no data (each thread already holds what
 * it needs), or NULL. */
LLVMValueRef *cg_chain_renumber(Cg *cg, LLVMValueRef *regs, const Layout *from, const Layout *to);
/* `acc * broadcast(row factors)` with acc loop-carried (*x: acc's operand)? */
bool cg_chain_rescale(Cg *cg, Op *op, int *x);
/* x * s, skipped by the whole warp when all its factors are 1; NULL when s
 * does not repeat a few factors. */
LLVMValueRef *cg_chain_scale_or_skip(Cg *cg, LLVMValueRef *x, LLVMValueRef *s, int n);
/* Find the loops whose bodies take turns (at kernel start). */
void cg_chain_turns(Cg *cg, Func *f);
/* The named barriers of a turn-taking loop's DOT, before (after = false)
 * or after its products; nothing for other DOTs. */
void cg_chain_turn(Cg *cg, const Op *dot, bool after);
/* i1: this thread's warp is in warp group g (0: the first half of the
 * block's warps, 1: the second). */
LLVMValueRef cg_chain_in_group(Cg *cg, int g);
/* Decoupled turns: the group (0, 1) that alone issues async copy `op`, or
 * -1 (every thread). */
int cg_chain_copy_group(Cg *cg, const Op *op);   /* 0/1: that group alone; 2: each its own rows; -1 */
/* Decoupled turns: a loop's top barrier, which becomes group 1's sync on
 * turn barrier 1 (true: emitted), else false. */
bool cg_chain_group_barrier(Cg *cg, const Op *op);
/* Each warp group's warps meet on its own named barrier (4 + group). */
void cg_chain_group_sync(Cg *cg);
/* Decoupled turns: before such a loop, every thread waits for its copies
 * and the block meets. */
void cg_chain_loop_entry(Cg *cg, const Op *forop);

/* ---- fp_contract.c ---- */
/* Mark every fadd/fsub/fmul `contract` (fusable into an fma). */
void cg_allow_contract(LLVMModuleRef mod);

#endif
