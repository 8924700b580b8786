"""Autotuning (python/tilec/_tune.py; docs/python.md, "Autotuning").

    k = tilec.compile("examples/gemm.tile", autotune=True)     # a tilec.Tuned
    k(a, b, c)            # first call of a shape class: compile the candidates,
                          # time them on a, b, c, keep the fastest; later calls
                          # of the class launch it at once

The candidates are the compiler's (tilec_candidates_*: the tiles its rule
weighs for the kernel's `= auto` params, its own choice first); candidate I
is compiled with the pass option tiles.candidate=I for the class's sizes
(tilec_options.dims). The runtime times them (tilert_tune: CUDA events,
interleaved rounds) and the decision is kept in memory and, with the disk
cache, in the cache folder (tilert_tune_store), keyed by the device, the
compiler, the source, its params and options and the shape class.
"""
import ctypes
import hashlib
import os
import time

from . import _lib

_DECISION_FORMAT = 1       # the value's layout: "index=I defines=D ms=T,T,..."
INDEX_NAME = "candidates.txt"   # precompile_candidates' index in its folder


class TuneResult:
    """What tilert_tune measured: best (the fastest candidate's index), ms
    (each candidate's median time a launch over the rounds, milliseconds),
    min_ms (its fastest round), launches (a candidate's launches a round),
    rounds, wall_ms (the call's wall time, warm-up included)."""

    def __init__(self, r):
        n = int(r.n)
        self.best = int(r.best)
        self.ms = [float(r.ms[i]) for i in range(n)]
        self.min_ms = [float(r.min_ms[i]) for i in range(n)]
        self.launches = int(r.launches)
        self.rounds = int(r.rounds)
        self.wall_ms = float(r.wall_ms)

    def __repr__(self):
        return "<tilec.TuneResult best %d of %s ms>" % (self.best, ", ".join("%.4f" % t for t in self.ms))


def _entry(k):
    from . import Module
    return k.entry() if isinstance(k, Module) else k


def autotune(kernels, *args, stream=None, warmup=2, rounds=5, budget_ms=300.0, max_launches=200):
    """Time `kernels` (Kernels, or Modules of one entry kernel: candidates of
    one computation, same params) on args and return a TuneResult
    (tilert_tune). The launches go to `stream` as a launch's would (torch's
    current stream for torch tensors). The kernels run many times on args:
    right for kernels whose outputs depend on their inputs alone; tune a
    kernel that reads what it writes (atomic_add into an output) on
    copies. Blocks until the timing is done; the outputs then hold some
    candidate's results."""
    from . import _rt_error
    ks = [_entry(k) for k in kernels]
    if not ks or len(ks) > _lib.TILERT_TUNE_MAX:
        raise ValueError("autotune takes 1 to %d kernels, not %d" % (_lib.TILERT_TUNE_MAX, len(ks)))
    rt = _lib.tilert()
    packed, keep, handle, torch, switch = ks[0]._args(args, stream)
    handles = (ctypes.c_void_p * len(ks))(*[k._module._loaded_kernel(k._index) for k in ks])
    opts = _lib.TilertTuneOptions()
    rt.tilert_tune_options_init(ctypes.byref(opts))
    opts.warmup, opts.rounds, opts.budget_ms, opts.max_launches = int(warmup), int(rounds), float(budget_ms), \
        int(max_launches)
    res = _lib.TilertTuneResult()

    def run():
        return rt.tilert_tune(handles, len(ks), packed, len(args), ctypes.c_void_p(handle or None),
                              ctypes.byref(opts), ctypes.byref(res))
    if switch is not None:
        with torch.cuda.device(switch):
            st = run()
    else:
        st = run()
    del keep
    if st:
        raise _rt_error(st)
    return TuneResult(res)


def _options(path_or_source, arch, pass_options, dims, consts):
    """(TilecOptions, objects to keep alive) for the compiler's C calls, as
    tilec.compile builds them (arch None: the GPU's, with its SM count)."""
    from . import _default_arch, _define_value, _with_device_sms, option_list
    opts = _lib.TilecOptions()
    _lib.tilec().tilec_options_init(ctypes.byref(opts))
    opts.struct_size = _lib.TilecOptions._reserved.offset
    if not arch:
        arch = _default_arch()
        opts.family_portable = 1
        pass_options = _with_device_sms(pass_options)
    keep = []
    opts.arch = arch.encode()
    po = option_list(pass_options)
    if po:
        keep.append(po.encode())
        opts.pass_options = keep[-1]
    dl = option_list(dims)
    if dl:
        keep.append(dl.encode())
        opts.dims = keep[-1]
    defs = (_lib.TilecDefine * max(len(consts), 1))()
    for i, (name, v) in enumerate(consts.items()):
        defs[i].name, defs[i].value = name.encode(), _define_value(name, v).encode()
    opts.defines, opts.ndefines = defs, len(consts)
    keep.append(defs)
    return opts, keep


def candidates(path_or_source, arch=None, pass_options=None, dims=None, **consts):
    """The tile choice's candidates for the kernel (tilec_candidates_*),
    the compiler's choice first: a list of dicts {param: value} (one empty
    dict for a kernel without `auto` tile params). Compile candidate i with
    tilec.compile(..., pass_options={..., "tiles.candidate": i}) or with its
    defines. Raises CompileError as tilec.compile does."""
    from . import CompileError, _check_exists, _diagnostics, _is_path
    lib = _lib.tilec()
    opts, keep = _options(path_or_source, arch, pass_options, dims, consts)
    res = ctypes.c_void_p()
    _check_exists(path_or_source)
    if _is_path(path_or_source):
        st = lib.tilec_candidates_file(os.fsencode(path_or_source), ctypes.byref(opts), ctypes.byref(res))
    else:
        src = path_or_source.encode()
        st = lib.tilec_candidates_string(b"<string>", src, len(src), ctypes.byref(opts), ctypes.byref(res))
    del keep
    if not res:
        raise CompileError("tilec: %s" % lib.tilec_status_string(st).decode(), status=st)
    try:
        if st:
            text = (lib.tilec_result_diag_text(res) or b"").decode(errors="replace")
            raise CompileError(text or lib.tilec_status_string(st).decode(), _diagnostics(lib, res), st)
        out = []
        for i in range(lib.tilec_result_num_candidates(res)):
            text = lib.tilec_result_candidate(res, i).decode()
            out.append(dict((kv.split("=", 1)[0], int(kv.split("=", 1)[1])) for kv in text.split(",") if kv))
        return out
    finally:
        lib.tilec_result_free(res)


def defines_text(d):
    """{"BM": 128, "BN": 64} -> "BM=128,BN=64" (the order given)."""
    return ",".join("%s=%d" % kv for kv in d.items())


def shape_class(kernel, *args):
    """The shape class of launching `kernel` (a Kernel or Module) with args
    (tilert_shape_class: each named dim rounded up to a power of two), as
    the text "M=4096,N=4096,K=1024"; no GPU needed."""
    from . import _rt_error
    k = _entry(kernel)
    packed, keep, _handle, _torch, _switch = k._args(args, None)
    buf = ctypes.create_string_buffer(4096)
    st = _lib.tilert().tilert_shape_class(k._meta, packed, len(args), buf, len(buf))
    del keep
    if st:
        raise _rt_error(st)
    return buf.value.decode()


def bucket(v):
    """A dim size's shape-class value: the next power of two (0 and 1 stay),
    tilert_shape_class's rule (checked equal by python/tests)."""
    v = int(v)
    if v <= 1:
        return v
    p = 1
    while p < v:
        p *= 2
    return p


def class_text(dim_names, dims):
    """The shape class of named-dim sizes `dims` ({name: size}) for a kernel
    whose dims are dim_names (ABI order), as tilert_shape_class writes it."""
    return ",".join("%s=%d" % (d, bucket(dims[d])) for d in dim_names)


def class_dims(text):
    """"M=4096,N=1" -> {"M": 4096, "N": 1}, dropping 0 (an empty launch's
    dim is no size to compile for)."""
    out = {}
    for kv in text.split(","):
        if kv:
            name, v = kv.split("=", 1)
            if int(v) > 0:
                out[name] = int(v)
    return out


def load_decision(folder, key):
    """The value stored for key in folder (tilert_tune_load), or None."""
    buf = ctypes.create_string_buffer(1 << 16)
    st = _lib.tilert().tilert_tune_load(os.fsencode(folder), key.encode(), buf, len(buf))
    return buf.value.decode() if st == 0 else None


def store_decision(folder, key, value):
    """Store value for key in folder (tilert_tune_store); OSError when it
    cannot be written."""
    rt = _lib.tilert()
    if rt.tilert_tune_store(os.fsencode(folder), key.encode(), value.encode()):
        raise OSError((rt.tilert_last_error() or b"").decode(errors="replace"))


def parse_decision(value):
    """(index, defines text) of a stored value, or None if it is not one."""
    fields = dict(f.split("=", 1) for f in value.split(" ") if "=" in f)
    try:
        defines = fields.get("defines", "")
        return int(fields["index"]), "" if defines == "-" else defines
    except (KeyError, ValueError):
        return None


class Tuning:
    """What the first call of a shape class did (Tuned.last_tuning):
    shape_class, candidates (their defines), best (the index kept),
    from_cache (the decision came from the cache folder: nothing timed),
    result (the TuneResult, None from the cache), and seconds spent (wall
    clock): compile_s (listing and compiling the candidates, in parallel, or
    reading precompiled ones), load_s (making the GPU's code and loading
    it: parallel ptxas processes, or the driver's JIT of each PTX in turn),
    time_s (tilert_tune), total_s (the whole, less the launch of the winner
    that a call then makes); jit: how the code was made ("ptxas",
    "driver": its JIT or its cache, "mixed", "loaded": before)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def __repr__(self):
        return "<tilec.Tuning %s: candidate %d (%s) of %d, %s, %.3f s>" % (
            self.shape_class, self.best, self.candidates[self.best] if self.candidates else "?",
            len(self.candidates), "from the cache" if self.from_cache else "timed", self.total_s)


class Tuned:
    """A kernel whose `= auto` tiles are chosen by measurement, per shape
    class (docs/python.md, "Autotuning"). tilec.compile(..., autotune=True)
    makes one; the arguments are compile()'s. Calling it with a shape class
    it has not seen compiles the compiler's candidates for the class's sizes,
    times them on the call's arguments (tilec.autotune: outputs written in
    place many times, so only for kernels whose outputs depend on their
    inputs alone), keeps the fastest in memory and, with the disk cache, in
    the cache folder, and launches it; later calls of the class launch it
    directly. ptx_dir: a folder written by tilec.precompile_candidates, whose
    modules are used instead of compiling (a GPU host without libtilec).
    warmup, rounds, budget_ms, max_launches: tilec.autotune's. ptxas: how
    the candidates' PTX becomes the GPU's code: the driver compiles a
    module's PTX when it is loaded (its JIT, cached on disk by CUDA), one
    module after another in a process; with a ptxas (None: the one the
    tilec command finds, tilec._ptxas(); a path; False: none) the
    candidates of a new shape class are compiled to cubins by parallel
    ptxas processes for the device's compute capability and those are
    loaded, a candidate whose cubin fails (ptxas missing or refusing, a
    cubin the driver does not take) falling back to its PTX."""

    def __init__(self, path_or_source, arch=None, pass_options=None, cache=None, cache_dir=None, kernel=None,
                 ptx_dir=None, warmup=2, rounds=5, budget_ms=300.0, max_launches=200, ptxas=None, **consts):
        from . import _cache_dir, _cache_mode, _check_exists, _is_path, _with_device_sms, default_cache_dir
        _check_exists(path_or_source)
        self.source = path_or_source
        if _is_path(path_or_source):
            with open(path_or_source, "rb") as f:
                text = f.read()
        else:
            text = path_or_source.encode()
        self._source_hash = hashlib.sha256(text).hexdigest()
        self.arch, self.consts, self.kernel = arch, dict(consts), kernel
        self.pass_options = pass_options if arch or ptx_dir else _with_device_sms(pass_options)
        self.cache, self.cache_dir = cache, cache_dir
        mode = _cache_mode if cache is None else cache
        folder = cache_dir if cache_dir is not None else _cache_dir
        self.decision_dir = (folder or default_cache_dir()) if mode in ("disk", True) else None
        self.tune_args = dict(warmup=warmup, rounds=rounds, budget_ms=budget_ms, max_launches=max_launches)
        self.ptx_dir = os.fspath(ptx_dir) if ptx_dir is not None else None
        self._index = _read_index(self.ptx_dir, self) if self.ptx_dir else None
        self._winners = {}      # shape class -> Kernel
        self._by_shapes = {}    # the arguments' shapes -> Kernel (skips the class's computation)
        self.decisions = {}     # shape class -> (index, defines text)
        self.last_tuning = None
        self._probe = None
        self.ptxas = ptxas

    # -- what is compiled -------------------------------------------------

    def _consts_text(self):
        from . import _define_value
        return ",".join("%s=%s" % (k, _define_value(k, v)) for k, v in sorted(self.consts.items()))

    def _options_text(self):
        from . import option_list
        return option_list(self.pass_options) or ""

    def _arch(self):
        from . import _default_arch
        return self.arch or _default_arch()

    def _compile(self, index, dims):
        from . import compile as _compile, option_list
        po = option_list(self.pass_options)
        po = (po + "," if po else "") + "tiles.candidate=%d" % index
        mod = _compile(self.source, arch=self.arch, pass_options=po, dims=dims or None, cache=self.cache,
                       cache_dir=self.cache_dir, **self.consts)
        return mod[self.kernel] if self.kernel else mod.entry()

    def _probe_kernel(self):
        """A kernel of the computation (its metadata gives the shape class)."""
        if self._probe is None:
            if self._index is not None:
                self._probe = self._load_file(self._index["entries"][0][3])
            else:
                from . import compile as _compile
                mod = _compile(self.source, arch=self.arch, pass_options=self.pass_options, cache=self.cache,
                               cache_dir=self.cache_dir, **self.consts)
                self._probe = mod[self.kernel] if self.kernel else mod.entry()
        return self._probe

    def _load_file(self, rel):
        from . import load_files
        mod = load_files(os.path.join(self.ptx_dir, rel))
        return mod[self.kernel] if self.kernel else mod.entry()

    # -- the decision's key ----------------------------------------------

    def key(self, shape_class, device=0):
        """The decision's key for shape_class on CUDA device `device`: the
        device's name and compute capability, the compiler's version, the
        source's hash, the kernel, arch, params and pass options, and the
        class. Any change is another key."""
        from . import _get_driver
        rt = _lib.tilert()
        drv = _get_driver()
        name = ctypes.create_string_buffer(256)
        major, minor = ctypes.c_int(), ctypes.c_int()
        st = rt.tilert_device_name(drv, device, name, len(name)) or \
            rt.tilert_device_capability(drv, device, ctypes.byref(major), ctypes.byref(minor))
        if st:
            from . import _rt_error
            raise _rt_error(st)
        return self._key(name.value.decode(errors="replace"), "%d.%d" % (major.value, minor.value), shape_class)

    def _compiler(self):
        if self._index is not None:
            return self._index["compiler"]
        return _lib.tilec().tilec_version().decode()

    def _key(self, device_name, capability, shape_class):
        return "tilec-tune %d|device=%s|cc=%s|compiler=%s|source=%s|kernel=%s|arch=%s|defines=%s|options=%s|" \
               "class=%s" % (_DECISION_FORMAT, device_name, capability, self._compiler(), self._source_hash,
                             self.kernel or "", self._arch(), self._consts_text(), self._options_text(), shape_class)

    # -- calling -----------------------------------------------------------

    def kernel_for(self, *args, stream=None):
        """The kernel kept for args' shape class (tuned on args first if the
        class is new)."""
        sig = tuple(tuple(a.shape) if hasattr(a, "shape") else type(a) for a in args)
        k = self._by_shapes.get(sig)
        if k is not None:
            return k
        cls = shape_class(self._probe_kernel(), *args)
        k = self._winners.get(cls)
        if k is None:
            k = self._tune(cls, args, stream)
        if len(self._by_shapes) < 1024:
            self._by_shapes[sig] = k
        return k

    def __call__(self, *args, stream=None):
        self.kernel_for(*args, stream=stream)(*args, stream=stream)

    def tune(self, *args, stream=None):
        """Tune for args' shape class now (or take the kept decision) and
        return the Tuning (or None when the class was already decided in
        this process); does not launch the winner."""
        before = self.last_tuning
        self.kernel_for(*args, stream=stream)
        return self.last_tuning if self.last_tuning is not before else None

    def _device(self, args):
        for a in args:
            if hasattr(a, "__dlpack_device__"):
                t, i = a.__dlpack_device__()
                if int(t) == 2:   # kDLCUDA
                    return int(i)
        return 0

    def _tune(self, cls, args, stream):
        t0 = time.perf_counter()
        dims = class_dims(cls)
        key = self.key(cls, self._device(args))
        decided = load_decision(self.decision_dir, key) if self.decision_dir else None
        decided = parse_decision(decided) if decided else None
        if self._index is not None:
            entries = [e for e in self._index["entries"] if e[0] == cls]
            if not entries:
                raise ValueError("%s holds no candidates for the shape class %s (it has: %s)" % (
                    self.ptx_dir, cls, ", ".join(sorted({e[0] for e in self._index["entries"]}))))
            cands = [e[2] for e in entries]
        else:
            entries = None
            cands = [defines_text(c) for c in candidates(self.source, self.arch, self.pass_options, dims,
                                                         **self.consts)]
        if decided and decided[0] < len(cands) and cands[decided[0]] == decided[1]:
            idx = decided[0]
            k = self._load_file(entries[idx][3]) if entries else self._compile(idx, dims)
            t1 = time.perf_counter()
            jit = self._load([k], args)
            t2 = time.perf_counter()
            self._keep(cls, k, idx, decided[1])
            self.last_tuning = Tuning(shape_class=cls, candidates=cands, best=idx, from_cache=True,
                                      result=None, compile_s=t1 - t0, load_s=t2 - t1, time_s=0.0,
                                      total_s=time.perf_counter() - t0, key=key, jit=jit)
            return k
        make = (lambda i: self._load_file(entries[i][3])) if entries else (lambda i: self._compile(i, dims))
        ks = _parallel(make, len(cands))
        t1 = time.perf_counter()
        jit = self._load(ks, args)
        t2 = time.perf_counter()
        res = autotune(ks, *args, stream=stream, **self.tune_args) if len(ks) > 1 else None
        t3 = time.perf_counter()
        best = res.best if res else 0
        self._keep(cls, ks[best], best, cands[best])
        if self.decision_dir:
            value = "index=%d defines=%s ms=%s" % (best, cands[best] or "-",
                                                   ",".join("%.6f" % t for t in (res.ms if res else [])) or "-")
            try:
                store_decision(self.decision_dir, key, value)
            except OSError:
                pass   # a read-only folder: kept in memory only, as the compile cache does
        self.last_tuning = Tuning(shape_class=cls, candidates=cands, best=best, from_cache=False, result=res,
                                  compile_s=t1 - t0, load_s=t2 - t1, time_s=t3 - t2,
                                  total_s=time.perf_counter() - t0, key=key, jit=jit)
        return ks[best]

    def _load(self, ks, args):
        """Load the kernels' modules onto the args' device. The driver
        compiles PTX at the load under a lock of its own (modules loaded
        from several threads are compiled one after another: measured on
        the H200 with CUDA 13.0), the most of a first call with a cold JIT
        cache; so, with a ptxas (the ptxas argument), the candidates not
        loaded yet are first compiled to cubins by parallel ptxas
        processes, and a candidate whose cubin fails loads its PTX.
        Returns how the code was made: "ptxas" (every cubin loaded),
        "driver" (the driver's JIT or its cache), "mixed", or "loaded"
        (every module was loaded before)."""
        from . import LaunchError, _get_driver, _ptxas
        import sys
        drv = _get_driver()
        torch = sys.modules.get("torch")
        dev = self._device(args)
        todo = [k for k in ks if k._module._handle is None]
        px = _ptxas() if self.ptxas is None else self.ptxas
        if px and len(todo) > 1:
            major, minor = ctypes.c_int(), ctypes.c_int()
            if not _lib.tilert().tilert_device_capability(drv, dev, ctypes.byref(major), ctypes.byref(minor)):
                cc = "sm_%d%d" % (major.value, minor.value)
                images = _parallel(lambda i: _ptxas_cubin(px, todo[i], cc), len(todo))
                for k, img in zip(todo, images):
                    k._module.image = img
        made = set()

        def load(k):
            if torch is not None and torch.cuda.is_available():
                with torch.cuda.device(dev):
                    k._module._loaded_kernel(k._index)
            else:
                k._module._loaded_kernel(k._index)
        for k in ks:
            m = k._module
            if m._handle is not None:   # loaded by an earlier call
                continue
            try:
                load(k)
                made.add("ptxas" if m.image is not None else "driver")
            except LaunchError:
                if m.image is None:
                    raise
                m.image = None   # the driver refused the cubin: its JIT compiles the PTX
                load(k)
                made.add("driver")
        return made.pop() if len(made) == 1 else "mixed" if made else "loaded"

    def _keep(self, cls, k, idx, defines):
        self._winners[cls] = k
        self.decisions[cls] = (idx, defines)

    def __repr__(self):
        return "<tilec.Tuned %s, %d shape classes decided>" % (
            self.source if isinstance(self.source, (str, os.PathLike)) and "\n" not in str(self.source)
            else "<string>", len(self.decisions))


def _parallel(fn, n):
    """[fn(0), ..., fn(n - 1)], run on up to n threads (the compiler's and
    the driver's calls release the GIL); the first exception is raised."""
    if n <= 1:
        return [fn(i) for i in range(n)]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=min(n, os.cpu_count() or 1, 16)) as ex:
        return list(ex.map(fn, range(n)))


_cubins = {}   # (ptxas, target, sha256 of the PTX) -> cubin: the process's own, as the driver's JIT cache


def _ptxas_cubin(ptxas, kernel, cc):
    """The cubin of kernel's module for the device's `cc` ("sm_90"), an
    arch-specific PTX target ("sm_90a") keeping its suffix, made by one
    ptxas process (or kept from an earlier one in this process); None when
    ptxas fails (the PTX is loaded instead)."""
    arch = kernel.arch or ""
    target = cc + (arch[-1] if arch[-1:] in ("a", "f") else "")
    key = (ptxas, target, hashlib.sha256(kernel._module.ptx.encode()).hexdigest())
    if key not in _cubins:
        img = _run_ptxas(ptxas, kernel._module.ptx, target)
        if img is None:
            return None
        _cubins[key] = img
    return _cubins[key]


def _run_ptxas(ptxas, ptx, target):
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="tilec-ptxas-") as d:
        src, out = os.path.join(d, "m.ptx"), os.path.join(d, "m.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        try:
            r = subprocess.run([ptxas, "-arch=" + target, "-o", out, src], capture_output=True, timeout=600)
        except (OSError, subprocess.SubprocessError):
            return None
        if r.returncode != 0 or not os.path.exists(out):
            return None
        with open(out, "rb") as f:
            return f.read()


def _read_index(folder, tuned):
    """The index of a precompile_candidates folder, checked against what
    `tuned` would compile: {"compiler", "entries": [(class, index,
    defines, file)]}."""
    path = os.path.join(folder, INDEX_NAME)
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise FileNotFoundError("ptx_dir %s: no %s (tilec.precompile_candidates writes it): %s"
                                % (folder, INDEX_NAME, e)) from None
    if not lines or lines[0] != "tilec-candidates 1":
        raise ValueError("%s is not a candidates index (first line %r)" % (path, lines[0] if lines else ""))
    head, entries = {}, []
    for ln in lines[1:]:
        word, _, rest = ln.partition(" ")
        if word == "candidate":
            cls, idx, defs, rel = rest.split(" ")
            entries.append((cls, int(idx), "" if defs == "-" else defs, rel))
        elif word:
            head[word] = rest
    want = {"source": tuned._source_hash, "kernel": tuned.kernel or "", "arch": tuned._arch(),
            "defines": tuned._consts_text(), "options": tuned._options_text()}
    for field, v in want.items():
        if head.get(field, "") != v:
            raise ValueError("ptx_dir %s was made for %s %r, not %r (tilec.precompile_candidates again)"
                             % (folder, field, head.get(field, ""), v))
    if not entries:
        raise ValueError("%s lists no candidates" % path)
    return {"compiler": head.get("compiler", ""), "entries": entries}


def precompile_candidates(path_or_source, folder, dims_list, arch, pass_options=None, kernel=None, **consts):
    """Compile the candidates of each shape class in dims_list (dicts of dim
    sizes, rounded to their class) into folder: cand_<n>_<i>.ptx + .meta and
    the index candidates.txt that Tuned(ptx_dir=folder) reads, for a GPU
    host without libtilec. arch must be given (the GPU's target), and
    pass_options should state the device's facts (target.sms,
    target.smem-per-block) as tilec.compile would find them there. Returns
    [(class, index, defines, seconds to compile)]."""
    from . import compile as _compile
    os.makedirs(folder, exist_ok=True)
    probe = Tuned(path_or_source, arch=arch, pass_options=pass_options, kernel=kernel, cache="off", **consts)
    k0 = probe._probe_kernel()
    names = k0.dims
    lines = ["tilec-candidates 1", "compiler " + _lib.tilec().tilec_version().decode(),
             "source " + probe._source_hash, "kernel " + (kernel or ""), "arch " + arch,
             "defines " + probe._consts_text(), "options " + probe._options_text()]
    done = []
    for n, dims in enumerate(dims_list):
        missing = [d for d in names if d not in dims]
        if missing:
            raise ValueError("dims %r lack %s (the kernel's dims: %s)" % (dims, ", ".join(missing), ", ".join(names)))
        cls = class_text(names, dims)
        cd = class_dims(cls)
        for i, c in enumerate(candidates(path_or_source, arch, pass_options, cd, **consts)):
            t0 = time.perf_counter()
            po = probe._options_text()
            po = (po + "," if po else "") + "tiles.candidate=%d" % i
            mod = _compile(path_or_source, arch=arch, pass_options=po, dims=cd, cache="off", **consts)
            secs = time.perf_counter() - t0
            rel = "cand_%d_%d.ptx" % (n, i)
            with open(os.path.join(folder, rel), "w") as f:
                f.write(mod.ptx)
            with open(os.path.join(folder, rel[:-4] + ".meta"), "w") as f:
                f.write(mod.meta)
            lines.append("candidate %s %d %s %s" % (cls, i, defines_text(c) or "-", rel))
            done.append((cls, i, defines_text(c), secs))
    with open(os.path.join(folder, INDEX_NAME), "w") as f:
        f.write("\n".join(lines) + "\n")
    return done
