/* kit.h - support for unit tests that work on Tile IR: a kernel under
 * construction with the Builder API (its arena, module, function, a builder
 * appending to the body, stamping `file:line:1` on every op, and a
 * diagnostics collector; kit_free releases everything), kit_print_diag,
 * which shows a test's diagnostics on stderr when it fails, the context of
 * a pipeline run (kit_pass_ctx) and a contiguous 1-D interpreter tensor
 * (kit_tensor1). */
#ifndef TILEC_TEST_KIT_H
#define TILEC_TEST_KIT_H

#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "passes/passes.h"

typedef struct Kit {
    Arena *a;
    Module *m;
    Func *f;
    Builder b;      /* appends to the body */
    Diag d;
} Kit;

static inline void kit_init_at(Kit *k, const char *name, const char *file, int line)
{
    k->a = arena_new();
    k->m = ir_module_new(k->a, file);
    Loc loc = { file, line, 1 };
    k->f = ir_func_new(k->m, name, loc);
    k->b = ir_builder_at_end(k->f, &k->f->body);
    k->b.loc = loc;
    diag_init(&k->d, k->a);
}

static inline void kit_free(Kit *k) { arena_free(k->a); }

static inline void kit_print_diag(const Diag *d)
{
    StrBuf sb = { 0 };
    diag_render(d, &sb);
    if (sb.buf)
        fprintf(stderr, "%s", sb.buf);
    sb_free(&sb);
}

/* The whole pipeline for `arch` at -O2 with the verifier between passes. */
static inline PassCtx kit_pass_ctx(Diag *d, const char *arch)
{
    PassCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.diag = d;
    ctx.target = tc_target(arch);
    ctx.opt_level = 2;
    ctx.verify_each = true;
    return ctx;
}

/* A contiguous 1-D tensor argument of n elements at data. */
static inline InterpArg kit_tensor1(void *data, int64_t n)
{
    InterpArg a;
    memset(&a, 0, sizeof a);
    a.data = data;
    a.rank = 1;
    a.shape[0] = n;
    a.strides[0] = 1;
    return a;
}

/* A contiguous row-major [m, n] tensor argument at data. */
static inline InterpArg kit_tensor2(void *data, int64_t m, int64_t n)
{
    InterpArg a = kit_tensor1(data, m * n);
    a.rank = 2;
    a.shape[0] = m;
    a.shape[1] = n;
    a.strides[0] = n;
    a.strides[1] = 1;
    return a;
}

#endif
