"""tilec: compile tile-language kernels and launch them on CUDA tensors.

    import tilec
    k = tilec.compile("attention.tile", BLOCK_M=128, CAUSAL=True, T=torch.bfloat16)
    k(q, k_, v, out, scale)                  # tensors via DLPack, scalars as numbers

ctypes over libtilec (the compiler) and libtilert (the runtime); no build step.
See docs/python.md.
"""
import ctypes
import errno
import numbers
import os
import struct
import sys
import threading
import warnings as _warnings

from . import _lib
from ._lib import set_library_dir
from ._version import __version__

__all__ = ["compile", "load", "load_files", "device_arch", "arch_for_capability", "synchronize", "example_path",
           "set_library_dir", "__version__", "set_cache", "clear_cache", "default_cache_dir",
           "Module", "Kernel", "Param", "CompileError", "LaunchError", "TilecError", "TilecWarning",
           "WARNINGS", "interpret", "InterpModule"]

# The compiler's warnings, in bit order (tilec_warning in include/tilec.h;
# docs/language.md, "Warnings").
WARNINGS = ("unused-param", "dead-tile", "store-race")


class TilecError(Exception):
    """Base of the errors this package raises."""


class CompileError(TilecError):
    """The source did not compile. str() is the rendered diagnostics
    (file:line:col: error: message, source line, caret); .diagnostics holds
    (severity, file, line, col, message) tuples."""

    def __init__(self, text, diagnostics=(), status=None):
        super().__init__(text)
        self.diagnostics = list(diagnostics)
        self.status = status


class TilecWarning(UserWarning):
    """A warning of the compiler (file:line:col: warning: text [-WNAME]),
    issued through Python's warnings module by tilec.compile."""


class LaunchError(TilecError):
    """The runtime refused or failed a load or launch; the message is the
    runtime's (it names the param, metadata line or driver call)."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


# ---- the runtime side ---------------------------------------------------

_driver = None


def _rt_error(st, what=None):
    rt = _lib.tilert()
    msg = (rt.tilert_last_error() or b"").decode(errors="replace")
    if not msg:
        msg = rt.tilert_status_string(st).decode()
    return LaunchError(msg if what is None else "%s: %s" % (what, msg), st)


def _get_driver():
    """The process's tilert_driver (opened once, never closed)."""
    global _driver
    if _driver is None:
        rt = _lib.tilert()
        h = ctypes.c_void_p()
        st = rt.tilert_driver_open(ctypes.byref(h))
        if st:
            raise _rt_error(st)
        _driver = h
    return _driver


def arch_for_capability(major, minor):
    """The tilec target for compute capability major.minor (no GPU needed):
    the arch-specific target of exactly that capability (9.0 -> "sm_90a",
    10.0 -> "sm_100a"), else the family-portable one of its major version
    (10.x -> "sm_100f"), else the newest portable target not newer than it
    (8.0 -> "sm_80", 8.6-8.8 -> "sm_86", 8.9 -> "sm_89", 11.x -> "sm_90",
    12.x and later -> "sm_120"), whose PTX the driver compiles for later
    GPUs. ValueError below 8.0. tilec.compile compiles "sm_90" from here as
    the portable sm_90, not sm_90a."""
    buf = ctypes.create_string_buffer(32)
    if _lib.tilert().tilert_arch_for_capability(int(major), int(minor), buf, len(buf)):
        raise ValueError((_lib.tilert().tilert_last_error() or b"").decode())
    return buf.value.decode()


def device_arch(device=0):
    """The tilec target for CUDA device `device` (arch_for_capability of its
    compute capability: "sm_90a" on an H100/H200), or None without a driver
    or device, or for a GPU older than 8.0."""
    try:
        drv = _get_driver()
    except (LaunchError, OSError):
        return None
    buf = ctypes.create_string_buffer(32)
    if _lib.tilert().tilert_device_arch(drv, device, buf, len(buf)):
        return None
    return buf.value.decode()


def synchronize():
    """Wait for all work in the current CUDA context (cuCtxSynchronize)."""
    st = _lib.tilert().tilert_synchronize(_get_driver())
    if st:
        raise _rt_error(st)


class Param:
    """One runtime param of a kernel, from its metadata. `written`: whether
    the kernel writes it (True / False; None when the metadata does not say)."""

    def __init__(self, info, written=None):
        self.name = info.name.decode()
        self.kind = "tensor" if info.kind == _lib.TILERT_PARAM_TENSOR else "scalar"
        self.dtype = info.dtype.decode()
        self.shape = tuple(
            info.dims[d].decode() if info.dims[d] is not None else int(info.extents[d])
            for d in range(info.rank))
        self.align = info.align
        self.written = None if written is None or written < 0 else bool(written)

    def __repr__(self):
        if self.kind == "scalar":
            return "%s: %s" % (self.name, self.dtype)
        return "%s: %s[%s]" % (self.name, self.dtype, ", ".join(map(str, self.shape)))


def _stream_handle(stream):
    """A CUstream as an int from None, an int, a torch/CuPy stream or a
    __cuda_stream__ object."""
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError("stream must be None, an int CUstream, or a stream object "
                    "(torch.cuda.Stream, cupy Stream, __cuda_stream__); got %r" % (stream,))


def _torch_of(args):
    """torch, if it is loaded and some argument is a torch tensor on CUDA; with that tensor."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None, None
    for a in args:
        if isinstance(a, torch.Tensor) and a.is_cuda:
            return torch, a
    return None, None


def _export(obj, stream):
    """(capsule, DLTensor address) of a __dlpack__ object. CUDA producers are
    asked to make their work visible to `stream` (DLPack stream protocol)."""
    dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (None, None)
    try:
        if dev[0] == 2:  # kDLCUDA: 0 means "no stream" in DLPack; 1 is the legacy default
            capsule = obj.__dlpack__(stream=stream if stream else 1)
        else:
            capsule = obj.__dlpack__()
    except (RuntimeError, BufferError) as e:
        if "grad" in str(e) and hasattr(obj, "detach"):
            return _export(obj.detach(), stream)
        raise
    return capsule, _lib.dltensor_of_capsule(capsule)


_TORCH_DL = {}   # torch dtype -> DLPack (code, bits), filled on first use


def _torch_dl_dtype(torch, dtype):
    if not _TORCH_DL:
        for name, code, bits in (("float16", 2, 16), ("bfloat16", 4, 16), ("float32", 2, 32),
                                 ("float64", 2, 64), ("int8", 0, 8), ("int16", 0, 16), ("int32", 0, 32),
                                 ("int64", 0, 64), ("uint8", 1, 8), ("uint16", 1, 16), ("uint32", 1, 32),
                                 ("uint64", 1, 64), ("bool", 6, 8)):
            if hasattr(torch, name):
                _TORCH_DL[getattr(torch, name)] = (code, bits)
    return _TORCH_DL.get(dtype)


def _torch_stream(torch, device):
    """The raw CUstream (an int; 0 for the legacy default stream) that is
    torch's current stream on CUDA device index `device`."""
    f = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return f(device) if f is not None else torch.cuda.current_stream(device).cuda_stream


# The C structs a launch passes, packed straight into one buffer:
# DLTensor (dlpack/dlpack.h: data, device {type, id}, ndim, dtype {code,
# bits, lanes}, shape, strides, byte_offset) and tilert_arg (kind, then the
# 8-byte union at offset 8).
_DLT = struct.Struct("<QiiiBBHQQQ")
_ARG_PTR, _ARG_INT, _ARG_FLT = struct.Struct("<i4xQ"), struct.Struct("<i4xq"), struct.Struct("<i4xd")


def _pack_torch(torch, args):
    """The tilert_arg array for args that are all torch CUDA tensors (strided,
    of a dtype DLPack names) or numbers, launched on the tensors' device's
    current stream: each tensor described as t.__dlpack__() would (data
    pointer with the storage offset applied, torch's shape and strides, byte
    offset 0), without the export, whose stream handshake has nothing to do
    there and which costs tens of microseconds per tensor. Returns
    (pointer, the ctypes buffer it points into, to keep alive) or None: the
    caller then exports."""
    if getattr(torch.version, "hip", None):
        return None
    n = len(args)
    size = 16 * max(n, 1)
    for a in args:
        if isinstance(a, torch.Tensor):
            if not a.is_cuda or a.layout != torch.strided or _torch_dl_dtype(torch, a.dtype) is None:
                return None
            size += 48 + 16 * a.dim()
        elif not isinstance(a, numbers.Real):
            return None
    buf = ctypes.create_string_buffer(size)
    base = ctypes.addressof(buf)
    off = 16 * max(n, 1)
    try:
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                r = a.dim()
                code, bits = _torch_dl_dtype(torch, a.dtype)
                sh, st = off + 48, off + 48 + 8 * r
                _DLT.pack_into(buf, off, a.data_ptr(), 2, a.get_device(), r, code, bits, 1, base + sh, base + st, 0)
                struct.pack_into("<%dq" % r, buf, sh, *a.shape)
                struct.pack_into("<%dq" % r, buf, st, *a.stride())
                _ARG_PTR.pack_into(buf, 16 * i, _lib.TILERT_ARG_TENSOR, base + off)
                off = st + 8 * r
            elif isinstance(a, (bool, numbers.Integral)):
                _ARG_INT.pack_into(buf, 16 * i, _lib.TILERT_ARG_INT, int(a))
            else:
                _ARG_FLT.pack_into(buf, 16 * i, _lib.TILERT_ARG_FLOAT, float(a))
    except (struct.error, OverflowError):
        return None       # e.g. an int beyond 64 bits: the general path says what is wrong
    return ctypes.cast(base, ctypes.POINTER(_lib.TilertArg)), buf


class _Fast:
    """The packed launch path of a loaded kernel: for calls whose arguments
    are torch CUDA tensors (strided, of a dtype DLPack names) and Python
    ints, floats and bools, launched on the current stream of the tensors'
    device while that device is current. What _pack_torch writes is kept
    per argument signature (each tensor's dtype, device, shape and strides;
    each scalar's type), in a buffer of the calling thread; a call writes
    only the data pointers and scalar values into it (8-byte words: a
    DLTensor's data, a tilert_arg's value) and calls tilert_launch, whose
    own cache then holds the plan of that signature (docs/runtime.md,
    "Launch cost"). pack() returns None for anything else: the general
    path takes the call."""

    __slots__ = ("handle", "n", "tensor", "torch", "get_stream", "get_device", "launch", "tls")
    MAX_SIGNATURES = 64   # buffers kept per thread; all are dropped beyond

    def __init__(self, handle, n, torch):
        self.handle, self.n, self.torch, self.tensor = handle, n, torch, torch.Tensor
        self.get_stream = torch._C._cuda_getCurrentRawStream
        self.get_device = torch._C._cuda_getDevice
        self.launch = _lib.tilert().launch_raw
        self.tls = threading.local()

    def pack(self, args):
        """(address of the tilert_arg array, stream handle) for args, or None."""
        if len(args) != self.n:
            return None
        T = self.tensor
        key, vals = [], []
        try:
            for a in args:
                if isinstance(a, T):
                    key.append((a.dtype, a.is_cuda, a.get_device(), a.shape, a.stride()))
                    vals.append(a.data_ptr())
                else:
                    t = type(a)
                    if t is not int and t is not float and t is not bool:
                        return None
                    key.append(t)
                    vals.append(a)
            key = tuple(key)
            sigs = self.tls.__dict__
            e = sigs.get(key, _Fast)        # the class itself: no entry yet
            if e is _Fast:
                if len(sigs) >= self.MAX_SIGNATURES:
                    sigs.clear()
                e = sigs[key] = self._build(args)
            if e is None or self.get_device() != e[1]:
                return None
            for (view, i), v in zip(e[2], vals):
                view[i] = v
            return e[0], self.get_stream(e[1])
        except (TypeError, ValueError, OverflowError, RuntimeError, AttributeError):
            return None   # e.g. an int beyond 64 bits, a tensor without strides: the general path says

    def _build(self, args):
        """For args' signature: (address of the buffer, the tensors' device,
        per argument (view, word index) of its data pointer or value, the
        buffer), or None when the general path must take such calls."""
        torch, dev = self.torch, None
        for a in args:
            if isinstance(a, self.tensor):
                dev = a.get_device() if dev is None else dev
        proto = [a if isinstance(a, self.tensor) else type(a)(0) for a in args]   # by type, not value
        packed = _pack_torch(torch, proto) if dev is not None and dev >= 0 else None
        if packed is None:
            return None
        buf = packed[1]
        base = ctypes.addressof(buf)
        words = memoryview(buf).cast("B")
        u64, i64, f64 = words.cast("Q"), words.cast("q"), words.cast("d")
        slots = []
        for i, a in enumerate(args):          # tilert_arg i: kind, then its value at word 2i + 1
            if isinstance(a, self.tensor):
                slots.append((u64, (u64[2 * i + 1] - base) // 8))   # the DLTensor's data
            else:
                slots.append((f64 if type(a) is float else i64, 2 * i + 1))
        return base, dev, slots, buf


class Kernel:
    """One kernel of a module: metadata queries and launching."""

    def __init__(self, module, index, handle):
        self._module = module
        self._index = index
        self._meta = handle  # kernel of the metadata-only module (checks without a GPU)
        rt = _lib.tilert()
        self.name = rt.tilert_kernel_name(handle).decode()
        self.arch = rt.tilert_kernel_arch(handle).decode()
        self.threads = rt.tilert_kernel_threads(handle)
        self.smem = rt.tilert_kernel_smem(handle)
        self.grid_rule = rt.tilert_kernel_grid_rule(handle).decode()
        self.dims = [rt.tilert_kernel_dim(handle, i).decode() for i in range(rt.tilert_kernel_num_dims(handle))]
        self.params = []
        for i in range(rt.tilert_kernel_num_params(handle)):
            info = _lib.TilertParamInfo()
            rt.tilert_kernel_param(handle, i, ctypes.byref(info))
            self.params.append(Param(info, rt.tilert_kernel_param_written(handle, i)))
        self.num_tmaps = rt.tilert_kernel_num_tmaps(handle)
        self._fast = None    # _Fast, once the module is loaded and a call came from torch
        fb = rt.tilert_kernel_fallback(handle)
        self.fallback = rt.tilert_kernel_name(fb).decode() if fb else None

    def __repr__(self):
        return "<tilec.Kernel %s(%s) %s>" % (self.name, ", ".join(map(repr, self.params)),
                                              self.arch)

    def _pack(self, args, stream):
        keep, packed = [], (_lib.TilertArg * max(len(args), 1))()
        for i, a in enumerate(args):
            p = packed[i]
            if hasattr(a, "__dlpack__"):
                capsule, addr = _export(a, stream)
                keep.append((a, capsule))  # alive (and unconsumed) until after the launch
                p.kind, p.u.tensor = _lib.TILERT_ARG_TENSOR, addr
            elif isinstance(a, (bool, numbers.Integral)):
                p.kind, p.u.i = _lib.TILERT_ARG_INT, int(a)
            elif isinstance(a, numbers.Real):
                p.kind, p.u.f = _lib.TILERT_ARG_FLOAT, float(a)
            else:
                name = self.params[i].name if i < len(self.params) else "#%d" % i
                raise TypeError("kernel %s: param %s: cannot pass %s (need a DLPack tensor "
                                "or a number)" % (self.name, name, type(a).__name__))
        return packed, keep

    def check(self, *args):
        """Validate a launch without running it (no GPU needed); raises LaunchError."""
        packed, keep = self._pack(args, None)
        self._check(packed, len(args))
        del keep

    def _check(self, packed, n):
        rt = _lib.tilert()
        err = ctypes.create_string_buffer(2048)
        st = rt.tilert_check_args(self._meta, packed, n, err, len(err), None)
        if st:
            raise LaunchError(err.value.decode(errors="replace"), st)

    def _args(self, args, stream):
        """What a launch of args on stream passes: (packed tilert_args,
        objects to keep alive until it returns, the CUstream handle, the
        torch module or None, the torch device index to make current around
        it or None)."""
        torch, t = _torch_of(args)
        handle = _stream_handle(stream)
        fast, switch = None, None
        if torch is not None:
            dev = t.get_device()
            cur = _torch_stream(torch, dev)
            handle = cur if handle is None else handle
            if handle == cur:
                fast = _pack_torch(torch, args)
            if dev != torch.cuda.current_device():
                switch = dev
        packed, keep = fast if fast is not None else self._pack(args, handle)
        return packed, keep, handle, torch, switch

    def __call__(self, *args, stream=None):
        """Launch on `stream` (default: torch's current stream of the tensors'
        device when the arguments are torch CUDA tensors, else the legacy
        default stream). Asynchronous, like any CUDA launch."""
        fp = self._fast
        if fp is not None and stream is None:
            p = fp.pack(args)
            if p is not None:
                st = fp.launch(fp.handle, p[0], fp.n, p[1])
                if st:
                    raise _rt_error(st)
                return
        packed, keep, handle, torch, switch = self._args(args, stream)
        if self._module._handle is None:
            # before the first load, so that bad arguments are reported
            # without a GPU; afterwards tilert_launch checks them itself
            self._check(packed, len(args))
        if switch is not None:
            with torch.cuda.device(switch):
                self._launch(packed, len(args), handle)
        else:
            self._launch(packed, len(args), handle)
        del keep
        if torch is not None and self._fast is None and not getattr(torch.version, "hip", None) \
                and hasattr(torch._C, "_cuda_getCurrentRawStream") and hasattr(torch._C, "_cuda_getDevice"):
            self._fast = _Fast(self._module._loaded_kernel(self._index), len(self.params), torch)

    @property
    def last_variant(self):
        """What the latest launch of this kernel ran, from any thread: (name,
        reason), this kernel's name with reason "" or its fallback's with the
        reason a tensor could not take this kernel's tensor maps; None before
        the first launch (tilert_kernel_last_variant)."""
        h = self._module._handle
        if h is None:
            return None
        rt = _lib.tilert()
        why = ctypes.create_string_buffer(256)
        ran = rt.tilert_kernel_last_variant(rt.tilert_module_kernel_at(h, self._index), why, len(why))
        if not ran:
            return None
        return rt.tilert_kernel_name(ran).decode(), why.value.decode(errors="replace")

    def _launch(self, packed, n, stream):
        rt = _lib.tilert()
        k = self._module._loaded_kernel(self._index)
        st = rt.tilert_launch(k, packed, n, ctypes.c_void_p(stream or None))
        if st:
            raise _rt_error(st)


class KernelSet:
    """Kernels by name: mod["NAME"] and mod.NAME, for a module whose
    .kernels each have a .name (Module, InterpModule)."""

    def __getitem__(self, name):
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError("no kernel %r (the module has: %s)"
                       % (name, ", ".join(k.name for k in self.kernels)))

    def __getattr__(self, name):
        if name.startswith("_") or "kernels" not in self.__dict__:
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(str(e)) from None


class Module(KernelSet):
    """Compiled PTX + metadata: one or more kernels. Callable when it holds
    exactly one kernel. The PTX is loaded onto the GPU at the first launch."""

    def __init__(self, ptx, meta, arch=None, report=None):
        self.ptx, self.meta, self.arch, self.report = ptx, meta, arch, report
        self.cached = None   # compile(): "memory" / "disk" when it came from the cache
        rt = _lib.tilert()
        h = ctypes.c_void_p()
        st = rt.tilert_module_from_meta(meta.encode(), ctypes.byref(h))
        if st:
            raise _rt_error(st)
        self._meta_handle = h
        self._handle = None
        self.image = None    # compiled code (a cubin) loaded instead of the PTX when set before the first launch
        self._rt = rt  # kept for __del__ at interpreter exit
        self.kernels = [Kernel(self, i, rt.tilert_module_kernel_at(h, i))
                        for i in range(rt.tilert_module_num_kernels(h))]

    def __del__(self):
        rt = getattr(self, "_rt", None)
        if rt is not None:
            rt.tilert_module_free(self._handle)
            rt.tilert_module_free(self._meta_handle)

    def _loaded_kernel(self, i):
        if self._handle is None:
            rt = _lib.tilert()
            h = ctypes.c_void_p()
            if self.image is not None:
                st = rt.tilert_module_load_image(_get_driver(), self.image, len(self.image), self.meta.encode(),
                                                 ctypes.byref(h))
            else:
                st = rt.tilert_module_load(_get_driver(), self.ptx.encode(), self.meta.encode(),
                                           ctypes.byref(h))
            if st:
                raise _rt_error(st)
            self._handle = h
        return _lib.tilert().tilert_module_kernel_at(self._handle, i)

    def entry(self):
        """The module's one kernel that is not another's fallback; TypeError
        when it has several."""
        fallbacks = {k.fallback for k in self.kernels}
        entry = [k for k in self.kernels if k.name not in fallbacks]   # a fallback runs on its own
        if len(entry) != 1:
            raise TypeError("the module has %d kernels (%s): call one by name, e.g. mod.%s(...)"
                            % (len(entry), ", ".join(k.name for k in entry), entry[0].name))
        return entry[0]

    def __call__(self, *args, stream=None):
        return self.entry()(*args, stream=stream)

    def __repr__(self):
        return "<tilec.Module %s>" % ", ".join(k.name for k in self.kernels)


def load(ptx, meta):
    """A Module from PTX text and metadata text (both str)."""
    return Module(ptx, meta)


def load_files(ptx_path, meta_path=None):
    """A Module from X.ptx and X.meta (meta_path defaults to the .ptx path
    with the suffix .meta)."""
    if meta_path is None:
        meta_path = os.path.splitext(ptx_path)[0] + ".meta"
    with open(ptx_path) as f:
        ptx = f.read()
    with open(meta_path) as f:
        meta = f.read()
    return Module(ptx, meta)


# ---- the compiler side ---------------------------------------------------

# ORDER DTYPE (ir/dtypes.h): torch / numpy names -> tilec spellings.
_DTYPE_NAMES = {
    "bfloat16": "bf16", "float16": "f16", "half": "f16", "float32": "f32", "float": "f32",
    "float64": "f64", "double": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
    "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "bool", "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
}


def _define_value(name, v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return repr(float(v))
    if isinstance(v, str):
        return v
    text = str(v)  # torch.bfloat16 -> "torch.bfloat16", numpy dtype('float32') -> "float32"
    base = text.rsplit(".", 1)[-1]
    if base in _DTYPE_NAMES:
        return _DTYPE_NAMES[base]
    raise TypeError("define %s: cannot pass %r (use a bool, int, float, str or dtype)" % (name, v))


def _with_device_sms(pass_options):
    """pass_options with target.sms set to the current GPU's SM count,
    when torch can say and the caller did not set it: compiled for the GPU
    at hand (arch=None), a kernel may take a persistent grid of that many
    blocks (docs/python.md, "The device's facts")."""
    po = option_list(pass_options) or ""
    if "target.sms=" in po:
        return pass_options
    from ._attention import SMS_OPTION_MAX, device_sms   # loaded last in this module: imported here
    torch = sys.modules.get("torch")
    try:
        sms = device_sms(torch.cuda.current_device())
    except Exception:  # noqa: BLE001 (no torch, no GPU)
        return pass_options
    if not sms or sms <= 0:
        return pass_options
    return (po + "," if po else "") + "target.sms=%d" % min(sms, SMS_OPTION_MAX)


def _default_arch():
    torch = sys.modules.get("torch")
    dev = 0
    if torch is not None:
        try:
            if torch.cuda.is_available():
                dev = torch.cuda.current_device()
        except Exception:  # a broken CUDA setup: fall back to device 0
            pass
    return device_arch(dev) or "sm_86"


# ---- the compile cache (docs/cache.md) ------------------------------------

_CACHE_MODES = {False: _lib.TILEC_CACHE_OFF, "off": _lib.TILEC_CACHE_OFF, "memory": _lib.TILEC_CACHE_MEMORY,
                True: _lib.TILEC_CACHE_DISK, "disk": _lib.TILEC_CACHE_DISK}
_cache_mode, _cache_dir = "memory", None


def _cache_mode_of(mode):
    try:
        return _CACHE_MODES[mode]
    except (KeyError, TypeError):
        raise ValueError("cache must be 'off', 'memory' or 'disk' (or False / True), not %r" % (mode,)) from None


def set_cache(mode="disk", dir=None):
    """The cache that compile() uses when not told: "off", "memory" (the
    package's default: this process only) or "disk" (memory, and files in
    `dir`, default default_cache_dir(), shared by processes)."""
    global _cache_mode, _cache_dir
    _cache_mode_of(mode)
    _cache_mode, _cache_dir = mode, os.fspath(dir) if dir is not None else None


def default_cache_dir():
    """$XDG_CACHE_HOME/tilec (when XDG_CACHE_HOME is an absolute path), else
    ~/.cache/tilec, as the tilec command resolves it, or None without a
    home. libtilec has no default folder (it reads no environment): the
    package gives this one to a disk cache."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "tilec")
    home = os.environ.get("HOME") or ""
    if not home:
        try:
            import pwd
            home = pwd.getpwuid(os.getuid()).pw_dir
        except (ImportError, KeyError):
            home = ""
    return os.path.join(home, ".cache", "tilec") if home else None


def _ptxas():
    """The ptxas the tilec command finds (docs/language.md): $TILEC_PTXAS when
    set (None if that is not an executable file), else ptxas on $PATH, else
    /usr/local/cuda/bin/ptxas; None when none exists. The package passes it
    to libtilec (which looks for none) for compile(report=True)'s registers."""
    def runnable(p):
        return bool(p) and os.path.isfile(p) and os.access(p, os.X_OK)
    env = os.environ.get("TILEC_PTXAS")
    if env:
        return env if runnable(env) else None
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if d and runnable(os.path.join(d, "ptxas")):
            return os.path.join(d, "ptxas")
    return "/usr/local/cuda/bin/ptxas" if runnable("/usr/local/cuda/bin/ptxas") else None


def clear_cache(dir=None):
    """Empty this process's memory cache and delete the entries in `dir`
    (default: set_cache's folder, else default_cache_dir())."""
    d = dir if dir is not None else _cache_dir if _cache_dir is not None else default_cache_dir()
    st = _lib.tilec().tilec_cache_clear(os.fsencode(d) if d is not None else None)
    if st:
        raise OSError("cannot clear the tilec cache in %s" % d)


def example_path(name):
    """The path of an example kernel shipped with the package, e.g.
    example_path("softmax") -> .../tilec/examples/softmax.tile."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "examples",
                        name if name.endswith(".tile") else name + ".tile")
    if not os.path.isfile(path):
        raise FileNotFoundError("no example %r in %s" % (name, os.path.dirname(path)))
    return path


def _check_exists(x):
    """A path that names no file raises FileNotFoundError: an os.PathLike,
    or a one-line str without '{' that ends in .tile or .tir (source text
    never does)."""
    if isinstance(x, os.PathLike) or (isinstance(x, str) and "\n" not in x and "{" not in x
                                      and x.rstrip().endswith((".tile", ".tir"))):
        p = os.fspath(x)
        if not os.path.isfile(p):
            raise FileNotFoundError(errno.ENOENT, "no such kernel file", p)


def _is_path(x):
    if isinstance(x, os.PathLike):
        return True
    return isinstance(x, str) and "\n" not in x and "{" not in x and os.path.isfile(x)


def _diagnostics(lib, res):
    out = []
    for i in range(lib.tilec_result_num_diags(res)):
        d = lib.tilec_result_diag(res, i).contents
        out.append(("error warning note remark".split()[d.severity] if 0 <= d.severity < 4
                    else str(d.severity),
                    (d.file or b"").decode(errors="replace"), d.line, d.col,
                    (d.message or b"").decode(errors="replace")))
    return out


def option_list(options):
    """A pass_options argument (None, a dict {"NAME": int}, or a string
    "NAME=INT,...") as the library's comma-separated text, or None."""
    if not options:
        return None
    if isinstance(options, str):
        return options
    return ",".join("%s=%d" % (k, int(v)) for k, v in sorted(options.items()))


def _warning_bits(names):
    """warnings_off as the library's bits: None/() none, "all" every one,
    else an iterable of names from WARNINGS."""
    if not names:
        return 0
    if isinstance(names, str):
        names = WARNINGS if names == "all" else (names,)
    bits = 0
    for n in names:
        if n not in WARNINGS:
            raise ValueError("unknown warning %r (warnings: %s)" % (n, ", ".join(WARNINGS)))
        bits |= 1 << WARNINGS.index(n)
    return bits


def compile(path_or_source, arch=None, opt_level=3, report=False, pass_options=None, cache=None, cache_dir=None,
            dims=None, warnings_off=None, werror=False, lineinfo=False, interpret=False, autotune=False, **consts):
    """Compile a .tile file (a path) or source text, with compile-time params
    given as keyword arguments (bools -> true/false, dtypes as "bf16" or a
    torch/numpy dtype). arch defaults to the current GPU's ("sm_90a" on
    Hopper), else "sm_86". pass_options: typed pass options for this
    compilation, {"target.smem-per-block": 232448} or
    "target.smem-per-block=232448" (`tilec --help` lists them). dims: the
    sizes of named dims the kernel will be launched with, {"N": 4096}: tile
    sizes declared `= auto` and the launch schedule are chosen for them
    (the kernel stays correct for every size). cache:
    "off", "memory" or "disk" (None: set_cache's choice, "memory" unless
    changed); cache_dir: the folder of the disk cache (None: set_cache's,
    else default_cache_dir()). Returns a Module (callable if it holds one
    kernel; .cached says "memory" or "disk" for a cache hit, else None);
    raises CompileError with the rendered diagnostics, FileNotFoundError
    for a path (os.PathLike, or a str ending in .tile / .tir) that does not
    exist. warnings_off: names from WARNINGS not to report ("all": none);
    werror: warnings are errors (CompileError); the others are issued as
    TilecWarning. lineinfo: .file/.loc line information in the PTX.
    interpret=True: no PTX; returns an InterpModule whose kernels run in the
    IR interpreter on host buffers (numpy arrays, CPU torch tensors, buffers;
    docs/python.md, "Interpreter mode"); never cached. autotune=True: returns
    a Tuned whose first call of each shape class times the compiler's
    candidate tiles on the call's arguments and keeps the fastest
    (docs/python.md, "Autotuning"); dims, report, interpret, opt_level,
    warnings and lineinfo are not taken with it."""
    if autotune:
        if dims or report or interpret or opt_level != 3 or warnings_off or werror or lineinfo:
            raise TypeError("compile(autotune=True) takes arch, pass_options, cache, cache_dir and the kernel's "
                            "params (the sizes come from each call's shape class)")
        return Tuned(path_or_source, arch=arch, pass_options=pass_options, cache=cache, cache_dir=cache_dir,
                     **consts)
    lib = _lib.tilec()
    opts = _lib.TilecOptions()
    lib.tilec_options_init(ctypes.byref(opts))
    opts.struct_size = _lib.TilecOptions._reserved.offset  # the fields this package knows
    if not arch:
        arch = _default_arch()
        opts.family_portable = 1  # the automatic "sm_90" (an 11.x GPU) is the portable target
        pass_options = _with_device_sms(pass_options)
    opts.arch = arch.encode()
    opts.opt_level = opt_level
    opts.emit = _lib.TILEC_EMIT_PTX
    opts.report = 1 if report else 0
    opts.warnings_off = _warning_bits(warnings_off)
    opts.warnings_as_errors = 1 if werror else 0
    opts.debug_info = 1 if lineinfo else 0
    if interpret:
        opts.emit, opts.keep_ir, cache = _lib.TILEC_EMIT_TIR, 1, "off"
    po = option_list(pass_options)
    opts.pass_options = po.encode() if po else None
    dl = option_list(dims)
    opts.dims = dl.encode() if dl else None
    opts.cache = _cache_mode_of(_cache_mode if cache is None else cache)
    cdir = cache_dir if cache_dir is not None else _cache_dir
    if cdir is None and opts.cache == _lib.TILEC_CACHE_DISK:
        cdir = default_cache_dir()
        if cdir is None:  # no home: this process's memory only
            opts.cache = _lib.TILEC_CACHE_MEMORY
    opts.cache_dir = os.fsencode(cdir) if cdir is not None else None
    if report:  # the registers of the report: ptxas run for it alone, no check
        px = _ptxas()
        opts.ptxas = os.fsencode(px) if px else None
        opts.ptxas_no_check = 1
    defs = (_lib.TilecDefine * max(len(consts), 1))()
    for i, (name, v) in enumerate(consts.items()):
        defs[i].name, defs[i].value = name.encode(), _define_value(name, v).encode()
    opts.defines, opts.ndefines = defs, len(consts)
    res = ctypes.c_void_p()
    _check_exists(path_or_source)
    if _is_path(path_or_source):
        st = lib.tilec_compile_file(os.fsencode(path_or_source), ctypes.byref(opts),
                                    ctypes.byref(res))
    else:
        src = path_or_source.encode()
        st = lib.tilec_compile_string(b"<string>", src, len(src), ctypes.byref(opts),
                                      ctypes.byref(res))
    if not res:
        raise CompileError("tilec: %s" % lib.tilec_status_string(st).decode(), status=st)
    if interpret and not st:
        warned = [d for d in _diagnostics(lib, res) if d[0] == "warning"]
        for _sev, file, line, col, msg in warned:
            _warnings.warn("%s:%d:%d: %s" % (file, line, col, msg), TilecWarning, stacklevel=2)
        tir = (lib.tilec_result_text(res, _lib.TILEC_OUT_TIR) or b"").decode()
        return _interp.InterpModule(res, (lib.tilec_result_arch(res) or b"").decode() or arch, tir)
    try:
        if st:
            text = (lib.tilec_result_diag_text(res) or b"").decode(errors="replace")
            raise CompileError(text or lib.tilec_status_string(st).decode(),
                               _diagnostics(lib, res), st)
        ptx = lib.tilec_result_text(res, _lib.TILEC_OUT_PTX)
        meta = lib.tilec_result_text(res, _lib.TILEC_OUT_META)
        rep = lib.tilec_result_text(res, _lib.TILEC_OUT_REPORT)
        got_arch = lib.tilec_result_arch(res)
        cached = {_lib.TILEC_CACHE_MEMORY: "memory", _lib.TILEC_CACHE_DISK: "disk"}.get(lib.tilec_result_cache(res))
        warned = [d for d in _diagnostics(lib, res) if d[0] == "warning"]
        if not ptx or not meta:
            raise CompileError("tilec produced no PTX/metadata (is libtilec built with LLVM?)",
                               _diagnostics(lib, res), st)
    finally:
        lib.tilec_result_free(res)
    for _sev, file, line, col, msg in warned:
        _warnings.warn("%s:%d:%d: %s" % (file, line, col, msg), TilecWarning, stacklevel=2)
    mod = Module(ptx.decode(), meta.decode(), (got_arch or b"").decode() or arch,
                 rep.decode() if rep else None)
    mod.cached = cached
    return mod


def interpret(path_or_source, *args, kernel=None, arch=None, **consts):
    """Compile with interpret=True and run one kernel (kernel=NAME, or the
    only one) on args in the IR interpreter: tensors are host buffers that
    the kernel's stores write in place. Returns None."""
    mod = compile(path_or_source, arch=arch, interpret=True, **consts)
    (mod[kernel] if kernel else mod)(*args)


from . import _interp  # noqa: E402  (the interpreter mode)
from ._interp import InterpModule  # noqa: E402
from ._attention import attention  # noqa: E402  (FlashAttention forward on torch tensors)
from ._tune import Tuned, TuneResult, autotune, candidates, precompile_candidates, shape_class  # noqa: E402

__all__ += ["attention", "Tuned", "TuneResult", "autotune", "candidates", "precompile_candidates", "shape_class"]
