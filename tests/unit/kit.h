/* kit.h - a kernel under construction for unit tests that build Tile IR
 * with the Builder API: its arena, module, function, a builder appending to
 * the body (stamping `file:line:1` on every op) and a diagnostics collector.
 * kit_free releases everything. */
#ifndef TILEC_TEST_KIT_H
#define TILEC_TEST_KIT_H

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

#endif
