#!/usr/bin/env python3
"""power_probe.py - SM clock, power and speed of one attention row's
kernels, each run back to back for a while (nvidia-smi sampling every 50
ms): FlashAttention-2 (SDPA flash), cuDNN, and tilec.attention's pick from
the precompiled sm_86 PTX (.devcarry/attn). At the GPU's power limit a
kernel's speed depends on the energy it spends per FLOP: the table gives
TFLOP/s, the median SM clock and power while it ran, joules per PFLOP and
TFLOP/s per GHz of SM clock (what a kernel does per clock, apart from the
clock the power limit leaves it). With --variants DIR, every
attn_bf16_<arch>_d<D>_..._<c|f>[_tag].ptx in DIR of the row's D and mask
runs too (experiment variants, e.g. PTX edited by hand), with its output's
relative error against float32 SDPA (no pass/fail: an edited variant may
be wrong on purpose).

    TILEC_LIB_DIR=... PYTHONPATH=python python3 bench/power_probe.py [--variants DIR] [D N causal ...]
"""
import glob
import os
import subprocess
import sys
import tempfile
import time

import torch
from torch.nn.attention import SDPBackend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilec  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_bench  # noqa: E402 (bench/attn_bench.py: variant file names and the float32 reference)
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


def variant_files(folder, d, causal):
    """The bf16 variants in folder (either arch) for head dim d and this mask."""
    vs = (attn_bench.parse(os.path.basename(p)[:-4]) for p in glob.glob(os.path.join(folder, "attn_*.ptx")))
    return sorted(os.path.join(folder, v["name"] + ".ptx") for v in vs
                  if v["dt"] == "bf16" and v["d"] == d and v["causal"] == causal)


def row(d, n, causal, done, folder=None):
    z, h = 16384 // n, 2048 // d
    q, k, v = (torch.randn(z, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o, lse = torch.empty_like(q), torch.empty(z, h, n, device="cuda")
    ref = attn_bench.reference(q, k, v, causal, d ** -0.5)[0] if folder else None
    flop = 4.0 * z * h * n * n * d / (2 if causal else 1)
    name, mod = attn_bench.portable_pick(d, causal, n)
    kern = [("flash", lambda: attn_bench.sdpa(q, k, v, causal, SDPBackend.FLASH_ATTENTION)),
            ("cuDNN", lambda: attn_bench.sdpa(q, k, v, causal, SDPBackend.CUDNN_ATTENTION)),
            ("tilec " + name[len("attn_bf16_sm_86_"):], lambda: mod(q, k, v, o, lse, d ** -0.5))]
    for path in variant_files(folder, d, causal) if folder else []:
        vm = tilec.load_files(path)
        kern.append(("xp " + os.path.basename(path)[len("attn_bf16_"):-4].replace("sm_86_", ""),
                     lambda vm=vm: vm(q, k, v, o, lse, d ** -0.5)))
    for rnd in range(2):
        for label, fn in kern:
            time.sleep(0.5)
            t0, t1, tf = window(fn, flop)
            err = float("nan")
            if ref is not None and not label.startswith(("flash", "cuDNN")):
                o.fill_(float("nan"))
                fn()
                err = ((o.float() - ref).norm() / ref.norm()).item()
            done.append((d, n, causal, label, rnd, t0, t1, tf, err))


def main():
    args = sys.argv[1:]
    folder = None
    if args[:1] == ["--variants"]:
        if len(args) < 2 or not os.path.isdir(args[1]):
            sys.exit("power_probe.py: --variants needs a folder of PTX files")
        folder, args = args[1], args[2:]
    args = args or ["128", "2048", "no", "128", "4096", "no", "128", "8192", "yes"]
    if len(args) % 3:
        sys.exit("power_probe.py: rows are D N causal(yes|no) triples")
    done = []

    def rows():
        for i in range(0, len(args), 3):
            row(int(args[i]), int(args[i + 1]), args[i + 2] == "yes", done, folder)
    log = sampled(rows)
    print("%-4s %-6s %-6s %-34s %s %8s %8s %8s %9s %9s %7s %8s" % ("D", "N", "causal", "kernel", "r", "TFLOP/s", "MHz",
                                                                  "W", "J/PFLOP", "TF/GHz", "samples", "err"))
    for d, n, causal, label, rnd, t0, t1, tf, err in done:
        mhz, w, ns = medians(log, t0, t1)
        print("%-4d %-6d %-6s %-34s %d %8.1f %8.0f %8.0f %9.0f %9.1f %7d %8.1e" % (
            d, n, "yes" if causal else "no", label, rnd, tf, mhz, w, 1000.0 * w / tf, 1000.0 * tf / mhz, ns, err))


if __name__ == "__main__":
    main()
