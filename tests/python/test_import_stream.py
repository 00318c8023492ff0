"""`memhist import` streams large snapshots: memory follows the largest record.

- A 100 MB torch-shaped snapshot (big_snapshot.py: two devices, 1.1 M trace
  entries whose frame lists the pickle refers back to, Optimizer.step
  annotations) imports with a peak resident memory under 64 MiB (getrusage
  of the child), every entry replaying exactly onto the final segments.
- The same snapshot with its keys in another order (device_traces and the
  annotations before segments) and the same snapshot at protocol 2 import to
  the same result: `memhist snapshot` of each gives an equal pickle.
"""
import os
import pickle
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import big_snapshot  # noqa: E402
import snapshot_check as sc  # noqa: E402

D = sc.workdir("import_stream")
MIB = 1 << 20
BOUND = 64 * MIB

# The child's peak RSS, measured from a small process of its own (a child
# forked from this one would count this process's memory).
HELPER = """
import os, sys
pid = os.fork()
if pid == 0:
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 2)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[2], sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), ru.ru_maxrss * 1024)
"""


def measured(args):
    errfile = os.path.join(D, "stderr.txt")
    p = subprocess.run([sys.executable, "-S", "-c", HELPER, errfile, sc.memhist()] + args,
                       capture_output=True, text=True, timeout=600)
    rc, rss = map(int, p.stdout.split())
    with open(errfile) as f:
        return rc, f.read().strip(), rss


def test_memory_bound():
    src = os.path.join(D, "big.pickle")
    out = os.path.join(D, "big.memhist")
    entries = big_snapshot.write(src, 100, devices=2)
    size = os.path.getsize(src)
    rc, err, rss = measured(["import", src, "-o", out])
    print("%.0f MB pickle, %d entries: exit %d, peak RSS %.1f MiB (bound %d MiB)"
          % (size / 1e6, entries, rc, rss / MIB, BOUND // MIB))
    if rc != 0:
        sc.fail("import failed: %s" % err)
    want = "%d trace entries on 2 devices" % entries
    if want not in err:
        sc.fail("want %r in %r" % (want, err))
    if "contradict" in err or "read whole" in err:
        sc.fail("unexpected note: %s" % err)
    if rss >= BOUND:
        sc.fail("peak RSS %d bytes, not under %d" % (rss, BOUND))
    os.remove(src)
    os.remove(out)
    print("memory bound: ok")


def exported(snap, name, protocol):
    src = os.path.join(D, name + ".pickle")
    mh = os.path.join(D, name + ".memhist")
    back = os.path.join(D, name + ".back.pickle")
    with open(src, "wb") as f:
        pickle.dump(snap, f, protocol=protocol)
    sc.run("import", src, "-o", mh)
    sc.run("snapshot", mh, "-o", back)
    with open(back, "rb") as f:
        return pickle.load(f)


def test_layouts():
    snap = big_snapshot.snapshot(20000, devices=2)
    first = exported(snap, "torch-order", 4)
    moved = {k: snap[k] for k in ("device_traces", "external_annotations", "allocator_settings",
                                  "segments")}
    if exported(moved, "moved-keys", 4) != first:
        sc.fail("keys in another order import differently")
    if exported(snap, "protocol2", 2) != first:
        sc.fail("protocol 2 imports differently")
    if sum(len(t) for t in first["device_traces"]) != sum(len(t) for t in snap["device_traces"]):
        sc.fail("entries lost on the round trip")
    print("key orders and protocols: ok")


def main():
    test_memory_bound()
    test_layouts()


if __name__ == "__main__":
    main()
