"""attn_ab.py - A/B of sm_90a attention kernels (PTX + .meta, as
sm90_probe.py launches them) in one process: each checked against a
float32 reference on fresh inputs (outputs poisoned with NaN first), then
timed interleaved with SDPA's cuDNN over R rounds in a new random order
each round; prints each kernel's mean TFLOP/s and its ratio to cuDNN per
round (median, range).

usage: python3 attn_ab.py R "Z H N D causal" [...] -- A.ptx B.ptx ...
       python3 attn_ab.py --check "Z H N D causal" [...] -- A.ptx ... (no timing)"""
import math, sys, torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
sys.path.insert(0, __file__.rsplit("/", 1)[0])
import sm90_probe as sp
from timing import ab_args, interleaved

check_only, rounds, shapes, kernels = ab_args(sys.argv[1:], sp.Kernel)
bad = 0
for Z, H, N, D, causal in shapes:
    q, kk, v = (torch.randn(Z, H, N, D, device="cuda").bfloat16() for _ in range(3))
    scale = 1.0 / math.sqrt(D)
    sc = (q.float() @ kk.float().transpose(-1, -2)) * scale
    if causal:
        sc = sc.masked_fill(torch.ones(N, N, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
    ref = torch.softmax(sc, dim=-1) @ v.float()
    lse_ref = torch.logsumexp(sc, dim=-1) * math.log2(math.e)
    del sc
    runs = []
    for name, k in kernels:
        O = torch.full((Z, H, N, D), float("nan"), device="cuda").bfloat16()
        LSE = torch.full((Z, H, N), float("nan"), device="cuda")
        k.bind(Q=q, K=kk, V=v, O=O, LSE=LSE, scale=scale, dims={"Z": Z, "H": H, "N": N, "HK": H, "NK": N})
        k(); torch.cuda.synchronize()
        rel = (O.float() - ref).norm().item() / max(ref.norm().item(), 1e-30)
        lerr = (LSE - lse_ref).abs().max().item()
        ok = rel <= 1e-2 and lerr <= 2e-2 and not torch.isnan(O.float()).any().item()
        bad += not ok
        print(f"{name:28s} Z={Z} H={H} N={N} D={D} causal={causal}: O rel {rel:.2e} LSE max abs {lerr:.2e} "
              f"{'OK' if ok else 'FAIL'}", flush=True)
        runs.append((name, k))
    if check_only:
        continue
    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(q, kk, v, is_causal=bool(causal))
    interleaved(runs + [("cuDNN", cudnn)], rounds, "cuDNN", 4 * Z * H * N * N * D / (2 if causal else 1),
                f"Z={Z} H={H} N={N} D={D} causal={causal}")
sys.exit(1 if bad else 0)
