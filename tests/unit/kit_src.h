/* kit_src.h - unit-test support for kernels written as source: compile
 * (fe_compile, with defines), optionally run the pass pipeline for sm_90a,
 * and interpret; any error fails the test after its diagnostics are shown. */
#ifndef TILEC_TEST_KIT_SRC_H
#define TILEC_TEST_KIT_SRC_H

#include <check.h>

#include "kit.h"
#include "frontend/frontend.h"

typedef struct KitProg {
    Arena *a;
    Diag d;
    Module *m;
} KitProg;

/* The first kernel of `src` (labelled `name` in diagnostics); the caller
 * frees p->a. */
static inline Func *kit_prog_build(KitProg *p, const char *name, const char *src, bool passes,
                                   const FeDefine *defs, int ndefs)
{
    p->a = arena_new();
    diag_init(&p->d, p->a);
    p->m = fe_compile(p->a, name, src, strlen(src), defs, ndefs, &p->d);
    if (p->m && passes) {
        PassCtx ctx = kit_pass_ctx(&p->d, "sm_90a");
        passes_run(p->m, &ctx);
    }
    if (!p->m || p->d.nerrors)
        kit_print_diag(&p->d);
    ck_assert_msg(p->m && p->d.nerrors == 0, "%s", src);
    return p->m->funcs[0];
}

static inline void kit_prog_run(KitProg *p, Func *f, InterpArg *args, int n)
{
    int rc = interp_run(f, args, n, &p->d);
    if (rc)
        kit_print_diag(&p->d);
    ck_assert_int_eq(rc, 0);
}

#endif
