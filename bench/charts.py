#!/usr/bin/env python3
"""charts.py - the PNG charts of a bench/device.sh run, drawn with the
Python package's chart helpers (tilec.plot, matplotlib):

  roofline.png         every example's predicted and measured point on the
                       H200's roofline, and the DRAM bandwidth each
                       reached, from bench/validate_report.py's
                       validate.json (the report's roofline against
                       Nsight Compute's time and DRAM bytes)
  attention_tflops.png TFLOP/s against N per (D, causal): flash, cuDNN and
                       every tilec variant of bench/attn_bench.py's table
                       (attn.txt)
  attention_fa4_tflops.png  the same for the sm_90a attention as
                       compiled by default (attn_fa4.txt), where that run
                       was made
  gemm_tflops.png      TFLOP/s against the size of bench/gemm_bench.py's
                       table (gemm.txt): cuBLAS, the Triton peer and every
                       variant, square sizes and the LLM projection shapes

    python3 bench/charts.py [--out DIR]     (DIR: device.sh's $OUT, default bench-out)

A chart whose input is missing is skipped with a note; exit status 2
when matplotlib is missing, 1 when an input could not be read.
"""
import argparse
import json
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def parse_attn(text):
    """Rows {D, N, causal, Z, kernel, TFLOP/s} of every `attention forward`
    table of bench/attn_bench.py's output (the flash and cuDNN columns and
    one per tilec variant; the ratio columns after them are left out)."""
    rows, cols, inside = [], None, False
    for line in text.splitlines():
        if line.startswith("attention forward"):
            inside, cols = True, None
            continue
        if not inside:
            continue
        w = line.split()
        if not w:
            if cols is not None:
                inside = False
            continue
        if w[0] == "D" and "flash" in w:
            end = w.index("best/flash") if "best/flash" in w else len(w)
            cols = w[4:end]
            continue
        if cols is None or not w[0].isdigit() or len(w) < 4 + len(cols):
            if line.startswith("portable path") or line.startswith("correctness"):
                inside = False
            continue
        for name, v in zip(cols, w[4:4 + len(cols)]):
            try:
                tf = float(v)
            except ValueError:
                continue
            if math.isnan(tf):
                continue
            rows.append({"D": int(w[0]), "N": int(w[1]), "causal": w[2], "Z": int(w[3]), "kernel": name,
                         "TFLOP/s": tf})
    return rows


def parse_gemm(text):
    """(rows, ceilings) of bench/gemm_bench.py's output: rows {table,
    kernel, x, TFLOP/s} of the size table (x: the size of the square
    product) and of the LLM projection shapes (x: "MxNxK"); ceilings
    {label: TFLOP/s} (the mma.sync ceiling row)."""
    rows, ceil, table = [], {}, None
    for line in text.splitlines():
        if re.match(r"kernel\s+size\s+TFLOP/s", line):
            table = "square (M = N = K = size)"
            continue
        if line.startswith("LLM projection shapes"):
            table = "LLM projection shapes (bf16)"
            continue
        if table is None or not line.strip():
            continue
        if table.startswith("square"):
            m = re.match(r"^(.*?)\s+(\d+)\s+([\d.]+)\s+(\d+)%", line)
            if m:
                rows.append({"table": table, "kernel": m.group(1).strip(), "x": int(m.group(2)),
                             "TFLOP/s": float(m.group(3))})
                continue
            m = re.match(r"^(.*?)\s+-\s+([\d.]+)\s*$", line)
            if m:
                ceil[m.group(1).strip()] = float(m.group(2))
                continue
        else:
            m = re.match(r"^(.*?)\s+(\d+x\d+x\d+)\s+([\d.]+)\s+([\d.]+)\s*$", line)
            if m:
                rows.append({"table": table, "kernel": m.group(1).strip(), "x": m.group(2),
                             "TFLOP/s": float(m.group(3))})
                continue
        if not re.match(r"^\S", line) or line.startswith("total") or "x cuBLAS bf16" in line:
            continue
    return rows, ceil


def tilec_name(kernel):
    """Whether a GEMM table row is one of tilec's variants (not cuBLAS or Triton)."""
    return not (kernel.startswith("torch.") or "triton" in kernel.lower() or "cublas" in kernel.lower())


def roofline_points(validate):
    """tilec.plot.roofline's points and peaks from validate.json: the
    sm_90a cases with a predicted time (the sm_86 cases' predictions are
    for another device)."""
    pts, peaks = [], None
    for r in validate.get("results", []):
        t = r.get("time") or {}
        if r.get("arch") != validate.get("arch", "sm_90a") or not t.get("predicted_us"):
            continue
        peaks = peaks or t.get("peaks")
        pts.append({"name": r["case"], "flops": t.get("flops") or 0, "predicted_us": t["predicted_us"],
                    "predicted_bytes": t.get("predicted_dram"), "measured_us": t.get("measured_us"),
                    "measured_bytes": t.get("measured_dram")})
    return pts, peaks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(ROOT, "bench-out")))
    a = ap.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("charts: no matplotlib here, no charts")
        return 2
    from tilec import plot
    status, made = 0, []
    vpath = os.path.join(a.out, "validate.json")
    if os.path.exists(vpath):
        try:
            with open(vpath) as f:
                pts, peaks = roofline_points(json.load(f))
            if pts and peaks:
                tf = peaks["flop_clk_sm"] * peaks["sms"] * peaks["mhz"] * 1e6 / 1e12
                made.append(plot.roofline(pts, os.path.join(a.out, "roofline.png"), tf, peaks["gbs"],
                                          title="tilec's predicted roofline (hollow) and Nsight Compute (filled), "
                                                "%s" % peaks.get("device", "")))
            else:
                print("charts: %s has no predicted times" % vpath)
        except (OSError, ValueError, KeyError) as e:
            print("charts: roofline from %s: %s" % (vpath, e))
            status = 1
    else:
        print("charts: no %s (bench/validate_report.py): no roofline" % vpath)
    for src, png, what in (("attn.txt", "attention_tflops.png", "attention forward, bf16, 16384 tokens"),
                           ("attn_fa4.txt", "attention_fa4_tflops.png",
                            "attention forward, sm_90a as compiled by default")):
        p = os.path.join(a.out, src)
        if not os.path.exists(p):
            print("charts: no %s: no %s" % (p, png))
            continue
        rows = parse_attn(open(p).read())
        if not rows:
            print("charts: no attention table in %s" % p)
            status = 1
            continue
        made.append(plot.perf_report(rows, x="N", y="TFLOP/s", line="kernel", panel=("D", "causal"),
                                     path=os.path.join(a.out, png), peers=("flash", "cuDNN"),
                                     title=what + " (TFLOP/s against N; peers dashed)"))
    p = os.path.join(a.out, "gemm.txt")
    if os.path.exists(p):
        rows, ceil = parse_gemm(open(p).read())
        if rows:
            made.append(plot.perf_report(rows, x="x", y="TFLOP/s", line="kernel", panel="table",
                                         path=os.path.join(a.out, "gemm_tflops.png"), xlabel="size",
                                         hlines=ceil, peers=[r["kernel"] for r in rows if not tilec_name(r["kernel"])],
                                         title="GEMM (TFLOP/s against the size; peers dashed)"))
        else:
            print("charts: no GEMM table in %s" % p)
            status = 1
    else:
        print("charts: no %s: no gemm_tflops.png" % p)
    for m in made:
        print("charts: wrote %s" % m)
    return status


if __name__ == "__main__":
    sys.exit(main())
