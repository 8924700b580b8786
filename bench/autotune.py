#!/usr/bin/env python3
"""autotune.py - autotuning on the GPU (docs/python.md, "Autotuning"): for
GEMM (4096^3 and 8192^3, bf16) and attention (D 64 and 128, 1k and 4k tokens
of the 16384-token, hidden-2048 grid, bf16, no mask), tilec.Tuned's first
call (load the compiler's candidates, time them on the call's tensors, keep
the fastest) is timed and its pick checked: every candidate is timed again
with care (interleaved rounds, a fresh random order each) and the pick must
be within 3% of the best. Triton's autotune (triton.autotune over the
configurations below: its matmul tutorial's and a FlashAttention-style
forward's) is timed in the same run, its cache cold, and printed beside it.

Build machine (libtilec; the H200's facts: sm_90a, 132 SMs, 227 KB a block):
    TILEC_LIB_DIR=build/lib python3 bench/autotune.py --prepare
  writes .devcarry/tune/: the candidates of each shape class
  (tilec.precompile_candidates: gemm/, attn_d64/, attn_d128/ and their
  compile times in compile_times.txt), gputest/ (gpu_tune's modules) and
  .devcarry/include/dlpack/dlpack.h (libtilert's build on the GPU host).
GPU machine (no LLVM: libtilert only, bench/runtime.sh builds it):
    bench/autotune.sh            (gpu_tune, tests/gpu/test_tune_torch.py, then this)
    python3 bench/autotune.py [--rounds R] [--no-triton] [--json FILE]

"Cold": CUDA's JIT cache and Triton's cache start empty (CUDA_CACHE_PATH and
TRITON_CACHE_DIR point at fresh folders, set before CUDA starts), so tilec's
time includes making each candidate's code (cubins from parallel ptxas
processes where the host has a ptxas, else the driver compiling each PTX in
turn: the "code" column) and Triton's its compiling each configuration. tilec compiles its candidates' PTX on the
build machine (the GPU host has no LLVM); those seconds (measured there by
--prepare) are printed beside the GPU host's.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
TUNE_DIR = os.path.join(ROOT, ".devcarry", "tune")
GEMM = os.path.join(ROOT, "examples", "gemm.tile")
ATTN = os.path.join(ROOT, "examples", "attention.tile")
H200 = {"target.sms": 132}
H200_ATTN = {"target.sms": 132, "target.smem-per-block": 232448}
GEMM_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
# (D, N): Z = 16384 / N sequences, H = 2048 / D heads (bench/attn_bench.py's grid), no mask
ATTN_SHAPES = [(64, 1024), (64, 4096), (128, 1024), (128, 4096)]
# Shape classes tests/gpu/test_tune_torch.py uses from the same folders.
TEST_GEMM = [{"M": 2048, "K": 2048, "N": 2048}, {"M": 512, "K": 4096, "N": 256}]
TEST_ATTN64 = [{"Z": 2, "H": 8, "HK": 8, "N": 1024, "NK": 1024}]


def attn_dims(d, n):
    z, h = 16384 // n, 2048 // d
    return {"Z": z, "H": h, "HK": h, "N": n, "NK": n}


# ---- the build machine ------------------------------------------------------

def prepare():
    import subprocess
    import tilec
    if os.path.isdir(TUNE_DIR):
        shutil.rmtree(TUNE_DIR)
    os.makedirs(TUNE_DIR)
    inc = os.path.join(ROOT, ".devcarry", "include", "dlpack")
    os.makedirs(inc, exist_ok=True)
    shutil.copy("/usr/include/dlpack/dlpack.h", inc)
    lines = ["# seconds tilec (libtilec, in one process) took to compile each shape class's candidates on the "
             "build machine: %s" % tilec._lib.tilec().tilec_version().decode()]
    jobs = [("gemm", GEMM, [{"M": m, "K": k, "N": n} for m, n, k in GEMM_SHAPES] + TEST_GEMM, H200, {}),
            ("attn_d64", ATTN, [attn_dims(64, n) for d, n in ATTN_SHAPES if d == 64] + TEST_ATTN64, H200_ATTN,
             {"D": 64}),
            ("attn_d128", ATTN, [attn_dims(128, n) for d, n in ATTN_SHAPES if d == 128], H200_ATTN, {"D": 128})]
    for sub, src, dims, po, consts in jobs:
        done = tilec.precompile_candidates(src, os.path.join(TUNE_DIR, sub), dims, "sm_90a", pass_options=po,
                                           **consts)
        by_class = {}
        for cls, i, defs, secs in done:
            by_class.setdefault(cls, []).append((i, defs, secs))
        for cls, cands in by_class.items():
            total = sum(s for _, _, s in cands)
            lines.append("%s %s %.3f %s" % (sub, cls, total, " ".join("%d:%s:%.3f" % c for c in cands)))
            print(lines[-1], flush=True)
    with open(os.path.join(TUNE_DIR, "compile_times.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    # gpu_tune's modules (tests/gpu/gpu_tune.c, DIR mode)
    tilec_bin = os.environ.get("TILEC", os.path.join(ROOT, "build", "bin", "tilec"))
    gpu_tune = os.path.join(os.path.dirname(os.path.dirname(tilec_bin)), "tests", "gpu", "gpu_tune")
    g = os.path.join(TUNE_DIR, "gputest")
    os.makedirs(os.path.join(g, "sm_86"))
    os.makedirs(os.path.join(g, "sm_90a"))
    with open(os.path.join(g, "sm_86", "tune.tile"), "w") as f:
        f.write(subprocess.run([gpu_tune, "--print-source"], check=True, capture_output=True, text=True).stdout)
    subprocess.run([tilec_bin, os.path.join(g, "sm_86", "tune.tile"), "-arch=sm_86", "-o",
                    os.path.join(g, "sm_86", "tune.ptx")], check=True)
    for i in range(4):
        subprocess.run([tilec_bin, GEMM, "-arch=sm_90a", "--pass-option", "tiles.candidate=%d" % i, "-o",
                        os.path.join(g, "sm_90a", "gemm_cand_%d.ptx" % i)], check=True)
    size = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(TUNE_DIR) for f in fs)
    print("wrote %s (%.1f MB)" % (TUNE_DIR, size / 1e6))


def compile_seconds():
    """{(folder, class): seconds} from --prepare's compile_times.txt."""
    out = {}
    try:
        with open(os.path.join(TUNE_DIR, "compile_times.txt")) as f:
            for ln in f:
                if ln.startswith("#") or not ln.strip():
                    continue
                sub, cls, secs = ln.split()[:3]
                out[(sub, cls)] = float(secs)
    except OSError:
        pass
    return out


# ---- the GPU machine ----------------------------------------------------------

def careful_times(fns, rounds):
    """Each fn's median time a call (ms) over `rounds` rounds, every fn once
    a round in a fresh random order: 2 warm-up calls, then enough calls
    back to back for ~20 ms between two CUDA events."""
    import torch
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    est = []
    for f in fns:
        f()
        ev[0].record()
        f()
        ev[1].record()
        torch.cuda.synchronize()
        est.append(ev[0].elapsed_time(ev[1]))
    reps = [max(3, min(200, int(20.0 / max(e, 1e-3)))) for e in est]
    t = [[] for _ in fns]
    order = list(range(len(fns)))
    for _ in range(rounds):
        random.shuffle(order)
        for i in order:
            for _ in range(2):
                fns[i]()
            ev[0].record()
            for _ in range(reps[i]):
                fns[i]()
            ev[1].record()
            torch.cuda.synchronize()
            t[i].append(ev[0].elapsed_time(ev[1]) / reps[i])
    return [statistics.median(x) for x in t]


_seen_ptx = set()   # the PTX loaded so far in this run: the driver's JIT cache holds it


def tune_case(label, sub, src, consts, po, args, flop, rounds, csecs, results):
    """tilec.Tuned's first call on args (the JIT cache cold unless an earlier
    case loaded the same PTX: said so), then the same with the JIT cache
    warm and with the decision cached; every candidate timed with care
    against the pick."""
    import hashlib
    import tilec
    import torch
    folder = os.path.join(TUNE_DIR, sub)
    dec = tempfile.mkdtemp(prefix="tilec-decisions-")
    t = tilec.Tuned(src, arch="sm_90a", pass_options=po, ptx_dir=folder, cache="disk", cache_dir=dec, **consts)
    cls = tilec.shape_class(t._probe_kernel(), *args)
    hashes = []
    for e in t._index["entries"]:
        if e[0] == cls:
            with open(os.path.join(folder, e[3]), "rb") as f:
                hashes.append(hashlib.sha1(f.read()).hexdigest())
    seen = sum(h in _seen_ptx for h in hashes)
    jit = "cold" if not seen else "warm" if seen == len(hashes) else "partly warm"
    _seen_ptx.update(hashes)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    t(*args)
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    info = t.last_tuning
    built = csecs.get((sub, info.shape_class))
    # a new process's view: JIT cache warm now, decisions from a fresh folder (timed again) ...
    u = tilec.Tuned(src, arch="sm_90a", pass_options=po, ptx_dir=folder, cache="disk",
                    cache_dir=tempfile.mkdtemp(prefix="tilec-decisions-"), **consts)
    t0 = time.perf_counter()
    u(*args)
    torch.cuda.synchronize()
    warm = time.perf_counter() - t0
    # ... and from the folder holding the decision: the winner loaded, nothing timed
    w = tilec.Tuned(src, arch="sm_90a", pass_options=po, ptx_dir=folder, cache="disk", cache_dir=dec, **consts)
    t0 = time.perf_counter()
    w(*args)
    torch.cuda.synchronize()
    cached = time.perf_counter() - t0
    # every candidate again, with care
    ks = [t._load_file(e[3]) for e in t._index["entries"] if e[0] == info.shape_class]
    ms = careful_times([(lambda k=k: k(*args)) for k in ks], rounds)
    best = min(range(len(ms)), key=lambda i: ms[i])
    ratio = ms[info.best] / ms[best]
    print("== %s: %d candidates (%s), shape class %s" % (label, len(info.candidates), "; ".join(
        "%d %s" % (i, c) for i, c in enumerate(info.candidates)), info.shape_class))
    made = {"ptxas": "cubins from parallel ptxas processes", "driver": "the driver's JIT, one module at a time",
            "mixed": "ptxas and the driver's JIT"}.get(info.jit, info.jit)
    print("   tilec autotune, first call (JIT cache %s%s): %.3f s = code (%s) + load %.3f s + timing %.3f s + rest "
          "%.3f s%s"
          % (jit, "" if jit == "cold" else ": an earlier case loaded the same PTX", first, made, info.load_s,
             info.time_s, first - info.load_s - info.time_s,
             "; + %.3f s compiling the candidates on the build machine" % built if built is not None else ""))
    print("   picked %d (%s); the tuner's medians: %s ms, %d launches x %d rounds" % (
        info.best, info.candidates[info.best], ", ".join("%.4f" % x for x in info.result.ms), info.result.launches,
        info.result.rounds))
    print("   again, JIT cache warm, timed again: %.3f s (picked %d); decision from the cache folder: %.3f s (picked %d)"
          % (warm, u.last_tuning.best, cached, w.last_tuning.best))
    print("   check, %d interleaved rounds: %s ms; best %d; pick / best = %.4f -> within 3%%: %s" % (
        rounds, ", ".join("%.4f" % x for x in ms), best, ratio, "yes" if ratio <= 1.03 else "NO"))
    print("   pick: %.1f TFLOP/s" % (flop / ms[info.best] / 1e9), flush=True)
    results.append({"case": label, "class": info.shape_class, "candidates": info.candidates, "pick": info.best,
                    "tuner_ms": info.result.ms, "check_ms": ms, "best": best, "ratio": ratio,
                    "jit": jit, "made": info.jit, "first_s": first, "load_s": info.load_s, "time_s": info.time_s, "warm_s": warm,
                    "cached_s": cached, "build_compile_s": built, "pick_tflops": flop / ms[info.best] / 1e9})
    shutil.rmtree(dec, ignore_errors=True)
    return results[-1]


# ---- Triton -------------------------------------------------------------------

def triton_kernels():
    import triton
    import triton.language as tl

    # the matmul tutorial's CUDA configurations (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps)
    mm_cfgs = [triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_stages=s, num_warps=w)
               for bm, bn, bk, s, w in [(128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4),
                                        (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 32, 32, 4, 4),
                                        (128, 256, 64, 4, 8), (256, 128, 64, 3, 8)]]

    # the same GEMM kernel bench/triton_mma.py times (without its DISABLE_MMA_V3)
    from triton_gemm import gemm as mm_kernel

    at_cfgs = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=s, num_warps=w)
               for bm, bn, s, w in [(128, 64, 3, 8), (128, 128, 3, 8), (128, 64, 4, 4), (64, 64, 3, 4),
                                    (128, 32, 4, 4), (64, 128, 3, 4), (128, 128, 2, 8), (128, 64, 2, 8)]]

    @triton.jit
    def attn_kernel(Q, K, V, O, scale, sqz, sqh, sqm, skz, skh, skn, svz, svh, svn, soz, soh, som, H, N_CTX,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        start_m = tl.program_id(0)
        off_hz = tl.program_id(1)
        off_z = off_hz // H
        off_h = off_hz % H
        q_base = Q + off_z * sqz + off_h * sqh
        k_base = K + off_z * skz + off_h * skh
        v_base = V + off_z * svz + off_h * svh
        o_base = O + off_z * soz + off_h * soh
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, HEAD_DIM)
        q = tl.load(q_base + offs_m[:, None] * sqm + offs_d[None, :])
        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
        qk_scale = scale * 1.44269504
        for start_n in range(0, N_CTX, BLOCK_N):
            k = tl.load(k_base + (start_n + offs_n)[None, :] * skn + offs_d[:, None])
            qk = tl.dot(q, k)
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
            alpha = tl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            v = tl.load(v_base + (start_n + offs_n)[:, None] * svn + offs_d[None, :])
            acc = tl.dot(p.to(v.dtype), v, acc)
            m_i = m_ij
        acc = acc / l_i[:, None]
        tl.store(o_base + offs_m[:, None] * som + offs_d[None, :], acc.to(O.dtype.element_ty))

    # Triton's own start-up (its backend, the first compilation in the
    # process) is paid here, outside the timed autotunes.
    @triton.jit
    def warm_kernel(x):
        tl.store(x + tl.arange(0, 16), tl.arange(0, 16).to(tl.float32))

    import torch
    warm_kernel[(1,)](torch.empty(16, device="cuda"))
    torch.cuda.synchronize()
    return mm_kernel, mm_cfgs, attn_kernel, at_cfgs


def triton_case(label, make, run, check, flop, results):
    """Triton's autotune on a fresh Autotuner: the first call (compile every
    configuration with an empty cache, benchmark each, keep the fastest),
    then a second fresh Autotuner over the same compiled kernels
    (benchmarking only); the pick's steady time."""
    import torch
    from timing import median_ms
    row = {"case": label}
    cache = os.environ.get("TRITON_CACHE_DIR", "")

    def files():
        return sum(len(fs) for _, _, fs in os.walk(cache)) if os.path.isdir(cache) else 0
    try:
        tuner = make()
        torch.cuda.synchronize()
        before = files()
        t0 = time.perf_counter()
        run(tuner)
        torch.cuda.synchronize()
        row["first_s"] = time.perf_counter() - t0
        row["compiled"] = files() > before
        row["config"] = str(tuner.best_config)
        row["rel_err"] = check()
        again = make()
        t0 = time.perf_counter()
        run(again)
        torch.cuda.synchronize()
        row["bench_only_s"] = time.perf_counter() - t0
        ms = median_ms(lambda: run(tuner))
        row["pick_tflops"] = flop / ms / 1e9
        print("   Triton autotune, %d configurations: %.3f s (%s); picked %s; "
              "rel. error %.1e; again, compiled: %.3f s (benchmark only); pick: %.1f TFLOP/s" % (
                  len(tuner.configs), row["first_s"], "compile, cold cache, + benchmark" if row["compiled"] else
                  "benchmark only: an earlier case compiled the same kernels", row["config"], row["rel_err"],
                  row["bench_only_s"], row["pick_tflops"]), flush=True)
    except Exception as e:  # noqa: BLE001 (a Triton version this kernel does not suit: say so, go on)
        row["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200] if str(e) else "")
        print("   Triton autotune failed: %s" % row["error"], flush=True)
    results.append(row)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prepare", action="store_true", help="build machine: write .devcarry/tune/")
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds of the check (default 15)")
    ap.add_argument("--no-triton", action="store_true", help="leave Triton's autotune out")
    ap.add_argument("--json", help="write the results as JSON to this file")
    a = ap.parse_args()
    if a.prepare:
        return prepare()
    # cold caches, before CUDA starts in this process
    scratch = tempfile.mkdtemp(prefix="tilec-autotune-")
    os.environ["CUDA_CACHE_PATH"] = os.path.join(scratch, "nv")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, "triton")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import tilec
    if torch.cuda.get_device_capability() != (9, 0):
        print("the candidates are compiled for sm_90a (an H100/H200); this is %s" % torch.cuda.get_device_name())
        return 1
    if not os.path.isdir(TUNE_DIR):
        print("no %s: run python3 bench/autotune.py --prepare on the build machine" % TUNE_DIR)
        return 1
    tilec._lib.tilert()
    print("device %s, torch %s, tilec %s (libtilert %s)" % (torch.cuda.get_device_name(), torch.__version__,
                                                            tilec.__version__, tilec._lib.paths.get("libtilert.so", "?")))
    with open(os.path.join(TUNE_DIR, "compile_times.txt")) as f:
        print(f.readline().strip())
    csecs = compile_seconds()
    tri = None
    if not a.no_triton:
        try:
            import triton
            print("triton %s" % triton.__version__)
            tri = triton_kernels()
        except Exception as e:  # noqa: BLE001
            print("no Triton: %s" % e)
    torch.manual_seed(0)
    ours, theirs = [], []
    for m, n, k in GEMM_SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
        y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        label = "gemm %dx%dx%d bf16" % (m, n, k)
        r = tune_case(label, "gemm", GEMM, {}, H200, (x, w, y), 2.0 * m * n * k, a.rounds, csecs, ours)
        ref = x.float() @ w.float()
        err = ((y.float() - ref).norm() / ref.norm()).item()
        r["rel_err"] = err
        print("   tilec result: rel. error %.1e" % err)
        if tri:
            import triton
            mm_kernel, mm_cfgs, _, _ = tri
            z = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

            def run(tuner):
                grid = lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)  # noqa: E731
                tuner[grid](x, w, z, m, n, k, x.stride(0), w.stride(0), z.stride(0))
            triton_case(label, lambda: triton.autotune(mm_cfgs, key=["M", "N", "K"])(mm_kernel), run,
                        lambda: ((z.float() - ref).norm() / ref.norm()).item(), 2.0 * m * n * k, theirs)
        del x, w, y
    for d, n in ATTN_SHAPES:
        dims = attn_dims(d, n)
        zz, h = dims["Z"], dims["H"]
        q, kk, v = (torch.randn(zz, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty(zz, h, n, device="cuda", dtype=torch.float32)
        scale = d ** -0.5
        flop = 4.0 * zz * h * n * n * d
        label = "attention D=%d N=%d (Z=%d, H=%d) bf16" % (d, n, zz, h)
        r = tune_case(label, "attn_d%d" % d, ATTN, {"D": d}, H200_ATTN, (q, kk, v, o, lse, scale), flop, a.rounds,
                      csecs, ours)
        ref = torch.nn.functional.scaled_dot_product_attention(q, kk, v, scale=scale)
        r["rel_err"] = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
        print("   tilec result: rel. error %.1e against SDPA" % r["rel_err"])
        if tri:
            import triton
            _, _, attn_kernel, at_cfgs = tri
            ot = torch.empty_like(q)

            def run(tuner):
                grid = lambda meta: (triton.cdiv(n, meta["BLOCK_M"]), zz * h)  # noqa: E731
                tuner[grid](q, kk, v, ot, scale, *q.stride()[:3], *kk.stride()[:3], *v.stride()[:3],
                            *ot.stride()[:3], h, n, HEAD_DIM=d)
            triton_case(label, lambda: triton.autotune(at_cfgs, key=["N_CTX", "HEAD_DIM"])(attn_kernel), run,
                        lambda: ((ot.float() - ref.float()).norm() / ref.float().norm()).item(), flop, theirs)
        del q, kk, v, o, lse
    print("\n== summary (seconds; tilec: its first call on the GPU host, JIT cache as marked, +build: compiling "
          "the candidates on the build machine, cached: the decision from the cache folder; Triton: its first call, "
          "* where it compiled (cold cache), t.bench: a second autotune, benchmarking only)")
    print("%-40s %6s %6s %8s %8s %8s %9s %5s  %-10s %8s %6s" % ("case", "JIT", "code", "tilec", "+build", "cached",
                                                                  "pick/best", "ok", "triton", "t.bench", "cands"))
    tri_by = {r["case"]: r for r in theirs}
    bad = 0
    for r in ours:
        t = tri_by.get(r["case"], {})
        ok = r["ratio"] <= 1.03 and r["first_s"] < 2.0
        bad += not ok
        print("%-40s %6s %6s %8.3f %8s %8.3f %9.4f %5s  %-10s %8s %6d" % (
            r["case"], r["jit"].split()[0], r["made"], r["first_s"],
            "%.3f" % r["build_compile_s"] if r["build_compile_s"] is not None else "?",
            r["cached_s"], r["ratio"], "yes" if ok else "NO",
            ("%.3f%s" % (t["first_s"], "*" if t.get("compiled") else "")) if "first_s" in t else
            ("error" if "error" in t else "-"),
            "%.3f" % t["bench_only_s"] if "bench_only_s" in t else "-", len(r["candidates"])))
    print("tilec: < 2 s a shape on the GPU host and the pick within 3%% of the best candidate: %s"
          % ("all" if not bad else "%d case(s) not" % bad))
    for r in ours:     # the cold cases side by side: the claim's numbers
        t = tri_by.get(r["case"], {})
        if r["jit"] == "cold":
            print("cold: %-40s tilec %.3f s (code: %s) | Triton %s" % (
                r["case"], r["first_s"], r["made"], "%.3f s%s" % (t["first_s"], " (compiled, cold cache)"
                                                                   if t.get("compiled") else " (benchmark only)")
                if "first_s" in t else "-"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "tilec": ours, "triton": theirs}, f, indent=1)
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
