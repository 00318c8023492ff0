#!/usr/bin/env python3
"""check_midrun.py - a recording started in the middle of a program knows the
memory it found: runs tests/vdevice/midrun_program.py (memhist.start() after
two training steps, with the parameters and an optimizer's state live) on the
virtual CUDA device and checks the recording against torch's figures of the
recorded part: the peaks allocated and reserved are torch's, `memhist
snapshot` finds no event contradicting the allocator state, the blocks live
at the start are grouped as "allocated before the recording started", the
parameters among them are categorised as parameters, and `memhist info` says
what was found (found_at_start).

    python tests/vdevice/check_midrun.py MEMHIST_BIN WORKDIR

Environment: as tests/gpu/stacks_check.py on the virtual device (LD_PRELOAD of
its libraries, MEMHIST_VDEVICE=1, MEMHIST_LIB_DIR, PYTHONPATH with
src/python). Exits 0 when every check holds, 1 otherwise, 77 without torch or
a CUDA device.
"""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BEFORE = "allocated before the recording started"
failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def cli(memhist, *args):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # the CLI needs no device
    return subprocess.run([memhist] + list(args), capture_output=True, text=True, env=env)


def check_setting(memhist, work, conf):
    """The checks for one allocator setting; 77 without a CUDA device."""
    import torch
    rec, truth_path = os.path.join(work, "midrun.memhist"), os.path.join(work, "truth.json")
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
    p = subprocess.run([sys.executable, os.path.join(HERE, "midrun_program.py"), truth_path, rec],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0 and not torch.cuda.is_available():
        return 77
    print("-- PYTORCH_CUDA_ALLOC_CONF=%s" % conf)
    check(p.returncode == 0, "the program runs (%s)" % p.stderr.strip()[-300:])
    if p.returncode != 0:
        return 1
    with open(truth_path) as f:
        truth = json.load(f)
    r = cli(memhist, "report", "--json", rec)
    check(r.returncode == 0, "memhist report --json: %s" % r.stderr.strip())
    dev = json.loads(r.stdout)["files"][0]["devices"][0]
    check(dev["peak_allocated"] == truth["max_memory_allocated"],
          "peak allocated %d == torch %d" % (dev["peak_allocated"], truth["max_memory_allocated"]))
    check(dev["peak_reserved"] == truth["max_memory_reserved"],
          "peak reserved %d == torch %d" % (dev["peak_reserved"], truth["max_memory_reserved"]))
    before = [g for g in dev["top_at_peak"] if [f["name"] for f in g["frames"]] == [BEFORE]]
    check(len(before) == 1 and 0 < before[0]["bytes"] <= truth["live_at_start"],
          "the blocks live at the start form one group at the peak, %s of the %d bytes live at the start" %
          (before[0]["bytes"] if before else "none", truth["live_at_start"]))
    check(dev["category_at_peak"]["parameter"] == truth["parameters"],
          "parameters at the peak %d == the model's %d (tagged though allocated before recording)" %
          (dev["category_at_peak"]["parameter"], truth["parameters"]))
    info = cli(memhist, "info", rec).stdout
    where = re.search(r"^cwd\s+(.+)$", info, re.M)
    check(where and where.group(1) == os.getcwd() and re.search(r"^sys_prefix\s+\S", info, re.M),
          "memhist.start() writes where the program ran (cwd, sys_prefix), as `memhist record` does")
    found = re.search(r"^found_at_start\s+(\d+) blocks \((\d+) bytes\)", cli(memhist, "info", rec).stdout, re.M)
    check(found and int(found.group(2)) == truth["live_at_start"],
          "memhist info: found at the start %s bytes == torch's memory_allocated() then, %d" %
          (found.group(2) if found else "nothing", truth["live_at_start"]))
    s = cli(memhist, "snapshot", rec, "-o", os.path.join(work, "midrun.pickle"))
    check(s.returncode == 0 and "contradict" not in s.stderr,
          "memhist snapshot: no event contradicts the allocator state (%s)" % s.stderr.strip())
    return 0


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_midrun.py MEMHIST_BIN WORKDIR")
    memhist, work = sys.argv[1], sys.argv[2]
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: torch is not installed")
        return 77
    for conf in ("", "expandable_segments:True"):
        sub = os.path.join(work, conf.split(":")[0] or "default")
        os.makedirs(sub, exist_ok=True)
        if check_setting(memhist, sub, conf) == 77:
            print("skipped: no CUDA device")
            return 77
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
