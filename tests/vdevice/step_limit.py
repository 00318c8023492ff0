#!/usr/bin/env python3
"""step_limit.py - ending a program after N training steps (ctest label
"vdevice"): MEMHIST_STOP_AFTER_STEPS, which `memhist simulate --steps N --
CMD` sets and memhist.start(stop_after_steps=N) takes in-process, with
tests/vdevice/step_limit_program.py on the virtual device.

  cli     simulate --steps 3 of a 10-iteration loop: exit status 0, the
          recording complete with exactly 3 steps and the metadata
          stop_after_steps and stopped_after_steps, the message on stderr,
          the loop stopped in its 3rd iteration, the program's `finally`
          block and atexit handler run
  thread  the same with the loop in a thread of its own: exit status 0 and 3
          complete steps (the recording finished before the process exits)
  api     memhist.start(stop_after_steps=2) in the program (the virtual
          device preloaded, no `memhist simulate`): StepLimitReached caught
          with steps 2, the file has 2 steps
  bad     MEMHIST_STOP_AFTER_STEPS=abc: a warning, and the program runs to
          its end (4 iterations, 4 steps)

    python tests/vdevice/step_limit.py CASE [WORKDIR]

Environment: MEMHIST (the CLI), MH_BINARY_DIR. Exits 0 when every check
holds, 1 otherwise, 77 (skipped, with the reason) without torch or the
virtual device.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MEMHIST = os.environ.get("MEMHIST", os.path.join(HERE, "..", "..", "build", "memhist"))
PROGRAM = os.path.join(HERE, "step_limit_program.py")
STANDINS = ("libcuda.so.1", "libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnvidia-ml.so.1")
failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def skip(why):
    print("skipped: " + why)
    sys.exit(77)


def read(work, name):
    path = os.path.join(work, name)
    return open(path).read() if os.path.exists(path) else None


def steps_of(path):
    p = subprocess.run([MEMHIST, "report", "--json", path], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return [s["step"] for s in json.loads(p.stdout)["files"][0]["devices"][0]["steps"]]


def meta_of(path):
    p = subprocess.run([MEMHIST, "info", "--json", path], capture_output=True, text=True)
    return json.loads(p.stdout).get("meta", {}) if p.returncode == 0 else {}


def simulate(work, steps, extra_env=None, *args):
    out = os.path.join(work, "run.memhist")
    cmd = [MEMHIST, "simulate", "--no-report", "--device-memory", "8GiB", "-o", out]
    cmd += ["--steps", str(steps)] if steps else []
    p = subprocess.run(cmd + ["--", sys.executable, PROGRAM, work] + list(args), capture_output=True,
                       text=True, env=dict(os.environ, **(extra_env or {})))
    return p, out


def case_cli(work):
    p, out = simulate(work, 3)
    check(p.returncode == 0, "exit status 0: %d %s" % (p.returncode, p.stderr[-500:]))
    check(steps_of(out) == [0, 1, 2], "3 complete steps recorded: %s" % steps_of(out))
    meta = meta_of(out)
    check(meta.get("stop_after_steps") == "3" and meta.get("stopped_after_steps") == "3",
          "the metadata says the program was stopped: %s" % {k: meta.get(k) for k in
                                                              ("stop_after_steps", "stopped_after_steps")})
    check(meta.get("record_status") == "complete", "the recording is complete: %s" % meta.get("record_status"))
    check("stopped after 3 complete steps" in p.stderr, "stderr says so")
    check((read(work, "iterations") or "").split() == ["0", "1", "2"], "the loop stopped in its 3rd iteration")
    check(read(work, "finally") is not None and read(work, "atexit") is not None,
          "the program's finally block and atexit handler ran")


def case_thread(work):
    p, out = simulate(work, 3, None, "--thread")
    check(p.returncode == 0, "exit status 0: %d %s" % (p.returncode, p.stderr[-500:]))
    check(steps_of(out) == [0, 1, 2], "3 complete steps recorded: %s" % steps_of(out))
    check(meta_of(out).get("record_status") == "complete", "the recording is complete")
    check("1 file written" in p.stderr, "memhist simulate found the file: %s" % p.stderr[-300:])


def case_api(work):
    bindir = os.environ.get("MH_BINARY_DIR", os.path.dirname(MEMHIST))
    vd = os.path.join(bindir, "vdevice")
    if not all(os.path.exists(os.path.join(vd, f)) for f in STANDINS):
        skip("the virtual device is not built in %s" % vd)
    out = os.path.join(work, "api.memhist")
    env = dict(os.environ, LD_PRELOAD=":".join(os.path.join(vd, f) for f in STANDINS), MEMHIST_VDEVICE="1",
               MEMHIST_LIB_DIR=bindir, PYTHONPATH=os.path.join(HERE, "..", "..", "src", "python"))
    p = subprocess.run([sys.executable, PROGRAM, work, "--api", out, "2"], capture_output=True, text=True,
                       env=env)
    check(p.returncode == 0, "exit status 0: %d %s" % (p.returncode, p.stderr[-500:]))
    caught = read(work, "caught") or ""
    check(caught == "caught 2 complete", "StepLimitReached caught with 2 steps: %r" % caught)
    check(steps_of(out) == [0, 1], "2 complete steps recorded: %s" % steps_of(out))


def case_bad(work):
    p, out = simulate(work, 0, {"MEMHIST_STOP_AFTER_STEPS": "abc"}, "--steps", "4")
    check(p.returncode == 0, "exit status 0: %d" % p.returncode)
    check("MEMHIST_STOP_AFTER_STEPS must be a positive integer" in p.stderr, "a warning: %s" % p.stderr[-300:])
    check(steps_of(out) == [0, 1, 2, 3], "the program ran to its end: %s" % steps_of(out))
    check((read(work, "iterations") or "").split() == ["0", "1", "2", "3"], "4 iterations")


CASES = {"cli": case_cli, "thread": case_thread, "api": case_api, "bad": case_bad}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in CASES:
        sys.exit("usage: step_limit.py %s [WORKDIR]" % "|".join(CASES))
    try:
        import torch  # noqa: F401
    except ImportError:
        skip("python3 cannot import torch")
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    CASES[sys.argv[1]](work)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
