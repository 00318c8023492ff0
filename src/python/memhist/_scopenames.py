"""memhist._scopenames - the path that names each module's scope.

A module's scope is named by its path from its root model
("transformer.h.11.mlp"; the root is its class name), as state_dict keys
name parameters: without the attributes by which torch's wrappers hold the
module they wrap (torch.compile's OptimizedModule, FSDP, checkpoint_wrapper),
and under DDP or DataParallel without their `module.`. A root that another
module holds (the blocks a LightningModule's training_step calls, never its
forward) is named by its path in the outermost holder, which the module
registration hook (watch_holders) tells. Two models whose paths would meet
(a GAN's generator and discriminator) have their paths start with their
class names. A module outside every root's tree is named by the scope it is
called in and its class.

Names keeps the table from module to path and the recording's string id of
each path; the scope hooks (in C, scopehook.c, or in Python, memhist._pyscope)
ask it on a module's first sight only. It never keeps a model alive.
"""
import weakref

# attributes by which torch's wrappers hold the module they wrap
_WRAPPED = ("_orig_mod", "_fsdp_wrapped_module", "_checkpoint_wrapped_module", "_forward_module")
# root wrappers that hold the model as their attribute `module`
_DATA_PARALLEL = ("DistributedDataParallel", "DataParallel")


class Names:
    """Paths and string ids of modules. `intern(path)` returns a path's
    string id in the recording; `seen(module)` is called for each module of
    a tree being named (the scopes' install policy: a module compiled in
    place is scoped around its compiled call)."""

    def __init__(self, intern, seen=lambda module: None):
        self.intern = intern
        self.seen = seen
        # id(module) -> (weak reference to the module, path, string id, parent path): parent:
        # the enclosing scope's path that named a module outside every root's tree (None for
        # a tree's), whose name follows the scope it is called in
        self.names = {}
        self.sids = {}       # path -> interned string id
        self.owners = {}     # path -> weak reference to the module of a root's tree named by it
        self.prefixes = {}   # id(root) -> what its submodules' paths start with ("" but beside another model)
        self.owner_of = {}   # id(root) -> weak reference to the model that holds it (model_of)
        self.roots = set()       # id() of root modules
        self.root_names = set()  # their paths (class names)

    def sid(self, path):
        sid = self.sids.get(path)
        if sid is None:
            sid = self.intern(path)
            self.sids[path] = sid
        return sid

    def known(self, module, parent):
        """The entry of a module named before, or None where it is new (or
        dead and its address reused), or named outside every tree in another
        scope than `parent`, the open scope's path (a graph module
        torch.compile shares between blocks)."""
        known = self.names.get(id(module))
        if known is None or known[0]() is not module or (known[3] is not None and parent is not None
                                                         and known[3] != parent):
            return None
        return known

    def name(self, module, parent):
        """(weak reference, path, string id, parent) of a module seen for the
        first time, or outside its tree called in another scope than the one
        that named it: a root (`parent` None: no open scope) names its whole tree."""
        if parent is None:
            self.name_root(module)
            return self.names[id(module)]
        return self.name_under(module, parent)

    def name_under(self, module, parent):
        """Names a module outside every root's tree by the scope `parent` it
        is called in and its class."""
        path = parent + "." + type(module).__name__
        known = self.names[id(module)] = (weakref.ref(module), path, self.sid(path), parent)
        return known

    def name_root(self, root):
        """Names a root and its submodules not named yet: [(module, path, string
        id)]. A root that another module holds is named by its path in the
        outermost holder, whose whole tree is named."""
        known = self.names.get(id(root))
        if known is None or known[0]() is not root:
            owner = model_of(root)
            if owner is not None:
                named = self.name_root(owner)
                self.owner_of[id(root)] = weakref.ref(owner)
                self.roots.add(id(root))
                return named
        dp = is_data_parallel(root)  # its model is named as a root would be, by its class
        subs = [(unwrapped(name, dp) or type(sub).__name__, sub)
                for name, sub in root.named_modules() if name]
        if known is not None and known[0]() is root:
            label, prefix = known[1], self.prefixes.get(id(root), "")
        else:
            label, prefix = self._root_label(root, subs)
        self.roots.add(id(root))
        self.root_names.add(label)
        self.prefixes[id(root)] = prefix
        named = [self._name_one(root, label)]
        self.seen(root)
        for path, sub in subs:
            self.seen(sub)
            known = self.names.get(id(sub))
            if known is None or known[0]() is not sub:
                named.append(self._name_one(sub, prefix + path if path else label))
        return named

    def model(self, root):
        """The model whose parameters a root's are (the model that holds it,
        else the root itself)."""
        owner = self.owner_of.get(id(root))
        model = owner() if owner is not None else None
        return model if model is not None else root

    def within(self, path, outer):
        """`path` is a submodule of `outer` (every module is within its root)."""
        return path != outer and (outer in self.root_names or path.startswith(outer + "."))

    def _name_one(self, module, path):
        ref = weakref.ref(module)
        self.owners[path] = ref
        self.names[id(module)] = (ref, path, self.sid(path), None)
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


def model_of(root):
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


def is_data_parallel(root):
    """Whether `root` is DDP or DataParallel: they hold the model as `module`."""
    return type(root).__name__ in _DATA_PARALLEL and hasattr(root, "module")


def unwrapped(name, data_parallel=False):
    """A module or parameter path without the attributes by which torch's
    wrappers hold what they wrap ("h.3._orig_mod.mlp" -> "h.3.mlp"; under
    DDP or DataParallel, with `data_parallel`, "module.h.3" -> "h.3": the
    paths of the model a checkpointing plan is applied to)."""
    if data_parallel and (name == "module" or name.startswith("module.")):
        name = name[len("module."):]
    if "_orig_mod" not in name and "_wrapped_module" not in name:  # the usual path, as it is
        return name
    return ".".join(p for p in name.split(".") if p not in _WRAPPED)
