"""whatif_seeded.py - what-if replay of torch snapshots whose trace starts
mid-run (ctest label "vdevice"), seeded with the state at the trace's start.

tests/vdevice/seeded_program.py runs on the virtual device under `memhist
simulate` and dumps torch's own snapshot (_record_memory_history started
after two steps), with default settings and with expandable_segments:True,
each unbounded and with a small max_entries ring. For each snapshot,
`memhist import`, then `memhist whatif --json` under the recorded settings
must reproduce at least MATCH percent of the trace's allocator events, begin
from the segments and blocks live at the trace's start, call its figures
checked (the output's threshold, which must not exceed MATCH), and reach
torch's own max_memory_reserved() since the trace began; `memhist oom --at
peak --json` must label its suggestions checked the same way.
Environment: MEMHIST, MH_BINARY_DIR. Exits 77 (skip) without torch or
without the virtual device libraries."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MEMHIST = os.environ["MEMHIST"]
MATCH = 99.0  # percent of allocator events the seeded replay reproduces
CASES = [("default", "", 0), ("ring", "", 200),
         ("expandable", "expandable_segments:True", 0),
         ("expandable-ring", "expandable_segments:True", 200)]


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


def check(d, name, conf, max_entries):
    snap = os.path.join(d, name + ".pickle")
    cmd = ["simulate", "--gpu", "RTX4090", "--no-report", "-o", os.path.join(d, name + ".live")]
    if conf:
        cmd += ["--alloc-conf", conf]
    p = run(cmd + ["--", sys.executable, os.path.join(HERE, "seeded_program.py"), snap,
                   str(max_entries)])
    truth = json.loads(p.stdout.strip().splitlines()[-1])
    mh = os.path.join(d, name + ".memhist")
    run(["import", snap, "-o", mh])
    w = json.loads(run(["whatif", "--json", mh]).stdout)
    if w["seeded_segments"] == 0 or w["seeded_blocks"] == 0:
        fail("%s: the replay did not begin from the trace's starting state: %d segments, "
             "%d blocks" % (name, w["seeded_segments"], w["seeded_blocks"]))
    if w["match_percent"] < MATCH:
        fail("%s: the seeded replay reproduces %.2f %% of %d allocator events (< %.0f %%)"
             % (name, w["match_percent"], w["recorded_allocator_events"], MATCH))
    if w["best_fit_ties"] != "segment_age":
        fail("%s: torch 2.15's snapshot replayed with %s ties" % (name, w["best_fit_ties"]))
    if w["allocations_placed_same"] != w["recorded_allocations"]:
        fail("%s: %d of %d allocations at torch's address" % (
            name, w["allocations_placed_same"], w["recorded_allocations"]))
    if not w["checked"] or w["checked_from_percent"] > MATCH:
        fail("%s: whatif labels its figures checked=%s (from %.1f %%)"
             % (name, w["checked"], w["checked_from_percent"]))
    if w["whatif"]["peak_reserved"] != truth["max_reserved"]:
        fail("%s: replay peak reserved %d, torch's max_memory_reserved %d"
             % (name, w["whatif"]["peak_reserved"], truth["max_reserved"]))
    o = json.loads(run(["oom", "--at", "peak", "--json", mh]).stdout)
    if not o["files"][0]["cases"]:
        fail("%s: oom --at peak explained nothing" % name)
    case = o["files"][0]["cases"][0]
    if not case["replay_checked"] or case["replay_match_percent"] < MATCH:
        fail("%s: oom says replay_checked=%s at %.1f %%"
             % (name, case["replay_checked"], case["replay_match_percent"]))
    for s in case["suggestions"]:
        if s["checked"] != (not s["in_effect"]):
            fail("%s: oom suggestion %s checked=%s" % (name, s["setting"], s["checked"]))
    print("%s (torch %s): seeded with %d segments and %d blocks (%d of unknown size), "
          "%.2f %% of %d allocator events reproduced, peak reserved %d as torch: ok"
          % (name, truth["torch"], w["seeded_segments"], w["seeded_blocks"],
             w["seeded_unknown_sizes"], w["match_percent"], w["recorded_allocator_events"],
             truth["max_reserved"]))


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        skip("torch is not installed")
    if not os.path.exists(os.path.join(os.environ["MH_BINARY_DIR"], "vdevice", "libcudart.so.13")):
        skip("the virtual device was not built (no CUDA headers)")
    d = os.path.join(os.environ["MH_BINARY_DIR"], "test-out", "vdevice_whatif_seeded")
    os.makedirs(d, exist_ok=True)
    for case in CASES:
        check(d, *case)


if __name__ == "__main__":
    main()
