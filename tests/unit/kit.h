/* kit.h - support for unit tests that work on Tile IR: a kernel under
 * construction with the Builder API (its arena, module, function, a builder
 * appending to the body, stamping `file:line:1` on every op, and a
 * diagnostics collector; kit_free releases everything), and kit_print_diag,
 * which shows a test's diagnostics on stderr when it fails. */
#ifndef TILEC_TEST_KIT_H
#define TILEC_TEST_KIT_H

#include <stdio.h>

#include "ir/ir.h"

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

#endif
