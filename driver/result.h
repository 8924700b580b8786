/* result.h - what a tilec_result holds (driver/api.c builds it,
 * driver/interpret.c reads it). Internal to libtilec. */
#ifndef TILEC_RESULT_H
#define TILEC_RESULT_H

#include "tilec.h"
#include "ir/ir.h"

enum { NOUT = TILEC_OUT_REPORT + 1 };

struct tilec_result {
    Arena *arena;
    Diag diag;
    tilec_status status;
    const char *arch;
    const char *text[NOUT];
    tilec_diag *diags;
    size_t ndiags;
    const char *diag_text;
    tilec_cache_mode from_cache;   /* TILEC_CACHE_OFF: compiled by this call */
    void *cache_ref;               /* a hit's entry, which the texts point into */
    Module *module;                /* the IR after the passes, with tilec_options.keep_ir; else NULL */
    const char **cands;            /* tilec_candidates_*: each candidate's defines ("BM=128,BN=64") */
    size_t ncands;
};

/* One API call that makes a result, run as a job (lib/alloc.h): a call's
 * struct starts with a ResultCall, which the job fills. tc_result_job runs
 * job(c) and hands c->r to *out (or frees it when out is NULL); when memory
 * ran out everything the job made is gone, *out is NULL and the status is
 * TILEC_ERR_NOMEM. */
typedef struct ResultCall {
    tilec_result *r;
    tilec_status st;
} ResultCall;
tilec_status tc_result_job(void (*job)(void *), ResultCall *c, tilec_result **out);

/* An empty result (its own arena and diagnostics). */
tilec_result *tc_result_new(void);
/* Copy the Diag records into the public records and render them. */
void tc_result_finish_diags(tilec_result *r);

#endif
