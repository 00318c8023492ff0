#!/usr/bin/env python3
"""bench_fit.py - runs and wall time of `memhist fit` against plain bisection.

Runs the README's example, examples/python/train_gpt.py with 24 layers, 1024
wide, sequence 1024 and a 32000-token vocabulary, batch 1..256 on RTX4090,
A100-40GB and H100, twice: with fit's search (the boundary predicted from
the runs so far, runs shared where that is exact) and with --search bisect
(each card bisected on its own device, nothing shared), and prints per
search the runs, the runs per card and the wall time; the two must give the
same answers. Then the same program on three cards of one preset (24, 40
and 80 GiB of an H100), where runs are shared across cards.

    python tests/bench/bench_fit.py [--quick]

--quick uses a 2-layer, 256-wide model on 1, 1.5 and 2 GiB cards instead.
Environment: MEMHIST (the CLI), MH_SOURCE_DIR. Exits 77 (skipped) without
torch or the CLI, 1 when the searches disagree.
"""
import json
import os
import subprocess
import sys
import tempfile

SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MEMHIST = os.environ.get("MEMHIST", os.path.join(SRC, "build", "memhist"))
GPT = os.path.join(SRC, "examples", "python", "train_gpt.py")
FULL = ["--layers", "24", "--dim", "1024", "--ctx", "1024", "--vocab", "32000"]
QUICK = ["--layers", "2", "--dim", "256", "--ctx", "256", "--vocab", "4096"]


def fit(work, name, cards, shape, search):
    cmd = [MEMHIST, "fit", "--json", "-o", os.path.join(work, name), "--vary", "batch=1..256",
           "--search", search] + cards + ["--", sys.executable, GPT] + shape + ["--batch", "{batch}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr[-2000:])
        return None
    return json.loads(p.stdout)


def compare(work, label, cards, shape):
    docs = {s: fit(work, label + "-" + s, cards, shape, s) for s in ("predict", "bisect")}
    if None in docs.values():
        return False
    answers = {s: [(c["card"], c["fits"], c["fails"]) for c in d["cards"]] for s, d in docs.items()}
    ncards = len(docs["predict"]["cards"])
    for s, d in docs.items():
        print("fit_%s_%s: %d runs (%.1f per card), %.0f s wall, %d at a time" % (
            label, s, len(d["runs"]), len(d["runs"]) / ncards, d["wall_seconds"], d["jobs"]))
    print("fit_%s_answers: %s" % (label, ", ".join("%s fits %s, fails %s" % a for a in answers["predict"])))
    same = answers["predict"] == answers["bisect"]
    print("fit_%s_same_answers: %s" % (label, "yes" if same else "NO: bisect says %s" % answers["bisect"]))
    return same


def main():
    quick = "--quick" in sys.argv
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: python3 cannot import torch")
        return 77
    if not os.access(MEMHIST, os.X_OK):
        print("skipped: no memhist CLI at %s (set MEMHIST)" % MEMHIST)
        return 77
    shape = QUICK if quick else FULL
    sizes = "1GiB,1536MiB,2GiB" if quick else "24GiB,40GiB,80GiB"
    presets = ["--gpu", "RTX4090,A100-40GB,H100"] + (["--device-memory", sizes] if quick else [])
    ok = True
    with tempfile.TemporaryDirectory() as work:
        ok &= compare(work, "presets", presets, shape)
        ok &= compare(work, "one_preset", ["--gpu", "H100", "--device-memory", sizes], shape)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
