"""memhist._scopes - module scopes and tensor roles from torch's own hooks.

Installed by a recording session once it attaches to the allocator (so for
`memhist record` and `memhist.start` alike, with no change to the program):

- torch's global module forward pre/post hooks open and close a scope named
  by the module's path from its root model ("transformer.h.11.mlp"; the
  root is its class name). Allocations take the innermost scope of their
  thread as their module.
- Backward: the forward post hook puts a pre-hook on the grad_fn of the
  module's output; when autograd reaches it, the module's backward scope
  opens on the autograd thread (scopes that are not its ancestors close).
  Torch's full backward module hooks are not used: they wrap every module's
  inputs and outputs and make in-place modules (ReLU(inplace=True)) fail.
  Backward scopes close when the optimizer step or the next forward begins.
- The first forward of a root module opens step 0: what came before is the
  set-up, not part of a step. Its parameters and buffers are tagged.
- Optimizer.step (global pre/post hooks): gradients are tagged before it,
  parameters too (a program may build its optimizer over other tensors),
  and its state tensors after it. The pre-hook tells the bridge which
  devices the parameters are on: the step ends on those devices only (one
  process driving models on two devices has each device's own steps).

Each hook is a few dictionary look-ups and one ctypes call; a failure in a
hook disables the hooks and is kept in the session's status, never raised.
"""
import ctypes
import threading
import weakref

FORWARD, BACKWARD = 1, 2
PARAMETER, BUFFER, GRADIENT, OPTIMIZER_STATE = 1, 2, 3, 4


class Scopes:
    def __init__(self, core, rec, session, bridge=None):
        self.core = core
        self.bridge = bridge  # libmemhist_torch (per-device steps), or None
        self.rec = rec
        self.session = session
        self.names = {}      # id(module) -> (weak reference to the module, path): never keeps a model alive
        self.sids = {}       # path -> interned string id
        self.local = threading.local()
        self.bwd = {}        # autograd thread id -> [path, ...] open backward scopes
        self.bwd_lock = threading.Lock()
        self.step_opened = False
        self.roots = set()       # id() of root modules
        self.root_names = set()  # their paths (class names)
        self.tagged_roots = set()
        self.handles = []
        self.on = True
        core.mh_intern_string.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        core.mh_intern_string.restype = ctypes.c_int64
        core.mh_recorder_scope.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32,
                                           ctypes.c_uint, ctypes.c_uint32]
        core.mh_recorder_tag.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                         ctypes.c_uint, ctypes.c_uint32]
        core.mh_recorder_step_begin.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
        core.mh_thread_id.restype = ctypes.c_uint32

    # -- installation ----------------------------------------------------
    def install(self, torch):
        from torch.nn.modules import module as M
        from torch.optim import optimizer as opt
        self.handles.append(M.register_module_forward_pre_hook(self._guard(self._fwd_pre)))
        self.handles.append(M.register_module_forward_hook(self._guard(self._fwd_post)))
        self.handles.append(opt.register_optimizer_step_pre_hook(self._guard(self._opt_pre)))
        self.handles.append(opt.register_optimizer_step_post_hook(self._guard(self._opt_post)))

    def remove(self):
        self.on = False
        for h in self.handles:
            h.remove()
        self.handles = []

    def _guard(self, fn):
        compiling = _is_compiling()

        def hook(*args):
            if not self.on or compiling():  # under torch.compile tracing: stay out of the graph
                return None
            try:
                fn(*args)
            except Exception as e:  # never break the program
                self.on = False
                self.session.status += "; module scopes off: %s" % e
            return None
        return hook

    # -- names -----------------------------------------------------------
    def _sid(self, path):
        sid = self.sids.get(path)
        if sid is None:
            b = path.encode("utf-8", "replace")
            sid = self.core.mh_intern_string(self.rec, b, len(b))
            sid = sid if sid > 0 else 0
            self.sids[path] = sid
        return sid

    def _name_root(self, root):
        base = type(root).__name__
        self.roots.add(id(root))
        self.root_names.add(base)
        self.names[id(root)] = (weakref.ref(root), base)
        for name, sub in root.named_modules():
            if name and id(sub) not in self.names:
                self.names[id(sub)] = (weakref.ref(sub), name)
        return base

    def _path(self, module, stack):
        known = self.names.get(id(module))
        if known is not None and known[0]() is module:
            return known[1]
        if not stack:
            return self._name_root(module)
        path = stack[-1] + "." + type(module).__name__
        self.names[id(module)] = (weakref.ref(module), path)
        return path

    def _stack(self):
        st = getattr(self.local, "stack", None)
        if st is None:
            st = self.local.stack = []
        return st

    # -- forward ---------------------------------------------------------
    def _fwd_pre(self, module, args):
        stack = self._stack()
        if stack and id(module) in self.roots:  # a forward that raised left scopes open
            while stack:
                self.core.mh_recorder_scope(self.rec, 0, self._sid(stack.pop()), FORWARD, 0)
        path = self._path(module, stack)
        if not stack and id(module) in self.roots:
            self._root_forward(module)
        stack.append(path)
        self.core.mh_recorder_scope(self.rec, 1, self._sid(path), FORWARD, 0)

    def _fwd_post(self, module, args, output):
        stack = self._stack()
        if not stack:
            return
        path = stack.pop()
        sid = self._sid(path)
        self.core.mh_recorder_scope(self.rec, 0, sid, FORWARD, 0)
        fn = _grad_fn(output)
        if fn is not None:
            fn.register_prehook(lambda grad_outputs, p=path, s=sid: self._bwd_enter(p, s))

    def _root_forward(self, root):
        self._close_backward()
        if not self.step_opened:
            self.step_opened = True
            self.core.mh_recorder_step_begin(self.rec, 0)
        if id(root) not in self.tagged_roots:
            self.tagged_roots.add(id(root))
            for name, p in root.named_parameters():
                self._tag(p, PARAMETER, name)
            for name, b in root.named_buffers():
                self._tag(b, BUFFER, name)

    # -- backward --------------------------------------------------------
    def _bwd_enter(self, path, sid):
        if not self.on:
            return None
        tid = self.core.mh_thread_id()
        with self.bwd_lock:
            open_ = self.bwd.setdefault(tid, [])
            inner = []  # a submodule that shares this output's grad_fn opened first
            while open_ and self._within(open_[-1], path):
                inner.insert(0, open_.pop())
            while open_ and not self._within(path, open_[-1]):
                done = open_.pop()
                self.core.mh_recorder_scope(self.rec, 0, self._sid(done), BACKWARD, tid)
            open_.append(path)
            open_.extend(inner)
            if not inner:
                self.core.mh_recorder_scope(self.rec, 1, sid, BACKWARD, tid)
        return None

    def _within(self, path, outer):
        """`path` is a submodule of `outer` (every module is within its root)."""
        return path != outer and (outer in self.root_names or path.startswith(outer + "."))

    def _close_backward(self):
        with self.bwd_lock:
            for tid, open_ in self.bwd.items():
                while open_:
                    self.core.mh_recorder_scope(self.rec, 0, self._sid(open_.pop()), BACKWARD, tid)

    # -- optimizer -------------------------------------------------------
    def _opt_pre(self, optimizer, args, kwargs):
        self._close_backward()
        devices = 0
        for group in optimizer.param_groups:
            for p in group["params"]:
                self._tag(p, PARAMETER, None)
                if p.grad is not None:
                    self._tag(p.grad, GRADIENT, None)
                if getattr(p, "is_cuda", False) and (p.device.index or 0) < 64:
                    devices |= 1 << (p.device.index or 0)
        if self.bridge is not None:
            self.bridge.mh_torch_step_devices(devices)

    def _opt_post(self, optimizer, args, kwargs):
        for state in optimizer.state.values():
            for v in state.values():
                self._tag(v, OPTIMIZER_STATE, None)

    def _tag(self, t, role, name):
        if getattr(t, "is_cuda", False) and t.data_ptr():
            sid = self._sid(name) if name else 0
            self.core.mh_recorder_tag(self.rec, t.device.index or 0, t.data_ptr(), role, sid)


def _grad_fn(output):
    """grad_fn of the first tensor in a module's output that has one."""
    fn = getattr(output, "grad_fn", None)
    if fn is not None or not isinstance(output, (tuple, list)):
        return fn
    for o in output:
        fn = getattr(o, "grad_fn", None)
        if fn is not None:
            return fn
    return None


def _is_compiling():
    """torch.compiler.is_compiling where torch has it (a constant to Dynamo)."""
    try:
        import torch
        return torch.compiler.is_compiling
    except (ImportError, AttributeError):
        return lambda: False
