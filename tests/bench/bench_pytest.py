#!/usr/bin/env python3
"""bench_pytest.py - what memhist's pytest plugin costs per test.

A generated suite of N small torch tests (a two-layer network, forward,
backward and an SGD step on a batch of 32) runs on the virtual device three
ways: without the plugin (the stand-ins preloaded as `memhist simulate
--print-env` gives them), with `--memhist-gpu T4` (a recording and
`memhist report --json` per test), and with a baseline compared as well
(`--memhist-baseline`, stored by an earlier run). Each way runs the suite
at two sizes; the cost per test is the slope (wall time at N2 minus at N1,
over N2 - N1), the fixed cost the rest (the restart under the virtual
device, the first CUDA initialization). Ways and sizes alternate in rounds
so drift on a shared machine hits them alike; medians over the rounds.

    python tests/bench/bench_pytest.py [ROUNDS] [N1] [N2]

Environment: MEMHIST (the CLI), MH_BINARY_DIR (its build tree, whose
python/ holds the package). Exits 77 (skipped) without pytest, torch, the
torch bridge or the virtual device.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

MEMHIST = os.environ.get("MEMHIST", "")
BIN = os.environ.get("MH_BINARY_DIR", os.path.dirname(os.path.abspath(MEMHIST)))

TEST = '''
def test_step_{i}():
    model = Net().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(32, 256, device="cuda")).sum().backward()
    opt.step()
'''
HEAD = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 512)
        self.fc2 = nn.Linear(512, 256)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
'''


def skip(why):
    print("bench_pytest: skipped: %s" % why)
    sys.exit(77)


def suite(directory, n):
    path = os.path.join(directory, "test_suite_%d.py" % n)
    with open(path, "w") as f:
        f.write(HEAD + "".join(TEST.format(i=i) for i in range(n)))
    return path


def device_env():
    out = subprocess.run([MEMHIST, "simulate", "--gpu", "T4", "--print-env"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return {k: v for k, v in (line.split("=", 1) for line in out.splitlines()) if v}


def run(way, path, work):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(PYTHONPATH=os.path.join(BIN, "python"), PYTHONDONTWRITEBYTECODE="1",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path,
            "--basetemp", os.path.join(work, "basetemp")]
    if way == "off":
        env.update(device_env())
    else:
        args += ["-p", "memhist", "--memhist-gpu", "T4"]
    if way == "baseline":
        args += ["--memhist-baseline", os.path.join(work, "baseline")]
    start = time.perf_counter()
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=work)
    elapsed = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit("bench_pytest: %s run failed:\n%s" % (way, p.stdout[-3000:]))
    return elapsed


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    n1 = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    n2 = int(sys.argv[3]) if len(sys.argv) > 3 else 105
    try:
        import pytest  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        skip("%s is not installed" % e.name)
    if not MEMHIST or not os.path.exists(os.path.join(BIN, "libmemhist_torch.so")):
        skip("the torch bridge (libmemhist_torch.so) was not built")
    if not os.path.exists(os.path.join(BIN, "vdevice", "libcudart.so.13")):
        skip("the virtual device was not built")
    ways = ("off", "memhist", "baseline")
    times = {(w, n): [] for w in ways for n in (n1, n2)}
    with tempfile.TemporaryDirectory() as work:
        paths = {n: suite(work, n) for n in (n1, n2)}
        for n in (n1, n2):
            run("baseline", paths[n], work)  # stores the baselines the "baseline" way compares
            run("off", paths[n], work)  # and warms the caches like it
        for _ in range(rounds):
            for n in (n1, n2):
                for w in ways:
                    times[(w, n)].append(run(w, paths[n], work))
    med = {k: statistics.median(v) for k, v in times.items()}
    print("suite: %d and %d tests, %d rounds, virtual T4" % (n1, n2, rounds))
    for w in ways:
        print("%s: %.2f s at %d tests, %.2f s at %d tests" % (w, med[(w, n1)], n1, med[(w, n2)], n2))
    per = {w: (med[(w, n2)] - med[(w, n1)]) / (n2 - n1) for w in ways}
    for w in ways:
        print("per_test_%s: %.3f s" % (w, per[w]))
    for w in ways[1:]:
        fixed = med[(w, n1)] - med[("off", n1)] - (per[w] - per["off"]) * n1
        print("overhead_per_test_%s: %.3f s" % (w, per[w] - per["off"]))
        print("overhead_fixed_%s: %.2f s" % (w, fixed))


if __name__ == "__main__":
    main()
