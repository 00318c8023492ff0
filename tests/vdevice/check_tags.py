#!/usr/bin/env python3
"""check_tags.py - the tensor role tags made in C (src/pyhook/tensortag.cpp)
on CUDA tensors of the virtual device: a tensor is tagged once per role
while it keeps its memory, and again when its memory moves or its role
changes; a parameter's new gradient each step is tagged, and takes the table
slot of the one before (the table does not grow step by step); CPU tensors
and missing gradients are left out; an optimizer's state (a dict of dicts)
is walked; thousands of live tensors are all kept, and the slots of tensors
that are gone are dropped when the table grows. The tags are counted in the
recording (`memhist info --json`).

    python tests/vdevice/check_tags.py MEMHIST_BIN WORKDIR

Environment: as tests/vdevice/check_midrun.py (LD_PRELOAD of the virtual
device's libraries, MEMHIST_VDEVICE=1, MEMHIST_LIB_DIR, PYTHONPATH with
src/python). Exits 0 when every check holds, 1 otherwise, 77 without torch,
a CUDA device or libmemhist_pyhook.
"""
import ctypes
import gc
import json
import os
import subprocess
import sys

PARAMETER, BUFFER, GRADIENT, OPTIMIZER_STATE = 1, 2, 3, 4
failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def tag_count(memhist, path):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # the CLI needs no device
    p = subprocess.run([memhist, "info", "--json", path], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("memhist info failed: %s" % p.stderr.strip())
    return json.loads(p.stdout)["events_by_kind"].get("tag", 0)


class Tagger:
    """mh_tensortag on an open recording, counting the tags it should make."""

    def __init__(self, native, rec):
        self.native, self.rec, self.expected = native, rec, 0
        native.mh__tensortag_used.restype = ctypes.c_size_t

    def __call__(self, tensors, role, new, grads=False):
        self.native.mh_tensortag(self.rec, tensors, role, int(grads), None)
        self.expected += new

    def used(self):
        return self.native.mh__tensortag_used()


def scenarios(torch, tag):
    params = [torch.nn.Parameter(torch.randn(16, device="cuda")) for _ in range(4)]
    tag(params, PARAMETER, 4)
    tag(params, PARAMETER, 0)  # known: no tag
    tag(params, GRADIENT, 0, grads=True)  # no gradient yet
    for p in params:
        p.grad = torch.randn_like(p)
    tag(params, GRADIENT, 4, grads=True)
    tag(params, GRADIENT, 0, grads=True)
    used = tag.used()
    steps = 1500
    for _ in range(steps):  # zero_grad(set_to_none=True), then backward's new gradients
        for p in params:
            p.grad = None
            p.grad = torch.randn_like(p)
        tag(params, GRADIENT, len(params), grads=True)
    check(tag.used() == used, "a parameter's new gradients over %d steps take one slot (%d slots in use, "
          "%d before)" % (steps, tag.used(), used))
    params[0].data = torch.randn(16, device="cuda")  # its memory moved
    tag(params, PARAMETER, 1)
    tag(params, BUFFER, 4)  # another role, then back
    tag(params, PARAMETER, 4)
    tag([torch.randn(3), torch.nn.Parameter(torch.randn(2))], PARAMETER, 0)  # CPU tensors
    state = {p: {"step": torch.tensor(1.0), "exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.zeros_like(p)}
             for p in params}
    tag(state, OPTIMIZER_STATE, 8)
    tag(state, OPTIMIZER_STATE, 0)
    many = [torch.empty(1, device="cuda") for _ in range(3000)]
    tag(many, BUFFER, len(many))
    tag(many, BUFFER, 0)  # kept while the table grew
    tag(params, PARAMETER, 0)
    del many
    gc.collect()
    others = [torch.empty(1, device="cuda") for _ in range(3000)]
    tag(others, BUFFER, len(others))
    check(tag.used() < 3000 + 100, "the slots of tensors that are gone are dropped as the table grows "
          "(%d in use for 3000 live tensors and a few more)" % tag.used())
    tag(others, BUFFER, 0)
    tag(state, OPTIMIZER_STATE, 0)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    memhist, work = sys.argv[1], sys.argv[2]
    try:
        import torch
    except ImportError:
        print("skipped: torch is not installed")
        return 77
    if not torch.cuda.is_available():
        print("skipped: no CUDA device (the virtual device is not preloaded)")
        return 77
    from memhist import _native
    try:
        native = _native.pyhook()
    except OSError as e:
        print("skipped: libmemhist_pyhook does not load: %s" % e)
        return 77
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "tags.memhist")
    rec = ctypes.c_void_p()
    check(_native.bridge().mh_torch_open(path.encode(), None, ctypes.byref(rec)) >= 0, "a recording opens")
    hooks = native.mh_scopehook_open(rec, lambda m, p: [], lambda m: None, lambda e: None, torch._C.TensorBase)
    check(isinstance(hooks, tuple), "the hooks open (the tag table starts)")
    tag = Tagger(native, rec)
    try:
        scenarios(torch, tag)
    finally:
        native.mh_scopehook_release()
        _native.core().mh_recorder_close(rec)
    got = tag_count(memhist, path)
    check(got == tag.expected, "the recording holds the %d tags expected (%d)" % (tag.expected, got))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
