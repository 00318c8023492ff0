"""memhist._native - ctypes bindings to libmemhist and libmemhist_torch.

Loads the two shared libraries (from $MEMHIST_LIB_DIR, the package directory,
or the system loader path, in that order) and declares the C functions the
package uses. libmemhist_torch needs torch's own libraries, so torch is
imported first. Nothing here prints.
"""
import ctypes
import os

_LIBS = {}


class Counts(ctypes.Structure):
    """struct mh_recorder_counts (include/memhist/recorder.h)."""
    _fields_ = [("emitted", ctypes.c_uint64), ("dropped", ctypes.c_uint64),
                ("written", ctypes.c_uint64), ("threads", ctypes.c_uint32)]


class TorchOpts(ctypes.Structure):
    """struct mh_torch_opts (include/memhist/torch.h)."""
    _fields_ = [("stacks", ctypes.c_int), ("op_ranges", ctypes.c_int),
                ("ctx_slots", ctypes.c_uint32), ("torch_version", ctypes.c_char_p)]


STACKS = {"python": 2, "all": 3, "none": 1, None: 1}


def _candidates(name):
    dirs = []
    if os.environ.get("MEMHIST_LIB_DIR"):
        dirs.append(os.environ["MEMHIST_LIB_DIR"])
    dirs.append(os.path.dirname(os.path.abspath(__file__)))
    paths = [os.path.join(d, name) for d in dirs]
    return [p for p in paths if os.path.exists(p)] + [name]


def _load(name):
    errors = []
    for path in _candidates(name):
        try:
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            errors.append(str(e))
    raise OSError("cannot load %s (set MEMHIST_LIB_DIR to the directory holding it): %s"
                  % (name, "; ".join(errors)))


def core():
    """libmemhist: the recorder."""
    if "core" not in _LIBS:
        lib = _load("libmemhist.so")
        lib.mh_strerror.restype = ctypes.c_char_p
        lib.mh_strerror.argtypes = [ctypes.c_int]
        lib.mh_recorder_close.argtypes = [ctypes.c_void_p]
        lib.mh_recorder_set_meta.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.mh_recorder_get_counts.argtypes = [ctypes.c_void_p, ctypes.POINTER(Counts)]
        lib.mh_recorder_get_counts.restype = None
        lib.mh_recorder_failure.argtypes = [ctypes.c_void_p]
        lib.mh_recorder_failure.restype = ctypes.c_char_p
        _LIBS["core"] = lib
    return _LIBS["core"]


def bridge():
    """libmemhist_torch: the torch bridge (imports torch first)."""
    if "torch" not in _LIBS:
        import torch  # noqa: F401  (loads libc10 & co. before the bridge)
        core()
        lib = _load("libmemhist_torch.so")
        lib.mh_torch_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.mh_torch_attach.argtypes = [ctypes.c_void_p, ctypes.POINTER(TorchOpts)]
        lib.mh_torch_mark.argtypes = [ctypes.c_char_p]
        lib.mh_torch_metadata.argtypes = [ctypes.c_char_p]
        lib.mh_torch_error.restype = ctypes.c_char_p
        _LIBS["torch"] = lib
    return _LIBS["torch"]


def strerror(code):
    return core().mh_strerror(code).decode("utf-8", "replace")
