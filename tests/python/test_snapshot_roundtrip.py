"""Snapshot export and import round trips through the memhist CLI.

A snapshot dict built by snapshot_check.Gen (a Python model of torch's
caching allocator: two devices, steps and phases, frames, pending frees, an
OOM, a cache flush) is pickled at protocols 2, 4 and 5, imported with
`memhist import`, exported again with `memhist snapshot`, loaded with
Python's own pickle, and must equal the original dict exactly. Windows
(--steps, --time, --max-entries, --device) must give traces the viewer's
State History view can replay backwards from the segments, and re-importing
a window must reproduce its segments and trace. Trace entries' "category"
keys are computed by memhist, not imported, so they are left out of these
comparisons (test_snapshot_category.py checks them). The files must use only the
opcodes the web viewer's unpickler knows, share frame lists, never share
entry or block dicts. When `memhist simulate` exists, its output is checked
the same way.
"""
import os
import pickle
import pickletools
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

VIEWER_OPCODES = {
    "PROTO", "FRAME", "STOP", "BININT1", "BININT2", "BININT", "LONG1", "BINFLOAT",
    "SHORT_BINUNICODE", "BINUNICODE", "NONE", "NEWTRUE", "NEWFALSE", "EMPTY_DICT",
    "EMPTY_LIST", "EMPTY_TUPLE", "MARK", "SETITEM", "SETITEMS", "DICT", "APPEND", "APPENDS",
    "LIST", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "MEMOIZE", "BINPUT", "LONG_BINPUT",
    "BINGET", "LONG_BINGET"}


def without_categories(value):
    """A copy of a snapshot (or part) without the trace entries' categories."""
    if isinstance(value, dict):
        return {k: without_categories(v) for k, v in value.items() if k != "category"}
    if isinstance(value, list):
        return [without_categories(v) for v in value]
    return value


def make_snapshot():
    g = sc.Gen(devices=2)
    sc.workload(g, steps=3, devices=2)
    return g.snapshot()


def export(src, out, *opts):
    sc.run("snapshot", src, "-o", out, *opts)
    with open(out, "rb") as f:
        data = f.read()
    return pickle.loads(data), data


def check_opcodes(data, name):
    used = {op.name for op, _, _ in pickletools.genops(data)}
    extra = used - VIEWER_OPCODES
    if extra:
        sc.fail("%s uses opcodes the web viewer refuses: %s" % (name, sorted(extra)))
    if data[:2] != b"\x80\x04":
        sc.fail("%s does not start with PROTO 4" % name)


def check_sharing(snap, name):
    """Frame lists of one stack are one object; entry and block dicts never are."""
    by_stack, ids = {}, set()
    for trace in snap["device_traces"]:
        for e in trace:
            if id(e) in ids:
                sc.fail("%s: a trace entry dict is shared" % name)
            ids.add(id(e))
            if e.get("frames"):
                key = tuple((f["filename"], f["line"], f["name"]) for f in e["frames"])
                prev = by_stack.setdefault(key, e["frames"])
                if prev is not e["frames"]:
                    sc.fail("%s: equal frame lists are not shared (memo)" % name)
    for s in snap["segments"]:
        for b in s["blocks"]:
            if id(b) in ids:
                sc.fail("%s: a block dict is shared" % name)
            ids.add(id(b))


def test_exact_round_trip(d):
    snap = make_snapshot()
    problems = sc.state_history_problems(snap)
    if problems:
        sc.fail("the generated snapshot is inconsistent: %s" % problems[:3])
    for proto in (2, 4, 5):
        src = os.path.join(d, "gen-p%d.pickle" % proto)
        with open(src, "wb") as f:
            pickle.dump(snap, f, protocol=proto)
        mh = os.path.join(d, "gen-p%d.memhist" % proto)
        sc.run("import", src, "-o", mh)
        out, data = export(mh, os.path.join(d, "gen-p%d.out.pickle" % proto))
        diff = sc.diff_first(snap, without_categories(out))
        if diff:
            sc.fail("protocol %d round trip differs at %s" % (proto, diff))
        check_opcodes(data, "export of protocol %d import" % proto)
        check_sharing(out, "export")
    print("exact round trip at protocols 2, 4, 5: ok")
    return mh


def test_windows(d, mh):
    full, _ = export(mh, os.path.join(d, "full.pickle"))
    for opts in (["--steps", "1:1"], ["--steps", "0:1"], ["--time", "0.0001:0.0004"],
                 ["--max-entries", "20"], ["--device", "1"], ["--steps", "2:"]):
        tag = "_".join(o.strip("-").replace(":", "-") for o in opts)
        out, data = export(mh, os.path.join(d, "w-%s.pickle" % tag), *opts)
        problems = sc.state_history_problems(out)
        if problems:
            sc.fail("%s: State History replay breaks: %s" % (opts, problems[:3]))
        check_opcodes(data, str(opts))
        settings = out["allocator_settings"]
        cut = opts[0] != "--device"
        if cut and settings.get("trace_alloc_overflowed") is not True:
            sc.fail("%s: trace_alloc_overflowed not set" % opts)
        if opts[0] == "--max-entries":
            if settings.get("trace_alloc_max_entries") != 20:
                sc.fail("--max-entries: trace_alloc_max_entries is %r" %
                        settings.get("trace_alloc_max_entries"))
            for dev, trace in enumerate(out["device_traces"]):
                if without_categories(trace) != without_categories(
                        full["device_traces"][dev][-20:]):
                    sc.fail("--max-entries 20 did not keep the last 20 entries of device %d"
                            % dev)
            if sc.diff_first(sc.norm_segments(out), sc.norm_segments(full)):
                sc.fail("--max-entries changed the final segments")
        if opts[0] == "--device" and (out["device_traces"][0] or
                                      any(s["device"] != 1 for s in out["segments"])):
            sc.fail("--device 1 kept other devices")
        # re-import of the window: same segments and trace
        back = os.path.join(d, "w-%s.memhist" % tag)
        sc.run("import", os.path.join(d, "w-%s.pickle" % tag), "-o", back)
        again, _ = export(back, os.path.join(d, "w-%s.again.pickle" % tag))
        for key in ("device_traces",):
            diff = sc.diff_first(without_categories(out[key]), without_categories(again[key]),
                                 key)
            if diff:
                sc.fail("%s: re-import differs: %s" % (opts, diff))
        diff = sc.diff_first(sc.norm_segments(out), sc.norm_segments(again))
        if diff:
            sc.fail("%s: re-import ends at other segments: %s" % (opts, diff))
    print("windows: ok")


def test_simulated(d):
    p = sc.run("help", "simulate", check=False)
    if p.returncode != 0:
        print("memhist simulate is not built: simulated inputs not checked")
        return
    mh = os.path.join(d, "sim.memhist")
    p = sc.run("simulate", "-o", mh, check=False)
    if p.returncode != 0 or not os.path.exists(mh):
        print("memhist simulate -o FILE did not run (%s): simulated inputs not checked"
              % p.stderr.strip())
        return
    out, data = export(mh, os.path.join(d, "sim.pickle"))
    problems = sc.state_history_problems(out)
    if problems:
        sc.fail("simulated run: State History replay breaks: %s" % problems[:3])
    check_opcodes(data, "simulated export")
    check_sharing(out, "simulated export")
    print("simulated run: ok (%d entries)" % sum(len(t) for t in out["device_traces"]))


def main():
    d = sc.workdir("snapshot_roundtrip")
    mh = test_exact_round_trip(d)
    test_windows(d, mh)
    test_simulated(d)


if __name__ == "__main__":
    main()
