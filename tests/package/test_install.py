"""`cmake --install` gives a prefix that other builds and the tool itself use.

Installs the build tree into a temporary prefix, moves the prefix elsewhere
(so nothing can come from the build tree or the install-time path), then:
builds tests/package/consumer with find_package(memhist) and with
pkg-config, runs both (each records a file, then reads it back and replays
it through the installed library's allocator model, memhist/model.h, so
every public header's functions must be in the installed libmemhist), and
reads their files with the installed tool; checks
that the installed tool finds its libraries and Python package from its own
location (`memhist record`, and `memhist simulate -- CMD` on the installed
virtual device), and that the installed Python package loads the
installed libmemhist. Environment: MH_SOURCE_DIR, MH_BINARY_DIR.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ["MH_SOURCE_DIR"]
BIN = os.environ["MH_BINARY_DIR"]
CONSUMER = os.path.join(SRC, "tests", "package", "consumer")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(cmd, env=None, cwd=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MEMHIST")}
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=cwd, timeout=600)
    if p.returncode != 0:
        print("$ %s\n%s%s" % (" ".join(cmd), p.stdout[-2000:], p.stderr[-2000:]))
    return p


def consumer_find_package(tmp, prefix):
    build = os.path.join(tmp, "consumer-cmake")
    p = run(["cmake", "-S", CONSUMER, "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix])
    check(p.returncode == 0, "find_package(memhist) configures")
    p = p.returncode == 0 and run(["cmake", "--build", build])
    check(p and p.returncode == 0, "consumer builds against memhist::memhist")
    return os.path.join(build, "consumer") if p and p.returncode == 0 else None


def consumer_pkg_config(tmp, prefix):
    env = {"PKG_CONFIG_PATH": os.path.join(prefix, "lib", "pkgconfig")}
    p = run(["pkg-config", "--cflags", "--libs", "memhist"], env=env)
    check(p.returncode == 0, "pkg-config knows memhist")
    flags = p.stdout.split()
    check(any(f.startswith("-I" + prefix) for f in flags), "include path in the moved prefix: %s" % flags)
    exe = os.path.join(tmp, "consumer-pc")
    p = run(["cc", "-o", exe, os.path.join(CONSUMER, "consumer.c")] + flags)
    check(p.returncode == 0, "consumer builds with pkg-config flags")
    return exe if p.returncode == 0 else None


def use_consumer(exe, tool, out, how):
    if exe is None:
        return
    p = run([exe, out])
    check(p.returncode == 0 and "wrote" in p.stdout, "%s consumer runs" % how)
    # the consumer made two 1 MiB allocations before freeing one: the installed
    # library's model (memhist/model.h) must find that peak in the file
    check("model replay: 4 events, peak allocated %d bytes" % (2 << 20) in p.stdout,
          "%s consumer replays its file through the installed model: %r" % (how, p.stdout))
    p = run([tool, "info", out])
    check(p.returncode == 0 and "alloc" in p.stdout, "installed tool reads the %s consumer's file" % how)


def tool_finds_its_parts(prefix, tool):
    p = run([tool, "--version"])
    check(p.returncode == 0 and p.stdout.startswith("memhist "), "installed tool runs")
    if not os.path.exists(os.path.join(prefix, "lib", "libmemhist_torch.so")):
        print("note: no torch bridge installed; `memhist record` lookup not checked")
        return
    code = "import memhist, memhist._native as n; print('pkg', memhist.__file__); print('lib', n._lib_dirs()[0])"
    p = run([tool, "record", "-o", os.path.join(prefix, "r.memhist"), "--", sys.executable, "-c", code])
    pkg = os.path.join(prefix, "share", "memhist", "python", "memhist")
    check(p.returncode == 0 and ("pkg " + pkg) in p.stdout, "record runs the installed package: %r" % p.stdout)
    check(("lib " + os.path.join(prefix, "lib")) in p.stdout, "record points at the installed libraries")
    if os.path.exists(os.path.join(BIN, "libmemhist_pyhook.so")):
        code = "import torch, memhist._native as n; print('hooks', n.pyhook()._name)"
        p = run([tool, "record", "-o", os.path.join(prefix, "h.memhist"), "--", sys.executable, "-c", code])
        check(p.returncode == 0 and ("hooks " + os.path.join(prefix, "lib", "libmemhist_pyhook.so")) in p.stdout,
              "the installed module scope hooks load: %r" % (p.stdout + p.stderr[-500:]))
    if not os.path.isdir(os.path.join(BIN, "vdevice")):
        print("note: no virtual device built; `memhist simulate -- CMD` not checked")
        return
    out = os.path.join(prefix, "v.memhist")
    code = "import torch; torch.ones(1024, device='cuda'); print('on', torch.cuda.get_device_name())"
    p = run([tool, "simulate", "-o", out, "--", sys.executable, "-c", code])
    check(p.returncode == 0 and "on NVIDIA" in p.stdout and os.path.exists(out),
          "simulate -- CMD runs on the installed virtual device: %r" % p.stderr[-500:])


def package_loads_libs(prefix):
    code = ("import memhist._native as n; n.core(); print(n._LIBS['core']._name); "
            "print(n.strerror(-1)); print(n.tool())")
    p = run([sys.executable, "-c", code], env={"PYTHONPATH": os.path.join(prefix, "share", "memhist", "python")},
            cwd=prefix)
    lines = p.stdout.split("\n")
    check(p.returncode == 0 and lines[0].startswith(os.path.join(prefix, "lib", "libmemhist.so")),
          "installed package loads the installed libmemhist: %r" % p.stdout)
    check(len(lines) > 2 and lines[2] == os.path.join(prefix, "bin", "memhist"), "package finds the tool")


def declared_in(inc, names):
    declared = set()
    for name in names:
        with open(os.path.join(inc, name)) as f:
            text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        declared |= set(re.findall(r"\b(mh_\w+)\s*\(", text))
    return declared


def defined_in(lib):
    p = run(["nm", "-D", "--defined-only", lib])
    return {line.split()[-1] for line in p.stdout.splitlines() if line.strip()}


def headers_match_library(prefix):
    """Every function the installed headers declare (but torch.h's, the torch
    bridge's, and arrow.h's, libmemhist_arrow's) is defined by the installed
    libmemhist; arrow.h's are libmemhist_arrow's only exports."""
    inc = os.path.join(prefix, "include", "memhist")
    own = {"torch.h", "arrow.h"}
    declared = declared_in(inc, [n for n in os.listdir(inc) if n.endswith(".h") and n not in own])
    missing = sorted(declared - defined_in(os.path.join(prefix, "lib", "libmemhist.so")))
    check(len(declared) > 50 and not missing,
          "installed headers' %d functions all in libmemhist.so; missing: %s" % (len(declared), missing))
    arrow = declared_in(inc, ["arrow.h"])
    exported = defined_in(os.path.join(prefix, "lib", "libmemhist_arrow.so"))
    check(len(arrow) > 5 and arrow == {n for n in exported if n.startswith("mh_")},
          "libmemhist_arrow.so exports arrow.h's functions alone: %s" % sorted(exported ^ arrow))


def runpath(path):
    p = run(["readelf", "-d", path])
    return [l for l in p.stdout.split("\n") if "RUNPATH" in l or "RPATH" in l]


with tempfile.TemporaryDirectory() as tmp:
    first, prefix = os.path.join(tmp, "first"), os.path.join(tmp, "moved", "prefix")
    p = run(["cmake", "--install", BIN, "--prefix", first])
    check(p.returncode == 0, "cmake --install succeeds")
    for rel in ["bin/memhist", "include/memhist/memhist.h", "lib/libmemhist.so",
                "lib/cmake/memhist/memhistConfig.cmake", "lib/pkgconfig/memhist.pc",
                "share/memhist/python/memhist/__init__.py", "share/memhist/python/memhist/_install.py",
                "share/man/man1/memhist.1", "share/bash-completion/completions/memhist",
                "share/zsh/site-functions/_memhist"]:
        check(os.path.exists(os.path.join(first, rel)), "installed " + rel)
    check(all(BIN not in l for l in runpath(os.path.join(first, "bin", "memhist"))),
          "no build-tree RUNPATH in the tool")
    os.makedirs(os.path.dirname(prefix))
    shutil.move(first, prefix)
    tool = os.path.join(prefix, "bin", "memhist")
    tool_finds_its_parts(prefix, tool)
    package_loads_libs(prefix)
    headers_match_library(prefix)
    use_consumer(consumer_find_package(tmp, prefix), tool, os.path.join(tmp, "a.memhist"), "find_package")
    use_consumer(consumer_pkg_config(tmp, prefix), tool, os.path.join(tmp, "b.memhist"), "pkg-config")

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
