/* warn.c - the front end's warnings (lib/util.h, DiagWarn; -W in the CLI):
 *
 *  -Wunused-param  a tensor or scalar param the body never names;
 *  -Wdead-tile     a `tile` or `let` whose value is never read (set, maybe
 *                  assigned again, but never used; names starting with _
 *                  are exempt);
 *  -Wstore-race    a store whose window does not depend on block.A for a
 *                  grid axis A that may hold more than one block: those
 *                  blocks all write the same elements, in no set order.
 *
 * The first two read the symbols' `used` marks (set by lower_name, also in
 * branches a constant condition drops, so a param that only another
 * specialisation reads is not reported). All three are reported only while
 * the compilation has no errors (an error often leaves a name unread), in
 * source order. The race check runs on the
 * lowered kernel: each value carries the grid axes whose block index it
 * depends on; a store inside `if` takes its condition's axes too (a store
 * only block 0 makes is not a race).
 */
#include "sema.h"

#include <stdlib.h>
#include <string.h>

static bool exempt(const char *name) { return !name || name[0] == '_'; }

static void add_unread(Lower *l, const Sym *s)
{
    if (l->nunread == l->capunread) {
        int cap = l->capunread ? l->capunread * 2 : 16;
        l->unread = arena_grow_move(l->syms_arena, l->unread, sizeof *l->unread, (size_t)l->capunread, (size_t)cap);
        l->capunread = cap;
    }
    l->unread[l->nunread++] = s;
}

void fe_warn_unused(Lower *l, int mark)
{
    if (l->d->warn_off & WARN_DEAD_TILE)
        return;
    for (int i = mark; i < l->nsyms; i++) {
        const Sym *s = l->syms[i];
        if (s->kind == SYM_VAR && !s->used && !s->readonly && !s->bad && s->val.kind != EV_ERR && !exempt(s->name))
            add_unread(l, s);
    }
}

static int by_place(const void *pa, const void *pb)
{
    Loc a = (*(const Sym *const *)pa)->loc, b = (*(const Sym *const *)pb)->loc;
    return a.line != b.line ? (a.line > b.line) - (a.line < b.line) : (a.col > b.col) - (a.col < b.col);
}

void fe_warn_kernel(Lower *l)
{
    for (int i = 0; i < l->nsyms; i++) {
        const Sym *s = l->syms[i];
        if ((s->kind == SYM_TENSOR || s->kind == SYM_SCALAR) && !s->used && !exempt(s->name))
            diag_warn(l->d, WARN_UNUSED_PARAM, s->loc, "%s param '%s' is never used",
                      s->kind == SYM_TENSOR ? "tensor" : "scalar", s->name);
    }
    /* Scopes end inner first: report in source order. */
    if (l->nunread > 1)
        qsort(l->unread, (size_t)l->nunread, sizeof *l->unread, by_place);
    for (int i = 0; i < l->nunread; i++)
        diag_warn(l->d, WARN_DEAD_TILE, l->unread[i]->loc, "%s '%s' is never read",
                  l->unread[i]->ty.kind == TY_TILE ? "tile" : "value", l->unread[i]->name);
}

/* ---- stores that several blocks make ---- */

typedef struct Race {
    const Func *f;
    Diag *d;
    uint8_t *axes;      /* per value: bit A = depends on block.A */
    unsigned multi;     /* grid axes that may hold more than one block */
    bool changed;       /* a value gained an axis in this pass */
} Race;

static uint8_t args_axes(const Race *r, const Op *op, int from, int to)
{
    uint8_t m = 0;
    for (int i = from; i < to && i < op->nargs; i++)
        m |= r->axes[op->args[i]];
    return m;
}

static void set_axes(Race *r, ValId v, uint8_t m)
{
    if ((r->axes[v] | m) != r->axes[v]) {
        r->axes[v] |= m;
        r->changed = true;
    }
}

static void check_store(Race *r, const Op *op, uint8_t guard)
{
    const Type *t = ir_type(r->f, op->args[0]);
    uint8_t dep = (uint8_t)(args_axes(r, op, 1, 1 + t->rank) | guard);
    unsigned same = r->multi & ~(unsigned)dep;
    if (!same)
        return;
    char axes[8];
    int n = 0;
    for (int a = 0; a < 3; a++)
        if (same & (1u << a)) {
            if (n)
                axes[n++] = '/';
            axes[n++] = (char)('x' + a);
        }
    axes[n] = 0;
    const char *name = ir_val(r->f, op->args[0])->name;
    if (diag_warn(r->d, WARN_STORE_RACE, op->loc,
                  "every block along grid axis %s stores to the same window of '%s': its offsets do not "
                  "depend on block.%c", axes, name ? name : "?", axes[0]))
        diag_note(r->d, op->loc, "index the window with block.%c, or store from one block (if block.%c == 0)%s",
                  axes[0], axes[0],
                  t->dtype == DT_F32 || t->dtype == DT_I32 || t->dtype == DT_U32
                      ? "; to sum the blocks' values, add them with atomic_add(...)" : "");
}

/* One pass over b: each value takes the axes of its operands; a loop's
 * block args those of the bounds, the inits and (from the pass before)
 * what the body yields. Passes repeat until nothing changes (fe_warn_races),
 * each one walk of the kernel, nested loops included. */
static void walk(Race *r, const Block *b, uint8_t guard, bool report)
{
    for (int i = 0; i < b->nops; i++) {
        const Op *op = b->ops[i];
        if (op->code == OP_BLOCKID) {
            set_axes(r, op->res[0], (uint8_t)(1u << (op->iattr[0] & 3)));
        } else if (op->code == OP_FOR && op->nregions == 1) {
            const Block *body = &op->regions[0];
            const Op *y = ir_block_yield(body);
            if (body->nargs > 0)
                set_axes(r, body->args[0], args_axes(r, op, 0, 3));
            for (int k = 1; k < body->nargs; k++) {
                uint8_t m = 2 + k < op->nargs ? r->axes[op->args[2 + k]] : 0;
                set_axes(r, body->args[k], (uint8_t)(m | (y && k - 1 < y->nargs ? r->axes[y->args[k - 1]] : 0)));
            }
            walk(r, body, guard, report);
            for (int k = 0; k < op->nres && k + 1 < body->nargs; k++)
                set_axes(r, op->res[k], (uint8_t)(r->axes[body->args[k + 1]] |
                                                  (y && k < y->nargs ? r->axes[y->args[k]] : 0)));
        } else if (op->code == OP_IF) {
            uint8_t cond = op->nargs ? r->axes[op->args[0]] : 0;
            for (int g = 0; g < op->nregions && g < 2; g++) {
                walk(r, &op->regions[g], (uint8_t)(guard | cond), report);
                const Op *y = ir_block_yield(&op->regions[g]);
                for (int k = 0; y && k < op->nres && k < y->nargs; k++)
                    set_axes(r, op->res[k], (uint8_t)(cond | r->axes[y->args[k]]));
            }
        } else {
            if (op->code == OP_STORE && report)
                check_store(r, op, guard);
            uint8_t m = args_axes(r, op, 0, op->nargs);
            for (int k = 0; k < op->nres; k++)
                set_axes(r, op->res[k], m);
            for (int g = 0; g < op->nregions; g++)
                walk(r, &op->regions[g], guard, report);
        }
    }
}

/* Grid axes whose extent is not the constant 1. */
static unsigned multi_axes(const Func *f)
{
    const Op *y = ir_block_yield(&f->grid);
    unsigned m = 0;
    for (int a = 0; a < 3; a++) {
        const Op *def = y && a < y->nargs ? ir_val(f, y->args[a])->def : NULL;
        if (!def || def->code != OP_CONST || def->iattr[0] != 1)
            m |= 1u << a;
    }
    return m;
}

void fe_warn_races(Func *f, Diag *d)
{
    if (d->warn_off & WARN_STORE_RACE)
        return;
    Race r = { f, d, NULL, multi_axes(f), false };
    if (!r.multi)
        return;
    r.axes = arena_alloc(f->mod->arena, f->nvals + 1);
    memset(r.axes, 0, f->nvals + 1);
    /* Each pass that changes something adds an axis bit to a value; kernels
     * settle in two or three. A kernel that has not settled after 16 is
     * left unchecked rather than reported on partial facts. */
    int pass = 0;
    do {
        r.changed = false;
        walk(&r, &f->body, 0, false);
    } while (r.changed && ++pass < 16);
    if (!r.changed)
        walk(&r, &f->body, 0, true);
}
