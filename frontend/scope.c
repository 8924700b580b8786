/* scope.c - the symbol stack of the lowering walk: block scopes, name
 * lookup, redefinition checks and "did you mean" suggestions.
 *
 * Scopes are marks on one stack: a scope ends by truncating the stack to the
 * mark it started at (lower.c, fe_scope_truncate). A hash table of chains
 * finds the newest symbol of a name in constant time (a kernel of 100,000
 * lets compiles in linear time); a pop restores its bucket's head. Shadowing is not allowed: declaring a name that
 * is visible anywhere (param, const, named dim, outer variable) is an error,
 * which keeps loop-carried variable detection exact.
 */
#include "sema.h"

#include <string.h>

static uint32_t name_hash(const char *s)
{
    return (uint32_t)tc_hash64(s, strlen(s), 0);
}

static void bucket_link(Lower *l, Sym *s)
{
    Sym **b = &l->bucket[s->hash & (uint32_t)(l->nbucket - 1)];
    s->chain = *b;
    *b = s;
}

/* Keep the table at least twice the stack: relink every symbol, oldest
 * first, so each chain runs newest to oldest. */
static void bucket_grow(Lower *l)
{
    if (l->nsyms * 2 < l->nbucket)
        return;
    l->nbucket = l->nbucket ? l->nbucket * 2 : 64;
    l->bucket = arena_alloc(l->syms_arena, sizeof *l->bucket * (size_t)l->nbucket);
    for (int i = 0; i < l->nsyms; i++)
        bucket_link(l, l->syms[i]);
}

void fe_scope_push(Lower *l, Sym *s)
{
    if (l->nsyms == l->capsyms) {
        int cap = l->capsyms ? l->capsyms * 2 : 32;
        l->syms = arena_grow_move(l->syms_arena, l->syms, sizeof *l->syms, (size_t)l->capsyms, (size_t)cap);
        l->capsyms = cap;
    }
    s->hash = name_hash(s->name);
    l->syms[l->nsyms++] = s;
    if (l->nsyms * 2 >= l->nbucket)
        bucket_grow(l);     /* links s too */
    else
        bucket_link(l, s);
}

void fe_scope_truncate(Lower *l, int mark)
{
    while (l->nsyms > mark) {
        Sym *s = l->syms[--l->nsyms];
        l->bucket[s->hash & (uint32_t)(l->nbucket - 1)] = s->chain;
    }
}

Sym *fe_scope_lookup(Lower *l, const char *name)
{
    if (!l->nbucket)
        return NULL;
    for (Sym *s = l->bucket[name_hash(name) & (uint32_t)(l->nbucket - 1)]; s; s = s->chain)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

/* Declare a name in the innermost scope; on a clash report it, note the
 * previous definition, and still return a fresh symbol so the walk goes on. */
Sym *fe_declare(Lower *l, const char *name, Loc loc, SymKind kind)
{
    Sym *prev = fe_scope_lookup(l, name);
    if (prev) {
        diag_error(l->d, loc, "redefinition of '%s'", name);
        diag_note(l->d, prev->loc, "previous definition of '%s' is here", name);
    }
    Sym *s = arena_alloc(l->syms_arena, sizeof *s);
    s->name = name;
    s->loc = loc;
    s->kind = (uint8_t)kind;
    fe_scope_push(l, s);
    return s;
}

/* Edit distance with adjacent transpositions (optimal string alignment). */
static int edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 31 || lb > 31)
        return 99;
    int m[32][32];
    for (size_t i = 0; i <= la; i++)
        for (size_t j = 0; j <= lb; j++) {
            if (i == 0 || j == 0) {
                m[i][j] = (int)(i + j);
                continue;
            }
            int best = m[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (m[i - 1][j] + 1 < best)
                best = m[i - 1][j] + 1;
            if (m[i][j - 1] + 1 < best)
                best = m[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && m[i - 2][j - 2] + 1 < best)
                best = m[i - 2][j - 2] + 1;
            m[i][j] = best;
        }
    return m[la][lb];
}

static void consider(const char *name, const char *cand, const char **best, int *bestd)
{
    int dist = edit_distance(name, cand);
    size_t n = strlen(name);
    int limit = n <= 2 ? 0 : n <= 4 ? 1 : 2;
    if (dist > 0 && dist <= limit && dist < *bestd) {
        *best = cand;
        *bestd = dist;
    }
}

/* Add "did you mean 'x'?" as a note when a visible name (or, for calls, a
 * builtin or dtype) is close to the unknown one. */
void fe_suggest(Lower *l, Loc loc, const char *name, bool calls)
{
    const char *best = NULL;
    int bestd = 99;
    for (int i = l->nsyms - 1; i >= 0; i--)
        consider(name, l->syms[i]->name, &best, &bestd);
    if (calls) {
        for (size_t i = 0; fe_builtin_name(i); i++)
            consider(name, fe_builtin_name(i), &best, &bestd);
        for (int t = 1; t < DT_COUNT; t++)
            consider(name, dtype_name((DType)t), &best, &bestd);
    } else {
        consider(name, "block", &best, &bestd);
        consider(name, "num_blocks", &best, &bestd);
        consider(name, "num_sms()", &best, &bestd);   /* a call: `grid(num_sms)` */
    }
    if (best)
        diag_note(l->d, loc, "did you mean '%s'?", best);
}
