#!/usr/bin/env python3
"""check_scopes.py - the module scopes in C attribute every allocation to
the same module as the hooks in Python: records tests/vdevice/gpt_train.py
(unchanged, on the virtual CUDA device) with each implementation, the
default (sys.monitoring of module forwards on CPython 3.12 and later, else
torch's Module.__call__ wrapped in C), torch's forward hooks in C
(MEMHIST_SCOPES_IMPL=hooks) and the Python hooks
(MEMHIST_SCOPES_IMPL=python), and compares the module, step, phase and
size of every allocation in file order (scope_attr prints them) and the
categories at the peak (tensor roles tagged in C against those tagged in
Python); once plainly and once with two blocks under non-reentrant
checkpointing (their forward runs again inside backward) and gradients kept
across steps; and tests/vdevice/scope_patterns_program.py, whose forwards
are built the ways libraries build them (decorated, replaced, patched).
Also checks that no scope is left open at a step's end (a forward that
raised, as a recomputation under checkpointing does to stop early), which
implementation each run used, and that backward allocations are attributed
to the transformer blocks (and to each block of the patterns) at all.

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
PATTERNS = os.path.join(SRC, "tests", "vdevice", "scope_patterns_program.py")
FORWARD, BACKWARD = 1, 2
SKIP = 77
failures = []

MONITORED = hasattr(sys, "monitoring")  # CPython 3.12 and later
DEFAULT_IMPL = "sys.monitoring of module forwards, in C" if MONITORED else "Module.__call__ wrapped in C"
IMPLS = {None: DEFAULT_IMPL, "hooks": "forward hooks in C", "python": "forward hooks in Python"}


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


def attribution(path, label):
    """Every allocation's [step, phase, size, module]; checks that no module
    scope is left open at a step's end."""
    p = subprocess.run([ATTR, path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("scope_attr failed: %s" % p.stderr.strip())
    lines = [l.split(" ", 3) for l in p.stdout.splitlines()]
    left_open = ["step %s: %s" % (l[1], l[3]) for l in lines if l[0] == "open"]
    check(not left_open, "%s: no module scope is open at a step's end (%s)" % (label, ", ".join(left_open[:4])))
    return [l for l in lines if l[0] != "open"]


def categories(path):
    p = subprocess.run([MEMHIST, "report", "--json", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("memhist report failed: %s" % p.stderr.strip())
    return json.loads(p.stdout)["files"][0]["devices"][0]["category_at_peak"]


def meta(path, key):
    p = subprocess.run([MEMHIST, "info", "--json", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("memhist info failed: %s" % p.stderr.strip())
    return json.loads(p.stdout)["meta"].get(key)


def compare(work, name, args, script=SCRIPT, compiles=False):
    """Records `script` with each implementation; their attributions against
    the Python hooks'. Returns the default run's attribution. compiles: the
    script uses torch.compile, where the wrapped Module.__call__ hands over
    to the forward hooks."""
    runs = {}
    for impl, used in IMPLS.items():
        if compiles and impl is None and not MONITORED:
            used = "forward hooks in C (Module.__call__ wrapped until torch.compile began)"
        path = simulate(work, "%s_%s" % (name, impl or "default"), [script] + args, impl)[0]
        got = meta(path, "module_scopes")
        check(got == used, "%s, %s: the scopes came from %s (%s)" % (name, impl or "default", used, got))
        runs[impl] = (path, attribution(path, "%s, %s" % (name, impl or "default")))
    py_path, python = runs.pop("python")
    for impl, (c_path, native) in runs.items():
        label = "%s, %s" % (name, impl or "default")
        check(len(native) == len(python) > 0, "%s: the same allocations (%d and %d)" % (label, len(native), len(python)))
        diff = [(i, a, b) for i, (a, b) in enumerate(zip(native, python)) if a != b]
        check(not diff, "%s: every allocation has the same step, phase, size and module as with the Python hooks"
              " (%d differ%s)" % (label, len(diff), ", first: #%d C %s, Python %s" % diff[0] if diff else ""))
        cn, cp = categories(c_path), categories(py_path)
        roles = ("parameter", "optimizer_state") + (("gradient",) if "--keep-grads" in args else ())
        check(cn == cp and all(cn.get(r, 0) > 0 for r in roles),
              "%s: the tensor roles tagged in C give the categories of the Python tags (C %s, Python %s)"
              % (label, cn, cp))
    return runs[None][1]


def gpt_blocks(name, attr):
    bwd = {l[3] for l in attr if int(l[1]) == BACKWARD and l[3].startswith("transformer.h.")}
    blocks = {m.split(".")[2] for m in bwd}
    check(len(blocks) == 2, "%s: backward allocations name the blocks (%s)" % (name, ", ".join(sorted(bwd)[:6])))


PATTERN_BLOCKS = 11


def pattern_blocks(attr):
    """Each of the pattern program's blocks has allocations of its own,
    forward and backward (the three compiled ones too, which share one
    graph module, one of them compiled in place)."""
    for phase in (FORWARD, BACKWARD):
        named = {l[3].split(".")[1] for l in attr if int(l[1]) == phase and l[3].startswith("blocks.")}
        check(named == {str(i) for i in range(PATTERN_BLOCKS)}, "patterns: %s allocations name all %d blocks (%s)"
              % ("backward" if phase == BACKWARD else "forward", PATTERN_BLOCKS, ", ".join(sorted(named))))


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: torch is not installed")
        return SKIP
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="mh_scopes.")
    os.makedirs(work, exist_ok=True)
    gpt_blocks("plain", compare(work, "plain", ["--layers", "2", "--steps", "3"]))
    gpt_blocks("ckpt", compare(work, "ckpt", ["--layers", "2", "--steps", "3", "--ckpt", "0,1", "--keep-grads"]))
    pattern_blocks(compare(work, "patterns", ["--steps", "3"], PATTERNS, compiles=True))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
