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
    RPN_DIVISOR
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
    int line;
} RtParam;

struct tilert_kernel {
    tilert_module *mod;
    size_t index;            /* position in the module */
    const char *name, *arch;
    int threads, smem, cluster[3];
    size_t nparams, ndims;
    RtParam *params;
    const char **dims;
    const char *grid_text;
    RpnTok *rpn[3];
    size_t nrpn[3];
    int line;                /* the `kernel` line */
};

/* Parse metadata text into m->kernels (allocated from m->pool). */
tilert_status tilert_meta_parse(tilert_module *m, const char *text);

/* ---- grid.c ------------------------------------------------------------- */

/* Evaluate one RPN program; false + message in err on failure. */
bool tilert_rpn_eval(const RpnTok *prog, size_t n, const int64_t *dims, int64_t *out,
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

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_NO_DEVICE = 100,
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
    X(GetErrorName, "cuGetErrorName", 1, (CUresult, const char **)) \
    X(GetErrorString, "cuGetErrorString", 1, (CUresult, const char **))

struct tilert_driver {
    void *lib;               /* dlopen handle */
#define X(f, sym, req, sig) CUresult (*f) sig;
    CUDA_FNS(X)
#undef X
};

/* TILERT_ERR_CUDA with "cuXxx: CUDA_ERROR_NAME (description)" + context. */
tilert_status tilert_cuda_fail(const tilert_driver *drv, CUresult r, const char *call,
                               const char *what);

/* ---- module.c ------------------------------------------------------------ */

#define TILERT_MAX_CTX 16

typedef struct RtLoaded {
    CUcontext ctx;
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
    size_t nloaded;
    RtLoaded loaded[TILERT_MAX_CTX];
};

#endif
