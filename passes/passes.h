/* passes.h - the pass pipeline: one ordered table (pipeline.c), the verifier
 * between passes, --print-after, --time-passes.
 *
 * Every pass is `int pass_NAME(Module *, PassCtx *)`, returns the number of
 * errors it reported (0 = success), and its file opens with what it needs
 * and what it guarantees; the same one-line summary feeds `tilec --help`.
 * Analyses live apart from the thin pass that writes their result.
 */
#ifndef TILEC_PASSES_H
#define TILEC_PASSES_H

#include "../ir/ir.h"
#include "../target/target.h"

/* The typed options a user may set (options.c; `tilec --help` lists them). */
typedef struct PassOptions {
    int64_t smem_per_block;    /* target.smem-per-block: bytes, 0 = the target's own */
    int64_t sms;               /* target.sms: the device's SMs, 0 = not known */
    int64_t lazy_rescale;      /* lazy_rescale.threshold: log2 units, 0 = off, -1 (unset) = the pass decides */
    int64_t exp2_emu;          /* exp2_emu.every: one 8-column group in K, 0 = off, -1 (unset) = the pass decides */
    int64_t tile_candidate;    /* tiles.candidate: which of the tile choice's candidates `= auto` params
                                  take (autotuning), -1 (unset) = its pick, candidate 0 */
    int64_t tf32;              /* mma_select.tf32: 1 = f32 products on tf32 tensor cores, 0 (unset) = exact */
    int64_t persistent;        /* warp_specialize.persistent: 0 = one tile a block, 1 / -1 (unset) = persistent */
} PassOptions;

/* Sizes of named dims the kernel will be launched with (tilec_options.dims,
 * `--dim N=4096`): the launch pass and the tile choice read them; the code
 * stays correct for every size. */
enum { PASS_MAX_DIMS = 16 };
typedef struct PassDims {
    const char *name[PASS_MAX_DIMS]; size_t len[PASS_MAX_DIMS];
    int64_t value[PASS_MAX_DIMS];
    int n;
} PassDims;
/* Parse "NAME=VALUE,..." (VALUE 1..2^31-1) into *out. 0 on success; else 1
 * and a one-line message in err. The names point into list. */
int pass_dims_parse(const char *list, PassDims *out, StrBuf *err);
/* The size given for dim `idx` of f (its name), or 0 when none was. */
int64_t pass_dim_size(const PassDims *d, const Func *f, int idx);

/* Parse "NAME=VALUE,..." into *out (zeroed first). 0 on success; else 1
 * and a one-line message in err. */
int pass_options_parse(const char *list, PassOptions *out, StrBuf *err);
/* The options, in one table like the passes' (options.c; --help lists it). */
typedef struct PassOptionInfo {
    const char *name;          /* "target.smem-per-block" */
    const char *type;          /* "bytes", "int" */
    int64_t min, max;          /* accepted range */
    int64_t unset;             /* the value when not given (0, or -1: the compiler decides) */
    size_t offset;             /* int64_t field of PassOptions */
    const char *help;
} PassOptionInfo;
extern const PassOptionInfo tc_pass_options[];
extern const int tc_npass_options;

typedef struct PassCtx {
    Diag *diag;
    const TargetInfo *target;  /* what the arch has (NULL: sm_86's limits) */
    int64_t smem_per_block;    /* option target.smem-per-block: shared memory a block may use
                                  on the device the PTX runs on; 0 = the target's own */
    int64_t sms;               /* option target.sms: the device's SMs; 0 = not known */
    int64_t lazy_rescale;      /* option lazy_rescale.threshold: 0 = the pass decides, -1 = off, T > 0 */
    int64_t exp2_emu;          /* option exp2_emu.every: 0 = the pass decides, -1 = off, K > 0 */
    bool tf32;                 /* option mma_select.tf32: f32 products on mma.sync m16n8k8 .tf32 */
    bool one_tile;             /* option warp_specialize.persistent = 0: roles keep one tile a block */
    const PassDims *dims;      /* sizes given for named dims (NULL: none) */
    int opt_level;
    bool portable;             /* no warp specialization: the fallback variant of a module whose kernels
                                  read through TMA (driver/job.c) */
    /* observability */
    const char *const *print_after; int nprint_after;  /* pass names; "*" = all */
    bool verify_each;          /* run the verifier after each pass (default on) */
    bool time_passes;
    bool print_locs;
    StrBuf *dump;              /* where --print-after output goes */
    StrBuf *timing;            /* where --time-passes output goes */
    StrBuf *remarks;           /* decisions passes explain (the report) */
    const char *only;          /* comma-separated passes to run (table order); NULL = all */
    /* set by passes_run around each pass (NULL when a pass is called directly) */
    const char *cur_pass;      /* the running pass's name */
    StrBuf *notes;             /* its decisions, printed as // comments before its --print-after dump */
} PassCtx;

typedef int (*PassFn)(Module *m, PassCtx *ctx);

typedef struct PassInfo {
    const char *name;          /* --print-after=NAME */
    PassFn fn;
    const char *summary;       /* one line for --help */
} PassInfo;

/* ORDER PASS: the pipeline, in order (pipeline.c). */
extern const PassInfo tc_pass_table[];
extern const int tc_npasses;
const PassInfo *pass_lookup(const char *name);

/* Run the whole table. Returns the number of errors (0 = success). */
int passes_run(Module *m, PassCtx *ctx);

int pass_launch(Module *m, PassCtx *ctx);         /* launch.c */
int pass_lazy_rescale(Module *m, PassCtx *ctx);  /* lazy_rescale.c */
int pass_canonicalize(Module *m, PassCtx *ctx);   /* canonicalize.c */
int pass_bounds(Module *m, PassCtx *ctx);         /* bounds.c */
int pass_mma_select(Module *m, PassCtx *ctx);     /* mma_select.c */
int pass_exp2_emu(Module *m, PassCtx *ctx);       /* exp2_emu.c */
int pass_mask_split(Module *m, PassCtx *ctx);     /* mask_split.c */
int pass_double_buffer(Module *m, PassCtx *ctx);  /* double_buffer.c */
int pass_warp_specialize(Module *m, PassCtx *ctx); /* warp_specialize.c */
int pass_swizzle(Module *m, PassCtx *ctx);        /* swizzle.c */
int pass_smem_alloc(Module *m, PassCtx *ctx);     /* smem_alloc.c */
int pass_schedule(Module *m, PassCtx *ctx);       /* schedule.c */
int pass_protocol(Module *m, PassCtx *ctx);       /* protocol.c */

/* The schedule pass's decision for one kernel (into *s, the reasons as one
 * line into why); the code generator asks it for a kernel whose IR carries
 * none (a pipeline run without the pass). */
void pass_schedule_kernel(const Func *f, const TargetInfo *t, Schedule *s, StrBuf *why);
/* Warps along M for m accumulator rows: the most, up to max_warps, that
 * split m into whole 16-row blocks (a power of two). */
int pass_rows_warps(int64_t m, int max_warps);

/* What a kernel's products look like (chain.c). */
typedef struct ChainInfo {
    bool chained;              /* some product's A operand comes from a product */
    int64_t rows;              /* the fewest accumulator rows of any product */
    int64_t nfirst, nchain;    /* widest accumulator of a first / a chained product */
    const Op *first;           /* the first product in program order (NULL: none) */
    int64_t first_k, first_n;  /* its reduction (attention's head dim) and columns */
    bool row_mask;             /* a 2-D index tile along the rows (a triangular mask) */
    bool staged;               /* a tile declared shared is stored to a tensor */
    int rows_dim, keys_dim;    /* the named dims (f->dims index) the first product's rows
                                  and columns run along (a load's window); -1: unknown */
} ChainInfo;
void pass_chain_info(const Func *f, ChainInfo *ci);

/* ---- tile sizes for `= auto` params (tiles.c) ---- */
enum { PASS_MAX_AUTO = 8, PASS_MAX_CAND = 6 };
typedef struct TileChoice {
    const char *name[PASS_MAX_AUTO];
    int64_t probe[PASS_MAX_AUTO];   /* the distinct value each was lowered with */
    int64_t value[PASS_MAX_AUTO];   /* the choice */
    int n;
    /* The candidates (autotuning, tilec_candidates_file): the tiles the
     * rule weighed that fit the target, the choice first (cand[0] ==
     * value), each a value per name; distinct. */
    int64_t cand[PASS_MAX_CAND][PASS_MAX_AUTO];
    int ncand;
} TileChoice;
/* Choose tc->value[] from the kernel lowered with the probes (the roles the
 * probes play in its products), ctx's target, device options and dim
 * sizes, and list the candidates (tc->cand). 0 on success, the reasons in
 * why; 1 with the message in why when a param plays no role the choice
 * knows. */
int pass_choose_tiles(const Func *probe, const PassCtx *ctx, TileChoice *tc, StrBuf *why);
/* Shared memory of an attention block: rows x d query, two stages of
 * cols x d keys and values, O's scratch with `scratch`. */
int64_t pass_chain_smem(int64_t rows, int64_t cols, int64_t d, bool scratch);
/* Shared memory an SM of ctx's device has (bytes): target.smem-per-block
 * plus the driver's reservation a block when that option is set, else the
 * target's own. */
int64_t pass_sm_smem(const PassCtx *ctx);
/* A block's share of it when `blocks` run on an SM: pass_sm_smem / blocks
 * less the driver's reservation a block. */
int64_t pass_sm_smem_share(const PassCtx *ctx, int blocks);
/* Whether the launch pass makes a kernel with chained products persistent
 * (one block per SM looping over the tiles) for n query and nk key rows. */
bool pass_chain_persistent(const ChainInfo *ci, const PassCtx *ctx, int64_t n, int64_t nk);

/* ---- warp-specialized roles (warp_specialize.c, warp_specialize_chain.c) ---- */

/* Does ctx's target take warp-specialized roles (wgmma, TMA and
 * setmaxnreg: sm_90a), in this variant (not the portable one)? */
bool pass_target_roles(const PassCtx *ctx);

/* Why the f8e4m3 / f8e5m2 product `dot` of f cannot read both operands
 * K-major from shared memory, as an 8-bit wgmma must (the PTX ISA allows
 * no transpose for operands that are not 16-bit), or NULL when it can: A
 * is not a transpose (stored [M, K]) and B is the transpose of a tile
 * stored [N, K] (`a @ b^T`), both shared tiles. Static text. mma_select
 * and the tile choice both read it. */
const char *pass_f8_kmajor_problem(const Func *f, const Op *dot);
/* Registers a consumer thread of the roles needs for a lone wgmma product
 * of dtype dt over an [m, n] f32 accumulator: the accumulator's share (m n
 * over the consumer warp groups' threads: two groups from 128 rows), an f8
 * product's promotion temporary (n / 2: the code generator sums each row
 * block's 8-bit products apart before adding them in), and the headroom
 * for addresses and the loop. warp_specialize's rule (against the
 * consumers' setmaxnreg budget), which the tile choice reads too. */
int64_t pass_lone_consumer_regs(DType dt, int64_t m, int64_t n);
/* Does that need fit the consumers' setmaxnreg budget (232, or 240 from
 * 208 accumulator registers; 256 for one consumer warp group)? */
bool pass_lone_roles_fit(DType dt, int64_t m, int64_t n);

/* How chained products (attention's s = q @ k^T, o += p @ v) split over
 * consumer warp groups, and what that leaves each consumer thread. */
typedef struct ChainRoles {
    int consumers;             /* consumer warp groups: 3 for 192 rows, 2 from 128 rows (64 each), else 1 */
    int prod_regs, cons_regs;  /* setmaxnreg budgets */
    int blocks;                /* blocks an SM the budgets are for: 2 or 3 for one consumer warp group where
                                  its registers and the SM's shared memory allow, else 1 */
    int64_t s_regs, o_regs, p_regs;  /* f32 registers of S and O, and of P in bf16 pairs, a consumer thread */
    bool pipelined;            /* the second product of trip j - 1 flies during trip j's softmax (P kept a
                                  trip longer: S + O + 2 P leave WS_PIPE_HEADROOM registers; O at least
                                  S: the second product as long as the first) */
} ChainRoles;
/* Whether chained products over `rows` accumulator rows, `cols` key
 * columns and a `d`-wide output take roles on ctx's target: the target
 * has them (pass_target_roles), the rows split into warp groups of a
 * multiple of 64, and S, O and P leave the softmax enough of a consumer's
 * registers. Fills *r (may be NULL); why (may be NULL) gets the reason it
 * does not, from a. The one rule the tile choice, the launch pass and
 * warp_specialize read. */
bool pass_chain_roles(const PassCtx *ctx, int64_t rows, int64_t cols, int64_t d, ChainRoles *r, Arena *a,
                      const char **why);

/* Chained products on tcgen05 (sm_100a: warp_specialize_chain_tc.c): a
 * producer, an mma role and rows / 128 softmax warp groups with S, P and
 * O in tensor memory. */
typedef struct TcChainRoles {
    int softmax;               /* softmax warp groups: rows / 128 */
    int prod_regs, mma_regs, cons_regs;   /* setmaxnreg budgets (all the entry count: no setmaxnreg) */
    bool at_entry;             /* every role keeps the count threads start with */
    int64_t tmem_cols;         /* S, P (16-bit, two a column) and O */
    int64_t peak;              /* a softmax thread's registers at its peak */
} TcChainRoles;
/* Does ctx's target take tcgen05 chains (tcgen05, tensor memory, TMA, not
 * the portable variant)? */
bool pass_target_tc_roles(const PassCtx *ctx);
/* Whether chained tcgen05 products over `rows` rows (a multiple of 128),
 * `cols` key columns and a `d`-wide output fit: S, P and O in 512 columns,
 * the softmax peak in the registers a softmax thread gets. Fills *r (may
 * be NULL); why (may be NULL) gets the reason not, from a. The rule the
 * tile choice and warp_specialize read. */
bool pass_chain_tc_roles(const PassCtx *ctx, int64_t rows, int64_t cols, int64_t d, TcChainRoles *r, Arena *a,
                         const char **why);

/* One decision line (no trailing newline needed): appended to ctx->remarks
 * as "PASS: line" and to ctx->notes (the --print-after comment block).
 * Either may be NULL. (pipeline.c) */
void pass_note(PassCtx *ctx, const char *fmt, ...) TC_PRINTF(2, 3);
/* "file:line:col" of l for a report line (the module's source when l has
 * no file), from a. (pipeline.c) */
const char *pass_loc_str(Arena *a, const Func *f, Loc l);

/* ---- shared-memory planning (smem_plan.c), the analysis behind smem_alloc ---- */

/* Shared memory one block may use (bytes): the option target.smem-per-block
 * when set (at most the largest any target has), else the target's own
 * (sm_86 99 KB, sm_90a / sm_100a 227 KB); a NULL target gets sm_86's. */
/* Can one TMA store take a rows x cols tile of `bits`-bit elements: 16-bit
 * rows of whole 128-byte panels (one box of the 128-byte swizzle each), at
 * most 256 rows (passes/launch.c; codegen's cg_ws_tma_store)? */
bool pass_tma_store_tile(int64_t rows, int64_t cols, int bits);
int64_t pass_smem_limit(const TargetInfo *t, int64_t smem_per_block);
/* The target the passes plan for: t, or sm_86 (the portable default) when
 * none is set. */
const TargetInfo *pass_target(const TargetInfo *t);
/* The target's name for messages ("sm_86" when none is set). */
const char *pass_target_name(const PassCtx *ctx);

/* A buffer's footprint: stages x slot stride, the slot stride being the slot's
 * bytes (rows x (row bytes + pad)) rounded up to the buffer's alignment; a
 * barrier ring (MBAR_ALLOC) takes 8 bytes a slot. */
int64_t pass_smem_slot_stride(const Func *f, const Op *alloc);
int64_t pass_smem_buffer_bytes(const Func *f, const Op *alloc);

typedef struct SmemBuf {
    Op *alloc;                 /* the SMEM_ALLOC or MBAR_ALLOC */
    int64_t start, end;        /* live interval in linear program order (inclusive) */
    int64_t bytes, align;
    int64_t offset;            /* the plan's choice */
    const char *name;          /* "A" (the tensor its copies read) or "buffer #i" */
} SmemBuf;

typedef struct SmemPlan {
    SmemBuf *bufs; int nbufs;  /* in program order */
    int64_t total;             /* bytes of shared memory the plan needs */
} SmemPlan;

/* Liveness intervals of every SMEM_ALLOC and MBAR_ALLOC of f (from the
 * alloc to its last use; a use inside a loop that does not hold the alloc
 * extends the interval over the whole loop), then offsets: first fit by decreasing size, each at
 * its alignment; two buffers share bytes only when their intervals are
 * disjoint and a top-level BARRIER lies between them. Memory from `a`. */
void pass_smem_plan(Func *f, Arena *a, SmemPlan *out);

#endif
