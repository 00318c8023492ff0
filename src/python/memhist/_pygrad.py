"""memhist._pygrad - the backward scopes in Python, where libmemhist_pyhook
does not load (or MEMHIST_SCOPES_IMPL=python).

The fallback of src/pyhook/scopegrad.cpp: the forward post hook
(memhist._pyscope) puts a pre-hook on the grad_fn of the output a module's
forward made; when autograd reaches it, the module's backward scope opens
on the autograd thread and the open scopes that are not its ancestors close
(nested modules returning the same tensor share one pre-hook, which opens
them outermost first). Torch's full backward module hooks are not used:
they wrap every module's inputs and outputs and make in-place modules
(ReLU(inplace=True)) fail. Backward scopes close when the optimizer step or
the next forward begins.
"""
import threading

from ._scopebase import BACKWARD, OUTPUT


class BackwardScopes:
    """The open backward scopes of each autograd thread, emitted into the
    recorder through `core`; `names` (memhist._scopenames.Names) tells which
    scope is within which, and `on()` whether the scopes are on."""

    def __init__(self, core, rec, names, on):
        self.core, self.rec, self.names, self.on = core, rec, names, on
        self.open = {}  # autograd thread id -> [open backward scope path, outermost first]
        self.lock = threading.Lock()
        self.tids = {}  # threading.get_ident() -> memhist thread id

    def enter(self, scopes):
        """Autograd reached the node of a call's output: opens the scopes of
        the modules that returned it (innermost first in `scopes`),
        outermost first, closing the open ones that are not their ancestors
        (scopegrad.cpp: the node's pre-hook and enter_locked)."""
        if not self.on():
            return None
        try:
            tid = self.tids[threading.get_ident()]
        except KeyError:
            tid = self.tids[threading.get_ident()] = self.core.mh_thread_id()
        scope, within = self.core.mh_recorder_scope, self.names.within
        with self.lock:
            open_ = self.open.setdefault(tid, [])
            for path, sid in reversed(scopes):
                while open_ and not within(path, open_[-1]):
                    scope(self.rec, 0, self.names.sid(open_.pop()), BACKWARD, tid)
                open_.append(path)
                scope(self.rec, 1, sid, BACKWARD, tid)
        return None

    def close_all(self):
        """Closes the backward scopes open on every thread
        (scopegrad.cpp: mh__gscope_close_all)."""
        with self.lock:
            for tid, open_ in self.open.items():
                while open_:
                    self.core.mh_recorder_scope(self.rec, 0, self.names.sid(open_.pop()), BACKWARD, tid)


def made_outputs(output, since):
    """The tensors of a module's output (the output, or the items of a tuple
    or list) whose grad_fn was made at or after autograd sequence number
    `since` (when the module's forward began): a tensor it was given, or one
    made under no_grad (a graph module torch.compile runs returns its
    inputs), carries another module's node (scopegrad.cpp: node_of)."""
    def made(o):
        fn = getattr(o, "grad_fn", None)
        return fn is not None and (since is None or fn._sequence_nr() >= since)
    if made(output):
        return [output]
    if isinstance(output, (tuple, list)):
        return [o for o in output if made(o)]
    return []


def tag_output(tag, rec, t, sid):
    """Tags the block of CUDA tensor `t` as module `sid`'s output; a tensor
    with no storage address (a wrapper subclass) is left out
    (scopegrad.cpp: tag_output)."""
    try:
        ptr = t.untyped_storage().data_ptr() if t.is_cuda else 0
    except Exception:
        return
    if ptr:
        tag(rec, t.get_device(), ptr, OUTPUT, sid)
