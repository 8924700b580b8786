#!/usr/bin/env python3
"""Tests of the tilec Python package that need no GPU (plain python3, no pytest).

Needs libtilert (launch validation) and, for the compile tests, libtilec;
found via TILEC_LIB_DIR or ../../build*/lib. Exits 77 if neither library is
built, 1 on a failure. Run: python3 python/tests/test_python.py
"""
import ctypes
import os
import pathlib
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tilec  # noqa: E402
from tilec import _lib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
REF = os.path.join(ROOT, "tests", "gpu", "vector_add_ref")


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _lib.DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class FakeTensor:
    """A DLPack producer over a made-up address (never dereferenced)."""

    def __init__(self, shape, code=2, bits=32, device_type=2, addr=0x7F0000001000):
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.m = _Managed()
        t = self.m.dl_tensor
        t.data, t.ndim = addr, len(shape)
        t.device.device_type, t.device.device_id = device_type, 0
        t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
        t.shape = self.shape
        self.device_type = device_type

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def __dlpack__(self, stream=None):
        return _lib.capsule_new(ctypes.addressof(self.m), b"dltensor", None)


failures = []


def check(name, cond, detail=""):
    print("%s %s%s" % ("ok  " if cond else "FAIL", name, (": " + detail) if detail and not cond else ""))
    if not cond:
        failures.append(name)


def raises(exc, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        return e
    return None


def test_runtime_side():
    with open(REF + ".ptx") as f:
        ptx = f.read()
    with open(REF + ".meta") as f:
        meta = f.read()
    mod = tilec.load(ptx, meta)
    check("two kernels", [k.name for k in mod.kernels] == ["vadd", "vadd_c2"])
    k = mod.vadd
    check("params", repr(k.params) == "[X: f32[N], Y: f32[N], Z: f32[N], alpha: f32]", repr(k.params))
    check("threads/grid", k.threads == 128 and k.grid_rule == "N 128 cdiv ; 1 ; 1")
    e = raises(TypeError, mod)
    check("module with two kernels is not callable", e is not None and "2 kernels" in str(e))
    x, y, z = FakeTensor([1000]), FakeTensor([1000]), FakeTensor([1000])
    k.check(x, y, z, 2.0)
    check("valid launch passes validation", True)
    e = raises(tilec.LaunchError, k.check, x, y, z)
    check("arg count", e is not None and "takes 4 arguments (X, Y, Z, alpha), got 3" in str(e), str(e))
    e = raises(tilec.LaunchError, k.check, x, FakeTensor([999]), z, 1)
    check("named dim mismatch", e is not None and "param Y dim 0 (N) is 999 but param X dim 0 says 1000" in str(e), str(e))
    e = raises(tilec.LaunchError, k.check, x, y, FakeTensor([1000], device_type=1), 1)
    check("cpu tensor", e is not None and "param Z: tensor is in CPU memory" in str(e), str(e))
    e = raises(tilec.LaunchError, k.check, x, FakeTensor([1000], code=4, bits=16), z, 1)
    check("dtype", e is not None and "param Y: tensor dtype is bfloat16 but the kernel wants f32[N]" in str(e), str(e))
    e = raises(tilec.LaunchError, k.check, x, y, z, x)
    check("tensor for scalar", e is not None and "param alpha: expected a scalar f32, got a tensor" in str(e), str(e))
    e = raises(TypeError, k.check, x, y, z, "2")
    check("string arg", e is not None and "param alpha" in str(e))
    e = raises(tilec.LaunchError, tilec.load, ptx, "tilec-meta 1\nkernel k\nthreads 0\n")
    check("bad metadata", e is not None and "metadata line 3" in str(e), str(e))
    arch = tilec.device_arch()
    check("device_arch without a GPU is None or sm_*", arch is None or arch.startswith("sm_"))


class _FakeTorch:
    """Stands in for torch in tilec._pack_torch (the direct DLTensor packing
    of torch CUDA tensors): dtypes, a strided layout and a Tensor class."""

    class version:
        hip = None

    strided, sparse = "strided", "sparse"
    float32, bfloat16, complex64 = "f32", "bf16", "c64"

    class Tensor:
        def __init__(self, shape, strides=None, dtype="f32", addr=0x7F0000002000, device=0, layout="strided"):
            self.shape, self.dtype, self.layout, self._addr, self._dev = tuple(shape), dtype, layout, addr, device
            self._strides = tuple(strides) if strides else tuple(
                _prod(shape[i + 1:]) for i in range(len(shape)))
            self.is_cuda = True

        def dim(self):
            return len(self.shape)

        def stride(self):
            return self._strides

        def data_ptr(self):
            return self._addr

        def get_device(self):
            return self._dev


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def test_torch_packing():
    """What _pack_torch writes is what the runtime reads: validated against
    the reference kernel's metadata (no GPU), field by field."""
    with open(REF + ".ptx") as f:
        ptx = f.read()
    with open(REF + ".meta") as f:
        meta = f.read()
    k = tilec.load(ptx, meta).vadd
    T = _FakeTorch
    x, y, z = T.Tensor([1000]), T.Tensor([1000], addr=0x7F0000003000), T.Tensor([1000], addr=0x7F0000004000)
    packed, keep = tilec._pack_torch(T, (x, y, z, 2.0))
    k._check(packed, 4)
    check("packed torch args pass validation", True)
    args = ctypes.cast(packed, ctypes.POINTER(_lib.TilertArg))
    dl = ctypes.cast(args[1].u.tensor, ctypes.POINTER(_lib.DLTensor)).contents
    check("packed DLTensor fields", (dl.data, dl.device.device_type, dl.device.device_id, dl.ndim, dl.dtype.code,
                                     dl.dtype.bits, dl.dtype.lanes, dl.shape[0], dl.strides[0], dl.byte_offset)
          == (0x7F0000003000, 2, 0, 1, 2, 32, 1, 1000, 1, 0))
    check("packed scalar", args[3].kind == _lib.TILERT_ARG_FLOAT and args[3].u.f == 2.0)
    packed, keep = tilec._pack_torch(T, (x, T.Tensor([999]), z, 1))
    e = raises(tilec.LaunchError, k._check, packed, 4)
    check("packed: named dim mismatch", e is not None and "param Y dim 0 (N) is 999 but param X dim 0 says 1000"
          in str(e), str(e))
    check("packed int scalar", ctypes.cast(packed, ctypes.POINTER(_lib.TilertArg))[3].kind == _lib.TILERT_ARG_INT)
    packed, keep = tilec._pack_torch(T, (x, T.Tensor([1000], strides=[2]), z, 1.0))
    e = raises(tilec.LaunchError, k._check, packed, 4)
    check("packed: strided view", e is not None and "param Y: innermost stride is 2" in str(e), str(e))
    packed, keep = tilec._pack_torch(T, (x, T.Tensor([1000], dtype="bf16"), z, 1.0))
    e = raises(tilec.LaunchError, k._check, packed, 4)
    check("packed: dtype", e is not None and "param Y: tensor dtype is bfloat16" in str(e), str(e))
    packed, keep = tilec._pack_torch(T, (x, y, T.Tensor([1000], device=1), 1.0))
    e = raises(tilec.LaunchError, k._check, packed, 4)
    check("packed: two devices", e is not None and "param Z is on cuda:1 but param X is on cuda:0" in str(e), str(e))
    # what the direct packing leaves to the DLPack export
    check("complex dtype is exported", tilec._pack_torch(T, (x, T.Tensor([4], dtype="c64"))) is None)
    check("sparse layout is exported", tilec._pack_torch(T, (x, T.Tensor([4], layout="sparse"))) is None)
    check("other objects are exported", tilec._pack_torch(T, (x, FakeTensor([4]))) is None)
    check("int beyond 64 bits is left to the export path", tilec._pack_torch(T, (x, 1 << 70)) is None)


def test_defines():
    class FakeDtype:
        def __str__(self):
            return "torch.bfloat16"
    dv = tilec._define_value
    check("define values", (dv("a", True), dv("b", 64), dv("c", 1.5), dv("d", "f16"),
                            dv("e", FakeDtype())) == ("true", "64", "1.5", "f16", "bf16"))
    check("bad define type", raises(TypeError, dv, "x", object()) is not None)


def test_compile_errors():
    src = "kernel k(X: global f32[N]) grid(1) {\n  let = ;\n}\n"
    e = raises(tilec.CompileError, tilec.compile, src, arch="sm_86")
    check("syntax error raises CompileError", e is not None, repr(e))
    if e is None:
        return
    check("message has <string>:line:col: error:",
          re.search(r"<string>:2:\d+: error:", str(e)) is not None, str(e))
    check("diagnostics records", any(d[0] == "error" and d[2] == 2 for d in e.diagnostics),
          repr(e.diagnostics))
    good = "kernel k<B: int = 4>(X: global f32[N]) grid(1) { }\n"
    e = raises(tilec.CompileError, tilec.compile, good, arch="sm_86", NOPE=3)
    check("unknown define raises CompileError", e is not None and "NOPE" in str(e), repr(e))
    e = raises(tilec.CompileError, tilec.compile, good, arch="sm_86", pass_options={"nope.opt": 1})
    check("unknown pass option raises CompileError", e is not None and "unknown pass option 'nope.opt'" in str(e),
          repr(e))
    e = raises(tilec.CompileError, tilec.compile, good, arch="sm_86", pass_options="target.smem-per-block=on")
    check("malformed pass option raises CompileError", e is not None and "pass option target.smem-per-block" in str(e),
          repr(e))
    path = os.path.join(ROOT, "examples", "does_not_exist.tile")
    e = raises(tilec.CompileError, tilec.compile, src, arch="sm_99")
    check("unknown arch raises CompileError", e is not None, repr(e))
    path = os.path.join(ROOT, "examples", "does_not_exist.tile")
    e = raises(FileNotFoundError, tilec.compile, path, arch="sm_86")
    check("missing .tile path raises FileNotFoundError", e is not None and e.filename == path, repr(e))
    e = raises(FileNotFoundError, tilec.compile, pathlib.Path(path), arch="sm_86")
    check("missing PathLike raises FileNotFoundError", e is not None, repr(e))


def test_package():
    check("__version__ is the library's", tilec.__version__ == tilec._lib.tilec().tilec_version().decode().split()[0],
          tilec.__version__)
    check("examples are package data", os.path.isfile(tilec.example_path("attention")), tilec.example_path("attention"))
    check("tilec.attention reads the package's example", "kernel attention" in tilec._attention.source("bf16"))


def test_cache():
    """The compile cache from Python (docs/cache.md): memory by default, disk
    in a folder of our own, cleared by clear_cache()."""
    import tempfile
    src = "kernel k<B: int = 4>(X: global f32[N]) grid(1) { }\n"
    with tempfile.TemporaryDirectory() as d:
        a = tilec.compile(src, arch="sm_86", cache="disk", cache_dir=d, B=8)
        b = tilec.compile(src, arch="sm_86", cache="disk", cache_dir=d, B=8)
        check("first compile is compiled", a.cached is None, repr(a.cached))
        check("second is a memory hit with the same PTX", b.cached == "memory" and b.ptx == a.ptx, repr(b.cached))
        entries = [f for f in os.listdir(d) if f.endswith(".tce")]
        check("one entry on disk", len(entries) == 1, repr(os.listdir(d)))
        tilec.clear_cache(d)
        check("clear_cache empties the folder", not [f for f in os.listdir(d) if f.endswith(".tce")],
              repr(os.listdir(d)))
        c = tilec.compile(src, arch="sm_86", cache="disk", cache_dir=d, B=8)
        check("after clearing it compiles again", c.cached is None, repr(c.cached))
        d2 = tilec.compile(src, arch="sm_86", cache="off", B=8)
        check("cache='off' compiles", d2.cached is None, repr(d2.cached))
        e = tilec.compile(src, arch="sm_86", cache="memory", B=16)
        check("another define misses", e.cached is None, repr(e.cached))
        check("a bad cache mode raises ValueError", raises(ValueError, tilec.compile, src, cache="sometimes") is not None)


def test_attention_variants(have_cc):
    from tilec import _attention as A
    check("compile args: the device's facts, the sizes, pins only when given",
          A.compile_args(128, True, 4096, None, 232448, 132)
          == ({"target.smem-per-block": 232448, "target.sms": 132}, {"N": 4096, "NK": 4096},
              {"D": 128, "CAUSAL": True}), A.compile_args(128, True, 4096, None, 232448, 132))
    check("compile args: unknown device, key length, pins, clamped smem",
          A.compile_args(64, False, 100, 7, None, None, 64, 32)
          == ({}, {"N": 100, "NK": 7}, {"D": 64, "CAUSAL": False, "BM": 64, "BN": 32})
          and A.compile_args(64, False, 1, smem=10**6)[0] == {"target.smem-per-block": A.SMEM_OPTION_MAX})
    check("variant names", (A.variant_name("bf16", "sm_86", 64, True, 1024),
                            A.variant_name("f16", "sm_90a", 128, False, 4096, 512, 128, 64))
          == ("attn_bf16_sm_86_d64_c_n1024_k1024", "attn_f16_sm_90a_d128_f_n4096_k512_m128_b64"))
    check("pass option list text", (tilec.option_list(None), tilec.option_list({"target.smem-per-block": 1024}),
                                    tilec.option_list("target.smem-per-block=1"))
          == (None, "target.smem-per-block=1024", "target.smem-per-block=1"))
    if not have_cc:
        return
    # What the compiler chooses, seen in the PTX: short key rows get O
    # staged through shared memory (16-byte stores), long ones the fragment
    # stores; one compiled module per call shape.
    short = A.kernel(64, "bf16", False, arch="sm_86", n=4096, nk=512)
    long_ = A.kernel(64, "bf16", False, arch="sm_86", n=4096, nk=8192)
    check("short rows: 16-byte O stores", "st.global.v4.b32" in short.ptx and short is not long_)
    check("long rows: fragment O stores", "st.global.v4.b32" not in long_.ptx)
    check("variant cache", A.kernel(64, "bf16", False, arch="sm_86", n=4096, nk=512) is short)
    check("causal: its own rule (at most 16 key blocks at D = 64)",
          "st.global.v4.b32" in A.kernel(64, "bf16", True, arch="sm_86", n=2048, smem=232448).ptx
          and "st.global.v4.b32" not in A.kernel(64, "bf16", True, arch="sm_86", n=4096, smem=232448).ptx)
    big = A.kernel(128, "bf16", False, arch="sm_86", n=4096, smem=232448)
    check("256-row tile from sm_86 PTX for a device with 227 KB: 8 warps, decoupled turns",
          ".target sm_86" in big.ptx and "@p cp.async.wait_group 0;" in big.ptx and "@p bar.sync 1, 256;" in big.ptx
          and big is not A.kernel(128, "bf16", False, arch="sm_86", n=4096))
    persistent = A.kernel(128, "bf16", False, arch="sm_86", n=4096, smem=232448, sms=132)
    check("with the SM count: a persistent grid of 132 blocks", "grid 132 " in persistent.meta, persistent.meta)
    pinned = A.kernel(128, "bf16", False, 128, 64, arch="sm_86", n=4096, smem=232448, sms=132)
    check("a pinned 128-row tile: no persistent grid", "grid 132 " not in pinned.meta, pinned.meta)
    src = os.path.join(ROOT, "examples", "attention.tile")
    rep = tilec.compile(src, arch="sm_86", report=True, dims={"N": 2048, "NK": 2048}, D=128, CAUSAL=True).report
    check("the report says what the compiler chose and why", "tiles: @attention" in rep and "longest" in rep, rep)


def main():
    try:
        _lib.tilert()
        have_rt = True
    except OSError as e:
        print("skip runtime tests: %s" % e)
        have_rt = False
    try:
        _lib.tilec()
        have_cc = True
    except OSError as e:
        print("skip compile tests: %s" % e)
        have_cc = False
    if not have_rt:
        return 77
    test_runtime_side()
    test_torch_packing()
    test_defines()
    if have_cc:
        test_compile_errors()
        test_package()
        test_cache()
    test_attention_variants(have_cc)
    print("%d failure(s)" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
