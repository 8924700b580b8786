/* ptx_model.h - an address model of a PTX kernel, for tests: runs every
 * thread of chosen blocks on the integer part of the PTX (indices,
 * addresses, predicates, branches) and checks each global access against
 * the tensors it may touch. Values that come from memory, shuffles or
 * float arithmetic are "unknown"; a branch or an address that depends on
 * one is reported (the kernels this checks decide their control flow and
 * addresses from indices, sizes and strides alone). Threads run one at a
 * time (a barrier is a no-op, a shuffle's value unknown): that is enough
 * for addresses.
 *
 * The check is strict: an access of n bytes must lie inside the elements
 * of one row of one tensor (the last dim's [0, size) at some index of the
 * other dims). A read that crosses a row's end into the next row's bytes,
 * or into the padding between rows, is reported even though the memory
 * exists: a window's row ends where the tensor's row ends.
 *
 * Supported: what tilec's SIMT and tensor-core kernels emit (integer
 * arithmetic, setp/selp, cvt, mov packing, ld/st of the global, shared and
 * param spaces, prefetch, cp.async, red/atom, bra, the inline asm blocks'
 * { } scopes with their own .reg declarations and labels). An opcode it
 * does not know is an error, never skipped. */
#ifndef TILEC_TEST_PTX_MODEL_H
#define TILEC_TEST_PTX_MODEL_H

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PM_MAXOPS 8
#define PM_MAXVEC 8
#define PM_MAXPARAMS 64
#define PM_MAXTENS 16

enum { PK_NONE, PK_REG, PK_IMM, PK_VEC, PK_ADDR, PK_SYM, PK_SPECIAL, PK_LABEL };
enum { SP_TID, SP_NTID, SP_CTAID, SP_NCTAID, SP_LANEID, SP_WARPID, SP_NSMID, SP_SMID, SP_OTHER };

typedef struct PmOpnd {
    int kind;
    int reg;                  /* PK_REG slot; PK_ADDR base register (-1: a symbol) */
    bool neg;                 /* !%p */
    int64_t imm;              /* PK_IMM value; PK_ADDR offset */
    int sym;                  /* PK_ADDR / PK_SYM: param index, or -1 (another symbol) */
    int glob;                 /* PK_ADDR / PK_SYM: a .global variable's index, or -1 */
    int special, axis;        /* PK_SPECIAL */
    int nv, v[PM_MAXVEC];     /* PK_VEC: slots (-1: `_` or an immediate in vimm) */
    int64_t vimm[PM_MAXVEC];
    bool vhas_imm[PM_MAXVEC];
    int label;                /* PK_LABEL: instruction index */
    char name[48];            /* PK_LABEL name before resolution */
} PmOpnd;

/* What an opcode does, decoded once (pm_decode). */
enum {
    PC_UNKNOWN, PC_MOV, PC_ADD, PC_SUB, PC_MUL, PC_MAD, PC_DIV, PC_REM, PC_MIN, PC_MAX, PC_NEG, PC_ABS, PC_AND,
    PC_OR, PC_XOR, PC_NOT, PC_CNOT, PC_SHL, PC_SHR, PC_BFE, PC_BFI, PC_PRMT, PC_POPC, PC_CLZ, PC_SELP, PC_SETP,
    PC_CVT, PC_CVTA, PC_LD, PC_ST, PC_RED, PC_ATOM, PC_PREFETCH, PC_CPASYNC, PC_NOP, PC_BRA, PC_RET, PC_OPAQUE
};
enum { PF_GLOBAL = 1, PF_PARAM = 2, PF_OTHERSPACE = 4, PF_WIDE = 8, PF_HI = 16, PF_FLOAT = 32, PF_CVTA_GLOBAL = 64,
       PF_ADD = 128 };
enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_LO, CMP_LS, CMP_HI, CMP_HS };
enum { BOP_NONE, BOP_AND, BOP_OR, BOP_XOR };

typedef struct PmInst {
    int pred;                 /* predicate slot or -1 */
    bool pneg;
    char op[80];
    int nops;
    PmOpnd ops[PM_MAXOPS];
    int scope;
    int line;
    /* decoded */
    int code;
    unsigned flags;
    int bits;                 /* the last type's bits (32 when none) */
    char cls;                 /* its class: s u b f p */
    int srcbits;              /* cvt: the source type's bits and class */
    char srccls;
    int vec;                  /* .v2 / .v4 */
    int cmp, bop;             /* setp */
} PmInst;

typedef struct PmDecl {
    int scope;
    char prefix[32];
    int count;                /* %r<N>: N slots; 0: a single name */
    int base;
} PmDecl;

typedef struct PmGlobal {   /* a .global variable of the module */
    char name[64];
    int64_t bytes;
} PmGlobal;

typedef struct PmLabel {
    int scope;
    char name[48];
    int at;
} PmLabel;

typedef struct PmProg {
    char name[128];
    int nparams;
    char pname[PM_MAXPARAMS][96];
    int psize[PM_MAXPARAMS];  /* bytes */
    PmInst *ins;
    int nins, cins;
    PmDecl *decls;
    int ndecls, cdecls;
    PmLabel *labels;
    int nlabels, clabels;
    PmGlobal glob[8];
    int nglob;
    int *sparent;             /* scope -> parent scope */
    int nscopes, cscopes;
    int nslots;
    char err[512];
} PmProg;

typedef struct PmVal {
    uint64_t v;
    uint64_t k;               /* the bits of v that are known */
} PmVal;

#define PM_ALL (~0ULL)

/* A tensor the kernel may touch: its first element's address, sizes and
 * strides in elements (row-major, the last stride 1, each outer stride at
 * least the span of the dims inside it). */
typedef struct PmTensor {
    uint64_t base;
    int rank;
    int64_t shape[8], stride[8];
    int esize;
    /* Optional contents (the span's bytes): loads then read known values
     * and stores write them (known[] says which bytes hold a known value;
     * a store of an unknown one clears it). NULL: loads give unknown values. */
    uint8_t *mem, *known;
} PmTensor;

typedef struct PmLaunch {
    uint64_t param[PM_MAXPARAMS];   /* values in the ABI's order */
    int nparams;
    PmTensor tens[PM_MAXTENS];
    int ntens;
    int threads;
    int grid[3];
    int nsm;
    long max_steps;
} PmLaunch;

/* What a run saw: the first violation (or model error) and counts. */
typedef struct PmReport {
    long accesses;             /* global accesses checked */
    long violations;
    char first[512];          /* the first violation or error, "" if none */
    bool error;               /* the model could not run the kernel (not a violation) */
} PmReport;

static void pm_fail(PmProg *p, int line, const char *fmt, ...)
{
    if (p->err[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(p->err, sizeof p->err, "ptx line %d: ", line);
    vsnprintf(p->err + n, sizeof p->err - (size_t)n, fmt, ap);
    va_end(ap);
}

static void *pm_grow(void *a, int *cap, int need, size_t sz)
{
    if (need <= *cap)
        return a;
    int c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *n = realloc(a, (size_t)c * sz);
    if (!n)
        abort();
    *cap = c;
    return n;
}

static void pm_prog_free(PmProg *p)
{
    free(p->ins);
    free(p->decls);
    free(p->labels);
    free(p->sparent);
    memset(p, 0, sizeof *p);
}

/* ---- parsing ---- */

static int pm_new_scope(PmProg *p, int parent)
{
    p->sparent = pm_grow(p->sparent, &p->cscopes, p->nscopes + 1, sizeof(int));
    p->sparent[p->nscopes] = parent;
    return p->nscopes++;
}

static void pm_declare(PmProg *p, int scope, const char *name, int count)
{
    p->decls = pm_grow(p->decls, &p->cdecls, p->ndecls + 1, sizeof(PmDecl));
    PmDecl *d = &p->decls[p->ndecls++];
    d->scope = scope;
    snprintf(d->prefix, sizeof d->prefix, "%s", name);
    d->count = count;
    d->base = p->nslots;
    p->nslots += count ? count : 1;
}

/* The slot of register `name` seen from `scope`, or -1. */
static int pm_lookup(const PmProg *p, int scope, const char *name)
{
    size_t n = strlen(name), pl = n;
    while (pl > 0 && isdigit((unsigned char)name[pl - 1]))
        pl--;
    for (int s = scope; s >= 0; s = p->sparent[s])
        for (int i = p->ndecls - 1; i >= 0; i--) {
            const PmDecl *d = &p->decls[i];
            if (d->scope != s)
                continue;
            if (!d->count && !strcmp(d->prefix, name))
                return d->base;
            if (d->count && pl < n && strlen(d->prefix) == pl && !strncmp(d->prefix, name, pl)) {
                long k = atol(name + pl);
                if (k >= 0 && k < d->count)
                    return d->base + (int)k;
            }
        }
    return -1;
}

static int pm_param_index(const PmProg *p, const char *name)
{
    for (int i = 0; i < p->nparams; i++)
        if (!strcmp(p->pname[i], name))
            return i;
    return -1;
}

static int pm_glob_index(const PmProg *p, const char *name)
{
    for (int i = 0; i < p->nglob; i++)
        if (!strcmp(p->glob[i].name, name))
            return i;
    return -1;
}

static bool pm_parse_int(const char *s, int64_t *out)
{
    char *end;
    if (s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D') && isxdigit((unsigned char)s[2])) {
        *out = (int64_t)strtoull(s + 2, &end, 16);
        return *end == 0;
    }
    if (!isdigit((unsigned char)s[0]) && !((s[0] == '-' || s[0] == '+') && isdigit((unsigned char)s[1])))
        return false;
    bool neg = s[0] == '-';
    const char *q = s + (s[0] == '-' || s[0] == '+');
    uint64_t u;
    if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
        u = strtoull(q + 2, &end, 16);
    else
        u = strtoull(q, &end, 10);
    if (*end == 'U' || *end == 'u')
        end++;
    *out = neg ? -(int64_t)u : (int64_t)u;
    return *end == 0;
}

static void pm_trim(char *s)
{
    size_t n = strlen(s), i = 0;
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    while (isspace((unsigned char)s[i]))
        i++;
    if (i)
        memmove(s, s + i, n - i + 1);
}

static bool pm_special(const char *s, PmOpnd *o)
{
    static const struct { const char *n; int id; } tab[] = {
        { "%tid", SP_TID }, { "%ntid", SP_NTID }, { "%ctaid", SP_CTAID }, { "%nctaid", SP_NCTAID },
        { "%laneid", SP_LANEID }, { "%warpid", SP_WARPID }, { "%nsmid", SP_NSMID }, { "%smid", SP_SMID },
        { "%clock", SP_OTHER }, { "%clock64", SP_OTHER }, { "%globaltimer", SP_OTHER }, { "%lanemask_lt", SP_OTHER },
    };
    char base[32];
    snprintf(base, sizeof base, "%s", s);
    char *dot = strchr(base, '.');
    int axis = 0;
    if (dot) {
        axis = dot[1] == 'y' ? 1 : dot[1] == 'z' ? 2 : 0;
        *dot = 0;
    }
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(base, tab[i].n)) {
            o->kind = PK_SPECIAL;
            o->special = tab[i].id;
            o->axis = axis;
            return true;
        }
    return false;
}

static bool pm_operand(PmProg *p, int scope, char *s, PmOpnd *o, int line)
{
    memset(o, 0, sizeof *o);
    o->reg = -1;
    o->sym = -1;
    o->glob = -1;
    pm_trim(s);
    if (s[0] == '[') {
        char *end = strrchr(s, ']');
        if (!end)
            return pm_fail(p, line, "bad address '%s'", s), false;
        *end = 0;
        char *in = s + 1, *plus = strpbrk(in + 1, "+-");
        o->kind = PK_ADDR;
        if (plus) {
            int64_t off;
            char *num = plus + (plus[0] == '+' ? 1 : 0);
            pm_trim(num);
            if (!pm_parse_int(num, &off))
                return pm_fail(p, line, "bad address offset '%s'", num), false;
            o->imm = off;
            *plus = 0;
        }
        pm_trim(in);
        if (in[0] == '%') {
            o->reg = pm_lookup(p, scope, in);
            if (o->reg < 0)
                return pm_fail(p, line, "unknown register '%s'", in), false;
        } else {
            o->sym = pm_param_index(p, in);
            o->glob = pm_glob_index(p, in);
        }
        return true;
    }
    if (s[0] == '{' || strchr(s, '|')) {
        o->kind = PK_VEC;
        char buf[512];
        snprintf(buf, sizeof buf, "%s", s + (s[0] == '{'));
        char *e = strrchr(buf, '}');
        if (e)
            *e = 0;
        for (char *tok = strtok(buf, ",|"); tok; tok = strtok(NULL, ",|")) {
            pm_trim(tok);
            if (o->nv >= PM_MAXVEC)
                return pm_fail(p, line, "vector too long"), false;
            int64_t imm;
            o->v[o->nv] = -1;
            if (!strcmp(tok, "_")) {
            } else if (pm_parse_int(tok, &imm)) {
                o->vimm[o->nv] = imm;
                o->vhas_imm[o->nv] = true;
            } else if ((o->v[o->nv] = pm_lookup(p, scope, tok)) < 0) {
                return pm_fail(p, line, "unknown register '%s'", tok), false;
            }
            o->nv++;
        }
        return true;
    }
    if (s[0] == '!' && s[1] == '%') {
        o->neg = true;
        s++;
    }
    if (s[0] == '%') {
        if (pm_special(s, o))
            return true;
        o->kind = PK_REG;
        o->reg = pm_lookup(p, scope, s);
        if (o->reg < 0)
            return pm_fail(p, line, "unknown register '%s'", s), false;
        return true;
    }
    if (pm_parse_int(s, &o->imm)) {
        o->kind = PK_IMM;
        return true;
    }
    /* a label or a symbol */
    o->sym = pm_param_index(p, s);
    o->glob = pm_glob_index(p, s);
    o->kind = o->sym >= 0 || o->glob >= 0 ? PK_SYM : PK_LABEL;
    snprintf(o->name, sizeof o->name, "%s", s);
    return true;
}

/* Splits operands at top-level commas. */
static int pm_split(char *s, char **parts, int max)
{
    int n = 0, depth = 0;
    char *start = s;
    for (char *c = s;; c++) {
        if (*c == '{' || *c == '[')
            depth++;
        else if (*c == '}' || *c == ']')
            depth--;
        if ((*c == ',' && depth == 0) || *c == 0) {
            bool end = *c == 0;
            *c = 0;
            if (n < max)
                parts[n++] = start;
            start = c + 1;
            if (end)
                break;
        }
    }
    if (n == 1) {
        char *t = parts[0];
        while (isspace((unsigned char)*t))
            t++;
        if (!*t)
            n = 0;
    }
    return n;
}

static void pm_directive(PmProg *p, int scope, char *st, int line)
{
    if (strncmp(st, ".reg", 4) != 0)
        return;   /* .shared, .local, .pragma: symbols and hints, nothing to model */
    char *q = st + 4;
    while (isspace((unsigned char)*q))
        q++;
    while (*q == '.') {   /* the type (and .v2 etc.) */
        while (*q && !isspace((unsigned char)*q))
            q++;
        while (isspace((unsigned char)*q))
            q++;
    }
    for (char *tok = strtok(q, ","); tok; tok = strtok(NULL, ",")) {
        pm_trim(tok);
        char *lt = strchr(tok, '<');
        if (lt) {
            *lt = 0;
            pm_declare(p, scope, tok, atoi(lt + 1));
        } else if (tok[0]) {
            pm_declare(p, scope, tok, 0);
        }
    }
    (void)line;
}

static void pm_statement(PmProg *p, int scope, char *st, int line)
{
    pm_trim(st);
    if (!st[0])
        return;
    if (st[0] == '.') {
        pm_directive(p, scope, st, line);
        return;
    }
    p->ins = pm_grow(p->ins, &p->cins, p->nins + 1, sizeof(PmInst));
    PmInst *in = &p->ins[p->nins];
    memset(in, 0, sizeof *in);
    in->pred = -1;
    in->scope = scope;
    in->line = line;
    char *q = st;
    if (*q == '@') {
        q++;
        if (*q == '!') {
            in->pneg = true;
            q++;
        }
        char name[48];
        int n = 0;
        while (*q && !isspace((unsigned char)*q) && n < 47)
            name[n++] = *q++;
        name[n] = 0;
        in->pred = pm_lookup(p, scope, name);
        if (in->pred < 0) {
            pm_fail(p, line, "unknown predicate '%s'", name);
            return;
        }
        while (isspace((unsigned char)*q))
            q++;
    }
    int n = 0;
    while (*q && !isspace((unsigned char)*q) && n < (int)sizeof in->op - 1)
        in->op[n++] = *q++;
    in->op[n] = 0;
    char *parts[PM_MAXOPS];
    int np = pm_split(q, parts, PM_MAXOPS);
    for (int i = 0; i < np; i++)
        if (!pm_operand(p, scope, parts[i], &in->ops[i], line))
            return;
    in->nops = np;
    p->nins++;
}

static void pm_decode_all(PmProg *p);

/* Parses the first .entry of the PTX (or the one named `kernel`). */
static bool pm_parse(PmProg *p, const char *ptx, const char *kernel)
{
    memset(p, 0, sizeof *p);
    /* Module-level .global variables: "[.visible] .global [.align N] .b8 NAME[BYTES]". */
    for (const char *g = strstr(ptx, ".global ."); g && p->nglob < 8; g = strstr(g + 1, ".global .")) {
        const char *ls = g;
        while (ls > ptx && ls[-1] != '\n')
            ls--;
        if (strstr(ls, ".param") && strstr(ls, ".param") < g)
            continue;
        const char *nl = strchr(g, '\n'), *br = strchr(g, '[');
        if (!br || (nl && br > nl) || strncmp(ls, "\t", 1) == 0)
            continue;
        const char *nm = br;
        while (nm > g && nm[-1] != ' ')
            nm--;
        PmGlobal *gl = &p->glob[p->nglob++];
        snprintf(gl->name, sizeof gl->name, "%.*s", (int)(br - nm), nm);
        gl->bytes = atoll(br + 1) * (strstr(g, ".b32") && strstr(g, ".b32") < br ? 4 : 1);
    }
    const char *e = ptx;
    for (;;) {
        e = strstr(e, ".entry ");
        if (!e)
            return pm_fail(p, 0, "no .entry%s%s", kernel ? " " : "", kernel ? kernel : ""), false;
        e += 7;
        size_t n = strcspn(e, "( \n");
        if (!kernel || (strlen(kernel) == n && !strncmp(e, kernel, n))) {
            snprintf(p->name, sizeof p->name, "%.*s", (int)n, e);
            break;
        }
    }
    const char *lp = strchr(e, '('), *rp = lp ? strchr(lp, ')') : NULL;
    if (!lp || !rp)
        return pm_fail(p, 0, "no param list"), false;
    for (const char *c = lp + 1; c < rp;) {
        const char *par = strstr(c, ".param");
        if (!par || par > rp)
            break;
        const char *end = par;
        while (end < rp && *end != ',')
            end++;
        char decl[256];
        snprintf(decl, sizeof decl, "%.*s", (int)(end - par), par);
        pm_trim(decl);
        char *last = strrchr(decl, ' ');
        if (!last || p->nparams >= PM_MAXPARAMS)
            return pm_fail(p, 0, "bad param '%s'", decl), false;
        snprintf(p->pname[p->nparams], sizeof p->pname[0], "%s", last + 1);
        int bits = 32;
        static const char *const w8[] = { ".u64", ".b64", ".s64", ".f64" }, *const w2[] = { ".u16", ".b16", ".s16", ".f16" },
                                 *const w1[] = { ".u8 ", ".b8 ", ".s8 " };
        for (int k = 0; k < 4; k++) {
            bits = strstr(decl, w8[k]) ? 64 : bits;
            bits = strstr(decl, w2[k]) ? 16 : bits;
            bits = k < 3 && strstr(decl, w1[k]) ? 8 : bits;
        }
        p->psize[p->nparams++] = bits / 8;
        c = end + 1;
    }
    const char *body = strchr(rp, '{');
    if (!body)
        return pm_fail(p, 0, "no body"), false;
    /* Strip comments into a copy of the body up to its closing brace. */
    size_t cap = strlen(body) + 1;
    char *text = malloc(cap);
    int *lines = malloc(cap * sizeof(int));
    int line = 1;
    for (const char *c = ptx; c < body; c++)
        line += *c == '\n';
    size_t m = 0;
    int depth = 0;
    for (const char *c = body; *c; c++) {
        if (c[0] == '/' && c[1] == '/') {
            while (*c && *c != '\n')
                c++;
            if (!*c)
                break;
        }
        if (*c == '{')
            depth++;
        if (*c == '}')
            depth--;
        text[m] = *c;
        lines[m++] = line;
        line += *c == '\n';
        if (depth == 0)
            break;
    }
    text[m] = 0;
    /* Walk: '{' / '}' at a statement's start open / close a scope; a name
     * followed by ':' there is a label; anything else runs to ';'. */
    int stack[64], sp = 0;
    int scope = -1;
    int pending_labels[64], npend = 0;
    char st[4096];
    for (size_t i = 0; i < m && !p->err[0];) {
        if (isspace((unsigned char)text[i])) {
            i++;
            continue;
        }
        if (text[i] == '{') {
            if (sp >= 64)
                return pm_fail(p, lines[i], "scopes too deep"), free(text), free(lines), false;
            stack[sp++] = scope;
            scope = pm_new_scope(p, scope);
            i++;
            continue;
        }
        if (text[i] == '}') {
            scope = sp ? stack[--sp] : -1;
            i++;
            continue;
        }
        size_t j = i;
        while (j < m && (isalnum((unsigned char)text[j]) || text[j] == '_' || text[j] == '$'))
            j++;
        if (j > i && j < m && text[j] == ':' && text[j + 1] != ':') {
            p->labels = pm_grow(p->labels, &p->clabels, p->nlabels + 1, sizeof(PmLabel));
            PmLabel *lb = &p->labels[p->nlabels];
            lb->scope = scope;
            snprintf(lb->name, sizeof lb->name, "%.*s", (int)(j - i), text + i);
            lb->at = p->nins;
            if (npend < 64)
                pending_labels[npend++] = p->nlabels;
            p->nlabels++;
            i = j + 1;
            continue;
        }
        size_t k = i;
        while (k < m && text[k] != ';')
            k++;
        size_t len = k - i < sizeof st - 1 ? k - i : sizeof st - 1;
        memcpy(st, text + i, len);
        st[len] = 0;
        pm_statement(p, scope, st, lines[i]);
        npend = 0;
        i = k + 1;
    }
    free(text);
    free(lines);
    (void)pending_labels;
    if (p->err[0])
        return false;
    /* Resolve branch targets: the innermost scope (from the branch's)
     * that has the label. */
    for (int i = 0; i < p->nins; i++) {
        PmInst *in = &p->ins[i];
        for (int k = 0; k < in->nops; k++) {
            PmOpnd *o = &in->ops[k];
            if (o->kind != PK_LABEL)
                continue;
            o->label = -1;
            for (int s = in->scope; s >= 0 && o->label < 0; s = p->sparent[s])
                for (int l = 0; l < p->nlabels; l++)
                    if (p->labels[l].scope == s && !strcmp(p->labels[l].name, o->name)) {
                        o->label = p->labels[l].at;
                        break;
                    }
            if (o->label < 0 && !strncmp(in->op, "bra", 3))
                return pm_fail(p, in->line, "unknown label '%s'", o->name), false;
        }
    }
    pm_decode_all(p);
    return true;
}

/* ---- decoding ---- */

/* The type of an opcode's part: bits and class ('s', 'u', 'b', 'f', 'p'). */
static bool pm_type(const char *t, int *bits, char *cls)
{
    if (!strcmp(t, "pred")) {
        *bits = 1, *cls = 'p';
        return true;
    }
    if (!strncmp(t, "bf16", 4) || !strncmp(t, "f16", 3) || !strcmp(t, "f32") || !strcmp(t, "f64") ||
        !strcmp(t, "tf32") || !strncmp(t, "e4m3", 4) || !strncmp(t, "e5m2", 4)) {
        *bits = !strcmp(t, "f64") ? 64 : !strcmp(t, "f32") || !strcmp(t, "tf32") || strstr(t, "x2") ? 32 : 16;
        *cls = 'f';
        return true;
    }
    if ((t[0] == 's' || t[0] == 'u' || t[0] == 'b') && isdigit((unsigned char)t[1])) {
        *bits = atoi(t + 1);
        *cls = t[0];
        return *bits == 8 || *bits == 16 || *bits == 32 || *bits == 64 || *bits == 128;
    }
    return false;
}

static void pm_decode(PmInst *in)
{
    static const struct { const char *n; int code; } tab[] = {
        { "mov", PC_MOV }, { "add", PC_ADD }, { "sub", PC_SUB }, { "mul", PC_MUL }, { "mad", PC_MAD },
        { "div", PC_DIV }, { "rem", PC_REM }, { "min", PC_MIN }, { "max", PC_MAX }, { "neg", PC_NEG },
        { "abs", PC_ABS }, { "and", PC_AND }, { "or", PC_OR }, { "xor", PC_XOR }, { "not", PC_NOT },
        { "cnot", PC_CNOT }, { "shl", PC_SHL }, { "shr", PC_SHR }, { "bfe", PC_BFE }, { "bfi", PC_BFI },
        { "prmt", PC_PRMT }, { "popc", PC_POPC }, { "clz", PC_CLZ }, { "selp", PC_SELP }, { "setp", PC_SETP },
        { "cvt", PC_CVT }, { "cvta", PC_CVTA }, { "ld", PC_LD }, { "st", PC_ST }, { "red", PC_RED },
        { "atom", PC_ATOM }, { "prefetch", PC_PREFETCH }, { "bra", PC_BRA }, { "ret", PC_RET }, { "exit", PC_RET },
        { "bar", PC_NOP }, { "barrier", PC_NOP }, { "membar", PC_NOP }, { "fence", PC_NOP },
        { "nanosleep", PC_NOP }, { "fma", PC_OPAQUE }, { "ex2", PC_OPAQUE }, { "lg2", PC_OPAQUE },
        { "rcp", PC_OPAQUE }, { "sqrt", PC_OPAQUE }, { "rsqrt", PC_OPAQUE }, { "sin", PC_OPAQUE },
        { "cos", PC_OPAQUE }, { "tanh", PC_OPAQUE }, { "mma", PC_OPAQUE }, { "wgmma", PC_OPAQUE },
        { "ldmatrix", PC_OPAQUE }, { "shfl", PC_OPAQUE }, { "vote", PC_OPAQUE }, { "activemask", PC_OPAQUE },
        { "redux", PC_OPAQUE }, { "match", PC_OPAQUE }, { "dp4a", PC_OPAQUE }, { "dp2a", PC_OPAQUE },
        { "testp", PC_OPAQUE }, { "copysign", PC_OPAQUE },
    };
    static const char *const cmps[] = { "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs" };
    char buf[80], part[12][24];
    int n = 0, ntypes = 0, tb[4] = { 0 };
    char tc[4] = { 0 };
    snprintf(buf, sizeof buf, "%s", in->op);
    for (char *t = strtok(buf, "."); t && n < 12; t = strtok(NULL, "."))
        snprintf(part[n++], sizeof part[0], "%s", t);
    in->code = PC_UNKNOWN;
    in->vec = 1;
    in->flags = 0;
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (n && !strcmp(part[0], tab[i].n))
            in->code = tab[i].code;
    for (int i = 1; i < n; i++) {
        int b;
        char c;
        if (ntypes < 4 && pm_type(part[i], &b, &c)) {
            tb[ntypes] = b, tc[ntypes++] = c;
            in->flags |= c == 'f' ? PF_FLOAT : 0;
        }
        if (!strcmp(part[i], "v2") || !strcmp(part[i], "v4") || !strcmp(part[i], "v8"))
            in->vec = part[i][1] - '0';
        in->flags |= !strcmp(part[i], "global") ? PF_GLOBAL : 0;
        in->flags |= !strcmp(part[i], "param") ? PF_PARAM : 0;
        in->flags |= !strcmp(part[i], "shared") || !strcmp(part[i], "local") || !strcmp(part[i], "const")
                         ? PF_OTHERSPACE : 0;
        in->flags |= !strcmp(part[i], "wide") ? PF_WIDE : 0;
        in->flags |= !strcmp(part[i], "hi") ? PF_HI : 0;
        in->flags |= !strcmp(part[i], "add") ? PF_ADD : 0;
        if (in->code == PC_CPASYNC || (!strcmp(part[0], "cp") && !strcmp(part[i], "async")))
            in->code = PC_CPASYNC;
        if (!strcmp(part[0], "cp") && (!strcmp(part[i], "commit_group") || !strcmp(part[i], "wait_group") ||
                                       !strcmp(part[i], "wait_all")))
            in->code = PC_NOP;
    }
    if (in->code == PC_CPASYNC) {
        for (int i = 1; i < n; i++)
            if (!strcmp(part[i], "commit_group") || !strcmp(part[i], "wait_group") || !strcmp(part[i], "wait_all"))
                in->code = PC_NOP;
    }
    if (in->code == PC_CVTA && (in->flags & PF_GLOBAL))
        in->flags |= PF_CVTA_GLOBAL;
    in->bits = ntypes ? tb[ntypes - 1] : 32;
    in->cls = ntypes ? tc[ntypes - 1] : 'b';
    in->srcbits = ntypes > 1 ? tb[1] : in->bits;
    in->srccls = ntypes > 1 ? tc[1] : in->cls;
    if (in->code == PC_CVT && ntypes == 2) {   /* cvt.DST.SRC: the destination's width is bits */
        in->bits = tb[0];
        in->cls = tc[0];
    }
    in->cmp = CMP_EQ;
    in->bop = BOP_NONE;
    if (in->code == PC_SETP && n > 1) {
        for (int k = 0; k < 10; k++)
            if (!strcmp(part[1], cmps[k]))
                in->cmp = k;
        if (n > 3)
            in->bop = !strcmp(part[2], "and") ? BOP_AND : !strcmp(part[2], "or") ? BOP_OR
                      : !strcmp(part[2], "xor") ? BOP_XOR : BOP_NONE;
    }
}

static void pm_decode_all(PmProg *p)
{
    for (int i = 0; i < p->nins; i++)
        pm_decode(&p->ins[i]);
}

/* ---- running ---- */

#define PM_GLOBAL_BASE 0x7f0000000000ULL   /* the module's .global variables, 4096 bytes apart */

typedef struct PmThread {
    const PmProg *p;
    const PmLaunch *L;
    PmVal *r;
    int tid[3], ctaid[3];
    PmReport *rep;
    const char *kernel;
} PmThread;

static uint64_t pm_mask(int bits) { return bits >= 64 ? ~0ULL : (1ULL << bits) - 1; }

static int64_t pm_sext(uint64_t v, int bits)
{
    if (bits >= 64)
        return (int64_t)v;
    uint64_t m = 1ULL << (bits - 1);
    v &= pm_mask(bits);
    return (int64_t)((v ^ m) - m);
}

/* Are all `bits` low bits of x known? */
static bool pm_full(PmVal x, int bits) { return (x.k & pm_mask(bits)) == pm_mask(bits); }

static PmVal pm_get(PmThread *t, const PmOpnd *o)
{
    PmVal x = { 0, 0 };
    switch (o->kind) {
    case PK_REG:
        x = t->r[o->reg];
        if (o->neg)
            x.v = !x.v;
        return x;
    case PK_IMM:
        return (PmVal){ (uint64_t)o->imm, PM_ALL };
    case PK_SPECIAL: {
        const PmLaunch *L = t->L;
        int a = o->axis;
        switch (o->special) {
        case SP_TID: return (PmVal){ (uint64_t)t->tid[a], PM_ALL };
        case SP_NTID: return (PmVal){ (uint64_t)(a ? 1 : L->threads), PM_ALL };
        case SP_CTAID: return (PmVal){ (uint64_t)t->ctaid[a], PM_ALL };
        case SP_NCTAID: return (PmVal){ (uint64_t)L->grid[a], PM_ALL };
        case SP_LANEID: return (PmVal){ (uint64_t)(t->tid[0] % 32), PM_ALL };
        case SP_WARPID: return (PmVal){ (uint64_t)(t->tid[0] / 32), PM_ALL };
        case SP_NSMID: return (PmVal){ (uint64_t)L->nsm, PM_ALL };
        default: return x;
        }
    }
    case PK_SYM:   /* a .global variable's address; other symbols (shared memory) are not modelled */
        if (o->glob >= 0)
            return (PmVal){ PM_GLOBAL_BASE + 4096 * (uint64_t)o->glob, PM_ALL };
        return x;
    default:
        return x;
    }
}

/* Writes v to a register of `bits` (the bits above are known zero). */
static void pm_set(PmThread *t, const PmOpnd *o, PmVal v, int bits)
{
    if (o->kind == PK_REG) {
        v.v &= pm_mask(bits);
        v.k |= ~pm_mask(bits);
        t->r[o->reg] = v;
    } else if (o->kind == PK_VEC) {
        for (int i = 0; i < o->nv; i++)
            if (o->v[i] >= 0)
                t->r[o->v[i]] = (PmVal){ 0, 0 };
    }
}

/* Every destination of o unknown. */
static void pm_clobber(PmThread *t, const PmOpnd *o)
{
    if (o->kind == PK_REG)
        t->r[o->reg] = (PmVal){ 0, 0 };
    else if (o->kind == PK_VEC)
        for (int i = 0; i < o->nv; i++)
            if (o->v[i] >= 0)
                t->r[o->v[i]] = (PmVal){ 0, 0 };
}

static void pm_report(PmThread *t, int line, bool error, const char *fmt, ...)
{
    PmReport *rep = t->rep;
    if (error)
        rep->error = true;
    else
        rep->violations++;
    if (rep->first[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(rep->first, sizeof rep->first, "%s: block (%d,%d,%d) thread %d, ptx line %d: ", t->kernel,
                     t->ctaid[0], t->ctaid[1], t->ctaid[2], t->tid[0], line);
    vsnprintf(rep->first + n, sizeof rep->first - (size_t)n, fmt, ap);
    va_end(ap);
}

/* The module's .global variables read as zero (tilec_guard). */
static uint8_t pm_zero_mem[4096], pm_zero_known[4096];

/* Checks a global access of `bytes` at address a: inside one row of one
 * tensor, or inside one of the module's .global variables. Returns the
 * accessed bytes' contents (*known: their known flags) when modelled, else
 * NULL. */
static uint8_t *pm_check(PmThread *t, const PmInst *in, PmVal a, int64_t bytes, uint8_t **known)
{
    t->rep->accesses++;
    *known = NULL;
    if (a.k != PM_ALL) {
        pm_report(t, in->line, true, "%s: address not known (depends on loaded data)", in->op);
        return NULL;
    }
    if (bytes <= 0)
        return NULL;
    for (int i = 0; i < t->p->nglob; i++) {
        uint64_t g = PM_GLOBAL_BASE + 4096 * (uint64_t)i;
        if (a.v >= g && a.v < g + 4096) {
            if (a.v + (uint64_t)bytes > g + (uint64_t)t->p->glob[i].bytes) {
                pm_report(t, in->line, false, "%s of %lld bytes at byte %lld of %s (%lld bytes)", in->op,
                          (long long)bytes, (long long)(a.v - g), t->p->glob[i].name, (long long)t->p->glob[i].bytes);
                return NULL;
            }
            if (pm_zero_known[0] == 0)
                memset(pm_zero_known, 1, sizeof pm_zero_known);
            *known = pm_zero_known + (a.v - g);
            return pm_zero_mem + (a.v - g);
        }
    }
    for (int i = 0; i < t->L->ntens; i++) {
        const PmTensor *T = &t->L->tens[i];
        int64_t span = 1;
        bool empty = false;
        for (int d = 0; d < T->rank; d++) {
            empty |= T->shape[d] == 0;
            span += (T->shape[d] - 1) * T->stride[d];
        }
        uint64_t lo = T->base, hi = T->base + (uint64_t)(empty ? 0 : span * T->esize);
        /* the allocation's neighbourhood: tensors' bases are far apart */
        if (a.v < lo - 4096 * 16 || a.v >= hi + 4096 * 16)
            continue;
        int64_t off = (int64_t)(a.v - lo);
        if (empty || off < 0 || a.v + (uint64_t)bytes > hi || off % T->esize) {
            pm_report(t, in->line, false, "%s of %lld bytes at tensor %d byte %lld: outside its %lld bytes", in->op,
                      (long long)bytes, i, (long long)off, (long long)(hi - lo));
            return NULL;
        }
        int64_t e = off / T->esize, idx[8];
        for (int d = 0; d < T->rank; d++) {
            idx[d] = d + 1 < T->rank ? e / T->stride[d] : e;
            e -= d + 1 < T->rank ? idx[d] * T->stride[d] : e;
        }
        bool ok = true;
        for (int d = 0; d < T->rank; d++)
            ok &= idx[d] < T->shape[d];
        int64_t last = T->rank ? idx[T->rank - 1] : 0;
        ok &= last * T->esize + bytes <= (T->rank ? T->shape[T->rank - 1] : 1) * T->esize;
        if (!ok) {
            pm_report(t, in->line, false,
                      "%s of %lld bytes at tensor %d byte %lld (last-dim index %lld): past its row's end (%lld elements)",
                      in->op, (long long)bytes, i, (long long)off, (long long)last,
                      (long long)(T->rank ? T->shape[T->rank - 1] : 1));
            return NULL;
        }
        if (!T->mem)
            return NULL;
        *known = T->known + off;
        return T->mem + off;
    }
    pm_report(t, in->line, false, "%s of %lld bytes at 0x%llx: in no tensor", in->op, (long long)bytes,
              (unsigned long long)a.v);
    return NULL;
}

/* The registers of operand o: n of them (a vector's, or one). */
static int pm_regs(const PmOpnd *o, int *slot, PmVal *imm)
{
    if (o->kind == PK_VEC) {
        for (int i = 0; i < o->nv; i++) {
            slot[i] = o->v[i];
            imm[i] = (PmVal){ (uint64_t)o->vimm[i], o->vhas_imm[i] ? PM_ALL : 0 };
        }
        return o->nv;
    }
    slot[0] = o->kind == PK_REG ? o->reg : -1;
    imm[0] = (PmVal){ (uint64_t)o->imm, o->kind == PK_IMM ? PM_ALL : 0 };
    return 1;
}

/* A global load's values from m (known flags kn), or a store's into it:
 * `vec` elements of `bits`, little endian. */
static void pm_transfer(PmThread *t, const PmInst *in, bool load, const PmOpnd *o, uint8_t *m, uint8_t *kn)
{
    int slot[PM_MAXVEC], eb = in->bits / 8 ? in->bits / 8 : 1;
    PmVal imm[PM_MAXVEC];
    int n = pm_regs(o, slot, imm);
    for (int i = 0; i < n && i < in->vec; i++) {
        if (load) {
            PmVal v = { 0, ~pm_mask(8 * eb) };
            for (int b = eb - 1; b >= 0; b--) {
                v.v = v.v << 8 | m[i * eb + b];
                v.k |= kn[i * eb + b] ? 0xffULL << (8 * b) : 0;
            }
            if (in->cls == 's' && eb < 8) {
                v.v = (uint64_t)pm_sext(v.v, in->bits);
                v.k = (v.k >> (8 * eb - 1) & 1) ? v.k | ~pm_mask(8 * eb) : v.k & pm_mask(8 * eb);
            }
            if (slot[i] >= 0)
                t->r[slot[i]] = v;
        } else {
            PmVal v = slot[i] >= 0 ? t->r[slot[i]] : imm[i];
            for (int b = 0; b < eb; b++) {
                m[i * eb + b] = (uint8_t)(v.v >> (8 * b));
                kn[i * eb + b] = (v.k >> (8 * b) & 0xff) == 0xff;
            }
        }
    }
}

static PmVal pm_addr(PmThread *t, const PmOpnd *o)
{
    if (o->kind != PK_ADDR)
        return (PmVal){ 0, 0 };
    if (o->reg >= 0) {
        PmVal b = t->r[o->reg];
        return (PmVal){ b.v + (uint64_t)o->imm, b.k == PM_ALL ? PM_ALL : 0 };
    }
    if (o->glob >= 0)
        return (PmVal){ PM_GLOBAL_BASE + 4096 * (uint64_t)o->glob + (uint64_t)o->imm, PM_ALL };
    return (PmVal){ 0, 0 };
}

static bool pm_cmp(int c, uint64_t a, uint64_t b, int bits, char cls)
{
    int64_t sa = pm_sext(a, bits), sb = pm_sext(b, bits);
    uint64_t ua = a & pm_mask(bits), ub = b & pm_mask(bits);
    bool s = cls == 's';
    switch (c) {
    case CMP_EQ: return ua == ub;
    case CMP_NE: return ua != ub;
    case CMP_LT: return s ? sa < sb : ua < ub;
    case CMP_LE: return s ? sa <= sb : ua <= ub;
    case CMP_GT: return s ? sa > sb : ua > ub;
    case CMP_GE: return s ? sa >= sb : ua >= ub;
    case CMP_LO: return ua < ub;
    case CMP_LS: return ua <= ub;
    case CMP_HI: return ua > ub;
    default: return ua >= ub;
    }
}

static bool pm_boolop(int b, bool x, bool y)
{
    return b == BOP_AND ? x && y : b == BOP_OR ? x || y : x != y;
}

/* red.global.add of 32-bit elements (f32 rounded to f32, integers
 * wrapping): each known element of memory plus the operand's; unknown
 * when either is. */
static void pm_red_add(PmThread *t, const PmInst *in, const PmOpnd *o, uint8_t *m, uint8_t *kn)
{
    int slot[PM_MAXVEC];
    PmVal imm[PM_MAXVEC];
    int n = pm_regs(o, slot, imm);
    for (int i = 0; i < n && i < in->vec; i++) {
        PmVal v = slot[i] >= 0 ? t->r[slot[i]] : imm[i];
        uint32_t old = 0;
        bool known = (v.k & 0xffffffffu) == 0xffffffffu;
        for (int b = 0; b < 4; b++) {
            old |= (uint32_t)m[4 * i + b] << (8 * b);
            known &= kn[4 * i + b] != 0;
        }
        uint32_t x = (uint32_t)v.v, sum;
        if (in->cls == 'f') {
            float fa, fb;
            memcpy(&fa, &old, 4);
            memcpy(&fb, &x, 4);
            fa += fb;
            memcpy(&sum, &fa, 4);
        } else {
            sum = old + x;
        }
        for (int b = 0; b < 4; b++) {
            m[4 * i + b] = (uint8_t)(sum >> (8 * b));
            kn[4 * i + b] = known;
        }
    }
}

/* A memory op: ld/st/red/atom of the param, global and other spaces,
 * prefetch, cp.async. Returns false when the thread must stop. */
static bool pm_memory(PmThread *t, const PmInst *in)
{
    const PmOpnd *o = in->ops;
    int bits = in->bits;
    switch (in->code) {
    case PC_LD: case PC_ST: case PC_RED: case PC_ATOM: {
        bool dst = in->code == PC_LD || in->code == PC_ATOM;
        const PmOpnd *ao = dst ? &o[1] : &o[0];
        int64_t bytes = (int64_t)in->vec * (bits / 8 ? bits / 8 : 1);
        if (in->flags & PF_PARAM) {
            PmVal v = { 0, 0 };
            if (ao->sym >= 0 && ao->imm == 0) {
                v = (PmVal){ t->L->param[ao->sym], PM_ALL };
                if (t->p->psize[ao->sym] == 4 && in->cls == 's')
                    v.v = (uint64_t)pm_sext(v.v, 32);
            }
            pm_set(t, &o[0], v, bits);
        } else if (in->flags & PF_GLOBAL) {
            uint8_t *kn, *m = pm_check(t, in, pm_addr(t, ao), bytes, &kn);
            if (dst)
                pm_clobber(t, &o[0]);
            if (m && in->code == PC_LD)
                pm_transfer(t, in, true, &o[0], m, kn);
            else if (m && in->code == PC_ST)
                pm_transfer(t, in, false, &o[1], m, kn);
            else if (m && in->code == PC_RED && (in->flags & PF_ADD) && bits == 32)
                pm_red_add(t, in, &o[1], m, kn);
            else if (m)   /* other red / atom: the value changes in a way not modelled */
                memset(kn, 0, (size_t)bytes);
        } else if (in->flags & PF_OTHERSPACE) {
            if (dst)
                pm_clobber(t, &o[0]);
        } else {
            pm_report(t, in->line, true, "%s: generic address space not modelled", in->op);
            return false;
        }
        return true;
    }
    case PC_PREFETCH:
        if (in->flags & PF_GLOBAL) {
            uint8_t *kn;
            pm_check(t, in, pm_addr(t, &o[0]), 1, &kn);
        }
        return true;
    default: {   /* cp.async.*.shared.global [s], [g], size[, src-size] */
        if (in->nops < 3) {
            pm_report(t, in->line, true, "%s: not modelled", in->op);
            return false;
        }
        PmVal sz = pm_get(t, &o[2]), src = in->nops > 3 && o[3].kind != PK_LABEL ? pm_get(t, &o[3]) : sz;
        if (sz.k != PM_ALL || src.k != PM_ALL) {
            pm_report(t, in->line, true, "%s: size not known", in->op);
            return false;
        }
        int64_t n = (int64_t)(src.v < sz.v ? src.v : sz.v);
        uint8_t *kn;
        if (n > 0)
            pm_check(t, in, pm_addr(t, &o[1]), n, &kn);
        else
            t->rep->accesses++;
        return true;
    }
    }
}

/* The known bits of a bitwise result. */
static uint64_t pm_kand(PmVal a, PmVal b) { return (a.k & b.k) | (a.k & ~a.v) | (b.k & ~b.v); }
static uint64_t pm_kor(PmVal a, PmVal b) { return (a.k & b.k) | (a.k & a.v) | (b.k & b.v); }

/* An integer op: the result with its known bits (arithmetic: all or
 * none; bitwise ops, shifts, bfe/bfi/prmt: bit by bit) and its width in
 * *rbits. */
static bool pm_arith(const PmInst *in, PmVal a, PmVal b, PmVal c, PmVal d, PmVal *res, int *rbits)
{
    int bits = in->bits;
    uint64_t m = pm_mask(bits);
    int64_t sa = pm_sext(a.v, bits), sb = pm_sext(b.v, bits);
    bool s = in->cls == 's', full = pm_full(a, bits) && (in->nops < 3 || pm_full(b, bits));
    PmVal r = { 0, 0 };
    uint64_t kbits = PM_ALL;   /* bitwise ops set their own */
    *rbits = bits;
    switch (in->code) {
    case PC_ADD: r.v = a.v + b.v; break;
    case PC_SUB: r.v = a.v - b.v; break;
    case PC_MUL: case PC_MAD:
        if (in->flags & PF_WIDE) {
            int64_t x = s ? sa : (int64_t)(a.v & m), y = s ? sb : (int64_t)(b.v & m);
            r.v = (uint64_t)(x * y);
            *rbits = 2 * bits;
        } else if (in->flags & PF_HI) {
            __int128 x = s ? (__int128)sa : (__int128)(a.v & m), y = s ? (__int128)sb : (__int128)(b.v & m);
            r.v = (uint64_t)((x * y) >> bits);
        } else {
            r.v = a.v * b.v;
        }
        if (in->code == PC_MAD) {
            full &= pm_full(c, *rbits);
            r.v += c.v;
        }
        break;
    case PC_DIV: case PC_REM:
        if ((b.v & m) == 0)
            full = false;
        else if (in->code == PC_DIV)
            r.v = s ? (uint64_t)(sa / sb) : (a.v & m) / (b.v & m);
        else
            r.v = s ? (uint64_t)(sa % sb) : (a.v & m) % (b.v & m);
        break;
    case PC_MIN: case PC_MAX: {
        bool lt = s ? sa < sb : (a.v & m) < (b.v & m);
        r.v = (in->code == PC_MIN) == lt ? a.v : b.v;
        break;
    }
    case PC_NEG: r.v = (uint64_t)-(int64_t)a.v; break;
    case PC_ABS: r.v = (uint64_t)(sa < 0 ? -sa : sa); break;
    case PC_CNOT: r.v = (a.v & m) == 0; break;
    case PC_AND: r.v = a.v & b.v, kbits = pm_kand(a, b), full = true; break;
    case PC_OR: r.v = a.v | b.v, kbits = pm_kor(a, b), full = true; break;
    case PC_XOR: r.v = a.v ^ b.v, kbits = a.k & b.k, full = true; break;
    case PC_NOT: r.v = in->cls == 'p' ? !a.v : ~a.v, kbits = a.k, full = true; break;
    case PC_SHL: case PC_SHR: {
        if (!pm_full(b, 32)) {
            full = false;
            break;
        }
        uint64_t n = b.v & 0xffffffffu;
        full = true;
        if (in->code == PC_SHL) {
            r.v = n >= (uint64_t)bits ? 0 : a.v << n;
            kbits = n >= (uint64_t)bits ? PM_ALL : (a.k << n) | pm_mask((int)n);
        } else if (s) {
            r.v = (uint64_t)(n >= (uint64_t)bits ? (sa < 0 ? -1 : 0) : sa >> n);
            kbits = pm_full(a, bits) ? PM_ALL : 0;
        } else {
            r.v = n >= (uint64_t)bits ? 0 : (a.v & m) >> n;
            kbits = n >= (uint64_t)bits ? PM_ALL : ((a.k & m) >> n) | ~(m >> n);
        }
        break;
    }
    case PC_BFE: {
        full = pm_full(b, 32) && pm_full(c, 32);
        int pos = (int)(b.v & 0xff), len = (int)(c.v & 0xff);
        uint64_t x = len == 0 || pos >= bits ? 0 : ((a.v & m) >> pos) & pm_mask(len);
        uint64_t kx = len == 0 || pos >= bits ? PM_ALL : ((a.k >> pos) & pm_mask(len)) | ~pm_mask(len);
        if (s && len > 0 && pos + len <= bits) {
            x = (uint64_t)pm_sext(x, len);
            kx = (kx >> (len - 1) & 1) ? kx | ~pm_mask(len) : kx & pm_mask(len);
        }
        r.v = x;
        kbits = kx;
        break;
    }
    case PC_BFI: {
        full = pm_full(c, 32) && pm_full(d, 32);
        int pos = (int)(c.v & 0xff), len = (int)(d.v & 0xff);
        uint64_t fm = pos >= bits ? 0 : (pm_mask(len) << pos) & m;
        r.v = (b.v & ~fm) | ((a.v << pos) & fm);
        kbits = (b.k & ~fm) | ((a.k << pos) & fm);
        break;
    }
    case PC_PRMT: {
        full = pm_full(c, 32);
        uint64_t bytes8 = (a.v & 0xffffffffu) | ((b.v & 0xffffffffu) << 32);
        uint64_t kn8 = (a.k & 0xffffffffu) | ((b.k & 0xffffffffu) << 32);
        kbits = ~0xffffffffULL;
        for (int i = 0; i < 4; i++) {
            int sel = (int)(c.v >> (4 * i)) & 7;
            r.v |= ((bytes8 >> (8 * sel)) & 0xff) << (8 * i);
            kbits |= ((kn8 >> (8 * sel)) & 0xff) << (8 * i);
        }
        break;
    }
    case PC_POPC: r.v = (uint64_t)__builtin_popcountll(a.v & m); *rbits = 32; break;
    case PC_CLZ:
        r.v = (a.v & m) ? (uint64_t)(__builtin_clzll(a.v & m) - (64 - bits)) : (uint64_t)bits;
        *rbits = 32;
        break;
    default:
        return false;
    }
    r.k = full ? kbits : 0;
    *res = r;
    return true;
}

/* Runs one thread; returns false when it had to stop. */
static bool pm_thread(PmThread *t)
{
    const PmProg *p = t->p;
    long steps = 0;
    for (int pc = 0; pc < p->nins;) {
        if (++steps > t->L->max_steps) {
            pm_report(t, p->ins[pc].line, true, "more than %ld steps", t->L->max_steps);
            return false;
        }
        const PmInst *in = &p->ins[pc++];
        const PmOpnd *o = in->ops;
        int code = in->code;
        bool mem = code == PC_LD || code == PC_ST || code == PC_RED || code == PC_ATOM || code == PC_PREFETCH ||
                   code == PC_CPASYNC;
        if (in->pred >= 0) {
            PmVal pr = t->r[in->pred];
            bool known = pr.k & 1;
            if (!known && code == PC_BRA) {
                pm_report(t, in->line, true, "branch on a value that depends on loaded data");
                return false;
            }
            if (!known && !mem) {   /* unknown predicate: the destination becomes unknown */
                if (in->nops && code != PC_NOP)
                    pm_clobber(t, &o[0]);
                continue;
            }
            if (known && (pr.v & 1) == in->pneg)
                continue;
            /* an unknown predicate on a memory op: checked as if it ran */
        }
        if (mem) {
            if (!pm_memory(t, in))
                return false;
            continue;
        }
        int bits = in->bits;
        PmVal a = in->nops > 1 ? pm_get(t, &o[1]) : (PmVal){ 0, 0 };
        PmVal b = in->nops > 2 ? pm_get(t, &o[2]) : (PmVal){ 0, 0 };
        PmVal c = in->nops > 3 ? pm_get(t, &o[3]) : (PmVal){ 0, 0 };
        PmVal r = { 0, 0 };
        switch (code) {
        case PC_BRA:
            pc = o[0].label;
            continue;
        case PC_RET:
            return true;
        case PC_NOP:
            continue;
        case PC_OPAQUE:
            pm_clobber(t, &o[0]);
            continue;
        case PC_MOV:
            if (o[1].kind == PK_VEC) {   /* pack */
                int n = o[1].nv, eb = bits / n;
                for (int i = n - 1; i >= 0; i--) {
                    PmVal x = o[1].v[i] >= 0 ? t->r[o[1].v[i]]
                                             : (PmVal){ (uint64_t)o[1].vimm[i], o[1].vhas_imm[i] ? PM_ALL : 0 };
                    r.v = (r.v << eb) | (x.v & pm_mask(eb));
                    r.k = (r.k << eb) | (x.k & pm_mask(eb));
                }
                pm_set(t, &o[0], r, bits);
            } else if (o[0].kind == PK_VEC) {   /* unpack */
                int n = o[0].nv, eb = bits / n;
                for (int i = 0; i < n; i++)
                    if (o[0].v[i] >= 0)
                        t->r[o[0].v[i]] = (PmVal){ (a.v >> (i * eb)) & pm_mask(eb),
                                                   ((a.k >> (i * eb)) & pm_mask(eb)) | ~pm_mask(eb) };
            } else {
                pm_set(t, &o[0], a, bits);
            }
            continue;
        case PC_SETP: {
            PmVal x = { 0, 0 };
            if (!(in->flags & PF_FLOAT) && pm_full(a, bits) && pm_full(b, bits))
                x = (PmVal){ pm_cmp(in->cmp, a.v, b.v, bits, in->cls), PM_ALL };
            PmVal y = x, ny = { !x.v, x.k };
            if (in->bop != BOP_NONE) {
                uint64_t k = (x.k & c.k & 1) ? PM_ALL : 0;
                y = (PmVal){ k ? pm_boolop(in->bop, x.v, c.v & 1) : 0, k };
                ny = (PmVal){ k ? pm_boolop(in->bop, !x.v, c.v & 1) : 0, k };
            }
            if (o[0].kind == PK_VEC) {
                if (o[0].v[0] >= 0)
                    t->r[o[0].v[0]] = y;
                if (o[0].nv > 1 && o[0].v[1] >= 0)
                    t->r[o[0].v[1]] = ny;
            } else {
                pm_set(t, &o[0], y, 1);
            }
            continue;
        }
        case PC_SELP:
            if (c.k & 1)
                r = c.v & 1 ? a : b;
            else   /* the bits both sides agree on */
                r = (PmVal){ a.v, a.k & b.k & ~(a.v ^ b.v) };
            pm_set(t, &o[0], r, bits);
            continue;
        case PC_CVTA:
            pm_set(t, &o[0], (in->flags & PF_CVTA_GLOBAL) ? a : (PmVal){ 0, 0 }, bits);
            continue;
        case PC_CVT:
            if (!(in->flags & PF_FLOAT)) {
                int sb = in->srcbits;
                r.v = a.v & pm_mask(sb);
                r.k = (a.k & pm_mask(sb)) | ~pm_mask(sb);
                if (in->srccls == 's' && sb < 64) {
                    r.v = (uint64_t)pm_sext(a.v, sb);
                    r.k = (a.k >> (sb - 1) & 1) ? a.k | ~pm_mask(sb) : a.k & pm_mask(sb);
                }
            }
            pm_set(t, &o[0], r, bits);
            continue;
        case PC_UNKNOWN:
            pm_report(t, in->line, true, "opcode %s not modelled", in->op);
            return false;
        default:
            break;
        }
        if ((in->flags & PF_FLOAT) && code != PC_AND && code != PC_OR) {   /* float arithmetic: unknown */
            pm_clobber(t, &o[0]);
            continue;
        }
        int rbits;
        PmVal d = in->nops > 4 ? pm_get(t, &o[4]) : (PmVal){ 0, 0 };
        if (!pm_arith(in, a, b, c, d, &r, &rbits)) {
            pm_report(t, in->line, true, "opcode %s not modelled", in->op);
            return false;
        }
        pm_set(t, &o[0], r, rbits);
    }
    return true;
}

/* Runs `blocks` (nblocks of them, each x, y, z) of the launch; every thread. */
static void pm_run(const PmProg *p, const PmLaunch *L, const int (*blocks)[3], int nblocks, PmReport *rep)
{
    PmVal *regs = malloc(sizeof(PmVal) * (size_t)(p->nslots + 1));
    PmThread t = { p, L, regs, { 0 }, { 0 }, rep, p->name };
    for (int bi = 0; bi < nblocks && !rep->error; bi++)
        for (int th = 0; th < L->threads && !rep->error; th++) {
            memset(regs, 0, sizeof(PmVal) * (size_t)(p->nslots + 1));
            t.tid[0] = th, t.tid[1] = t.tid[2] = 0;
            memcpy(t.ctaid, blocks[bi], sizeof t.ctaid);
            if (!pm_thread(&t))
                break;
        }
    free(regs);
}

#endif
