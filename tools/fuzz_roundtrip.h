/* fuzz_roundtrip.h - what both IR fuzz targets share (fuzz_frontend.c,
 * fuzz_tir.c): the input as a NUL-terminated source with an arena and a
 * diagnostics collector, and the property they check: a module that
 * verifies prints as Tile IR that parses back to the same text (aborts with
 * both texts, or the parse errors, otherwise). */
#ifndef TILEC_FUZZ_ROUNDTRIP_H
#define TILEC_FUZZ_ROUNDTRIP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* The input as a source named `name` (NULL when it is over 64 KB: skipped);
 * free with fuzz_input_free. */
typedef struct FuzzInput { char *src; size_t size; Arena *a; Diag d; } FuzzInput;

static bool fuzz_input(FuzzInput *in, const uint8_t *data, size_t size, const char *name)
{
    if (size > 64 * 1024)
        return false;
    in->src = malloc(size + 1);
    if (!in->src)
        return false;
    memcpy(in->src, data, size);
    in->src[size] = 0;
    in->size = size;
    in->a = arena_new();
    diag_init(&in->d, in->a);
    diag_add_source(&in->d, name, in->src, size);
    return true;
}

static void fuzz_input_free(FuzzInput *in)
{
    arena_free(in->a);
    free(in->src);
}

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
