#!/usr/bin/env python3
"""clocks.py - the GPU's SM clock, power and temperature per phase of a
bench/device.sh run: samples of `nvidia-smi --query-gpu=timestamp,clocks.sm,
power.draw,temperature.gpu,clocks_event_reasons.active -lms 200` (CSV, the
machine's local time first, written by device.sh) matched to the
phase marks device.sh writes ("<unix time> <phase>" per line). Prints per
phase the samples, median and lowest SM clock, median and highest power,
highest temperature, and how many samples had a clock-limiting reason
active (power, thermal). Timing differences between runs that share a
kernel often follow these.

    python3 bench/clocks.py CLOCKS.csv PHASES.txt
    python3 bench/clocks.py --query   (the nvidia-smi fields it reads)
bench/power_probe.py samples and reads the same fields (QUERY, read).
"""
import datetime
import sys

QUERY = "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"


def read(csv_path):
    """Samples of `nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits`:
    (unix time, SM MHz, W, degrees C, limit-reason bits) each."""
    rows = []
    for line in open(csv_path):
        f = [x.strip() for x in line.split(",")]
        try:
            t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            row = [t, float(f[1]), float(f[2]), float(f[3])]
        except (ValueError, IndexError):
            continue  # an error line or a partial one
        try:
            row.append(int(f[4], 16))
        except (ValueError, IndexError):
            row.append(0)  # reasons not reported by this driver
        rows.append(tuple(row))
    return rows


def main(csv_path, phases_path):
    marks = []
    for line in open(phases_path):
        t, _, name = line.strip().partition(" ")
        if t:
            marks.append((float(t), name))
    rows = read(csv_path)
    print("%-28s %7s %10s %8s %9s %9s %6s %9s" % ("phase", "samples", "MHz median", "MHz min",
                                                   "W median", "W max", "max C", "limited"))
    for i, (t0, name) in enumerate(marks):
        t1 = marks[i + 1][0] if i + 1 < len(marks) else float("inf")
        s = [r for r in rows if t0 <= r[0] < t1]
        if not s:
            continue
        clk = sorted(r[1] for r in s)
        pw = sorted(r[2] for r in s)
        # clocks_event_reasons: 0x4 SW power cap, 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake
        lim = sum(1 for r in s if r[4] & 0xEC)
        print("%-28s %7d %10.0f %8.0f %9.0f %9.0f %6.0f %9d" % (name, len(s), clk[len(clk) // 2], clk[0],
                                                               pw[len(pw) // 2], pw[-1], max(r[3] for r in s), lim))


if __name__ == "__main__":
    if sys.argv[1:] == ["--query"]:
        print(QUERY)
    else:
        main(sys.argv[1], sys.argv[2])
