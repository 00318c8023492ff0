"""Steps and phases of an imported snapshot, and what the CLI says about it.

A torch-shaped snapshot of three training steps is generated with the toy
allocator of snapshot_check.py the way torch writes one: no user metadata,
Optimizer.step#AdamW.step record_function ranges in external_annotations,
backward allocations under torch.autograd's frames. Importing it must give
the steps and phases a live recording has (step 0 opens at the first entry,
each Optimizer.step end closes a step), so the per-step peaks equal the ones
computed here from the generator's own state, and categories come from the
phases. A snapshot without annotations gets no steps and says so. Also:
exporting an imported snapshot adds no categories (torch's colouring by
allocation stays), `snapshot --device` of a device the file lacks and
`--steps` past the end are refused, and `info` names the importer's host as
such. `oom --at peak` says the capacity is unknown when nothing recorded it
and marks a setting the run already had as in effect; `plot --kind segments`
of a bare segment list (all its events at one moment) draws without saying
there is nothing to plot. A trace that starts mid-run says so in `report`,
and `oom` does not call its what-if suggestions checked (one that starts
empty replays 100% of its events the same way and is checked); `info` of a
snapshot without time_us does not show a first-event time. Under gradient
accumulation (two forwards and backwards per step) the second micro-batch's
allocations by the program's own thread open the forward phase again.
Two optimizers stepped one after the other each iteration make one step per
iteration, not two.
"""
import json
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402
import test_snapshot_import as shapes  # noqa: E402

MiB = 1 << 20
BACKWARD = [sc.frame("_engine_run_backward", "/venv/lib/python3.12/site-packages/torch/autograd/"
                     "graph.py", 829),
            sc.frame("backward", "/venv/lib/python3.12/site-packages/torch/_tensor.py", 625),
            sc.frame("<module>", "train.py", 51)]


def allocated(g):
    return sum(b["size"] for seg in g.segs[0] for b in seg["blocks"]
               if b["state"] == "active_allocated")


def training_snapshot(annotate=True, also=None):
    """Three steps; returns (snapshot, expected peak allocated per step).
    `also`: the name of a second optimizer class, stepped right after the
    first each iteration (a small temporary inside its range)."""
    g = sc.Gen(metadata=False)
    g.stacks.append(BACKWARD)
    peaks = [0, 0, 0]
    step = 0

    def track():
        peaks[step] = max(peaks[step], allocated(g))

    params = [g.alloc(0, 4 * MiB, stack=0) for _ in range(3)]
    track()
    state = []
    for k in range(3):
        acts = [g.alloc(0, (3 + k) * MiB + 1000 * i, stack=1) for i in range(4)]
        track()
        grads = [g.alloc(0, 4 * MiB, stack=6) for _ in params]  # backward
        track()
        for a in acts:
            g.free(0, a)
        if annotate:
            g.notes.append({"stage": "START", "name": "Optimizer.step#AdamW.step", "device": 0,
                            "time_us": g.tick()})
        if not state:
            state = [g.alloc(0, 8 * MiB, stack=2) for _ in params]
        tmp = g.alloc(0, 2 * MiB + 512 * k, stack=3)
        track()
        g.free(0, tmp)
        for a in grads:
            g.free(0, a)
        if annotate:
            g.notes.append({"stage": "END", "name": "Optimizer.step#AdamW.step", "device": 0,
                            "time_us": g.tick()})
        if also:
            name = "Optimizer.step#%s.step" % also
            g.notes.append({"stage": "START", "name": name, "device": 0, "time_us": g.tick()})
            g.free(0, g.alloc(0, 512 * 1024, stack=3))
            g.notes.append({"stage": "END", "name": name, "device": 0, "time_us": g.tick()})
        step = min(step + 1, 2)
    return g.snapshot(), peaks


def import_report(d, name, snap):
    src = os.path.join(d, name + ".pickle")
    with open(src, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    mh = os.path.join(d, name + ".memhist")
    p = sc.run("import", src, "-o", mh)
    rep = json.loads(sc.run("report", "--json", mh).stdout)
    return mh, p.stderr, rep["files"][0]["devices"][0]


def check_steps(d):
    snap, peaks = training_snapshot()
    mh, note, dev = import_report(d, "steps", snap)
    got = [(s["step"], s["peak_allocated"]) for s in dev["steps"]]
    if got != list(enumerate(peaks)):
        sc.fail("per-step peaks %s, expected %s" % (got, list(enumerate(peaks))))
    if "3 steps from the snapshot's Optimizer.step" not in note:
        sc.fail("import does not say where the steps came from: %r" % note)
    cats = {k for k, v in dev["category_at_peak"].items() if v}
    if not {"activation", "gradient", "optimizer_state"} <= cats:
        sc.fail("categories at the peak not from the phases: %s" % sorted(cats))
    out = mh + ".pickle"
    p = sc.run("snapshot", mh, "-o", out)
    with open(out, "rb") as f:
        exp = pickle.load(f)
    if any("category" in e for t in exp["device_traces"] for e in t):
        sc.fail("an imported snapshot was exported with categories: %s" % p.stdout.strip())
    if [a["name"] for a in exp["external_annotations"]] != \
            [a["name"] for a in snap["external_annotations"]]:
        sc.fail("annotations changed on export: %s" % exp["external_annotations"][:4])
    print("steps, per-step peaks %s and categories from annotations: ok" % peaks)
    return mh


def check_two_optimizers(d):
    snap, _ = training_snapshot(also="SGD")
    _, note, dev = import_report(d, "twoopt", snap)
    steps = [s["step"] for s in dev["steps"]]
    if steps != [0, 1, 2] or "3 steps from the snapshot's Optimizer.step" not in note:
        sc.fail("two optimizers per iteration: steps %s, note %r" % (steps, note))
    print("two optimizers per iteration: one step each: ok")


def check_no_annotations(d):
    snap, _ = training_snapshot(annotate=False)
    _, note, dev = import_report(d, "nosteps", snap)
    if dev["steps"] or "no step annotations" not in note:
        sc.fail("a snapshot without annotations: steps %s, note %r" % (dev["steps"], note))
    print("no annotations: analysed by time, said once: ok")


def check_refusals(mh):
    for args, want in ((["--device", "3"], "no device 3"),
                       (["--steps", "40:50"], "no allocator events in --steps 40:50")):
        out = mh + ".refused.pickle"
        p = sc.run("snapshot", mh, *args, "-o", out, check=False)
        if p.returncode != 1 or want not in p.stderr or os.path.exists(out):
            sc.fail("snapshot %s: exit %d, %r" % (" ".join(args), p.returncode, p.stderr))
    info = sc.run("info", mh).stdout
    if "imported on" not in info or "\npid" in info:
        sc.fail("info presents the importer's host and pid as the recording's:\n%s" % info)
    print("--device/--steps refusals and info: ok")


def check_answers(d, mh):
    out = sc.run("oom", "--at", "peak", mh).stdout
    if "capacity unknown" not in out or "already in effect" in out:
        sc.fail("oom --at peak without a device size:\n%s" % out)
    snap, _ = training_snapshot()
    snap["allocator_settings"].update(PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True",
                                      expandable_segments=True)
    exp, _, _ = import_report(d, "expandable", snap)
    out = sc.run("oom", "--at", "peak", exp).stdout
    if not any("expandable_segments:True" in l and "already in effect" in l
               for l in out.splitlines()):
        sc.fail("oom suggests a setting the run already had:\n%s" % out)
    g = sc.Gen(metadata=False)
    g.alloc(0, 3 << 20)
    bare, _, _ = import_report(d, "bare", g.snapshot()["segments"])
    p = sc.run("plot", bare, "--kind", "segments", "-o", bare + ".png")
    if "nothing to plot" in p.stderr:
        sc.fail("plot --kind segments of a bare segment list: %r" % p.stderr)
    wrapped, _, _ = import_report(d, "wrapped", shapes.variant_wrapped()[0])
    rep = sc.run("report", wrapped).stdout
    sugg = sc.run("oom", "--at", "peak", wrapped).stdout
    # replayed from its starting state; checked or not as whatif says
    checked = json.loads(sc.run("whatif", "--json", wrapped).stdout)["checked"]
    label = "suggestions, checked by replay:" if checked else "suggestions, estimates, not checks:"
    if ("starts mid-run" not in rep or "replayed from the state at its start" not in sugg
            or label not in sugg):
        sc.fail("a mid-run trace:\n%s\n%s" % (rep, sugg))
    legacy, _, _ = import_report(d, "legacy", shapes.variant_legacy()[0])
    if "unknown (the snapshot has no times)" not in sc.run("info", legacy).stdout:
        sc.fail("info shows invented times of a snapshot without time_us as real ones")
    out = sc.run("oom", "--at", "peak", mh).stdout
    if "checked by replay:" not in out or "reproduce 100.0 % of its" not in out:
        sc.fail("a trace that starts empty is not replayed exactly and checked:\n%s" % out)
    print("oom capacity and settings in effect, segment plot of a bare list: ok")


def accumulation_snapshot():
    """Three steps of two micro-batches each (gradient accumulation): the
    second micro-batch's activations are larger, so the peak is in its
    backward; returns (snapshot, its activation bytes)."""
    g = sc.Gen(metadata=False)
    g.stacks.append(BACKWARD)
    for _ in range(3):
        for micro in range(2):
            acts = [g.alloc(0, (3 + micro) * MiB, stack=1) for _ in range(4)]
            tmp = g.alloc(0, 2 * MiB, stack=6)  # backward
            g.free(0, tmp)
            for a in acts:
                g.free(0, a)
        g.notes.append({"stage": "START", "name": "Optimizer.step#SGD.step", "device": 0,
                        "time_us": g.tick()})
        g.notes.append({"stage": "END", "name": "Optimizer.step#SGD.step", "device": 0,
                        "time_us": g.tick()})
    return g.snapshot(), 4 * 4 * MiB


def check_accumulation(d):
    snap, acts = accumulation_snapshot()
    _, _, dev = import_report(d, "accumulate", snap)
    got = dev["category_at_peak"].get("activation", 0)
    if got != acts:
        sc.fail("the second micro-batch's activations at the peak: %d B as activation, expected %d B"
                " (categories %s)" % (got, acts, dev["category_at_peak"]))
    print("gradient accumulation: the next micro-batch's forward is a forward again: ok")


def main():
    d = sc.workdir("snapshot_steps")
    mh = check_steps(d)
    check_accumulation(d)
    check_two_optimizers(d)
    check_no_annotations(d)
    check_refusals(mh)
    check_answers(d, mh)


if __name__ == "__main__":
    main()
