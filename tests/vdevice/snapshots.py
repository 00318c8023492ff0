"""snapshots.py - real torch snapshots generated at test time on the virtual
CUDA device (ctest label "vdevice"), imported and checked against torch's
own accounting and against memhist's live recording of the same run.

tests/vdevice/snapshot_program.py trains a small model with AdamW and starts
torch's _record_memory_history after some steps (a mid-run trace), once
unbounded and once with a small max_entries ring that wraps. Both runs go
through `memhist simulate`, which records them live. For each snapshot:
`memhist import` must end at torch's memory_allocated/reserved, its peak
must equal torch's max_memory_allocated since the trace began, the steps it
builds from the Optimizer.step annotations must have the per-step peaks of
the live recording's steps of the same iterations, and `memhist snapshot`
must write every field back (tests/python/test_snapshot_lossless.py). The
live recording of a finished run says record_status complete. `memhist
layers` of a snapshot with activations at its peak says it has no plan
because a snapshot has no module scopes.
Environment: MEMHIST, MH_SOURCE_DIR, MH_BINARY_DIR. Exits 77 (skip) without
torch or without the virtual device libraries."""
import json
import os
import pickle
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import test_snapshot_lossless as lossless  # noqa: E402

MEMHIST = os.environ["MEMHIST"]
WARMUP = 2


def skip(why):
    print("skip: " + why)
    sys.exit(77)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(args):
    p = subprocess.run([MEMHIST] + args, capture_output=True, text=True, timeout=500)
    if p.returncode != 0:
        fail("memhist %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    return p


def record(d, name, steps, max_entries):
    """Runs the program under simulate; returns (pickle, live .memhist, torch's figures)."""
    snap = os.path.join(d, name + ".pickle")
    live = os.path.join(d, name + ".live.memhist")
    p = run(["simulate", "--gpu", "RTX4090", "--no-report", "-o", live, "--", sys.executable,
             os.path.join(HERE, "snapshot_program.py"), snap, str(WARMUP), str(steps),
             str(max_entries)])
    return snap, live, json.loads(p.stdout.strip().splitlines()[-1])


def report(path):
    return json.loads(run(["report", "--json", path]).stdout)["files"][0]["devices"][0]


def check(d, name, steps, max_entries):
    snap, live, truth = record(d, name, steps, max_entries)
    if "record_status    complete" not in run(["info", live]).stdout:
        fail("%s: the finished live recording does not say record_status complete" % name)
    mh = os.path.join(d, name + ".memhist")
    note = run(["import", snap, "-o", mh]).stderr
    dev = report(mh)
    got = (dev["final"]["allocated"], dev["final"]["reserved"])
    if got != (truth["allocated"], truth["reserved"]):
        fail("%s: import ends at allocated/reserved %s, torch says %s" % (name, got, truth))
    if max_entries == 0:
        if dev["peak_allocated"] != truth["max_allocated"]:
            fail("%s: peak allocated %d, torch's max_memory_allocated %d"
                 % (name, dev["peak_allocated"], truth["max_allocated"]))
        # complete steps; the frees of zero_grad after the last optimizer step are the tail
        if "%d steps from the snapshot" % steps not in note:
            fail("%s: import built no %d steps: %r" % (name, steps, note))
        imp = [s["peak_allocated"] for s in dev["steps"]][:steps]
        rec = [s["peak_allocated"] for s in report(live)["steps"] if s["step"] >= WARMUP]
        if imp != rec[:steps] or len(imp) != steps:
            fail("%s: per-step peaks of the import %s, of the live recording %s"
                 % (name, imp, rec))
    elif "wrapped" not in note and "before the trace" not in note:
        fail("%s: a wrapped ring is not reported: %r" % (name, note))
    layers = run(["layers", mh]).stdout
    plan = json.loads(run(["layers", "--json", mh]).stdout)["files"][0]["devices"][0]["plan"]
    if dev["category_at_peak"].get("activation", 0) > 0 and (
            "plan: none from this recording" not in layers or plan["none_because"] != "no_module_scopes"):
        fail("%s: activations at the peak but no module scopes; `layers` should say why it has no "
             "plan: %s (JSON: %s)" % (name, layers[layers.find("plan:"):][:200], plan["none_because"]))
    out = mh + ".out.pickle"
    run(["snapshot", mh, "-o", out])
    with open(snap, "rb") as f:
        orig = pickle.load(f)
    with open(out, "rb") as f:
        back = pickle.load(f)
    diffs = lossless.compare(name, orig, back)
    if diffs:
        fail("%s: %d fields differ after import and export: %s" % (name, len(diffs), diffs[:3]))
    print("%s (torch %s): ends at torch's figures%s, every field kept: ok"
          % (name, truth["torch"], ", steps as recorded live" if max_entries == 0 else ""))


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        skip("torch is not installed")
    if not os.path.exists(os.path.join(os.environ["MH_BINARY_DIR"], "vdevice", "libcudart.so.13")):
        skip("the virtual device was not built (no CUDA headers)")
    d = os.path.join(os.environ["MH_BINARY_DIR"], "test-out", "vdevice_snapshots")
    os.makedirs(d, exist_ok=True)
    check(d, "midrun", 4, 0)
    check(d, "ring", 3, 150)


if __name__ == "__main__":
    main()
