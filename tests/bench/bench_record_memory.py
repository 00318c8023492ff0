#!/usr/bin/env python3
"""bench_record_memory.py - the recorder's memory over a long recording:
a PyTorch program on memhist's virtual device (`memhist simulate -- python`)
that allocates and frees tensors in a loop until it has made about EVENTS
allocator events (default 10 M), with Python stacks on. The resident memory
of the recorded process is sampled twice a second; the benchmark prints it
at each tenth of the run and the growth from the end of the first fifth
(torch imported, the loop running) to the end,
which stays flat when the drain writes events out as fast as they come and
keeps nothing per event (its interning tables grow with the distinct
stacks, which this loop keeps few).

    python tests/bench/bench_record_memory.py     (MEMHIST: the CLI; EVENTS)

Exits 77 (skipped) without torch or the CLI built with its virtual device.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

MEMHIST = os.environ.get("MEMHIST") or shutil.which("memhist")
EVENTS = int(float(os.environ.get("EVENTS", "10e6")))

# Three allocator events per iteration: alloc, free_requested, free_completed.
PROGRAM = textwrap.dedent("""
    import sys, torch
    n = int(sys.argv[1])
    keep = [torch.empty(1 << 14, device="cuda") for _ in range(64)]
    def work(i):
        x = torch.empty(1024 + (i % 7) * 512, device="cuda")
        del x
    for i in range(n):
        work(i)
        if i % 4096 == 0:
            keep[i % 64] = torch.empty(1 << 14, device="cuda")
    print("done", flush=True)
""")


def children_of(pid):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(p))
        except OSError:
            continue
    return out


def rss_mib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def python_pid(root):
    """The recorded python process under memhist simulate."""
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if b"python" in f.read().split(b"\0")[0]:
                    return pid
        except OSError:
            pass
        todo.extend(children_of(pid))
    return None


def main():
    if not MEMHIST or not os.path.exists(MEMHIST):
        print("skip: no memhist CLI (set MEMHIST)")
        sys.exit(77)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("skip: python3 cannot import torch")
        sys.exit(77)
    with tempfile.TemporaryDirectory(prefix="mh-recmem-") as work:
        prog = os.path.join(work, "loop.py")
        with open(prog, "w") as f:
            f.write(PROGRAM)
        out = os.path.join(work, "run.memhist")
        iters = EVENTS // 3
        t0 = time.monotonic()
        p = subprocess.Popen([MEMHIST, "simulate", "--no-report", "-o", out, "--", sys.executable,
                              prog, str(iters)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        samples = []
        pid = None
        while p.poll() is None:
            pid = pid or python_pid(p.pid)
            rss = rss_mib(pid) if pid else None
            if rss is not None:
                samples.append((time.monotonic() - t0, rss))
            time.sleep(0.5)
        err = p.stderr.read().decode(errors="replace")
        if p.returncode != 0:
            if "virtual device" in err and "not" in err:
                print("skip: %s" % err.strip()[-300:])
                sys.exit(77)
            sys.exit("memhist simulate failed: %s" % err[-800:])
        info = subprocess.run([MEMHIST, "info", out], capture_output=True, text=True).stdout
        events = next((int(l.split()[1]) for l in info.splitlines() if l.startswith("events ")), 0)
        dropped = next((l.split()[1] for l in info.splitlines() if l.startswith("dropped")), "?")
        size = os.path.getsize(out)
    if len(samples) < 10:
        sys.exit("too few memory samples (%d): the run ended too fast; raise EVENTS" % len(samples))
    wall = samples[-1][0]
    print("recorded %.2f M events in %.1f s (%.1f MiB file, %s dropped)"
          % (events / 1e6, wall, size / 2**20, dropped))
    print("%8s %10s" % ("time", "RSS"))
    for k in range(1, 11):
        t, rss = samples[min(len(samples) - 1, k * len(samples) // 10 - 1)]
        print("%7.1fs %7.1f MiB" % (t, rss))
    first = samples[len(samples) // 5][1]
    last = max(rss for _, rss in samples[len(samples) // 5:])
    print("record_rss_after_first_fifth_mib: %.1f" % first)
    print("record_rss_max_after_mib: %.1f" % last)
    print("record_rss_growth_mib: %.1f" % (last - first))


if __name__ == "__main__":
    main()
