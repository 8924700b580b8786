/* consumer.c - a program built against an installed tilec (through
 * find_package(tilec) or pkg-config): it compiles a small kernel to PTX with
 * libtilec and reads the metadata back with libtilert (no GPU needed).
 * Prints "consumer ok: ..." and exits 0 on success. */
#include <stdio.h>
#include <string.h>

#include <tilec.h>
#include <tilert.h>

static const char src[] =
    "kernel scale<BLOCK: int = 256>(X: global f32[N], Y: global f32[N])\n"
    "  grid(cdiv(N, BLOCK))\n"
    "{\n"
    "  let i = block.x * BLOCK;\n"
    "  Y[i : +BLOCK] = X[i : +BLOCK] * 2.0;\n"
    "}\n";

int main(void)
{
    tilec_options o;
    tilec_options_init(&o);
    o.arch = "sm_90a";
    tilec_result *r = NULL;
    tilec_status st = tilec_compile_string("scale.tile", src, sizeof src - 1, &o, &r);
    if (st != TILEC_OK) {
        fprintf(stderr, "consumer: compile failed (%s):\n%s", tilec_status_string(st),
                r ? tilec_result_diag_text(r) : "");
        tilec_result_free(r);
        return 1;
    }
    const char *ptx = tilec_result_text(r, TILEC_OUT_PTX);
    const char *meta = tilec_result_text(r, TILEC_OUT_META);
    if (!ptx || !strstr(ptx, ".entry scale(") || !meta) {
        fprintf(stderr, "consumer: no PTX entry or metadata\n");
        tilec_result_free(r);
        return 1;
    }
    tilert_module *m = NULL;
    tilert_kernel *k = NULL;
    if (tilert_module_from_meta(meta, &m) || tilert_module_get_kernel(m, "scale", &k)) {
        fprintf(stderr, "consumer: runtime rejected the metadata: %s\n", tilert_last_error());
        tilert_module_free(m);
        tilec_result_free(r);
        return 1;
    }
    printf("consumer ok: tilec %s, %zu bytes of PTX for %s, kernel %s with %d threads\n", tilec_version(),
           strlen(ptx), tilec_result_arch(r), tilert_kernel_name(k), tilert_kernel_threads(k));
    tilert_module_free(m);
    tilec_result_free(r);
    return 0;
}
