#!/usr/bin/env python3
"""bench_whatif_memory.py - wall time and peak memory of `memhist whatif` on
simulated runs of about 1 M, 10 M and 20 M events (`memhist simulate --steps
N`, the GPT workload's defaults: 2876 events a step), under the recorded
settings and with expandable_segments:True. The replays read the recording
again instead of keeping its events, so the peak should stay flat from 1 M
to 20 M events. Peak resident memory is the child's ru_maxrss, measured
from a small process of its own.

    python tests/bench/bench_whatif_memory.py [STEPS...]   (MEMHIST: the CLI)

Exits 77 (skipped) without the memhist CLI.
"""
import os
import subprocess
import sys
import tempfile

HELPER = """
import os, sys, time
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), ru.ru_maxrss * 1024, time.monotonic() - t0)
"""

STEPS = (348, 3477, 6954)  # 1.0 M, 10.0 M and 20.0 M events


def run(args):
    """(peak MiB, seconds) of one command."""
    p = subprocess.run([sys.executable, "-S", "-c", HELPER] + args, capture_output=True,
                       text=True, check=True)
    rc, rss, took = p.stdout.split()
    if int(rc) != 0:
        sys.exit("%s exited %s" % (" ".join(args), rc))
    return int(rss) / 2**20, float(took)


def events(memhist, path):
    out = subprocess.run([memhist, "info", path], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        if line.startswith("events "):
            return int(line.split()[1])
    return 0


def main():
    memhist = os.environ.get("MEMHIST")
    if not memhist or not os.access(memhist, os.X_OK):
        print("bench_whatif_memory: skipped: set MEMHIST to the memhist CLI")
        sys.exit(77)
    steps = [int(a) for a in sys.argv[1:]] or STEPS
    with tempfile.TemporaryDirectory(prefix="mh-whatif-") as work:
        for n in steps:
            path = os.path.join(work, "run.memhist")
            subprocess.run([memhist, "simulate", "--steps", str(n), "-o", path],
                           capture_output=True, check=True)
            m = events(memhist, path) / 1e6
            name = "whatif_%.0fm" % m
            for label, extra in (("recorded_settings", []),
                                 ("expandable", ["--alloc-conf", "expandable_segments:True"])):
                rss, took = run([memhist, "whatif", path] + extra)
                print("%s_%s: %.2f M events, %.2f s, peak %.1f MiB" % (name, label, m, took, rss))
            os.remove(path)


if __name__ == "__main__":
    main()
