"""Correctness checks and benchmarks for tilec kernels on the GPU.

Run by bench/device.sh in one call on the GPU machine. Every check draws
fresh random inputs, poisons outputs with NaN first, and compares against a
float64/float32 reference; every timing is the median of do_bench, with the
peers (PyTorch, cuDNN, cuBLAS) timed in the same run.
"""
import argparse
import json
import math
import os
import sys
import traceback

import torch
import torch.nn.functional as F
from triton.testing import do_bench

import tilec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
TOL = {"bf16": 1e-2, "f16": 2e-3, "f32": 1e-5}
results = {"checks": [], "bench": []}
failures = 0


def ex(name):
    return os.path.join(ROOT, "examples", name + ".tile")


def rel_err(out, ref):
    out = out.double()
    ref = ref.double()
    if torch.isnan(out).any():
        return float("inf")
    return (torch.linalg.vector_norm(out - ref) / max(torch.linalg.vector_norm(ref).item(), 1e-30)).item()


def check(name, err, tol):
    global failures
    ok = err <= tol
    failures += 0 if ok else 1
    results["checks"].append({"name": name, "err": err, "tol": tol, "ok": ok})
    print(f"  {'ok  ' if ok else 'FAIL'} {name}: rel err {err:.2e} (tol {tol:.0e})")


def guarded(name, fn):
    global failures
    try:
        fn()
    except Exception as e:  # a failing check must not stop the others
        failures += 1
        results["checks"].append({"name": name, "ok": False, "error": repr(e)})
        print(f"  FAIL {name}: {e!r}")
        traceback.print_exc()


def next_pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def poison(*ts):
    for t in ts:
        t.fill_(float("nan")) if t.is_floating_point() else t.fill_(-1)


# ---------------------------------------------------------------- correctness

def check_vector_add(arch):
    k = tilec.compile(ex("vector_add"), arch=arch)
    for n in (1, 127, 1000, 4097, 1 << 20):
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        z = torch.empty(n, device="cuda")
        poison(z)
        k(x, y, z)
        torch.cuda.synchronize()
        check(f"vector_add {arch} n={n}", rel_err(z, x.double() + y.double()), 1e-6)


def check_softmax(arch):
    for dt in ("bf16", "f16", "f32"):
        for cols in (1, 127, 1000, 4097):
            rows = 67
            k = tilec.compile(ex("softmax"), arch=arch, BLOCK=next_pow2(cols), T=dt)
            x = (torch.randn(rows, cols, device="cuda") * 3).to(DTYPES[dt])
            y = torch.empty_like(x)
            poison(y)
            k(x, y)
            torch.cuda.synchronize()
            ref = torch.softmax(x.double(), dim=-1)
            check(f"softmax {arch} {dt} {rows}x{cols}", rel_err(y, ref), TOL[dt])


def check_layernorm(arch):
    for dt in ("bf16", "f16", "f32"):
        for cols in (1, 127, 1000, 4097):
            rows = 37
            k = tilec.compile(ex("layernorm"), arch=arch, BLOCK=next_pow2(cols), T=dt)
            x = (torch.randn(rows, cols, device="cuda") * 2 + 0.5).to(DTYPES[dt])
            w = torch.randn(cols, device="cuda").to(DTYPES[dt])
            b = torch.randn(cols, device="cuda").to(DTYPES[dt])
            y = torch.empty_like(x)
            poison(y)
            k(x, w, b, y, 1e-5)
            torch.cuda.synchronize()
            ref = F.layer_norm(x.double(), (cols,), w.double(), b.double(), 1e-5)
            check(f"layernorm {arch} {dt} {rows}x{cols}", rel_err(y, ref), TOL[dt] * 2)


def check_transpose(arch):
    for dt in ("bf16", "f32"):
        for (m, n) in ((1, 1), (127, 1000), (4097, 33), (1024, 1024)):
            k = tilec.compile(ex("transpose"), arch=arch, T=dt)
            x = torch.randn(m, n, device="cuda").to(DTYPES[dt])
            y = torch.empty(n, m, device="cuda", dtype=DTYPES[dt])
            poison(y)
            k(x, y)
            torch.cuda.synchronize()
            check(f"transpose {arch} {dt} {m}x{n}", rel_err(y, x.t()), 0.0)


def check_reduction(arch):
    for dt in ("bf16", "f32"):
        for cols in (1, 127, 1000, 4097):
            rows = 33
            k = tilec.compile(ex("reduction"), arch=arch, BLOCK=next_pow2(cols), T=dt)
            x = torch.randn(rows, cols, device="cuda").to(DTYPES[dt])
            y = torch.empty(rows, device="cuda", dtype=torch.float32)
            poison(y)
            k(x, y)
            torch.cuda.synchronize()
            check(f"reduction {arch} {dt} {rows}x{cols}", rel_err(y, x.double().sum(-1)), 1e-5)


def check_bad_launches(arch):
    global failures
    k = tilec.compile(ex("vector_add"), arch=arch)
    x = torch.randn(1000, device="cuda")
    cases = {
        "wrong dtype": (lambda: k(x.half(), x, x), "X"),
        "shape disagreement": (lambda: k(x, x[:999], x), "N"),
        "misaligned pointer": (lambda: k(x[1:], x[1:], x[1:]), "align"),
        "host tensor": (lambda: k(x.cpu(), x, x), "X"),
        "wrong arg count": (lambda: k(x, x), "argument"),
    }
    for name, (fn, needle) in cases.items():
        try:
            fn()
            torch.cuda.synchronize()
            ok, msg = False, "no error raised"
        except tilec.LaunchError as e:
            msg = str(e)
            ok = needle.lower() in msg.lower()
        except Exception as e:
            ok, msg = False, f"wrong exception type {e!r}"
        failures += 0 if ok else 1
        results["checks"].append({"name": f"bad launch: {name}", "ok": ok, "message": msg})
        print(f"  {'ok  ' if ok else 'FAIL'} bad launch ({name}): {msg}")


# ---------------------------------------------------------------- benchmarks

def bench(fn):
    return do_bench(fn, warmup=25, rep=200, return_mode="median")  # ms


def copy_bandwidth():
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_(0, 255)
    y = torch.empty_like(x)
    ms = bench(lambda: y.copy_(x))
    return 2 * x.numel() / (ms * 1e-3) / 1e9  # GB/s, read + write


def row(name, ms, nbytes, copy_gbs, peer_ms=None, peer="", flops=None):
    gbs = nbytes / (ms * 1e-3) / 1e9
    r = {"name": name, "ms": ms, "GB/s": gbs, "pct_copy": 100 * gbs / copy_gbs}
    if flops:
        r["TFLOP/s"] = flops / (ms * 1e-3) / 1e12
    if peer_ms:
        r["peer"] = peer
        r["peer_ms"] = peer_ms
        r["speedup"] = peer_ms / ms
    results["bench"].append(r)
    return r


def bench_memory_bound(arch, copy_gbs):
    rows = []
    for (m, n) in ((32768, 4096), (8192, 16384)):
        x = torch.randn(m, n, device="cuda").to(torch.bfloat16)
        y = torch.empty_like(x)
        k = tilec.compile(ex("softmax"), arch=arch, BLOCK=next_pow2(n), T="bf16")
        k(x, y)
        check(f"softmax bench-shape {m}x{n}", rel_err(y, torch.softmax(x.double(), -1)), 1e-2)
        rows.append(row(f"softmax bf16 {m}x{n} [{arch}]", bench(lambda: k(x, y)), 2 * x.numel() * 2,
                        copy_gbs, bench(lambda: torch.softmax(x, dim=-1)), "torch.softmax"))
        w = torch.randn(n, device="cuda").to(torch.bfloat16)
        b = torch.randn(n, device="cuda").to(torch.bfloat16)
        kl = tilec.compile(ex("layernorm"), arch=arch, BLOCK=next_pow2(n), T="bf16")
        kl(x, w, b, y, 1e-5)
        ref = F.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)
        check(f"layernorm bench-shape {m}x{n}", rel_err(y, ref), 2e-2)
        rows.append(row(f"layernorm bf16 {m}x{n} [{arch}]", bench(lambda: kl(x, w, b, y, 1e-5)),
                        2 * x.numel() * 2, copy_gbs,
                        bench(lambda: F.layer_norm(x, (n,), w, b, 1e-5)), "F.layer_norm"))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--arches", default="sm_90a,sm_86")
    ap.add_argument("--skip-bench", action="store_true")
    args = ap.parse_args()
    arches = args.arches.split(",")
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  cudnn {torch.backends.cudnn.version()}")

    for arch in arches:
        print(f"== correctness [{arch}]")
        for fn in (check_vector_add, check_softmax, check_layernorm, check_reduction, check_transpose,
                   check_bad_launches):
            guarded(f"{fn.__name__} {arch}", lambda: fn(arch))

    table = []
    if not args.skip_bench:
        copy_gbs = copy_bandwidth()
        print(f"== benchmark (copy bandwidth {copy_gbs:.0f} GB/s)")
        for arch in arches:
            guarded(f"bench {arch}", lambda: table.extend(bench_memory_bound(arch, copy_gbs)))
        results["copy_GBps"] = copy_gbs
        print()
        print(f"| kernel | tilec ms | GB/s | % copy BW | peer | peer ms | tilec / peer speed |")
        print(f"|---|---|---|---|---|---|---|")
        for r in table:
            print(f"| {r['name']} | {r['ms']:.4f} | {r['GB/s']:.0f} | {r['pct_copy']:.1f}% | {r.get('peer','')} | "
                  f"{r.get('peer_ms', float('nan')):.4f} | {r.get('speedup', float('nan')):.2f}x |")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"\n{sum(c['ok'] for c in results['checks'])} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
