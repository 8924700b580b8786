#!/usr/bin/env python3
"""Tests of tilec.plot (the chart helpers) that draw: PNG files from made-up
rows, read back with matplotlib. No GPU, no tilec library needed. Exits 77
when matplotlib is not installed (test_python.py checks the package
without it), 1 on a failure. Run: python3 python/tests/test_plot.py
"""
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
try:
    import matplotlib  # noqa: F401
except ImportError:
    print("skipped: no matplotlib")
    sys.exit(77)
from tilec import plot  # noqa: E402

failures = []


def check(name, cond, detail=""):
    print("%s %s%s" % ("ok  " if cond else "FAIL", name, (": " + str(detail)) if detail and not cond else ""))
    if not cond:
        failures.append(name)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def inked(path):
    """Share of pixels that are not white."""
    import matplotlib.image as mpimg
    a = mpimg.imread(path)
    rgb = a[..., :3]
    return float((rgb.min(axis=-1) < 0.95).mean())


def main():
    d = tempfile.mkdtemp()
    rows = []
    for dd in (64, 128):
        for causal in ("no", "yes"):
            for n in (1024, 2048, 4096, 8192, 16384):
                for k, base in (("flash", 300.0), ("cuDNN", 450.0), ("tilec", 330.0)):
                    rows.append({"D": dd, "causal": causal, "N": n, "kernel": k,
                                 "TFLOP/s": base + dd * 0.5 + (n.bit_length() - 10) * 5})
    rows.append({"D": 64, "causal": "no", "N": 512, "kernel": "tilec", "TFLOP/s": float("nan")})
    p = plot.perf_report(rows, x="N", y="TFLOP/s", line="kernel", panel=("D", "causal"),
                         path=os.path.join(d, "attn.png"), title="test")
    size = png_size(p)
    check("perf_report writes a PNG of 2 x 2 panels", size == (int(6.4 * 2 * 110), int(4.2 * 2 * 110)), size)
    check("perf_report draws", 0.02 < inked(p) < 0.6, inked(p))
    g = [{"table": "square", "kernel": "cuBLAS", "x": 4096, "TFLOP/s": 730.0},
         {"table": "square", "kernel": "cuBLAS", "x": 8192, "TFLOP/s": 690.0},
         {"table": "square", "kernel": "tilec", "x": 4096, "TFLOP/s": 737.0},
         {"table": "LLM", "kernel": "tilec", "x": "4096x14336x4096", "TFLOP/s": 644.0},
         {"table": "LLM", "kernel": "tilec", "x": "4096x4096x14336", "TFLOP/s": 610.0}]
    p = plot.perf_report(g, x="x", y="TFLOP/s", line="kernel", panel="table", path=os.path.join(d, "gemm.png"),
                         hlines={"ceiling": 640.0})
    check("perf_report: numeric and categorical panels", png_size(p) == (int(6.4 * 2 * 110), int(4.2 * 110)),
          png_size(p))
    one = plot.perf_report(g[:3], x="x", y="TFLOP/s", line="kernel", path=os.path.join(d, "one.png"))
    check("perf_report: one panel", png_size(one) == (int(6.4 * 110), int(4.2 * 110)), png_size(one))
    pts = [{"name": "softmax", "flops": 6.7e8, "predicted_us": 111.8, "predicted_bytes": 536870912,
            "measured_us": 130.5, "measured_bytes": 5.37e8},
           {"name": "gemm", "flops": 1.374e11, "predicted_us": 128.4, "predicted_bytes": 100663296,
            "measured_us": 190.2, "measured_bytes": 1.35e8},
           {"name": "transpose", "flops": 0, "predicted_us": 111.8, "predicted_bytes": 536870912,
            "measured_us": 140.0, "measured_bytes": 5.37e8},
           {"name": "cumsum", "flops": 4.0e8, "predicted_us": 223.7, "predicted_bytes": 1073741824}]
    p = plot.roofline(pts, os.path.join(d, "roof.png"), peak_tflops=1070.5, dram_gbs=4800, title="test")
    check("roofline writes a PNG", png_size(p) == (int(13.5 * 110), int(5.2 * 110)), png_size(p))
    check("roofline draws", 0.02 < inked(p) < 0.6, inked(p))
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    os.rmdir(d)
    print("%d failure(s)" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
