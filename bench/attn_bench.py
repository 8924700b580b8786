#!/usr/bin/env python3
"""attn_bench.py - attention forward (examples/attention.tile, mma.sync path)
on the GPU: correctness against PyTorch in float32 and timing against SDPA's
flash and cuDNN backends, in one run.

Precompiled PTX (+ .meta) comes from .devcarry/attn/ (bench/attn_prepare.sh on
the build machine), named attn_<dt>_<arch>_d<D>_m<BM>_n<BN>_<c|f>[_<tag>].ptx (tag "so": the
example's STAGE_O, which tilec.attention picks for short rows; other tags:
experiment variants compiled from another source). On the
GPU machine: build libtilert (cmake -DTILEC_COMPILER=OFF), then
  TILEC_LIB_DIR=/tmp/rt/lib python3 bench/attn_bench.py [--quick] [--repeat R] [--out DIR]

Correctness: O against softmax(scale * q k^T) v in float32 (relative
Frobenius error <= 1e-2), LSE against logsumexp(scale * q k^T) / ln 2 (the
kernel's log2 units); outputs poisoned with NaN before each launch; fresh
random inputs per case; then every bf16 file (sm_90a and sm_86 PTX) on five N (a variant that
fails is left out of "best"). Timing, every bf16 variant per row (and a table of the sm_86 PTX that tilec.attention picks: the portable path): triton do_bench medians (with --repeat R: R rounds per row, flash, cuDNN and
every variant interleaved in each, in a fresh random order per round, and the means; single runs move a row by
up to 5%); FLOPs 4 Z H N^2 D,
halved when causal; FlashAttention-paper shapes (16384 tokens, hidden 2048).
"""
import argparse
import glob
import math
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
from timing import median_ms, run_timed  # noqa: E402 (bench/timing.py)
import torch.nn.functional as F  # noqa: E402
import tilec  # noqa: E402
from tilec import _attention as A  # noqa: E402

DT = {"bf16": torch.bfloat16, "f16": torch.float16}
# The arch-specific PTX a device runs besides the portable sm_86 PTX: the
# H100/H200 run the sm_90a files, a B200/GB200 the sm_100a ones (tcgen05);
# files of the other arch are left out of the run.
ARCH_CC = {"sm_90a": (9, 0), "sm_100a": (10, 0)}
FAST = "sm_90a"   # set in main() from the device


def runnable(arch):
    return arch == "sm_86" or arch == FAST
PTX_DIR = os.path.join(ROOT, ".devcarry", "attn")
LN2 = math.log(2.0)


def bench(fn):
    return median_ms(fn, rep=REP_MS, warmup=WARMUP_MS)


def reference(q, k, v, causal, scale):
    """(o, lse) in float32; lse in log2 units."""
    g = q.shape[1] // k.shape[1]
    qf, kf, vf = q.float(), k.float().repeat_interleave(g, 1), v.float().repeat_interleave(g, 1)
    s = torch.matmul(qf, kf.transpose(-1, -2)) * scale
    if causal:
        n, nk = s.shape[-2], s.shape[-1]
        s = s.masked_fill(torch.ones(n, nk, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    lse = torch.logsumexp(s, -1) / LN2
    o = torch.matmul(torch.softmax(s, -1), vf)
    return o, lse


def rel(a, b):
    den = b.norm().item()
    return (a.float() - b).norm().item() / (den if den > 0 else 1.0)


def check_case(dt, d, n, causal, g, arch, z=1, hk=2, bm=None, bn=None, mod=None):
    h = hk * g
    q = torch.randn(z, h, n, d, device="cuda", dtype=DT[dt])
    k = torch.randn(z, hk, n, d, device="cuda", dtype=DT[dt])
    v = torch.randn(z, hk, n, d, device="cuda", dtype=DT[dt])
    scale = d ** -0.5
    if mod is None:   # the pinned default tiles of bench/attn_prepare.sh
        bm = bm or 128
        bn = bn or (128 if d == 64 and arch in ("sm_90a", "sm_100a") else 64)
        mod = load({"name": "attn_%s_%s_d%d_m%d_n%d_%s" % (dt, arch, d, bm, bn, "c" if causal else "f")})
    o = torch.full_like(q, float("nan"))
    lse = torch.full((z, h, n), float("nan"), device="cuda")
    mod(q, k, v, o, lse, scale)
    torch.cuda.synchronize()
    ro, rl = reference(q, k, v, causal, scale)
    eo, el = rel(o, ro), rel(lse, rl)
    mx = (lse - rl).abs().max().item()
    ok = eo <= 1e-2 and el <= 1e-3 and mx <= 2e-2 and not torch.isnan(o).any().item()
    return ok, eo, el, mx


def correctness(quick):
    rows, bad = [], 0
    cases = []
    for arch in (FAST, "sm_86"):
        for dt in ("bf16", "f16"):
            for d in (64, 128) + ((96, 256) if arch == "sm_90a" else ()):
                for n in (1, 100, 1000, 1024, 4097, 8192):
                    for causal in (False, True):
                        for g in (1, 4, 8):
                            if arch == "sm_86" and (dt != "bf16" or n not in (100, 4097) or g != 4):
                                continue
                            if quick and n > 1024:
                                continue
                            cases.append((arch, dt, d, n, causal, g))
    worst = {}
    for arch, dt, d, n, causal, g in cases:
        try:
            ok, eo, el, mx = check_case(dt, d, n, causal, g, arch)
        except Exception as e:  # noqa: BLE001 - report and go on
            ok, eo, el, mx = False, float("nan"), float("nan"), float("nan")
            print("ERROR", arch, dt, d, n, causal, g, e, flush=True)
        key = (arch, dt, d)
        w = worst.setdefault(key, [0, 0.0, 0.0, 0.0, 0])
        w[0] += 1
        w[1] = max(w[1], eo) if eo == eo else float("nan")
        w[2] = max(w[2], el) if el == el else float("nan")
        w[3] = max(w[3], mx) if mx == mx else float("nan")
        if not ok:
            bad += 1
            w[4] += 1
            print("FAIL %s %s D=%d N=%d causal=%d H/HK=%d: O rel %.2e, LSE rel %.2e max abs %.2e"
                  % (arch, dt, d, n, causal, g, eo, el, mx), flush=True)
    print("\ncorrectness (O rel Frobenius <= 1e-2; LSE rel <= 1e-3, max abs <= 2e-2), "
          "N in {1,100,1000,1024,4097,8192}, causal/not, H/HK in {1,4,8}; D 96 and 256 on the fast path:")
    for (arch, dt, d), (cnt, eo, el, mx, nb) in sorted(worst.items()):
        print("  %-7s %-5s D=%-4d %3d cases  worst O %.2e  LSE %.2e (max abs %.2e)  %s"
              % (arch, dt, d, cnt, eo, el, mx, "OK" if not nb else "%d FAIL" % nb))
    q = torch.randn(1, 2, 64, 64, device="cuda").to(torch.bfloat16)
    try:
        tilec.attention(q, q, q, scale=-0.125)
        print("FAIL a negative scale was accepted", flush=True)
        bad += 1
    except ValueError as e:
        print("  ok   negative scale refused: %s" % e)
    return bad == 0


def parse(name):
    """attn_<dt>_<arch>_d<D>_m<BM>_n<BN>_<c|f>[_<tag>] -> dict."""
    p = name.split("_")
    return {"dt": p[1], "arch": "_".join(p[2:4]), "d": int(p[4][1:]), "bm": int(p[5][1:]),
            "bn": int(p[6][1:]), "causal": p[7] == "c", "tag": "_".join(p[8:]), "name": name}


def label(v):
    """Column name: tiles, tag, and the PTX's arch when it is not sm_90a."""
    return "%dx%d%s%s" % (v["bm"], v["bn"], ("_" + v["tag"]) if v["tag"] else "",
                          "" if v["arch"] == "sm_90a" else "_" + v["arch"].replace("_", ""))


_mods = {}


def load(v):
    mod = _mods.get(v["name"])
    if mod is None:
        mod = _mods[v["name"]] = tilec.load_files(os.path.join(PTX_DIR, v["name"] + ".ptx"))
    return mod


def portable_pick(d, causal, n):
    """The portable path's kernel for a row (D, causal, N tokens): the sm_86
    PTX that tilec.attention compiles for this call on an H200 (the plain
    example; the compiler chose its tiles and launch), from the prepared
    folder's lib/ (bench/attn_prepare.sh). (file name, Module)."""
    name = A.variant_name("bf16", "sm_86", d, causal, n)
    path = os.path.join(PTX_DIR, "lib", name + ".ptx")
    if path not in _mods:
        _mods[path] = tilec.load_files(path)
    return name, _mods[path]


LIB = "lib_sm86"   # the timing column of portable_pick's kernels


def check_lib():
    """Every kernel tilec.attention compiled for the timed grid (lib/), on
    N 100 and 4097 (H/HK 4): each is correct for any length, whatever the
    length it was compiled for."""
    ok_all = True
    for d in DIMS:
        for causal in (False, True):
            for n in NS:
                name, mod = portable_pick(d, causal, n)
                worst, ok = 0.0, True
                for nn in (100, 4097):
                    good, eo, el, mx = check_case("bf16", d, nn, causal, 4, "sm_86", mod=mod)
                    ok = ok and good
                    worst = max(worst, eo) if eo == eo else float("nan")
                print("  %-40s worst O %.2e  %s" % ("lib/" + name, worst, "OK" if ok else "FAIL"), flush=True)
                ok_all = ok_all and ok
    return ok_all


MATRIX_CASES = tuple((n, g) for n in (1, 100, 1000, 1024, 4097, 8192) for g in (1, 4, 8))


def check_variants(names, matrix=False):
    """Every bf16 file, either arch (defaults and experiment variants): N 1, 100,
    4097, 8192 (H/HK 4) and 1000 (H/HK 1), causal as compiled. matrix: every
    file of either dtype on the correctness matrix's N x H/HK (18 cases)."""
    bad = 0
    for v in (parse(x) for x in names):
        if v["dt"] != "bf16" and not matrix:
            continue
        worst = 0.0
        ok_all = True
        for n, g in (MATRIX_CASES if matrix else ((1, 4), (100, 4), (1000, 1), (4097, 4), (8192, 4))):
            try:
                ok, eo, el, mx = check_case(v["dt"], v["d"], n, v["causal"], g, v["arch"], mod=load(v))
            except Exception as e:  # noqa: BLE001
                ok, eo = False, float("nan")
                print("ERROR", v["name"], n, e, flush=True)
            worst = max(worst, eo) if eo == eo else float("nan")
            ok_all = ok_all and ok
        bad += not ok_all
        print("  %-40s worst O %.2e  %s" % (v["name"], worst, "OK" if ok_all else "FAIL"), flush=True)
    return bad == 0


def sdpa(q, k, v, causal, backend):
    from torch.nn.attention import sdpa_kernel
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def gqa_rows(names):
    """Grouped-query rows: H/HK = 8 (16 query heads on 2 key heads), N 8k,
    D 128, 16384 tokens, causal and not: every bf16 file of the fast arch
    at D = 128 against SDPA's cuDNN and flash backends with enable_gqa (the
    peers read the same 2 key heads), REPEAT rounds in a fresh random order."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    vs = [v for v in (parse(x) for x in names) if v["dt"] == "bf16" and v["d"] == 128 and v["arch"] == FAST]
    if not vs:
        return
    d, n, h, hk = 128, 8192, 16, 2
    z = 16384 // n
    print("\nGQA: H/HK = %d, Z x H x N = %d x %d x %d, D = %d, bf16 (TFLOP/s, mean of %d rounds)"
          % (h // hk, z, h, n, d, REPEAT))
    for causal in (False, True):
        q = torch.randn(z, h, n, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(z, hk, n, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(z, hk, n, d, device="cuda", dtype=torch.bfloat16)
        o = torch.empty_like(q)
        lse = torch.empty(z, h, n, device="cuda")
        flop = 4.0 * z * h * n * n * d / (2 if causal else 1)

        def peer(be):
            def run():
                with sdpa_kernel(be):
                    F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
            return run
        entries = [("flash", peer(SDPBackend.FLASH_ATTENTION)), ("cuDNN", peer(SDPBackend.CUDNN_ATTENTION))]
        entries += [(label(x), (lambda m=load(x): m(q, k, v, o, lse, d ** -0.5))) for x in vs if x["causal"] == causal]
        res = {name: [] for name, _ in entries}
        rng = random.Random(SEED * 31 + causal)
        for _ in range(REPEAT):
            rng.shuffle(entries)
            for name, fn in entries:
                try:
                    res[name].append(flop / bench(fn) / 1e9)
                except Exception as e:  # noqa: BLE001 - a peer without GQA is reported
                    res[name].append(float("nan"))
                    print("  %s: %s" % (name, str(e)[:100]), flush=True)
        mean = {name: sum(x) / len(x) for name, x in res.items()}
        line = "causal=%-5s flash %6.1f cuDNN %6.1f" % (causal, mean["flash"], mean["cuDNN"])
        for name, _ in sorted(entries):
            if name not in ("flash", "cuDNN"):
                line += "  %s %6.1f (%.2fx cuDNN)" % (name, mean[name], mean[name] / mean["cuDNN"])
        print(line, flush=True)


def timing(names):
    """Every bf16 variant (sm_90a and sm_86 PTX) per (D, causal) row; 'bad'
    marks the ones that failed check_variants (not counted for best). The
    last column: the tiles tilec.attention picks on this device, from sm_86
    PTX, against flash (the portable path's figure)."""
    from torch.nn.attention import SDPBackend
    vs = [parse(x) for x in names]
    vs = [v for v in vs if v["dt"] == "bf16"]
    print("\nattention forward, bf16, 16384 tokens, hidden 2048 (TFLOP/s, do_bench median; mean of %d "
          "interleaved round%s in random order)" % (REPEAT, "" if REPEAT == 1 else "s"))
    for d in DIMS:
        labels = sorted({label(v) for v in vs if v["d"] == d}, key=lambda x: (-int(x.split("x")[0]), x))
        labels += [LIB] if os.path.isdir(os.path.join(PTX_DIR, "lib")) else []
        hdr = "%-4s %-6s %-6s %-3s %8s %8s" % ("D", "N", "causal", "Z", "flash", "cuDNN")
        for lb in labels:
            hdr += " %13s" % lb
        print(hdr + "   best/flash  best/cuDNN  best" + ("  sm86-default/flash" if LIB in labels else ""), flush=True)
        h = 2048 // d
        for n in NS:
            z = 16384 // n
            for causal in (False, True):
                q = torch.randn(z, h, n, d, device="cuda", dtype=torch.bfloat16)
                k = torch.randn(z, h, n, d, device="cuda", dtype=torch.bfloat16)
                v = torch.randn(z, h, n, d, device="cuda", dtype=torch.bfloat16)
                flop = 4.0 * z * h * n * n * d / (2 if causal else 1)
                tf = lambda ms: flop / ms / 1e9  # noqa: E731
                res = {"flash": [], "cudnn": []}
                runs = {lb: [] for lb in labels}
                o = torch.empty_like(q)
                lse = torch.empty(z, h, n, device="cuda")
                # Peers and variants interleaved, REPEAT rounds, each round in
                # a fresh random order (seeded per row): identical kernels in
                # fixed adjacent places differed by up to 2.5% in the mean of
                # three rounds (bench/RESULTS.md 2026-11-30 21:17), so no
                # entry keeps one place in the round.
                entries = [("peer", "flash", SDPBackend.FLASH_ATTENTION), ("peer", "cudnn", SDPBackend.CUDNN_ATTENTION)]
                entries += [("tilec", lb, None) for lb in labels]
                rng = random.Random(SEED * 1000003 + d * 1009 + n * 2 + causal)
                for _ in range(REPEAT):
                    rng.shuffle(entries)
                    for kind, name, be in entries:
                        if kind == "peer":
                            try:
                                res[name].append(tf(bench(lambda: sdpa(q, k, v, causal, be))))
                            except Exception as e:  # noqa: BLE001
                                res[name].append(float("nan"))
                                print("  %s unavailable: %s" % (name, str(e)[:80]), flush=True)
                            continue
                        if name == LIB:
                            mod = portable_pick(d, causal, n)[1]
                            runs[name].append(tf(bench(lambda: mod(q, k, v, o, lse, d ** -0.5))))
                            continue
                        m = [x for x in vs if x["d"] == d and x["causal"] == causal and label(x) == name]
                        if not m:   # a variant compiled for the other mask only
                            runs[name].append(float("nan"))
                            continue
                        try:
                            mod = load(m[0])
                            runs[name].append(tf(bench(lambda: mod(q, k, v, o, lse, d ** -0.5))))
                        except Exception as e:  # noqa: BLE001
                            runs[name].append(float("nan"))
                            print("  tilec %s: %s" % (name, str(e)[:100]), flush=True)
                spread = {name: (min(x), max(x)) for name, x in list(res.items()) + list(runs.items()) if x}
                flash_runs = res["flash"]
                res = {name: sum(x) / len(x) for name, x in res.items()}
                ours = [sum(runs[lb]) / len(runs[lb]) for lb in labels]
                good = [(x, lb) for x, lb in zip(ours, labels) if x == x and lb not in BAD]
                best, blb = max(good) if good else (float("nan"), "-")
                line = "%-4d %-6d %-6s %-3d %8.1f %8.1f" % (d, n, "yes" if causal else "no", z, res["flash"], res["cudnn"])
                for x in ours:
                    line += " %13.1f" % x
                dl = LIB
                p86 = ours[labels.index(dl)] if dl in labels else float("nan")
                SM86.append((d, n, causal, p86, res["flash"], res["cudnn"],
                             spread.get("flash", (float("nan"),) * 2), spread.get(dl, (float("nan"),) * 2),
                             round_ratios(runs.get(dl, []), flash_runs)))
                line += "   %9.2fx  %9.2fx  %s" % (best / res["flash"], best / res["cudnn"], blb)
                if dl in labels:   # a folder of variants alone has no portable pick
                    line += "  %s %.2fx" % (dl, p86 / res["flash"])
                print(line, flush=True)
    if not os.path.isdir(os.path.join(PTX_DIR, "lib")):
        return   # a folder of variants alone: no portable pick to report
    print("\nportable path: sm_86 PTX, tilec.attention's tiles, TFLOP/s")
    print("(flash and tilec: lowest and highest of the %d rounds beside the mean; per round: tilec / flash of the "
          "same round, median and range)" % REPEAT)
    print("%-4s %-6s %-6s %8s %8s %8s %8s   %-13s %-13s %-18s" % ("D", "N", "causal", "flash", "cuDNN", "tilec",
                                                               "vs flash", "flash range", "tilec range",
                                                               "per round"))
    for d, n, causal, p86, fl, cu, fr, tr, rr in SM86:
        print("%-4d %-6d %-6s %8.1f %8.1f %8.1f %7.2fx   %5.1f-%-7.1f %5.1f-%-7.1f %5.3fx (%.3f-%.3f)" % (
            d, n, "yes" if causal else "no", fl, cu, p86, p86 / fl, fr[0], fr[1], tr[0], tr[1], rr[0], rr[1], rr[2]))


def round_ratios(ours, flash):
    """(median, lowest, highest) of ours[i] / flash[i] over the rounds where
    both ran: each round's pair shares that round's clocks."""
    r = sorted(a / b for a, b in zip(ours, flash) if a == a and b == b and b > 0)
    if not r:
        return (float("nan"),) * 3
    m = len(r) // 2
    return ((r[m] if len(r) % 2 else (r[m - 1] + r[m]) / 2), r[0], r[-1])


BAD = set()
SM86 = []
REPEAT = 1
SEED = 0
WARMUP_MS = 25     # do_bench's warm-up before each timing (--warmup-ms)
REP_MS = 100       # and its timed runs (--rep-ms)
DIMS = (64, 128)
NS = (1024, 2048, 4096, 8192, 16384)


def main():
    global WARMUP_MS, REP_MS
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--repeat", type=int, default=1,
                    help="time each row this many times, peers and variants interleaved, and report the means")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--variants-only", action="store_true",
                    help="check only the prepared files (not tilec.attention's cases: for a folder of a few variants)")
    ap.add_argument("--matrix", action="store_true",
                    help="check every file (bf16 and f16) on the correctness matrix: N 1/100/1000/1024/4097/8192 x "
                         "H/HK 1/4/8, causal as compiled (with --variants-only: a folder of variants)")
    ap.add_argument("--gqa", action="store_true",
                    help="also time grouped-query rows (H/HK 8, N 8k, D 128) of the fast arch's D = 128 files")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed of the rounds' orders (default: a fresh one, printed; the same seed in every run "
                         "would repeat each row's orders and with them any effect of a kernel's place)")
    ap.add_argument("--dims", default="64,128", help="head dims of the timed rows (default 64,128)")
    ap.add_argument("--ns", default="1024,2048,4096,8192,16384",
                    help="sequence lengths of the timed rows (default 1024,...,16384; 16384 tokens each)")
    ap.add_argument("--warmup-ms", type=float, default=WARMUP_MS,
                    help="milliseconds of runs before each timing (default %(default)s): the SM clock under the "
                         "power limit settles on each kernel's own draw")
    ap.add_argument("--rep-ms", type=float, default=REP_MS, help="milliseconds of timed runs (default %(default)s)")
    ap.add_argument("--dir", default=None,
                    help="folder of prepared PTX + .meta files (default .devcarry/attn; with --variants-only "
                         "a folder of a few experiment variants)")
    args = ap.parse_args()
    global DIMS, NS, PTX_DIR
    if args.warmup_ms < 0 or args.rep_ms <= 0:
        ap.error("--warmup-ms must be >= 0 and --rep-ms > 0")
    WARMUP_MS, REP_MS = args.warmup_ms, args.rep_ms
    if args.dir:
        PTX_DIR = os.path.abspath(args.dir)
        if not glob.glob(os.path.join(PTX_DIR, "*.ptx")):
            ap.error("--dir: no .ptx files in %s" % PTX_DIR)
    DIMS = tuple(int(x) for x in args.dims.split(","))
    NS = tuple(int(x) for x in args.ns.split(","))
    bad_ns = [n for n in NS if n <= 0 or 16384 % n]
    if bad_ns:
        ap.error("--ns: each length must divide 16384 (got %s)" % ",".join(map(str, bad_ns)))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__,
          "| %s" % time.strftime("%Y-%m-%d"), flush=True)
    global FAST
    cc = torch.cuda.get_device_capability(0)
    FAST = next((a for a, c in ARCH_CC.items() if c == tuple(cc)), None)
    if FAST is None:
        print("no arch-specific PTX for compute capability %d.%d: the sm_86 files only" % cc, flush=True)
    names = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(PTX_DIR, "*.ptx")))
    names = [x for x in names if runnable(parse(x)["arch"])]
    print("variants:", len(names), "(%s and sm_86)" % FAST, flush=True)
    ok = True
    if not args.skip_check:
        ok = True if args.variants_only else correctness(args.quick)
        if args.matrix:
            print("\ncorrectness of every variant, bf16 and f16, on the matrix (N 1/100/1000/1024/4097/8192 x "
                  "H/HK 1/4/8):")
        else:
            print("\ncorrectness of every bf16 variant (N 1/100/1000/4097/8192, H/HK 4, 1000: 1):")
        for x in names:
            v = parse(x)
            if (v["dt"] == "bf16" or args.matrix) and not check_variants([x], args.matrix):
                BAD.add(label(v))
                ok = False
        if os.path.isdir(os.path.join(PTX_DIR, "lib")):
            print("\ncorrectness of tilec.attention's kernels for the timed grid (lib/):")
            if not check_lib():
                BAD.add(LIB)
                ok = False
    if not args.skip_bench:
        global REPEAT, SEED
        REPEAT = max(1, args.repeat)
        SEED = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
        print("order seed: %d (--seed %d repeats this run's orders)" % (SEED, SEED), flush=True)
        timing(names)
        if args.gqa:
            gqa_rows(names)
    return 0 if ok else 1


if __name__ == "__main__":
    run_timed(main)
