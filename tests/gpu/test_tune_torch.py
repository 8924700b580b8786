#!/usr/bin/env python3
"""GPU test of autotuning from Python (docs/python.md, "Autotuning") with
PyTorch tensors: tilec.compile(examples/gemm.tile, autotune=True) tunes on
the first call of a shape class (every candidate timed, the fastest kept,
the result right; the candidates' code made by parallel ptxas processes
where a ptxas is found, and by the driver's JIT with ptxas=False, the
result right too), launches the kept kernel directly on later calls of the
class, tunes again for a new class, and a second Tuned sharing the cache
folder takes the decision from it without timing; tilec.autotune on two
modules; the attention example tuned likewise against PyTorch's attention.

    python3 tests/gpu/test_tune_torch.py             compiles (needs libtilec)
    python3 tests/gpu/test_tune_torch.py DIR         the candidates precompiled by
        tilec.precompile_candidates into DIR/gemm and DIR/attn_d64 (bench/autotune.py
        --prepare writes them for an H200)

Exits 77 without torch, a CUDA device or (without DIR) libtilec.
"""
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

try:
    import torch
except ImportError:
    print("skipped: no torch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: no CUDA device")
    sys.exit(77)
import tilec  # noqa: E402
from tilec import _lib  # noqa: E402

PTX_DIR = sys.argv[1] if len(sys.argv) > 1 else None
if PTX_DIR is None:
    try:
        _lib.tilec()
    except OSError as e:
        print("skipped: no libtilec (%s) and no folder of precompiled candidates" % e)
        sys.exit(77)

failures = []


def check(name, cond, detail=""):
    print("%s %s%s" % ("ok  " if cond else "FAIL", name, (": " + str(detail)) if not cond else ""), flush=True)
    if not cond:
        failures.append(name)


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def tuned(path, sub, **kw):
    if PTX_DIR:
        return tilec.Tuned(path, ptx_dir=os.path.join(PTX_DIR, sub), **kw)
    if "ptxas" in kw:     # a Tuned argument that compile(autotune=True) does not take
        return tilec.Tuned(path, **kw)
    return tilec.compile(path, autotune=True, **kw)


def test_gemm(cache_dir):
    gemm = os.path.join(ROOT, "examples", "gemm.tile")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    kw = dict(arch=tilec.device_arch(), pass_options={"target.sms": min(sms, 1024)}, cache="disk",
              cache_dir=cache_dir)
    t = tuned(gemm, "gemm", **kw)
    m = n = k = 2048
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    t(a, b, c)
    torch.cuda.synchronize()
    info = t.last_tuning
    print("  %r" % info)
    check("first call tunes: every candidate timed", info is not None and not info.from_cache and
          info.result is not None and len(info.result.ms) == len(info.candidates) >= 2, info)
    check("the kept candidate is the fastest measured",
          info.result.ms[info.best] == min(info.result.ms), info.result.ms)
    check("the result is right", rel(c, a.float() @ b.float()) < 1e-2, rel(c, a.float() @ b.float()))
    check("the candidates' code: cubins from parallel ptxas processes where a ptxas is found, else the driver's JIT",
          info.jit == ("ptxas" if tilec._ptxas() else "driver"), (info.jit, tilec._ptxas()))
    # the same class with the driver's JIT of each PTX: the same pick's result, bit for bit
    dj = tuned(gemm, "gemm", ptxas=False, **dict(kw, cache="off"))
    cd = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    dj(a, b, cd)
    check("ptxas=False: the driver's JIT, the result right", dj.last_tuning.jit == "driver" and
          rel(cd, a.float() @ b.float()) < 1e-2, (dj.last_tuning.jit, rel(cd, a.float() @ b.float())))
    print("  first call: %.3f s with %s code, %.3f s with the driver's JIT (load %.3f s against %.3f s)" % (
        info.total_s, info.jit, dj.last_tuning.total_s, info.load_s, dj.last_tuning.load_s))
    c2 = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    t(a, b, c2)
    check("a later call of the class launches the kept kernel, no tuning", t.last_tuning is info and
          torch.equal(c, c2))
    c3 = torch.empty(m - 100, n, device="cuda", dtype=torch.bfloat16)
    t(a[: m - 100], b, c3)
    check("2048 - 100 rows: the same class", t.last_tuning is info)
    a4 = torch.randn(512, 4096, device="cuda", dtype=torch.bfloat16)
    b4 = torch.randn(4096, 256, device="cuda", dtype=torch.bfloat16)
    c4 = torch.empty(512, 256, device="cuda", dtype=torch.bfloat16)
    t(a4, b4, c4)
    check("another class tunes again", t.last_tuning is not info and t.last_tuning.shape_class == "M=512,K=4096,N=256"
          and rel(c4, a4.float() @ b4.float()) < 1e-2, t.last_tuning)
    u = tuned(gemm, "gemm", **kw)
    c5 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    u(a, b, c5)
    check("a new Tuned on the same cache folder takes the decision without timing",
          u.last_tuning.from_cache and u.last_tuning.best == info.best and u.last_tuning.time_s == 0
          and torch.equal(c5, c), u.last_tuning)
    # tilec.autotune on the kept module and itself: two candidates, one answer
    kk = t.kernel_for(a, b, c)
    r = tilec.autotune([kk, kk], a, b, c, rounds=3)
    check("tilec.autotune: two times, a best", len(r.ms) == 2 and r.best in (0, 1) and r.launches >= 1, r)
    print("  gemm %s: candidates %s, kept %d, ms %s; first call %.3f s (compile %.3f, load %.3f, time %.3f)" % (
        info.shape_class, info.candidates, info.best, ["%.4f" % x for x in info.result.ms], info.total_s,
        info.compile_s, info.load_s, info.time_s))


def test_attention(cache_dir):
    attn = os.path.join(ROOT, "examples", "attention.tile")
    props = torch.cuda.get_device_properties(0)
    po = {"target.sms": min(props.multi_processor_count, 1024),
          "target.smem-per-block": min(props.shared_memory_per_block_optin, 232448)}
    t = tuned(attn, "attn_d64", arch=tilec.device_arch(), pass_options=po, cache="disk", cache_dir=cache_dir, D=64)
    z, h, n, d = 2, 8, 1024, 64
    q, k, v = (torch.randn(z, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(z, h, n, device="cuda", dtype=torch.float32)
    scale = d ** -0.5
    t(q, k, v, o, lse, scale)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=scale)
    info = t.last_tuning
    print("  %r" % info)
    check("attention: tuned, the result right", info is not None and rel(o, ref) < 2e-2, rel(o, ref))
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    want = torch.logsumexp(s, -1) / math.log(2)
    check("attention: LSE right", (lse - want).abs().max().item() < 1e-2, (lse - want).abs().max().item())


def main():
    with tempfile.TemporaryDirectory() as d:
        test_gemm(d)
        test_attention(d)
        check("decisions in the cache folder", any(f.endswith(".tune") for f in os.listdir(d)), os.listdir(d))
    print("%d failure(s)" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
