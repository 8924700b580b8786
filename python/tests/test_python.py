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

    _next = 0x7F1000000000   # each tensor its own made-up range (tensor params must not overlap)

    def __init__(self, shape, code=2, bits=32, device_type=2, addr=None):
        if addr is None:
            addr, FakeTensor._next = FakeTensor._next, FakeTensor._next + 0x10000000
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


def ref_module():
    """The reference vector-add module (REF's PTX and metadata), loaded from
    their text: no GPU needed until a launch."""
    with open(REF + ".ptx") as f:
        ptx = f.read()
    with open(REF + ".meta") as f:
        meta = f.read()
    return tilec.load(ptx, meta)


def test_runtime_side():
    with open(REF + ".ptx") as f:
        ptx = f.read()      # also given with bad metadata below
    with open(REF + ".meta") as f:
        meta = f.read()
    mod = tilec.load(ptx, meta)
    check("two kernels", [k.name for k in mod.kernels] == ["vadd", "vadd_c2"])
    k = mod.vadd
    check("params", repr(k.params) == "[X: f32[N], Y: f32[N], Z: f32[N], alpha: f32]", repr(k.params))
    check("threads/grid", k.threads == 128 and k.grid_rule == "N 128 cdiv ; 1 ; 1")
    e = raises(TypeError, mod)
    check("module with two kernels is not callable", e is not None and "2 kernels" in str(e))
    x, y, z = (FakeTensor([1000], addr=0x7F0000001000), FakeTensor([1000], addr=0x7F0000002000),
               FakeTensor([1000], addr=0x7F0000003000))
    k.check(x, y, z, 2.0)
    check("valid launch passes validation", True)
    check("written params", [p.written for p in k.params] == [False, False, True, False],
          [p.written for p in k.params])
    k.check(x, x, z, 2.0)
    check("inputs may share memory", True)
    e = raises(tilec.LaunchError, k.check, x, y, x, 2.0)
    check("in place refused", e is not None and "param Z (written by the kernel) starts at the same address "
          "as param X (0x7f0000001000): the kernel cannot work in place" in str(e), str(e))
    e = raises(tilec.LaunchError, k.check, x, y, FakeTensor([1000], addr=0x7F0000002F00), 2.0)
    check("overlap refused", e is not None and "param Z (written by the kernel) overlaps param Y: Z spans "
          "bytes 0x7f0000002f00..0x7f0000003e9f, Y 0x7f0000002000..0x7f0000002f9f" in str(e), str(e))
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


def test_tensor_maps():
    tmap = os.path.join(ROOT, "tests", "gpu", "tmap_ref")
    with open(tmap + ".ptx") as f:
        ptx = f.read()
    with open(tmap + ".meta") as f:
        meta = f.read()
    mod = tilec.load(ptx, meta)
    check("tmap kernels", [k.name for k in mod.kernels] == ["copy_tma", "copy_tma_sw128", "copy_plain"])
    check("fallback", mod.copy_tma.fallback == "copy_plain" and mod.copy_plain.fallback is None)
    check("num_tmaps", mod.copy_tma.num_tmaps == 1 and mod.copy_plain.num_tmaps == 0)
    check("no variant before a launch", mod.copy_tma.last_variant is None)
    e = raises(TypeError, mod)
    check("two entry kernels and a fallback: not callable",
          e is not None and "2 kernels (copy_tma, copy_tma_sw128)" in str(e), str(e))
    x, y = FakeTensor([100, 200], addr=0x7F0000001000), FakeTensor([100, 200], addr=0x7F0000100000)
    mod.copy_tma.check(x, y)
    mod.copy_tma.check(FakeTensor([100, 200], addr=0x7F0000001004), y)   # misaligned: the fallback takes it
    check("a misaligned view passes validation (fallback)", True)
    e = raises(tilec.LaunchError, mod.copy_tma.check, FakeTensor([100, 200], addr=0x7F0000001002), y)
    check("both refuse", e is not None and "its fallback refuses the arguments too" in str(e), str(e))
    # one kernel and its fallback: the module calls the kernel
    solo = tilec.load(ptx, meta.split("kernel copy_tma_sw128")[0] + "kernel copy_plain"
                      + meta.split("kernel copy_plain")[1])
    check("solo kernels", [k.name for k in solo.kernels] == ["copy_tma", "copy_plain"])
    e = raises(tilec.LaunchError, solo, x)
    check("a module of one kernel and its fallback is callable",
          e is not None and "kernel copy_tma: takes 2 arguments (X, Y), got 1" in str(e), str(e))


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
    k = ref_module().vadd
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


class _FakeTorchC:
    """torch._C's current device and stream, as _Fast reads them."""
    device = 0

    @staticmethod
    def _cuda_getDevice():
        return _FakeTorchC.device

    @staticmethod
    def _cuda_getCurrentRawStream(dev):
        return 0x5000 + dev


def _packed_check(k, addr, n):
    """tilert_check_args on a packed tilert_arg array at addr: the runtime's message, or ""."""
    err = ctypes.create_string_buffer(1024)
    st = _lib.tilert().tilert_check_args(k._meta, ctypes.cast(addr, ctypes.POINTER(_lib.TilertArg)), n,
                                         err, len(err), None)
    return err.value.decode() if st else ""


def _dl_at(addr, i):
    args = ctypes.cast(addr, ctypes.POINTER(_lib.TilertArg))
    return ctypes.cast(args[i].u.tensor, ctypes.POINTER(_lib.DLTensor)).contents


def test_fast_path():
    """The packed path of a loaded kernel (_Fast): one buffer per argument
    signature and thread, the pointers and scalars of each call written
    into it; what the runtime reads there passes or fails its checks as
    the arguments do. No GPU: the arrays are validated, not launched."""
    import threading
    k = ref_module().vadd
    T = _FakeTorch
    T._C = _FakeTorchC
    fast = tilec._Fast(None, 4, T)
    x, y, z = T.Tensor([1000]), T.Tensor([1000], addr=0x7F0000003000), T.Tensor([1000], addr=0x7F0000004000)
    check("fast: not for an int beyond 64 bits, first", fast.pack((x, y, z, 1 << 70)) is None)
    p = fast.pack((x, y, z, 7))
    check("fast: then an int of that signature", p is not None and _packed_check(k, p[0], 4) == "" and
          ctypes.cast(p[0], ctypes.POINTER(_lib.TilertArg))[3].u.i == 7)
    p = fast.pack((x, y, z, 2.0))
    check("fast: packed", p is not None and p[1] == 0x5000, repr(p))
    addr = p[0]
    check("fast: passes the runtime's checks", _packed_check(k, addr, 4) == "")
    z2 = T.Tensor([1000], addr=0x7F0000008000)
    p = fast.pack((y, x, z2, 0.5))
    dl = [_dl_at(addr, i) for i in range(3)]
    args = ctypes.cast(addr, ctypes.POINTER(_lib.TilertArg))
    check("fast: the same signature reuses its buffer, with this call's pointers and scalar",
          p[0] == addr and [d.data for d in dl] == [0x7F0000003000, 0x7F0000002000, 0x7F0000008000]
          and args[3].kind == _lib.TILERT_ARG_FLOAT and args[3].u.f == 0.5
          and (dl[0].ndim, dl[0].shape[0], dl[0].strides[0], dl[0].dtype.bits, dl[0].device.device_type)
          == (1, 1000, 1, 32, 2))
    check("fast: still valid", _packed_check(k, addr, 4) == "")
    p = fast.pack((x, y, x, 1.0))
    check("fast: in place is the runtime's error",
          "param Z (written by the kernel) starts at the same address as param X" in _packed_check(k, p[0], 4))
    p = fast.pack((x, y, z, 3))
    check("fast: an int scalar is another signature", p[0] != addr and
          ctypes.cast(p[0], ctypes.POINTER(_lib.TilertArg))[3].kind == _lib.TILERT_ARG_INT and
          ctypes.cast(p[0], ctypes.POINTER(_lib.TilertArg))[3].u.i == 3 and _packed_check(k, p[0], 4) == "")
    p = fast.pack((x, T.Tensor([999]), z, 2.0))
    check("fast: another shape is another signature, and the runtime's error",
          p[0] != addr and "param Y dim 0 (N) is 999 but param X dim 0 says 1000" in _packed_check(k, p[0], 4))
    p = fast.pack((x, T.Tensor([1000], strides=[2]), z, 2.0))
    check("fast: strides", "param Y: innermost stride is 2" in _packed_check(k, p[0], 4))
    check("fast: a bool scalar", _packed_check(k, fast.pack((x, y, z, True))[0], 4) == "")
    check("fast: not for another argument count", fast.pack((x, y, z)) is None)
    check("fast: not for a complex dtype", fast.pack((x, T.Tensor([4], dtype="c64"), z, 1.0)) is None)
    check("fast: not for a sparse layout", fast.pack((x, T.Tensor([4], layout="sparse"), z, 1.0)) is None)
    check("fast: not for other objects", fast.pack((x, FakeTensor([1000]), z, 1.0)) is None)
    check("fast: not for numpy-like scalars", fast.pack((x, y, z, _Real(2.0))) is None)
    check("fast: not for an int beyond 64 bits", fast.pack((x, y, z, 1 << 70)) is None)
    _FakeTorchC.device = 1
    check("fast: not while another device is current", fast.pack((x, y, z, 2.0)) is None)
    _FakeTorchC.device = 0
    d1 = (T.Tensor([1000], device=1), T.Tensor([1000], device=1, addr=0x7F0000003000),
          T.Tensor([1000], device=1, addr=0x7F0000004000), 2.0)
    _FakeTorchC.device = 1
    p = fast.pack(d1)
    check("fast: the tensors' device's stream", p is not None and p[1] == 0x5001 and _dl_at(p[0], 0).device.device_id == 1)
    _FakeTorchC.device = 0
    other = []
    t = threading.Thread(target=lambda: other.append(fast.pack((x, y, z, 2.0))))
    t.start()
    t.join()
    check("fast: a buffer per thread", other[0] is not None and other[0][0] != addr)
    before = len(fast.tls.__dict__)
    for n in range(tilec._Fast.MAX_SIGNATURES + 1):
        fast.pack((T.Tensor([n + 1]), T.Tensor([n + 1], addr=0x7F0000100000), T.Tensor([n + 1], addr=0x7F0000200000), 1.0))
    check("fast: at most MAX_SIGNATURES buffers a thread", before > 0 and len(fast.tls.__dict__) <= tilec._Fast.MAX_SIGNATURES)


class _Real:
    """A number that is neither int nor float (as numpy's scalars)."""

    def __init__(self, v):
        self.v = v

    def __float__(self):
        return self.v


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


def test_warnings():
    """Compiler warnings: TilecWarning through the warnings module, turned
    off by name, errors with werror."""
    import warnings
    src = ("kernel k(X: global f32[N], Y: global f32[N]) grid(cdiv(N, 64)) {\n"
           "  let i = block.x * 64;\n  tile t = X[i : +64];\n}\n")
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        tilec.compile(src, arch="sm_86", cache="off")
    msgs = [str(w.message) for w in got if issubclass(w.category, tilec.TilecWarning)]
    check("warnings issued as TilecWarning", len(msgs) == 2 and "<string>:1:28: tensor param 'Y' is never used "
          "[-Wunused-param]" in msgs and any("[-Wdead-tile]" in m for m in msgs), repr(msgs))
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        tilec.compile(src, arch="sm_86", cache="off", warnings_off=["dead-tile"])
    msgs = [str(w.message) for w in got if issubclass(w.category, tilec.TilecWarning)]
    check("warnings_off by name", len(msgs) == 1 and "unused-param" in msgs[0], repr(msgs))
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        tilec.compile(src, arch="sm_86", cache="off", warnings_off="all")
    check("warnings_off='all'", not got, repr([str(w.message) for w in got]))
    e = raises(tilec.CompileError, tilec.compile, src, arch="sm_86", cache="off", werror=True)
    check("werror raises CompileError", e is not None and "[-Werror,-Wunused-param]" in str(e), repr(e))
    m = tilec.compile(tilec.example_path("vector_add"), arch="sm_86", cache="off", lineinfo=True)
    check("lineinfo=True gives .loc lines", "\t.loc\t1 7 " in m.ptx and "vector_add.tile\"" in m.ptx, m.ptx[-300:])
    check("unknown warning name raises ValueError",
          raises(ValueError, tilec.compile, src, arch="sm_86", warnings_off=["nope"]) is not None)


def test_arch_choice():
    """The automatic target for each compute capability from 8.0 up."""
    rows = {(8, 0): "sm_80", (8, 6): "sm_86", (8, 9): "sm_89", (9, 0): "sm_90a", (10, 0): "sm_100a",
            (10, 3): "sm_100f", (11, 0): "sm_90", (12, 0): "sm_120", (12, 1): "sm_120"}
    got = {cc: tilec.arch_for_capability(*cc) for cc in rows}
    check("arch_for_capability", got == rows, repr(got))
    check("below 8.0 raises ValueError", raises(ValueError, tilec.arch_for_capability, 7, 5) is not None)


def _mat(rows, cols, code, values):
    """A rows x cols buffer of array type code holding values (row-major)."""
    import array
    return memoryview(array.array(code, values)).cast("B").cast(code, (rows, cols))


def _bf16_bits(x):
    import struct as st
    u = st.unpack("<I", st.pack("<f", x))[0]
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF   # round to nearest even


def _bf16_value(h):
    import struct as st
    return st.unpack("<f", st.pack("<I", h << 16))[0]


def test_interpret():
    """The interpreter mode on host buffers against plain-Python references:
    vector_add over a partial last block, softmax in f32 and bf16 (16-bit
    patterns), layernorm, transpose over tiles; the launch checks; a kernel
    failing while running."""
    import array
    import math
    n = 2500
    x = array.array("f", [i * 0.5 for i in range(n)])
    y = array.array("f", [1.0 - i for i in range(n)])
    z = array.array("f", [-7.0] * n)
    tilec.interpret(tilec.example_path("vector_add"), x, y, z)
    check("interpret vector_add", list(z) == [a + b for a, b in zip(x, y)])

    rows, cols = 3, 50
    vals = [((i * 7 + j * 3) % 11) * 0.25 - 1.0 for i in range(rows) for j in range(cols)]
    ref = []
    for i in range(rows):
        r = vals[i * cols:(i + 1) * cols]
        e = [math.exp(v - max(r)) for v in r]
        ref += [v / sum(e) for v in e]
    m = tilec.compile(tilec.example_path("softmax"), interpret=True, T="f32", BLOCK=64)
    check("interpret module", isinstance(m, tilec.InterpModule) and m.ptx is None and "kernel @softmax" in m.tir,
          repr(m))
    X, Y = _mat(rows, cols, "f", vals), _mat(rows, cols, "f", [0.0] * (rows * cols))
    m(X, Y)
    got = [v for row in Y.tolist() for v in row]
    check("interpret softmax f32", max(abs(a - b) for a, b in zip(got, ref)) < 1e-6,
          repr(max(abs(a - b) for a, b in zip(got, ref))))
    mb = tilec.compile(tilec.example_path("softmax"), interpret=True, T="bf16", BLOCK=64)
    Xb = _mat(rows, cols, "H", [_bf16_bits(v) for v in vals])
    Yb = _mat(rows, cols, "H", [0] * (rows * cols))
    mb(Xb, Yb)
    got = [_bf16_value(h) for row in Yb.tolist() for h in row]
    check("interpret softmax bf16 (16-bit patterns)", max(abs(a - b) for a, b in zip(got, ref)) < 4e-3,
          repr(max(abs(a - b) for a, b in zip(got, ref))))

    w = array.array("f", [0.5 + 0.01 * j for j in range(cols)])
    b = array.array("f", [0.1 * (j % 3) for j in range(cols)])
    Yl = _mat(rows, cols, "f", [0.0] * (rows * cols))
    tilec.interpret(tilec.example_path("layernorm"), X, w, b, Yl, 1e-5, T="f32", BLOCK=64)
    lref = []
    for i in range(rows):
        r = vals[i * cols:(i + 1) * cols]
        mean = sum(r) / cols
        var = sum((v - mean) ** 2 for v in r) / cols
        lref += [(v - mean) / math.sqrt(var + 1e-5) * w[j] + b[j] for j, v in enumerate(r)]
    got = [v for row in Yl.tolist() for v in row]
    check("interpret layernorm", max(abs(a - b) for a, b in zip(got, lref)) < 1e-4,
          repr(max(abs(a - b) for a, b in zip(got, lref))))

    M, N = 40, 70   # 2 x 2 tiles of 32, partial at both edges
    A = _mat(M, N, "f", [float(i * N + j) for i in range(M) for j in range(N)])
    B = _mat(N, M, "f", [0.0] * (M * N))
    tilec.interpret(tilec.example_path("transpose"), A, B, BM=32, BN=32)
    check("interpret transpose", B.tolist() == [[float(i * N + j) for i in range(M)] for j in range(N)])

    e = raises(tilec.LaunchError, m, X, _mat(rows, cols, "d", [0.0] * (rows * cols)))
    check("interpret dtype check", e is not None and "param Y: tensor dtype is f64 but the kernel wants f32" in str(e),
          repr(e))
    e = raises(tilec.LaunchError, m, X, _mat(rows, cols - 1, "f", [0.0] * (rows * (cols - 1))))
    check("interpret dims check", e is not None and "dim 'N' is 49 here but 50" in str(e), repr(e))
    e = raises(tilec.LaunchError, m, X, 1.0)
    check("interpret number for a tensor", e is not None and "param Y: expected a rank-2 f32 tensor" in str(e), repr(e))
    src = "kernel d(X: global i32[N], Y: global i32[N], k: i32) grid(1) {\n  Y[0 : +4] = X[0 : +4] / k;\n}\n"
    xi, yi = array.array("i", [1, 2, 3, 4]), array.array("i", [0] * 4)
    tilec.interpret(src, xi, yi, 2)
    check("interpret scalar arg", list(yi) == [0, 1, 1, 2], repr(list(yi)))
    e = raises(tilec.LaunchError, tilec.interpret, src, xi, yi, 0)
    check("interpret failure names the line", e is not None and "<string>:2:" in str(e) and "division by zero" in str(e),
          repr(e))


def test_package():
    check("__version__ is the library's", tilec.__version__ == tilec._lib.tilec().tilec_version().decode().split()[0],
          tilec.__version__)
    check("examples are package data", os.path.isfile(tilec.example_path("attention")), tilec.example_path("attention"))
    check("tilec.attention reads the package's example", "kernel attention" in tilec._attention.source("bf16"))


def test_cache():
    """The compile cache from Python (docs/cache.md): memory by default, disk
    in a folder of our own, cleared by clear_cache()."""
    import tempfile
    src = "kernel k<B: int = 4>(_X: global f32[N]) grid(1) { }\n"
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
    # The default folder is the package's (libtilec reads no environment).
    with tempfile.TemporaryDirectory() as d:
        saved = {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "HOME")}
        try:
            os.environ["XDG_CACHE_HOME"] = d
            check("default_cache_dir follows XDG_CACHE_HOME", tilec.default_cache_dir() == os.path.join(d, "tilec"))
            f = tilec.compile(src, arch="sm_86", cache="disk", B=32)
            check("a disk cache without a folder uses the default one", f.cached is None and
                  [x for x in os.listdir(os.path.join(d, "tilec")) if x.endswith(".tce")], repr(f.cached))
            os.environ["XDG_CACHE_HOME"] = "relative"
            os.environ["HOME"] = d
            check("else HOME/.cache/tilec", tilec.default_cache_dir() == os.path.join(d, ".cache", "tilec"))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


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
    check("the roofline names the dims it lacks",
          "kernel attention (sm_86): dims missing: Z, H, HK (give them with --dim" in rep, rep)
    rep = tilec.compile(src, arch="sm_86", report=True, dims={"Z": 1, "H": 8, "HK": 8, "N": 2048, "NK": 2048},
                        D=128, CAUSAL=True).report
    check("the report predicts the roofline (causal: summed over every block)",
          "kernel attention (sm_86), predicted" in rep and "summed over all" in rep and "bound: " in rep, rep)


def test_tune_runtime():
    """Autotuning's pieces that need no compiler and no GPU: shape classes
    (tilert_shape_class) and Python's copy of the rule, the decision store."""
    import tempfile
    from tilec import _tune
    k = ref_module().vadd
    check("kernel dims", k.dims == ["N"], repr(k.dims))
    got = {n: tilec.shape_class(k, FakeTensor([n]), FakeTensor([n]), FakeTensor([n]), 1.0)
           for n in (0, 1, 2, 3, 1000, 1024, 1025, 4096, 100000)}
    check("shape classes: the next power of two", got[1000] == "N=1024" and got[1025] == "N=2048"
          and got[0] == "N=0" and got[1] == "N=1" and got[3] == "N=4", repr(got))
    check("python's bucket is the runtime's", all(v == "N=%d" % _tune.bucket(n) for n, v in got.items()))
    check("class_text / class_dims", _tune.class_text(["M", "N"], {"N": 1000, "M": 3}) == "M=4,N=1024"
          and _tune.class_dims("M=4,N=0,K=8") == {"M": 4, "K": 8})
    e = raises(tilec.LaunchError, tilec.shape_class, k, FakeTensor([5]), FakeTensor([6]), FakeTensor([5]), 1.0)
    check("a refused launch has no class", e is not None and "param Y dim 0 (N) is 6" in str(e), str(e))
    with tempfile.TemporaryDirectory() as d:
        key = "tilec-tune 1|device=X|class=N=1024"
        check("no decision yet", _tune.load_decision(d, key) is None)
        _tune.store_decision(os.path.join(d, "sub"), key, "index=1 defines=BM=128 ms=0.1,0.2")
        v = _tune.load_decision(os.path.join(d, "sub"), key)
        check("a decision stored is read back", v == "index=1 defines=BM=128 ms=0.1,0.2", repr(v))
        check("parsed", _tune.parse_decision(v) == (1, "BM=128") and _tune.parse_decision("junk") is None)
        check("another key misses", _tune.load_decision(os.path.join(d, "sub"), key + "0") is None)
        check("a newline in a value is refused", raises(OSError, _tune.store_decision, d, key, "a\nb") is not None)


def test_tune_compiler():
    """The compiler's candidates from Python, compile(autotune=True), the
    decision's key, and a folder of precompiled candidates."""
    import tempfile
    from tilec import _tune
    gemm = os.path.join(ROOT, "examples", "gemm.tile")
    c = tilec.candidates(gemm, arch="sm_90a")
    check("gemm's candidates, the choice first", c[0] == {"BM": 256, "BN": 128, "BK": 64} and len(c) == 4, repr(c))
    c = tilec.candidates(os.path.join(ROOT, "examples", "attention.tile"), arch="sm_90a", D=64, BM=128)
    check("a pinned param is left out", c == [{"BN": 128}, {"BN": 64}], repr(c))
    check("no auto param: the kernel as written", tilec.candidates(os.path.join(ROOT, "examples", "vector_add.tile"),
                                                                    arch="sm_86") == [{}])
    e = raises(tilec.CompileError, tilec.candidates, gemm, arch="sm_86", Q=1)
    check("bad define: CompileError", e is not None and "unknown define 'Q'" in str(e), str(e))
    a = tilec.compile(gemm, arch="sm_86", pass_options={"tiles.candidate": 2})
    b = tilec.compile(gemm, arch="sm_86", BM=128, BN=128, BK=64)
    check("candidate 2 compiles what its defines give", a.ptx == b.ptx)
    t = tilec.compile(gemm, arch="sm_90a", autotune=True, pass_options={"target.sms": 132})
    check("compile(autotune=True) is a Tuned", isinstance(t, tilec.Tuned), repr(t))
    check("autotune takes no dims", raises(TypeError, tilec.compile, gemm, autotune=True, dims={"M": 1}) is not None)
    k0 = t._key("NVIDIA H200", "9.0", "M=4096,K=4096,N=4096")
    others = [t._key("NVIDIA H100", "9.0", "M=4096,K=4096,N=4096"), t._key("NVIDIA H200", "9.1", "M=4096,K=4096,N=4096"),
              t._key("NVIDIA H200", "9.0", "M=4096,K=4096,N=8192"),
              tilec.Tuned(gemm, arch="sm_90a", pass_options={"target.sms": 100})._key("NVIDIA H200", "9.0",
                                                                                      "M=4096,K=4096,N=4096"),
              tilec.Tuned(gemm, arch="sm_90a", pass_options={"target.sms": 132}, T="f16")._key(
                  "NVIDIA H200", "9.0", "M=4096,K=4096,N=4096"),
              tilec.Tuned(gemm.replace("gemm.tile", "attention.tile"), arch="sm_90a",
                          pass_options={"target.sms": 132})._key("NVIDIA H200", "9.0", "M=4096,K=4096,N=4096"),
              tilec.Tuned(gemm, arch="sm_100a", pass_options={"target.sms": 132})._key(
                  "NVIDIA H200", "9.0", "M=4096,K=4096,N=4096")]
    check("the key names device, capability, class, options, params, source and arch: each change is another key",
          len(set(others + [k0])) == len(others) + 1 and
          tilec.compile(gemm, arch="sm_90a", autotune=True, pass_options={"target.sms": 132})._key(
              "NVIDIA H200", "9.0", "M=4096,K=4096,N=4096") == k0, repr(others))
    with tempfile.TemporaryDirectory() as d:
        done = tilec.precompile_candidates(gemm, d, [{"M": 4000, "N": 4096, "K": 4096}, {"M": 100, "N": 64, "K": 64}],
                                           "sm_90a", pass_options={"target.sms": 132})
        check("precompiled: every candidate of each class", [x[:3] for x in done[:2]] ==
              [("M=4096,K=4096,N=4096", 0, "BM=256,BN=128,BK=64"), ("M=4096,K=4096,N=4096", 1, "BM=128,BN=256,BK=64")]
              and len(done) == 8 and os.path.isfile(os.path.join(d, "cand_1_3.meta")), repr(done))
        u = tilec.Tuned(gemm, arch="sm_90a", pass_options={"target.sms": 132}, ptx_dir=d)
        check("a Tuned reads the folder", len(u._index["entries"]) == 8 and u._probe_kernel().dims == ["M", "K", "N"])
        e = raises(ValueError, tilec.Tuned, gemm, arch="sm_90a", pass_options={"target.sms": 100}, ptx_dir=d)
        check("a folder made for other options is refused", e is not None and "options" in str(e), str(e))
        e = raises(ValueError, tilec.Tuned, gemm, arch="sm_90a", pass_options={"target.sms": 132}, T="f16", ptx_dir=d)
        check("... or other params", e is not None and "defines" in str(e), str(e))
        # decisions live in the compile cache's folder; clear_cache removes them
        _tune.store_decision(d, "k", "index=0")
        tilec.clear_cache(d)
        check("clear_cache removes the tuning decisions", _tune.load_decision(d, "k") is None
              and not [f for f in os.listdir(d) if f.endswith(".tune")])
    check("a missing folder", raises(FileNotFoundError, tilec.Tuned, gemm, arch="sm_90a",
                                     ptx_dir="/nonexistent/tilec") is not None)


def test_tune_flow():
    """Tuned's first call of a shape class, the GPU's parts stood in for
    (loading the modules, the timing and the device's name): every
    candidate compiled for the class's sizes, the fastest kept and stored
    in the cache folder, later calls and a new Tuned on that folder taking
    it without timing, a changed key timing again; the same from a folder
    of precompiled candidates."""
    import tempfile
    from tilec import _tune
    gemm = os.path.join(ROOT, "examples", "gemm.tile")
    timed = []

    def fake_autotune(ks, *args, **kw):
        timed.append(len(ks))
        r = _tune.TuneResult.__new__(_tune.TuneResult)
        r.ms = [1.0 + abs(i - 2) for i in range(len(ks))]   # candidate 2 is the fastest
        r.min_ms, r.best, r.launches, r.rounds, r.wall_ms = r.ms, 2, 7, 5, 1.0
        return r
    saved = (tilec.Module._loaded_kernel, _tune.autotune, tilec.Tuned.key, tilec._get_driver)
    tilec.Module._loaded_kernel = lambda self, i: None
    tilec._get_driver = lambda: None
    _tune.autotune = fake_autotune
    tilec.Tuned.key = lambda self, cls, device=0: self._key("Fake GPU", "9.0", cls)
    try:
        with tempfile.TemporaryDirectory() as d:
            args = (FakeTensor([1000, 512], code=4, bits=16), FakeTensor([512, 384], code=4, bits=16),
                    FakeTensor([1000, 384], code=4, bits=16))
            t = tilec.compile(gemm, arch="sm_86", autotune=True, cache="disk", cache_dir=d)
            k = t.kernel_for(*args)
            info = t.last_tuning
            check("first call: 4 candidates compiled for the class and timed, the fastest kept",
                  timed == [4] and info.shape_class == "M=1024,K=512,N=512" and info.best == 2
                  and not info.from_cache and info.candidates[2] == "BM=128,BN=128,BK=64"
                  and t.decisions == {"M=1024,K=512,N=512": (2, "BM=128,BN=128,BK=64")}, repr(info))
            check("the kept kernel is candidate 2 compiled for the class's sizes",
                  k._module.ptx == tilec.compile(gemm, arch="sm_86", BM=128, BN=128, BK=64,
                                                 dims={"M": 1024, "K": 512, "N": 512}).ptx)
            check("the decision is in the cache folder", [f for f in os.listdir(d) if f.endswith(".tune")]
                  and _tune.load_decision(d, info.key).startswith("index=2 defines=BM=128,BN=128,BK=64 ms="))
            check("a later call of the class: the same kernel, nothing timed",
                  t.kernel_for(FakeTensor([1001, 512], code=4, bits=16), args[1],
                               FakeTensor([1001, 384], code=4, bits=16)) is k and t.last_tuning is info
                  and timed == [4])
            u = tilec.compile(gemm, arch="sm_86", autotune=True, cache="disk", cache_dir=d)
            u.kernel_for(*args)
            check("a new Tuned on the folder takes the decision, nothing timed",
                  u.last_tuning.from_cache and u.last_tuning.best == 2 and timed == [4], repr(u.last_tuning))
            v = tilec.compile(gemm, arch="sm_86", autotune=True, cache="disk", cache_dir=d, T="f16")
            v.kernel_for(*[FakeTensor(list(a.shape), code=2, bits=16) for a in args])
            check("another key (T = f16) times again", not v.last_tuning.from_cache and timed == [4, 4])
            w = tilec.compile(gemm, arch="sm_86", autotune=True, cache="memory")
            w.kernel_for(*args)
            check("a memory cache keeps no decision on disk", w.decision_dir is None and timed == [4, 4, 4])
            # the same from precompiled candidates
            p = os.path.join(d, "ptx")
            tilec.precompile_candidates(gemm, p, [{"M": 1000, "K": 512, "N": 384}], "sm_86")
            x = tilec.Tuned(gemm, arch="sm_86", ptx_dir=p, cache="disk", cache_dir=os.path.join(d, "dec2"))
            kx = x.kernel_for(*args)
            check("precompiled: timed, candidate 2 kept from its file", timed[-1] == 4 and x.last_tuning.best == 2
                  and kx._module.ptx == open(os.path.join(p, "cand_0_2.ptx")).read())
            y = tilec.Tuned(gemm, arch="sm_86", ptx_dir=p, cache="disk", cache_dir=os.path.join(d, "dec2"))
            y.kernel_for(*args)
            check("precompiled: the decision from the folder", y.last_tuning.from_cache and len(timed) == 4)
            e = raises(ValueError, x.kernel_for, FakeTensor([10, 16], code=4, bits=16),
                       FakeTensor([16, 16], code=4, bits=16), FakeTensor([10, 16], code=4, bits=16))
            check("precompiled: a class the folder lacks is an error naming the ones it has",
                  e is not None and "M=16,K=16,N=16" in str(e) and "M=1024,K=512,N=512" in str(e), str(e))
    finally:
        tilec.Module._loaded_kernel, _tune.autotune, tilec.Tuned.key, tilec._get_driver = saved


def test_plot_without_matplotlib():
    """tilec.plot imports without matplotlib (it loads it when a chart is
    drawn); where matplotlib is missing, drawing raises ImportError naming
    it (python/tests/test_plot.py draws where it is installed)."""
    import subprocess
    code = ("import sys, tilec, tilec.plot; print('matplotlib' in sys.modules)\n"
            "try:\n"
            "    import matplotlib\n"
            "except ImportError:\n"
            "    try:\n"
            "        tilec.plot.perf_report([], 'x', 'y', 'k', '/dev/null')\n"
            "    except ImportError as e:\n"
            "        print('ImportError', 'matplotlib' in str(e))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=os.path.join(HERE, "..")))
    lines = r.stdout.split()
    check("import tilec.plot loads no matplotlib", r.returncode == 0 and lines[:1] == ["False"], r.stdout + r.stderr)
    if len(lines) > 1:
        check("drawing without matplotlib raises ImportError naming it", lines[1:] == ["ImportError", "True"],
              r.stdout)


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
    test_tensor_maps()
    test_torch_packing()
    test_fast_path()
    test_defines()
    test_arch_choice()
    test_tune_runtime()
    if have_cc:
        test_tune_compiler()
        test_tune_flow()
        test_compile_errors()
        test_warnings()
        test_interpret()
        test_package()
        test_cache()
    test_attention_variants(have_cc)
    test_plot_without_matplotlib()
    print("%d failure(s)" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
