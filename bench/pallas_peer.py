#!/usr/bin/env python3
"""pallas_peer.py - f16 attention on sm_90a beside JAX Pallas on Mosaic GPU.

The 20-row grid of bench/attn_bench.py (16384 tokens, hidden 2048: N 1k-16k,
D 64 and 128, causal and not), f16: tilec's sm_90a kernels (the example
compiled for sm_90a with the compiler's defaults and 132 SMs, the f16 files
bench/prepare.sh makes in .devcarry/fa4/), JAX Pallas's FlashAttention 3 on
Mosaic GPU (jax.experimental.pallas.ops.gpu.attention_mgpu; block_q 64, the
first of block_kv 128 / 64 that compiles, 2 stages: its own benchmark's
choice; its kernel takes no softmax scale: softmax(Q K^T) V, the same
FLOPs) and SDPA's cuDNN backend. JAX and torch launch on their own streams,
so every entry is timed the same way: CALLS back-to-back calls after a
warm-up, then a synchronization, wall time / CALLS (the calls queue while
the GPU runs, so host time hides behind the kernels), in ROUNDS rounds in a
fresh random order per row; means and per-round ratios.

Correctness first, on every row's shape: tilec's O against float32 SDPA
(relative Frobenius <= 1e-2, poisoned output); Pallas's O against the same
reference (reported; a row where Pallas fails or does not compile prints
why and is left out of its ratio).

  TILEC_LIB_DIR=... python3 bench/pallas_peer.py [--rounds R] [--calls C]
Needs jax with the CUDA plugin (XLA's memory preallocation is switched off
here so that torch and JAX share the GPU)."""
import argparse
import math
import os
import random
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import tilec  # noqa: E402

DIR = os.path.join(ROOT, ".devcarry", "fa4")


def wall_ms(fn, sync, calls):
    fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t0) * 1e3 / calls


def pallas_setup():
    """(jax, jnp, attention, TuningConfig) or a reason string."""
    try:
        import jax
        import jax.numpy as jnp
        from jax.experimental.pallas.ops.gpu import attention_mgpu as am
        if not any(d.platform == "gpu" for d in jax.devices()):
            return "jax sees no GPU"
        return jax, jnp, am.attention, am.TuningConfig
    except Exception as e:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
        return "%s: %s" % (type(e).__name__, str(e)[:160])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--ns", default="1024,2048,4096,8192,16384")
    ap.add_argument("--dims", default="64,128")
    args = ap.parse_args()
    pal = pallas_setup()
    if isinstance(pal, str):
        print("Pallas peer unavailable:", pal)
        pal = None
    else:
        jax, jnp, pattention, TuningConfig = pal
        print("jax", jax.__version__, "| torch", torch.__version__, "|", torch.cuda.get_device_name(0), flush=True)
    from torch.nn.attention import sdpa_kernel, SDPBackend
    tsync = torch.cuda.synchronize
    bad = 0
    rows = []
    for d in (int(x) for x in args.dims.split(",")):
        h = 2048 // d
        for n in (int(x) for x in args.ns.split(",")):
            z = 16384 // n
            for causal in (False, True):
                path = os.path.join(DIR, "attn_f16_sm_90a_d%d_m128_n128_%s.ptx" % (d, "c" if causal else "f"))
                mod = tilec.load_files(path)
                q, k, v = (torch.randn(z, h, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
                o = torch.full_like(q, float("nan"))
                lse = torch.empty(z, h, n, device="cuda")
                scale = d ** -0.5
                mod(q, k, v, o, lse, scale)
                tsync()
                # float32 reference on the first batch's first two heads: the math backend holds
                # every score (N = 16384: 1 GiB a head), beside JAX's pool in this process
                with sdpa_kernel(SDPBackend.MATH):
                    ref = F.scaled_dot_product_attention(q[:1, :2].float(), k[:1, :2].float(), v[:1, :2].float(),
                                                         is_causal=causal)
                err = ((o[:1, :2].float() - ref).norm() / ref.norm()).item()
                ok = err <= 1e-2 and not torch.isnan(o).any().item()
                bad += not ok
                entries = [("tilec", lambda: mod(q, k, v, o, lse, scale), tsync)]

                def cudnn():
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                entries.append(("cuDNN", cudnn, tsync))
                pnote = ""
                if pal:
                    key = jax.random.split(jax.random.key(n * 3 + d + causal), 3)
                    jq, jk, jv = (jax.random.normal(kk, (z, n, h, d), jnp.float16) for kk in key)
                    pfn = None
                    for bkv in (128, 64):
                        try:
                            cfg = TuningConfig(block_q=64, block_kv=bkv, max_concurrent_steps=2, causal=causal)
                            out = pattention(jq, jk, jv, cfg)
                            out.block_until_ready()
                            pfn = (lambda cfg=cfg: pattention(jq, jk, jv, cfg))
                            # its O on the first batch and head against float32
                            qf, kf, vf = (torch.from_numpy(np.asarray(x[0, :, 0, :].astype(jnp.float32))).cuda()
                                          for x in (jq, jk, jv))
                            with sdpa_kernel(SDPBackend.MATH):
                                pref = F.scaled_dot_product_attention(qf[None], kf[None], vf[None],
                                                                      is_causal=causal, scale=1.0)[0]
                            pout = torch.from_numpy(np.asarray(out[0, :, 0, :].astype(jnp.float32))).cuda()
                            perr = ((pout - pref).norm() / pref.norm()).item()
                            pnote = "Pallas block_kv %d O rel %.1e" % (bkv, perr)
                            break
                        except Exception as e:  # noqa: BLE001
                            pnote = "Pallas: %s" % str(e).splitlines()[0][:100]
                    if pfn:
                        last = {}

                        def prun(pfn=pfn):
                            last["o"] = pfn()

                        def psync():
                            if "o" in last:
                                last["o"].block_until_ready()
                        entries.append(("Pallas", prun, psync))
                flop = 4.0 * z * h * n * n * d / (2 if causal else 1)
                res = {name: [] for name, _, _ in entries}
                rng = random.Random(d * 100003 + n * 7 + causal)
                for _ in range(args.rounds):
                    rng.shuffle(entries)
                    for name, fn, sync in entries:
                        res[name].append(flop / wall_ms(fn, sync, args.calls) / 1e9)
                mean = {name: sum(x) / len(x) for name, x in res.items()}
                rr = sorted(a / b for a, b in zip(res["tilec"], res["Pallas"])) if "Pallas" in res else []
                rows.append((d, n, causal, mean, rr, ok, err, pnote))
                print("D=%-4d N=%-6d causal=%-5s tilec %6.1f  cuDNN %6.1f  Pallas %6s  x Pallas %s  x cuDNN %.2f  "
                      "O rel %.1e %s  %s" % (
                          d, n, causal, mean["tilec"], mean["cuDNN"],
                          "%.1f" % mean["Pallas"] if "Pallas" in mean else "-",
                          "%.2f (%.2f-%.2f)" % (mean["tilec"] / mean["Pallas"], rr[0], rr[-1]) if rr else "-",
                          mean["tilec"] / mean["cuDNN"], err, "OK" if ok else "FAIL", pnote), flush=True)
    below = [r for r in rows if "Pallas" in r[3] and r[3]["tilec"] < r[3]["Pallas"]]
    print("\nf16, %d rounds of %d calls: tilec >= Pallas on %d of %d rows where Pallas ran; correct %d of %d"
          % (args.rounds, args.calls, sum(1 for r in rows if "Pallas" in r[3]) - len(below),
             sum(1 for r in rows if "Pallas" in r[3]), len(rows) - bad, len(rows)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
