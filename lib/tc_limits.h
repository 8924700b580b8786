/* tc_limits.h - the limits that the compiler and the runtime share: one
 * table, so that whatever tilec emits, libtilert accepts. The compiler
 * checks each one with a located error before any work depends on it
 * (frontend/limits.c); the runtime's metadata parser and launch checks
 * (runtime/meta.c, runtime/grid.c) enforce the same numbers.
 *
 * Plain macros only: the runtime includes this file and depends on libc
 * alone. The public header include/tilert.h repeats five of them as
 * TILERT_MAX_*; runtime/meta.c asserts at compile time that they agree.
 * docs/language.md ("Limits") and docs/runtime.md list them for users.
 */
#ifndef TILEC_TC_LIMITS_H
#define TILEC_TC_LIMITS_H

#define TC_LIMIT_PARAMS 64              /* runtime params of one kernel */
#define TC_LIMIT_DIMS 64                /* named dims of one kernel */
#define TC_LIMIT_RANK 8                 /* dims of one tensor param */
#define TC_LIMIT_META_TOKENS 256        /* tokens on one metadata line: the grid
                                           record is `grid`, three RPN programs
                                           and two `;` */
#define TC_LIMIT_GRID_DEPTH 64          /* nesting of one grid rule's expression */
#define TC_LIMIT_STATIC_DIM 2147483647  /* a static tensor extent: 0 .. 2^31-1 */
#define TC_LIMIT_GRID_X 2147483647      /* blocks along x: 0 .. 2^31-1 */
#define TC_LIMIT_GRID_YZ 65535          /* blocks along y and z: 0 .. 65535 */
#define TC_LIMIT_TILE_ELEMS (1 << 18)   /* elements of one tile (2^20 took 3.6 s to
                                           compile a vector_add, 2^18 0.5 s) */
#define TC_LIMIT_PIPELINE 16            /* pipeline(N) depth */
#define TC_LIMIT_TMAPS 16               /* tensor maps (hidden 128-byte params) of one kernel */
#define TC_LIMIT_TMAP_RANK 5            /* dims of a tensor a tensor map describes (the hardware's) */
#define TC_LIMIT_TMAP_BOX 256           /* one box extent of a tensor map: 1 .. 256 */

#endif
