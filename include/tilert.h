/* tilert.h - the public API of libtilert, the tilec kernel runtime.
 *
 * If a function does not appear in this file, it is not a published API.
 *
 * libtilert loads the PTX and kernel metadata that tilec produces and
 * launches kernels through the CUDA Driver API. It depends on libc and on a
 * libcuda.so.1 that it opens with dlopen at tilert_driver_open: a program
 * linked with it runs (and can validate launches) on a machine without CUDA.
 *
 * Conventions:
 *  - Every function returning tilert_status returns TILERT_OK (0) on success.
 *    On failure it records a message that tilert_last_error() returns on the
 *    same thread; the message names the param, the metadata line or the
 *    driver call that failed. Nothing ever aborts or exits.
 *  - Handles are opaque. Every *_open / *_load / *_from_meta has a matching
 *    *_close / *_free; passing NULL to those is a no-op.
 *  - Strings returned by accessors are owned by the handle they came from and
 *    stay valid until that handle is freed. The caller never frees them.
 *  - A tilert_kernel is owned by its tilert_module: it is valid until the
 *    module is freed and is never freed on its own.
 *  - Tensors are DLPack DLTensors (dlpack/dlpack.h); the runtime only reads
 *    them during the call and keeps no pointer to them afterwards.
 *  - Thread safety: a driver, module or kernel may be used for launches from
 *    several threads at once. tilert_module_free must not race with launches.
 *
 * The metadata text format, the kernel ABI and the launch validation rules
 * are documented in docs/runtime.md (and, for the producer, codegen/codegen.h).
 */
#ifndef TILERT_H
#define TILERT_H

#include <stddef.h>
#include <stdint.h>
#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TILERT_VERSION_MAJOR 0
#define TILERT_VERSION_MINOR 1
#define TILERT_VERSION_PATCH 0

/* Limits of one kernel (the metadata parser rejects more). */
#define TILERT_MAX_RANK 8        /* dims of one tensor param */
#define TILERT_MAX_PARAMS 64     /* runtime params of one kernel */
#define TILERT_MAX_DIMS 64       /* named dims of one kernel */
#define TILERT_MAX_TMAPS 16      /* tensor maps (hidden params) of one kernel */
#define TILERT_MAX_TMAP_RANK 5   /* dims of a tensor that a tensor map describes */
#define TILERT_TMAP_BYTES 128    /* one tensor map (CUtensorMap), passed by value */
#define TILERT_MAX_SLOTS (TILERT_MAX_PARAMS * TILERT_MAX_RANK + TILERT_MAX_DIMS + TILERT_MAX_TMAPS)

typedef enum tilert_status {
    TILERT_OK = 0,
    TILERT_ERR_USAGE = 1,      /* NULL argument, out-of-range index, module not loadable */
    TILERT_ERR_NOMEM = 2,
    TILERT_ERR_NO_DRIVER = 3,  /* libcuda.so.1 not found or lacks a needed symbol */
    TILERT_ERR_NO_DEVICE = 4,  /* the driver sees no CUDA device */
    TILERT_ERR_META = 5,       /* the metadata text is malformed: the message names the line */
    TILERT_ERR_NOT_FOUND = 6,  /* no kernel of that name in the module */
    TILERT_ERR_ARGS = 7,       /* launch arguments do not match the kernel's metadata */
    TILERT_ERR_JIT = 8,        /* the driver could not load the PTX: the message holds its log */
    TILERT_ERR_CUDA = 9,       /* another driver call failed: the message names it */
    TILERT_ERR_IO = 10         /* a file could not be read */
} tilert_status;

/* The message of the last failed call on this thread ("" if none). Owned by
 * the library (thread-local), valid until the next tilert_ call on this
 * thread. */
const char *tilert_last_error(void);
const char *tilert_status_string(tilert_status s);
const char *tilert_version(void);               /* "0.1.0" */

/* ---- The driver ------------------------------------------------------ */

typedef struct tilert_driver tilert_driver;

/* dlopen libcuda.so.1 and cuInit. Fails with TILERT_ERR_NO_DRIVER ("no CUDA
 * driver: libcuda.so.1 not found") or TILERT_ERR_NO_DEVICE ("no CUDA
 * device"). The caller owns *out and must call tilert_driver_close after
 * freeing every module loaded through it. *out is NULL on failure. */
tilert_status tilert_driver_open(tilert_driver **out);
void tilert_driver_close(tilert_driver *drv);

tilert_status tilert_device_count(tilert_driver *drv, int *count);
/* Compute capability of CUDA device `device` (an ordinal). */
tilert_status tilert_device_capability(tilert_driver *drv, int device, int *major, int *minor);
/* The tilec target for that device (tilert_arch_for_capability of its
 * compute capability), written into buf (NUL-terminated). */
tilert_status tilert_device_arch(tilert_driver *drv, int device, char *buf, size_t buflen);
/* The tilec target for compute capability major.minor, written into buf;
 * no driver needed. The rule: the arch-specific target of exactly that
 * capability (9.0 -> sm_90a, 10.0 -> sm_100a); else the family-portable
 * target of its major version (10.x -> sm_100f); else the newest portable
 * target not newer than the device (8.0 -> sm_80, 8.6/8.7/8.8 -> sm_86,
 * 8.9 -> sm_89, 9.x and 11.x -> sm_90, 12.x and later -> sm_120), whose PTX
 * the driver compiles for any later GPU. TILERT_ERR_USAGE below 8.0.
 * "sm_90" here is the plain target: compile it with
 * tilec_options.family_portable = 1 (-family-portable), since -arch=sm_90
 * alone picks sm_90a; the other names are exact either way. */
tilert_status tilert_arch_for_capability(int major, int minor, char *buf, size_t buflen);
/* Block until all work in the current context is done (cuCtxSynchronize);
 * reports errors from earlier asynchronous launches. */
tilert_status tilert_synchronize(tilert_driver *drv);

/* ---- Modules and kernels --------------------------------------------- */

typedef struct tilert_module tilert_module;
typedef struct tilert_kernel tilert_kernel;

/* Parse `meta` (NUL-terminated metadata text) and load `ptx` (NUL-terminated
 * PTX text) into the calling thread's current CUDA context, or, if it has
 * none, the primary context of device 0. The module is loaded again, on
 * demand, into any other context a later launch runs in. Both strings are
 * copied. The caller owns *out and must call tilert_module_free; *out is NULL
 * on failure. A JIT failure is TILERT_ERR_JIT with the driver's error log in
 * the message. */
tilert_status tilert_module_load(tilert_driver *drv, const char *ptx, const char *meta,
                                 tilert_module **out);
/* The same for code already compiled for the device: `size` bytes of a
 * cubin (an ELF image, as `ptxas -arch=sm_90a -o X.cubin X.ptx` writes it
 * for the device's compute capability) or of PTX text. A cubin loads
 * without the driver's JIT: cuModuleLoadDataEx compiles PTX under a lock
 * of the driver's, one module after another in a process, while separate
 * ptxas processes compile in parallel (tilec.Tuned does so with its
 * candidates). The image is copied. TILERT_ERR_JIT when the driver refuses
 * it (a cubin for another GPU, or from a newer CUDA than the driver's). */
tilert_status tilert_module_load_image(tilert_driver *drv, const void *image, size_t size, const char *meta,
                                       tilert_module **out);
/* The same as tilert_module_load, reading the two files. */
tilert_status tilert_module_load_files(tilert_driver *drv, const char *ptx_path,
                                       const char *meta_path, tilert_module **out);
/* Parse metadata alone, without a driver: kernels can be queried and
 * launches validated (tilert_check_args) but not launched. Works on machines
 * without CUDA. The caller owns *out and must call tilert_module_free. */
tilert_status tilert_module_from_meta(const char *meta, tilert_module **out);
void tilert_module_free(tilert_module *m);

/* The JIT's info log of the first load (may be ""). Owned by m. */
const char *tilert_module_jit_log(const tilert_module *m);

size_t tilert_module_num_kernels(const tilert_module *m);
/* The i-th kernel in metadata order, NULL if out of range. Owned by m. */
tilert_kernel *tilert_module_kernel_at(const tilert_module *m, size_t i);
/* The kernel called `name`; TILERT_ERR_NOT_FOUND lists the names there are.
 * *out is owned by m. */
tilert_status tilert_module_get_kernel(const tilert_module *m, const char *name,
                                       tilert_kernel **out);

/* ---- Kernel metadata ---------------------------------------------------- */

typedef enum tilert_param_kind {
    TILERT_PARAM_TENSOR = 0,
    TILERT_PARAM_SCALAR = 1
} tilert_param_kind;

typedef struct tilert_param_info {
    const char *name;                  /* owned by the module */
    tilert_param_kind kind;
    const char *dtype;                 /* "bf16", "f32", ... (docs/runtime.md) */
    int rank;                          /* tensors: 1..TILERT_MAX_RANK; scalars: 0 */
    const char *dims[TILERT_MAX_RANK]; /* per dim: the named dim, or NULL if static */
    int64_t extents[TILERT_MAX_RANK];  /* per dim: the static extent, or -1 if named */
    int align;                         /* tensors: required byte alignment of the data */
} tilert_param_info;

const char *tilert_kernel_name(const tilert_kernel *k);   /* owned by the module */
const char *tilert_kernel_arch(const tilert_kernel *k);   /* "sm_90a"; owned by the module */
int tilert_kernel_threads(const tilert_kernel *k);        /* threads per block */
int tilert_kernel_smem(const tilert_kernel *k);           /* dynamic shared memory, bytes */
void tilert_kernel_cluster(const tilert_kernel *k, int cluster[3]);
size_t tilert_kernel_num_params(const tilert_kernel *k);
/* Fills *out for param i; TILERT_ERR_USAGE if i is out of range. */
tilert_status tilert_kernel_param(const tilert_kernel *k, size_t i, tilert_param_info *out);
size_t tilert_kernel_num_dims(const tilert_kernel *k);
const char *tilert_kernel_dim(const tilert_kernel *k, size_t i);  /* NULL if out of range */
/* A tensor map (a `tmap` record, docs/runtime.md): the kernel reads tensor
 * param `param` through a Hopper TMA descriptor that the runtime encodes at
 * launch and passes as a hidden 128-byte parameter after the dims. */
typedef struct tilert_tmap_info {
    size_t param;                          /* index of the tensor param it describes */
    int swizzle;                           /* shared-memory swizzle span, bytes: 0 (none), 32, 64, 128 */
    int rank;                              /* the param's rank, 1..TILERT_MAX_TMAP_RANK */
    unsigned box[TILERT_MAX_TMAP_RANK];    /* box extents in the param's dim order (outermost first) */
} tilert_tmap_info;

/* Tensor maps of the kernel, in ABI order (0 for kernels without). */
size_t tilert_kernel_num_tmaps(const tilert_kernel *k);
/* Fills *out for tensor map i; TILERT_ERR_USAGE if i is out of range. */
tilert_status tilert_kernel_tmap(const tilert_kernel *k, size_t i, tilert_tmap_info *out);
/* The kernel that runs instead of k when a tensor cannot take k's tensor
 * maps or alignment (a `fallback` record), NULL if k has none. Same module,
 * same params and dims, no tensor maps. Owned by the module. */
tilert_kernel *tilert_kernel_fallback(const tilert_kernel *k);
/* Whether the kernel writes param i (its `writes` record, docs/runtime.md):
 * 1 if it stores to tensor param i, 0 if it only reads it (or i is a
 * scalar), -1 if the metadata does not say (no `writes` record: metadata
 * older than it) or i is out of range. tilert_check_args rejects a written
 * tensor that overlaps another tensor argument. */
int tilert_kernel_param_written(const tilert_kernel *k, size_t i);

/* The grid rule as written in the metadata ("cdiv N 1024 ; 1 ; 1"). Owned by the module. */
const char *tilert_kernel_grid_rule(const tilert_kernel *k);
/* Evaluate the grid rule for named-dim values dims[0..ndims) (ABI order).
 * Division or cdiv by zero, a negative result or one over the hardware limit
 * (x < 2^31, y and z < 65536) is TILERT_ERR_ARGS. A 0 in any dim is OK and
 * means an empty launch. */
tilert_status tilert_kernel_grid(const tilert_kernel *k, const int64_t *dims, size_t ndims,
                                 unsigned grid[3]);

/* ---- Launching ----------------------------------------------------------- */

typedef enum tilert_arg_kind {
    TILERT_ARG_TENSOR = 0,     /* u.tensor */
    TILERT_ARG_INT = 1,        /* u.i: for i32/i64/bool params (and float params) */
    TILERT_ARG_FLOAT = 2       /* u.f: for f32/f64 params */
} tilert_arg_kind;

/* One launch argument. Tensors are borrowed for the duration of the call. */
typedef struct tilert_arg {
    tilert_arg_kind kind;
    union {
        const DLTensor *tensor;
        int64_t i;
        double f;
    } u;
} tilert_arg;

/* The arguments of one cuTensorMapEncodeTiled call (cuda.h), computed from
 * a tensor without a driver. Arrays run innermost dim first, as the driver
 * takes them; the enum fields hold cuda.h's values. */
typedef struct tilert_tmap_args {
    size_t param;                                       /* the tensor param */
    unsigned rank;                                      /* 1..5; 0: no map (an empty tensor in an
                                                           empty launch): the slot is 128 zero bytes */
    int data_type;                                      /* CUtensorMapDataType */
    uint64_t global_address;                            /* data + byte_offset, 16-byte aligned */
    uint64_t global_dim[TILERT_MAX_TMAP_RANK];          /* extents, 1..2^32 */
    uint64_t global_strides[TILERT_MAX_TMAP_RANK - 1];  /* bytes, [i] = the tensor's dim rank-2-i:
                                                           multiples of 16, < 2^40 */
    uint32_t box_dim[TILERT_MAX_TMAP_RANK];             /* 1..256 */
    uint32_t element_strides[TILERT_MAX_TMAP_RANK];     /* all 1 */
    int interleave;                                     /* CU_TENSOR_MAP_INTERLEAVE_NONE */
    int swizzle;                                        /* CUtensorMapSwizzle: NONE, 32B, 64B, 128B */
    int l2_promotion;                                   /* CU_TENSOR_MAP_L2_PROMOTION_L2_256B */
    int oob_fill;                                       /* CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros */
} tilert_tmap_args;

/* Everything a launch needs, computed from the arguments without a GPU.
 * slot[i] holds the value of kernel-ABI argument i (in its first
 * slot_size[i] bytes, host byte order); slot_offset[i] is its offset in the
 * packed parameter buffer (each argument aligned to its size). A tensor-map
 * slot has slot_size TILERT_TMAP_BYTES and a 64-byte-aligned offset, and
 * slot[i] holds the index j of its tmap[j]: the map itself is encoded from
 * tmap[j] at launch, which needs the driver.
 *
 * `kernel` is the kernel the plan launches: the one checked, or its
 * fallback when a tensor cannot take that kernel's tensor maps or alignment
 * (fallback_reason then says which param broke which rule; "" otherwise).
 * grid, block, smem, cluster and the slots are that kernel's. */
typedef struct tilert_launch_plan {
    unsigned grid[3];
    unsigned block[3];
    unsigned smem;                         /* dynamic shared memory, bytes */
    unsigned cluster[3];
    int device;                            /* the tensors' CUDA device ordinal, -1 if none */
    size_t ndims;
    int64_t dims[TILERT_MAX_DIMS];         /* named-dim values, ABI order */
    size_t nslots;
    uint64_t slot[TILERT_MAX_SLOTS];
    uint8_t slot_size[TILERT_MAX_SLOTS];
    uint32_t slot_offset[TILERT_MAX_SLOTS];
    size_t param_bytes;                    /* size of the packed parameter buffer */
    const tilert_kernel *kernel;           /* the kernel that runs: the one checked or its fallback */
    char fallback_reason[256];             /* why the fallback runs, "" when the kernel itself does */
    size_t ntmaps;
    tilert_tmap_args tmap[TILERT_MAX_TMAPS];   /* per tensor map of `kernel`, ABI order */
} tilert_launch_plan;

/* Validate args[0..nargs) against k's metadata and, if they fit, fill *plan
 * (may be NULL). Touches no GPU and works on modules from
 * tilert_module_from_meta. On mismatch returns TILERT_ERR_ARGS and writes a
 * message naming the param into err[0..errlen) (err may be NULL) and into
 * tilert_last_error(). The rules are in docs/runtime.md. When a tensor
 * breaks one of k's tensor-map or alignment rules and k has a fallback
 * that accepts the arguments, the plan is the fallback's (plan->kernel,
 * plan->fallback_reason) and the status TILERT_OK. */
tilert_status tilert_check_args(const tilert_kernel *k, const tilert_arg *args, size_t nargs,
                                char *err, size_t errlen, tilert_launch_plan *plan);

/* Validate (tilert_check_args), then launch k on `stream` (a CUstream; NULL
 * = the legacy default stream) in the calling thread's current CUDA context,
 * or, if it has none, the primary context of the tensors' device (device 0
 * without tensors). Also checks that every tensor's memory belongs to that
 * device. The launch is asynchronous: errors inside the kernel surface at a
 * later synchronization. A grid with a 0 dim launches nothing and returns
 * TILERT_OK. Each kernel keeps the plans of its recent argument signatures
 * and the device memory ranges the driver vouched for (docs/runtime.md,
 * "Launch cost"), so that a repeated launch re-checks only its addresses
 * and scalars; the outcome is tilert_check_args's either way. */
tilert_status tilert_launch(tilert_kernel *k, const tilert_arg *args, size_t nargs,
                            void *stream);
/* A kernel with tensor maps: tilert_launch encodes each map with the
 * driver's cuTensorMapEncodeTiled (reusing the maps of recent launches with
 * the same tensors) and passes it by value. It launches k's fallback
 * instead, never silently, when a tensor breaks a tensor-map rule, when the
 * driver lacks cuTensorMapEncodeTiled or when it rejects the map; without a
 * fallback those are TILERT_ERR_ARGS, TILERT_ERR_NO_DRIVER and
 * TILERT_ERR_CUDA, each naming the param and the rule. */

/* The kernel that the latest successful tilert_launch(k, ...) ran, from any
 * thread: k itself or its fallback (also when the grid was empty and nothing
 * ran); NULL before the first. The reason the fallback ran, or "", is
 * copied into reason[0..len) (reason may be NULL). Owned by the module. */
tilert_kernel *tilert_kernel_last_variant(const tilert_kernel *k, char *reason, size_t len);

/* ---- Autotuning (docs/runtime.md, "Autotuning") ----------------------------
 * A computation compiled several ways (the tile choice's candidates:
 * tilec_candidates_file, tilec --candidates) is timed on the real arguments
 * and the fastest kept. The candidates are launched many times on `args`:
 * that is right for kernels whose outputs depend on their inputs alone
 * (GEMM's C, attention's O and LSE: every launch writes the same values);
 * a kernel that reads what it writes (an atomic_add into an output, an
 * accumulation in place) must be tuned on copies. */

#define TILERT_TUNE_MAX 16       /* candidates of one tilert_tune call */

typedef struct tilert_tune_options {
    size_t struct_size;          /* set by tilert_tune_options_init: sizeof(tilert_tune_options) */
    int warmup;                  /* launches of each candidate before any timing, 1..1000 (default
                                    2; the first loads its module into the context); the last is
                                    timed alone as the estimate that sets the launches per round */
    int rounds;                  /* 1..64 (default 5): each round times every candidate once, the
                                    candidates' order rotated by one each round */
    double budget_ms;            /* GPU time of the timed launches, all rounds and candidates
                                    together, from the estimates (default 300) */
    int max_launches;            /* at most this many launches of a candidate a round (default 200);
                                    at least 1 */
} tilert_tune_options;
void tilert_tune_options_init(tilert_tune_options *o);

typedef struct tilert_tune_result {
    size_t best;                       /* the fastest candidate: the smallest ms[] */
    size_t n;                          /* candidates timed */
    double ms[TILERT_TUNE_MAX];        /* per candidate: the median over the rounds of its mean time
                                          a launch, milliseconds (CUDA events) */
    double min_ms[TILERT_TUNE_MAX];    /* per candidate: its fastest round's mean time a launch */
    int launches;                      /* launches of each candidate in each round */
    int rounds;
    double wall_ms;                    /* the call's wall-clock time, the warm-up (module loads)
                                          included */
} tilert_tune_result;

/* Time kernels[0..n) (1 <= n <= TILERT_TUNE_MAX: candidates of one
 * computation, with the same params and dims; each checked against args
 * first, an error naming the candidate) on args, on `stream` (NULL: the
 * legacy default stream), as described at tilert_tune_options, and fill
 * *out. opts NULL: the defaults. Blocks until the timed launches are done;
 * the arguments' outputs then hold some candidate's results. The launches
 * run as tilert_launch runs them (the current context, else the tensors'
 * device's primary context); the events are made and destroyed in that
 * context. TILERT_ERR_NO_DRIVER when the driver lacks the event calls. */
tilert_status tilert_tune(tilert_kernel *const *kernels, size_t n, const tilert_arg *args, size_t nargs,
                          void *stream, const tilert_tune_options *opts, tilert_tune_result *out);

/* The shape class of a launch of k with args (checked as tilert_check_args
 * does; no GPU needed): each named dim of k in ABI order, its size rounded
 * up to a power of two (0 and 1 stay), as "M=4096,N=4096,K=1024" into
 * buf[0..len). Launches of one class share a tuning decision, and the
 * candidates are compiled for the class's sizes. TILERT_ERR_USAGE when
 * buf is too small. */
tilert_status tilert_shape_class(const tilert_kernel *k, const tilert_arg *args, size_t nargs, char *buf,
                                 size_t len);

/* The name of CUDA device `device` ("NVIDIA H200"), into buf (NUL-terminated). */
tilert_status tilert_device_name(tilert_driver *drv, int device, char *buf, size_t len);

/* Tuning decisions kept in folder `dir` (docs/cache.md, "Tuning
 * decisions"; the compile cache's folder, whose clearing removes them):
 * one file per key, DIR/<16 hex digits>.tune, written to a temporary file
 * and renamed into place. key and value are one line of text each (the
 * caller's: the Python package's key names the device, the source, the
 * options, the candidates and the shape class). tilert_tune_load copies
 * the value stored for key into value[0..len): TILERT_ERR_NOT_FOUND when
 * there is none (or the entry is damaged, or another key's),
 * TILERT_ERR_USAGE when len is too small. tilert_tune_store creates the
 * folder when missing; TILERT_ERR_IO when it cannot write. */
tilert_status tilert_tune_load(const char *dir, const char *key, char *value, size_t len);
tilert_status tilert_tune_store(const char *dir, const char *key, const char *value);

#ifdef __cplusplus
}
#endif
#endif
