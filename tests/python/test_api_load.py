"""The memhist Python package finds its libraries, and a failure to load
them never stops the program.

1. The package seen through a build tree (BUILD/python/memhist) loads
   libmemhist and the tool from that build tree, with no environment set.
2. A copy of the package with no libraries anywhere near it: start() on a
   (pretended) CUDA machine returns a session, emits a MemhistWarning naming
   the library and where it looked, keeps the reason in status() during and
   after the session, and step()/mark()/stop() run without error; no file.
"""
import os
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ.get("MH_BINARY_DIR", "")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def python(code, pythonpath, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHIST", "PYTHONPATH"))}
    env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


if not os.path.exists(os.path.join(BIN, "libmemhist.so")):
    print("skipped: no libmemhist.so in MH_BINARY_DIR")
    sys.exit(77)

FAKE_CUDA = ("import types\n"
             "cuda = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: False,\n"
             "                             _lazy_call=lambda f: None)\n")

with tempfile.TemporaryDirectory() as tmp:
    # 1. development: the build tree's python/ link
    code = ("import memhist._native as n\n"
            "n.core(); print('core', n._LIBS['core']._name); print('tool', n.tool())\n")
    p = python(code, os.path.join(BIN, "python"), tmp)
    check(p.returncode == 0, "build-tree package imports: %s" % p.stderr)
    check(("core " + os.path.join(os.path.realpath(BIN), "libmemhist.so")) in p.stdout
          or ("core " + os.path.join(BIN, "libmemhist.so")) in p.stdout,
          "libmemhist from the build tree: %r" % p.stdout)
    check("tool " in p.stdout and p.stdout.rstrip().endswith("/memhist"), "tool from the build tree")

    # 2. no libraries: a warning with the reason, the program runs on
    lone = os.path.join(tmp, "lone", "site")
    shutil.copytree(os.path.join(BIN, "python", "memhist"), os.path.join(lone, "memhist"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    out = os.path.join(tmp, "x.memhist")
    code = (FAKE_CUDA +
            "import warnings, memhist\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    s = memhist.start(%r, _cuda=cuda)\n"
            "print('during', memhist.status())\n"
            "memhist.step(); memhist.mark('m')\n"
            "print('stopped', memhist.stop() is s)\n"
            "print('after', memhist.status())\n"
            "for x in w: print('warning', x.category.__name__, x.message)\n"
            "print('program continues')\n" % out)
    p = python(code, lone, tmp)
    lines = p.stdout.split("\n")
    check(p.returncode == 0 and "program continues" in p.stdout, "the program runs on: %s" % p.stderr)
    during = [l for l in lines if l.startswith("during not recording: ")]
    check(len(during) == 1 and ("cannot load libmemhist.so" in during[0] or "torch" in during[0]),
          "status names the failure: %r" % p.stdout)
    check(during and ("after " + during[0][len("during "):]) in lines, "the reason is kept after stop")
    check("stopped True" in lines, "stop() returns the session")
    warned = [l for l in lines if l.startswith("warning MemhistWarning memhist: not recording: ")]
    check(len(warned) == 1 and during and during[0][len("during "):] in warned[0],
          "one MemhistWarning with the same reason: %r" % p.stdout)
    check(not os.path.exists(out), "no file written")

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
