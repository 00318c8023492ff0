"""memhist._arrow - ctypes bindings to libmemhist_arrow.so (include/memhist/arrow.h).

A recording opens as an ArrowFile (its first pass runs in C, without the
GIL); each of its tables comes out as an Arrow C stream, which pyarrow
takes over without copying (pyarrow.RecordBatchReader._import_from_c).
The streams produce their batches on threads of the library's own, so
reading one file's events overlaps with what the caller does with them.
"""
import ctypes

from . import _native

TABLES = ("runs", "events", "steps", "stacks", "frames", "segments_at_peak")
SCHEMA_VERSION = 1  # MH_ARROW_SCHEMA_VERSION


class _Stream(ctypes.Structure):
    """struct ArrowArrayStream."""
    _fields_ = [("get_schema", ctypes.c_void_p), ("get_next", ctypes.c_void_p),
                ("get_last_error", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


class _Schema(ctypes.Structure):
    """struct ArrowSchema."""
    _fields_ = [("format", ctypes.c_void_p), ("name", ctypes.c_void_p),
                ("metadata", ctypes.c_void_p), ("flags", ctypes.c_int64),
                ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
                ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p),
                ("private_data", ctypes.c_void_p)]


class _Opts(ctypes.Structure):
    """struct mh_arrow_opts."""
    _fields_ = [("batch_rows", ctypes.c_uint32)]


class _Info(ctypes.Structure):
    """struct mh_arrow_info."""
    _fields_ = [("run", ctypes.c_char_p), ("rank", ctypes.c_int64), ("events", ctypes.c_uint64),
                ("damaged", ctypes.c_int)]


_lib = None


def lib():
    """libmemhist_arrow.so, its functions declared (OSError if it is not found)."""
    global _lib
    if _lib is None:
        lb = _native._load("libmemhist_arrow.so")
        vp, cp, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
        lb.mh_arrow_open.argtypes = [cp, ctypes.POINTER(_Opts), ctypes.POINTER(vp), cp, sz]
        lb.mh_arrow_close.argtypes = [vp]
        lb.mh_arrow_close.restype = None
        lb.mh_arrow_warning.argtypes = [vp, sz]
        lb.mh_arrow_warning.restype = cp
        lb.mh_arrow_info.argtypes = [vp, ctypes.POINTER(_Info)]
        lb.mh_arrow_info.restype = None
        lb.mh_arrow_stream.argtypes = [vp, cp, ctypes.POINTER(_Stream)]
        lb.mh_arrow_schema.argtypes = [cp, ctypes.POINTER(_Schema)]
        lb.mh_arrow_progress.argtypes = [vp, ctypes.POINTER(ctypes.c_uint64),
                                         ctypes.POINTER(ctypes.c_uint64)]
        lb.mh_arrow_progress.restype = None
        _lib = lb
    return _lib


def pyarrow():
    """pyarrow, or an ImportError that says how to install it."""
    try:
        import pyarrow as pa
    except ImportError as e:
        raise ImportError("memhist's tables need pyarrow, which this Python cannot import (%s): "
                          "pip install pyarrow" % e) from None
    return pa


def _check_table(table):
    if table not in TABLES:
        raise ValueError("no table %r: memhist's tables are %s" % (table, ", ".join(TABLES)))


def schema(table):
    """The pyarrow.Schema of `table`."""
    _check_table(table)
    pa = pyarrow()
    s = _Schema()
    rc = lib().mh_arrow_schema(table.encode(), ctypes.byref(s))
    if rc < 0:
        raise OSError("cannot describe table %s: %s" % (table, _native.strerror(rc)))
    return pa.Schema._import_from_c(ctypes.addressof(s))


class ArrowFile:
    """One recording opened for its tables; close() it (or use `with`)."""

    def __init__(self, path, batch_rows=0):
        self.path = path
        self._h = None
        err = ctypes.create_string_buffer(1024)
        handle = ctypes.c_void_p()
        opts = _Opts(batch_rows)
        rc = lib().mh_arrow_open(str(path).encode(), ctypes.byref(opts), ctypes.byref(handle),
                                 err, len(err))
        if rc < 0:
            raise OSError(err.value.decode("utf-8", "replace") or
                          "%s: %s" % (path, _native.strerror(rc)))
        self._h = handle
        info = _Info()
        lib().mh_arrow_info(handle, ctypes.byref(info))
        self.run = info.run.decode()
        self.rank = None if info.rank < 0 else info.rank
        self.events = info.events
        self.damaged = bool(info.damaged)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        if self._h:
            lib().mh_arrow_close(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def warnings(self):
        """What reading the file had to say (a damaged file read up to its damage, ...)."""
        out, i = [], 0
        while True:
            w = lib().mh_arrow_warning(self._h, i)
            if w is None:
                return out
            out.append(w.decode("utf-8", "replace"))
            i += 1

    def progress(self):
        """(events replayed by the events stream, events in the file)."""
        done, total = ctypes.c_uint64(), ctypes.c_uint64()
        lib().mh_arrow_progress(self._h, ctypes.byref(done), ctypes.byref(total))
        return done.value, total.value

    def reader(self, table):
        """A pyarrow.RecordBatchReader of `table`'s batches, read as they are made."""
        _check_table(table)
        pa = pyarrow()
        s = _Stream()
        rc = lib().mh_arrow_stream(self._h, table.encode(), ctypes.byref(s))
        if rc < 0:
            raise OSError("%s: cannot read table %s: %s" % (self.path, table, _native.strerror(rc)))
        return pa.RecordBatchReader._import_from_c(ctypes.addressof(s))
