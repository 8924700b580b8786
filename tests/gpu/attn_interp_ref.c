/* attn_interp_ref.c - the interpreter's side of the attention check
 * "interpreter agrees with the GPU" (bench/attn_interp_check.py is the GPU
 * side). Runs on the build machine, after bench/attn_prepare.sh:
 *
 *   attn_interp_ref [--seed S] ATTENTION_TILE ATTN_DIR OUT_DIR
 *
 * ATTENTION_TILE is examples/attention.tile (the bf16 kernel); ATTN_DIR is
 * .devcarry/attn, holding the f16 copy attn_prepare.sh made
 * (attention_f16.tile) and the PTX it compiled, named
 * attn_<dt>_<arch>_d<D>_m<BM>_n<BN>_<c|f>[_<tag>].ptx. The PTX files are
 * grouped by their defines (dtype, D, BM, BN, CAUSAL); every group becomes a
 * define set, compiled here from the same source with the same defines
 * (front end + pass pipeline at -O3, sm_90a) and interpreted on small cases:
 * N in {1, 17, 37, 64, 100, 130} for the tiles python/tilec/_attention.py
 * tiles() picks for these N on sm_90a, N = 130 for the other tiles.
 * H = 2 query heads, HK = 1 or 2, Z = 1 or 2, NK = N, scale = f32(D^-0.5).
 *
 * Inputs: xorshift64* seeded with FNV-1a-64(case name) ^ S (S = 1 unless
 * --seed), standard normal values by Box-Muller, rounded to the dtype
 * (nearest even); Q, then K, then V, row-major. Written to OUT_DIR as raw
 * little-endian arrays: <case>.q/.k/.v.bin and the interpreter's <case>.o.bin
 * (dtype) and <case>.lse.bin (f32, log2 units); OUT_DIR/manifest.txt has one
 * line per case (format in its header). Each interpreter result is also
 * checked against a float64 reference (O relative Frobenius <= 1e-2, LSE
 * relative <= 1e-3, the bounds of tests/unit/test_examples.c); exit 1 when one
 * fails or a define set cannot be compiled. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/frontend.h"
#include "passes/passes.h"
#include "../unit/kit.h"
#include "../unit/ref.h"

#define MAX_SETS 64
#define PTX_LIST 2048
#define TWO_PI 6.283185307179586

/* One define set: the PTX files compiled with these defines. */
typedef struct DefSet {
    char dt[8];
    int d, bm, bn;
    bool causal;
    char ptx[PTX_LIST];     /* comma-separated file names in ATTN_DIR */
} DefSet;

typedef struct Shape {
    int64_t n, z, hk;
} Shape;

typedef struct Prog {
    Arena *a;
    Diag d;
    char *src;
    Func *f;
} Prog;

typedef struct Tool {
    const char *bf16_src, *attn_dir, *out_dir;
    uint64_t seed;
    FILE *manifest;
    int ncases, nbad;
} Tool;

/* ---- the define sets, from the PTX file names ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* attn_<dt>_sm_<ARCH>_d<D>_m<BM>_n<BN>_<c|f>[_<tag>].ptx -> the defines. */
static bool parse_name(const char *name, DefSet *s)
{
    char dt[8], arch[16], c;
    int used = 0;
    size_t len = strlen(name);
    if (len < 4 || strcmp(name + len - 4, ".ptx"))
        return false;
    if (sscanf(name, "attn_%7[^_]_sm_%15[^_]_d%d_m%d_n%d_%c%n", dt, arch, &s->d, &s->bm, &s->bn, &c, &used) != 6)
        return false;
    if ((c != 'c' && c != 'f') || (name[used] != '.' && name[used] != '_'))
        return false;
    snprintf(s->dt, sizeof s->dt, "%s", dt);
    s->causal = c == 'c';
    return true;
}

static bool same_defines(const DefSet *a, const DefSet *b)
{
    return !strcmp(a->dt, b->dt) && a->d == b->d && a->bm == b->bm && a->bn == b->bn && a->causal == b->causal;
}

static void add_ptx(DefSet *sets, int *nsets, const DefSet *s, const char *name)
{
    int i = 0;
    while (i < *nsets && !same_defines(&sets[i], s))
        i++;
    if (i == *nsets) {
        if (*nsets == MAX_SETS)
            return;
        sets[(*nsets)++] = *s;
        sets[i].ptx[0] = 0;
    }
    size_t used = strlen(sets[i].ptx);
    snprintf(sets[i].ptx + used, PTX_LIST - used, "%s%s", used ? "," : "", name);
}

static int collect_sets(const char *dir, DefSet *sets)
{
    DIR *dp = opendir(dir);
    if (!dp) {
        fprintf(stderr, "attn_interp_ref: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char *names[1024];
    int n = 0, nsets = 0;
    for (struct dirent *e; (e = readdir(dp)) && n < 1024;)
        if (!strncmp(e->d_name, "attn_", 5))
            names[n++] = strdup(e->d_name);
    closedir(dp);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        DefSet s;
        memset(&s, 0, sizeof s);
        if (parse_name(names[i], &s))
            add_ptx(sets, &nsets, &s, names[i]);
        free(names[i]);
    }
    return nsets;
}

/* The tiles python/tilec/_attention.py tiles(d, causal, n, "sm_90a") picks:
 * (128, 128) for D = 64, else (128, 64). */
static bool default_tiles(const DefSet *s)
{
    int bn = s->d == 64 ? 128 : 64;
    return s->bm == 128 && s->bn == bn;
}

/* ---- compiling one define set ---- */

static const char *set_source(const Tool *t, const DefSet *s, Arena *a)
{
    if (!strcmp(s->dt, "bf16"))
        return t->bf16_src;
    return arena_printf(a, "%s/attention_%s.tile", t->attn_dir, s->dt);
}

static bool prog_load(Prog *p, const Tool *t, const DefSet *s)
{
    memset(p, 0, sizeof *p);
    p->a = arena_new();
    diag_init(&p->d, p->a);
    const char *path = set_source(t, s, p->a);
    size_t len;
    if (!(p->src = tc_read_file(path, &len))) {
        fprintf(stderr, "attn_interp_ref: cannot read %s\n", path);
        return false;
    }
    FeDefine defs[] = { { "D", arena_printf(p->a, "%d", s->d) }, { "BM", arena_printf(p->a, "%d", s->bm) },
                        { "BN", arena_printf(p->a, "%d", s->bn) }, { "CAUSAL", s->causal ? "true" : "false" } };
    Module *m = fe_compile(p->a, path, p->src, len, defs, 4, &p->d);
    PassCtx ctx = { 0 };
    ctx.diag = &p->d;
    ctx.target = tc_target("sm_90a");
    ctx.opt_level = 3;
    ctx.verify_each = true;
    if (!m || p->d.nerrors || passes_run(m, &ctx) || ir_verify(m, "the pass pipeline", &p->d)) {
        kit_print_diag(&p->d);
        return false;
    }
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i]->name, "attention"))
            p->f = m->funcs[i];
    if (!p->f)
        fprintf(stderr, "attn_interp_ref: %s has no kernel 'attention'\n", path);
    return p->f != NULL;
}

static void prog_free(Prog *p)
{
    free(p->src);
    arena_free(p->a);
}

/* ---- inputs, reference, outputs ---- */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Standard normal values (Box-Muller), rounded to the tensor's dtype. */
static void ten_normal(Ten *t, uint64_t *rng)
{
    for (int64_t i = 0; i < t->n; i += 2) {
        double u1 = 1.0 - ref_rand(rng), u2 = ref_rand(rng), r = sqrt(-2.0 * log(u1));
        ten_set(t, i, r * cos(TWO_PI * u2));
        if (i + 1 < t->n)
            ten_set(t, i + 1, r * sin(TWO_PI * u2));
    }
}

static bool write_ten(const Tool *t, const char *name, const Ten *x)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", t->out_dir, name);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(x->data, ten_esize(x->dt), (size_t)x->n, f) == (size_t)x->n;
    if (f && fclose(f))
        ok = false;
    if (!ok)
        fprintf(stderr, "attn_interp_ref: cannot write %s\n", path);
    return ok;
}

/* ---- one case ---- */

typedef struct Case {
    const DefSet *s;
    Shape sh;
    char name[96];
    double scale;
    uint64_t seed;
    Ten q, k, v, o, lse;
} Case;

static bool case_run(Case *c, const Prog *p)
{
    const char *names[] = { "Q", "K", "V", "O", "LSE", "scale" };
    InterpArg by_name[6] = { ten_arg(&c->q), ten_arg(&c->k), ten_arg(&c->v), ten_arg(&c->o), ten_arg(&c->lse),
                             scalar_arg(c->scale, 0) };
    InterpArg args[6];
    for (int i = 0; i < 6; i++) {
        const char *pn = i < p->f->nparams ? ir_val(p->f, p->f->params[i])->name : NULL;
        int j = 0;
        while (j < 6 && !(pn && !strcmp(pn, names[j])))
            j++;
        if (j == 6 || p->f->nparams != 6) {
            fprintf(stderr, "attn_interp_ref: the kernel's params are not (Q, K, V, O, LSE, scale)\n");
            return false;
        }
        args[i] = by_name[j];
    }
    Diag d;
    diag_init(&d, p->a);
    if (interp_run(p->f, args, 6, &d)) {
        kit_print_diag(&d);
        return false;
    }
    return true;
}

static void case_init(Case *c, const Tool *t, const DefSet *s, const Shape *sh)
{
    memset(c, 0, sizeof *c);
    c->s = s;
    c->sh = *sh;
    snprintf(c->name, sizeof c->name, "%.7s_d%d_m%d_n%d_%c_z%lld_hk%lld_N%lld", s->dt, s->d, s->bm, s->bn,
             s->causal ? 'c' : 'f', (long long)sh->z, (long long)sh->hk, (long long)sh->n);
    c->scale = (double)(float)(1.0 / sqrt((double)s->d));
    c->seed = fnv1a(c->name) ^ t->seed;
    DType dt = dtype_lookup(s->dt, strlen(s->dt));
    int64_t sq[4] = { sh->z, 2, sh->n, s->d }, sk[4] = { sh->z, sh->hk, sh->n, s->d }, sl[3] = { sh->z, 2, sh->n };
    c->q = ten_new(dt, 4, sq), c->k = ten_new(dt, 4, sk), c->v = ten_new(dt, 4, sk);
    c->o = ten_new(dt, 4, sq), c->lse = ten_new(DT_F32, 3, sl);
    uint64_t rng = c->seed ? c->seed : 1;
    ten_normal(&c->q, &rng);
    ten_normal(&c->k, &rng);
    ten_normal(&c->v, &rng);
    ten_poison(&c->o);
    ten_poison(&c->lse);
}

static void case_free(Case *c)
{
    ten_free(&c->q), ten_free(&c->k), ten_free(&c->v), ten_free(&c->o), ten_free(&c->lse);
}

static bool case_write(Tool *t, const Case *c, double eo, double el, const char *src)
{
    const char *ext[] = { "q", "k", "v", "o", "lse" };
    const Ten *ts[] = { &c->q, &c->k, &c->v, &c->o, &c->lse };
    for (int i = 0; i < 5; i++) {
        char fn[128];
        snprintf(fn, sizeof fn, "%s.%s.bin", c->name, ext[i]);
        if (!write_ten(t, fn, ts[i]))
            return false;
    }
    const DefSet *s = c->s;
    fprintf(t->manifest,
            "case=%s dtype=%s Z=%lld H=2 HK=%lld N=%lld D=%d causal=%d BM=%d BN=%d default=%d scale=%.9g "
            "seed=0x%016llx source=%s defines=-DD=%d,-DBM=%d,-DBN=%d,-DCAUSAL=%s ptx=%s q=%s.q.bin k=%s.k.bin "
            "v=%s.v.bin o=%s.o.bin lse=%s.lse.bin interp_vs_f64_o=%.3e interp_vs_f64_lse=%.3e\n",
            c->name, s->dt, (long long)c->sh.z, (long long)c->sh.hk, (long long)c->sh.n, s->d, s->causal, s->bm,
            s->bn, default_tiles(s), c->scale, (unsigned long long)c->seed, src, s->d, s->bm, s->bn,
            s->causal ? "true" : "false", s->ptx, c->name, c->name, c->name, c->name, c->name, eo, el);
    return true;
}

/* Interpret one case, check it against float64, write it. */
static void run_case(Tool *t, const Prog *p, const DefSet *s, const Shape *sh)
{
    Case c;
    case_init(&c, t, s, sh);
    bool ok = case_run(&c, p);
    double eo = NAN, el = NAN;
    if (ok) {
        double *wo = malloc(sizeof(double) * (size_t)c.o.n), *wl = malloc(sizeof(double) * (size_t)c.lse.n);
        ref_attention(sh->z, 2, sh->hk, sh->n, s->d, s->causal, &c.q, &c.k, &c.v, c.scale, wo, wl);
        eo = ref_rel_err(&c.o, wo), el = ref_rel_err(&c.lse, wl);
        free(wo), free(wl);
        ok = eo <= 1e-2 && el <= 1e-3 && case_write(t, &c, eo, el, set_source(t, s, p->a));
    }
    printf("  %-36s interp vs f64: O %.2e LSE %.2e  %s\n", c.name, eo, el, ok ? "ok" : "FAIL");
    t->ncases++;
    t->nbad += !ok;
    case_free(&c);
}

static void run_set(Tool *t, const DefSet *s)
{
    /* (N, Z, HK): Z = 2 and HK = 1 (two query heads per K/V head) where cheap */
    static const Shape full[] = { { 1, 2, 1 }, { 17, 2, 2 }, { 37, 2, 1 }, { 64, 1, 2 }, { 100, 1, 1 }, { 130, 1, 2 } };
    static const Shape few[] = { { 130, 1, 1 } };
    Prog p;
    if (!prog_load(&p, t, s)) {
        fprintf(stderr, "attn_interp_ref: cannot compile the kernel of %s\n", s->ptx);
        t->nbad++;
        if (p.a)
            prog_free(&p);
        return;
    }
    bool all = default_tiles(s);
    int n = all ? 6 : 1;
    for (int i = 0; i < n; i++)
        run_case(t, &p, s, all ? &full[i] : &few[i]);
    prog_free(&p);
}

static void manifest_header(const Tool *t)
{
    fprintf(t->manifest,
            "# attention, interpreter vs GPU: written by tests/gpu/attn_interp_ref.c, read by\n"
            "# bench/attn_interp_check.py. One case per line, space-separated KEY=VALUE:\n"
            "# Q [Z,H,N,D], K and V [Z,HK,N,D] (dtype), O [Z,H,N,D] (dtype), LSE [Z,H,N] (f32, log2\n"
            "# units): raw little-endian row-major files in this folder; bf16/f16 as 16-bit patterns.\n"
            "# source + defines: the kernel the interpreter ran (front end, passes -O3, sm_90a);\n"
            "# ptx: the files in .devcarry/attn compiled from the same source and defines (an arch or\n"
            "# a _tag differs); default=1: the tiles tilec.attention picks. Inputs: xorshift64*\n"
            "# seeded with seed (FNV-1a-64 of the case name ^ %llu), N(0,1) by Box-Muller, rounded\n"
            "# to the dtype; Q, then K, then V. interp_vs_f64_*: relative Frobenius error of the\n"
            "# interpreter's O / LSE against a float64 reference.\n",
            (unsigned long long)t->seed);
}

static int usage(void)
{
    fprintf(stderr, "usage: attn_interp_ref [--seed S] ATTENTION_TILE ATTN_DIR OUT_DIR\n");
    return 2;
}

int main(int argc, char **argv)
{
    Tool t = { 0 };
    t.seed = 1;
    int i = 1;
    if (argc > 2 && !strcmp(argv[1], "--seed")) {
        t.seed = strtoull(argv[2], NULL, 0);
        i = 3;
    }
    if (argc - i != 3)
        return usage();
    t.bf16_src = argv[i], t.attn_dir = argv[i + 1], t.out_dir = argv[i + 2];
    static DefSet sets[MAX_SETS];
    int nsets = collect_sets(t.attn_dir, sets);
    if (nsets <= 0) {
        fprintf(stderr, "attn_interp_ref: no attention PTX in %s (run bench/attn_prepare.sh)\n", t.attn_dir);
        return 1;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.txt", t.out_dir);
    if ((mkdir(t.out_dir, 0777) && errno != EEXIST) || !(t.manifest = fopen(path, "w"))) {
        fprintf(stderr, "attn_interp_ref: cannot write %s\n", path);
        return 1;
    }
    manifest_header(&t);
    for (int s = 0; s < nsets; s++)
        run_set(&t, &sets[s]);
    fclose(t.manifest);
    printf("attn_interp_ref: %d cases, %d define sets, %d failed -> %s\n", t.ncases, nsets, t.nbad, t.out_dir);
    return t.nbad ? 1 : 0;
}
