#!/usr/bin/env python3
"""test_job_origin.py - one time origin for the rank files of one job: the
earliest recording start (the headers' start_ns). Writes two rank files
through libmemhist (ctypes) whose events begin well after their recorders
opened and far apart from each other (rank 1's run starts 1.3 s into the
job), then checks that the same allocated peak has the same time, counted
from the earlier header's start, in `report --json` (rank table and per-file
text), `plot` (what it says it marked) and `trace` (the counter's timestamp,
with an instant at 0 marking the job's start); and that a single file still
counts from its own first event, and that simulated runs (whose events
predate their headers) start at their first events. Environment: MEMHIST,
MH_BINARY_DIR."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

MEMHIST = os.environ.get("MEMHIST", "")
BIN = os.environ.get("MH_BINARY_DIR", "")
FAILURES = []
SEGMENT_ALLOC, ALLOC, FREE_REQUESTED, FREE_COMPLETED, STEP_BEGIN, STEP_END = 3, 0, 1, 2, 11, 12
MIB = 1 << 20


class Event(ctypes.Structure):
    """struct mh_event of include/memhist/event.h."""
    _fields_ = [("time_ns", ctypes.c_uint64), ("addr", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("stream", ctypes.c_uint64), ("dur_ns", ctypes.c_uint64), ("ctx", ctypes.c_uint64),
                ("pool", ctypes.c_uint32 * 2), ("stack", ctypes.c_uint32), ("str", ctypes.c_uint32),
                ("str2", ctypes.c_uint32), ("thread", ctypes.c_uint32), ("correlation", ctypes.c_uint32),
                ("aux", ctypes.c_uint32), ("device", ctypes.c_int16), ("kind", ctypes.c_uint8),
                ("flags", ctypes.c_uint8)]


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def run(*args):
    p = subprocess.run([MEMHIST, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def library():
    lib = ctypes.CDLL(os.path.join(BIN, "libmemhist.so"))
    lib.mh_recorder_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.mh_emit.argtypes = [ctypes.c_void_p, ctypes.POINTER(Event)]
    lib.mh_recorder_set_meta.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.mh_recorder_close.argtypes = [ctypes.c_void_p]
    return lib


def write_rank(lib, path, rank, first_ns, peak_mib, segment_mib):
    """Two steps of allocations from first_ns; returns the allocated peak's time."""
    rec = ctypes.c_void_p()
    assert lib.mh_recorder_open(path.encode(), None, ctypes.byref(rec)) == 0
    lib.mh_recorder_set_meta(rec, b"rank", str(rank).encode())
    lib.mh_recorder_set_meta(rec, b"world_size", b"2")
    t = [first_ns]
    peak = [0, 0]

    def emit(kind, addr=0, size=0, aux=0):
        t[0] += 7_000_000  # 7 ms apart
        lib.mh_emit(rec, ctypes.byref(Event(time_ns=t[0], addr=addr, size=size, aux=aux, kind=kind, thread=1)))

    base = 1 << 30
    emit(SEGMENT_ALLOC, base, segment_mib * MIB)
    for step in (1, 2):
        emit(STEP_BEGIN, aux=step)
        for i in range(step * peak_mib // 4):
            emit(ALLOC, base + i * 2 * MIB, 2 * MIB)
            live = (i + 1) * 2
            if live > peak[0]:
                peak[:] = [live, t[0]]
        for i in range(step * peak_mib // 4):
            emit(FREE_REQUESTED, base + i * 2 * MIB, 2 * MIB)
            emit(FREE_COMPLETED, base + i * 2 * MIB, 2 * MIB)
        emit(STEP_END, aux=step)
    assert lib.mh_recorder_close(rec) == 0
    return peak[1]


def duration(ns):
    return "%.2f s" % (ns / 1e9) if ns >= 1_000_000_000 else "%.1f ms" % (ns / 1e6)


def check_trace(out, files, expect):
    rc, _, err = run("trace", *files, "-o", out)
    check(rc == 0 and "times from the job's earliest start" in err, "trace of two rank files (%s)" % err.strip())
    doc = json.load(open(out))
    events = doc["traceEvents"]
    check(any(e.get("ph") == "i" and float(e["ts"]) == 0 and "job start" in e["name"] for e in events),
          "the trace marks the job's start at ts 0")
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    for rank, want in enumerate(expect):
        counters = [e for e in events if e.get("ph") == "C" and names.get(e["pid"], "").startswith("rank %d GPU" % rank)]
        best = max(counters, key=lambda e: e["args"]["allocated"]) if counters else None
        got = float(best["ts"]) * 1000 if best else -1
        check(best is not None and abs(got - want) < 1000,
              "trace: rank %d's allocated peak at %.3f ms from the job's start (want %.3f)" % (rank, got / 1e6, want / 1e6))


def check_simulated(tmp):
    """Simulated runs' events predate their headers' start: each starts at its first event."""
    files = [os.path.join(tmp, "sim.memhist.rank%d" % r) for r in (0, 1)]
    for r, f in enumerate(files):
        rc, _, err = run("simulate", "--seed", str(r + 1), "--steps", "2", "-o", f)
        check(rc == 0, "simulated rank %d (%s)" % (r, err.strip()[:80]))
    infos = [json.loads(run("info", "--json", f)[1]) for f in files]
    firsts = [i["first_time_ns"] for i in infos]
    check(all(int(i["meta"]["start_ns"]) > t for i, t in zip(infos, firsts)),
          "the simulated files' headers start after their events")
    rc, out, _ = run("report", "--json", *files)
    got = json.loads(out)["spread"]["job_start_time_ns"] if rc == 0 else -1
    check(got == min(firsts), "simulated: the job starts at the earliest first event (%d)" % got)


def main():
    if not os.path.exists(MEMHIST) or not os.path.exists(os.path.join(BIN, "libmemhist.so")):
        print("skip: memhist or libmemhist.so not built")
        sys.exit(77)
    lib = library()
    with tempfile.TemporaryDirectory(prefix="mh-origin-") as tmp:
        files = [os.path.join(tmp, "job.memhist.rank%d" % r) for r in (0, 1)]
        now = time.time_ns()
        peaks = [write_rank(lib, files[0], 0, now + 200_000_000, 24, 64),
                 write_rank(lib, files[1], 1, now + 1_300_000_000, 40, 128)]
        starts = [int(json.loads(run("info", "--json", f)[1])["meta"]["start_ns"]) for f in files]
        origin = min(starts)
        check(starts[0] <= now + 200_000_000 and starts[1] <= now + 1_300_000_000,
              "both recordings started before their first events")
        expect = [p - origin for p in peaks]

        rc, out, err = run("report", "--json", *files)
        rep = json.loads(out) if rc == 0 else {}
        got = [row["peak_allocated"]["since_job_start_ns"] for row in rep.get("ranks", [])]
        check(got == expect, "report --json: peaks at %s ns from the job's start (want %s)" % (got, expect))
        check(rep.get("spread", {}).get("job_start_time_ns") == origin, "report --json: the job's start is the earlier header's")
        rc, out, _ = run("report", *files)
        check(rc == 0 and "times from the job's earliest start" in out, "report's text says where times count from")
        check("%s (step 2)" % duration(expect[1]) in out,
              "report's text of rank 1: its peak at %s" % duration(expect[1]))

        rc, _, err = run("plot", *files, "-o", os.path.join(tmp, "job.png"))
        check(rc == 0 and "allocated peak 40.00 MiB at %s" % duration(expect[1]) in err,
              "plot marks rank 1's peak at %s (%s)" % (duration(expect[1]), err.strip()))
        check_trace(os.path.join(tmp, "job.json"), files, expect)
        rc, _, err = run("trace", *files, "--into", files[0], "-o", os.path.join(tmp, "x.json"))
        check(rc == 2 and "--into takes one FILE" in err, "trace --into with two files is a usage error")

        check_simulated(tmp)
        rc, out, _ = run("report", "--json", files[1])
        one = json.loads(out)["ranks"][0]["peak_allocated"]["since_job_start_ns"] if rc == 0 else -1
        check(one == peaks[1] - (now + 1_300_000_000 + 7_000_000),
              "one file alone counts from its own first event (%d ns)" % one)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        sys.exit(1)


if __name__ == "__main__":
    main()
