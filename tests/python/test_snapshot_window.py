"""`memhist snapshot` writes a window the viewer opens when the whole run would not.

On simulated runs, with the viewer's limits lowered (--viewer-limit, --viewer-entries) so
that a small run passes them:
- the default window is whole steps around the device's allocated peak: stderr names them
  and the option that writes them, the file equals that option's file byte for byte, holds
  the peak's step and more than one step, stays under the limit, replays backwards onto its
  segments without a contradiction (the viewer's State History) and torch's own
  _memory_viz.py lists as many entries as it holds;
- a run that ran out of memory gets the steps around its first OOM, the OOM in them;
- where the limit leaves less than the peak's step, a time window around the peak: named
  as --time A:B, equal to its file, within the entry limit;
- under the limits, or with --full, --steps, --time or --max-entries, nothing is cut and
  nothing is said;
- standard input from a pipe gives the same file as the path.
Environment: MEMHIST (and torch's _memory_viz.py where torch is installed).
"""
import json
import os
import pickle
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

NOTE = re.compile(r"this window is (--steps (-?\d*):(-?\d+)|--time ([\d.]+):([\d.]*));")


def snapshot(d, name, mh, *opts):
    out = os.path.join(d, name + ".pickle")
    p = sc.run("snapshot", mh, "-o", out, *opts)
    return out, p.stderr


def read(path):
    with open(path, "rb") as f:
        return f.read()


def entries(path):
    with open(path, "rb") as f:
        snap = pickle.load(f)
    return snap, sum(len(t) for t in snap["device_traces"])


def peak_step(mh):
    rep = json.loads(sc.run("report", "--json", mh).stdout)
    return rep["files"][0]["devices"][0]["peak_allocated_step"]


def check_default(d, mh, whole_entries):
    limit = 1_000_000
    out, err = snapshot(d, "window", mh, "--viewer-limit", "1MB")
    m = NOTE.search(err)
    if not m or not m.group(2):
        sc.fail("no steps window named on stderr: %s" % err)
    lo, hi = int(m.group(2)), int(m.group(3))
    step = peak_step(mh)
    if not (lo <= step <= hi) or hi - lo < 1:
        sc.fail("window %d:%d should hold the peak's step %d and more" % (lo, hi, step))
    if "around the allocated peak on device 0 (step %d" % step not in err:
        sc.fail("stderr does not say the window is around the peak: %s" % err)
    same, _ = snapshot(d, "same", mh, "--steps", "%d:%d" % (lo, hi))
    if read(out) != read(same):
        sc.fail("the default window differs from --steps %d:%d" % (lo, hi))
    size = os.path.getsize(out)
    snap, n = entries(out)
    if size > limit or n >= whole_entries:
        sc.fail("window of %d bytes, %d of %d entries: not cut to the limit" % (size, n,
                                                                             whole_entries))
    problems = sc.state_history_problems(snap)
    if problems:
        sc.fail("the window's trace contradicts its segments: %s" % problems[:3])
    tool = sc.memory_viz_path()
    if tool:
        p = subprocess.run([sys.executable, tool, "trace", out], capture_output=True, text=True,
                           timeout=600)
        listed = sum(1 for line in p.stdout.splitlines() if line.strip())
        if p.returncode != 0 or listed < n:
            sc.fail("_memory_viz.py trace lists %d lines for %d entries: %s" % (
                listed, n, p.stderr[-500:]))
    print("default window: steps %d:%d around the peak at step %d, %d bytes, %d of %d entries"
          % (lo, hi, step, size, n, whole_entries))
    return out


def check_time_window(d, mh):
    out, err = snapshot(d, "timewin", mh, "--viewer-entries", "500")
    m = NOTE.search(err)
    if not m or not m.group(4):
        sc.fail("no time window named on stderr: %s" % err)
    args = "%s:%s" % (m.group(4), m.group(5))
    same, _ = snapshot(d, "timesame", mh, "--time", args)
    _, n = entries(out)
    if read(out) != read(same) or not 0 < n <= 500:
        sc.fail("time window --time %s: %d entries, equal to its option's file: %s"
                % (args, n, read(out) == read(same)))
    print("time window: --time %s, %d entries" % (args, n))


def check_oom(d):
    mh = os.path.join(d, "oom.memhist")
    sc.run("simulate", "--steps", "4", "--device-memory", "2GiB", "-o", mh)
    out, err = snapshot(d, "oomwin", mh, "--viewer-limit", "20KB")
    if "around the first OOM on device 0" not in err:
        sc.fail("the OOM run's window is not around its OOM: %s" % err)
    snap, _ = entries(out)
    if not any(e["action"] == "oom" for e in snap["device_traces"][0]):
        sc.fail("the OOM run's window has no oom entry")
    print("OOM run: window around the OOM holds it")


def check_uncut(d, mh, whole):
    for opts in (["--full"], ["--steps", "3:5"], ["--time", "0.1:0.2"], ["--max-entries", "999"],
                 []):
        extra = ["--viewer-limit", "1MB"] if opts else []
        _, err = snapshot(d, "uncut", mh, *(opts + extra))
        if "this window is" in err:
            sc.fail("snapshot %s cut a default window: %s" % (" ".join(opts), err))
    full, _ = snapshot(d, "full", mh, "--full")
    if read(full) != read(whole):
        sc.fail("--full differs from the snapshot under the default limits")
    p = subprocess.run("cat %s | %s snapshot - -o %s" % (mh, sc.memhist(),
                                                        os.path.join(d, "pipe.pickle")),
                       shell=True, capture_output=True, text=True, timeout=600)
    if p.returncode != 0 or read(os.path.join(d, "pipe.pickle")) != read(whole):
        sc.fail("snapshot of a pipe differs from the file's: %s" % p.stderr)


def main():
    d = sc.workdir("snapshot_window")
    mh = os.path.join(d, "run.memhist")
    sc.run("simulate", "--steps", "40", "-o", mh)
    whole, err = snapshot(d, "whole", mh)
    if "this window is" in err:
        sc.fail("a run under the limits was cut: %s" % err)
    _, whole_entries = entries(whole)
    check_default(d, mh, whole_entries)
    check_time_window(d, mh)
    check_oom(d)
    check_uncut(d, mh, whole)
    print("ok")


if __name__ == "__main__":
    main()
