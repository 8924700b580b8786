/* cg_stub.c - placeholder until the NVPTX code generator lands: reports that
 * code generation is not available. Replaced by codegen/codegen.c. */
#include "codegen.h"

int cg_compile(Module *m, const CgOptions *o, CgResult *res, Diag *d, StrBuf *timing)
{
    (void)o; (void)res; (void)timing;
    diag_error(d, (Loc){ m->source_name, 0, 0 }, "code generation is not available in this build");
    return 1;
}

bool cg_arch_supported(const char *arch) { (void)arch; return false; }
const char *cg_llvm_version(void) { return "none"; }
