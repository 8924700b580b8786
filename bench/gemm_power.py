#!/usr/bin/env python3
"""gemm_power.py - SM clock, power and speed of the warp-MMA GEMMs and of
the probes below them, each run back to back for a while (nvidia-smi
sampling every 100 ms), two rounds:
  - bare mma.sync (bench/mma_probe.py: 8 accumulators per warp, operands
    in registers, no memory traffic), 8 warps per SM;
  - the GEMM mainloop without synchronisation (fed_kernel: a 64x64 warp
    tile, every fragment reloaded with ldmatrix per k16 step from shared
    memory holding random data, no barrier), 8 warps per SM, alone and with
    the L2 -> shared cp.async traffic of a 256x128x64 / 128x128x64 block
    tile streamed beside it: what any mma.sync GEMM with this warp tile
    executes per product, less its barriers and epilogue;
  - tilec's GEMM (the default variant's sm_86 PTX from .devcarry/gemm,
    and on an H100/H200 its sm_90a PTX),
    Triton's GEMM held to mma.sync (bench/triton_mma.py), cuBLAS
    (torch.matmul, wgmma), at 8192^3 bf16.
At the GPU's power limit a kernel's speed is its power over the energy it
spends per FLOP: the table gives TFLOP/s, the median SM clock and power
while it ran, and joules per PFLOP.

    TILEC_LIB_DIR=... PYTHONPATH=python python3 bench/gemm_power.py [SECONDS] [--probes]

The two probe rows (hand-written PTX, not tilec's kernels) run with
--probes only.
"""
import ctypes
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tilec  # noqa: E402
import mma_probe  # noqa: E402
from mma_ptx import fed_kernel, kernel  # noqa: E402
from power_probe import medians, sampled, window  # noqa: E402
import power_probe  # noqa: E402


def _probe_launch(ptx, params, keep, warps_per_sm, iters):
    """(fn, warps launched) of a probe kernel over warps_per_sm warps per
    SM (blocks of 4 warps) with params (out, iters, then `params`)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    threads, blocks = 128, sms * warps_per_sm // 4
    out = torch.empty(blocks * threads, device="cuda")
    fn = mma_probe.launcher(ptx, blocks, threads, [ctypes.c_uint64(out.data_ptr()), ctypes.c_uint32(iters)] + params,
                            (out,) + keep)
    return fn, blocks * (threads // 32)


def fed_probe(copies, src_buf, warps_per_sm=8, iters=8192):
    """(fn, flop, bytes copied per FLOP) of one launch of fed_kernel(copies)
    over src_buf (a CUDA tensor whose byte size is a power of two)."""
    nbytes = src_buf.numel() * src_buf.element_size()
    assert nbytes & (nbytes - 1) == 0
    fn, warps = _probe_launch(fed_kernel(copies), [ctypes.c_uint64(src_buf.data_ptr()),
                                                   ctypes.c_uint64((nbytes - 1) & ~15)], (src_buf,), warps_per_sm, iters)
    flop = warps * iters * 32 * 4096.0
    return fn, flop, warps * 32 * iters * copies * 16.0 / flop


def probe(nm, nn, ldsm, warps_per_sm=8, iters=8192):
    """(fn, flop) of one launch of bench/mma_ptx.py's kernel(nm, nn, ldsm)."""
    fn, warps = _probe_launch(kernel(nm, nn, ldsm), [], (), warps_per_sm, iters)
    return fn, warps * iters * nm * nn * 4096.0


def main():
    args = [a for a in sys.argv[1:] if a != "--probes"]
    if args:
        power_probe.SECONDS = float(args[0])
    probes = "--probes" in sys.argv[1:]
    torch.zeros(1, device="cuda")
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    flop = 2.0 * n ** 3
    src = torch.randn(8 << 20, device="cuda", dtype=torch.bfloat16)     # 16 MB: stays in L2
    kern = []   # (label, fn, flop, bytes copied per FLOP)
    if probes:
        kern.append(("mma.sync bare, 8 acc/warp", *probe(1, 8, False), 0.0))
        for copies in (0, 2, 3, 4):
            fn, fl, bpf = fed_probe(copies, src)
            kern.append(("mainloop + %d cp.async (%.1f B/kFLOP)" % (copies, 1e3 * bpf), fn, fl, bpf))
    # tilec's GEMM: the sm_86 PTX (mma.sync) and, on an H100/H200, the
    # sm_90a one (wgmma, warp-specialized, persistent): energy per PFLOP
    # beside cuBLAS's
    d = os.path.join(ROOT, ".devcarry", "gemm")
    names = ["default_bf16_256x128x64_s2"] + (["default_sm90a_bf16"] if torch.cuda.get_device_capability(0) == (9, 0)
                                              else [])
    paths = [os.path.join(d, x + ".ptx") for x in names if os.path.exists(os.path.join(d, x + ".ptx"))]
    for path in paths:
        mod = tilec.load_files(path)
        mod(a, b, c)
        ref = a.float() @ b.float()
        err = ((c.float() - ref).norm() / ref.norm()).item()
        if not err <= 1e-2:
            raise SystemExit("tilec gemm %s wrong at 8192^3: rel err %.2e" % (os.path.basename(path), err))
        kern.append(("tilec " + os.path.basename(path)[:-4], lambda mod=mod: mod(a, b, c), flop, 0.0))
        del ref
    if not paths:
        print("no .devcarry/gemm/default_*.ptx (run bench/prepare.sh): tilec's GEMM not run")
    try:
        import triton_mma
        cfg = triton_mma.PEER
        triton_mma.run(cfg, a, b, c)
        kern.append(("triton %dx%dx%d w%d s%d mma.sync" % cfg, lambda: triton_mma.run(cfg, a, b, c), flop, 0.0))
    except Exception as e:  # noqa: BLE001 - the peer is optional
        print("no Triton peer: %s" % str(e).splitlines()[0])
    kern.append(("cuBLAS (torch.matmul)", lambda: torch.matmul(a, b, out=c), flop, 0.0))

    done = []

    def rounds():
        for rnd in range(2):
            for label, fn, fl, bpf in kern:
                time.sleep(0.5)
                t0, t1, tf = window(fn, fl)
                done.append((label, rnd, t0, t1, tf, bpf))
    log = sampled(rounds)
    print("%-38s %s %8s %8s %8s %9s %7s %8s" % ("kernel", "r", "TFLOP/s", "MHz", "W", "J/PFLOP", "samples",
                                             "L2 TB/s"))
    for label, rnd, t0, t1, tf, bpf in done:
        mhz, w, ns = medians(log, t0, t1)
        print("%-38s %d %8.1f %8.0f %8.0f %9.0f %7d %8s" % (label, rnd, tf, mhz, w, 1000.0 * w / tf, ns,
              "%.2f" % (tf * bpf) if bpf else "-"), flush=True)


if __name__ == "__main__":
    main()
