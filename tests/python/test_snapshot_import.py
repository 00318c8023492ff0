"""`memhist import` on the snapshot shapes torch 2.0 to 2.15 write.

Hand-built snapshot dicts, pickled by Python at protocols 0 to 5, cover the
schema variants: 2.0 blocks with `history` and no time_us, OOM entries with
device_free, expandable segments (segment_map/unmap), several devices with
private pool ids, user_metadata as a string or a dict, compile_context, a
trace whose ring buffer wrapped (blocks live before the first entry), and the
oldest form (a bare list of segments). Each must import, and exporting the
imported file must give back exactly the snapshot's segments and its trace.
The real snapshot in ../shared/data/torch-snapshots (if present) must replay
to exactly its segments. A block live before the trace whose snapshot gives
it no frames, while other blocks have some, was made before torch's history
recording started, and the report says so; exported, it has no frames again.
A snapshot from a torch that broke best-fit ties between equal free blocks
by address (not by the older segment, as torch 2.15 does) replays exactly:
`whatif` finds the rule that reproduces the run and says so.
"""
import copy
import json
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

MiB = 1 << 20
BASE = 0x7F0000000000
F = [sc.frame("f", "a.py", 1), sc.frame("g", "b.py", 2)]


def seg(dev, addr, blocks, small=False, expandable=False, pool=(0, 0), stream=0):
    total = sum(b[0] for b in blocks)
    out, a = [], addr
    for size, state, req in blocks:
        out.append({"address": a, "size": size, "requested_size": req if state != "inactive"
                    else 0, "state": state, "frames": F if state != "inactive" else []})
        a += size
    act = [b for b in out if b["state"] != "inactive"]
    return {"device": dev, "address": addr, "total_size": total,
            "allocated_size": sum(b["size"] for b in act if b["state"] == "active_allocated"),
            "active_size": sum(b["size"] for b in act),
            "requested_size": sum(b["requested_size"] for b in act),
            "stream": stream, "segment_type": "small" if small else "large",
            "segment_pool_id": pool, "is_expandable": expandable, "frames": [], "blocks": out}


class Trace:
    def __init__(self, timed=True):
        self.t, self.timed, self.entries = 1_700_000_000_000_000, timed, []

    def __call__(self, action, addr, size, frames=True, **extra):
        e = {"action": action, "device_free" if action == "oom" else "addr": addr,
             "size": size, "stream": extra.pop("stream", 0)}
        if self.timed:
            self.t += 3
            e["time_us"] = self.t
        if frames:
            e["frames"] = F
        e.update(extra)
        self.entries.append(e)
        return e


def variant_legacy():
    """torch 2.0: `history` blocks, no time_us, no allocator_settings."""
    t = Trace(timed=False)
    t("segment_alloc", BASE, 20 * MiB)
    t("alloc", BASE, 3 * MiB)
    t("alloc", BASE + 3 * MiB, 5 * MiB - 100)
    t("free_requested", BASE, 3 * MiB)
    t("free_completed", BASE, 3 * MiB)
    s = seg(0, BASE, [(3 * MiB, "inactive", 0), (5 * MiB, "active_allocated", 5 * MiB - 100),
                      (12 * MiB, "inactive", 0)])
    expect = [copy.deepcopy(s)]
    for b in s["blocks"]:
        b["history"] = [{"addr": b["address"], "real_size": b.pop("requested_size"),
                         "frames": b.pop("frames")}]
    for k in ("is_expandable", "frames"):
        s.pop(k)
    return {"segments": [s], "device_traces": [t.entries]}, expect


def variant_oom_multi_pool():
    """Two devices, a private pool, an OOM with device_free, dict metadata."""
    t0, t1 = Trace(), Trace()
    t0("segment_alloc", BASE, 2 * MiB, pool_id=(1, 2))
    t0("alloc", BASE, 1000, user_metadata={"layer": "attn", "rank": 3},
       compile_context="fwd graph 1")
    t0("oom", 123 * MiB, 40 << 30)
    t1("segment_alloc", BASE + (1 << 36), 20 * MiB, stream=77)
    t1("alloc", BASE + (1 << 36), 6 * MiB, stream=77, user_metadata="my tag")
    t1("alloc", BASE + (1 << 36) + 6 * MiB, 2 * MiB, stream=77)
    t1("free_requested", BASE + (1 << 36) + 6 * MiB, 2 * MiB, stream=77)
    segs = [seg(0, BASE, [(1024, "active_allocated", 1000), (2 * MiB - 1024, "inactive", 0)],
                small=True, pool=(1, 2)),
            seg(1, BASE + (1 << 36), [(6 * MiB, "active_allocated", 6 * MiB),
                                      (2 * MiB, "active_pending_free", 2 * MiB),
                                      (12 * MiB, "inactive", 0)], stream=77)]
    snap = {"segments": segs, "device_traces": [t0.entries, t1.entries],
            "allocator_settings": sc.default_settings(), "external_annotations": []}
    return snap, segs


def variant_expandable():
    t = Trace()
    t("segment_map", BASE, 4 * MiB, frames=False)
    t("alloc", BASE, 3 * MiB)
    t("segment_map", BASE + 4 * MiB, 2 * MiB, frames=False)
    t("alloc", BASE + 3 * MiB, 2 * MiB)
    t("free_requested", BASE + 3 * MiB, 2 * MiB)
    t("free_completed", BASE + 3 * MiB, 2 * MiB)
    t("segment_unmap", BASE + 4 * MiB, 2 * MiB, frames=False)
    segs = [seg(0, BASE, [(3 * MiB, "active_allocated", 3 * MiB), (MiB, "inactive", 0)],
                small=False, expandable=True)]
    settings = sc.default_settings()
    settings["expandable_segments"] = True
    settings["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    return {"segments": segs, "device_traces": [t.entries], "allocator_settings": settings,
            "external_annotations": []}, segs


def variant_wrapped():
    """The ring buffer wrapped: blocks and segments were live before entry 0."""
    t = Trace()
    t("free_requested", BASE + 4 * MiB, 4 * MiB)
    t("free_completed", BASE + 4 * MiB, 4 * MiB)
    t("alloc", BASE + 8 * MiB, 3 * MiB)
    segs = [seg(0, BASE, [(4 * MiB, "active_allocated", 4 * MiB), (4 * MiB, "inactive", 0),
                          (3 * MiB, "active_allocated", 3 * MiB), (9 * MiB, "inactive", 0)]),
            seg(0, BASE + 64 * MiB, [(512, "active_pending_free", 100),
                                     (2 * MiB - 512, "inactive", 0)], small=True)]
    settings = sc.default_settings()
    settings.update(trace_alloc_max_entries=3, trace_alloc_overflowed=True)
    return {"segments": segs, "device_traces": [t.entries], "allocator_settings": settings,
            "external_annotations": [{"stage": "START", "name": "ProfilerStep#1", "device": 0,
                                      "time_us": t.entries[0]["time_us"]}]}, segs


def variant_bare_list():
    segs = [seg(0, BASE, [(2 * MiB, "active_allocated", 2 * MiB - 7)], small=True)]
    return segs, segs


VARIANTS = [variant_legacy, variant_oom_multi_pool, variant_expandable, variant_wrapped,
            variant_bare_list]


def trace_view(trace):
    """Entries as compared after a round trip. A segment_alloc comes back with
    the frames of the segment it made (what the final state shows)."""
    keep = ("action", "addr", "device_free", "size", "stream", "time_us", "frames",
            "compile_context")
    out = [{k: e[k] for k in keep if k in e} for e in trace]
    for e in out:
        if e["action"] == "segment_alloc":
            e.pop("frames", None)
    return out


def check_variant(d, fn):
    snap, segs = fn()
    want = sc.norm_segments({"segments": segs})
    for proto in range(6):
        src = os.path.join(d, "%s-p%d.pickle" % (fn.__name__, proto))
        with open(src, "wb") as f:
            pickle.dump(snap, f, protocol=proto)
        mh = os.path.join(d, "%s-p%d.memhist" % (fn.__name__, proto))
        p = sc.run("import", src, "-o", mh)
        out_pk = mh + ".pickle"
        sc.run("snapshot", mh, "-o", out_pk)
        with open(out_pk, "rb") as f:
            out = pickle.load(f)
        diff = sc.diff_first(want, sc.norm_segments(out), "segments")
        if diff:
            sc.fail("%s protocol %d: imported state differs: %s" % (fn.__name__, proto, diff))
        if isinstance(snap, dict):
            orig = [trace_view(t) for t in snap["device_traces"]]
            got = [trace_view(t) for t in out["device_traces"]][:len(orig)]
            if fn is variant_legacy:  # synthetic times: compare without them
                for t in orig + got:
                    for e in t:
                        e.pop("time_us", None)
            diff = sc.diff_first(orig, got, "device_traces")
            if diff:
                sc.fail("%s protocol %d: trace differs: %s" % (fn.__name__, proto, diff))
        problems = sc.state_history_problems(out)
        if problems:
            sc.fail("%s protocol %d: State History breaks: %s" % (fn.__name__, proto,
                                                                 problems[:3]))
        if fn is variant_legacy and "no time_us" not in p.stderr:
            sc.fail("legacy import did not say that times are synthetic")
        if fn is variant_wrapped and out["allocator_settings"].get(
                "trace_alloc_overflowed") is not True:
            sc.fail("wrapped trace: re-export lost trace_alloc_overflowed")
        if fn is variant_oom_multi_pool:
            meta = [e.get("user_metadata") for e in out["device_traces"][0]]
            if "layer: attn, rank: 3" not in meta:
                sc.fail("dict user_metadata not kept as text: %s" % meta)
    print("%s: ok" % fn.__name__)


def check_real(d):
    root = os.environ.get("MH_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    path = os.path.join(root, "..", "shared", "data", "torch-snapshots",
                        "adam-stacks-all.pickle")
    if not os.path.exists(path):
        print("SKIP part: %s is absent (real torch snapshot not checked)" % path)
        return
    with open(path, "rb") as f:
        snap = pickle.load(f)
    mh = os.path.join(d, "adam.memhist")
    sc.run("import", path, "-o", mh)
    out = exported(d, mh, "adam.pickle")
    diff = sc.diff_first(sc.norm_segments(snap), sc.norm_segments(out), "segments")
    if diff:
        sc.fail("adam-stacks-all.pickle: replay does not end at its segments: %s" % diff)
    orig = trace_view(snap["device_traces"][0])
    got = trace_view(out["device_traces"][0])
    diff = sc.diff_first(orig, got, "device_traces[0]")
    if diff:
        sc.fail("adam-stacks-all.pickle: trace differs: %s" % diff)
    if sc.state_history_problems(out):
        sc.fail("adam-stacks-all.pickle: export breaks State History")
    names = [a["name"] for a in out["external_annotations"]]
    if names != [a["name"] for a in snap["external_annotations"]]:
        sc.fail("adam-stacks-all.pickle: annotations lost: %s" % names)
    print("adam-stacks-all.pickle: replays to its %d segments: ok" % len(snap["segments"]))


def imported(d, name, snap):
    """`snap` pickled and imported: the .memhist path."""
    src = os.path.join(d, name + ".pickle")
    with open(src, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    mh = os.path.join(d, name + ".memhist")
    sc.run("import", src, "-o", mh)
    return mh


def exported(d, mh, name):
    """`memhist snapshot` of `mh`, loaded."""
    out_pk = os.path.join(d, name)
    sc.run("snapshot", mh, "-o", out_pk)
    with open(out_pk, "rb") as f:
        return pickle.load(f)


def check_before_history(d):
    """The wrapped variant with its first block's frames taken away: the
    report names that block as made before recording; with no frames
    anywhere, nothing is claimed."""
    label = "allocated before recording started"
    for with_frames in (True, False):
        snap, segs = variant_wrapped()
        segs[0]["blocks"][0]["frames"] = []
        if not with_frames:
            for b in (b for g in segs for b in g["blocks"]):
                b["frames"] = []
            for e in snap["device_traces"][0]:
                e.pop("frames", None)
        mh = imported(d, "before-%d" % with_frames, snap)
        report = sc.run("report", mh).stdout
        if (label in report) != with_frames:
            sc.fail("frames elsewhere %s, yet the report %s %r:\n%s" % (
                with_frames, "lacks" if with_frames else "shows", label, report))
        out = exported(d, mh, "before-%d.out.pickle" % with_frames)
        diff = sc.diff_first(sc.norm_segments(snap), sc.norm_segments(out), "segments")
        if diff:
            sc.fail("a block made before recording changes on export: %s" % diff)


def check_best_fit_ties(d):
    """Two 20 MiB segments, each left with a 2 MiB free tail; the older one
    at the higher address. The next 2 MiB request took the lower address, as
    torch did before it preferred the older segment's block."""
    old, new = BASE + 64 * MiB, BASE
    t = Trace()
    for segment in (old, new):
        t("segment_alloc", segment, 20 * MiB)
        t("alloc", segment, 9 * MiB)
        t("alloc", segment + 9 * MiB, 9 * MiB)
    t("alloc", new + 18 * MiB, 2 * MiB)
    segs = [seg(0, old, [(9 * MiB, "active_allocated", 9 * MiB), (9 * MiB, "active_allocated", 9 * MiB),
                         (2 * MiB, "inactive", 0)]),
            seg(0, new, [(9 * MiB, "active_allocated", 9 * MiB), (9 * MiB, "active_allocated", 9 * MiB),
                         (2 * MiB, "active_allocated", 2 * MiB)])]
    snap = {"segments": segs, "device_traces": [t.entries], "allocator_settings": sc.default_settings(),
            "external_annotations": []}
    mh = imported(d, "ties", snap)
    got = json.loads(sc.run("whatif", mh, "--json").stdout)
    if got.get("best_fit_ties") != "address" or got["match_percent"] != 100.0:
        sc.fail("a snapshot whose torch broke ties by address does not replay exactly: %s" % got)


def check_unsplit_before_trace(d):
    """A block allocated before the trace and freed during it, 4 MiB asked
    for in a 4.5 MiB free block (torch keeps a remainder of at most 1 MiB in
    the block): the 8 MiB block the trace allocates right after it while it
    lives tells its size, so the 4.25 MiB request after its free takes its
    place, as torch did, and the replay reproduces the run."""
    t = Trace()
    t("alloc", BASE + 9 * MiB // 2, 8 * MiB)
    t("free_requested", BASE, 4 * MiB)
    t("free_completed", BASE, 4 * MiB)
    t("alloc", BASE, 17 * MiB // 4)
    segs = [seg(0, BASE, [(9 * MiB // 2, "active_allocated", 17 * MiB // 4),
                          (8 * MiB, "active_allocated", 8 * MiB), (15 * MiB // 2, "inactive", 0)])]
    snap = {"segments": segs, "device_traces": [t.entries], "allocator_settings": sc.default_settings(),
            "external_annotations": []}
    mh = imported(d, "unsplit", snap)
    got = json.loads(sc.run("whatif", mh, "--json").stdout)
    if got["match_percent"] != 100.0:
        sc.fail("a block from before the trace is taken at its rounded request: %s" % got)


def main():
    d = sc.workdir("snapshot_import")
    for fn in VARIANTS:
        check_variant(d, fn)
    check_before_history(d)
    check_best_fit_ties(d)
    check_unsplit_before_trace(d)
    check_real(d)


if __name__ == "__main__":
    main()
