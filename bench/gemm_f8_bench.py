#!/usr/bin/env python3
"""gemm_f8_bench.py - f8e4m3 GEMMs of tilec against torch._scaled_mm
(cuBLAS's fp8 GEMM) on the GPU, at 4096^3 and 8192^3.

tilec's f8 products run on sm_90a on wgmma m64nNk32 with 8-bit operands
where both are K-major (the NT kernel), else on mma.sync with the operands
converted to f16 in registers (docs/language.md, "What the compiler
decides"); cuBLAS's on the arch's fp8 tensor cores (wgmma on an H200). The
kernels:
  f8_nt_bf16_*   tests/perf/gemm_f8_nt.tile: A [M, K] e4m3, B as [N, K] rows
                 (the column-major K x N operand torch._scaled_mm takes), C
                 bf16: the same inputs, layout and output as the peer; on
                 sm_90a wgmma e4m3 in TMA / wgmma roles (sm_86: mma.sync)
  f8_nn_e4m3_*   examples/gemm.tile -DT=f8e4m3: B [K, N] row-major, C rounded
                 to e4m3 (the example as written); mma.sync on every arch,
                 since an 8-bit wgmma cannot read B N-major
both compiled for sm_90a (told the H200's 132 SMs, as gemm_bench.py's
variants), the first also for sm_86 (portable PTX); sm_90a PTX runs only on
compute capability 9.0.

First every kernel and the peer (scales 1.0, bf16 out; with and without
use_fast_accum) are checked against a float32 product of the dequantized
e4m3 inputs (relative Frobenius error: 1e-2 for bf16 outputs, 6e-2 for
e4m3 ones, whose rounding alone is about 3%; C starts as NaN so an
unwritten element fails) at the timed sizes and, for tilec, at a ragged
1000 x 1000 x 1000; then the ones that passed are timed interleaved
(bench/timing.py's interleaved: rounds in a fresh random order), printing
TFLOP/s and the ratio to torch._scaled_mm per round. Exit 1 if a check
failed.

  python3 bench/gemm_f8_bench.py --prepare build/bin/tilec   (build machine: .devcarry/gemm_f8)
  python3 bench/gemm_f8_bench.py [--rounds R]                 (GPU machine, after bench/runtime.sh)
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
DIR = os.path.join(ROOT, ".devcarry", "gemm_f8")

# NAME | ARCH | FILE | DEFINES | OPTIONS
VARIANTS = """
f8_nt_bf16_sm90a | sm_90a | tests/perf/gemm_f8_nt.tile | | --pass-option target.sms=132
f8_nt_bf16_sm86  | sm_86  | tests/perf/gemm_f8_nt.tile | |
f8_nn_e4m3_sm90a | sm_90a | examples/gemm.tile | -DT=f8e4m3 | --pass-option target.sms=132
"""


def prepare(tilec_bin):
    """Compile VARIANTS into .devcarry/gemm_f8 with ptxas's registers and spills."""
    from variants import compile_variants
    compile_variants(tilec_bin, DIR, VARIANTS, width=20, entry="gemm")


if len(sys.argv) > 2 and sys.argv[1] == "--prepare":
    prepare(sys.argv[2])
    sys.exit(0)

import torch  # noqa: E402
from timing import interleaved, run_timed  # noqa: E402 (bench/timing.py)
import tilec  # noqa: E402

E4M3 = torch.float8_e4m3fn
SIZES = (4096, 8192)


def rel_err(got, ref):
    return ((got.float() - ref).norm() / ref.norm()).item()


class Tilec:
    """One tilec variant: run(a, b_nt) -> C as float32 (the e4m3 operands
    pass as their bytes, uint8: the runtime takes raw bytes for f8)."""

    def __init__(self, name, mod):
        self.name, self.mod = name, mod
        self.nt = "_nt_" in name
        self.tol = 1e-2 if "bf16" in name else 6e-2

    def buffers(self, a, b_nt):
        """The launch's arguments for a (M x K) @ b_nt^T (b_nt N x K), C poisoned."""
        m, n = a.shape[0], b_nt.shape[0]
        b = b_nt.view(torch.uint8) if self.nt else b_nt.view(torch.uint8).t().contiguous()
        if self.nt:
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        else:
            c = torch.full((m, n), 0xFF, device="cuda", dtype=torch.uint8)   # 0xFF: an e4m3 NaN
        return a.view(torch.uint8), b, c

    def result(self, c):
        return c.float() if self.nt else c.view(E4M3).float()


_ONE = []


def scaled_mm(a, b_nt, fast):
    """torch._scaled_mm of a and b_nt^T (column-major), scales 1.0 (one
    tensor made once, outside the timed calls), bf16 out."""
    if not _ONE:
        _ONE.append(torch.ones((), device="cuda", dtype=torch.float32))
    one = _ONE[0]
    r = torch._scaled_mm(a, b_nt.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=fast)
    return r[0] if isinstance(r, tuple) else r   # torch before 2.4 returned (out, amax)


def inputs(m, n, k, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=g).to(E4M3)
    b_nt = torch.randn(n, k, device="cuda", generator=g).to(E4M3)
    return a, b_nt, a.float() @ b_nt.float().t()   # float32 reference of the dequantized inputs


def main():
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 5
    torch.backends.cuda.matmul.allow_tf32 = False   # the reference in f32
    cc = torch.cuda.get_device_capability(0)
    print("device:", torch.cuda.get_device_name(0), "| compute capability %d.%d |" % cc, time.strftime("%Y-%m-%d"),
          "| torch", torch.__version__, flush=True)
    from variants import read_variants
    regs = {k: "regs %s, spill %s B" % v for k, v in read_variants(DIR).items()}
    kernels = []
    for row in VARIANTS.strip().splitlines():
        name, arch = [x.strip() for x in row.split("|")][:2]
        path = os.path.join(DIR, name + ".ptx")
        if arch == "sm_90a" and cc != (9, 0):
            print("skip %s: sm_90a PTX on compute capability %d.%d" % (name, cc[0], cc[1]), flush=True)
            continue
        if not os.path.exists(path):
            print("skip %s: no %s (bench/prepare.sh)" % (name, path), flush=True)
            continue
        kernels.append(Tilec(name, tilec.load_files(path)))

    ok, good = True, {k.name: True for k in kernels}
    peers = {"torch._scaled_mm": False, "torch._scaled_mm fast_accum": True}
    peer_ok = {p: True for p in peers}
    for (m, n, k) in [(1000, 1000, 1000)] + [(s, s, s) for s in SIZES]:
        a, b_nt, ref = inputs(m, n, k, m + 7)
        for kern in kernels:
            try:
                args = kern.buffers(a, b_nt)
                kern.mod(*args)
                e = rel_err(kern.result(args[2]), ref)
                passed = e <= kern.tol   # NaN fails
            except Exception as ex:  # noqa: BLE001 - report and go on
                e, passed = float("nan"), False
                print("check %-28s %dx%dx%d ERROR %s" % (kern.name, m, n, k, ex), flush=True)
            good[kern.name] = good[kern.name] and passed
            ok = ok and passed
            print("check %-28s %dx%dx%d rel err %.2e (limit %.0e) %s" % (kern.name, m, n, k, e, kern.tol,
                  "ok" if passed else "FAIL"), flush=True)
        if m % 16 or n % 16 or k % 16:
            continue   # torch._scaled_mm takes multiples of 16
        for p, fast in peers.items():
            try:
                e = rel_err(scaled_mm(a, b_nt, fast), ref)
                passed = e <= 1e-2
            except Exception as ex:  # noqa: BLE001
                e, passed = float("nan"), False
                print("check %-28s %dx%dx%d ERROR %s" % (p, m, n, k, str(ex).splitlines()[0]), flush=True)
            peer_ok[p] = peer_ok[p] and passed
            print("check %-28s %dx%dx%d rel err %.2e (limit 1e-02) %s" % (p, m, n, k, e, "ok" if passed else "FAIL"),
                  flush=True)
        del a, b_nt, ref
    ok = ok and peer_ok["torch._scaled_mm"]
    for kern in kernels:
        print("%-28s %s%s" % (kern.name, regs.get(kern.name, ""), "" if good[kern.name] else "  (failed: not timed)"))

    for s in SIZES:
        a, b_nt, _ = inputs(s, s, s, s)
        fns = []
        if peer_ok["torch._scaled_mm"]:
            fns.append(("torch._scaled_mm", lambda a=a, b=b_nt: scaled_mm(a, b, False)))
        if peer_ok["torch._scaled_mm fast_accum"]:
            fns.append(("torch._scaled_mm fast_accum", lambda a=a, b=b_nt: scaled_mm(a, b, True)))
        ab, bb = a.to(torch.bfloat16), b_nt.to(torch.bfloat16).t().contiguous()
        fns.append(("torch.matmul bf16 (cuBLAS)", lambda x=ab, y=bb: torch.matmul(x, y)))
        for kern in kernels:
            if good[kern.name]:
                args = kern.buffers(a, b_nt)
                fns.append(("tilec " + kern.name, lambda kern=kern, args=args: kern.mod(*args)))
        peer = fns[0][0]
        interleaved(fns, rounds, peer, 2.0 * s ** 3, "f8e4m3 GEMM %d^3" % s, width=30)
        del a, b_nt, ab, bb, fns
        torch.cuda.empty_cache()
    return 0 if ok else 1


if __name__ == "__main__":
    run_timed(main)
