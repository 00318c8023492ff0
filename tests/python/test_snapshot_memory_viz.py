"""torch's own torch/cuda/_memory_viz.py reads memhist's snapshots.

Runs _memory_viz.py as a plain script (stdlib only, torch is not imported)
with `stats`, `trace` and `trace_plot` on snapshots of simulated runs (default
settings, expandable segments, an OOM) and of an imported torch-shaped
snapshot, and checks that the totals it prints agree with
`memhist report --json`: total_reserved is the final reserved bytes and
total_allocated the requested bytes of allocated blocks; `trace` lists as
many entries per device as the snapshot holds.
"""
import json
import os
import pickle
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def parse_bytes(text):
    m = re.match(r"(-?[0-9.]+)([KMGT]?i?B)", text)
    if not m:
        sc.fail("cannot parse a size from %r" % text)
    return float(m.group(1)) * UNITS[m.group(2)], UNITS[m.group(2)]


def viz(tool, *args):
    p = subprocess.run([sys.executable, tool] + list(args), capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        sc.fail("_memory_viz.py %s failed: %s" % (" ".join(args), p.stderr.strip()[-2000:]))
    return p.stdout


def close(value, printed, unit):
    return abs(value - printed) <= 0.051 * unit


def check_file(tool, d, name, mh):
    pk = os.path.join(d, name + ".pickle")
    sc.run("snapshot", mh, "-o", pk)
    with open(pk, "rb") as f:
        snap = pickle.load(f)
    problems = sc.state_history_problems(snap)
    if problems:
        sc.fail("%s: State History replay breaks: %s" % (name, problems[:3]))
    report = json.loads(sc.run("report", "--json", mh).stdout)
    reserved = sum(dev["final"]["reserved"] for dev in report["files"][0]["devices"])
    allocated = sum(b["requested_size"] for s in snap["segments"] for b in s["blocks"]
                    if b["state"] == "active_allocated")
    pending = sum(b["requested_size"] for s in snap["segments"] for b in s["blocks"]
                  if b["state"] == "active_pending_free")
    requested = sum(dev["final"]["requested"] for dev in report["files"][0]["devices"])

    stats = viz(tool, "stats", pk)
    m_res = re.search(r"total_reserved: (\S+)", stats)
    m_all = re.search(r"total_allocated: (\S+)", stats)
    if not m_res or not m_all:
        sc.fail("%s: stats printed no totals:\n%s" % (name, stats[-800:]))
    v, unit = parse_bytes(m_res.group(1))
    if not close(reserved, v, unit):
        sc.fail("%s: _memory_viz total_reserved %s, memhist report final reserved %d"
                % (name, m_res.group(1), reserved))
    v, unit = parse_bytes(m_all.group(1))
    if not close(allocated, v, unit) or allocated + pending != requested:
        sc.fail("%s: _memory_viz total_allocated %s; snapshot %d (+%d pending); report "
                "requested %d" % (name, m_all.group(1), allocated, pending, requested))

    trace = viz(tool, "trace", pk)
    counts = [int(n) for n in re.findall(r"^(\d+) entries$", trace, re.M)]
    want = [len(t) for t in snap["device_traces"] if t]
    if counts != want:
        sc.fail("%s: _memory_viz trace lists %s entries, the snapshot has %s"
                % (name, counts, want))

    html = os.path.join(d, name + ".html")
    viz(tool, "trace_plot", pk, "-o", html)
    if os.path.getsize(html) < 1000:
        sc.fail("%s: trace_plot wrote an empty page" % name)
    print("%s: stats/trace/trace_plot ok (reserved %d, allocated %d)"
          % (name, reserved, allocated))


def main():
    tool = sc.memory_viz_path()
    if not tool:
        sc.skip("torch is not installed: torch/cuda/_memory_viz.py not found")
    d = sc.workdir("snapshot_memory_viz")
    g = sc.Gen(devices=2)
    sc.workload(g, steps=3, devices=2)
    src = os.path.join(d, "gen.pickle")
    with open(src, "wb") as f:
        pickle.dump(g.snapshot(), f, protocol=4)
    mh = os.path.join(d, "gen.memhist")
    sc.run("import", src, "-o", mh)
    check_file(tool, d, "imported", mh)

    if sc.run("help", "simulate", check=False).returncode != 0:
        print("memhist simulate is not built: simulated runs not checked")
        return
    runs = {
        "sim-default": ["--steps", "3"],
        "sim-expandable": ["--steps", "3", "--alloc-conf", "expandable_segments:True"],
        "sim-oom": ["--steps", "3", "--device-memory", "2GiB"],
    }
    for name, opts in runs.items():
        mh = os.path.join(d, name + ".memhist")
        p = sc.run("simulate", *opts, "-o", mh, check=False)
        if p.returncode != 0:
            sc.fail("memhist simulate %s failed: %s" % (" ".join(opts), p.stderr.strip()))
        check_file(tool, d, name, mh)


if __name__ == "__main__":
    main()
