/* clone.c - copying ops and blocks of Tile IR through a value map (clone.h).
 *
 * Needs: verified IR (every operand defined before its use).
 * Guarantees: the copy has the source's ops, attributes and locs in order;
 * operands go through the map, results and region arguments are fresh
 * values of the same types; the source is not changed.
 */
#include "clone.h"

#include <string.h>

ValMap pass_valmap_new(const Func *f, Arena *a)
{
    ValMap m = { arena_alloc(a, sizeof(ValId) * f->nvals), f->nvals };
    memset(m.to, 0, sizeof(ValId) * f->nvals);
    return m;
}

void pass_valmap_set(ValMap *m, ValId from, ValId to)
{
    if (from < m->n)
        m->to[from] = to;
}

ValId pass_valmap_get(const ValMap *m, ValId v)
{
    return v < m->n && m->to[v] ? m->to[v] : v;
}

static Type *result_types(Func *f, const Op *op, Arena *a)
{
    Type *t = arena_alloc(a, sizeof(Type) * (size_t)(op->nres ? op->nres : 1));
    for (int i = 0; i < op->nres; i++)
        t[i] = *ir_type(f, op->res[i]);
    return t;
}

Op *pass_clone_op(Func *f, const Op *op, ValMap *m, Block *dst)
{
    Arena *a = f->mod->arena;
    ValId *args = arena_alloc(a, sizeof(ValId) * (size_t)(op->nargs ? op->nargs : 1));
    for (int i = 0; i < op->nargs; i++)
        args[i] = pass_valmap_get(m, op->args[i]);
    Builder b = ir_builder_at_end(f, dst);
    b.loc = op->loc;
    Op *c = ir_build(&b, (OpCode)op->code, args, op->nargs, result_types(f, op, a), op->nres);
    memcpy(c->iattr, op->iattr, sizeof c->iattr);
    c->fattr = op->fattr;
    if (op->nlist) {
        c->list = arena_alloc(a, sizeof(int64_t) * (size_t)op->nlist);
        memcpy(c->list, op->list, sizeof(int64_t) * (size_t)op->nlist);
        c->nlist = op->nlist;
    }
    for (int i = 0; i < op->nres; i++) {
        pass_valmap_set(m, op->res[i], c->res[i]);
        ir_val(f, c->res[i])->name = ir_val(f, op->res[i])->name;
    }
    for (int r = 0; r < op->nregions && r < c->nregions; r++)
        pass_clone_block(f, &op->regions[r], m, &c->regions[r], true);
    return c;
}

void pass_clone_block(Func *f, const Block *src, ValMap *m, Block *dst, bool with_args)
{
    for (int i = 0; with_args && i < src->nargs; i++) {
        ValId a = ir_block_add_arg(f, dst, *ir_type(f, src->args[i]), NULL);
        ir_val(f, a)->name = ir_val(f, src->args[i])->name;
        pass_valmap_set(m, src->args[i], a);
    }
    for (int i = 0; i < src->nops; i++)
        pass_clone_op(f, src->ops[i], m, dst);
}
