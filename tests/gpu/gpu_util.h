/* gpu_util.h - helpers shared by the C GPU tests: the CUDA driver opened
 * with dlopen (as libtilert does, so no CUDA toolkit is needed), device
 * buffers with poisoned outputs and guard zones, random fill, bf16/f16
 * conversion, relative error, and the pass/fail tally.
 *
 * Every CUDA call goes through GPU_CU, every runtime call that must succeed
 * through GPU_RT: a failure prints the call, its error and the current test
 * (gpu_context) and exits 1. */
#ifndef GPU_UTIL_H
#define GPU_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "tilert.h"

/* ---- The CUDA driver ----------------------------------------------------- */

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;

/* The driver entry points the tests call. ORDER: gpu_util.c's name table. */
typedef struct gpu_cuda {
    CUresult (*DeviceGet)(int *, int);
    CUresult (*PrimaryCtxRetain)(CUcontext *, int);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*HtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*DtoH)(void *, CUdeviceptr, size_t);
    CUresult (*CtxSynchronize)(void);
    CUresult (*GetErrorName)(CUresult, const char **);
} gpu_cuda;

extern gpu_cuda gpu_cu;

#define GPU_CU(call) gpu_cu_check((call), #call, __FILE__, __LINE__)
#define GPU_RT(call) gpu_rt_check((call), #call, __FILE__, __LINE__)
void gpu_cu_check(CUresult r, const char *what, const char *file, int line);
void gpu_rt_check(tilert_status st, const char *what, const char *file, int line);

/* What the test is doing now; fatal errors print it. */
void gpu_context(const char *fmt, ...);

/* Open the runtime's driver; without a CUDA driver or device print
 * "skipped: ..." and exit 77. The caller owns the result
 * (tilert_driver_close). */
tilert_driver *gpu_open(void);
/* The archs a test compiles for: device 0's tilec target and, unless that
 * is sm_86, sm_86 (portable PTX on the same device). */
typedef struct gpu_archs {
    char device[16];
    const char *list[2];
    int n;
} gpu_archs;
/* gpu_open (exits 77 without a driver or device), then *a, printed with
 * the seed. */
tilert_driver *gpu_test_open(gpu_archs *a);
/* dlopen libcuda.so.1 for the tests' own calls (gpu_cu) and make device 0's
 * primary context current on this thread. */
void gpu_cuda_init(void);

/* Run a tilec command line, printed first; exit 1 when it fails. */
void gpu_run_tilec(const char *cmd);

/* Load a module from files; false (with the runtime's message printed) if
 * that fails. */
bool gpu_load_module(tilert_driver *drv, const char *ptx, const char *meta, tilert_module **out);

/* n zeroed objects of size bytes (at least one) in host memory; out of memory
 * is fatal. The caller frees it. */
void *gpu_calloc(size_t n, size_t size);

/* ---- Element types --------------------------------------------------------- */

typedef enum gpu_dtype { GPU_F32, GPU_F16, GPU_BF16 } gpu_dtype;

size_t gpu_dtype_size(gpu_dtype dt);
const char *gpu_dtype_name(gpu_dtype dt);       /* "f32", "f16", "bf16" */
DLDataType gpu_dtype_dl(gpu_dtype dt);

uint16_t gpu_f32_to_bf16(float f);              /* round to nearest even */
float gpu_bf16_to_f32(uint16_t b);
uint16_t gpu_f32_to_f16(float f);               /* round to nearest even, subnormals, inf */
float gpu_f16_to_f32(uint16_t h);

/* Element i of a buffer of dtype dt. */
double gpu_get(gpu_dtype dt, const void *buf, size_t i);
void gpu_set(gpu_dtype dt, void *buf, size_t i, float v);

/* ---- Random numbers ------------------------------------------------------- */

/* Seed from $TILEC_SEED if set, else from the clock; returns the seed. */
uint64_t gpu_seed(void);
/* Uniform in [-scale, scale], never 0 (|x| >= scale / 1024). */
float gpu_frand(float scale);

/* ---- Device buffers ------------------------------------------------------- */

#define GPU_GUARD 64    /* poisoned elements after each output */

/* n elements of dtype dt on the device and their host copy. Outputs have
 * GPU_GUARD more elements, all poisoned (every byte 0xFF: a NaN in each
 * float type) before the launch. */
typedef struct gpu_buf {
    gpu_dtype dt;
    size_t n, guard;
    void *host;
    CUdeviceptr dev;
} gpu_buf;

/* Random nonzero values in [-scale, scale], rounded to dt, uploaded. */
gpu_buf gpu_input(gpu_dtype dt, size_t n, float scale);
/* Poisoned, uploaded. */
gpu_buf gpu_output(gpu_dtype dt, size_t n);
/* Download b and convert its n elements into out[0..n). Returns false and
 * prints why if an element still holds the poison (never written) or a
 * guard element does not (written out of bounds). */
bool gpu_fetch(gpu_buf *b, double *out, const char *label);
void gpu_free(gpu_buf *b);

/* A DLTensor over b (compact row-major; shape is borrowed). */
DLTensor gpu_tensor(const gpu_buf *b, int ndim, int64_t *shape);

/* ---- Checking ---------------------------------------------------------------- */

/* ||got - ref|| / ||ref|| (Frobenius; ||got - ref|| if ref is all 0);
 * INFINITY if any got[i] is not finite. */
double gpu_rel_err(const double *got, const double *ref, size_t n);

/* Count one check and print "ok"/"FAIL" with the formatted label. */
void gpu_result(bool ok, const char *fmt, ...);
/* Print "N passed, M failed"; returns the exit status (0 only if all passed
 * and at least one check ran). */
int gpu_summary(void);

#endif
