"""memhist._scopemon - module scopes from sys.monitoring (CPython 3.12+).

torch's global module forward hooks put every module call on the slow path
of Module._call_impl, which costs more than the hooks' own work. On CPython
3.12 and later the scope hooks in C (libmemhist_pyhook, scopemon.c) are
driven by sys.monitoring instead: PY_START and PY_RETURN events, set on the
code of module forwards only, so the rest of the program runs
uninstrumented and module calls keep torch's fast path; and PY_UNWIND,
which is global, so that a forward that raises closes its scope (a
recomputation under activation checkpointing stops by raising).

The forwards watched: those of every nn.Module subclass defined at start,
of every subclass defined later (through Module.__init_subclass__), the
functions a forward wraps (__wrapped__, functools.partial, bound methods),
forwards set on a module object, and, once, at the first optimizer step
and whenever a module is named, forwards a program assigned to a class
after its definition. A module whose forward has no Python code (a
scripted module) gets no scope here.

MEMHIST_SCOPES_IMPL=hooks keeps the forward hooks on any Python.
"""
import functools
import os
import sys

TOOL_IDS = (4, 3)  # ids no standard tool claims (0 debugger, 1 coverage, 2 profiler, 5 optimizer)
WRAP_DEPTH = 8     # wrappers followed from a forward to the function it calls


def wanted():
    """Whether this interpreter and the environment ask for sys.monitoring."""
    return (hasattr(sys, "monitoring") and
            os.environ.get("MEMHIST_SCOPES_IMPL", "native") not in ("hooks", "python"))


def codes_of(fn):
    """The code objects of a forward and of the functions it wraps."""
    out = []
    for _ in range(WRAP_DEPTH):
        if fn is None:
            break
        if isinstance(fn, functools.partial):
            fn = fn.func
            continue
        fn = getattr(fn, "__func__", fn)  # a bound method or a classmethod
        code = getattr(fn, "__code__", None)
        if code is not None:
            out.append(code)
        fn = getattr(fn, "__wrapped__", None)
    return out


class Monitor:
    """Sets sys.monitoring's start and return events on module forwards and
    routes them to the C callables of libmemhist_pyhook."""

    def __init__(self, native, module_class):
        self.native = native
        self.module_class = module_class
        self.tool = None
        self.codes = {}            # id -> watched code object (kept, so ids stay unique)
        self.init_subclass = None  # what Module.__init_subclass__ was before

    def start(self):
        """Takes a free tool id and watches the forwards; False where
        sys.monitoring cannot serve (the forward hooks are then used)."""
        mon = sys.monitoring
        callables = self.native.mh_scopehook_monitor(self.module_class)
        tool = next((t for t in TOOL_IDS if mon.get_tool(t) is None), None)
        if callables is None or tool is None:
            return False
        try:
            mon.use_tool_id(tool, "memhist")
            self.tool = tool
            mon.register_callback(tool, mon.events.PY_START, callables[0])
            mon.register_callback(tool, mon.events.PY_RETURN, callables[1])
            mon.register_callback(tool, mon.events.PY_UNWIND, callables[2])
            mon.set_events(tool, mon.events.PY_UNWIND)  # a frame's end by an exception, any frame
            self.rescan()
            self._patch_subclassing()
        except (ValueError, RuntimeError, TypeError):  # taken meanwhile, or refused
            self.stop()
            return False
        return True

    def stop(self):
        if self.tool is None:
            return
        mon, tool = sys.monitoring, self.tool
        self.tool = None
        if mon.get_tool(tool) != "memhist":
            return
        self._unpatch_subclassing()
        mon.set_events(tool, 0)
        for code in self.codes.values():
            mon.set_local_events(tool, code, 0)
        for event in (mon.events.PY_START, mon.events.PY_RETURN, mon.events.PY_UNWIND):
            mon.register_callback(tool, event, None)
        mon.free_tool_id(tool)
        self.codes = {}

    # -- what is watched -------------------------------------------------
    def watch(self, fn):
        if self.tool is None:
            return
        events = sys.monitoring.events.PY_START | sys.monitoring.events.PY_RETURN
        for code in codes_of(fn):
            if id(code) not in self.codes and self.native.mh_scopehook_watch(code) > 0:
                sys.monitoring.set_local_events(self.tool, code, events)
                self.codes[id(code)] = code

    def watch_class(self, cls):
        self.watch(cls.__dict__.get("forward"))

    def watch_module(self, module):
        """A module being named: its own forward, and its class's as it is
        now (a program may have assigned it after the class was made)."""
        self.watch(module.__dict__.get("forward"))
        self.watch(getattr(type(module), "forward", None))

    def rescan(self):
        """Every nn.Module subclass's forward, as defined now."""
        todo, seen = [self.module_class], set()
        while todo:
            cls = todo.pop()
            if id(cls) in seen:
                continue
            seen.add(id(cls))
            self.watch_class(cls)
            try:
                todo.extend(type.__subclasses__(cls))
            except TypeError:
                pass

    def _patch_subclassing(self):
        M, monitor = self.module_class, self
        self.init_subclass = M.__dict__.get("__init_subclass__")
        before = self.init_subclass

        def __init_subclass__(cls, **kwargs):
            monitor.watch_class(cls)
            if before is not None:
                before.__get__(None, cls)(**kwargs)
            else:
                super(M, cls).__init_subclass__(**kwargs)
        __init_subclass__._memhist = True
        M.__init_subclass__ = classmethod(__init_subclass__)

    def _unpatch_subclassing(self):
        M = self.module_class
        now = M.__dict__.get("__init_subclass__")
        if not getattr(getattr(now, "__func__", None), "_memhist", False):
            return  # replaced since: left as it is
        if self.init_subclass is None:
            del M.__init_subclass__
        else:
            M.__init_subclass__ = self.init_subclass
