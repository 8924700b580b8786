#!/usr/bin/env python3
"""sanitize.py - every attention and GEMM kernel file that bench/device.sh
launches (.devcarry/: attn/ and attn/lib/, wsa/, fa4/, plain/, gemm/,
tune/, validate/'s attention and GEMM; its other kernels are byte-identical
to those bench.py and interp_check.py run), each on small ragged cases checked against float32, in one process:
meant to run under compute-sanitizer (memcheck, racecheck, synccheck), so
that a run's sanitizer verdict covers the same kernels as its timings.

A file's kind comes from its metadata, not its name: params (Q, K, V, O,
LSE, scale) are attention over [Z, H, N, D] (GQA: K and V [Z, HK, NK, D]),
(Q, K, V, O, scale) attention over [BH, S, D]; (A, B, C) a GEMM, (A, B,
bias, C) a GEMM with the bias + GELU epilogue (GELU in the sigmoid form,
as tests/perf/gemm_bias_gelu.tile writes it); B given as [N, K] is read
transposed. The references are computed on the CPU, in float32 from the
inputs as rounded, so that only tilec's kernels (and torch's fills and
copies) run under the tool. Causal: the file name's
`_c` / `true` (the prepared files are named so). A module with a portable
fallback (TMA kernels) also gets a view TMA cannot take, so that the
fallback runs under the tools too. Files of an arch the device cannot run
(sm_100a on an H200) are counted and left out.

usage: python3 sanitize.py [--only SUBSTRING] [--dir FOLDER ...] [--list]
(TILEC_LIB_DIR: the folder with libtilert.so; PYTHONPATH: python/)."""
import argparse
import glob
import hashlib
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
CARRY = os.environ.get("TILEC_CARRY", os.path.join(ROOT, ".devcarry"))   # as bench.py
GLOBS = ("attn/*.ptx", "attn/lib/*.ptx", "wsa/*.ptx", "fa4/*.ptx", "plain/*.ptx", "gemm/*.ptx", "gemm_f8/*.ptx",
         "tune/*/*.ptx", "validate/attention*.ptx", "validate/gemm*.ptx")
ARCH_CC = {"sm_86": (8, 0), "sm_90a": (9, 0), "sm_100a": (10, 0)}


def files(dirs=None):
    """The prepared files (GLOBS under .devcarry), or every .ptx in dirs
    (an experiment's folders)."""
    out = []
    for g in ([os.path.join(d, "*.ptx") for d in dirs] if dirs else [os.path.join(CARRY, g) for g in GLOBS]):
        out.extend(sorted(glob.glob(g)))
    return out


def select(only="", dirs=None):
    """(the distinct files whose path contains `only`, how many others were
    byte-identical to one of them): PTX and metadata (but its compiler
    line) the same make the same kernel, launched alike."""
    seen, distinct, same = set(), [], 0
    for path in files(dirs):
        if only not in path:
            continue
        with open(path, "rb") as f, open(path[:-4] + ".meta", "rb") as g:
            body = hashlib.sha256(f.read() + b"".join(ln for ln in g.readlines()
                                                      if not ln.startswith(b"compiler "))).hexdigest()
        if body in seen:
            same += 1
            continue
        seen.add(body)
        distinct.append(path)
    return distinct, same


def kind(k):
    """'attn4', 'attn3', 'gemm', 'gemm_bias' or None, from the params."""
    names = tuple(p.name for p in k.params)
    if names[:5] == ("Q", "K", "V", "O", "LSE") and len(names) == 6:
        return "attn4"
    if names[:4] == ("Q", "K", "V", "O") and len(names) == 5 and len(k.params[0].shape) == 3:
        return "attn3"
    tensors = [p for p in k.params if p.kind == "tensor"]
    if len(tensors) == len(k.params) and len(tensors) in (3, 4) and all(len(p.shape) in (1, 2) for p in tensors):
        return "gemm" if len(tensors) == 3 else "gemm_bias"
    return None


def runnable(arch, cc):
    need = ARCH_CC.get(arch)
    if need is None:
        return False
    if arch.endswith("a"):   # arch-specific PTX runs on that major only
        return cc[0] == need[0]
    return cc >= need


def causal_of(path):
    toks = os.path.basename(path)[:-4].split("_")
    return "c" in toks or "true" in toks


def rel(a, b):
    a = a.float().cpu()
    den = b.norm().item()
    return (a - b).norm().item() / (den if den > 0 else 1.0)


def dtype(name):
    import torch
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f8e4m3": torch.float8_e4m3fn,
            "f8e5m2": torch.float8_e5m2, "f32": torch.float32}[name]


def rand(shape, dt, scale=1.0):
    """Random values on the GPU in dtype dt (f8 through float32)."""
    import torch
    return (torch.randn(shape, device="cuda") * scale).to(dt)


def misaligned(t):
    """A copy of t as a view whose rows start 16 bytes in and are one element
    wider than that: a row stride no TMA box can take, a start the portable
    kernels' 16-byte vectors still can."""
    import torch
    off = 16 // t.element_size()
    big = torch.empty(t.shape[:-1] + (t.shape[-1] + off + 1,), device=t.device, dtype=t.dtype)
    v = big[..., off:off + t.shape[-1]]
    v.copy_(t)
    return v


def attn_ref(q, k, v, causal, scale):
    import torch
    g = q.shape[1] // k.shape[1]
    qf, kf, vf = q.float().cpu(), k.float().cpu().repeat_interleave(g, 1), v.float().cpu().repeat_interleave(g, 1)
    s = torch.matmul(qf, kf.transpose(-1, -2)) * scale
    if causal:
        n, nk = s.shape[-2], s.shape[-1]
        s = s.masked_fill(torch.ones(n, nk, dtype=torch.bool).triu(1), float("-inf"))
    return torch.matmul(torch.softmax(s, -1), vf), torch.logsumexp(s, -1) / 0.6931471805599453


def run_attn4(mod, k, causal, bad_view, quick):
    import torch
    dt = dtype(k.params[0].dtype)
    d = k.params[0].shape[-1]
    res = []
    for n, hk, g in ((130, 1, 2),) if quick else ((300, 1, 2), (65, 2, 1)):
        q = torch.randn(1, hk * g, n, d, device="cuda", dtype=dt)
        kk = torch.randn(1, hk, n, d, device="cuda", dtype=dt)
        v = torch.randn(1, hk, n, d, device="cuda", dtype=dt)
        o = torch.full_like(q, float("nan"))
        lse = torch.full((1, hk * g, n), float("nan"), device="cuda")
        ins = [misaligned(x) for x in (q, kk, v)] if bad_view else [q, kk, v]
        mod(*ins, o, lse, d ** -0.5)
        torch.cuda.synchronize()
        ro, rl = attn_ref(q, kk, v, causal, d ** -0.5)
        eo = rel(o, ro)
        ok = eo <= 1e-2 and rel(lse, rl) <= 1e-3 and not torch.isnan(o.float()).any().item()
        res.append(("N=%d H/HK=%d%s" % (n, g, " misaligned" if bad_view else ""), eo, ok))
    return res


def run_attn3(mod, k, causal):
    import torch
    dt = dtype(k.params[0].dtype)
    d = k.params[0].shape[-1]
    q, kk, v = (torch.randn(2, 300, d, device="cuda", dtype=dt) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    mod(q, kk, v, o, d ** -0.5)
    torch.cuda.synchronize()
    ro, _ = attn_ref(q.unsqueeze(0), kk.unsqueeze(0), v.unsqueeze(0), causal, d ** -0.5)
    eo = rel(o, ro[0])
    return [("BH=2 S=300", eo, eo <= 1e-2 and not torch.isnan(o.float()).any().item())]


def run_gemm(mod, k, bias, bad_view, quick):
    import torch
    pa, pb, pc = k.params[0], k.params[1], k.params[-1]
    da, db, dc = dtype(pa.dtype), dtype(pb.dtype), dtype(pc.dtype)
    nt = pb.shape[0] == pc.shape[1]          # B given as [N, K]
    tol = 6e-2 if pc.dtype.startswith("f8") else 1e-2   # an f8 result rounds to 3 mantissa bits
    res = []
    for m, n, kd in ((300, 264, 1000),) if quick else ((300, 264, 1000), (17, 1000, 64), (129, 136, 0)):
        a = rand((m, kd), da)
        b = rand((n, kd) if nt else (kd, n), db, 1.0 / max(kd, 1) ** 0.5)
        c = torch.empty((m, n), device="cuda", dtype=dc)
        c.view(torch.uint8).fill_(0x7f) if c.element_size() == 1 else c.fill_(float("nan"))
        bv = torch.randn(n, device="cuda")
        ins = [misaligned(a), b] if bad_view else [a, b]
        mod(*ins, bv, c) if bias else mod(*ins, c)
        torch.cuda.synchronize()
        bf = b.float().cpu()
        ref = a.float().cpu() @ (bf.t() if nt else bf)
        if bias:
            z = ref + bv.cpu()
            ref = z * torch.sigmoid(1.702 * z)
        e = rel(c, ref)
        res.append(("%dx%dx%d%s" % (m, n, kd, " misaligned" if bad_view else ""), e,
                    e <= tol and not torch.isnan(c.float()).any().item()))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="files whose path contains this text")
    ap.add_argument("--list", action="store_true", help="list the files and their kinds (no GPU)")
    ap.add_argument("--dir", action="append", default=[],
                    help="every .ptx of this folder instead of the prepared ones (repeatable; experiments)")
    ap.add_argument("--shard", default="0/1", metavar="I/K",
                    help="the I-th of K equal parts of the distinct files (processes side by side)")
    ap.add_argument("--quick", action="store_true",
                    help="one case a kernel (and one for its fallback): for the slower tools")
    a = ap.parse_args()
    import tilec
    if a.list:
        cc = (9, 0)
    else:
        import torch
        cc = torch.cuda.get_device_capability()
    shard, nshards = (int(v) for v in a.shard.split("/"))
    bad = ran = skipped = 0
    distinct, same = select(a.only, a.dir)
    for path in distinct[shard::nshards]:
        t0 = time.monotonic()
        name = os.path.relpath(path, CARRY)
        mod = tilec.load_files(path)
        k = mod.kernels[0]
        kd = kind(k)
        if kd is None:
            print("FAIL %-58s unknown params %s" % (name, k.params))
            bad += 1
            continue
        if not runnable(k.arch, cc):
            skipped += 1
            continue
        if a.list:
            print("%-60s %s %s%s" % (name, k.arch, kd, " + fallback" if k.fallback else ""))
            continue
        causal = causal_of(path)
        try:
            if kd == "attn4":
                res = run_attn4(mod, k, causal, False, a.quick)
                if k.fallback:
                    res += run_attn4(mod, k, causal, True, a.quick)
            elif kd == "attn3":
                res = run_attn3(mod, k, causal)
            else:
                res = run_gemm(mod, k, kd == "gemm_bias", False, a.quick)
                if k.fallback:
                    res += run_gemm(mod, k, kd == "gemm_bias", True, a.quick)
        except Exception as e:  # noqa: BLE001 - report and go on
            res = [("launch", float("nan"), False)]
            print("ERROR %s: %r" % (name, e), flush=True)
        ran += 1
        ok = all(r[2] for r in res)
        bad += not ok
        print("%-60s %-7s %s  %s  (%.1f s)" % (name, kd, "  ".join("%s %.1e" % (c, e) for c, e, _ in res),
                                              "ok" if ok else "FAIL", time.monotonic() - t0), flush=True)
    print("sanitize.py%s: %d files run, %d failed, %d byte-identical to one run, %d of another arch left out"
          % (" shard %s" % a.shard if nshards > 1 else "", ran, bad, same, skipped))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
