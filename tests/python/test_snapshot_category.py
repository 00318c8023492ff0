"""Memory categories in memhist's snapshots (the viewer's `category` key).

`memhist snapshot` gives every alloc entry the category of its allocation
(parameter, gradient, optimizer_state, activation, temporary, input,
unknown: the rule of `memhist report`), the free entries of that
allocation the same category, and every other entry "unknown", because the
web viewer throws when categories are present and none is "unknown"
(reference pytorch-allocator.md section 4.5). Checked here on a simulated
run (whole, windowed, capped, without categories) and on an imported
torch-shaped snapshot: Python's pickle loads them, at least one entry is
"unknown", free entries agree with their alloc, torch's own
_memory_viz.py (run as a plain script) still runs stats, trace and
trace_plot, and the parameter bytes agree with `memhist report --json`
category_at_peak (parameters live from before the first step to the end,
so they are exactly the final blocks their alloc entries made).
"""
import json
import os
import pickle
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

CATEGORIES = {"parameter", "gradient", "optimizer_state", "activation", "temporary", "input",
              "unknown"}


def export(mh, out, *opts):
    p = sc.run("snapshot", mh, "-o", out, *opts)
    with open(out, "rb") as f:
        return pickle.load(f), p.stdout


def entries(snap):
    return [e for trace in snap["device_traces"] for e in trace]


def check_categories(snap, name):
    """Every category is a known name, "unknown" is there when any is, and
    free entries carry the category of the alloc they free."""
    cats = [e.get("category") for e in entries(snap)]
    used = {c for c in cats if c is not None}
    if used - CATEGORIES:
        sc.fail("%s: unexpected categories %s" % (name, sorted(used - CATEGORIES)))
    if used and "unknown" not in used:
        sc.fail("%s: categories without any 'unknown' (the viewer would throw)" % name)
    for dev, trace in enumerate(snap["device_traces"]):
        live = {}
        unknown_free = 0
        for e in trace:
            act, cat = e["action"], e.get("category")
            if act == "alloc":
                live[e["addr"]] = cat
            elif act in ("free_requested", "free_completed") and e["addr"] in live:
                want = live[e["addr"]]
                if cat != want and not (cat == "unknown" and unknown_free == 0):
                    sc.fail("%s: device %d: %s of 0x%x has category %r, its alloc %r"
                            % (name, dev, act, e["addr"], cat, want))
                unknown_free += cat != want
                if act == "free_completed":
                    del live[e["addr"]]
            elif act not in ("alloc", "free_requested", "free_completed") and used and \
                    cat != "unknown":
                sc.fail("%s: %s entry has category %r, not 'unknown'" % (name, act, cat))
    return used


def check_memory_viz(tool, pk, name):
    if not tool:
        return
    for args in (["stats", pk], ["trace", pk], ["trace_plot", pk, "-o", pk + ".html"]):
        p = subprocess.run([sys.executable, tool] + args, capture_output=True, text=True,
                           timeout=600)
        if p.returncode != 0:
            sc.fail("%s: _memory_viz.py %s failed: %s" % (name, args[0], p.stderr[-1500:]))
    if os.path.getsize(pk + ".html") < 1000:
        sc.fail("%s: trace_plot wrote an empty page" % name)


def parameter_bytes(snap):
    """Block bytes of parameter allocations, from the final segments."""
    blocks = {(s["device"], b["address"]): b for s in snap["segments"] for b in s["blocks"]
              if b["state"] == "active_allocated"}
    total = {}
    for dev, trace in enumerate(snap["device_traces"]):
        live = {}
        for e in trace:
            if e["action"] == "alloc":
                live[e["addr"]] = e.get("category")
            elif e["action"] == "free_requested":
                live.pop(e["addr"], None)
        for addr, cat in live.items():
            if cat == "parameter":
                b = blocks.get((dev, addr))
                if b is None:
                    sc.fail("device %d: parameter at 0x%x is not a final block" % (dev, addr))
                total[dev] = total.get(dev, 0) + b["size"]
    return total


def simulated(d, tool):
    mh = os.path.join(d, "sim.memhist")
    p = sc.run("simulate", "--steps", "5", "-o", mh, check=False)
    if p.returncode != 0:
        print("memhist simulate is not built or failed: simulated run not checked")
        return
    pk = os.path.join(d, "sim.pickle")
    snap, out = export(mh, pk)
    used = check_categories(snap, "simulated")
    want = {"parameter", "activation", "gradient", "optimizer_state", "temporary", "unknown"}
    if not want <= used:
        sc.fail("simulated: categories %s lack %s" % (sorted(used), sorted(want - used)))
    if "coloured by memory category" not in out:
        sc.fail("simulated: the summary line does not mention categories: %s" % out)
    problems = sc.state_history_problems(snap)
    if problems:
        sc.fail("simulated: State History replay breaks: %s" % problems[:3])
    check_memory_viz(tool, pk, "simulated")

    report = json.loads(sc.run("report", "--json", mh).stdout)
    params = parameter_bytes(snap)
    for dev in report["files"][0]["devices"]:
        at_peak = dev["category_at_peak"]["parameter"]
        if params.get(dev["device"], 0) != at_peak or at_peak == 0:
            sc.fail("device %d: parameter bytes %d in the snapshot, %d in report "
                    "category_at_peak" % (dev["device"], params.get(dev["device"], 0), at_peak))
    for dev in report["files"][0]["devices"]:
        for cat, n in dev["category_at_peak"].items():
            if n and cat not in used:
                sc.fail("report has %s at the peak, the snapshot never names it" % cat)
    print("simulated: categories %s; parameters %s B as in the report"
          % (sorted(used), sorted(params.values())))

    full = entries(snap)
    for opts in (["--steps", "3:4"], ["--max-entries", "40"]):
        pk_w = os.path.join(d, "sim-%s.pickle" % opts[0].strip("-"))
        w, _ = export(mh, pk_w, *opts)
        check_categories(w, "simulated %s" % " ".join(opts))
        if not any("category" in e for e in entries(w)):
            sc.fail("simulated %s: no categories" % " ".join(opts))
        check_memory_viz(tool, pk_w, "simulated %s" % " ".join(opts))
        if opts[0] == "--max-entries":
            # categories come from the whole file, not from the kept window
            tail = full[-40:]
            for a, b in zip(entries(w), tail):
                if a["action"] == "alloc" and a.get("category") != b.get("category"):
                    sc.fail("--max-entries 40: alloc category %r, whole export %r"
                            % (a.get("category"), b.get("category")))
    plain, out = export(mh, os.path.join(d, "sim-plain.pickle"), "--no-categories")
    if any("category" in e for e in entries(plain)) or "memory category" in out:
        sc.fail("--no-categories still wrote categories")
    print("simulated windows and --no-categories: ok")


def imported(d, tool):
    g = sc.Gen(devices=2)
    sc.workload(g, steps=3, devices=2)
    src = os.path.join(d, "gen.pickle")
    with open(src, "wb") as f:
        pickle.dump(g.snapshot(), f, protocol=4)
    mh = os.path.join(d, "gen.memhist")
    sc.run("import", src, "-o", mh)
    pk = os.path.join(d, "gen.out.pickle")
    snap, _ = export(mh, pk)
    used = check_categories(snap, "imported")
    check_memory_viz(tool, pk, "imported")
    print("imported: categories %s" % sorted(used))


def main():
    tool = sc.memory_viz_path()
    if not tool:
        print("note: torch is not installed: _memory_viz.py not run")
    d = sc.workdir("snapshot_category")
    imported(d, tool)
    if sc.run("help", "simulate", check=False).returncode != 0:
        print("memhist simulate is not built: simulated runs not checked")
        return
    simulated(d, tool)


if __name__ == "__main__":
    main()
