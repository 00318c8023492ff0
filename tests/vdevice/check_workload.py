#!/usr/bin/env python3
"""check_workload.py - ground truth on the virtual device: records one
workload with memhist on memhist's virtual CUDA device, where PyTorch's real
caching allocator runs without a GPU, and compares the recording with
torch's own figures of the same run (tests/truth/compare.py); then replays
the recording through memhist's simulator under the recorded settings and
reports how faithfully it reproduces the real allocator. Where a case asks,
the settings `memhist oom` suggests for its OOM are run for real and must
OOM or not as the suggestion says.

    python tests/vdevice/check_workload.py CASE [WORKDIR]
    python tests/vdevice/check_workload.py --list

Environment: MEMHIST (the CLI; default build/memhist), MH_SOURCE_DIR.
Exits 0 when everything matches, 1 on a mismatch, 77 (skipped, with the
reason) when torch or the virtual device is missing.
"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "truth"))
import compare  # noqa: E402

SKIP = 77
WL = os.path.join(SRC, "tests", "vdevice", "workloads.py")
EX = os.path.join(SRC, "examples", "python")


def case(argv, conf="", vdev=(), whatif=(), exact=True, phases=True, suggestions=False, activations=False):
    """argv: script and arguments; conf: PYTORCH_CUDA_ALLOC_CONF; vdev: virtual
    device options; whatif: what the replay needs beyond the recording (the
    memory fraction the program set is not in it); exact: the simulator must
    reproduce the run (every placement, the reserved peak); phases: the run
    has forward, backward and optimizer phases."""
    return {"argv": argv, "conf": conf, "vdev": list(vdev), "whatif": list(whatif), "exact": exact,
            "suggestions": suggestions, "activations": activations,
            "phases": phases}


CASES = {
    "gpt": case([WL, "gpt"]),
    "gpt_ckpt": case([WL, "gpt_ckpt"]),
    "conv": case([WL, "conv"]),
    "amp": case([WL, "amp"]),
    "streams": case([WL, "streams"]),
    # events complete only at the next synchronizing call, as on a busy GPU:
    # blocks freed with record_stream wait in torch's pending-free list
    "streams_sync": case([WL, "streams"], vdev=["--events", "sync"]),
    "expandable": case([WL, "gpt"], "expandable_segments:True"),
    "max_split": case([WL, "big_logits"], "max_split_size_mb:32"),
    "gc_threshold": case([WL, "gc", "--steps", "6"], "garbage_collection_threshold:0.6",
                         ["--device-memory", "1GiB"], ["--memory-fraction", "0.5"]),
    # the program goes on after its OOM; `memhist oom`'s suggestions are rerun for real
    "oom": case([WL, "oom", "--steps", "12"], vdev=["--device-memory", "2GiB"], suggestions=True),
    "two_devices": case([WL, "two_devices"], vdev=["--devices", "2"]),
    # the copies' forward runs on threads of DataParallel's own, which are not autograd's
    "data_parallel": case([WL, "data_parallel"], vdev=["--devices", "2"], activations=True),
    "example_train_gpt": case([os.path.join(EX, "train_gpt.py"), "--steps", "3", "--layers", "2",
                               "--ctx", "128"]),
    "example_checkpoint": case([os.path.join(EX, "train_gpt_checkpoint.py"), "--steps", "3", "--layers", "3",
                                "--layers-ckpt", "0,2", "--ctx", "128"]),
    "example_oom": case([os.path.join(EX, "oom.py"), "--leak-steps", "2"], vdev=["--device-memory", "8GiB"],
                        phases=False),  # it keeps graphs alive and never runs backward
}


def memhist_bin():
    return os.environ.get("MEMHIST", os.path.join(os.environ.get("MH_BINARY_DIR", "build"), "memhist"))


def device_cmd(memhist, out, vopts, argv):
    """The command that runs argv on the virtual device, recorded to out
    (`memhist simulate -- COMMAND` is `memhist record` on the virtual device)."""
    return [memhist, "simulate", "--no-report"] + vopts + ["-o", out, "--"] + argv


def skip_unless_ready(memhist):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: torch is not installed")
        sys.exit(SKIP)
    if not os.access(memhist, os.X_OK):
        print("skipped: memhist CLI not found at %s (set MEMHIST)" % memhist)
        sys.exit(SKIP)


def record_case(memhist, name, work, truth=True, conf=None):
    """Runs case `name` on the virtual device under memhist (under `conf`
    instead of its own settings where given); with truth, through
    tests/truth/truth_run.py. Returns (exit status, recording, truth, dump)."""
    cs = dict(CASES[name], conf=CASES[name]["conf"] if conf is None else conf)
    argv = cs["argv"]
    rec, truth_path, dump = (os.path.join(work, f) for f in ("run.memhist", "truth.json", "torch.pickle"))
    if truth:
        argv = [os.path.join(SRC, "tests", "truth", "truth_run.py"), "--truth", truth_path,
                "--dump", dump, "--"] + argv
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=cs["conf"], PYTHONDONTWRITEBYTECODE="1")
    p = compare.run(device_cmd(memhist, rec, cs["vdev"], [sys.executable] + argv), env=env)
    return p.returncode, rec, truth_path, dump


def check_suggestions(c, memhist, name, rec, work):
    """`memhist oom`'s settings for the first OOM are checked by replay (the
    replay gets what the allocator could use, not the device's total, part of
    which the CUDA context holds), and each one's OOM or not is what the
    program does when rerun under it."""
    o = compare.run_json([memhist, "oom", "--json", rec])
    cases = (o or {"files": [{}]})["files"][0].get("cases") or [{}]
    first = cases[0]
    c.check(first.get("replay_checked") is True, "oom: suggestions checked by replay (%s %% reproduced)"
            % first.get("replay_match_percent"))
    for sug in first.get("suggestions", []):
        if sug["in_effect"] or "+" in sug["setting"]:  # a memory fraction is not an allocator setting
            continue
        rerun = os.path.join(work, "rerun")
        os.makedirs(rerun, exist_ok=True)
        rc, _, truth_path, _ = record_case(memhist, name, rerun, conf=sug["setting"])
        with open(truth_path) as f:
            ooms = sum(d["num_ooms"] for d in json.load(f)["devices"])
        c.check(rc == 0 and sug["oom"] == (ooms > 0), "oom: %s predicted %s, the rerun has %d OOM(s)"
                % (sug["setting"], "an OOM" if sug["oom"] else "no OOM", ooms))


def print_fidelity(name, fid):
    print("fidelity %s: %.2f %% of allocator events in order, %d of %d allocations at the recorded "
          "address; peak reserved recorded %d, simulated %d"
          % (name, fid["match_percent"], fid["placed"], fid["allocs"], fid["recorded_peak_reserved"],
             fid["simulated_peak_reserved"]), flush=True)


def run_case(memhist, name, work):
    c = compare.Checker()
    rc, rec, truth_path, dump = record_case(memhist, name, work)
    c.check(rc == 0, "%s runs on the virtual device under memhist (exit %d)" % (name, rc))
    if not c.check(os.path.exists(rec) and os.path.exists(truth_path), "recording and torch's truth written"):
        return c
    with open(truth_path) as f:
        truth = json.load(f)
    compare.check_recording(c, memhist, rec, truth, work, dump=dump, phases=CASES[name]["phases"])
    fid = fidelity(memhist, rec, CASES[name]["whatif"])
    if not c.check(fid is not None, "memhist whatif replays the recording"):
        return c
    print_fidelity(name, fid)
    if CASES[name]["suggestions"]:
        check_suggestions(c, memhist, name, rec, work)
    if CASES[name]["activations"]:
        for dev in compare.device_reports(compare.run_json([memhist, "report", "--json", rec]) or {"files": []}):
            act = dev["category_at_peak"].get("activation", 0)
            c.check(act > dev["peak_allocated"] // 10, "cuda:%d activations at the peak %d: over a tenth of %d"
                    % (dev["device"], act, dev["peak_allocated"]))
    if CASES[name]["exact"]:
        c.check(not fid["stopped_on_oom"], "the replay runs to the end")
        c.check(fid["placed"] == fid["allocs"], "simulator places all %d allocations where torch did (%d)"
                % (fid["allocs"], fid["placed"]))
        c.check(fid["simulated_peak_reserved"] == fid["recorded_peak_reserved"],
                "simulated peak reserved %d == recorded %d"
                % (fid["simulated_peak_reserved"], fid["recorded_peak_reserved"]))
    return c


def fidelity(memhist, rec, extra=()):
    """The simulator's replay of rec under the recorded settings (device 0)."""
    w = compare.run_json([memhist, "whatif", rec, "--json"] + list(extra))
    if w is None:
        return None
    return {"match_percent": w.get("match_percent") or 0.0,
            "allocs": w["recorded_allocations"], "placed": w["allocations_placed_same"],
            "stopped_on_oom": w["whatif_stopped_on_oom"],
            "recorded_peak_reserved": w["recorded"]["peak_reserved"],
            "simulated_peak_reserved": w["whatif"]["peak_reserved"]}


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--list":
        print("\n".join(CASES))
        return 0
    if len(sys.argv) not in (2, 3) or sys.argv[1] not in CASES:
        print("usage: check_workload.py CASE [WORKDIR] (CASE: %s)" % ", ".join(CASES), file=sys.stderr)
        return 2
    memhist = memhist_bin()
    skip_unless_ready(memhist)
    name = sys.argv[1]
    if len(sys.argv) == 3:
        os.makedirs(sys.argv[2], exist_ok=True)
        c = run_case(memhist, name, sys.argv[2])
    else:
        with tempfile.TemporaryDirectory(prefix="mh-vdev-") as work:
            c = run_case(memhist, name, work)
    print("%d failure(s)" % len(c.failures) if c.failures else "all checks passed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
