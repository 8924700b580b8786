/* test_f8_convert.c - the code generator's f8 conversions (cg_convert,
 * cg_f8_to_f16_bits: integer and exact float steps, no f8 instruction) run
 * on the host and compared with the interpreter's (tc_store_elem /
 * tc_load_elem, ir/numeric.c) bit for bit:
 *   - every e4m3 and e5m2 byte -> f16 bits, -> f32;
 *   - f32 -> e4m3 and e5m2 for every f16 value (every f8 value, every tie
 *     between two f8 neighbours, the overflow edges, subnormals, inf, NaN)
 *     and for 2^19 bit patterns spread over all f32 values;
 *   - f64 -> e4m3 and e5m2 for the same values and for their neighbours
 *     one f64 ulp away (a value just above a tie must round up: no double
 *     rounding through f32).
 * The functions are built with the code generator's own builder calls into
 * a host module, a main that reads inputs from stdin and writes results to
 * stdout is appended as LLVM IR text, and LLVM's `lli` runs it. Skipped
 * (the test passes with a note) where lli is not installed. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>

#include "check_main.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/cg_internal.h"

static const char *lli_path(void)
{
    static const char *const cands[] = { "/usr/lib/llvm-22/bin/lli", "/usr/bin/lli-22", "/usr/bin/lli" };
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++)
        if (access(cands[i], X_OK) == 0)
            return cands[i];
    return NULL;
}

/* fn(x): cg_convert(x, from, to) returned as its bits (i8 / i16 / i32). */
static void add_fn(Cg *cg, const char *name, DType from, DType to, LLVMTypeRef argt, LLVMTypeRef rett)
{
    LLVMTypeRef fty = LLVMFunctionType(rett, &argt, 1, 0);
    LLVMValueRef fn = LLVMAddFunction(cg->mod, name, fty);
    LLVMPositionBuilderAtEnd(cg->b, LLVMAppendBasicBlockInContext(cg->ctx, fn, "entry"));
    LLVMValueRef x = LLVMGetParam(fn, 0), r;
    if (to == DT_F16 && from != DT_F16)   /* the f16 bits straight from the table path */
        r = cg_f8_to_f16_bits(cg, x, from);
    else
        r = cg_convert(cg, x, from, to);
    if (LLVMTypeOf(r) != rett)
        r = LLVMBuildBitCast(cg->b, r, rett, "");
    LLVMBuildRet(cg->b, r);
}

/* main: reads records of `in` bytes until EOF, calls @NAME on each and
 * writes `out` bytes of the result. */
static void main_ir(char *buf, size_t n, const char *fn, const char *argt, int in, const char *rett, int out)
{
    snprintf(buf, n,
             "declare i64 @read(i32, ptr, i64)\n"
             "declare i64 @write(i32, ptr, i64)\n"
             "define i32 @main() {\n"
             "entry:\n"
             "  %%ib = alloca [65536 x i8], align 8\n"
             "  %%ob = alloca [65536 x i8], align 8\n"
             "  br label %%chunk\n"
             "chunk:\n"
             "  %%got = call i64 @read(i32 0, ptr %%ib, i64 %d)\n"
             "  %%n = sdiv i64 %%got, %d\n"
             "  %%any = icmp sgt i64 %%n, 0\n"
             "  br i1 %%any, label %%loop, label %%done\n"
             "loop:\n"
             "  %%i = phi i64 [ 0, %%chunk ], [ %%i1, %%loop ]\n"
             "  %%ip = getelementptr %s, ptr %%ib, i64 %%i\n"
             "  %%x = load %s, ptr %%ip\n"
             "  %%r = call %s @%s(%s %%x)\n"
             "  %%op = getelementptr %s, ptr %%ob, i64 %%i\n"
             "  store %s %%r, ptr %%op\n"
             "  %%i1 = add i64 %%i, 1\n"
             "  %%more = icmp slt i64 %%i1, %%n\n"
             "  br i1 %%more, label %%loop, label %%flush\n"
             "flush:\n"
             "  %%bytes = mul i64 %%n, %d\n"
             "  %%w = call i64 @write(i32 1, ptr %%ob, i64 %%bytes)\n"
             "  br label %%chunk\n"
             "done:\n"
             "  ret i32 0\n"
             "}\n",
             in * 8192, in, argt, argt, rett, fn, argt, rett, rett, out);
}

/* Runs @fn of the module text on the inputs; out gets n results of `osz` bytes. */
static void run_lli(const char *lli, const char *mod, const char *fn, const char *argt, int isz, const char *rett,
                    int osz, const void *in, size_t n, void *out)
{
    char dir[] = "/tmp/tilec_f8_XXXXXX";
    ck_assert(mkdtemp(dir));
    char ll[256], inp[256], outp[256], cmd[1024], mainb[4096];
    snprintf(ll, sizeof ll, "%s/m.ll", dir);
    snprintf(inp, sizeof inp, "%s/in.bin", dir);
    snprintf(outp, sizeof outp, "%s/out.bin", dir);
    main_ir(mainb, sizeof mainb, fn, argt, isz, rett, osz);
    FILE *f = fopen(ll, "w");
    ck_assert(f);
    fputs(mod, f);
    fputs(mainb, f);
    fclose(f);
    f = fopen(inp, "wb");
    ck_assert(f && fwrite(in, (size_t)isz, n, f) == n);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' '%s' < '%s' > '%s'", lli, ll, inp, outp);
    ck_assert_msg(system(cmd) == 0, "lli failed: %s", cmd);
    f = fopen(outp, "rb");
    ck_assert(f);
    size_t got = fread(out, (size_t)osz, n, f);
    fclose(f);
    ck_assert_msg(got == n, "%s: %zu results of %zu", fn, got, n);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert(system(cmd) == 0);
}

static char *build_module(void)
{
    Cg cg;
    memset(&cg, 0, sizeof cg);
    cg.a = arena_new();
    cg.ctx = LLVMContextCreate();
    cg.mod = LLVMModuleCreateWithNameInContext("f8", cg.ctx);
    cg.b = LLVMCreateBuilderInContext(cg.ctx);
    cg_init_types(&cg);
    add_fn(&cg, "e4m3_f16", DT_F8E4M3, DT_F16, cg.t_i8, cg.t_i16);
    add_fn(&cg, "e5m2_f16", DT_F8E5M2, DT_F16, cg.t_i8, cg.t_i16);
    add_fn(&cg, "e4m3_f32", DT_F8E4M3, DT_F32, cg.t_i8, cg.t_i32);
    add_fn(&cg, "e5m2_f32", DT_F8E5M2, DT_F32, cg.t_i8, cg.t_i32);
    add_fn(&cg, "f32_e4m3", DT_F32, DT_F8E4M3, cg.t_f32, cg.t_i8);
    add_fn(&cg, "f32_e5m2", DT_F32, DT_F8E5M2, cg.t_f32, cg.t_i8);
    add_fn(&cg, "f64_e4m3", DT_F64, DT_F8E4M3, cg.t_f64, cg.t_i8);
    add_fn(&cg, "f64_e5m2", DT_F64, DT_F8E5M2, cg.t_f64, cg.t_i8);
    char *s = LLVMPrintModuleToString(cg.mod);
    char *copy = strdup(s);
    LLVMDisposeMessage(s);
    LLVMDisposeBuilder(cg.b);
    LLVMDisposeModule(cg.mod);
    LLVMContextDispose(cg.ctx);
    arena_free(cg.a);
    return copy;
}

static float f32_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The interpreter's f16 of a value (exact here) as bits. */
static uint16_t f16_bits(double x)
{
    uint16_t h;
    tc_store_elem(DT_F16, &h, x);
    return h;
}

START_TEST(f8_conversions_match_the_interpreter)
{
    const char *lli = lli_path();
    if (!lli) {
        printf("test_f8_convert: no lli: skipped\n");
        return;
    }
    char *mod = build_module();
    /* f8 -> f16 bits and f32 */
    uint8_t bytes[256];
    for (int i = 0; i < 256; i++)
        bytes[i] = (uint8_t)i;
    static const struct { const char *h, *f; DType dt; } dec[] = { { "e4m3_f16", "e4m3_f32", DT_F8E4M3 },
                                                                   { "e5m2_f16", "e5m2_f32", DT_F8E5M2 } };
    for (int d = 0; d < 2; d++) {
        uint16_t h[256];
        uint32_t w[256];
        run_lli(lli, mod, dec[d].h, "i8", 1, "i16", 2, bytes, 256, h);
        run_lli(lli, mod, dec[d].f, "i8", 1, "i32", 4, bytes, 256, w);
        for (int i = 0; i < 256; i++) {
            double want = tc_load_elem(dec[d].dt, &bytes[i]);
            float got = f32_of_bits(w[i]);
            if (isnan(want)) {
                ck_assert_msg((h[i] & 0x7c00) == 0x7c00 && (h[i] & 0x3ff) && isnan(got), "%s(0x%02x): not NaN",
                              dec[d].h, i);
                ck_assert_msg((h[i] >> 15) == (unsigned)(i >> 7), "%s(0x%02x): NaN of the wrong sign", dec[d].h, i);
            } else {
                ck_assert_msg(h[i] == f16_bits(want), "%s(0x%02x) = 0x%04x, want 0x%04x (%g)", dec[d].h, i, h[i],
                              f16_bits(want), want);
                ck_assert_msg(got == want && !signbit(got) == !signbit(want), "%s(0x%02x) = %g, want %g", dec[d].f, i,
                              (double)got, want);
            }
        }
    }
    /* f32 and f64 -> f8: every f16 value, 2^19 spread f32 patterns, and
     * (f64) each value's neighbours one ulp away */
    size_t n16 = 65536, nspread = (size_t)1 << 19, n32 = n16 + nspread;
    float *x32 = calloc(n32, sizeof *x32);
    double *x64 = calloc(3 * n32, sizeof *x64);
    uint8_t *got = calloc(3 * n32, 1);
    ck_assert(x32 && x64 && got);
    for (size_t i = 0; i < n16; i++) {
        uint16_t h = (uint16_t)i;
        x32[i] = (float)tc_load_elem(DT_F16, &h);
    }
    for (size_t i = 0; i < nspread; i++)
        x32[n16 + i] = f32_of_bits((uint32_t)(i * 8191u + 7u));
    for (size_t i = 0; i < n32; i++) {
        x64[3 * i] = x32[i];
        x64[3 * i + 1] = nextafter((double)x32[i], INFINITY);
        x64[3 * i + 2] = nextafter((double)x32[i], -INFINITY);
    }
    static const struct { const char *f32, *f64; DType dt; } enc[] = { { "f32_e4m3", "f64_e4m3", DT_F8E4M3 },
                                                                       { "f32_e5m2", "f64_e5m2", DT_F8E5M2 } };
    for (int d = 0; d < 2; d++) {
        run_lli(lli, mod, enc[d].f32, "float", 4, "i8", 1, x32, n32, got);
        for (size_t i = 0; i < n32; i++) {
            uint8_t want;
            tc_store_elem(enc[d].dt, &want, x32[i]);
            ck_assert_msg(got[i] == want, "%s(%a) = 0x%02x, want 0x%02x", enc[d].f32, (double)x32[i], got[i], want);
        }
        run_lli(lli, mod, enc[d].f64, "double", 8, "i8", 1, x64, 3 * n32, got);
        for (size_t i = 0; i < 3 * n32; i++) {
            uint8_t want;
            tc_store_elem(enc[d].dt, &want, x64[i]);
            ck_assert_msg(got[i] == want, "%s(%a) = 0x%02x, want 0x%02x", enc[d].f64, x64[i], got[i], want);
        }
    }
    free(x32), free(x64), free(got), free(mod);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("f8_convert");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, f8_conversions_match_the_interpreter);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tc_check_run(suite()); }
