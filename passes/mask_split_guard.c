/* mask_split_guard.c - the guarded form of the mask_split pass
 * (mask_split.c): the masks stay in the one loop, behind a uniform branch.
 */
#include "mask_split_int.h"
#include "clone.h"

#include <string.h>

/* ---- guarding the masks in place ----
 * A body with tensor-core products is large once unrolled (attention: 256
 * mma.sync per block and warp), and a copy of it doubles what the backend
 * compiles. There the masks stay in the one loop, behind a uniform branch:
 *   %g = cmp iv, split {pred = ge}
 *   %r = if %g { <the conditions' ops> ; select... ; yield } else { yield x }
 * Full blocks take the else arm (no mask work); boundary blocks run the
 * selects as written. Guarded: a chain of masks (each select's value is the
 * previous select, used by nothing else), together with the ops only the
 * chain uses (index tiles, compares), which move into the then arm. */

/* Do the masks (in body order, as find_masks collects them) form one chain? */
static bool mask_chain(const Mask *ms, int n, const UseInfo *u)
{
    for (int i = 1; i < n; i++)
        if (ms[i].sel->args[1] != ms[i - 1].sel->res[0] || u->count[ms[i - 1].sel->res[0]] != 1)
            return false;
    return true;
}

bool guard_masks(Func *f, Op *loop, ValId split, const Mask *ms, int n, Arena *scratch)
{
    Block *body = &loop->regions[0];
    UseInfo u;
    ir_count_uses(f, &u, scratch);
    if (n == 0 || !mask_chain(ms, n, &u))
        return false;
    int last = ir_block_index_of(body, ms[n - 1].sel);
    ValId x0 = ms[0].sel->args[1];
    const Op *x0def = ir_val(f, x0)->def;
    /* moved[i]: body op i goes into the then arm */
    bool *moved = arena_alloc(scratch, (size_t)body->nops + 1);
    uint32_t *inner = arena_alloc(scratch, sizeof(uint32_t) * f->nvals);
    memset(moved, 0, (size_t)body->nops + 1);
    memset(inner, 0, sizeof(uint32_t) * f->nvals);
    for (int k = 0; k < n; k++) {
        int i = ir_block_index_of(body, ms[k].sel);
        moved[i] = true;
        for (int a = 0; a < ms[k].sel->nargs; a++)
            inner[ms[k].sel->args[a]]++;
    }
    for (int i = last - 1; i >= 0; i--) {
        const Op *op = body->ops[i];
        if (moved[i] || op == x0def || !(op_info[op->code].flags & OPF_PURE) || op->nres == 0 || op->nregions)
            continue;
        bool only = true;
        for (int r = 0; r < op->nres; r++)
            only &= u.count[op->res[r]] > 0 && u.count[op->res[r]] == inner[op->res[r]];
        if (!only)
            continue;
        moved[i] = true;
        for (int a = 0; a < op->nargs; a++)
            inner[op->args[a]]++;
    }
    Op *lastsel = ms[n - 1].sel;
    Op **gone = arena_alloc(scratch, sizeof(Op *) * (size_t)(last + 1));
    int ngone = 0;
    for (int i = 0; i <= last; i++)
        if (moved[i])
            gone[ngone++] = body->ops[i];
    Builder b = ir_builder_before(f, lastsel);
    b.loc = ms[0].sel->loc;
    ValId ga[2] = { body->args[0], split };
    ValId g = ir_build1(&b, OP_CMP, ga, 2, type_scalar(DT_BOOL));
    ir_val(f, g)->def->iattr[0] = CMP_GE;
    Type rt = *ir_type(f, lastsel->res[0]);
    Op *iff = ir_build(&b, OP_IF, &g, 1, &rt, 1);
    ValMap map = pass_valmap_new(f, scratch);
    for (int i = 0; i < ngone; i++)
        pass_clone_op(f, gone[i], &map, &iff->regions[0]);
    Builder t = ir_builder_at_end(f, &iff->regions[0]);
    t.loc = b.loc;
    ValId ty = pass_valmap_get(&map, lastsel->res[0]);
    ir_build(&t, OP_YIELD, &ty, 1, NULL, 0);
    Builder e = ir_builder_at_end(f, &iff->regions[1]);
    e.loc = b.loc;
    ir_build(&e, OP_YIELD, &x0, 1, NULL, 0);
    ValId from = lastsel->res[0];
    for (int i = 0; i < ngone; i++)   /* drop the originals */
        ir_block_remove(body, ir_block_index_of(body, gone[i]));
    ir_replace_all_uses(f, from, iff->res[0]);
    return true;
}
