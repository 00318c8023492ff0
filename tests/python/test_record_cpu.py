"""`memhist record` and the memhist Python package on a machine without a GPU.

Checks that the recorded program runs to completion with its own output and
exit status, that memhist explains why nothing was recorded, that a
sitecustomize the environment already had still runs, and that the package
imports and its start/stop API works as a context manager. Skips (77) when
the torch bridge was not built or when a GPU is present (tests/gpu covers it).
"""
import os
import subprocess
import sys
import tempfile

MEMHIST = os.environ.get("MEMHIST")
BIN = os.environ.get("MH_BINARY_DIR", "")
SRC = os.environ.get("MH_SOURCE_DIR", "")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def skip(why):
    print("skipped:", why)
    sys.exit(77)


if not MEMHIST or not os.path.exists(os.path.join(BIN, "libmemhist_torch.so")):
    skip("the torch bridge (libmemhist_torch.so) was not built")
try:
    import torch
except ImportError:
    skip("torch is not installed")
if torch.cuda.is_available():
    skip("a GPU is present; tests/gpu checks recording there")


def record(args, code, env=None, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([MEMHIST, "record"] + args + ["--", sys.executable, "-c", code],
                          capture_output=True, text=True, env=e, cwd=cwd, timeout=300)


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "run.memhist")
    # 1. a torch program on CPU: runs to completion, nothing recorded, explained
    p = record(["-o", out], "import torch; x = torch.ones(4); print('result', int(x.sum()))")
    check(p.returncode == 0, "exit status 0, got %d: %s" % (p.returncode, p.stderr))
    check("result 4" in p.stdout, "program output kept: %r" % p.stdout)
    check("nothing recorded" in p.stderr and "no CUDA device" in p.stderr,
          "explains why nothing was recorded: %r" % p.stderr)
    check(not os.path.exists(out), "no file written without CUDA")
    check(not [f for f in os.listdir(tmp) if ".status." in f], "status file removed")

    # 1b. under torchrun every per-process line names the rank
    p = record(["-o", out], "import torch; torch.ones(1)", env={"RANK": "3"})
    check(p.returncode == 0 and "memhist: warning: rank 3 (process " in p.stderr and "nothing recorded" in p.stderr,
          "the rank in the per-process line: %r" % p.stderr)

    # 2. exit status and exceptions pass through
    p = record(["-o", out], "import torch; raise SystemExit(5)")
    check(p.returncode == 5, "exit status 5 passed through, got %d" % p.returncode)
    p = record(["-o", out], "raise ValueError('boom')")
    check(p.returncode == 1 and "ValueError: boom" in p.stderr, "exception reported, status 1")
    check("never imported torch" in p.stderr, "reason without torch: %r" % p.stderr)

    # 3. an existing sitecustomize still runs
    site = os.path.join(tmp, "site")
    os.mkdir(site)
    with open(os.path.join(site, "sitecustomize.py"), "w") as f:
        f.write("import builtins\nbuiltins.MH_PREVIOUS_SITE = 'ran'\n")
    p = record(["-o", out], "print('site', MH_PREVIOUS_SITE)", env={"PYTHONPATH": site})
    check(p.returncode == 0 and "site ran" in p.stdout, "previous sitecustomize chained: %r" % p.stderr)

    # 4. usage errors
    p = subprocess.run([MEMHIST, "record", "--stacks", "cpp", "--", "true"], capture_output=True, text=True)
    check(p.returncode == 2 and "--stacks" in p.stderr, "bad --stacks is a usage error")
    for bad in ("0", "513", "x"):
        p = subprocess.run([MEMHIST, "record", "--frames", bad, "--", "true"], capture_output=True, text=True)
        check(p.returncode == 2 and "--frames" in p.stderr and len(p.stderr.strip().splitlines()) <= 2,
              "--frames %s is a usage error: %r" % (bad, p.stderr))
    p = subprocess.run([MEMHIST, "record"], capture_output=True, text=True)
    check(p.returncode == 2, "missing command is a usage error")

    # 5. the package: import, start/stop as a context manager, bad arguments;
    # without CUDA a warning with the reason, kept after stop, and no file
    code = (
        "import warnings, memhist\n"
        "warnings.simplefilter('always')\n"
        "try:\n"
        "    memhist.start(%r, stacks='cpp')\n"
        "except ValueError:\n"
        "    print('bad stacks refused')\n"
        "for bad in (0, 513, 2.5, True, '3'):\n"
        "    try:\n"
        "        memhist.start(%r, frames=bad)\n"
        "    except ValueError:\n"
        "        print('bad frames refused', bad)\n"
        "with memhist.start(%r) as s:\n"
        "    memhist.step(); memhist.mark('x')\n"
        "    print('status', memhist.status())\n"
        "print('after', memhist.status(), s.counts)\n" % (out, out, out))
    env = dict(os.environ, PYTHONPATH=os.path.join(BIN, "python"))
    env.pop("MEMHIST_LIB_DIR", None)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    check(p.returncode == 0, "package run: %s" % p.stderr)
    check("bad stacks refused" in p.stdout, "invalid stacks refused")
    check(p.stdout.count("bad frames refused") == 5, "invalid frames refused: %r" % p.stdout)
    check("status not recording: no CUDA device" in p.stdout, "status explains: %r" % p.stdout)
    check("after not recording: no CUDA device" in p.stdout and "None" in p.stdout,
          "the reason is kept after stop, nothing emitted: %r" % p.stdout)
    check("MemhistWarning: memhist: not recording: no CUDA device" in p.stderr,
          "a MemhistWarning says why: %r" % p.stderr)
    check(not os.path.exists(out), "no file written without CUDA")

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
