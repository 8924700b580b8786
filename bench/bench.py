"""Correctness checks and benchmarks for tilec kernels on the GPU.

Run by bench/device.sh in one call on the GPU machine. Every check draws
fresh random inputs, poisons outputs with NaN first, and compares against a
float64 reference; every timing is the median of do_bench, with the peers
(torch.softmax, F.layer_norm) and the device copy bandwidth measured in the
same run. The memory-bound rows: softmax, layernorm and rmsnorm rows
(bytes: X read and Y written), the cross-entropy loss over a 128k
vocabulary (the logits read once) and layernorm's backward pass (X and dY
read, dX written; dW and dB by atomic_add into zeroed buffers, the zeroing
timed with the kernel), the row-wise cumsum (f32), dropout (p 0.25, f32
and bf16), the gather and scatter of rows by an index tensor (bf16 rows
of 256; the rows and indices moved), each against its torch peer
(torch.softmax, F.layer_norm, F.rms_norm, F.cross_entropy, autograd
through F.layer_norm, torch.cumsum, F.dropout, F.embedding, index_copy_)
and against copy bandwidth. Decode attention (examples/decode_attention.tile:
batch 8, 32 query heads on 8 KV heads, D 128, a 32k context in pages of
64 read through a shuffled block table; both kernels timed together)
reports the GB/s of its KV cache read against the pages gathered by
indexing and F.scaled_dot_product_attention with enable_gqa.

Kernels come precompiled from bench/prepare.sh (.devcarry/kernels/<arch>/,
.devcarry/perf/; the GPU host then needs only libtilert); a kernel missing
there is compiled with tilec.compile when libtilec is available.
"""
import argparse
import json
import math
import os
import sys
import traceback

import torch
import torch.nn.functional as F
from timing import median_ms  # bench/timing.py: do_bench median

import tilec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
TOL = {"bf16": 1e-2, "f16": 2e-3, "f32": 1e-5}
results = {"checks": [], "bench": []}
failures = 0


CARRY = os.environ.get("TILEC_CARRY", os.path.join(ROOT, ".devcarry"))


def ex(name):
    return os.path.join(ROOT, "examples", name + ".tile")


def kernel(arch, name, example, **consts):
    """The precompiled kernels/<arch>/<name>.ptx, else tilec.compile."""
    path = os.path.join(CARRY, "kernels", arch, name + ".ptx")
    if os.path.exists(path):
        return tilec.load_files(path)
    return tilec.compile(ex(example), arch=arch, **consts)


def rel_err(out, ref):
    out = out.double()
    ref = ref.double()
    if torch.isnan(out).any():
        return float("inf")
    return (torch.linalg.vector_norm(out - ref) / max(torch.linalg.vector_norm(ref).item(), 1e-30)).item()


def check(name, err, tol):
    global failures
    ok = err <= tol
    failures += 0 if ok else 1
    results["checks"].append({"name": name, "err": err, "tol": tol, "ok": ok})
    print(f"  {'ok  ' if ok else 'FAIL'} {name}: rel err {err:.2e} (tol {tol:.0e})")


def guarded(name, fn):
    global failures
    try:
        fn()
    except Exception as e:  # a failing check must not stop the others
        failures += 1
        results["checks"].append({"name": name, "ok": False, "error": repr(e)})
        print(f"  FAIL {name}: {e!r}")
        traceback.print_exc()


def next_pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def poison(*ts):
    for t in ts:
        t.fill_(float("nan")) if t.is_floating_point() else t.fill_(-1)


# ---------------------------------------------------------------- correctness

def check_vector_add(arch):
    k = kernel(arch, "vector_add", "vector_add")
    for n in (1, 127, 1000, 4097, 1 << 20):
        x = torch.randn(n, device="cuda")
        y = torch.randn(n, device="cuda")
        z = torch.empty(n, device="cuda")
        poison(z)
        k(x, y, z)
        torch.cuda.synchronize()
        check(f"vector_add {arch} n={n}", rel_err(z, x.double() + y.double()), 1e-6)


def check_softmax(arch):
    for dt in ("bf16", "f16", "f32"):
        for cols in (1, 127, 1000, 4097):
            rows = 67
            b = next_pow2(cols)
            k = kernel(arch, f"softmax_{dt}_{b}", "softmax", BLOCK=b, T=dt)
            x = (torch.randn(rows, cols, device="cuda") * 3).to(DTYPES[dt])
            y = torch.empty_like(x)
            poison(y)
            k(x, y)
            torch.cuda.synchronize()
            ref = torch.softmax(x.double(), dim=-1)
            check(f"softmax {arch} {dt} {rows}x{cols}", rel_err(y, ref), TOL[dt])


def check_layernorm(arch):
    for dt in ("bf16", "f16", "f32"):
        for cols in (1, 127, 1000, 4097):
            rows = 37
            b = next_pow2(cols)
            k = kernel(arch, f"layernorm_{dt}_{b}", "layernorm", BLOCK=b, T=dt)
            x = (torch.randn(rows, cols, device="cuda") * 2 + 0.5).to(DTYPES[dt])
            w = torch.randn(cols, device="cuda").to(DTYPES[dt])
            b = torch.randn(cols, device="cuda").to(DTYPES[dt])
            y = torch.empty_like(x)
            poison(y)
            k(x, w, b, y, 1e-5)
            torch.cuda.synchronize()
            ref = F.layer_norm(x.double(), (cols,), w.double(), b.double(), 1e-5)
            check(f"layernorm {arch} {dt} {rows}x{cols}", rel_err(y, ref), TOL[dt] * 2)


def check_rmsnorm(arch):
    for dt, b, cols in (("bf16", 4096, 1), ("bf16", 4096, 1000), ("bf16", 4096, 4096), ("f32", 1024, 1000),
                        ("f32", 1024, 1024)):
        rows = 37
        k = kernel(arch, f"rmsnorm_{dt}_{b}", "rmsnorm", BLOCK=b, T=dt)
        x = (torch.randn(rows, cols, device="cuda") * 2).to(DTYPES[dt])
        w = torch.randn(cols, device="cuda").to(DTYPES[dt])
        y = torch.empty_like(x)
        poison(y)
        k(x, w, y, 1e-5)
        torch.cuda.synchronize()
        x64 = x.double()
        ref = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-5) * w.double()
        check(f"rmsnorm {arch} {dt} {rows}x{cols}", rel_err(y, ref), TOL[dt])


def ce_targets(rows, v):
    """Random targets, with 0, V - 1 and ignore_index (-100) among them."""
    t = torch.randint(0, v, (rows,), device="cuda")
    t[1::7] = 0
    t[2::7] = v - 1
    t[3::7] = -100
    return t


def run_cross_entropy(k, rows, v):
    """One launch of the cross_entropy kernel k on random bf16 logits
    (rows x v, ce_targets' targets) into a poisoned loss: (x, t, loss)."""
    x = (torch.randn(rows, v, device="cuda") * 4).to(torch.bfloat16)
    t = ce_targets(rows, v)
    loss = torch.empty(rows, device="cuda")
    poison(loss)
    k(x, t, loss)
    torch.cuda.synchronize()
    return x, t, loss


def check_cross_entropy(arch):
    for v in (1, 1000, 8193, 128256):
        rows = 37
        k = kernel(arch, "cross_entropy", "cross_entropy")
        x, t, loss = run_cross_entropy(k, rows, v)
        ref = F.cross_entropy(x.double(), t, reduction="none")
        # relative to the terms the loss is the difference of (logsumexp
        # and the target's logit): with one logit a row every loss is 0,
        # and f32 rounding of lse - x leaves ~1e-7 of |x|
        lse = torch.logsumexp(x.double(), -1)
        err = (torch.linalg.vector_norm(loss.double() - ref) /
               max(torch.linalg.vector_norm(ref).item(), torch.linalg.vector_norm(lse).item(), 1e-30)).item()
        if torch.isnan(loss).any():
            err = float("inf")
        if (loss[t == -100] != 0).any():
            err = float("inf")  # an ignored target must give 0
        check(f"cross_entropy {arch} bf16 {rows}x{v} i64 targets", err, 1e-5)


def layernorm_bwd_inputs(m, n, dt):
    """x, dy, w, b and the forward's saved mean and rstd (f32, [M])."""
    x = (torch.randn(m, n, device="cuda") * 2 + 0.5).to(dt)
    dy = torch.randn(m, n, device="cuda").to(dt)
    w = torch.randn(n, device="cuda").to(dt)
    b = torch.randn(n, device="cuda").to(dt)
    _, mean, rstd = torch.native_layer_norm(x, (n,), w, b, 1e-5)
    return x, dy, w, b, mean.view(-1).float().contiguous(), rstd.view(-1).float().contiguous()


def layernorm_bwd_ref(x, dy, w, b):
    """dx, dw, db in float64 through autograd."""
    x64, w64, b64 = (t.double().requires_grad_() for t in (x, w, b))
    y = F.layer_norm(x64, (x.shape[1],), w64, b64, 1e-5)
    return torch.autograd.grad(y, (x64, w64, b64), dy.double())


def layernorm_bwd_err(dx, dw, db, ref, tol_x):
    """The worst of the three relative errors, each scaled to its tolerance
    (dx: tol_x, dw and db: 1e-3, the f32 sums against float64 through
    statistics saved in f32)."""
    return max(rel_err(dx, ref[0]) / tol_x, rel_err(dw, ref[1]) / 1e-3, rel_err(db, ref[2]) / 1e-3)


def run_layernorm_bwd(k, m, n, dt):
    """One launch of the layernorm_bwd kernel k on layernorm_bwd_inputs
    into a poisoned dX and zeroed dW, dB: (x, dy, w, bias, mean, rstd, dx,
    dw, db)."""
    x, dy, w, bias, mean, rstd = layernorm_bwd_inputs(m, n, dt)
    dx = torch.empty_like(x)
    poison(dx)
    dw = torch.zeros(n, device="cuda")
    db = torch.zeros(n, device="cuda")
    k(x, dy, w, mean, rstd, dx, dw, db)
    torch.cuda.synchronize()
    return x, dy, w, bias, mean, rstd, dx, dw, db


def check_layernorm_bwd(arch):
    for dt, b, m, n in (("bf16", 1024, 1, 1), ("bf16", 1024, 300, 1000), ("bf16", 4096, 133, 4000),
                        ("bf16", 4096, 300, 4096), ("f32", 1024, 37, 1024)):
        k = kernel(arch, f"layernorm_bwd_{dt}_{b}", "layernorm_bwd", BLOCK=b, T=dt)
        x, dy, w, bias, mean, rstd, dx, dw, db = run_layernorm_bwd(k, m, n, DTYPES[dt])
        err = layernorm_bwd_err(dx, dw, db, layernorm_bwd_ref(x, dy, w, bias), TOL[dt] * 2)
        check(f"layernorm_bwd {arch} {dt} {m}x{n} (dx, dw, db; errors / tolerances)", err, 1.0)


def strided(rows, cols, pad, dt, fill=None):
    """A [rows, cols] view of a [rows, cols + pad] buffer: row stride cols + pad
    elements, so with an odd stride most row starts are not 16-byte aligned."""
    buf = torch.randn(rows, cols + pad, device="cuda").to(DTYPES[dt])
    if fill is not None:
        buf.fill_(fill)
    return buf, buf[:, :cols]


def check_strided(arch):
    """Odd row strides (misaligned row starts at every offset mod 16 bytes)
    for inputs and outputs; the padding of the output must stay untouched."""
    for dt in ("bf16", "f16", "f32"):
        for cols, pad in ((1000, 1), (1000, 3), (4096, 1), (127, 5), (4097, 2)):
            rows = 29
            b = next_pow2(cols)
            _, x = strided(rows, cols, pad, dt)
            ybuf, y = strided(rows, cols, pad + 2, dt, float("nan"))
            k = kernel(arch, f"softmax_{dt}_{b}", "softmax", BLOCK=b, T=dt)
            k(x, y)
            torch.cuda.synchronize()
            err = rel_err(y, torch.softmax(x.double(), dim=-1))
            if not torch.isnan(ybuf[:, cols:]).all():
                err = float("inf")  # a store past the row end
            check(f"softmax strided {arch} {dt} {rows}x{cols} stride {cols + pad}->{cols + pad + 2}", err, TOL[dt])
            k = kernel(arch, f"layernorm_{dt}_{b}", "layernorm", BLOCK=b, T=dt)
            w = torch.randn(cols, device="cuda").to(DTYPES[dt])
            bias = torch.randn(cols, device="cuda").to(DTYPES[dt])
            ybuf.fill_(float("nan"))
            k(x, w, bias, y, 1e-5)
            torch.cuda.synchronize()
            err = rel_err(y, F.layer_norm(x.double(), (cols,), w.double(), bias.double(), 1e-5))
            if not torch.isnan(ybuf[:, cols:]).all():
                err = float("inf")
            check(f"layernorm strided {arch} {dt} {rows}x{cols} stride {cols + pad}->{cols + pad + 2}", err,
                  TOL[dt] * 2)


def check_transpose(arch):
    for dt in ("bf16", "f32"):
        for (m, n) in ((1, 1), (127, 1000), (4097, 33), (1024, 1024)):
            k = kernel(arch, f"transpose_{dt}", "transpose", T=dt)
            x = torch.randn(m, n, device="cuda").to(DTYPES[dt])
            y = torch.empty(n, m, device="cuda", dtype=DTYPES[dt])
            poison(y)
            k(x, y)
            torch.cuda.synchronize()
            check(f"transpose {arch} {dt} {m}x{n}", rel_err(y, x.t()), 0.0)


def check_reduction(arch):
    mod = kernel(arch, "reduction", "reduction")
    for cols in (1, 127, 1000, 4097):
        rows = 33
        x = torch.randn(rows, cols, device="cuda")
        y = torch.empty(rows, device="cuda")
        poison(y)
        mod.row_sum(x, y)
        torch.cuda.synchronize()
        check(f"row_sum {arch} f32 {rows}x{cols}", rel_err(y, x.double().sum(-1)), 1e-5)
        n = rows * cols
        v = torch.randn(n, device="cuda")
        p = torch.empty((n + 4095) // 4096, device="cuda")
        poison(p)
        mod.partial_sum(v, p)
        torch.cuda.synchronize()
        # per block against float64 sums of the same 4096-element blocks,
        # the error of each measured against the sum of its elements'
        # magnitudes (the bound of a float32 summation): a block's own sum
        # can land near zero (one block of 33 random values did, 2026-11-30
        # 16:40: 1.06e-5 relative to the sum), where a relative error says
        # nothing about the kernel
        nb = p.numel()
        ref = torch.zeros(nb * 4096, dtype=torch.float64, device="cuda")
        ref[:n] = v.double()
        blocks = ref.view(nb, 4096)
        if torch.isnan(p).any():
            err = float("inf")
        else:
            err = ((p.double() - blocks.sum(-1)).abs() / blocks.abs().sum(-1).clamp_min(1e-30)).max().item()
        check(f"partial_sum {arch} f32 n={n}", err, 1e-5)


def check_bad_launches(arch):
    global failures
    k = kernel(arch, "vector_add", "vector_add")
    x = torch.randn(1000, device="cuda")
    cases = {
        "wrong dtype": (lambda: k(x.half(), x, x), "X"),
        "shape disagreement": (lambda: k(x, x[:999], x), "N"),
        "misaligned pointer": (lambda: k(x[1:], x[1:], x[1:]), "align"),
        "host tensor": (lambda: k(x.cpu(), x, x), "X"),
        "wrong arg count": (lambda: k(x, x), "argument"),
    }
    for name, (fn, needle) in cases.items():
        try:
            fn()
            torch.cuda.synchronize()
            ok, msg = False, "no error raised"
        except tilec.LaunchError as e:
            msg = str(e)
            ok = needle.lower() in msg.lower()
        except Exception as e:
            ok, msg = False, f"wrong exception type {e!r}"
        failures += 0 if ok else 1
        results["checks"].append({"name": f"bad launch: {name}", "ok": ok, "message": msg})
        print(f"  {'ok  ' if ok else 'FAIL'} bad launch ({name}): {msg}")


def decode_inputs(b, hq, hk, d, lens, page, seed=0):
    """Random bf16 Q [b, hq, d], a paged K/V cache [pages, page, hk, d] with
    every sequence's pages in a random order (a shuffled block table, i32
    [b, max pages]; unused entries -1) and the lengths (i32 [b])."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    mp = max((n + page - 1) // page for n in lens)
    need = sum((n + page - 1) // page for n in lens)
    npages = need + 3                            # a few pages nobody uses
    q = torch.randn(b, hq, d, device="cuda", generator=g).to(torch.bfloat16)
    kc = torch.randn(npages, page, hk, d, device="cuda", generator=g).to(torch.bfloat16)
    vc = torch.randn(npages, page, hk, d, device="cuda", generator=g).to(torch.bfloat16)
    perm = torch.randperm(npages, device="cuda", generator=g)
    bt = torch.full((b, mp), -1, dtype=torch.int32, device="cuda")
    at = 0
    for i, n in enumerate(lens):
        k = (n + page - 1) // page
        bt[i, :k] = perm[at:at + k].int()
        at += k
    return q, kc, vc, bt, torch.tensor(lens, dtype=torch.int32, device="cuda")


def decode_torch(q, kc, vc, bt, lens, scale, dtype=None):
    """The natural torch form: gather each sequence's pages, then
    F.scaled_dot_product_attention with enable_gqa (one query token). In
    dtype (float64 for the reference), else the inputs' bf16."""
    out = []
    for i in range(q.shape[0]):
        n = int(lens[i])
        pages = bt[i, :(n + kc.shape[1] - 1) // kc.shape[1]].long()
        k = kc[pages].flatten(0, 1)[:n].transpose(0, 1)     # [hk, n, d]
        v = vc[pages].flatten(0, 1)[:n].transpose(0, 1)
        qi = q[i][:, None, :]                                # [hq, 1, d]
        if dtype is not None:
            qi, k, v = qi.to(dtype), k.to(dtype), v.to(dtype)
        out.append(F.scaled_dot_product_attention(qi, k, v, scale=scale, enable_gqa=True)[:, 0])
    return torch.stack(out)


def run_decode(mod, q, kc, vc, bt, lens, scale, chunk=1024):
    """Both kernels of examples/decode_attention.tile into poisoned
    partials and output: O [b, hq, d] bf16."""
    b, hq, d = q.shape
    s = (int(lens.max()) + chunk - 1) // chunk
    op = torch.empty(b, hq, s, d, device="cuda")
    lp = torch.empty(b, hq, s, device="cuda")
    o = torch.empty(b, hq, d, device="cuda", dtype=torch.bfloat16)
    poison(op, lp, o)
    mod.decode_attention(q, kc, vc, bt, lens, op, lp, scale)
    mod.decode_combine(op, lp, lens, o)
    return o, op, lp


def check_decode_attention(arch):
    mod = kernel(arch, "decode_attention", "decode_attention")
    for lens in ((1, 100, 4097, 32768), (1025, 63, 64, 2048)):
        q, kc, vc, bt, ln = decode_inputs(len(lens), 32, 8, 128, lens, 64, seed=sum(lens))
        scale = 128 ** -0.5
        o, _, _ = run_decode(mod, q, kc, vc, bt, ln, scale)
        torch.cuda.synchronize()
        ref = decode_torch(q, kc, vc, bt, ln, scale, torch.float64)
        check(f"decode_attention {arch} bf16 lens={lens} GQA 32/8 D=128 page 64", rel_err(o, ref), TOL["bf16"])


# ---------------------------------------------------------------- benchmarks

def bench(fn):
    return median_ms(fn, rep=200)  # ms


def copy_bandwidth():
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_(0, 255)
    y = torch.empty_like(x)
    ms = bench(lambda: y.copy_(x))
    return 2 * x.numel() / (ms * 1e-3) / 1e9  # GB/s, read + write


def row(name, ms, nbytes, copy_gbs, peer_ms=None, peer="", flops=None):
    gbs = nbytes / (ms * 1e-3) / 1e9
    r = {"name": name, "ms": ms, "GB/s": gbs, "pct_copy": 100 * gbs / copy_gbs}
    if flops:
        r["TFLOP/s"] = flops / (ms * 1e-3) / 1e12
    if peer_ms:
        r["peer"] = peer
        r["peer_ms"] = peer_ms
        r["speedup"] = peer_ms / ms
    results["bench"].append(r)
    return r


# Without bench/prepare.sh's variants.txt: these (NAME, example and defines).
DEFAULT_VARIANTS = (("softmax_4096", "softmax -DBLOCK=4096"), ("softmax_16384", "softmax -DBLOCK=16384"),
                    ("layernorm_4096", "layernorm -DBLOCK=4096"), ("layernorm_16384", "layernorm -DBLOCK=16384"),
                    ("rmsnorm_4096", "rmsnorm -DBLOCK=4096"), ("rmsnorm_16384", "rmsnorm -DBLOCK=16384"),
                    ("cross_entropy_bn8192", "cross_entropy -DBN=8192"),
                    ("layernorm_bwd_4096", "layernorm_bwd -DBLOCK=4096"))


def perf_variants():
    """(name, env, defines, ptxas summary) of every benchmark kernel prepared."""
    path = os.path.join(CARRY, "perf", "variants.txt")
    if not os.path.exists(path):
        return [(n, "", d, "") for n, d in DEFAULT_VARIANTS]
    with open(path) as f:
        return [tuple((ln.rstrip("\n").split("|") + [""] * 4)[:4]) for ln in f if ln.strip()]


# A variant's kind is its name's longest known prefix; its shape is the
# kind's (the row kernels: by the BLOCK in the name).
KINDS = ("layernorm_bwd", "cross_entropy", "layernorm", "softmax", "rmsnorm", "cumsum", "dropout", "gather_rows",
         "scatter_rows")
ROW_SHAPES = {4096: (32768, 4096), 16384: (8192, 16384)}
CE_SHAPE = (4096, 128256)     # tokens x a 128k vocabulary (Llama 3's 128256)
LNB_SHAPE = (32768, 4096)
CUMSUM_SHAPE = (16384, 8192)  # f32 rows
DROPOUT_N = 1 << 28           # f32 or bf16 (the variant's name) elements, p = 0.25
GATHER_SHAPE = (1 << 20, 1 << 20, 256)   # table rows V, index count N, row width (bf16)


def variant_kind(name):
    return next(k for k in KINDS if name == k or name.startswith(k + "_"))


def perf_kernel(name, defs):
    """The precompiled perf/<name>.ptx, else tilec.compile of the variant's
    DEFINES ("FILE -DK=V ...", FILE a path or an example's name)."""
    path = os.path.join(CARRY, "perf", name + ".ptx")
    if os.path.exists(path):
        return tilec.load_files(path)
    words = defs.split()
    src = words[0] if words[0].endswith(".tile") else ex(words[0])
    consts = dict(w[2:].split("=", 1) for w in words[1:] if w.startswith("-D"))
    return tilec.compile(src, arch="sm_90a", **consts)


def bench_variant(name, envs, defs, regs, copy_gbs, peers, rows, small=False):
    """Check the variant at its benchmark shape, then time it against its
    peer; small: at 5 rows of that width, checked and not timed (for
    compute-sanitizer)."""
    kind = variant_kind(name)
    k = perf_kernel(name, defs)
    label = f"{name} [{envs or 'default'}] {regs.strip()}"
    if kind in ("softmax", "layernorm", "rmsnorm"):
        m, n = ROW_SHAPES[int(name.split("_")[1])]
        m = 5 if small else m
        x = torch.randn(m, n, device="cuda").to(torch.bfloat16)
        y = torch.empty_like(x)
        poison(y)
        nbytes, tol = 2 * x.numel() * 2, 1e-2 if kind == "softmax" else 2e-2
        if kind == "softmax":
            k(x, y)
            ref = torch.softmax(x.double(), -1)
            run = lambda: k(x, y)
            peer = ("torch.softmax", lambda: torch.softmax(x, dim=-1))
        elif kind == "layernorm":
            w = torch.randn(n, device="cuda").to(torch.bfloat16)
            b = torch.randn(n, device="cuda").to(torch.bfloat16)
            k(x, w, b, y, 1e-5)
            ref = F.layer_norm(x.double(), (n,), w.double(), b.double(), 1e-5)
            run = lambda: k(x, w, b, y, 1e-5)
            peer = ("F.layer_norm", lambda: F.layer_norm(x, (n,), w, b, 1e-5))
        else:
            w = torch.randn(n, device="cuda").to(torch.bfloat16)
            k(x, w, y, 1e-5)
            x64 = x.double()
            ref = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-5) * w.double()
            del x64
            run = lambda: k(x, w, y, 1e-5)
            if hasattr(F, "rms_norm"):
                peer = ("F.rms_norm", lambda: F.rms_norm(x, (n,), w, 1e-5))
            else:  # the formula in bf16, as a model's RMSNorm writes it
                peer = ("x * rsqrt(mean(x^2)) * w", lambda: (x.float() * torch.rsqrt(
                    x.float().pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w)
        torch.cuda.synchronize()
        err = rel_err(y, ref)
        del ref
    elif kind == "cross_entropy":
        m, n = CE_SHAPE
        m = 5 if small else m
        x, t, loss = run_cross_entropy(k, m, n)
        ref = torch.cat([F.cross_entropy(x[i:i + 512].double(), t[i:i + 512], reduction="none")
                         for i in range(0, m, 512)])
        err, tol = rel_err(loss, ref), 1e-5
        if (loss[t == -100] != 0).any():
            err = float("inf")
        del ref
        nbytes = x.numel() * 2   # the logits, read once
        run = lambda: k(x, t, loss)
        peer = ("F.cross_entropy", lambda: F.cross_entropy(x, t, reduction="none"))
    elif kind == "cumsum":
        m, n = CUMSUM_SHAPE
        m = 5 if small else m
        x = torch.randn(m, n, device="cuda")
        y = torch.empty_like(x)
        poison(y)
        k(x, y)
        torch.cuda.synchronize()
        err, tol = rel_err(y, torch.cumsum(x.double(), 1)), 1e-5
        nbytes = 2 * x.numel() * 4
        run = lambda: k(x, y)
        peer = ("torch.cumsum", lambda: torch.cumsum(x, 1))
    elif kind == "dropout":
        m, n = 1, (1 << 12 if small else DROPOUT_N)
        dt = torch.bfloat16 if "bf16" in name else torch.float32
        x = (torch.rand(n, device="cuda") + 0.5).to(dt)   # no zero among the inputs
        y = torch.empty_like(x)
        poison(y)
        p_drop, seed = 0.25, 20261203
        k(x, y, p_drop, seed)
        torch.cuda.synchronize()
        kept = y != 0
        frac = 1 - kept.float().mean().item()
        # every kept element f32(x) * (1 / (1 - p)) in f32, rounded to the dtype as the kernel does,
        # and (on the large shape) the dropped share within 0.01 of p
        scale = 1.0 / (1.0 - torch.tensor(p_drop, dtype=torch.float32))
        want = (x.float() * scale).to(dt)
        err = float("inf") if torch.isnan(y.float()).any() or (n >= 1 << 20 and abs(frac - p_drop) > 0.01) else \
            (y[kept].float() - want[kept].float()).abs().max().item()
        tol = 0.0
        nbytes = 2 * x.numel() * x.element_size()
        run = lambda: k(x, y, p_drop, seed)
        peer = ("F.dropout(training=True)", lambda: F.dropout(x, p_drop, training=True))
    elif kind in ("gather_rows", "scatter_rows"):
        v, m, n = GATHER_SHAPE
        v, m = (64, 37) if small else (v, m)
        mod = k
        if kind == "gather_rows":
            e = torch.randn(v, n, device="cuda").to(torch.bfloat16)
            ids = torch.randint(0, v, (m,), device="cuda", dtype=torch.int32)
            y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            poison(y)
            mod.gather_rows(e, ids, y)
            torch.cuda.synchronize()
            err = float(not torch.equal(y, e[ids.long()]))
            run = lambda: mod.gather_rows(e, ids, y)
            peer = ("F.embedding", lambda: F.embedding(ids, e))
        else:
            x = torch.randn(m, n, device="cuda").to(torch.bfloat16)
            ids = torch.randperm(v, device="cuda")[:m].to(torch.int32)
            y = torch.randn(v, n, device="cuda").to(torch.bfloat16)
            want = y.clone()
            want.index_copy_(0, ids.long(), x)
            mod.scatter_rows(x, ids, y)
            torch.cuda.synchronize()
            err = float(not torch.equal(y, want))
            run = lambda: mod.scatter_rows(x, ids, y)
            idl = ids.long()
            peer = ("index_copy_", lambda: y.index_copy_(0, idl, x))
        tol = 0.0
        nbytes = 2 * m * n * 2 + m * 4    # rows read and written, the indices read
    else:  # layernorm_bwd
        m, n = LNB_SHAPE
        m = 5 if small else m
        x, dy, w, bias, mean, rstd, dx, dw, db = run_layernorm_bwd(k, m, n, torch.bfloat16)
        err, tol = layernorm_bwd_err(dx, dw, db, layernorm_bwd_ref(x, dy, w, bias), 2e-2), 1.0
        nbytes = 3 * x.numel() * 2   # X and dY read, dX written

        def run():
            dw.zero_()
            db.zero_()
            k(x, dy, w, mean, rstd, dx, dw, db)

        xg, wg, bg = (t.detach().requires_grad_() for t in (x, w, bias))
        yg = F.layer_norm(xg, (n,), wg, bg, 1e-5)
        peer = ("autograd F.layer_norm (dx, dw, db)",
                lambda: torch.autograd.grad(yg, (xg, wg, bg), dy, retain_graph=True))
    check(f"{name} {'small' if small else 'bench-shape'} {m}x{n} {envs}", err, tol)
    if small:
        return
    dname = {"cumsum": "f32", "dropout": "bf16" if "bf16" in name else "f32"}.get(kind, "bf16")
    key = (kind, m, n, dname)
    if key not in peers:
        peers[key] = bench(peer[1])
    r = row(f"{kind} {dname} {m}x{n} {label}", bench(run), nbytes, copy_gbs, peers[key], peer[0])
    rows.append(r)
    print(f"  {r['name']}: {r['ms']:.4f} ms {r['GB/s']:.0f} GB/s {r['pct_copy']:.1f}% copy, "
          f"{peer[0]} {r['peer_ms']:.4f} ms -> {r['speedup']:.2f}x", flush=True)


DECODE_SHAPE = (8, 32, 8, 128, 32768, 64)   # batch, query heads, KV heads, D, context, page


def decode_torch_batched(q, kc, vc, bt, n, scale):
    """decode_torch for equal lengths n: one gather of every page, one SDPA."""
    b, hq, d = q.shape
    k = kc[bt.long()].flatten(1, 2)[:, :n].transpose(1, 2)   # [b, hk, n, d]
    v = vc[bt.long()].flatten(1, 2)[:, :n].transpose(1, 2)
    return F.scaled_dot_product_attention(q[:, :, None, :], k, v, scale=scale, enable_gqa=True)[:, :, 0]


def bench_decode_attention(copy_gbs, name="decode_attention", chunk=1024, page=None):
    """Decode attention at batch 8, 32 query heads on 8 KV heads, D 128, a
    32k context in pages of 64 (bf16): GB/s of the KV cache read (K and V,
    once), both kernels timed together; the peer gathers the pages and runs
    F.scaled_dot_product_attention (enable_gqa), timed whole. name, chunk
    and page: another prepared perf/<name>.ptx of the example (its CHUNK
    and PAGE defines)."""
    b, hq, hk, d, n, page0 = DECODE_SHAPE
    page = page or page0
    mod = perf_kernel(name, "decode_attention")
    q, kc, vc, bt, lens = decode_inputs(b, hq, hk, d, [n] * b, page, seed=7)
    scale = d ** -0.5
    o, op, lp = run_decode(mod, q, kc, vc, bt, lens, scale, chunk)
    torch.cuda.synchronize()
    ref = decode_torch(q, kc, vc, bt, lens, scale, torch.float32)
    check(f"decode_attention bench-shape b{b} h{hq}/{hk} n{n}", rel_err(o, ref), TOL["bf16"])
    del ref
    nbytes = 2 * b * n * hk * d * 2             # K and V of every sequence, read once

    def run():
        mod.decode_attention(q, kc, vc, bt, lens, op, lp, scale)
        mod.decode_combine(op, lp, lens, o)

    peer = "gather pages + F.sdpa(enable_gqa)"
    r = row(f"{name} bf16 b{b} h{hq}/{hk} d{d} n{n} page{page}", bench(run), nbytes, copy_gbs,
            bench(lambda: decode_torch_batched(q, kc, vc, bt, n, scale)), peer)
    print(f"  {r['name']}: {r['ms']:.4f} ms {r['GB/s']:.0f} GB/s {r['pct_copy']:.1f}% copy, "
          f"{peer} {r['peer_ms']:.4f} ms -> {r['speedup']:.2f}x", flush=True)
    return r


def bench_memory_bound(copy_gbs, only=None):
    rows, peers = [], {}
    for name, envs, defs, regs in perf_variants():
        if only and not name.startswith(only):
            continue
        guarded(f"bench {name}", lambda: bench_variant(name, envs, defs, regs, copy_gbs, peers, rows))
    return rows


def bench_rounds(rounds, only):
    """--only / --rounds: the variants named ONLY..., timed in ROUNDS rounds
    (the copy bandwidth measured again before each), % of copy per round
    and their mean; for comparing variants of one kernel (a TILEC_CARRY
    folder of hand-made PTX included)."""
    pct = {}
    for r in range(rounds):
        copy_gbs = copy_bandwidth()
        print(f"== round {r + 1} of {rounds} (copy bandwidth {copy_gbs:.0f} GB/s)", flush=True)
        for row_ in bench_memory_bound(copy_gbs, tuple(only)):
            pct.setdefault(row_["name"], []).append(row_["pct_copy"])
    print(f"\n| variant | % of copy per round | mean |\n|---|---|---|")
    for name, p in pct.items():
        print(f"| {name} | {' '.join(f'{x:.1f}' for x in p)} | {sum(p) / len(p):.1f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench-out")
    ap.add_argument("--arches", default="sm_90a,sm_86")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--sanitize", action="store_true",
                    help="the checks, then every benchmark kernel on 5 rows, untimed (for compute-sanitizer)")
    ap.add_argument("--shard", default="0/1", metavar="I/K",
                    help="with --sanitize: run the I-th of K equal parts of its work (processes side by side)")
    ap.add_argument("--only", default="", metavar="PREFIX[,PREFIX...]",
                    help="time only the benchmark variants whose names start so (no checks of their own "
                         "beyond each variant's at its shape, no decode attention)")
    ap.add_argument("--rounds", type=int, default=1, help="with --only: timed rounds, interleaved")
    args = ap.parse_args()
    if args.rounds < 1 or (args.rounds > 1 and not args.only):
        ap.error("--rounds N needs N >= 1, and N > 1 only with --only")
    if args.only:
        if args.sanitize or args.skip_bench:
            ap.error("--only times variants: not with --sanitize or --skip-bench")
        print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
        bench_rounds(args.rounds, [x for x in args.only.split(",") if x])
        print(f"\n{sum(c['ok'] for c in results['checks'])} passed, {failures} failed")
        sys.exit(1 if failures else 0)
    shard, nshards = (int(v) for v in args.shard.split("/"))
    if not 0 <= shard < nshards or (nshards > 1 and not args.sanitize):
        ap.error("--shard I/K needs 0 <= I < K, and K > 1 only with --sanitize")
    arches = args.arches.split(",")
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  cudnn {torch.backends.cudnn.version()}")

    checks = [(arch, fn) for arch in arches
              for fn in (check_vector_add, check_softmax, check_layernorm, check_strided, check_reduction,
                         check_transpose, check_rmsnorm, check_cross_entropy, check_layernorm_bwd,
                         check_decode_attention, check_bad_launches)]
    variants = perf_variants() if args.sanitize else []
    if nshards > 1:  # one list of work, dealt round-robin
        work = [("check", c) for c in checks] + [("small", v) for v in variants]
        mine = work[shard::nshards]
        checks = [c for kind, c in mine if kind == "check"]
        variants = [v for kind, v in mine if kind == "small"]
        print(f"shard {shard}/{nshards}: {len(checks)} checks, {len(variants)} benchmark kernels of {len(work)} items")
    for i, (arch, fn) in enumerate(checks):
        if i == 0 or checks[i - 1][0] != arch:
            print(f"== correctness [{arch}]")
        guarded(f"{fn.__name__} {arch}", lambda: fn(arch))

    table = []
    if args.sanitize:
        print("== benchmark kernels on 5 rows of their widths (not timed)")
        for name, envs, defs, regs in variants:
            guarded(f"small {name}", lambda: bench_variant(name, envs, defs, regs, 0, {}, [], small=True))
    elif not args.skip_bench:
        copy_gbs = copy_bandwidth()
        print(f"== benchmark (copy bandwidth {copy_gbs:.0f} GB/s)")
        table.extend(bench_memory_bound(copy_gbs))
        guarded("bench decode_attention", lambda: table.append(bench_decode_attention(copy_gbs)))
        copy2 = copy_bandwidth()
        print(f"== copy bandwidth again after the benchmark: {copy2:.0f} GB/s")
        results["copy_GBps"] = copy_gbs
        results["copy_GBps_after"] = copy2
        print()
        print(f"device {torch.cuda.get_device_name()}, copy bandwidth {copy_gbs:.0f} GB/s (read+write)")
        print(f"| kernel | tilec ms | GB/s | % copy BW | peer | peer ms | tilec / peer speed |")
        print(f"|---|---|---|---|---|---|---|")
        for r in table:
            print(f"| {r['name']} | {r['ms']:.4f} | {r['GB/s']:.0f} | {r['pct_copy']:.1f}% | {r.get('peer','')} | "
                  f"{r.get('peer_ms', float('nan')):.4f} | {r.get('speedup', float('nan')):.2f}x |")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(f"\n{sum(c['ok'] for c in results['checks'])} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
