"""memhist._pytag - tensor roles tagged in Python, where libmemhist_pyhook
does not load (or MEMHIST_SCOPES_IMPL=python).

The fallback of src/pyhook/tensortag.cpp: the root-module and optimizer
hooks hand over the tensors of a role (a model's parameters and buffers,
the optimizer's parameters, their gradients, its state); each CUDA tensor
not given that role yet is tagged, with one recorder call per device and
role. A tensor is tagged once while it keeps its memory and role (a new
gradient each step is a new tensor), and a caller's last list is
remembered, so the same live tensors again cost no look-up.
"""
import ctypes
import weakref


class Tagger:
    """Tags tensors into recorder `rec` through `core`; `sid(name)` is the
    string id of a tensor's name."""

    def __init__(self, core, rec, sid):
        self.core, self.rec, self.sid = core, rec, sid
        self.tagged = {}  # id(tensor) -> (weak reference to it, role): tagged (or not CUDA)
        self.prune_at = 4096
        self.last = {}    # (caller, role) -> (ids, weak references) of the last tagged list

    def tag_all(self, tensors, role, site, names=None, grads=False):
        """Tags the CUDA tensors among `tensors` (a list of tensors, or of
        dicts of them: an optimizer's state per parameter; with `grads` their
        gradients) that were not given this role yet; `site` names the
        caller, `names` (or None) the tensors (tensortag.cpp: mh_tensortag,
        walk_named and tag_tensor)."""
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
            for m in memory_tensors(t):
                ptrs, sids = todo.setdefault(m.get_device(), ([], []))
                ptrs.append(m.data_ptr())
                sids.append(self.sid(names[i]) if names else 0)
        for device, (ptrs, sids) in todo.items():
            n = len(ptrs)
            self.core.mh_recorder_tags(self.rec, device, role, (ctypes.c_uint64 * n)(*ptrs),
                                       (ctypes.c_uint32 * n)(*sids), n)
        self.last[(site, role)] = (ids, refs)
        if len(cache) > self.prune_at:  # drop entries of dead tensors (old gradients)
            self.tagged = {k: v for k, v in cache.items() if v[0]() is not None}
            self.prune_at = max(4096, 2 * len(self.tagged))


def memory_tensors(t, depth=2):
    """The tensors that hold CUDA tensor `t`'s memory: `t`, or where it is a
    wrapper with no memory of its own (DTensor: FSDP2's parameters, their
    gradients and optimizer state) its inner tensors (tensortag.cpp:
    tag_wrapper)."""
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
    return [m for i in inner if getattr(i, "is_cuda", False) for m in memory_tensors(i, depth - 1)]
