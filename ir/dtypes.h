/* dtypes.h - the element types, one X-macro table.
 * DTYPE(ENUM, "spelling", bits, class)   class: B bool, I signed, U unsigned, F float,
 * O opaque (IR-only handles: no arithmetic, not a language or runtime dtype)
 * ORDER DTYPE: the runtime's metadata and the Python package use these
 * spellings; grep "ORDER DTYPE" if you change the table. */
DTYPE(BOOL,   "bool",    8, B)
DTYPE(I8,     "i8",      8, I)
DTYPE(I16,    "i16",    16, I)
DTYPE(I32,    "i32",    32, I)
DTYPE(I64,    "i64",    64, I)
DTYPE(U8,     "u8",      8, U)
DTYPE(U16,    "u16",    16, U)
DTYPE(U32,    "u32",    32, U)
DTYPE(U64,    "u64",    64, U)
DTYPE(F16,    "f16",    16, F)
DTYPE(BF16,   "bf16",   16, F)
DTYPE(F32,    "f32",    32, F)
DTYPE(F64,    "f64",    64, F)
DTYPE(F8E4M3, "f8e4m3",  8, F)
DTYPE(F8E5M2, "f8e5m2",  8, F)
DTYPE(MBAR,   "mbar",   64, O)   /* one mbarrier in shared memory */
DTYPE(TOKEN,  "token",  32, O)   /* an asynchronous product in flight */
