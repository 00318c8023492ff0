"""memhist._pytest_vdevice - puts the pytest process on the virtual CUDA device.

The virtual device is a set of stand-in libraries with NVIDIA's names
(libcudart.so.13, libcuda.so.1, ...) that must be loaded before torch's
own: `memhist simulate` puts them in LD_PRELOAD of the program it starts.
The pytest process is already running when its options are known, and
LD_PRELOAD is read only when a process starts, so the plugin starts pytest
again, the same command line in the same process (os.execve), under the
environment `memhist simulate --print-env` gives for the options. That is
done at pytest_load_initial_conftests, before any conftest (which may
import torch) and before any test, so nothing is lost; it holds however
early another plugin imports torch, and the tests' own subprocesses inherit
the device. Loading the stand-ins into the running process instead would
fail whenever torch's CUDA libraries were loaded first, and would leave
the tests' subprocesses on the real driver. The started pytest finds the
device in place (and so do pytest-xdist's workers, which inherit it).
"""
import os
import subprocess
import sys

import pytest

from . import _native

# Set for the restarted process: the options it was restarted for.
_ASKED = "MEMHIST_PYTEST_DEVICE"


def wanted(options):
    return bool(options.memhist_gpu or options.memhist_device_memory)


def _asked(options):
    return "%s|%s" % (options.memhist_gpu or "", options.memhist_device_memory or "")


def _device_env(options):
    """The environment `memhist simulate --print-env` gives, or UsageError
    with the command's own message (an unknown preset, a bad size)."""
    tool = _native.tool()
    if tool is None:
        raise pytest.UsageError("--memhist-gpu: the memhist command-line tool was not found "
                                "next to the memhist package (build or install memhist)")
    cmd = [tool, "-q", "simulate", "--print-env"]
    if options.memhist_gpu:
        cmd += ["--gpu", options.memhist_gpu]
    if options.memhist_device_memory:
        cmd += ["--device-memory", options.memhist_device_memory]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        said = said[0] if said else "exit status %d" % done.returncode
        if said.startswith("memhist simulate: "):
            said = said[len("memhist simulate: "):]
        if options.memhist_gpu and said.startswith("--gpu:"):
            said = "--memhist-gpu:" + said[len("--gpu:"):].replace("--gpu list", "memhist simulate --gpu list")
        said = said.replace("for --device-memory", "for --memhist-device-memory")
        raise pytest.UsageError("memhist: %s" % said)
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def _preloaded():
    """Whether this process runs on the stand-in libcudart LD_PRELOAD names."""
    libs = [p for p in os.environ.get("LD_PRELOAD", "").split(":") if p.endswith("/libcudart.so.13")]
    if os.environ.get("MEMHIST_VDEVICE") != "1" or not libs:
        return False
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return True
    return any(os.path.realpath(p) in maps for p in libs)


def _restart_argv(early_config):
    """The command line that started this pytest, or None when pytest runs
    inside another program (pytest.main()), which cannot be started again."""
    args = tuple(early_config.invocation_params.args)
    if args != tuple(sys.argv[1:]) or not sys.argv[0] or sys.argv[0] == "-c":
        return None
    return list(getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv)


def ensure(early_config):
    """Returns once this process runs on the virtual device the options ask
    for; restarts pytest under it otherwise (never returns then)."""
    options = early_config.known_args_namespace
    if os.environ.get("MEMHIST_RECORD_PATH"):
        raise pytest.UsageError("memhist: --memhist-gpu records each test itself: run pytest "
                                "directly, not under `memhist record` or `memhist simulate`")
    if os.environ.get(_ASKED) == _asked(options) and _preloaded():
        return
    if os.environ.get(_ASKED) == _asked(options):
        raise pytest.UsageError("memhist: the virtual device libraries in LD_PRELOAD were not loaded "
                                "into the restarted pytest (%s)" % os.environ.get("LD_PRELOAD", ""))
    env = dict(os.environ, **_device_env(options))
    env[_ASKED] = _asked(options)
    for name in [k for k, v in env.items() if v == "" and k.startswith(("MEMHIST_VDEVICE", "PYTORCH_CUDA"))]:
        del env[name]  # what --print-env leaves empty is unset for the program
    argv = _restart_argv(early_config)
    if argv is None:
        raise pytest.UsageError("memhist: --memhist-gpu needs the virtual device in place before the "
                                "process starts, so pytest must run as a command (pytest ..., python "
                                "-m pytest ...), not through pytest.main()")
    capture = early_config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.stop_global_capturing()  # the restarted pytest writes to the real stdout
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)


def header():
    """What the session runs on, for pytest's header."""
    from ._pytest_text import bytes_text
    memory = int(os.environ.get("MEMHIST_VDEVICE_MEMORY") or 0)
    context = int(os.environ.get("MEMHIST_VDEVICE_CONTEXT") or 0)
    return ("memhist: tests run on a virtual %s (%s, %s of it taken by the CUDA context): "
            "PyTorch's allocator is real, tensor values are not computed"
            % (os.environ.get("MEMHIST_VDEVICE_GPU", "GPU"), bytes_text(memory), bytes_text(context)))
