"""Launch one prepared benchmark kernel (.devcarry/perf/NAME.ptx, a GEMM
variant .devcarry/gemm/NAME.ptx at 4096^3, or an attention variant
.devcarry/attn/NAME.ptx at 16384 tokens, N = NCU_N, default 1024) a few
times on its benchmark shape, for a profiler: bench/device.sh runs it
under ncu when PROFILE="NAME ..." is set.

    python3 bench/ncu_one.py layernorm_16384
    python3 bench/ncu_one.py cross_entropy_bn8192     (also rmsnorm_4096, layernorm_bwd_4096, ...)
    NCU_N=1024 python3 bench/ncu_one.py attn_bf16_sm_86_d128_m128_n64_f
"""
import os
import sys

import torch

import tilec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARRY = os.environ.get("TILEC_CARRY", os.path.join(ROOT, ".devcarry"))
SHAPES = {4096: (32768, 4096), 16384: (8192, 16384)}


def gemm(name):
    """A GEMM variant (.devcarry/gemm/NAME.ptx) on bf16/f16 4096^3."""
    k = tilec.load_files(os.path.join(CARRY, "gemm", name + ".ptx"))
    dt = torch.float16 if "f16_" in name and "bf16" not in name else torch.bfloat16
    a = torch.randn(4096, 4096, device="cuda").to(dt)
    b = torch.randn(4096, 4096, device="cuda").to(dt)
    c = torch.empty(4096, 4096, device="cuda", dtype=dt)
    for _ in range(3):
        k(a, b, c)
    torch.cuda.synchronize()


def attn(name):
    """An attention variant on the benchmark's shapes: 16384 tokens, hidden 2048."""
    p = name.split("_")
    d, causal = int(p[4][1:]), p[7] == "c"
    n = int(os.environ.get("NCU_N", "1024"))
    z, h = 16384 // n, 2048 // d
    k = tilec.load_files(os.path.join(CARRY, "attn", name + ".ptx"))
    q, kk, v = (torch.randn(z, h, n, d, device="cuda").to(torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(z, h, n, device="cuda", dtype=torch.float32)
    for _ in range(3):
        k(q, kk, v, o, lse, d ** -0.5)
    torch.cuda.synchronize()


def main():
    name = sys.argv[1]
    if os.path.exists(os.path.join(CARRY, "gemm", name + ".ptx")):
        return gemm(name)
    if os.path.exists(os.path.join(CARRY, "attn", name + ".ptx")):
        return attn(name)
    k = tilec.load_files(os.path.join(CARRY, "perf", name + ".ptx"))
    if name.startswith("cross_entropy_"):   # 4096 x 128256 bf16 logits, i64 targets (bench.py's shape)
        x = torch.randn(4096, 128256, device="cuda").to(torch.bfloat16)
        t = torch.randint(0, 128256, (4096,), device="cuda")
        loss = torch.empty(4096, device="cuda")
        run = lambda: k(x, t, loss)
    elif name.startswith("layernorm_bwd_"):   # 32768 x 4096 bf16
        m, n = 32768, 4096
        x, dy = (torch.randn(m, n, device="cuda").to(torch.bfloat16) for _ in range(2))
        w = torch.randn(n, device="cuda").to(torch.bfloat16)
        mean, rstd = torch.zeros(m, device="cuda"), torch.ones(m, device="cuda")
        dx = torch.empty_like(x)
        dw, db = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")
        run = lambda: k(x, dy, w, mean, rstd, dx, dw, db)
    else:
        kind, block = name.split("_")[:2]
        m, n = SHAPES[int(block)]
        x = torch.randn(m, n, device="cuda").to(torch.bfloat16)
        y = torch.empty_like(x)
        w = torch.randn(n, device="cuda").to(torch.bfloat16)
        b = torch.randn(n, device="cuda").to(torch.bfloat16)
        if kind == "softmax":
            run = lambda: k(x, y)
        elif kind == "rmsnorm":
            run = lambda: k(x, w, y, 1e-5)
        else:
            run = lambda: k(x, w, b, y, 1e-5)
    for _ in range(3):
        run()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
