"""`memhist import` stays within bounded memory and near-linear time.

- Memory: pickles made of tens of MiB of empty lists (with and without memo
  entries, appended one by one or in batches) must either import or fail
  with "input exceeds a limit", and the process's peak resident memory
  (getrusage of the child) must stay within the reader's bound of 64 MiB
  plus 16 bytes per input byte, plus the input itself and the program.
- Time: 8 devices x 65,000 segment_free entries (segments freed in an order
  that makes each undo land at the start of the address order) must import
  with every segment found live before the trace; the time is printed only.
- A realistic snapshot (the allocator model of snapshot_check) prints its
  reader memory per input byte, and must import under the same bound.
"""
import os
import pickle
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

D = sc.workdir("import_bounds")
MIB = 1 << 20
FLOOR = 64 * MIB
PER_BYTE = 16
# the program itself, its libraries and the importer's own arrays
SLACK = 48 * MIB


# Measures from a small process of its own: a child's peak RSS counts the
# memory of the process it was forked from, which must not be this one.
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
    """Runs memhist with args; returns (exit status, stderr, peak RSS bytes)."""
    errfile = os.path.join(D, "stderr.txt")
    p = subprocess.run([sys.executable, "-S", "-c", HELPER, errfile, sc.memhist()] + args,
                       capture_output=True, text=True, timeout=600)
    rc, rss = map(int, p.stdout.split())
    with open(errfile) as f:
        return rc, f.read().strip(), rss


def bounded(name, data, may_succeed):
    src = os.path.join(D, name + ".pickle")
    out = os.path.join(D, name + ".memhist")
    with open(src, "wb") as f:
        f.write(data)
    rc, err, rss = measured(["import", src, "-o", out])
    n = len(data)
    bound = FLOOR + PER_BYTE * n + n + SLACK
    print("%s: %.1f MiB input, exit %d, peak RSS %.0f MiB (%.1f B per input byte), bound %.0f MiB"
          % (name, n / MIB, rc, rss / MIB, rss / n, bound / MIB))
    if rc < 0:
        sc.fail("%s: killed by signal %d" % (name, -rc))
    if rc == 0 and not may_succeed:
        sc.fail("%s: a list of empty lists imported as a snapshot" % name)
    if rc not in (0, 1):
        sc.fail("%s: exit %d (want 0 or 1): %s" % (name, rc, err))
    if rc:
        print("  " + err[err.find(": ", 9) + 2:])
    if rc != 0 and ("\n" in err or not err.startswith("memhist: ")):
        sc.fail("%s: want one error line, got %r" % (name, err))
    if rss > bound:
        sc.fail("%s: peak RSS %d bytes exceeds the bound %d" % (name, rss, bound))
    os.remove(src)
    return rc, err


def empty_lists(total, memo, batch):
    """A list of empty lists, about `total` bytes: protocol 4 opcodes."""
    item = b"]\x94" if memo else b"]"
    parts = [b"\x80\x04]"]
    if batch:
        group = b"(" + item * 1000 + b"e"
        parts.append(group * (total // len(group)))
    else:
        parts.append((item + b"a") * (total // (len(item) + 1)))
    parts.append(b".")
    return b"".join(parts)


def test_memory():
    size = 40 * MIB
    bounded("empty-lists-memo-batched", empty_lists(size, True, True), False)
    bounded("empty-lists-batched", empty_lists(size, False, True), False)
    bounded("empty-lists-appended", empty_lists(size, False, False), False)
    bounded("empty-lists-stacked", b"\x80\x04" + b"]" * size + b".", True)
    bounded("memo-puts", b"\x80\x04N" + b"\x94" * size + b".", False)
    print("memory bounded: ok")


def segment_frees(devices, per_device):
    seg = 2 * MIB
    traces = []
    t = 1_700_000_000_000_000
    for d in range(devices):
        base = (0x7F0000000000 + d * (1 << 36))
        tr = []
        # freed from low to high addresses: undone from the highest down, so
        # each undo inserts below every live segment
        for i in range(per_device):
            t += 1
            tr.append({"action": "segment_free", "addr": base + i * seg, "size": seg,
                       "stream": 0, "time_us": t, "frames": []})
        traces.append(tr)
    return {"segments": [], "device_traces": traces, "allocator_settings": sc.default_settings(),
            "external_annotations": []}


def test_segment_frees():
    devices, per = 8, 65000
    src = os.path.join(D, "segment-frees.pickle")
    out = os.path.join(D, "segment-frees.memhist")
    with open(src, "wb") as f:
        pickle.dump(segment_frees(devices, per), f, protocol=4)
    t0 = time.monotonic()
    p = sc.run("import", src, "-o", out)
    took = time.monotonic() - t0
    want = "%d trace entries on %d devices, %d segments and 0 live blocks" % (
        devices * per, devices, devices * per)
    if want not in p.stderr:  # the status line
        sc.fail("segment frees: want %r in %r" % (want, p.stderr))
    if "contradict" in p.stderr:
        sc.fail("segment frees: inconsistencies reported: %s" % p.stderr.strip())
    print("%d x %d segment_free entries imported in %.2f s: ok" % (devices, per, took))


def test_realistic():
    gen = sc.Gen(devices=2)
    sc.workload(gen, steps=40, devices=2)
    data = pickle.dumps(gen.snapshot(), protocol=4)
    rc, err = bounded("realistic", data, True)
    if rc != 0:
        sc.fail("realistic snapshot: exit %d: %s" % (rc, err))
    print("realistic snapshot imported within the bound: ok")


def main():
    test_memory()
    test_segment_frees()
    test_realistic()


if __name__ == "__main__":
    main()
