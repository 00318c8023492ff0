#!/usr/bin/env python3
"""bench_scale.py - the whole-run analyses on long recordings: simulated GPT
training runs of about 1 M, 10 M and 21.6 M events (`memhist simulate
--steps 350 / 3500 / 7500`), and on each the wall time and peak resident
memory of `report`, `layers`, `whatif --alloc-conf expandable_segments:True`,
`flame`, `snapshot` (its default output), `trace` (its default output) and
`plot`, with the size of what the viewer outputs wrote. Then the targets on
the longest run: `report`, `layers` and `whatif` each within 10 s and 256 MiB,
`flame` within 128 MiB; and how time and memory grow from the shortest run to
the longest (time should grow with the events, memory stay flat).

    python tests/bench/bench_scale.py     (MEMHIST: the CLI; STEPS="350 3500 7500")

Prints one table row per command and run, then one line per target with
"met" or "MISSED"; exits 1 if a target is missed, 77 (skipped) without the
memhist CLI.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

MEMHIST = os.environ.get("MEMHIST") or shutil.which("memhist")
STEPS = [int(s) for s in os.environ.get("STEPS", "350 3500 7500").split()]

COMMANDS = [
    ("report", ["report", "{f}"]),
    ("layers", ["layers", "{f}"]),
    ("whatif", ["whatif", "--alloc-conf", "expandable_segments:True", "{f}"]),
    ("flame", ["flame", "{f}", "-o", "{o}.svg"]),
    ("snapshot", ["snapshot", "{f}", "-o", "{o}.pickle"]),
    ("trace", ["trace", "{f}", "-o", "{o}"]),
    ("plot", ["plot", "{f}", "-o", "{o}.png"]),
]
# (command, seconds, MiB) on the longest run; None: no target
TARGETS = [("report", 10, 256), ("layers", 10, 256), ("whatif", 10, 256), ("flame", None, 128)]


TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def measure(args):
    """Wall seconds and peak RSS (MiB) of one command, its output discarded. The RSS comes from
    /usr/bin/time where it exists: a child started from this interpreter reports at least the
    interpreter's own resident size."""
    t = time.monotonic()
    if TIME:
        args = [TIME, "-f", "memhist-bench-rss %M"] + args
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s failed: %s" % (" ".join(args[:2]), err[-500:]))
    rss = [l for l in err.splitlines() if l.startswith("memhist-bench-rss ")]
    if rss:
        return wall, int(rss[-1].split()[1]) / 1024.0
    return wall, usage.ru_maxrss / 1024.0


def events_of(path):
    out = subprocess.run([MEMHIST, "info", path], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[1]) for line in out.splitlines() if line.startswith("events "))


def size_text(n):
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


def outputs(work):
    return [os.path.join(work, n) for n in os.listdir(work) if n.startswith("out")]


def run_all(work, steps):
    path = os.path.join(work, "run%d.memhist" % steps)
    subprocess.run([MEMHIST, "simulate", "--steps", str(steps), "-o", path], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    events = events_of(path)
    rows = {}
    for name, args in COMMANDS:
        for p in outputs(work):
            os.remove(p)
        argv = [MEMHIST] + [a.format(f=path, o=os.path.join(work, "out")) for a in args]
        wall, rss = measure(argv)
        size = sum(os.path.getsize(p) for p in outputs(work))
        rows[name] = (wall, rss, size)
        shown = "%13s" % size_text(size) if size else ""
        print("%-9s %6.2f M events %8.2f s %9.1f MiB %s" % (name, events / 1e6, wall, rss, shown),
              flush=True)
    os.remove(path)
    return events, rows


def main():
    if not MEMHIST or not os.path.exists(MEMHIST):
        print("skip: no memhist CLI (set MEMHIST)")
        sys.exit(77)
    results = []
    with tempfile.TemporaryDirectory(prefix="mh-scale-") as work:
        print("%-9s %15s %10s %13s %13s" % ("command", "events", "wall", "peak RSS", "output"))
        for steps in STEPS:
            results.append(run_all(work, steps))
    (ev0, first), (ev1, last) = results[0], results[-1]
    missed = 0
    for name, secs, mib in TARGETS:
        wall, rss, _ = last[name]
        ok = (secs is None or wall <= secs) and rss <= mib
        missed += not ok
        want = ("<= %d s, " % secs if secs else "") + "<= %d MiB" % mib
        print("target %-7s %s on %.2f M events: %.2f s, %.1f MiB: %s"
              % (name, want, ev1 / 1e6, wall, rss, "met" if ok else "MISSED"))
    if len(results) > 1:
        for name, _ in COMMANDS:
            print("growth %-9s events x%.1f: time x%.1f, memory x%.2f"
                  % (name, ev1 / ev0, last[name][0] / max(first[name][0], 1e-3),
                     last[name][1] / max(first[name][1], 1e-3)))
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
