/* tilec.h - the public API of libtilec, the tile-language compiler.
 *
 * If a function does not appear in this file, it is not a published API.
 *
 * Conventions:
 *  - Every function returning tilec_status returns TILEC_OK (0) on success.
 *  - Handles are opaque. Every *_create / compile has a matching *_free;
 *    passing NULL to a *_free function is a no-op.
 *  - Strings returned by accessors are owned by the handle they came from and
 *    stay valid until that handle is freed. The caller never frees them.
 *  - Separate handles may be used from separate threads at the same time; one
 *    handle must not be used from two threads at once. The library's one
 *    global mutable state is the compile cache's in-memory table (under a
 *    mutex; tilec_options.cache), and it changes none of LLVM's: the
 *    NVPTX backend passes it skips (docs/codegen.md, "Compile time of
 *    tensor-core kernels") are skipped through a pass gate on each
 *    compilation's own LLVMContext, so other users of the same shared
 *    libLLVM in the process are not affected. Nothing in the library reads
 *    the environment: every setting comes through tilec_options (the
 *    ptxas it runs, tilec_options.ptxas, inherits the process's
 *    environment as any program started does).
 */
#ifndef TILEC_H
#define TILEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TILEC_VERSION_MAJOR 0
#define TILEC_VERSION_MINOR 1
#define TILEC_VERSION_PATCH 0

typedef enum tilec_status {
    TILEC_OK = 0,
    TILEC_ERR_INPUT = 1,      /* the source has errors: see the diagnostics */
    TILEC_ERR_USAGE = 2,      /* bad options (unknown arch, bad define, NULL argument) */
    TILEC_ERR_IO = 3,         /* a file could not be read */
    TILEC_ERR_NOMEM = 4,      /* out of memory: nothing the call allocated is left; *out is NULL */
    TILEC_ERR_INTERNAL = 5,   /* a compiler bug: the diagnostics say where */
    TILEC_ERR_UNSUPPORTED = 6 /* valid input that this version cannot compile for the target */
} tilec_status;

/* How far to go: each stage runs the ones before it (only its own text is
 * kept as an output, see tilec_output). */
typedef enum tilec_emit {
    TILEC_EMIT_TOKENS = 0,    /* the token stream, one per line */
    TILEC_EMIT_AST = 1,       /* the parsed AST */
    TILEC_EMIT_TIR = 2,       /* Tile IR after the pass pipeline */
    TILEC_EMIT_LLVM = 3,      /* LLVM IR */
    TILEC_EMIT_PTX = 4        /* PTX text and kernel metadata (default) */
} tilec_emit;

/* The compile cache (docs/cache.md): a compilation whose inputs match an
 * earlier one returns that one's outputs and diagnostics without compiling.
 * The key hashes the source, its name, the defines, the arch, every option
 * that changes the output (with line info, the working directory of a
 * relative source name) and the compiler's
 * version (tilec_version(), with its git commit). Only PTX compilations
 * without print_after, time_passes, report or keep_ir are cached, and
 * only successful ones. */
typedef enum tilec_cache_mode {
    TILEC_CACHE_OFF = 0,      /* compile every time (the default) */
    TILEC_CACHE_MEMORY = 1,   /* keep results in this process's memory (shared by its threads) */
    TILEC_CACHE_DISK = 2      /* memory, and one file per entry under cache_dir, shared by
                                 processes: written to a temporary file and renamed into place */
} tilec_cache_mode;

/* Warnings (docs/language.md, "Warnings"), one bit each; every one is on
 * unless its bit is in tilec_options.warnings_off. The i-th of
 * tilec_warning_name() is bit 1 << i. */
typedef enum tilec_warning {
    TILEC_WARN_UNUSED_PARAM = 1,  /* -Wunused-param: a tensor or scalar param the body never names */
    TILEC_WARN_DEAD_TILE = 2,     /* -Wdead-tile: a tile or let whose value is never read */
    TILEC_WARN_STORE_RACE = 4,    /* -Wstore-race: a store whose window is the same for the blocks
                                     along a grid axis of more than one block */
    TILEC_WARN_ALL = 7
} tilec_warning;

/* Line information in the PTX (.file / .loc directives naming .tile lines,
 * for Nsight Compute, cuda-gdb and compute-sanitizer). */
typedef enum tilec_debug_info {
    TILEC_DEBUG_NONE = 0,     /* the default */
    TILEC_DEBUG_LINES = 1,    /* -lineinfo: line tables only; the code is unchanged */
    TILEC_DEBUG_FULL = 2      /* -g: the same line tables (tilec emits no variable info) */
} tilec_debug_info;

typedef struct tilec_define {
    const char *name;         /* a compile-time param of the kernel */
    const char *value;        /* "64", "true", "1.5", "bf16" */
} tilec_define;

typedef struct tilec_options {
    size_t struct_size;       /* set by tilec_options_init: sizeof(tilec_options) */
    const char *arch;         /* "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a",
                                 "sm_100f", "sm_120";
                                 NULL = "sm_90a". sm_90 and sm_100 pick the fast
                                 arch-specific target (reported as a remark). */
    int family_portable;      /* nonzero: sm_100 gives family-portable sm_100f, sm_90 plain sm_90 */
    int opt_level;            /* 0..3, default 3 */
    tilec_emit emit;          /* default TILEC_EMIT_PTX */
    const tilec_define *defines; size_t ndefines;
    const char *const *print_after; size_t nprint_after;  /* pass names, or "*" for all */
    int time_passes;          /* nonzero: collect per-pass timing */
    int print_locs;           /* nonzero: Tile IR text carries loc(line:col) */
    int verify_each;          /* default 1: run the IR verifier between passes */
    int report;               /* nonzero: collect the decisions report */
    /* Fields below were added after 0.1.0's first layout; struct_size tells
     * the library whether a caller's struct has them. */
    const char *passes;       /* comma-separated subset of the pipeline to run (in
                                 table order); NULL = all passes, "" = none */
    const char *language;     /* "tile" or "tir"; NULL = by the name's extension
                                 (".tir" -> Tile IR text, anything else -> tile) */
    const char *pass_options; /* typed pass options: "NAME=VALUE,..." with the
                                 names `tilec --help` lists and docs/internals.md
                                 ("Pass options") describes, e.g.
                                 "target.smem-per-block=200704". NULL = none.
                                 An unknown name or a value of the wrong type or
                                 out of range is a usage error. */
    tilec_cache_mode cache;   /* default TILEC_CACHE_OFF */
    const char *cache_dir;    /* the folder of TILEC_CACHE_DISK, created when missing; required
                                 with it (a usage error without: the library has no default;
                                 the tilec command and the Python package give
                                 $XDG_CACHE_HOME/tilec, else $HOME/.cache/tilec) */
    const char *dims;         /* sizes the kernel will be launched with, for named dims:
                                 "N=4096,NK=4096" (`--dim N=4096`). The compiler
                                 chooses tile sizes and the launch schedule for
                                 them (docs/language.md, "What the compiler
                                 decides"); the kernel stays correct for every
                                 size. NULL = none known. */
    unsigned warnings_off;    /* tilec_warning bits not reported (-Wno-NAME); default 0 */
    int warnings_as_errors;   /* nonzero: warnings are errors (-Werror); default 0 */
    tilec_debug_info debug_info; /* default TILEC_DEBUG_NONE */
    int keep_ir;              /* nonzero: the result keeps the kernels' Tile IR after the passes,
                                 for tilec_interpret; such a compilation neither reads nor
                                 fills the cache. Any emit from TILEC_EMIT_TIR on. */
    const char *ptxas;        /* a ptxas program to check the PTX with, or NULL (the
                                 default: no check). With it, a compilation that
                                 produced PTX runs `PTXAS -arch=ARCH -v` on it; if
                                 ptxas rejects the PTX, the compilation fails with
                                 TILEC_ERR_INTERNAL, an error quoting ptxas's first
                                 error line, and no PTX or metadata output. A path
                                 that is not an executable file is a usage error.
                                 --report reuses this run, and without the check (NULL,
                                 or ptxas_no_check) the report runs this ptxas itself
                                 or says that registers are unknown. The library looks
                                 for no ptxas: the tilec command's default is the first
                                 of $TILEC_PTXAS, ptxas on $PATH and
                                 /usr/local/cuda/bin/ptxas that exists. */
    int ptxas_no_check;       /* nonzero: ptxas serves the report only; the PTX is not checked
                                 (`tilec --no-ptxas --report`); default 0 */
} tilec_options;

void tilec_options_init(tilec_options *opts);

typedef struct tilec_result tilec_result;

/* Compile a file / an in-memory source. On return *out is always set (also on
 * error, so that diagnostics can be read) unless out is NULL or memory ran
 * out; the caller owns it and must call tilec_result_free. `name` labels the
 * source in diagnostics and may be NULL ("<string>"). */
tilec_status tilec_compile_file(const char *path, const tilec_options *opts,
                                tilec_result **out);
tilec_status tilec_compile_string(const char *name, const char *src, size_t len,
                                  const tilec_options *opts, tilec_result **out);
void tilec_result_free(tilec_result *r);

tilec_status tilec_result_status(const tilec_result *r);

/* Outputs. NULL if that output was not produced (not requested, or an error
 * stopped compilation before it). Owned by r. A compilation produces the
 * text of the stage `emit` names (the stages before it are not printed:
 * that would cost time), plus META with PTX, DUMP with print_after, TIMING
 * with time_passes and REPORT with report. */
typedef enum tilec_output {
    TILEC_OUT_TOKENS = 0, TILEC_OUT_AST, TILEC_OUT_TIR, TILEC_OUT_LLVM, TILEC_OUT_PTX,
    TILEC_OUT_META,           /* kernel metadata text (docs/runtime.md) */
    TILEC_OUT_DUMP,           /* --print-after output */
    TILEC_OUT_TIMING,         /* --time-passes table: per stage, wall and thread-CPU ms */
    TILEC_OUT_REPORT          /* decisions report */
} tilec_output;
const char *tilec_result_text(const tilec_result *r, tilec_output which);

/* The target actually compiled for, e.g. "sm_90a". Owned by r. */
const char *tilec_result_arch(const tilec_result *r);

/* Diagnostics as records and as rendered text. */
typedef enum tilec_severity {
    TILEC_SEV_ERROR = 0, TILEC_SEV_WARNING = 1, TILEC_SEV_NOTE = 2, TILEC_SEV_REMARK = 3
} tilec_severity;
typedef struct tilec_diag {
    tilec_severity severity;
    const char *file;         /* owned by the result */
    int line, col;            /* 1-based; 0 if unknown */
    const char *message;      /* owned by the result */
} tilec_diag;
size_t tilec_result_num_diags(const tilec_result *r);
const tilec_diag *tilec_result_diag(const tilec_result *r, size_t i);   /* NULL if out of range */
/* `file:line:col: error: msg` + source line + caret, for all diagnostics. */
const char *tilec_result_diag_text(const tilec_result *r);

/* Where r came from: TILEC_CACHE_OFF (compiled by this call),
 * TILEC_CACHE_MEMORY or TILEC_CACHE_DISK (a cache hit). */
tilec_cache_mode tilec_result_cache(const tilec_result *r);

/* Empty this process's memory cache and delete the cache entries (and
 * leftover temporary files, and the tuning decisions libtilert keeps there:
 * tilert_tune_store) in the folder `dir` (NULL: the memory cache only);
 * other files there are left alone. TILEC_OK also when the folder
 * does not exist; TILEC_ERR_IO when it cannot be read or an entry not
 * removed. */
tilec_status tilec_cache_clear(const char *dir);

const char *tilec_status_string(tilec_status s);
const char *tilec_version(void);     /* "0.1.0 (git 420ef9f1a2b3, LLVM 22.1.8)"; the
                                        git part only when built from a git checkout */
const char *tilec_commit(void);      /* "420ef9f1a2b3" ("-dirty.HASH" appended when built with
                                        uncommitted changes, HASH from them), or "" when not
                                        built from git */

/* The passes of the pipeline in order: name and one-line summary. */
size_t tilec_num_passes(void);
const char *tilec_pass_name(size_t i);
const char *tilec_pass_summary(size_t i);

/* ---- the interpreter mode (docs/python.md, "Interpreter mode") ----
 * Runs a kernel of a result compiled with keep_ir on host memory, in the
 * IR interpreter (the compiler's semantic reference; ir/interp*.c), block
 * by block over the whole grid: no GPU, no driver. Slow (meant for small
 * shapes and debugging). */
typedef struct tilec_arg {
    void *data;               /* tensor: its first element, in host memory, elements in the
                                 dtype's storage (bf16/f16 as 16-bit patterns, fp8 as bytes,
                                 bool as bytes); written in place by stores */
    int rank;                 /* tensor: the number of dims (0 for a scalar param) */
    const int64_t *shape;     /* tensor: rank extents */
    const int64_t *strides;   /* tensor: rank strides in elements; NULL = contiguous row-major */
    const char *dtype;        /* tensor: "f32", "bf16", ... checked against the param; NULL =
                                 not checked */
    double f;                 /* scalar param of a float dtype */
    int64_t i;                /* scalar param of an int dtype or bool */
} tilec_arg;

/* Run kernel `kernel` (NULL: the result's only kernel) of `compiled` with
 * args[0..nargs) in param order. The launch checks are the runtime's
 * (the count, each tensor's rank, dtype, static extents, named dims that
 * agree, positive strides with the innermost 1, no NULL data), then the
 * grid is evaluated and every block runs. *out (when not NULL) receives a
 * result holding the diagnostics (errors name the argument, or the op and
 * source line where the kernel failed: a division by zero, an access out of
 * a tensor's bounds). Returns TILEC_OK; TILEC_ERR_USAGE for a result
 * without IR (not compiled with keep_ir, or failed), an unknown kernel or
 * arguments the checks refuse; TILEC_ERR_INPUT when the kernel fails while
 * running. Tensors are written as the kernel's stores go, so a failed run
 * may leave them partly written. */
tilec_status tilec_interpret(const tilec_result *compiled, const char *kernel, const tilec_arg *args,
                             size_t nargs, tilec_result **out);

/* The kernels of a result compiled with keep_ir (0 without IR), and each
 * kernel's runtime params in order: name, dtype ("f32", "bf16", ...) and
 * rank (0 for a scalar param). Strings owned by r; NULL / 0 / nonzero
 * return for out-of-range indexes. */
size_t tilec_result_num_kernels(const tilec_result *r);
const char *tilec_result_kernel_name(const tilec_result *r, size_t kernel);
size_t tilec_result_kernel_num_params(const tilec_result *r, size_t kernel);
int tilec_result_kernel_param(const tilec_result *r, size_t kernel, size_t param, const char **name,
                              const char **dtype, int *rank);

/* ---- autotuning: the tile choice's candidates (docs/internals.md, "Candidates") ----
 * The tile sizes the compiler would weigh for the `= auto` params of the
 * file's first kernel that has some left to choose (no define pins them),
 * for opts' arch, defines, dims and pass options: the compiler's own choice
 * first, then the other tiles its rule considers that fit the target (at
 * most 6). A runtime times them on the device (tilert_tune) and compiles
 * the fastest with the pass option tiles.candidate=I; candidate I compiled
 * that way is the file compiled with the defines the list gives. Nothing
 * is compiled to PTX and nothing is cached; the source is lowered once, so
 * its errors are reported as by tilec_compile_* (*out as there). A kernel
 * without such params (or Tile IR input) has one candidate, "" (the kernel
 * as written). TILEC_OUT_REPORT holds the choice's reasons. */
tilec_status tilec_candidates_file(const char *path, const tilec_options *opts, tilec_result **out);
tilec_status tilec_candidates_string(const char *name, const char *src, size_t len,
                                     const tilec_options *opts, tilec_result **out);
/* The number of candidates of a tilec_candidates_* result (0 for any other
 * result, or one that failed), and candidate i as the defines it stands for,
 * "BM=128,BN=64" (param names in the kernel's order); NULL out of range.
 * Owned by r. */
size_t tilec_result_num_candidates(const tilec_result *r);
const char *tilec_result_candidate(const tilec_result *r, size_t i);

/* The warnings, in bit order: name ("unused-param", as in -Wunused-param)
 * and what it reports. NULL past the end. Static strings. */
size_t tilec_num_warnings(void);
const char *tilec_warning_name(size_t i);
const char *tilec_warning_help(size_t i);

/* The typed pass options (tilec_options.pass_options), in table order:
 * name ("target.smem-per-block"), value type ("bytes", "int") and what it
 * does. NULL past the end. Static strings. */
size_t tilec_num_pass_options(void);
const char *tilec_pass_option_name(size_t i);
const char *tilec_pass_option_type(size_t i);
const char *tilec_pass_option_help(size_t i);

#ifdef __cplusplus
}
#endif
#endif
