/* pool.c - a per-module allocation pool (every string and table a module
 * holds), freed in one call; and the dtype table (ORDER DTYPE). */
#include <stdlib.h>
#include <string.h>
#include "rt.h"

struct RtChunk {
    RtChunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

#define CHUNK_SIZE 8192

static RtChunk *chunk_new(size_t cap, RtChunk *next)
{
    RtChunk *c = malloc(sizeof *c + cap);
    if (!c)
        return NULL;
    c->next = next;
    c->used = 0;
    c->cap = cap;
    return c;
}

void *tilert_pool_alloc(RtPool *p, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    RtChunk *c = p->head;
    if (!c || c->cap - c->used < n) {
        c = chunk_new(n > CHUNK_SIZE ? n : CHUNK_SIZE, p->head);
        if (!c) {
            p->failed = true;
            return NULL;
        }
        p->head = c;
    }
    void *r = c->data + c->used;
    c->used += n;
    memset(r, 0, n);
    return r;
}

char *tilert_pool_strndup(RtPool *p, const char *s, size_t n)
{
    char *r = tilert_pool_alloc(p, n + 1);
    if (r)
        memcpy(r, s, n);
    return r;
}

void tilert_pool_free(RtPool *p)
{
    RtChunk *c = p->head;
    while (c) {
        RtChunk *next = c->next;
        free(c);
        c = next;
    }
    p->head = NULL;
}

static const struct { const char *name; int bits; } dtypes[] = {
#define DTYPE(E, S, B, C) {S, B},
#include "../ir/dtypes.h"
#undef DTYPE
};

int tilert_dtype_parse(const char *s)
{
    for (int i = 0; i < RT_NDTYPES; i++)
        if (strcmp(dtypes[i].name, s) == 0)
            return i;
    return -1;
}

const char *tilert_dtype_name(int dt) { return dtypes[dt].name; }
int tilert_dtype_bits(int dt) { return dtypes[dt].bits; }
