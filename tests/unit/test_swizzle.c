/* test_swizzle.c - shared-memory layouts, the bank-conflict model and swizzle
 * selection, against hand-computed cases: layouts are bijections, the model
 * counts the conflicts worked out by hand for each standard access, and the
 * selection reaches 0 predicted conflicts on the standard bf16 tiles. */
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/smem_model.h"

/* ---- layouts ---- */

START_TEST(cutlass_swizzle_bits)
{
    /* Swizzle<3,4,3>: bits 7..9 XOR into bits 4..6. */
    ck_assert_int_eq(pass_smem_swizzle(0x000, 3, 4, 3), 0x000);
    ck_assert_int_eq(pass_smem_swizzle(0x080, 3, 4, 3), 0x090);   /* row 1, chunk 0 -> 1 */
    ck_assert_int_eq(pass_smem_swizzle(0x2A0, 3, 4, 3), 0x2F0);   /* row 5, chunk 2 -> 7 */
    ck_assert_int_eq(pass_smem_swizzle(0x38C, 3, 4, 3), 0x3FC);   /* row 7, chunk 0, byte 12 */
    ck_assert_int_eq(pass_smem_swizzle(0x400, 3, 4, 3), 0x400);   /* repeats every 1024 B */
    /* Swizzle<2,4,3>: only bits 7..8; Swizzle<1,4,3>: only bit 7. */
    ck_assert_int_eq(pass_smem_swizzle(0x3A0, 2, 4, 3), 0x390);   /* 2 ^ 3 = 1 */
    ck_assert_int_eq(pass_smem_swizzle(0x3A0, 1, 4, 3), 0x3B0);
    ck_assert_int_eq(pass_smem_swizzle_width(1), 32);
    ck_assert_int_eq(pass_smem_swizzle_width(3), 128);
}
END_TEST

/* Every element maps to a distinct, element-aligned offset inside the
 * footprint; for identity and swizzles every byte of the footprint is hit. */
static void check_bijection(SmemLayout l)
{
    ck_assert_ptr_null(pass_smem_layout_check(&l));
    int64_t size = pass_smem_size(&l);
    unsigned char *seen = calloc((size_t)size, 1);
    for (int64_t r = 0; r < l.rows; r++)
        for (int64_t c = 0; c < l.cols; c++) {
            int64_t o = pass_smem_offset(&l, r, c);
            ck_assert(o >= 0 && o + l.elem_bytes <= size);
            ck_assert_int_eq(o % l.elem_bytes, 0);
            for (int b = 0; b < l.elem_bytes; b++) {
                ck_assert_msg(!seen[o + b], "offset %lld hit twice", (long long)(o + b));
                seen[o + b] = 1;
            }
        }
    if (l.xform != SMX_PAD)
        for (int64_t i = 0; i < size; i++)
            ck_assert(seen[i]);
    free(seen);
}

START_TEST(layouts_are_bijections)
{
    static const struct { int eb; int64_t r, c; } shapes[] = {
        { 2, 64, 64 }, { 2, 64, 32 }, { 2, 32, 16 }, { 2, 64, 128 }, { 2, 128, 256 },
        { 4, 16, 32 }, { 1, 64, 128 }, { 8, 8, 16 },
    };
    for (size_t i = 0; i < TC_COUNTOF(shapes); i++) {
        int eb = shapes[i].eb;
        int64_t r = shapes[i].r, c = shapes[i].c;
        check_bijection(pass_smem_identity(eb, r, c));
        check_bijection(pass_smem_padded(eb, r, c, 16));
        check_bijection(pass_smem_padded(eb, r, c, eb > 4 ? eb : 4));
        for (int b = 1; b <= 3; b++)
            if (pass_smem_swizzle_width(b) <= c * eb)
                check_bijection(pass_smem_swizzled(eb, r, c, b));
    }
}
END_TEST

START_TEST(layout_offsets_by_hand)
{
    SmemLayout s = pass_smem_swizzled(2, 64, 64, 3);
    /* (row 1, col 0): byte 128 -> chunk 0 ^ 1 = chunk 1 */
    ck_assert_int_eq(pass_smem_offset(&s, 1, 0), 128 + 16);
    /* (row 3, col 9): chunk 1 ^ 3 = 2, element 1 in the chunk */
    ck_assert_int_eq(pass_smem_offset(&s, 3, 9), 3 * 128 + 2 * 16 + 2);
    /* wide rows are column panels of 128 B: bf16 [16 x 128], (row 2, col 64)
     * is panel 1 (base 16*128), row 2, chunk 0 ^ 2 */
    SmemLayout w = pass_smem_swizzled(2, 16, 128, 3);
    ck_assert_int_eq(pass_smem_offset(&w, 2, 64), 16 * 128 + 2 * 128 + 2 * 16);
    SmemLayout p = pass_smem_padded(2, 64, 64, 16);
    ck_assert_int_eq(pass_smem_offset(&p, 2, 3), 2 * 144 + 6);
    ck_assert_int_eq(pass_smem_size(&p), 64 * 144);
    ck_assert_int_eq(pass_smem_align(&s), 1024);
    ck_assert_int_eq(pass_smem_align(&p), 16);
    SmemLayout s64 = pass_smem_swizzled(2, 64, 32, 2), s32 = pass_smem_swizzled(2, 64, 16, 1);
    ck_assert_int_eq(pass_smem_align(&s64), 512);
    ck_assert_int_eq(pass_smem_align(&s32), 256);
    ck_assert(!pass_smem_desc_ok(&p));
    ck_assert(pass_smem_desc_ok(&s));
}
END_TEST

START_TEST(layout_checks)
{
    SmemLayout l = pass_smem_swizzled(2, 64, 32, 3);     /* 64 B rows, 128B swizzle */
    ck_assert_ptr_nonnull(pass_smem_layout_check(&l));
    l = pass_smem_swizzled(2, 12, 64, 3);                /* 12 rows: not a repeat */
    ck_assert_ptr_nonnull(pass_smem_layout_check(&l));
    l = pass_smem_padded(2, 64, 64, 6);
    ck_assert_ptr_nonnull(pass_smem_layout_check(&l));
    char buf[32];
    l = pass_smem_swizzled(2, 64, 64, 2);
    pass_smem_layout_name(&l, buf, sizeof buf);
    ck_assert_str_eq(buf, "swizzle 64B");
    l = pass_smem_padded(2, 64, 64, 16);
    pass_smem_layout_name(&l, buf, sizeof buf);
    ck_assert_str_eq(buf, "pad 16B");
}
END_TEST

/* ---- the bank model on raw addresses ---- */

static SmemCost cost_stride(int64_t base, int64_t stride, int bytes)
{
    int64_t a[32];
    for (int t = 0; t < 32; t++)
        a[t] = base + t * stride;
    return pass_smem_bank_cost(a, 32, bytes);
}

START_TEST(bank_model_raw)
{
    SmemCost c = cost_stride(0, 4, 4);          /* 32 consecutive words */
    ck_assert_int_eq(c.wavefronts, 1);
    ck_assert_int_eq(c.ideal, 1);
    c = cost_stride(64, 0, 4);                  /* one word: broadcast */
    ck_assert_int_eq(c.wavefronts, 1);
    c = cost_stride(0, 128, 4);                 /* one bank, 32 words */
    ck_assert_int_eq(c.wavefronts, 32);
    ck_assert_int_eq(c.ideal, 1);
    c = cost_stride(0, 8, 4);                   /* stride 2 words: 2-way */
    ck_assert_int_eq(c.wavefronts, 2);
    c = cost_stride(0, 2, 2);                   /* 16 words, pairs share */
    ck_assert_int_eq(c.wavefronts, 1);
    c = cost_stride(0, 16, 16);                 /* 512 B: 4 quarter-warp phases */
    ck_assert_int_eq(c.wavefronts, 4);
    ck_assert_int_eq(c.ideal, 4);
    c = cost_stride(0, 8, 8);                   /* 256 B: 2 half-warp phases */
    ck_assert_int_eq(c.wavefronts, 2);
    ck_assert_int_eq(c.ideal, 2);
    c = cost_stride(0, 256, 16);                /* 8 threads on banks 0-3 per phase */
    ck_assert_int_eq(c.wavefronts, 32);
    ck_assert_int_eq(c.ideal, 4);
    c = cost_stride(0, 33 * 4, 4);              /* padded column: conflict-free */
    ck_assert_int_eq(c.wavefronts, 1);
    int64_t a[32];
    for (int t = 0; t < 32; t++)
        a[t] = t < 8 ? t * 4 : -1;             /* inactive threads cost nothing */
    c = pass_smem_bank_cost(a, 32, 4);
    ck_assert_int_eq(c.wavefronts, 1);
    ck_assert_int_eq(c.ideal, 1);
}
END_TEST

/* ---- the access patterns ---- */

START_TEST(ldmatrix_addresses)
{
    /* bf16 [64 x 64], identity: instruction 0 covers rows 0-15, chunks 0-1. */
    SmemLayout l = pass_smem_identity(2, 64, 64);
    int64_t a[32];
    ck_assert_int_eq(pass_smem_access_addrs(&l, SA_LDMATRIX, 0, a), 16);
    ck_assert_int_eq(a[0], 0);
    ck_assert_int_eq(a[7], 7 * 128);
    ck_assert_int_eq(a[8], 8 * 128);           /* matrix 1: rows 8-15 */
    ck_assert_int_eq(a[16], 16);               /* matrix 2: rows 0-7, chunk 1 */
    ck_assert_int_eq(a[31], 15 * 128 + 16);
    ck_assert_int_eq(pass_smem_access_ninstr(&l, SA_LDMATRIX), 16);
    ck_assert_int_eq(pass_smem_access_ninstr(&l, SA_CP_ASYNC16), 16);
}
END_TEST

static SmemAccessCost acost(SmemLayout l, SmemAccessKind k)
{
    ck_assert_ptr_null(pass_smem_access_check(&l, k));
    return pass_smem_access_cost(&l, k);
}

START_TEST(ldmatrix_128B_rows)
{
    /* bf16 [64 x 64]: 128-byte rows. Identity: the 8 rows of one matrix sit
     * at the same chunk of 8 lines, i.e. the same 4 banks -> 8-way. */
    SmemAccessCost c = acost(pass_smem_identity(2, 64, 64), SA_LDMATRIX);
    ck_assert_int_eq(c.worst, 32);                       /* 4 matrices x 8 */
    ck_assert_int_eq(c.total.wavefronts, 16 * 32);
    ck_assert_int_eq(c.total.ideal, 16 * 4);
    c = acost(pass_smem_swizzled(2, 64, 64, 3), SA_LDMATRIX);
    ck_assert_int_eq(c.worst, 4);                        /* 1 per matrix */
    ck_assert_int_eq(c.total.wavefronts, c.total.ideal);
    c = acost(pass_smem_swizzled(2, 64, 64, 3), SA_LDMATRIX_TRANS);
    ck_assert_int_eq(c.total.wavefronts, c.total.ideal);
    /* 64B swizzle stores 128-byte rows as two [64 x 64 B] panels: each is
     * the 64-byte-row case below, conflict-free for ldmatrix too. */
    c = acost(pass_smem_swizzled(2, 64, 64, 2), SA_LDMATRIX);
    ck_assert_int_eq(c.worst, 4);
    /* 16 B padding: row stride 144 B moves each row by one chunk -> 1. */
    c = acost(pass_smem_padded(2, 64, 64, 16), SA_LDMATRIX);
    ck_assert_int_eq(c.worst, 4);
}
END_TEST

START_TEST(ldmatrix_64B_rows)
{
    /* bf16 [64 x 32]: 64-byte rows, two per 128-byte line: rows 0,2,4,6 hit
     * the same banks -> 4-way. */
    SmemAccessCost c = acost(pass_smem_identity(2, 64, 32), SA_LDMATRIX);
    ck_assert_int_eq(c.worst, 16);
    c = acost(pass_smem_swizzled(2, 64, 32, 2), SA_LDMATRIX);
    ck_assert_int_eq(c.worst, 4);
    ck_assert_int_eq(c.total.wavefronts, c.total.ideal);
    /* 32B swizzle: two panels of 32-byte rows, each conflict-free. */
    c = acost(pass_smem_swizzled(2, 64, 32, 1), SA_LDMATRIX);
    ck_assert_int_eq(c.worst, 4);
}
END_TEST

START_TEST(ldmatrix_32B_and_256B_rows)
{
    /* bf16 [64 x 16]: 32-byte rows, 4 per line: rows 0 and 4 collide. */
    SmemAccessCost c = acost(pass_smem_identity(2, 64, 16), SA_LDMATRIX);
    ck_assert_int_eq(c.worst, 8);
    c = acost(pass_smem_swizzled(2, 64, 16, 1), SA_LDMATRIX);
    ck_assert_int_eq(c.worst, 4);
    /* bf16 [64 x 128]: 256-byte rows: 8-way; panels of 128B swizzle fix it. */
    c = acost(pass_smem_identity(2, 64, 128), SA_LDMATRIX);
    ck_assert_int_eq(c.worst, 32);
    c = acost(pass_smem_swizzled(2, 64, 128, 3), SA_LDMATRIX);
    ck_assert_int_eq(c.total.wavefronts, c.total.ideal);
}
END_TEST

START_TEST(cp_async_writes)
{
    /* 32 threads x 16 B along rows: 4 phases of 128 contiguous bytes. */
    static const int64_t cols[] = { 16, 32, 64, 128 };
    for (size_t i = 0; i < TC_COUNTOF(cols); i++) {
        SmemAccessCost c = acost(pass_smem_identity(2, 64, cols[i]), SA_CP_ASYNC16);
        ck_assert_int_eq(c.worst, 4);
        ck_assert_int_eq(c.total.wavefronts, c.total.ideal);
        /* A swizzle narrower than min(row, 128 B) splits each phase over
         * panels whose rows start on the same banks: (min / W)-way. */
        int64_t span = cols[i] * 2 < 128 ? cols[i] * 2 : 128;
        for (int b = 1; b <= 3; b++) {
            int64_t w = pass_smem_swizzle_width(b);
            if (w > cols[i] * 2)
                continue;
            c = acost(pass_smem_swizzled(2, 64, cols[i], b), SA_CP_ASYNC16);
            ck_assert_int_eq(c.worst, 4 * (span / w));
        }
    }
    /* Padding splits a phase over two rows of 64 B: chunk 8 of the second
     * row wraps onto the banks of chunk 0 -> 2-way in those phases. */
    SmemAccessCost p = acost(pass_smem_padded(2, 64, 32, 16), SA_CP_ASYNC16);
    ck_assert_int_gt(p.total.wavefronts, p.total.ideal);
    ck_assert_int_eq(p.worst, 8);
}
END_TEST

START_TEST(scalar_accesses)
{
    /* f32 [64 x 32]: 128-byte rows. Row-wise: 32 consecutive words. */
    SmemAccessCost c = acost(pass_smem_identity(4, 64, 32), SA_ROW4);
    ck_assert_int_eq(c.worst, 1);
    ck_assert_int_eq(c.ninstr, 64);
    /* Column-wise: 32 rows of one column, all in one bank -> 32-way. */
    c = acost(pass_smem_identity(4, 64, 32), SA_COL4);
    ck_assert_int_eq(c.worst, 32);
    ck_assert_int_eq(c.total.ideal, c.ninstr);
    /* 4 B padding: stride 33 words -> conflict-free. */
    c = acost(pass_smem_padded(4, 64, 32, 4), SA_COL4);
    ck_assert_int_eq(c.worst, 1);
    /* 16 B padding: stride 36 words -> 8 banks x 4 -> 4-way. */
    c = acost(pass_smem_padded(4, 64, 32, 16), SA_COL4);
    ck_assert_int_eq(c.worst, 4);
    /* 128B swizzle: 8 distinct chunks per 8 rows, repeated 4 times -> 4-way. */
    c = acost(pass_smem_swizzled(4, 64, 32, 3), SA_COL4);
    ck_assert_int_eq(c.worst, 4);
    /* bf16 row-wise 2 B: 64 bytes per warp -> 1; column-wise: 32-way. */
    c = acost(pass_smem_identity(2, 64, 64), SA_ROW2);
    ck_assert_int_eq(c.worst, 1);
    c = acost(pass_smem_identity(2, 64, 64), SA_COL2);
    ck_assert_int_eq(c.worst, 32);
    c = acost(pass_smem_padded(2, 64, 64, 4), SA_COL2);
    ck_assert_int_eq(c.worst, 1);
}
END_TEST

START_TEST(access_checks)
{
    SmemLayout l = pass_smem_identity(2, 64, 12);                 /* 24-byte rows */
    ck_assert_ptr_nonnull(pass_smem_access_check(&l, SA_CP_ASYNC16));
    l = pass_smem_identity(2, 12, 64);                            /* 12 rows */
    ck_assert_ptr_nonnull(pass_smem_access_check(&l, SA_LDMATRIX));
    ck_assert_ptr_null(pass_smem_access_check(&l, SA_CP_ASYNC16));
    ck_assert_str_eq(pass_smem_access_name(SA_LDMATRIX_TRANS), "ldmatrix.trans");
    ck_assert(pass_smem_access_is_write(SA_CP_ASYNC16));
    ck_assert(!pass_smem_access_is_write(SA_LDMATRIX));
}
END_TEST

/* ---- selection ---- */

typedef struct Sel {
    Arena *a;
    Diag d;
    SmemDecision dec;
    int rc;
} Sel;

static void sel_run(Sel *s, DType dt, int64_t rows, int64_t cols, const SmemUse *uses, int n)
{
    s->a = arena_new();
    diag_init(&s->d, s->a);
    s->rc = pass_smem_select(s->a, dt, rows, cols, uses, n, &s->dec, &s->d,
                             (Loc){ "k.tile", 3, 7 });
}

static void sel_expect(Sel *s, SmemXform x, int bits, int align)
{
    ck_assert_int_eq(s->rc, 0);
    ck_assert_int_eq(s->dec.layout.xform, x);
    if (x == SMX_SWIZZLE)
        ck_assert_int_eq(s->dec.layout.swz_bits, bits);
    ck_assert_int_eq(s->dec.align, align);
}

/* 0 predicted conflicts on every use of the chosen layout. */
static void sel_expect_conflict_free(Sel *s)
{
    ck_assert_int_eq(s->dec.after, s->dec.ideal);
    for (int i = 0; i < s->dec.nuses; i++)
        ck_assert_int_eq(s->dec.uses[i].after.wavefronts, s->dec.uses[i].after.ideal);
}

START_TEST(select_standard_128B_rows)
{
    static const SmemUse uses[] = { { SA_LDMATRIX, false, 1 }, { SA_CP_ASYNC16, false, 1 } };
    Sel s;
    sel_run(&s, DT_BF16, 128, 64, uses, 2);
    sel_expect(&s, SMX_SWIZZLE, 3, 1024);
    sel_expect_conflict_free(&s);
    ck_assert_int_eq(s.dec.bytes, 128 * 128);
    ck_assert(s.dec.desc_ok);
    ck_assert_int_gt(s.dec.before, s.dec.after);
    ck_assert_str_eq(s.dec.explain,
                     "smem tile 128x64 bf16 (128 B rows): swizzle 128B; "
                     "ldmatrix: 4 wavefronts/instr (was 32: 8-way conflict), "
                     "cp.async 16B: 4 (was 4)");
    /* 16 B padding ties on wavefronts but costs memory and no descriptor takes it. */
    int npad = 0;
    for (int i = 0; i < s.dec.ncands; i++)
        if (s.dec.cands[i].layout.xform == SMX_PAD) {
            npad++;
            ck_assert_int_eq(s.dec.cands[i].wavefronts, s.dec.after);
        }
    ck_assert_int_eq(npad, 1);
    arena_free(s.a);
}
END_TEST

START_TEST(select_standard_64B_rows)
{
    static const SmemUse uses[] = { { SA_CP_ASYNC16, false, 1 }, { SA_LDMATRIX_TRANS, false, 2 } };
    Sel s;
    sel_run(&s, DT_BF16, 64, 32, uses, 2);
    sel_expect(&s, SMX_SWIZZLE, 2, 512);
    sel_expect_conflict_free(&s);
    ck_assert_ptr_nonnull(strstr(s.dec.explain, "ldmatrix.trans: 4 (was 16: 4-way conflict)"));
    /* 128B swizzle is wider than the rows: not a candidate. */
    for (int i = 0; i < s.dec.ncands; i++)
        ck_assert(!(s.dec.cands[i].layout.xform == SMX_SWIZZLE && s.dec.cands[i].layout.swz_bits == 3));
    arena_free(s.a);
}
END_TEST

START_TEST(select_standard_all_cases)
{
    /* bf16, rows of 64 and 128 bytes, ldmatrix and .trans, cp.async writes,
     * several heights: always 0 predicted conflicts. */
    static const int64_t cols[] = { 32, 64 };
    static const int64_t rows[] = { 16, 32, 64, 128, 256 };
    static const SmemAccessKind reads[] = { SA_LDMATRIX, SA_LDMATRIX_TRANS };
    for (size_t c = 0; c < TC_COUNTOF(cols); c++)
        for (size_t r = 0; r < TC_COUNTOF(rows); r++)
            for (size_t k = 0; k < TC_COUNTOF(reads); k++) {
                SmemUse uses[] = { { SA_CP_ASYNC16, false, 1 }, { reads[k], false, 1 } };
                Sel s;
                sel_run(&s, DT_BF16, rows[r], cols[c], uses, 2);
                sel_expect(&s, SMX_SWIZZLE, cols[c] == 64 ? 3 : 2, cols[c] == 64 ? 1024 : 512);
                sel_expect_conflict_free(&s);
                ck_assert_int_gt(s.dec.uses[1].before.wavefronts, s.dec.uses[1].after.wavefronts);
                arena_free(s.a);
            }
}
END_TEST

START_TEST(select_descriptors)
{
    /* TMA writes and wgmma reads of bf16 [64 x 64]: 128B swizzle. */
    static const SmemUse tma[] = { { SA_TMA, false, 1 }, { SA_MMA_DESC, false, 1 } };
    Sel s;
    sel_run(&s, DT_BF16, 64, 64, tma, 2);
    sel_expect(&s, SMX_SWIZZLE, 3, 1024);
    sel_expect_conflict_free(&s);
    for (int i = 0; i < s.dec.ncands; i++)
        if (s.dec.cands[i].layout.xform != SMX_SWIZZLE)
            ck_assert_ptr_nonnull(s.dec.cands[i].excluded);
    arena_free(s.a);
    /* Descriptor users take the widest swizzle the rows allow: 64B for
     * 64-byte rows, 32B excluded for it (one TMA box per panel); 224-byte
     * rows (not a multiple of 128 or 64) get 32B. */
    static const struct { int64_t cols; int bits; } widest[] = { { 32, 2 }, { 128, 3 }, { 112, 1 } };
    for (size_t k = 0; k < TC_COUNTOF(widest); k++) {
        sel_run(&s, DT_BF16, 64, widest[k].cols, tma, 2);
        sel_expect(&s, SMX_SWIZZLE, widest[k].bits, 128 << widest[k].bits);
        for (int i = 0; i < s.dec.ncands; i++)
            if (s.dec.cands[i].layout.xform == SMX_SWIZZLE && s.dec.cands[i].layout.swz_bits < widest[k].bits)
                ck_assert_str_eq(s.dec.cands[i].excluded, "descriptor users take the widest swizzle the rows allow");
        arena_free(s.a);
    }
    /* f32 column-wise reads alone: 4 B padding is best ... */
    SmemUse col[] = { { SA_COL4, false, 1 } };
    sel_run(&s, DT_F32, 64, 32, col, 1);
    sel_expect(&s, SMX_PAD, 0, 16);
    ck_assert_int_eq(s.dec.layout.pad_bytes, 4);
    sel_expect_conflict_free(&s);
    ck_assert_ptr_nonnull(strstr(s.dec.explain, "(was 32: 32-way conflict)"));
    arena_free(s.a);
    /* ... but a descriptor excludes padding: 128B swizzle, still 4-way. */
    col[0].needs_desc = true;
    sel_run(&s, DT_F32, 64, 32, col, 1);
    sel_expect(&s, SMX_SWIZZLE, 3, 1024);
    ck_assert_int_eq(s.dec.uses[0].after.wavefronts, 4 * s.dec.uses[0].after.ideal);
    ck_assert_ptr_nonnull(strstr(s.dec.explain, "[still 4-way]"));
    arena_free(s.a);
}
END_TEST

START_TEST(select_ties_and_wide_rows)
{
    /* Only cp.async writes: every candidate but padding ties -> identity. */
    static const SmemUse w[] = { { SA_CP_ASYNC16, false, 1 } };
    Sel s;
    sel_run(&s, DT_BF16, 64, 64, w, 1);
    sel_expect(&s, SMX_IDENTITY, 0, 16);
    arena_free(s.a);
    /* 256-byte rows: panels of 128B swizzle. */
    static const SmemUse u[] = { { SA_CP_ASYNC16, false, 1 }, { SA_LDMATRIX, false, 1 } };
    sel_run(&s, DT_BF16, 64, 128, u, 2);
    sel_expect(&s, SMX_SWIZZLE, 3, 1024);
    sel_expect_conflict_free(&s);
    arena_free(s.a);
    /* fp8 [128 x 128]: 128-byte rows as well. */
    sel_run(&s, DT_F8E4M3, 128, 128, u, 2);
    sel_expect(&s, SMX_SWIZZLE, 3, 1024);
    sel_expect_conflict_free(&s);
    StrBuf sb = { 0 };
    pass_smem_decision_print(&s.dec, &sb);
    ck_assert_ptr_nonnull(strstr(sb.buf, "candidate swizzle 128B"));
    ck_assert_ptr_nonnull(strstr(sb.buf, "ldmatrix"));
    sb_free(&sb);
    arena_free(s.a);
}
END_TEST

START_TEST(select_errors)
{
    static const SmemUse u[] = { { SA_LDMATRIX, false, 1 } };
    Sel s;
    sel_run(&s, DT_BF16, 12, 64, u, 1);
    ck_assert_int_eq(s.rc, 1);
    ck_assert_int_eq(s.d.nerrors, 1);
    ck_assert_ptr_nonnull(strstr(s.dec.explain, "cannot be accessed by ldmatrix"));
    ck_assert_int_eq(s.d.recs[0].loc.line, 3);
    arena_free(s.a);
    /* wgmma reads of 48-byte rows: no swizzle fits, identity is not a
     * canonical descriptor layout, padding has no descriptor mode. */
    static const SmemUse m[] = { { SA_MMA_DESC, false, 1 } };
    sel_run(&s, DT_BF16, 64, 24, m, 1);
    ck_assert_int_eq(s.rc, 1);
    ck_assert_ptr_nonnull(strstr(s.dec.explain, "no shared layout of tile 64x24 bf16"));
    ck_assert_ptr_nonnull(strstr(s.dec.explain, "swizzle 32B (row bytes are not a multiple"));
    arena_free(s.a);
}
END_TEST

/* ---- the fast cover cost against a direct simulation ---- */

/* The model by its definition: per phase, each new distinct word counts on
 * its bank; no shortcuts. */
static SmemCost ref_bank_cost(const int64_t *addr, int bytes)
{
    SmemCost c = { 0, 0 };
    int step = 128 / (bytes < 4 ? 4 : bytes);
    step = step > 32 ? 32 : step;
    for (int t0 = 0; t0 < 32; t0 += step) {
        int64_t words[256];
        int nw = 0, bank[32] = { 0 }, most = 0;
        for (int t = t0; t < t0 + step && t < 32; t++)
            for (int64_t w = addr[t] / 4; addr[t] >= 0 && w <= (addr[t] + bytes - 1) / 4; w++) {
                int j = 0;
                while (j < nw && words[j] != w)
                    j++;
                if (j < nw)
                    continue;
                words[nw++] = w;
                if (++bank[w % 32] > most)
                    most = bank[w % 32];
            }
        c.wavefronts += most;
        c.ideal += (nw + 31) / 32;
    }
    return c;
}

static void check_cover_cost(SmemLayout l, SmemAccessKind k)
{
    SmemAccessCost ref = { 0 }, got = pass_smem_access_cost(&l, k);
    ref.ninstr = pass_smem_access_ninstr(&l, k);
    for (int64_t i = 0; i < ref.ninstr; i++) {
        int64_t addr[SMEM_WARP];
        int bytes = pass_smem_access_addrs(&l, k, i, addr);
        SmemCost c = ref_bank_cost(addr, bytes);
        ref.total.wavefronts += c.wavefronts;
        ref.total.ideal += c.ideal;
        ref.worst = c.wavefronts > ref.worst ? c.wavefronts : ref.worst;
    }
    char name[32];
    pass_smem_layout_name(&l, name, sizeof name);
    ck_assert_msg(got.ninstr == ref.ninstr && got.worst == ref.worst
                      && got.total.wavefronts == ref.total.wavefronts
                      && got.total.ideal == ref.total.ideal,
                  "%dB x %lldx%lld %s, %s: %lld/%lld/%lld, simulated %lld/%lld/%lld",
                  l.elem_bytes, (long long)l.rows, (long long)l.cols, name,
                  pass_smem_access_name(k), (long long)got.total.wavefronts,
                  (long long)got.total.ideal, (long long)got.worst,
                  (long long)ref.total.wavefronts, (long long)ref.total.ideal,
                  (long long)ref.worst);
}

START_TEST(cover_cost_matches_simulation)
{
    /* pass_smem_access_cost() simulates one instruction per period of the
     * pattern; it must equal simulating every instruction, on every layout
     * (also odd row counts and row widths, partial last instructions). */
    static const int64_t rows[] = { 8, 16, 24, 40, 64, 72, 128, 136 };
    static const int64_t rbs[] = { 4, 8, 16, 32, 48, 64, 80, 96, 128, 160, 192, 256, 384, 512 };
    static const int ebs[] = { 1, 2, 4, 8 };
    for (size_t e = 0; e < 4; e++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
            for (size_t b = 0; b < sizeof rbs / sizeof rbs[0]; b++) {
                int eb = ebs[e];
                if (rbs[b] % eb != 0)
                    continue;
                int64_t cols = rbs[b] / eb;
                SmemLayout ls[7] = {
                    pass_smem_identity(eb, rows[r], cols),
                    pass_smem_padded(eb, rows[r], cols, 4),
                    pass_smem_padded(eb, rows[r], cols, 8),
                    pass_smem_padded(eb, rows[r], cols, 16),
                    pass_smem_swizzled(eb, rows[r], cols, 1),
                    pass_smem_swizzled(eb, rows[r], cols, 2),
                    pass_smem_swizzled(eb, rows[r], cols, 3),
                };
                for (int li = 0; li < 7; li++)
                    for (int k = 0; k < SA_NKINDS; k++)
                        if (!pass_smem_access_check(&ls[li], (SmemAccessKind)k))
                            check_cover_cost(ls[li], (SmemAccessKind)k);
            }
}
END_TEST

START_TEST(bank_cost_matches_definition)
{
    /* Random address lists: any alignment, inactive threads, repeats. */
    static const int widths[] = { 1, 2, 4, 8, 16 };
    unsigned seed = 12345;
    for (int n = 0; n < 20000; n++) {
        int bytes = widths[n % 5];
        int64_t addr[SMEM_WARP];
        for (int t = 0; t < SMEM_WARP; t++) {
            seed = seed * 1103515245u + 12345u;
            int64_t a = (seed >> 8) % (n % 3 == 0 ? 256 : 8192);
            addr[t] = (seed >> 28) == 0 ? -1 : (n % 2 ? a / bytes * bytes : a);
        }
        SmemCost got = pass_smem_bank_cost(addr, SMEM_WARP, bytes);
        SmemCost ref = ref_bank_cost(addr, bytes);
        ck_assert_int_eq(got.wavefronts, ref.wavefronts);
        ck_assert_int_eq(got.ideal, ref.ideal);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("swizzle");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, cutlass_swizzle_bits);
    tcase_add_test(tc, layouts_are_bijections);
    tcase_add_test(tc, layout_offsets_by_hand);
    tcase_add_test(tc, layout_checks);
    tcase_add_test(tc, bank_model_raw);
    tcase_add_test(tc, ldmatrix_addresses);
    tcase_add_test(tc, ldmatrix_128B_rows);
    tcase_add_test(tc, ldmatrix_64B_rows);
    tcase_add_test(tc, ldmatrix_32B_and_256B_rows);
    tcase_add_test(tc, cp_async_writes);
    tcase_add_test(tc, scalar_accesses);
    tcase_add_test(tc, access_checks);
    tcase_add_test(tc, select_standard_128B_rows);
    tcase_add_test(tc, select_standard_64B_rows);
    tcase_add_test(tc, select_standard_all_cases);
    tcase_add_test(tc, select_descriptors);
    tcase_add_test(tc, select_ties_and_wide_rows);
    tcase_add_test(tc, select_errors);
    tcase_add_test(tc, cover_cost_matches_simulation);
    tcase_add_test(tc, bank_cost_matches_definition);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tc_check_run(suite());
}
