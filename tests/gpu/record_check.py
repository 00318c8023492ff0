"""record_check.py - GPU check of live recording against torch's own truth.

    python tests/gpu/record_check.py MEMHIST_BIN WORKDIR

Runs examples/python/train_gpt.py under `memhist record` (it writes torch's
figures with --truth), then compares:
  - recorded peak allocated == torch.cuda.max_memory_allocated();
  - number of recorded steps == optimizer steps;
  - final segments and blocks in `memhist snapshot`'s pickle == torch's
    torch.cuda.memory._snapshot() (address, size, stream, block sizes/states);
  - examples/python/oom.py's OOM event carries the failing size.
Exits 77 with the reason when there is no GPU; 1 on any mismatch.
"""
import json
import os
import pickle
import subprocess
import sys

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd, **kw):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)
    sys.stdout.write(p.stdout[-4000:])
    sys.stderr.write(p.stderr[-4000:])
    return p


def device_reports(report):
    """The per-device objects of `memhist report --json` (docs/json.md)."""
    return [d for f in report["files"] for d in f["devices"]]


def check_train(memhist, src, work):
    out, truth_path = os.path.join(work, "gpt.memhist"), os.path.join(work, "truth.json")
    steps = 6
    p = run([memhist, "record", "-o", out, "--", sys.executable,
             os.path.join(src, "examples/python/train_gpt.py"), "--steps", str(steps), "--truth", truth_path])
    check(p.returncode == 0, "train_gpt.py under memhist record exits 0")
    check(os.path.exists(out), "recording written")
    if not os.path.exists(out) or not os.path.exists(truth_path):
        return
    truth = json.load(open(truth_path))
    p = run([memhist, "report", "--json", out])
    check(p.returncode == 0, "memhist report --json")
    try:
        dev = device_reports(json.loads(p.stdout))[0]
    except (ValueError, IndexError) as e:
        check(False, "report JSON parses: %s" % e)
        return
    check(dev.get("peak_allocated") == truth["max_memory_allocated"],
          "peak allocated %s == torch max_memory_allocated %s" % (dev.get("peak_allocated"),
                                                                 truth["max_memory_allocated"]))
    n_steps = len([s for s in dev.get("steps", []) if s.get("step", -1) >= 0 and s.get("end_ns")])
    check(n_steps >= steps, "recorded steps %d >= optimizer steps %d" % (n_steps, steps))
    final = dev.get("final", {})
    check(final.get("allocated") == truth["memory_allocated"],
          "final allocated %s == torch %s" % (final.get("allocated"), truth["memory_allocated"]))
    check(final.get("reserved") == truth["memory_reserved"],
          "final reserved %s == torch %s" % (final.get("reserved"), truth["memory_reserved"]))
    check_snapshot(memhist, out, truth, work)


def seg_key(s):
    return (s["address"], s["total_size"], [(b["size"], b["state"]) for b in s["blocks"]])


def check_snapshot(memhist, out, truth, work):
    pk = os.path.join(work, "gpt.pickle")
    p = run([memhist, "snapshot", out, "-o", pk])
    if p.returncode != 0:
        check(False, "memhist snapshot writes a pickle")
        return
    snap = pickle.load(open(pk, "rb"))
    ours = sorted(seg_key(s) for s in snap["segments"])
    theirs = sorted(seg_key(s) for s in truth["segments"])
    check(len(ours) == len(theirs), "segment count %d == torch %d" % (len(ours), len(theirs)))
    check(ours == theirs, "segments and blocks equal torch.cuda.memory._snapshot()")


def check_oom(memhist, src, work):
    out = os.path.join(work, "oom.memhist")
    p = run([memhist, "record", "-o", out, "--", sys.executable, os.path.join(src, "examples/python/oom.py")])
    check(p.returncode == 0, "oom.py under memhist record exits 0")
    want = [int(l.split("=")[1]) for l in p.stdout.splitlines() if l.startswith("OOM_REQUEST_BYTES=")]
    p = run([memhist, "report", "--json", out])
    try:
        ooms = [o for d in device_reports(json.loads(p.stdout)) for o in d.get("ooms", [])]
    except ValueError:
        ooms = []
    check(len(ooms) >= 1, "the recording holds the OOM")
    if ooms and want:
        # the event carries the rounded request: at least the bytes asked, within one 2 MiB page
        req = ooms[-1].get("requested", 0)
        check(want[0] <= req < want[0] + (2 << 20), "OOM size %d matches the failing request %d" % (req, want[0]))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: record_check.py MEMHIST_BIN WORKDIR")
    try:
        import torch
    except ImportError:
        print("skipped: torch is not installed")
        sys.exit(77)
    if not torch.cuda.is_available():
        print("skipped: no CUDA device (torch.cuda.is_available() is False)")
        sys.exit(77)
    memhist, work = sys.argv[1], sys.argv[2]
    src = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    os.makedirs(work, exist_ok=True)
    check_train(memhist, src, work)
    check_oom(memhist, src, work)
    print("%d failure(s)" % len(failures) if failures else "all GPU record checks passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
