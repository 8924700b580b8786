/* pass_gate.h - per-compilation LLVM pass gate (pass_gate.cpp). */
#ifndef TILEC_PASS_GATE_H
#define TILEC_PASS_GATE_H

#include <llvm-c/Types.h>

typedef struct CgGate CgGate;

/* Install a gate on ctx (that context only); every pass runs until
 * cg_gate_skip names some. Free with cg_gate_free after the context. */
CgGate *cg_gate_new(LLVMContextRef ctx);
/* Skip the optional passes named in the comma-separated list from now on
 * (NULL or "": none). The string must outlive its use. */
void cg_gate_skip(CgGate *g, const char *names);
void cg_gate_free(CgGate *g);

#endif
