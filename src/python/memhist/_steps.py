"""memhist._steps - training steps from torch's global optimizer step hooks.

The bridge can find steps itself through a global record_function callback
(the Optimizer.step#... and ProfilerStep#N ranges), but any global callback
makes torch rebuild its callback lists whenever a thread restores its
thread-local state, which autograd does for every node of the backward pass:
about 1 % of a step of a small model on the virtual device. So the package reports optimizer steps
from two global optimizer hooks instead (one call into the bridge each) and
lets the bridge watch record_function ranges only while a torch.profiler
profile runs, whose ProfilerStep#N ranges then define the steps as before.
Each hook names its optimizer, so a loop that steps several optimizers per
iteration gets one training step per iteration (the bridge ends steps at the
steps of the first optimizer only), and tells the bridge when an optimizer
is garbage collected (a loop making a new optimizer each iteration). The
module scopes' optimizer hooks (OptimizerRoles: the tensor roles a step
tells) sit between the step hooks' pre and post hooks.

MEMHIST_STEP_HOOK=record_function keeps the callback on for the whole run:
needed where an optimizer step runs compiled (torch.compile(opt.step)), which
the hooks do not see.

MEMHIST_STOP_AFTER_STEPS=N (`memhist simulate --steps N -- CMD`, `memhist
record --steps N`, or memhist.start(stop_after_steps=N)) ends the program
once the recording holds N complete steps (StepLimit): short runs of an
unchanged training script whose memory per step has settled, as `memhist
fit` runs them, with the recording finished as at a normal exit.
"""
import os
import weakref

from . import _rank
from ._scopebase import GRADIENT, OPTIMIZER_STATE, PARAMETER


def from_record_function():
    """Whether the bridge's record_function callback finds the steps."""
    return os.environ.get("MEMHIST_STEP_HOOK", "optimizer") == "record_function"


def _is_compiling(torch):
    compiler = getattr(torch, "compiler", None)
    return getattr(compiler, "is_compiling", lambda: False)


class StepHooks:
    """Optimizer step begin/end and torch.profiler start/stop, reported to the
    bridge. The pre-hook goes in before the module scopes' hooks and the
    post-hook after theirs, so a step encloses what they record, as the
    Optimizer.step range does."""

    def __init__(self, bridge, on_error):
        self.bridge = bridge
        self.on_error = on_error
        self.handles = []
        self.profile_class = None
        self.originals = {}
        self.known = {}  # id(optimizer) -> weakref.finalize telling the bridge it is gone

    def install_pre(self, torch):
        from torch.optim import optimizer as opt
        self.handles.append(opt.register_optimizer_step_pre_hook(self._hook(torch, 1)))
        self._wrap_profiler(torch)

    def install_post(self, torch):
        from torch.optim import optimizer as opt
        self.handles.append(opt.register_optimizer_step_post_hook(self._hook(torch, 0)))

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []
        for fin in list(self.known.values()):
            fin.detach()
        self.known = {}
        for name, fn in self.originals.items():
            if getattr(getattr(self.profile_class, name, None), "_memhist", False):
                setattr(self.profile_class, name, fn)
        self.originals = {}

    def _hook(self, torch, begin):
        compiling = _is_compiling(torch)
        mark = self.bridge.mh_torch_optimizer_step_of
        known, gone = self.known, self._gone

        def hook(optimizer, args, kwargs):
            if compiling():  # under torch.compile tracing: stay out of the graph
                return None
            try:
                if begin and id(optimizer) not in known:
                    known[id(optimizer)] = weakref.finalize(optimizer, gone, id(optimizer))
                mark(begin, id(optimizer))
            except Exception as e:  # never break the program
                self.on_error(e)
            return None
        return hook

    def _gone(self, key):
        self.known.pop(key, None)
        try:
            self.bridge.mh_torch_optimizer_gone(key)
        except Exception as e:  # never break the program
            self.on_error(e)

    def _wrap_profiler(self, torch):
        """Ranges are watched from a profile's start (before its first
        ProfilerStep#0 opens) to its stop (after the last one closes)."""
        cls = getattr(getattr(torch, "profiler", None), "profile", None)
        if cls is None or getattr(getattr(cls, "start", None), "_memhist", False):
            return
        self.profile_class = cls
        watch = self.bridge.mh_torch_watch_ranges
        start, stop = cls.start, cls.stop

        def wrapped_start(prof, *args, **kwargs):
            watch(1)
            try:
                return start(prof, *args, **kwargs)
            except BaseException:
                watch(0)
                raise

        def wrapped_stop(prof, *args, **kwargs):
            try:
                return stop(prof, *args, **kwargs)
            finally:
                watch(0)

        for name, fn, orig in (("start", wrapped_start, start), ("stop", wrapped_stop, stop)):
            fn._memhist = True
            fn.__doc__ = orig.__doc__
            self.originals[name] = orig
            setattr(cls, name, fn)


class ClosurePhases:
    """An optimizer step given a closure (Lightning's training loop, LBFGS)
    runs the forward and backward inside Optimizer.step: the closure is
    wrapped so that the bridge marks the forward phase when it starts and
    the optimizer phase again when it returns, and `done(optimizer)` (the
    module scopes' closure_done) runs then."""

    def __init__(self, bridge, done, on_error):
        self.mark = bridge.mh_torch_closure
        self.done = done
        self.on_error = on_error
        self.handle = None

    def install(self, torch):
        from torch.optim import optimizer as opt
        compiling = _is_compiling(torch)

        def hook(optimizer, args, kwargs):
            if compiling():
                return None
            try:
                return self._wrapped(optimizer, args, kwargs)
            except Exception as e:  # never break the program
                self.on_error(e)
            return None
        self.handle = opt.register_optimizer_step_pre_hook(hook)

    def remove(self):
        if self.handle is not None:
            self.handle.remove()
            self.handle = None

    def _wrapped(self, optimizer, args, kwargs):
        """(args, kwargs) with the closure wrapped, or None without one
        (args start with the optimizer itself, then step's own)."""
        if callable(kwargs.get("closure")):
            return args, dict(kwargs, closure=self._phased(optimizer, kwargs["closure"]))
        if len(args) > 1 and callable(args[1]):
            return (args[0], self._phased(optimizer, args[1])) + tuple(args[2:]), kwargs
        return None

    def _phased(self, optimizer, closure):
        mark, done, on_error = self.mark, self.done, self.on_error

        def phased(*a, **k):
            mark(1)
            try:
                return closure(*a, **k)
            finally:
                try:
                    if done is not None:
                        done(optimizer)
                    mark(0)
                except Exception as e:  # never break the program
                    on_error(e)
        return phased



class OptimizerRoles:
    """The tensor roles an optimizer step tells, from its global pre and post
    hooks (installed between the step hooks' pre and post hooks) and from
    the closure it calls (ClosurePhases' done): gradients are tagged before
    the update, parameters too (a program may build its optimizer over other
    tensors), and the optimizer's state after it. The pre hook also closes
    the backward scopes, tells the bridge which devices the parameters are
    on (the step ends on those devices only: one process driving models on
    two devices has each device's own steps), and notes the rank
    torch.distributed gave a process started without one (memhist._rank).
    `scopes` (memhist._scopes.Scopes) tags and closes; `dist` is
    torch.distributed while the rank is not known, else None."""

    def __init__(self, scopes, bridge, core, rec, dist):
        self.scopes, self.bridge, self.core, self.rec, self.dist = scopes, bridge, core, rec, dist
        self.devmask = {}  # id(optimizer) -> (ids of its parameters, their devices as bits)
        self.handles = []

    def install(self, torch):
        from torch.optim import optimizer as opt
        self.handles.append(opt.register_optimizer_step_pre_hook(self.scopes.guard(self._pre)))
        self.handles.append(opt.register_optimizer_step_post_hook(self.scopes.guard(self._post)))

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    def _pre(self, optimizer, args, kwargs):
        scopes = self.scopes
        scopes.close_backward()
        if self.dist is not None and self.dist.is_initialized():
            _rank.note_dist_rank(self.core, self.rec, self.dist)
            self.dist = None
        scopes.first_step()
        params = self._params(optimizer)
        devices = scopes.tag_all(params, PARAMETER, id(optimizer))
        scopes.tag_all(params, GRADIENT, id(optimizer), grads=True)
        if self.bridge is not None:
            self.bridge.mh_torch_step_devices(self._devices(optimizer, params) if devices is None else devices)

    def _post(self, optimizer, args, kwargs):
        state = optimizer.state if self.scopes.nested else list(optimizer.state.values())
        self.scopes.tag_all(state, OPTIMIZER_STATE, id(optimizer))

    def closure_done(self, optimizer):
        """The closure an optimizer step called (its forward and backward:
        Lightning, LBFGS) returned: backward is over and the gradients it
        made are tagged before the update runs."""
        if not self.scopes.on:
            return
        self.scopes.close_backward()
        self.scopes.tag_all(self._params(optimizer), GRADIENT, id(optimizer), grads=True)

    def _params(self, optimizer):
        if self.scopes.nested:  # C walks each group's list
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


class StepLimitReached(SystemExit):
    """Ends a program once the recording holds the number of complete
    training steps it was given (MEMHIST_STOP_AFTER_STEPS, or start()'s
    stop_after_steps). Raised from the optimizer step hook in the thread
    that ran the step that completed it, so the program unwinds as from
    sys.exit(0): `finally` blocks and atexit handlers run, and the recording
    is finished as at a normal exit. A SystemExit, so code that catches
    Exception lets it through; `steps` is the number of steps recorded."""

    def __init__(self, steps):
        super().__init__(0)
        self.steps = steps


def limit_from_env():
    """MEMHIST_STOP_AFTER_STEPS as a positive integer, None when unset or
    empty; ValueError for anything else."""
    text = os.environ.get("MEMHIST_STOP_AFTER_STEPS", "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError("MEMHIST_STOP_AFTER_STEPS must be a positive integer, not %r" % text)
    return int(text)


class StepLimit:
    """Ends the program after `limit` complete steps. Checked from global
    optimizer step hooks, the post-hook registered after the step hooks'
    (so the step that just ended is counted) and the pre-hook too (where
    the bridge's record_function callback ends steps, which happens after
    the post-hooks, the program then stops at the next optimizer step), and
    after an explicit memhist.step(). The count is the bridge's
    (mh_torch_steps_ended), so steps are counted by the rule that ends them
    in the recording. Outside the main thread there is no SystemExit to
    raise: the recording is finished (`finish`) and the process exits 0."""

    def __init__(self, bridge, limit, note, finish, on_error):
        self.ended = bridge.mh_torch_steps_ended
        self.limit = limit
        self.note = note      # note(key, value): the recording's metadata
        self.finish = finish  # finishes the recording (and reports it)
        self.on_error = on_error
        self.handles = []
        self.reached = False

    def install(self, torch):
        from torch.optim import optimizer as opt
        compiling = _is_compiling(torch)

        def hook(optimizer, args, kwargs):
            if not compiling():
                self.check()
            return None
        self.handles.append(opt.register_optimizer_step_pre_hook(hook))
        self.handles.append(opt.register_optimizer_step_post_hook(hook))
        self.note("stop_after_steps", str(self.limit))

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    def check(self):
        if self.reached:
            return
        try:
            steps = self.ended()
            if steps < self.limit:
                return
            self.reached = True
            self.note("stopped_after_steps", str(steps))
        except Exception as e:  # never break the program
            self.on_error(e)
            return
        import sys
        import threading
        sys.stderr.write("memhist: process %d: stopped after %d complete steps (step limit %d)\n"
                         % (os.getpid(), steps, self.limit))
        if threading.current_thread() is threading.main_thread():
            raise StepLimitReached(steps)
        try:
            self.finish()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
