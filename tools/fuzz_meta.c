/* fuzz_meta.c - libFuzzer target for libtilert's metadata parser
 * (runtime/meta.c, through tilert_module_from_meta: no driver, no GPU).
 *
 * Input is metadata text (any bytes; a NUL ends it as it would a C string).
 * Beyond "no crash, no hang, no sanitizer report": a module that parses has
 * kernels whose every accessor answers (tensor maps and fallback included),
 * whose grid rule evaluates (or is refused) for a few dim values without
 * undefined behaviour, whose `writes` record names tensors only, and whose
 * fallback takes as many params.
 */
#include <stdlib.h>
#include <string.h>

#include "tilert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const tilert_kernel *k)
{
    tilert_param_info pi;
    for (size_t i = 0; i < tilert_kernel_num_params(k); i++) {
        tilert_kernel_param(k, i, &pi);
        if (tilert_kernel_param_written(k, i) == 1 && pi.kind != TILERT_PARAM_TENSOR)
            abort();    /* the parser guarantees only tensors are written */
    }
    size_t nd = tilert_kernel_num_dims(k);
    for (size_t i = 0; i < nd; i++)
        (void)tilert_kernel_dim(k, i);
    static const int64_t probes[] = { 0, 1, 7, 4096, 2147483647 };
    int64_t dims[TILERT_MAX_DIMS];
    for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++) {
        for (size_t i = 0; i < nd; i++)
            dims[i] = probes[p];
        unsigned grid[3];
        tilert_kernel_grid(k, dims, nd, grid);
    }
    (void)tilert_kernel_grid_rule(k);
    (void)tilert_kernel_threads(k);
    tilert_tmap_info ti;
    for (size_t i = 0; i < tilert_kernel_num_tmaps(k); i++)
        tilert_kernel_tmap(k, i, &ti);
    const tilert_kernel *fb = tilert_kernel_fallback(k);
    if (fb && tilert_kernel_num_params(fb) != tilert_kernel_num_params(k))
        abort();    /* the parser guarantees a fallback takes the same params */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    tilert_module *m = NULL;
    if (tilert_module_from_meta(text, &m) == TILERT_OK) {
        for (size_t i = 0; i < tilert_module_num_kernels(m); i++)
            exercise(tilert_module_kernel_at(m, i));
    }
    tilert_module_free(m);
    free(text);
    return 0;
}
