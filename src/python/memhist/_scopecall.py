"""memhist._scopecall - module scopes from Module.__call__ (CPython before 3.12).

torch's global module forward hooks put every module call on the slow path
of Module._call_impl, which costs more than the hooks' own work (about a
tenth of a small model's step). Where sys.monitoring is missing, the scope
code in C (libmemhist_pyhook, scopecall.c) wraps torch's Module.__call__
instead: a method descriptor that opens the module's scope, calls torch's
__call__, which keeps its fast path, and closes the scope, also when the
call raises.

Dynamo cannot trace a C function, and reads Module.__call__ whenever it
traces a module call. So when Dynamo first compiles (its compile-start
callback, run before it traces), torch's own __call__ comes back and the
forward hooks take over for the rest of the recording: they stay out of the
traced graph. Dynamo also keeps, when it is imported, the Module.__call__ it
takes for torch's own; so while torch._dynamo is being imported (a finder on
sys.meta_path sees it coming) torch's own is in place, and the wrapper is
set again once the import is done and the callback registered. The callback
is registered again at a root's forward after torch._dynamo.reset() cleared
it.

MEMHIST_SCOPES_IMPL=hooks keeps the forward hooks.
"""
import os
import sys

DYNAMO = "torch._dynamo"


def wanted():
    """Whether this interpreter and the environment ask for the wrapper."""
    return (not hasattr(sys, "monitoring") and
            os.environ.get("MEMHIST_SCOPES_IMPL", "native") not in ("hooks", "python"))


class CallPatch:
    """Sets the C wrapper as `module_class.__call__`; `to_hooks()` installs
    the forward hooks when Dynamo needs torch's own __call__ back."""

    def __init__(self, native, module_class, to_hooks):
        self.native = native
        self.cls = module_class
        self.to_hooks = to_hooks
        self.original = module_class.__dict__.get("__call__")
        self.wrapper = None
        self.finder = None
        self.handler = None  # Dynamo's callback handler, once registered with it
        self.active = False  # the wrapper serves (not yet handed over to the hooks)

    def start(self):
        """True where the wrapper is set; else nothing changed."""
        if self.original is None:
            return False
        self.wrapper = self.native.mh_scopehook_call(self.original)
        if DYNAMO in sys.modules:
            if not self._watch_compiles():
                return False
        else:
            self.finder = _DynamoImport(self)
            sys.meta_path.insert(0, self.finder)
        self.active = True
        self._patch()
        return True

    def stop(self):
        """torch's own __call__ back, where the class still has the wrapper
        (another tool's patch over it is left in place, the wrapper under it
        calling torch's own only)."""
        self.active = False
        self._unpatch()
        self.native.mh_scopehook_call_stop()
        if self.finder is not None and self.finder in sys.meta_path:
            sys.meta_path.remove(self.finder)
        self.finder = None
        if self.handler is not None and self._compile_starts in self.handler.start_callbacks:
            self.handler.remove_start_callback(self._compile_starts)
        self.handler = None

    def root_forward(self):
        """A root's forward begins: the callback again after Dynamo's reset."""
        if self.active and self.handler is not None and \
                self._compile_starts not in self.handler.start_callbacks:
            self.handler.register_start_callback(self._compile_starts)

    def _patch(self):
        if self.active:
            self.cls.__call__ = self.wrapper

    def _unpatch(self):
        if self.cls.__dict__.get("__call__") is self.wrapper:
            self.cls.__call__ = self.original

    def _watch_compiles(self):
        try:
            from torch._dynamo.callback import callback_handler
            if not isinstance(callback_handler.start_callbacks, list):
                return False
            callback_handler.register_start_callback(self._compile_starts)
        except Exception:  # a torch without Dynamo's callbacks as known here: the hooks serve
            return False
        self.handler = callback_handler
        return True

    def _compile_starts(self, *args):
        self.hand_over()

    def hand_over(self):
        """The forward hooks from now on."""
        if self.active:
            self.active = False
            self._unpatch()
            self.native.mh_scopehook_call_stop()  # also where a method bound to it is kept
            self.to_hooks()

    def dynamo_importing(self):
        """torch._dynamo is about to be imported: torch's own __call__ while
        it is."""
        self._unpatch()

    def dynamo_imported(self):
        if not self.active:
            return
        if self._watch_compiles():
            self._patch()
        else:
            self.hand_over()


class _DynamoImport:
    """A meta path finder that only watches for torch._dynamo's import."""

    def __init__(self, patch):
        self.patch = patch

    def find_spec(self, fullname, path=None, target=None):
        if fullname != DYNAMO:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self.patch.dynamo_importing()
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if run is None:  # an import this finder cannot follow: the hooks serve
            self.patch.hand_over()
            return spec
        patch = self.patch

        def exec_module(module):
            try:
                run(module)
            finally:
                patch.dynamo_imported()
        loader.exec_module = exec_module
        return spec
