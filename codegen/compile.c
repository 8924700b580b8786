/* compile.c - the code generator's driver: a module's kernels lowered to
 * LLVM IR (codegen.c, one kernel at a time), optimised and emitted as PTX
 * (llvm_emit.c).
 *
 * Needs: a verified Module (every op in ops.h). Per compilation: its own
 * LLVMContext and LLVM module (so concurrent compilations share nothing),
 * or two of each when its kernels are split (split_at), the target
 * machines built on a second thread meanwhile, PTX emitted to memory, and
 * the kernel metadata text the runtime validates launches against.
 */
#include "cg_internal.h"
#include "llvm_emit.h"
#include "pass_gate.h"

#include <llvm-c/Analysis.h>
#include <pthread.h>
#include <string.h>

/* The generated LLVM IR is verified in builds with assertions (the
 * sanitizer build the test suite runs); release builds skip it as release
 * compilers do (1.3% of layernorm [16384]'s compile, 2% of attention's). */
static bool verify_llvm(void)
{
#ifdef NDEBUG
    return false;
#else
    return true;
#endif
}

static int verify_module(LLVMModuleRef mod, Diag *d, Loc loc)
{
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        char m[DIAG_MAX_MSG];
        snprintf(m, sizeof m, "%s", msg ? msg : "?");
        LLVMDisposeMessage(msg);
        diag_internal(d, loc, "generated LLVM IR does not verify: %s", m);
        return 1;
    }
    LLVMDisposeMessage(msg);
    return 0;
}

/* One row of the --time-passes table (the driver prints the header). */
static void time_row(StrBuf *timing, const char *what, double t0)
{
    if (timing)
        sb_printf(timing, "%12.3f  %s\n", (tc_now() - t0) * 1e3, what);
}

/* Pure values of the kernels marked "tilec.sched" move to their first use
 * (simt_sched.c): every block of a SIMT kernel in rows of 16+ warps, under
 * a register cap (without a cap ptxas then takes more registers,
 * docs/codegen.md); the epilogue blocks of a tensor-core kernel (value
 * "epilogue"). */
static void schedule_simt(LLVMModuleRef mod, int opt)
{
    if (opt <= 0)
        return;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        LLVMAttributeRef at = LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, "tilec.sched", 11);
        unsigned n = 0;
        if (at)
            cg_schedule_simt(LLVMGetModuleContext(mod), fn, LLVMGetStringAttributeValue(at, &n) && n > 0);
    }
}

/* An LLVM message as an internal error on the compiling thread (the
 * message is copied to the stack and released first: a diagnostic keeps
 * at most DIAG_MAX_MSG bytes of it anyway). */
static int llvm_failed(Diag *d, Loc loc, const char *what, char *msg)
{
    char m[DIAG_MAX_MSG];
    snprintf(m, sizeof m, "%s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    diag_internal(d, loc, "%s failed: %s", what, m);
    return 1;
}

/* LLVM's objects are released before any allocation of ours, or held
 * under a cleanup while we allocate: out of memory unwinds through here
 * (lib/alloc.h). */
static void dispose_message(void *s) { LLVMDisposeMessage(s); }
static void dispose_buffer(void *b) { LLVMDisposeMemoryBuffer(b); }

/* out += n bytes at s, then drop(o), which also runs if appending runs out of memory. */
static void put_llvm(StrBuf *out, const char *s, size_t n, void (*drop)(void *), void *o)
{
    TcCleanup cl;
    tc_cleanup_push(&cl, drop, o);
    sb_putn(out, s, n);
    tc_cleanup_pop(&cl);
    drop(o);
}

/* b's PTX after out's (cg_ptx_append), then b released (also when
 * appending runs out of memory). False when b has no PTX header. */
static bool append_ptx(StrBuf *out, LLVMMemoryBufferRef b, int nfn)
{
    TcCleanup cl;
    tc_cleanup_push(&cl, dispose_buffer, b);
    bool ok = cg_ptx_append(out, LLVMGetBufferStart(b), LLVMGetBufferSize(b), nfn);
    tc_cleanup_pop(&cl);
    dispose_buffer(b);
    return ok;
}

/* One module's kernels: its context, module and builder (Cg), and the
 * target machine that emits it. A compilation has one, or two when its
 * kernels are split (cg_compile). */
typedef struct CgUnit {
    Cg cg;
    LLVMTargetMachineRef tm;
    int f0, f1;             /* m->funcs[f0 .. f1) */
} CgUnit;

static void schedule_unit(void *mod) { schedule_simt(mod, 1); }

static int defined_functions(LLVMModuleRef mod)
{
    int n = 0;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn))
        n += !LLVMIsDeclaration(fn);
    return n;
}

/* What a compilation holds besides arena memory: released at its end, or
 * by the unwinding of an out-of-memory (lib/alloc.h) on the failing
 * thread, which first waits for the threads it started. */
typedef struct CgHeld {
    CgUnit *u;
    int nu;
    CgTmJob *job;
    pthread_t th;
    bool threaded;          /* th not joined yet */
    CgEmitJob *emit;        /* the second unit's optimisation and emission */
    pthread_t eth;
    bool ethreaded;         /* eth not joined yet */
    LLVMTargetDataRef dl;
} CgHeld;

static void cg_release(void *p)
{
    CgHeld *h = p;
    if (h->threaded)
        pthread_join(h->th, NULL);
    h->threaded = false;
    if (h->ethreaded)
        pthread_join(h->eth, NULL);
    h->ethreaded = false;
    if (h->emit) {
        LLVMDisposeMessage(h->emit->err);
        if (h->emit->ptx)
            LLVMDisposeMemoryBuffer(h->emit->ptx);
        h->emit->err = NULL;
        h->emit->ptx = NULL;
    }
    for (int i = 0; i < h->nu; i++) {
        Cg *cg = &h->u[i].cg;
        cg_debug_drop(cg);
        if (cg->b)
            LLVMDisposeBuilder(cg->b);
        if (cg->mod)
            LLVMDisposeModule(cg->mod);
        if (cg->ctx)
            LLVMContextDispose(cg->ctx);
        if (cg->gate)
            cg_gate_free(cg->gate);
        cg->b = NULL;
        cg->mod = NULL;
        cg->ctx = NULL;
        cg->gate = NULL;
    }
    if (h->dl)
        LLVMDisposeTargetData(h->dl);
    h->dl = NULL;
    LLVMDisposeMessage(h->job->err);
    h->job->err = NULL;
    for (int i = 0; i < 2; i++)
        if (h->job->tm[i])
            LLVMDisposeTargetMachine(h->job->tm[i]);
    h->job->tm[0] = h->job->tm[1] = NULL;
}

/* A unit's context, module and builder, and its kernels lowered. */
static int lower_unit(CgUnit *u, Module *m, const CgOptions *o, CgResult *res)
{
    Cg *cg = &u->cg;
    cg->ctx = LLVMContextCreate();
    cg->gate = cg_gate_new(cg->ctx);
    cg->mod = LLVMModuleCreateWithNameInContext(m->source_name ? m->source_name : "tilec", cg->ctx);
    LLVMSetTarget(cg->mod, "nvptx64-nvidia-cuda");
    cg_init_types(cg);
    cg->b = LLVMCreateBuilderInContext(cg->ctx);
    cg_debug_begin(cg, m->source_name, o->debug_dir, o->debug_info);
    int e = 0;
    for (int i = u->f0; i < u->f1; i++)
        e += cg_gen_kernel(cg, m->funcs[i], &res->meta);
    cg_debug_end(cg);
    return e;
}

/* Before a unit's passes: its IR verified (builds with assertions) and
 * contraction allowed where the IR says so. */
static int prepare_unit(CgUnit *u, Diag *d, Loc loc)
{
    if (verify_llvm() && verify_module(u->cg.mod, d, loc))
        return 1;
    cg_allow_contract(u->cg.mod);
    return 0;
}

/* The first (or only) unit: optimised, scheduled, emitted into res->ptx. */
static int finish_unit(CgUnit *u, const CgOptions *o, bool simt, CgResult *res, StrBuf *timing, Loc loc)
{
    Cg *cg = &u->cg;
    double t0 = tc_now();
    char *err = cg_optimise(cg->mod, u->tm, o->opt_level);
    if (err)
        return llvm_failed(cg->d, loc, "LLVM pass pipeline", err);
    schedule_simt(cg->mod, o->opt_level);
    time_row(timing, "codegen: llvm optimisation", t0);
    if (o->want_llvm) {
        char *s = LLVMPrintModuleToString(cg->mod);
        put_llvm(&res->llvm_ir, s, strlen(s), dispose_message, s);
    }
    if (!o->want_ptx)
        return 0;
    t0 = tc_now();
    LLVMMemoryBufferRef buf;
    err = cg_emit(cg->mod, u->tm, simt, cg->gate, &buf);
    if (err)
        return llvm_failed(cg->d, loc, "NVPTX backend", err);
    put_llvm(&res->ptx, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf), dispose_buffer, buf);
    time_row(timing, "codegen: ptx emission (nvptx backend)", t0);
    return 0;
}

/* A module of two or more kernels, compiled to PTX without line
 * information (whose .file table is per module), is lowered as two LLVM
 * modules, each in its own context: the second's passes and emission run
 * on a thread of their own beside the first's (the warp-specialized kernel
 * and its portable variant on sm_90a: the variant is as costly as the
 * kernel). Its PTX then follows the first's as one module would print it
 * (cg_ptx_append). Every allocation of the job's heap stays on the
 * compiling thread: the second thread runs LLVM and schedule_simt, whose
 * scratch is outside the job (tc_try_zalloc). */
static int split_at(const Module *m, const CgOptions *o)
{
    if (m->nfuncs < 2 || o->debug_info || o->want_llvm || !o->want_ptx)
        return m->nfuncs;
    return (m->nfuncs + 1) / 2;
}

int cg_compile(Module *m, const CgOptions *o, CgResult *res, Diag *d, StrBuf *timing)
{
    Loc loc = { m->source_name, 0, 0 };
    const Target *tg = o->target ? cg_family(o->target->family) : NULL;
    if (!tg) {
        diag_error(d, loc, "no code generator for target %s in this build", o->target ? o->target->name : "(none)");
        return 1;
    }
    int cut = split_at(m, o);
    int nu = cut < m->nfuncs ? 2 : 1;
    CgTmJob job = { .ti = o->target, .opt = o->opt_level, .n = nu };
    CgUnit u[2];
    memset(u, 0, sizeof u);
    for (int i = 0; i < nu; i++) {
        u[i].cg = (Cg){ .a = m->arena, .d = d, .tg = tg, .ti = o->target, .smem_per_block = o->smem_per_block,
                        .report = &res->report };
        u[i].f0 = i ? cut : 0;
        u[i].f1 = i ? m->nfuncs : cut;
    }
    CgEmitJob ej = { 0 };
    CgHeld held = { .u = u, .nu = nu, .job = &job };
    held.threaded = pthread_create(&held.th, NULL, cg_tm_job, &job) == 0;
    if (!held.threaded)
        cg_tm_job(&job);
    TcCleanup cl;
    tc_cleanup_push(&cl, cg_release, &held);
    double t0 = tc_now();
    int e = 0;
    for (int i = 0; i < nu; i++)
        e += lower_unit(&u[i], m, o, res);
    time_row(timing, "codegen: lowering to llvm ir", t0);
    t0 = tc_now();
    if (held.threaded)
        pthread_join(held.th, NULL);
    held.threaded = false;
    char row[192];
    snprintf(row, sizeof row, "codegen: target machine (%.3f ms on a second thread, beside the lowering)", job.ms);
    time_row(timing, row, t0);
    if (!job.tm[nu - 1]) {
        diag_error(d, loc, "LLVM has no NVPTX target: %s", job.err ? job.err : "?");
        e++;
    }
    held.dl = job.tm[0] ? LLVMCreateTargetDataLayout(job.tm[0]) : NULL;
    for (int i = 0; i < nu; i++) {
        u[i].tm = job.tm[i];
        if (held.dl)
            LLVMSetModuleDataLayout(u[i].cg.mod, held.dl);
    }
    for (int i = 0; !e && i < nu; i++)
        e += prepare_unit(&u[i], d, loc);
    bool simt = cg_simt_module(u[0].cg.mod) && (nu < 2 || cg_simt_module(u[1].cg.mod));
    bool beside = false;    /* the second unit on the second thread */
    if (!e && nu == 2) {
        ej = (CgEmitJob){ .mod = u[1].cg.mod, .tm = u[1].tm, .gate = u[1].cg.gate, .opt = o->opt_level,
                          .simt = simt };
        held.emit = &ej;
        if (o->opt_level > 0)
            ej.between = schedule_unit, ej.between_arg = u[1].cg.mod;
        beside = held.ethreaded = pthread_create(&held.eth, NULL, cg_emit_job, &ej) == 0;
    }
    if (!e)
        e += finish_unit(&u[0], o, simt, res, timing, loc);
    if (!e && nu == 2) {
        t0 = tc_now();
        if (beside) {
            pthread_join(held.eth, NULL);
            held.ethreaded = false;
        } else {
            cg_emit_job(&ej);
        }
        snprintf(row, sizeof row, "codegen: second module (%d kernel%s): llvm optimisation %.3f ms, ptx emission %.3f ms%s",
                 m->nfuncs - cut, m->nfuncs - cut > 1 ? "s" : "", ej.opt_ms, ej.emit_ms,
                 beside ? " on a second thread (this row: the wait for it)" : "");
        time_row(timing, row, t0);
        if (ej.err) {
            char *msg = ej.err;
            ej.err = NULL;
            e += llvm_failed(d, loc, ej.step, msg);
        } else {
            LLVMMemoryBufferRef b = ej.ptx;
            ej.ptx = NULL;
            if (!append_ptx(&res->ptx, b, defined_functions(u[0].cg.mod))) {
                diag_internal(d, loc, "the second module's PTX has no header");
                e++;
            }
        }
    }
    tc_cleanup_pop(&cl);
    cg_release(&held);
    return e;
}
