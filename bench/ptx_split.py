#!/usr/bin/env python3
"""ptx_split.py - an experiment on ptxas' scheduling: a copy of a PTX file
in which chosen lines each sit alone in a loop that runs once (a backward
branch on a kernel parameter that never holds), so that ptxas' scheduler
cannot move other instructions across them (bench/RESULTS.md 2026-12-07
19:40: ptxas moved the second product's wait to the top of the softmax).
A forward branch is not enough: ptxas if-converts it (the first version
of this script branched around a `bar.warp.sync`, which ptxas turned
into a predicated NOP and scheduled across; bench/sass_ops.py shows it).
The result computes the same as the original; time it beside the original
with bench/attn_xp.sh and read its SASS with bench/sass_ops.py.

    python3 bench/ptx_split.py IN.ptx OUT.ptx --fence REGEX[@N] ... [--kernel NAME]

REGEX@N: the N-th line (1-based, default 1; * for every one) of kernel
NAME (default: the first .entry) that matches REGEX; it must be one whole instruction. The
.meta beside IN is copied beside OUT. The loop branches back while the
first .b32 parameter the kernel loads is -7 (no size is negative, and as
f32 bits it is a NaN): it never does."""
import argparse
import re
import shutil
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--fence", action="append", required=True)
    ap.add_argument("--kernel", default=None)
    a = ap.parse_args()
    lines = open(a.src).read().split("\n")
    starts = [i for i, l in enumerate(lines) if l.startswith(".visible .entry") or l.startswith(".entry")]
    if not starts:
        sys.exit("no .entry in " + a.src)
    k = starts[0]
    if a.kernel:
        ks = [i for i in starts if re.search(r"\b%s\(" % re.escape(a.kernel), lines[i])]
        if not ks:
            sys.exit("no kernel " + a.kernel)
        k = ks[0]
    end = next((i for i in starts if i > k), len(lines))
    name = re.search(r"entry\s+(\w+)", lines[k]).group(1)
    param = next((m.group(1) for l in lines[k:end]
                  for m in [re.search(r"ld\.param\.b32\s+%r\d+,\s*\[(" + name + r"_param_\d+)\]", l)] if m), None)
    if not param:
        sys.exit("no .b32 parameter load in " + name)
    where = []
    for spec in a.fence:
        rx, _, nth = spec.rpartition("@") if re.search(r"@(\d+|\*)$", spec) else (spec, "", "1")
        hits = [i for i in range(k, end) if re.search(rx, lines[i])]
        if not hits or (nth != "*" and len(hits) < int(nth)):
            sys.exit("%r: %d matching lines in %s" % (rx, len(hits), name))
        where += hits if nth == "*" else [hits[int(nth) - 1]]
    for n, i in enumerate(sorted(where, reverse=True)):
        tag = "SPLIT%d" % n
        lines[i:i + 1] = ["\t{", "\t.reg .pred %%p%s;" % tag, "\t.reg .b32 %%r%s;" % tag,
                          "\tld.param.b32 %%r%s, [%s];" % (tag, param),
                          "\tsetp.eq.s32 %%p%s, %%r%s, -7;" % (tag, tag), "$L__%s:" % tag, lines[i],
                          "\t@%%p%s bra $L__%s;" % (tag, tag), "\t}"]
    open(a.dst, "w").write("\n".join(lines))
    meta = re.sub(r"\.ptx$", ".meta", a.src)
    if meta != a.src:
        try:
            shutil.copyfile(meta, re.sub(r"\.ptx$", ".meta", a.dst))
        except FileNotFoundError:
            pass
    print("%s: %d fenced lines in %s (on %s)" % (a.dst, len(where), name, param))


if __name__ == "__main__":
    main()
