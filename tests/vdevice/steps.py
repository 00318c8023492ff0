#!/usr/bin/env python3
"""steps.py - steps per device and the growth report on the virtual device
(ctest label "vdevice"), with tests/vdevice/steps_program.py recorded
unchanged under `memhist simulate`:

  devices   one process, a model on each of two devices, 4 iterations:
            4 steps per device (not 8), each device's trend (growth of
            the peaks from step 0 to the highest step) equal to what
            torch's own per-step peaks give, the allocation after the last
            optimizer step a tail ("after step 3"), not a step
  growth    the model's transformer.h.0.mlp output kept in a list every
            step: `report` has one growth line naming that module, bytes
            per step within 1 % of the leaked tensor; `growth --json` and
            `report --json` carry it
  nogrowth  the same program without the leak: no growth line, no entry
            (both growth cases run the two-device program; the leak is on
            device 0, device 1 must show nothing)
  rangehook the two-device program with MEMHIST_STEP_HOOK=record_function
            (steps from torch's Optimizer.step ranges through a global
            record_function callback): the same steps and trends as with the
            package's optimizer hooks (the default), and with op ranges on
            (callback and hooks both running) too; in every run each step's
            and the tail's peaks equal torch's own memory_stats peaks
  optimizers  two optimizers per iteration on one device, stepped one after
            the other (split) or each after its own model's forward and
            backward (halves, as a GAN trains), or a new optimizer every
            iteration (fresh): one step per iteration, 4 steps, each step's and the tail's peaks equal to torch's own
            taken at the first optimizer's steps; split again with
            MEMHIST_STEP_HOOK=record_function
  profiler  4 iterations under a torch.profiler schedule with an optimizer
            step every 2nd: the profiler's 5 ProfilerStep ranges (the last
            one open until stop) define the steps, not the 2 optimizer steps

    python tests/vdevice/steps.py CASE [WORKDIR]

Environment: MEMHIST (the CLI), MH_BINARY_DIR. Exits 0 when every check
holds, 1 otherwise, 77 (skipped, with the reason) without torch or the
virtual device.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MEMHIST = os.environ.get("MEMHIST", os.path.join(HERE, "..", "..", "build", "memhist"))
PROGRAM = os.path.join(HERE, "steps_program.py")
LEAK_MODULE = "transformer.h.0.mlp"
SKIP = 77
failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def skip(why):
    print("skipped: " + why)
    sys.exit(SKIP)


def memhist(*args):
    return memhist_env(None, *args)


def memhist_env(env, *args):
    return subprocess.run([MEMHIST] + list(args), capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


def record(work, name, args, env=None, op_ranges=False):
    """Records the program under `memhist simulate`; returns (file, truth)."""
    path = os.path.join(work, name + ".memhist")
    truth = os.path.join(work, name + ".truth.json")
    p = memhist_env(env, "simulate", "--no-report", "--devices", "2", "--device-memory", "4GiB",
                "--context-memory", "64MiB", *(["--op-ranges"] if op_ranges else []), "-o", path,
                "--", sys.executable, PROGRAM,
                "--truth", truth, *args)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        sys.exit("memhist simulate failed (%d)" % p.returncode)
    with open(truth) as f:
        return path, json.load(f)


def report_json(path):
    p = memhist("report", "--json", path)
    if p.returncode != 0:
        sys.exit("memhist report failed: " + p.stderr.strip())
    return {d["device"]: d for d in json.loads(p.stdout)["files"][0]["devices"]}


def case_devices(work):
    two, truth = record(work, "two", ["--devices", "2"])
    devs = report_json(two)
    check(sorted(devs) == [0, 1], "two devices in the file: %s" % sorted(devs))
    for d in sorted(devs):
        steps = [s["step"] for s in devs[d]["steps"]]
        check(steps == [0, 1, 2, 3], "device %d: steps %s, 4 per device" % (d, steps))
        check(devs[d].get("tail", {}).get("step") == 4,
              "device %d: what follows the last optimizer step is the tail" % d)
        trend, peaks = devs[d]["fragmentation_trend"], truth["step_peaks"][str(d)]
        for key, k in (("allocated_growth", 0), ("reserved_growth", 1)):
            want = max(p[k] for p in peaks) - peaks[0][k]  # step 0 to its highest step
            check(trend is not None and trend[key] == want and (k or want > 0),
                  "device %d: %s %s equals torch's, from its per-step peaks: %d"
                  % (d, key, trend and trend[key], want))
    text = memhist("report", two).stdout
    check("tail: after step 3, not a complete step" in text, "the text report names the tail")


def case_growth(work):
    path, truth = record(work, "leak", ["--devices", "2", "--leak"])
    leaked = truth["leaked_bytes_per_step"]
    text = memhist("report", path).stdout
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("growth:")]
    check(len(lines) == 1, "one growth line in the report: %s" % lines)
    check(bool(lines) and LEAK_MODULE in lines[0], "the growth line names %s: %s"
          % (LEAK_MODULE, lines[:1]))
    p = memhist("growth", "--json", path)
    check(p.returncode == 0, "memhist growth --json: %s" % p.stderr.strip())
    dev = json.loads(p.stdout)["files"][0]["devices"][0]["growth"] if p.returncode == 0 else {}
    entries = dev.get("entries", [])
    check(len(entries) >= 1, "growth --json lists the leak: %s" % entries)
    if entries:
        top = entries[0]
        check(top["module"] is not None and top["module"].startswith(LEAK_MODULE),
              "top entry's module %s" % top["module"])
        check(abs(top["bytes_per_step"] - leaked) <= 0.01 * leaked,
              "bytes per step %d within 1 %% of the leaked %d" % (top["bytes_per_step"], leaked))
        check(top["first_step"] == 0 and top["steps_grown"] == truth["steps"],
              "grew from step 0 in every step: %s" % top)
    rep = report_json(path)[0]["growth"]
    check(rep["entries"][:1] == entries[:1], "report --json carries the same entry")
    other = report_json(path)[1]["growth"]
    check(other["entries"] == [], "nothing grows on the other device")


def case_nogrowth(work):
    path, _ = record(work, "plain", ["--devices", "2"])
    text = memhist("report", path).stdout
    check("growth:" not in text, "no growth line without the leak")
    for d, dev in report_json(path).items():
        check(dev["growth"]["window_steps"] == 2 and dev["growth"]["entries"] == [],
              "device %d: no growth entry over the last 2 steps: %s" % (d, dev["growth"]))


def step_source(path):
    p = memhist("info", "--json", path)
    return json.loads(p.stdout)["meta"].get("step_source", "") if p.returncode == 0 else ""


def case_rangehook(work):
    runs = {"hooks": record(work, "hooks", ["--devices", "2"]),
            "ranges": record(work, "ranges", ["--devices", "2"], {"MEMHIST_STEP_HOOK": "record_function"}),
            "both": record(work, "both", ["--devices", "2"], op_ranges=True)}
    check(step_source(runs["hooks"][0]).startswith("optimizer hooks"),
          "default: %s" % step_source(runs["hooks"][0]))
    check(step_source(runs["ranges"][0]).startswith("record_function"),
          "record_function: %s" % step_source(runs["ranges"][0]))
    counts = json.loads(memhist("info", "--json", runs["both"][0]).stdout or "{}").get("events_by_kind", {})
    check(counts.get("range_begin", 0) > 0, "--op-ranges recorded ranges: %s" % counts.get("range_begin"))
    reports = {name: report_json(path) for name, (path, _) in runs.items()}
    check(all(sorted(r) == [0, 1] for r in reports.values()), "all files have devices 0 and 1")
    for name, rep in reports.items():
        for d in sorted(rep):
            check_torch_peaks("%s, device %d" % (name, d), rep[d], runs[name][1], d)
    a = reports["hooks"]
    for name in ("ranges", "both"):
        b = reports[name]
        for d in sorted(set(a) & set(b)):
            same = [s["step"] for s in a[d]["steps"]] == [s["step"] for s in b[d]["steps"]] == [0, 1, 2, 3]
            check(same, "%s, device %d: steps 0-3 as with the optimizer hooks" % (name, d))
            check(a[d]["fragmentation_trend"] == b[d]["fragmentation_trend"],
                  "%s, device %d: the same trend as with the optimizer hooks" % (name, d))


def check_torch_peaks(what, dev, truth, d):
    """Each step's and the tail's peaks equal torch's own for that run (runs
    may differ from each other: autograd's device threads free concurrently
    with the main thread, so a small block can move a peak by a few KiB)."""
    got = [[s["peak_allocated"], s["peak_reserved"]] for s in dev["steps"]]
    check(got == truth["step_peaks"][str(d)], "%s: step peaks %s equal torch's %s"
          % (what, got, truth["step_peaks"][str(d)]))
    tail = dev.get("tail") or {}
    got = [tail.get("peak_allocated"), tail.get("peak_reserved")]
    check(got == truth["tail_peaks"][str(d)], "%s: tail peaks %s equal torch's %s"
          % (what, got, truth["tail_peaks"][str(d)]))


def case_optimizers(work):
    runs = [("split", "split", None), ("halves", "halves", None), ("fresh", "fresh", None),
            ("split_ranges", "split", {"MEMHIST_STEP_HOOK": "record_function"})]
    for name, kind, env in runs:
        path, truth = record(work, name, ["--devices", "1", "--optimizers", kind], env)
        dev = report_json(path)[0]
        steps = [s["step"] for s in dev["steps"]]
        check(steps == [0, 1, 2, 3], "%s: one step per iteration: %s" % (name, steps))
        check_torch_peaks(name, dev, truth, 0)


def case_profiler(work):
    path, _ = record(work, "prof", ["--devices", "1", "--steps", "4", "--accumulate", "2", "--profiler"])
    steps = [s["step"] for s in report_json(path)[0]["steps"]]
    check(steps == [0, 1, 2, 3, 4], "ProfilerStep#0..4 are the steps, not the 2 optimizer steps: %s" % steps)


CASES = {"devices": case_devices, "growth": case_growth, "nogrowth": case_nogrowth,
         "rangehook": case_rangehook, "optimizers": case_optimizers, "profiler": case_profiler}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in CASES:
        sys.exit("usage: steps.py %s [WORKDIR]" % "|".join(CASES))
    try:
        import torch  # noqa: F401
    except ImportError:
        skip("torch is not installed")
    vdev = os.path.join(os.environ.get("MH_BINARY_DIR", ""), "vdevice", "libcudart.so.13")
    if not os.path.exists(vdev):
        skip("the virtual device was not built (no CUDA headers)")
    if len(sys.argv) > 2:
        os.makedirs(sys.argv[2], exist_ok=True)
        CASES[sys.argv[1]](sys.argv[2])
    else:
        with tempfile.TemporaryDirectory() as work:
            CASES[sys.argv[1]](work)
    if failures:
        sys.exit("%d check(s) failed" % len(failures))


if __name__ == "__main__":
    main()
