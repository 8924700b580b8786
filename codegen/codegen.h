/* codegen.h - Tile IR -> LLVM IR (LLVM C API) -> PTX through the NVPTX backend.
 *
 * Per-target differences live behind one struct of function pointers per
 * arch (Target, target_*.c); passes and the generic lowering never test the
 * arch by name.
 *
 * Kernel ABI (the runtime builds its argument array to match; grep
 * "ORDER ABI" before changing it):
 *   for each runtime param, in source order:
 *     tensor: ptr addrspace(1) data, then rank-1 i64 strides (in elements) for
 *             dims 0..rank-2; the innermost stride is 1 (checked at launch)
 *     scalar: the value in its dtype (f32 float, f64 double, i32, i64, bool as i8)
 *   then every named dim as i32, in the order of Func.dims.
 *
 * Kernel metadata (text, one record per line; docs/runtime.md is the reference):
 *   tilec-meta 1
 *   kernel <name>
 *   arch <sm_XX>
 *   threads <n>
 *   smem <dynamic shared bytes>
 *   cluster <x> <y> <z>
 *   dim <name>                                      (one per named dim, in ABI order)
 *   param <name> tensor <dtype> <rank> <d0> ... <dN-1> align <bytes>
 *                                                   (each d: a dim name or an integer)
 *   param <name> scalar <dtype>
 *   writes <name> ...                               (the tensor params the kernel stores
 *                                                    to, atomically adds to or scatters
 *                                                    into; none: an empty list)
 *   grid <rpn x> ; <rpn y> ; <rpn z>                (tokens: integers, dim names,
 *                                                    + - * / % cdiv min max)
 *   end
 */
#ifndef TILEC_CODEGEN_H
#define TILEC_CODEGEN_H

#include "../ir/ir.h"
#include "../target/target.h"

typedef struct CgOptions {
    const TargetInfo *target;   /* the resolved arch (tc_target) */
    int64_t smem_per_block;  /* option target.smem-per-block; 0 = the target's own */
    int opt_level;           /* 0..3 */
    bool want_llvm;          /* fill llvm_ir */
    bool want_ptx;           /* fill ptx */
    int debug_info;          /* tilec_debug_info: 0 none, 1 .loc/.file only, 2 line tables */
    const char *debug_dir;   /* the folder a relative source name is in (the .file path) */
} CgOptions;

typedef struct CgResult {
    StrBuf llvm_ir;          /* textual LLVM IR (after optimisation) */
    StrBuf ptx;              /* PTX text, all kernels of the module */
    StrBuf meta;             /* kernel metadata, all kernels */
    StrBuf report;           /* human-readable decisions (threads, layouts, ...) */
} CgResult;

/* Generate code for every kernel in m. Returns the number of errors
 * reported to d (0 = success). Caller frees the StrBufs in res. */
int cg_compile(Module *m, const CgOptions *o, CgResult *res, Diag *d, StrBuf *timing);

/* Does this build lower the target's instruction family? */
bool cg_target_supported(const TargetInfo *t);
/* "22.1.8" */
const char *cg_llvm_version(void);

#endif
