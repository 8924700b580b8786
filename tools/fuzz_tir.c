/* fuzz_tir.c - libFuzzer target for the Tile IR reader (ir/parse.c), the
 * verifier and the shared-limits check (frontend/limits.c).
 *
 * Input is .tir text. Beyond "no crash, no hang, no sanitizer report": IR
 * that parses and verifies prints as text that parses back to the same
 * text, and the limits check runs on it without undefined behaviour.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "fuzz_roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *src = malloc(size + 1);
    memcpy(src, data, size);
    src[size] = 0;
    Arena *a = arena_new();
    Diag d;
    diag_init(&d, a);
    diag_add_source(&d, "fuzz.tir", src, size);
    Module *m = ir_parse(a, "fuzz.tir", src, size, &d);
    if (m && d.nerrors == 0 && ir_verify(m, "parse", &d) == 0) {
        fe_check_limits(m, &d);
        fuzz_round_trip(a, m);
    }
    StrBuf out = { 0 };
    diag_render(&d, &out);
    sb_free(&out);
    arena_free(a);
    free(src);
    return 0;
}
