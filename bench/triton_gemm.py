"""triton_gemm.py - the Triton GEMM kernel that bench/triton_mma.py times
(held to mma.sync there) and bench/autotune.py hands to Triton's autotune
(with its own configurations). Grouped tile order, no masks: M, N and K
must be multiples of the tile. Importing this module sets nothing in the
environment: a caller that wants DISABLE_MMA_V3 sets it first."""
import triton
import triton.language as tl


@triton.jit
def gemm(a, b, c, M, N, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
         GROUP: tl.constexpr):
    pid = tl.program_id(0)
    nbn = tl.cdiv(N, BN)
    width = GROUP * nbn
    first = (pid // width) * GROUP
    rows = min(tl.cdiv(M, BM) - first, GROUP)
    pm = first + (pid % width) % rows
    pn = (pid % width) // rows
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    pa = a + om[:, None] * sam + ok[None, :]
    pb = b + ok[:, None] * sbk + on[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(pa), tl.load(pb))
        pa += BK
        pb += BK * sbk
    tl.store(c + om[:, None] * scm + on[None, :], acc.to(tl.bfloat16))
