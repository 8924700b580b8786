#!/usr/bin/env python3
"""attn_interp_check.py - attention forward: the Tile IR interpreter agrees with
the GPU on small shapes.

The build machine's bench/attn_prepare.sh compiles the attention PTX into
.devcarry/attn/ and then runs build/bin/attn_interp_ref (tests/gpu/
attn_interp_ref.c), which interprets the same kernel source with the same
defines on small cases (N 1..130, D 64/128, causal or not, bf16/f16, Z 1/2,
H 2, HK 1/2) and writes the inputs, the interpreter's O and LSE and a
manifest into .devcarry/attn_interp/. On the GPU machine (bench/device.sh):
  TILEC_LIB_DIR=/tmp/rt/lib python3 bench/attn_interp_check.py [--only TEXT]
launches every PTX file listed for a case (loaded from .devcarry/attn, no
libtilec needed) on the case's inputs, O and LSE poisoned with NaN first, and
compares with the interpreter's O and LSE. Each side's error to a float64
reference computed here is printed too, so a failure can be attributed: the
side far from float64 is the wrong one.

Tolerance. Both sides compute S, the running max, P = exp2(S - m), l and the
accumulator in f32, round P to the dtype before P @ V and O at the end. They
differ by the GPU's ex2/lg2/rcp approximations (relative error ~2^-22) and
the MMA summation order: ~1e-6 relative in f32, which reaches the stored O
only where a dtype rounding flips by one ulp (probability ~1e-6 / 2^-8 for
bf16), so the expected O difference is below 1e-4 relative Frobenius and the
LSE (f32, |LSE| < 16) difference below 1e-5. Bounds: O relative Frobenius
<= 2e-3 (the size of the bf16 rounding error itself, 20x the expected noise)
and LSE max abs <= 1e-3; one key dropped or added out of 130 moves that row's
O by ~1e-1 relative and its LSE by ~1e-2, so a masking or tail bug fails.
Any NaN left in the GPU's output fails. Exit status 1 on any failure.

  --dry-run  (no GPU, no torch) checks the manifest: every file present with
             the size its shape gives, the interpreter's outputs finite, every
             PTX and .meta present, the tiles tilec.attention picks covered
             (and the default=1 cases on them), and for N <= 17 a float64
             reference in plain Python against the interpreter's recorded
             error.
"""
import argparse
import math
import os
import struct
import sys
from array import array

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

TOL_O = 2e-3        # relative Frobenius, GPU O vs interpreter O
TOL_LSE = 1e-3      # max abs, log2 units
ESIZE = {"bf16": 2, "f16": 2, "f32": 4}
LOG2E = 1.4426950408889634


def read_manifest(path):
    cases = []
    with open(path) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            c = dict(kv.split("=", 1) for kv in line.split())
            for key in ("Z", "H", "HK", "N", "D", "BM", "BN", "causal", "default"):
                c[key] = int(c[key])
            c["scale"] = float(c["scale"])
            c["ptx"] = [p for p in c["ptx"].split(",") if p]
            cases.append(c)
    return cases


def shapes(c):
    q = (c["Z"], c["H"], c["N"], c["D"])
    kv = (c["Z"], c["HK"], c["N"], c["D"])
    return {"q": (q, c["dtype"]), "k": (kv, c["dtype"]), "v": (kv, c["dtype"]),
            "o": (q, c["dtype"]), "lse": (q[:3], "f32")}


def ptx_arch(name):
    """attn_<dt>_sm_<arch>_... -> 'sm_<arch>'."""
    return "_".join(name.split("_")[2:4])


# ---- dry run: plain Python ----

def decode(raw, dt):
    if dt == "f32":
        a = array("f")
        a.frombytes(raw)
        return list(a)
    if dt == "f16":
        return list(struct.unpack("<%de" % (len(raw) // 2), raw))
    hs = struct.unpack("<%dH" % (len(raw) // 2), raw)
    return list(struct.unpack("<%df" % len(hs), struct.pack("<%dI" % len(hs), *(h << 16 for h in hs))))


def reference_py(c, q, k, v):
    """O and LSE (log2 units) in float64, flat row-major lists."""
    z, h, hk, n, d = c["Z"], c["H"], c["HK"], c["N"], c["D"]
    o, lse = [0.0] * (z * h * n * d), [0.0] * (z * h * n)
    for zh in range(z * h):
        qb, kb = zh * n * d, ((zh // h) * hk + (zh % h) // (h // hk)) * n * d
        for i in range(n):
            hi = i + 1 if c["causal"] else n
            qi = q[qb + i * d: qb + (i + 1) * d]
            s = [sum(a * b for a, b in zip(qi, k[kb + j * d: kb + (j + 1) * d])) * c["scale"] * LOG2E
                 for j in range(hi)]
            m = max(s)
            p = [2.0 ** (x - m) for x in s]
            lsum = sum(p)
            for e in range(d):
                o[qb + i * d + e] = sum(p[j] * v[kb + j * d + e] for j in range(hi)) / lsum
            lse[zh * n + i] = m + math.log2(lsum)
    return o, lse


def rel_py(got, want):
    num = sum((a - b) ** 2 for a, b in zip(got, want))
    den = sum(b * b for b in want)
    return math.sqrt(num / den) if den > 0 else math.sqrt(num)


def dry_case(c, idir, adir):
    """A list of problems with one case (empty: fine)."""
    bad, data = [], {}
    for key, (shape, dt) in shapes(c).items():
        path = os.path.join(idir, c[key])
        want = math.prod(shape) * ESIZE[dt]
        if not os.path.isfile(path) or os.path.getsize(path) != want:
            bad.append("%s: missing or not %d bytes" % (c[key], want))
            continue
        with open(path, "rb") as f:
            data[key] = decode(f.read(), dt)
    for key in ("o", "lse"):
        if key in data and not all(math.isfinite(x) for x in data[key]):
            bad.append("interpreter %s has non-finite values" % key)
    if not c["ptx"]:
        bad.append("no PTX listed")
    for p in c["ptx"]:
        for f in (p, p[:-4] + ".meta"):
            if not os.path.isfile(os.path.join(adir, f)):
                bad.append("missing %s" % f)
    if c["N"] <= 17 and len(data) == 5 and not bad:
        ro, rl = reference_py(c, data["q"], data["k"], data["v"])
        eo, el = rel_py(data["o"], ro), rel_py(data["lse"], rl)
        ro_rec, rl_rec = float(c["interp_vs_f64_o"]), float(c["interp_vs_f64_lse"])
        if abs(eo - ro_rec) > 0.01 * ro_rec + 1e-7 or abs(el - rl_rec) > 0.01 * rl_rec + 1e-7:
            bad.append("float64 reference here: O %.3e LSE %.3e, recorded %.3e %.3e" % (eo, el, ro_rec, rl_rec))
    return bad


def dry_run(cases, idir, adir, whole):
    nbad = 0
    for c in cases:
        bad = dry_case(c, idir, adir)
        nbad += bool(bad)
        print("  %-4s %-36s %d PTX%s" % ("ok" if not bad else "FAIL", c["case"], len(c["ptx"]),
                                         "" if not bad else ": " + "; ".join(bad)), flush=True)
    print("dry run: %d cases, %d PTX launches planned, %d problems"
          % (len(cases), sum(len(c["ptx"]) for c in cases), nbad))
    return nbad == 0


# ---- on the GPU ----

def gpu_run(cases, idir, adir):
    import torch
    import tilec
    dev_arch = tilec.device_arch() or ""
    passed = failed = skipped = 0
    print("device:", torch.cuda.get_device_name(0), dev_arch, "| torch", torch.__version__, flush=True)
    print("tolerance: O rel Frobenius <= %.0e, LSE max abs <= %.0e (GPU vs interpreter)" % (TOL_O, TOL_LSE))
    for c in cases:
        t = load_case(torch, c, idir)
        ro, rl = reference_torch(torch, c, t)
        for p in c["ptx"]:
            if not runs_on(ptx_arch(p), dev_arch):
                skipped += 1
                print("  skip %-36s %s (not for %s)" % (c["case"], p, dev_arch), flush=True)
                continue
            ok, line = check_one(torch, tilec, c, t, ro, rl, os.path.join(adir, p))
            passed += ok
            failed += not ok
            print("  %-4s %-36s %s %s" % ("ok" if ok else "FAIL", c["case"], p[:-4], line), flush=True)
    print("interp-vs-gpu: %d passed, %d failed%s" % (passed, failed, ", %d skipped" % skipped if skipped else ""))
    return failed == 0 and passed > 0


def runs_on(arch, dev_arch):
    """PTX for sm_XY runs on devices >= XY; an arch-specific sm_XYa only on XY."""
    num = lambda a: int("".join(ch for ch in a[3:] if ch.isdigit()) or 0)  # noqa: E731
    if not dev_arch:
        return True
    if arch.endswith("a"):
        return num(arch) == num(dev_arch)
    return num(arch) <= num(dev_arch)


def load_case(torch, c, idir):
    dts = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    t = {}
    for key, (shape, dt) in shapes(c).items():
        with open(os.path.join(idir, c[key]), "rb") as f:
            raw = bytearray(f.read())
        t[key] = torch.frombuffer(raw, dtype=dts[dt]).reshape(shape).cuda()
    return t


def reference_torch(torch, c, t):
    """(O, LSE) in float64 from the same inputs; LSE in log2 units."""
    g = c["H"] // c["HK"]
    q = t["q"].double()
    k, v = (t[x].double().repeat_interleave(g, 1) for x in ("k", "v"))
    s = torch.matmul(q, k.transpose(-1, -2)) * (c["scale"] * LOG2E)
    if c["causal"]:
        n = c["N"]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    m = s.amax(-1, keepdim=True)
    p = torch.exp2(s - m)
    lsum = p.sum(-1, keepdim=True)
    return torch.matmul(p / lsum, v), (m + torch.log2(lsum)).squeeze(-1)


def rel(a, b):
    den = b.double().norm().item()
    num = (a.double() - b.double()).norm().item()
    return num / den if den > 0 else num


_mods = {}


def check_one(torch, tilec, c, t, ro, rl, ptx):
    try:
        mod = _mods.get(ptx)
        if mod is None:
            mod = _mods[ptx] = tilec.load_files(ptx)
        o = torch.full_like(t["q"], float("nan"))
        lse = torch.full(tuple(t["lse"].shape), float("nan"), device="cuda")
        mod(t["q"], t["k"], t["v"], o, lse, c["scale"])
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - report and go on
        return False, "launch failed: %s" % str(e)[:160]
    nan = torch.isnan(o).sum().item() + torch.isnan(lse).sum().item()
    io, il = t["o"], t["lse"]
    eo = rel(o, io)
    mo = (o.float() - io.float()).abs().max().item()
    ml = (lse - il).abs().max().item()
    ndiff = (o != io).sum().item()
    ok = nan == 0 and eo <= TOL_O and ml <= TOL_LSE
    line = ("O max abs %.1e rel %.1e (%d/%d differ) LSE max abs %.1e%s | vs f64: interp O %.1e LSE %.1e,"
            " gpu O %.1e LSE %.1e" % (mo, eo, ndiff, o.numel(), ml, " NaN %d" % nan if nan else "",
                                      rel(io, ro), (il.double() - rl).abs().max().item(),
                                      rel(o, ro), (lse.double() - rl).abs().max().item()))
    return ok, line


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=os.path.join(ROOT, ".devcarry", "attn_interp"),
                    help="attn_interp_ref's output (manifest.txt)")
    ap.add_argument("--attn-dir", default=os.path.join(ROOT, ".devcarry", "attn"), help="the PTX + .meta")
    ap.add_argument("--only", default="", help="cases whose name contains this text")
    ap.add_argument("--dry-run", action="store_true", help="check the files only (no GPU)")
    args = ap.parse_args()
    man = os.path.join(args.dir, "manifest.txt")
    if not os.path.isfile(man):
        print("no %s (bench/attn_prepare.sh writes it on the build machine)" % man)
        return 1
    cases = [c for c in read_manifest(man) if args.only in c["case"]]
    if not cases:
        print("no cases in %s%s" % (man, " matching " + args.only if args.only else ""))
        return 1
    ok = dry_run(cases, args.dir, args.attn_dir, not args.only) if args.dry_run else gpu_run(cases, args.dir, args.attn_dir)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
