"""tilec.attention (python/tilec/_attention.py): FlashAttention forward (examples/attention.tile) on
PyTorch tensors.

    o, lse = tilec.attention(q, k, v, causal=False, scale=None)

q: [Z, H, N, D], k and v: [Z, HK, NK, D] (H a multiple of HK: grouped-query
heads), bf16 or f16, on one CUDA device; D 64 or 128 (any multiple of 16
compiles). Returns o [Z, H, N, D] (q's dtype) and lse [Z, H, N] float32 in
log2 units: lse = log2(sum_j exp2(scale * log2(e) * q.k_j)), i.e. the
natural log-sum-exp of the scaled scores divided by ln 2. The kernel runs on
torch's current stream.

A variant (D, dtype, causal, tile sizes, arch, O staging, NPB)
is compiled once per process and cached. D=128 without the mask at 2k
tokens and more takes 256-row blocks of two warp groups taking turns at
the tensor cores where the device gives a block 128 KB of shared memory
(sm_86 PTX is then compiled for that device's limit), and from 1k tokens
the same tile as a persistent grid of one block per SM (the example's
NPB) where it gives 196 KB (an H100 or H200). Short key loops (NK <= 4096, or with the causal
mask at most 16 blocks of BN, 32 at D >= 128) take the example's
STAGE_O form: O leaves through shared memory as 16-byte rows. Precompiled
PTX is used when present: a folder given by TILEC_ATTN_DIR (or `ptx_dir=`)
holding attn_<dt>_<arch>_d<D>_m<BM>_n<BN>_<c|f>[_so][_p<NPB>].ptx
(_so: STAGE_O; _p<NPB>: a persistent grid; variant_tag()) and
its .meta (bench/attn_bench.py's layout), so a GPU machine without the
compiler library can run it.
"""
import os
import sys

from . import compile as _compile, load_files as _load_files, device_arch as _device_arch

# The package's copy of examples/attention.tile (package data; in a source
# checkout tilec/examples links to the repository's examples/).
_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples", "attention.tile")

# Tile sizes (BM, BN) per head dim: 4 warps x 32 query rows each (the code
# generator's warp rule for BM = 128). Measured on an H200 (docs/codegen.md,
# bench/RESULTS.md): D = 64 runs fastest with BN = 128, causal or not (at
# 1k causal tokens BN = 64 was faster while the boundary blocks had a loop
# of their own; with them guarded in the one loop BN = 128 ran 3-4% faster
# in three runs); D = 128 with BN = 64 (BN = 128 spills at 4 warps).
TILES = {64: (128, 128), 128: (128, 64)}


# D = 128 without the mask on devices whose blocks may use 128 KB of shared
# memory (sm_90: 227 KB), for query and key lengths of 2k and more: 256-row
# blocks of 8 warps in two groups that take turns at the tensor cores, with
# no block-wide barrier in the key loop (decoupled turns, which the code
# generator applies to 8 warps of 32 rows each; docs/codegen.md: the two
# groups share each K and V tile, half the copies per FLOP of two 128-row
# blocks). Measured on an H200 (sm_86 PTX, bench/RESULTS.md
# 2026-12-01 08:09) against the 128x64 picks: 1k -0.1%, 2k +1.1%, 4k
# +2.5%, 16k +3.1% / +4.5% (O staged / fragment stores); with the causal
# mask the 256-row tile lost 6-13% (2026-12-01 05:17). O is staged at
# every length (the only form measured).
TILE_256_MIN_N = 2048
TILE_256_SMEM = 131072     # Q 64 KB + two 16 KB stages of K and of V

# The same tile as a persistent grid where a block may use 196 KB (an H100
# or H200), from 1k tokens: one block per SM looping over the tiles
# (examples/attention.tile's NPB = the SM count), the loop over tiles
# rotated by the compiler (double_buffer, docs/internals.md: the next tile's
# Q and first K/V stage are copied right after this tile's key loop, while
# its epilogue runs), O staged through a scratch of its own after the
# buffers. Measured on an H200 (sm_86 PTX, bench/RESULTS.md 2026-12-01
# 11:51-12:09) against the one-tile picks: 1k +0.5% to +3.4% over the
# 128-row tile (five runs), 2k-8k +0.1% to +3.5% over the 256-row one,
# 16k +0.1%.
PERSIST_MIN_N = 1024
PERSIST_SMEM = 200704      # TILE_256_SMEM + O's 68 KB scratch (256 rows of 256 + 16 bytes)
DEFAULT_SMS = 132          # an H200's (and H100 SXM's) SMs: NPB when no device says


def arch_smem(arch):
    """Shared memory one block may use on arch's own devices (bytes)."""
    return 101376 if arch.startswith("sm_8") else 232448


def tiles(d, causal=False, n=None, arch="sm_90a", smem=None, nk=None):
    """Default (BM, BN) for head dim d (any multiple of 16: BN = 64), the
    mask, query length n and key length nk (default n), on a device whose
    blocks may use smem bytes of shared memory (default: arch's own)."""
    bm, bn = TILES.get(d, (128, 64))
    smem = arch_smem(arch) if smem is None else smem
    if smem < 200 * 1024:     # 100 KB of shared memory per SM (sm_86)
        bn = min(bn, 64)
    nk = n if nk is None else nk
    if (d == 128 and not causal and n is not None and min(n, nk) >= TILE_256_MIN_N
            and smem >= TILE_256_SMEM):
        return 256, 64
    if persistent(d, causal, n, nk, 256, smem):
        return 256, 64
    return bm, bn


def persistent(d, causal, n, nk=None, bm=256, smem=None, arch="sm_90a"):
    """Whether tilec.attention runs tile bm as a persistent grid (one block
    per SM looping over the tiles): the 256-row tile without the mask, D =
    128, from PERSIST_MIN_N query and key tokens, where a block may use
    PERSIST_SMEM bytes of shared memory."""
    smem = arch_smem(arch) if smem is None else smem
    nk = n if nk is None else nk
    return (bm == 256 and d == 128 and not causal and n is not None and min(n, nk) >= PERSIST_MIN_N
            and smem >= PERSIST_SMEM)


# O through shared memory (the example's STAGE_O: the accumulator's
# fragments go to the dead K/V buffers, then out as 16-byte rows) pays off
# where a block's key loop is short. Measured on an H200 against the
# fragment stores (sm_86 PTX; bench/RESULTS.md 2026-11-30 17:38, 17:42,
# 17:47, 18:17 and 18:22; earlier as a form forced on every such store,
# the same PTX, at 16:02 and 16:22), mean of the five runs: without the
# mask D=128 +3.0% (1k), +1.1% (2k), +0.9% (4k), -0.2% (8k), -5.3% (16k); D=64 +1.4%
# (1k), -0.1% (2k), +0.7% (4k), -0.2% (8k), -1.8% (16k); with the causal
# mask (the staged causal tiles keep fewer registers for the loop) D=128
# +4.2% (1k, 16 key blocks), -0.4% (2k), -3% to -5% beyond; D=64 +3.7%
# (1k), +1.6% (2k, 16 blocks), -0.2% (4k), losses beyond. So: NK <= 4096
# without the mask (the epilogue's share of the work falls as 1/NK,
# whatever BN), at most 16 key blocks with it.
# With the causal mask at D >= 128 the staged tile also issues p @ v row
# tile by row tile (the code generator's choice, codegen/codegen.c
# chain_choices), which measured faster than the fragment stores up to
# 32 key blocks (2k tokens at BN = 64): bench/RESULTS.md 2026-11-30
# 20:26 (+2.9% at 1k, +3.9% at 2k, +1.8% at 4k, -0.3% at 8k, +1.6% at 16k
# over the picks then) and 21:06 (+3.3%, +2.1%, -0.3%, -2.8%, -2.0%).
STAGE_O_MAX_NK = 4096
STAGE_O_MAX_CAUSAL_BLOCKS = 16
STAGE_O_MAX_CAUSAL_BLOCKS_D128 = 32


def stage_o(nk, bn, causal=False, d=64, bm=128):
    """Whether tilec.attention stages O through shared memory: always on the
    256-row tile (the only form measured), else key length nk up to
    STAGE_O_MAX_NK, or with the causal mask in at most
    STAGE_O_MAX_CAUSAL_BLOCKS blocks of bn (STAGE_O_MAX_CAUSAL_BLOCKS_D128
    for head dims d >= 128)."""
    if bm == 256:
        return True
    if nk is None:
        return False
    if causal:
        cap = STAGE_O_MAX_CAUSAL_BLOCKS_D128 if d >= 128 else STAGE_O_MAX_CAUSAL_BLOCKS
        return -(-nk // bn) <= cap
    return nk <= STAGE_O_MAX_NK


def pass_options(bm=128, arch="sm_90a", smem=None):
    """The pass options tilec.attention compiles a tile with, as a dict for
    tilec.compile: the device's shared memory per block for the 256-row
    tile when the PTX's arch allows less (sm_86 PTX for an H100 or H200)."""
    if bm == 256 and arch_smem(arch) < TILE_256_SMEM:
        return {"target.smem-per-block": smem or arch_smem("sm_90a")}
    return {}


def variant_tag(so, npb=0):
    """The file-name tag of a variant: "_so" for O staged, then "_p<NPB>"
    for a persistent grid of NPB blocks; "" for none."""
    return ("_so" if so else "") + ("_p%d" % npb if npb else "")


def picks(d, causal, n, nk=None, arch="sm_90a", smem=None, sms=None):
    """What kernel() picks without overrides for query length n and key
    length nk (default n) on a device of `sms` SMs (default DEFAULT_SMS):
    (bm, bn, so, npb), npb the blocks of a persistent grid (0: one tile per
    block)."""
    bm, bn = tiles(d, causal, n, arch, smem, nk)
    so = stage_o(n if nk is None else nk, bn, causal, d, bm)
    npb = (sms or DEFAULT_SMS) if persistent(d, causal, n, nk, bm, smem, arch) else 0
    return bm, bn, so, npb


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


def variant_name(dt, arch, d, bm, bn, causal, so=False, npb=0):
    return "attn_%s_%s_d%d_m%d_n%d_%s%s" % (dt, arch, d, bm, bn, "c" if causal else "f", variant_tag(so, npb))


def source(dt):
    """The example's source with its element dtype replaced (bf16 -> f16)."""
    with open(_SOURCE) as f:
        text = f.read()
    return text if dt == "bf16" else text.replace("bf16", dt)


def kernel(d, dt, causal, bm=None, bn=None, arch=None, ptx_dir=None, n=None, nk=None, so=None, smem=None,
           sms=None):
    """The compiled (or loaded) Module for one variant (n, nk: the query and
    key lengths, for the tile and O-staging choices; nk defaults to n; so:
    True / False forces O staging, None picks it; smem: the shared memory a
    block may use on the device, None for arch's own; sms: the device's SMs,
    the blocks of a persistent grid, None for DEFAULT_SMS)."""
    arch = arch or _device_arch() or "sm_90a"
    tbm, tbn = tiles(d, causal, n, arch, smem, nk)
    bm, bn = bm or tbm, bn or tbn
    so = stage_o(n if nk is None else nk, bn, causal, d, bm) if so is None else bool(so)
    npb = (sms or DEFAULT_SMS) if persistent(d, causal, n, nk, bm, smem, arch) else 0
    popts = pass_options(bm, arch, smem)
    key = (d, dt, bool(causal), bm, bn, arch, so, tuple(sorted(popts.items())), npb)
    mod = _cache.get(key)
    if mod is not None:
        return mod
    ptx_dir = ptx_dir or os.environ.get("TILEC_ATTN_DIR")
    path = (os.path.join(ptx_dir, variant_name(dt, arch, d, bm, bn, causal, so, npb) + ".ptx")
            if ptx_dir else None)
    if path and os.path.isfile(path):
        mod = _load_files(path)
    else:
        mod = _compile(source(dt), arch=arch, pass_options=popts, D=d, BM=bm, BN=bn, CAUSAL=bool(causal), STAGE_O=so,
                       NPB=npb)
    _cache[key] = mod
    return mod


def attention(q, k, v, causal=False, scale=None, block_m=None, block_n=None, arch=None, ptx_dir=None,
              stage_o=None):
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
    mod = kernel(d, names[q.dtype], causal, block_m, block_n, arch, ptx_dir, n, k.shape[2], stage_o,
                 device_smem(q.device), device_sms(q.device))
    mod(q, k, v, o, lse, float(scale))
    return o, lse
