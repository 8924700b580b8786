/* test_numeric.c - rounding to dtype precision and element storage
 * (ir/numeric.c), against hand-computed cases. */
#include <check.h>

#include "check_main.h"
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

START_TEST(bf16_basic)
{
    ck_assert_uint_eq(tc_f32_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(tc_f32_to_bf16(-2.0f), 0xc000);
    ck_assert_uint_eq(tc_f32_to_bf16(0.0f), 0x0000);
    ck_assert_uint_eq(tc_f32_to_bf16(-0.0f), 0x8000);
    /* ties to even: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7 */
    ck_assert_uint_eq(tc_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    ck_assert_uint_eq(tc_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    ck_assert_uint_eq(tc_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
    ck_assert(tc_bf16_to_f32(0x3f81) == 1.0f + 0x1p-7f);
}
END_TEST

START_TEST(bf16_limits)
{
    float maxbf = tc_bf16_to_f32(0x7f7f);
    ck_assert(maxbf == 0x1.fep127f);
    ck_assert_uint_eq(tc_f32_to_bf16(0x1.fep127f), 0x7f7f);
    /* FLT_MAX is past the halfway point to 2^128: overflows to inf */
    ck_assert_uint_eq(tc_f32_to_bf16(FLT_MAX), 0x7f80);
    ck_assert_uint_eq(tc_f32_to_bf16(-INFINITY), 0xff80);
    uint16_t n = tc_f32_to_bf16(NAN);
    ck_assert_uint_eq(n & 0x7f80, 0x7f80);
    ck_assert_uint_ne(n & 0x7f, 0);
    ck_assert(isnan(tc_bf16_to_f32(n)));
    /* bf16 subnormal: smallest is 2^-133 */
    ck_assert_uint_eq(tc_f32_to_bf16(0x1p-133f), 0x0001);
    ck_assert(tc_bf16_to_f32(0x0001) == 0x1p-133f);
}
END_TEST

START_TEST(f16_cases)
{
    ck_assert_uint_eq(tc_f32_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(tc_f32_to_f16(-2.0f), 0xc000);
    ck_assert_uint_eq(tc_f32_to_f16(65504.0f), 0x7bff);
    ck_assert_uint_eq(tc_f32_to_f16(65519.0f), 0x7bff);
    ck_assert_uint_eq(tc_f32_to_f16(65520.0f), 0x7c00);   /* tie rounds to even: inf */
    ck_assert_uint_eq(tc_f32_to_f16(1e6f), 0x7c00);
    ck_assert_uint_eq(tc_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    ck_assert_uint_eq(tc_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    /* subnormals: 2^-24 is the smallest; 2^-25 ties to 0, 3 * 2^-25 to 2 * 2^-24 */
    ck_assert_uint_eq(tc_f32_to_f16(0x1p-24f), 0x0001);
    ck_assert_uint_eq(tc_f32_to_f16(0x1p-25f), 0x0000);
    ck_assert_uint_eq(tc_f32_to_f16(3 * 0x1p-25f), 0x0002);
    ck_assert_uint_eq(tc_f32_to_f16(0x1p-14f), 0x0400);
    ck_assert(tc_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
    ck_assert(tc_f16_to_f32(0x0400) == 0x1p-14f);
    ck_assert(tc_f16_to_f32(0x7bff) == 65504.0f);
    ck_assert(isinf(tc_f16_to_f32(0xfc00)) && tc_f16_to_f32(0xfc00) < 0);
    uint16_t n = tc_f32_to_f16(NAN);
    ck_assert_uint_eq(n & 0x7c00, 0x7c00);
    ck_assert_uint_ne(n & 0x3ff, 0);
    ck_assert(isnan(tc_f16_to_f32(n)));
}
END_TEST

START_TEST(round_floats)
{
    ck_assert(tc_round_to(DT_F32, 1.0 + 0x1p-24) == 1.0);
    ck_assert(tc_round_to(DT_F32, 1.0 + 3 * 0x1p-24) == 1.0 + 0x1p-22);
    ck_assert(isinf(tc_round_to(DT_F32, 1e39)));
    ck_assert(tc_round_to(DT_F32, 0x1p-149) == 0x1p-149);
    ck_assert(tc_round_to(DT_F32, 0x1p-151) == 0.0);
    /* no double rounding through f32: just above a bf16 tie goes up */
    ck_assert(tc_round_to(DT_BF16, 1.0 + 0x1p-8 + 0x1p-30) == 1.0 + 0x1p-7);
    ck_assert(tc_round_to(DT_BF16, 1.0 + 0x1p-8) == 1.0);
    ck_assert(tc_round_to(DT_F16, 65520.0) == INFINITY);
    ck_assert(tc_round_to(DT_F16, -65519.0) == -65504.0);
    ck_assert(tc_round_to(DT_F16, 0x1p-26) == 0.0);
    ck_assert(tc_round_to(DT_F16, 0.1) == 0.0999755859375);
    ck_assert(isnan(tc_round_to(DT_BF16, NAN)));
    ck_assert(tc_round_to(DT_F64, 0.1) == 0.1);
    ck_assert(signbit(tc_round_to(DT_F16, -0x1p-30)));
}
END_TEST

START_TEST(round_fp8)
{
    /* e4m3: max 448, saturating, no inf */
    ck_assert(tc_round_to(DT_F8E4M3, 448.0) == 448.0);
    ck_assert(tc_round_to(DT_F8E4M3, 464.0) == 448.0);
    ck_assert(tc_round_to(DT_F8E4M3, 1e4) == 448.0);
    ck_assert(tc_round_to(DT_F8E4M3, INFINITY) == 448.0);
    ck_assert(tc_round_to(DT_F8E4M3, -INFINITY) == -448.0);
    ck_assert(isnan(tc_round_to(DT_F8E4M3, NAN)));
    ck_assert(tc_round_to(DT_F8E4M3, 1.0625) == 1.0);        /* tie to even */
    ck_assert(tc_round_to(DT_F8E4M3, 1.1875) == 1.25);
    ck_assert(tc_round_to(DT_F8E4M3, 0x1p-9) == 0x1p-9);      /* smallest subnormal */
    ck_assert(tc_round_to(DT_F8E4M3, 0x1p-10) == 0.0);
    /* e5m2: max 57344, overflow to inf */
    ck_assert(tc_round_to(DT_F8E5M2, 57344.0) == 57344.0);
    ck_assert(tc_round_to(DT_F8E5M2, 61439.0) == 57344.0);
    ck_assert(isinf(tc_round_to(DT_F8E5M2, 61440.0)));
    ck_assert(tc_round_to(DT_F8E5M2, 0x1p-16) == 0x1p-16);
    ck_assert(tc_round_to(DT_F8E5M2, 1.125) == 1.0);
    ck_assert(tc_round_to(DT_F8E5M2, 1.375) == 1.5);
}
END_TEST

START_TEST(round_ints)
{
    ck_assert(tc_round_to(DT_I8, 200) == -56);
    ck_assert(tc_round_to(DT_I8, 128) == -128);
    ck_assert(tc_round_to(DT_I8, -129) == 127);
    ck_assert(tc_round_to(DT_U8, -1) == 255);
    ck_assert(tc_round_to(DT_U16, 65536 + 7) == 7);
    ck_assert(tc_round_to(DT_I32, 2147483648.0) == -2147483648.0);
    ck_assert(tc_round_to(DT_I32, 3.7) == 3);
    ck_assert(tc_round_to(DT_I32, -3.7) == -3);
    ck_assert(tc_round_to(DT_I32, NAN) == 0);
    ck_assert(tc_round_to(DT_I64, 0x1p63) == -0x1p63);
    ck_assert(tc_round_to(DT_U64, -1.0) == 0x1p64 - 1 || tc_round_to(DT_U64, -1.0) == 0x1p64);
    ck_assert(tc_round_to(DT_BOOL, 0.5) == 1);
    ck_assert(tc_round_to(DT_BOOL, 0.0) == 0);
}
END_TEST

START_TEST(storage)
{
    unsigned char buf[8];
    uint16_t h;
    tc_store_elem(DT_BF16, buf, 1.0);
    memcpy(&h, buf, 2);
    ck_assert_uint_eq(h, 0x3f80);
    ck_assert(tc_load_elem(DT_BF16, buf) == 1.0);
    tc_store_elem(DT_F16, buf, 65504.0);
    memcpy(&h, buf, 2);
    ck_assert_uint_eq(h, 0x7bff);
    tc_store_elem(DT_F16, buf, 0x1p-24);
    ck_assert(tc_load_elem(DT_F16, buf) == 0x1p-24);
    tc_store_elem(DT_F8E4M3, buf, 1.0);
    ck_assert_uint_eq(buf[0], 0x38);
    tc_store_elem(DT_F8E4M3, buf, 1000.0);
    ck_assert_uint_eq(buf[0], 0x7e);
    ck_assert(tc_load_elem(DT_F8E4M3, buf) == 448.0);
    tc_store_elem(DT_F8E4M3, buf, NAN);
    ck_assert_uint_eq(buf[0], 0x7f);
    ck_assert(isnan(tc_load_elem(DT_F8E4M3, buf)));
    tc_store_elem(DT_F8E5M2, buf, 1.0);
    ck_assert_uint_eq(buf[0], 0x3c);
    tc_store_elem(DT_F8E5M2, buf, -INFINITY);
    ck_assert_uint_eq(buf[0], 0xfc);
    tc_store_elem(DT_F8E5M2, buf, 0x1p-16);
    ck_assert_uint_eq(buf[0], 0x01);
    tc_store_elem(DT_I16, buf, 70000);
    ck_assert(tc_load_elem(DT_I16, buf) == 4464);
    tc_store_elem(DT_U8, buf, 300);
    ck_assert(tc_load_elem(DT_U8, buf) == 44);
    tc_store_elem(DT_F32, buf, 0.1);
    ck_assert(tc_load_elem(DT_F32, buf) == (double)0.1f);
    tc_store_elem(DT_BOOL, buf, -3);
    ck_assert_uint_eq(buf[0], 1);
    tc_store_elem(DT_I64, buf, -5);
    ck_assert(tc_load_elem(DT_I64, buf) == -5);
}
END_TEST

/* Every bf16/f16 bit pattern decodes and re-encodes to itself (NaNs stay NaN). */
START_TEST(roundtrip_all)
{
    for (uint32_t b = 0; b < 0x10000; b++) {
        float x = tc_bf16_to_f32((uint16_t)b);
        if (isnan(x))
            ck_assert(isnan(tc_bf16_to_f32(tc_f32_to_bf16(x))));
        else
            ck_assert_uint_eq(tc_f32_to_bf16(x), b);
        float y = tc_f16_to_f32((uint16_t)b);
        if (isnan(y))
            ck_assert(isnan(tc_f16_to_f32(tc_f32_to_f16(y))));
        else
            ck_assert_uint_eq(tc_f32_to_f16(y), b);
        ck_assert(isnan(y) || tc_round_to(DT_F16, y) == y);
    }
    for (uint32_t b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b, o;
        double x = tc_load_elem(DT_F8E4M3, &c);
        tc_store_elem(DT_F8E4M3, &o, x);
        ck_assert(isnan(x) ? o == (b | 0x7f) : o == b);
        x = tc_load_elem(DT_F8E5M2, &c);
        tc_store_elem(DT_F8E5M2, &o, x);
        ck_assert(isnan(x) ? (o & 0x7c) == 0x7c && (o & 3) : o == b);
    }
}
END_TEST

static Suite *numeric_suite(void)
{
    Suite *s = suite_create("numeric");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, bf16_basic);
    tcase_add_test(tc, bf16_limits);
    tcase_add_test(tc, f16_cases);
    tcase_add_test(tc, round_floats);
    tcase_add_test(tc, round_fp8);
    tcase_add_test(tc, round_ints);
    tcase_add_test(tc, storage);
    tcase_add_test(tc, roundtrip_all);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(numeric_suite());
}
