"""record_check.py - GPU check of live recording against torch's own truth.

    python tests/gpu/record_check.py MEMHIST_BIN WORKDIR

Runs examples/python/train_gpt.py and examples/python/oom.py under
`memhist record`, each through tests/truth/truth_run.py (which writes torch's
own figures and _dump_snapshot() of the same run), and compares them with
the recording as tests/truth/compare.py does: peaks allocated and reserved,
final state, segments and blocks of torch.cuda.memory._snapshot(), steps,
phases, the OOM's failing size, and the peaks of `memhist import` of torch's
snapshot. The virtual-device tests (tests/vdevice) run the same comparison
without a GPU. Exits 77 with the reason when there is no GPU; 1 on any
mismatch.
"""
import json
import os
import sys

SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "truth"))
import compare  # noqa: E402


def check_script(c, memhist, work, name, argv, phases=True):
    out, truth_path, dump = (os.path.join(work, name + s) for s in (".memhist", ".truth.json", ".pickle"))
    p = compare.run([memhist, "record", "-o", out, "--", sys.executable,
                     os.path.join(SRC, "tests", "truth", "truth_run.py"), "--truth", truth_path,
                     "--dump", dump, "--"] + argv)
    c.check(p.returncode == 0, "%s under memhist record exits 0" % name)
    if not c.check(os.path.exists(out) and os.path.exists(truth_path), "%s: recording and truth written" % name):
        return
    with open(truth_path) as f:
        truth = json.load(f)
    sub = os.path.join(work, name)
    os.makedirs(sub, exist_ok=True)
    compare.check_recording(c, memhist, out, truth, sub, dump=dump, phases=phases)


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
    os.makedirs(work, exist_ok=True)
    c = compare.Checker()
    ex = os.path.join(SRC, "examples", "python")
    check_script(c, memhist, work, "train_gpt", [os.path.join(ex, "train_gpt.py"), "--steps", "6"])
    check_script(c, memhist, work, "oom", [os.path.join(ex, "oom.py")], phases=False)  # no backward
    print("%d failure(s)" % len(c.failures) if c.failures else "all GPU record checks passed")
    sys.exit(1 if c.failures else 0)


if __name__ == "__main__":
    main()
