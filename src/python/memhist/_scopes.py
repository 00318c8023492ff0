"""memhist._scopes - module scopes and tensor roles from torch's own hooks.

Installed by a recording session once it attaches to the allocator (so for
`memhist record` and `memhist.start` alike, with no change to the program):

- torch's global module forward pre/post hooks open and close a scope named
  by the module's path from its root model ("transformer.h.11.mlp"; the
  root is its class name). Allocations take the innermost scope of their
  thread as their module.
- Backward: the forward post hook puts a pre-hook on the grad_fn of the
  module's output; when autograd reaches it, the module's backward scope
  opens on the autograd thread (scopes that are not its ancestors close);
  nested modules returning the same tensor share one pre-hook, which opens
  them outermost first.
  Torch's full backward module hooks are not used: they wrap every module's
  inputs and outputs and make in-place modules (ReLU(inplace=True)) fail.
  Backward scopes close when the optimizer step or the next forward begins.
  The output tensors a module's forward made are tagged as its outputs
  (OUTPUT, with the module's path; not a root's), so the checkpointing
  estimate can tell what leaves a layer.
- The first forward of a root module opens step 0: what came before is the
  set-up, not part of a step. Its parameters and buffers are tagged.
- Optimizer.step (global pre/post hooks): gradients are tagged before it,
  parameters too (a program may build its optimizer over other tensors),
  and its state tensors after it. The pre-hook tells the bridge which
  devices the parameters are on: the step ends on those devices only (one
  process driving models on two devices has each device's own steps).

On CPython 3.12 and later the forward hooks are replaced by sys.monitoring
events on the code of module forwards (memhist._scopemon), and before 3.12
by a C wrapper of Module.__call__ (memhist._scopecall, which hands over to
the hooks once torch.compile begins): the same C code runs, and module calls
keep torch's fast path. The forward post hook is called also when a forward
raises, so its scope closes.

The hooks run in C where libmemhist_pyhook loads (src/pyhook): a module
call costs one address-table probe and the scope event (Python names a
module on first sight only), and the backward pre-hook is a C++ hook on the
autograd node, so backward runs no Python for scopes at all. Without that
library (or with MEMHIST_SCOPES_IMPL=python) the same rules run as Python
closures here: a few dictionary look-ups and one ctypes call per hook.
Tensor roles are tagged in C too where that library loads (tensortag.cpp:
a table probe per tensor), else here with one recorder call per device and
role; either way a tensor is tagged once while it keeps its memory and role
(a new gradient each step is a new tensor). A failure in a hook disables
the hooks and is kept in the session's status, never raised.
"""
import ctypes
import threading
import weakref

from . import _scopecall, _scopemon

FORWARD, BACKWARD = 1, 2
# attributes by which torch's wrappers hold the module they wrap
_WRAPPED = ("_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module", "_forward_module")
# root wrappers that hold the model as their attribute `module`
_DATA_PARALLEL = ("DistributedDataParallel", "DataParallel")
PARAMETER, BUFFER, GRADIENT, OPTIMIZER_STATE, OUTPUT = 1, 2, 3, 4, 5
HANDED_OVER = "forward hooks in C (Module.__call__ wrapped until torch.compile began)"


class Scopes:
    def __init__(self, core, rec, session, bridge=None, native=None):
        self.core = core
        self.bridge = bridge  # libmemhist_torch (per-device steps), or None
        self.devmask = {}     # id(optimizer) -> (ids of its parameters, their devices as bits)
        self.native = native  # libmemhist_pyhook (the scope hooks in C), or None: the Python hooks
        self.monitor = None   # _scopemon.Monitor where sys.monitoring drives the C hooks
        self.callpatch = None  # _scopecall.CallPatch where Module.__call__ is wrapped in C
        self.impl = None      # what drives the scopes, in words (set by install)
        self.rescanned = False
        self.rec = rec
        self.session = session
        # id(module) -> (weak reference to the module, path, string id, parent path): never keeps
        # a model alive; parent: the enclosing scope's path that named a module outside every
        # root's tree (None for a tree's), whose name follows the scope it is called in
        self.names = {}
        self.sids = {}       # path -> interned string id
        self.owners = {}     # path -> weak reference to the module of a root's tree named by it
        self.prefixes = {}   # id(root) -> what its submodules' paths start with ("" but beside another model)
        self.owner_of = {}   # id(root) -> weak reference to the model that holds it (_model_of)
        self.local = threading.local()
        self.bwd = {}        # autograd thread id -> [open backward scope path, outermost first]
        self.bwd_lock = threading.Lock()
        self.step_opened = False
        self.roots = set()       # id() of root modules
        self.root_names = set()  # their paths (class names)
        self.tagged_roots = set()
        self.handles = []
        self.scope_calls = None  # (pre, post) of the forward scopes, set by install
        self.compiled = []       # (weak reference, original, wrapper): modules compiled in place
        self.tagged = {}         # id(tensor) -> (weak reference to it, role): tagged (or not CUDA)
        self.prune_at = 4096
        self.last = {}           # (caller, role) -> (ids, weak references) of the last tagged list
        self.tids = {}           # threading.get_ident() -> memhist thread id
        self.dist = None         # torch.distributed while the rank is not known (set by install)
        self.on = True
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

    # -- installation ----------------------------------------------------
    def install(self, torch):
        from torch.optim import optimizer as opt
        from . import _record
        if _record.start_rank() is None and torch.distributed.is_available():
            self.dist = torch.distributed
        pre, post = self._native_hooks() if self.native is not None else self._forward_hooks()
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
        self.handles.append(opt.register_optimizer_step_pre_hook(self._guard(self._opt_pre)))
        self.handles.append(opt.register_optimizer_step_post_hook(self._guard(self._opt_post)))
        watch_holders(torch.nn.modules.module)

    def _model_of(self, root):
        """The outermost module whose tree holds module `root`, as the
        registrations seen by watch_holders tell (a LightningModule holding
        blocks that its training_step calls, never its forward); None where
        nothing holds it."""
        top = root
        for _ in range(64):
            ref = _holders.get(id(top))
            parent = ref() if ref is not None else None
            if parent is None or not any(m is top for m in parent.children()):
                break
            top = parent
        return top if top is not root else None

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
        for h in self.handles:
            h.remove()
        self.handles = []
        for ref, call, scoped in self.compiled:  # the program's modules as they were
            module = ref()
            if module is not None and getattr(module, "_compiled_call_impl", None) is scoped:
                module._compiled_call_impl = call
        self.compiled = []

    def _failed(self, e):
        self.on = False
        if self.native is not None:
            self.native.mh_scopehook_off()
        self.session.status += "; module scopes off: %s" % e

    def _guard(self, fn):
        compiling = _is_compiling()

        def hook(*args):
            if not self.on or compiling():  # under torch.compile tracing: stay out of the graph
                return None
            try:
                fn(*args)
            except Exception as e:  # never break the program
                self._failed(e)
            return None
        return hook

    def _forward_hooks(self):
        """The module forward pre/post hooks: called for every module call,
        so they keep their state in closure variables."""
        compiling = _is_compiling()
        seq_now = _sequence_number()
        scope, rec, names, roots, local = self.core.mh_recorder_scope, self.rec, self.names, self.roots, self.local
        tag, bwd_enter = self.core.mh_recorder_tag, self._bwd_enter

        def pre(module, args):
            if not self.on or compiling():  # under torch.compile tracing: stay out of the graph
                return None
            try:
                try:
                    stack = local.stack
                except AttributeError:
                    stack = local.stack = []
                key = id(module)
                if key in roots:
                    while stack:  # a forward that raised left scopes open
                        _, sid, _, again = stack.pop()
                        if not again:
                            scope(rec, 0, sid, FORWARD, 0)
                known = names.get(key)
                if known is None or known[0]() is not module or \
                        (known[3] is not None and stack and known[3] != stack[-1][0]):
                    known = self._name(module, stack)
                if not stack and key in roots:
                    self._root_forward(module)
                # a module whose path is the open scope's (the module a wrapper
                # holds: FSDP's, torch.compile's) is in that scope, not a call of its own
                again = bool(stack) and stack[-1][1] == known[2]
                stack.append((known[1], known[2], seq_now(), again))
                if not again:
                    scope(rec, 1, known[2], FORWARD, 0)
            except Exception as e:  # never break the program
                self._failed(e)
            return None

        def post(module, args, output):
            if not self.on or compiling():
                return None
            try:
                stack = getattr(local, "stack", None)
                if not stack:
                    return None
                path, sid, since, again = stack.pop()
                if again:
                    return None
                scope(rec, 0, sid, FORWARD, 0)
                made = _made_outputs(output, since)
                if made:  # modules returning the same tensor (a block's last layer's) share a hook
                    hooked = getattr(local, "hooked", None)
                    if hooked is not None and hooked[0]() is made[0]:
                        hooked[1].append((path, sid))
                    else:
                        scopes = [(path, sid)]
                        made[0].grad_fn.register_prehook(lambda grad_outputs, s=scopes: bwd_enter(s))
                        local.hooked = (weakref.ref(made[0]), scopes)
                if id(module) not in roots:
                    for t in made:  # what leaves the module (its output tags)
                        _tag_output(tag, rec, t, sid)
            except Exception as e:
                self._failed(e)
            return None
        return pre, post

    def _native_hooks(self):
        """The forward hooks in C behind a compile check; Python is called
        to name a module on first sight and at a root's forward."""
        def name(module, parent):
            if parent is None:
                named = [(m, path, sid, int(m is module)) for m, path, sid in self._name_root(module)]
            else:
                _, path, sid, _ = self._name_under(module, parent)
                named = [(module, path, sid, 0)]
            if self.monitor is not None:
                for m, _, _, _ in named:
                    self.monitor.watch_module(m)
            return named
        import torch
        c_pre, c_post = self.native.mh_scopehook_open(self.rec, name, self._root_forward, self._failed,
                                                      torch._C.TensorBase)
        compiling = _is_compiling()

        # Python, so that torch.compile traces them away (a C function it
        # cannot trace would break the graph at every module)
        def pre(module, args):
            if not compiling():
                c_pre(module, args)

        def post(module, args, output):
            if not compiling():
                c_post(module, args, output)
        return pre, post

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
        """Names a root and its submodules not named yet: [(module, path, string
        id)]. Paths leave out the attributes by which torch's wrappers hold
        the module they wrap, as state_dict keys do (torch.compile's
        OptimizedModule, FSDP, checkpoint_wrapper): a block compiled alone is
        "transformer.h.3", not "transformer.h.3._orig_mod". A root that
        another module holds (the blocks a LightningModule's training_step
        calls, never its forward) is named by its path in the outermost
        holder, whose whole tree is named."""
        known = self.names.get(id(root))
        if known is None or known[0]() is not root:
            owner = self._model_of(root)
            if owner is not None:
                named = self._name_root(owner)
                self.owner_of[id(root)] = weakref.ref(owner)
                self.roots.add(id(root))
                return named
        dp = _is_data_parallel(root)  # its model is named as a root would be, by its class
        subs = [(_unwrapped(name, dp) or type(sub).__name__, sub)
                for name, sub in root.named_modules() if name]
        if known is not None and known[0]() is root:
            label, prefix = known[1], self.prefixes.get(id(root), "")
        else:
            label, prefix = self._root_label(root, subs)
        self.roots.add(id(root))
        self.root_names.add(label)
        self.prefixes[id(root)] = prefix
        named = [self._name_one(root, label)]
        self._scope_compiled(root)
        for path, sub in subs:
            self._scope_compiled(sub)
            known = self.names.get(id(sub))
            if known is None or known[0]() is not sub:
                named.append(self._name_one(sub, prefix + path if path else label))
        return named

    def _name_one(self, module, path):
        ref = weakref.ref(module)
        self.owners[path] = ref
        self.names[id(module)] = (ref, path, self._sid(path), None)
        return module, path, self.names[id(module)][2]

    def _root_label(self, root, subs):
        """(path, submodule prefix) of a new root: its class name and no
        prefix, unless a live module of another model already has one of
        its paths (a GAN's generator and discriminator, a teacher beside its
        student): then its paths start with its class name, numbered when
        another model has that too ("Sequential_2.0"). A root without
        submodules (a loss) keeps its class name, and so does a copy of a
        model DataParallel made for a device, which has the model's paths."""
        base = type(getattr(root, "_orig_mod", root)).__name__
        if getattr(root, "_is_replica", False):  # DataParallel's copy for a device: the model's paths
            return base, ""
        mine = {id(root)} | {id(m) for _, m in subs}

        def taken(path):
            ref = self.owners.get(path)
            other = ref() if ref is not None else None
            return other is not None and id(other) not in mine
        if not subs or not (taken(base) or any(taken(path) for path, _ in subs if path)):
            return base, ""
        label, n = base, 1
        while taken(label):
            n += 1
            label = "%s_%d" % (base, n)
        return label, label + "."

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

    def _name(self, module, stack):
        """(weak reference, path, string id, parent) of a module seen for the
        first time, or outside its tree called in another scope than the one
        that named it (a graph module torch.compile shares between blocks):
        a root (no open scope) names its whole tree."""
        if not stack:
            self._name_root(module)
            return self.names[id(module)]
        return self._name_under(module, stack[-1][0])

    def _name_under(self, module, parent):
        """Names a module outside every root's tree by the scope `parent` it
        is called in and its class."""
        path = parent + "." + type(module).__name__
        known = self.names[id(module)] = (weakref.ref(module), path, self._sid(path), parent)
        return known

    # -- forward (the hooks are in _forward_hooks) -----------------------
    def _root_forward(self, root):
        self._close_backward()
        if self.callpatch is not None:
            self.callpatch.root_forward()
        if self.bridge is not None:  # a micro-batch's forward after the last one's backward
            self.bridge.mh_torch_forward_begins()
        if not self.step_opened:
            self.step_opened = True
            self.core.mh_recorder_step_begin(self.rec, 0)
        owner = self.owner_of.get(id(root))
        model = owner() if owner is not None else None
        if model is not None:  # its parameters have the paths of the model that holds it
            root = model
        if id(root) not in self.tagged_roots:
            self.tagged_roots.add(id(root))
            dp = _is_data_parallel(root)
            for named, role in ((root.named_parameters(), PARAMETER), (root.named_buffers(), BUFFER)):
                pairs = list(named)
                names = [_unwrapped(name, dp) for name, _ in pairs]
                devices = self._tag_all([t for _, t in pairs], role, "root", names)
                if devices and role == PARAMETER and self.bridge is not None:  # these devices step with their own optimizer
                    self.bridge.mh_torch_param_devices(devices)

    # -- backward --------------------------------------------------------
    def _bwd_enter(self, scopes):
        """Autograd reached the node of a call's output: opens the scopes of
        the modules that returned it (innermost first in `scopes`),
        outermost first, closing the open ones that are not their ancestors."""
        if not self.on:
            return None
        try:
            tid = self.tids[threading.get_ident()]
        except KeyError:
            tid = self.tids[threading.get_ident()] = self.core.mh_thread_id()
        with self.bwd_lock:
            open_ = self.bwd.setdefault(tid, [])
            for path, sid in reversed(scopes):
                while open_ and not self._within(path, open_[-1]):
                    self.core.mh_recorder_scope(self.rec, 0, self._sid(open_.pop()), BACKWARD, tid)
                open_.append(path)
                self.core.mh_recorder_scope(self.rec, 1, sid, BACKWARD, tid)
        return None

    def _within(self, path, outer):
        """`path` is a submodule of `outer` (every module is within its root)."""
        return path != outer and (outer in self.root_names or path.startswith(outer + "."))

    def _close_backward(self):
        if self.native is not None:
            self.native.mh_scopehook_close_backward()
            return
        with self.bwd_lock:
            for tid, open_ in self.bwd.items():
                while open_:
                    self.core.mh_recorder_scope(self.rec, 0, self._sid(open_.pop()), BACKWARD, tid)

    # -- optimizer -------------------------------------------------------
    def _opt_pre(self, optimizer, args, kwargs):
        self._close_backward()
        if self.dist is not None and self.dist.is_initialized():
            self._note_rank()
        if self.monitor is not None and not self.rescanned:  # forwards assigned to classes late
            self.rescanned = True
            self.monitor.rescan()
        params = self._params(optimizer)
        devices = self._tag_all(params, PARAMETER, id(optimizer))
        self._tag_all(params, GRADIENT, id(optimizer), grads=True)
        if self.bridge is not None:
            self.bridge.mh_torch_step_devices(self._devices(optimizer, params) if devices is None else devices)

    def _note_rank(self):
        """The rank of a process started without torchrun's environment
        (torch.multiprocessing.spawn, Lightning's rank 0), from
        torch.distributed once it is initialized: the header says it, as
        torchrun's RANK would."""
        for key, value in (("rank", self.dist.get_rank()), ("world_size", self.dist.get_world_size())):
            self.core.mh_recorder_set_meta(self.rec, key.encode(), str(value).encode())
        self.core.mh_recorder_set_meta(self.rec, b"rank_process", b"main")
        from . import _record
        _record.note_dist_rank(self.dist.get_rank())
        self.dist = None

    def closure_done(self, optimizer):
        """The closure an optimizer step called (its forward and backward:
        Lightning, LBFGS) returned: backward is over and the gradients it
        made are tagged before the update runs."""
        if not self.on:
            return
        self._close_backward()
        self._tag_all(self._params(optimizer), GRADIENT, id(optimizer), grads=True)

    def _params(self, optimizer):
        if self.native is not None:  # C walks each group's list
            return [group["params"] for group in optimizer.param_groups]
        return [p for group in optimizer.param_groups for p in group["params"]]

    def _devices(self, optimizer, params):
        """Bit d set for each CUDA device (0-63) holding one of `params`;
        remembered per optimizer while its parameters are the same objects."""
        ids = tuple(map(id, params))
        known = self.devmask.get(id(optimizer))
        if known is not None and known[0] == ids:
            return known[1]
        mask = 0
        for p in params:
            d = p.get_device() if getattr(p, "is_cuda", False) else -1
            if 0 <= d < 64:
                mask |= 1 << d
        self.devmask[id(optimizer)] = (ids, mask)
        return mask

    def _opt_post(self, optimizer, args, kwargs):
        state = optimizer.state if self.native is not None else list(optimizer.state.values())
        self._tag_all(state, OPTIMIZER_STATE, id(optimizer))

    def _tag_all(self, tensors, role, site, names=None, grads=False):
        """Tags the CUDA tensors among `tensors` (a list of tensors, or of
        dicts of them: an optimizer's state per parameter; with `grads` their
        gradients) that were not given this role yet. In C where the hook
        library loads (which also takes a list of lists, and a dict of dicts:
        the optimizer's state itself): a table probe per tensor; returns the CUDA devices
        seen as bits. Else here, one recorder call per device, returning
        None: `site` names the caller, whose last list is remembered, so the
        same live tensors again cost no look-up."""
        if self.native is not None:
            sids = [self._sid(n) for n in names] if names else None
            return self.native.mh_tensortag(self.rec, tensors, role, int(grads), sids)
        if grads:
            tensors = [g for g in (p.grad for p in tensors) if g is not None]
        tensors = [v for t in tensors for v in (t.values() if isinstance(t, dict) else (t,))]
        ids = tuple(map(id, tensors))
        last = self.last.get((site, role))
        if last is not None and last[0] == ids and all(r() is not None for r in last[1]):
            return  # the very objects of the last call (live objects have distinct ids)
        cache, todo, refs = self.tagged, {}, []
        for i, t in enumerate(tensors):
            known = cache.get(id(t))
            if known is not None and known[0]() is t:
                refs.append(known[0])
                if known[1] == role:
                    continue
            try:
                ref = weakref.ref(t)
            except TypeError:  # not a tensor (a Python number in optimizer state)
                continue
            cache[id(t)] = (ref, role)
            refs.append(ref)
            if not getattr(t, "is_cuda", False):
                continue
            for m in _memory_tensors(t):
                ptrs, sids = todo.setdefault(m.get_device(), ([], []))
                ptrs.append(m.data_ptr())
                sids.append(self._sid(names[i]) if names else 0)
        for device, (ptrs, sids) in todo.items():
            n = len(ptrs)
            self.core.mh_recorder_tags(self.rec, device, role, (ctypes.c_uint64 * n)(*ptrs),
                                       (ctypes.c_uint32 * n)(*sids), n)
        self.last[(site, role)] = (ids, refs)
        if len(cache) > self.prune_at:  # drop entries of dead tensors (old gradients)
            self.tagged = {k: v for k, v in cache.items() if v[0]() is not None}
            self.prune_at = max(4096, 2 * len(self.tagged))


def _memory_tensors(t, depth=2):
    """The tensors that hold CUDA tensor `t`'s memory: `t`, or where it is a
    wrapper with no memory of its own (DTensor: FSDP2's parameters, their
    gradients and optimizer state) its inner tensors."""
    try:
        if t.data_ptr():
            return [t]
    except RuntimeError:  # no storage at all (a sparse or nested tensor)
        return []
    flatten = getattr(t, "__tensor_flatten__", None)
    if flatten is None or depth == 0:
        return []
    try:
        inner = [getattr(t, name) for name in flatten()[0]]
    except Exception:
        return []
    return [m for i in inner if getattr(i, "is_cuda", False) for m in _memory_tensors(i, depth - 1)]


_holders = {}  # id(module) -> weak reference to the module it was last registered in
_holders_state = {"hook": None, "prune_at": 4096}


def watch_holders(module_module):
    """Installs torch's module registration hook (module_module: torch.nn.
    modules.module), once per process: from then on, which module holds
    each submodule registered is remembered. `memhist record` installs it
    as soon as torch defines Module, before the program builds its model."""
    if _holders_state["hook"] is None:
        _holders_state["hook"] = module_module.register_module_module_registration_hook(_registered)


def _registered(parent, name, module):
    global _holders
    try:
        if module is not None:
            _holders[id(module)] = weakref.ref(parent)
            if len(_holders) > _holders_state["prune_at"]:  # drop modules gone (DataParallel's copies)
                _holders = {k: v for k, v in _holders.items() if v() is not None}
                _holders_state["prune_at"] = max(4096, 2 * len(_holders))
    except Exception:  # never break the program
        pass
    return None  # (anything else would replace the module)


def _is_data_parallel(root):
    """Whether `root` is DDP or DataParallel: they hold the model as `module`."""
    return type(root).__name__ in _DATA_PARALLEL and hasattr(root, "module")


def _unwrapped(name, data_parallel=False):
    """A module or parameter path without the attributes by which torch's
    wrappers hold what they wrap ("h.3._orig_mod.mlp" -> "h.3.mlp"; under
    DDP or DataParallel, with `data_parallel`, "module.h.3" -> "h.3": the
    paths of the model a checkpointing plan is applied to)."""
    if data_parallel and (name == "module" or name.startswith("module.")):
        name = name[len("module."):]
    if "_orig_mod" not in name and "_wrapped_module" not in name:  # the usual path, as it is
        return name
    return ".".join(p for p in name.split(".") if p not in _WRAPPED)


def _tag_output(tag, rec, t, sid):
    """Tags the block of CUDA tensor `t` as module `sid`'s output; a tensor
    with no storage address (a wrapper subclass) is left out."""
    try:
        ptr = t.untyped_storage().data_ptr() if t.is_cuda else 0
    except Exception:
        return
    if ptr:
        tag(rec, t.get_device(), ptr, OUTPUT, sid)


def _made_outputs(output, since):
    """The tensors of a module's output (the output, or the items of a tuple
    or list) whose grad_fn was made at or after autograd sequence number
    `since` (when the module's forward began): a tensor it was given, or one
    made under no_grad (a graph module torch.compile runs returns its
    inputs), carries another module's node."""
    def made(o):
        fn = getattr(o, "grad_fn", None)
        return fn is not None and (since is None or fn._sequence_nr() >= since)
    if made(output):
        return [output]
    if isinstance(output, (tuple, list)):
        return [o for o in output if made(o)]
    return []


def _sequence_number():
    """This thread's next autograd sequence number, where torch says it;
    else a function returning None (every node counts)."""
    try:
        import torch
        return torch._C._autograd._get_sequence_nr
    except (ImportError, AttributeError):
        return lambda: None


def _is_compiling():
    """torch.compiler.is_compiling where torch has it (a constant to Dynamo)."""
    try:
        import torch
        return torch.compiler.is_compiling
    except (ImportError, AttributeError):
        return lambda: False
