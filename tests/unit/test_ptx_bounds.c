/* test_ptx_bounds.c - no global access of a compiled kernel touches a byte
 * outside the rows of its tensors, for any row length: the PTX of the
 * examples and of masked-window kernels (every storage width, 1-d and 2-d
 * windows, unaligned offsets, windows across the end of a 2-d tensor, rows
 * padded so that the bytes between rows belong to no element) runs in the
 * address model of ptx_model.h, every thread of the first, middle and last
 * blocks. Regression test of issue 32's layernorm tail read (bf16, one row
 * of 4097, BLOCK=8192, sm_90a: a 16-byte read at byte 8192 of 8194). */
#define _GNU_SOURCE
#include <check.h>

#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_model.h"
#include "splitk_src.h"
#include "tilec.h"

#define TC_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#ifndef TILEC_SOURCE_DIR
#define TILEC_SOURCE_DIR "."
#endif

/* ---- kernel metadata (docs/runtime.md) ---- */

typedef struct MParam {
    char name[32];
    bool tensor;
    int esize, rank;
    char dim[8][32];
    char dtype[32];
} MParam;

typedef struct Meta {
    int threads;
    int ndims;
    char dims[8][32];
    int nparams;
    MParam p[16];
    char grid[3][128];
} Meta;

static int dtype_size(const char *t)
{
    if (!strcmp(t, "f64") || !strcmp(t, "i64") || !strcmp(t, "u64"))
        return 8;
    if (!strcmp(t, "f32") || !strcmp(t, "i32") || !strcmp(t, "u32"))
        return 4;
    if (!strcmp(t, "bf16") || !strcmp(t, "f16") || !strcmp(t, "i16") || !strcmp(t, "u16"))
        return 2;
    return 1;
}

/* The record of kernel `kernel` (NULL: the first). */
static bool meta_parse(const char *text, const char *kernel, Meta *m)
{
    memset(m, 0, sizeof *m);
    char *copy = strdup(text), *save = NULL;
    bool in = false;
    for (char *ln = strtok_r(copy, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(ln, "kernel ", 7)) {
            if (m->threads)
                break;
            in = !kernel || !strcmp(ln + 7, kernel);
            continue;
        }
        if (!in)
            continue;
        char w[16][32];
        int n = 0;
        char *s2 = NULL, *lc = strdup(ln);
        for (char *t = strtok_r(lc, " ", &s2); t && n < 16; t = strtok_r(NULL, " ", &s2))
            snprintf(w[n++], sizeof w[0], "%s", t);
        free(lc);
        if (n >= 2 && !strcmp(w[0], "threads"))
            m->threads = atoi(w[1]);
        else if (n >= 2 && !strcmp(w[0], "dim") && m->ndims < 8)
            snprintf(m->dims[m->ndims++], 32, "%s", w[1]);
        else if (n >= 4 && !strcmp(w[0], "param") && m->nparams < 16) {
            MParam *p = &m->p[m->nparams++];
            snprintf(p->name, sizeof p->name, "%s", w[1]);
            p->tensor = !strcmp(w[2], "tensor");
            snprintf(p->dtype, sizeof p->dtype, "%s", w[3]);
            p->esize = dtype_size(w[3]);
            if (p->tensor) {
                p->rank = atoi(w[4]);
                for (int d = 0; d < p->rank && d < 8; d++)
                    snprintf(p->dim[d], 32, "%s", w[5 + d]);
            }
        } else if (n >= 1 && !strcmp(w[0], "grid")) {
            const char *g = strchr(ln, ' ') + 1;
            for (int a = 0; a < 3; a++) {
                const char *semi = strchr(g, ';');
                size_t len = semi ? (size_t)(semi - g) : strlen(g);
                snprintf(m->grid[a], sizeof m->grid[a], "%.*s", (int)len, g);
                g = semi ? semi + 1 : g + len;
            }
        }
    }
    free(copy);
    return m->threads > 0;
}

typedef struct DimVal {
    const char *name;
    int64_t v;
} DimVal;

static int64_t dim_value(const DimVal *dv, const char *tok)
{
    char *end;
    long long x = strtoll(tok, &end, 10);
    if (*end == 0 && end != tok)
        return x;
    for (; dv && dv->name; dv++)
        if (!strcmp(dv->name, tok))
            return dv->v;
    return -1;
}

static int64_t rpn_eval(const char *rpn, const DimVal *dv)
{
    int64_t st[32];
    int sp = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", rpn);
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " ")) {
        if ((strchr("+-*/%", t[0]) && !t[1]) || !strcmp(t, "cdiv") || !strcmp(t, "min") || !strcmp(t, "max")) {
            if (sp < 2)
                return -1;
            int64_t b = st[--sp], a = st[--sp], r = 0;
            switch (t[0]) {
            case '+': r = a + b; break;
            case '-': r = a - b; break;
            case '*': r = a * b; break;
            case '/': r = b ? a / b : 0; break;
            case '%': r = b ? a % b : 0; break;
            case 'c': r = b ? (a + b - 1) / b : 0; break;
            default: r = !strcmp(t, "min") ? (a < b ? a : b) : (a > b ? a : b); break;
            }
            st[sp++] = r;
        } else if (sp < 32) {
            st[sp++] = dim_value(dv, t);
        }
    }
    return sp == 1 ? st[0] : -1;
}

/* ---- compiling and checking ---- */

typedef struct Case {
    const char *file;        /* an example (examples/FILE) or NULL: src */
    const char *src;
    const char *kernel;      /* NULL: the only one */
    const char *arch;
    const char *defs[4];     /* "NAME=VALUE" */
} Case;

static char *compile_case(const Case *c, char **meta)
{
    tilec_options o;
    tilec_options_init(&o);
    o.arch = c->arch;
    tilec_define defs[4];
    char store[4][64];
    size_t nd = 0;
    for (; nd < 4 && c->defs[nd]; nd++) {
        snprintf(store[nd], sizeof store[nd], "%s", c->defs[nd]);
        char *eq = strchr(store[nd], '=');
        *eq = 0;
        defs[nd].name = store[nd];
        defs[nd].value = eq + 1;
    }
    o.defines = defs;
    o.ndefines = nd;
    tilec_result *r = NULL;
    tilec_status st;
    if (c->file) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/%s", TILEC_SOURCE_DIR, c->file);
        st = tilec_compile_file(path, &o, &r);
    } else {
        st = tilec_compile_string("k.tile", c->src, strlen(c->src), &o, &r);
    }
    if (st != TILEC_OK) {
        fprintf(stderr, "%s", r ? tilec_result_diag_text(r) : "no result\n");
        tilec_result_free(r);
        return NULL;
    }
    char *ptx = strdup(tilec_result_text(r, TILEC_OUT_PTX));
    *meta = strdup(tilec_result_text(r, TILEC_OUT_META));
    tilec_result_free(r);
    return ptx;
}

/* Tensor contents for a run with values (run_case's `mem`): per tensor
 * param in order, its span's bytes and known flags. */
typedef struct Mem {
    uint8_t *mem[PM_MAXTENS], *known[PM_MAXTENS], *init[PM_MAXTENS];   /* init: the contents before the run */
    PmTensor t[PM_MAXTENS];
    int n;
} Mem;

/* Launches the kernel of `ptx` (metadata `m`) on dims dv, rows of every
 * tensor of rank >= 2 padded by `pad` elements; scalars get sv (by name,
 * 0 otherwise). With `mem`, every tensor gets contents: random known bytes,
 * except the param named "Y" (unknown until written); mem then holds them
 * after the run. Returns the report. */
static PmReport run_case_mem(const PmProg *p, const Meta *m, const DimVal *dv, int pad, const DimVal *sv, Mem *mem)
{
    PmReport rep;
    memset(&rep, 0, sizeof rep);
    PmLaunch L;
    memset(&L, 0, sizeof L);
    L.threads = m->threads;
    L.nsm = 132;
    L.max_steps = 4000000;
    for (int i = 0; i < m->nparams; i++) {
        const MParam *mp = &m->p[i];
        if (!mp->tensor) {
            int64_t v = dim_value(sv, mp->name);
            L.param[L.nparams++] = (uint64_t)(v < 0 ? 0 : v);
            continue;
        }
        PmTensor *T = &L.tens[L.ntens];
        T->base = (uint64_t)(L.ntens + 1) << 36;
        T->rank = mp->rank;
        T->esize = mp->esize;
        for (int d = 0; d < mp->rank; d++)
            T->shape[d] = dim_value(dv, mp->dim[d]);
        for (int d = mp->rank - 1; d >= 0; d--)
            T->stride[d] = d == mp->rank - 1 ? 1 : T->stride[d + 1] * T->shape[d + 1] + (d == mp->rank - 2 ? pad : 0);
        L.param[L.nparams++] = T->base;
        for (int d = 0; d + 1 < mp->rank; d++)
            L.param[L.nparams++] = (uint64_t)T->stride[d];
        if (mem) {
            int64_t span = 1;
            for (int d = 0; d < T->rank; d++)
                span += T->shape[d] ? (T->shape[d] - 1) * T->stride[d] : 0;
            size_t bytes = (size_t)(span * T->esize);
            T->mem = mem->mem[L.ntens] = malloc(bytes);
            T->known = mem->known[L.ntens] = malloc(bytes);
            bool out = !strcmp(mp->name, "Y");
            for (size_t b = 0; b < bytes; b++) {
                T->mem[b] = (uint8_t)rand();
                T->known[b] = !out;
            }
            mem->init[L.ntens] = malloc(bytes);
            memcpy(mem->init[L.ntens], T->mem, bytes);
            mem->t[L.ntens] = *T;
            mem->n = L.ntens + 1;
        }
        L.ntens++;
    }
    for (int i = 0; i < m->ndims; i++)
        L.param[L.nparams++] = (uint64_t)(uint32_t)dim_value(dv, m->dims[i]);
    if (L.nparams != p->nparams) {
        snprintf(rep.first, sizeof rep.first, "ABI: %d values for %d PTX params", L.nparams, p->nparams);
        rep.error = true;
        return rep;
    }
    /* Blocks: per axis the first two, the middle and the last two. */
    int pick[3][5], npick[3];
    for (int a = 0; a < 3; a++) {
        int64_t g = rpn_eval(m->grid[a], dv);
        L.grid[a] = (int)(g < 1 ? 1 : g);
        int cand[5] = { 0, 1, L.grid[a] / 2, L.grid[a] - 2, L.grid[a] - 1 };
        npick[a] = 0;
        for (int k = 0; k < 5; k++) {
            bool dup = cand[k] < 0 || cand[k] >= L.grid[a];
            for (int j = 0; j < npick[a]; j++)
                dup |= pick[a][j] == cand[k];
            if (!dup)
                pick[a][npick[a]++] = cand[k];
        }
        if (g < 1)
            npick[a] = 0;
    }
    int blocks[125][3], nb = 0;
    for (int x = 0; x < npick[0]; x++)
        for (int y = 0; y < npick[1]; y++)
            for (int z = 0; z < npick[2]; z++) {
                blocks[nb][0] = pick[0][x];
                blocks[nb][1] = pick[1][y];
                blocks[nb][2] = pick[2][z];
                nb++;
            }
    if (mem) {   /* every block: all of Y must be written */
        nb = 0;
        for (int x = 0; x < L.grid[0]; x++)
            for (int y = 0; y < L.grid[1]; y++)
                for (int z = 0; z < L.grid[2] && nb < 125; z++)
                    blocks[nb][0] = x, blocks[nb][1] = y, blocks[nb][2] = z, nb++;
    }
    pm_run(p, &L, (const int(*)[3])blocks, nb, &rep);
    return rep;
}

static PmReport run_case(const PmProg *p, const Meta *m, const DimVal *dv, int pad, const DimVal *sv)
{
    return run_case_mem(p, m, dv, pad, sv, NULL);
}

static void mem_free(Mem *mem)
{
    for (int i = 0; i < mem->n; i++) {
        free(mem->mem[i]);
        free(mem->known[i]);
        free(mem->init[i]);
    }
}

/* Element (r, c) of tensor i (rank 1: c) as an integer of its width (sign
 * extended); *known when all its bytes are. */
static int64_t mem_elem(const Mem *mem, int i, int64_t r, int64_t c, bool *known)
{
    const PmTensor *T = &mem->t[i];
    int64_t off = (T->rank > 1 ? r * T->stride[0] : 0) + c;
    uint64_t v = 0;
    *known = true;
    for (int b = T->esize - 1; b >= 0; b--) {
        v = v << 8 | mem->mem[i][off * T->esize + b];
        *known &= mem->known[i][off * T->esize + b] != 0;
    }
    int bits = 8 * T->esize;
    return bits == 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* c compiled, its metadata and PTX parsed (the test fails where one cannot
 * be); returns the PTX. The caller frees it and *meta, and pm_prog_free(p). */
static char *load_case(const Case *c, Meta *m, PmProg *p, char **meta)
{
    const char *label = c->file ? c->file : c->kernel ? c->kernel : "source";
    char *ptx = compile_case(c, meta);
    ck_assert_msg(ptx != NULL, "%s %s did not compile", label, c->arch);
    ck_assert(meta_parse(*meta, c->kernel, m));
    bool parsed = pm_parse(p, ptx, c->kernel);
    ck_assert_msg(parsed, "%s: %s", label, p->err);
    return ptx;
}

/* Compiles c and runs it for every dims set in dvs (a NULL-name-terminated
 * list per set) and every pad; fails the test on a violation. */
static long check_case(const Case *c, const DimVal *const *dvs, int ndvs, const int *pads, int npads,
                       const DimVal *sv)
{
    const char *label = c->file ? c->file : c->kernel ? c->kernel : "source";
    char *meta = NULL;
    Meta m;
    PmProg p;
    char *ptx = load_case(c, &m, &p, &meta);
    long accesses = 0;
    for (int i = 0; i < ndvs; i++)
        for (int k = 0; k < npads; k++) {
            PmReport rep = run_case(&p, &m, dvs[i], pads[k], sv);
            char dims[160] = "";
            size_t n = 0;
            for (const DimVal *d = dvs[i]; d->name; d++)
                n += (size_t)snprintf(dims + n, sizeof dims - n, " %s=%lld", d->name, (long long)d->v);
            ck_assert_msg(!rep.error, "%s %s%s%s%s pad %d: model error: %s", label, c->arch,
                          c->defs[0] ? " -D" : "", c->defs[0] ? c->defs[0] : "", dims, pads[k], rep.first);
            ck_assert_msg(rep.violations == 0, "%s %s -D%s -D%s%s pad %d: %ld accesses outside the rows; first: %s",
                          label, c->arch, c->defs[0] ? c->defs[0] : "",
                          c->defs[1] ? c->defs[1] : "", dims, pads[k], rep.violations, rep.first);
            accesses += rep.accesses;
        }
    pm_prog_free(&p);
    free(ptx);
    free(meta);
    return accesses;
}

/* The dims sets M, N of mn[i], each NULL-terminated. */
static void mn_dims(const int64_t (*mn)[2], int n, DimVal (*e)[3], const DimVal **evs)
{
    for (int i = 0; i < n; i++) {
        e[i][0] = (DimVal){ "M", mn[i][0] };
        e[i][1] = (DimVal){ "N", mn[i][1] };
        e[i][2] = (DimVal){ NULL, 0 };
        evs[i] = e[i];
    }
}

/* The dims sets of products: M, K, N of mkn[i], each NULL-terminated. */
static void mkn_dims(const int64_t (*mkn)[3], int n, DimVal (*g)[4], const DimVal **gvs)
{
    for (int i = 0; i < n; i++) {
        g[i][0] = (DimVal){ "M", mkn[i][0] };
        g[i][1] = (DimVal){ "K", mkn[i][1] };
        g[i][2] = (DimVal){ "N", mkn[i][2] };
        g[i][3] = (DimVal){ NULL, 0 };
        gvs[i] = g[i];
    }
}

static const char *const ARCHS[] = { "sm_86", "sm_90a" };
static const char *const FLOATS[] = { "bf16", "f16", "f32" };

/* Issue 32, exactly: bf16 layernorm, one row of 4097, BLOCK=8192, sm_90a. */
START_TEST(layernorm_tail_issue32)
{
    Case c = { "layernorm.tile", NULL, NULL, "sm_90a", { "BLOCK=8192", "T=bf16" } };
    static const DimVal d[] = { { "M", 1 }, { "N", 4097 }, { NULL, 0 } };
    const DimVal *dvs[] = { d };
    int pad0 = 0;
    ck_assert_int_gt(check_case(&c, dvs, 1, &pad0, 1, NULL), 0);
}
END_TEST

/* Row lengths around the vector width and the block, for the row kernels
 * (layernorm, softmax) in every float dtype, BLOCK 1024 and 8192, sm_86
 * and sm_90a; rows dense, padded by one element (unaligned rows) and by 16
 * bytes' worth (aligned rows with a gap). */
START_TEST(row_kernels)
{
    static const char *const files[] = { "layernorm.tile", "softmax.tile" };
    static const char *const blocks[] = { "BLOCK=1024", "BLOCK=8192" };
    static const int64_t ns[] = { 0, 1, 3, 8, 9, 17, 1000, 1023, 1024, 4095, 4097, 8191, 8192 };
    for (size_t f = 0; f < TC_COUNT(files); f++)
        for (size_t t = 0; t < TC_COUNT(FLOATS); t++)
            for (size_t b = 0; b < TC_COUNT(blocks); b++)
                for (size_t a = 0; a < TC_COUNT(ARCHS); a++) {
                    char tdef[32];
                    snprintf(tdef, sizeof tdef, "T=%s", FLOATS[t]);
                    Case c = { files[f], NULL, NULL, ARCHS[a], { blocks[b], tdef } };
                    int64_t block = b ? 8192 : 1024;
                    DimVal d[16][3];
                    const DimVal *dvs[16];
                    int nd = 0;
                    for (size_t i = 0; i < TC_COUNT(ns); i++) {
                        if (ns[i] > block)
                            continue;
                        d[nd][0] = (DimVal){ "M", 3 };
                        d[nd][1] = (DimVal){ "N", ns[i] };
                        d[nd][2] = (DimVal){ NULL, 0 };
                        dvs[nd] = d[nd];
                        nd++;
                    }
                    int pads[] = { 0, 1, 16 / dtype_size(FLOATS[t]) };
                    check_case(&c, dvs, nd, pads, 3, NULL);
                }
}
END_TEST

/* vector_add, the two reductions and transpose at ragged sizes. */
START_TEST(other_examples)
{
    for (size_t a = 0; a < TC_COUNT(ARCHS); a++) {
        static const int64_t ns[] = { 0, 1, 5, 1023, 1025, 4099 };
        int pad0[] = { 0 }, pads[] = { 0, 1, 4 };
        DimVal d[8][3];
        const DimVal *dvs[8];
        for (size_t i = 0; i < TC_COUNT(ns); i++) {
            d[i][0] = (DimVal){ "N", ns[i] };
            d[i][1] = (DimVal){ "NB", (ns[i] + 4095) / 4096 };
            d[i][2] = (DimVal){ NULL, 0 };
            dvs[i] = d[i];
        }
        Case va = { "vector_add.tile", NULL, NULL, ARCHS[a], { "BLOCK=1024" } };
        check_case(&va, dvs, (int)TC_COUNT(ns), pad0, 1, NULL);
        Case ps = { "reduction.tile", NULL, "partial_sum", ARCHS[a], { "BLOCK=4096" } };
        check_case(&ps, dvs, (int)TC_COUNT(ns), pad0, 1, NULL);
        static const int64_t mn[][2] = { { 1, 1 }, { 37, 129 }, { 65, 1001 }, { 130, 257 } };
        DimVal e[4][3];
        const DimVal *evs[4];
        mn_dims(mn, (int)TC_COUNT(mn), e, evs);
        Case rs = { "reduction.tile", NULL, "row_sum", ARCHS[a], { "BM=16", "BN=32" } };
        check_case(&rs, evs, (int)TC_COUNT(mn), pads, 3, NULL);
        for (size_t t = 0; t < TC_COUNT(FLOATS); t++) {
            char tdef[32];
            snprintf(tdef, sizeof tdef, "T=%s", FLOATS[t]);
            Case tr = { "transpose.tile", NULL, NULL, ARCHS[a], { tdef } };
            check_case(&tr, evs, (int)TC_COUNT(mn), pads, 3, NULL);
        }
        /* gemm: cp.async with zero fill at the edges, the unaligned copy
         * through registers (odd row strides), C through shared memory. */
        static const int64_t mkn[][3] = { { 1, 1, 1 }, { 300, 70, 130 }, { 256, 64, 128 } };
        DimVal g[3][4];
        const DimVal *gvs[3];
        mkn_dims(mkn, 3, g, gvs);
        int gpads[] = { 0, 1 };
        /* sm_90a's gemm reads through TMA into wgmma, which this model does
         * not execute: its bounds are the tensor maps' (the hardware's zero
         * fill), checked by compute-sanitizer on the GPU (bench/device.sh). */
        Case gm = { "gemm.tile", NULL, NULL, ARCHS[a], { NULL } };
        if (strcmp(ARCHS[a], "sm_86") == 0)
            ck_assert_int_gt(check_case(&gm, gvs, 3, gpads, 2, NULL), 0);
    }
}
END_TEST

/* Masked windows of every storage width: a 2-d window at a column offset
 * OFF past each block's start (OFF not a multiple of the vector: unaligned
 * rows), loaded with a nonzero `other` and stored back; the blocks at the
 * right and bottom edges straddle the tensor's end in both dims. */
static const char win2_src[] =
    "kernel win2<BM: int = 4, BN: int = 64, OFF: int = 0, T: dtype = i8>(X: global T[M, N], Y: global T[M, N])\n"
    "  grid(cdiv(N, BN), cdiv(M, BM))\n"
    "{\n"
    "  let r0 = block.y * BM;\n"
    "  let c0 = block.x * BN + OFF;\n"
    "  tile x = load(X[r0 : +BM, c0 : +BN], other = 3);\n"
    "  Y[r0 : +BM, c0 : +BN] = x + x;\n"
    "}\n";

/* A 1-d window with an `other`, under the register cap of a row kernel
 * (three loads of the row, as layernorm's X, W and B), in any dtype. */
static const char norm_src[] =
    "kernel norm3<BLOCK: int = 4096, T: dtype = i8>(X: global T[M, N], W: global T[N], B: global T[N],\n"
    "    Y: global T[M, N])\n"
    "  grid(M)\n"
    "{\n"
    "  let row = block.x;\n"
    "  tile x: f32[BLOCK] = f32(X[row, 0 : +BLOCK]);\n"
    "  let s = reduce(x, 0, sum);\n"
    "  tile y = (x - s) * f32(load(W[0 : +BLOCK], other = 1)) + f32(B[0 : +BLOCK]);\n"
    "  Y[row, 0 : +BLOCK] = T(y);\n"
    "}\n";

START_TEST(masked_windows_every_width)
{
    static const char *const types[] = { "i8", "u8", "f16", "bf16", "i32", "f32" };
    static const char *const offs[] = { "OFF=0", "OFF=1", "OFF=3" };
    static const int64_t mn[][2] = { { 1, 0 }, { 1, 1 }, { 5, 7 }, { 9, 63 }, { 9, 65 }, { 3, 130 }, { 6, 200 } };
    DimVal e[8][3];
    const DimVal *evs[8];
    mn_dims(mn, (int)TC_COUNT(mn), e, evs);
    int pads[] = { 0, 1, 16 };
    for (size_t a = 0; a < TC_COUNT(ARCHS); a++)
        for (size_t t = 0; t < TC_COUNT(types); t++) {
            char tdef[32];
            snprintf(tdef, sizeof tdef, "T=%s", types[t]);
            for (size_t o = 0; o < TC_COUNT(offs); o++) {
                Case c = { NULL, win2_src, "win2", ARCHS[a], { tdef, offs[o] } };
                check_case(&c, evs, (int)TC_COUNT(mn), pads, 3, NULL);
            }
            static const char *const blocks[] = { "BLOCK=1024", "BLOCK=4096" };
            static const int64_t ns[] = { 0, 1, 15, 17, 31, 1000, 1023, 1024 };
            DimVal d[8][3];
            const DimVal *dvs[8];
            for (size_t i = 0; i < TC_COUNT(ns); i++) {
                d[i][0] = (DimVal){ "M", 2 };
                d[i][1] = (DimVal){ "N", ns[i] };
                d[i][2] = (DimVal){ NULL, 0 };
                dvs[i] = d[i];
            }
            for (size_t b = 0; b < TC_COUNT(blocks); b++) {
                Case c = { NULL, norm_src, "norm3", ARCHS[a], { tdef, blocks[b] } };
                check_case(&c, dvs, (int)TC_COUNT(ns), pads, 2, NULL);
            }
        }
}
END_TEST

/* Values, not only addresses: integer kernels whose every op the model
 * computes, run on random contents, every element of Y checked. add3 (X,
 * W and B loaded under a register cap: the exact groups in pieces, 8 to
 * 64 bits) and oth (a nonzero `other` for the lanes past N, stored whole
 * into a BLOCK-wide Y). */
static const char add3_src[] =
    "kernel add3<BLOCK: int = 1024, T: dtype = i8>(X: global T[M, N], W: global T[N], B: global T[N],\n"
    "    Y: global T[M, N])\n"
    "  grid(M)\n"
    "{\n"
    "  let row = block.x;\n"
    "  Y[row, 0 : +BLOCK] = X[row, 0 : +BLOCK] + W[0 : +BLOCK] + B[0 : +BLOCK];\n"
    "}\n";

static const char oth_src[] =
    "kernel oth<BLOCK: int = 256, T: dtype = i8>(X: global T[M, N], W: global T[N], Y: global T[M, BLOCK])\n"
    "  grid(M)\n"
    "{\n"
    "  let r = block.x;\n"
    "  Y[r, 0 : +BLOCK] = load(X[r, 0 : +BLOCK], other = 5) + load(W[0 : +BLOCK], other = 7);\n"
    "}\n";

static int64_t wrap(int64_t v, int esize)
{
    int bits = 8 * esize;
    return bits == 64 ? v : (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits);
}

START_TEST(values_of_masked_loads)
{
    static const char *const types[] = { "i8", "i16", "i32", "i64" };
    static const int64_t ns[] = { 0, 1, 3, 7, 9, 15, 17, 100, 255, 256 };
    int pads[] = { 0, 1, 16 };
    for (size_t a = 0; a < TC_COUNT(ARCHS); a++)
        for (size_t t = 0; t < TC_COUNT(types); t++)
            for (int k = 0; k < 2; k++) {
                char tdef[32];
                snprintf(tdef, sizeof tdef, "T=%s", types[t]);
                Case c = { NULL, k ? oth_src : add3_src, k ? "oth" : "add3", ARCHS[a], { tdef, "BLOCK=256" } };
                char *meta = NULL;
                Meta m;
                PmProg p;
                char *ptx = load_case(&c, &m, &p, &meta);
                for (size_t i = 0; i < TC_COUNT(ns); i++)
                    for (size_t q = 0; q < TC_COUNT(pads); q++) {
                        const DimVal dv[] = { { "M", 3 }, { "N", ns[i] }, { NULL, 0 } };
                        Mem mem;
                        memset(&mem, 0, sizeof mem);
                        srand((unsigned)(ns[i] * 7 + q));
                        PmReport r = run_case_mem(&p, &m, dv, pads[q], NULL, &mem);
                        ck_assert_msg(!r.error && !r.violations, "%s %s %s N=%lld pad %d: %s", c.kernel, c.arch,
                                      types[t], (long long)ns[i], pads[q], r.first);
                        int yi = mem.n - 1, es = mem.t[yi].esize;
                        int64_t cols = k ? 256 : ns[i];
                        for (int64_t row = 0; row < 3; row++)
                            for (int64_t col = 0; col < cols; col++) {
                                bool kx, kw, kb = true, ky;
                                int64_t want;
                                if (col < ns[i]) {
                                    /* i64 sums wrap, as the kernel's do: add unsigned */
                                    uint64_t sum = (uint64_t)mem_elem(&mem, 0, row, col, &kx) +
                                                   (uint64_t)mem_elem(&mem, 1, 0, col, &kw) +
                                                   (uint64_t)(k ? 0 : mem_elem(&mem, 2, 0, col, &kb));
                                    want = (int64_t)sum;
                                    ck_assert(kx && kw && kb);
                                } else {
                                    want = 12;
                                }
                                int64_t got = mem_elem(&mem, yi, row, col, &ky);
                                ck_assert_msg(ky && got == wrap(want, es),
                                              "%s %s %s N=%lld pad %d: Y[%lld, %lld] = %lld%s, want %lld", c.kernel,
                                              c.arch, types[t], (long long)ns[i], pads[q], (long long)row,
                                              (long long)col, (long long)got, ky ? "" : " (not written)",
                                              (long long)wrap(want, es));
                            }
                        mem_free(&mem);
                    }
                pm_prog_free(&p);
                free(ptx);
                free(meta);
            }
}
END_TEST

/* atomic_add: every block of a 3-d grid adds its slice X[z] to A (ragged
 * edges: masked windows), and counters added to by a scalar; i32 and f32,
 * the vector form (red.global.add.v4.f32) on sm_100a. The model adds in
 * its block order (z last), as the reference does. */
static const char acc_src[] =
    "kernel acc3<BM: int = 4, BN: int = 32, T: dtype = i32>(X: global T[K, M, N], A: global T[M, N],\n"
    "    C: global i32[2])\n"
    "  grid(cdiv(N, BN), cdiv(M, BM), K)\n"
    "{\n"
    "  let n0 = block.x * BN;\n"
    "  let m0 = block.y * BM;\n"
    "  atomic_add(A[m0 : +BM, n0 : +BN], X[block.z, m0 : +BM, n0 : +BN]);\n"
    "  atomic_add(C[0], 1);\n"
    "  atomic_add(C[1], block.z);\n"
    "}\n";

START_TEST(atomic_add_values)
{
    static const char *const archs[] = { "sm_86", "sm_90a", "sm_100a" };
    static const char *const types[] = { "i32", "f32" };
    static const int64_t mn[][2] = { { 5, 37 }, { 4, 32 }, { 1, 1 }, { 8, 67 } };
    for (size_t a = 0; a < TC_COUNT(archs); a++)
        for (size_t t = 0; t < TC_COUNT(types); t++) {
            char tdef[32];
            snprintf(tdef, sizeof tdef, "T=%s", types[t]);
            Case c = { NULL, acc_src, "acc3", archs[a], { tdef } };
            char *meta = NULL;
            Meta m;
            PmProg p;
            char *ptx = load_case(&c, &m, &p, &meta);
            ck_assert_ptr_nonnull(strstr(ptx, "red.global.add"));
            if (!strcmp(archs[a], "sm_100a") && t == 1)
                ck_assert_ptr_nonnull(strstr(ptx, "red.global.add.v4.f32"));
            bool flt = t == 1;
            for (size_t i = 0; i < TC_COUNT(mn); i++)
                for (int pad = 0; pad <= 1; pad++) {
                    int64_t M = mn[i][0], N = mn[i][1], K = 3;
                    const DimVal dv[] = { { "M", M }, { "N", N }, { "K", K }, { NULL, 0 } };
                    Mem mem;
                    memset(&mem, 0, sizeof mem);
                    srand((unsigned)(i * 31 + (unsigned)pad));
                    PmReport r = run_case_mem(&p, &m, dv, pad, NULL, &mem);
                    ck_assert_msg(!r.error && !r.violations, "acc3 %s %s M=%lld N=%lld pad %d: %s", archs[a],
                                  types[t], (long long)M, (long long)N, pad, r.first);
                    const PmTensor *X = &mem.t[0], *A = &mem.t[1];
                    for (int64_t row = 0; row < M; row++)
                        for (int64_t col = 0; col < N; col++) {
                            int64_t ao = (row * A->stride[0] + col) * 4;
                            uint32_t want, got;
                            memcpy(&want, mem.init[1] + ao, 4);
                            memcpy(&got, mem.mem[1] + ao, 4);
                            for (int64_t k = 0; k < K; k++) {
                                uint32_t x;
                                memcpy(&x, mem.mem[0] + (k * X->stride[0] + row * X->stride[1] + col) * 4, 4);
                                if (flt) {
                                    float fw, fx;
                                    memcpy(&fw, &want, 4);
                                    memcpy(&fx, &x, 4);
                                    fw += fx;
                                    memcpy(&want, &fw, 4);
                                } else {
                                    want += x;
                                }
                            }
                            ck_assert_msg(mem.known[1][ao] && got == want,
                                          "acc3 %s %s M=%lld N=%lld pad %d: A[%lld, %lld] = 0x%08x, want 0x%08x",
                                          archs[a], types[t], (long long)M, (long long)N, pad, (long long)row,
                                          (long long)col, got, want);
                        }
                    int64_t nblocks = ((N + 31) / 32) * ((M + 3) / 4) * K, zsum = 0;
                    for (int64_t bx = 0; bx < (N + 31) / 32; bx++)
                        for (int64_t by = 0; by < (M + 3) / 4; by++)
                            zsum += K * (K - 1) / 2;
                    uint32_t c0, c1, i0, i1;
                    memcpy(&c0, mem.mem[2], 4);
                    memcpy(&c1, mem.mem[2] + 4, 4);
                    memcpy(&i0, mem.init[2], 4);
                    memcpy(&i1, mem.init[2] + 4, 4);
                    ck_assert_uint_eq(c0, i0 + (uint32_t)nblocks);
                    ck_assert_uint_eq(c1, i1 + (uint32_t)zsum);
                    mem_free(&mem);
                }
            pm_prog_free(&p);
            free(ptx);
            free(meta);
        }
}
END_TEST

/* A split-K product (splitk_src.h) adding its accumulator fragments (pairs
 * of f32: red.global.add.v2.f32 on sm_100a) to C: every address inside C's
 * rows. */

START_TEST(atomic_add_products)
{
    static const char *const archs[] = { "sm_86", "sm_100a" };
    static const int64_t mkn[][3] = { { 1, 8, 1 }, { 70, 40, 130 }, { 64, 64, 64 } };
    DimVal g[3][4];
    const DimVal *gvs[3];
    mkn_dims(mkn, 3, g, gvs);
    int pads[] = { 0, 8 };
    for (size_t a = 0; a < TC_COUNT(archs); a++) {
        Case c = { NULL, splitk_src, "splitk", archs[a], { NULL } };
        ck_assert_int_gt(check_case(&c, gvs, 3, pads, 2, NULL), 0);
    }
}
END_TEST

/* The model itself: a kernel that reads one element past the row end
 * (X[row, N]) is caught, so a clean run above means something. */
START_TEST(model_catches_overread)
{
    static const char src[] =
        "kernel over(X: global f32[M, N], Y: global f32[M])\n"
        "  grid(M)\n"
        "{\n"
        "  Y[block.x] = X[block.x, N - 1] + X[block.x, 0];\n"
        "}\n";
    Case c = { NULL, src, NULL, "sm_90a", { NULL } };
    char *meta = NULL;
    Meta m;
    PmProg p;
    char *ptx = load_case(&c, &m, &p, &meta);
    static const DimVal ok[] = { { "M", 2 }, { "N", 5 }, { NULL, 0 } };
    PmReport r = run_case(&p, &m, ok, 0, NULL);
    ck_assert_msg(!r.error && r.violations == 0 && r.accesses > 0, "%s", r.first);
    /* The same PTX launched with X's rows one element shorter than N says. */
    m.p[0].dim[1][0] = '4', m.p[0].dim[1][1] = 0;
    r = run_case(&p, &m, ok, 0, NULL);
    ck_assert_msg(r.violations > 0, "an over-read went unnoticed");
    ck_assert(strstr(r.first, "past its row's end") || strstr(r.first, "outside"));
    pm_prog_free(&p);
    free(ptx);
    free(meta);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ptx_bounds");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, model_catches_overread);
    tcase_add_test(tc, layernorm_tail_issue32);
    tcase_add_test(tc, row_kernels);
    tcase_add_test(tc, other_examples);
    tcase_add_test(tc, masked_windows_every_width);
    tcase_add_test(tc, values_of_masked_loads);
    tcase_add_test(tc, atomic_add_values);
    tcase_add_test(tc, atomic_add_products);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tc_check_run(suite()); }
