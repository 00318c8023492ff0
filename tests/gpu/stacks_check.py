"""stacks_check.py - GPU check: memhist's own stacks equal torch's.

    python tests/gpu/stacks_check.py MEMHIST_BIN WORKDIR      (record + compare, record --frames)
    python tests/gpu/stacks_check.py --record WORKDIR         (GPU part only)
    python tests/gpu/stacks_check.py --compare MEMHIST_BIN WORKDIR

Records one workload twice at once: memhist.start() (its own frame walker,
stacks="python", then stacks="all", then stacks="python" with frames=3)
while the program also turns torch's own history on with stacks="python",
so it also checks that both work together. A tensor allocated before the
first recording and freed during the last must be known to each (the state
at the start is recorded). Then every allocation in torch's trace is matched with memhist's
(same order, address and size, through `memhist snapshot`) and their frames
(file, function, line; innermost first) must be equal, except that where
torch has no frame memhist names the op ("torch internal", op, 0). With stacks="all"
only memhist's Python frames are compared (torch's own interleave of C++
and Python frames is wrong on CPython 3.11+), and no frame may be in
memhist's own libraries; with frames=3 every stack is torch's innermost 3. The workload has methods,
nested modules, a generator, a comprehension, a lambda, a custom
autograd.Function and exec'd code. Runs on memhist's virtual device too
(ctest vdevice_stacks_check: LD_PRELOAD of its libraries, MEMHIST_VDEVICE=1).
Exits 77 without a CUDA device, 1 on mismatch.
"""
import os
import pickle
import subprocess
import sys

failures = []
MODES = ("python", "all", "python3")  # python3: stacks="python", frames=3


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def workload(torch):
    nn = torch.nn

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(256, 256) for _ in range(3)])

        def forward(self, x):
            for layer in self.layers:
                x = Square.apply(layer(x))
            return x

    def batches(n):
        for _ in range(n):
            yield torch.randn(64, 256, device="cuda")

    ns = {"torch": torch}
    exec(compile("def made(x):\n    return x.exp() + 1\n", "<generated>", "exec"), ns)
    net = Net().cuda()
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    for x in batches(4):
        y = net(x)
        extra = [torch.ones(i + 1, 32, device="cuda") for i in range(3)]
        z = (lambda t: t.sum())(y) + ns["made"](extra[0]).sum()
        z.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def record(workdir):
    import torch
    if os.environ.get("MEMHIST_VDEVICE") == "1":  # memhist's virtual device: cuDNN off
        from memhist import _vdevice
        _vdevice.install(torch.cuda)
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        sys.exit(77)
    import memhist
    os.makedirs(workdir, exist_ok=True)
    torch.cuda.init()
    held = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")  # live before every recording
    for mode in MODES:
        torch.cuda.empty_cache()  # each recording sees its segments created
        s = memhist.start(os.path.join(workdir, "own_%s.memhist" % mode), stacks=mode.rstrip("3"),
                          frames=3 if mode.endswith("3") else None)
        if mode == MODES[-1]:
            del held  # freed while recorded: the recording must know the block
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                                 max_entries=10 ** 6)
        workload(torch)
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        memhist.stop()
        check(s.status == "complete", "memhist %s recorded alongside torch's history (%s)" % (mode, s.status))
        with open(os.path.join(workdir, "torch_%s.pickle" % mode), "wb") as f:
            pickle.dump(snap, f)


def allocs(snap):
    return [e for tr in snap["device_traces"] for e in tr if e["action"] == "alloc"]


def frames(entry, python_only):
    fr = [(f["filename"], f["name"], f["line"]) for f in entry.get("frames", [])]
    if python_only:
        fr = [f for f in fr if f[0].endswith(".py") or f[0].startswith("<")]
    return fr


def compare(memhist_bin, workdir):
    for mode in MODES:
        mh = os.path.join(workdir, "own_%s.memhist" % mode)
        out = os.path.join(workdir, "own_%s.pickle" % mode)
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # no virtual device for the CLI
        p = subprocess.run([memhist_bin, "snapshot", mh, "-o", out], capture_output=True, text=True, env=env)
        check(p.returncode == 0, "memhist snapshot %s: %s" % (mode, p.stderr.strip()))
        if p.returncode:
            continue
        check("contradict" not in p.stderr, "%s: the recording agrees with the allocator's state (it knows "
              "the memory live when it started)" % mode)
        info = subprocess.run([memhist_bin, "info", mh], capture_output=True, text=True, env=env).stdout
        check("memhist frame walker" in info, "info names the own frame walker (%s)" % mode)
        with open(out, "rb") as f:
            mine = allocs(pickle.load(f))
        with open(os.path.join(workdir, "torch_%s.pickle" % mode), "rb") as f:
            theirs = allocs(pickle.load(f))
        key = [(e["addr"], e["size"]) for e in theirs]
        mkey = [(e["addr"], e["size"]) for e in mine]
        start = next((k for k in range(len(mkey) - len(key) + 1) if mkey[k:k + len(key)] == key), None)
        check(len(key) > 50 and start is not None,
              "%s: torch's %d allocations found in order among memhist's %d" % (mode, len(key), len(mkey)))
        if start is None:
            continue
        same = with_frames = own = native = named = 0
        for a, b in zip(theirs, mine[start:]):
            fa, fb = frames(a, False), frames(b, mode == "all")
            own += any("libmemhist" in f[0] for f in frames(b, False))
            native += any(".so" in f[0] for f in frames(b, False))
            if mode == "python3":
                fa = fa[:3]
            with_frames += bool(fa)
            # where torch has no frame (autograd's thread), memhist names the op
            op = not fa and len(fb) == 1 and fb[0][0] == "torch internal" and fb[0][2] == 0
            named += op
            if fa == fb or op:
                same += 1
            elif len(failures) < 8:
                print("  differ at addr %#x size %d:\n    torch   %s\n    memhist %s" % (a["addr"], a["size"],
                                                                                        fa[:4], fb[:4]))
        check(own == 0, "%s: no stack holds a frame of memhist's own libraries (%d do)" % (mode, own))
        check((native > len(theirs) // 2) == (mode == "all"),
              "%s: stacks with C++ frames: %d of %d" % (mode, native, len(theirs)))
        check(same == len(theirs) and with_frames > len(theirs) // 3,
              "%s: frames equal for %d of %d allocations (%d with Python frames, %d with none named "
              "by their op)" % (mode, same, len(theirs), with_frames, named))


def record_cli_frames(memhist_bin, workdir):
    """`memhist record --frames 2` reaches the recorder: no stack is longer."""
    out = os.path.join(workdir, "cli_frames2.memhist")
    code = ("import torch\n"
            "def inner(n):\n    return torch.ones(n, device='cuda')\n"
            "def outer(n):\n    return inner(n) + 1\n"
            "xs = [outer(256 * (i + 1)) for i in range(8)]\n")
    p = subprocess.run([memhist_bin, "record", "--frames", "2", "-o", out, "--", sys.executable, "-c", code],
                       capture_output=True, text=True)
    check(p.returncode == 0, "memhist record --frames 2: %s" % p.stderr.strip()[-500:])
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    pk = out + ".pickle"
    p = subprocess.run([memhist_bin, "snapshot", out, "-o", pk], capture_output=True, text=True, env=env)
    if p.returncode:
        check(False, "memhist snapshot of the --frames 2 recording: %s" % p.stderr.strip())
        return
    with open(pk, "rb") as f:
        lengths = [len(e.get("frames", [])) for e in allocs(pickle.load(f))]
    check(max(lengths, default=0) == 2 and lengths.count(2) >= 8,
          "record --frames 2: stacks cut at 2 frames (lengths %s)" % sorted(set(lengths)))


def main():
    if sys.argv[1] == "--record":
        record(sys.argv[2])
    elif sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        record(sys.argv[2])
        compare(sys.argv[1], sys.argv[2])
        record_cli_frames(sys.argv[1], sys.argv[2])
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
