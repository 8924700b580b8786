"""gemm_ab.py - A/B of GEMM kernels (PTX + .meta, called as mod(a, b, c)
with a: M x K, b: K x N, c: M x N, bf16) in one process: each checked
against a float32 reference on fresh inputs (the output poisoned with NaN
first) at the timed shapes and at ragged ones, then timed interleaved with
torch.matmul (cuBLAS) over R rounds in a new random order each round;
prints each kernel's mean TFLOP/s and its ratio to cuBLAS per round
(median, range).

usage: python3 gemm_ab.py R "M N K" [...] -- A.ptx B.ptx ...
       python3 gemm_ab.py --check "M N K" [...] -- A.ptx ...  (no timing)
On the GPU machine: TILEC_LIB_DIR (libtilert) and PYTHONPATH=python, as
bench/runtime.sh sets them."""
import sys, torch
sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../python")
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import tilec
from timing import ab_args, interleaved

check_only, rounds, shapes, kernels = ab_args(sys.argv[1:], tilec.load_files)
bad = 0
ragged = [(1, 1, 1), (17, 1000, 4096), (1000, 17, 128), (4096, 1000, 1000), (129, 257, 65)]
for M, N, K in ragged + shapes:
    a = torch.randn(M, K, device="cuda").bfloat16()
    b = torch.randn(K, N, device="cuda").bfloat16()
    ref = a.float() @ b.float()
    for name, k in kernels:
        c = torch.full((M, N), float("nan"), device="cuda").bfloat16()
        k(a, b, c); torch.cuda.synchronize()
        rel = (c.float() - ref).norm().item() / max(ref.norm().item(), 1e-30)
        ok = rel <= 1e-2 and not torch.isnan(c.float()).any().item()
        bad += not ok
        print(f"{name:24s} {M}x{N}x{K}: rel {rel:.2e} {'OK' if ok else 'FAIL'}", flush=True)
if check_only:
    sys.exit(1 if bad else 0)
for M, N, K in shapes:
    a = torch.randn(M, K, device="cuda").bfloat16()
    b = torch.randn(K, N, device="cuda").bfloat16()
    c = torch.empty(M, N, device="cuda").bfloat16()
    fns = [(n, (lambda k=k: k(a, b, c))) for n, k in kernels] + [("cuBLAS", lambda: torch.matmul(a, b))]
    interleaved(fns, rounds, "cuBLAS", 2.0 * M * N * K, f"{M}x{N}x{K}", 24)
sys.exit(1 if bad else 0)
