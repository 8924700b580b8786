// pass_gate.cpp - which LLVM passes run, per compilation: the one piece of
// the code generator that LLVM's C API cannot express, so it is C++.
//
// Needs: a compilation's own LLVMContext.
// Guarantees: cg_gate_new installs a pass gate on that context only (an
// llvm::OptPassGate, the hook behind LLVM's -opt-disable): while a skip list
// is set, an optional pass whose name is in it does not run; with no list
// every pass runs. Other contexts, and other users of the same libLLVM in
// the process, never see it. The gate outlives the context (free it after
// LLVMContextDispose).
//
// The names are the passes' pipeline names ("early-cse", "slsr", as LLVM's
// -opt-bisect-limit lists them); "NAME#K" names only the
// K-th run of NAME on the same IR unit (a function), so "early-cse#2"
// keeps a pipeline's first early-cse and skips its second. The code
// generator sets one list for the backend's run (codegen.c).
#include <llvm-c/Core.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/OptBisect.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

extern "C" {
#include "pass_gate.h"
}

namespace {

class Gate final : public llvm::OptPassGate {
public:
    const char *skip = nullptr;   // comma-separated names, or none
    mutable std::map<std::string, int> runs;   // pass@unit -> runs so far

    bool isEnabled() const override { return true; }

    bool shouldRunPass(llvm::StringRef pass, llvm::StringRef ir) const override
    {
        // The K-th run of this pass on this IR unit (counted while a list is set).
        int k = skip ? ++runs[(pass + "@" + ir).str()] : 0;
        char nth[160];
        std::snprintf(nth, sizeof nth, "%.*s#%d", (int)pass.size(), pass.data(), k);
        return !listed(pass) && !listed(nth);
    }

private:
    bool listed(llvm::StringRef pass) const
    {
        if (!skip)
            return false;
        for (const char *p = skip; *p;) {
            const char *e = std::strchr(p, ',');
            size_t n = e ? (size_t)(e - p) : std::strlen(p);
            if (n && pass == llvm::StringRef(p, n))
                return true;
            if (!e)
                break;
            p = e + 1;
        }
        return false;
    }
};

}  // namespace

struct CgGate {
    Gate gate;
};

extern "C" CgGate *cg_gate_new(LLVMContextRef ctx)
{
    CgGate *g = new CgGate();
    llvm::unwrap(ctx)->setOptPassGate(g->gate);
    return g;
}

extern "C" void cg_gate_skip(CgGate *g, const char *names)
{
    g->gate.skip = names && *names ? names : nullptr;
    g->gate.runs.clear();
}

extern "C" void cg_gate_free(CgGate *g) { delete g; }
