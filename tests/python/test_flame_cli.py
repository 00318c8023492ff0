#!/usr/bin/env python3
"""test_flame_cli.py - `memhist flame` as a user runs it, on a run of the
built-in simulator (GPT workload, module paths) and on a real PyTorch
snapshot from tests/data imported with `memhist import` (stacks, no module
paths, an OOM): the folded lines parse and their counts sum to the live bytes
`memhist report --json` gives at the same moment (the peak, the OOM, the end
of the run and the peak's time given as --at SECONDS); the SVG parses with
xml.etree, its root frame's title shows the total and every frame's title
its bytes; the module hierarchy names the transformer blocks; output is the
same on every run; bad input is one line and a non-zero exit.
Environment: MEMHIST, MH_SOURCE_DIR."""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

MEMHIST = os.environ.get("MEMHIST", "")
SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SNAPSHOT = os.path.join(SRC, "tests", "data", "snapshots", "small.p4.pickle")
SVG = "{http://www.w3.org/2000/svg}"
FAILURES = []
LINE = re.compile(r"^(\S.*) (\d+)$")


def run(*args):
    p = subprocess.run([MEMHIST, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def folded(path, *args):
    """(total, {stack: bytes}) of `memhist flame --folded`, or None."""
    rc, out, err = run("flame", path, "-o", "-", "--folded", *args)
    if rc != 0:
        check(False, f"flame --folded {' '.join(args)} runs ({err.strip()})")
        return None
    stacks, bad = {}, []
    for line in out.splitlines():
        m = LINE.match(line)
        if not m or any(f == "" for f in m.group(1).split(";")) or m.group(1) in stacks:
            bad.append(line)
            continue
        stacks[m.group(1)] = int(m.group(2))
    check(not bad and stacks, f"folded lines parse as 'a;b;c BYTES' ({len(stacks)} lines, bad: {bad[:2]})")
    return sum(stacks.values()), stacks


def report(path):
    rc, out, err = run("report", "--json", path)
    check(rc == 0, f"report --json {path} ({err.strip()})")
    return json.loads(out)["files"][0]["devices"][0]


def first_time(path):
    rc, out, _ = run("info", "--json", path)
    return json.loads(out)["first_time_ns"]


def check_svg(path, total, tmp, *args):
    out = os.path.join(tmp, "flame.svg")
    rc, _, err = run("flame", path, "-o", out, *args)
    check(rc == 0 and f"wrote {out}" in err, f"flame {' '.join(args)} writes an SVG ({err.strip()})")
    try:
        root = ET.parse(out).getroot()
    except ET.ParseError as e:
        check(False, f"the SVG parses with xml.etree ({e})")
        return None
    check(root.tag == SVG + "svg", "the document is an <svg>")
    frames = [g for g in root.iter(SVG + "g") if "f" in g.get("class", "").split()]
    roots = [g for g in frames if "root" in g.get("class", "").split()]
    titles = [g.find(SVG + "title").text or "" for g in frames]
    check(len(roots) == 1 and f"({total} bytes)" in roots[0].find(SVG + "title").text
          and "100.00% of live" in roots[0].find(SVG + "title").text,
          f"the root frame's title shows the total {total}")
    check(all(re.search(r"\(\d+ bytes\), \d+\.\d\d% of live", t) for t in titles),
          f"every frame ({len(titles)}) has a title with bytes and share")
    with open(out, "rb") as f:
        data = f.read()
    rc, _, _ = run("flame", path, "-o", out, *args)
    with open(out, "rb") as f:
        check(rc == 0 and f.read() == data, "the same input gives the same SVG")
    return titles


def simulated(tmp):
    path = os.path.join(tmp, "gpt.memhist")
    rc, _, err = run("simulate", "--steps", "3", "--param", "layers=4", "-o", path)
    check(rc == 0, f"simulate the GPT workload ({err.strip()})")
    dev = report(path)
    live = dev["live_at_peak_bytes"]
    got = folded(path)
    check(got and got[0] == live, f"folded counts sum to report's live bytes at the peak ({live})")
    blocks = {s.split(";")[2] for s in got[1] if s.startswith("transformer;h;")} if got else set()
    check(blocks == {"0", "1", "2", "3"}, f"the module hierarchy names the four blocks ({blocks})")
    by_stack = folded(path, "--by", "stack")
    check(by_stack and by_stack[0] == live and not any(s.startswith("transformer;") for s in by_stack[1]),
          "--by stack: the same bytes, no module paths")
    titles = check_svg(path, live, tmp) or []
    check(any(t.startswith("transformer.h.2\n") for t in titles), "a block's title is its module path")
    at = (dev["peak_allocated_time_ns"] - first_time(path)) / 1e9
    got = folded(path, "--at", "%.9f" % at)
    check(got and got[0] == live, f"--at {at:.9f} (the peak's time) gives the peak's live bytes")
    rc, out, _ = run("info", "--json", path)
    info = json.loads(out)
    end = (info["last_time_ns"] - info["first_time_ns"]) / 1e9
    got = folded(path, "--at", "%.9f" % end)
    check(got and got[0] == dev["final"]["allocated"], "--at the end gives the final allocated bytes")
    return path


def snapshot(tmp):
    path = os.path.join(tmp, "snap.memhist")
    rc, _, err = run("import", SNAPSHOT, "-o", path)
    check(rc == 0, f"import the snapshot ({err.strip()})")
    dev = report(path)
    got = folded(path)
    check(got and got[0] == dev["live_at_peak_bytes"], "snapshot: folded counts sum to the live bytes")
    check(got and all(s.startswith("<module> (train.py:99)") for s in got[1]),
          "snapshot: by stack from the outermost frame (no module paths)")
    got = folded(path, "--at", "oom")
    check(got and got[0] == dev["ooms"][0]["allocated"], "snapshot: --at oom gives the OOM's allocated bytes")
    check_svg(path, dev["live_at_peak_bytes"], tmp)
    return path


def errors(sim, snap, tmp):
    out = os.path.join(tmp, "x.svg")
    for args, code, needle in (
            ([sim, "-o", out, "--device", "7"], 1, "no events for device 7"),
            ([sim, "-o", out, "--at", "100000"], 1, "after the end of the run"),
            ([sim, "-o", out, "--at", "oom"], 1, "no out-of-memory event"),
            ([snap, "-o", out, "--at", "0"], 1, "nothing is live"),
            ([sim, "-o", out, "--at", "soon"], 2, "--at takes"),
            ([sim, "-o", out, "--by", "file"], 2, "--by is"),
            ([sim], 2, "missing -o"),
            ([sim, sim, "-o", out], 2, "one input FILE"),
            ([os.path.join(tmp, "none.memhist"), "-o", out], 1, "cannot open")):
        rc, _, err = run("flame", *args)
        lines = err.strip().splitlines()
        check(rc == code and needle in err and len(lines) <= 2 and not os.path.exists(out),
              f"flame {' '.join(os.path.basename(a) for a in args)} -> exit {code}, '{needle}' "
              f"(got {rc}: {err.strip()})")


def main():
    if not MEMHIST or not os.path.exists(MEMHIST):
        print("skip: MEMHIST is not set to the memhist binary")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        sim = simulated(tmp)
        snap = snapshot(tmp)
        errors(sim, snap, tmp)
    print(f"{len(FAILURES)} failure(s)" if FAILURES else "all passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
