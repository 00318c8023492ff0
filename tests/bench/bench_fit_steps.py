#!/usr/bin/env python3
"""bench_fit_steps.py - after how many training steps the peak of a run has
settled: the measurement behind `memhist fit --steps` (its default).

Records each program below for STEPS steps under `memhist simulate` (on an
80 GiB virtual H100, so nothing runs out) and reads each step's peak
allocated and peak reserved from `memhist report --json`. A program's peak
has settled at step k when the peaks of steps 0..k already reach the
largest of all its steps (allocated and reserved alike): a short run of k+1
steps finds the same peak as the whole run. Prints per program each step's
peaks (MiB) and its settle step, then the largest settle step over all.

Programs: examples/python/train_gpt.py as it is (6 layers, AdamW), in the
README's 24-layer shape, with checkpointing on every block; the GPT
workload of tests/vdevice/workloads.py whose sequence length changes from
step to step (period 3); a ResNet-style network with SGD and momentum
(tests/vdevice/resnet_train.py); autocast float16 with GradScaler, whose
scale state appears at the first step (workloads.py amp); gradients kept
between steps and accumulated over two micro-batches (tests/vdevice/
gpt_train.py --keep-grads --accumulate 2).

    python tests/bench/bench_fit_steps.py [STEPS]

Environment: MEMHIST (the CLI), MH_SOURCE_DIR. Exits 77 (skipped) without
torch or the CLI.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MEMHIST = os.environ.get("MEMHIST", os.path.join(SRC, "build", "memhist"))
EX = os.path.join(SRC, "examples", "python")
VD = os.path.join(SRC, "tests", "vdevice")


def programs(steps):
    py, s = sys.executable, str(steps)
    gpt = os.path.join(EX, "train_gpt.py")
    return [
        ("train_gpt", [py, gpt, "--steps", s]),
        ("train_gpt_24x1024_b4", [py, gpt, "--layers", "24", "--dim", "1024", "--ctx", "1024",
                                  "--vocab", "32000", "--batch", "4", "--steps", s]),
        ("train_gpt_checkpoint", [py, gpt, "--checkpoint", "--steps", s]),
        ("gpt_varying_length", [py, os.path.join(VD, "workloads.py"), "gpt", "--steps", s]),
        ("resnet_sgd_momentum", [py, os.path.join(VD, "resnet_train.py"), "--steps", s]),
        ("amp_gradscaler", [py, os.path.join(VD, "workloads.py"), "amp", "--steps", s]),
        ("keep_grads_accumulate2", [py, os.path.join(VD, "gpt_train.py"), "--keep-grads",
                                    "--accumulate", "2", "--steps", s]),
    ]


def settle_step(peaks):
    """The first step whose running maximum reaches the largest peak."""
    top, best = max(peaks), 0
    for i in range(len(peaks)):
        if max(peaks[:i + 1]) == top:
            return i
    return best


def measure(name, cmd, work):
    out = os.path.join(work, name + ".memhist")
    t0 = time.monotonic()
    p = subprocess.run([MEMHIST, "-q", "simulate", "--no-report", "--gpu", "H100", "-o", out, "--"] + cmd,
                       capture_output=True, text=True)
    secs = time.monotonic() - t0
    if p.returncode != 0 or not os.path.exists(out):
        print("%s: failed (exit %d): %s" % (name, p.returncode, p.stderr[-400:]))
        return None
    r = subprocess.run([MEMHIST, "report", "--json", out], capture_output=True, text=True)
    steps = json.loads(r.stdout)["files"][0]["devices"][0]["steps"]
    alloc = [s["peak_allocated"] for s in steps]
    resv = [s["peak_reserved"] for s in steps]
    k = max(settle_step(alloc), settle_step(resv))
    mib = lambda v: "%.1f" % (v / 2**20)  # noqa: E731
    print("%s: %d steps in %.1f s" % (name, len(steps), secs))
    print("  peak allocated MiB: %s" % " ".join(mib(v) for v in alloc))
    print("  peak reserved  MiB: %s" % " ".join(mib(v) for v in resv))
    print("  settled at step %d (a run of %d steps finds the peak)" % (k, k + 1))
    return k


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: python3 cannot import torch")
        return 77
    if not os.access(MEMHIST, os.X_OK):
        print("skipped: no memhist CLI at %s (set MEMHIST)" % MEMHIST)
        return 77
    with tempfile.TemporaryDirectory() as work:
        settled = [measure(n, c, work) for n, c in programs(steps)]
    settled = [k for k in settled if k is not None]
    if not settled:
        return 1
    print("fit_steps_settled_max: step %d (default --steps %d covers it)" % (max(settled), max(settled) + 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
