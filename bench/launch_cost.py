#!/usr/bin/env python3
"""launch_cost.py - host time of one launch of a tiny vector add (f32[N],
N = 4096 by default), in one run on one GPU: tilec from Python, beside a
Triton kernel and a torch op, and libtilert's C call alone.

Each row is the host time of one call in microseconds: per round, the mean
over --calls calls, issued back to back in bursts of 128 with the GPU
drained between bursts outside the timed span (a full launch queue would
time the GPU's pace, not the host's); the rows take turns within a round;
the table gives the median, min and max of the --rounds round means.

  tilec                  k(x, y, z): the Python call (the packed path of a
                         loaded kernel: tilec._Fast, then tilert_launch)
  tilec pack alone       tilec._Fast.pack(args): the Python side without
                         the C call
  tilec C call (ctypes)  tilert_launch through ctypes on arguments packed
                         once: the ctypes call and the runtime
  triton                 a Triton vector add, _add[grid](x, y, z, n, BLOCK=1024)
  torch x + y            torch's add, allocating its output
  torch add(out=z)       torch.add(x, y, out=z)
  C: tilert_launch       bench/launch_cost.c (built here with cc against
                         libtilert): the runtime's C call alone, same
                         kernel; also with two alternating outputs, the
                         full check alone (tilert_check_args) and the
                         driver's cuLaunchKernel on parameters packed once

The kernel: --ptx (default .devcarry/launch/vector_add.ptx and its .meta,
written by bench/launch_prepare.sh on the build machine), else compiled
with tilec.compile (needs libtilec). libtilert from TILEC_LIB_DIR
(bench/runtime.sh builds it and sets it).

  TILEC_LIB_DIR=... python3 bench/launch_cost.py [--n N] [--calls C] [--rounds R]
                                                 [--ptx P] [--out DIR]
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import tilec  # noqa: E402
from tilec import _lib  # noqa: E402

try:
    import triton
    import triton.language as tl
except ImportError:  # the table says so
    triton = None

if triton is not None:
    @triton.jit
    def _add(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def kernel_files(ptx):
    """(ptx path, meta path) of the vector add: given, carried, or compiled here."""
    if ptx:
        return ptx, os.path.splitext(ptx)[0] + ".meta"
    carried = os.path.join(ROOT, ".devcarry", "launch", "vector_add.ptx")
    if os.path.exists(carried):
        return carried, os.path.splitext(carried)[0] + ".meta"
    mod = tilec.compile(os.path.join(ROOT, "examples", "vector_add.tile"))
    d = tempfile.mkdtemp(prefix="launch_cost")
    for ext, text in (("ptx", mod.ptx), ("meta", mod.meta)):
        with open(os.path.join(d, "vector_add." + ext), "w") as f:
            f.write(text)
    return os.path.join(d, "vector_add.ptx"), os.path.join(d, "vector_add.meta")


def c_rows(ptx, meta, n, calls, rounds, out):
    """Build bench/launch_cost.c against the libtilert in use and run it:
    {row: [round means]}, and its other lines."""
    lib = _lib.paths["libtilert.so"]
    libdir = os.environ.get("TILEC_LIB_DIR", "").split(os.pathsep)[0] or os.path.dirname(os.path.realpath(lib))
    if os.sep not in lib and not os.environ.get("TILEC_LIB_DIR"):
        raise SystemExit("libtilert came from the system loader: set TILEC_LIB_DIR to its folder")
    exe = os.path.join(out, "launch_cost")
    inc = ["-I", os.path.join(ROOT, "include")]
    carried = os.path.join(ROOT, ".devcarry", "include")
    if os.path.isdir(carried):
        inc += ["-I", carried]
    cmd = ["cc", "-O2", "-std=c11"] + inc + [os.path.join(ROOT, "bench", "launch_cost.c"),
                                             "-L", libdir, "-ltilert", "-ldl", "-lpthread",
                                             "-Wl,-rpath," + libdir, "-o", exe]
    subprocess.run(cmd, check=True)
    res = subprocess.run([exe, ptx, meta, str(n), str(calls), str(rounds)], capture_output=True,
                         text=True)
    if res.returncode:
        print(res.stdout + res.stderr)
        raise SystemExit("bench/launch_cost.c failed")
    rows, notes = {}, []
    for line in res.stdout.splitlines():
        parts = line.split()
        if parts and parts[0].startswith(("tilert_", "cuLaunch")):
            rows[parts[0]] = [float(v) for v in parts[1:]]
        else:
            notes.append(line)
    return rows, notes


BURST = 128    # launches timed back to back before the GPU is drained (untimed)


def per_call_us(fn, calls):
    """Host microseconds per call over `calls` calls, timed in bursts of
    BURST with the GPU drained between them: a launch queue that fills up
    would make the launches wait for the GPU, which is not their host
    cost."""
    total = 0.0
    done = 0
    while done < calls:
        b = min(BURST, calls - done)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(b):
            fn()
        total += time.perf_counter() - t0
        done += b
    torch.cuda.synchronize()
    return total / calls * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--calls", type=int, default=5000, help="calls per round (Python rows)")
    ap.add_argument("--c-calls", type=int, default=20000, help="calls per round (C rows)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ptx", default=None)
    ap.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp(prefix="launch_cost"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    ptx, meta = kernel_files(a.ptx)

    n = a.n
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    z = torch.empty(n, device="cuda")
    mod = tilec.load_files(ptx, meta)
    k = mod.kernels[0]
    k(x, y, z)                      # loads the module; the next calls take the packed path
    torch.cuda.synchronize()
    assert torch.equal(z, x + y), "tilec vector add is wrong"
    fast = k._fast
    if fast is None:
        raise SystemExit("the packed path was not set up (no torch._C raw-stream query?)")
    args = (x, y, z)
    addr, stream = fast.pack(args)
    launch = fast.launch

    fns = {
        "tilec": lambda: k(x, y, z),
        "tilec pack alone": lambda: fast.pack(args),
        "tilec C call (ctypes)": lambda: launch(fast.handle, addr, 3, stream),
    }
    if triton is not None:
        grid = (triton.cdiv(n, 1024),)
        _add[grid](x, y, z, n, BLOCK=1024)
        torch.cuda.synchronize()
        assert torch.equal(z, x + y), "triton vector add is wrong"
        fns["triton"] = lambda: _add[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024)
    fns["torch x + y"] = lambda: x + y
    fns["torch add(out=z)"] = lambda: torch.add(x, y, out=z)

    for fn in fns.values():         # warm
        for _ in range(200):
            fn()
    torch.cuda.synchronize()
    us = {name: [] for name in fns}
    for _ in range(a.rounds):
        for name, fn in fns.items():
            us[name].append(per_call_us(fn, a.calls))
    k(x, y, z)
    torch.cuda.synchronize()
    ok = torch.equal(z, x + y)

    crows, notes = c_rows(ptx, meta, n, a.c_calls, a.rounds, a.out)
    for name, vals in crows.items():
        us["C: " + name] = vals

    props = torch.cuda.get_device_properties(0)
    print("== launch cost: vector add f32[%d], %s, torch %s, triton %s, python %s, %s"
          % (n, props.name, torch.__version__, triton.__version__ if triton else "(none)",
             platform.python_version(), platform.processor() or platform.machine()))
    print("   host us per call: median / min / max of %d round means (%d Python calls, %d C calls a round)"
          % (a.rounds, a.calls, a.c_calls))
    print("%-26s %8s %8s %8s" % ("row", "median", "min", "max"))
    for name, vals in us.items():
        print("%-26s %8.2f %8.2f %8.2f" % (name, statistics.median(vals), min(vals), max(vals)))
    for line in notes:
        print("C: " + line)
    print("tilec result after the timed calls: %s" % ("ok" if ok else "WRONG"))
    med = {name: statistics.median(vals) for name, vals in us.items()}
    if "triton" in med:
        print("Python: tilec %.2f us vs triton %.2f us: %s" % (
            med["tilec"], med["triton"], "met (<=)" if med["tilec"] <= med["triton"] else "NOT met"))
    if "C: tilert_launch" in med:
        print("C call alone: %.2f us: %s" % (med["C: tilert_launch"],
                                             "met (<= 5 us)" if med["C: tilert_launch"] <= 5 else "NOT met"))
    return 0 if ok and all(line != "check: FAIL" for line in notes) else 1


if __name__ == "__main__":
    sys.exit(main())
