#!/usr/bin/env python3
"""perf_plain.py - the kernels of tests/perf/ (written as a user would, from
the language reference, with their default tile sizes) against the tuned
examples on the same math and grid, on the GPU: correctness against PyTorch
in float32, then timing in interleaved rounds.

  --prepare TILEC   (build machine) compile tests/perf/*.tile and the
                    reference kernels into .devcarry/plain/ (sm_86 and sm_90a PTX)
  (GPU machine)     TILEC_LIB_DIR=... python3 bench/perf_plain.py [--rounds R]

Rows: GEMM with a bias + GELU epilogue (tests/perf/gemm_bias_gelu.tile)
against examples/gemm.tile (no epilogue) at 4096^3 and 8192^3; attention
(tests/perf/attention_plain.tile, D = 64, no mask) against tilec.attention's
pick for the same shapes (16384 tokens, 32 heads of 64), TFLOP/s and the
ratio plain / example, mean of the rounds with the per-round range.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
DIR = os.path.join(ROOT, ".devcarry", "plain")
ARCHES = ("sm_86", "sm_90a")


def prepare(tilec):
    os.makedirs(DIR, exist_ok=True)
    for f in os.listdir(DIR):
        os.remove(os.path.join(DIR, f))
    for arch in ARCHES:
        for name, src in (("gemm_bias_gelu", "tests/perf/gemm_bias_gelu.tile"),
                          ("attention_plain", "tests/perf/attention_plain.tile"),
                          ("gemm", "examples/gemm.tile")):
            out = os.path.join(DIR, "%s_%s.ptx" % (name, arch))
            subprocess.run([tilec, os.path.join(ROOT, src), "-arch=" + arch, "-o", out], check=True)
            r = subprocess.run(["ptxas", "-arch=sm_90a", "-v", out, "-o", "/dev/null"], capture_output=True, text=True)
            regs = [l.strip() for l in r.stderr.splitlines() if "Used" in l or "spill" in l]
            print("%-28s %s" % (os.path.basename(out), " | ".join(regs)))


def rel_err(out, ref):
    import torch
    d = (out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30)
    return float(d), bool(torch.isfinite(out.float()).all())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prepare", metavar="TILEC")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    if a.prepare:
        prepare(a.prepare)
        return 0
    import torch
    import tilec
    from tilec import _attention as A
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from timing import median_ms
    mod = {n: tilec.load_files(os.path.join(DIR, n + ".ptx"))
           for n in ("gemm_bias_gelu_sm_86", "gemm_bias_gelu_sm_90a", "attention_plain_sm_86",
                     "attention_plain_sm_90a", "gemm_sm_86")}
    torch.manual_seed(0)
    bad = 0
    # correctness on fresh random inputs, outputs poisoned first
    for m, n, k in ((4096, 4096, 4096), (1000, 777, 520), (129, 4095, 64)):
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) / k ** 0.5
        b = torch.randn(n, device="cuda", dtype=torch.float32)
        z = x.float() @ w.float() + b
        ref = z / (1 + torch.exp(-1.702 * z))
        for arch in ARCHES:
            y = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            mod["gemm_bias_gelu_" + arch](x, w, b, y)
            torch.cuda.synchronize()
            e, fin = rel_err(y, ref)
            ok = fin and e < 1e-2
            bad += not ok
            print("check linear_gelu %s %dx%dx%d: rel err %.2e %s" % (arch, m, n, k, e, "ok" if ok else "FAILED"))
    for bh, s in ((2, 1000), (3, 129), (32, 1024)):
        q, k_, v = (torch.randn(bh, s, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k_.float(), v.float(), scale=0.125)
        for arch in ARCHES:
            o = torch.full_like(q, float("nan"))
            mod["attention_plain_" + arch](q, k_, v, o, 0.125)
            torch.cuda.synchronize()
            e, fin = rel_err(o, ref)
            ok = fin and e < 1e-2
            bad += not ok
            print("check flash_fwd %s BH=%d S=%d: rel err %.2e %s" % (arch, bh, s, e, "ok" if ok else "FAILED"))
    # timing, interleaved rounds (each row's tensors made just before it)
    print("\n| workload | kernel | TFLOP/s (mean of %d rounds) | range | vs example (per round: median, range) |"
          % a.rounds)
    print("|---|---|---|---|---|")

    def time_row(title, fl, fns):
        names = list(fns)
        t = {nm: [] for nm in names}
        for r in range(a.rounds):
            for nm in (names if r % 2 == 0 else names[::-1]):
                t[nm].append(fl / median_ms(fns[nm], rep=100) / 1e9)
        for nm in names:
            ratio = sorted(x / y for x, y in zip(t[nm], t[names[0]]))
            print("| %s | %s | %.1f | %.1f-%.1f | %.3fx (%.3f-%.3f) |" % (
                title, nm, sum(t[nm]) / len(t[nm]), min(t[nm]), max(t[nm]), ratio[len(ratio) // 2],
                ratio[0], ratio[-1]), flush=True)

    for s in (4096, 8192):
        x = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(s, device="cuda", dtype=torch.float32)
        y = torch.empty(s, s, device="cuda", dtype=torch.bfloat16)
        time_row("GEMM %d^3" % s, 2.0 * s ** 3,
                 {"example gemm (sm_86 PTX)": lambda: mod["gemm_sm_86"](x, w, y),
                  "linear_gelu sm_86": lambda: mod["gemm_bias_gelu_sm_86"](x, w, b, y),
                  "linear_gelu sm_90a": lambda: mod["gemm_bias_gelu_sm_90a"](x, w, b, y)})
    adir = os.path.join(ROOT, ".devcarry", "attn", "lib")
    for n in (1024, 4096, 16384):
        z, h = 16384 // n, 32
        q, k_, v = (torch.randn(z, h, n, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        q3, k3, v3 = (t.reshape(z * h, n, 64) for t in (q, k_, v))
        o3 = torch.empty_like(q3)
        time_row("attention D=64 N=%d" % n, 4.0 * z * h * n * n * 64,
                 {"example (tilec.attention, sm_86 PTX)": lambda: A.attention(q, k_, v, arch="sm_86", ptx_dir=adir),
                  "plain sm_86": lambda: mod["attention_plain_sm_86"](q3, k3, v3, o3, 0.125),
                  "plain sm_90a": lambda: mod["attention_plain_sm_90a"](q3, k3, v3, o3, 0.125)})
    print("\n%d passed, %d failed" % (12 - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
