/* fuzz_compile.c - libFuzzer target for a whole compilation through the
 * public API (tilec_compile_string to PTX), with small resource caps.
 *
 * Input: a .tile source. The first byte picks the target (sm_86, sm_90a,
 * sm_100a) and whether the out-of-memory path is exercised too; the rest
 * is the source. The caps keep each run short: at most 8 KB of source,
 * and the code generator runs only for kernels whose Tile IR after the
 * passes (a first compile to Tile IR) has at most MAX_OPS ops and no tile
 * of more than MAX_TILE_ELEMS elements (bigger ones are the hostile
 * corpus's business: tests/hostile_corpus.py).
 *
 * Beyond "no crash, no hang, no sanitizer report, no leak":
 *  - no compile ends in TILEC_ERR_INTERNAL (a compiler bug);
 *  - the diagnostics stay under 1 MB;
 *  - a compile that succeeds hands out PTX and metadata, and libtilert's
 *    parser accepts the metadata;
 *  - with the out-of-memory bit, the compile is made again with one of its
 *    allocations failing (lib/alloc.h): it must return TILEC_ERR_NOMEM,
 *    *out NULL, and leak nothing (LeakSanitizer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/result.h"
#include "lib/alloc.h"
#include "tilec.h"
#include "tilert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_SRC = 8 * 1024, MAX_OPS = 2000, MAX_TILE_ELEMS = 8192, MAX_DIAG = 1 << 20 };

static void fail(const char *what, const tilec_result *r)
{
    fprintf(stderr, "fuzz_compile: %s\n%s\n", what, r ? tilec_result_diag_text(r) : "");
    abort();
}

static bool count_op(Func *f, Op *op, void *ctx)
{
    (void)f;
    (void)op;
    ++*(int *)ctx;
    return true;
}

/* Within the caps: few ops, small tiles. */
static bool small_enough(const Module *m)
{
    for (int i = 0; m && i < m->nfuncs; i++) {
        Func *f = m->funcs[i];
        int nops = 0;
        ir_walk(f, &f->body, count_op, &nops);
        if (nops > MAX_OPS)
            return false;
        for (uint32_t v = 1; v < f->nvals; v++)
            if (f->vals[v].type.kind == TY_TILE && type_numel(&f->vals[v].type) > MAX_TILE_ELEMS)
                return false;
    }
    return true;
}

static void check(const tilec_result *r, tilec_status st)
{
    if (st == TILEC_ERR_INTERNAL)
        fail("internal compiler error", r);
    if (!r)
        fail("no result", NULL);
    if (strlen(tilec_result_diag_text(r)) > MAX_DIAG)
        fail("over 1 MB of diagnostics", NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const archs[] = { "sm_86", "sm_90a", "sm_100a" };
    if (size < 1 || size > MAX_SRC + 1)
        return 0;
    const char *src = (const char *)data + 1;
    size_t len = size - 1;
    tilec_options o;
    tilec_options_init(&o);
    o.arch = archs[data[0] % 3];
    bool oom = data[0] & 4;

    /* Tile IR first: no LLVM, and the IR tells the size of the kernels. */
    o.emit = TILEC_EMIT_TIR;
    o.keep_ir = 1;
    tilec_result *r = NULL;
    tilec_status st = tilec_compile_string("fuzz.tile", src, len, &o, &r);
    check(r, st);
    bool go = st == TILEC_OK && small_enough(r->module);
    tilec_result_free(r);
    if (!go)
        return 0;

    o.emit = TILEC_EMIT_PTX;
    o.keep_ir = 0;
    tc_alloc_fail_at(0);
    st = tilec_compile_string("fuzz.tile", src, len, &o, &r);
    uint64_t nalloc = tc_alloc_count();
    check(r, st);
    if (st == TILEC_OK) {
        const char *ptx = tilec_result_text(r, TILEC_OUT_PTX), *meta = tilec_result_text(r, TILEC_OUT_META);
        if (!ptx || !meta)
            fail("success without PTX or metadata", r);
        tilert_module *tm = NULL;
        if (tilert_module_from_meta(meta, &tm) != TILERT_OK) {
            fprintf(stderr, "fuzz_compile: libtilert refuses the metadata: %s\n%s\n", tilert_last_error(), meta);
            abort();
        }
        tilert_module_free(tm);
    }
    tilec_result_free(r);

    if (oom && nalloc) {
        /* One allocation of the same compile fails: which one, from the input. */
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < size; i++)
            h = (h ^ data[i]) * 1099511628211ull;
        tc_alloc_fail_at(1 + h % nalloc);
        r = (tilec_result *)1;
        st = tilec_compile_string("fuzz.tile", src, len, &o, &r);
        tc_alloc_fail_at(0);
        if (st != TILEC_ERR_NOMEM || r != NULL) {
            fprintf(stderr, "fuzz_compile: allocation %llu of %llu failed: status %d, result %p\n",
                    (unsigned long long)(1 + h % nalloc), (unsigned long long)nalloc, (int)st, (void *)r);
            abort();
        }
    }
    return 0;
}
