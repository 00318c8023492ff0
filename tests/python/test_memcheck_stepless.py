"""`layers` and `oom` on a recording without step markers read no
uninitialised memory.

An imported snapshot with no annotations has no steps; `layers` and the
layer part of `oom --at peak` used to index per-step groups that were never
filled (the recompute column printed heap garbage). Runs both, text and
JSON, under Valgrind memcheck with --error-exitcode, and checks the JSON
answers are the same on a second run. Skips when valgrind is absent
(scripts/setup.sh installs it).
"""
import os
import pickle
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402


def main():
    if not shutil.which("valgrind"):
        sc.skip("valgrind is not installed")
    d = sc.workdir("memcheck_stepless")
    g = sc.Gen(metadata=False)  # torch-shaped, no annotations: no steps
    live = [g.alloc(0, (i + 1) * (1 << 20) + 100, stack=i) for i in range(6)]
    for a in live[::2]:
        g.free(0, a)
    src = os.path.join(d, "stepless.pickle")
    with open(src, "wb") as f:
        pickle.dump(g.snapshot(), f, protocol=4)
    mh = os.path.join(d, "stepless.memhist")
    sc.run("import", src, "-o", mh)
    outs = {}
    for args in (["layers", mh], ["layers", "--json", mh], ["oom", "--at", "peak", mh]):
        p = subprocess.run(["valgrind", "-q", "--error-exitcode=99", sc.memhist()] + args,
                           capture_output=True, text=True, timeout=600)
        if p.returncode == 99:
            sc.fail("memhist %s: memory errors:\n%s" % (" ".join(args), p.stderr[-3000:]))
        outs[" ".join(args)] = p.stdout
    again = sc.run("layers", "--json", mh).stdout
    if again != outs["layers --json " + mh]:
        sc.fail("layers --json differs from run to run")
    print("layers and oom on a step-less recording under memcheck: ok")


if __name__ == "__main__":
    main()
