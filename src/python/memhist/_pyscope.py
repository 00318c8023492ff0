"""memhist._pyscope - the forward scopes in Python, where libmemhist_pyhook
does not load (or MEMHIST_SCOPES_IMPL=python).

The fallback of src/pyhook/scopehook.c: torch's global module forward pre
and post hooks open and close the scope of each module call on the calling
thread, and the post hook hands what the forward made to the backward
scopes (memhist._pygrad) and tags it as the module's output. They are
called for every module call, so they keep their state in closure variables.
"""
import threading
import weakref

from . import _pygrad
from ._scopebase import FORWARD, is_compiling, sequence_number


def forward_hooks(scopes):
    """(pre, post): torch's module forward pre and post hooks of `scopes`
    (a memhist._scopes.Scopes: its recorder, names, backward scopes, and
    whether it is on). The pre hook is scopehook.c's mh__scope_enter (with
    root_begins), the post hook its mh__scope_exit."""
    compiling = is_compiling()
    seq_now = sequence_number()
    core, rec, names, local = scopes.core, scopes.rec, scopes.names, threading.local()
    scope, tag, roots = core.mh_recorder_scope, core.mh_recorder_tag, names.roots
    bwd_enter = scopes.backward.enter

    def pre(module, args):
        if not scopes.on or compiling():  # under torch.compile tracing: stay out of the graph
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
            parent = stack[-1][0] if stack else None
            known = names.known(module, parent) or names.name(module, parent)
            if not stack and key in roots:
                scopes.root_forward(module)
            # a module whose path is the open scope's (the module a wrapper
            # holds: FSDP's, torch.compile's) is in that scope, not a call of its own
            again = bool(stack) and stack[-1][1] == known[2]
            stack.append((known[1], known[2], seq_now(), again))
            if not again:
                scope(rec, 1, known[2], FORWARD, 0)
        except Exception as e:  # never break the program
            scopes.failed(e)
        return None

    def post(module, args, output):
        if not scopes.on or compiling():
            return None
        try:
            stack = getattr(local, "stack", None)
            if not stack:
                return None
            path, sid, since, again = stack.pop()
            if again:
                return None
            scope(rec, 0, sid, FORWARD, 0)
            made = _pygrad.made_outputs(output, since)
            if made:  # modules returning the same tensor (a block's last layer's) share a hook
                hooked = getattr(local, "hooked", None)
                if hooked is not None and hooked[0]() is made[0]:
                    hooked[1].append((path, sid))
                else:
                    shared = [(path, sid)]
                    made[0].grad_fn.register_prehook(lambda grad_outputs, s=shared: bwd_enter(s))
                    local.hooked = (weakref.ref(made[0]), shared)
            if id(module) not in roots:
                for t in made:  # what leaves the module (its output tags)
                    _pygrad.tag_output(tag, rec, t, sid)
        except Exception as e:
            scopes.failed(e)
        return None
    return pre, post
