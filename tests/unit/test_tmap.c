/* test_tmap.c - libtilert's tensor maps without a GPU: the `tmap` and
 * `fallback` metadata records (good, and each malformed one with its
 * message and line), the launch plan's 128-byte slots, the
 * cuTensorMapEncodeTiled arguments computed from DLPack tensors, each
 * precondition (which param, which rule), the choice of the fallback, the
 * map cache, and whole launches through a fake driver that records what
 * cuLaunchKernel(Ex) receives. */
#define _POSIX_C_SOURCE 200809L   /* strdup */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tilert.h"
#include "runtime/rt.h"
#include "rtkit.h"

/* mm_tma reads A, B and C through tensor maps and falls back to mm; t3 has
 * a rank-3 map, a small align and no fallback; kz has a dim outside the grid. */
static const char *META =
    "tilec-meta 1\n"
    "kernel mm_tma\n"             /* line 2 */
    "arch sm_90a\n"
    "threads 384\n"
    "smem 131072\n"
    "cluster 2 1 1\n"
    "dim M\n"
    "dim N\n"
    "dim K\n"
    "param A tensor bf16 2 M K align 16\n"
    "param B tensor bf16 2 K N align 16\n"
    "param C tensor f32 2 M N align 16\n"
    "param scale scalar f32\n"
    "tmap A swizzle 128 box 128 64\n"
    "tmap B swizzle 128 box 64 64\n"
    "tmap C swizzle none box 64 32\n"
    "fallback mm\n"
    "grid M 128 cdiv ; N 128 cdiv ; 1\n"
    "end\n"
    "kernel mm\n"
    "arch sm_90a\n"
    "threads 128\n"
    "dim M\n"
    "dim N\n"
    "dim K\n"
    "param A tensor bf16 2 M K align 4\n"
    "param B tensor bf16 2 K N align 4\n"
    "param C tensor f32 2 M N align 4\n"
    "param scale scalar f32\n"
    "grid M 64 cdiv ; N 64 cdiv ; 1\n"
    "end\n"
    "kernel t3\n"
    "arch sm_90a\n"
    "threads 128\n"
    "dim B\n"
    "dim S\n"
    "param X tensor f16 3 B S 64 align 2\n"
    "tmap X swizzle 64 box 1 16 32\n"
    "grid S 16 cdiv ; B ; 1\n"
    "end\n"
    "kernel kz\n"
    "arch sm_90a\n"
    "threads 128\n"
    "dim M\n"
    "dim K\n"
    "param X tensor u8 2 M K align 16\n"
    "tmap X swizzle 32 box 8 32\n"
    "grid M 8 cdiv\n"
    "end\n";

static void set_strides(T *x, const int64_t *strides)
{
    x->t.strides = x->strides;
    memcpy(x->strides, strides, sizeof *strides * (size_t)x->t.ndim);
}

typedef struct MmArgs {
    T a, b, c;
    tilert_arg args[4];
} MmArgs;

/* Valid arguments for mm_tma with M=256, N=384, K=64. */
static void mm_args(MmArgs *m)
{
    mk_gemm(&m->a, &m->b, &m->c, m->args);
    m->args[3] = (tilert_arg){TILERT_ARG_FLOAT, {.f = 0.5}};
}

static tilert_module *mod;
static tilert_kernel *mm_tma, *mm, *t3, *kz;

static void setup(void)
{
    ck_assert_msg(tilert_module_from_meta(META, &mod) == TILERT_OK, "%s", tilert_last_error());
    ck_assert_int_eq(tilert_module_get_kernel(mod, "mm_tma", &mm_tma), TILERT_OK);
    ck_assert_int_eq(tilert_module_get_kernel(mod, "mm", &mm), TILERT_OK);
    ck_assert_int_eq(tilert_module_get_kernel(mod, "t3", &t3), TILERT_OK);
    ck_assert_int_eq(tilert_module_get_kernel(mod, "kz", &kz), TILERT_OK);
}

static void teardown(void)
{
    tilert_module_free(mod);
    mod = NULL;
}

/* OK, and the plan runs fallback `fb` for a reason containing `why`. */
static void expect_fallback(const tilert_kernel *k, const tilert_arg *args, size_t n,
                            const tilert_kernel *fb, const char *why, tilert_launch_plan *pl)
{
    char err[1024];
    tilert_status st = tilert_check_args(k, args, n, err, sizeof err, pl);
    ck_assert_msg(st == TILERT_OK, "status %d: %s", st, err);
    ck_assert_ptr_eq(pl->kernel, fb);
    ck_assert_msg(strstr(pl->fallback_reason, why) != NULL, "reason '%s', want '%s'",
                  pl->fallback_reason, why);
}

/* ---- metadata ---- */

START_TEST(meta_tmaps)
{
    ck_assert_uint_eq(tilert_kernel_num_tmaps(mm_tma), 3);
    ck_assert_uint_eq(tilert_kernel_num_tmaps(mm), 0);
    ck_assert_ptr_eq(tilert_kernel_fallback(mm_tma), mm);
    ck_assert_ptr_null(tilert_kernel_fallback(mm));
    ck_assert_ptr_null(tilert_kernel_fallback(t3));
    tilert_tmap_info ti;
    ck_assert_int_eq(tilert_kernel_tmap(mm_tma, 1, &ti), TILERT_OK);
    ck_assert_uint_eq(ti.param, 1);
    ck_assert_int_eq(ti.swizzle, 128);
    ck_assert_int_eq(ti.rank, 2);
    ck_assert(ti.box[0] == 64 && ti.box[1] == 64);
    ck_assert_int_eq(tilert_kernel_tmap(mm_tma, 2, &ti), TILERT_OK);
    ck_assert(ti.param == 2 && ti.swizzle == 0 && ti.box[0] == 64 && ti.box[1] == 32);
    ck_assert_int_eq(tilert_kernel_tmap(t3, 0, &ti), TILERT_OK);
    ck_assert(ti.rank == 3 && ti.swizzle == 64 && ti.box[0] == 1 && ti.box[1] == 16 && ti.box[2] == 32);
    ck_assert_int_eq(tilert_kernel_tmap(mm_tma, 3, &ti), TILERT_ERR_USAGE);
    ck_assert_int_eq(tilert_kernel_tmap(mm, 0, &ti), TILERT_ERR_USAGE);
    /* a fallback may be defined after the kernel naming it */
    tilert_module *m;
    ck_assert_int_eq(tilert_module_from_meta(
        "tilec-meta 1\nkernel a\narch sm_90a\nthreads 32\nfallback b\ngrid 1\nend\n"
        "kernel b\narch sm_80\nthreads 64\ngrid 1\nend\n", &m), TILERT_OK);
    ck_assert_ptr_eq(tilert_kernel_fallback(tilert_module_kernel_at(m, 0)), tilert_module_kernel_at(m, 1));
    tilert_module_free(m);
}
END_TEST

/* A kernel k with params X f32[N, 64], s f32, then the case's lines (from line 8). */
static const char *KHEAD = "tilec-meta 1\nkernel k\narch sm_90a\nthreads 128\ndim N\n"
                           "param X tensor f32 2 N 64 align 16\nparam s scalar f32\n";
/* The same params, for fallbacks (lines from the case's end on). */
static const char *FB = "grid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim N\n"
                        "param X tensor f32 2 N 64 align 4\nparam s scalar f32\ngrid 1\nend\n";

static const struct { const char *body; const char *want; } bad_meta[] = {
    {"tmap X box 4 64\n", "metadata line 8: expected 'tmap PARAM swizzle none|32|64|128 box B0 ..'"},
    {"tmap X swizzle none 4 64\n", "metadata line 8: expected 'tmap PARAM swizzle"},
    {"tmap Y swizzle none box 4 64\n", "metadata line 8: tmap: 'Y' is not a param of kernel k"},
    {"tmap s swizzle none box 4\n", "metadata line 8: tmap s: param s is a scalar; a tensor map describes a tensor"},
    {"tmap X swizzle 16 box 4 64\n", "metadata line 8: tmap X: swizzle must be none, 32, 64 or 128, not '16'"},
    {"tmap X swizzle none box 4\n", "metadata line 8: tmap X: box has 1 entries but param X has rank 2"},
    {"tmap X swizzle none box 4 64 1\n", "metadata line 8: tmap X: box has 3 entries but param X has rank 2"},
    {"tmap X swizzle none box 0 64\n", "metadata line 8: tmap X: box entry 0 is '0'; each must be an integer in 1..256"},
    {"tmap X swizzle none box 4 257\n", "metadata line 8: tmap X: box entry 1 is '257'"},
    {"tmap X swizzle none box 4 N\n", "metadata line 8: tmap X: box entry 1 is 'N'"},
    {"tmap X swizzle none box 4 5\n",
     "metadata line 8: tmap X: the inner box is 20 bytes (5 x f32); it must be a multiple of 16"},
    {"tmap X swizzle 128 box 4 64\n",
     "metadata line 8: tmap X: the inner box is 256 bytes (64 x f32), over the 128-byte swizzle span"},
    {"tmap X swizzle 32 box 4 16\n", "metadata line 8: tmap X: the inner box is 64 bytes (16 x f32), over the 32-byte"},
    {"tmap X swizzle none box 4 4\nparam Z scalar f32\n",
     "metadata line 9: kernel k: 'param' after a 'tmap' record (tmap records follow every param and dim)"},
    {"tmap X swizzle none box 4 4\ndim Q\n", "metadata line 9: kernel k: 'dim' after a 'tmap' record"},
    {"param W tensor f32 6 1 1 1 1 1 4 align 16\ntmap W swizzle none box 1 1 1 1 1 4\n",
     "metadata line 9: tmap W: param W has rank 6; a tensor map has at most 5 dims"},
    {"param W tensor mbar 1 4 align 8\ntmap W swizzle none box 2\n",
     "metadata line 9: tmap W: dtype mbar has no tensor-map element type"},
    {"fallback\n", "metadata line 8: expected 'fallback KERNEL'"},
    {"fallback 9f\n", "metadata line 8: expected 'fallback KERNEL'"},
    {"fallback k\n", "metadata line 8: kernel k: a kernel cannot be its own fallback"},
    {"fallback f\nfallback f\n", "metadata line 9: kernel k: second 'fallback' record"},
    {"fallback nope\ngrid 1\nend\n", "metadata line 8: kernel k: fallback nope is not a kernel of this module"},
    /* fallbacks that do not match (the rest of the module from the case) */
    {"fallback f\ngrid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim N\nparam X tensor f32 2 N 64 align 4\n"
     "param s scalar f32\ntmap X swizzle none box 1 4\ngrid 1\nend\n",
     "metadata line 8: kernel k: fallback f has tensor maps itself; a fallback takes none"},
    {"fallback f\ngrid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim N\ndim P\n"
     "param X tensor f32 2 N P align 4\nparam s scalar f32\ngrid 1\nend\n",
     "metadata line 8: kernel k: fallback f has 2 dims, not 1"},
    {"fallback f\ngrid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim P\n"
     "param X tensor f32 2 P 64 align 4\nparam s scalar f32\ngrid 1\nend\n",
     "metadata line 8: kernel k: fallback f dim 0 is P, not N"},
    {"fallback f\ngrid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim N\n"
     "param X tensor f32 2 N 64 align 4\ngrid 1\nend\n",
     "metadata line 8: kernel k: fallback f has 1 params, not 2"},
    {"fallback f\ngrid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim N\n"
     "param Y tensor f32 2 N 64 align 4\nparam s scalar f32\ngrid 1\nend\n",
     "metadata line 8: kernel k: fallback f param 0 is Y, not X"},
    {"fallback f\ngrid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim N\n"
     "param X tensor f16 2 N 64 align 4\nparam s scalar f32\ngrid 1\nend\n",
     "metadata line 8: kernel k: fallback f param X is tensor f16[N, 64], not tensor f32[N, 64]"},
    {"fallback f\ngrid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim N\n"
     "param X tensor f32 2 N 63 align 4\nparam s scalar f32\ngrid 1\nend\n",
     "metadata line 8: kernel k: fallback f param X is tensor f32[N, 63], not tensor f32[N, 64]"},
    {"fallback f\ngrid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim N\n"
     "param X tensor f32 3 N 64 1 align 4\nparam s scalar f32\ngrid 1\nend\n",
     "metadata line 8: kernel k: fallback f param X is tensor f32[N, 64, 1], not tensor f32[N, 64]"},
    {"fallback f\ngrid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim N\n"
     "param X tensor f32 2 N 64 align 4\nparam s scalar i32\ngrid 1\nend\n",
     "metadata line 8: kernel k: fallback f param s is scalar i32, not scalar f32"},
    {"fallback f\ngrid 1\nend\nkernel f\narch sm_80\nthreads 32\ndim N\n"
     "param X tensor f32 2 N 64 align 4\nparam s tensor f32 1 N align 4\ngrid 1\nend\n",
     "metadata line 8: kernel k: fallback f param s is tensor f32[N], not scalar f32"},
};

START_TEST(meta_bad)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s", KHEAD, bad_meta[_i].body);
    expect_meta_err(text, bad_meta[_i].want, _i);
}
END_TEST

START_TEST(meta_fallback_ok_and_limit)
{
    char text[4096];
    tilert_module *m;
    snprintf(text, sizeof text, "%sfallback f\ntmap X swizzle 64 box 256 16\n%s", KHEAD, FB);
    ck_assert_msg(tilert_module_from_meta(text, &m) == TILERT_OK, "%s", tilert_last_error());
    tilert_module_free(m);
    /* 16 maps (the same param may have several), then one more */
    size_t len = (size_t)snprintf(text, sizeof text, "%s", KHEAD);
    for (int i = 0; i < TILERT_MAX_TMAPS; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "tmap X swizzle none box %d 4\n", i + 1);
    snprintf(text + len, sizeof text - len, "grid 1\nend\n");
    ck_assert_msg(tilert_module_from_meta(text, &m) == TILERT_OK, "%s", tilert_last_error());
    ck_assert_uint_eq(tilert_kernel_num_tmaps(tilert_module_kernel_at(m, 0)), TILERT_MAX_TMAPS);
    tilert_module_free(m);
    snprintf(text + len, sizeof text - len, "tmap X swizzle none box 1 4\ngrid 1\nend\n");
    ck_assert_int_eq(tilert_module_from_meta(text, &m), TILERT_ERR_META);
    ck_assert_ptr_nonnull(strstr(tilert_last_error(), "metadata line 24: kernel k: more than 16 tmaps"));
}
END_TEST

/* The GPU test's metadata (tests/gpu/tmap_ref.meta) parses here too. */
START_TEST(gpu_test_meta)
{
    char path[4096], text[4096];
    snprintf(path, sizeof path, "%s/tests/gpu/tmap_ref.meta", TILEC_SOURCE_DIR);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    tilert_module *m;
    tilert_kernel *tma, *sw, *plain;
    ck_assert_msg(tilert_module_from_meta(text, &m) == TILERT_OK, "%s", tilert_last_error());
    ck_assert_int_eq(tilert_module_get_kernel(m, "copy_tma", &tma), TILERT_OK);
    ck_assert_int_eq(tilert_module_get_kernel(m, "copy_tma_sw128", &sw), TILERT_OK);
    ck_assert_int_eq(tilert_module_get_kernel(m, "copy_plain", &plain), TILERT_OK);
    ck_assert(tilert_kernel_fallback(tma) == plain && tilert_kernel_fallback(sw) == plain);
    tilert_tmap_info ti;
    ck_assert_int_eq(tilert_kernel_tmap(sw, 0, &ti), TILERT_OK);
    ck_assert(ti.param == 0 && ti.swizzle == 128 && ti.box[0] == 16 && ti.box[1] == 32);
    tilert_module_free(m);
}
END_TEST

/* ---- the launch plan ---- */

START_TEST(plan_slots)
{
    MmArgs a;
    mm_args(&a);
    tilert_launch_plan pl;
    ck_assert_int_eq(tilert_check_args(mm_tma, a.args, 4, NULL, 0, &pl), TILERT_OK);
    ck_assert_ptr_eq(pl.kernel, mm_tma);
    ck_assert_str_eq(pl.fallback_reason, "");
    /* ORDER ABI: A ptr, A s0, B ptr, B s0, C ptr, C s0, scale, M, N, K, then the maps of A, B, C */
    static const uint8_t size[] = {8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 128, 128, 128};
    static const uint32_t off[] = {0, 8, 16, 24, 32, 40, 48, 52, 56, 60, 64, 192, 320};
    ck_assert_uint_eq(pl.nslots, 13);
    for (int i = 0; i < 13; i++) {
        ck_assert_msg(pl.slot_size[i] == size[i], "slot %d size %d", i, pl.slot_size[i]);
        ck_assert_msg(pl.slot_offset[i] == off[i], "slot %d offset %u", i, pl.slot_offset[i]);
    }
    ck_assert(pl.slot[10] == 0 && pl.slot[11] == 1 && pl.slot[12] == 2);   /* tmap[] indexes */
    ck_assert_uint_eq(pl.param_bytes, 448);
    ck_assert_uint_eq(pl.ntmaps, 3);
    ck_assert(pl.grid[0] == 2 && pl.grid[1] == 3 && pl.block[0] == 384 && pl.cluster[0] == 2);

    /* t3: X ptr @0, strides @8 @16, B @24, S @28, the map at the next 64 */
    T x;
    mk(&x, kDLFloat, 16, 3, (int64_t[]){3, 100, 64});
    tilert_arg arg = {TILERT_ARG_TENSOR, {.tensor = &x.t}};
    ck_assert_int_eq(tilert_check_args(t3, &arg, 1, NULL, 0, &pl), TILERT_OK);
    ck_assert_uint_eq(pl.nslots, 6);
    ck_assert(pl.slot_offset[4] == 28 && pl.slot_offset[5] == 64 && pl.slot_size[5] == 128);
    ck_assert_uint_eq(pl.param_bytes, 192);
}
END_TEST

/* The exact arguments of cuTensorMapEncodeTiled: innermost first, bytes. */
START_TEST(encode_args)
{
    MmArgs a;
    mm_args(&a);
    tilert_launch_plan pl;
    ck_assert_int_eq(tilert_check_args(mm_tma, a.args, 4, NULL, 0, &pl), TILERT_OK);
    const tilert_tmap_args *ta = &pl.tmap[0];
    ck_assert_uint_eq(ta->param, 0);
    ck_assert_uint_eq(ta->rank, 2);
    ck_assert_int_eq(ta->data_type, 9);                  /* CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 */
    ck_assert_uint_eq(ta->global_address, (uint64_t)(uintptr_t)FAKE_PTR);
    ck_assert(ta->global_dim[0] == 64 && ta->global_dim[1] == 256);
    ck_assert_uint_eq(ta->global_strides[0], 128);       /* 64 bf16 */
    ck_assert(ta->box_dim[0] == 64 && ta->box_dim[1] == 128);
    ck_assert(ta->element_strides[0] == 1 && ta->element_strides[1] == 1);
    ck_assert_int_eq(ta->interleave, 0);                 /* NONE */
    ck_assert_int_eq(ta->swizzle, 3);                    /* 128B */
    ck_assert_int_eq(ta->l2_promotion, 3);               /* L2_256B */
    ck_assert_int_eq(ta->oob_fill, 0);                   /* NONE: zeros */
    ta = &pl.tmap[2];
    ck_assert(ta->param == 2 && ta->data_type == 7 && ta->swizzle == 0);   /* FLOAT32 */
    ck_assert(ta->global_dim[0] == 384 && ta->global_dim[1] == 256 && ta->global_strides[0] == 1536);
    ck_assert(ta->box_dim[0] == 32 && ta->box_dim[1] == 64);

    /* a padded, offset rank-3 view: strides and address as given */
    T x;
    mk(&x, kDLFloat, 16, 3, (int64_t[]){3, 100, 64});
    set_strides(&x, (int64_t[]){100 * 72, 72, 1});
    x.t.byte_offset = 48;
    tilert_arg arg = {TILERT_ARG_TENSOR, {.tensor = &x.t}};
    ck_assert_int_eq(tilert_check_args(t3, &arg, 1, NULL, 0, &pl), TILERT_OK);
    ta = &pl.tmap[0];
    ck_assert(ta->rank == 3 && ta->data_type == 6 && ta->swizzle == 2);    /* FLOAT16, 64B */
    ck_assert_uint_eq(ta->global_address, (uint64_t)(uintptr_t)FAKE_PTR + 48);
    ck_assert(ta->global_dim[0] == 64 && ta->global_dim[1] == 100 && ta->global_dim[2] == 3);
    ck_assert(ta->global_strides[0] == 144 && ta->global_strides[1] == 14400);
    ck_assert(ta->box_dim[0] == 32 && ta->box_dim[1] == 16 && ta->box_dim[2] == 1);
    ck_assert(ta->element_strides[2] == 1);

    /* extents of 1: their strides are never used, and are replaced by the
     * smallest multiple of 16 covering the dims inside (here 128 and 128) */
    x.shape[0] = 1;
    x.shape[1] = 1;
    set_strides(&x, (int64_t[]){7, 3, 1});
    ck_assert_int_eq(tilert_check_args(t3, &arg, 1, NULL, 0, &pl), TILERT_OK);
    ck_assert(pl.tmap[0].global_strides[0] == 128 && pl.tmap[0].global_strides[1] == 128);
    /* u8 [M, 40]: inner 40 bytes, then an extent-1 row: 48 */
    T z;
    mk(&z, kDLUInt, 8, 2, (int64_t[]){1, 40});
    set_strides(&z, (int64_t[]){40, 1});
    arg.u.tensor = &z.t;
    ck_assert_int_eq(tilert_check_args(kz, &arg, 1, NULL, 0, &pl), TILERT_OK);
    ck_assert(pl.tmap[0].data_type == 0 && pl.tmap[0].swizzle == 1 && pl.tmap[0].global_strides[0] == 48);
}
END_TEST

/* Every dtype has its CUtensorMapDataType (cuda.h's values). */
START_TEST(data_types)
{
    static const struct { const char *dt; int want; } rows[] = {
        {"bool", 0}, {"i8", 0}, {"u8", 0}, {"f8e4m3", 0}, {"f8e5m2", 0}, {"i16", 1}, {"u16", 1},
        {"u32", 2}, {"i32", 3}, {"u64", 4}, {"i64", 5}, {"f16", 6}, {"f32", 7}, {"f64", 8},
        {"bf16", 9}, {"mbar", -1}, {"token", -1},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        ck_assert_msg(tilert_tmap_data_type(tilert_dtype_parse(rows[i].dt)) == rows[i].want, "%s", rows[i].dt);
}
END_TEST

/* ---- preconditions: which param, which rule ---- */

START_TEST(preconditions)
{
    T x;
    tilert_arg arg = {TILERT_ARG_TENSOR, {.tensor = &x.t}};
    mk(&x, kDLFloat, 16, 3, (int64_t[]){3, 100, 64});
    x.t.byte_offset = 8;      /* align 2 holds, the map's 16 does not */
    expect_err(t3, &arg, 1, "kernel t3: param X: data address 0x7f0000001008 (data + byte_offset 8) "
               "is not 16-byte aligned, as a tensor map needs");
    mk(&x, kDLFloat, 16, 3, (int64_t[]){3, 100, 64});
    set_strides(&x, (int64_t[]){100 * 65, 65, 1});
    expect_err(t3, &arg, 1, "kernel t3: param X dim 1: stride 65 elements (130 bytes) is not a "
               "multiple of 16 bytes, as a tensor map needs");
    set_strides(&x, (int64_t[]){100 * 64 + 4, 64, 1});
    expect_err(t3, &arg, 1, "param X dim 0: stride 6404 elements (12808 bytes) is not a multiple of 16");
    set_strides(&x, (int64_t[]){1ll << 39, 64, 1});
    expect_err(t3, &arg, 1, "kernel t3: param X dim 0: stride of 1099511627776 bytes is not below "
               "2^40, as a tensor map needs");
    set_strides(&x, (int64_t[]){(1ll << 39) - 8, 64, 1});
    tilert_launch_plan pl;
    ck_assert_int_eq(tilert_check_args(t3, &arg, 1, NULL, 0, &pl), TILERT_OK);
    ck_assert_uint_eq(pl.tmap[0].global_strides[1], (1ull << 40) - 16);
    /* the kernel's own rules come first: align (here 16) before the map's */
    MmArgs a;
    mm_args(&a);
    a.a.t.byte_offset = 2;
    expect_err(mm_tma, a.args, 4, "kernel mm_tma: param A: data address 0x7f0000001002 (data + "
               "byte_offset 2) is not aligned to 16 bytes as the kernel assumes; its fallback "
               "refuses the arguments too: kernel mm: param A: data address 0x7f0000001002 "
               "(data + byte_offset 2) is not aligned to 4 bytes");
    /* a rule of the params is not a reason for the fallback */
    mm_args(&a);
    a.b.t.dtype = (DLDataType){kDLFloat, 16, 1};
    expect_err(mm_tma, a.args, 4, "kernel mm_tma: param B: tensor dtype is float16 but the kernel wants bf16[K, N]");
    ck_assert_ptr_null(strstr(tilert_last_error(), "fallback"));
}
END_TEST

/* An empty tensor has no map: fine in an empty launch, else the fallback or an error. */
START_TEST(empty_tensors)
{
    T x;
    tilert_arg arg = {TILERT_ARG_TENSOR, {.tensor = &x.t}};
    tilert_launch_plan pl;
    mk(&x, kDLFloat, 16, 3, (int64_t[]){3, 0, 64});
    x.t.data = NULL;
    ck_assert_int_eq(tilert_check_args(t3, &arg, 1, NULL, 0, &pl), TILERT_OK);
    ck_assert(pl.grid[0] == 0 && pl.ntmaps == 1 && pl.tmap[0].rank == 0 && pl.tmap[0].param == 0);
    ck_assert_ptr_eq(pl.kernel, t3);
    mk(&x, kDLUInt, 8, 2, (int64_t[]){64, 0});   /* kz: grid M/8 does not see K */
    expect_err(kz, &arg, 1, "kernel kz: param X: an empty tensor has no tensor map, and the grid "
               "(8, 1, 1) is not empty");
    MmArgs a;
    mm_args(&a);
    a.a.shape[1] = a.b.shape[0] = 0;              /* K = 0: C = 0 still needs the grid */
    expect_fallback(mm_tma, a.args, 4, mm, "param A: an empty tensor has no tensor map, and the "
                    "grid (2, 3, 1) is not empty", &pl);
    ck_assert(pl.grid[0] == 4 && pl.grid[1] == 6 && pl.ntmaps == 0);
}
END_TEST

/* ---- the fallback ---- */

START_TEST(fallback_choice)
{
    MmArgs a;
    tilert_launch_plan pl;
    mm_args(&a);
    set_strides(&a.b, (int64_t[]){385, 1});       /* a row-padded view: 770-byte rows */
    a.b.shape[1] = 384;
    expect_fallback(mm_tma, a.args, 4, mm, "param B dim 0: stride 385 elements (770 bytes) is "
                    "not a multiple of 16 bytes, as a tensor map needs", &pl);
    /* the plan is mm's: its grid, block, cluster, slots; no maps */
    ck_assert(pl.grid[0] == 4 && pl.grid[1] == 6 && pl.block[0] == 128 && pl.cluster[0] == 1);
    ck_assert(pl.smem == 0 && pl.ntmaps == 0 && pl.nslots == 10 && pl.param_bytes == 64);
    ck_assert_uint_eq(pl.slot[3], 385);
    mm_args(&a);
    a.a.t.byte_offset = 4;                        /* mm_tma's align 16 fails, mm's 4 holds */
    expect_fallback(mm_tma, a.args, 4, mm, "param A: data address 0x7f0000001004 (data + "
                    "byte_offset 4) is not aligned to 16 bytes as the kernel assumes", &pl);
    ck_assert_uint_eq(pl.slot[0], (uint64_t)(uintptr_t)FAKE_PTR + 4);
    /* the first broken rule is the reason */
    set_strides(&a.c, (int64_t[]){390, 1});
    expect_fallback(mm_tma, a.args, 4, mm, "param A: data address", &pl);
    /* the fallback's own checks still apply: its grid */
    mm_args(&a);
    set_strides(&a.b, (int64_t[]){385, 1});
    a.b.shape[1] = a.c.shape[1] = 64 * 65536;      /* mm: grid y 65536; mm_tma: 32768 */
    expect_err(mm_tma, a.args, 4, "kernel mm_tma: param B dim 0: stride 385 elements (770 bytes) "
               "is not a multiple of 16 bytes, as a tensor map needs; its fallback refuses the "
               "arguments too: kernel mm: grid y is 65536, outside 0..65535");
    /* a reason forced at launch (the driver refused a map) */
    mm_args(&a);
    ck_assert_int_eq(tilert_check_plan(mm_tma, a.args, 4, NULL, 0, &pl, "param C: refused"), TILERT_OK);
    ck_assert_ptr_eq(pl.kernel, mm);
    ck_assert_str_eq(pl.fallback_reason, "param C: refused");
    T x;
    mk(&x, kDLFloat, 16, 3, (int64_t[]){3, 100, 64});
    tilert_arg arg = {TILERT_ARG_TENSOR, {.tensor = &x.t}};
    ck_assert_int_eq(tilert_check_plan(t3, &arg, 1, NULL, 0, &pl, "param X: refused"), TILERT_ERR_ARGS);
    ck_assert_str_eq(tilert_last_error(), "kernel t3: param X: refused");
    /* never launched: no variant */
    char why[64] = "x";
    ck_assert_ptr_null(tilert_kernel_last_variant(mm_tma, why, sizeof why));
    ck_assert_str_eq(why, "");
}
END_TEST

/* ---- a fake driver: the map cache and whole launches ---- */

static int n_encode, n_replace, n_launch, encode_result;
static tilert_tmap_args last_encode;
static unsigned char launched[1024];      /* the packed parameters of the last launch */
static const char *launched_func;
static unsigned launched_grid[3], launched_cluster;
static const tilert_launch_plan *expect_plan;

static CUresult fake_encode(void *map, int dt, unsigned rank, void *addr, const uint64_t *dim,
                            const uint64_t *strides, const unsigned *box, const unsigned *es,
                            int il, int sw, int l2, int oob)
{
    n_encode++;
    if (encode_result)
        return encode_result;
    ck_assert_msg((uintptr_t)map % 64 == 0, "map at %p", map);
    tilert_tmap_args *a = &last_encode;
    memset(a, 0, sizeof *a);
    *a = (tilert_tmap_args){.rank = rank, .data_type = dt, .global_address = (uint64_t)(uintptr_t)addr,
                            .interleave = il, .swizzle = sw, .l2_promotion = l2, .oob_fill = oob};
    for (unsigned i = 0; i < rank; i++) {
        a->global_dim[i] = dim[i];
        a->box_dim[i] = box[i];
        a->element_strides[i] = es[i];
        if (i + 1 < rank)
            a->global_strides[i] = strides[i];
    }
    uint64_t m[16] = {0xC0DE, (uint64_t)(uintptr_t)addr, dim[0], box[0], (uint64_t)sw};
    memcpy(map, m, sizeof m);
    return CUDA_SUCCESS;
}

static CUresult fake_replace(void *map, void *addr)
{
    n_replace++;
    ((uint64_t *)map)[1] = (uint64_t)(uintptr_t)addr;
    return CUDA_SUCCESS;
}

static CUresult fake_error_name(CUresult r, const char **s)
{
    *s = r == 1 ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_UNKNOWN";
    return CUDA_SUCCESS;
}

static CUresult fake_error_string(CUresult r, const char **s)
{
    *s = "invalid argument";
    return CUDA_SUCCESS;
}

static CUresult fake_ok_ctx(CUcontext c) { return CUDA_SUCCESS; }
static CUresult fake_ctx_current(CUcontext *c) { *c = (CUcontext)0x1000; return CUDA_SUCCESS; }
static CUresult fake_ctx_pop(CUcontext *c) { *c = (CUcontext)0x1000; return CUDA_SUCCESS; }
static CUresult fake_ctx_device(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
static CUresult fake_attr(int *v, int attr, CUdevice d)
{
    *v = attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
    return CUDA_SUCCESS;
}
static CUresult fake_name(char *s, int n, CUdevice d) { snprintf(s, (size_t)n, "fake"); return CUDA_SUCCESS; }
static CUresult fake_load(CUmodule *m, const void *ptx, unsigned n, int *o, void **v)
{
    *m = (CUmodule)0x2000;
    return CUDA_SUCCESS;
}
static CUresult fake_unload(CUmodule m) { return CUDA_SUCCESS; }
static CUresult fake_get_function(CUfunction *f, CUmodule m, const char *name)
{
    *f = (CUfunction)(uintptr_t)name;    /* the name itself: the launch says which kernel ran */
    return CUDA_SUCCESS;
}
static CUresult fake_func_attr(int *v, int attr, CUfunction f) { *v = 1024; return CUDA_SUCCESS; }
static CUresult fake_func_set(CUfunction f, int attr, int v) { return CUDA_SUCCESS; }
static CUresult fake_pointer(void *v, int attr, CUdeviceptr p) { *(int *)v = 0; return CUDA_SUCCESS; }

/* Pack kernelParams as the driver would, by the plan the test expects. */
static void capture(CUfunction f, void **params, unsigned gx, unsigned gy, unsigned gz)
{
    n_launch++;
    launched_func = (const char *)f;
    launched_grid[0] = gx, launched_grid[1] = gy, launched_grid[2] = gz;
    memset(launched, 0xAA, sizeof launched);
    for (size_t i = 0; i < expect_plan->nslots; i++) {
        if (expect_plan->slot_size[i] == TILERT_TMAP_BYTES)
            ck_assert_msg((uintptr_t)params[i] % 64 == 0, "map param %zu at %p", i, params[i]);
        memcpy(launched + expect_plan->slot_offset[i], params[i], expect_plan->slot_size[i]);
    }
}

static CUresult fake_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned smem, CUstream s, void **params,
                            void **extra)
{
    launched_cluster = 1;
    capture(f, params, gx, gy, gz);
    return CUDA_SUCCESS;
}

static CUresult fake_launch_ex(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
    launched_cluster = cfg->attrs[0].value.clusterDim.x;
    capture(f, params, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ);
    return CUDA_SUCCESS;
}

static tilert_driver fake;

static void fake_setup(void)
{
    setup();
    memset(&fake, 0, sizeof fake);
    fake.TensorMapEncodeTiled = fake_encode;
    fake.TensorMapReplaceAddress = fake_replace;
    fake.GetErrorName = fake_error_name;
    fake.GetErrorString = fake_error_string;
    fake.CtxGetCurrent = fake_ctx_current;
    fake.CtxPushCurrent = fake_ok_ctx;
    fake.CtxPopCurrent = fake_ctx_pop;
    fake.CtxGetDevice = fake_ctx_device;
    fake.DeviceGetAttribute = fake_attr;
    fake.DeviceGetName = fake_name;
    fake.ModuleLoadDataEx = fake_load;
    fake.ModuleUnload = fake_unload;
    fake.ModuleGetFunction = fake_get_function;
    fake.FuncGetAttribute = fake_func_attr;
    fake.FuncSetAttribute = fake_func_set;
    fake.PointerGetAttribute = fake_pointer;
    fake.LaunchKernel = fake_launch;
    fake.LaunchKernelEx = fake_launch_ex;
    mod->drv = &fake;               /* launchable through the fake */
    mod->ptx = strdup("");
    n_encode = n_replace = n_launch = encode_result = 0;
}

static tilert_status get(tilert_kernel *k, size_t j, CUcontext ctx, const tilert_tmap_args *a,
                         uint64_t *map, char *why)
{
    return tilert_tmap_get(&fake, k, j, ctx, a, map, why, 256);
}

START_TEST(cache)
{
    MmArgs a;
    mm_args(&a);
    tilert_launch_plan pl;
    ck_assert_int_eq(tilert_check_args(mm_tma, a.args, 4, NULL, 0, &pl), TILERT_OK);
    _Alignas(64) uint64_t map[16];
    char why[256];
    CUcontext c1 = (CUcontext)0x1000, c2 = (CUcontext)0x2000;
    ck_assert_int_eq(get(mm_tma, 0, c1, &pl.tmap[0], map, why), TILERT_OK);
    ck_assert_int_eq(n_encode, 1);
    last_encode.param = pl.tmap[0].param;
    ck_assert_msg(memcmp(&last_encode, &pl.tmap[0], sizeof last_encode) == 0, "the driver got other arguments");
    ck_assert(map[0] == 0xC0DE && map[1] == (uint64_t)(uintptr_t)FAKE_PTR);
    memset(map, 0, sizeof map);
    ck_assert_int_eq(get(mm_tma, 0, c1, &pl.tmap[0], map, why), TILERT_OK);    /* a hit */
    ck_assert_int_eq(n_encode, 1);
    ck_assert(map[0] == 0xC0DE && map[1] == (uint64_t)(uintptr_t)FAKE_PTR);
    ck_assert_int_eq(get(mm_tma, 1, c1, &pl.tmap[1], map, why), TILERT_OK);    /* another map */
    ck_assert_int_eq(get(mm_tma, 0, c2, &pl.tmap[0], map, why), TILERT_OK);    /* another context */
    ck_assert_int_eq(n_encode, 3);
    tilert_tmap_args moved = pl.tmap[0];                    /* only the address changes */
    moved.global_address += 4096;
    ck_assert_int_eq(get(mm_tma, 0, c1, &moved, map, why), TILERT_OK);
    ck_assert(n_encode == 3 && n_replace == 1 && map[1] == moved.global_address && map[0] == 0xC0DE);
    ck_assert_int_eq(get(mm_tma, 0, c1, &moved, map, why), TILERT_OK);         /* now cached */
    ck_assert(n_encode == 3 && n_replace == 1);
    fake.TensorMapReplaceAddress = NULL;                    /* optional: encode instead */
    moved.global_address += 4096;
    ck_assert_int_eq(get(mm_tma, 0, c1, &moved, map, why), TILERT_OK);
    ck_assert(n_encode == 4 && n_replace == 1 && map[1] == moved.global_address);
    /* four entries per map, replaced round robin: the oldest (c1, FAKE_PTR) goes */
    tilert_tmap_args other = pl.tmap[0];
    other.global_dim[1] = 128;
    ck_assert_int_eq(get(mm_tma, 0, c1, &other, map, why), TILERT_OK);
    ck_assert_int_eq(n_encode, 5);
    ck_assert_int_eq(get(mm_tma, 0, c1, &pl.tmap[0], map, why), TILERT_OK);
    ck_assert_int_eq(n_encode, 6);
    /* the driver refuses; the driver lacks the entry point */
    encode_result = 1;
    other.global_dim[1] = 64;
    ck_assert_int_eq(get(mm_tma, 0, c1, &other, map, why), TILERT_ERR_CUDA);
    ck_assert_msg(strstr(why, "param A: cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE") == why, "%s", why);
    fake.TensorMapEncodeTiled = NULL;
    ck_assert_int_eq(get(mm_tma, 0, c1, &other, map, why), TILERT_ERR_NO_DRIVER);
    ck_assert_str_eq(why, "param A: the CUDA driver has no cuTensorMapEncodeTiled (a driver older than CUDA 12)");
    ck_assert_int_eq(get(mm_tma, 0, c1, &pl.tmap[0], map, why), TILERT_OK);    /* still cached */
}
END_TEST

/* tilert_launch on the fake: what cuLaunchKernelEx receives, and last_variant. */
START_TEST(launch_packing)
{
    MmArgs a;
    mm_args(&a);
    tilert_launch_plan pl;
    ck_assert_int_eq(tilert_check_args(mm_tma, a.args, 4, NULL, 0, &pl), TILERT_OK);
    expect_plan = &pl;
    ck_assert_msg(tilert_launch(mm_tma, a.args, 4, NULL) == TILERT_OK, "%s", tilert_last_error());
    ck_assert(n_launch == 1 && n_encode == 3 && launched_cluster == 2);
    ck_assert_str_eq(launched_func, "mm_tma");
    uint64_t v;
    memcpy(&v, launched + 8, 8);
    ck_assert_uint_eq(v, 64);                             /* A's row stride */
    for (int j = 0; j < 3; j++) {                         /* the maps, by value */
        uint64_t m[16];
        memcpy(m, launched + pl.slot_offset[10 + j], sizeof m);
        ck_assert(m[0] == 0xC0DE && m[2] == pl.tmap[j].global_dim[0] && m[3] == pl.tmap[j].box_dim[0]);
    }
    char why[256] = "x";
    ck_assert_ptr_eq(tilert_kernel_last_variant(mm_tma, why, sizeof why), mm_tma);
    ck_assert_str_eq(why, "");
    ck_assert_int_eq(tilert_launch(mm_tma, a.args, 4, NULL), TILERT_OK);
    ck_assert(n_launch == 2 && n_encode == 3);            /* the same tensors: no encoding */

    /* a misaligned view: mm runs, and says why */
    a.a.t.byte_offset = 4;
    ck_assert_int_eq(tilert_check_args(mm_tma, a.args, 4, NULL, 0, &pl), TILERT_OK);
    ck_assert_int_eq(tilert_launch(mm_tma, a.args, 4, NULL), TILERT_OK);
    ck_assert(n_launch == 3 && n_encode == 3 && launched_cluster == 1);
    ck_assert_str_eq(launched_func, "mm");
    ck_assert(launched_grid[0] == 4 && launched_grid[1] == 6);
    memcpy(&v, launched, 8);
    ck_assert_uint_eq(v, (uint64_t)(uintptr_t)FAKE_PTR + 4);
    ck_assert_ptr_eq(tilert_kernel_last_variant(mm_tma, why, sizeof why), mm);
    ck_assert_msg(strstr(why, "param A: data address 0x7f0000001004") == why, "%s", why);
    ck_assert_ptr_null(tilert_kernel_last_variant(mm, NULL, 0));

    /* the driver refuses a map at launch: the fallback, with the driver's word */
    mm_args(&a);
    a.c.shape[0] = a.a.shape[0] = 512;                    /* new arguments: encoded again */
    encode_result = 1;
    ck_assert_int_eq(tilert_check_plan(mm_tma, a.args, 4, NULL, 0, &pl, "x"), TILERT_OK);
    ck_assert_int_eq(tilert_launch(mm_tma, a.args, 4, NULL), TILERT_OK);
    ck_assert_str_eq(launched_func, "mm");
    ck_assert_ptr_eq(tilert_kernel_last_variant(mm_tma, why, sizeof why), mm);
    ck_assert_msg(strstr(why, "param A: cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE") == why, "%s", why);
    /* no entry point: the fallback too; without a fallback an error naming the param */
    fake.TensorMapEncodeTiled = NULL;
    ck_assert_int_eq(tilert_launch(mm_tma, a.args, 4, NULL), TILERT_OK);
    ck_assert_ptr_eq(tilert_kernel_last_variant(mm_tma, why, sizeof why), mm);
    ck_assert_str_eq(why, "param A: the CUDA driver has no cuTensorMapEncodeTiled (a driver older than CUDA 12)");
    T x;
    mk(&x, kDLFloat, 16, 3, (int64_t[]){3, 100, 64});
    tilert_arg arg = {TILERT_ARG_TENSOR, {.tensor = &x.t}};
    int launches = n_launch;
    ck_assert_int_eq(tilert_launch(t3, &arg, 1, NULL), TILERT_ERR_NO_DRIVER);
    ck_assert_str_eq(tilert_last_error(), "kernel t3: param X: the CUDA driver has no "
                     "cuTensorMapEncodeTiled (a driver older than CUDA 12)");
    fake.TensorMapEncodeTiled = fake_encode;
    ck_assert_int_eq(tilert_launch(t3, &arg, 1, NULL), TILERT_ERR_CUDA);
    ck_assert_msg(strstr(tilert_last_error(), "kernel t3: param X: cuTensorMapEncodeTiled failed: "
                         "CUDA_ERROR_INVALID_VALUE") != NULL, "%s", tilert_last_error());
    ck_assert_int_eq(n_launch, launches);                 /* nothing launched */
    ck_assert_ptr_null(tilert_kernel_last_variant(t3, NULL, 0));
    /* an empty launch: nothing runs, the kernel is recorded */
    encode_result = 0;
    x.shape[1] = 0;
    ck_assert_int_eq(tilert_launch(t3, &arg, 1, NULL), TILERT_OK);
    ck_assert_int_eq(n_launch, launches);
    ck_assert_ptr_eq(tilert_kernel_last_variant(t3, NULL, 0), t3);
}
END_TEST

static Suite *tmap_suite(void)
{
    Suite *s = suite_create("tmap");
    TCase *tc = tcase_create("meta");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, meta_tmaps);
    tcase_add_loop_test(tc, meta_bad, 0, (int)(sizeof bad_meta / sizeof bad_meta[0]));
    tcase_add_test(tc, meta_fallback_ok_and_limit);
    tcase_add_test(tc, gpu_test_meta);
    suite_add_tcase(s, tc);
    tc = tcase_create("check");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, plan_slots);
    tcase_add_test(tc, encode_args);
    tcase_add_test(tc, data_types);
    tcase_add_test(tc, preconditions);
    tcase_add_test(tc, empty_tensors);
    tcase_add_test(tc, fallback_choice);
    suite_add_tcase(s, tc);
    tc = tcase_create("driver");
    tcase_add_checked_fixture(tc, fake_setup, teardown);
    tcase_add_test(tc, cache);
    tcase_add_test(tc, launch_packing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(tmap_suite());
}
