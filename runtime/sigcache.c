/* sigcache.c - the signature cache of tilert_check_launch (check.c;
 * docs/runtime.md "Launch cost").
 *
 * A launch's plan depends on the arguments' kinds, devices, dtypes, shapes
 * and strides (the signature), on their addresses only through the
 * alignment, NULL and wrap-around rules and the overlap rule, and on the
 * scalars' values only through their conversion. Each kernel keeps the
 * plans of its last SIG_WAYS signatures; a launch with a known signature
 * copies the plan and checks again only what its addresses and scalars
 * decide, against the facts kept with it. Any doubt (a rule broken, an
 * address the kept plan does not cover) takes the full check, which gives
 * the same error as without a cache. Plans that depend on an address (the
 * fallback taken for a misaligned pointer) are not kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rt.h"

#define SIG_WAYS 8

typedef struct RtSigEntry {
    bool used;
    size_t nkey;
    int64_t *key;                      /* the signature; one allocation holds every array */
    /* the plan */
    unsigned grid[3], block[3], smem, cluster[3];
    int device;
    size_t ndims, nslots, ntmaps, param_bytes;
    const tilert_kernel *kernel;
    int64_t *dims;
    uint64_t *slot;
    uint32_t *slot_offset;
    uint8_t *slot_size;
    tilert_tmap_args *tmap;
    char *reason;
    /* what each launch checks again */
    uint64_t tensors, written;         /* bit i: param i is a tensor / written */
    uint64_t align_mask[TILERT_MAX_PARAMS];   /* a non-empty tensor's address & mask is 0 */
    uint64_t span[TILERT_MAX_PARAMS];  /* bytes a tensor reaches, 0 if empty */
    uint16_t slot_of[TILERT_MAX_PARAMS];      /* the param's first slot */
} RtSigEntry;

struct RtSigCache {
    RtSigEntry e[SIG_WAYS];
    unsigned next;                     /* the entry replaced next (round robin) */
    unsigned last;                     /* the latest hit, tried first */
};

/* Per argument: its kind word (a tensor's also holds its rank and whether
 * it has strides), then for a tensor its device, its dtype, its shape and
 * its strides if given. */
static int64_t kind_word(const tilert_arg *a)
{
    const DLTensor *t = a->u.tensor;
    if (a->kind != TILERT_ARG_TENSOR)
        return (int64_t)a->kind;
    return (int64_t)(TILERT_ARG_TENSOR | (t->strides ? 16u : 0u) | (uint64_t)(uint32_t)t->ndim << 32);
}

static int64_t device_word(const DLTensor *t)
{
    return (int64_t)((uint64_t)(uint32_t)t->device.device_type |
                     (uint64_t)(uint32_t)t->device.device_id << 32);
}

static int64_t dtype_word(const DLTensor *t)
{
    return (int64_t)t->dtype.code | (int64_t)t->dtype.bits << 8 | (int64_t)t->dtype.lanes << 16;
}

/* The signature's length; SIZE_MAX for arguments no plan is kept for. */
static size_t key_len(const tilert_arg *args, size_t nargs)
{
    size_t n = 0;
    for (size_t i = 0; i < nargs; i++) {
        const DLTensor *t = args[i].u.tensor;
        n++;
        if (args[i].kind != TILERT_ARG_TENSOR)
            continue;
        if (!t || !t->shape || t->ndim < 1 || t->ndim > TILERT_MAX_RANK)
            return SIZE_MAX;
        n += 2 + (size_t)t->ndim * (t->strides ? 2 : 1);
    }
    return n;
}

static void key_write(const tilert_arg *args, size_t nargs, int64_t *key)
{
    for (size_t i = 0; i < nargs; i++) {
        const DLTensor *t = args[i].u.tensor;
        *key++ = kind_word(&args[i]);
        if (args[i].kind != TILERT_ARG_TENSOR)
            continue;
        *key++ = device_word(t);
        *key++ = dtype_word(t);
        for (int d = 0; d < t->ndim; d++)
            *key++ = t->shape[d];
        for (int d = 0; t->strides && d < t->ndim; d++)
            *key++ = t->strides[d];
    }
}

/* Do the arguments have this signature? Reads no further than the key
 * describes: a kind word that matches gives the rank. */
static bool key_match(const int64_t *key, const tilert_arg *args, size_t nargs)
{
    for (size_t i = 0; i < nargs; i++) {
        const tilert_arg *a = &args[i];
        const DLTensor *t = a->u.tensor;
        if (a->kind != TILERT_ARG_TENSOR) {
            if (*key++ != (int64_t)a->kind)
                return false;
            continue;
        }
        if (!t || *key++ != kind_word(a) || !t->shape || *key++ != device_word(t) ||
            *key++ != dtype_word(t))
            return false;
        for (int d = 0; d < t->ndim; d++)
            if (*key++ != t->shape[d])
                return false;
        for (int d = 0; t->strides && d < t->ndim; d++)
            if (*key++ != t->strides[d])
                return false;
    }
    return true;
}

/* The entry's plan into pl: the parts in use. */
static void entry_load(const RtSigEntry *e, tilert_launch_plan *pl)
{
    memcpy(pl->grid, e->grid, sizeof pl->grid);
    memcpy(pl->block, e->block, sizeof pl->block);
    memcpy(pl->cluster, e->cluster, sizeof pl->cluster);
    pl->smem = e->smem;
    pl->device = e->device;
    pl->ndims = e->ndims;
    memcpy(pl->dims, e->dims, sizeof *pl->dims * e->ndims);
    pl->nslots = e->nslots;
    memcpy(pl->slot, e->slot, sizeof *pl->slot * e->nslots);
    memcpy(pl->slot_size, e->slot_size, sizeof *pl->slot_size * e->nslots);
    memcpy(pl->slot_offset, e->slot_offset, sizeof *pl->slot_offset * e->nslots);
    pl->param_bytes = e->param_bytes;
    pl->kernel = e->kernel;
    snprintf(pl->fallback_reason, sizeof pl->fallback_reason, "%s", e->reason);
    pl->ntmaps = e->ntmaps;
    memcpy(pl->tmap, e->tmap, sizeof *pl->tmap * e->ntmaps);
}

/* This launch's addresses and scalars into the plan, checked by the rules
 * that depend on them: false when any may be broken (the full check then
 * says which). */
static bool entry_patch(const RtSigEntry *e, const tilert_kernel *k, const tilert_arg *args,
                        tilert_launch_plan *pl)
{
    uint64_t addr[TILERT_MAX_PARAMS];
    for (size_t i = 0; i < k->nparams; i++) {
        uint64_t *slot = &pl->slot[e->slot_of[i]];
        if (!(e->tensors >> i & 1)) {
            int64_t v;
            if (tilert_scalar_value(&k->params[i], &args[i], slot, &v) != SC_OK)
                return false;
            continue;
        }
        const DLTensor *t = args[i].u.tensor;
        uint64_t base = (uint64_t)(uintptr_t)t->data, a = base + t->byte_offset;
        if (e->span[i] && (!base || a < base || (a & e->align_mask[i])))
            return false;
        addr[i] = *slot = a;
    }
    for (uint64_t w = e->written; w; w &= w - 1) {
        int i = __builtin_ctzll(w);
        if (!e->span[i])
            continue;
        uint64_t lo = addr[i], hi = tilert_span_last(lo, e->span[i]);
        for (uint64_t o = e->tensors & ~(1ull << i); o; o &= o - 1) {
            int j = __builtin_ctzll(o);
            if (e->span[j] && lo <= tilert_span_last(addr[j], e->span[j]) && addr[j] <= hi)
                return false;
        }
    }
    for (size_t j = 0; j < pl->ntmaps; j++)
        if (pl->tmap[j].rank)
            pl->tmap[j].global_address = addr[pl->tmap[j].param];
    return true;
}

bool tilert_sig_lookup(tilert_kernel *k, const tilert_arg *args, size_t nargs, tilert_launch_plan *pl)
{
    bool hit = false;
    pthread_mutex_lock(&k->mod->state_lock);
    RtSigCache *sc = k->sig;
    for (unsigned n = 0; sc && n < SIG_WAYS; n++) {
        unsigned w = (sc->last + n) % SIG_WAYS;
        const RtSigEntry *e = &sc->e[w];
        if (!e->used || !key_match(e->key, args, nargs))
            continue;
        entry_load(e, pl);
        hit = entry_patch(e, k, args, pl);
        if (hit)
            sc->last = w;
        break;
    }
    if (hit)
        k->sig_hits++;
    else
        k->sig_misses++;
    pthread_mutex_unlock(&k->mod->state_lock);
    return hit;
}

/* Keep the plan of a launch that passed every rule (addr, span: its
 * tensors' addresses and spans), unless it depends on an address. Without
 * memory nothing is kept. */
void tilert_sig_insert(tilert_kernel *k, const tilert_arg *args, size_t nargs, const tilert_launch_plan *pl,
                       const uint64_t *addr, const uint64_t *span)
{
    const tilert_kernel *run = pl->kernel;
    size_t nkey = key_len(args, nargs);
    if (nargs != k->nparams || nkey == SIZE_MAX)
        return;
    RtSigEntry n;
    memset(&n, 0, sizeof n);
    size_t s = 0;
    for (size_t i = 0; i < k->nparams; i++) {
        const RtParam *p = &k->params[i];
        n.slot_of[i] = (uint16_t)s;
        if (p->kind != TILERT_PARAM_TENSOR) {
            s++;
            continue;
        }
        s += (size_t)p->rank;
        uint64_t align = (uint64_t)p->align;
        if ((uint64_t)run->params[i].align > align)
            align = (uint64_t)run->params[i].align;
        for (size_t j = 0; j < k->ntmaps; j++)
            if (k->tmaps[j].param == (int)i && align < 16)
                align = 16;
        if (span[i] && (addr[i] & (align - 1)))
            return;    /* the plan follows from this address: k's fallback for it */
        n.tensors |= 1ull << i;
        if ((k->writes_line && p->written) || (run->writes_line && run->params[i].written))
            n.written |= 1ull << i;
        n.align_mask[i] = align - 1;
        n.span[i] = span[i];
    }
    size_t rlen = strlen(pl->fallback_reason) + 1;
    size_t bytes = sizeof(int64_t) * (nkey + pl->ndims) + sizeof(uint64_t) * pl->nslots +
                   sizeof(tilert_tmap_args) * pl->ntmaps + sizeof(uint32_t) * pl->nslots +
                   pl->nslots + rlen;
    unsigned char *b = malloc(bytes ? bytes : 1);
    if (!b)
        return;
    n.used = true;
    n.nkey = nkey;
    n.key = (int64_t *)(void *)b;
    n.dims = n.key + nkey;
    n.slot = (uint64_t *)(n.dims + pl->ndims);
    n.tmap = (tilert_tmap_args *)(void *)(n.slot + pl->nslots);
    n.slot_offset = (uint32_t *)(void *)(n.tmap + pl->ntmaps);
    n.slot_size = (uint8_t *)(n.slot_offset + pl->nslots);
    n.reason = (char *)(n.slot_size + pl->nslots);
    key_write(args, nargs, n.key);
    memcpy(n.grid, pl->grid, sizeof n.grid);
    memcpy(n.block, pl->block, sizeof n.block);
    memcpy(n.cluster, pl->cluster, sizeof n.cluster);
    n.smem = pl->smem;
    n.device = pl->device;
    n.ndims = pl->ndims;
    n.nslots = pl->nslots;
    n.ntmaps = pl->ntmaps;
    n.param_bytes = pl->param_bytes;
    n.kernel = pl->kernel;
    memcpy(n.dims, pl->dims, sizeof *n.dims * pl->ndims);
    memcpy(n.slot, pl->slot, sizeof *n.slot * pl->nslots);
    memcpy(n.slot_offset, pl->slot_offset, sizeof *n.slot_offset * pl->nslots);
    memcpy(n.slot_size, pl->slot_size, pl->nslots);
    memcpy(n.tmap, pl->tmap, sizeof *n.tmap * pl->ntmaps);
    memcpy(n.reason, pl->fallback_reason, rlen);
    pthread_mutex_lock(&k->mod->state_lock);
    if (!k->sig)
        k->sig = calloc(1, sizeof *k->sig);
    if (k->sig) {
        unsigned w = k->sig->next++ % SIG_WAYS;
        RtSigEntry *e = &k->sig->e[w];
        free(e->key);
        *e = n;
        k->sig->last = w;
        b = NULL;
    }
    pthread_mutex_unlock(&k->mod->state_lock);
    free(b);
}


void tilert_sig_free(tilert_kernel *k)
{
    if (!k->sig)
        return;
    for (int w = 0; w < SIG_WAYS; w++)
        free(k->sig->e[w].key);
    free(k->sig);
    k->sig = NULL;
}
