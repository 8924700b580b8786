#!/usr/bin/env python3
"""sass_hot.py - a summary of Nsight Compute's source page (CSV of
`ncu --import R --page source --csv --print-source sass`): the columns,
warp-stall samples by how often the instructions ran (a trip's code
against a tile's) and by opcode, and the hottest instructions, so that a
kernel's waits can be read without the GUI.
    python3 bench/sass_hot.py FILE.csv [TOP]"""
import csv
import sys
from collections import defaultdict


def num(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return 0.0


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    # the header is the first row naming a Source column
    h = next(i for i, r in enumerate(rows) if any("Source" in c for c in r))
    head, body = rows[h], rows[h + 1:]
    print("columns:", " | ".join(head))
    src = next(i for i, c in enumerate(head) if "Source" in c)
    addr = next((i for i, c in enumerate(head) if "Address" in c), None)
    samp = [i for i, c in enumerate(head) if "Sampl" in c]
    allc = next((i for i in samp if "All" in head[i]), samp[0] if samp else None)
    nis = next((i for i in samp if "Not" in head[i]), None)
    exe = next((i for i, c in enumerate(head) if c.strip() == "Instructions Executed"), None)
    if allc is None:
        print("no sampling column")
        return 1
    total = sum(num(r[allc]) for r in body if len(r) > allc)
    print(f"instructions {len(body)}, samples {total:.0f}")
    by_op = defaultdict(float)
    for r in body:
        if len(r) <= allc:
            continue
        op = r[src].strip().split(" ")[0].split(".")[0]
        if op.startswith("@"):
            op = r[src].strip().split(" ")[1].split(".")[0]
        by_op[op] += num(r[allc])
    if exe is not None:   # code run once a trip, once a tile, ...: its share of the samples
        by_count = defaultdict(float)
        for r in body:
            if len(r) > max(allc, exe):
                by_count[int(num(r[exe]))] += num(r[allc])
        print("samples by how often the instruction ran (warp-level executions: the trip loop's count, the "
              "tile's, ...):")
        for c, v in sorted(by_count.items(), key=lambda x: -x[1])[:6]:
            print(f"  {c:10d} {v:9.0f} {100 * v / max(total, 1):5.1f}%")
    print("samples by opcode:")
    for op, s in sorted(by_op.items(), key=lambda x: -x[1])[:25]:
        print(f"  {op:16s} {s:9.0f} {100 * s / max(total, 1):5.1f}%")
    order = sorted(range(len(body)), key=lambda i: -num(body[i][allc]) if len(body[i]) > allc else 0)[:top]
    print(f"hottest {top} (index, address, all / not-issued samples, executed, instruction):")
    for i in sorted(order):
        r = body[i]
        print(f"  {i:5d} {r[addr] if addr is not None else '':>8s} {num(r[allc]):8.0f} "
              f"{num(r[nis]) if nis is not None else 0:8.0f} {num(r[exe]) if exe is not None else 0:10.0f}  {r[src].strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
