/* version.h - the build's version and git commit (lib/version.c), and the
 * stamps that carry them into the outputs. Internal to libtilec. */
#ifndef TILEC_LIB_VERSION_H
#define TILEC_LIB_VERSION_H

#include "util.h"

const char *tc_build_version(void);   /* "0.1.0" (CMake's project version) */
const char *tc_build_commit(void);    /* "420ef9f1a2b3", "...-dirty", or "" */

/* Insert `// tilec VERSION (git COMMIT)` into PTX after LLVM's leading
 * comment block, and a `compiler tilec VERSION COMMIT` record after the
 * metadata's `tilec-meta 1` header (docs/runtime.md). Either may be empty. */
void tc_stamp_ptx(StrBuf *ptx);
void tc_stamp_meta(StrBuf *meta);

#endif
