"""The module and optimizer hooks of memhist._scopes on CPU torch, with the
recorder replaced by objects that keep every call.

Checks: forward scopes carry module paths from the root model and nest;
backward scopes open on the autograd thread in reverse module order and
close before the optimizer step; the first root forward opens step 0 once;
CPU tensors are never tagged (tags of CUDA tensors are checked against torch
on the virtual device, tests/vdevice/check_answers.py); an in-place ReLU
model still trains (torch's full backward hooks would break it); removing
the hooks stops all calls.
Skips (77) without torch.
"""
import os
import sys

SRC = os.environ.get("MH_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(SRC, "src", "python"))
try:
    import torch
    import torch.nn as nn
except ImportError:
    print("skipped: torch is not installed")
    sys.exit(77)

from memhist import _scopebase, _scopes  # noqa: E402

failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


class Fn:
    """A ctypes function stand-in: accepts argtypes/restype, records calls."""

    def __init__(self, log, name, result=0):
        self.log, self.name, self.result = log, name, result

    def __call__(self, *args):
        self.log.append((self.name,) + args)
        return self.result(*args) if callable(self.result) else self.result


class Lib:
    def __init__(self, log, names):
        for name, result in names.items():
            setattr(self, name, Fn(log, name, result))


rec = object()


def make():
    log, strings = [], {}

    def intern(rec, b, n):
        return strings.setdefault(b.decode(), len(strings) + 1)

    core = Lib(log, {"mh_intern_string": intern, "mh_recorder_scope": 0, "mh_recorder_tag": 0, "mh_recorder_tags": 0,
                     "mh_recorder_step_begin": 0,
                     "mh_thread_id": lambda: __import__("threading").get_native_id()})

    class Session:
        status = "recording"

    s = _scopes.Scopes(core, rec, Session())
    return s, log, strings, None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 8))
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.body(x))


def scopes(log, strings, phase=None):
    by_id = {v: k for k, v in strings.items()}
    return [("enter" if c[2] else "exit", by_id[c[3]], c[4]) for c in log
            if c[0] == "mh_recorder_scope" and (phase is None or c[4] == phase)]


def main():
    s, log, strings, _ = make()
    s.install(torch)
    try:
        net = Net()
        opt = torch.optim.AdamW(net.parameters())
        for _ in range(2):
            net(torch.randn(3, 4)).sum().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    finally:
        s.remove()
    fwd = scopes(log, strings, _scopebase.FORWARD)
    first = fwd[:12]
    check(first[0] == ("enter", "Net", 1), "the root is named by its class: %s" % (first[0],))
    check(("enter", "body.0", 1) in first and ("enter", "head", 1) in first,
          "children by their path from the root: %s" % [f[1] for f in first])
    check(first.index(("enter", "body.1", 1)) < first.index(("exit", "body", 1)), "scopes nest")
    check(log.count(("mh_recorder_step_begin", rec, 0)) == 1, "step 0 opened once, at the first root forward")
    bwd = scopes(log, strings, _scopebase.BACKWARD)
    order = [b[1] for b in bwd if b[0] == "enter"][:6]
    # Net returns head's output and body body.2's: they open at that node, outermost first
    check(order == ["Net", "head", "body", "body.2", "body.1", "body.0"],
          "backward scopes open from the output back: %s" % order)
    first_step = bwd[:2 * 6]
    check(sorted(b[1] for b in first_step if b[0] == "enter") ==
          sorted(b[1] for b in first_step if b[0] == "exit"),
          "every backward scope that opens closes: %s" % first_step)
    threads = {c[5] for c in log if c[0] == "mh_recorder_scope" and c[4] == _scopebase.BACKWARD}
    check(len(threads) >= 1, "backward scopes carry the autograd thread")
    enters = sum(1 for b in scopes(log, strings, _scopebase.FORWARD) if b[0] == "enter")
    exits = sum(1 for b in scopes(log, strings, _scopebase.FORWARD) if b[0] == "exit")
    check(enters == exits == 2 * 6, "every forward scope closes (%d enters, %d exits)" % (enters, exits))
    # tags: CPU tensors are skipped (addresses of host memory mean nothing to the model)
    check(not any(c[0].startswith("mh_recorder_tag") for c in log), "CPU tensors are not tagged")
    n = len(log)
    net(torch.randn(3, 4)).sum().backward()
    check(len(log) == n, "removed hooks make no calls")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
