"""`memhist view` on long recordings: the time and peak memory to write the page, its size,
and the time until it is interactive in headless Chromium; beside it, PyTorch's memory_viz
page loading the same run's `memhist snapshot` in the same browser (viewer_harness.py).

    python3 bench_view.py [RUN.memhist ...] [--steps 350,3500] [--keep DIR] [--no-memory-viz]

Without RUN, simulated runs of 350 and 3500 steps are made first (`memhist simulate --steps
N`: about 1 M and 10 M events). Per run, "name: value" lines:
  view_write_s, view_peak_rss_mib   wall time and peak resident memory of `memhist view`
  view_file_mib                     the page's size
  view_interactive_s                from navigating to file:// to the page ready to use (its
                                    own performance.now() when drawn), median of 3 loads
  view_renderer_mib                 the largest resident memory of a browser process
  memory_viz_s, memory_viz_renderer_mib, memory_viz_file_mib, memory_viz_entries
                                    the snapshot (memhist's default window for memory_viz)
                                    drawn by memory_viz's Active Memory Timeline
The memory_viz part needs a local copy of the viewer (MEMHIST_MEMORY_VIZ_DIR,
docs/memory-viz.md) and says so when there is none. Targets (docs/view.md): 10 M events
written in 5 s or less, a page of 10 MB or less, interactive in 2 s or less.
Exits 77 without MEMHIST or without Chromium.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import viewer_harness as vh  # noqa: E402

SKIP = 77
READY = "return window.mhView && window.mhView.ready ? window.mhView.readyMs : " \
        "(window.mhView && window.mhView.errors.length ? -1 : null);"


def memhist_exe():
    exe = os.environ.get("MEMHIST")
    if not exe:
        print("SKIP: MEMHIST is not set to the memhist binary")
        sys.exit(SKIP)
    return exe


def timed(*args):
    """Runs memhist; returns (wall seconds, peak RSS bytes of the child)."""
    t0 = time.monotonic()
    p = subprocess.Popen([memhist_exe()] + [str(a) for a in args], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit("memhist %s: %s" % (" ".join(map(str, args)), err.strip()))
    return wall, usage.ru_maxrss * 1024, err


def interactive(html, chrome, driver, loads=3):
    """Median seconds to ready and the largest browser process's memory."""
    times, rss = [], {"peak_rss": 0}
    with tempfile.TemporaryFile() as log:
        drv = vh.Driver(chrome, driver, log)
        try:
            for _ in range(loads):
                drv.s("POST", "/url", {"url": "about:blank"})
                stop = threading.Event()
                sampler = threading.Thread(target=vh.sample_rss, args=(drv.proc.pid, rss, stop),
                                           daemon=True)
                sampler.start()
                drv.s("POST", "/url", {"url": "file://" + os.path.abspath(html)})
                t0 = time.monotonic()
                ms = None
                while ms is None and time.monotonic() - t0 < 120:
                    ms = drv.script(READY)
                    if ms is None:
                        time.sleep(0.05)
                stop.set()
                sampler.join()
                if ms is None or ms < 0:
                    sys.exit("%s: the page did not get ready: %s" % (html, drv.severe()))
                times.append(ms / 1000.0)
        finally:
            drv.close()
    return statistics.median(times), rss["peak_rss"]


def memory_viz(run, d, name):
    try:
        vh.viewer_dir()
    except vh.Unavailable as e:
        print("%s memory_viz: not measured: %s" % (name, e))
        return
    snap = os.path.join(d, name + ".pickle")
    timed("snapshot", run, "-o", snap)
    res = vh.load(snap, timeout=600)
    print("%s memory_viz_file_mib: %.1f" % (name, os.path.getsize(snap) / 2**20))
    print("%s memory_viz_entries: %s" % (name, res["entries"]))
    print("%s memory_viz_s: %s%s" % (name, res["seconds"], "" if res["rendered"] else
                                     " (not drawn: %s)" % res["errors"][:1]))
    print("%s memory_viz_renderer_mib: %.0f" % (name, res["peak_rss"] / 2**20))


def bench(run, d, chrome, driver, with_viz):
    name = os.path.splitext(os.path.basename(run))[0]
    html = os.path.join(d, name + ".html")
    walls = [timed("view", run, "-o", html) for _ in range(2)]
    wall, rss, _ = min(walls)
    print("%s events: %s" % (name, events_of(run)))
    print("%s view_write_s: %.2f" % (name, wall))
    print("%s view_peak_rss_mib: %.1f" % (name, rss / 2**20))
    print("%s view_file_mib: %.2f" % (name, os.path.getsize(html) / 2**20))
    secs, rss = interactive(html, chrome, driver)
    print("%s view_interactive_s: %.2f" % (name, secs))
    print("%s view_renderer_mib: %.0f" % (name, rss / 2**20))
    if with_viz:
        memory_viz(run, d, name)


def events_of(run):
    p = subprocess.run([memhist_exe(), "info", run], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.split()[:1] == ["events"]:
            return line.split()[-1]
    return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*")
    ap.add_argument("--steps", default="350,3500", help="runs to simulate without RUN")
    ap.add_argument("--keep", help="folder for the runs and pages (default: a temporary one)")
    ap.add_argument("--no-memory-viz", action="store_true")
    a = ap.parse_args()
    memhist_exe()
    try:
        chrome, driver = vh.browser()
    except vh.Unavailable as e:
        print("SKIP: %s" % e)
        return SKIP
    d = a.keep or tempfile.mkdtemp(prefix="mh-bench-view-")
    os.makedirs(d, exist_ok=True)
    runs = list(a.runs)
    for n in ([] if runs else [int(x) for x in a.steps.split(",")]):
        run = os.path.join(d, "s%d.memhist" % n)
        if not os.path.exists(run):
            timed("simulate", "--steps", n, "-o", run)
        runs.append(run)
    try:
        for run in runs:
            bench(run, d, chrome, driver, not a.no_memory_viz)
    finally:
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.exit(main())
