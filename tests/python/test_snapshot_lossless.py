"""A snapshot imported and exported again keeps every field torch wrote.

For every snapshot in the test data (tests/data/snapshots, and the real torch
snapshots of ../shared/data/torch-snapshots when that folder exists), runs
`memhist import` then `memhist snapshot` and compares the re-exported pickle
with the original field by field: each segment (device, address, sizes,
stream, type, pool id, expandable flag, frames) and each of its blocks
(address, size, state, frames; requested size of live blocks), each device's
trace entry by entry (action, addr or device_free, size, stream, time_us,
frames, compile_context, user_metadata, pool_id), the annotations and the
allocator settings. Keys the original lacks are not compared (the export
writes the newest schema); blocks of a legacy `history` are compared by their
last history entry. Free blocks' requested size is not compared: torch leaves
a stale value there that no trace entry carries. Besides those files, every
schema variant of test_snapshot_import.py is checked (a dict user_metadata
comes back as its "key: value" text), and one with segment frames that differ
from their segment_alloc entry's, a live block larger than its rounded
request, record_function ranges and settings of a run with expandable
segments.
"""
import glob
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402
import test_snapshot_import as shapes  # noqa: E402

SEG_KEYS = ("device", "address", "total_size", "allocated_size", "active_size", "requested_size",
            "stream", "segment_type", "segment_pool_id", "is_expandable", "frames")
ENTRY_KEYS = ("action", "addr", "device_free", "size", "stream", "time_us", "frames",
              "compile_context", "user_metadata", "pool_id")


def norm(v):
    """Tuples and lists compare alike (the pickle keeps tuples for pool ids)."""
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    return v


def block_view(b, like=None):
    """The compared fields of a block (those of `like`, the original's, if given)."""
    out = {k: b[k] for k in ("size", "state") if k in b}
    hist = b.get("history")
    frames = b.get("frames", hist[-1].get("frames") if hist else None)
    if b.get("state") != "inactive":
        if frames is not None:
            out["frames"] = frames
        if "requested_size" in b:
            out["requested_size"] = b["requested_size"]
    return {k: v for k, v in out.items() if k in like} if like is not None else out


def compare(name, orig, out):
    diffs = []

    def check(path, a, b):
        d = sc.diff_first(norm(a), norm(b), path)
        if d:
            diffs.append(d)

    segs = orig if isinstance(orig, list) else orig.get("segments", [])
    got = sorted(out["segments"], key=lambda s: (s["device"], s["address"]))
    segs = sorted(segs, key=lambda s: (s.get("device", 0), s["address"]))
    check("len(segments)", len(segs), len(got))
    for i, (s, g) in enumerate(zip(segs, got)):
        for k in SEG_KEYS:
            if k in s:
                check("segments[%d].%s" % (i, k), s[k], g.get(k))
        want = [block_view(b) for b in s["blocks"]]
        check("segments[%d].blocks" % i, want,
              [block_view(b, w) for b, w in zip(g["blocks"], want + [None] * len(g["blocks"]))])
    if isinstance(orig, dict):
        for d, trace in enumerate(orig.get("device_traces", [])):
            got_t = out["device_traces"][d] if d < len(out["device_traces"]) else []
            check("len(device_traces[%d])" % d, len(trace), len(got_t))
            for i, (e, g) in enumerate(zip(trace, got_t)):
                for k in ENTRY_KEYS:
                    if k == "time_us" and "time_us" not in e:
                        continue
                    want = e.get(k)
                    if isinstance(want, dict):
                        want = ", ".join("%s: %s" % kv for kv in want.items())
                    if k in e or (k in g and k in ("user_metadata", "compile_context")):
                        check("device_traces[%d][%d].%s" % (d, i, k), want, g.get(k))
        if "external_annotations" in orig:
            check("external_annotations", orig["external_annotations"],
                  out["external_annotations"])
        for k in ("host_segments", "host_traces"):
            if k in orig:
                check(k, orig[k], out.get(k))
        if "allocator_settings" in orig:
            check("allocator_settings", orig["allocator_settings"], out["allocator_settings"])
            check("allocator_settings order", list(orig["allocator_settings"]),
                  list(out["allocator_settings"]))
    return diffs


def variant_fields():
    """Segment frames unlike the entry's, a block kept larger than its rounded
    request next to a live block, ranges and expandable-segment settings."""
    MiB, base = shapes.MiB, shapes.BASE
    t = shapes.Trace()
    other = [sc.frame("cudaMalloc_site", "c.py", 9)]
    small = base + 64 * MiB
    t("alloc", base + 3 * MiB + 512 * 1024, MiB, user_metadata="layer1",
      compile_context="Torch-Compiled Region: 0/0", pool_id=(0, 0))
    t("segment_alloc", small, 2 * MiB)
    t("alloc", small, 1000)
    for e in t.entries:  # as torch 2.15 writes every entry
        e.setdefault("compile_context", "N/A")
        e.setdefault("user_metadata", "")
        e.setdefault("pool_id", (0, 0))
    big = shapes.seg(0, base, [(3 * MiB + 512 * 1024, "active_allocated", 3 * MiB),
                               (MiB, "active_allocated", MiB),
                               (15 * MiB + 512 * 1024, "inactive", 0)])
    s = shapes.seg(0, small, [(1024, "active_allocated", 1000), (2 * MiB - 1024, "inactive", 0)],
                   small=True)
    s["frames"] = other
    settings = sc.default_settings()
    settings.update(PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True,max_split_size_mb:256",
                    expandable_segments=True, max_split_size=256 * MiB,
                    garbage_collection_threshold=0.5)
    notes = [{"stage": st, "name": "fwd_block", "device": 0, "time_us": t.entries[1]["time_us"] + k}
             for k, st in ((-1, "START"), (1, "END"))]
    return {"segments": [big, s], "device_traces": [t.entries, []], "allocator_settings": settings,
            "external_annotations": notes}


def variants(d):
    """The hand-built schema variants, pickled at protocol 4."""
    out = []
    for fn in shapes.VARIANTS + [variant_fields]:
        snap = fn()
        snap = snap[0] if isinstance(snap, tuple) else snap
        path = os.path.join(d, fn.__name__ + ".pickle")
        with open(path, "wb") as f:
            pickle.dump(snap, f, protocol=4)
        out.append(path)
    return out


def inputs():
    root = os.environ.get("MH_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    files = sorted(glob.glob(os.path.join(root, "tests", "data", "snapshots", "small.*.pickle")))
    shared = os.path.join(root, "..", "shared", "data", "torch-snapshots")
    if os.path.isdir(shared):
        files += sorted(glob.glob(os.path.join(shared, "*.pickle")) +
                        glob.glob(os.path.join(shared, "*.pkl")))
    else:
        print("SKIP part: %s is absent (real torch snapshots not checked)" % shared)
    return files


def main():
    d = sc.workdir("snapshot_lossless")
    failed = 0
    for src in variants(d) + inputs():
        base = os.path.join(d, os.path.basename(src))
        sc.run("import", src, "-o", base + ".memhist")
        sc.run("snapshot", base + ".memhist", "-o", base + ".out.pickle")
        with open(src, "rb") as f:
            orig = pickle.load(f)
        with open(base + ".out.pickle", "rb") as f:
            out = pickle.load(f)
        diffs = compare(os.path.basename(src), orig, out)
        if diffs:
            failed += 1
            print("FAIL %s: %d fields differ, first: %s" % (os.path.basename(src), len(diffs),
                                                            "; ".join(diffs[:3])))
        else:
            print("%s: every field kept: ok" % os.path.basename(src))
    if failed:
        sc.fail("%d snapshot(s) changed on import and export" % failed)


if __name__ == "__main__":
    main()
