"""gemm_ab.py - A/B of GEMM kernels (PTX + .meta), with and without a bias
+ GELU epilogue, in one process. A kernel of three tensor params is called as
mod(x, w, y) (y = x @ w), one of four as mod(x, w, b, y) with
y = gelu(x @ w + b) in the sigmoid form z * sigmoid(1.702 z) (b f32 [N]),
as tests/perf/gemm_bias_gelu.tile and tests/perf/gemm_epilogue.tile compute it.
Each is checked against a float32 reference on fresh inputs (the output
poisoned with NaN first) at the timed shapes and at ragged ones, then timed
interleaved with torch.matmul (cuBLAS) over R rounds in a new random order
each round; prints each kernel's mean TFLOP/s and its ratio to cuBLAS per
round (median, range): ratios of two kernels to each other are the ratios
of their ratios to cuBLAS in the same rounds.

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


def epilogue(mod):
    return sum(p.kind == "tensor" for p in mod.kernels[0].params) == 4


def call(mod, x, w, b, y):
    return mod(x, w, b, y) if epilogue(mod) else mod(x, w, y)


bad = 0
ragged = [(1, 1, 1), (17, 1000, 4096), (1000, 17, 128), (4096, 1000, 1000), (129, 257, 65)]
for M, N, K in ragged + shapes:
    x = torch.randn(M, K, device="cuda").bfloat16()
    w = (torch.randn(K, N, device="cuda") / K ** 0.5).bfloat16()
    b = torch.randn(N, device="cuda")
    acc = x.float() @ w.float()
    z = acc + b
    gelu = z / (1 + torch.exp(-1.702 * z))
    for name, k in kernels:
        ref = gelu if epilogue(k) else acc
        y = torch.full((M, N), float("nan"), device="cuda").bfloat16()
        call(k, x, w, b, y)
        torch.cuda.synchronize()
        rel = (y.float() - ref).norm().item() / max(ref.norm().item(), 1e-30)
        ok = rel <= 1e-2 and not torch.isnan(y.float()).any().item()
        bad += not ok
        print(f"{name:24s} {M}x{N}x{K}: rel {rel:.2e} {'OK' if ok else 'FAIL'}", flush=True)
if check_only:
    sys.exit(1 if bad else 0)
for M, N, K in shapes:
    x = torch.randn(M, K, device="cuda").bfloat16()
    w = torch.randn(K, N, device="cuda").bfloat16()
    b = torch.randn(N, device="cuda")
    y = torch.empty(M, N, device="cuda").bfloat16()
    fns = [(n, (lambda k=k: call(k, x, w, b, y))) for n, k in kernels] + [("cuBLAS", lambda: torch.matmul(x, w))]
    interleaved(fns, rounds, "cuBLAS", 2.0 * M * N * K, f"{M}x{N}x{K}", 24)
sys.exit(1 if bad else 0)
