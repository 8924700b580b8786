#!/usr/bin/env python3
"""lineinfo_check.py - on the GPU, the tools name the `.tile` line of a
fault: tests/gpu/oob_store.tile (a store one element past its tensor, on
the line marked "out of bounds:") compiled with `tilec -lineinfo` on the
build machine (bench/validate_report.py --prepare writes
.devcarry/validate/oob_store.ptx) is launched

  1. under compute-sanitizer's memcheck, whose report of the invalid write
     must name oob_store.tile and the marked line ("... oob_store.tile:15");
  2. under Nsight Compute with the source counters (`--section
     SourceCounters --import-source yes`), whose source page
     (`--page source --print-source cuda --csv`) should show the marked
     line's text against its metrics.

    python3 bench/lineinfo_check.py [--out DIR]     (bench/device.sh runs it)

Prints one line per tool, PASS when its output names the line, and exits
0 when memcheck named it (the ncu result is printed beside it, not
required: the source page's text layout is ncu's own), 1 otherwise.
The launch runs with PYTORCH_NO_CUDA_MEMORY_CACHING=1 so that each tensor
is its own allocation, whose end memcheck knows; N = 1000 f32 (4000
bytes) keeps the stray stores inside the allocation's padding, away from
any other tensor.

    python3 bench/lineinfo_check.py --launch       (the launch alone)
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARRY = os.environ.get("TILEC_CARRY", os.path.join(ROOT, ".devcarry"))
PTX = os.path.join(CARRY, "validate", "oob_store.ptx")
TILE = os.path.join(ROOT, "tests", "gpu", "oob_store.tile")
MARK = "out of bounds:"
N = 1000


def marked_line(path=TILE):
    """(line number, text) of the store the kernel seeds."""
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if MARK in line:
                return i, line.split("//")[0].strip()
    raise ValueError("no line marked %r in %s" % (MARK, path))


def named_lines(text, name="oob_store.tile"):
    """The line numbers a tool's output gives for `name` (FILE:LINE)."""
    return sorted({int(m) for m in re.findall(re.escape(name) + r":(\d+)", text)})


def memcheck_verdict(text, line):
    """(ok, why) from compute-sanitizer's output."""
    if "Invalid __global__ write" not in text:
        return False, "memcheck reported no invalid global write"
    got = named_lines(text)
    if line in got:
        return True, "memcheck names oob_store.tile:%d" % line
    if got:
        return False, "memcheck names oob_store.tile lines %s, not %d" % (got, line)
    return False, "memcheck's report names no oob_store.tile line (no line information reached the tool)"


def ncu_verdict(text, line, source):
    """(ok, why) from ncu's source page: the marked line's text shown."""
    if source in text:
        return True, "ncu's source page shows line %d (%s)" % (line, source)
    got = named_lines(text)
    if line in got:
        return True, "ncu's source page names oob_store.tile:%d" % line
    return False, "ncu's source page does not show line %d" % line


def launch():
    os.environ.setdefault("PYTORCH_NO_CUDA_MEMORY_CACHING", "1")
    import torch
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tilec
    k = tilec.load_files(PTX)
    x = torch.randn(N, device="cuda")
    y = torch.empty(N, device="cuda")
    try:
        k(x, y)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - memcheck may abort the kernel; its report is what counts
        print("launch: %s" % e)
    print("launched oob_store, N = %d" % N)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launch", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(ROOT, "bench-out")))
    a = ap.parse_args()
    if a.launch:
        return launch()
    if not os.path.exists(PTX):
        print("no %s (run bench/prepare.sh on the build machine)" % PTX)
        return 2
    os.makedirs(a.out, exist_ok=True)
    line, source = marked_line()
    env = dict(os.environ, PYTORCH_NO_CUDA_MEMORY_CACHING="1")
    me = [sys.executable, os.path.abspath(__file__), "--launch"]
    r = subprocess.run(["compute-sanitizer", "--tool", "memcheck", "--print-limit", "4"] + me,
                       capture_output=True, text=True, env=env)
    mtext = r.stdout + r.stderr
    with open(os.path.join(a.out, "lineinfo_memcheck.txt"), "w") as f:
        f.write(mtext)
    ok_m, why_m = memcheck_verdict(mtext, line)
    rep = os.path.join(a.out, "lineinfo")
    ntext = ""
    if os.path.exists(rep + ".ncu-rep"):
        os.remove(rep + ".ncu-rep")
    for src in (["--import-source", "yes", "--source-folders", os.path.dirname(TILE)], []):
        r = subprocess.run(["ncu", "--section", "SourceCounters"] + src + ["-k", "regex:^oob_store$", "-f",
                                                                            "-o", rep] + me,
                           capture_output=True, text=True, env=env)
        ntext += r.stdout + r.stderr
        if os.path.exists(rep + ".ncu-rep"):
            break
    if os.path.exists(rep + ".ncu-rep"):
        for args in (["--csv", "--print-source", "cuda"], ["--print-source", "cuda"], []):
            s = subprocess.run(["ncu", "--import", rep + ".ncu-rep", "--page", "source"] + args,
                               capture_output=True, text=True)
            ntext += "\n$ ncu --import ... --page source %s\n%s%s" % (" ".join(args), s.stdout, s.stderr)
            if s.returncode == 0 and s.stdout.strip():
                break
    with open(os.path.join(a.out, "lineinfo_ncu_source.txt"), "w") as f:
        f.write(ntext)
    ok_n, why_n = ncu_verdict(ntext, line, source)
    for m in re.findall(r".*oob_store\.tile:\d+.*", mtext)[:2]:
        print("  " + m.strip())
    print("%s compute-sanitizer memcheck: %s" % ("PASS" if ok_m else "FAIL", why_m))
    print("%s ncu source page: %s" % ("PASS" if ok_n else "FAIL", why_n))
    return 0 if ok_m else 1


if __name__ == "__main__":
    sys.exit(main())
