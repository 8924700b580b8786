#!/usr/bin/env python3
"""power_probe.py - SM clock, power and speed of one attention row's
kernels, each run back to back for a while (nvidia-smi sampling every 50
ms): FlashAttention-2 (SDPA flash), cuDNN, and tilec.attention's pick from
the precompiled sm_86 PTX (.devcarry/attn). At the GPU's power limit a
kernel's speed depends on the energy it spends per FLOP: the table gives
TFLOP/s, the median SM clock and power while it ran, and joules per PFLOP.

    TILEC_LIB_DIR=... PYTHONPATH=python python3 bench/power_probe.py [D N causal ...]
"""
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilec  # noqa: E402
from tilec import _attention as A  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clocks  # noqa: E402 (bench/clocks.py: the nvidia-smi fields and their reader)

SECONDS = 2.0


def window(fn, flop):
    """Run fn back to back for SECONDS; (t0, t1, TFLOP/s) from CUDA events."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.time()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    n = 0
    while time.time() - t0 < SECONDS:
        for _ in range(10):
            fn()
        n += 10
        torch.cuda.synchronize()
    end.record()
    end.synchronize()
    return t0, time.time(), n * flop / start.elapsed_time(end) / 1e9


def samples(path, t0, t1):
    """(SM MHz, W) of the samples in [t0 + 0.3 s, t1] (the first 0.3 s: clock settling)."""
    return [(r[1], r[2]) for r in clocks.read(path) if t0 + 0.3 <= r[0] <= t1]


def medians(path, t0, t1):
    """(median SM MHz, median W, number of samples) in [t0 + 0.3 s, t1]."""
    s = samples(path, t0, t1)
    clk = sorted(x[0] for x in s) or [float("nan")]
    pw = sorted(x[1] for x in s) or [float("nan")]
    return clk[len(clk) // 2], pw[len(pw) // 2], len(s)


def sampled(run):
    """Calls run() while nvidia-smi samples clocks and power every 100 ms
    (from 1 s before); returns the samples' file. nvidia-smi buffers its
    file: the samples are read once it has exited."""
    log = tempfile.mktemp(suffix=".csv")
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=" + clocks.QUERY, "--format=csv,noheader,nounits",
                            "-lms", "100", "-f", log])
    try:
        time.sleep(1.0)
        run()
    finally:
        smi.terminate()
        smi.wait()
    return log


def row(d, n, causal, done):
    z, h = 16384 // n, 2048 // d
    q, k, v = (torch.randn(z, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o, lse = torch.empty_like(q), torch.empty(z, h, n, device="cuda")
    flop = 4.0 * z * h * n * n * d / (2 if causal else 1)
    bm, bn, so, sw = A.picks(d, causal, n)
    name = A.variant_name("bf16", "sm_86", d, bm, bn, causal, so, sw)
    mod = tilec.load_files(os.path.join(ROOT, ".devcarry", "attn", name + ".ptx"))

    def sd(be):
        def f():
            with sdpa_kernel(be):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return f
    kern = [("flash", sd(SDPBackend.FLASH_ATTENTION)), ("cuDNN", sd(SDPBackend.CUDNN_ATTENTION)),
            ("tilec " + name[len("attn_bf16_sm_86_"):], lambda: mod(q, k, v, o, lse, d ** -0.5))]
    for rnd in range(2):
        for label, fn in kern:
            time.sleep(0.5)
            t0, t1, tf = window(fn, flop)
            done.append((d, n, causal, label, rnd, t0, t1, tf))


def main():
    args = sys.argv[1:] or ["128", "2048", "no", "128", "4096", "no", "128", "8192", "yes"]
    done = []

    def rows():
        for i in range(0, len(args), 3):
            row(int(args[i]), int(args[i + 1]), args[i + 2] == "yes", done)
    log = sampled(rows)
    print("%-4s %-6s %-6s %-30s %s %8s %8s %8s %9s %7s" % ("D", "N", "causal", "kernel", "r", "TFLOP/s", "MHz", "W",
                                                            "J/PFLOP", "samples"))
    for d, n, causal, label, rnd, t0, t1, tf in done:
        mhz, w, ns = medians(log, t0, t1)
        print("%-4d %-6d %-6s %-30s %d %8.1f %8.0f %8.0f %9.0f %7d" % (d, n, "yes" if causal else "no", label, rnd, tf,
              mhz, w, 1000.0 * w / tf, ns))


if __name__ == "__main__":
    main()
