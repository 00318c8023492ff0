"""`memhist report`'s per-step table on long runs: --steps A:B, --all-steps,
and the summary (first and last steps, the peak steps, outliers).

On a simulated 60-step run: the default table holds fewer rows than steps,
among them the first and last three and the steps with the highest peak
allocated and peak reserved (found from --json), marks what it left out and
says how to see the rest; --all-steps shows every step; --steps 10:12 shows
exactly those rows, in text and in --json; a short run shows every step with
no note; bad or conflicting options are usage errors (exit 2).
Environment: MEMHIST.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

MEMHIST = os.environ.get("MEMHIST", "")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([MEMHIST] + list(args), capture_output=True, text=True, timeout=300)


def rows(text):
    """Step numbers of the per-step table's rows."""
    return [int(m) for m in re.findall(r"(?m)^ +(\d+) +[\d.]+ [KMGT]?i?B +[\d.]+ [KMGT]?i?B", text)]


with tempfile.TemporaryDirectory() as tmp:
    long_run, short_run = os.path.join(tmp, "long.memhist"), os.path.join(tmp, "short.memhist")
    check(run("simulate", "--steps", "60", "-o", long_run).returncode == 0, "simulate 60 steps")
    check(run("simulate", "--steps", "5", "-o", short_run).returncode == 0, "simulate 5 steps")
    steps = json.loads(run("report", "--json", long_run).stdout)["files"][0]["devices"][0]["steps"]
    numbers = [s["step"] for s in steps]
    peak_a = max(steps, key=lambda s: s["peak_allocated"])["step"]
    peak_r = max(steps, key=lambda s: s["peak_reserved"])["step"]

    p = run("report", long_run)
    shown = rows(p.stdout)
    check(p.returncode == 0 and 6 <= len(shown) < len(numbers) // 2, "summary is short: %s" % shown)
    check(set(numbers[:3] + numbers[-3:]) <= set(shown), "first and last steps shown")
    check(peak_a in shown and peak_r in shown, "peak steps %d and %d shown: %s" % (peak_a, peak_r, shown))
    check(shown == sorted(shown), "rows in step order")
    check("... (" in p.stdout and "%d of %d steps" % (len(shown), len(numbers)) in p.stdout
          and "--all-steps" in p.stdout, "says what was left out and how to see it")

    p = run("report", "--all-steps", long_run)
    check(rows(p.stdout) == numbers, "--all-steps shows every step")
    p = run("report", long_run, "--steps", "10:12")
    check(rows(p.stdout) == [10, 11, 12] and "... (" not in p.stdout, "--steps 10:12: %s" % rows(p.stdout))
    doc = json.loads(run("report", "--json", "--steps", "10:12", long_run).stdout)
    check([s["step"] for s in doc["files"][0]["devices"][0]["steps"]] == [10, 11, 12], "--steps in JSON")
    p = run("report", short_run)
    check(len(rows(p.stdout)) == 5 and "steps:" not in p.stdout, "a short run shows every step")

    for bad in (["--steps", "3:1"], ["--steps", "x"], ["--steps", "1:2", "--all-steps"]):
        p = run("report", long_run, *bad)
        check(p.returncode == 2 and p.stderr.count("\n") <= 2, "usage error for %s: %r" % (bad, p.stderr))

    # the trend's what-if says whether a replay under the recorded settings
    # checks it: a simulated run replays exactly, so it is checked
    doc = json.loads(run("report", "--json", long_run).stdout)
    trend = doc["files"][0]["devices"][0]["fragmentation_trend"]
    text = run("report", long_run).stdout
    if trend["fragmentation"]:
        check(trend["whatif_checked"] is True and ", checked by replay)" in text,
              "a fragmenting simulated run's what-if is checked: %r" % trend)
    else:
        check(trend["whatif_checked"] is None and "checked by replay" not in text,
              "no verdict, no check label: %r" % trend)

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
