#!/usr/bin/env python3
"""Concurrent writers of one -o: tilec writes X.ptx and X.meta atomically as
a pair, so after any number of runs racing on the same output the two files
come from one run. Each round starts three compiles of vector_add with
different BLOCK values (so different threads per block) at once; afterwards
the metadata's `threads N` must equal the PTX's `.maxntid N`, and no
temporary file may be left in the folder.

usage: concurrent_writers.py TILEC EXAMPLES_DIR [ROUNDS]
"""
import os
import re
import subprocess
import sys
import tempfile

tilec, examples = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 40
src = os.path.join(examples, "vector_add.tile")
blocks = ["256", "1024", "4096"]
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "k.ptx")
    for r in range(rounds):
        order = blocks[r % 3:] + blocks[:r % 3]
        procs = [subprocess.Popen([tilec, src, "-DBLOCK=" + b, "-o", out]) for b in order]
        for p in procs:
            if p.wait() != 0:
                sys.exit("round %d: tilec exited with %d" % (r, p.returncode))
        meta = open(os.path.join(d, "k.meta")).read()
        ptx = open(out).read()
        t = re.search(r"^threads (\d+)", meta, re.M).group(1)
        n = re.search(r"\.maxntid (\d+)", ptx).group(1)
        if t != n:
            sys.exit("round %d: mismatched pair: metadata threads %s, PTX .maxntid %s" % (r, t, n))
        left = sorted(f for f in os.listdir(d) if f not in ("k.ptx", "k.meta"))
        if left:
            sys.exit("round %d: files left behind: %s" % (r, left))
print("%d rounds of 3 concurrent writers: every .ptx/.meta pair from one run" % rounds)
