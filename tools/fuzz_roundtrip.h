/* fuzz_roundtrip.h - the property both IR fuzz targets check: a module that
 * verifies prints as Tile IR that parses back to the same text (aborts with
 * both texts, or the parse errors, otherwise). Included by fuzz_frontend.c
 * and fuzz_tir.c. */
#ifndef TILEC_FUZZ_ROUNDTRIP_H
#define TILEC_FUZZ_ROUNDTRIP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static void fuzz_round_trip(Arena *a, const Module *m)
{
    StrBuf t1 = { 0 }, t2 = { 0 };
    PrintOpts po = { 0 };
    ir_print_module(m, &po, &t1);
    Diag d2;
    diag_init(&d2, a);
    Module *m2 = ir_parse(a, "<roundtrip>", t1.buf ? t1.buf : "", t1.len, &d2);
    if (!m2 || d2.nerrors) {
        StrBuf e = { 0 };
        diag_render(&d2, &e);
        fprintf(stderr, "printed IR does not parse back:\n%s\n--- IR ---\n%s\n", e.buf ? e.buf : "",
                t1.buf ? t1.buf : "");
        abort();
    }
    ir_print_module(m2, &po, &t2);
    if (t1.len != t2.len || memcmp(t1.buf, t2.buf, t1.len) != 0) {
        fprintf(stderr, "IR round trip differs:\n--- first ---\n%s\n--- second ---\n%s\n", t1.buf, t2.buf);
        abort();
    }
    sb_free(&t1);
    sb_free(&t2);
}

#endif
