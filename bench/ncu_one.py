"""Launch one prepared benchmark kernel (.devcarry/perf/NAME.ptx, or a GEMM
variant .devcarry/gemm/NAME.ptx at 4096^3) a few times on its benchmark
shape, for a profiler: bench/device.sh runs it under ncu when
PROFILE="NAME ..." is set.

    python3 bench/ncu_one.py layernorm_16384
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


def main():
    name = sys.argv[1]
    if os.path.exists(os.path.join(CARRY, "gemm", name + ".ptx")):
        return gemm(name)
    kind, block = name.split("_")[:2]
    m, n = SHAPES[int(block)]
    k = tilec.load_files(os.path.join(CARRY, "perf", name + ".ptx"))
    x = torch.randn(m, n, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)
    if kind == "softmax":
        run = lambda: k(x, y)
    else:
        w = torch.randn(n, device="cuda").to(torch.bfloat16)
        b = torch.randn(n, device="cuda").to(torch.bfloat16)
        run = lambda: k(x, w, b, y, 1e-5)
    for _ in range(3):
        run()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
