#!/usr/bin/env python3
"""fit.py - `memhist fit` end to end on the virtual device (ctest label
"vdevice"), each answer checked by separate `memhist simulate` runs.

  example   examples/python/train_gpt.py in a small shape (2 layers, 256
            wide, sequence 256, vocabulary 4096; the README's 24-layer shape
            is the benchmark, tests/bench/bench_fit.py) on RTX4090,
            A100-40GB and H100 presets of 1, 1.5 and 2 GiB: for each card,
            `memhist simulate --steps 4` at the value fit gives runs with no
            OOM and the peak reserved fit reports, and at the next value
            runs out of memory; `--json` validates against
            docs/schema/fit.schema.json; every run's recording exists and
            `memhist oom` explains the first failing value's; the PNG is a
            PNG
  shared    the same program on three cards of one preset (L4 of 1, 1.5 and
            2 GiB), which share runs: the same checks, and fewer runs than
            the cards searched one by one (--search bisect)
  errors    bad input, exit status 2 and a message saying what is wrong: no
            {NAME} in the command, the name given not in the command, a
            reversed or half range, an unknown preset, a headroom larger
            than the card, no command; a program that fails for another
            reason than memory (its last lines shown: the ValueError), a
            value at which it ends before a training step, a command that
            does not exist
  falling   tests/vdevice/fit_program.py --falling: memory that falls as the
            batch grows; the bottom of the range does not fit, the top
            does: fit says memory is not monotonic and answers the top
            (checked by simulate), never a wrong boundary

    python tests/vdevice/fit.py CASE [WORKDIR]

Environment: MEMHIST (the CLI), MH_SOURCE_DIR. Exits 0 when every check
holds, 1 otherwise, 77 (skipped, with the reason) without torch, the
virtual device or (for the schema) the jsonschema package.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(HERE, "..", ".."))
MEMHIST = os.environ.get("MEMHIST", os.path.join(SRC, "build", "memhist"))
GPT = [sys.executable, os.path.join(SRC, "examples", "python", "train_gpt.py"), "--layers", "2",
       "--dim", "256", "--ctx", "256", "--vocab", "4096", "--steps", "8", "--batch", "{batch}"]
PROGRAM = [sys.executable, os.path.join(HERE, "fit_program.py"), "--batch", "{batch}"]
STEPS = "4"
failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def skip(why):
    print("skipped: " + why)
    sys.exit(77)


def memhist(*args):
    return subprocess.run([MEMHIST] + list(args), capture_output=True, text=True)


def fit(work, name, options, command):
    out = os.path.join(work, name)
    p = memhist("fit", "--json", "-o", out, *options, "--", *command)
    if p.returncode != 0:
        print(p.stdout[-2000:] + p.stderr[-3000:])
        sys.exit("memhist fit failed (%d)" % p.returncode)
    return json.loads(p.stdout), p.stderr


def simulate(work, gpu, size, command, value):
    out = os.path.join(work, "check-%s-%s-%d.memhist" % (gpu, size, value))
    cmd = [w.replace("{batch}", str(value)) for w in command]
    p = memhist("simulate", "--gpu", gpu, "--device-memory", size, "--steps", STEPS, "-o", out, "--", *cmd)
    verdict = [ln for ln in p.stdout.splitlines() if ln.startswith(("fits:", "does not fit:"))]
    rep = memhist("report", "--json", out)
    dev = json.loads(rep.stdout)["files"][0]["devices"][0] if rep.returncode == 0 else {}
    return (verdict[0] if verdict else "(no verdict: %s)" % p.stderr[-300:]), dev.get("peak_reserved")


def validate(doc):
    try:
        import jsonschema
    except ImportError:
        skip("the jsonschema package is not installed (scripts/setup.sh installs it)")
    with open(os.path.join(SRC, "docs", "schema", "fit.schema.json")) as f:
        schema = json.load(f)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
    check(not errors, "fit --json validates: %s" % "; ".join("%s at %s" % (e.message, list(e.path))
                                                            for e in errors[:3]))
    check(list(doc)[:2] == ["schema", "command"] and doc["command"] == "fit", "the schema envelope")


def check_cards(work, doc, sizes, command):
    """Each card's answer against separate simulate runs."""
    for card, size in zip(doc["cards"], sizes):
        label, gpu = card["card"], card["gpu"]
        check(card["status"] == "boundary", "%s: a boundary inside the range: %s" % (label, card["status"]))
        if card["fits"] is None or card["fails"] is None:
            continue
        v = card["fits"]
        check(card["fails"] == v + 1, "%s: fits %d, fails %s" % (label, v, card["fails"]))
        verdict, peak = simulate(work, gpu, size, command, v)
        check(verdict.startswith("fits:"), "%s: simulate at %d fits: %s" % (label, v, verdict))
        check(peak == card["fits_peak_reserved"], "%s: simulate's peak reserved at %d, %s, is fit's %s"
              % (label, v, peak, card["fits_peak_reserved"]))
        verdict, _ = simulate(work, gpu, size, command, v + 1)
        check(verdict.startswith("does not fit:"), "%s: simulate at %d does not fit: %s" % (label, v + 1, verdict))
        run = doc["runs"][card["fails_run"] - 1]
        check(run["ran_as"] == label and run["result"] == "oom", "%s: the failing value ran on the card" % label)
        check(card["oom"] is not None and card["oom"]["request"] > 0, "%s: what it ran out on" % label)
        p = memhist("oom", run["file"])
        check(p.returncode == 0 and "OOM" in p.stdout.upper(), "%s: memhist oom explains %s" % (label, run["file"]))
    for run in doc["runs"]:
        check(os.path.exists(run["file"]), "run %d's recording exists" % run["run"])
        check(run["host_memory_peak"] > 0 and run["seconds"] > 0, "run %d: host memory and seconds" % run["run"])
    check(doc["plot"] and open(doc["plot"], "rb").read(8) == b"\x89PNG\r\n\x1a\n", "the PNG is written")


def case_example(work):
    sizes = ["1GiB", "1536MiB", "2GiB"]
    doc, _ = fit(work, "example", ["--gpu", "RTX4090,A100-40GB,H100", "--device-memory", ",".join(sizes),
                                   "--vary", "batch=1..64", "--steps", STEPS], GPT)
    validate(doc)
    check_cards(work, doc, sizes, GPT)
    print("runs: %d for %d cards, %.1f s" % (len(doc["runs"]), len(doc["cards"]), doc["wall_seconds"]))


def case_shared(work):
    sizes = ["1GiB", "1536MiB", "2GiB"]
    opts = ["--gpu", "L4", "--device-memory", ",".join(sizes), "--vary", "batch=1..64", "--steps", STEPS]
    doc, _ = fit(work, "shared", opts, GPT)
    validate(doc)
    check_cards(work, doc, sizes, GPT)
    alone, _ = fit(work, "bisect", opts + ["--search", "bisect"], GPT)
    check([c["fits"] for c in alone["cards"]] == [c["fits"] for c in doc["cards"]],
          "bisection on each card gives the same answers")
    check(len(doc["runs"]) < len(alone["runs"]), "shared: %d runs, bisection on each card: %d"
          % (len(doc["runs"]), len(alone["runs"])))
    on_largest = [r for r in doc["runs"] if r["ran_as"] == "L4-2GiB"]
    check(any(r["exact_for_larger_cards"] for r in on_largest), "runs on the largest card answer the others")


def bad(work, args, want, what):
    p = memhist("fit", "-o", os.path.join(work, "bad"), *args)
    check(p.returncode == 2 and want in p.stderr, "%s: exit %d, %r in: %s" % (what, p.returncode, want,
                                                                           p.stderr.strip()[-400:]))
    return p


def case_errors(work):
    gpt = GPT[:-1] + ["8"]
    bad(work, ["--"] + gpt, "no {NAME} in the command", "no {NAME}")
    bad(work, ["--vary", "bs=1..8", "--"] + GPT, "the command has no {bs}", "a name not in the command")
    bad(work, ["--vary", "batch=8..1", "--"] + GPT, "the range is reversed", "a reversed range")
    bad(work, ["--vary", "batch=4..", "--"] + GPT, "invalid range", "a half range")
    bad(work, ["--gpu", "B200X", "--"] + GPT, "no preset named 'B200X'", "an unknown preset")
    bad(work, ["--device-memory", "2GiB", "--headroom", "3GiB", "--"] + GPT, "leaves nothing", "headroom")
    bad(work, ["--vary", "batch=1..8"], "no command to run", "no command")
    p = bad(work, ["--device-memory", "2GiB", "--vary", "batch=1..64", "--"] + PROGRAM + ["--fail-at", "1"],
            "for a reason other than running out of memory", "a program that fails")
    check("ValueError: batch 1 is not supported" in p.stderr, "its last lines are shown")
    bad(work, ["--device-memory", "2GiB", "--vary", "batch=1..64", "--"] + PROGRAM + ["--no-step-below", "100"],
        "before it completed a training step", "a value without a step")
    bad(work, ["--device-memory", "2GiB", "--vary", "batch=1..4", "--", "no-such-program-here", "{batch}"],
        "cannot run 'no-such-program-here': command not found", "a command that does not exist")


def case_falling(work):
    command = PROGRAM + ["--falling", "40"]
    doc, _ = fit(work, "falling", ["--device-memory", "1GiB", "--vary", "batch=4..40", "--steps", STEPS], command)
    validate(doc)
    card = doc["cards"][0]
    check(card["status"] == "all_fit" and card["fits"] == 40, "the top of the range fits: %s %s"
          % (card["status"], card["fits"]))
    check(card["monotonic"] is False and card["not_monotonic"] == {"shown_by": "verdicts", "lower_value": 4,
                                                                   "higher_value": 40},
          "memory is said not to be monotonic: %s" % card["not_monotonic"])
    verdict, _ = simulate(work, "H100", "1GiB", command, 40)
    check(verdict.startswith("fits:"), "simulate at 40 fits: %s" % verdict)
    verdict, _ = simulate(work, "H100", "1GiB", command, 4)
    check(verdict.startswith("does not fit:"), "simulate at 4 does not fit: %s" % verdict)
    p = memhist("fit", "-o", os.path.join(work, "falling-text"), "--device-memory", "1GiB", "--vary",
                "batch=4..40", "--", *command)
    check("memory is not monotonic in batch: batch=4 does not fit but batch=40 does" in p.stdout,
          "the text says so: %s" % p.stdout[-600:])


CASES = {"example": case_example, "shared": case_shared, "errors": case_errors, "falling": case_falling}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in CASES:
        sys.exit("usage: fit.py %s [WORKDIR]" % "|".join(CASES))
    try:
        import torch  # noqa: F401
    except ImportError:
        skip("python3 cannot import torch")
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    CASES[sys.argv[1]](work)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
