#!/usr/bin/env python3
"""Hostile inputs through the tilec CLI, generated here (deterministic seed).

Classes: deep nesting (flat sums, ^T chains, parentheses, unary chains,
ternaries, nested calls and blocks), long let chains, huge or negative
defines, tile shapes, pipeline depths, params and dims counts, static
extents, grid rules (negative, too wide, too long, division by zero),
division by a constant zero and -(INT64_MIN), long lines and error floods,
byte-level mutations and truncations of the examples, and token soup.

Each input runs through `tilec FILE -o OUT.ptx [-D...]` with a 10 s limit
on its CPU time (RLIMIT_CPU: the time the compiler spends, whatever else
the machine runs beside it; on a machine of its own that is its wall time)
and, for a run that waits without computing, a wall-clock limit of six
times that. Asserted for every input:
  - no signal (crash) and no run over either limit;
  - exit status is not 4 (internal error);
  - at most 1 MB of diagnostics;
  - exit 1: every `error:` line is located as file:line:col, except the
    errors that have no position (a file without kernels, a define that
    names no compile-time param: those name the file);
  - exit 0: the metadata is accepted by libtilert's parser (meta_check) and,
    where ptxas is installed, the PTX assembles: the tilec command checks
    every PTX it writes with ptxas when it finds one (an exit 4 otherwise),
    and this script assembles a sample again on its own.
It prints the exit statuses seen and the slowest input (CPU and wall time).

usage: hostile_corpus.py TILEC META_CHECK EXAMPLES_DIR [--count N] [--jobs J]
"""
import argparse
import concurrent.futures
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("tilec")
ap.add_argument("meta_check")
ap.add_argument("examples")
ap.add_argument("--count", type=int, default=520)
ap.add_argument("--jobs", type=int, default=2)
ap.add_argument("--timeout", type=int, default=10,
                help="CPU seconds per input (a sanitizer build runs slower: CMake passes more)")
ap.add_argument("--keep", help="write the corpus to this folder and keep it")
args = ap.parse_args()
rng = random.Random(29)

HEAD = "kernel k(X: global f32[N])\n  grid(1)\n{\n"
TAIL = "}\n"


def let(expr, use="X[0] = f32(a);"):
    return HEAD + "  let a = " + expr + ";\n  " + use + "\n" + TAIL


def deep_cases():
    out = []
    for n in (100, 255, 256, 300, 1000, 10000):
        out.append(("flat_sum_%d" % n, let(" + ".join(["1"] * n)), []))
        out.append(("flat_mul_%d" % n, let(" * ".join(["block.x"] * n)), []))
        out.append(("parens_%d" % n, let("(" * n + "1" + ")" * n), []))
        out.append(("negs_%d" % n, let("-" * n + "1"), []))
        out.append(("nots_%d" % n, HEAD + "  let a = " + "!" * n + "true;\n" + TAIL, []))
        out.append(("ternary_%d" % n, let("block.x == 0 ? 1 : " * n + "2"), []))
        out.append(("calls_%d" % n, let("max(block.x, " * n + "2" + ")" * n), []))
        out.append(("transpose_%d" % n, "kernel k(X: global f32[N, N])\n  grid(1)\n{\n  let t = X[0 : +16, 0 : +16]"
                    + "^T" * n + ";\n  X[0 : +16, 0 : +16] = t;\n}\n", []))
        out.append(("ifs_%d" % n, HEAD + "if block.x == 0 {\n" * n + "X[0] = 1.0;\n" + "}\n" * n + TAIL, []))
        out.append(("braces_%d" % n, HEAD + "{\n" * n + "X[0] = 1.0;\n" + "}\n" * n + TAIL, []))
        out.append(("grid_sum_%d" % n, "kernel k(X: global f32[N])\n  grid(N" + " + 1" * n + ")\n{\n  X[0] = 1.0;\n}\n", []))
        out.append(("index_%d" % n, let("X[" * n + "0" + "]" * n), []))
        t16 = "  X[0 : +16] = t;\n"
        out.append(("lists_%d" % n, HEAD + "  tile t = reshape(X[0 : +16], " + "[" * n + "16" + "]" * n + ");\n"
                    + t16 + TAIL, []))
        out.append(("slices_%d" % n, HEAD + "  tile t = X[0 : +16]" + "[1 : +15][0 : 15]" * n + ";\n"
                    + "  X[0 : +15] = t;\n" + TAIL, []))
        out.append(("reshapes_%d" % n, HEAD + "  tile t = " + "reshape(" * n + "X[0 : +16]" + ", [4, 4])" * n
                    + ";\n" + t16 + TAIL, []))
        out.append(("concats_%d" % n, HEAD + "  tile t = " + "concat(" * n + "X[0 : +1]" + ", X[0 : +1], 0)" * n
                    + ";\n  X[0 : +%d] = t;\n" % (n + 1) + TAIL, []))
        out.append(("gathers_%d" % n, HEAD + "  tile t = " + "X[" * n + "iota(16)" + "]" * n + ";\n" + t16 + TAIL,
                    []))
    return out


def let_chains():
    out = []
    for n in (1000, 10000, 40000):
        body = "  let a0 = block.x;\n" + "".join("  let a%d = a%d + 1;\n" % (i + 1, i) for i in range(n))
        out.append(("lets_%d" % n, HEAD + body + "  X[a%d] = 1.0;\n" % n + TAIL, []))
    body = "".join("  let b%d = %d;\n" % (i, i) for i in range(20000))
    out.append(("const_lets_20000", HEAD + body + TAIL, []))
    # Stores to repeated addresses: LLVM's optimisation of them grows faster
    # than linearly (5,000 take ~4 s), so this case stays at 2,000.
    body = "".join("  X[%d] = 1.0;\n" % (i % 1000) for i in range(2000))
    out.append(("stores_2000", HEAD + body + TAIL, []))
    return out


def define_cases():
    va = os.path.join(args.examples, "vector_add.tile")
    src = open(va).read()
    out = []
    for v in ["0", "1", "-1", "-1024", "3", "1023", "65536", "1048576", "1048577", "2147483647",
              "2147483648", "9223372036854775807", "-9223372036854775808", "99999999999999999999",
              "2^30", "1e9", "0x40000000", "true", "bf16", "", " ", "1 + 1", "${X}", "nan", "inf"]:
        out.append(("va_block_%r" % v, src, ["-DBLOCK=" + v]))
    for name in ["BLOCK2", "", "=", "X", "k"]:
        out.append(("va_define_%r" % name, src, ["-D%s=1" % name]))
    sm = os.path.join(args.examples, "softmax.tile")
    ssrc = open(sm).read()
    for v in ["1", "7", "32", "4096", "131072", "-5", "1073741824"]:
        out.append(("softmax_block_%s" % v, ssrc, ["-DBLOCK=" + v]))
    for t in ["f32", "f16", "bf16", "i32", "bool", "f8e4m3", "u64", "nope", "1"]:
        out.append(("softmax_T_%s" % t, ssrc, ["-DT=" + t]))
    gm = os.path.join(args.examples, "gemm.tile")
    gsrc = open(gm).read()
    for (bm, bn, bk, st) in [(16, 16, 16, 1), (64, 64, 32, 3), (128, 128, 64, 16), (128, 128, 64, 17),
                             (128, 128, 64, 0), (1024, 1024, 64, 2), (4096, 4096, 4096, 4), (-64, 64, 64, 2),
                             (3, 5, 7, 2), (2048, 2048, 16, 8)]:
        out.append(("gemm_%d_%d_%d_%d" % (bm, bn, bk, st), gsrc,
                    ["-DBM=%d" % bm, "-DBN=%d" % bn, "-DBK=%d" % bk, "-DSTAGES=%d" % st]))
    return out


def limit_cases():
    out = []
    for n in (63, 64, 65, 200):
        out.append(("params_%d" % n, "kernel k(" + ", ".join("X%d: global f32[N]" % i for i in range(n))
                    + ")\n  grid(1)\n{\n  X0[0] = 1.0;\n}\n", []))
    for n in (8, 9, 40):
        out.append(("dims_%d" % (n * 8), "kernel k(" + ", ".join(
            "X%d: global f32[%s]" % (i, ", ".join("D%d_%d" % (i, j) for j in range(8))) for i in range(n))
            + ")\n  grid(1)\n{\n}\n", []))
    for e in ["0", "1", "2147483647", "2147483648", "99999999999", "-1"]:
        out.append(("static_%s" % e, "kernel k(X: global f32[%s])\n  grid(1)\n{\n  X[0] = 1.0;\n}\n" % e, []))
    for g in ["N / 0", "cdiv(N, 0)", "N % 0", "divisor(N, 0)", "1, 65535", "1, 65536", "1, 1, 65536",
              "2147483647", "2147483648", "-1", "0", "N - 1", "N + (0 - 5)", "N * N * N", "min(N, 0 - 1)",
              "N, N, N", "1, 2, 3, 4", "block.x", "X", "1.5", "true"]:
        out.append(("grid_%s" % g, "kernel k(X: global f32[N])\n  grid(%s)\n{\n  X[0] = 1.0;\n}\n" % g, []))

    def bal(d):
        return "N" if d == 0 else "(%s + %s)" % (bal(d - 1), bal(d - 1))
    for d in (5, 6, 7, 9):
        out.append(("grid_bushy_%d" % d, "kernel k(X: global f32[N])\n  grid(%s)\n{\n  X[0] = 1.0;\n}\n" % bal(d), []))
    for s in ["1", "4", "16", "17", "100", "0", "-1", "1000000000"]:
        out.append(("pipeline_%s" % s, HEAD + "  for i in 0 .. N pipeline(%s) {\n    X[i] = 1.0;\n  }\n" % s + TAIL, []))
    for shape in ["1", "1024", "1048576", "1048577", "1073741824", "65536, 65536", "2147483647, 2147483647",
                  "4611686018427387904", "0", "-1"]:
        out.append(("tile_%s" % shape, HEAD + "  tile t: f32[%s] = 0.0;\n  X[0] = 1.0;\n" % shape + TAIL, []))
    for e in ["block.x / 0", "block.x % 0", "1 / 0", "-(-9223372036854775807 - 1)", "9223372036854775807 + 1",
              "-9223372036854775808", "block.x * 2147483647", "1.0 / 0.0", "0x7fffffffffffffff * 2"]:
        out.append(("arith_%s" % e, HEAD + "  let a = %s;\n  X[0] = f32(a);\n" % e + TAIL, []))
    return out


def flood_cases():
    out = []
    out.append(("flood_stray_1MB", HEAD + "  let a = " + "$ " * 500000 + ";\n" + TAIL, []))
    out.append(("flood_one_line_2MB", "kernel k(X: global f32[N]) grid(1) { " +
                "let q = $ + undefined_name ; " * 70000 + "}\n", []))
    out.append(("flood_long_name", let("x" * 1000000), []))
    out.append(("flood_redefinitions", HEAD + "  let a = 1;\n" * 5000 + TAIL, []))
    out.append(("flood_unknown_names", HEAD + "".join("  let v%d = nope%d;\n" % (i, i) for i in range(5000)) + TAIL, []))
    out.append(("flood_unterminated", HEAD + "/* " + "x" * 100000, []))
    out.append(("flood_nul", HEAD + "\0" * 10000 + TAIL, []))
    out.append(("flood_utf8", HEAD + "é" * 50000 + TAIL, []))
    out.append(("flood_semicolons", HEAD + ";" * 200000 + TAIL, []))
    out.append(("flood_kernels", "kernel k(X: global f32[N]) grid(1) { X[0] = 1.0; }\n" * 2000, []))
    out.append(("empty", "", []))
    out.append(("only_kernel", "kernel", []))
    return out


TOKENS = ["kernel", "k", "(", ")", "[", "]", "{", "}", ",", ";", ":", ".", "..", "?", "+", "-", "*", "/",
          "%", "@", "^T", "=", "+=", "==", "<", "&&", "!", "let", "tile", "for", "in", "step", "pipeline",
          "if", "else", "global", "shared", "reg", "grid", "true", "inf", "1", "0", "2147483648", "1.5",
          "X", "N", "block", "x", "f32", "bf16", "max", "exp", "iota", "cdiv", "divisor", "rowsum", "where",
          "concat", "reshape", "transpose", "[", "]", "0 : 4"]


def mutation_cases(n):
    srcs = [open(os.path.join(args.examples, f), "rb").read()
            for f in sorted(os.listdir(args.examples)) if f.endswith(".tile")]
    out = []
    i = 0
    while len(out) < n:
        s = bytearray(rng.choice(srcs))
        kind = i % 5
        if kind == 0:      # flip bytes
            for _ in range(rng.randint(1, 8)):
                s[rng.randrange(len(s))] = rng.randrange(256)
        elif kind == 1:    # truncate
            s = s[:rng.randrange(len(s))]
        elif kind == 2:    # duplicate a slice
            a = rng.randrange(len(s))
            b = min(len(s), a + rng.randint(1, 200))
            s[a:a] = s[a:b] * rng.randint(1, 50)
        elif kind == 3:    # delete a slice
            a = rng.randrange(len(s))
            del s[a:a + rng.randint(1, 100)]
        else:              # token soup
            s = (" ".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 400)))).encode()
        out.append(("mut_%d" % i, bytes(s), []))
        i += 1
    return out


def corpus():
    c = deep_cases() + let_chains() + define_cases() + limit_cases() + flood_cases()
    c += mutation_cases(max(0, args.count - len(c)))
    return c


LOCATED = re.compile(r"^[^\n:]+:\d+:\d+: error: ")
# Errors about the whole file or the command line have no position: a file
# with no kernel, a -D naming no compile-time param. Any other error line
# must carry file:line:col.
UNPOSITIONED = re.compile(r"^[^\n:]+: error: (no kernel in file$|unknown define ')")
ptxas = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)


def limit_cpu():
    resource.setrlimit(resource.RLIMIT_CPU, (args.timeout, args.timeout + 1))


def run_limited(cmd):
    """(exit status or -signal, stderr bytes, CPU seconds, wall seconds, hung)"""
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                             preexec_fn=limit_cpu)
        hung = []
        timer = threading.Timer(6 * args.timeout, lambda: (hung.append(1), p.kill()))
        timer.start()
        _, status, ru = os.wait4(p.pid, 0)
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
        err.seek(0)
        return p.returncode, err.read(), ru.ru_utime + ru.ru_stime, time.monotonic() - t0, bool(hung)


def run_one(item, folder, idx):
    name, src, defs = item
    path = os.path.join(folder, "in%04d.tile" % idx)
    with open(path, "wb") as f:
        f.write(src.encode("utf-8", "surrogateescape") if isinstance(src, str) else src)
    outp = os.path.join(folder, "out%04d.ptx" % idx)
    cmd = [args.tilec, path, "-o", outp] + defs
    rc, err, cpu, wall, hung = run_limited(cmd)
    took[name] = (cpu, wall, rc)
    if hung:
        return name, "no exit in %d s of wall time" % (6 * args.timeout)
    if rc in (-signal.SIGXCPU, -signal.SIGKILL) and cpu >= args.timeout:
        return name, "over %d s of CPU time" % args.timeout
    if rc < 0:
        return name, "killed by signal %d" % -rc
    if rc == 4:
        return name, "internal error: " + err[:300].decode("utf-8", "replace")
    if len(err) > 1 << 20:
        return name, "%d bytes of diagnostics" % len(err)
    if rc == 1:
        for line in err.decode("utf-8", "replace").splitlines():
            if " error: " not in line and not line.startswith("error:"):
                continue
            if LOCATED.match(line) or UNPOSITIONED.match(line):
                continue
            return name, "rejection not located: " + line[:200]
    if rc == 0 and os.path.exists(outp):
        meta = outp[:-4] + ".meta"
        m = subprocess.run([args.meta_check, meta], capture_output=True)
        if m.returncode != 0:
            return name, "libtilert refuses the metadata: " + m.stderr[:300].decode("utf-8", "replace")
        if ptxas and idx % 4 == 0:
            arch = re.search(rb"^\.target (\S+)", open(outp, "rb").read(), re.M)
            a = subprocess.run([ptxas, "-arch=" + arch.group(1).decode(), outp, "-o", os.devnull],
                               capture_output=True, timeout=120)
            if a.returncode != 0:
                return name, "ptxas rejects the PTX: " + a.stderr[:300].decode("utf-8", "replace")
    for f in (path, outp, outp[:-4] + ".meta"):
        if os.path.exists(f) and not args.keep:
            os.unlink(f)
    return name, None


took = {}   # name -> (CPU seconds, wall seconds, exit status)


def main():
    items = corpus()
    folder = args.keep or tempfile.mkdtemp(prefix="tilec_hostile_")
    os.makedirs(folder, exist_ok=True)
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = [ex.submit(run_one, it, folder, i) for i, it in enumerate(items)]
        for f in futs:
            name, why = f.result()
            if why:
                failures.append((name, why))
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    for name, why in failures:
        print("FAIL %s: %s" % (name, why))
    codes = {}
    for _, _, rc in took.values():
        codes[rc] = codes.get(rc, 0) + 1
    print("exit statuses: " + ", ".join("%d: %d" % (rc, n) for rc, n in sorted(codes.items())))
    if took:
        slow = max(took, key=lambda k: took[k][0])
        late = max(took, key=lambda k: took[k][1])
        print("slowest: %s, %.2f s of CPU; longest wall time: %s, %.2f s" % (slow, took[slow][0], late, took[late][1]))
    print("%d hostile inputs, %d failures%s" % (len(items), len(failures),
          "" if ptxas else " (no ptxas: PTX not assembled)"))
    return 1 if failures else 0


sys.exit(main())
