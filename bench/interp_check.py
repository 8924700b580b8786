#!/usr/bin/env python3
"""interp_check.py - the interpreter mode gives the GPU's results: every
example on small shapes (tails in every dim), and kernels of tests/perf
that bench/bench.py times beside them, the same kernel source, defines
and inputs on both sides.

Build machine (bench/prepare.sh runs it; needs libtilec and libtilert
built, no GPU):
    TILEC_LIB_DIR=build/lib python3 bench/interp_check.py --prepare
for each case of CASES compiles the example for sm_90a with
tilec.compile twice, once to PTX (+ metadata) and once with
interpret=True, makes the inputs (seeded Python random numbers; the
outputs' initial contents too: NaN where the kernel writes, the table's
rows where a scatter leaves some), runs the kernel in the IR interpreter
(tilec_interpret, the semantic reference: docs/python.md, "Interpreter
mode") and writes every argument's initial bytes, the interpreter's
outputs, the PTX and a manifest into .devcarry/interp/.

GPU machine (bench/device.sh runs it; needs torch and libtilert):
    python3 bench/interp_check.py [--only TEXT]
launches each case's PTX on the same initial bytes through the Python
package and compares every output with the interpreter's, the whole
buffer (what a kernel must leave alone included). Exact cases (data
movement, integer, rand: vector_add, transpose, gather and scatter rows,
dropout's mask) must match bit for bit; the others differ by the GPU's
approximate ex2 / rsqrt / rcp and its summation orders: relative
Frobenius error at most TOL of the output's dtype (f32 1e-5; bf16 2e-3,
the size of one bf16 rounding: a result that rounds the other way in a
few elements stays far below it, a wrong row or a dropped tail element
does not), NaN in the same places. Attention's LSE: max abs 1e-3 (log2
units, as bench/attn_interp_check.py, which checks attention on a larger
matrix of shapes). One line per case, which kernel ran (a GEMM whose row
stride a tensor map cannot take runs the portable fallback) and a
closing `N passed, M failed`; exit status 1 on a failure.
"""
import argparse
import json
import math
import os
import random
import struct
import sys
from array import array

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARRY = os.environ.get("TILEC_CARRY", os.path.join(ROOT, ".devcarry"))
DIR = os.path.join(CARRY, "interp")
ARCH = "sm_90a"
TOL = {"f32": 1e-5, "bf16": 2e-3, "f16": 2e-3}
LSE_ABS = 1e-3
NAN32 = 0x7FC00000
NAN16 = {"bf16": 0x7FC0, "f16": 0x7E00}
CODE = {"f32": "f", "bf16": "H", "f16": "H", "i32": "i"}
SIZE = {"f32": 4, "bf16": 2, "f16": 2, "i32": 4}


def T(name, dtype, shape, init="gauss", out=False, exact=False, scale=1.0):
    """A tensor argument: init "gauss" (x scale), "nan" (an output the
    kernel writes), a list of values, or a callable(rng, n)."""
    return {"name": name, "dtype": dtype, "shape": list(shape), "init": init, "out": out, "exact": exact,
            "scale": scale}


def S(name, value):
    return {"name": name, "scalar": value}


def perm_ids(lo, hi, n):
    """n distinct ids drawn from lo .. hi - 1 (some outside the table)."""
    return lambda rng, _n: rng.sample(range(lo, hi), n)


def CASES():
    c = []
    n = 5000
    c.append(dict(name="vector_add", file="vector_add", kernel="vector_add",
                  args=[T("X", "f32", [n]), T("Y", "f32", [n]), T("Z", "f32", [n], "nan", True, exact=True)]))
    for dt, (m, n) in (("bf16", (7, 1000)), ("f32", (5, 777))):
        c.append(dict(name="softmax_" + dt, file="softmax", kernel="softmax", defines={"BLOCK": 1024, "T": dt},
                      args=[T("X", dt, [m, n], scale=3.0), T("Y", dt, [m, n], "nan", True)]))
    c.append(dict(name="layernorm_bf16", file="layernorm", kernel="layernorm", defines={"BLOCK": 1024, "T": "bf16"},
                  args=[T("X", "bf16", [5, 1000], scale=2.0), T("W", "bf16", [1000]), T("B", "bf16", [1000]),
                        T("Y", "bf16", [5, 1000], "nan", True), S("eps", 1e-5)]))
    c.append(dict(name="rmsnorm_bf16", file="rmsnorm", kernel="rmsnorm", defines={"BLOCK": 1024, "T": "bf16"},
                  args=[T("X", "bf16", [5, 1000], scale=2.0), T("W", "bf16", [1000]),
                        T("Y", "bf16", [5, 1000], "nan", True), S("eps", 1e-6)]))
    c.append(dict(name="cross_entropy", file="cross_entropy", kernel="cross_entropy",
                  defines={"BN": 1024, "T": "bf16", "I": "i32"},
                  args=[T("X", "bf16", [6, 3000], scale=3.0),
                        T("Tgt", "i32", [6], lambda rng, k: [rng.randrange(0, 3000) for _ in range(k - 1)] + [-100]),
                        T("L", "f32", [6], "nan", True)]))
    def lnb_args():
        return [T("X", "bf16", [13, 500]), T("DY", "bf16", [13, 500]), T("W", "bf16", [500]),
                T("Mean", "f32", [13], scale=0.1),
                T("Rstd", "f32", [13], lambda rng, k: [rng.uniform(0.5, 1.5) for _ in range(k)]),
                T("DX", "bf16", [13, 500], "nan", True), T("DW", "f32", [500], [0.0] * 500, True),
                T("DB", "f32", [500], [0.0] * 500, True)]
    c.append(dict(name="layernorm_bwd", file="layernorm_bwd", kernel="layernorm_bwd",
                  defines={"BLOCK": 512, "R": 2, "G": 3, "T": "bf16"}, args=lnb_args()))
    # the same with each trip's rows loaded a trip ahead (tests/perf): one row a trip, groups of 5
    # and 3 (the last trips load rows of the next group, or past M), and two rows a trip
    for r_, g_ in ((1, 5), (1, 3), (2, 3)):
        c.append(dict(name="layernorm_bwd_ahead_r%dg%d" % (r_, g_), file="tests/perf/layernorm_bwd_ahead",
                      kernel="layernorm_bwd", defines={"BLOCK": 512, "R": r_, "G": g_, "T": "bf16"},
                      args=lnb_args()))
    c.append(dict(name="row_sum", file="reduction", kernel="row_sum",
                  args=[T("X", "f32", [70, 300]), T("S", "f32", [70], "nan", True)]))
    c.append(dict(name="partial_sum", file="reduction", kernel="partial_sum",
                  args=[T("X", "f32", [10000]), T("P", "f32", [3], "nan", True)]))
    for dt, (m, n) in (("f32", (100, 70)), ("bf16", (65, 130))):
        c.append(dict(name="transpose_" + dt, file="transpose", kernel="transpose", defines={"T": dt},
                      args=[T("X", dt, [m, n]), T("Y", dt, [n, m], "nan", True, exact=True)]))
    c.append(dict(name="cumsum", file="cumsum", kernel="cumsum",
                  args=[T("X", "f32", [10, 1100]), T("Y", "f32", [10, 1100], "nan", True)]))
    c.append(dict(name="dropout", file="dropout", kernel="dropout", defines={"T": "f32"},
                  args=[T("X", "f32", [5000]), T("Y", "f32", [5000], "nan", True), S("p", 0.25), S("seed", 1234)],
                  zeros_exact=True))
    c.append(dict(name="gather_rows", file="gather_rows", kernel="gather_rows",
                  args=[T("E", "bf16", [50, 256]), T("Ids", "i32", [37], lambda rng, k: [rng.randrange(-3, 53)
                                                                                    for _ in range(k)]),
                        T("Y", "bf16", [37, 256], "nan", True, exact=True)]))
    c.append(dict(name="scatter_rows", file="gather_rows", kernel="scatter_rows",
                  args=[T("X", "bf16", [37, 256]), T("Ids", "i32", [37], perm_ids(-3, 53, 37)),
                        T("Y", "bf16", [50, 256], "gauss", True, exact=True)]))
    # the GEMM: aligned rows (tensor maps: the warp-specialized kernel) and
    # a 260-byte row of A (the portable fallback); tails in M, N and K
    c.append(dict(name="gemm_tma", file="gemm", kernel="gemm", defines={"T": "bf16"}, options={"target.sms": 132},
                  args=[T("A", "bf16", [300, 136]), T("B", "bf16", [136, 200]), T("C", "bf16", [300, 200], "nan", True)]))
    c.append(dict(name="gemm_fallback", file="gemm", kernel="gemm", defines={"T": "bf16"}, options={"target.sms": 132},
                  args=[T("A", "bf16", [100, 130]), T("B", "bf16", [130, 72]), T("C", "bf16", [100, 72], "nan", True)]))
    for d, causal, h, hk, nq in ((128, False, 2, 1, 200), (64, True, 2, 2, 130)):
        c.append(dict(name="attention_d%d_%s" % (d, "c" if causal else "f"), file="attention", kernel="attention",
                      defines={"D": d, "CAUSAL": causal}, dims={"N": nq, "NK": nq},
                      options={"target.sms": 132, "target.smem-per-block": 232448},
                      args=[T("Q", "bf16", [1, h, nq, d]), T("K", "bf16", [1, hk, nq, d]),
                            T("V", "bf16", [1, hk, nq, d]), T("O", "bf16", [1, h, nq, d], "nan", True),
                            T("LSE", "f32", [1, h, nq], "nan", True), S("scale", d ** -0.5)],
                      lse="LSE"))
    # decode attention's two kernels: pages of 32 keys through a shuffled
    # block table, chunks of 64 keys (every split of these lengths holds
    # keys, so every partial is defined); the combine on 3 splits, of
    # which the second sequence uses 2 (its third partial must be ignored)
    dd = {"D": 64, "G": 4, "PAGE": 32, "BN": 32, "CHUNK": 64}
    c.append(dict(name="decode_attention", file="decode_attention", kernel="decode_attention", defines=dd,
                  args=[T("Q", "bf16", [2, 8, 64]), T("Kc", "bf16", [10, 32, 2, 64]), T("Vc", "bf16", [10, 32, 2, 64]),
                        T("BT", "i32", [2, 4], perm_ids(0, 10, 8)), T("Lens", "i32", [2], [128, 100]),
                        T("Op", "f32", [2, 8, 2, 64], "nan", True), T("Lp", "f32", [2, 8, 2], "nan", True),
                        S("scale", 0.125)]))
    c.append(dict(name="decode_combine", file="decode_attention", kernel="decode_combine", defines=dd,
                  args=[T("Op", "f32", [2, 8, 3, 64]), T("Lp", "f32", [2, 8, 3], scale=3.0),
                        T("Lens", "i32", [2], [150, 100]), T("O", "bf16", [2, 8, 64], "nan", True)]))
    return c


# ---------------------------------------------------------------- build machine

def bf16_bits(vals):
    """Round-to-nearest-even bf16 bit patterns of floats (no NaN here)."""
    u = array("I")
    u.frombytes(array("f", vals).tobytes())
    return array("H", [((x + 0x7FFF + ((x >> 16) & 1)) >> 16) & 0xFFFF for x in u])


def initial(arg, rng):
    n = 1
    for s in arg["shape"]:
        n *= s
    dt, init = arg["dtype"], arg["init"]
    if init == "nan":
        if dt == "f32":
            a = array("I", [NAN32] * n)
            return array("f", a.tobytes())
        return array("H", [NAN16[dt]] * n)
    if callable(init):
        vals = init(rng, n)
    elif init == "gauss":
        vals = [rng.gauss(0.0, 1.0) * arg["scale"] for _ in range(n)]
    else:
        vals = list(init)
    if dt == "i32":
        return array("i", vals)
    if dt == "f32":
        return array("f", vals)
    if dt == "bf16":
        return bf16_bits(vals)
    return array("H", struct.unpack("<%dH" % n, struct.pack("<%de" % n, *vals)))


def case_file(case):
    """The case's source, relative to the checkout: an example by its name,
    else the path given (tests/perf/...)."""
    f = case["file"]
    return f + ".tile" if "/" in f else "examples/%s.tile" % f


def prepare(out_dir=DIR, seed=20261204):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tilec
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        os.remove(os.path.join(out_dir, f))
    manifest = []
    rng = random.Random(seed)
    for case in CASES():
        path = os.path.join(ROOT, case_file(case))
        kw = dict(case.get("defines", {}))
        common = dict(arch=ARCH, pass_options=case.get("options"), dims=case.get("dims"), cache="off")
        mod = tilec.compile(path, **common, **kw)
        imod = tilec.compile(path, interpret=True, **common, **kw)
        name = case["name"]
        with open(os.path.join(out_dir, name + ".ptx"), "w") as f:
            f.write(mod.ptx)
        with open(os.path.join(out_dir, name + ".meta"), "w") as f:
            f.write(mod.meta)
        args, rec = [], []
        for a in case["args"]:
            if "scalar" in a:
                args.append(a["scalar"])
                rec.append({"name": a["name"], "scalar": a["scalar"]})
                continue
            buf = initial(a, rng)
            fn = "%s.%s.init.bin" % (name, a["name"])
            with open(os.path.join(out_dir, fn), "wb") as f:
                f.write(buf.tobytes())
            args.append(memoryview(buf).cast("B").cast(buf.typecode, a["shape"]))
            rec.append({"name": a["name"], "dtype": a["dtype"], "shape": a["shape"], "init": fn, "keep": buf})
        imod[case["kernel"]](*args)
        for r, a in zip(rec, case["args"]):
            buf = r.pop("keep", None)
            if a.get("out"):
                r["interp"] = "%s.%s.interp.bin" % (name, a["name"])
                r["exact"] = a["exact"]
                with open(os.path.join(out_dir, r["interp"]), "wb") as f:
                    f.write(buf.tobytes())
        manifest.append({"name": name, "file": case_file(case), "kernel": case["kernel"],
                         "defines": {k: str(v) for k, v in case.get("defines", {}).items()},
                         "dims": case.get("dims"), "options": case.get("options"), "ptx": name + ".ptx",
                         "args": rec, "zeros_exact": case.get("zeros_exact", False), "lse": case.get("lse")})
        print("interp %-20s %s" % (name, ", ".join("%s%s" % (r["name"], r.get("shape", ""))
                                                   for r in rec if "interp" in r)))
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump({"arch": ARCH, "seed": seed, "cases": manifest}, f, indent=1)
    print("interp_check --prepare: %d cases -> %s" % (len(manifest), out_dir))


# ---------------------------------------------------------------- comparison (no torch)

def rel_frobenius(got, want):
    num = sum((a - b) ** 2 for a, b in zip(got, want))
    den = sum(b * b for b in want)
    return math.sqrt(num / den) if den > 0 else math.sqrt(num)


def decode(raw, dtype):
    """Floats (or ints) of little-endian bytes."""
    n = len(raw) // SIZE[dtype]
    if dtype == "f32":
        return list(struct.unpack("<%df" % n, raw))
    if dtype == "i32":
        return list(struct.unpack("<%di" % n, raw))
    if dtype == "f16":
        return list(struct.unpack("<%de" % n, raw))
    hs = struct.unpack("<%dH" % n, raw)
    return list(struct.unpack("<%df" % n, struct.pack("<%dI" % n, *(h << 16 for h in hs))))


def compare_output(got_raw, want_raw, dtype, exact, zeros_exact=False, max_abs=None):
    """(ok, text) for one output buffer: bit for bit when exact; else NaN
    in the same places and the relative Frobenius error of the rest within
    TOL[dtype] (or the max abs difference within max_abs)."""
    if len(got_raw) != len(want_raw):
        return False, "sizes differ (%d and %d bytes)" % (len(got_raw), len(want_raw))
    if exact:
        if got_raw == want_raw:
            return True, "bit-identical"
        g, w = decode(got_raw, dtype), decode(want_raw, dtype)
        bad = sum(1 for a, b in zip(g, w) if not (a == b or (a != a and b != b)))
        return False, "%d of %d elements differ" % (bad, len(g))
    g, w = decode(got_raw, dtype), decode(want_raw, dtype)
    nan_g = [a != a for a in g]
    nan_w = [b != b for b in w]
    if nan_g != nan_w:
        return False, "NaN in %d places, the interpreter in %d" % (sum(nan_g), sum(nan_w))
    pairs = [(a, b) for a, b, n in zip(g, w, nan_g) if not n]
    if zeros_exact:
        zg = sum(1 for a, b in pairs if (a == 0) != (b == 0))
        if zg:
            return False, "%d elements zero on one side only" % zg
    if max_abs is not None:
        e = max((abs(a - b) for a, b in pairs), default=0.0)
        return e <= max_abs, "max abs %.2e (tol %.0e)" % (e, max_abs)
    e = rel_frobenius([a for a, _ in pairs], [b for _, b in pairs])
    return e <= TOL[dtype], "rel %.2e (tol %.0e)" % (e, TOL[dtype])


# ---------------------------------------------------------------- dry run (no GPU)

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def case_define(case, name):
    """A define of the case as an int (the manifest keeps them as text)."""
    return int(case.get("defines", {})[name])


def reference(case, vals, rng):
    """{output name: (float64 reference values, tolerance or "exact")} for
    the interpreter's outputs, in plain Python; rows / entries sampled
    with rng where the whole product would be slow."""
    k, a = case["kernel"], {r["name"]: r for r in case["args"]}
    if k == "vector_add":
        return {"Z": ([f32(x + y) for x, y in zip(vals["X"], vals["Y"])], "exact")}
    if k == "transpose":
        m, n = a["X"]["shape"]
        return {"Y": ([vals["X"][i * n + j] for j in range(n) for i in range(m)], "exact")}
    if k == "gather_rows":
        v, dd = a["E"]["shape"]
        out = []
        for i in vals["Ids"]:
            out += vals["E"][i * dd:(i + 1) * dd] if 0 <= i < v else [0.0] * dd
        return {"Y": (out, "exact")}
    if k == "scatter_rows":
        v, dd = a["Y"]["shape"]
        out = list(vals["Y"])
        for t, i in enumerate(vals["Ids"]):
            if 0 <= i < v:
                out[i * dd:(i + 1) * dd] = vals["X"][t * dd:(t + 1) * dd]
        return {"Y": (out, "exact")}
    if k == "softmax":
        m, n = a["X"]["shape"]
        out = []
        for r in range(m):
            row = vals["X"][r * n:(r + 1) * n]
            mx = max(row)
            e = [math.exp(x - mx) for x in row]
            s = sum(e)
            out += [x / s for x in e]
        return {"Y": (out, 1e-2 if a["Y"]["dtype"] == "bf16" else 1e-5)}
    if k == "layernorm":
        m, n = a["X"]["shape"]
        out = []
        for r in range(m):
            row = vals["X"][r * n:(r + 1) * n]
            mean = sum(row) / n
            var = sum((x - mean) ** 2 for x in row) / n
            out += [(x - mean) / math.sqrt(var + 1e-5) * w + b for x, w, b in zip(row, vals["W"], vals["B"])]
        return {"Y": (out, 1e-2)}
    if k == "rmsnorm":
        m, n = a["X"]["shape"]
        out = []
        for r in range(m):
            row = vals["X"][r * n:(r + 1) * n]
            rs = 1.0 / math.sqrt(sum(x * x for x in row) / n + 1e-6)
            out += [x * rs * w for x, w in zip(row, vals["W"])]
        return {"Y": (out, 1e-2)}
    if k == "cross_entropy":
        m, n = a["X"]["shape"]
        out = []
        for r in range(m):
            row = vals["X"][r * n:(r + 1) * n]
            mx = max(row)
            lse = mx + math.log(sum(math.exp(x - mx) for x in row))
            t = vals["Tgt"][r]
            out.append(lse - row[t] if 0 <= t < n else 0.0)
        return {"L": (out, 1e-5)}
    if k == "layernorm_bwd":
        m, n = a["X"]["shape"]
        x, dy, w = vals["X"], vals["DY"], vals["W"]
        dx, dw, db = [], [0.0] * n, [0.0] * n
        for r in range(m):
            mean, rstd = vals["Mean"][r], vals["Rstd"][r]
            xh = [(v - mean) * rstd for v in x[r * n:(r + 1) * n]]
            d = dy[r * n:(r + 1) * n]
            g = [a1 * b1 for a1, b1 in zip(d, w)]
            mg = sum(g) / n
            mgx = sum(a1 * b1 for a1, b1 in zip(g, xh)) / n
            dx += [(gi - mg - xi * mgx) * rstd for gi, xi in zip(g, xh)]
            for j in range(n):
                dw[j] += d[j] * xh[j]
                db[j] += d[j]
        return {"DX": (dx, 1e-2), "DW": (dw, 1e-5), "DB": (db, 1e-5)}
    if k == "row_sum":
        m, n = a["X"]["shape"]
        return {"S": ([sum(vals["X"][r * n:(r + 1) * n]) for r in range(m)], 1e-5)}
    if k == "partial_sum":
        x = vals["X"]
        return {"P": ([sum(x[i:i + 4096]) for i in range(0, len(x), 4096)], 1e-5)}
    if k == "cumsum":
        m, n = a["X"]["shape"]
        out = []
        for r in range(m):
            s = 0.0
            for x in vals["X"][r * n:(r + 1) * n]:
                s += x
                out.append(s)
        return {"Y": (out, 1e-5)}
    if k == "dropout":
        p = next(r["scalar"] for r in case["args"] if r["name"] == "p")
        return {"Y": ([x / (1 - p) for x in vals["X"]], "dropout")}
    if k == "decode_attention":
        bq, hq, d = a["Q"]["shape"]
        _, page, hk, _ = a["Kc"]["shape"]
        mp = a["BT"]["shape"][1]
        ns = a["Op"]["shape"][2]
        chunk = case_define(case, "CHUNK")
        c = next(r["scalar"] for r in case["args"] if r["name"] == "scale") * 1.4426950408889634
        op, lp = [], []
        for b in range(bq):
            n = vals["Lens"][b]
            for h in range(hq):
                kh = h // (hq // hk)
                q = vals["Q"][(b * hq + h) * d:(b * hq + h + 1) * d]
                for sp in range(ns):
                    rows = []
                    for t in range(sp * chunk, min(n, sp * chunk + chunk)):
                        at = ((vals["BT"][b * mp + t // page] * page + t % page) * hk + kh) * d
                        rows.append((sum(x * y for x, y in zip(q, vals["Kc"][at:at + d])) * c, at))
                    mx = max(r[0] for r in rows)
                    w = [2.0 ** (r[0] - mx) for r in rows]
                    tot = sum(w)
                    op += [sum(wi * vals["Vc"][at + j] for wi, (_, at) in zip(w, rows)) / tot for j in range(d)]
                    lp.append(mx + math.log2(tot))
        return {"Op": (op, 1e-2), "Lp": (lp, 1e-3)}
    if k == "decode_combine":
        bq, hq, ns, d = a["Op"]["shape"]
        chunk = case_define(case, "CHUNK")
        out = []
        for b in range(bq):
            used = -(-vals["Lens"][b] // chunk)
            for h in range(hq):
                base = (b * hq + h) * ns
                lse = vals["Lp"][base:base + used]
                mx = max(lse)
                w = [2.0 ** (x - mx) for x in lse]
                out += [sum(wi * vals["Op"][(base + sp) * d + j] for sp, wi in enumerate(w)) / sum(w)
                        for j in range(d)]
        return {"O": (out, 1e-2)}
    if k == "gemm":
        mm, kk = a["A"]["shape"]
        nn = a["B"]["shape"][1]
        idx = sorted(rng.sample(range(mm * nn), 400)) + [mm * nn - 1]
        return {"C": ({i: sum(vals["A"][(i // nn) * kk + t] * vals["B"][t * nn + i % nn] for t in range(kk))
                       for i in idx}, 1e-2)}
    return {}


def dry_run(d=DIR):
    """Problems with the prepared files (an empty list: fine): every file
    of the manifest present with its shape's size, and the interpreter's
    outputs against plain-Python references (attention: finite O and LSE;
    bench/attn_interp_check.py --dry-run checks its values)."""
    with open(os.path.join(d, "manifest.json")) as f:
        man = json.load(f)
    problems, rng = [], random.Random(7)
    for case in man["cases"]:
        for ext in (".ptx", ".meta"):
            if not os.path.exists(os.path.join(d, case["name"] + ext)):
                problems.append("%s: no %s" % (case["name"], ext))
        vals, outs = {}, {}
        for r in case["args"]:
            if "scalar" in r:
                continue
            n = 1
            for s in r["shape"]:
                n *= s
            for key in ("init", "interp"):
                if key not in r:
                    continue
                raw = open(os.path.join(d, r[key]), "rb").read()
                if len(raw) != n * SIZE[r["dtype"]]:
                    problems.append("%s: %s has %d bytes, the shape %s gives %d" % (
                        case["name"], r[key], len(raw), r["shape"], n * SIZE[r["dtype"]]))
                    continue
                (vals if key == "init" else outs)[r["name"]] = decode(raw, r["dtype"])
        for name, out in outs.items():
            if any(x != x or abs(x) == float("inf") for x in out):
                problems.append("%s: the interpreter's %s is not finite everywhere" % (case["name"], name))
        for name, (ref, tol) in reference(case, vals, rng).items():
            got = outs.get(name)
            if got is None:
                continue
            if tol == "exact":
                bad = sum(1 for a, b in zip(got, ref) if a != b)
                if bad:
                    problems.append("%s: %s differs from the reference in %d elements" % (case["name"], name, bad))
            elif tol == "dropout":
                bad = sum(1 for a, b in zip(got, ref) if a != 0 and abs(a - b) > 1e-6 * abs(b))
                zeros = sum(1 for a in got if a == 0) / len(got)
                if bad or not 0.15 < zeros < 0.35:
                    problems.append("%s: %d kept elements wrong, %.2f dropped (p = 0.25)" % (
                        case["name"], bad, zeros))
            else:
                if isinstance(ref, dict):
                    got, ref = [got[i] for i in ref], list(ref.values())
                e = rel_frobenius(got, ref)
                if e > tol:
                    problems.append("%s: %s rel error %.2e to float64 (tol %.0e)" % (case["name"], name, e, tol))
    return problems


# ---------------------------------------------------------------- GPU machine

def run_gpu(d, only=None):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tilec
    with open(os.path.join(d, "manifest.json")) as f:
        man = json.load(f)
    tdt = {"f32": torch.float32, "i32": torch.int32, "bf16": torch.int16, "f16": torch.int16}
    passed = failed = 0
    for case in man["cases"]:
        if only and only not in case["name"]:
            continue
        try:
            k = tilec.load_files(os.path.join(d, case["ptx"]))[case["kernel"]]
            args, outs = [], []
            for a in case["args"]:
                if "scalar" in a:
                    args.append(a["scalar"])
                    continue
                with open(os.path.join(d, a["init"]), "rb") as f:
                    raw = bytearray(f.read())
                t = torch.frombuffer(raw, dtype=tdt[a["dtype"]]).reshape(a["shape"])
                if a["dtype"] == "bf16":
                    t = t.view(torch.bfloat16)
                elif a["dtype"] == "f16":
                    t = t.view(torch.float16)
                t = t.cuda()
                args.append(t)
                if "interp" in a:
                    outs.append((a, t))
            k(*args)
            torch.cuda.synchronize()
            ran = k.last_variant[0] if k.last_variant else case["kernel"]
            texts, ok = [], True
            for a, t in outs:
                got = t.cpu().contiguous()
                if a["dtype"] in ("bf16", "f16"):
                    got = got.view(torch.int16)
                with open(os.path.join(d, a["interp"]), "rb") as f:
                    want = f.read()
                o, txt = compare_output(got.numpy().tobytes(),
                                        want, a["dtype"], a["exact"], case.get("zeros_exact"),
                                        LSE_ABS if a["name"] == case.get("lse") else None)
                ok &= o
                texts.append("%s %s" % (a["name"], txt))
            print("  %s %-20s [%s] %s" % ("ok  " if ok else "FAIL", case["name"], ran, "; ".join(texts)),
                  flush=True)
        except Exception as e:  # noqa: BLE001 - one case's failure must not stop the others
            ok = False
            print("  FAIL %-20s %r" % (case["name"], e), flush=True)
        passed += ok
        failed += not ok
    print("interpreter vs GPU, every example on small shapes (%s PTX)" % man["arch"])
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prepare", action="store_true", help="build machine: PTX, inputs, the interpreter's outputs")
    ap.add_argument("--dir", default=DIR)
    ap.add_argument("--only", help="cases whose name contains TEXT")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: check the prepared files and the interpreter's outputs against plain Python")
    a = ap.parse_args()
    if a.prepare:
        prepare(a.dir)
        return 0
    if a.dry_run:
        problems = dry_run(a.dir)
        for p in problems:
            print("FAIL", p)
        print("dry run: %d problems" % len(problems))
        return 1 if problems else 0
    if not os.path.exists(os.path.join(a.dir, "manifest.json")):
        print("no %s/manifest.json (run bench/prepare.sh on the build machine)" % a.dir)
        return 2
    return run_gpu(a.dir, a.only)


if __name__ == "__main__":
    sys.exit(main())
