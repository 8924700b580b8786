/* gpu_decode.c - examples/decode_attention.tile (decode_attention, then
 * decode_combine) on the GPU against a C reference in double, on fresh
 * random inputs (seed printed; $TILEC_SEED repeats a run): bf16 Q
 * [B, 32, 128] on 8 KV heads (G = 4), a paged bf16 K/V cache
 * [pages, PAGE, 8, 128] whose pages every sequence takes in a random order
 * (a shuffled block table, unused entries -1, a few pages nobody uses),
 * context lengths 1, 100, 4097 and 32768 in one launch (not multiples of a
 * page, of a trip's 32 keys nor of a split's 1024), pages of 64 (the
 * default) and 128. The partials and the output start poisoned (0xFF
 * bytes: NaN) and are followed by a poisoned guard zone that must stay so.
 * Tolerance: relative Frobenius error 1e-2 on O (bf16).
 *
 *   gpu_decode                 compile with TILEC_EXE into TILEC_WORK_DIR, then test
 *   gpu_decode DIR             test precompiled DIR/ARCH/<module>.ptx + .meta
 *                              (tests/gpu/make_ptx.sh writes them from --list-modules)
 *   gpu_decode --list-modules  "NAME EXAMPLE DEFINES" per module
 *
 * Exit 0 if every check passed, 77 without a CUDA driver or device, 1
 * otherwise. Also checked: every split that holds keys wrote a finite
 * partial log-sum-exp.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_harness.h"

static const char dec_src[] = "// gpu_decode: examples only\n";

static const ModSpec specs[] = {
    { "decode_attention", "decode_attention", "" },
    { "decode_attention_p128", "decode_attention", "-DPAGE=128" },
};
enum { NMOD = sizeof specs / sizeof specs[0] };

enum { HQ = 32, HK = 8, D = 128, CHUNK = 1024 };

static double bf(const HostT *t, size_t i) { return gpu_get(GPU_BF16, t->data, i); }

static void set_i32(HostT *t, size_t i, int32_t v) { memcpy(t->data + 4 * i, &v, 4); }
static int32_t i32_at(const HostT *t, size_t i)
{
    int32_t v;
    memcpy(&v, t->data + 4 * i, 4);
    return v;
}

static void check_decode(Mod *m, const char *arch, int64_t page, const int64_t *lens, int64_t nb)
{
    char label[200];
    int n = snprintf(label, sizeof label, "%s decode_attention page %lld lens", arch, (long long)page);
    for (int64_t b = 0; b < nb && n < (int)sizeof label - 12; b++)
        n += snprintf(label + n, sizeof label - (size_t)n, " %lld", (long long)lens[b]);
    gpu_context("%s", label);
    int64_t mp = 0, npages = 3, maxlen = 0;
    for (int64_t b = 0; b < nb; b++) {
        int64_t k = (lens[b] + page - 1) / page;
        mp = k > mp ? k : mp;
        npages += k;
        maxlen = lens[b] > maxlen ? lens[b] : maxlen;
    }
    int64_t s = (maxlen + CHUNK - 1) / CHUNK;
    int64_t sq[3] = { nb, HQ, D }, sc[4] = { npages, page, HK, D };
    int64_t sop[4] = { nb, HQ, s, D }, slp[3] = { nb, HQ, s };
    HostT q = host_tn("bf16", 3, sq), kc = host_tn("bf16", 4, sc), vc = host_tn("bf16", 4, sc);
    HostT bt = host_t("i32", 2, nb, mp), ln = host_t("i32", 1, nb, 0), o = host_tn("bf16", 3, sq);
    HostT op = host_tn("f32", 4, sop), lp = host_tn("f32", 3, slp);
    fill(&q, 2);
    fill(&kc, 2);
    fill(&vc, 2);
    int64_t *perm = gpu_calloc((size_t)npages, sizeof(int64_t));   /* the pages in a random order */
    for (int64_t i = 0; i < npages; i++)
        perm[i] = i;
    for (int64_t i = npages - 1; i > 0; i--) {
        int64_t j = (int64_t)(fabsf(gpu_frand(1.0f)) * (float)(i + 1)), t;
        j = j > i ? i : j;
        t = perm[i], perm[i] = perm[j], perm[j] = t;
    }
    int64_t at = 0;
    for (int64_t b = 0; b < nb; b++) {
        set_i32(&ln, (size_t)b, (int32_t)lens[b]);
        for (int64_t j = 0; j < mp; j++)
            set_i32(&bt, (size_t)(b * mp + j), j < (lens[b] + page - 1) / page ? (int32_t)perm[at++] : -1);
    }
    double scale = 1.0 / sqrt((double)D);
    Arg a1[8] = { { &q, 0, 0, false },  { &kc, 0, 0, false }, { &vc, 0, 0, false }, { &bt, 0, 0, false },
                  { &ln, 0, 0, false }, { &op, 0, 0, false }, { &lp, 0, 0, false }, { NULL, 0, scale, true } };
    Arg a2[4] = { { &op, 0, 0, false }, { &lp, 0, 0, false }, { &ln, 0, 0, false }, { &o, 0, 0, false } };
    bool ok = run_kernel(m, "decode_attention", a1, 8, label) && run_kernel(m, "decode_combine", a2, 4, label);
    double *want = gpu_calloc((size_t)(nb * HQ * D), sizeof(double));
    double *sc2 = gpu_calloc((size_t)maxlen, sizeof(double)), *got = gpu_calloc((size_t)(nb * HQ * D), sizeof(double));
    for (int64_t b = 0; b < nb; b++)
        for (int64_t h = 0; h < HQ; h++) {
            int64_t kh = h / (HQ / HK);
            double mx = -INFINITY, sum = 0, *w = want + (b * HQ + h) * D;
            for (int64_t t = 0; t < lens[b]; t++) {
                size_t row = (size_t)(((int64_t)i32_at(&bt, (size_t)(b * mp + t / page)) * page + t % page) * HK + kh);
                double dot = 0;
                for (int64_t e = 0; e < D; e++)
                    dot += bf(&q, (size_t)((b * HQ + h) * D + e)) * bf(&kc, row * D + (size_t)e);
                sc2[t] = dot * scale;
                mx = fmax(mx, sc2[t]);
            }
            for (int64_t t = 0; t < lens[b]; t++)
                sum += exp(sc2[t] - mx);
            for (int64_t t = 0; t < lens[b]; t++) {
                size_t row = (size_t)(((int64_t)i32_at(&bt, (size_t)(b * mp + t / page)) * page + t % page) * HK + kh);
                double p = exp(sc2[t] - mx) / sum;
                for (int64_t e = 0; e < D; e++)
                    w[e] += p * bf(&vc, row * D + (size_t)e);
            }
        }
    for (size_t i = 0; i < (size_t)(nb * HQ * D); i++)
        got[i] = bf(&o, i);
    double err = ok ? gpu_rel_err(got, want, (size_t)(nb * HQ * D)) : INFINITY;
    int64_t bad_lse = 0;   /* every split that holds keys wrote a finite log-sum-exp */
    for (int64_t b = 0; b < nb; b++)
        for (int64_t h = 0; h < HQ; h++)
            for (int64_t j = 0; j < (lens[b] + CHUNK - 1) / CHUNK; j++)
                bad_lse += !isfinite(f32_at(&lp, (size_t)((b * HQ + h) * s + j)));
    gpu_result(ok && err <= 1e-2 && bad_lse == 0, "%s: rel err %.2e (tol 1e-02), %lld partial LSE not finite", label,
               err, (long long)bad_lse);
    free(want), free(sc2), free(got), free(perm);
    free(q.data), free(kc.data), free(vc.data), free(bt.data), free(ln.data), free(o.data), free(op.data),
        free(lp.data);
}

static void run_all(Mod *mods, const char *arch)
{
    static const int64_t lens[] = { 1, 100, 4097, 32768 }, lens2[] = { 1025, 63, 64, 2047, 129 };
    (void)interp_mode;   /* not built for the interpreter (tests/unit/test_examples.c runs it there) */
    check_decode(&mods[0], arch, 64, lens, 4);
    check_decode(&mods[0], arch, 64, lens2, 5);
    check_decode(&mods[1], arch, 128, lens, 4);
}

int main(int argc, char **argv)
{
    static const Harness h = { dec_src, "decode.tile", specs, NMOD, run_all };
    return harness_main(&h, argc, argv);
}
