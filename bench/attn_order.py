#!/usr/bin/env python3
"""attn_order.py - does a kernel's measured speed depend on what ran just
before it? Times tilec.attention's sm_86 tile for one row (D=128, 16384
tokens) right after SDPA's cuDNN backend, right after SDPA flash, and
right after itself, and flash after cuDNN and after tilec, each pair
repeated, with triton's do_bench as bench/attn_bench.py uses it.
  TILEC_LIB_DIR=... python3 bench/attn_order.py [N ...]
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from timing import median_ms  # noqa: E402
import tilec  # noqa: E402
from tilec import _attention as A  # noqa: E402

PTX_DIR = os.path.join(ROOT, ".devcarry", "attn")


def main():
    ns = [int(x) for x in sys.argv[1:]] or [2048, 4096]
    d, h = 128, 16
    for n in ns:
        z = 16384 // n
        q, k, v = (torch.randn(z, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o, lse = torch.empty_like(q), torch.empty(z, h, n, device="cuda")
        name = A.variant_name("bf16", "sm_86", d, False, n)
        mod = tilec.load_files(os.path.join(PTX_DIR, "lib", name + ".ptx"))
        flop = 4.0 * z * h * n * n * d
        run = {"tilec": lambda: mod(q, k, v, o, lse, d ** -0.5)}
        for nm, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            def f(be=be):
                with sdpa_kernel(be):
                    return F.scaled_dot_product_attention(q, k, v)
            run[nm] = f
        pairs = [("cudnn", "tilec"), ("flash", "tilec"), ("tilec", "tilec"), ("cudnn", "flash"),
                 ("tilec", "flash"), ("flash", "flash")]
        res = {p: [] for p in pairs}
        for _ in range(6):
            for p in pairs:
                median_ms(run[p[0]], rep=100)
                res[p].append(flop / median_ms(run[p[1]], rep=100) / 1e9)
        print("D=%d N=%d (%s):" % (d, n, name))
        for p in pairs:
            xs = res[p]
            print("  %-6s after %-6s  mean %6.1f  min %6.1f  max %6.1f TFLOP/s" % (p[1], p[0], sum(xs) / len(xs),
                                                                                  min(xs), max(xs)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
