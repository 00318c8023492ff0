"""memhist._native - ctypes bindings to libmemhist, libmemhist_torch and
libmemhist_pyhook.

Loads the shared libraries and declares the C functions the package
uses. They are looked for in $MEMHIST_LIB_DIR, then in the installation
this package belongs to (pip wheel or `cmake --install`: _install.py says
where, relative to this directory), then in a build tree (the package seen
through BUILD/python/memhist, or the source tree's build/), then by the
system loader. libmemhist_torch needs torch's own libraries, so torch is
imported first. Nothing here prints; failures raise OSError with every
place tried and why it failed.
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
                ("ctx_slots", ctypes.c_uint32), ("torch_version", ctypes.c_char_p),
                ("max_frames", ctypes.c_int), ("caller_steps", ctypes.c_int)]


FRAMES_MAX = 512  # MH_TORCH_FRAMES_MAX (include/memhist/torch.h)


STACKS = {"python": 2, "all": 3, "none": 1, None: 1}


def _lib_dirs():
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = []
    if os.environ.get("MEMHIST_LIB_DIR"):
        dirs.append(os.environ["MEMHIST_LIB_DIR"])
    try:
        from . import _install
        dirs.append(os.path.join(here, _install.LIB_DIR))
    except ImportError:  # not installed: a build tree
        dirs.append(os.path.join(here, "..", ".."))
        dirs.append(os.path.join(here, "..", "..", "..", "build"))
    return [os.path.normpath(d) for d in dirs]


def _candidates(name):
    paths = [os.path.join(d, name) for d in _lib_dirs()]
    return [p for p in paths if os.path.exists(p)] + [name]


def _load(name, kind=ctypes.CDLL):
    errors = []
    for path in _candidates(name):
        try:
            return kind(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            errors.append(str(e))
    raise OSError("cannot load %s (looked in %s; set MEMHIST_LIB_DIR to the directory holding it): %s"
                  % (name, ", ".join(_lib_dirs()), "; ".join(errors)))


def tool():
    """The path of the memhist command-line tool, or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from . import _install
        dirs = [os.path.join(here, _install.BIN_DIR)]
    except ImportError:
        dirs = [os.path.join(here, "..", ".."), os.path.join(here, "..", "..", "..", "build")]
    for d in dirs:
        path = os.path.normpath(os.path.join(d, "memhist"))
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


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


def _bridge_hint(torch):
    """Why the bridge may be missing or refuse to load, from the install record."""
    try:
        from . import _install
    except ImportError:
        return "build it with torch installed (MEMHIST_WITH_TORCH=ON)"
    if not _install.TORCH_VERSION:
        return "this memhist was built without torch; install torch, then reinstall memhist"
    if _install.TORCH_VERSION != torch.__version__:
        return ("it was built against torch %s but this is torch %s; reinstall memhist"
                % (_install.TORCH_VERSION, torch.__version__))
    return "reinstall memhist"


def bridge():
    """libmemhist_torch: the torch bridge (imports torch first)."""
    if "torch" not in _LIBS:
        import torch  # (loads libc10 & co. before the bridge)
        core()
        try:
            lib = _load("libmemhist_torch.so")
        except OSError as e:
            raise OSError("%s; %s" % (e, _bridge_hint(torch))) from None
        lib.mh_torch_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.mh_torch_attach.argtypes = [ctypes.c_void_p, ctypes.POINTER(TorchOpts)]
        lib.mh_torch_mark.argtypes = [ctypes.c_char_p]
        lib.mh_torch_step_devices.argtypes = [ctypes.c_uint64]
        lib.mh_torch_param_devices.argtypes = [ctypes.c_uint64]
        lib.mh_torch_optimizer_step_of.argtypes = [ctypes.c_int, ctypes.c_uint64]
        lib.mh_torch_closure.argtypes = [ctypes.c_int]
        lib.mh_torch_optimizer_gone.argtypes = [ctypes.c_uint64]
        lib.mh_torch_watch_ranges.argtypes = [ctypes.c_int]
        lib.mh_torch_metadata.argtypes = [ctypes.c_char_p]
        lib.mh_torch_error.restype = ctypes.c_char_p
        lib.mh_torch_steps_ended.restype = ctypes.c_int64
        lib.mh_torch_steps_ended.argtypes = []
        _LIBS["torch"] = lib
    return _LIBS["torch"]


def pyhook():
    """libmemhist_pyhook: the module scope hooks and tensor tags in C (PyDLL: the GIL stays
    held in every call, they use Python's API)."""
    if "pyhook" not in _LIBS:
        core()
        lib = _load("libmemhist_pyhook.so", ctypes.PyDLL)
        lib.mh_scopehook_open.restype = ctypes.py_object
        lib.mh_scopehook_open.argtypes = [ctypes.c_void_p] + [ctypes.py_object] * 4
        lib.mh_tensortag.restype = ctypes.py_object
        lib.mh_tensortag.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_uint, ctypes.c_int,
                                     ctypes.py_object]
        lib.mh_scopehook_monitor.restype = ctypes.py_object
        lib.mh_scopehook_monitor.argtypes = [ctypes.py_object]
        lib.mh_scopehook_call.restype = ctypes.py_object
        lib.mh_scopehook_call.argtypes = [ctypes.py_object]
        lib.mh_scopehook_watch.restype = ctypes.c_int
        lib.mh_scopehook_watch.argtypes = [ctypes.py_object]
        for f in (lib.mh_scopehook_close_backward, lib.mh_scopehook_off, lib.mh_scopehook_release,
                  lib.mh_scopehook_call_stop):
            f.restype = None
            f.argtypes = []
        _LIBS["pyhook"] = lib
    return _LIBS["pyhook"]


def strerror(code):
    return core().mh_strerror(code).decode("utf-8", "replace")
