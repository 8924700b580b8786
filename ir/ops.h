/* ops.h - every Tile IR op, one X-macro table.
 *
 * OP(ENUM, "name", nargs, nres, nregions, flags)
 *   nargs / nres / nregions: fixed count, or -1 for variadic (checked by the op's
 *   verifier hook; WS has one region per role)
 *   flags: OPF_PURE (no side effects: CSE/DCE may touch it), OPF_ELEM (elementwise:
 *   all operands and the result share one shape), OPF_TERM (terminates a block)
 *
 * The enum, the printer's names, the parser's name lookup and the verifier's
 * arity checks are all generated from this table (ir.c, print.c, parse.c,
 * verify.c). Attribute meaning per op is documented here and in docs/internals.md.
 *
 * ORDER OP: the interpreter's and codegen's switch statements must handle every op;
 * a missing case is an internal error at run time, and -Wswitch flags it.
 */
/* constants and values from the launch */
OP(CONST,     "const",     0,  1, 0, OPF_PURE)          /* ival / fval -> scalar or tile splat */
OP(BLOCKID,   "block_id",  0,  1, 0, OPF_PURE)          /* iattr[0] = axis 0..2 -> i32 */
OP(NBLOCKS,   "num_blocks",0,  1, 0, OPF_PURE)          /* iattr[0] = axis 0..2 -> i32 */
OP(NUMSMS,    "num_sms",   0,  1, 0, OPF_PURE)          /* the SM count of the device launched on -> i32; grid only */
/* elementwise arithmetic: operands of identical type (scalar or tile) */
OP(ADD,       "add",       2,  1, 0, OPF_PURE | OPF_ELEM)
OP(SUB,       "sub",       2,  1, 0, OPF_PURE | OPF_ELEM)
OP(MUL,       "mul",       2,  1, 0, OPF_PURE | OPF_ELEM)
OP(DIV,       "div",       2,  1, 0, OPF_PURE | OPF_ELEM)   /* ints: truncating */
OP(REM,       "rem",       2,  1, 0, OPF_PURE | OPF_ELEM)   /* ints: sign of dividend */
OP(MIN,       "min",       2,  1, 0, OPF_PURE | OPF_ELEM)
OP(MAX,       "max",       2,  1, 0, OPF_PURE | OPF_ELEM)
OP(DIVISOR,   "divisor",   2,  1, 0, OPF_PURE | OPF_ELEM)   /* ints: the largest divisor of a <= b (ir/divisor.h); grid only */
OP(AND,       "and",       2,  1, 0, OPF_PURE | OPF_ELEM)   /* bool or int */
OP(OR,        "or",        2,  1, 0, OPF_PURE | OPF_ELEM)
OP(XOR,       "xor",       2,  1, 0, OPF_PURE | OPF_ELEM)
OP(SHL,       "shl",       2,  1, 0, OPF_PURE | OPF_ELEM)   /* ints; a count >= the width gives 0 */
OP(SHR,       "shr",       2,  1, 0, OPF_PURE | OPF_ELEM)   /* ints: arithmetic if signed; a count >= the width gives 0 or -1 */
OP(POW,       "pow",       2,  1, 0, OPF_PURE | OPF_ELEM)   /* floats: a^b as C's pow */
OP(CMP,       "cmp",       2,  1, 0, OPF_PURE | OPF_ELEM)   /* iattr[0] = CmpPred; result bool */
OP(NEG,       "neg",       1,  1, 0, OPF_PURE | OPF_ELEM)
OP(NOT,       "not",       1,  1, 0, OPF_PURE | OPF_ELEM)   /* bool: logical; int: bitwise */
OP(ABS,       "abs",       1,  1, 0, OPF_PURE | OPF_ELEM)
OP(EXP,       "exp",       1,  1, 0, OPF_PURE | OPF_ELEM)
OP(EXP2,      "exp2",      1,  1, 0, OPF_PURE | OPF_ELEM)   /* iattr[0] = emu K (0: none): on an f32
                                                       tile, the elements whose last-dim index c has
                                                       (c / 8) % K == 0 are computed by tc_exp2_emu
                                                       (FMA units); set by the exp2_emu pass */
OP(LOG,       "log",       1,  1, 0, OPF_PURE | OPF_ELEM)
OP(LOG2,      "log2",      1,  1, 0, OPF_PURE | OPF_ELEM)
OP(SQRT,      "sqrt",      1,  1, 0, OPF_PURE | OPF_ELEM)
OP(RSQRT,     "rsqrt",     1,  1, 0, OPF_PURE | OPF_ELEM)
OP(TANH,      "tanh",      1,  1, 0, OPF_PURE | OPF_ELEM)
OP(ERF,       "erf",       1,  1, 0, OPF_PURE | OPF_ELEM)
OP(SIGMOID,   "sigmoid",   1,  1, 0, OPF_PURE | OPF_ELEM)   /* 1 / (1 + exp(-x)) */
OP(SIN,       "sin",       1,  1, 0, OPF_PURE | OPF_ELEM)
OP(COS,       "cos",       1,  1, 0, OPF_PURE | OPF_ELEM)
OP(FLOOR,     "floor",     1,  1, 0, OPF_PURE | OPF_ELEM)
OP(CEIL,      "ceil",      1,  1, 0, OPF_PURE | OPF_ELEM)
OP(ROUND,     "round",     1,  1, 0, OPF_PURE | OPF_ELEM)   /* to nearest, ties to even */
OP(SELECT,    "select",    3,  1, 0, OPF_PURE | OPF_ELEM)   /* cond(bool), a, b */
OP(CAST,      "cast",      1,  1, 0, OPF_PURE | OPF_ELEM)   /* to the result's dtype (RNE) */
/* shape ops */
OP(SPLAT,     "splat",     1,  1, 0, OPF_PURE)   /* scalar -> tile of the result type */
OP(EXPAND,    "expand",    1,  1, 0, OPF_PURE)   /* iattr[0] = axis: insert a size-1 dim */
OP(BROADCAST, "broadcast", 1,  1, 0, OPF_PURE)   /* size-1 dims stretched to the result shape */
OP(IOTA,      "iota",      0,  1, 0, OPF_PURE)   /* i32 tile; iattr[0] = axis along which the index grows */
OP(REDUCE,    "reduce",    1,  1, 0, OPF_PURE)   /* iattr[0] = axis, iattr[1] = ReduceKind; drops axis */
OP(TRANS,     "trans",     1,  1, 0, OPF_PURE)   /* 2-D transpose */
OP(SLICE,     "slice",     1,  1, 0, OPF_PURE)   /* list[d] = start along dim d; the result's extents
                                                   are the sizes: r[i] = x[starts + i], every
                                                   start + size within the operand's extent */
OP(CONCAT,    "concat",    2,  1, 0, OPF_PURE)   /* iattr[0] = axis: a then b along it; same dtype and
                                                   rank, the other extents equal */
OP(RESHAPE,   "reshape",   1,  1, 0, OPF_PURE)   /* the same elements in row-major order, another
                                                   shape of the same element count */
OP(SCAN,      "scan",      1,  1, 0, OPF_PURE)   /* iattr[0] = axis, iattr[1] = ReduceKind, iattr[2] = 1:
                                                   exclusive (element i combines 0..i-1; the first is the
                                                   kind's identity); the result has the operand's type */
OP(PHILOX,    "philox",    2,  1, 0, OPF_PURE)   /* seed (i64 scalar), offsets (i32/u32/i64/u64 scalar or
                                                   tile) -> u32 of the offsets' shape: word
                                                   (off & 3) of Philox4x32-10 (ir/philox.h) with
                                                   counter (lo(off >> 2), hi(off >> 2), 0, 0), hi 0
                                                   for 32-bit offsets, and key (lo(seed), hi(seed)) */
OP(DOT,       "dot",       3,  1, 0, OPF_PURE)   /* a[M,K] @ b[K,N] + acc[M,N]; acc/result f32 (or i32 for ints);
                                                   iattr[0] = MmaKind (mma_select; 0 = not chosen) */
/* memory: windows of global tensors
 *   LOAD  args: tensor, one i32 offset per tensor dim [, other]   result: tile (or scalar)
 *   STORE args: tensor, one i32 offset per tensor dim, value
 *   list[0..rank-1] = window extent per tensor dim (0 = a scalar index: the dim is dropped)
 *   iattr[0] = mask bits: bit d set = dim d may run past the tensor's bounds (needs a mask);
 *              set conservatively by the front end, cleared by the bounds pass
 *   iattr[1] = 1 if an `other` operand is present (LOAD); STORE: 1 (printed `tma`) if the
 *              tile, declared shared, leaves in one TMA store (the launch pass decides it for
 *              warp-specialized roles on sm_90; a store TMA cannot take keeps the other forms)
 *   ATOMIC_ADD args, list and iattr[0] as STORE; the tensor (and the value)
 *   f32, i32 or u32: adds each element of the value to its element of the
 *   window, atomically per element (relaxed, device scope: what many blocks
 *   add to one element all lands; for f32 in an unspecified order, each
 *   addition rounded to f32; integers wrap). Elements out of the tensor's
 *   bounds are skipped, as a store's. */
/* GATHER args: tensor, one i32 offset per tensor dim, the index tile [, other]
 *   SCATTER args: tensor, one i32 offset per tensor dim, the index tile, value
 *   As LOAD / STORE, except that along tensor dim iattr[2] (printed `dim`)
 *   element i of the window is at offset + index[i]: the index tile is a 1-D
 *   i32 or i64 tile of list[iattr[2]] elements. An index that puts the
 *   element outside the tensor masks it (reads `other` or 0; is not
 *   written) whatever the mask bits say; the other dims mask as LOAD's.
 *   SCATTER of one element twice (equal indices): one of the values lands
 *   (the interpreter: the last in row-major order). */
OP(LOAD,      "load",     -1,  1, 0, 0)
OP(STORE,     "store",    -1,  0, 0, 0)
OP(ATOMIC_ADD, "atomic_add", -1, 0, 0, 0)
OP(GATHER,    "gather",   -1,  1, 0, 0)
OP(SCATTER,   "scatter",  -1,  0, 0, 0)
/* shared memory and asynchronous copies (made by the double_buffer pass; the
 * front end never emits them). A shared buffer is a value of tile type in
 * space `shared` whose leading dim is the number of stages (slots):
 * tile<S x R x C x dt, shared>.
 *   SMEM_ALLOC   result: the buffer. iattr[0] = SwizzleMode (swizzle pass),
 *                iattr[1] = byte offset in the kernel's shared memory (-1 until
 *                smem_alloc assigns it), iattr[2] = alignment in bytes,
 *                iattr[3] = pad bytes per row (SWZ_PAD only)
 *   ASYNC_COPY   args: buffer, slot (i32), tensor, one i32 offset per tensor dim.
 *                list = window extents per tensor dim (as LOAD), iattr[0] = mask
 *                bits (as LOAD). Copies the window into buffer[slot]; elements
 *                out of the tensor's bounds are written as zero. Completes at
 *                the ASYNC_WAIT that retires its group.
 *   ASYNC_COMMIT closes the group of copies issued since the last commit.
 *   ASYNC_WAIT   iattr[0] = N: waits until at most N committed groups are pending.
 *   BARRIER      every thread of the block arrives before any continues.
 *   SMEM_LOAD    args: buffer, slot (i32) -> the slot's tile (register value)
 *   SMEM_STORE   args: buffer, slot (i32), value: writes the tile into the slot */
OP(SMEM_ALLOC,   "smem_alloc",   0,  1, 0, 0)
OP(ASYNC_COPY,   "async_copy",  -1,  0, 0, 0)
OP(ASYNC_COMMIT, "async_commit", 0,  0, 0, 0)
OP(ASYNC_WAIT,   "async_wait",   0,  0, 0, 0)
OP(BARRIER,      "barrier",      0,  0, 0, 0)
OP(SMEM_LOAD,    "smem_load",    2,  1, 0, 0)
OP(SMEM_STORE,   "smem_store",   3,  0, 0, 0)
/* the warp-level schedule: roles, barriers, asynchronous products (made by
 * the scheduling passes; the front end never emits them). Barriers live in
 * shared memory as a ring: tile<S x mbar, shared>, one 8-byte mbarrier per
 * slot. Ops on a barrier take (ring, slot): the ring an MBAR_ALLOC result,
 * the slot an i32 in 0..S-1.
 *   WS            one region per role, no operands, no results. list holds
 *                 (kind, warp groups, registers) per role (RoleKind; the
 *                 setmaxnreg budget per thread). Values never cross roles:
 *                 roles meet only through shared buffers and barriers.
 *   NAMED_BAR     iattr[0] = id 0..15, iattr[1] = threads (a multiple of
 *                 32), iattr[2] = NamedBarMode (sync waits, arrive does not)
 *   MBAR_ALLOC    result: the ring. iattr[0] = arrivals expected per phase,
 *                 iattr[1] = byte offset in the kernel's shared memory (-1
 *                 until smem_alloc assigns it; 8 bytes per slot, 8-aligned)
 *   MBAR_EXPECT   args: ring, slot. iattr[0] = transaction bytes; arrives
 *                 once and raises the phase's byte count (arrive.expect_tx)
 *   MBAR_ARRIVE   args: ring, slot. One arrival
 *   MBAR_WAIT     args: ring, slot, phase (i32 parity, loop-carried): blocks
 *                 until the phase of that parity has completed
 *   TMA_LOAD      args: buffer, slot, ring, ring slot, tensor, one i32 offset
 *                 per tensor dim; list / iattr[0] as LOAD. Copies the window
 *                 (the box) into buffer[slot] asynchronously; on landing it
 *                 completes the box's bytes on ring[ring slot]
 *   DOT_ASYNC     args: a, b, acc -> token. An asynchronous DOT; the
 *                 accumulator may not be used until its DOT_WAIT.
 *                 iattr[0] = MmaKind, as DOT
 *   DOT_WAIT      args: token -> the accumulator a@b+acc. iattr[0] = pending:
 *                 waits until at most that many of the role's products fly
 *   CONVERT_LAYOUT an explicit register layout change; the value is unchanged
 * Tensor memory (sm_100a's tcgen05): an accumulator lives in the SM's
 * tensor memory, written by products one thread issues and read back into
 * registers once a barrier says the products are done.
 *   TMEM_ALLOC    result: tile<M x N x T, tmem>, M a multiple of 128, T f32
 *                 (an accumulator) or bf16/f16 (a product's A operand, two
 *                 elements a 32-bit column): its 128-row blocks side by side
 *                 in columns (block i at columns column + i C, C = N for
 *                 f32, N / 2 for 16-bit; ir_tmem_cols). iattr[0] = first column, iattr[2] = columns
 *                 the kernel allocates (a power of two 32..512), both 0 until
 *                 smem_alloc plans them; iattr[1] = byte offset of the 8-byte
 *                 shared word the allocation writes its address to (-1
 *                 until smem_alloc places it)
 *   TC_MMA        args: a, b (slot reads, as DOT_ASYNC's; a may instead be
 *                 16-bit tensor memory: the A operand read in place), tmem,
 *                 accumulate (bool): tmem = a @ b, plus tmem's value when
 *                 accumulate.
 *                 Asynchronous: a role's products run in issue order and
 *                 its next TC_COMMIT tracks them. iattr[0] = MmaKind
 *   TC_COMMIT     args: ring, slot: one arrival on ring[slot], made once
 *                 every TC_MMA the role issued before it has completed (its
 *                 operands read, its accumulator written)
 *   TMEM_LOAD     args: tmem -> tile<M x N x T, reg>: the accumulator, read
 *                 by a role that waited on a barrier phase a TC_COMMIT after
 *                 the last TC_MMA into it completed
 *   TMEM_STORE    args: tmem, value (tile<M x N x T, reg>): writes tensor
 *                 memory from registers, done when the op is (the storing
 *                 threads wait for it). A TC_MMA that reads or writes it
 *                 afterwards must be ordered after the store by a barrier
 *                 the storing role arrives on; a store after a TC_MMA that
 *                 reads or writes it, after that product's TC_COMMIT */
OP(WS,           "ws",           0,  0, -1, 0)
OP(NAMED_BAR,    "named_bar",    0,  0, 0, 0)
OP(MBAR_ALLOC,   "mbar_alloc",   0,  1, 0, 0)
OP(MBAR_EXPECT,  "mbar_expect",  2,  0, 0, 0)
OP(MBAR_ARRIVE,  "mbar_arrive",  2,  0, 0, 0)
OP(MBAR_WAIT,    "mbar_wait",    3,  0, 0, 0)
OP(TMA_LOAD,     "tma_load",    -1,  0, 0, 0)
OP(DOT_ASYNC,    "dot_async",    3,  1, 0, 0)
OP(DOT_WAIT,     "dot_wait",     1,  1, 0, 0)
OP(CONVERT_LAYOUT, "convert_layout", 1, 1, 0, OPF_PURE)
OP(TMEM_ALLOC,   "tmem_alloc",   0,  1, 0, 0)
OP(TC_MMA,       "tc_mma",       4,  0, 0, 0)
OP(TC_COMMIT,    "tc_commit",    2,  0, 0, 0)
OP(TMEM_LOAD,    "tmem_load",    1,  1, 0, 0)
OP(TMEM_STORE,   "tmem_store",   2,  0, 0, 0)
/* structured control flow
 *   FOR args: lo, hi, step, inits...; results: finals...; region 0 args: iv, carried...
 *       iattr[0] = pipeline stages requested (0 = no hint)
 *   IF  args: cond; results...; region 0 = then, region 1 = else; both end in YIELD */
OP(FOR,       "for",      -1, -1, 1, 0)
OP(IF,        "if",        1, -1, 2, 0)
OP(YIELD,     "yield",    -1,  0, 0, OPF_TERM)
