#!/usr/bin/env python3
"""launch_probe.py - what a timing of attention holds besides the kernel.

For each attention row given (D N causal), the sm_86 PTX tile that
bench/attn_bench.py reports as the portable path (.devcarry/attn), the same
kernel launched from pre-packed arguments ("prepack": the runtime's C call
alone), and SDPA's flash and cuDNN backends:
  cpu us   host time of one call (Python, argument packing, checks, launch),
           the mean over 200 calls issued back to back;
  bench    triton do_bench median (what bench/attn_bench.py reports; do_bench
           clears L2 before each run and times the call with CUDA events, so
           a call whose host time exceeds the L2 clear's GPU time leaves the
           GPU idle inside the timed span);
  kernel   the kernels' own GPU time from the profiler (CUPTI), median over
           the same kind of runs (L2 cleared before each);
  gap      bench / kernel - 1.
  TILEC_LIB_DIR=... python3 bench/launch_probe.py [--rounds R] [D N causal ...]
"""
import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import torch  # noqa: E402
from torch.nn.attention import SDPBackend  # noqa: E402
from timing import median_ms  # noqa: E402
import attn_bench  # noqa: E402 (bench/attn_bench.py: the portable path's pick, SDPA)


def cpu_us(fn, n=200):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def kernel_ms(fn, runs=40):
    """Median GPU time of the kernels one call launches (profiler), L2 cleared before each call."""
    cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    from torch.profiler import profile, ProfilerActivity
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            cache.zero_()
            fn()
        torch.cuda.synchronize()
    per = {}
    for ev in prof.events():
        if ev.device_type.name != "CUDA":
            continue
        nm = ev.name
        if "fill" in nm.lower() or "zero" in nm.lower() or "memset" in nm.lower():
            continue
        per.setdefault(nm, []).append(ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total)
    # the call's kernels: those run once per call
    tot = None
    names = []
    for nm, ts in per.items():
        if len(ts) >= runs:
            names.append(nm)
            ts = ts[-runs:]
            tot = ts if tot is None else [a + b for a, b in zip(tot, ts)]
    if tot is None:
        return float("nan"), []
    return statistics.median(tot) / 1000.0, names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("rows", nargs="*", default=["128", "1024", "no", "128", "4096", "no", "64", "1024", "no"])
    a = ap.parse_args()
    rows = [(int(a.rows[i]), int(a.rows[i + 1]), a.rows[i + 2] == "yes") for i in range(0, len(a.rows), 3)]
    print("%-4s %-6s %-6s %-8s %8s %9s %9s %7s %9s %s" % ("D", "N", "causal", "who", "cpu us", "bench ms",
                                                         "kernel ms", "gap", "TFLOP/s", "(bench / kernel)"))
    for d, n, causal in rows:
        z, h = 16384 // n, 2048 // d
        q, k, v = (torch.randn(z, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty(z, h, n, device="cuda")
        flop = 4.0 * z * h * n * n * d / (2 if causal else 1)
        mod = attn_bench.portable_pick(d, causal, n)[1]
        kern = mod.kernels[0]
        stream = torch.cuda.current_stream().cuda_stream
        packed, keep = kern._pack((q, k, v, o, lse, d ** -0.5), stream)  # noqa: F841 (kept alive)
        fns = {
            "tilec": lambda: mod(q, k, v, o, lse, d ** -0.5),
            "prepack": lambda: kern._launch(packed, 6, stream),
            "flash": lambda: attn_bench.sdpa(q, k, v, causal, SDPBackend.FLASH_ATTENTION),
            "cudnn": lambda: attn_bench.sdpa(q, k, v, causal, SDPBackend.CUDNN_ATTENTION),
        }
        for r in range(a.rounds):
            for who, fn in fns.items():
                c = cpu_us(fn)
                b = median_ms(fn, rep=100, warmup=25)
                km, names = kernel_ms(fn)
                print("%-4d %-6d %-6s %-8s %8.1f %9.4f %9.4f %6.1f%% %4.0f/%-4.0f %s" % (
                    d, n, "yes" if causal else "no", who, c, b, km, (b / km - 1) * 100,
                    flop / b / 1e9, flop / km / 1e9, ("round %d" % r) if r else ",".join(x[:40] for x in names)),
                    flush=True)



if __name__ == "__main__":
    main()
