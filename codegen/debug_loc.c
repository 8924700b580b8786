/* debug_loc.c - line information in the PTX (-lineinfo, -g): LLVM debug
 * info through the DIBuilder of the C API, which the NVPTX back end turns
 * into `.file` and `.loc` directives naming the .tile lines.
 *
 * One compile unit per module, its file the source the IR came from (a
 * relative name is completed with CgOptions.debug_dir); one subprogram per
 * kernel at the kernel's line; before each op is lowered (simt_control.c,
 * lower_op) the builder's current location becomes the op's, so every
 * instruction the op emits carries its line and column. Ops without a
 * position keep the one before them.
 *
 * Emission: -lineinfo asks for directives only (what nvcc -lineinfo emits:
 * `.loc`/`.file`, no DWARF sections, code unchanged); -g for line tables
 * (the same directives plus the .debug_* sections NVPTX writes for them).
 * Neither describes variables. */
#include "cg_internal.h"

#include <llvm-c/DebugInfo.h>
#include <string.h>

/* LLVM's DICompileUnit::DebugDirectivesOnly; the C enum stops at
 * LLVMDWARFEmissionLineTablesOnly and the value is passed through as is. */
#define EMISSION_DIRECTIVES_ONLY ((LLVMDWARFEmissionKind)3)

struct CgDebug {
    LLVMDIBuilderRef dib;
    LLVMMetadataRef file, cu, fnty, sp;
};

void cg_debug_begin(Cg *cg, const char *source, const char *dir, int level)
{
    if (level <= 0)
        return;
    CgDebug *g = arena_alloc(cg->a, sizeof *g);
    const char *name = source && *source ? source : "<string>";
    if (name[0] == '/' || !dir)
        dir = "";
    g->dib = LLVMCreateDIBuilder(cg->mod);
    g->file = LLVMDIBuilderCreateFile(g->dib, name, strlen(name), dir, strlen(dir));
    static const char producer[] = "tilec";
    g->cu = LLVMDIBuilderCreateCompileUnit(g->dib, LLVMDWARFSourceLanguageC, g->file, producer, sizeof producer - 1,
                                           1, "", 0, 0, "", 0,
                                           level >= 2 ? LLVMDWARFEmissionLineTablesOnly : EMISSION_DIRECTIVES_ONLY,
                                           0, 0, 0, "", 0, "", 0);
    g->fnty = LLVMDIBuilderCreateSubroutineType(g->dib, g->file, NULL, 0, LLVMDIFlagZero);
    LLVMValueRef ver = LLVMConstInt(cg->t_i32, LLVMDebugMetadataVersion(), 0);
    LLVMAddModuleFlag(cg->mod, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18, LLVMValueAsMetadata(ver));
    LLVMValueRef dwarf = LLVMConstInt(cg->t_i32, 2, 0);
    LLVMAddModuleFlag(cg->mod, LLVMModuleFlagBehaviorWarning, "Dwarf Version", 13, LLVMValueAsMetadata(dwarf));
    cg->dbg = g;
}

void cg_debug_kernel(Cg *cg, const Func *f)
{
    CgDebug *g = cg->dbg;
    if (!g)
        return;
    unsigned line = f->loc.line > 0 ? (unsigned)f->loc.line : 1;
    g->sp = LLVMDIBuilderCreateFunction(g->dib, g->file, f->name, strlen(f->name), f->name, strlen(f->name), g->file,
                                        line, g->fnty, 0, 1, line, LLVMDIFlagPrototyped, 1);
    LLVMSetSubprogram(cg->fn, g->sp);
    LLVMSetCurrentDebugLocation2(cg->b, LLVMDIBuilderCreateDebugLocation(cg->ctx, line, 0, g->sp, NULL));
}

void cg_debug_loc(Cg *cg, Loc loc)
{
    CgDebug *g = cg->dbg;
    if (!g || !g->sp || loc.line <= 0)
        return;
    LLVMMetadataRef l = LLVMDIBuilderCreateDebugLocation(cg->ctx, (unsigned)loc.line,
                                                         loc.col > 0 ? (unsigned)loc.col : 0, g->sp, NULL);
    LLVMSetCurrentDebugLocation2(cg->b, l);
}

void cg_debug_kernel_end(Cg *cg)
{
    CgDebug *g = cg->dbg;
    if (!g || !g->sp)
        return;
    LLVMSetCurrentDebugLocation2(cg->b, NULL);
    LLVMDIBuilderFinalizeSubprogram(g->dib, g->sp);
    g->sp = NULL;
}

void cg_debug_drop(Cg *cg)
{
    if (cg->dbg)
        LLVMDisposeDIBuilder(cg->dbg->dib);
    cg->dbg = NULL;
}

void cg_debug_end(Cg *cg)
{
    CgDebug *g = cg->dbg;
    if (!g)
        return;
    LLVMDIBuilderFinalize(g->dib);
    LLVMDisposeDIBuilder(g->dib);
    cg->dbg = NULL;
}
