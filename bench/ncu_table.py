#!/usr/bin/env python3
"""ncu_table.py - a table of warp stalls from Nsight Compute text reports
(`ncu --metrics ...` output, one profiled kernel per file), one column per
file: duration, warp instructions, then per stall reason the warp-cycles
per issued instruction and, in brackets, their total in millions
(instructions x ratio: where the kernels' warp time goes, comparable
between kernels that issue different instruction counts).
  python3 bench/ncu_table.py NAME=FILE ...
bench/attn_stalls.sh gathers the reports and prints this table."""
import re
import sys

REASONS = ("selected", "wait", "math_pipe_throttle", "short_scoreboard", "long_scoreboard", "barrier",
           "not_selected", "dispatch_stall", "no_instruction", "mio_throttle", "branch_resolving",
           "lg_throttle", "drain")
STALL = "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio"


SCALE = {"nsecond": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6}


def metrics(path):
    """{metric name: float} from one report (the last value of each name;
    durations in microseconds whatever unit ncu printed)."""
    out = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"\s+((?:smsp|gpu|sm|l1tex|lts|dram)__\S+)\s+(?:(\S+)\s+)?([\d,]+(?:\.\d+)?)\s*$", line)
            if m:
                v = float(m.group(3).replace(",", ""))
                if m.group(1).startswith("gpu__time_duration"):
                    v *= SCALE.get(m.group(2) or "", 1.0)
                out[m.group(1)] = v
    return out


def table(named):
    cols = [(name, metrics(path)) for name, path in named]
    rows = [("duration (us)", lambda m: "%.1f" % m["gpu__time_duration.sum"] if "gpu__time_duration.sum" in m
             else "-"),
            ("warp instructions (M)", lambda m: "%.1f" % (m["smsp__inst_executed.sum"] / 1e6)
             if "smsp__inst_executed.sum" in m else "-")]
    for r in REASONS:
        key = STALL % r

        def cell(m, key=key):
            if key not in m:
                return "-"
            n = m.get("smsp__inst_executed.sum")
            return "%.2f (%.0f)" % (m[key], m[key] * n / 1e6) if n else "%.2f" % m[key]
        rows.append((r.replace("_", " "), cell))
    lines = ["| metric | " + " | ".join(n for n, _ in cols) + " |", "|---|" + "---|" * len(cols)]
    for label, f in rows:
        lines.append("| %s | " % label + " | ".join(f(m) for _, m in cols) + " |")
    return "\n".join(lines)


def main():
    named = []
    for a in sys.argv[1:]:
        name, _, path = a.partition("=")
        named.append((name, path or name))
    if not named:
        print(__doc__)
        return 2
    print(table(named))
    return 0


if __name__ == "__main__":
    sys.exit(main())
