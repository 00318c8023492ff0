"""The size warnings of `trace` and `snapshot` estimate the file they then
write to within 10 %.

On a simulated 150-step run (millions of bytes of output), --warn-size 1KiB
makes both commands print their estimate ("the trace will be about X");
the estimate is compared with the size of the file written, for the whole
run, for a window of steps and for trace --pretty; without --warn-size (default limits far
above these sizes) no warning is printed. Environment: MEMHIST.
"""
import os
import re
import subprocess
import sys
import tempfile

MEMHIST = os.environ.get("MEMHIST", "")
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([MEMHIST] + list(args), capture_output=True, text=True, timeout=600)


def estimate(stderr):
    m = re.search(r"will be about ([\d.]+) (B|KiB|MiB|GiB|TiB)", stderr)
    return float(m.group(1)) * UNITS[m.group(2)] if m else None


with tempfile.TemporaryDirectory() as tmp:
    rec = os.path.join(tmp, "run.memhist")
    check(run("simulate", "--steps", "150", "-o", rec).returncode == 0, "simulate")
    for command, out in (("trace", "t.json"), ("snapshot", "s.pickle")):
        out = os.path.join(tmp, out)
        variants = [[], ["--steps", "20:40"]] + ([["--pretty"]] if command == "trace" else [])
        for window in variants:
            p = run(command, rec, *window, "--warn-size", "1KiB", "-o", out)
            est = estimate(p.stderr)
            check(p.returncode == 0 and est is not None,
                  "%s %s warns with an estimate: %s" % (command, window, p.stderr))
            if est is None or not os.path.exists(out):
                continue
            size = os.path.getsize(out)
            print("%s %s: estimated %d, wrote %d bytes (%+.1f %%)"
                  % (command, " ".join(window), est, size, 100.0 * (est - size) / size))
            check(size > 100000, "%s %s writes a sizeable file (%d bytes)" % (command, window, size))
            check(abs(est - size) <= 0.10 * size,
                  "%s %s: estimate %d within 10 %% of %d" % (command, window, est, size))
        p = run(command, rec, "-o", out)
        check(p.returncode == 0 and "will be about" not in p.stderr,
              "%s: no warning under the default limit: %s" % (command, p.stderr))

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
