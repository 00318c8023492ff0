"""`pip install` of the memhist source tree gives a working tool and package.

Builds the wheel with pip (pyproject.toml: scikit-build-core, taken from the
package index in pip's isolated build environment), installs it into a fresh
virtual environment that sees the system's packages (torch is not downloaded
again), and from outside the source tree runs `memhist --version`,
`python -m memhist`, `memhist simulate` and `memhist info`, imports the
package, checks that it loads the libraries from the wheel (the torch bridge
too, when the build tree has one: built against the same torch), and that
without a GPU `memhist.start` warns and writes no file, as `memhist record`
does; and that installing it enables its pytest plugin (pytest11 entry
point: `pytest --memhist-gpu T4` without -p). Environment: MH_SOURCE_DIR,
MH_BINARY_DIR.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import zipfile

SRC = os.environ["MH_SOURCE_DIR"]
BIN = os.environ["MH_BINARY_DIR"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(cmd, cwd, timeout=900):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHIST", "PYTHONPATH"))}
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    if p.returncode != 0:
        print("$ %s\n%s%s" % (" ".join(cmd), p.stdout[-3000:], p.stderr[-3000:]))
    return p


def build_and_install(tmp):
    venv = os.path.join(tmp, "venv")
    py = os.path.join(venv, "bin", "python")
    p = run([sys.executable, "-m", "venv", "--system-site-packages", venv], tmp)
    check(p.returncode == 0, "virtual environment created")
    dist = os.path.join(tmp, "dist")
    p = run([py, "-m", "pip", "wheel", "--no-deps", "-w", dist, SRC], tmp)
    check(p.returncode == 0, "pip builds the wheel")
    wheels = glob.glob(os.path.join(dist, "memhist-*.whl"))
    check(len(wheels) == 1, "one memhist wheel: %s" % wheels)
    if len(wheels) != 1:
        return None, None
    p = run([py, "-m", "pip", "install", "--no-deps", "--no-index", wheels[0]], tmp)
    check(p.returncode == 0, "pip installs the wheel")
    return venv, wheels[0]


def check_wheel_files(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for name in ["memhist/__init__.py", "memhist/__main__.py", "memhist/_install.py",
                 "memhist/bootstrap/sitecustomize.py", "memhist/bin/memhist", "memhist/lib/libmemhist.so"]:
        check(name in names, "wheel holds " + name)
    if os.path.exists(os.path.join(BIN, "libmemhist_torch.so")):
        check("memhist/lib/libmemhist_torch.so" in names, "wheel holds the torch bridge")
    if os.path.exists(os.path.join(BIN, "libmemhist_pyhook.so")):
        check("memhist/lib/libmemhist_pyhook.so" in names, "wheel holds the module scope hooks")
    if os.path.isdir(os.path.join(BIN, "vdevice")):
        check("memhist/lib/memhist/vdevice/libcudart.so.13" in names, "wheel holds the virtual device")
    check(not [n for n in names if n.startswith(("tests/", "include/")) or "/test_" in n],
          "no tests or headers in the wheel")
    entry_points = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points[0]).decode() if entry_points else ""
    check(re.search(r"\[pytest11\]\s*memhist\s*=\s*memhist\.pytest_plugin\s", text) is not None,
          "the pytest plugin's entry point: %r" % text)


def check_tool(venv, tmp):
    tool = os.path.join(venv, "bin", "memhist")
    p = run([tool, "--version"], tmp)
    check(p.returncode == 0 and p.stdout.startswith("memhist 0."), "memhist --version: %r" % p.stdout)
    p = run([os.path.join(venv, "bin", "python"), "-m", "memhist", "--version"], tmp)
    check(p.returncode == 0 and p.stdout.startswith("memhist 0."), "python -m memhist --version")
    out = os.path.join(tmp, "sim.memhist")
    p = run([tool, "simulate", "--steps", "2", "-o", out], tmp)
    check(p.returncode == 0 and os.path.exists(out), "memhist simulate writes a file")
    p = run([tool, "info", out], tmp)
    check(p.returncode == 0 and "simulated" in p.stdout, "memhist info reads it")
    p = run([tool, "info", os.path.join(tmp, "absent.memhist")], tmp)
    check(p.returncode == 1 and p.stderr.count("\n") == 1, "errors pass through with their exit status")


def check_package(venv, tmp):
    site = "%s/lib/python%d.%d/site-packages/memhist/" % (venv, sys.version_info[0], sys.version_info[1])
    code = ("import os, warnings, memhist, memhist._native as n\n"
            "print('file', memhist.__file__)\n"
            "n.core(); print('core', n._LIBS['core']._name)\n"
            "print('tool', n.tool())\n")
    p = run([os.path.join(venv, "bin", "python"), "-c", code], tmp)
    check(p.returncode == 0, "import memhist")
    check(("file " + site + "__init__.py") in p.stdout, "package imported from the venv: %r" % p.stdout)
    check(("core " + site + "lib/libmemhist.so") in p.stdout, "libmemhist loaded from the wheel")
    check(("tool " + site + "bin/memhist") in p.stdout, "the package finds its tool")
    if not os.path.exists(os.path.join(BIN, "libmemhist_torch.so")):
        return
    code = ("import os, warnings, torch, memhist, memhist._native as n\n"
            "n.bridge(); print('bridge', n._LIBS['torch']._name)\n"
            "if torch.cuda.is_available(): raise SystemExit(0)\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    memhist.start('nocuda.memhist'); memhist.stop()\n"
            "print('warned', [str(x.message) for x in w if x.category is memhist.MemhistWarning])\n"
            "print('file', os.path.exists('nocuda.memhist'))\n")
    p = run([os.path.join(venv, "bin", "python"), "-c", code], tmp)
    check(p.returncode == 0 and ("bridge " + site + "lib/libmemhist_torch.so") in p.stdout,
          "torch bridge loads from the wheel: %r" % p.stdout)
    if "warned" not in p.stdout:
        return  # a GPU is present: tests/gpu covers recording
    check("no CUDA device" in p.stdout and "file False" in p.stdout,
          "no GPU: a warning with the reason and no file: %r" % p.stdout)
    # `memhist record` from the wheel runs the program with the wheel's bootstrap
    code = "import torch, memhist; print('pkg', memhist.__file__)"
    p = run([os.path.join(venv, "bin", "memhist"), "record", "-o", "rec.memhist", "--",
             os.path.join(venv, "bin", "python"), "-c", code], tmp)
    check(p.returncode == 0 and ("pkg " + site + "__init__.py") in p.stdout,
          "record runs the program with the wheel's package: %r" % p.stdout)
    check("nothing recorded: no CUDA device" in p.stderr, "record explains: %r" % p.stderr)
    if not os.path.isdir(os.path.join(BIN, "vdevice")):
        return
    # `memhist simulate -- CMD` from the wheel: its virtual CUDA device
    code = "import torch; torch.ones(1024, device='cuda'); print('on', torch.cuda.get_device_name())"
    p = run([os.path.join(venv, "bin", "memhist"), "simulate", "-o", "v.memhist", "--",
             os.path.join(venv, "bin", "python"), "-c", code], tmp)
    check(p.returncode == 0 and "on NVIDIA" in p.stdout and os.path.exists(os.path.join(tmp, "v.memhist")),
          "simulate -- CMD on the wheel's virtual device: %r" % p.stderr[-500:])
    # installing memhist enables its pytest plugin (the entry point, no -p)
    test = os.path.join(SRC, "tests", "pytest_plugin", "bad", "test_no_cuda.py")
    p = run([os.path.join(venv, "bin", "python"), "-c", "import pytest"], tmp)
    if p.returncode != 0:
        return
    p = run([os.path.join(venv, "bin", "python"), "-m", "pytest", "-p", "no:cacheprovider", test,
             "--memhist-gpu", "T4"], tmp)
    check(p.returncode == 0 and "virtual T4" in p.stdout and "GpuMemoryWarning" in p.stdout,
          "pytest --memhist-gpu T4 with the installed plugin: %r" % p.stdout[-1000:])


with tempfile.TemporaryDirectory() as tmp:
    venv, wheel = build_and_install(tmp)
    if venv is not None:
        check_wheel_files(wheel)
        check_tool(venv, tmp)
        check_package(venv, tmp)

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
