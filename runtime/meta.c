/* meta.c - the kernel metadata parser (format: docs/runtime.md, producer:
 * codegen/codegen.h) and the kernel metadata accessors.
 *
 * Needs: NUL-terminated text. Guarantees on success: every kernel has arch,
 * threads (1..1024), smem >= 0, cluster >= 1, params whose named dims are all
 * declared by `dim` records, every dim bound by at least one tensor param,
 * three well-formed grid programs that only name declared dims, tensor maps
 * whose boxes the hardware takes, a `writes` record (if any) naming tensor
 * params only, each once, and a fallback (if named) that is another kernel
 * of the module with the same params and dims and no tensor maps.
 * Every error names the metadata line.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"
#include "../lib/tc_limits.h"

#define MAX_TOKS TC_LIMIT_META_TOKENS

_Static_assert(TILERT_MAX_PARAMS == TC_LIMIT_PARAMS && TILERT_MAX_DIMS == TC_LIMIT_DIMS &&
                   TILERT_MAX_RANK == TC_LIMIT_RANK && TILERT_MAX_TMAPS == TC_LIMIT_TMAPS &&
                   TILERT_MAX_TMAP_RANK == TC_LIMIT_TMAP_RANK,
               "include/tilert.h and lib/tc_limits.h disagree");

typedef struct Tok { const char *s; size_t n; } Tok;

typedef struct Parser {
    tilert_module *m;
    const char *p;           /* next line */
    int line;
    Tok tok[MAX_TOKS];
    int ntok;
    /* the kernel being parsed */
    tilert_kernel *k;
    RtParam params[TILERT_MAX_PARAMS];
    const char *dims[TILERT_MAX_DIMS];
    int dim_line[TILERT_MAX_DIMS];
    RtTmap tmaps[TILERT_MAX_TMAPS];
    int grid_line, threads_line;
    bool have_arch, have_threads, have_smem, have_cluster;
} Parser;

static tilert_status bad(Parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tilert_status bad(Parser *ps, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tilert_fail(TILERT_ERR_META, "metadata line %d: %s", ps->line, msg);
}

static tilert_status nomem(void)
{
    return tilert_fail(TILERT_ERR_NOMEM, "out of memory while parsing kernel metadata");
}

/* Split the next line into ps->tok; false at end of text. Comments start with '#'. */
static bool next_line(Parser *ps, bool *too_many)
{
    if (!*ps->p)
        return false;
    ps->line++;
    ps->ntok = 0;
    *too_many = false;
    const char *s = ps->p;
    /* Any whitespace but the newline separates tokens (a token ends at the
     * first isspace byte, so skipping must stop only at non-space bytes). */
    while (*s && *s != '\n' && *s != '#') {
        while (*s != '\n' && isspace((unsigned char)*s))
            s++;
        if (!*s || *s == '\n' || *s == '#')
            break;
        const char *b = s;
        while (*s && !isspace((unsigned char)*s) && *s != '#')
            s++;
        if (ps->ntok == MAX_TOKS)
            *too_many = true;
        else
            ps->tok[ps->ntok++] = (Tok){b, (size_t)(s - b)};
    }
    while (*s && *s != '\n')
        s++;
    ps->p = *s ? s + 1 : s;
    return true;
}

static bool tok_is(const Tok *t, const char *s)
{
    return t->n == strlen(s) && memcmp(t->s, s, t->n) == 0;
}

static bool is_ident(const Tok *t)
{
    if (!t->n || !(isalpha((unsigned char)t->s[0]) || t->s[0] == '_'))
        return false;
    for (size_t i = 1; i < t->n; i++)
        if (!(isalnum((unsigned char)t->s[i]) || t->s[i] == '_'))
            return false;
    return true;
}

/* A decimal integer token, in [lo, hi]. */
static bool tok_int(const Tok *t, int64_t lo, int64_t hi, int64_t *out)
{
    char buf[32];
    if (t->n == 0 || t->n >= sizeof buf)
        return false;
    memcpy(buf, t->s, t->n);
    buf[t->n] = '\0';
    if (!isdigit((unsigned char)buf[0]) && !(buf[0] == '-' && isdigit((unsigned char)buf[1])))
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (*end || errno || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static char *tok_dup(Parser *ps, const Tok *t)
{
    return tilert_pool_strndup(&ps->m->pool, t->s, t->n);
}

static tilert_status want_ntok(Parser *ps, int n, const char *usage)
{
    if (ps->ntok != n)
        return bad(ps, "expected '%s'", usage);
    return TILERT_OK;
}

/* `threads N`, `smem N` */
static tilert_status rec_int(Parser *ps, bool *seen, const char *what, int64_t lo, int64_t hi,
                             int *out)
{
    if (*seen)
        return bad(ps, "kernel %s: second '%s' record", ps->k->name, what);
    *seen = true;
    int64_t v;
    if (ps->ntok != 2 || !tok_int(&ps->tok[1], lo, hi, &v))
        return bad(ps, "expected '%s N' with N in %lld..%lld", what, (long long)lo, (long long)hi);
    *out = (int)v;
    return TILERT_OK;
}

/* `arch sm_XX` */
static tilert_status rec_arch(Parser *ps)
{
    if (ps->have_arch)
        return bad(ps, "kernel %s: second 'arch' record", ps->k->name);
    ps->have_arch = true;
    if (ps->ntok != 2 || ps->tok[1].n < 4 || memcmp(ps->tok[1].s, "sm_", 3) != 0)
        return bad(ps, "expected 'arch sm_XX'");
    ps->k->arch = tok_dup(ps, &ps->tok[1]);
    return ps->k->arch ? TILERT_OK : nomem();
}

/* `cluster X Y Z` */
static tilert_status rec_cluster(Parser *ps)
{
    if (ps->have_cluster)
        return bad(ps, "kernel %s: second 'cluster' record", ps->k->name);
    ps->have_cluster = true;
    for (int i = 0; i < 3; i++) {
        int64_t v;
        if (ps->ntok != 4 || !tok_int(&ps->tok[1 + i], 1, 65535, &v))
            return bad(ps, "expected 'cluster X Y Z' with each at least 1");
        ps->k->cluster[i] = (int)v;
    }
    return TILERT_OK;
}

static int find_dim(const Parser *ps, const Tok *t)
{
    for (size_t i = 0; i < ps->k->ndims; i++)
        if (tok_is(t, ps->dims[i]))
            return (int)i;
    return -1;
}

static int find_param(const Parser *ps, const Tok *t)
{
    for (size_t i = 0; i < ps->k->nparams; i++)
        if (tok_is(t, ps->params[i].name))
            return (int)i;
    return -1;
}

/* Params and dims come before the tensor maps, which follow them in the ABI. */
static tilert_status before_tmaps(Parser *ps, const char *what)
{
    if (ps->k->ntmaps)
        return bad(ps, "kernel %s: '%s' after a 'tmap' record (tmap records follow every param "
                   "and dim)", ps->k->name, what);
    return TILERT_OK;
}

/* `dim NAME` */
static tilert_status rec_dim(Parser *ps)
{
    tilert_status st = before_tmaps(ps, "dim");
    if (st)
        return st;
    if (ps->ntok != 2 || !is_ident(&ps->tok[1]))
        return bad(ps, "expected 'dim NAME'");
    if (find_dim(ps, &ps->tok[1]) >= 0)
        return bad(ps, "kernel %s: dim %.*s declared twice", ps->k->name,
                   (int)ps->tok[1].n, ps->tok[1].s);
    if (ps->k->ndims == TILERT_MAX_DIMS)
        return bad(ps, "kernel %s: more than %d dims", ps->k->name, TILERT_MAX_DIMS);
    const char *name = tok_dup(ps, &ps->tok[1]);
    if (!name)
        return nomem();
    ps->dim_line[ps->k->ndims] = ps->line;
    ps->dims[ps->k->ndims++] = name;
    return TILERT_OK;
}

/* The dims and `align A` of `param NAME tensor DTYPE RANK D0 .. DN-1 align A`.
 * Named dims are kept as strings in dimref order and resolved at `end`. */
static tilert_status tensor_dims(Parser *ps, RtParam *pa)
{
    int64_t rank;
    if (ps->ntok < 5 || !tok_int(&ps->tok[4], 1, TILERT_MAX_RANK, &rank))
        return bad(ps, "param %s: expected a rank in 1..%d", pa->name, TILERT_MAX_RANK);
    pa->rank = (int)rank;
    if (ps->ntok != 7 + rank || !tok_is(&ps->tok[5 + rank], "align"))
        return bad(ps, "param %s: expected %lld dims then 'align BYTES'", pa->name,
                   (long long)rank);
    int64_t align;
    if (!tok_int(&ps->tok[6 + rank], 1, 1 << 20, &align) || (align & (align - 1)))
        return bad(ps, "param %s: align must be a power of two", pa->name);
    pa->align = (int)align;
    for (int i = 0; i < pa->rank; i++) {
        const Tok *t = &ps->tok[5 + i];
        pa->dimref[i] = -1;
        pa->extent[i] = -1;
        if (tok_int(t, 0, TC_LIMIT_STATIC_DIM, &pa->extent[i]))
            continue;
        if (!is_ident(t))
            return bad(ps, "param %s dim %d: '%.*s' is neither a dim name nor an integer in 0..%d",
                       pa->name, i, (int)t->n, t->s, INT32_MAX);
        pa->dimref[i] = find_dim(ps, t);
        if (pa->dimref[i] < 0)
            return bad(ps, "param %s dim %d: '%.*s' is not declared by a 'dim' record",
                       pa->name, i, (int)t->n, t->s);
    }
    return TILERT_OK;
}

/* `param NAME tensor ...` / `param NAME scalar DTYPE` */
static tilert_status rec_param(Parser *ps)
{
    tilert_status st = before_tmaps(ps, "param");
    if (st)
        return st;
    if (ps->k->writes_line)
        return bad(ps, "kernel %s: 'param' after the 'writes' record (writes follows every param)",
                   ps->k->name);
    if (ps->ntok < 4 || !is_ident(&ps->tok[1]))
        return bad(ps, "expected 'param NAME tensor|scalar DTYPE ...'");
    if (find_param(ps, &ps->tok[1]) >= 0)
        return bad(ps, "kernel %s: param %.*s declared twice", ps->k->name,
                   (int)ps->tok[1].n, ps->tok[1].s);
    if (ps->k->nparams == TILERT_MAX_PARAMS)
        return bad(ps, "kernel %s: more than %d params", ps->k->name, TILERT_MAX_PARAMS);
    RtParam *pa = &ps->params[ps->k->nparams];
    memset(pa, 0, sizeof *pa);
    pa->line = ps->line;
    if (!(pa->name = tok_dup(ps, &ps->tok[1])))
        return nomem();
    char dt[16] = "";
    if (ps->tok[3].n < sizeof dt)
        memcpy(dt, ps->tok[3].s, ps->tok[3].n);
    pa->dtype = tilert_dtype_parse(dt);
    if (pa->dtype < 0)
        return bad(ps, "param %s: unknown dtype '%.*s'", pa->name, (int)ps->tok[3].n, ps->tok[3].s);
    if (tok_is(&ps->tok[2], "tensor")) {
        pa->kind = TILERT_PARAM_TENSOR;
        st = tensor_dims(ps, pa);
    } else if (tok_is(&ps->tok[2], "scalar")) {
        pa->kind = TILERT_PARAM_SCALAR;
        st = want_ntok(ps, 4, "param NAME scalar DTYPE");
        if (!st && pa->dtype != RT_F32 && pa->dtype != RT_F64 && pa->dtype != RT_I32 &&
            pa->dtype != RT_I64 && pa->dtype != RT_BOOL)
            st = bad(ps, "param %s: a scalar must be f32, f64, i32, i64 or bool", pa->name);
    } else {
        st = bad(ps, "param %s: expected 'tensor' or 'scalar'", pa->name);
    }
    if (!st)
        ps->k->nparams++;
    return st;
}

/* The box of `tmap P swizzle MODE box B0 .. Br-1` (tokens 5..): r entries in
 * 1..256, the inner one a multiple of 16 bytes and within the swizzle span. */
static tilert_status tmap_box(Parser *ps, RtTmap *tm, const RtParam *pa)
{
    if (ps->ntok - 5 != pa->rank)
        return bad(ps, "tmap %s: box has %d entries but param %s has rank %d", pa->name,
                   ps->ntok - 5, pa->name, pa->rank);
    for (int i = 0; i < pa->rank; i++) {
        int64_t v;
        const Tok *t = &ps->tok[5 + i];
        if (!tok_int(t, 1, TC_LIMIT_TMAP_BOX, &v))
            return bad(ps, "tmap %s: box entry %d is '%.*s'; each must be an integer in 1..%d",
                       pa->name, i, (int)t->n, t->s, TC_LIMIT_TMAP_BOX);
        tm->box[i] = (int)v;
    }
    int64_t bytes = (int64_t)tm->box[pa->rank - 1] * tilert_dtype_bits(pa->dtype) / 8;
    if (bytes % 16)
        return bad(ps, "tmap %s: the inner box is %lld bytes (%d x %s); it must be a multiple "
                   "of 16", pa->name, (long long)bytes, tm->box[pa->rank - 1],
                   tilert_dtype_name(pa->dtype));
    if (tm->swizzle && bytes > tm->swizzle)
        return bad(ps, "tmap %s: the inner box is %lld bytes (%d x %s), over the %d-byte "
                   "swizzle span", pa->name, (long long)bytes, tm->box[pa->rank - 1],
                   tilert_dtype_name(pa->dtype), tm->swizzle);
    return TILERT_OK;
}

/* `tmap PARAM swizzle none|32|64|128 box B0 .. Br-1` */
static tilert_status rec_tmap(Parser *ps)
{
    tilert_kernel *k = ps->k;
    if (ps->ntok < 5 || !tok_is(&ps->tok[2], "swizzle") || !tok_is(&ps->tok[4], "box"))
        return bad(ps, "expected 'tmap PARAM swizzle none|32|64|128 box B0 ..'");
    if (k->ntmaps == TILERT_MAX_TMAPS)
        return bad(ps, "kernel %s: more than %d tmaps", k->name, TILERT_MAX_TMAPS);
    int i = find_param(ps, &ps->tok[1]);
    if (i < 0)
        return bad(ps, "tmap: '%.*s' is not a param of kernel %s", (int)ps->tok[1].n,
                   ps->tok[1].s, k->name);
    const RtParam *pa = &ps->params[i];
    if (pa->kind != TILERT_PARAM_TENSOR)
        return bad(ps, "tmap %s: param %s is a scalar; a tensor map describes a tensor",
                   pa->name, pa->name);
    if (pa->rank > TILERT_MAX_TMAP_RANK)
        return bad(ps, "tmap %s: param %s has rank %d; a tensor map has at most %d dims",
                   pa->name, pa->name, pa->rank, TILERT_MAX_TMAP_RANK);
    if (tilert_tmap_data_type(pa->dtype) < 0)
        return bad(ps, "tmap %s: dtype %s has no tensor-map element type", pa->name,
                   tilert_dtype_name(pa->dtype));
    RtTmap *tm = &ps->tmaps[k->ntmaps];
    memset(tm, 0, sizeof *tm);
    tm->param = i;
    tm->line = ps->line;
    static const struct { const char *s; int bytes; } modes[] = {
        {"none", 0}, {"32", 32}, {"64", 64}, {"128", 128},
    };
    const Tok *mode = &ps->tok[3];
    tm->swizzle = -1;
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
        if (tok_is(mode, modes[m].s))
            tm->swizzle = modes[m].bytes;
    if (tm->swizzle < 0)
        return bad(ps, "tmap %s: swizzle must be none, 32, 64 or 128, not '%.*s'", pa->name,
                   (int)mode->n, mode->s);
    tilert_status st = tmap_box(ps, tm, pa);
    if (!st)
        k->ntmaps++;
    return st;
}

/* `writes P ...`: the tensor params the kernel stores to (none when empty),
 * each declared before the record. */
static tilert_status rec_writes(Parser *ps)
{
    tilert_kernel *k = ps->k;
    if (k->writes_line)
        return bad(ps, "kernel %s: second 'writes' record", k->name);
    k->writes_line = ps->line;
    for (int t = 1; t < ps->ntok; t++) {
        int i = find_param(ps, &ps->tok[t]);
        if (i < 0)
            return bad(ps, "writes: '%.*s' is not a param of kernel %s (declared before this "
                       "record)", (int)ps->tok[t].n, ps->tok[t].s, k->name);
        RtParam *pa = &ps->params[i];
        if (pa->kind != TILERT_PARAM_TENSOR)
            return bad(ps, "writes: param %s is a scalar; only tensors are written", pa->name);
        if (pa->written)
            return bad(ps, "writes: param %s is named twice", pa->name);
        pa->written = true;
    }
    return TILERT_OK;
}

/* `fallback KERNEL` (resolved when the whole module is parsed: fallbacks()) */
static tilert_status rec_fallback(Parser *ps)
{
    tilert_kernel *k = ps->k;
    if (k->fallback_line)
        return bad(ps, "kernel %s: second 'fallback' record", k->name);
    if (ps->ntok != 2 || !is_ident(&ps->tok[1]))
        return bad(ps, "expected 'fallback KERNEL'");
    if (tok_is(&ps->tok[1], k->name))
        return bad(ps, "kernel %s: a kernel cannot be its own fallback", k->name);
    k->fallback_line = ps->line;
    k->fallback_name = tok_dup(ps, &ps->tok[1]);
    return k->fallback_name ? TILERT_OK : nomem();
}

static bool rpn_op(const Tok *t, RpnOp *op)
{
    static const struct { const char *s; RpnOp op; } ops[] = {
        {"+", RPN_ADD}, {"-", RPN_SUB}, {"*", RPN_MUL}, {"/", RPN_DIV}, {"%", RPN_MOD},
        {"cdiv", RPN_CDIV}, {"min", RPN_MIN}, {"max", RPN_MAX}, {"divisor", RPN_DIVISOR},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (tok_is(t, ops[i].s)) {
            *op = ops[i].op;
            return true;
        }
    return false;
}

/* One RPN program: tokens tok[b..e). */
static tilert_status grid_prog(Parser *ps, int axis, int b, int e)
{
    static const char xyz[] = "xyz";
    RpnTok *prog = tilert_pool_alloc(&ps->m->pool, sizeof *prog * (size_t)(e - b + 1));
    if (!prog)
        return nomem();
    int depth = 0;
    for (int i = b; i < e; i++) {
        const Tok *t = &ps->tok[i];
        RpnTok *r = &prog[i - b];
        if (rpn_op(t, &r->op)) {
            if (depth < 2)
                return bad(ps, "grid %c: '%.*s' needs two operands", xyz[axis], (int)t->n, t->s);
            depth--;
        } else if (tok_int(t, 0, INT64_MAX, &r->v)) {
            r->op = RPN_NUM;
            depth++;
        } else if (tok_is(t, "num_sms()")) {   /* the launch device's SM count */
            r->op = RPN_SMS;
            ps->k->uses_sms = true;
            depth++;
        } else if (is_ident(t) && find_dim(ps, t) >= 0) {
            r->op = RPN_DIM;
            r->v = find_dim(ps, t);
            depth++;
        } else {
            return bad(ps, "grid %c: '%.*s' is not a number, a declared dim, num_sms() or an operator",
                       xyz[axis], (int)t->n, t->s);
        }
    }
    if (depth != 1)
        return bad(ps, "grid %c: the rule leaves %d values (need exactly 1)", xyz[axis], depth);
    ps->k->rpn[axis] = prog;
    ps->k->nrpn[axis] = (size_t)(e - b);
    return TILERT_OK;
}

/* `grid RPN ; RPN ; RPN` (missing trailing programs mean 1). Needs the dims declared before it. */
static tilert_status rec_grid(Parser *ps)
{
    if (ps->grid_line)
        return bad(ps, "kernel %s: second 'grid' record", ps->k->name);
    ps->grid_line = ps->line;
    int axis = 0, b = 1;
    for (int i = 1; i <= ps->ntok; i++) {
        if (i < ps->ntok && !tok_is(&ps->tok[i], ";"))
            continue;
        if (axis == 3)
            return bad(ps, "grid: more than three rules");
        if (i == b)
            return bad(ps, "grid: empty rule for %c", "xyz"[axis]);
        tilert_status st = grid_prog(ps, axis++, b, i);
        if (st)
            return st;
        b = i + 1;
    }
    for (; axis < 3; axis++) {
        RpnTok *one = tilert_pool_alloc(&ps->m->pool, sizeof *one);
        if (!one)
            return nomem();
        *one = (RpnTok){RPN_NUM, 1};
        ps->k->rpn[axis] = one;
        ps->k->nrpn[axis] = 1;
    }
    const char *b0 = ps->tok[1].s;
    const Tok *last = &ps->tok[ps->ntok - 1];
    ps->k->grid_text = tilert_pool_strndup(&ps->m->pool, b0, (size_t)(last->s + last->n - b0));
    return ps->k->grid_text ? TILERT_OK : nomem();
}

/* A kernel is complete: required records, every dim bound by a tensor. */
static tilert_status finish_kernel(Parser *ps)
{
    tilert_kernel *k = ps->k;
    if (!ps->have_arch || !ps->have_threads || !ps->grid_line)
        return bad(ps, "kernel %s (line %d) has no '%s' record", k->name, k->line,
                   !ps->have_arch ? "arch" : !ps->have_threads ? "threads" : "grid");
    for (size_t d = 0; d < k->ndims; d++) {
        bool used = false;
        for (size_t i = 0; i < k->nparams && !used; i++)
            for (int j = 0; j < ps->params[i].rank; j++)
                used |= ps->params[i].dimref[j] == (int)d;
        if (!used) {
            ps->line = ps->dim_line[d];
            return bad(ps, "kernel %s: dim %s is not a dim of any tensor param, so a launch "
                       "cannot bind it", k->name, ps->dims[d]);
        }
    }
    k->params = tilert_pool_alloc(&ps->m->pool, sizeof *k->params * (k->nparams + 1));
    k->dims = tilert_pool_alloc(&ps->m->pool, sizeof *k->dims * (k->ndims + 1));
    k->tmaps = tilert_pool_alloc(&ps->m->pool, sizeof *k->tmaps * (k->ntmaps + 1));
    if (!k->params || !k->dims || !k->tmaps || tilert_tmap_cache_init(k))
        return nomem();
    memcpy(k->params, ps->params, sizeof *k->params * k->nparams);
    memcpy(k->dims, ps->dims, sizeof *k->dims * k->ndims);
    memcpy(k->tmaps, ps->tmaps, sizeof *k->tmaps * k->ntmaps);
    ps->k = NULL;
    return TILERT_OK;
}

/* Does fallback f take exactly k's arguments: the same dims in order, the
 * same params (names, kinds, dtypes, ranks, dims; align may differ)? */
static tilert_status fallback_matches(Parser *ps, const tilert_kernel *k, const tilert_kernel *f)
{
    if (f->ntmaps)
        return bad(ps, "kernel %s: fallback %s has tensor maps itself; a fallback takes none",
                   k->name, f->name);
    if (f->ndims != k->ndims)
        return bad(ps, "kernel %s: fallback %s has %zu dims, not %zu", k->name, f->name,
                   f->ndims, k->ndims);
    for (size_t d = 0; d < k->ndims; d++)
        if (strcmp(f->dims[d], k->dims[d]) != 0)
            return bad(ps, "kernel %s: fallback %s dim %zu is %s, not %s", k->name, f->name, d,
                       f->dims[d], k->dims[d]);
    if (f->nparams != k->nparams)
        return bad(ps, "kernel %s: fallback %s has %zu params, not %zu", k->name, f->name,
                   f->nparams, k->nparams);
    for (size_t i = 0; i < k->nparams; i++) {
        const RtParam *a = &k->params[i], *b = &f->params[i];
        char ta[256], tb[256];
        if (strcmp(a->name, b->name) != 0)
            return bad(ps, "kernel %s: fallback %s param %zu is %s, not %s", k->name, f->name,
                       i, b->name, a->name);
        tilert_param_type(k, a, ta, sizeof ta);
        tilert_param_type(f, b, tb, sizeof tb);
        if (a->kind != b->kind || strcmp(ta, tb) != 0)
            return bad(ps, "kernel %s: fallback %s param %s is %s %s, not %s %s", k->name,
                       f->name, a->name, b->kind == TILERT_PARAM_TENSOR ? "tensor" : "scalar",
                       tb, a->kind == TILERT_PARAM_TENSOR ? "tensor" : "scalar", ta);
    }
    return TILERT_OK;
}

/* Resolve every `fallback` record once all kernels are known. */
static tilert_status fallbacks(Parser *ps)
{
    tilert_module *m = ps->m;
    for (size_t i = 0; i < m->nkernels; i++) {
        tilert_kernel *k = &m->kernels[i];
        if (!k->fallback_line)
            continue;
        ps->line = k->fallback_line;
        for (size_t j = 0; j < m->nkernels && !k->fallback; j++)
            if (strcmp(m->kernels[j].name, k->fallback_name) == 0)
                k->fallback = &m->kernels[j];
        if (!k->fallback)
            return bad(ps, "kernel %s: fallback %s is not a kernel of this module", k->name,
                       k->fallback_name);
        tilert_status st = fallback_matches(ps, k, k->fallback);
        if (st)
            return st;
    }
    return TILERT_OK;
}

/* `kernel NAME` starts a record block. */
static tilert_status start_kernel(Parser *ps)
{
    if (ps->ntok != 2 || !is_ident(&ps->tok[1]))
        return bad(ps, "expected 'kernel NAME'");
    tilert_module *m = ps->m;
    for (size_t i = 0; i < m->nkernels; i++)
        if (tok_is(&ps->tok[1], m->kernels[i].name))
            return bad(ps, "kernel %.*s defined twice", (int)ps->tok[1].n, ps->tok[1].s);
    tilert_kernel *k = &m->kernels[m->nkernels];
    k->mod = m;
    k->index = m->nkernels++;
    k->line = ps->line;
    k->cluster[0] = k->cluster[1] = k->cluster[2] = 1;
    if (!(k->name = tok_dup(ps, &ps->tok[1])))
        return nomem();
    ps->k = k;
    ps->have_arch = ps->have_threads = ps->have_smem = ps->have_cluster = false;
    ps->grid_line = 0;
    return TILERT_OK;
}

static tilert_status kernel_record(Parser *ps)
{
    const Tok *t = &ps->tok[0];
    if (tok_is(t, "arch")) return rec_arch(ps);
    if (tok_is(t, "threads")) return rec_int(ps, &ps->have_threads, "threads", 1, 1024, &ps->k->threads);
    if (tok_is(t, "smem")) return rec_int(ps, &ps->have_smem, "smem", 0, INT32_MAX, &ps->k->smem);
    if (tok_is(t, "cluster")) return rec_cluster(ps);
    if (tok_is(t, "dim")) return rec_dim(ps);
    if (tok_is(t, "param")) return rec_param(ps);
    if (tok_is(t, "grid")) return rec_grid(ps);
    if (tok_is(t, "tmap")) return rec_tmap(ps);
    if (tok_is(t, "fallback")) return rec_fallback(ps);
    if (tok_is(t, "writes")) return rec_writes(ps);
    if (tok_is(t, "end")) return ps->ntok == 1 ? finish_kernel(ps) : bad(ps, "expected 'end'");
    if (tok_is(t, "kernel"))
        return bad(ps, "kernel %s (line %d) has no 'end' before the next kernel", ps->k->name,
                   ps->k->line);
    return bad(ps, "unknown record '%.*s'", (int)t->n, t->s);
}

static tilert_status header(Parser *ps)
{
    int64_t v;
    if (ps->ntok != 2 || !tok_is(&ps->tok[0], "tilec-meta") || !tok_int(&ps->tok[1], 0, 1000, &v))
        return bad(ps, "expected the header 'tilec-meta 1'");
    if (v != 1)
        return bad(ps, "metadata version %lld; this runtime reads version 1", (long long)v);
    return TILERT_OK;
}

static size_t count_kernels(const char *s)
{
    size_t n = 0;
    for (const char *p = strstr(s, "kernel"); p; p = strstr(p + 1, "kernel"))
        n++;
    return n;
}

tilert_status tilert_meta_parse(tilert_module *m, const char *text)
{
    Parser ps = {.m = m, .p = text};
    m->kernels = tilert_pool_alloc(&m->pool, sizeof *m->kernels * (count_kernels(text) + 1));
    if (!m->kernels)
        return nomem();
    bool seen_header = false, too_many;
    while (next_line(&ps, &too_many)) {
        if (ps.ntok == 0)
            continue;
        if (too_many)
            return bad(&ps, "more than %d tokens on one line", MAX_TOKS);
        tilert_status st = !seen_header ? header(&ps)
                         : ps.k ? kernel_record(&ps)
                         : tok_is(&ps.tok[0], "kernel") ? start_kernel(&ps)
                         : tok_is(&ps.tok[0], "tilec-meta") ? header(&ps)  /* concatenated files */
                         : tok_is(&ps.tok[0], "compiler") ? TILERT_OK      /* who wrote it: informative */
                         : bad(&ps, "expected 'kernel NAME', found '%.*s'", (int)ps.tok[0].n,
                               ps.tok[0].s);
        if (st)
            return st;
        seen_header = true;
    }
    if (!seen_header)
        return tilert_fail(TILERT_ERR_META, "metadata is empty (expected 'tilec-meta 1')");
    if (ps.k)
        return bad(&ps, "kernel %s (line %d) has no 'end'", ps.k->name, ps.k->line);
    if (m->nkernels == 0)
        return bad(&ps, "metadata describes no kernel");
    return fallbacks(&ps);
}

void tilert_param_type(const tilert_kernel *k, const RtParam *p, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "%s", tilert_dtype_name(p->dtype));
    for (int d = 0; d < p->rank && len < n; d++) {
        if (p->dimref[d] >= 0)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", d ? ", " : "[", k->dims[p->dimref[d]]);
        else
            len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? ", " : "[", (long long)p->extent[d]);
    }
    if (p->rank && len < n)
        snprintf(buf + len, n - len, "]");
}

/* ---- accessors ---- */

TILERT_API const char *tilert_kernel_name(const tilert_kernel *k) { return k ? k->name : NULL; }
TILERT_API const char *tilert_kernel_arch(const tilert_kernel *k) { return k ? k->arch : NULL; }
TILERT_API int tilert_kernel_threads(const tilert_kernel *k) { return k ? k->threads : 0; }
TILERT_API int tilert_kernel_smem(const tilert_kernel *k) { return k ? k->smem : 0; }
TILERT_API size_t tilert_kernel_num_params(const tilert_kernel *k) { return k ? k->nparams : 0; }
TILERT_API size_t tilert_kernel_num_dims(const tilert_kernel *k) { return k ? k->ndims : 0; }
TILERT_API const char *tilert_kernel_grid_rule(const tilert_kernel *k)
{
    return k ? k->grid_text : NULL;
}

TILERT_API void tilert_kernel_cluster(const tilert_kernel *k, int cluster[3])
{
    for (int i = 0; i < 3; i++)
        cluster[i] = k ? k->cluster[i] : 1;
}

TILERT_API const char *tilert_kernel_dim(const tilert_kernel *k, size_t i)
{
    return k && i < k->ndims ? k->dims[i] : NULL;
}

TILERT_API tilert_status tilert_kernel_param(const tilert_kernel *k, size_t i,
                                             tilert_param_info *out)
{
    if (!k || !out || i >= k->nparams)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_kernel_param: no param %zu", i);
    const RtParam *p = &k->params[i];
    memset(out, 0, sizeof *out);
    out->name = p->name;
    out->kind = p->kind;
    out->dtype = tilert_dtype_name(p->dtype);
    out->rank = p->rank;
    out->align = p->align;
    for (int d = 0; d < p->rank; d++) {
        out->dims[d] = p->dimref[d] >= 0 ? k->dims[p->dimref[d]] : NULL;
        out->extents[d] = p->extent[d];
    }
    return TILERT_OK;
}

TILERT_API size_t tilert_kernel_num_tmaps(const tilert_kernel *k) { return k ? k->ntmaps : 0; }
TILERT_API int tilert_kernel_param_written(const tilert_kernel *k, size_t i)
{
    if (!k || i >= k->nparams || !k->writes_line)
        return -1;
    return k->params[i].written;
}

TILERT_API tilert_kernel *tilert_kernel_fallback(const tilert_kernel *k)
{
    return k ? k->fallback : NULL;
}

TILERT_API tilert_status tilert_kernel_tmap(const tilert_kernel *k, size_t i, tilert_tmap_info *out)
{
    if (!k || !out || i >= k->ntmaps)
        return tilert_fail(TILERT_ERR_USAGE, "tilert_kernel_tmap: no tensor map %zu", i);
    const RtTmap *tm = &k->tmaps[i];
    memset(out, 0, sizeof *out);
    out->param = (size_t)tm->param;
    out->swizzle = tm->swizzle;
    out->rank = k->params[tm->param].rank;
    for (int d = 0; d < out->rank; d++)
        out->box[d] = (unsigned)tm->box[d];
    return TILERT_OK;
}
