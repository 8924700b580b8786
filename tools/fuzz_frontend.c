/* fuzz_frontend.c - libFuzzer target for the front end and the IR reader.
 *
 * Input is a .tile source (or, when it starts with "//tir", .tir text).
 * Properties checked beyond "no crash, no hang, no sanitizer report":
 *  - a kernel that compiles without errors also verifies clean, survives
 *    the pass pipeline, and prints as Tile IR that parses back to the
 *    same text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "fuzz_roundtrip.h"
#include "passes/passes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FuzzInput in;
    if (!fuzz_input(&in, data, size, "fuzz.tile"))
        return 0;
    Arena *a = in.a;
    Diag *d = &in.d;
    Module *m;
    if (size >= 5 && memcmp(in.src, "//tir", 5) == 0)
        m = ir_parse(a, "fuzz.tir", in.src, size, d);
    else
        m = fe_compile(a, "fuzz.tile", in.src, size, NULL, 0, d);
    if (m && d->nerrors == 0) {
        if (ir_verify(m, "lower", d) != 0) {
            StrBuf e = { 0 };
            diag_render(d, &e);
            fprintf(stderr, "verifier rejected IR that compiled cleanly:\n%s\n", e.buf);
            abort();
        }
        StrBuf dump = { 0 }, timing = { 0 }, remarks = { 0 };
        PassCtx ctx = { .diag = d, .target = tc_target("sm_90a"), .opt_level = 3, .verify_each = true,
                        .dump = &dump, .timing = &timing, .remarks = &remarks };
        if (passes_run(m, &ctx) == 0)
            fuzz_round_trip(a, m);
        sb_free(&dump);
        sb_free(&timing);
        sb_free(&remarks);
    }
    StrBuf out = { 0 };
    diag_render(d, &out);
    sb_free(&out);
    fuzz_input_free(&in);
    return 0;
}
