#!/usr/bin/env python3
"""check_scopes.py - the module scope hooks in C attribute every allocation
to the same module as the hooks in Python: records tests/vdevice/gpt_train.py
(unchanged, on the virtual CUDA device) twice, with the default hooks and
with MEMHIST_SCOPES_IMPL=python, and compares the module, step, phase and
size of every allocation in file order (scope_attr prints them) and the
categories at the peak (tensor roles tagged in C against those tagged in
Python); once plainly and once with two blocks under non-reentrant
checkpointing (their forward runs again inside backward) and gradients kept
across steps. Also checks that the default run used the C hooks and that
backward allocations are attributed to the transformer blocks at all.

    python tests/vdevice/check_scopes.py [WORKDIR]

Environment: MEMHIST (the CLI; default build/memhist), MH_SCOPE_ATTR (the
scope_attr helper; default build/tests/scope_attr), MH_SOURCE_DIR.
Exits 0 when every check holds, 1 otherwise, 77 (skipped, with the reason)
without torch or the virtual device.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(HERE, "..", ".."))
MEMHIST = os.environ.get("MEMHIST", os.path.join(SRC, "build", "memhist"))
ATTR = os.environ.get("MH_SCOPE_ATTR", os.path.join(SRC, "build", "tests", "scope_attr"))
SCRIPT = os.path.join(SRC, "tests", "vdevice", "gpt_train.py")
BACKWARD = 2
SKIP = 77
failures = []

PROBE = """
from torch.nn.modules import module as M
import torch
torch.nn.Linear(2, 2).cuda()(torch.ones(1, 2, device="cuda"))
print("hooks:", ",".join(c.cell_contents.__name__ for h in M._global_forward_pre_hooks.values()
                         for c in (getattr(h, "__closure__", None) or ())
                         if type(c.cell_contents).__name__ == "builtin_function_or_method"))
"""


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def simulate(work, name, args, impl=None):
    path = os.path.join(work, name + ".memhist")
    env = {k: v for k, v in os.environ.items() if k != "MEMHIST_SCOPES_IMPL"}
    if impl:
        env["MEMHIST_SCOPES_IMPL"] = impl
    p = subprocess.run([MEMHIST, "simulate", "--no-report", "-o", path, "--", sys.executable] + args,
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        if "virtual" in p.stderr and "not" in p.stderr:
            print("skipped: the virtual device is not available")
            sys.exit(SKIP)
        sys.exit("memhist simulate failed (%d)" % p.returncode)
    return path, p.stdout


def attribution(path):
    p = subprocess.run([ATTR, path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("scope_attr failed: %s" % p.stderr.strip())
    return [l.split(" ", 3) for l in p.stdout.splitlines()]


def categories(path):
    p = subprocess.run([MEMHIST, "report", "--json", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("memhist report failed: %s" % p.stderr.strip())
    return json.loads(p.stdout)["files"][0]["devices"][0]["category_at_peak"]


def compare(work, name, args):
    c_path = simulate(work, name + "_c", [SCRIPT] + args)[0]
    py_path = simulate(work, name + "_py", [SCRIPT] + args, "python")[0]
    native, python = attribution(c_path), attribution(py_path)
    check(len(native) == len(python) > 0, "%s: the same allocations (%d and %d)" % (name, len(native), len(python)))
    diff = [(i, a, b) for i, (a, b) in enumerate(zip(native, python)) if a != b]
    check(not diff, "%s: every allocation has the same step, phase, size and module (%d differ%s)"
          % (name, len(diff), ", first: #%d C %s, Python %s" % diff[0] if diff else ""))
    cn, cp = categories(c_path), categories(py_path)
    roles = ("parameter", "optimizer_state") + (("gradient",) if "--keep-grads" in args else ())
    check(cn == cp and all(cn.get(r, 0) > 0 for r in roles),
          "%s: the tensor roles tagged in C give the categories of the Python tags (C %s, Python %s)" % (name, cn, cp))
    bwd = {l[3] for l in native if int(l[1]) == BACKWARD and l[3].startswith("transformer.h.")}
    blocks = {m.split(".")[2] for m in bwd}
    check(len(blocks) == 2, "%s: backward allocations name the blocks (%s)" % (name, ", ".join(sorted(bwd)[:6])))


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: torch is not installed")
        return SKIP
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="mh_scopes.")
    os.makedirs(work, exist_ok=True)
    probe = os.path.join(work, "probe.py")
    with open(probe, "w") as f:
        f.write(PROBE)
    _, out = simulate(work, "probe", [probe])
    check("hooks: memhist_scope_pre" in out, "memhist record installs the C hooks (%s)" % out.strip())
    compare(work, "plain", ["--layers", "2", "--steps", "3"])
    compare(work, "ckpt", ["--layers", "2", "--steps", "3", "--ckpt", "0,1", "--keep-grads"])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
