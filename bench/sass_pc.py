#!/usr/bin/env python3
"""sass_pc.py - where a compute-sanitizer finding is, without a
disassembler: maps the SASS offsets the tools print (`KERNEL+0xOFF` in
memcheck's, racecheck's and synccheck's reports) to PTX lines, and to
`.tile` lines when the PTX carries them (`tilec -lineinfo`).

`ptxas -lineinfo` assembles the PTX for the arch the device ran it as
(sm_86 PTX on an H200 runs as sm_90; sm_90a PTX as sm_90a) into a cubin
whose `.nv_debug_line_sass` section is a DWARF line program from SASS
offsets to PTX lines (`.debug_line` the same to `.tile` lines); ptxas
generates the same code with and without line information, so the
offsets are those of the kernel the tool ran (when the device's driver
compiles PTX as this ptxas does: same CUDA version).

    python3 bench/sass_pc.py FILE.ptx ARCH PC...        PC: [KERNEL+]0xOFF
    python3 bench/sass_pc.py --log LOG [--carry DIR] [--arch ARCH]
        every PC of a bench/sanitize.py log under a tool: each finding
        belongs to the file line sanitize.py prints after it; FILE is
        found under DIR (default .devcarry). ARCH (default sm_90) is the
        arch that PTX of an older target ran as; sm_90a and sm_100a PTX
        run as their own.

Prints one line a PC: the kernel, the offset, the PTX line and its text
(and the .tile line). Exit status 1 when a PC has no line (or ptxas fails).
"""
import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile

PC_RE = re.compile(r"\b([A-Za-z_$][\w$.]*)\+0x([0-9a-fA-F]+)\b")
FILE_RE = re.compile(r"^(\S+\.ptx)\s")


def leb(b, i, signed=False):
    """The LEB128 number at b[i] and the offset after it."""
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            if signed and x & 0x40:
                r -= 1 << s
            return r, i


def line_program(b):
    """The rows of a DWARF (2-4) line program section: a list of
    (address, line, byte offset of the DW_LNE_set_address operand that
    began the row's sequence)."""
    rows, i = [], 0
    while i + 4 <= len(b):
        length = struct.unpack_from("<I", b, i)[0]
        end = i + 4 + length
        version, hlen = struct.unpack_from("<HI", b, i + 4)
        j = i + 10
        prog = j + hlen
        min_inst = b[j]
        j += 1
        if version >= 4:
            j += 1                                   # maximum_operations_per_instruction
        j += 1                                       # default_is_stmt
        line_base = struct.unpack_from("<b", b, j)[0]
        line_range, opcode_base = b[j + 1], b[j + 2]
        lengths = list(b[j + 3:j + 3 + opcode_base - 1])
        i = prog
        addr, line, seq = 0, 1, -1
        while i < end:
            op = b[i]
            i += 1
            if op >= opcode_base:
                adj = op - opcode_base
                addr += (adj // line_range) * min_inst
                line += line_base + adj % line_range
                rows.append((addr, line, seq))
            elif op == 0:
                n, i = leb(b, i)
                sub = b[i]
                if sub == 1:                         # end_sequence
                    addr, line, seq = 0, 1, -1
                elif sub == 2:                       # set_address
                    seq = i + 1
                    addr = int.from_bytes(b[i + 1:i + n], "little")
                i += n
            elif op == 1:                            # copy
                rows.append((addr, line, seq))
            elif op == 2:
                n, i = leb(b, i)
                addr += n * min_inst
            elif op == 3:
                n, i = leb(b, i, True)
                line += n
            elif op == 8:                            # const_add_pc
                addr += ((255 - opcode_base) // line_range) * min_inst
            elif op == 9:
                addr += struct.unpack_from("<H", b, i)[0]
                i += 2
            else:                                    # set_file, set_column, flags, ...: skip the operands
                for _ in range(lengths[op - 1]):
                    _, i = leb(b, i)
        i = end
    return rows


class Cubin:
    """An ELF cubin's sections, and per kernel the sorted (address, line)
    rows of a line section (.nv_debug_line_sass: PTX lines; .debug_line:
    source lines)."""

    def __init__(self, data):
        self.data = data
        shoff = struct.unpack_from("<Q", data, 0x28)[0]
        es, n, si = struct.unpack_from("<HHH", data, 0x3A)
        hdr = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + k * es) for k in range(n)]
        names = hdr[si][4]

        def name(off):
            return data[names + off:data.index(b"\0", names + off)].decode()
        self.secs = [(name(h[0]), h[1], h[4], h[5], h[6], h[7]) for h in hdr]   # name, type, offset, size, link, info

    def section(self, name):
        for k, s in enumerate(self.secs):
            if s[0] == name:
                return k, self.data[s[2]:s[2] + s[3]]
        return None, None

    def kernels(self):
        return [s[0][len(".text."):] for s in self.secs if s[0].startswith(".text.")]

    def rows(self, name):
        """{kernel: sorted [(address, line)]}, or {} without the section."""
        k, b = self.section(name)
        if b is None:
            return {}
        rows = line_program(b)
        kernels = self.kernels()
        owner = {}                                   # set_address operand offset -> kernel
        for _, typ, off, size, link, info in self.secs:
            if typ != 4 or info != k:                # SHT_RELA applying to this section
                continue
            symtab = self.secs[link]
            for r in range(size // 24):
                r_off, r_info, _ = struct.unpack_from("<QQq", self.data, off + 24 * r)
                st_name, _, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", self.data, symtab[2] + 24 * (r_info >> 32))
                sec = self.secs[shndx][0] if shndx < len(self.secs) else ""
                if sec.startswith(".text."):
                    owner[r_off] = sec[len(".text."):]
        out = {}
        for addr, line, seq in rows:
            kern = owner.get(seq, kernels[0] if len(kernels) == 1 else None)
            if kern is not None:
                out.setdefault(kern, []).append((addr, line))
        return {kern: sorted(v) for kern, v in out.items()}


def lookup(rows, pc):
    """The line of the last row at or before pc (None before the first)."""
    best = None
    for addr, line in rows:
        if addr > pc:
            break
        best = line
    return best


def assemble(ptx, arch):
    """The Cubin of `ptxas -arch=ARCH -lineinfo PTX`."""
    ptxas = os.environ.get("PTXAS") or "ptxas"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "x.cubin")
        r = subprocess.run([ptxas, "-arch=" + arch, "-lineinfo", ptx, "-o", out], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError("ptxas -arch=%s -lineinfo %s: %s" % (arch, ptx, r.stderr.strip()))
        with open(out, "rb") as f:
            return Cubin(f.read())


def run_arch(lines, arch):
    """The arch PTX (its lines) ran as: its own for sm_90a / sm_100a
    (arch-specific targets run only there), else ARCH."""
    for ln in lines:
        m = re.match(r"\s*\.target\s+(sm_\w+)", ln)
        if m:
            return m.group(1) if m.group(1).endswith("a") else arch
    return arch


class Locator:
    def __init__(self, ptx, arch):
        self.ptx = ptx
        with open(ptx) as f:
            self.text = f.read().split("\n")
        cub = assemble(ptx, run_arch(self.text, arch))
        self.kernels = cub.kernels()
        self.ptx_rows = cub.rows(".nv_debug_line_sass")
        self.src_rows = cub.rows(".debug_line")

    def where(self, kernel, pc):
        """'PTX line N: TEXT [(.tile line M)]', or None when the kernel or
        the offset has no line."""
        kernel = kernel or (self.kernels[0] if len(self.kernels) == 1 else None)
        line = lookup(self.ptx_rows.get(kernel, []), pc)
        if line is None or not 0 < line <= len(self.text):
            return None
        s = "PTX line %d: %s" % (line, self.text[line - 1].strip())
        src = lookup(self.src_rows.get(kernel, []), pc)
        return s + (" (.tile line %d)" % src if src else "")


def findings(log_lines):
    """[(file, [(kernel, pc), ...])] of a sanitize.py log: the PCs in the
    tool's lines (`=========`) before each file line, in order, each once."""
    out, pending = [], []
    for ln in log_lines:
        if ln.startswith("========="):
            for k, off in PC_RE.findall(ln):
                if (k, int(off, 16)) not in pending:
                    pending.append((k, int(off, 16)))
            continue
        m = FILE_RE.match(ln)
        if m and pending:
            out.append((m.group(1), pending))
            pending = []
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("args", nargs="*", help="FILE.ptx ARCH PC...")
    ap.add_argument("--log", help="a bench/sanitize.py log under compute-sanitizer")
    ap.add_argument("--carry", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                    ".devcarry"))
    ap.add_argument("--arch", default="sm_90", help="the arch PTX of an older target ran as (default sm_90)")
    a = ap.parse_args(argv)
    if a.log:
        with open(a.log) as f:
            jobs = [(os.path.join(a.carry, p), a.arch, pcs) for p, pcs in findings(f.read().split("\n"))]
        log = True
    elif len(a.args) >= 3:
        pcs = []
        for s in a.args[2:]:
            k, _, off = s.rpartition("+")
            pcs.append((k or None, int(off, 16)))
        jobs = [(a.args[0], a.args[1], pcs)]
        log = False
    else:
        ap.error("give FILE.ptx ARCH PC... or --log LOG")
    bad = 0
    for ptx, arch, pcs in jobs:
        try:
            loc = Locator(ptx, arch)
        except (OSError, RuntimeError, IndexError, struct.error) as e:
            print("%s: %s" % (ptx, e))
            bad += 1
            continue
        for k, pc in pcs:
            if log and k not in loc.kernels:
                continue                             # a host frame (libcuda.so.1+0x...), not a kernel of the file
            w = loc.where(k, pc)
            bad += w is None
            print("%s: %s+0x%x: %s" % (os.path.relpath(ptx), k or "", pc, w or "no line"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
