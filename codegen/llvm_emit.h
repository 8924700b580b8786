/* llvm_emit.h - the LLVM side of the code generator (llvm_emit.c): target
 * machines, the optimisation pipeline, PTX to memory, a module's
 * optimisation and emission on a thread of its own, and one PTX text from
 * two modules. Nothing here allocates through lib/alloc.h except
 * cg_ptx_append (the compiling thread's). */
#ifndef TILEC_LLVM_EMIT_H
#define TILEC_LLVM_EMIT_H

#include <llvm-c/TargetMachine.h>
#include <stdbool.h>

#include "../lib/util.h"
#include "../target/target.h"

struct CgGate;

/* Builds n (1 or 2) NVPTX target machines for ti at opt, on a thread of
 * its own while the kernels are lowered (pthread start routine; p is the
 * job). On failure tm[] stays NULL and err holds LLVM's message. */
typedef struct CgTmJob {
    const TargetInfo *ti;
    int opt, n;
    LLVMTargetMachineRef tm[2];
    char *err;
    double ms;              /* time the thread took */
} CgTmJob;
void *cg_tm_job(void *p);

/* Every defined function of mod is marked "tilec.simt" (runs without
 * tensor cores), and there is at least one. */
bool cg_simt_module(LLVMModuleRef mod);

/* The optimisation pipeline at opt; NULL, or LLVM's message (LLVMDisposeMessage). */
char *cg_optimise(LLVMModuleRef mod, LLVMTargetMachineRef tm, int opt);
/* PTX of mod into *out (LLVMDisposeMemoryBuffer), the backend's skip list
 * for a module of SIMT kernels or not set on gate meanwhile; NULL, or
 * LLVM's message. */
char *cg_emit(LLVMModuleRef mod, LLVMTargetMachineRef tm, bool simt, struct CgGate *gate,
              LLVMMemoryBufferRef *out);

/* cg_optimise, between(between_arg) when set (it must not allocate from
 * the job's heap), then cg_emit of one module (a pthread start routine; p
 * is the job): the second module of a split compilation (compile.c). */
typedef struct CgEmitJob {
    LLVMModuleRef mod;
    LLVMTargetMachineRef tm;
    struct CgGate *gate;
    int opt;
    bool simt;
    void (*between)(void *);
    void *between_arg;
    LLVMMemoryBufferRef ptx;    /* out */
    char *err;                  /* out: NULL, or LLVM's message from step */
    const char *step;
    double opt_ms, emit_ms;
} CgEmitJob;
void *cg_emit_job(void *p);

/* Appends the PTX b[0..n) of a second module to out, which holds the PTX
 * of a module of nfn kernels, as one module of both would read. False
 * when b has no PTX header. */
bool cg_ptx_append(StrBuf *out, const char *b, size_t n, int nfn);

#endif
