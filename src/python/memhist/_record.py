"""memhist._record - the `memhist record` side inside the recorded program.

Installed by the bootstrap sitecustomize. Watches for `torch.nn.modules.module`
being imported, to watch which module holds which from then on
(memhist._scopenames.watch_holders), and for `torch.cuda` being
imported (a meta-path finder that wraps their loaders: watch_imports, which the
pytest plugin uses too), then queues the attach
on torch.cuda's lazy-initialization queue (torch.cuda._lazy_call), so the
recorder starts exactly when the program initializes CUDA, and never earlier.
The file is created only then, so helper processes that never use CUDA
(data-loader workers) write nothing. At exit (normal, exception, SIGTERM) it
finishes the file and appends one status line for the `memhist record`
command to $MEMHIST_STATUS_FILE:  who <TAB> file <TAB> events <TAB> status,
where who is "process PID", or "rank R (process PID)" under torchrun
(memhist._rank, which also gives the header's metadata about the process).
Files are created exclusively: a name already taken gets ".2", ".3", ...

Environment (set by `memhist record`): MEMHIST_RECORD_PATH, MEMHIST_STACKS,
MEMHIST_FRAMES, MEMHIST_OP_RANGES, MEMHIST_STATUS_FILE, MEMHIST_ROOT_PID, MEMHIST_LIB_DIR,
MEMHIST_STOP_AFTER_STEPS (--steps: end the program after that many steps, memhist._steps);
`memhist simulate` adds MEMHIST_VDEVICE=1 (memhist._vdevice adapts torch to the
virtual device).
"""
import atexit
import importlib.abc
import importlib.util
import os
import signal
import sys

from . import _rank
from ._rank import env_int, env_rank, is_rank_main, who

_state = {"installed": False, "torch_seen": False, "session": None, "reported": False}


def output_path():
    """FILE for the main process; under torchrun FILE.rank<R> for the rank's
    own process, FILE.rank<R>.attempt<N> after an elastic restart and
    FILE.rank<R>[.attempt<N>].pid<P> for processes the rank started;
    FILE.pid<P> for any other process that initializes CUDA."""
    path = os.environ["MEMHIST_RECORD_PATH"]
    rank = env_rank()
    if rank is not None:
        path = "%s.rank%d" % (path, rank)
        attempt = env_int("TORCHELASTIC_RESTART_COUNT")
        if attempt:
            path += ".attempt%d" % attempt
        if not is_rank_main():
            path += ".pid%d" % os.getpid()
        return path
    if os.environ.get("MEMHIST_ROOT_PID") not in (None, str(os.getpid())):
        return "%s.pid%d" % (path, os.getpid())
    return path


def adapt_to_vdevice(module):
    """torch.cuda is imported: on the virtual device (MEMHIST_VDEVICE=1),
    torch is adapted to it (memhist._vdevice)."""
    if os.environ.get("MEMHIST_VDEVICE") == "1":
        try:
            from memhist import _vdevice
            _vdevice.install(module)
        except Exception as e:
            sys.stderr.write("memhist: warning: %s: virtual device settings not applied: %s\n"
                             % (who(), e))


def _on_torch_cuda(module):
    _state["torch_seen"] = True
    adapt_to_vdevice(module)
    import memhist
    stacks = os.environ.get("MEMHIST_STACKS", "python")
    try:
        _state["session"] = memhist.start(output_path(), stacks=None if stacks == "none" else stacks,
                                          op_ranges=os.environ.get("MEMHIST_OP_RANGES") == "1",
                                          frames=env_int("MEMHIST_FRAMES") or None,
                                          _lazy_open=True, _cuda=module, _meta=_rank.header_meta(),
                                          _finish=_finish)
    except Exception as e:
        sys.stderr.write("memhist: warning: %s: recording disabled: %s\n" % (who(), e))


def watch_module_holders(module):
    """torch.nn.modules.module is defined: module registrations are watched
    from now on, before the program builds its model (memhist._scopenames)."""
    try:
        from memhist import _scopenames
        _scopenames.watch_holders(module)
    except Exception as e:
        sys.stderr.write("memhist: warning: %s: module holders not watched: %s\n" % (who(), e))


class _LoaderWrapper(importlib.abc.Loader):
    def __init__(self, loader, then):
        self._loader = loader
        self._then = then

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._then(module)


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loaders of the modules `watched` names
    (name -> what runs once it is executed) once each."""

    def __init__(self, watched):
        self.watched = dict(watched)

    def find_spec(self, name, path, target=None):
        then = self.watched.pop(name, None)
        if then is None:
            return None
        sys.meta_path.remove(self)  # (find_spec below must not find this finder)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            if self.watched:
                sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None:
            spec.loader = _LoaderWrapper(spec.loader, then)
        return spec


def _reason_not_recorded():
    if "torch" not in sys.modules:
        return "the program never imported torch"
    try:
        import torch
        if not torch.cuda.is_available():
            return "no CUDA device (torch.cuda.is_available() is False)"
        if not torch.cuda.is_initialized():
            return "the program never initialized CUDA"
    except Exception as e:
        return "torch.cuda failed: %s" % e
    return "unknown"


def _finish():
    if _state["reported"]:
        return
    _state["reported"] = True
    import memhist
    s = memhist.stop() or _state["session"]
    path, events = "-", 0
    if s is not None and (s.attached or s.counts is not None):
        status = s.status
        path = s.path
        events = (s.counts or {}).get("emitted", 0)
    elif s is not None and s.status.startswith("not recording"):
        status = s.status
    else:
        status = "not recording: " + _reason_not_recorded()
    status_file = os.environ.get("MEMHIST_STATUS_FILE")
    if status_file:
        line = "%s\t%s\t%d\t%s\n" % (who(), path, events, status.replace("\n", " "))
        fd = os.open(status_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)


def _on_sigterm(signum, frame):
    sys.exit(128 + signum)  # unwinds through atexit, so the file is finished


def watch_imports(watched):
    """Runs watched[name](module) once each module is executed, at once for
    those imported already (before memhist)."""
    finder = _TorchFinder(watched)
    for name in [n for n in finder.watched if n in sys.modules]:
        finder.watched.pop(name)(sys.modules[name])
    if finder.watched:
        sys.meta_path.insert(0, finder)


def install():
    if _state["installed"]:
        return
    _state["installed"] = True
    _rank.remember_start_rank()
    # CUPTI (loaded by the CUDA driver through CUDA_INJECTION64_PATH) records
    # into this process's torch recorder instead of a file of its own.
    os.environ["MEMHIST_INJECT_SHARED"] = "1"
    if env_rank() is not None and "MEMHIST_RANK_PID" not in os.environ:
        os.environ["MEMHIST_RANK_PID"] = str(os.getpid())  # children inherit it
    watch_imports({"torch.cuda": _on_torch_cuda, "torch.nn.modules.module": watch_module_holders})
    atexit.register(_finish)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        try:
            signal.signal(signal.SIGTERM, _on_sigterm)
        except ValueError:  # not the main thread
            pass
