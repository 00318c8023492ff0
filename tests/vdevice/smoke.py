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
import re
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
             (["--events", "later"], 2), (["--seed", "2"], 2), (["--steps", "0"], 2)]
    for opts, want in cases:
        r = run(["simulate"] + opts + ["--"] + prog)
        assert r.returncode == want, (opts, r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) <= 2 and "memhist" in r.stderr, (opts, r.stderr)
    for args in (["simulate", "--gpu", "L4", "--"], ["simulate", "--devices", "2"]):
        r = run(args)  # no command after "--"; an option of the command mode without a command
        assert r.returncode == 2 and r.stderr.startswith("memhist simulate: "), (args, r.returncode, r.stderr)
    with tempfile.TemporaryDirectory() as tmp:  # an output nobody can write: said before running
        r = run(["simulate", "-o", os.path.join(tmp, "missing", "x.memhist"), "--"] + prog)
        assert r.returncode == 1 and "cannot write" in r.stderr, (r.returncode, r.stderr)
    r = run(["simulate", "--", "memhist-no-such-command"])
    assert r.returncode == 1 and "not found" in r.stderr, (r.returncode, r.stderr)
    with tempfile.TemporaryDirectory() as tmp:  # no command: the built-in workloads keep working
        r = run(["simulate", "--gpu", "L4", "--steps", "2", "-o", os.path.join(tmp, "b.memhist")])
        # the status line ("memhist: wrote ...") is on stderr
        assert r.returncode == 0 and "device 22.49 GiB" in r.stderr, (r.returncode, r.stdout, r.stderr)
    r = run(["simulate", "--gpu", "list"])
    assert r.returncode == 0 and "RTX4090" in r.stdout, r.stdout


def check_verdicts():
    """The report and the one-line answer after the program: fits, or where it ran out."""
    with tempfile.TemporaryDirectory() as tmp:
        for size_mib, fits in ((40, True), (100, False)):
            prog = ("import torch; x = torch.empty(%d << 20, dtype=torch.uint8, device='cuda'); "
                    "print(torch.cuda.max_memory_reserved())" % size_mib)
            r = run(["simulate", "--device-memory", "96MiB", "--context-memory", "16MiB", "-o",
                     os.path.join(tmp, "v.memhist"), "--", sys.executable, "-c", prog])
            assert r.returncode == (0 if fits else 1), (size_mib, r.returncode, r.stderr[-1500:])
            assert "peak reserved" in r.stdout, r.stdout
            last = r.stdout.strip().splitlines()[-1]
            if fits:
                reserved = int(r.stdout.splitlines()[0]) / 2**20
                want = "peak reserved %.2f MiB of 80.00 MiB usable" % reserved
                assert last.startswith("fits: ") and want in last, (last, want)
            else:
                assert last.startswith("does not fit: ") and "asking for 100.00 MiB" in last, last


def check_adaptations():
    """cuDNN kept off, NCCL replaced by gloo, warnings for what would mislead."""
    with tempfile.TemporaryDirectory() as tmp:
        r = run(["simulate", "--no-report", "-o", os.path.join(tmp, "a.memhist"), "--",
                 sys.executable, os.path.join(HERE, "adapt_program.py")])
        assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
        seen = json.loads(r.stdout.strip().splitlines()[-1])
        assert seen == {"cudnn_enabled": False, "backend": "gloo", "graph_refused": True}, seen
        for what in ("cuDNN stays off", "NCCL needs real GPUs", "torch.nonzero", "CUDA graph capture",
                     "testing a tensor (if/while on it) reads a CUDA tensor's value"):
            # one warning line per process, naming it: "memhist: warning: process P: ..."
            assert re.search(r"(?m)^memhist: warning: process \d+: " + re.escape(what), r.stderr), \
                (what, r.stderr[-2000:])
        assert r.stderr.count("reads a CUDA tensor's value") == 1, r.stderr[-2000:]


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
        dev = json.loads(rep.stdout)["files"][0]["devices"][0]
        assert dev["name"] == truth["name"], (dev["name"], truth["name"])
        assert dev["total_bytes"] == truth["total_memory"], (dev["total_bytes"], truth["total_memory"])
        assert dev["peak_allocated"] == truth["max_allocated"], (dev["peak_allocated"], truth)
        assert dev["peak_reserved"] == truth["max_reserved"], (dev["peak_reserved"], truth)
        assert dev["final"]["allocated"] == truth["allocated"], (dev["final"], truth)
    check_verdicts()
    check_adaptations()
    print("ok: recorded peak %d == torch max_memory_allocated on a virtual RTX 4090"
          % truth["max_allocated"])


if __name__ == "__main__":
    main()
