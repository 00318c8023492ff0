"""memhist's default-window snapshot opens in PyTorch's memory_viz page.

Needs a local copy of the viewer (MEMHIST_MEMORY_VIZ_DIR, see viewer_harness.py and
docs/memory-viz.md) and headless Chromium with chromedriver; skips with the reason when
either is missing (CI has neither). On a simulated run whose snapshot passes the lowered
viewer limit (--viewer-limit), the default window
- draws the Active Memory Timeline with no console error, showing all its allocations;
- draws the Allocator State History, and replaying it back to the first event (a press on
  that event) raises no error;
and, so that a silent page cannot pass, the same file with its one "unknown" category
renamed (the viewer throws when categories are present and none is "unknown") must be
reported as failing. Environment: MEMHIST, MEMHIST_MEMORY_VIZ_DIR.
"""
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402
import viewer_harness as vh  # noqa: E402


def load(path, view):
    res = vh.load(path, view=view, timeout=240)
    print("%s, %s: rendered %s, %s s, errors %s" % (os.path.basename(path), view,
                                                    res["rendered"], res["seconds"],
                                                    res["errors"][:2]))
    return res


def main():
    try:
        vh.viewer_dir()
        vh.browser()
    except vh.Unavailable as e:
        sc.skip(str(e))
    d = sc.workdir("snapshot_viewer")
    mh = os.path.join(d, "run.memhist")
    sc.run("simulate", "--steps", "30", "-o", mh)
    out = os.path.join(d, "window.pickle")
    p = sc.run("snapshot", mh, "--viewer-limit", "600KB", "-o", out)
    if "this window is --steps" not in p.stderr:
        sc.fail("no default window was written: %s" % p.stderr)
    with open(out, "rb") as f:
        snap = pickle.load(f)
    allocs = sum(1 for e in snap["device_traces"][0] if e["action"] == "alloc")
    res = load(out, vh.VIEWS[0])
    if not res["rendered"] or res["errors"]:
        sc.fail("the timeline did not draw cleanly: %s" % res["errors"][:3])
    if res["entries"] is None or res["entries"] < allocs:
        sc.fail("the timeline shows %s allocations of the window's %d" % (res["entries"], allocs))
    res = load(out, vh.VIEWS[1])
    if not res["rendered"] or res["errors"]:
        sc.fail("the State History did not replay cleanly: %s" % res["errors"][:3])

    renamed = 0
    for trace in snap["device_traces"]:
        for e in trace:
            if e.get("category") == "unknown":
                e["category"] = "temporary"
                renamed += 1
    if not renamed:
        sc.fail("the window has no \"unknown\" category to rename")
    bad = os.path.join(d, "no_unknown.pickle")
    with open(bad, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    res = load(bad, vh.VIEWS[0])
    if res["rendered"] and not res["errors"]:
        sc.fail("the harness saw no error in a file the viewer rejects")
    print("ok")


if __name__ == "__main__":
    main()
