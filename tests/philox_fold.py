#!/usr/bin/env python3
"""philox_fold.py - the code generator's Philox against the definition,
without a GPU: kernels that store randint / rand of constant seeds and
offsets, which LLVM folds to constants in the PTX, compared with a Python
Philox4x32-10 written from docs/language.md ("Random numbers"): offset o
gives word (o & 3) at counter (lo(o >> 2), hi(o >> 2), 0, 0), key (lo(seed),
hi(seed)). The offsets cover each word, i32 offsets read as their u32 bits
(negative ones included), i64 offsets with a high word, and the wrap at
2^32 and 2^64.

usage: philox_fold.py TILEC"""
import re
import struct
import subprocess
import sys
import tempfile

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox(c, k0, k1):
    c = list(c)
    for _ in range(10):
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & MASK, p1 & MASK, ((p0 >> 32) ^ c[3] ^ k1) & MASK, p0 & MASK]
        k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
    return c


def as_f32(imm):
    """A PTX store's immediate (0fXXXXXXXX, or the bits as an integer) as a float."""
    if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", imm):
        return struct.unpack(">f", bytes.fromhex(imm[2:]))[0]
    if re.fullmatch(r"-?\d+", imm):
        return struct.unpack("<f", struct.pack("<I", int(imm) & MASK))[0]
    return None


def randint(seed, off):
    s, q = seed & (2**64 - 1), off >> 2
    return philox([q & MASK, q >> 32, 0, 0], s & MASK, s >> 32)[off & 3]


# (seed, offset as written in the source, its u64 bits)
CASES = [(42, "0", 0), (42, "1", 1), (42, "2", 2), (42, "3", 3), (42, "4", 4), (42, "12345", 12345),
         (-7, "-1", 0xFFFFFFFF), (-7, "-2147483648", 0x80000000), (0x299f31d0a4093822, "1000003", 1000003),
         (5, "i64(-1)", 2**64 - 1), (5, "i64(-2)", 2**64 - 2), (5, "i64(4294967296) + 7", 2**32 + 7),
         (5, "i64(4294967299)", 2**32 + 3), (9, "i64(81985529216486895)", 81985529216486895),
         (-1, "u32(4294967295)", 0xFFFFFFFF)]


def main():
    tilec = sys.argv[1]
    # the reference itself, on Random123's known answer (philox4x32, R = 10)
    assert philox([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], 0xa4093822, 0x299f31d0) == \
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
    src = []
    for i, (seed, off, _) in enumerate(CASES):
        src.append("kernel k%d(R: global u32[N]) grid(1) { R[0] = randint(%d, %s); }" % (i, seed, off))
        src.append("kernel f%d(R: global f32[N]) grid(1) { R[0] = rand(%d, %s); }" % (i, seed, off))
    with tempfile.TemporaryDirectory() as d:
        path = d + "/philox.tile"
        with open(path, "w") as f:
            f.write("\n".join(src) + "\n")
        r = subprocess.run([tilec, path, "-arch=sm_86", "-o", d + "/philox.ptx"], capture_output=True, text=True)
        if r.returncode:
            print(r.stderr)
            return 1
        ptx = open(d + "/philox.ptx").read()
    got = {}
    for name, body in re.findall(r"\.entry (\w+)\((.*?)\n}", ptx, re.S):
        st = re.findall(r"st\.global\.\w+\s+\[[^\]]+\],\s*(\S+);", body)
        got[name] = st[0] if len(st) == 1 else None
    bad = 0
    for i, (seed, off, bits) in enumerate(CASES):
        want = randint(seed, bits)
        g = got.get("k%d" % i)
        ok = g is not None and re.fullmatch(r"-?\d+", g) and int(g) & MASK == want
        wf = (want >> 8) * 2.0**-24
        gf = got.get("f%d" % i)
        okf = gf is not None and as_f32(gf) == wf
        print("%-3s seed %-20d offset %-24s randint %-12s want %-10d rand %-12s want %.9g"
              % ("ok" if ok and okf else "BAD", seed, off, g, want, gf, wf))
        bad += not (ok and okf)
    print("%d of %d cases folded to the defined words" % (len(CASES) - bad, len(CASES)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
