/* rt.h - internals of libtilert shared by its files (one section per file).
 *
 * Nothing here is public API: include/tilert.h is. Functions declared here
 * carry the tilert_ prefix but are hidden from the shared library (built
 * with -fvisibility=hidden; public functions are marked TILERT_API).
 */
#ifndef TILERT_RT_H
#define TILERT_RT_H

#include <stdarg.h>
#include <stdbool.h>
#include <pthread.h>
#include "tilert.h"

#define TILERT_API __attribute__((visibility("default")))

/* ---- error.c: the thread-local last-error message ---------------------- */

/* Format a message into the thread-local buffer; returns st. */
tilert_status tilert_fail(tilert_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tilert_clear_error(void);

/* ---- pool.c: one allocation pool per module, freed in one call ---------- */

typedef struct RtChunk RtChunk;
typedef struct RtPool {
    RtChunk *head;
    bool failed;             /* an allocation returned NULL */
} RtPool;

void *tilert_pool_alloc(RtPool *p, size_t n);          /* zeroed, 16-byte aligned */
char *tilert_pool_strndup(RtPool *p, const char *s, size_t n);
void tilert_pool_free(RtPool *p);

/* ---- dtype table (ORDER DTYPE: ir/dtypes.h) ------------------------------ */

typedef enum RtDtype {
#define DTYPE(E, S, B, C) RT_##E,
#include "../ir/dtypes.h"
#undef DTYPE
    RT_NDTYPES
} RtDtype;

int tilert_dtype_parse(const char *s);                  /* RtDtype, or -1 */
const char *tilert_dtype_name(int dt);
int tilert_dtype_bits(int dt);

/* ---- meta.c: the metadata parser ---------------------------------------- */

/* Grid rules are stored as RPN programs. */
typedef enum RpnOp {
    RPN_NUM, RPN_DIM, RPN_ADD, RPN_SUB, RPN_MUL, RPN_DIV, RPN_MOD, RPN_CDIV, RPN_MIN, RPN_MAX,
    RPN_DIVISOR, RPN_SMS
} RpnOp;
typedef struct RpnTok {
    RpnOp op;
    int64_t v;               /* RPN_NUM: the value; RPN_DIM: the dim index */
} RpnTok;

typedef struct RtParam {
    const char *name;
    tilert_param_kind kind;
    int dtype;               /* RtDtype */
    int rank;
    int dimref[TILERT_MAX_RANK];      /* index into the kernel's dims, or -1 if static */
    int64_t extent[TILERT_MAX_RANK];  /* static extent, or -1 */
    int align;
    bool written;            /* named by the kernel's `writes` record */
    int line;
} RtParam;

/* A `tmap` record: a tensor map of param `param`. */
typedef struct RtTmap {
    int param;               /* index into the kernel's params: a tensor of rank <= 5 */
    int swizzle;             /* span in bytes: 0 (none), 32, 64, 128 */
    int box[TILERT_MAX_TMAP_RANK];   /* the param's dim order (outermost first) */
    int line;
} RtTmap;

typedef struct RtTmapCache RtTmapCache;   /* tmap.c */
typedef struct RtSigCache RtSigCache;     /* sigcache.c */

struct tilert_kernel {
    tilert_module *mod;
    size_t index;            /* position in the module */
    const char *name, *arch;
    int threads, smem, cluster[3];
    size_t nparams, ndims, ntmaps;
    RtParam *params;
    const char **dims;
    RtTmap *tmaps;           /* ABI order: the hidden params after the dims */
    tilert_kernel *fallback; /* NULL if none */
    const char *fallback_name;
    int fallback_line;       /* the `fallback` record, 0 if none */
    int writes_line;         /* the `writes` record, 0 if none: then which params the kernel
                                writes is unknown and overlaps are not checked */
    const char *grid_text;
    RpnTok *rpn[3];
    size_t nrpn[3];
    bool uses_sms;           /* a rule reads num_sms() (RPN_SMS) */
    int line;                /* the `kernel` line */
    /* launch state, guarded by the module's state_lock */
    RtTmapCache *cache;      /* encoded maps of recent launches, one per tmap; NULL without tmaps */
    tilert_kernel *last_ran; /* tilert_kernel_last_variant */
    char last_reason[256];
    RtSigCache *sig;         /* plans of recent signatures (sigcache.c), NULL before the first launch */
    unsigned long sig_hits, sig_misses;   /* launches whose plan came from it / did not */
};

/* Parse metadata text into m->kernels (allocated from m->pool). */
tilert_status tilert_meta_parse(tilert_module *m, const char *text);
/* "bf16[M, K]" / "f32": param p of k as messages spell it. */
void tilert_param_type(const tilert_kernel *k, const RtParam *p, char *buf, size_t n);

/* ---- check.c ------------------------------------------------------------ */

/* tilert_check_args, and, with `forced` non-NULL, the plan of k's fallback
 * for that reason (a map the driver could not make): TILERT_ERR_ARGS with
 * the reason if k has no fallback. */
tilert_status tilert_check_plan(const tilert_kernel *k, const tilert_arg *args, size_t nargs,
                                char *err, size_t errlen, tilert_launch_plan *plan,
                                const char *forced);
/* tilert_launch's check: the plan of a recent launch with the same
 * signature (kinds, devices, dtypes, shapes, strides), with this launch's
 * addresses and scalars, when they break no rule; otherwise
 * tilert_check_plan's (the same plan or error), kept for the next launch
 * unless it depends on an address. Takes the module's state_lock. */
tilert_status tilert_check_launch(tilert_kernel *k, const tilert_arg *args, size_t nargs,
                                  tilert_launch_plan *plan);
/* The last byte of a non-empty span from addr, saturating. */
uint64_t tilert_span_last(uint64_t addr, uint64_t span);
/* A scalar argument as param p's bytes (its slot, host byte order), or
 * the rule it breaks. The launch check and the signature cache's
 * per-launch check share it. */
typedef enum ScalarErr {
    SC_OK, SC_KIND, SC_F32_RANGE, SC_NOT_INT, SC_INT_RANGE, SC_BOOL_FLOAT
} ScalarErr;
ScalarErr tilert_scalar_value(const RtParam *p, const tilert_arg *a, uint64_t *slot, int64_t *iv);

/* ---- sigcache.c --------------------------------------------------------- */

/* The plan of a launch with a known signature, with this launch's
 * addresses and scalars, into pl: false when no plan is kept for it or a
 * rule may be broken (the full check then says which). Takes the
 * module's state_lock. */
bool tilert_sig_lookup(tilert_kernel *k, const tilert_arg *args, size_t nargs, tilert_launch_plan *pl);
/* Keep the plan of a launch that passed every rule (addr, span: its
 * tensors' addresses and spans, per param), unless it depends on an
 * address. Takes the module's state_lock. */
void tilert_sig_insert(tilert_kernel *k, const tilert_arg *args, size_t nargs, const tilert_launch_plan *pl,
                       const uint64_t *addr, const uint64_t *span);
/* Free k's signature cache (tilert_module_free). */
void tilert_sig_free(tilert_kernel *k);

/* ---- grid.c ------------------------------------------------------------- */

/* Evaluate one RPN program; false + message in err on failure. sms: the
 * value of `num_sms()` (RPN_SMS), or -1 where no device is known. */
bool tilert_rpn_eval(const RpnTok *prog, size_t n, const int64_t *dims, int64_t sms, int64_t *out,
                     char *err, size_t errlen);

/* ---- driver.c: the dlopen'ed CUDA Driver API ---------------------------- */

/* The few Driver API types used here (layouts as in cuda.h). */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_NO_DEVICE = 100,
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    CU_JIT_INFO_LOG_BUFFER = 3,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    CU_JIT_LOG_VERBOSE = 12,
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
};

typedef struct CUlaunchAttribute {
    int id;
    char pad[4];
    union {
        char pad[64];
        struct { unsigned x, y, z; } clusterDim;
    } value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig {
    unsigned gridDimX, gridDimY, gridDimZ;
    unsigned blockDimX, blockDimY, blockDimZ;
    unsigned sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned numAttrs;
} CUlaunchConfig;

/* X-macro: (field, exported symbol, required?, signature). ORDER CUDA_FNS. */
#define CUDA_FNS(X) \
    X(Init, "cuInit", 1, (unsigned)) \
    X(DriverGetVersion, "cuDriverGetVersion", 1, (int *)) \
    X(DeviceGetCount, "cuDeviceGetCount", 1, (int *)) \
    X(DeviceGet, "cuDeviceGet", 1, (CUdevice *, int)) \
    X(DeviceGetAttribute, "cuDeviceGetAttribute", 1, (int *, int, CUdevice)) \
    X(DeviceGetName, "cuDeviceGetName", 1, (char *, int, CUdevice)) \
    X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1, (CUcontext *, CUdevice)) \
    X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", 1, (CUdevice)) \
    X(CtxGetCurrent, "cuCtxGetCurrent", 1, (CUcontext *)) \
    X(CtxGetDevice, "cuCtxGetDevice", 1, (CUdevice *)) \
    X(CtxPushCurrent, "cuCtxPushCurrent_v2", 1, (CUcontext)) \
    X(CtxPopCurrent, "cuCtxPopCurrent_v2", 1, (CUcontext *)) \
    X(CtxSynchronize, "cuCtxSynchronize", 1, (void)) \
    X(ModuleLoadDataEx, "cuModuleLoadDataEx", 1, (CUmodule *, const void *, unsigned, int *, void **)) \
    X(ModuleGetFunction, "cuModuleGetFunction", 1, (CUfunction *, CUmodule, const char *)) \
    X(ModuleUnload, "cuModuleUnload", 1, (CUmodule)) \
    X(FuncSetAttribute, "cuFuncSetAttribute", 1, (CUfunction, int, int)) \
    X(FuncGetAttribute, "cuFuncGetAttribute", 1, (int *, int, CUfunction)) \
    X(LaunchKernel, "cuLaunchKernel", 1, (CUfunction, unsigned, unsigned, unsigned, \
        unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **)) \
    X(LaunchKernelEx, "cuLaunchKernelEx", 0, (const CUlaunchConfig *, CUfunction, void **, void **)) \
    X(PointerGetAttribute, "cuPointerGetAttribute", 1, (void *, int, CUdeviceptr)) \
    X(TensorMapEncodeTiled, "cuTensorMapEncodeTiled", 0, (void *, int, unsigned, void *, \
        const uint64_t *, const uint64_t *, const unsigned *, const unsigned *, int, int, int, int)) \
    X(TensorMapReplaceAddress, "cuTensorMapReplaceAddress", 0, (void *, void *)) \
    X(GetErrorName, "cuGetErrorName", 1, (CUresult, const char **)) \
    X(GetErrorString, "cuGetErrorString", 1, (CUresult, const char **)) \
    X(EventCreate, "cuEventCreate", 0, (CUevent *, unsigned)) \
    X(EventRecord, "cuEventRecord", 0, (CUevent, CUstream)) \
    X(EventSynchronize, "cuEventSynchronize", 0, (CUevent)) \
    X(EventElapsedTime, "cuEventElapsedTime_v2", 0, (float *, CUevent, CUevent)) \
    X(EventElapsedTime1, "cuEventElapsedTime", 0, (float *, CUevent, CUevent)) \
    X(EventDestroy, "cuEventDestroy_v2", 0, (CUevent))

struct tilert_driver {
    void *lib;               /* dlopen handle */
#define X(f, sym, req, sig) CUresult (*f) sig;
    CUDA_FNS(X)
#undef X
};

/* TILERT_ERR_CUDA with "cuXxx: CUDA_ERROR_NAME (description)" + context. */
tilert_status tilert_cuda_fail(const tilert_driver *drv, CUresult r, const char *call,
                               const char *what);

/* ---- tmap.c: tensor maps (docs/runtime.md "Tensor maps") ----------------- */

/* The alignment of a map in host memory: the driver asks for 64 bytes,
 * cuda.h (CUDA 13) declares CUtensorMap with 128. */
#define TILERT_TMAP_HOST_ALIGN 128

/* CUtensorMap* enum values (cuda.h). */
enum {
    CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0, CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1,
    CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2, CU_TENSOR_MAP_DATA_TYPE_INT32 = 3,
    CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4, CU_TENSOR_MAP_DATA_TYPE_INT64 = 5,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6, CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
    CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
    CU_TENSOR_MAP_SWIZZLE_NONE = 0, CU_TENSOR_MAP_SWIZZLE_32B = 1, CU_TENSOR_MAP_SWIZZLE_64B = 2,
    CU_TENSOR_MAP_SWIZZLE_128B = 3,
    CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0
};

/* The CUtensorMapDataType of an RtDtype, -1 if it has none. */
int tilert_tmap_data_type(int dtype);
/* The cuTensorMapEncodeTiled arguments for map tm of kernel k over tensor t
 * (already validated against its param, strides[] in elements with NULL
 * resolved): true and *a filled, or false and the broken rule in why[]
 * ("param A: ..."). An empty tensor is the caller's case. Pure. */
bool tilert_tmap_compute(const tilert_kernel *k, const RtTmap *tm, const DLTensor *t,
                         const int64_t *strides, tilert_tmap_args *a, char *why, size_t n);
/* Allocate k's map cache (kernels with tmaps; at parse). */
tilert_status tilert_tmap_cache_init(tilert_kernel *k);
/* The 128-byte map of k's tensor map j for arguments a, into map (64-byte
 * aligned), the current context being ctx: from k's cache, else encoded (or
 * the address replaced in a cached map of the same shape) and cached. Takes
 * the module's state_lock. TILERT_ERR_NO_DRIVER when the driver lacks
 * cuTensorMapEncodeTiled, TILERT_ERR_CUDA when it rejects the arguments;
 * then why[0..n) says so, starting "param NAME: ". */
tilert_status tilert_tmap_get(const tilert_driver *drv, tilert_kernel *k, size_t j,
                              CUcontext ctx, const tilert_tmap_args *a, void *map,
                              char *why, size_t n);

/* ---- module.c ------------------------------------------------------------ */

/* The context to work in: the calling thread's current one, else the
 * primary context of `device` (device 0 when negative), retained and pushed
 * (*pdev = that device, else -1) until tilert_leave_ctx. */
tilert_status tilert_enter_ctx(tilert_driver *drv, int device, CUcontext *ctx, int *pdev);
void tilert_leave_ctx(tilert_driver *drv, int pdev);

#define TILERT_MAX_CTX 16
#define TILERT_PTR_RANGES 16     /* allocations known to be memory of a context's device */

typedef struct RtLoaded {
    CUcontext ctx;
    int dev;                 /* the context's device */
    CUmodule mod;
    int primary_dev;         /* device whose primary context we retained, or -1 */
    CUfunction *funcs;       /* per kernel, NULL until first use */
    int *max_threads;        /* per kernel: the function's limit, 0 until queried */
} RtLoaded;

struct tilert_module {
    tilert_driver *drv;      /* NULL: metadata only */
    RtPool pool;
    size_t nkernels;
    tilert_kernel *kernels;
    char *ptx;               /* NUL-terminated copy */
    const char *jit_log;
    pthread_mutex_t lock;    /* guards loaded[] */
    pthread_mutex_t state_lock;   /* guards each kernel's launch state (map cache, last variant) */
    size_t nloaded;
    RtLoaded loaded[TILERT_MAX_CTX];
    /* Address ranges (whole allocations) the driver said are memory of the
     * device of ctx, the latest TILERT_PTR_RANGES; guarded by state_lock. */
    struct RtRange { CUcontext ctx; uint64_t lo, hi; } ranges[TILERT_PTR_RANGES];
    unsigned next_range;
    unsigned long ptr_queries;   /* cuPointerGetAttribute calls for the device check */
};

#endif
