/* llvm_emit.c - the LLVM side of the code generator: the NVPTX target
 * machines, the optimisation pipeline, the backend's pass gate, PTX to
 * memory, and a second module's optimisation and emission on a thread of
 * its own.
 *
 * Needs: LLVM modules the lowering filled (codegen.c). Calls no tc_*
 * allocator and reports nothing itself: what fails comes back as LLVM's
 * message, which codegen.c turns into a diagnostic on the compiling thread
 * (only that thread may allocate: lib/alloc.h).
 */
#include "cg_internal.h"
#include "llvm_emit.h"
#include "pass_gate.h"

#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <string.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Passes of the NVPTX backend's own IR pipeline that find nothing to do in
 * what this generator emits, skipped by name while the backend runs, on
 * this compilation's LLVMContext only (pass_gate.cpp; see docs/codegen.md,
 * "Compile time"): n-ary reassociation and the load/store vectoriser leave
 * the PTX of every example unchanged; without straight-line strength
 * reduction (the lowering writes addresses and bounds tests in its form)
 * the SIMT kernels' PTX is the same and the tensor-core kernels' keeps its
 * registers (the same speed on the H200); the backend's three early-cse
 * runs find what the optimisation pipeline's early-cse already removed
 * (the same PTX instruction counts, registers and spills on every example).
 * The optimisation pipeline's own early-cse still runs. Passes with nothing
 * to work on here (no allocas, memcmp calls, libcalls or expensive
 * constants; phis and dead instructions already cleaned up) are skipped
 * too: byte-identical PTX on every example, gemm and attention tile for
 * sm_86, sm_90a and sm_100a, 0.7-0.8% fewer instructions executed. Other
 * users of the same libLLVM in the process are not affected. */
#define BACKEND_SKIP_DEFAULT                                                                   \
    "slsr,nary-reassociate,load-store-vectorizer,early-cse#2,early-cse#3,sroa,nvptx-lower-alloca,"  \
    "infer-address-spaces,mergeicmps,expand-memcmp,consthoist,partially-inline-libcalls,"         \
    "early-tailduplication,opt-phis,dead-mi-elimination"

/* Modules whose kernels all run without tensor cores (marked "tilec.simt")
 * also skip the backend's first early-cse, CodeGenPrepare, machine CSE and
 * machine sinking. Their PTX changes (a few lines more or less, one
 * register more or less), not the speed: bf16 softmax and layernorm on
 * [32768 x 4096] and [8192 x 16384] within 0.3% of copy bandwidth of the
 * full list in three interleaved runs on an H200 (bench/RESULTS.md
 * 2026-12-01 00:14); layernorm [16384] compiles 11% faster. Tensor-core
 * kernels keep them: their 255-register tiles move between no spills and
 * some with any change of the PTX (docs/codegen.md). */
#define BACKEND_SKIP_SIMT BACKEND_SKIP_DEFAULT ",early-cse,codegenprepare,machine-cse,machine-sink"

bool cg_simt_module(LLVMModuleRef mod)
{
    bool any = false;
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        if (LLVMIsDeclaration(fn))
            continue;
        if (!LLVMGetStringAttributeAtIndex(fn, LLVMAttributeFunctionIndex, "tilec.simt", 10))
            return false;
        any = true;
    }
    return any;
}

static void init_nvptx(void)
{
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}

/* ---- target machines ---- */


/* The NVPTX target machine for tg at opt (NULL and *err set when LLVM has
 * no NVPTX target). */
static LLVMTargetMachineRef make_tm(const TargetInfo *ti, int opt, char **err)
{
    LLVMTargetRef t;
    *err = NULL;
    if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &t, err))
        return NULL;
    /* Aggressive gives the same PTX as Default on these kernels, slower. */
    LLVMCodeGenOptLevel lvl = opt <= 0 ? LLVMCodeGenLevelNone : LLVMCodeGenLevelDefault;
    return LLVMCreateTargetMachine(t, "nvptx64-nvidia-cuda", ti->llvm_cpu, ti->llvm_features, lvl,
                                   LLVMRelocDefault, LLVMCodeModelDefault);
}

/* The target machine is built on a second thread while the kernels are
 * lowered to LLVM IR (~0.5 ms of building tables, a few percent of a
 * memory-bound kernel's compile); the lowering needs no data layout (the
 * IR builder folds constants without one), which is set once the machine
 * exists, before any pass runs. A module split in two (codegen.c) needs a
 * machine per module: the two are emitted at the same time. */
void *cg_tm_job(void *p)
{
    CgTmJob *j = p;
    double t0 = tc_now();
    pthread_once(&init_once, init_nvptx);
    for (int i = 0; i < j->n; i++)
        if (!j->err)
            j->tm[i] = make_tm(j->ti, j->opt, &j->err);
    j->ms = (tc_now() - t0) * 1e3;
    return NULL;
}

/* ---- optimisation and emission ---- */

/* The IR this generator emits is fully unrolled straight-line code with
 * structured loops: what it needs is scalar cleanup (redundant index math,
 * constant folding, selects and branches on constants), not the whole O3
 * pipeline, whose loop and vector passes find nothing to do here and whose
 * load scalarisation drops !invariant.load. One pipeline for every module:
 * -O1 runs the cleanup (early-cse, instcombine, simplifycfg, dce), -O2/-O3
 * add hoisting out of loops (licm). No allocas are emitted, so no SROA;
 * early-cse without MemorySSA, dce in place of adce and no second
 * simplifycfg give byte-identical PTX on every example, gemm and attention
 * tile (3 archs) and -1.8% instructions executed on attention. The NVPTX
 * backend strength-reduces addresses and runs early-cse itself. Instcombine
 * stays: without it the backend took longer (attention +0.7%, layernorm
 * [16384] -8% but its SASS +2%, softmax [16384] SASS +8%: predicate chains
 * and 64-bit address math). These bodies have no loads GVN could forward
 * (shared memory is read by ldmatrix intrinsics, global memory by
 * cp.async): GVN with PRE and a second instcombine round differed by a few
 * address instructions, for ~35M more instructions executed on attention
 * (~10% of its compile). */
static const char *pipeline(int opt)
{
    static const char *const p[] = {
        "verify",
        "function(early-cse,instcombine<no-verify-fixpoint>,simplifycfg,dce)",
        "function(early-cse,instcombine<no-verify-fixpoint>,simplifycfg,loop-mssa(licm),dce)",
    };
    return p[opt <= 0 ? 0 : opt == 1 ? 1 : 2];
}

char *cg_optimise(LLVMModuleRef mod, LLVMTargetMachineRef tm, int opt)
{
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef err = LLVMRunPasses(mod, pipeline(opt), tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (!err)
        return NULL;
    char *msg = LLVMGetErrorMessage(err);
    char *m = LLVMCreateMessage(msg);
    LLVMDisposeErrorMessage(msg);
    return m;
}

char *cg_emit(LLVMModuleRef mod, LLVMTargetMachineRef tm, bool simt, CgGate *gate, LLVMMemoryBufferRef *out)
{
    char *err = NULL;
    *out = NULL;
    cg_gate_skip(gate, simt ? BACKEND_SKIP_SIMT : BACKEND_SKIP_DEFAULT);
    int bad = LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, out);
    cg_gate_skip(gate, NULL);
    if (!bad)
        return NULL;
    *out = NULL;
    return err ? err : LLVMCreateMessage("?");
}

void *cg_emit_job(void *p)
{
    CgEmitJob *j = p;
    double t0 = tc_now();
    j->err = cg_optimise(j->mod, j->tm, j->opt);
    j->step = "LLVM pass pipeline";
    double t1 = tc_now();
    j->opt_ms = (t1 - t0) * 1e3;
    if (!j->err && j->between)
        j->between(j->between_arg);
    if (!j->err) {
        j->err = cg_emit(j->mod, j->tm, j->simt, j->gate, &j->ptx);
        j->step = "NVPTX backend";
    }
    j->emit_ms = (tc_now() - t1) * 1e3;
    return NULL;
}

/* ---- one PTX text from two modules ---- */

/* The line of s..end starting at p ends at the returned position (past '\n'). */
static const char *line_end(const char *p, const char *end)
{
    const char *q = memchr(p, '\n', (size_t)(end - p));
    return q ? q + 1 : end;
}

static bool starts(const char *p, const char *end, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(end - p) >= n && memcmp(p, w, n) == 0;
}

/* Does the line [p, e) occur as a whole line in s[0..n)? */
static bool has_line(const char *s, size_t n, const char *p, const char *e)
{
    size_t len = (size_t)(e - p);
    for (const char *q = s, *end = s + n; q < end; q = line_end(q, end))
        if ((size_t)(end - q) >= len && memcmp(q, p, len) == 0 && (q + len == end || q[len - 1] == '\n'))
            return true;
    return false;
}

/* Inserts s[0..n) into out at offset at. */
static void sb_insert(StrBuf *out, size_t at, const char *s, size_t n)
{
    size_t tail = out->len - at;
    sb_putn(out, s, n);   /* room for it */
    memmove(out->buf + at + n, out->buf + at, tail);
    memcpy(out->buf + at, s, n);
}

/* Where a module's PTX in s[0..n) ends its module-scope declarations: the
 * blank line before its first kernel (n when there is none). */
static size_t decls_end(const char *s, size_t n)
{
    for (const char *p = s, *end = s + n; p < end; p = line_end(p, end))
        if (starts(p, end, ".visible .entry") || starts(p, end, ".entry"))
            return p > s && p[-1] == '\n' && p - 1 > s && p[-2] == '\n' ? (size_t)(p - 1 - s) : (size_t)(p - s);
    return n;
}

/* b's PTX (its own header, module-scope declarations, then its kernels)
 * after out's, as one module would have printed them: b's header is
 * dropped; its declarations (and the backend's comments among them) join
 * out's, less the lines out's already has (tilec_dsmem, tilec_guard: the
 * same in every module of a compilation); its kernels follow out's, their
 * basic-block labels ($L__BB<function>_<block>, numbered per module)
 * counting on from out's nfn functions. */
bool cg_ptx_append(StrBuf *out, const char *b, size_t n, int nfn)
{
    const char *p = b, *end = b + n;
    while (p < end && !starts(p, end, ".address_size"))
        p = line_end(p, end);
    if (p == end)
        return false;
    p = line_end(p, end);
    size_t at = decls_end(out->buf, out->len);
    /* b's declarations go at the end of out's; the `// .globl` line of its
     * first kernel stays with the kernel */
    const char *globl = NULL, *globl_end = NULL;
    while (p < end && !starts(p, end, ".visible .entry") && !starts(p, end, ".entry")) {
        const char *e = line_end(p, end);
        if (starts(p, end, "\t// .globl")) {
            globl = p;
            globl_end = e;
        } else if (!(e - p == 1 && *p == '\n') && !has_line(out->buf, at, p, e)) {
            size_t len = (size_t)(e - p);
            sb_insert(out, at, p, len);
            at += len;
        }
        p = e;
    }
    if (globl)
        sb_putn(out, globl, (size_t)(globl_end - globl));
    while (p < end) {
        const char *q = p;
        while (q + 6 < end && memcmp(q, "$L__BB", 6) != 0)
            q++;
        if (q + 6 >= end) {
            sb_putn(out, p, (size_t)(end - p));
            break;
        }
        sb_putn(out, p, (size_t)(q - p) + 6);
        q += 6;
        long k = 0;
        while (q < end && *q >= '0' && *q <= '9')
            k = k * 10 + (*q++ - '0');
        sb_printf(out, "%ld", k + nfn);
        p = q;
    }
    return true;
}
