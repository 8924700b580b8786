/* clone.h - copying ops and blocks of Tile IR through a value map.
 *
 * A ValMap sends values of the source IR to values of the copy; a value it
 * does not map stands for itself (a value defined outside what is copied).
 * Cloning gives every result and region argument a fresh value of the same
 * type and records it in the map, so later ops of the copy see the copies.
 * All memory comes from the function's module arena.
 */
#ifndef TILEC_PASSES_CLONE_H
#define TILEC_PASSES_CLONE_H

#include "../ir/ir.h"

typedef struct ValMap {
    ValId *to;          /* per source value: its copy, 0 = itself */
    uint32_t n;         /* values covered (the func's nvals when made) */
} ValMap;

/* A map covering every value f has now (values made later map to themselves). */
ValMap pass_valmap_new(const Func *f, Arena *a);
void pass_valmap_set(ValMap *m, ValId from, ValId to);
ValId pass_valmap_get(const ValMap *m, ValId v);

/* Copy `op` (operands through the map, attributes, loc, regions recursively)
 * and append the copy to `dst`. Its results are fresh values, mapped. */
Op *pass_clone_op(Func *f, const Op *op, ValMap *m, Block *dst);

/* Copy the ops of `src` into `dst` in order. With `with_args`, `dst` first gets
 * a fresh argument per argument of `src` (mapped); otherwise the caller has
 * mapped src's arguments already. */
void pass_clone_block(Func *f, const Block *src, ValMap *m, Block *dst, bool with_args);

#endif
