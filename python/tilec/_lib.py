"""ctypes bindings of libtilec (include/tilec.h) and libtilert (include/tilert.h).

Where the libraries are looked for, first match wins (docs/python.md,
"Finding the libraries"):
  1. the folders given to tilec.set_library_dir(), else $TILEC_LIB_DIR
     (folders separated by os.pathsep); when either is set, nothing else;
  2. the package's own folder, tilec/lib/ (filled by `pip install` with
     TILEC_BUNDLE_LIBS set);
  3. the install prefix's lib/: the prefix recorded by `pip install` with
     TILEC_PREFIX set (tilec/_install.py), then sys.prefix (a venv or
     `pip install --prefix` into the same prefix as `cmake --install`);
  4. the build tree of a source checkout (../../build/lib from here);
  5. the system loader (LD_LIBRARY_PATH, ld.so.cache).
Each library is loaded on first use, so a host with only libtilert (a GPU
box that launches precompiled PTX) or only libtilec (a CPU box that
compiles) works. `paths` records the file each was loaded from.
"""
import ctypes
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_explicit = None   # set_library_dir()
paths = {}         # "libtilec.so" -> the path it was loaded from


def set_library_dir(dirs):
    """Look for the libraries in `dirs` (a folder, or a list of them) only.
    Takes effect for a library not loaded yet."""
    global _explicit
    _explicit = [dirs] if isinstance(dirs, (str, os.PathLike)) else list(dirs)


def _install_prefix():
    try:
        from . import _install
        return _install.PREFIX
    except ImportError:  # not installed by pip: a source checkout
        return None


def search_dirs():
    """The folders searched, in order (before the system loader)."""
    if _explicit is not None:
        return [os.fspath(d) for d in _explicit]
    env = os.environ.get("TILEC_LIB_DIR")
    if env:
        return [d for d in env.split(os.pathsep) if d]
    dirs = [os.path.join(_HERE, "lib")]
    for prefix in (_install_prefix(), sys.prefix):
        if prefix:
            dirs += [os.path.join(prefix, "lib"), os.path.join(prefix, "lib64")]
    dirs.append(os.path.normpath(os.path.join(_HERE, "..", "..", "build", "lib")))
    return dirs


def _candidates(name):
    soname = name + ".0"
    for d in search_dirs():
        yield os.path.join(d, name)
        yield os.path.join(d, soname)
    if _explicit is None and not os.environ.get("TILEC_LIB_DIR"):
        yield soname  # the default loader (LD_LIBRARY_PATH, ld.so.cache)
        yield name


def _open(name):
    errors = []
    for path in _candidates(name):
        if os.sep in path and not os.path.exists(path):
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
            continue
        paths[name] = path
        return lib
    raise OSError("cannot load %s (searched %s; set TILEC_LIB_DIR or call tilec.set_library_dir): %s"
                  % (name, ", ".join(search_dirs()) or "nothing", "; ".join(errors) or "not found"))


# ---- libtilec -------------------------------------------------------------

TILEC_EMIT_TIR, TILEC_EMIT_PTX = 2, 4
TILEC_CACHE_OFF, TILEC_CACHE_MEMORY, TILEC_CACHE_DISK = 0, 1, 2
TILEC_OUT_TIR, TILEC_OUT_PTX, TILEC_OUT_META, TILEC_OUT_REPORT = 2, 4, 5, 8


class TilecDefine(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


class TilecOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("arch", ctypes.c_char_p),
        ("family_portable", ctypes.c_int),
        ("opt_level", ctypes.c_int),
        ("emit", ctypes.c_int),
        ("defines", ctypes.POINTER(TilecDefine)),
        ("ndefines", ctypes.c_size_t),
        ("print_after", ctypes.POINTER(ctypes.c_char_p)),
        ("nprint_after", ctypes.c_size_t),
        ("time_passes", ctypes.c_int),
        ("print_locs", ctypes.c_int),
        ("verify_each", ctypes.c_int),
        ("report", ctypes.c_int),
        ("passes", ctypes.c_char_p),
        ("language", ctypes.c_char_p),
        ("pass_options", ctypes.c_char_p),
        ("cache", ctypes.c_int),
        ("cache_dir", ctypes.c_char_p),
        ("dims", ctypes.c_char_p),
        ("warnings_off", ctypes.c_uint),
        ("warnings_as_errors", ctypes.c_int),
        ("debug_info", ctypes.c_int),
        ("keep_ir", ctypes.c_int),
        ("ptxas", ctypes.c_char_p),
        ("ptxas_no_check", ctypes.c_int),
        # Room for fields a newer libtilec may have: tilec_options_init
        # writes its whole struct; struct_size is then set to the fields above.
        ("_reserved", ctypes.c_char * 512),
    ]


class TilecArg(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("rank", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("dtype", ctypes.c_char_p), ("f", ctypes.c_double), ("i", ctypes.c_int64)]


class TilecDiag(ctypes.Structure):
    _fields_ = [("severity", ctypes.c_int), ("file", ctypes.c_char_p),
                ("line", ctypes.c_int), ("col", ctypes.c_int), ("message", ctypes.c_char_p)]


_tilec = None


def tilec():
    """libtilec, with prototypes set (loaded on first use)."""
    global _tilec
    if _tilec is None:
        lib = _open("libtilec.so")
        vp, cp, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
        res_pp = ctypes.POINTER(ctypes.c_void_p)
        opts_p = ctypes.POINTER(TilecOptions)
        _proto(lib, "tilec_options_init", None, [opts_p])
        _proto(lib, "tilec_compile_file", ctypes.c_int, [cp, opts_p, res_pp])
        _proto(lib, "tilec_compile_string", ctypes.c_int, [cp, cp, sz, opts_p, res_pp])
        _proto(lib, "tilec_result_free", None, [vp])
        _proto(lib, "tilec_result_status", ctypes.c_int, [vp])
        _proto(lib, "tilec_result_text", cp, [vp, ctypes.c_int])
        _proto(lib, "tilec_result_arch", cp, [vp])
        _proto(lib, "tilec_result_num_diags", sz, [vp])
        _proto(lib, "tilec_result_diag", ctypes.POINTER(TilecDiag), [vp, sz])
        _proto(lib, "tilec_result_diag_text", cp, [vp])
        _proto(lib, "tilec_status_string", cp, [ctypes.c_int])
        _proto(lib, "tilec_version", cp, [])
        _proto(lib, "tilec_result_cache", ctypes.c_int, [vp])
        _proto(lib, "tilec_cache_clear", ctypes.c_int, [cp])
        _proto(lib, "tilec_interpret", ctypes.c_int, [vp, cp, ctypes.POINTER(TilecArg), sz, res_pp])
        _proto(lib, "tilec_result_num_kernels", sz, [vp])
        _proto(lib, "tilec_result_kernel_name", cp, [vp, sz])
        _proto(lib, "tilec_result_kernel_num_params", sz, [vp, sz])
        _proto(lib, "tilec_result_kernel_param", ctypes.c_int,
               [vp, sz, sz, ctypes.POINTER(cp), ctypes.POINTER(cp), ctypes.POINTER(ctypes.c_int)])
        _proto(lib, "tilec_candidates_file", ctypes.c_int, [cp, opts_p, res_pp])
        _proto(lib, "tilec_candidates_string", ctypes.c_int, [cp, cp, sz, opts_p, res_pp])
        _proto(lib, "tilec_result_num_candidates", sz, [vp])
        _proto(lib, "tilec_result_candidate", cp, [vp, sz])
        _tilec = lib
    return _tilec


# ---- libtilert ------------------------------------------------------------

TILERT_OK = 0
TILERT_ERR_NO_DRIVER, TILERT_ERR_NO_DEVICE, TILERT_ERR_NOT_FOUND = 3, 4, 6
TILERT_MAX_RANK = 8
TILERT_ARG_TENSOR, TILERT_ARG_INT, TILERT_ARG_FLOAT = 0, 1, 2
TILERT_PARAM_TENSOR, TILERT_PARAM_SCALAR = 0, 1


class _ArgValue(ctypes.Union):
    _fields_ = [("tensor", ctypes.c_void_p), ("i", ctypes.c_int64), ("f", ctypes.c_double)]


class TilertArg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("u", _ArgValue)]


class TilertParamInfo(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_int),
        ("dtype", ctypes.c_char_p),
        ("rank", ctypes.c_int),
        ("dims", ctypes.c_char_p * TILERT_MAX_RANK),
        ("extents", ctypes.c_int64 * TILERT_MAX_RANK),
        ("align", ctypes.c_int),
    ]


# DLPack (dlpack/dlpack.h): only what the Python side builds or reads.
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


TILERT_TUNE_MAX = 16


class TilertTuneOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("warmup", ctypes.c_int), ("rounds", ctypes.c_int),
                ("budget_ms", ctypes.c_double), ("max_launches", ctypes.c_int)]


class TilertTuneResult(ctypes.Structure):
    _fields_ = [("best", ctypes.c_size_t), ("n", ctypes.c_size_t),
                ("ms", ctypes.c_double * TILERT_TUNE_MAX), ("min_ms", ctypes.c_double * TILERT_TUNE_MAX),
                ("launches", ctypes.c_int), ("rounds", ctypes.c_int), ("wall_ms", ctypes.c_double)]


_tilert = None


def tilert():
    """libtilert, with prototypes set (loaded on first use)."""
    global _tilert
    if _tilert is None:
        lib = _open("libtilert.so")
        vp, cp, sz, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int
        pp = ctypes.POINTER(ctypes.c_void_p)
        ip = ctypes.POINTER(ctypes.c_int)
        _proto(lib, "tilert_last_error", cp, [])
        _proto(lib, "tilert_status_string", cp, [i])
        _proto(lib, "tilert_driver_open", i, [pp])
        _proto(lib, "tilert_device_arch", i, [vp, i, cp, sz])
        _proto(lib, "tilert_arch_for_capability", i, [i, i, cp, sz])
        _proto(lib, "tilert_device_count", i, [vp, ip])
        _proto(lib, "tilert_synchronize", i, [vp])
        _proto(lib, "tilert_module_load", i, [vp, cp, cp, pp])
        _proto(lib, "tilert_module_load_image", i, [vp, cp, sz, cp, pp])
        _proto(lib, "tilert_module_from_meta", i, [cp, pp])
        _proto(lib, "tilert_module_free", None, [vp])
        _proto(lib, "tilert_module_num_kernels", sz, [vp])
        _proto(lib, "tilert_module_kernel_at", vp, [vp, sz])
        _proto(lib, "tilert_module_get_kernel", i, [vp, cp, pp])
        _proto(lib, "tilert_kernel_name", cp, [vp])
        _proto(lib, "tilert_kernel_arch", cp, [vp])
        _proto(lib, "tilert_kernel_threads", i, [vp])
        _proto(lib, "tilert_kernel_smem", i, [vp])
        _proto(lib, "tilert_kernel_num_params", sz, [vp])
        _proto(lib, "tilert_kernel_param", i, [vp, sz, ctypes.POINTER(TilertParamInfo)])
        _proto(lib, "tilert_kernel_grid_rule", cp, [vp])
        _proto(lib, "tilert_kernel_num_dims", sz, [vp])
        _proto(lib, "tilert_kernel_dim", cp, [vp, sz])
        _proto(lib, "tilert_check_args", i,
               [vp, ctypes.POINTER(TilertArg), sz, cp, sz, vp])
        _proto(lib, "tilert_launch", i, [vp, ctypes.POINTER(TilertArg), sz, vp])
        _proto(lib, "tilert_kernel_num_tmaps", sz, [vp])
        _proto(lib, "tilert_kernel_fallback", vp, [vp])
        _proto(lib, "tilert_kernel_param_written", i, [vp, sz])
        _proto(lib, "tilert_kernel_last_variant", vp, [vp, cp, sz])
        # tilert_launch with every argument an address or a size, for the
        # packed path of tilec.Kernel (_Fast): Python ints go in as they are
        launch_raw = lib["tilert_launch"]    # a function object of its own
        launch_raw.restype, launch_raw.argtypes = i, [vp, vp, sz, vp]
        lib.launch_raw = launch_raw
        _proto(lib, "tilert_device_capability", i, [vp, i, ip, ip])
        _proto(lib, "tilert_device_name", i, [vp, i, cp, sz])
        _proto(lib, "tilert_tune_options_init", None, [ctypes.POINTER(TilertTuneOptions)])
        _proto(lib, "tilert_tune", i, [ctypes.POINTER(vp), sz, ctypes.POINTER(TilertArg), sz, vp,
                                        ctypes.POINTER(TilertTuneOptions), ctypes.POINTER(TilertTuneResult)])
        _proto(lib, "tilert_shape_class", i, [vp, ctypes.POINTER(TilertArg), sz, cp, sz])
        _proto(lib, "tilert_tune_load", i, [cp, cp, cp, sz])
        _proto(lib, "tilert_tune_store", i, [cp, cp, cp])
        _tilert = lib
    return _tilert


def _proto(lib, name, restype, argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = argtypes


# PyCapsule access for DLPack capsules.
_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def dltensor_of_capsule(capsule):
    """The DLTensor* inside an unconsumed "dltensor" capsule (DLManagedTensor
    starts with its DLTensor). The capsule keeps ownership: its destructor
    calls the producer's deleter once the capsule is collected."""
    if not _capsule_is_valid(capsule, b"dltensor"):
        raise TypeError("__dlpack__() did not return an unconsumed 'dltensor' capsule")
    return _capsule_get(capsule, b"dltensor")
