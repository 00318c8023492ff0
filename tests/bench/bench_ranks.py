#!/usr/bin/env python3
"""bench_ranks.py - reading the rank files of a large job: 64 files of about
a million events each, made by the simulator (`memhist simulate --workload
gpt`, one seed per rank, rank 37 with a larger batch), then `memhist report`,
`report --json` and `plot` over all of them. Prints the wall time and the
peak resident memory of each command, and of `report` over one file for
comparison (the files are read in parallel, a few at a time, so memory does
not grow with the number of files).

    python tests/bench/bench_ranks.py       (MEMHIST: the CLI; RANKS, STEPS)

Exits 77 (skipped) without the memhist CLI.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

MEMHIST = os.environ.get("MEMHIST") or shutil.which("memhist")
RANKS = int(os.environ.get("RANKS", "64"))
STEPS = int(os.environ.get("STEPS", "350"))
WORST = 37 % RANKS


def measure(args):
    """Wall seconds and peak RSS (MiB) of one command, its output discarded."""
    t = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s failed: %s" % (" ".join(args[:2]), err[-500:]))
    return wall, usage.ru_maxrss / 1024.0


def make_files(work):
    paths = []
    for r in range(RANKS):
        path = os.path.join(work, "job.memhist.rank%d" % r)
        params = ["--param", "batch=10"] if r == WORST else []
        subprocess.run([MEMHIST, "simulate", "--workload", "gpt", "--steps", str(STEPS), "--seed", str(r + 1),
                        "-o", path] + params, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        paths.append(path)
    return paths


def events_of(path):
    out = subprocess.run([MEMHIST, "info", path], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[1]) for line in out.splitlines() if line.startswith("events "))


def main():
    if not MEMHIST or not os.path.exists(MEMHIST):
        print("skip: no memhist CLI (set MEMHIST)")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="mh-ranks-") as work:
        t = time.monotonic()
        paths = make_files(work)
        events = sum(events_of(p) for p in paths)
        size = sum(os.path.getsize(p) for p in paths)
        print("ranks_files: %d files, %.2f M events, %.0f MiB, made in %.1f s"
              % (RANKS, events / 1e6, size / 2**20, time.monotonic() - t))
        one_wall, one_rss = measure([MEMHIST, "report", paths[0]])
        print("ranks_report_one_file: %.2f s, peak RSS %.0f MiB" % (one_wall, one_rss))
        for name, args in (("report", ["report"] + paths), ("report_json", ["report", "--json"] + paths),
                           ("plot", ["plot", "-o", os.path.join(work, "job.png")] + paths)):
            wall, rss = measure([MEMHIST] + args)
            print("ranks_%s_%d_files: %.2f s (%.2f M events/s), peak RSS %.0f MiB"
                  % (name, RANKS, wall, events / 1e6 / wall, rss))


if __name__ == "__main__":
    main()
