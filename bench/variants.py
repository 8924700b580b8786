"""variants.py - compiling a benchmark's table of kernel variants on the
build machine (bench/gemm_bench.py, bench/gemm_f8_bench.py --prepare)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compile_variants(tilec_bin, d, table, ptxas_arch=None, width=32, entry=None):
    """Compile every row of `table` (lines "NAME | ARCH | SOURCE | DEFINES |
    OPTIONS", SOURCE relative to the checkout) into folder d, emptied first,
    and assemble each with `ptxas -v` for ptxas_arch(ARCH) (default ARCH);
    a rejection ends the run. Writes d/variants.txt ("NAME REGS SPILL"
    lines) and prints a line a variant. entry: the kernel whose registers
    and spills are read (a module with warp-specialized roles also carries
    its portable variant, compiled first); default the first in the log."""
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    lines = []
    for row in table.strip().splitlines():
        name, arch, src, defs, opts = [x.strip() for x in row.split("|")]
        ptx = os.path.join(d, name + ".ptx")
        subprocess.run([tilec_bin, os.path.join(ROOT, src), "-arch=" + arch] + defs.split() + opts.split() +
                       ["-o", ptx], check=True)
        r = subprocess.run(["ptxas", "-arch=" + (ptxas_arch(arch) if ptxas_arch else arch), "-v", ptx,
                            "-o", "/dev/null"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("ptxas rejected %s: %s" % (ptx, r.stderr))
        log = r.stderr.split("Compiling entry function '%s'" % entry)[-1] if entry else r.stderr
        regs = log.split("Used ")[1].split()[0] if "Used " in log else "?"
        spill = log.split("bytes spill stores")[0].split()[-1] if "spill stores" in log else "?"
        lines.append("%s %s %s" % (name, regs, spill))
        print("%-*s %-7s regs %s spill %s  %s %s" % (width, name, arch, regs, spill, defs, opts))
    with open(os.path.join(d, "variants.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def read_variants(d):
    """{NAME: (REGS, SPILL)} from d/variants.txt as compile_variants wrote
    it (empty when the folder has none)."""
    vt = os.path.join(d, "variants.txt")
    if not os.path.exists(vt):
        return {}
    with open(vt) as f:
        return {w[0]: (w[1], w[2]) for w in (line.split() for line in f) if len(w) >= 3}
