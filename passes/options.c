/* options.c - the typed options a user may set on the pipeline: one table,
 * checked here, listed by `tilec --help` and documented in docs/internals.md
 * ("Pass options"). Nothing else in the compiler reads a setting from
 * outside the compilation's options.
 *
 * Syntax: "NAME=VALUE,NAME=VALUE"; NAME is "PASS.OPTION" (or "target.OPTION"
 * for a fact of the device that several passes read). An unknown name, a
 * value of the wrong type or out of range is a usage error.
 */
#include "passes.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const PassOptionInfo tc_pass_options[] = {
    { "target.smem-per-block", "bytes", 0, 232448, 0, offsetof(PassOptions, smem_per_block),
      "shared memory one block may use on the device the PTX will run on, when that is not the arch's own "
      "(sm_86 PTX on an sm_90 GPU: up to 232448); 0 = the arch's own. Read by double_buffer (stages), "
      "smem_alloc (the limit) and the code generator (epilogue scratch)" },
    { "target.sms", "int", 0, 1024, 0, offsetof(PassOptions, sms),
      "streaming multiprocessors of the device the PTX will run on; 0 = not known. Read by launch "
      "(a persistent grid takes one block per SM) and warp_specialize (its persistent grids: without it, "
      "num_sms(), the launch device's count)" },
    { "lazy_rescale.threshold", "log2 units", 0, 32, -1, offsetof(PassOptions, lazy_rescale),
      "an online softmax's running maximum moves only when a row's maximum grows by more than this, so the "
      "output is rescaled only then (exact after the final division; p reaches 2^T); 0 = off. "
      "Not given: 8 where the rescaled accumulator has 128 or more columns, else off" },
    { "exp2_emu.every", "int", 0, 1024, -1, offsetof(PassOptions, exp2_emu),
      "attention's softmax exp2 on the FMA units (Cody-Waite + degree-3 polynomial) for one 8-column group "
      "of the score tile in every N (1 = all); 0 = off. Not given: 4 where the MUFU takes twice the tensor "
      "cores' time or more, 8 where at least as long (sm_90a at D = 64, sm_100a at D <= 128), else off" },
    { "tiles.candidate", "int", 0, PASS_MAX_CAND - 1, -1, offsetof(PassOptions, tile_candidate),
      "which of the tile choice's candidates the `= auto` tile params take (`tilec --candidates` lists them, "
      "the compiler's choice first): the one a measurement on the device found fastest (autotuning); "
      "a number past the list is an error. Not given: 0, the compiler's choice. The portable variant keeps "
      "its own choice" },
    { "mma_select.tf32", "int", 0, 1, 0, offsetof(PassOptions, tf32),
      "1: f32 products run on the tensor cores as mma.sync m16n8k8 .tf32 (operands rounded to 10 mantissa "
      "bits, f32 accumulation; about 2^-10 relative to the sum of |a b|); 0 (the default): exact f32 fma on "
      "the FMA units" },
    { "warp_specialize.persistent", "int", 0, 1, -1, offsetof(PassOptions, persistent),
      "0: warp-specialized roles keep one tile a block (the grid as written), leaving SMs to kernels that "
      "run beside them; 1 (the default): the roles loop over the tiles of a persistent grid of one block per "
      "SM where the kernel can take that form" },
};

const int tc_npass_options = (int)(sizeof tc_pass_options / sizeof tc_pass_options[0]);

static const PassOptionInfo *find(const char *name, size_t n)
{
    for (int i = 0; i < tc_npass_options; i++)
        if (strlen(tc_pass_options[i].name) == n && memcmp(tc_pass_options[i].name, name, n) == 0)
            return &tc_pass_options[i];
    return NULL;
}

/* The decimal integer of the n bytes at s, within [min, max]. */
static bool parse_int(const char *s, size_t n, long long min, long long max, long long *v)
{
    char num[32], *stop = NULL;
    if (n == 0 || n >= sizeof num)
        return false;
    memcpy(num, s, n);
    num[n] = 0;
    errno = 0;
    *v = strtoll(num, &stop, 10);
    return !*stop && !errno && *v >= min && *v <= max;
}

int pass_options_parse(const char *list, PassOptions *out, StrBuf *err)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < tc_npass_options; i++)
        *(int64_t *)((char *)out + tc_pass_options[i].offset) = tc_pass_options[i].unset;
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        const PassOptionInfo *o = eq ? find(p, (size_t)(eq - p)) : NULL;
        if (!o) {
            sb_printf(err, "unknown pass option '%.*s' (`tilec --help` lists them: ", (int)(eq ? eq - p : (long)len), p);
            for (int i = 0; i < tc_npass_options; i++)
                sb_printf(err, "%s%s", i ? ", " : "", tc_pass_options[i].name);
            sb_puts(err, ")");
            return 1;
        }
        size_t vn = len - (size_t)(eq + 1 - p);
        long long v = 0;
        if (!parse_int(eq + 1, vn, o->min, o->max, &v)) {
            sb_printf(err, "pass option %s takes an integer (%s) from %lld to %lld, not '%.*s'", o->name, o->type,
                      (long long)o->min, (long long)o->max, (int)vn, eq + 1);
            return 1;
        }
        *(int64_t *)((char *)out + o->offset) = v;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

int pass_dims_parse(const char *list, PassDims *out, StrBuf *err)
{
    memset(out, 0, sizeof *out);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t nl = eq ? (size_t)(eq - p) : len;
        bool name_ok = nl > 0 && nl < 64;
        for (size_t i = 0; i < nl && name_ok; i++)
            name_ok = p[i] == '_' || (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
                      (i > 0 && p[i] >= '0' && p[i] <= '9');
        long long v = 0;
        if (!eq || !name_ok || !parse_int(eq + 1, len - nl - 1, 1, INT_MAX, &v)) {
            sb_printf(err, "bad dim size '%.*s': expected NAME=VALUE with a dim name and a size from 1 to %d",
                      (int)(len > 64 ? 64 : len), p, INT_MAX);
            return 1;
        }
        if (out->n == PASS_MAX_DIMS) {
            sb_printf(err, "more than %d dim sizes given", PASS_MAX_DIMS);
            return 1;
        }
        out->name[out->n] = p;
        out->len[out->n] = nl;
        out->value[out->n++] = v;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

int64_t pass_dim_size(const PassDims *d, const Func *f, int idx)
{
    if (!d || idx < 0 || idx >= f->ndims)
        return 0;
    int64_t v = 0;   /* the last one given wins */
    for (int i = 0; i < d->n; i++)
        if (strlen(f->dim_names[idx]) == d->len[i] && memcmp(f->dim_names[idx], d->name[i], d->len[i]) == 0)
            v = d->value[i];
    return v;
}
