"""smoke.py - `memhist simulate -- python PROGRAM` on the virtual CUDA device
(ctest label "vdevice"): a tiny PyTorch program runs with torch's real
caching allocator and no GPU, torch sees the preset's device, data copied to
the device reads back, and the recording's peaks equal torch's own
max_memory_allocated/reserved of the same run. Also checks that bad settings
get one line and exit 2 (usage) or 1. Environment: MEMHIST (the CLI),
MH_SOURCE_DIR, MH_BINARY_DIR. Exits 77 (skip) without torch or without the
virtual device libraries."""
import json
import os
import subprocess
import sys
import tempfile

MEMHIST = os.environ["MEMHIST"]
HERE = os.path.dirname(os.path.abspath(__file__))


def skip(why):
    print("skip: " + why)
    sys.exit(77)


def run(args, **kw):
    return subprocess.run([MEMHIST] + args, capture_output=True, text=True, timeout=300, **kw)


def check_bad_settings():
    prog = [sys.executable, "-c", "pass"]
    cases = [(["--device-memory", "0"], 2), (["--gpu", "no-such-gpu"], 2), (["--devices", "0"], 2),
             (["--events", "later"], 2), (["--steps", "2"], 2)]
    for opts, want in cases:
        r = run(["simulate"] + opts + ["--"] + prog)
        assert r.returncode == want, (opts, r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) <= 2 and "memhist" in r.stderr, (opts, r.stderr)
    for args in (["simulate", "--gpu", "L4", "--"], ["simulate", "--devices", "2"]):
        r = run(args)  # no command after "--"; an option of the command mode without a command
        assert r.returncode == 2 and r.stderr.startswith("memhist simulate: "), (args, r.returncode, r.stderr)
    r = run(["simulate", "--", "memhist-no-such-command"])
    assert r.returncode == 1 and "not found" in r.stderr, (r.returncode, r.stderr)
    with tempfile.TemporaryDirectory() as tmp:  # no command: the built-in workloads keep working
        r = run(["simulate", "--gpu", "L4", "--steps", "2", "-o", os.path.join(tmp, "b.memhist")])
        assert r.returncode == 0 and "device 22.49 GiB" in r.stdout, (r.returncode, r.stdout, r.stderr)
    r = run(["simulate", "--gpu", "list"])
    assert r.returncode == 0 and "RTX4090" in r.stdout, r.stdout


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        skip("torch is not installed")
    if not os.path.exists(os.path.join(os.environ["MH_BINARY_DIR"], "vdevice", "libcudart.so.13")):
        skip("the virtual device was not built (no CUDA headers)")
    check_bad_settings()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "smoke.memhist")
        r = run(["simulate", "--gpu", "RTX4090", "--no-report", "-o", out, "--",
                 sys.executable, os.path.join(HERE, "smoke_program.py")])
        assert r.returncode == 0, "simulate failed (%d): %s" % (r.returncode, r.stderr[-2000:])
        assert "tensor values are not computed" in r.stderr, r.stderr
        truth = json.loads(r.stdout.strip().splitlines()[-1])
        assert truth["copy_ok"], "data copied to the virtual device did not read back"
        assert truth["name"] == "NVIDIA GeForce RTX 4090", truth
        assert truth["device_count"] == 1, truth
        assert truth["max_allocated"] > 4 * 2048 * 512, truth  # the weights at least
        rep = run(["report", "--json", out])
        assert rep.returncode == 0, rep.stderr
        dev = json.loads(rep.stdout)["devices"][0]
        assert dev["name"] == truth["name"], (dev["name"], truth["name"])
        assert dev["total_bytes"] == truth["total_memory"], (dev["total_bytes"], truth["total_memory"])
        assert dev["peak_allocated"] == truth["max_allocated"], (dev["peak_allocated"], truth)
        assert dev["peak_reserved"] == truth["max_reserved"], (dev["peak_reserved"], truth)
        assert dev["final"]["allocated"] == truth["allocated"], (dev["final"], truth)
    print("ok: recorded peak %d == torch max_memory_allocated on a virtual RTX 4090"
          % truth["max_allocated"])


if __name__ == "__main__":
    main()
