"""compare.py - compares a memhist recording with torch's own account of the
same run (the JSON that tests/truth/truth_run.py writes). Shared by the GPU
check (tests/gpu/record_check.py) and the virtual-device ground-truth tests
(tests/vdevice/check_workload.py).

Each check prints "ok   ..." or "FAIL ..." and failures are collected in a
Checker, so one run reports every difference. What is compared, per device:
  - peak allocated == torch.cuda.max_memory_allocated(),
    peak reserved == torch.cuda.max_memory_reserved();
  - final allocated/reserved == memory_allocated()/memory_reserved();
  - the segments and blocks of `memhist snapshot` == torch.cuda.memory._snapshot()
    (address, size, stream, block sizes and states);
  - the OOM events carry torch's failing size;
and for the run: each device's recorded steps == optimizer steps, forward/backward/optimizer
phases present (from `memhist trace`), and `memhist import` of torch's own
_dump_snapshot() gives the same peaks as the live recording.
"""
import json
import os
import pickle
import subprocess
import sys


class Checker:
    def __init__(self):
        self.failures = []

    def check(self, cond, what):
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            self.failures.append(what)
        return cond


def run(cmd, timeout=900, **kw):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    sys.stdout.write(p.stdout[-4000:])
    sys.stderr.write(p.stderr[-4000:])
    return p


def run_json(cmd):
    """Runs a memhist command that prints JSON; returns the object or None."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        print("$ " + " ".join(cmd) + "\n" + p.stderr[-2000:], flush=True)
        return None
    try:
        return json.loads(p.stdout)
    except ValueError:
        return None


def device_reports(report):
    """The per-device objects of `memhist report --json` (docs/json.md: files[].devices[])."""
    return [d for f in report["files"] for d in f["devices"]]


def report_device(report, device):
    for d in device_reports(report):
        if d.get("device", 0) == device:
            return d
    return None


def seg_key(s):
    return (s["address"], s["total_size"], s["stream"], [(b["size"], b["state"]) for b in s["blocks"]])


def check_peaks(c, dev, tdev, what="recorded"):
    d = tdev["device"]
    c.check(dev.get("peak_allocated") == tdev["max_memory_allocated"],
            "cuda:%d %s peak allocated %s == torch max_memory_allocated %s"
            % (d, what, dev.get("peak_allocated"), tdev["max_memory_allocated"]))
    c.check(dev.get("peak_reserved") == tdev["max_memory_reserved"],
            "cuda:%d %s peak reserved %s == torch max_memory_reserved %s"
            % (d, what, dev.get("peak_reserved"), tdev["max_memory_reserved"]))


def check_final(c, dev, tdev):
    final, d = dev.get("final", {}), tdev["device"]
    c.check(final.get("allocated") == tdev["memory_allocated"],
            "cuda:%d final allocated %s == torch memory_allocated %s"
            % (d, final.get("allocated"), tdev["memory_allocated"]))
    c.check(final.get("reserved") == tdev["memory_reserved"],
            "cuda:%d final reserved %s == torch memory_reserved %s"
            % (d, final.get("reserved"), tdev["memory_reserved"]))


def check_ooms(c, dev, tdev):
    d = tdev["device"]
    want = tdev.get("trace_ooms") or []
    got = [o.get("requested") for o in dev.get("ooms", [])]
    if not tdev.get("num_ooms"):
        c.check(not got, "cuda:%d no OOM recorded (torch counted none)" % d)
        return
    c.check(len(got) == tdev["num_ooms"], "cuda:%d recorded OOMs %d == torch num_ooms %d"
            % (d, len(got), tdev["num_ooms"]))
    if want:
        c.check(got == want, "cuda:%d OOM sizes %s == torch's failing sizes %s" % (d, got, want))
    else:  # no torch history: the observer reports the segment size that failed
        seg = tdev.get("ooms") or []
        c.check(len(seg) == len(got) and all(0 < g <= s for g, s in zip(got, seg)),
                "cuda:%d OOM sizes %s within torch's failing segment sizes %s" % (d, got, seg))


def check_segments(c, memhist, rec, truth, work):
    pk = os.path.join(work, "final.pickle")
    p = run([memhist, "snapshot", rec, "-o", pk])
    if not c.check(p.returncode == 0, "memhist snapshot writes a pickle"):
        return
    c.check("contradict" not in p.stderr, "no recorded event contradicts the allocator state")
    with open(pk, "rb") as f:
        snap = pickle.load(f)
    for tdev in truth["devices"]:
        d = tdev["device"]
        ours = sorted(seg_key(s) for s in snap["segments"] if s.get("device", 0) == d)
        theirs = sorted(seg_key(s) for s in tdev["segments"])
        c.check(len(ours) == len(theirs), "cuda:%d segment count %d == torch %d" % (d, len(ours), len(theirs)))
        c.check(ours == theirs, "cuda:%d segments and blocks (address, size, stream, states) == "
                "torch.cuda.memory._snapshot()" % d)
        if ours != theirs:
            only_ours = [k[:3] for k in ours if k not in theirs][:4]
            only_theirs = [k[:3] for k in theirs if k not in ours][:4]
            print("     only in memhist: %s\n     only in torch:   %s" % (only_ours, only_theirs))


def check_phases(c, memhist, rec, work):
    out = os.path.join(work, "trace.json")
    p = run([memhist, "trace", rec, "-o", out])
    if not c.check(p.returncode == 0, "memhist trace writes a trace"):
        return
    with open(out) as f:
        events = json.load(f)
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    phases = {e.get("name") for e in events if e.get("cat") == "phase"}
    want = {"forward", "backward", "optimizer"}
    c.check(want <= phases, "phases %s present (found %s)" % (sorted(want), sorted(phases)))


def check_import(c, memhist, dump, live, work):
    """`memhist import` of torch's _dump_snapshot() gives the live recording's peaks."""
    imp = os.path.join(work, "imported.memhist")
    p = run([memhist, "import", dump, "-o", imp])
    if not c.check(p.returncode == 0, "memhist import reads torch's _dump_snapshot()"):
        return
    rep = run_json([memhist, "report", "--json", imp])
    if not c.check(rep is not None, "memhist report --json of the imported file"):
        return
    for dev in device_reports(live):
        d = dev.get("device", 0)
        idev = report_device(rep, d)
        if not c.check(idev is not None, "cuda:%d present in the imported file" % d):
            continue
        for key in ("peak_allocated", "peak_reserved"):
            c.check(idev.get(key) == dev.get(key), "cuda:%d imported %s %s == live recording %s"
                    % (d, key, idev.get(key), dev.get(key)))


def check_recording(c, memhist, rec, truth, work, dump=None, phases=True):
    """Every comparison of recording `rec` with `truth`; returns the report."""
    rep = run_json([memhist, "report", "--json", rec])
    if not c.check(rep is not None, "memhist report --json %s" % os.path.basename(rec)):
        return None
    dropped = sum(f.get("dropped", 0) for f in rep["files"])
    c.check(dropped == 0, "no events dropped (%d)" % dropped)
    for tdev in truth["devices"]:
        dev = report_device(rep, tdev["device"])
        if tdev["max_memory_reserved"] == 0 and dev is None:
            continue  # a device the run never used
        if not c.check(dev is not None, "cuda:%d present in the recording" % tdev["device"]):
            continue
        check_peaks(c, dev, tdev)
        check_final(c, dev, tdev)
        check_ooms(c, dev, tdev)
    info = run_json([memhist, "info", "--json", rec])
    if c.check(info is not None, "memhist info --json %s" % os.path.basename(rec)):
        # a step ends at each Optimizer.step, once per device holding its parameters
        n = info.get("events_by_kind", {}).get("step_end", 0)
        c.check(n >= truth["optimizer_steps"], "step ends %d >= optimizer steps %d"
                % (n, truth["optimizer_steps"]))
    for dev in device_reports(rep):
        # each device's own complete steps; what follows the last step is its tail
        n = len(dev.get("steps", []))
        c.check(n == truth["optimizer_steps"], "cuda:%d recorded steps %d == optimizer steps %d"
                % (dev.get("device", 0), n, truth["optimizer_steps"]))
    if phases:
        check_phases(c, memhist, rec, work)
    check_segments(c, memhist, rec, truth, work)
    if dump:
        check_import(c, memhist, dump, rep, work)
    return rep
