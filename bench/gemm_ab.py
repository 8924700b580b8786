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
import random, statistics, sys, torch
sys.path.insert(0, __file__.rsplit("/", 1)[0] + "/../python")
import tilec

args = sys.argv[1:]
check_only = args[0] == "--check"
rounds = 0 if check_only else int(args[0])
cut = args.index("--")
shapes = [tuple(int(x) for x in s.split()) for s in args[1:cut]]
kernels = [(p.rsplit("/", 1)[-1][:-4], tilec.load_files(p)) for p in args[cut + 1:]]
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
    fns = [(n, (lambda k=k: k(a, b, c))) for n, k in kernels] + [("cublas", lambda: torch.matmul(a, b))]
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    t = {n: [] for n, _ in fns}
    for r in range(rounds):
        order = fns[:]
        random.shuffle(order)
        for n, f in order:
            for _ in range(3): f()
            ev[0].record()
            for _ in range(20): f()
            ev[1].record(); torch.cuda.synchronize()
            t[n].append(ev[0].elapsed_time(ev[1]) / 20)
    fl = 2.0 * M * N * K
    print(f"-- {M}x{N}x{K}: {rounds} rounds; cuBLAS {fl / statistics.mean(t['cublas']) / 1e9:.1f} TFLOP/s")
    for n, _ in kernels:
        ratio = [c_ / x for c_, x in zip(t["cublas"], t[n])]
        print(f"   {n:24s} {fl / statistics.mean(t[n]) / 1e9:7.1f} TFLOP/s  x cuBLAS per round: median "
              f"{statistics.median(ratio):.3f} ({min(ratio):.3f}-{max(ratio):.3f})", flush=True)
sys.exit(1 if bad else 0)
