"""The interpreter mode (docs/python.md, "Interpreter mode"): the kernels of
tilec.compile(..., interpret=True) run in the compiler's IR interpreter on
host buffers, through tilec_interpret. No GPU, no driver; slow, for small
shapes and debugging.

A tensor argument is anything that exposes its memory: a numpy array (its
__array_interface__), a CPU torch tensor (bf16 through an int16 view), or
an object with the buffer protocol (array.array, memoryview, bytearray).
Stores write into it in place. A 16-bit integer buffer is taken as the bit
patterns of a bf16 / f16 param, an 8-bit one as fp8 or bool.
"""
import ctypes
import numbers

from . import _lib, KernelSet   # tilec/__init__.py imports this module last

# numpy typestr kind + item size, and buffer-protocol formats, -> tilec dtype
_TYPESTR = {"f2": "f16", "f4": "f32", "f8": "f64", "i1": "i8", "i2": "i16", "i4": "i32", "i8": "i64",
            "u1": "u8", "u2": "u16", "u4": "u32", "u8": "u64", "b1": "bool"}
_FORMAT = {"e": "f16", "f": "f32", "d": "f64", "b": "i8", "B": "u8", "?": "bool", "h": "i16", "H": "u16"}
_INT_BY_SIZE = {("i", 4): "i32", ("i", 8): "i64", ("u", 4): "u32", ("u", 8): "u64"}
# Param dtypes a same-size integer buffer may carry as bit patterns.
_BITS_OF = {"bf16": ("i16", "u16"), "f16": ("i16", "u16"), "f8e4m3": ("i8", "u8"), "f8e5m2": ("i8", "u8"),
            "bool": ("i8", "u8")}


def _format_dtype(fmt, itemsize):
    fmt = fmt.lstrip("@=<>!")
    if fmt in _FORMAT:
        return _FORMAT[fmt]
    if fmt in ("i", "l", "q"):
        return _INT_BY_SIZE.get(("i", itemsize))
    if fmt in ("I", "L", "Q"):
        return _INT_BY_SIZE.get(("u", itemsize))
    return None


def _torch_view(t):
    """A CPU torch tensor as a numpy array sharing its memory."""
    if getattr(t, "is_cuda", False) or str(getattr(t, "device", "cpu")) != "cpu":
        raise TypeError("the interpreter runs on host memory: pass a CPU tensor (.cpu()), got one on %s"
                        % t.device)
    import torch
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy()
    return t.numpy()


class _Tensor:
    """The memory of one tensor argument: address, shape, element strides, dtype."""

    def __init__(self, obj):
        self.keep = obj
        if hasattr(obj, "numpy") and hasattr(obj, "dtype") and type(obj).__module__.startswith("torch"):
            obj = self.keep = _torch_view(obj)
        ai = getattr(obj, "__array_interface__", None)
        if ai is not None:
            typestr = ai["typestr"]
            size = int(typestr[2:])
            self.dtype = _TYPESTR.get(typestr[1] + typestr[2:])
            self.addr = ai["data"][0]
            self.shape = tuple(ai["shape"])
            byte_strides = ai.get("strides")
        else:
            try:
                mv = memoryview(obj)
            except TypeError:
                raise TypeError("cannot pass %r as a tensor: use a numpy array, a CPU torch tensor or a buffer"
                                % type(obj).__name__) from None
            size = mv.itemsize
            self.dtype = _format_dtype(mv.format, size)
            self.shape = tuple(mv.shape)
            byte_strides = mv.strides
            if mv.readonly:
                self.keep = (ctypes.c_char * mv.nbytes).from_buffer_copy(mv)   # an input only
            elif mv.contiguous:
                self.keep = (ctypes.c_char * mv.nbytes).from_buffer(mv.cast("B"))
            else:
                raise TypeError("a non-contiguous buffer: pass a numpy array or a contiguous copy")
            self.addr = ctypes.addressof(self.keep)
            self.mv = mv
        self.strides = None
        if byte_strides is not None:
            if any(s % size for s in byte_strides):
                raise TypeError("tensor strides %r are not whole elements of %d bytes" % (byte_strides, size))
            self.strides = tuple(s // size for s in byte_strides)


class InterpKernel:
    """One kernel of an interpreted module: call it with its args in param
    order (tensors and Python numbers). Raises tilec.LaunchError for
    arguments the launch checks refuse and for a kernel that fails while
    running (the message names the param, or the source line)."""

    def __init__(self, module, index):
        lib = _lib.tilec()
        self._module, self._index = module, index
        self.name = lib.tilec_result_kernel_name(module._res, index).decode()
        self.params = []
        for j in range(lib.tilec_result_kernel_num_params(module._res, index)):
            n, d, r = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int()
            lib.tilec_result_kernel_param(module._res, index, j, ctypes.byref(n), ctypes.byref(d), ctypes.byref(r))
            self.params.append((n.value.decode(), d.value.decode(), r.value))

    def __repr__(self):
        return "<tilec interpreted kernel %s(%s)>" % (
            self.name, ", ".join("%s: %s%s" % (n, d, "[rank %d]" % r if r else "") for n, d, r in self.params))

    def _arg(self, a, param, keep):
        from . import LaunchError
        name, dtype, rank = param
        arg = _lib.TilecArg()
        if isinstance(a, numbers.Number) and not hasattr(a, "__array_interface__"):
            if rank:
                raise LaunchError("param %s: expected a rank-%d %s tensor, got a number" % (name, rank, dtype))
            arg.f = float(a)
            arg.i = int(a) if isinstance(a, numbers.Integral) else int(float(a))
            return arg
        if not rank:
            raise LaunchError("param %s: expected a %s scalar, got %s" % (name, dtype, type(a).__name__))
        t = _Tensor(a)
        keep.append(t)
        got = t.dtype
        if got in _BITS_OF.get(dtype, ()):
            got = dtype   # bit patterns of the param's dtype
        arg.data = t.addr
        arg.rank = len(t.shape)
        shape = (ctypes.c_int64 * max(len(t.shape), 1))(*t.shape)
        keep.append(shape)
        arg.shape = shape
        if t.strides is not None:
            strides = (ctypes.c_int64 * max(len(t.strides), 1))(*t.strides)
            keep.append(strides)
            arg.strides = strides
        dt = (got or "an unknown dtype").encode()
        keep.append(dt)
        arg.dtype = dt
        return arg

    def __call__(self, *args):
        from . import LaunchError
        if len(args) != len(self.params):
            raise LaunchError("kernel %s takes %d arguments (%s), got %d" % (
                self.name, len(self.params), ", ".join(p[0] for p in self.params), len(args)))
        keep = []
        arr = (_lib.TilecArg * max(len(args), 1))(*[self._arg(a, p, keep) for a, p in zip(args, self.params)])
        lib = _lib.tilec()
        out = ctypes.c_void_p()
        st = lib.tilec_interpret(self._module._res, self.name.encode(), arr, len(args), ctypes.byref(out))
        try:
            if st:
                text = (lib.tilec_result_diag_text(out) or b"").decode(errors="replace")
                raise LaunchError(text.strip() or lib.tilec_status_string(st).decode(), st)
        finally:
            lib.tilec_result_free(out)


class InterpModule(KernelSet):
    """What tilec.compile(..., interpret=True) returns: the kernels' Tile IR
    (.tir, after the passes for .arch) and kernels that run in the
    interpreter. Callable when it holds one kernel; else mod.NAME(...) or
    mod["NAME"](...). .ptx and .meta are None."""

    ptx = meta = report = cached = None

    def __init__(self, res, arch, tir):
        self._res, self.arch, self.tir = res, arch, tir
        self._lib = _lib.tilec()   # kept for __del__ at interpreter exit
        self.kernels = [InterpKernel(self, i) for i in range(self._lib.tilec_result_num_kernels(res))]

    def __del__(self):
        lib = getattr(self, "_lib", None)
        if lib is not None:
            lib.tilec_result_free(self._res)

    def __call__(self, *args):
        if len(self.kernels) != 1:
            raise TypeError("the module has %d kernels (%s): call one by name, e.g. mod.%s(...)"
                            % (len(self.kernels), ", ".join(k.name for k in self.kernels), self.kernels[0].name))
        return self.kernels[0](*args)

    def __repr__(self):
        return "<tilec.InterpModule %s>" % ", ".join(k.name for k in self.kernels)
