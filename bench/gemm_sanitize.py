#!/usr/bin/env python3
"""gemm_sanitize.py - the sm_90a GEMMs of .devcarry/gemm (the warp-specialized
kernels: TMA rings, wgmma) on small and ragged shapes, each checked against
float32, meant to run under compute-sanitizer (memcheck, racecheck,
synccheck: bench/device.sh). Also a view that TMA cannot take, so that the
portable variant in the same module runs under the tools too.
usage: python3 gemm_sanitize.py [NAME_SUBSTRING]   (default: sm90a)"""
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import torch  # noqa: E402
import tilec  # noqa: E402

SHAPES = [(256, 128, 64), (1000, 1016, 1008), (17, 1024, 128), (300, 264, 0), (129, 136, 200)]


def main():
    sel = sys.argv[1] if len(sys.argv) > 1 else "sm90a"
    bad = 0
    for p in sorted(glob.glob(os.path.join(ROOT, ".devcarry", "gemm", "*.ptx"))):
        name = os.path.basename(p)[:-4]
        if sel not in name or "bias" in name:
            continue
        mod = tilec.load_files(p)
        dt = torch.float16 if "_f16_" in "_" + name else torch.bfloat16
        cases = [(m, n, k, False) for m, n, k in SHAPES] + [(200, 1024, 136, True)]
        for m, n, k, unaligned in cases:
            a = torch.randn(m, k + (9 if unaligned else 0), device="cuda", dtype=dt)
            a = a[:, 8:k + 8] if unaligned else a
            b = torch.randn(k, n, device="cuda", dtype=dt)
            c = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
            mod(a, b, c)
            torch.cuda.synchronize()
            ref = a.float() @ b.float()
            den = ref.norm().item() or 1.0
            e = (c.float() - ref).norm().item() / den
            ok = e <= 1e-2
            bad += not ok
            print("%-28s %5d x %5d x %5d%s  rel err %.2e  %s" % (name, m, n, k, " (rows unaligned)" if unaligned else "",
                                                                  e, "ok" if ok else "FAIL"), flush=True)
    print("gemm_sanitize: %d failed" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
