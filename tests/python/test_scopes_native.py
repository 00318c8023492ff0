"""The module scope hooks in C (libmemhist_pyhook) on CPU torch, recording
into a real file, against the Python hooks on the same model.

Checks: the installed hooks are the C callables (on CPython 3.12 and later,
sys.monitoring drives them and no forward hook is installed); two training
steps and a forward that raises (its exception reaches the program) give as
many scope enter and exit events as the Python hooks (the modules every
allocation is attributed to are compared on the virtual device,
tests/vdevice/check_scopes.py); removing the hooks stops all events; a failure inside a hook (naming a module raises) is not raised into
the program, turns the hooks off and is kept in the session's status,
but a KeyboardInterrupt arriving while the hooks' Python runs (Ctrl-C) is
the program's: it reaches the program and the hooks stay on;
torch.compile traces the hooks away, or under sys.monitoring never sees
them (no graph break); before CPython 3.12 Module.__call__ is wrapped in C
instead of the forward hooks (MEMHIST_SCOPES_IMPL=hooks: the hooks, with the
same events), torch's own is back after the recording, Dynamo imported
during the recording knows torch's own, and its first compilation hands
the scopes over to the forward hooks; under sys.monitoring, the code table takes the code
of functions with a first parameter, once, and no generator's.
Skips (77) without torch or where the library is not built (a build without torch).
"""
import ctypes
import importlib
import os
import subprocess
import sys
import tempfile

SRC = os.environ.get("MH_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BIN = os.environ.get("MH_BINARY_DIR") or os.path.join(SRC, "build")
MEMHIST = os.environ.get("MEMHIST") or os.path.join(BIN, "memhist")
sys.path.insert(0, os.path.join(SRC, "src", "python"))
os.environ.setdefault("MEMHIST_LIB_DIR", BIN)
try:
    import torch
    import torch.nn as nn
except ImportError:
    print("skipped: torch is not installed")
    sys.exit(77)
from memhist import _native, _scopes  # noqa: E402

ORIGINAL_CALL = torch.nn.Module.__call__

failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 8))
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))


class Raises(nn.Module):
    def forward(self, x):
        raise ValueError("forward raised")


class Session:
    status = "recording"
    raised = None


def record(path, native, broken=False, raises=RuntimeError("naming failed")):
    """Two training steps with the hooks installed; returns the session.
    broken: naming a module raises `raises`."""
    rec = ctypes.c_void_p()
    rc = _native.bridge().mh_torch_open(path.encode(), None, ctypes.byref(rec))
    assert rc >= 0, "cannot open %s" % path
    session = Session()
    s = _scopes.Scopes(_native.core(), rec, session, None, native)
    if broken:
        def fail(module):
            raise raises
        s.names.name_root = fail
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.AdamW(net.parameters())
    s.install(torch)
    session.impl = s.impl
    session.installed = [c.cell_contents.__name__ for h in torch.nn.modules.module._global_forward_pre_hooks.values()
                         for c in (getattr(h, "__closure__", None) or ()) if type(c.cell_contents).__name__ ==
                         "builtin_function_or_method"]
    session.call_type = type(torch.nn.Module.__call__).__name__
    try:
        try:
            for _ in range(2):
                net(torch.randn(3, 4)).sum().backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
            try:  # a forward that raises: the program gets its exception, the scopes close
                nn.Sequential(Raises())(torch.randn(3, 4))
            except ValueError as e:
                session.raised = str(e)
        finally:
            s.remove()
        net(torch.randn(3, 4)).sum().backward()  # after removal: no events
    finally:
        _native.core().mh_recorder_close(rec)
    return session


def counts(path):
    """Scope enter/exit event counts of a recording (memhist info)."""
    p = subprocess.run([MEMHIST, "info", path], capture_output=True, text=True)
    out = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("scope_"):
            out[parts[0]] = int(parts[1])
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--compile":
        check_compile(_native.pyhook(), sys.argv[2])
        return 1 if failures else 0
    if not os.path.exists(os.path.join(BIN, "libmemhist_pyhook.so")):
        print("skipped: libmemhist_pyhook is not built")
        return 77
    native = _native.pyhook()  # built, so it must load: an unresolved symbol fails here
    work = tempfile.mkdtemp(prefix="mh_scopes_native.")
    c_path, py_path, bad_path = (os.path.join(work, n) for n in ("c.memhist", "py.memhist", "bad.memhist"))
    c = record(c_path, native)
    record(py_path, None)
    if hasattr(sys, "monitoring"):  # CPython 3.12+: sys.monitoring drives the C hooks, no forward hooks
        check(c.installed == [] and c.impl.startswith("sys.monitoring"),
              "sys.monitoring drives the C hooks (%s; forward hooks %s)" % (c.impl, c.installed))
    else:  # before 3.12: Module.__call__ wrapped in C, no forward hooks (torch's fast path)
        check(c.installed == [] and c.impl == "Module.__call__ wrapped in C" and c.call_type == "ModuleCall",
              "Module.__call__ is wrapped in C (%s, %s; forward hooks %s)" % (c.impl, c.call_type, c.installed))
    check(torch.nn.Module.__call__ is ORIGINAL_CALL, "torch's own Module.__call__ is back after the recording")
    h_path = os.path.join(work, "hooks.memhist")
    os.environ["MEMHIST_SCOPES_IMPL"] = "hooks"
    try:
        h = record(h_path, native)
    finally:
        del os.environ["MEMHIST_SCOPES_IMPL"]
    check(h.installed == ["memhist_scope_pre"] and h.impl == "forward hooks in C",
          "MEMHIST_SCOPES_IMPL=hooks: the C forward hooks are installed (%s, %s)" % (h.impl, h.installed))
    cc, pc = counts(c_path), counts(py_path)
    # 6 module calls per forward, 2 steps: 12 forward enters; backward: 4 scopes per step
    check(cc.get("scope_enter", 0) >= 12 + 8, "scope events were written (%s)" % cc)
    check(cc == pc, "the same scope events as the Python hooks (C %s, Python %s)" % (cc, pc))
    check(c.raised == "forward raised", "a forward's exception reaches the program unchanged (%s)" % c.raised)
    check(counts(h_path) == pc, "the C forward hooks: the same scope events (%s)" % counts(h_path))
    bad = record(bad_path, native, broken=True)
    check("module scopes off" in bad.status and "naming failed" in bad.status,
          "a failing hook is kept in the status, not raised (%s)" % bad.status)
    check(not counts(bad_path), "a failing hook writes no scope events (%s)" % counts(bad_path))
    check_interrupt(native, os.path.join(work, "interrupt.memhist"))
    # in a fresh process: torch._dynamo is not imported yet (an optimizer imports it)
    p = subprocess.run([sys.executable, __file__, "--compile", os.path.join(work, "compile.memhist")],
                       capture_output=True, text=True)
    print(p.stdout, end="")
    check(p.returncode == 0, "the compile checks ran and held (exit %d) %s" % (p.returncode, p.stderr[-2000:]))
    if hasattr(sys, "monitoring"):
        check_watch(native, os.path.join(work, "watch.memhist"))
    return 1 if failures else 0


def check_interrupt(native, path):
    try:
        session = record(path, native, broken=True, raises=KeyboardInterrupt())
        interrupted = False
    except KeyboardInterrupt:
        interrupted, session = True, None
    check(interrupted, "a KeyboardInterrupt in the hooks' Python reaches the program")
    check(session is None, "the hooks did not swallow it (%s)" % (session and session.status))


def check_watch(native, path):
    """The code table takes a function's code with a first parameter once,
    and no generator's, coroutine's or parameterless code (their starts and
    returns could not be paired with a module)."""
    rec = ctypes.c_void_p()
    _native.bridge().mh_torch_open(path.encode(), None, ctypes.byref(rec))
    native.mh_scopehook_open(rec, lambda *a: [], lambda *a: None, lambda *a: None, torch._C.TensorBase)

    def forward(self, x):
        return x

    def generator(self):
        yield self

    async def coroutine(self):
        return self
    try:
        got = [native.mh_scopehook_watch(c) for c in (forward.__code__, forward.__code__, generator.__code__,
                                                       coroutine.__code__, (lambda: 0).__code__)]
        got.append(native.mh_scopehook_watch(forward))  # not a code object
    finally:
        native.mh_scopehook_release()
        _native.core().mh_recorder_close(rec)
    check(got == [1, 0, 0, 0, 0, 0], "the code table takes forwards only, once (%s)" % got)


def check_compile(native, path):
    """torch.compile traces the hooks away: one graph, no break. Where
    Module.__call__ is wrapped, torch._dynamo is first imported while the
    recording runs: Dynamo keeps torch's own Module.__call__ as the one it
    knows, and its first compilation hands the scopes over to the forward
    hooks."""
    dynamo_before = "torch._dynamo" in sys.modules
    rec = ctypes.c_void_p()
    _native.bridge().mh_torch_open(path.encode(), None, ctypes.byref(rec))
    s = _scopes.Scopes(_native.core(), rec, Session(), None, native)
    s.install(torch)
    try:
        dynamo = importlib.import_module("torch._dynamo")
        known = dynamo.utils.unpatched_nn_module_call
        wrapped = type(torch.nn.Module.__call__).__name__
        explained = dynamo.explain(Net())(torch.randn(3, 4))
        impl = s.impl
    finally:
        s.remove()
        _native.core().mh_recorder_close(rec)
    check(explained.graph_count == 1 and explained.graph_break_count == 0,
          "torch.compile sees no graph break (%d graphs, %d breaks)"
          % (explained.graph_count, explained.graph_break_count))
    if not hasattr(sys, "monitoring"):
        check(not dynamo_before and known is ORIGINAL_CALL and wrapped == "ModuleCall",
              "torch._dynamo, imported while Module.__call__ is wrapped, knows torch's own (imported before: %s,"
              " known: %s, then %s)" % (dynamo_before, known, wrapped))
        check(impl == _scopes.HANDED_OVER, "the first compilation hands over to the forward hooks (%s)" % impl)


if __name__ == "__main__":
    sys.exit(main())
