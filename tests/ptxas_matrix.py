#!/usr/bin/env python3
"""Every op x dtype x arch that the language accepts assembles with ptxas.

Generates one kernel per (op, dtype) -- elementwise arithmetic, comparisons,
logic, bitwise ops and shifts, unary ops, each math builtin, max/min, where,
the reductions, the scans, random numbers (the dtype: of the offsets, or of
the seed on scalars), transpose, slices, concat, reshape, gathers and
scatters through an index tile, the matrix product and the cast to every
dtype --
on tiles, and on scalars where the dtype is a scalar type. Each is compiled
with `tilec -arch=ARCH --no-ptxas` for sm_86, sm_90a and sm_100a and the PTX
assembled with `ptxas -arch=ARCH`. Asserted:
  - tilec exits 0 and ptxas accepts the PTX, or tilec exits 1 and every
    `error:` line is located (file:line:col, line > 0);
  - no other exit status (internal errors, crashes, timeouts);
  - MUST below: the (op, dtype) pairs that have to compile and assemble on
    every arch (each op on the dtypes it is documented for).
Kernels are compiled a dtype and an arch at a time in one file; a file
that fails is split in halves until each failure has one kernel.

Exits 77 (skipped) without ptxas. usage: ptxas_matrix.py TILEC [--jobs J]
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("tilec")
ap.add_argument("--jobs", type=int, default=2)
ap.add_argument("--timeout", type=float, default=120.0)
ap.add_argument("--verbose", action="store_true", help="print every rejection")
args = ap.parse_args()

PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.access("/usr/local/cuda/bin/ptxas", os.X_OK)
                                  else None)
if not PTXAS:
    print("ptxas_matrix: ptxas not found (no CUDA toolkit): skipped")
    sys.exit(77)

ARCHS = ["sm_86", "sm_90a", "sm_100a"]
DTYPES = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
          "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2"]
SCALARS = ["bool", "i32", "i64", "f32", "f64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
F8 = ["f8e4m3", "f8e5m2"]
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]

W = "r : +16, 0 : +32"          # a 16 x 32 window of a [M, N] tensor
T = "global {dt}[M, N]"

# op name -> (params, body); {dt} is the dtype under test. Tile kernels.
BIN = {"add": "+", "sub": "-", "mul": "*", "div": "/", "rem": "%",
       "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>"}
CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
LOGIC = {"land": "&&", "lor": "||"}
MATH = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "abs", "erf", "sigmoid",
        "sin", "cos", "floor", "ceil", "round"]
RED = {"rowsum": "rowsum", "rowmax": "rowmax", "rowmin": "rowmin"}
COL = {"colsum": "colsum", "colmax": "colmax", "colmin": "colmin"}


def tile_kernels():
    k = {}
    xy = "X: " + T + ", Y: " + T + ", "
    for name, op in BIN.items():
        k[name] = (xy + "Z: " + T, "Z[%s] = X[%s] %s Y[%s];" % (W, W, op, W))
    for name, op in CMP.items():
        k[name] = (xy + "Z: global bool[M, N]", "Z[%s] = X[%s] %s Y[%s];" % (W, W, op, W))
    for name, op in LOGIC.items():
        k[name] = (xy + "Z: " + T, "Z[%s] = X[%s] %s Y[%s];" % (W, W, op, W))
    k["neg"] = ("X: " + T + ", Z: " + T, "Z[%s] = -X[%s];" % (W, W))
    k["lnot"] = ("X: " + T + ", Z: " + T, "Z[%s] = !X[%s];" % (W, W))
    k["bnot"] = ("X: " + T + ", Z: " + T, "Z[%s] = ~X[%s];" % (W, W))
    for m in MATH:
        k[m] = ("X: " + T + ", Z: " + T, "Z[%s] = %s(X[%s]);" % (W, m, W))
    k["pow"] = (xy + "Z: " + T, "Z[%s] = pow(X[%s], Y[%s]);" % (W, W, W))
    for m in ("max", "min"):
        k[m] = (xy + "Z: " + T, "Z[%s] = %s(X[%s], Y[%s]);" % (W, m, W, W))
    k["where"] = (xy + "C: global bool[M, N], Z: " + T, "Z[%s] = where(C[%s], X[%s], Y[%s]);" % (W, W, W, W))
    for name, f in RED.items():
        k[name] = ("X: " + T + ", Z: global {dt}[M]", "Z[r : +16] = %s(X[%s]);" % (f, W))
    for name, f in COL.items():
        k[name] = ("X: " + T + ", Z: global {dt}[N]", "Z[0 : +32] = %s(X[%s]);" % (f, W))
    k["prod"] = ("X: " + T + ", Z: global {dt}[M]", "Z[r : +16] = reduce(X[%s], 1, prod);" % W)
    for name in ("cumsum", "cummax", "cummin", "cumprod"):
        k[name] = ("X: " + T + ", Z: " + T, "Z[%s] = %s(X[%s], 1);" % (W, name, W))
    k["cumsum0"] = ("X: " + T + ", Z: " + T, "Z[%s] = cumsum(X[%s], 0);" % (W, W))
    k["scan_excl"] = ("X: " + T + ", Z: " + T, "Z[%s] = scan(X[%s], 1, sum, exclusive);" % (W, W))
    k["rand"] = ("O: " + T + ", Z: global f32[M, N], seed: i64", "Z[%s] = rand(seed, O[%s]);" % (W, W))
    k["randint"] = ("O: " + T + ", Z: global u32[M, N], seed: i64", "Z[%s] = randint(seed, O[%s]);" % (W, W))
    k["trans"] = ("X: " + T + ", Z: global {dt}[N, M]", "Z[0 : +32, r : +16] = X[%s]^T;" % W)
    k["transpose"] = ("X: " + T + ", Z: global {dt}[N, M]", "Z[0 : +32, r : +16] = transpose(X[%s]);" % W)
    k["slice"] = ("X: " + T + ", Z: " + T, "Z[r : +8, 0 : +16] = X[%s][4 : 12, 8 : +16];" % W)
    k["slice_row"] = ("X: " + T + ", Z: " + T, "Z[r, 0 : +32] = X[%s][3, :];" % W)
    k["concat0"] = (xy + "Z: " + T, "Z[r : +32, 0 : +32] = concat(X[%s], Y[%s], 0);" % (W, W))
    k["concat1"] = (xy + "Z: " + T, "Z[r : +16, 0 : +64] = concat(X[%s], Y[%s], 1);" % (W, W))
    k["reshape"] = ("X: " + T + ", Z: " + T, "Z[r : +32, 0 : +16] = reshape(X[%s], [32, 16]);" % W)
    k["gather"] = ("X: " + T + ", I: global i32[M], Z: " + T, "Z[%s] = X[I[r : +16], 0 : +32];" % W)
    k["gather64"] = ("X: " + T + ", I: global i64[M], Z: " + T, "Z[%s] = load(X[I[r : +16], 0 : +32], 0);" % W)
    k["scatter"] = ("X: " + T + ", I: global i32[M], Z: " + T, "Z[I[r : +16], 0 : +32] = X[%s];" % W)
    k["dot"] = ("A: global {dt}[M, K], B: global {dt}[K, N], Z: global {acc}[M, N]",
                "Z[r : +16, 0 : +16] = A[r : +16, 0 : +32] @ B[0 : +32, 0 : +16];")
    for to in DTYPES:
        k["cast_" + to] = ("X: " + T + ", Z: global %s[M, N]" % to, "Z[%s] = %s(X[%s]);" % (W, to, W))
    return k


def scalar_kernels():
    k = {}
    for name, op in list(BIN.items()) + list(CMP.items()) + list(LOGIC.items()):
        k["s_" + name] = ("a: {dt}, b: {dt}, Z: global {dt}[M, N]", "Z[r, 0] = {dt}(a %s b);" % op)
    for m in MATH:
        k["s_" + m] = ("a: {dt}, Z: global f64[M, N]", "Z[r, 0] = f64(%s(a));" % m)
    k["s_pow"] = ("a: {dt}, b: {dt}, Z: global f64[M, N]", "Z[r, 0] = f64(pow(a, b));")
    k["s_bnot"] = ("a: {dt}, Z: global {dt}[M, N]", "Z[r, 0] = ~a;")
    k["s_rand"] = ("a: {dt}, Z: global f32[M, N]", "Z[r, 0] = rand(a, r);")
    return k


TILE, SCALAR = tile_kernels(), scalar_kernels()
ALL_OPS = sorted(TILE) + sorted(SCALAR)
FLOAT_MATH = [m for m in MATH if m != "abs"] + ["pow"]

# (op, dtypes) that must compile and assemble on every arch.
MUST = {}
for op in ["add", "sub", "mul", "div", "rem", "neg", "abs", "max", "min", "where", "trans",
           "rowsum", "rowmax", "rowmin", "colsum", "colmax", "colmin", "prod"] + list(CMP):
    MUST[op] = FLOATS + INTS
for op in FLOAT_MATH:
    MUST[op] = FLOATS
for op in ["cumsum", "cummax", "cummin", "cumprod", "cumsum0", "scan_excl"]:
    MUST[op] = FLOATS + INTS
for op in ["and", "or", "xor", "shl", "shr", "bnot", "rand", "randint"]:
    MUST[op] = INTS
for op in ["transpose", "slice", "slice_row", "concat0", "concat1", "reshape", "gather", "scatter"]:
    MUST[op] = FLOATS + INTS + ["bool"]
MUST["gather64"] = FLOATS + INTS
for op in ["land", "lor", "lnot"]:
    MUST[op] = ["bool"]
# bf16, f16, f8 on mma.sync (f8 converted to f16); f32, f64, i8 on the FMA units
MUST["dot"] = FLOATS + F8 + ["i8"]
# casts to and from f8 are the code generator's only f8 elementwise ops
for to in DTYPES:
    MUST["cast_" + to] = FLOATS + INTS + ["bool"] + F8
for op in SCALAR:
    base = op[2:]
    MUST[op] = [d for d in MUST.get(base, []) if d in SCALARS]


def kernel_src(op, dt):
    params, body = (TILE.get(op) or SCALAR[op])
    acc = "i32" if dt in ("i8", "u8") else "f32"
    params = params.format(dt=dt, acc=acc)
    body = body.replace("{dt}", dt)
    grid = "grid(1)" if op.startswith("col") else "grid(cdiv(M, 16))"
    return "kernel k_%s(%s) %s {\n  let r = block.x * 16;\n  %s\n}\n" % (op, params, grid, body)


def ops_for(dt):
    return [op for op in ALL_OPS if op in TILE or dt in SCALARS]


LOCATED = re.compile(r"^[^\n:]+:(\d+):(\d+): error: ")


def run(cmd):
    return subprocess.run(cmd, capture_output=True, timeout=args.timeout)


def compile_group(folder, tag, ops, dt, arch):
    """Compile the kernels of `ops` in one file for `arch`. Returns (status,
    text, culprits): status 'ok' (assembled), 'rejected' (located errors
    only; culprits: the ops whose lines hold them), or a failure."""
    path = os.path.join(folder, tag + ".tile")
    spans, src, line = [], "", 1
    for op in ops:
        text = kernel_src(op, dt)
        spans.append((op, line, line + text.count("\n")))
        src += text
        line += text.count("\n")
    with open(path, "w") as f:
        f.write(src)
    out = os.path.join(folder, tag + ".ptx")
    try:
        p = run([args.tilec, path, "-arch=" + arch, "--no-ptxas", "-o", out])
    except subprocess.TimeoutExpired:
        return "timeout in tilec", "", []
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode == 0:
        a = run([PTXAS, "-arch=" + arch, out, "-o", os.devnull])
        if a.returncode == 0:
            return "ok", "", []
        return "ptxas rejects the PTX", a.stderr.decode("utf-8", "replace")[:600], []
    if p.returncode != 1:
        return "tilec exit %d" % p.returncode, err[:600], []
    errors = [l for l in err.split("\n") if "error:" in l]
    lines = [LOCATED.match(l) for l in errors]
    if not errors or any(not m or m.group(1) == "0" for m in lines):
        return "an error without a location", err[:600], []
    culprits = {op: [] for op, lo, hi in spans if any(lo <= int(m.group(1)) < hi for m in lines)}
    for l, m in zip(errors, lines):
        for op, lo, hi in spans:
            if lo <= int(m.group(1)) < hi:
                culprits[op].append(l)
    return "rejected", err, culprits


def classify(folder, ops, dt, arch, depth=0):
    """{op: (status, text)} for the kernels of `ops`: kernels with located
    errors are taken out and the rest compiled again; a failure of the
    whole file (ptxas, an exit other than 0 and 1) is split in halves."""
    res = {}
    while ops:
        tag = "%s_%s_%d_%s" % (dt, arch, depth, ops[0])
        status, text, culprits = compile_group(folder, tag, ops, dt, arch)
        if status == "ok":
            res.update({op: ("ok", "") for op in ops})
            return res
        if status == "rejected" and culprits:
            res.update({op: ("rejected", "\n".join(ls)) for op, ls in culprits.items()})
            ops = [op for op in ops if op not in culprits]
            continue
        if len(ops) == 1:
            res[ops[0]] = (status, text)
            return res
        half = len(ops) // 2
        res.update(classify(folder, ops[:half], dt, arch, depth + 1))
        res.update(classify(folder, ops[half:], dt, arch, depth + 1))
        return res
    return res


def main():
    failures, rejected, total = [], 0, 0
    with tempfile.TemporaryDirectory(prefix="tilec-ptxas-matrix-") as folder:
        jobs = [(dt, arch) for dt in DTYPES for arch in ARCHS]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
            futs = {ex.submit(classify, folder, ops_for(dt), dt, arch): (dt, arch) for dt, arch in jobs}
            for fut in concurrent.futures.as_completed(futs):
                dt, arch = futs[fut]
                for op, (status, text) in sorted(fut.result().items()):
                    total += 1
                    if status == "rejected":
                        rejected += 1
                        if dt in MUST.get(op, []):
                            failures.append("%s %s %s: rejected, but it must compile:\n%s" % (op, dt, arch, text))
                        elif args.verbose:
                            print("rejected %s %s %s: %s" % (op, dt, arch, text.split("\n")[0]))
                    elif status != "ok":
                        failures.append("%s %s %s: %s\n%s" % (op, dt, arch, status, text))
    must = sum(len(v) for v in MUST.values()) * len(ARCHS)
    print("ptxas_matrix: %d kernels (%d ops x %d dtypes x %d archs): %d assembled, %d rejected with a "
          "located error; %d (op, dtype, arch) required to assemble" %
          (total, len(ALL_OPS), len(DTYPES), len(ARCHS), total - rejected - len(failures), rejected, must))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


sys.exit(main())
