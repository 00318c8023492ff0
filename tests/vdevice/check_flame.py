#!/usr/bin/env python3
"""check_flame.py - `memhist flame` on an unchanged program: records
tests/vdevice/gpt_train.py (a GPT-style training script with no memhist
calls) on the virtual CUDA device, where PyTorch's real caching allocator
runs, and checks the flame graph of the allocated peak: by module path (the
default, from the module scopes recorded with no code change) every
transformer block transformer.h.<i> is a frame, with bytes under it; the
folded counts sum to the live bytes `memhist report --json` gives at the
peak, by module and by stack; the SVG parses and names the blocks in its
titles.

    python tests/vdevice/check_flame.py [WORKDIR]

Environment: MEMHIST (the CLI; default build/memhist), MH_SOURCE_DIR.
Exits 0 when every check holds, 1 otherwise, 77 (skipped, with the reason)
without torch or the virtual device.
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(HERE, "..", ".."))
MEMHIST = os.environ.get("MEMHIST", os.path.join(SRC, "build", "memhist"))
SCRIPT = os.path.join(SRC, "tests", "vdevice", "gpt_train.py")
LAYERS = 4
SKIP = 77
failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)


def memhist(*args):
    p = subprocess.run([MEMHIST] + list(args), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("memhist %s failed: %s" % (args[0], p.stderr.strip()))
    return p.stdout


def record(work):
    path = os.path.join(work, "gpt.memhist")
    p = subprocess.run([MEMHIST, "simulate", "--no-report", "-o", path, "--", sys.executable,
                        SCRIPT, "--layers", str(LAYERS)], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        if "virtual" in p.stderr and "not" in p.stderr:
            print("skipped: the virtual device is not available")
            sys.exit(SKIP)
        sys.exit("memhist simulate failed (%d)" % p.returncode)
    return path


def folded(path, *args):
    stacks = {}
    for line in memhist("flame", path, "-o", "-", "--folded", *args).splitlines():
        stack, count = line.rsplit(" ", 1)
        stacks[stack] = int(count)
    return stacks


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skipped: torch is not installed")
        return SKIP
    work = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="mh_flame_")
    os.makedirs(work, exist_ok=True)
    path = record(work)
    live = json.loads(memhist("report", "--json", path))["files"][0]["devices"][0]["live_at_peak_bytes"]
    by_module = folded(path)
    check(sum(by_module.values()) == live,
          "by module: the counts sum to report's live bytes at the peak (%d)" % live)
    blocks = {}
    for stack, n in by_module.items():
        parts = stack.split(";")
        if parts[:2] == ["transformer", "h"] and len(parts) > 2:
            blocks[parts[2]] = blocks.get(parts[2], 0) + n
    want = {str(i) for i in range(LAYERS)}
    check(set(blocks) == want and all(blocks.values()),
          "the module hierarchy has every block transformer.h.<i> with bytes: %s" %
          ", ".join("h.%s %d MiB" % (b, n >> 20) for b, n in sorted(blocks.items())))
    by_stack = folded(path, "--by", "stack")
    check(sum(by_stack.values()) == live and not any(s.startswith("transformer;") for s in by_stack),
          "by stack: the same bytes, Python frames from the outermost")
    svg = os.path.join(work, "peak.svg")
    memhist("flame", path, "-o", svg)
    titles = [t.text or "" for t in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}title")]
    named = {t.split("\n", 1)[0] for t in titles}
    check(all("transformer.h.%d" % i in named for i in range(LAYERS)),
          "the SVG's titles name the blocks by module path")
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
