"""memhist._scopes - module scopes and tensor roles: what drives them, and
how they are installed and removed.

Installed by a recording session once it attaches to the allocator (so for
`memhist record` and `memhist.start` alike, with no change to the program):

- Each module call opens a scope named by the module's path from its root
  model (memhist._scopenames); allocations take the innermost scope of
  their thread as their module. The forward post hook puts the module's
  backward scope on the autograd node of the output its forward made,
  where it opens when autograd reaches it; backward scopes close when the
  optimizer step or the next forward begins. The output tensors a module's
  forward made are tagged as its outputs (OUTPUT, with the module's path;
  not a root's), so the checkpointing estimate can tell what leaves a layer.
- The first forward of a root module opens step 0: what came before is the
  set-up, not part of a step. Its parameters and buffers are tagged.
- The optimizer step tags parameters, gradients and optimizer state
  (memhist._steps.OptimizerRoles).

What drives the forward scopes: on CPython 3.12 and later sys.monitoring
events on the code of module forwards (memhist._scopemon), before 3.12 a C
wrapper of Module.__call__ (memhist._scopecall, which hands over to torch's
global module forward hooks once torch.compile begins): the same C code
runs, and module calls keep torch's fast path. Where the hooks serve, the
forward post hook is called also when a forward raises, so its scope closes.

The rules run in C where libmemhist_pyhook loads (src/pyhook): a module
call costs one address-table probe and the scope event (Python names a
module on first sight only), the backward pre-hook is a C++ hook on the
autograd node, so backward runs no Python for scopes at all, and tensors
are tagged with a table probe each. Without that library (or with
MEMHIST_SCOPES_IMPL=python) the same rules run in Python, one module per C
file: memhist._pyscope (scopehook.c), _pygrad (scopegrad.cpp) and _pytag
(tensortag.cpp). A failure in a hook disables the hooks and is kept in the
session's status, never raised.
"""
import weakref

from . import _pygrad, _pyscope, _pytag, _rank, _scopecall, _scopemon, _steps
from ._scopebase import BUFFER, PARAMETER, is_compiling
from ._scopenames import Names, is_data_parallel, unwrapped, watch_holders

HANDED_OVER = "forward hooks in C (Module.__call__ wrapped until torch.compile began)"


class Scopes:
    """The module scopes and tensor roles of one recording `rec`, through the
    recorder library `core`; `session` keeps the status a failure is noted
    in; `bridge`: libmemhist_torch (per-device steps) or None; `native`:
    libmemhist_pyhook or None (the rules in Python)."""

    def __init__(self, core, rec, session, bridge=None, native=None):
        self.core = core
        self.rec = rec
        self.session = session
        self.bridge = bridge  # libmemhist_torch (per-device steps), or None
        self.native = native  # libmemhist_pyhook (the rules in C), or None: the rules in Python
        self.nested = native is not None  # tag_all takes lists of lists and dicts of dicts
        self.monitor = None   # _scopemon.Monitor where sys.monitoring drives the C hooks
        self.callpatch = None  # _scopecall.CallPatch where Module.__call__ is wrapped in C
        self.impl = None      # what drives the scopes, in words (set by install)
        self.rescanned = False
        self.names = Names(self._intern, self._scope_compiled)
        self.backward = _pygrad.BackwardScopes(core, rec, self.names, lambda: self.on)
        self.tagger = _pytag.Tagger(core, rec, self.names.sid)
        self.step_opened = False
        self.tagged_roots = set()
        self.handles = []
        self.optimizer = None    # _steps.OptimizerRoles, set by install
        self.scope_calls = None  # (pre, post) of the forward scopes, set by install
        self.compiled = []       # (weak reference, original, wrapper): modules compiled in place
        self.on = True
        _declare(core)

    # -- installation ----------------------------------------------------
    def install(self, torch):
        dist = torch.distributed if _rank.start_rank() is None and torch.distributed.is_available() else None
        pre, post = self._native_hooks() if self.native is not None else _pyscope.forward_hooks(self)
        self.scope_calls = (pre, post)
        impl = "forward hooks in Python"
        if self.native is not None:
            impl = "forward hooks in C"
            if _scopemon.wanted():
                self.monitor = _scopemon.Monitor(self.native, torch.nn.Module)
                if self.monitor.start():
                    impl = "sys.monitoring of module forwards, in C"
                else:
                    self.monitor = None
            elif _scopecall.wanted():
                self.callpatch = _scopecall.CallPatch(self.native, torch.nn.Module, self._forward_hooks_on)
                if self.callpatch.start():
                    impl = "Module.__call__ wrapped in C"
                else:
                    self.callpatch = None
        self.impl = impl
        if self.monitor is None and self.callpatch is None:
            self._forward_hooks_on()
        self.optimizer = _steps.OptimizerRoles(self, self.bridge, self.core, self.rec, dist)
        self.optimizer.install(torch)
        watch_holders(torch.nn.modules.module)

    def _forward_hooks_on(self):
        """torch's global module forward hooks call the scope hooks (also
        once torch.compile begins, where Module.__call__ was wrapped)."""
        from torch.nn.modules import module as M
        pre, post = self.scope_calls
        if self.callpatch is not None:  # Dynamo compiles: the recording says so
            self.impl = HANDED_OVER
            self.core.mh_recorder_set_meta(self.rec, b"module_scopes", self.impl.encode())
        self.handles.append(M.register_module_forward_pre_hook(pre))
        try:  # called also when the forward raises: its scope closes
            self.handles.append(M.register_module_forward_hook(post, always_call=True))
        except TypeError:  # torch before 2.1
            self.handles.append(M.register_module_forward_hook(post))

    def remove(self):
        self.on = False
        if self.monitor is not None:
            self.monitor.stop()
            self.monitor = None
        if self.callpatch is not None:
            self.callpatch.stop()
            self.callpatch = None
        if self.native is not None:
            self.native.mh_scopehook_release()
        if self.optimizer is not None:
            self.optimizer.remove()
        for h in self.handles:
            h.remove()
        self.handles = []
        for ref, call, scoped in self.compiled:  # the program's modules as they were
            module = ref()
            if module is not None and getattr(module, "_compiled_call_impl", None) is scoped:
                module._compiled_call_impl = call
        self.compiled = []

    def failed(self, e):
        self.on = False
        if self.native is not None:
            self.native.mh_scopehook_off()
        self.session.status += "; module scopes off: %s" % e

    def guard(self, fn):
        """`fn` as a hook that does nothing while the scopes are off or
        torch.compile traces, and turns them off where it fails."""
        compiling = is_compiling()

        def hook(*args):
            if not self.on or compiling():  # under torch.compile tracing: stay out of the graph
                return None
            try:
                fn(*args)
            except Exception as e:  # never break the program
                self.failed(e)
            return None
        return hook

    def _native_hooks(self):
        """The forward hooks in C behind a compile check; Python is called
        to name a module on first sight and at a root's forward."""
        names = self.names

        def name(module, parent):
            if parent is None:
                named = [(m, path, sid, int(m is module)) for m, path, sid in names.name_root(module)]
            else:
                _, path, sid, _ = names.name_under(module, parent)
                named = [(module, path, sid, 0)]
            if self.monitor is not None:
                for m, _, _, _ in named:
                    self.monitor.watch_module(m)
            return named
        import torch
        c_pre, c_post = self.native.mh_scopehook_open(self.rec, name, self.root_forward, self.failed,
                                                      torch._C.TensorBase)
        compiling = is_compiling()

        # Python, so that torch.compile traces them away (a C function it
        # cannot trace would break the graph at every module)
        def pre(module, args):
            if not compiling():
                c_pre(module, args)

        def post(module, args, output):
            if not compiling():
                c_post(module, args, output)
        return pre, post

    def _intern(self, path):
        b = path.encode("utf-8", "replace")
        sid = self.core.mh_intern_string(self.rec, b, len(b))
        return sid if sid > 0 else 0

    def _scope_compiled(self, module):
        """A module compiled in place (module.compile()) runs its forward
        hooks inside the compiled code, where they are traced away, and its
        forward never runs as Python: its scope opens and closes around the
        compiled call instead (restored when recording stops)."""
        call = getattr(module, "_compiled_call_impl", None)
        if call is None or self.scope_calls is None or getattr(call, "_memhist_scoped", False):
            return
        pre, post = self.scope_calls
        patch = self.callpatch

        def scoped(*args, **kwargs):
            if patch is not None and patch.active:  # the wrapped Module.__call__ scopes the call
                return call(*args, **kwargs)
            pre(module, args)
            out = None
            try:
                out = call(*args, **kwargs)
                return out
            finally:
                post(module, args, out)
        scoped._memhist_scoped = True
        module._compiled_call_impl = scoped
        self.compiled.append((weakref.ref(module), call, scoped))

    # -- what the hooks call ---------------------------------------------
    def root_forward(self, root):
        """A root's forward begins with no scope open: backward is over, step
        0 opens at the first, and the model's parameters and buffers are
        tagged once."""
        self.close_backward()
        if self.callpatch is not None:
            self.callpatch.root_forward()
        if self.bridge is not None:  # a micro-batch's forward after the last one's backward
            self.bridge.mh_torch_forward_begins()
        if not self.step_opened:
            self.step_opened = True
            self.core.mh_recorder_step_begin(self.rec, 0)
        root = self.names.model(root)  # its parameters have the paths of the model that holds it
        if id(root) not in self.tagged_roots:
            self.tagged_roots.add(id(root))
            dp = is_data_parallel(root)
            for named, role in ((root.named_parameters(), PARAMETER), (root.named_buffers(), BUFFER)):
                pairs = list(named)
                names = [unwrapped(name, dp) for name, _ in pairs]
                devices = self.tag_all([t for _, t in pairs], role, "root", names)
                if devices and role == PARAMETER and self.bridge is not None:
                    self.bridge.mh_torch_param_devices(devices)  # these devices step with their own optimizer

    def close_backward(self):
        if self.native is not None:
            self.native.mh_scopehook_close_backward()
        else:
            self.backward.close_all()

    def first_step(self):
        """The first optimizer step begins: forwards assigned to classes late
        are watched from now on."""
        if self.monitor is not None and not self.rescanned:
            self.rescanned = True
            self.monitor.rescan()

    def closure_done(self, optimizer):
        """The closure of an optimizer step returned (memhist._steps.ClosurePhases)."""
        self.optimizer.closure_done(optimizer)

    def tag_all(self, tensors, role, site, names=None, grads=False):
        """Tags the CUDA tensors among `tensors` (a list of tensors, or of
        dicts of them: an optimizer's state per parameter; with `grads` their
        gradients) that were not given this role yet. In C where the hook
        library loads (which also takes a list of lists, and a dict of dicts:
        the optimizer's state itself), returning the CUDA devices seen as
        bits; else memhist._pytag, returning None."""
        if self.native is not None:
            sids = [self.names.sid(n) for n in names] if names else None
            return self.native.mh_tensortag(self.rec, tensors, role, int(grads), sids)
        return self.tagger.tag_all(tensors, role, site, names, grads)


def _declare(core):
    """The ctypes signatures of the recorder functions the scopes call."""
    import ctypes
    core.mh_intern_string.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    core.mh_intern_string.restype = ctypes.c_int64
    core.mh_recorder_scope.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                       ctypes.c_uint, ctypes.c_uint32]
    core.mh_recorder_tags.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p,
                                      ctypes.c_void_p, ctypes.c_size_t]
    core.mh_recorder_tag.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint,
                                     ctypes.c_uint32]
    core.mh_recorder_step_begin.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    core.mh_thread_id.restype = ctypes.c_uint32
