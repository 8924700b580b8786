#!/usr/bin/env python3
"""sass_ops.py - read a cubin's sm_90 SASS where there is no disassembler
(the build machine has ptxas but no cuobjdump or nvdisasm): the opcode of
each instruction, its predicate, its first register fields, branch targets
and the loops they close. Enough to see where ptxas put an instruction
(a `wgmma.wait_group`, a conversion, an `ex2`) without the device.

    python3 bench/sass_ops.py list CUBIN [FUNC]          every instruction
    python3 bench/sass_ops.py key CUBIN [FUNC] [--loop]  the instructions that
        shape a schedule (HGMMA, WARPGROUP, MUFU, F2FP, SYNCS, BAR, BRA, ...),
        runs of one kind folded ("MUFU.EX2 x16"); --loop: only the innermost
        loops (a backward BRA and the code it jumps over)
    python3 bench/sass_ops.py learn CUBIN FUNC LISTING  extend the table from
        a disassembly: `cuobjdump -sass` text (the encodings inline; CUBIN and
        FUNC unused, give -) or Nsight Compute's source page as CSV of FUNC in
        CUBIN (one row an instruction, no encodings)

The opcode table (bench/sass_sm90.ops, "CODE NAME" a line) maps the low 12
bits of an instruction's first 64-bit word to its mnemonic; it was learned
from the device's disassembly of tilec's own kernels, and an opcode not in
it prints as `?0xNNN` (learn it from a cuobjdump listing). Decoded by hand,
checked against that disassembly: the predicate (bits 12-15: 7 is none,
bit 3 negates), Rd/Ra/Rb (bits 16-23, 24-31, 32-39), MUFU's function (bits
74-77 of the instruction), WARPGROUP.DEPBAR (bit 47) and its count (bits
72-...), a BRA's target."""
import csv
import os
import re
import struct
import subprocess
import sys

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sass_sm90.ops")
MUFU = {1: "COS", 2: "EX2", 3: "LG2", 4: "RCP", 5: "RSQ", 0: "?"}
KEY = ("HGMMA", "WARPGROUP", "MUFU", "F2FP", "SYNCS", "BAR", "BRA", "UTMALDG", "UTMASTG", "USETMAXREG", "STSM",
       "STG", "EXIT", "SHFL", "FMNMX", "LDSM", "UBLKCP", "STS", "LDS", "WARPSYNC", "ELECT")


def load_table():
    t = {}
    if os.path.exists(TABLE):
        for line in open(TABLE):
            f = line.split()
            if len(f) >= 2 and not line.startswith("#"):
                t[int(f[0], 16)] = f[1]
    return t


def text_of(cubin, func):
    """The bytes of .text.FUNC (the first .text.* when FUNC is None) and the function's name."""
    out = subprocess.run(["readelf", "-S", "-W", cubin], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = re.search(r"\]\s+\.text\.(\S+)\s+PROGBITS\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m and (func is None or m.group(1) == func):
            off, size = int(m.group(2), 16), int(m.group(3), 16)
            with open(cubin, "rb") as f:
                f.seek(off)
                return f.read(size), m.group(1)
    sys.exit(f"sass_ops: no .text.{func or '*'} in {cubin}")


def words(code):
    return [struct.unpack_from("<QQ", code, i) for i in range(0, len(code), 16)]


def decode(table, at, lo, hi):
    """(name, predicate, fields text, branch target or None)"""
    op = lo & 0xFFF
    name = table.get(op, f"?0x{op:03x}")
    p = (lo >> 12) & 0xF
    pred = "" if p == 7 else ("@!" if p & 8 else "@") + f"P{p & 7}"
    target = None
    rd, ra, rb = (lo >> 16) & 0xFF, (lo >> 24) & 0xFF, (lo >> 32) & 0xFF
    reg = lambda r: "RZ" if r == 255 else f"R{r}"
    fields = f"{reg(rd)}, {reg(ra)}, {reg(rb)}"
    if name == "MUFU":
        name += "." + MUFU.get((hi >> 10) & 0xF, "?")
        fields = f"{reg(rd)}, {reg(rb)}"
    elif name == "WARPGROUP":
        if lo >> 47 & 1:
            name += ".DEPBAR"
            fields = f"gsb0, {(hi >> 8) & 0xFF}"
        else:
            name += ".ARRIVE"
            fields = ""
    elif name == "BRA":
        w = lo | (hi << 64)
        v = (((w >> 34) & ((1 << 46) - 1)) << 8) | ((lo >> 16) & 0xFF)
        if v >> 53:
            v -= 1 << 54
        target = at + 16 + 4 * v
        fields = f"0x{target:x}"
    return name, pred, fields, target


def listing(cubin, func):
    table = load_table()
    code, func = text_of(cubin, func)
    return func, [(16 * i,) + decode(table, 16 * i, lo, hi) for i, (lo, hi) in enumerate(words(code))]


def innermost_loops(ins):
    """(start, end) offsets of backward branches' loops that contain no other loop."""
    loops = [(t, at) for at, name, _, _, t in ins if name == "BRA" and t is not None and t <= at]
    return [l for l in loops if not any(o != l and l[0] <= o[0] and o[1] <= l[1] for o in loops)]


def key_view(ins, lo=0, hi=None):
    out, last, run = [], None, 0

    def flush():
        if last:
            out.append(f"  0x{last[0]:05x} {last[1]}{' x%d' % run if run > 1 else ''}")

    for at, name, pred, fields, _ in ins:
        if at < lo or (hi is not None and at > hi) or not name.startswith(KEY):
            continue
        label = (pred + " " if pred else "") + name + (" " + fields if name.startswith(("WARPGROUP", "BRA")) else "")
        if last and label == last[1] and not name.startswith("BRA"):
            run += 1
            continue
        flush()
        last, run = (at, label), 1
    flush()
    return out


def learn(cubin, func, path):
    table = load_table()
    with open(path, newline="") as f:
        head = f.read(4096)
        f.seek(0)
        if '"Source"' in head:   # Nsight Compute source page, one row an instruction
            rows = [r for r in csv.reader(f) if r]
            h = next(i for i, r in enumerate(rows) if "Source" in r)
            src = rows[h].index("Source")
            names = [r[src] for r in rows[h + 1:]]
            ins = words(text_of(cubin, func)[0])
            pairs = list(zip(ins, names))
            if len(names) != len(ins):
                sys.exit(f"sass_ops: {len(names)} rows against {len(ins)} instructions: not this cubin")
        else:                    # cuobjdump -sass: "/*0010*/ TEXT ; /* 0x... */" then "/* 0x... */"
            lines = f.read().splitlines()
            pairs = []
            for i, line in enumerate(lines):
                m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?);\s*/\* 0x([0-9a-f]{16}) \*/", line)
                if m and i + 1 < len(lines):
                    h2 = re.search(r"/\* 0x([0-9a-f]{16}) \*/", lines[i + 1])
                    pairs.append(((int(m.group(2), 16), int(h2.group(1), 16) if h2 else 0), m.group(1)))
    new, clash = 0, 0
    for (lo, _), text in pairs:
        t = re.sub(r"^@!?U?P[T0-9]+\s+", "", text.strip())
        base = t.split(" ")[0].split(".")[0]
        op = lo & 0xFFF
        if op in table and table[op] != base:
            clash += 1
            print(f"sass_ops: 0x{op:03x} is {table[op]} in the table, {base} here", file=sys.stderr)
        elif op not in table:
            table[op] = base
            new += 1
    with open(TABLE, "w") as f:
        f.write("# sm_90 SASS: low 12 bits of the first word -> mnemonic (bench/sass_ops.py learn)\n")
        for op in sorted(table):
            f.write(f"0x{op:03x} {table[op]}\n")
    print(f"{len(pairs)} instructions read, {new} opcodes added, {clash} clashes, {len(table)} in the table")
    return 1 if clash else 0


def main(argv):
    if len(argv) < 3 or argv[1] not in ("list", "key", "learn"):
        print(__doc__)
        return 2
    if argv[1] == "learn":
        return learn(argv[2], argv[3], argv[4])
    args = [a for a in argv[2:] if not a.startswith("--")]
    func, ins = listing(args[0], args[1] if len(args) > 1 else None)
    print(f"{func}: {len(ins)} instructions")
    if argv[1] == "list":
        for at, name, pred, fields, _ in ins:
            print(f"  0x{at:05x} {pred:5s} {name:18s} {fields}")
    elif "--loop" in argv:
        for lo, hi in innermost_loops(ins):
            print(f"loop 0x{lo:05x}-0x{hi:05x} ({(hi - lo) // 16 + 1} instructions)")
            print("\n".join(key_view(ins, lo, hi)))
    else:
        print("\n".join(key_view(ins)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
