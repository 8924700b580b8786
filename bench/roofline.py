#!/usr/bin/env python3
"""roofline.py - the report's predicted roofline beside measured times.

Usage:
    bench/roofline.py RESULTS [--tilec build/bin/tilec] [--arch sm_90a] [--sms N]

RESULTS is a CSV file with a header, or a JSON list of objects, with the
fields
    kernel       an example name ("gemm") or a path to a .tile file
    dims         the launch's sizes, "M=4096,N=4096,K=4096"
    defines      compile-time params, "BM=128,CAUSAL=true" (may be empty)
    measured_us  the measured time of one launch, in microseconds
and, optionally, arch (overrides --arch for that row) and name (a label).

For each row the script runs `tilec FILE --emit=tir --report --dim ...`
(no code generation, no GPU), reads the `== roofline ==` section, and
prints one line: the predicted bound and time, the measured time, the
share of the prediction reached (predicted / measured, 100% = on the
roofline) and the rates the measurement achieved (tensor-core TFLOP/s,
DRAM GB/s on the report's "each tensor once" bytes). The predictions
assume perfect overlap and no latency (docs/internals.md, "The report"),
so a kernel reaches at most about 100%.

Example (CSV):
    kernel,dims,defines,measured_us
    gemm,"M=4096,N=4096,K=4096",,381.2
    attention,"Z=1,H=32,HK=32,N=4096,NK=4096","CAUSAL=true",180.5
"""
import argparse
import csv
import json
import os
import subprocess
import sys

from validate_report import parse_report   # the report's sections, as the validation reads them

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_rows(path):
    with open(path) as f:
        text = f.read()
    if text.lstrip().startswith("["):
        return json.loads(text)
    return list(csv.DictReader(text.splitlines()))


def tile_path(kernel):
    if kernel.endswith(".tile") or os.sep in kernel:
        return kernel
    return os.path.join(ROOT, "examples", kernel + ".tile")


def predict(tilec, row, arch, sms):
    """The roofline lines of the report for one row: a dict per kernel."""
    cmd = [tilec, tile_path(row["kernel"]), "--emit=tir", "-o", os.devnull, "--report=/dev/stdout",
           "-arch=" + (row.get("arch") or arch)]
    for d in filter(None, (row.get("dims") or "").split(",")):
        cmd += ["--dim", d.strip()]
    for d in filter(None, (row.get("defines") or "").split(",")):
        cmd.append("-D" + d.strip())
    if sms:
        cmd += ["--pass-option", "target.sms=%d" % sms]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), out.stderr.strip()))
    return list(parse_report(out.stdout)["roofline"].values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--tilec", default=os.path.join(ROOT, "build", "bin", "tilec"))
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--sms", type=int, default=0, help="the device's SM count (target.sms)")
    a = ap.parse_args()
    hdr = "%-28s %-40s %-18s %12s %12s %8s %10s %10s" % (
        "kernel", "dims", "bound", "predicted us", "measured us", "reached", "TFLOP/s", "GB/s")
    print(hdr)
    print("-" * len(hdr))
    for row in read_rows(a.results):
        label = row.get("name") or row["kernel"] + (" " + row["defines"] if row.get("defines") else "")
        meas = float(row["measured_us"])
        for k in predict(a.tilec, row, a.arch, a.sms):
            if "us" not in k:
                print("%-28s %-40s %s" % (label, row.get("dims", ""), k["note"]))
                continue
            tf = k.get("flops", 0) / (meas * 1e-6) / 1e12
            gbs = k.get("dram", 0) / (meas * 1e-6) / 1e9
            print("%-28s %-40s %-18s %12.1f %12.1f %7.1f%% %10.1f %10.1f" % (
                label, row.get("dims", ""), k["bound"], k["us"], meas, 100.0 * k["us"] / meas, tf, gbs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
