/* rtkit.h - what the runtime's unit tests (test_runtime.c, test_tmap.c,
 * test_launch.c, test_tune.c) share: DLTensor fixtures over a made-up
 * device address, the overlap rule's kernels, and the checks that a launch
 * or metadata text is refused with a given message. */
#ifndef TILEC_TEST_RTKIT_H
#define TILEC_TEST_RTKIT_H

#include <check.h>
#include <string.h>
#include "tilert.h"

#define FAKE_PTR ((void *)0x7f0000001000ull)   /* never dereferenced */

/* Metadata of two kernels for the overlap rule (test_runtime.c,
 * test_launch.c): ov writes Z and reads X and Y; ov2 (rank 2, for strided
 * views) writes B and reads A. */
#define OV_KERNELS \
    "kernel ov\narch sm_86\nthreads 128\ndim N\n" \
    "param X tensor f32 1 N align 4\n" \
    "param Y tensor f32 1 N align 4\n" \
    "param n scalar i32\n" \
    "param Z tensor f32 1 N align 4\n" \
    "writes Z\n" \
    "grid N 128 cdiv\nend\n" \
    "kernel ov2\narch sm_86\nthreads 128\ndim M\ndim K\n" \
    "param A tensor f32 2 M K align 4\n" \
    "param B tensor f32 2 M K align 4\n" \
    "writes B\n" \
    "grid M\nend\n"

/* A DLTensor with room for its shape and strides. */
typedef struct T {
    DLTensor t;
    int64_t shape[8], strides[8];
} T;

/* A compact CUDA tensor of dtype {code, bits} at FAKE_PTR (strides NULL). */
static inline void mk(T *x, uint8_t code, uint8_t bits, int ndim, const int64_t *shape)
{
    memset(x, 0, sizeof *x);
    x->t.data = FAKE_PTR;
    x->t.device.device_type = kDLCUDA;
    x->t.device.device_id = 0;
    x->t.ndim = ndim;
    x->t.dtype.code = code;
    x->t.dtype.bits = bits;
    x->t.dtype.lanes = 1;
    x->t.shape = x->shape;
    x->t.strides = NULL;
    memcpy(x->shape, shape, sizeof *shape * (size_t)ndim);
}

/* The GEMM operands both suites launch with (M=256, N=384, K=64): A
 * bf16[M, K], B bf16[K, N], C f32[M, N], compact, as args[0..2]. */
static inline void mk_gemm(T *a, T *b, T *c, tilert_arg *args)
{
    mk(a, kDLBfloat, 16, 2, (int64_t[]){256, 64});
    mk(b, kDLBfloat, 16, 2, (int64_t[]){64, 384});
    mk(c, kDLFloat, 32, 2, (int64_t[]){256, 384});
    args[0] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &a->t}};
    args[1] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &b->t}};
    args[2] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &c->t}};
}

/* Expect TILERT_ERR_ARGS with `want` in both the err buffer and tilert_last_error(). */
static inline void expect_err(const tilert_kernel *k, const tilert_arg *args, size_t n,
                              const char *want)
{
    char err[1024];
    tilert_launch_plan plan;
    tilert_status st = tilert_check_args(k, args, n, err, sizeof err, &plan);
    ck_assert_msg(st == TILERT_ERR_ARGS, "status %d for '%s' (err: %s)", st, want, err);
    ck_assert_msg(strstr(err, want) != NULL, "got '%s', want '%s'", err, want);
    ck_assert_msg(strstr(tilert_last_error(), want) != NULL, "last error '%s'", tilert_last_error());
}

/* Expect metadata text to be refused: TILERT_ERR_META, no module, `want` in
 * the message (case i of a table). */
static inline void expect_meta_err(const char *text, const char *want, int i)
{
    tilert_module *m = (tilert_module *)1;
    tilert_status st = tilert_module_from_meta(text, &m);
    ck_assert_msg(st == TILERT_ERR_META, "status %d for case %d", st, i);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(tilert_last_error(), want) != NULL, "case %d: got '%s', want '%s'", i,
                  tilert_last_error(), want);
}

#endif
