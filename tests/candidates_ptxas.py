#!/usr/bin/env python3
"""candidates_ptxas.py - every candidate the tile choice lists for the
examples autotuning tunes (GEMM; attention at D 64 and 128, with and
without the causal mask, and the 256-row tile of sm_86 PTX for an H200's
227 KB with 4k tokens) compiles for sm_86 and sm_90a with
`--pass-option tiles.candidate=I`, its PTX assembled by ptxas (the tilec
command's check; spill stores from ptxas -v are printed, not failures:
the rule's own 256-row choice for sm_86 PTX at D = 128 spills 4 bytes on
sm_86, where it is not meant to run), and candidate 0 is the compile
without the option, byte for byte. Skipped (77) without ptxas.

    candidates_ptxas.py TILEC EXAMPLES_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

tilec, examples = sys.argv[1], sys.argv[2]
ptxas = os.environ.get("TILEC_PTXAS") or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if not (os.path.isfile(ptxas) and os.access(ptxas, os.X_OK)):
    print("skipped: no ptxas")
    sys.exit(77)

SPECS = [  # file, extra tilec arguments
    ("gemm.tile", []),
    ("gemm.tile", ["-DT=f16"]),
    ("attention.tile", ["-DD=64"]),
    ("attention.tile", ["-DD=64", "-DCAUSAL=true"]),
    ("attention.tile", ["-DD=128"]),
    ("attention.tile", ["-DD=128", "-DCAUSAL=true"]),
    ("attention.tile", ["-DD=128", "--dim", "N=4096", "--dim", "NK=4096",
                        "--pass-option", "target.smem-per-block=232448,target.sms=132"]),
]
failures, count = [], 0
with tempfile.TemporaryDirectory() as tmp:
    for arch in ("sm_86", "sm_90a"):
        for name, extra in SPECS:
            src = os.path.join(examples, name)
            base = [tilec, src, "-arch=" + arch, "--ptxas=" + ptxas] + extra
            listing = subprocess.run(base + ["--candidates"], capture_output=True, text=True)
            lines = [ln for ln in listing.stdout.splitlines() if not ln.startswith("#")]
            label = "%s %s %s" % (arch, name, " ".join(extra))
            if listing.returncode or not lines:
                failures.append("%s: --candidates failed: %s" % (label, listing.stderr.strip()))
                continue
            plain = os.path.join(tmp, "plain.ptx")
            subprocess.run(base + ["-o", plain], check=True)
            for ln in lines:
                i, _, defs = ln.partition(" ")
                out = os.path.join(tmp, "c%s.ptx" % i)
                r = subprocess.run(base + ["--pass-option", "tiles.candidate=" + i, "-o", out],
                                   capture_output=True, text=True)
                count += 1
                if r.returncode:
                    failures.append("%s candidate %s (%s): tilec exit %d: %s" % (label, i, defs, r.returncode,
                                                                                r.stderr.strip()[:300]))
                    continue
                v = subprocess.run([ptxas, "-arch=" + arch, "-v", out, "-o", os.devnull], capture_output=True,
                                   text=True)
                spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", v.stderr)]
                if v.returncode:
                    failures.append("%s candidate %s (%s): ptxas -v exit %d: %s" % (
                        label, i, defs, v.returncode, v.stderr.strip()[:300]))
                elif any(spills):
                    print("note: %s candidate %s (%s): spill stores %s" % (label, i, defs, spills))
                if i == "0" and open(out).read() != open(plain).read():
                    failures.append("%s: candidate 0 is not the compile without tiles.candidate" % label)
                print("%s candidate %s (%s): %s" % (label, i, defs, "ok" if not failures or
                                                     not failures[-1].startswith(label + " candidate " + i)
                                                     else "FAIL"), flush=True)
for f in failures:
    print("FAIL " + f)
print("%d candidates compiled and assembled, %d failure(s)" % (count, len(failures)))
sys.exit(1 if failures or not count else 0)
