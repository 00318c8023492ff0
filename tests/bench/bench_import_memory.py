#!/usr/bin/env python3
"""bench_import_memory.py - peak memory and time of `memhist import` on large
torch-shaped snapshots (tests/python/big_snapshot.py: Python's pickle,
protocol 4, frame lists referred back to as torch's are), 30 MB and 300 MB,
against Python's own `pickle.load` of the same file. Peak resident memory is
the child's ru_maxrss, measured from a small process of its own.

    python tests/bench/bench_import_memory.py    (MEMHIST: the CLI)

Exits 77 (skipped) without the memhist CLI.
"""
import os
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("MH_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "python"))
import big_snapshot  # noqa: E402

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


def run(args):
    p = subprocess.run([sys.executable, "-S", "-c", HELPER] + args, capture_output=True,
                       text=True, check=True)
    rc, rss, took = p.stdout.split()
    if int(rc) != 0:
        sys.exit("%s exited %s" % (" ".join(args), rc))
    return int(rss) / 2**20, float(took)


def main():
    memhist = os.environ.get("MEMHIST")
    if not memhist or not os.access(memhist, os.X_OK):
        print("bench_import_memory: skipped: set MEMHIST to the memhist CLI")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="mh-import-") as work:
        for mb in (30, 300):
            src = os.path.join(work, "snap.pickle")
            entries = big_snapshot.write(src, mb)
            size = os.path.getsize(src) / 1e6
            rss, took = run([memhist, "import", src, "-o", os.path.join(work, "out.memhist")])
            print("import_%dmb: %.0f MB pickle, %d entries: peak %.1f MiB, %.2f s"
                  % (mb, size, entries, rss, took))
            if mb == 30:
                prss, ptook = run([sys.executable, "-c",
                                   "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))",
                                   src])
                print("pickle_load_%dmb: peak %.1f MiB, %.2f s" % (mb, prss, ptook))
            os.remove(src)


if __name__ == "__main__":
    main()
