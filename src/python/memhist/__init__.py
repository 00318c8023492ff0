"""memhist - record the GPU memory history of a PyTorch program.

    import memhist
    with memhist.start("run.memhist"):          # or memhist.start(...) / memhist.stop()
        for batch in data:
            ...
            optimizer.step()                     # steps are found automatically
            memhist.mark("after eval")           # optional named marks

Then `memhist report run.memhist`. `memhist record -- python train.py` does the
same for an unchanged program (see memhist.bootstrap).

Reading recordings back (needs pyarrow; the tables are in docs/export.md):

    data = memhist.read("run.memhist.rank*")     # a pyarrow.Table per table
    data.events.to_pandas()
    for batch in memhist.stream("run.memhist", "events"):   # bounded memory
        ...

Recording attaches to torch's CUDA caching allocator when CUDA initializes
(through torch.cuda's lazy-initialization queue, so CUDA is never initialized
earlier than the program itself does it). A failure never stops the program:
it becomes a MemhistWarning with the reason, kept in status() (also after
stop()) and written to the file's metadata. Without a CUDA device no file
is written, as with `memhist record`.
"""
import atexit
import ctypes
import os
import sys
import threading
import warnings

from . import _native, _rank, _scopenames, _scopes, _steps
from ._warning import MemhistWarning

__all__ = ["start", "stop", "step", "mark", "status", "Session", "MemhistWarning", "StepLimitReached",
           "read", "stream", "schema"]

StepLimitReached = _steps.StepLimitReached

# `pytest -p memhist` imports this package when memhist is not installed
# (an installation's pytest11 entry point "memhist" names the plugin itself)
pytest_plugins = ["memhist.pytest_plugin"]

_lock = threading.RLock()
_session = None
_last = None


def _scope_hooks():
    """The module scope hooks in C, or None: the Python hooks serve
    (MEMHIST_SCOPES_IMPL=python asks for them; their library may be absent)."""
    if os.environ.get("MEMHIST_SCOPES_IMPL", "native") == "python":
        return None
    try:
        return _native.pyhook()
    except (OSError, AttributeError):
        return None


def _not_recording(session, reason):
    session.status = "not recording: %s" % reason
    if not session.lazy_open:  # under `memhist record` the tool reports it
        warnings.warn("memhist: %s" % session.status, MemhistWarning, stacklevel=3)


class Session:
    """One recording; also a context manager that stops it on exit."""

    def __init__(self, path, stacks, op_ranges, lazy_open, meta=None, frames=None, stop_after=None,
                 finish=None):
        self.path = os.path.abspath(path)
        self.stop_after = stop_after
        self.meta = meta or {}
        self.stacks = stacks
        self.frames = frames
        self.op_ranges = op_ranges
        self.lazy_open = lazy_open
        self.finish = finish  # finishes the recording and reports it (memhist record), or None: stop()
        self.rec = None
        self.attached = False
        self.status = "waiting for CUDA initialization"
        self.counts = None
        self.scopes = None
        self.steps = None
        self.closures = None
        self.limit = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        stop()
        return False

    # -- internals -------------------------------------------------------
    def _claim(self):
        """Creates the file exclusively, taking the next free name (PATH.2,
        PATH.3, ...) when PATH exists; never truncates another's file."""
        wanted, n = self.path, 1
        while True:
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                break
            except FileExistsError:
                n += 1
                self.path = "%s.%d" % (wanted, n)
        if self.path != wanted:
            sys.stderr.write("memhist: %s: %s exists; recording to %s\n" % (_rank.who(), wanted, self.path))

    def open(self):
        lib = _native.bridge()
        rec = ctypes.c_void_p()
        if self.lazy_open:  # under `memhist record`: one file per process
            self._claim()
        rc = lib.mh_torch_open(self.path.encode(), None, ctypes.byref(rec))
        if rc < 0:
            raise OSError("cannot create %s: %s" % (self.path, _native.strerror(rc)))
        self.rec = rec
        for key, value in self.meta.items():
            _native.core().mh_recorder_set_meta(rec, key.encode(), value.encode())

    def attach(self):
        """Runs from torch.cuda's lazy-init queue (or at once if CUDA is up)."""
        with _lock:
            if _session is not self or self.attached:
                return
            try:
                import torch
                if self.rec is None:
                    self.open()
                lib = _native.bridge()
                caller_steps = not _steps.from_record_function()
                opts = _native.TorchOpts(_native.STACKS[self.stacks], int(bool(self.op_ranges)), 0,
                                         torch.__version__.encode(), self.frames or 0, int(caller_steps))
                rc = lib.mh_torch_attach(self.rec, ctypes.byref(opts))
                if rc < 0:
                    _not_recording(self, lib.mh_torch_error().decode("utf-8", "replace"))
                    return
                self.attached = True
                self.status = "recording"
                if os.environ.get("MEMHIST_VDEVICE") == "1":  # under `memhist simulate`
                    _native.core().mh_recorder_set_meta(self.rec, b"virtual_device", _vdevice_meta())
                _wrap_metadata(torch, lib)
                if caller_steps:
                    self.steps = _steps.StepHooks(lib, self._step_hooks_failed)
                    self.steps.install_pre(torch)
                if os.environ.get("MEMHIST_SCOPES", "1") != "0":
                    self.scopes = _scopes.Scopes(_native.core(), self.rec, self, lib, _scope_hooks())
                    self.scopes.install(torch)
                    _native.core().mh_recorder_set_meta(self.rec, b"module_scopes", self.scopes.impl.encode())
                if self.steps is not None:
                    self.steps.install_post(torch)
                if self.stop_after:
                    self.limit = _steps.StepLimit(lib, self.stop_after, self._note, self._finish,
                                                  self._limit_failed)
                    self.limit.install(torch)
                self.closures = _steps.ClosurePhases(lib, self.scopes and self.scopes.closure_done,
                                                     self._closure_hook_failed)
                self.closures.install(torch)
                atexit.register(stop)
            except Exception as e:  # never break the program
                _not_recording(self, e)

    def _step_hooks_failed(self, e):
        """The bridge's record_function callback takes the steps over."""
        if self.steps is not None:
            self.steps.remove()
            self.steps = None
            self.status += "; optimizer step hooks off (%s): steps from record_function ranges" % e
            _native.bridge().mh_torch_watch_ranges(1)

    def _note(self, key, value):
        if self.rec is not None:
            _native.core().mh_recorder_set_meta(self.rec, key.encode(), value.encode())

    def _finish(self):
        """Finishes the recording where the program is ended outside its
        main thread: as at exit under `memhist record` (its status line too)."""
        if self.finish is not None:
            self.finish()
        else:
            stop()

    def _limit_failed(self, e):
        self.status += "; step limit off: %s" % e
        if self.limit is not None:
            self.limit.remove()
            self.limit = None

    def _closure_hook_failed(self, e):
        if self.closures is not None:
            self.closures.remove()
            self.closures = None
            self.status += "; optimizer closure phases off: %s" % e

    def close(self):
        if self.limit is not None:
            self.limit.remove()
            self.limit = None
        if self.closures is not None:
            self.closures.remove()
            self.closures = None
        if self.scopes is not None:
            self.scopes.remove()
            self.scopes = None
        if self.steps is not None:
            self.steps.remove()
            self.steps = None
        if self.attached:
            _native.bridge().mh_torch_stop()
            self.attached = False
        if self.rec is None:
            return
        core = _native.core()
        counts = _native.Counts()
        core.mh_recorder_get_counts(self.rec, ctypes.byref(counts))
        if self.status == "recording":
            self.status = "complete"  # finished normally
        core.mh_recorder_set_meta(self.rec, b"record_status", self.status.encode())
        rc = core.mh_recorder_close(self.rec)  # CDLL: the GIL is released meanwhile
        self.rec = None
        self.counts = {"emitted": counts.emitted, "dropped": counts.dropped}
        if rc < 0:
            self.status = "writing %s failed: %s" % (self.path, _native.strerror(rc))


def _vdevice_meta():
    keys = ("GPU", "MEMORY", "COUNT", "CONTEXT", "EVENTS")
    return " ".join("%s=%s" % (k.lower(), os.environ.get("MEMHIST_VDEVICE_" + k, "default"))
                    for k in keys).encode()


def _wrap_metadata(torch, lib):
    """Announces strings given to torch.cuda.memory._set_memory_metadata to
    the bridge, so allocator events carry them (the tracker cannot intern)."""
    mem = getattr(torch.cuda, "memory", None)
    orig = getattr(mem, "_set_memory_metadata", None)
    if orig is None or getattr(orig, "_memhist", False):
        return

    def _set_memory_metadata(metadata):
        if metadata:
            lib.mh_torch_metadata(str(metadata).encode())
        return orig(metadata)

    _set_memory_metadata._memhist = True
    mem._set_memory_metadata = _set_memory_metadata


def start(path="record.memhist", stacks="python", op_ranges=False, frames=None, stop_after_steps=None,
          _lazy_open=False, _cuda=None, _meta=None, _finish=None):
    """Starts recording to `path`. stacks: "python" (default), "all" (with C++
    frames; slower), or "none"/None. op_ranges: also record record_function
    ranges. frames: the most frames kept per stack, innermost first (1 to
    512; None: 512). stop_after_steps: end the program once the recording
    holds that many complete training steps, by raising StepLimitReached (a
    SystemExit with code 0) from the optimizer step that completes the last
    one (None: $MEMHIST_STOP_AFTER_STEPS, else never). Returns a Session
    (usable as a context manager)."""
    global _session
    if stacks not in _native.STACKS:
        raise ValueError("stacks must be 'python', 'all', 'none' or None, not %r" % (stacks,))
    if frames is not None and (isinstance(frames, bool) or not isinstance(frames, int)
                               or not 1 <= frames <= _native.FRAMES_MAX):
        raise ValueError("frames must be an integer from 1 to %d, not %r" % (_native.FRAMES_MAX, frames))
    if stop_after_steps is None:
        stop_after_steps = _limit_from_env(_lazy_open)
    elif isinstance(stop_after_steps, bool) or not isinstance(stop_after_steps, int) or stop_after_steps < 1:
        raise ValueError("stop_after_steps must be a positive integer, not %r" % (stop_after_steps,))
    with _lock:
        if _session is not None:
            raise RuntimeError("memhist is already recording to %s" % _session.path)
        if _meta is None:  # the header says where the program ran, as `memhist record`'s does
            _meta = _rank.header_meta()
        s = Session(path, stacks, op_ranges, _lazy_open, _meta, frames, stop_after_steps, _finish)
        _session = s
        try:
            if _cuda is None:
                import torch
                _cuda = torch.cuda
                if os.environ.get("MEMHIST_SCOPES", "1") != "0":  # holders of modules built from now on
                    _scopenames.watch_holders(torch.nn.modules.module)
            if not _lazy_open and not _cuda.is_available():
                _not_recording(s, "no CUDA device (torch.cuda.is_available() is False); no file written")
                return s
            if not _lazy_open:
                _native.bridge()
                s.open()
                atexit.register(stop)
        except Exception as e:  # a missing library or torch: warn, run on
            _not_recording(s, e)
            return s
        # _lazy_call runs s.attach right after torch initializes CUDA (at once
        # if it already has); without a device it never runs.
        lazy_call = getattr(_cuda, "_lazy_call", None)
        if lazy_call is not None:
            lazy_call(s.attach)
        elif _cuda.is_initialized():
            s.attach()
        return s


def _limit_from_env(lazy_open):
    """$MEMHIST_STOP_AFTER_STEPS; a bad value is warned about and ignored
    (the program runs on, to its end)."""
    try:
        return _steps.limit_from_env()
    except ValueError as e:
        if lazy_open:
            sys.stderr.write("memhist: warning: %s: %s; the program is not stopped\n" % (_rank.who(), e))
        else:
            warnings.warn("memhist: %s; the program is not stopped" % e, MemhistWarning, stacklevel=3)
        return None


def stop():
    """Stops recording and finishes the file. Returns the session (or None).
    The module hooks come off; torch's allocator keeps calling memhist's
    trace hook (torch cannot detach one), which finds no recording and
    returns."""
    global _session, _last
    with _lock:
        s = _session
        if s is None:
            return None
        _session = None
        _last = s
        s.close()
        return s


def step():
    """Marks the end of a training step explicitly (then automatic optimizer
    steps are no longer counted)."""
    if _session is not None and _session.attached:
        _native.bridge().mh_torch_step()
        if _session.limit is not None:
            _session.limit.check()


def mark(name):
    """Records a named mark at the current time."""
    if _session is not None and _session.attached:
        _native.bridge().mh_torch_mark(str(name).encode())


def status():
    """What the current session is doing ("recording", or why not); after
    stop(), what the last one did ("stopped: N events recorded to FILE", or
    why nothing was recorded); "not started" before any."""
    if _session is not None:
        return _session.status
    s = _last
    if s is None:
        return "not started"
    if s.status == "recording" and s.counts is not None:
        return "stopped: %d events recorded to %s" % (s.counts["emitted"], s.path)
    return s.status


def read(paths, tables=None, jobs=None, batch_rows=0):
    """The tables of the recordings `paths` names (a path, a glob pattern or
    a list of them), each a pyarrow.Table: see memhist._read.read."""
    from . import _read
    return _read.read(paths, tables, jobs, batch_rows)


def stream(paths, table="events", batch_rows=0):
    """One table's rows as a pyarrow.RecordBatchReader, file after file, in
    bounded memory: see memhist._read.stream."""
    from . import _read
    return _read.stream(paths, table, batch_rows)


def schema(table):
    """The pyarrow.Schema of one of memhist's tables."""
    from . import _read
    return _read.schema(table)
