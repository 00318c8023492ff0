"""How large a snapshot the memory_viz page opens: snapshots of growing windows of one long
recording loaded in headless Chromium (tests/python/viewer_harness.py), each timed, with the
page's errors, and bisected to the largest window that still draws.

    python3 bench_viewer_threshold.py [RUN.memhist] [--steps N,N,...] [--bisect LO:HI]
                                      [--timeout S] [--keep DIR]

Each window is `memhist snapshot RUN --steps 0:N-1` (N steps from the start). Without RUN a
run of 7500 steps is simulated first (`memhist simulate --steps 7500`, 21.6 M events). One line
per window: steps, file bytes, trace entries, the timeline's allocation count, whether it drew
with no error, seconds from the request to the drawing, the renderer's peak resident memory,
and the first error. --bisect LO:HI then halves the step range between a window that draws
(LO) and one that does not (HI) down to 2 % of it. Needs MEMHIST (the CLI) and a local viewer
copy (MEMHIST_MEMORY_VIZ_DIR); exits 77 when there is none. docs/memory-viz.md gives the
figures this measured and how.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import viewer_harness as vh  # noqa: E402

SKIP = 77


def memhist(*args):
    exe = os.environ.get("MEMHIST")
    if not exe:
        print("SKIP: MEMHIST is not set to the memhist binary")
        sys.exit(SKIP)
    p = subprocess.run([exe] + [str(a) for a in args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("memhist %s: %s" % (" ".join(map(str, args)), p.stderr.strip()))
    return p


def trace_entries(stderr):
    for word in stderr.split("("):
        if "trace entries" in word:
            return int(word.split(",")[1].split()[0])
    return None


def measure(run, steps, d, timeout):
    out = os.path.join(d, "steps%d.pickle" % steps)
    p = memhist("snapshot", run, "--steps", "0:%d" % (steps - 1), "-o", out)
    res = vh.load(out, timeout=timeout)
    res["steps"] = steps
    res["trace_entries"] = trace_entries(p.stderr)
    res["ok"] = res["rendered"] and not res["errors"]
    os.remove(out)
    err = res["errors"][0].splitlines()[0][:90] if res["errors"] else ""
    print("steps %5d: %7.1f MB, %9s trace entries, %8s allocations, %-4s %6s s, renderer "
          "%5.2f GiB  %s" % (steps, res["bytes"] / 1e6, res["trace_entries"], res["entries"],
                             "ok" if res["ok"] else "FAIL", res["seconds"],
                             res["peak_rss"] / (1 << 30), err), flush=True)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", nargs="?")
    ap.add_argument("--steps", default="540,1100,1600,2200,2700,3800,4600,5000")
    ap.add_argument("--bisect", help="LO:HI steps")
    ap.add_argument("--timeout", type=float, default=500.0)
    ap.add_argument("--keep", help="folder for the simulated run (default: a temporary one)")
    ap.add_argument("--json", help="write every result here")
    a = ap.parse_args()
    try:
        vh.viewer_dir()
        vh.browser()
    except vh.Unavailable as e:
        print("SKIP:", e)
        return SKIP
    d = a.keep or tempfile.mkdtemp(prefix="mh-viewer-bench-")
    run = a.run
    if not run:
        run = os.path.join(d, "long.memhist")
        if not os.path.exists(run):
            memhist("simulate", "--steps", "7500", "-o", run)
    results = []
    if a.bisect:
        lo, hi = (int(x) for x in a.bisect.split(":"))
        while hi - lo > max(1, (hi + lo) // 100):
            mid = (lo + hi) // 2
            r = measure(run, mid, d, a.timeout)
            results.append(r)
            lo, hi = (mid, hi) if r["ok"] else (lo, mid)
        print("largest window that draws: %d steps (%d fails)" % (lo, hi))
    else:
        for n in (int(x) for x in a.steps.split(",")):
            results.append(measure(run, n, d, a.timeout))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
