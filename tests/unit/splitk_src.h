/* splitk_src.h - the split-K product the atomic_add tests share (the
 * interpreter's in test_api.c, the PTX model's in test_ptx_bounds.c, the
 * GPU's in tests/gpu/gpu_atomic.c): every block adds the product of one K
 * slice, A[m0 : +BM, k0 : +BK] @ B[k0 : +BK, n0 : +BN], to C. */
#ifndef TILEC_TEST_SPLITK_SRC_H
#define TILEC_TEST_SPLITK_SRC_H

static const char splitk_src[] =
    "kernel splitk<BM: int = 64, BN: int = 64, BK: int = 64>(A: global bf16[M, K], B: global bf16[K, N],\n"
    "    C: global f32[M, N])\n"
    "  grid(cdiv(N, BN), cdiv(M, BM), cdiv(K, BK))\n"
    "{\n"
    "  let m0 = block.y * BM;\n"
    "  let n0 = block.x * BN;\n"
    "  let k0 = block.z * BK;\n"
    "  atomic_add(C[m0 : +BM, n0 : +BN], A[m0 : +BM, k0 : +BK] @ B[k0 : +BK, n0 : +BN]);\n"
    "}\n";

#endif
