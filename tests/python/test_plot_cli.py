#!/usr/bin/env python3
"""test_plot_cli.py - `memhist plot` as a user runs it: images of the right
size that match the golden renderings of the same inputs, a message image for
an empty file, every x axis (--x), clear errors with exit status 2 (usage) or 1 (failure) for bad
options, and, when `memhist simulate` is built, both plot kinds on its default
workload. Inputs are tests/data/golden/*.memhist (written by
scripts/regen-golden.sh). Environment: MEMHIST, MH_SOURCE_DIR."""
import os
import struct
import subprocess
import sys
import tempfile

MEMHIST = os.environ.get("MEMHIST", "")
SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
GOLDEN = os.path.join(SRC, "tests", "data", "golden")
FAILURES = []


def run(*args):
    p = subprocess.run([MEMHIST, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def expect_error(args, code, needle):
    rc, _, err = run("plot", *args)
    check(rc == code and needle in err,
          f"plot {' '.join(args)} -> exit {code} with '{needle}' (got {rc}: {err.strip()})")


def main():
    if not MEMHIST or not os.path.exists(MEMHIST):
        print("skip: MEMHIST is not set to the memhist binary")
        return 77
    basic = os.path.join(GOLDEN, "basic.memhist")
    empty = os.path.join(GOLDEN, "empty.memhist")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.png")
        rc, _, err = run("plot", basic, "-o", out)
        check(rc == 0 and png_size(out) == (1280, 760), f"default timeline is 1280x760 ({err})")
        rc, _, _ = run("plot", basic, "-o", out, "--width", "1000", "--height", "600")
        with open(out, "rb") as a, open(os.path.join(GOLDEN, "plot_timeline_basic.png"), "rb") as b:
            check(rc == 0 and a.read() == b.read(), "CLI timeline matches the golden image")
        rc, _, _ = run("plot", basic, "-o", out, "--kind", "segments", "--width", "1000",
                       "--height", "600")
        with open(out, "rb") as a, open(os.path.join(GOLDEN, "plot_segments_peak.png"), "rb") as b:
            check(rc == 0 and a.read() == b.read(), "CLI segment view matches the golden image")
        rc, _, err = run("plot", empty, "-o", out)
        check(rc == 0 and png_size(out) == (1280, 760) and "nothing to plot" in err,
              "empty file gives a message image")
        rc, _, _ = run("plot", basic, "-o", out, "--steps", "1:2", "--top", "2")
        check(rc == 0 and png_size(out) is not None, "window and --top work")
        rc, _, _ = run("plot", basic, "-o", out, "--kind", "segments", "--at", "0.165")
        check(rc == 0 and png_size(out) is not None, "segments --at SECONDS works")
        images = {}
        for mode in ("compressed", "time", "events", "steps"):
            path = os.path.join(tmp, mode + ".png")
            rc, _, err = run("plot", basic, "-o", path, "--x", mode)
            check(rc == 0 and png_size(path) == (1280, 760), f"--x {mode} draws a timeline ({err})")
            with open(path, "rb") as f:
                images[mode] = f.read()
        check(images["events"] != images["time"] and images["steps"] != images["time"],
              "--x events and --x steps draw other axes than --x time")
        rc, out_text, _ = run("help", "plot")
        check(rc == 0 and "--kind timeline|segments" in out_text, "help lists the options")

        expect_error([basic, "-o", out, "--width", "0"], 2, "--width needs a number of pixels")
        expect_error([basic, "-o", out, "--height", "120"], 2, "at least 400x300")
        expect_error([basic, "-o", out, "--device", "3"], 1, "unknown device 3")
        expect_error([basic, "-o", out, "--steps", "40:50"], 1, "window holds no events")
        expect_error([basic, "-o", out, "--time", "7:9"], 1, "window holds no events")
        expect_error([basic, "-o", out, "--steps", "5:1"], 2, "invalid --steps")
        expect_error([basic], 2, "missing -o")
        expect_error([basic, "-o", out, "--kind", "pie"], 2, "--kind is 'timeline' or 'segments'")
        expect_error([basic, "-o", out, "--x", "log"], 2,
                     "--x is 'compressed', 'time', 'events' or 'steps'")
        expect_error([basic, "-o", out, "--kind", "segments", "--at", "oom"], 1,
                     "no out-of-memory event")
        expect_error([basic, "-o", out, "--kind", "segments", "--at", "99"], 1,
                     "after the end of the run")
        expect_error([basic, "-o", out, "--top", "0"], 2, "--top needs a number")
        expect_error([os.path.join(tmp, "missing.memhist"), "-o", out], 1, "missing.memhist")
        expect_error([basic, "-o", os.path.join(tmp, "no", "dir.png")], 1, "cannot write")
        simulated(tmp)
    return 1 if FAILURES else 0


def simulated(tmp):
    """Both kinds on the simulator's default workload, when it is built."""
    sim = os.path.join(tmp, "sim.memhist")
    rc, _, err = run("simulate", "-o", sim)
    if rc != 0 or not os.path.exists(sim):
        print(f"note: no simulated run to plot ({err.strip()[:100]})")
        return
    for kind in ("timeline", "segments"):
        out = os.path.join(tmp, f"sim_{kind}.png")
        rc, _, err = run("plot", sim, "-o", out, "--kind", kind)
        check(rc == 0 and png_size(out) == (1280, 760), f"simulated run, {kind} ({err.strip()})")


if __name__ == "__main__":
    sys.exit(main())
