/* test_runtime.c - libtilert without a GPU: metadata parsing (good and
 * malformed), launch validation messages, grid rules, ABI packing and the
 * overlap rule of the `writes` record. */
#define _POSIX_C_SOURCE 200809L   /* mkstemp */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tilec.h"
#include "tilert.h"
#include "rtkit.h"

/* A kernel with every kind of param: named and static dims, fp8, all scalars. */
static const char *MM_META =
    "tilec-meta 1\n"
    "# comment line\n"
    "kernel mm\n"
    "arch sm_90a\n"
    "threads 256\n"
    "smem 98304\n"
    "cluster 2 1 1\n"
    "dim M\n"
    "dim N\n"
    "dim K\n"
    "param A tensor bf16 2 M K align 16\n"
    "param B tensor bf16 2 K N align 16\n"
    "param C tensor f32 2 M N align 16\n"
    "param W tensor f8e4m3 1 64 align 1\n"
    "param scale scalar f32\n"
    "param n scalar i32\n"
    "param flag scalar bool\n"
    "param big scalar i64\n"
    "param eps scalar f64\n"
    "grid M 128 cdiv ; N 128 cdiv ; 1\n"
    "end\n"
    "\n"
    "kernel vadd\n"
    "arch sm_86\n"
    "threads 128\n"
    "smem 0\n"
    "dim N\n"
    "param X tensor f32 1 N align 4\n"
    "param Y tensor f32 1 N align 4\n"
    "grid N 0 max 1024 / N 7 %  +\n"
    "end\n"
    "tilec-meta 1\n"              /* a concatenated file repeats the header */
    "compiler tilec 0.1.0 420ef9fc9702\n"   /* newer files say who wrote them; older ones do not */
    "kernel one\n"
    "arch sm_100f\n"
    "threads 1\n"
    "grid 1\n"
    "end\n";

typedef struct MmArgs {
    T a, b, c, w;
    tilert_arg args[9];
} MmArgs;

/* Valid arguments for mm with M=256, N=384, K=64. */
static void mm_args(MmArgs *m)
{
    mk_gemm(&m->a, &m->b, &m->c, m->args);
    mk(&m->w, kDLUInt, 8, 1, (int64_t[]){64});
    m->args[3] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &m->w.t}};
    m->args[4] = (tilert_arg){TILERT_ARG_FLOAT, {.f = 0.5}};
    m->args[5] = (tilert_arg){TILERT_ARG_INT, {.i = -7}};
    m->args[6] = (tilert_arg){TILERT_ARG_INT, {.i = 1}};
    m->args[7] = (tilert_arg){TILERT_ARG_INT, {.i = 1ll << 40}};
    m->args[8] = (tilert_arg){TILERT_ARG_FLOAT, {.f = 1e-6}};
}

static tilert_module *mod;
static tilert_kernel *mm, *vadd;

static void setup(void)
{
    ck_assert_int_eq(tilert_module_from_meta(MM_META, &mod), TILERT_OK);
    ck_assert_int_eq(tilert_module_get_kernel(mod, "mm", &mm), TILERT_OK);
    ck_assert_int_eq(tilert_module_get_kernel(mod, "vadd", &vadd), TILERT_OK);
}

static void teardown(void)
{
    tilert_module_free(mod);
    mod = NULL;
}

/* ---- metadata ---- */

START_TEST(meta_good)
{
    ck_assert_uint_eq(tilert_module_num_kernels(mod), 3);
    ck_assert_ptr_eq(tilert_module_kernel_at(mod, 0), mm);
    ck_assert_ptr_null(tilert_module_kernel_at(mod, 3));
    ck_assert_str_eq(tilert_kernel_name(mm), "mm");
    ck_assert_str_eq(tilert_kernel_arch(mm), "sm_90a");
    ck_assert_int_eq(tilert_kernel_threads(mm), 256);
    ck_assert_int_eq(tilert_kernel_smem(mm), 98304);
    int cl[3];
    tilert_kernel_cluster(mm, cl);
    ck_assert(cl[0] == 2 && cl[1] == 1 && cl[2] == 1);
    tilert_kernel_cluster(vadd, cl);
    ck_assert(cl[0] == 1 && cl[1] == 1 && cl[2] == 1);
    ck_assert_uint_eq(tilert_kernel_num_dims(mm), 3);
    ck_assert_str_eq(tilert_kernel_dim(mm, 2), "K");
    ck_assert_ptr_null(tilert_kernel_dim(mm, 3));
    ck_assert_uint_eq(tilert_kernel_num_params(mm), 9);
    ck_assert_str_eq(tilert_kernel_grid_rule(mm), "M 128 cdiv ; N 128 cdiv ; 1");

    tilert_param_info pi;
    ck_assert_int_eq(tilert_kernel_param(mm, 1, &pi), TILERT_OK);
    ck_assert_str_eq(pi.name, "B");
    ck_assert_int_eq(pi.kind, TILERT_PARAM_TENSOR);
    ck_assert_str_eq(pi.dtype, "bf16");
    ck_assert_int_eq(pi.rank, 2);
    ck_assert_str_eq(pi.dims[0], "K");
    ck_assert_int_eq(pi.extents[0], -1);
    ck_assert_int_eq(pi.align, 16);
    ck_assert_int_eq(tilert_kernel_param(mm, 3, &pi), TILERT_OK);
    ck_assert_ptr_null(pi.dims[0]);
    ck_assert_int_eq(pi.extents[0], 64);
    ck_assert_str_eq(pi.dtype, "f8e4m3");
    ck_assert_int_eq(tilert_kernel_param(mm, 8, &pi), TILERT_OK);
    ck_assert_int_eq(pi.kind, TILERT_PARAM_SCALAR);
    ck_assert_str_eq(pi.dtype, "f64");
    ck_assert_int_eq(tilert_kernel_param(mm, 9, &pi), TILERT_ERR_USAGE);
}
END_TEST

START_TEST(meta_not_found)
{
    tilert_kernel *k = (tilert_kernel *)1;
    ck_assert_int_eq(tilert_module_get_kernel(mod, "nope", &k), TILERT_ERR_NOT_FOUND);
    ck_assert_ptr_null(k);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "no kernel 'nope' in the module (it has: mm, vadd, one)"));
}
END_TEST

START_TEST(null_is_noop)
{
    tilert_module_free(NULL);
    tilert_driver_close(NULL);
    ck_assert_str_eq(tilert_status_string(TILERT_OK), "ok");
    ck_assert_str_eq(tilert_version(), "0.1.0");
}
END_TEST

static const char *KHEAD = "tilec-meta 1\nkernel k\narch sm_86\nthreads 128\n";

static const struct { const char *body; const char *want; } bad_meta[] = {
    /* full texts (no KHEAD) start with '!' */
    {"!", "metadata is empty"},
    {"!tilec-meta 2\nkernel k\n", "metadata line 1: metadata version 2; this runtime reads version 1"},
    {"!hello 1\n", "metadata line 1: expected the header 'tilec-meta 1'"},
    {"!tilec-meta 1\n\n", "describes no kernel"},
    {"!tilec-meta 1\nparam X scalar f32\n", "metadata line 2: expected 'kernel NAME', found 'param'"},
    {"!tilec-meta 1\nkernel 9k\n", "metadata line 2: expected 'kernel NAME'"},
    {"grid 1\n", "metadata line 5: kernel k (line 2) has no 'end'"},
    {"grid 1\nkernel j\n", "metadata line 6: kernel k (line 2) has no 'end' before the next kernel"},
    {"grid 1\nend\nkernel k\narch sm_86\n", "metadata line 7: kernel k defined twice"},
    {"end\n", "metadata line 5: kernel k (line 2) has no 'grid' record"},
    {"frob 3\n", "metadata line 5: unknown record 'frob'"},
    {"threads 64\n", "metadata line 5: kernel k: second 'threads' record"},
    {"smem -1\n", "metadata line 5: expected 'smem N' with N in 0.."},
    {"cluster 1 0 1\n", "metadata line 5: expected 'cluster X Y Z' with each at least 1"},
    {"arch 86\n", "metadata line 5: kernel k: second 'arch' record"},
    {"dim N\ndim N\n", "metadata line 6: kernel k: dim N declared twice"},
    {"param X tensor f17 1 4 align 4\n", "metadata line 5: param X: unknown dtype 'f17'"},
    {"param X tensor f32 0 align 4\n", "metadata line 5: param X: expected a rank in 1..8"},
    {"param X tensor f32 2 4 align 4\n", "metadata line 5: param X: expected 2 dims then 'align BYTES'"},
    {"param X tensor f32 1 4 align 6\n", "metadata line 5: param X: align must be a power of two"},
    {"param X tensor f32 1 M align 4\n",
     "metadata line 5: param X dim 0: 'M' is not declared by a 'dim' record"},
    {"param X tensor f32 1 4.5 align 4\n", "metadata line 5: param X dim 0: '4.5' is neither"},
    {"param X scalar f32\nparam X scalar f32\n", "metadata line 6: kernel k: param X declared twice"},
    {"param X scalar f16\n", "metadata line 5: param X: a scalar must be f32, f64, i32, i64 or bool"},
    {"param X vector f32\n", "metadata line 5: param X: expected 'tensor' or 'scalar'"},
    {"dim N\nparam X tensor f32 1 N align 4\ngrid N +\n", "metadata line 7: grid x: '+' needs two operands"},
    {"dim N\nparam X tensor f32 1 N align 4\ngrid N 1 ; 1\n",
     "metadata line 7: grid x: the rule leaves 2 values (need exactly 1)"},
    {"grid Q\n", "metadata line 5: grid x: 'Q' is not a number, a declared dim, num_sms() or an operator"},
    {"grid 1 ; ; 1\n", "metadata line 5: grid: empty rule for y"},
    {"grid 1 ; 1 ; 1 ; 1\n", "metadata line 5: grid: more than three rules"},
    {"grid 1\ngrid 1\n", "metadata line 6: kernel k: second 'grid' record"},
    {"dim N\ngrid 1\nend\n", "metadata line 5: kernel k: dim N is not a dim of any tensor param"},
    {"grid 1\nend extra\n", "metadata line 6: expected 'end'"},
    {"grid 1\nend\ntilec-meta 2\n", "metadata line 7: metadata version 2"},
    {"param X scalar f32\nwrites Y\n",
     "metadata line 6: writes: 'Y' is not a param of kernel k (declared before this record)"},
    {"writes X\nparam X scalar f32\n", "metadata line 5: writes: 'X' is not a param of kernel k"},
    {"param X scalar f32\nwrites X\n", "metadata line 6: writes: param X is a scalar; only tensors are written"},
    {"param X tensor f32 1 4 align 4\nwrites X X\n", "metadata line 6: writes: param X is named twice"},
    {"writes\nwrites\n", "metadata line 6: kernel k: second 'writes' record"},
    {"param X tensor f32 1 4 align 4\nwrites X\nparam Y tensor f32 1 4 align 4\n",
     "metadata line 7: kernel k: 'param' after the 'writes' record (writes follows every param)"},
};

START_TEST(meta_bad)
{
    char text[1024];
    const char *body = bad_meta[_i].body;
    if (body[0] == '!')
        snprintf(text, sizeof text, "%s", body + 1);
    else
        snprintf(text, sizeof text, "%s%s", KHEAD, body);
    expect_meta_err(text, bad_meta[_i].want, _i);
}
END_TEST

START_TEST(meta_threads_range)
{
    tilert_module *m;
    ck_assert_int_eq(tilert_module_from_meta("tilec-meta 1\nkernel k\nthreads 2000\n", &m),
                     TILERT_ERR_META);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "metadata line 3: expected 'threads N' with N in 1..1024"));
    ck_assert_int_eq(tilert_module_from_meta(NULL, &m), TILERT_ERR_USAGE);
}
END_TEST

/* ---- validation ---- */

START_TEST(args_ok_and_abi)
{
    MmArgs a;
    mm_args(&a);
    tilert_launch_plan pl;
    char err[256];
    ck_assert_int_eq(tilert_check_args(mm, a.args, 9, err, sizeof err, &pl), TILERT_OK);
    ck_assert_str_eq(err, "");
    ck_assert(pl.grid[0] == 2 && pl.grid[1] == 3 && pl.grid[2] == 1);
    ck_assert(pl.block[0] == 256 && pl.block[1] == 1 && pl.block[2] == 1);
    ck_assert_uint_eq(pl.smem, 98304);
    ck_assert_uint_eq(pl.cluster[0], 2);
    ck_assert_int_eq(pl.device, 0);
    ck_assert_uint_eq(pl.ndims, 3);
    ck_assert(pl.dims[0] == 256 && pl.dims[1] == 384 && pl.dims[2] == 64);
    /* ORDER ABI: A ptr, A s0, B ptr, B s0, C ptr, C s0, W ptr, scale, n, flag, big, eps, M, N, K */
    static const uint8_t size[] = {8, 8, 8, 8, 8, 8, 8, 4, 4, 1, 8, 8, 4, 4, 4};
    static const uint32_t off[] = {0, 8, 16, 24, 32, 40, 48, 56, 60, 64, 72, 80, 88, 92, 96};
    ck_assert_uint_eq(pl.nslots, 15);
    for (int i = 0; i < 15; i++) {
        ck_assert_msg(pl.slot_size[i] == size[i], "slot %d size %d", i, pl.slot_size[i]);
        ck_assert_msg(pl.slot_offset[i] == off[i], "slot %d offset %u", i, pl.slot_offset[i]);
    }
    ck_assert_uint_eq(pl.param_bytes, 100);
    ck_assert_uint_eq(pl.slot[0], (uint64_t)(uintptr_t)FAKE_PTR);
    ck_assert_uint_eq(pl.slot[1], 64);      /* A row stride */
    ck_assert_uint_eq(pl.slot[3], 384);     /* B row stride */
    float scale;
    int32_t n, dim;
    int8_t flag;
    int64_t big;
    double eps;
    memcpy(&scale, &pl.slot[7], 4);
    memcpy(&n, &pl.slot[8], 4);
    memcpy(&flag, &pl.slot[9], 1);
    memcpy(&big, &pl.slot[10], 8);
    memcpy(&eps, &pl.slot[11], 8);
    memcpy(&dim, &pl.slot[13], 4);
    ck_assert(scale == 0.5f && n == -7 && flag == 1 && big == 1ll << 40 && eps == 1e-6 && dim == 384);
}
END_TEST

START_TEST(args_strided_and_offset)
{
    MmArgs a;
    mm_args(&a);
    a.a.t.strides = a.a.strides;           /* a row-padded view */
    a.a.strides[0] = 72;
    a.a.strides[1] = 1;
    a.a.t.byte_offset = 32;
    tilert_launch_plan pl;
    ck_assert_int_eq(tilert_check_args(mm, a.args, 9, NULL, 0, &pl), TILERT_OK);
    ck_assert_uint_eq(pl.slot[0], (uint64_t)(uintptr_t)FAKE_PTR + 32);
    ck_assert_uint_eq(pl.slot[1], 72);
    /* fp8 as DLPack float8_e4m3fn; a size-1 innermost dim may have any stride */
    a.w.t.dtype.code = 10;
    a.c.shape[1] = 1;
    a.b.shape[1] = 1;
    a.c.t.strides = a.c.strides;
    a.c.strides[0] = 1;
    a.c.strides[1] = 5;
    ck_assert_int_eq(tilert_check_args(mm, a.args, 9, NULL, 0, &pl), TILERT_OK);
    ck_assert_uint_eq(pl.grid[1], 1);
}
END_TEST

START_TEST(args_count_and_kind)
{
    MmArgs a;
    mm_args(&a);
    expect_err(mm, a.args, 8, "kernel mm: takes 9 arguments (A, B, C, W, scale, n, flag, big, eps), got 8");
    a.args[1] = (tilert_arg){TILERT_ARG_INT, {.i = 3}};
    expect_err(mm, a.args, 9, "param B: expected a tensor bf16[K, N], got a scalar");
    mm_args(&a);
    a.args[1].u.tensor = NULL;
    expect_err(mm, a.args, 9, "param B: expected a tensor bf16[K, N], got NULL");
    mm_args(&a);
    a.args[4] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &a.a.t}};
    expect_err(mm, a.args, 9, "param scale: expected a scalar f32, got a tensor");
    char err[8];
    ck_assert_int_eq(tilert_check_args(NULL, a.args, 9, err, sizeof err, NULL), TILERT_ERR_USAGE);
}
END_TEST

START_TEST(args_dtype)
{
    MmArgs a;
    mm_args(&a);
    a.a.t.dtype = (DLDataType){kDLFloat, 16, 1};
    expect_err(mm, a.args, 9, "param A: tensor dtype is float16 but the kernel wants bf16[M, K]");
    mm_args(&a);
    a.c.t.dtype.lanes = 2;
    expect_err(mm, a.args, 9, "param C: tensor dtype is float32x2 but the kernel wants f32[M, N]");
    mm_args(&a);
    a.w.t.dtype = (DLDataType){kDLInt, 8, 1};
    expect_err(mm, a.args, 9, "param W: tensor dtype is int8 but the kernel wants f8e4m3[64]");
    mm_args(&a);
    a.w.t.dtype = (DLDataType){12, 8, 1};
    expect_err(mm, a.args, 9, "param W: tensor dtype is float8_e5m2 but the kernel wants f8e4m3[64]");
}
END_TEST

START_TEST(args_rank_and_dims)
{
    MmArgs a;
    mm_args(&a);
    a.c.t.ndim = 3;
    a.c.shape[2] = 1;
    expect_err(mm, a.args, 9, "param C: tensor has rank 3 but the kernel wants rank 2 (f32[M, N])");
    mm_args(&a);
    a.w.shape[0] = 63;
    expect_err(mm, a.args, 9, "param W dim 0 is 63 but the kernel is compiled for 64");
    mm_args(&a);
    a.b.shape[0] = 65;
    expect_err(mm, a.args, 9, "param B dim 0 (K) is 65 but param A dim 1 says 64");
    mm_args(&a);
    a.c.shape[1] = 383;
    expect_err(mm, a.args, 9, "param C dim 1 (N) is 383 but param B dim 1 says 384");
    mm_args(&a);
    a.a.shape[0] = 3000000000ll;
    expect_err(mm, a.args, 9, "param A dim 0 (M) is 3000000000, over the i32 limit 2147483647");
    mm_args(&a);
    a.a.shape[0] = -1;
    expect_err(mm, a.args, 9, "param A dim 0 has negative extent -1");
}
END_TEST

START_TEST(args_layout)
{
    MmArgs a;
    mm_args(&a);
    a.b.t.strides = a.b.strides;      /* a transposed view */
    a.b.strides[0] = 1;
    a.b.strides[1] = 64;
    expect_err(mm, a.args, 9, "param B: innermost stride is 64 but the kernel needs 1");
    mm_args(&a);
    a.a.t.strides = a.a.strides;
    a.a.strides[0] = -64;
    a.a.strides[1] = 1;
    expect_err(mm, a.args, 9, "param A dim 0 has negative stride -64");
    mm_args(&a);
    a.a.t.byte_offset = 2;
    expect_err(mm, a.args, 9, "param A: data address 0x7f0000001002 (data + byte_offset 2) is "
               "not aligned to 16 bytes");
    mm_args(&a);
    a.c.t.data = NULL;
    expect_err(mm, a.args, 9, "param C: data pointer is NULL");
}
END_TEST

START_TEST(args_device)
{
    MmArgs a;
    mm_args(&a);
    a.b.t.device.device_type = kDLCPU;
    expect_err(mm, a.args, 9, "param B: tensor is in CPU memory (DLPack device type 1); the "
               "kernel needs CUDA device memory");
    mm_args(&a);
    a.c.t.device.device_id = 1;
    expect_err(mm, a.args, 9, "param C is on cuda:1 but param A is on cuda:0");
    mm_args(&a);
    a.a.t.device.device_type = kDLCUDAManaged;
    a.b.t.device.device_type = kDLCUDAManaged;
    ck_assert_int_eq(tilert_check_args(mm, a.args, 9, NULL, 0, NULL), TILERT_OK);
}
END_TEST

START_TEST(args_scalars)
{
    MmArgs a;
    mm_args(&a);
    a.args[5] = (tilert_arg){TILERT_ARG_INT, {.i = 3000000000ll}};
    expect_err(mm, a.args, 9, "param n: 3000000000 does not fit i32");
    a.args[5] = (tilert_arg){TILERT_ARG_FLOAT, {.f = 1.5}};
    expect_err(mm, a.args, 9, "param n: i32 expects an integer, got 1.5");
    mm_args(&a);
    a.args[4] = (tilert_arg){TILERT_ARG_FLOAT, {.f = 1e300}};
    expect_err(mm, a.args, 9, "param scale: 1e+300 does not fit f32");
    mm_args(&a);
    a.args[6] = (tilert_arg){TILERT_ARG_FLOAT, {.f = 1.0}};
    expect_err(mm, a.args, 9, "param flag: bool expects an integer (0 or 1), got 1");
    mm_args(&a);
    a.args[5] = (tilert_arg){TILERT_ARG_FLOAT, {.f = 4.0}};   /* integral float for i32: OK */
    a.args[4] = (tilert_arg){TILERT_ARG_INT, {.i = 3}};       /* int for f32: converts */
    tilert_launch_plan pl;
    ck_assert_int_eq(tilert_check_args(mm, a.args, 9, NULL, 0, &pl), TILERT_OK);
    float f;
    int32_t n;
    memcpy(&f, &pl.slot[7], 4);
    memcpy(&n, &pl.slot[8], 4);
    ck_assert(f == 3.0f && n == 4);
}
END_TEST

/* ---- grid ---- */

START_TEST(grid_rules)
{
    unsigned g[3];
    /* vadd: grid = N / max(0, 1024) + N % 7 */
    ck_assert_int_eq(tilert_kernel_grid(vadd, (int64_t[]){5000}, 1, g), TILERT_OK);
    ck_assert_uint_eq(g[0], 5000 / 1024 + 5000 % 7);
    ck_assert(g[1] == 1 && g[2] == 1);
    ck_assert_int_eq(tilert_kernel_grid(mm, (int64_t[]){129, 1, 5}, 3, g), TILERT_OK);
    ck_assert(g[0] == 2 && g[1] == 1 && g[2] == 1);
    ck_assert_int_eq(tilert_kernel_grid(mm, (int64_t[]){0, 1, 5}, 3, g), TILERT_OK);
    ck_assert_uint_eq(g[0], 0);
    ck_assert_int_eq(tilert_kernel_grid(mm, (int64_t[]){1, 2}, 2, g), TILERT_ERR_USAGE);

    tilert_module *m;
    tilert_kernel *k;
    ck_assert_int_eq(tilert_module_from_meta(
        "tilec-meta 1\nkernel g\narch sm_86\nthreads 32\ndim A\ndim B\n"
        "param X tensor f32 2 A B align 4\ngrid A B cdiv ; B A / ; A B - \nend\n", &m), TILERT_OK);
    k = tilert_module_kernel_at(m, 0);
    ck_assert_int_eq(tilert_kernel_grid(k, (int64_t[]){10, 3}, 2, g), TILERT_OK);
    ck_assert(g[0] == 4 && g[1] == 0 && g[2] == 7);
    ck_assert_int_eq(tilert_kernel_grid(k, (int64_t[]){10, 0}, 2, g), TILERT_ERR_ARGS);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "kernel g: grid x (A B cdiv ; B A / ; A B -): cdiv by zero"));
    ck_assert_int_eq(tilert_kernel_grid(k, (int64_t[]){0, 3}, 2, g), TILERT_ERR_ARGS);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "grid y (A B cdiv ; B A / ; A B -): division by zero"));
    ck_assert_int_eq(tilert_kernel_grid(k, (int64_t[]){3, 10}, 2, g), TILERT_ERR_ARGS);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "kernel g: grid z is -7, outside 0..65535"));
    ck_assert_int_eq(tilert_kernel_grid(k, (int64_t[]){INT64_MAX, 2}, 2, g), TILERT_ERR_ARGS);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "arithmetic overflow"));
    tilert_module_free(m);

    /* divisor: the largest divisor of A that is at most B (at least 1) */
    ck_assert_int_eq(tilert_module_from_meta(
        "tilec-meta 1\nkernel d\narch sm_86\nthreads 32\ndim A\ndim B\n"
        "param X tensor f32 2 A B align 4\ngrid A B divisor ; A A B divisor / ; B A divisor\nend\n", &m),
        TILERT_OK);
    k = tilert_module_kernel_at(m, 0);
    static const int64_t cases[][3] = {   /* A, B, divisor(A, B) */
        { 256, 32, 32 }, { 36, 32, 18 }, { 100, 8, 5 }, { 37, 36, 1 }, { 12, 12, 12 },
        { 12, 100, 12 }, { 7, 0, 1 }, { 7, -3, 1 }, { 1, 1, 1 }, { 96, 17, 16 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(tilert_kernel_grid(k, (int64_t[]){cases[i][0], cases[i][1]}, 2, g), TILERT_OK);
        ck_assert_msg(g[0] == (unsigned)cases[i][2] && g[1] == (unsigned)(cases[i][0] / cases[i][2]),
                      "divisor(%lld, %lld): %u %u", (long long)cases[i][0], (long long)cases[i][1], g[0], g[1]);
    }
    ck_assert_int_eq(tilert_kernel_grid(k, (int64_t[]){0, 5}, 2, g), TILERT_OK);   /* every d divides 0 */
    ck_assert(g[0] == 5 && g[1] == 0);
    ck_assert_int_eq(tilert_kernel_grid(k, (int64_t[]){6, 12}, 2, g), TILERT_OK);   /* z: divisor(12, 6) */
    ck_assert_uint_eq(g[2], 6);
    ck_assert_int_eq(tilert_kernel_grid(k, (int64_t[]){(int64_t)1 << 33, 2}, 2, g), TILERT_ERR_ARGS);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "divisor of 8589934592: over 2^32"));
    tilert_module_free(m);

    /* num_sms(): the launch device's SM count; a module read without a
     * driver has no device, and the grid says so (a rule without it works) */
    ck_assert_int_eq(tilert_module_from_meta(
        "tilec-meta 1\nkernel s\narch sm_86\nthreads 32\ndim A\n"
        "param X tensor f32 1 A align 4\ngrid A 2 cdiv num_sms() min ; 1 ; 1\nend\n"
        "kernel p\narch sm_86\nthreads 32\ndim A\nparam X tensor f32 1 A align 4\ngrid A ; 1 ; 1\nend\n",
        &m), TILERT_OK);
    k = tilert_module_kernel_at(m, 0);
    ck_assert_str_eq(tilert_kernel_grid_rule(k), "A 2 cdiv num_sms() min ; 1 ; 1");
    ck_assert_int_eq(tilert_kernel_grid(k, (int64_t[]){100}, 1, g), TILERT_ERR_ARGS);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "kernel s: grid x (A 2 cdiv num_sms() min ; 1 ; 1): "
                                                      "num_sms() needs a device"));
    ck_assert_int_eq(tilert_kernel_grid(tilert_module_kernel_at(m, 1), (int64_t[]){100}, 1, g), TILERT_OK);
    ck_assert_uint_eq(g[0], 100);
    /* checking arguments needs no device: the grid stays unknown (zeros),
     * the arguments are checked all the same */
    {
        T x;
        mk(&x, kDLFloat, 32, 1, (int64_t[]){100});
        tilert_arg xa = {TILERT_ARG_TENSOR, {.tensor = &x.t}};
        tilert_launch_plan pl;
        char err[256];
        ck_assert_int_eq(tilert_check_args(k, &xa, 1, err, sizeof err, &pl), TILERT_OK);
        ck_assert(pl.grid[0] == 0 && pl.grid[1] == 0 && pl.grid[2] == 0);
        ck_assert_uint_eq(pl.block[0], 32);
        mk(&x, kDLFloat, 16, 1, (int64_t[]){100});
        ck_assert_int_eq(tilert_check_args(k, &xa, 1, err, sizeof err, &pl), TILERT_ERR_ARGS);
        ck_assert_ptr_nonnull(strstr(err, "param X"));
    }
    tilert_module_free(m);
    /* num_sms is an operand, not an operator or a dim */
    ck_assert_int_ne(tilert_module_from_meta(
        "tilec-meta 1\nkernel s\narch sm_86\nthreads 32\ndim A\n"
        "param X tensor f32 1 A align 4\ngrid A num_sms\nend\n", &m), TILERT_OK);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "'num_sms' is not a number, a declared dim, num_sms() or an operator"));
    ck_assert_int_ne(tilert_module_from_meta(
        "tilec-meta 1\nkernel s\narch sm_86\nthreads 32\ndim A\n"
        "param X tensor f32 1 A align 4\ngrid num_sms() min\nend\n", &m), TILERT_OK);
}
END_TEST

START_TEST(grid_through_check)
{
    MmArgs a;
    mm_args(&a);
    a.a.shape[0] = a.c.shape[0] = 128;    /* grid x = 1: not a multiple of cluster 2 */
    expect_err(mm, a.args, 9, "kernel mm: grid x is 1, not a multiple of the cluster size 2");
    mm_args(&a);
    a.b.shape[1] = a.c.shape[1] = 65536 * 128;   /* grid y over 65535 */
    expect_err(mm, a.args, 9, "grid y is 65536, outside 0..65535");
    mm_args(&a);
    a.a.shape[0] = a.c.shape[0] = 0;       /* empty: grid 0, data may be NULL */
    a.a.t.data = a.c.t.data = NULL;
    tilert_launch_plan pl;
    ck_assert_int_eq(tilert_check_args(mm, a.args, 9, NULL, 0, &pl), TILERT_OK);
    ck_assert_uint_eq(pl.grid[0], 0);
}
END_TEST

/* ---- without a GPU ---- */

START_TEST(launch_meta_only)
{
    MmArgs a;
    mm_args(&a);
    ck_assert_int_eq(tilert_launch(mm, a.args, 9, NULL), TILERT_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "metadata only"));
    a.args[0].u.tensor = NULL;  /* validation comes first */
    ck_assert_int_eq(tilert_launch(mm, a.args, 9, NULL), TILERT_ERR_ARGS);
}
END_TEST

START_TEST(driver_open)
{
    tilert_driver *drv = (tilert_driver *)1;
    tilert_status st = tilert_driver_open(&drv);
    if (st == TILERT_OK) {      /* a machine with a GPU */
        int n = 0;
        ck_assert_int_eq(tilert_device_count(drv, &n), TILERT_OK);
        ck_assert_int_gt(n, 0);
        tilert_driver_close(drv);
        return;
    }
    ck_assert_ptr_null(drv);
    ck_assert(st == TILERT_ERR_NO_DRIVER || st == TILERT_ERR_NO_DEVICE);
    ck_assert_msg(strncmp(tilert_last_error(), "no CUDA", 7) == 0, "%s", tilert_last_error());
}
END_TEST

START_TEST(load_files_missing)
{
    tilert_module *m = (tilert_module *)1;
    ck_assert_int_eq(tilert_module_load_files((tilert_driver *)1, "/nonexistent.ptx",
                                              "/nonexistent.meta", &m), TILERT_ERR_IO);
    ck_assert_ptr_null(m);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "cannot open /nonexistent.ptx"));
}
END_TEST

START_TEST(load_files_bad_meta)
{
    char ptx[] = "/tmp/tilert_test_XXXXXX";
    int fd = mkstemp(ptx);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char meta[64];
    snprintf(meta, sizeof meta, "%s.meta", ptx);
    FILE *f = fopen(meta, "w");
    ck_assert_ptr_nonnull(f);
    fputs("tilec-meta 1\nkernel k\nthreads 0\n", f);
    fclose(f);
    tilert_module *m;
    /* the metadata is parsed before the driver is used */
    ck_assert_int_eq(tilert_module_load_files((tilert_driver *)1, ptx, meta, &m), TILERT_ERR_META);
    char want[128];
    snprintf(want, sizeof want, "%s: metadata line 3: expected 'threads N'", meta);
    ck_assert_msg(strstr(tilert_last_error(), want) != NULL, "%s", tilert_last_error());
    unlink(meta);
    unlink(ptx);
}
END_TEST

/* ---- hostile input (issue: any whitespace, wrapping pointers, NULL out) ---- */

/* \v, \f and \r between tokens are blanks; the parser used to loop forever
 * on a token boundary at \v or \f. */
START_TEST(meta_any_whitespace)
{
    const char *meta =
        "tilec-meta 1\n"
        "kernel\vws\n"
        "arch\fsm_90a\r\n"
        "threads \v\f 128\n"
        "dim\t\vN\n"
        "param X tensor f32 1\fN align 4\n"
        "grid N\v128 cdiv ;\f1 ; 1\n"
        "end\n";
    tilert_module *m = NULL;
    ck_assert_msg(tilert_module_from_meta(meta, &m) == TILERT_OK, "%s", tilert_last_error());
    tilert_kernel *k = NULL;
    ck_assert_int_eq(tilert_module_get_kernel(m, "ws", &k), TILERT_OK);
    ck_assert_int_eq(tilert_kernel_threads(k), 128);
    tilert_module_free(m);
}
END_TEST

/* data + byte_offset that wraps around 2^64 (to 0 or past it) is refused. */
START_TEST(args_wrapping_pointer)
{
    MmArgs a;
    mm_args(&a);
    tilert_launch_plan pl;
    a.a.t.byte_offset = 0ull - (uint64_t)(uintptr_t)FAKE_PTR;     /* wraps to 0 */
    ck_assert_int_eq(tilert_check_args(mm, a.args, 9, NULL, 0, &pl), TILERT_ERR_ARGS);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "wraps"));
    a.a.t.byte_offset = 0ull - (uint64_t)(uintptr_t)FAKE_PTR + 4096;  /* wraps past 0 */
    ck_assert_int_eq(tilert_check_args(mm, a.args, 9, NULL, 0, &pl), TILERT_ERR_ARGS);
    a.a.t.byte_offset = 0;
    a.a.t.data = NULL;
    ck_assert_int_eq(tilert_check_args(mm, a.args, 9, NULL, 0, &pl), TILERT_ERR_ARGS);
}
END_TEST

/* The header's promise: *out is NULL on failure, whatever argument was NULL. */
/* The automatic arch choice for every compute capability from 8.0 up,
 * and each choice a target the compiler has. */
START_TEST(arch_for_capability)
{
    static const struct { int major, minor; const char *want; } rows[] = {
        { 8, 0, "sm_80" }, { 8, 6, "sm_86" }, { 8, 7, "sm_86" }, { 8, 9, "sm_89" }, { 9, 0, "sm_90a" },
        { 10, 0, "sm_100a" }, { 10, 3, "sm_100f" }, { 11, 0, "sm_90" }, { 12, 0, "sm_120" }, { 12, 1, "sm_120" },
        { 13, 0, "sm_120" },
    };
    char buf[16];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ck_assert_int_eq(tilert_arch_for_capability(rows[i].major, rows[i].minor, buf, sizeof buf), TILERT_OK);
        ck_assert_str_eq(buf, rows[i].want);
        tilec_options o;
        tilec_options_init(&o);
        o.arch = buf;
        o.family_portable = 1;   /* "sm_90" is the plain target (tilert.h) */
        o.emit = TILEC_EMIT_TIR;
        tilec_result *r = NULL;
        static const char src[] = "kernel k(_X: global f32[N]) grid(1) { }\n";
        ck_assert_int_eq(tilec_compile_string("k.tile", src, sizeof src - 1, &o, &r), TILEC_OK);
        ck_assert_str_eq(tilec_result_arch(r), buf);
        tilec_result_free(r);
    }
    ck_assert_int_eq(tilert_arch_for_capability(7, 5, buf, sizeof buf), TILERT_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "8.0 and later"));
    ck_assert_int_eq(tilert_arch_for_capability(8, 0, NULL, 0), TILERT_ERR_USAGE);
}
END_TEST

START_TEST(load_null_arguments)
{
    tilert_module *m = (tilert_module *)1;
    ck_assert_int_eq(tilert_module_load(NULL, "ptx", "meta", &m), TILERT_ERR_USAGE);
    ck_assert_ptr_null(m);
    m = (tilert_module *)1;
    ck_assert_int_eq(tilert_module_load((tilert_driver *)1, NULL, "meta", &m), TILERT_ERR_USAGE);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(tilert_module_load((tilert_driver *)1, "ptx", "meta", NULL), TILERT_ERR_USAGE);
    m = (tilert_module *)1;
    ck_assert_int_ne(tilert_module_from_meta(NULL, &m), TILERT_OK);
    ck_assert_ptr_null(m);
}
END_TEST

/* ---- the `writes` record and the overlap rule ---- */

/* ov writes Z, reads X and Y; ov2 writes B (rank 2, for strided views);
 * ro writes nothing; old has no `writes` record (older metadata). */
static const char *OV_META =
    "tilec-meta 1\n"
    OV_KERNELS
    "kernel ro\narch sm_86\nthreads 128\ndim N\n"
    "param X tensor f32 1 N align 4\n"
    "param Y tensor f32 1 N align 4\n"
    "writes\n"
    "grid N 128 cdiv\nend\n"
    "kernel old\narch sm_86\nthreads 128\ndim N\n"
    "param X tensor f32 1 N align 4\n"
    "param Z tensor f32 1 N align 4\n"
    "grid N 128 cdiv\nend\n";

typedef struct OvArgs {
    T x, y, z;
    tilert_arg args[4];
} OvArgs;

/* X, Y, Z: f32[1000] at FAKE_PTR + the given byte offsets; n = 3. */
static void ov_args(OvArgs *o, uint64_t xo, uint64_t yo, uint64_t zo)
{
    T *t[] = {&o->x, &o->y, &o->z};
    uint64_t off[] = {xo, yo, zo};
    for (int i = 0; i < 3; i++) {
        mk(t[i], kDLFloat, 32, 1, (int64_t[]){1000});
        t[i]->t.byte_offset = off[i];
    }
    o->args[0] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &o->x.t}};
    o->args[1] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &o->y.t}};
    o->args[2] = (tilert_arg){TILERT_ARG_INT, {.i = 3}};
    o->args[3] = (tilert_arg){TILERT_ARG_TENSOR, {.tensor = &o->z.t}};
}

static tilert_kernel *kernel_of(tilert_module *m, const char *name)
{
    tilert_kernel *k = NULL;
    ck_assert_int_eq(tilert_module_get_kernel(m, name, &k), TILERT_OK);
    return k;
}

START_TEST(meta_writes)
{
    tilert_module *m;
    ck_assert_msg(tilert_module_from_meta(OV_META, &m) == TILERT_OK, "%s", tilert_last_error());
    tilert_kernel *ov = kernel_of(m, "ov"), *ro = kernel_of(m, "ro"), *old = kernel_of(m, "old");
    ck_assert_int_eq(tilert_kernel_param_written(ov, 0), 0);
    ck_assert_int_eq(tilert_kernel_param_written(ov, 2), 0);      /* a scalar */
    ck_assert_int_eq(tilert_kernel_param_written(ov, 3), 1);
    ck_assert_int_eq(tilert_kernel_param_written(ov, 4), -1);     /* out of range */
    ck_assert_int_eq(tilert_kernel_param_written(ro, 1), 0);
    ck_assert_int_eq(tilert_kernel_param_written(old, 1), -1);    /* the metadata does not say */
    ck_assert_int_eq(tilert_kernel_param_written(NULL, 0), -1);
    tilert_module_free(m);
}
END_TEST

START_TEST(args_overlap)
{
    tilert_module *m;
    ck_assert_msg(tilert_module_from_meta(OV_META, &m) == TILERT_OK, "%s", tilert_last_error());
    tilert_kernel *ov = kernel_of(m, "ov"), *ro = kernel_of(m, "ro"), *old = kernel_of(m, "old");
    tilert_launch_plan pl;
    OvArgs o;
    /* disjoint, and touching end to end */
    ov_args(&o, 0, 4000, 8000);
    ck_assert_msg(tilert_check_args(ov, o.args, 4, NULL, 0, &pl) == TILERT_OK, "%s", tilert_last_error());
    /* the two inputs overlap each other: the kernel only reads them */
    ov_args(&o, 0, 0, 8000);
    ck_assert_msg(tilert_check_args(ov, o.args, 4, NULL, 0, &pl) == TILERT_OK, "%s", tilert_last_error());
    ov_args(&o, 0, 2000, 8000);
    ck_assert_int_eq(tilert_check_args(ov, o.args, 4, NULL, 0, &pl), TILERT_OK);
    /* the output overlaps the end of Y by one element */
    ov_args(&o, 0, 4000, 7996);
    expect_err(ov, o.args, 4, "kernel ov: param Z (written by the kernel) overlaps param Y: Z spans "
               "bytes 0x7f0000002f3c..0x7f0000003edb, Y 0x7f0000001fa0..0x7f0000002f3f; tensor params "
               "must not alias (the kernel reads them through the non-coherent cache); pass separate "
               "tensors");
    /* the output starts inside X */
    ov_args(&o, 0, 8000, 2000);
    expect_err(ov, o.args, 4, "param Z (written by the kernel) overlaps param X: Z spans bytes "
               "0x7f00000017d0..");
    /* in place: Z is X */
    ov_args(&o, 0, 4000, 0);
    expect_err(ov, o.args, 4, "kernel ov: param Z (written by the kernel) starts at the same address "
               "as param X (0x7f0000001000): the kernel cannot work in place, since tensor params must "
               "not alias (it reads them through the non-coherent cache); pass Z a separate tensor");
    o.z.t.data = (char *)FAKE_PTR - 64;        /* the same address through data + byte_offset */
    o.z.t.byte_offset = 64;
    expect_err(ov, o.args, 4, "param Z (written by the kernel) starts at the same address as param X");
    /* empty tensors reach no memory */
    ov_args(&o, 0, 0, 0);
    o.x.shape[0] = o.y.shape[0] = o.z.shape[0] = 0;
    ck_assert_int_eq(tilert_check_args(ov, o.args, 4, NULL, 0, &pl), TILERT_OK);
    /* a kernel that writes nothing, and metadata without the record: no rule */
    ov_args(&o, 0, 0, 0);
    ck_assert_int_eq(tilert_check_args(ro, o.args, 2, NULL, 0, &pl), TILERT_OK);
    tilert_arg two[2] = {o.args[0], o.args[3]};
    ck_assert_int_eq(tilert_check_args(old, two, 2, NULL, 0, &pl), TILERT_OK);
    /* the rules before it come first: a bad scalar, then the overlap */
    o.args[2].u.i = 1ll << 40;
    expect_err(ov, o.args, 4, "param n: 1099511627776 does not fit i32");
    tilert_module_free(m);
}
END_TEST

/* Strided views: the span runs from the first to the last byte an argument
 * reaches, so two views that interleave overlap even when they share no
 * element; views one after the other do not. */
START_TEST(args_overlap_strided)
{
    tilert_module *m;
    ck_assert_msg(tilert_module_from_meta(OV_META, &m) == TILERT_OK, "%s", tilert_last_error());
    tilert_kernel *ov2 = kernel_of(m, "ov2");
    tilert_launch_plan pl;
    T a, b;
    /* a buffer of 100 rows of 2 floats: A is column 0, B column 1 */
    mk(&a, kDLFloat, 32, 2, (int64_t[]){100, 1});
    mk(&b, kDLFloat, 32, 2, (int64_t[]){100, 1});
    a.t.strides = a.strides;
    b.t.strides = b.strides;
    a.strides[0] = b.strides[0] = 2;
    a.strides[1] = b.strides[1] = 1;
    b.t.byte_offset = 4;
    tilert_arg args[2] = {{TILERT_ARG_TENSOR, {.tensor = &a.t}}, {TILERT_ARG_TENSOR, {.tensor = &b.t}}};
    expect_err(ov2, args, 2, "param B (written by the kernel) overlaps param A: B spans bytes "
               "0x7f0000001004..0x7f000000131f, A 0x7f0000001000..0x7f000000131b");
    /* rows 0..49 and rows 50..99 of a [100, 2] buffer: disjoint */
    mk(&a, kDLFloat, 32, 2, (int64_t[]){50, 2});
    mk(&b, kDLFloat, 32, 2, (int64_t[]){50, 2});
    b.t.byte_offset = 50 * 2 * 4;
    ck_assert_msg(tilert_check_args(ov2, args, 2, NULL, 0, &pl) == TILERT_OK, "%s", tilert_last_error());
    b.t.byte_offset -= 4;                       /* one element back */
    expect_err(ov2, args, 2, "param B (written by the kernel) overlaps param A");
    /* a stride of 0 (a broadcast row) reaches one row */
    mk(&a, kDLFloat, 32, 2, (int64_t[]){50, 2});
    a.t.strides = a.strides;
    a.strides[0] = 0;
    a.strides[1] = 1;
    b.t.byte_offset = 8;
    ck_assert_msg(tilert_check_args(ov2, args, 2, NULL, 0, &pl) == TILERT_OK, "%s", tilert_last_error());
    /* a span past the end of the address space saturates, and still overlaps */
    a.strides[0] = INT64_MAX / 4;
    b.t.byte_offset = 1 << 20;
    expect_err(ov2, args, 2, "param B (written by the kernel) overlaps param A: B spans bytes "
               "0x7f0000101000..0x7f000010118f, A 0x7f0000001000..0xffffffffffffffff");
    tilert_module_free(m);
}
END_TEST

static Suite *runtime_suite(void)
{
    Suite *s = suite_create("runtime");
    TCase *tc = tcase_create("meta");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, meta_good);
    tcase_add_test(tc, meta_not_found);
    tcase_add_test(tc, null_is_noop);
    tcase_add_loop_test(tc, meta_bad, 0, (int)(sizeof bad_meta / sizeof bad_meta[0]));
    tcase_add_test(tc, meta_threads_range);
    tcase_add_test(tc, meta_any_whitespace);
    tcase_add_test(tc, args_wrapping_pointer);
    tcase_add_test(tc, load_null_arguments);
    tcase_add_test(tc, arch_for_capability);
    suite_add_tcase(s, tc);
    tc = tcase_create("check");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, args_ok_and_abi);
    tcase_add_test(tc, args_strided_and_offset);
    tcase_add_test(tc, args_count_and_kind);
    tcase_add_test(tc, args_dtype);
    tcase_add_test(tc, args_rank_and_dims);
    tcase_add_test(tc, args_layout);
    tcase_add_test(tc, args_device);
    tcase_add_test(tc, args_scalars);
    tcase_add_test(tc, grid_rules);
    tcase_add_test(tc, grid_through_check);
    tcase_add_test(tc, launch_meta_only);
    tcase_add_test(tc, driver_open);
    tcase_add_test(tc, load_files_missing);
    tcase_add_test(tc, load_files_bad_meta);
    tcase_add_test(tc, meta_writes);
    tcase_add_test(tc, args_overlap);
    tcase_add_test(tc, args_overlap_strided);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(runtime_suite());
}
