#!/usr/bin/env python3
"""gemm_bench.py - the tensor-core GEMM on the GPU: correctness against
torch.matmul (f32 reference), TFLOP/s of tilec's gemm vs torch.matmul
(cuBLAS) measured in the same run, and a warp-MMA ceiling (bench/mma_peak.ptx:
mma.sync only, no memory traffic).

Precompiled PTX comes from .devcarry/gemm/*.ptx (+ .meta), written on the
build machine with e.g.
  tilec examples/gemm.tile -arch=sm_86 -DT=f16 \\
      -o .devcarry/gemm/f16_256x128x64_s2.ptx
On the GPU machine: build libtilert (cmake -DTILEC_COMPILER=OFF), then
  TILEC_LIB_DIR=/tmp/rt/runtime python3 bench/gemm_bench.py [--repeat R] [--seed S]
The timings: cuBLAS (torch.matmul), Triton's GEMM held to mma.sync
(bench/triton_mma.py's PEER configuration, where Triton is installed) and
every variant, in R rounds (default 1), each in a fresh random order, means.

Variants (--prepare, on the build machine): VARIANTS below, compiled with
the CLI into .devcarry/gemm/NAME.ptx + .meta, with ptxas registers / spills
(for the variant's arch; sm_86 PTX assembled for sm_90a) in
.devcarry/gemm/variants.txt; the name with "default" gets the full
correctness set, the others a reduced one. Variants of an arch-specific
target other than the device's are skipped (ARCH_CC), so the same run
times the sm_90a path on an H200 and the sm_100a path on a B200.
  python3 bench/gemm_bench.py --prepare build/bin/tilec
"""
import ctypes
import glob
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


# NAME | ARCH | FILE | DEFINES | OPTIONS (tilec options, e.g. --pass-option NAME=VALUE; the sm_90a
# variants are told the H200's 132 SMs, as tilec.compile tells the compiler the current GPU's: a
# persistent grid)
VARIANTS = """
default_bf16_256x128x64_s2 | sm_86  | examples/gemm.tile | |
default_sm90a_bf16       | sm_90a | examples/gemm.tile | | --pass-option target.sms=132
default_sm90a_f16_       | sm_90a | examples/gemm.tile | -DT=f16 | --pass-option target.sms=132
sm90a_bias_gelu_bf16     | sm_90a | tests/perf/gemm_epilogue.tile | | --pass-option target.sms=132
f16_256x128x64_s2        | sm_86  | examples/gemm.tile | -DT=f16 |
default_sm100a_bf16      | sm_100a | examples/gemm.tile | |
default_sm100a_f16_      | sm_100a | examples/gemm.tile | -DT=f16 |
sm100a_bias_gelu_bf16    | sm_100a | tests/perf/gemm_epilogue.tile | |
"""

# Arch-specific PTX loads only on its own compute capability: the sm_90a
# variants run on an H100/H200, the sm_100a ones on a B200/GB200 (the same
# script, the day one is lent); sm_86 PTX runs on both.
ARCH_CC = {"sm90a": (9, 0), "sm100a": (10, 0)}


def arch_of(variant):
    for a in ARCH_CC:
        if a in variant.split("_"):
            return a
    return None

# The default variant, also launched through the driver API directly (Raw):
# the driver's own register count for the PTX it compiles, the occupancy,
# and the shared-memory carveout set to its maximum (100%) or left alone
# (2026-11-30: the occupancy query gave 2 blocks per SM either way; the
# timings were skipped that run because the checked variant was wrong on
# unaligned shapes).
RAW = "default_bf16_256x128x64_s2"


def prepare(tilec_bin):
    """Compile VARIANTS into .devcarry/gemm (build machine: needs tilec, ptxas;
    the sm_86 PTX assembled for sm_90a, the GPU it runs on)."""
    from variants import compile_variants
    compile_variants(tilec_bin, os.path.join(ROOT, ".devcarry", "gemm"), VARIANTS,
                     ptxas_arch=lambda a: a if a != "sm_86" else "sm_90a")


if len(sys.argv) > 2 and sys.argv[1] == "--prepare":
    prepare(sys.argv[2])
    sys.exit(0)

import torch  # noqa: E402
from timing import median_ms, run_timed  # noqa: E402 (bench/timing.py)
import tilec  # noqa: E402

SIZES = [1, 17, 128, 1000, 4096]
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def bench(fn):
    return median_ms(fn, rep=200)


def dtname(variant):
    return "f16" if ("_" + variant).find("_f16_") >= 0 else "bf16"


class BiasGelu:
    """A GEMM with a bias + GELU epilogue (tests/perf/gemm_epilogue.tile)
    called as mod(a, b, c): the bias (one fixed random f32 vector per N)
    is its own; ref(a, b) is the float32 reference of the same math."""

    def __init__(self, mod):
        self.mod, self.bias = mod, {}

    def b(self, n):
        if n not in self.bias:
            g = torch.Generator(device="cuda").manual_seed(n)
            self.bias[n] = torch.randn(n, device="cuda", generator=g)
        return self.bias[n]

    def __call__(self, a, b, c):
        self.mod(a, b, self.b(b.shape[1]), c)

    def ref(self, a, b):
        z = a.float() @ b.float() + self.b(b.shape[1])
        return z * torch.sigmoid(z * 1.702)


def gemm(mod, a, b):
    c = torch.full((a.shape[0], b.shape[1]), float("nan"), dtype=a.dtype, device=a.device)
    mod(a, b, c)
    return c


def rel_err(c, a, b, mod=None):
    ref = mod.ref(a, b) if isinstance(mod, BiasGelu) else a.float() @ b.float()
    den = ref.norm().item()
    return (c.float() - ref).norm().item() / (den if den > 0 else 1.0)


def check(name, mod, dt, combos):
    worst, bad = 0.0, []
    for m, n, k in combos:
        a = torch.randn(m, k, device="cuda", dtype=dt)
        b = torch.randn(k, n, device="cuda", dtype=dt)
        e = rel_err(gemm(mod, a, b), a, b, mod)
        worst = max(worst, e)
        if not e <= 1e-2:  # NaN (an unwritten element) fails too
            bad.append((m, n, k, e))
    torch.cuda.synchronize()
    print("check %-32s %3d shapes  worst rel err %.2e  %s" % (name, len(combos), worst,
          "OK" if not bad else "FAIL %s" % bad[:4]), flush=True)
    return not bad


def mma_peak():
    """TFLOP/s of bench/mma_peak.ptx through the driver API."""
    import mma_probe
    torch.zeros(1, device="cuda")
    ptx = open(os.path.join(ROOT, "bench", "mma_peak.ptx"), "rb").read() + b"\0"
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    blocks, threads, iters = sms * 8, 256, 4096
    out = torch.empty(blocks * threads, device="cuda")
    launch = mma_probe.launcher(ptx, blocks, threads, [ctypes.c_uint64(out.data_ptr()), ctypes.c_uint32(iters)],
                                (out,), entry=b"mma_peak")
    ms = bench(launch)
    flops = blocks * (threads // 32) * iters * 8 * (2 * 16 * 8 * 16)
    return flops / ms / 1e9


def _rpn(expr, env):
    st = []
    for t in expr.split():
        if t in "+-*/%":
            y, x = st.pop(), st.pop()
            st.append({"+": x + y, "-": x - y, "*": x * y, "/": x // y, "%": x % y}[t])
        else:
            st.append(int(t) if t.lstrip("-").isdigit() else env[t])
    return st[0]


class Raw:
    """A gemm PTX loaded and launched through the driver API (ABI: per tensor
    a pointer and its row stride, then the dims M, K, N as i32)."""

    def __init__(self, path, carveout=None):
        cuda = self.cuda = ctypes.CDLL("libcuda.so.1")
        torch.zeros(1, device="cuda")
        meta = {}
        for line in open(path[:-4] + ".meta"):
            w = line.split(None, 1)
            if len(w) == 2 and w[0] in ("smem", "threads", "grid"):
                meta[w[0]] = w[1].strip()
        self.smem, self.threads = int(meta["smem"]), int(meta["threads"])
        self.grid = [g.strip() for g in meta["grid"].split(";")]
        cuda.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        cuda.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_void_p]
        cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor.argtypes = [
            ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
        cuda.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
        self.mod, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        ptx = open(path, "rb").read() + b"\0"
        assert cuda.cuModuleLoadData(ctypes.byref(self.mod), ptx) == 0
        assert cuda.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, b"gemm") == 0
        assert cuda.cuFuncSetAttribute(self.fn, 8, self.smem) == 0     # MAX_DYNAMIC_SHARED_SIZE_BYTES
        if carveout is not None:
            assert cuda.cuFuncSetAttribute(self.fn, 9, carveout) == 0  # PREFERRED_SHARED_MEMORY_CARVEOUT
        v = ctypes.c_int()
        assert cuda.cuFuncGetAttribute(ctypes.byref(v), 4, self.fn) == 0  # NUM_REGS
        self.regs = v.value
        assert cuda.cuFuncGetAttribute(ctypes.byref(v), 3, self.fn) == 0  # LOCAL_SIZE_BYTES
        self.local = v.value
        assert cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(v), self.fn, self.threads,
                                                                 self.smem) == 0
        self.occ = v.value

    def __call__(self, a, b, c):
        m, k = a.shape
        n = b.shape[1]
        env = {"M": m, "K": k, "N": n}
        vals = [ctypes.c_uint64(a.data_ptr()), ctypes.c_int64(a.stride(0)), ctypes.c_uint64(b.data_ptr()),
                ctypes.c_int64(b.stride(0)), ctypes.c_uint64(c.data_ptr()), ctypes.c_int64(c.stride(0)),
                ctypes.c_int32(m), ctypes.c_int32(k), ctypes.c_int32(n)]
        args = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in vals])
        g = [_rpn(e, env) for e in self.grid]
        r = self.cuda.cuLaunchKernel(self.fn, g[0], g[1], g[2], self.threads, 1, 1, self.smem,
                                     torch.cuda.current_stream().cuda_stream, ctypes.cast(args, ctypes.c_void_p), None)
        assert r == 0, r


def raw_rows(d, rows):
    """The default variant through Raw: carveout left alone / at 100%."""
    path = os.path.join(d, RAW + ".ptx")
    if not os.path.exists(path):
        return
    for cv in (None, 100):
        try:
            raw = Raw(path, cv)
            tag = "raw %s carveout %s" % (RAW, "default" if cv is None else "%d%%" % cv)
            ok = check(tag, raw, torch.bfloat16, [(1000, 17, 4096), (4096, 4096, 1000), (1000, 1000, 1000)])
            print("%s: driver regs %d, local %d B, occupancy %d blocks/SM (smem %d B)" % (
                tag, raw.regs, raw.local, raw.occ, raw.smem), flush=True)
            for size in (4096, 8192):
                a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
                b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
                c = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
                if ok:
                    rows.append((tag, size, 2.0 * size ** 3 / bench(lambda: raw(a, b, c)) / 1e9))
        except Exception as e:  # noqa: BLE001
            print("raw", cv, "ERROR", e, flush=True)


def triton_peer():
    """(label, fn(a, b, c)): Triton's GEMM held to mma.sync
    (bench/triton_mma.py), checked once; None without Triton."""
    try:
        import triton_mma
    except ImportError as e:
        print("no Triton peer: %s" % e, flush=True)
        return None
    # its kernel has no masks: sizes that are multiples of the tile
    x = torch.randn(896, 4096, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(4096, 1024, device="cuda", dtype=torch.bfloat16)
    z = torch.full((896, 1024), float("nan"), device="cuda", dtype=torch.bfloat16)
    cfg = triton_mma.PEER
    try:
        k = triton_mma.run(cfg, x, y, z)
    except Exception as e:  # noqa: BLE001
        print("no Triton peer: %s" % str(e).splitlines()[0], flush=True)
        return None
    e = rel_err(z, x, y)
    mma = "mma.sync" in k.asm["ptx"] and "wgmma" not in k.asm["ptx"]
    good = e <= 1e-2 and mma
    print("check %-32s worst rel err %.2e  %s (%s)" % ("triton mma.sync peer", e, "OK" if good else "FAIL, not timed",
          "mma.sync" if mma else "NOT mma.sync"), flush=True)
    if not good:
        return None
    return "triton %dx%dx%d w%d s%d (mma.sync)" % cfg, lambda a, b, c: triton_mma.run(cfg, a, b, c)


def kernel_of(mod):
    """The tilec kernel object behind a loaded module (for last_variant)."""
    m = mod.mod if isinstance(mod, BiasGelu) else mod
    ks = getattr(m, "kernels", [])
    fallbacks = {k.fallback for k in ks}
    entry = [k for k in ks if k.name not in fallbacks]
    return entry[0] if entry else None


def check_views(name, mod, dt):
    """A warp-specialized GEMM reads A and B through tensor maps: a view
    whose base or row stride is not a multiple of 16 bytes must run the
    portable variant carried in the module, correctly, and say so; a view
    with a padded, aligned row stride stays on the tensor maps."""
    ok = True
    m, n, k = 1000, 1024, 1000
    b = torch.randn(k, n, device="cuda", dtype=dt)
    kern = kernel_of(mod)
    for label, a, want_fallback in (
            ("stride K+9 (rows unaligned)", torch.randn(m, k + 9, device="cuda", dtype=dt)[:, 8:k + 8], True),
            ("stride K+8 (aligned)", torch.randn(m, k + 8, device="cuda", dtype=dt)[:, :k], False)):
        e = rel_err(gemm(mod, a, b), a, b, mod)
        ran = kern.last_variant if kern is not None else None
        fell = ran is not None and ran[0] != kern.name
        good = e <= 1e-2 and ran is not None and fell == want_fallback
        ok = ok and good
        print("check %-32s view %-28s rel err %.2e  ran %s%s  %s" % (
            name, label, e, ran[0] if ran else "?", " (%s)" % ran[1] if ran and ran[1] else "",
            "OK" if good else "FAIL"), flush=True)
    return ok


LLM = [(m, n, k) for m in (4096, 16384) for (n, k) in ((4096, 4096), (14336, 4096), (4096, 14336), (6144, 4096))]


def llm_rows(mods, repeat, seed):
    """The LLM projection shapes: cuBLAS and the sm_90a variants, bf16,
    interleaved in `repeat` rounds of a fresh random order (means)."""
    acc = {}
    sel = {k: v for k, v in mods.items() if arch_of(k) and dtname(k) == "bf16"}
    rng = random.Random(seed * 7 + 1)
    for (m, n, k) in LLM:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        jobs = [("torch.matmul (cuBLAS) bf16", lambda: torch.matmul(a, b))]
        jobs += [(name, lambda mod=mod: mod(a, b, c)) for name, mod in sel.items()]
        for _ in range(repeat):
            rng.shuffle(jobs)
            for name, fn in jobs:
                acc.setdefault((name, "%dx%dx%d" % (m, n, k)), []).append(2.0 * m * n * k / bench(fn) / 1e9)
    return [(name, size, sum(v) / len(v)) for (name, size), v in acc.items()]


def timed_rows(mods, repeat, seed):
    """(name, size, TFLOP/s): cuBLAS, the Triton peer and every variant,
    timed in `repeat` rounds, each in a fresh random order (from seed), means."""
    peer = triton_peer()
    acc = {}
    for size in (4096, 8192):
        flop = 2.0 * size ** 3
        ins = {dn: (torch.randn(size, size, device="cuda", dtype=dt), torch.randn(size, size, device="cuda", dtype=dt))
               for dn, dt in DTYPES.items()}
        out = {dn: torch.empty(size, size, device="cuda", dtype=dt) for dn, dt in DTYPES.items()}
        jobs = []
        for dn in DTYPES:
            a, b = ins[dn]
            jobs.append(("torch.matmul (cuBLAS) %s" % dn, lambda a=a, b=b: torch.matmul(a, b)))
        if peer:
            a, b = ins["bf16"]
            jobs.append((peer[0], lambda a=a, b=b: peer[1](a, b, out["bf16"])))
        for name, mod in mods.items():
            a, b = ins[dtname(name)]
            jobs.append((name, lambda a=a, b=b, mod=mod, c=out[dtname(name)]: mod(a, b, c)))
        rng = random.Random(seed * 1000003 + size)
        for _ in range(repeat):
            rng.shuffle(jobs)
            for name, fn in jobs:
                try:
                    acc.setdefault((name, size), []).append(flop / bench(fn) / 1e9)
                except Exception as e:  # noqa: BLE001
                    print("time", name, "ERROR", e, flush=True)
    return [(name, size, sum(v) / len(v)) for (name, size), v in sorted(acc.items(), key=lambda kv: (kv[0][1], kv[0][0]))]


def main():
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 1
    # A fresh seed per run (printed; --seed S repeats a run's orders): one
    # seed for every run would repeat the orders and any effect of place.
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else \
        random.SystemRandom().randrange(1 << 30)
    d = os.path.join(ROOT, ".devcarry", "gemm")
    cc = torch.cuda.get_device_capability(0)
    here = [p for p in sorted(glob.glob(os.path.join(d, "*.ptx")))
            if arch_of(os.path.basename(p)) is None or ARCH_CC[arch_of(os.path.basename(p))] == cc]
    mods = {os.path.basename(p)[:-4]: tilec.load_files(p) for p in here}
    mods = {k: BiasGelu(v) if "bias_gelu" in k else v for k, v in mods.items()}
    print("device:", torch.cuda.get_device_name(0), "|", time.strftime("%Y-%m-%d"), flush=True)
    from variants import read_variants
    regs = {k: "%s/%s" % v for k, v in read_variants(d).items()}
    full = [(m, n, k) for m in SIZES for n in SIZES for k in SIZES]
    small = [(m, n, k) for (m, n, k) in full if m * n * k <= 128 * 1000 * 4096 and (m in (17, 1000) or k == 1000)]
    ok = True
    for name, mod in mods.items():
        dt = DTYPES[dtname(name)]
        combos = full if "default" in name else small
        try:
            ok = check(name, mod, dt, combos) and ok
        except Exception as e:  # noqa: BLE001 - report and go on to the next variant
            ok = False
            print("check %-32s ERROR %s" % (name, e), flush=True)
    for name, mod in mods.items():
        if name.startswith("default_sm90a") or name.startswith("default_sm100a"):
            try:
                ok = check_views(name, mod, DTYPES[dtname(name)]) and ok
            except Exception as e:  # noqa: BLE001
                ok = False
                print("check %-32s views ERROR %s" % (name, e), flush=True)
    print("order seed: %d" % seed, flush=True)
    rows = timed_rows(mods, repeat, seed)
    llm = llm_rows(mods, repeat, seed)
    raw_rows(d, rows)
    peak = mma_peak()
    print("\n%-36s %6s %10s %8s  %s" % ("kernel", "size", "TFLOP/s", "of peak", "regs/spill"))
    for name, size, tf in rows:
        print("%-36s %6d %10.1f %7.0f%%  %s" % (name, size, tf, 100 * tf / peak, regs.get(name, "")))
    print("%-36s %6s %10.1f" % ("mma.sync m16n8k16 bf16 ceiling", "-", peak))
    cub = {size: tf for name, size, tf in llm if name.startswith("torch.matmul")}
    print("\n%-36s %18s %10s %10s" % ("LLM projection shapes (bf16)", "M x N x K", "TFLOP/s", "x cuBLAS"))
    for name, size, tf in sorted(llm, key=lambda r: (r[1], r[0])):
        print("%-36s %18s %10.1f %10.3f" % (name, size, tf, tf / cub[size]))
    by = {(name, size): tf for name, size, tf in rows}
    for size in (4096, 8192):
        c = by.get(("torch.matmul (cuBLAS) bf16", size))
        for name in sorted(mods):
            if arch_of(name) and (name, size) in by and c:
                print("%-36s %6d  %.3f x cuBLAS bf16" % (name, size, by[(name, size)] / c))
    return 0 if ok else 1


if __name__ == "__main__":
    run_timed(main)
