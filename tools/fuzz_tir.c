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
    FuzzInput in;
    if (!fuzz_input(&in, data, size, "fuzz.tir"))
        return 0;
    Module *m = ir_parse(in.a, "fuzz.tir", in.src, size, &in.d);
    if (m && in.d.nerrors == 0 && ir_verify(m, "parse", &in.d) == 0) {
        fe_check_limits(m, &in.d);
        fuzz_round_trip(in.a, m);
    }
    StrBuf out = { 0 };
    diag_render(&in.d, &out);
    sb_free(&out);
    fuzz_input_free(&in);
    return 0;
}
