/* job.h - one compilation inside libtilec: the Job that driver/api.c
 * begins and finishes, driver/options.c checks and driver/job.c runs
 * (read -> lex -> parse -> lower -> verify -> passes -> print -> codegen).
 * Internal to libtilec.
 *
 * A Job fills its tilec_result (its arena holds every text handed out);
 * the StrBufs are the job's own scratch, freed when it ends.
 */
#ifndef TILEC_JOB_H
#define TILEC_JOB_H

#include "tilec.h"
#include "frontend/frontend.h"
#include "passes/passes.h"
#include "report.h"
#include "result.h"
#include "target/target.h"

/* One compilation: the result being filled plus the scratch buffers. */
typedef struct Job {
    tilec_result *r;
    tilec_options o;
    const char *name;
    const TargetInfo *target;
    PassOptions popts;
    PassDims dims;
    StrBuf dump, timing, remarks, cgreport;
    StrBuf roofline;        /* the report's roofline, counted on the IR after the passes */
    TcClock t_start;
    bool ptxas_ran;         /* ptxas_run holds the check of tilec_options.ptxas */
    PtxasRun ptxas_run;
    bool portable;          /* compiling the portable variant (add_portable): PassCtx.portable */
    const AstModule *ast;   /* the source's AST (front_end), lowered again by add_portable */
    TileChoice *cands;      /* tilec_candidates_*: the tile choice's candidates go here; else NULL */
    const char *cand_kernel;   /* the kernel they are for (NULL: no `auto` param to choose) */
} Job;

/* ---- options.c ---- */

/* Copy the caller's options; fields past its struct_size keep their defaults. */
void tc_options_copy(tilec_options *dst, const tilec_options *src);
/* Check j->o (usage errors go to j->r->diag) and resolve its target into
 * j->target and j->r->arch; false on the first error. */
bool tc_job_check_options(Job *j);
/* The input language (-x) is known and can give the output asked for. */
bool tc_job_check_language(Job *j);
/* The input is Tile IR text (-x tir, else a .tir name). */
bool tc_job_is_tir(const Job *j);

/* ---- job.c ---- */

/* The output `which` of the result: a copy of sb in the result's arena. */
void tc_job_set_text(Job *j, tilec_output which, const StrBuf *sb);
/* Front end: source -> Module (or tokens / AST output). NULL when it stops. */
Module *tc_job_front_end(Job *j, const char *src, size_t len);
/* The whole compilation of `len` bytes of src, up to j->o.emit. */
void tc_job_compile(Job *j, const char *src, size_t len);
/* The dump, timing and report texts into the result. */
void tc_job_finish_outputs(Job *j);

#endif
