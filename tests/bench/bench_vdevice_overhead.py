#!/usr/bin/env python3
"""bench_vdevice_overhead.py - recorder overhead on the virtual device.

Runs the tiny GPT training loop of tests/gpu/overhead.py on memhist's
virtual CUDA device in four configurations: no recording, `memhist
--stacks python`, `memhist --stacks none`, and torch's own
_record_memory_history(stacks="python"). Kernels do nothing there, so the
allocator and the recorders dominate the step time: the figures are the
upper bound of the overhead on a GPU. The configurations alternate in
rounds (one process each) so drift on a shared machine hits them alike;
each process prints its median step time and the benchmark prints, per
configuration, the median over rounds and the ratio to no recording.

    python tests/bench/bench_vdevice_overhead.py [ROUNDS] [STEPS]

Environment: MEMHIST (the CLI). Exits 77 (skipped) without torch or the CLI.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "vdevice"))
import check_workload as cw  # noqa: E402

LOOP = os.path.join(SRC, "tests", "gpu", "overhead.py")
# configuration: (memhist --stacks value or None for no memhist recording, overhead.py MODE)
CONFIGS = {
    "none": (None, "none"),
    "memhist_python": ("python", "memhist"),
    "memhist_none": ("none", "memhist"),
    "torch_python": (None, "torch"),
}


STANDINS = ("libcuda.so.1", "libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnvidia-ml.so.1")


def vdevice_dir(memhist):
    d = os.environ.get("MEMHIST_VDEVICE_DIR", os.path.join(os.path.dirname(os.path.abspath(memhist)), "vdevice"))
    return d if all(os.path.exists(os.path.join(d, f)) for f in STANDINS) else None


def command(memhist, stacks, mode, steps, out, env):
    """memhist simulate when memhist records; otherwise the stand-in libraries
    preloaded directly, so the program runs on the same virtual device unrecorded."""
    loop = [sys.executable, LOOP, mode, str(steps)]
    if stacks is not None:
        return [memhist, "simulate", "--no-report", "--stacks", stacks, "-o", out, "--"] + loop
    d = vdevice_dir(memhist)
    env["LD_PRELOAD"] = ":".join(os.path.join(d, f) for f in STANDINS)
    return loop


def one_run(memhist, name, steps, work):
    stacks, mode = CONFIGS[name]
    env = dict(os.environ, MH_OVERHEAD_LABEL=name, PYTHONDONTWRITEBYTECODE="1")
    cmd = command(memhist, stacks, mode, steps, os.path.join(work, name + ".memhist"), env)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    m = re.search(r"^step_ms_%s: ([0-9.]+)" % name, p.stdout, re.M)
    if not m:  # a run that printed its figure and then aborted at exit still counts
        sys.stderr.write("%s failed (exit %d): %s\n" % (name, p.returncode, p.stderr[-1500:]))
        return None
    return float(m.group(1))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    memhist = cw.memhist_bin()
    cw.skip_unless_ready(memhist)
    if vdevice_dir(memhist) is None:
        print("skipped: the virtual device's libraries are not built next to %s" % memhist)
        return cw.SKIP
    times = {name: [] for name in CONFIGS}
    ratios = {name: [] for name in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="mh-ovh-") as work:
        for r in range(rounds):
            order = list(CONFIGS)
            order = order[r % len(order):] + order[:r % len(order)]  # rotate who goes first
            got = {name: one_run(memhist, name, steps, work) for name in order}
            for name, t in got.items():
                if t is not None:
                    times[name].append(t)
                    if got["none"]:
                        ratios[name].append(t / got["none"])
    if not all(times.values()):
        return 1
    print("vdevice step time, median of %d rounds of %d steps (tiny GPT, AdamW); the ratio is the "
          "median of each round's ratio to that round's run without recording:" % (rounds, steps))
    for name, ts in times.items():
        print("vdevice_step_ms_%s: %.2f (x%.2f; rounds: %s)"
              % (name, statistics.median(ts), statistics.median(ratios[name]) if ratios[name] else 0.0,
                 ", ".join("%.2f" % t for t in ts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
