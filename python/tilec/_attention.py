"""tilec.attention (python/tilec/_attention.py): FlashAttention forward (examples/attention.tile) on
PyTorch tensors.

    o, lse = tilec.attention(q, k, v, causal=False, scale=None)

q: [Z, H, N, D], k and v: [Z, HK, NK, D] (H a multiple of HK: grouped-query
heads), bf16 or f16, on one CUDA device; D 64 or 128 (any multiple of 16
compiles). Returns o [Z, H, N, D] (q's dtype) and lse [Z, H, N] float32 in
log2 units: lse = log2(sum_j exp2(scale * log2(e) * q.k_j)), i.e. the
natural log-sum-exp of the scaled scores divided by ln 2. The kernel runs on
torch's current stream.

The example is compiled as it is: the compiler chooses its tile sizes (BM
and BN are `= auto`), the launch order, a persistent grid and O's staging
(docs/language.md, "What the compiler decides"). This module only tells it
what it knows of the call: the query and key lengths (tilec_options.dims:
N and NK), and the device's shared memory per block and SM count (the pass
options target.smem-per-block and target.sms). Each (D, dtype, mask, arch,
N, NK, device) is compiled once per process and cached (block_m / block_n
pin the tiles). Precompiled PTX is used when present: a folder given by
`ptx_dir=` (or TILEC_ATTN_DIR) holding variant_name(...).ptx and its .meta
(bench/attn_prepare.sh writes them), so a GPU machine without the compiler
library can run it.
"""
import os
import sys

from . import compile as _compile, load_files as _load_files, device_arch as _device_arch

# The package's copy of examples/attention.tile (package data; in a source
# checkout tilec/examples links to the repository's examples/).
_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples", "attention.tile")

SMEM_OPTION_MAX = 232448   # the largest target.smem-per-block (`tilec --help`)
SMS_OPTION_MAX = 1024


def compile_args(d, causal, n, nk=None, smem=None, sms=None, bm=None, bn=None):
    """What tilec.attention hands the compiler for one call, as
    (pass_options dict, dims dict, compile-time params dict): the device's
    facts it knows and the sizes; pins only where block_m / block_n give
    them."""
    popts = {}
    if smem:
        popts["target.smem-per-block"] = min(int(smem), SMEM_OPTION_MAX)
    if sms:
        popts["target.sms"] = min(int(sms), SMS_OPTION_MAX)
    dims = {"N": int(n), "NK": int(n if nk is None else nk)}
    consts = {"D": int(d), "CAUSAL": bool(causal)}
    if bm:
        consts["BM"] = int(bm)
    if bn:
        consts["BN"] = int(bn)
    return popts, dims, consts


def variant_name(dt, arch, d, causal, n, nk=None, bm=None, bn=None):
    """File name (no extension) of a precompiled variant:
    attn_<dt>_<arch>_d<D>_<c|f>_n<N>_k<NK>[_m<BM>][_b<BN>]."""
    return "attn_%s_%s_d%d_%s_n%d_k%d%s%s" % (dt, arch, d, "c" if causal else "f", n, n if nk is None else nk,
                                            "_m%d" % bm if bm else "", "_b%d" % bn if bn else "")


def device_sms(device):
    """SMs of torch CUDA device `device`, or None when torch does not say."""
    torch = sys.modules.get("torch")
    try:
        return int(torch.cuda.get_device_properties(device).multi_processor_count)
    except Exception:  # noqa: BLE001 (no torch, no such property, no device)
        return None


def device_smem(device):
    """Shared memory a block may use on torch CUDA device `device` (bytes),
    or None when torch does not say."""
    torch = sys.modules.get("torch")
    try:
        return int(torch.cuda.get_device_properties(device).shared_memory_per_block_optin)
    except Exception:  # noqa: BLE001 (no torch, no such property, no device)
        return None


_cache = {}


def source(dt):
    """The example's source with its element dtype replaced (bf16 -> f16)."""
    with open(_SOURCE) as f:
        text = f.read()
    return text if dt == "bf16" else text.replace("bf16", dt)


def kernel(d, dt, causal, bm=None, bn=None, arch=None, ptx_dir=None, n=None, nk=None, smem=None, sms=None):
    """The compiled (or loaded) Module for one call: n, nk the query and key
    lengths (nk defaults to n; None: not known), smem and sms the device's
    shared memory per block and SMs (None: not known), bm / bn pins."""
    arch = arch or _device_arch() or "sm_90a"
    popts, dims, consts = compile_args(d, causal, n or 0, nk, smem, sms, bm, bn)
    if not n:
        dims = None
    key = (d, dt, bool(causal), arch, tuple(sorted(popts.items())), tuple(sorted((dims or {}).items())), bm, bn)
    mod = _cache.get(key)
    if mod is not None:
        return mod
    ptx_dir = ptx_dir or os.environ.get("TILEC_ATTN_DIR")
    path = (os.path.join(ptx_dir, variant_name(dt, arch, d, causal, n or 0, nk, bm, bn) + ".ptx")
            if ptx_dir and n else None)
    if path and os.path.isfile(path):
        mod = _load_files(path)
    else:
        mod = _compile(source(dt), arch=arch, pass_options=popts, dims=dims, **consts)
    _cache[key] = mod
    return mod


def attention(q, k, v, causal=False, scale=None, block_m=None, block_n=None, arch=None, ptx_dir=None):
    """FlashAttention forward; returns (o, lse). See the module docstring."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(q, torch.Tensor):
        raise TypeError("tilec.attention takes torch tensors")
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError("q, k, v must be [Z, H, N, D] / [Z, HK, NK, D]")
    z, h, n, d = q.shape
    hk = k.shape[1]
    if k.shape != v.shape or k.shape[0] != z or k.shape[3] != d:
        raise ValueError("k and v must both be [Z, HK, NK, D] with q's Z and D; got %s, %s"
                         % (tuple(k.shape), tuple(v.shape)))
    if hk == 0 or h % hk:
        raise ValueError("H (%d) must be a multiple of HK (%d)" % (h, hk))
    names = {torch.bfloat16: "bf16", torch.float16: "f16"}
    if q.dtype not in names or k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError("q, k, v must all be bfloat16 or all float16")
    if d % 16:
        raise ValueError("head dim D must be a multiple of 16 (got %d)" % d)
    if scale is None:
        scale = d ** -0.5
    if not float(scale) > 0:
        raise ValueError("scale must be positive (got %r): the kernel takes the row maxima of "
                         "the unscaled scores" % (scale,))
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    o = torch.empty_like(q, memory_format=torch.contiguous_format)
    lse = torch.empty((z, h, n), dtype=torch.float32, device=q.device)
    if n == 0 or z * h == 0:
        return o, lse
    mod = kernel(d, names[q.dtype], causal, block_m, block_n, arch, ptx_dir, n, k.shape[2],
                 device_smem(q.device), device_sms(q.device))
    mod(q, k, v, o, lse, float(scale))
    return o, lse
