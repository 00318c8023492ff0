"""memhist trace: Chrome trace JSON checked by Python's json and the trace rules.

Writes a .memhist file through libmemhist's writer (ctypes), runs the CLI on it
and checks the output: it parses; every B has an E; X events have a numeric dur;
counters are numeric; flows s/f are paired by id and bound ("bp":"e"); every
pid/tid used is named; launches link to their kernels; --steps and --device
windows; --into merges into a Kineto trace keeping its events and clock; bad
input gives a clear error and a non-zero exit. Exit 77 = skipped.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

T0 = 1_700_000_000_000_000_000
US = 1000
EV = {"alloc": 0, "segment_alloc": 3, "oom": 7, "driver_alloc": 9, "step_begin": 11,
      "step_end": 12, "range_begin": 15, "range_end": 16, "kernel": 17, "memcpy": 18,
      "api_call": 20}


class Event(ctypes.Structure):
    _fields_ = [("time_ns", ctypes.c_uint64), ("addr", ctypes.c_uint64),
                ("size", ctypes.c_uint64), ("stream", ctypes.c_uint64),
                ("dur_ns", ctypes.c_uint64), ("ctx", ctypes.c_uint64),
                ("pool", ctypes.c_uint32 * 2), ("stack", ctypes.c_uint32),
                ("str", ctypes.c_uint32), ("str2", ctypes.c_uint32),
                ("thread", ctypes.c_uint32), ("correlation", ctypes.c_uint32),
                ("aux", ctypes.c_uint32), ("device", ctypes.c_int16),
                ("kind", ctypes.c_uint8), ("flags", ctypes.c_uint8)]


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def find_lib():
    bindir = os.environ.get("MH_BINARY_DIR", "")
    for name in ("libmemhist.so", "libmemhist.so.0"):
        p = os.path.join(bindir, name)
        if os.path.exists(p):
            return p
    skip("libmemhist.so not built in MH_BINARY_DIR")


def write_sample(path, steps=3, devices=2):
    lib = ctypes.CDLL(find_lib())
    lib.mh_writer_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.mh_writer_intern_string.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.mh_writer_intern_string.restype = ctypes.c_int64
    lib.mh_writer_set_meta.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.mh_writer_event.argtypes = [ctypes.c_void_p, ctypes.POINTER(Event)]
    lib.mh_writer_close.argtypes = [ctypes.c_void_p]
    w = ctypes.c_void_p()
    assert lib.mh_writer_open(path.encode(), None, ctypes.byref(w)) == 0
    lib.mh_writer_set_meta(w, b"pid", b"4242")
    names = {}

    def s(text):
        if text not in names:
            names[text] = lib.mh_writer_intern_string(w, text.encode(), len(text.encode()))
        return names[text]

    def emit(kind, t, **kw):
        e = Event()
        e.kind = EV[kind]
        e.time_ns = T0 + t
        for k, v in kw.items():
            setattr(e, k, v)
        assert lib.mh_writer_event(w, ctypes.byref(e)) == 0

    corr = 100
    late = []
    for step in range(steps):
        b = step * 1000 * US
        emit("step_begin", b, aux=step)
        emit("range_begin", b + 5 * US, str=s("forward"), thread=4242)
        if step == 0:
            for d in range(devices):
                emit("segment_alloc", b + 6 * US, addr=0x7F0000000000 + d * 2**32,
                     size=20 << 20, device=d)
        for k in range(4):
            t = b + (10 + 10 * k) * US
            d = k % devices
            emit("range_begin", t, str=s("aten::mm"), thread=4242)
            emit("alloc", t + 1 * US, addr=0x7F0000000000 + d * 2**32 + k * 4096, size=4000,
                 device=d)
            emit("api_call", t + 2 * US, str=s("cudaLaunchKernel"), thread=4242, dur_ns=3000,
                 correlation=corr, aux=211, device=-1)
            emit("range_end", t + 8 * US, str=s("aten::mm"), thread=4242)
            late.append(dict(t=t + 4 * US, str=s("gemm_kernel"), dur_ns=2500, stream=7,
                             correlation=corr, device=d))
            corr += 1
        emit("driver_alloc", b + 60 * US, addr=0x7E0000000000 + step * 2**21, size=2 << 20,
             aux=3, device=0)
        emit("range_end", b + 70 * US, str=s("forward"), thread=4242)
        emit("step_end", b + 900 * US, aux=step)
        for k in late:  # CUPTI delivers device records late
            t = k.pop("t")
            emit("kernel", t, **k)
        late = []
    emit("memcpy", 80 * US, aux=1, size=1 << 20, stream=7, dur_ns=700, correlation=9999)
    emit("oom", (steps * 1000 - 50) * US, addr=1 << 20, size=64 << 20, device=0)
    assert lib.mh_writer_close(w) == 0


def run(*args, expect=0):
    cli = os.environ.get("MEMHIST")
    p = subprocess.run([cli, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == expect, f"{args}: rc {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def check_rules(doc):
    evs = doc["traceEvents"]
    assert isinstance(doc["baseTimeNanoseconds"], int)
    assert doc["displayTimeUnit"] in ("ms", "ns")
    opened = {}
    flows = {"s": {}, "f": {}}
    named_pids, named_tids, used = set(), set(), set()
    for e in evs:
        ph = e["ph"]
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if ph == "M":
            if e["name"] == "process_name":
                named_pids.add(e["pid"])
            if e["name"] == "thread_name":
                named_tids.add((e["pid"], e["tid"]))
            continue
        if ph in ("X", "i", "B", "E") and e.get("s") != "g":
            used.add((e["pid"], e["tid"]))
        if ph == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        elif ph == "B":
            opened.setdefault((e["pid"], e["tid"]), []).append(e["name"])
        elif ph == "E":
            assert opened.get((e["pid"], e["tid"])), f"E without B: {e}"
            opened[(e["pid"], e["tid"])].pop()
        elif ph == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e
        elif ph in ("s", "f"):
            assert e["cat"] == "ac2g" and e["id"] not in flows[ph], e
            flows[ph][e["id"]] = e
            if ph == "f":
                assert e.get("bp") == "e", e
    assert not any(opened.values()), f"B without E: {opened}"
    assert set(flows["s"]) == set(flows["f"]), "flows are paired"
    for pid, tid in used:
        assert pid in named_pids, f"pid {pid} has no process_name"
        assert (pid, tid) in named_tids, f"track {pid}/{tid} has no thread_name"
    return evs, flows


def main():
    if not os.environ.get("MEMHIST"):
        skip("MEMHIST (the CLI) not set")
    src = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    with tempfile.TemporaryDirectory() as tmp:
        rec = os.path.join(tmp, "run.memhist")
        write_sample(rec)
        out = os.path.join(tmp, "trace.json")
        run("trace", rec, "-o", out)
        doc = json.load(open(out))
        evs, flows = check_rules(doc)
        kernels = [e for e in evs if e.get("cat") == "kernel"]
        launches = {e["args"]["correlation"]: e for e in evs if e.get("cat") == "cuda_runtime"}
        assert len(kernels) == 12 and len(launches) == 12
        assert len(flows["s"]) == 12, "each launch links to its kernel"
        for k in kernels:
            launch = launches[k["args"]["correlation"]]
            assert launch["ts"] <= k["ts"], "kernel after its launch"
            assert flows["f"][k["args"]["correlation"]]["tid"] == k["tid"]
        assert {k["pid"] for k in kernels} == {0, 1}, "pid = device"
        assert {k["tid"] for k in kernels} == {7}, "tid = stream"
        counters = [e for e in evs if e["ph"] == "C"]
        assert {c["name"] for c in counters} == {"GPU 0 memory", "GPU 1 memory"}
        assert all(set(c["args"]) == {"allocated", "reserved", "outside allocator", "total"}
                   for c in counters)
        assert max(c["args"]["reserved"] for c in counters) >= 20 << 20
        oom = [e for e in evs if e["name"] == "OOM"]
        assert len(oom) == 1 and oom[0]["args"]["request"] == 64 << 20
        for key in ("device_free", "allocated", "reserved", "largest free block"):
            assert key in oom[0]["args"], key
        steps = [e for e in evs if e.get("cat") == "step"]
        assert [s["name"] for s in steps] == ["step 0", "step 1", "step 2"]
        for e in evs:  # microseconds with at most three decimals
            if e["ph"] != "M":
                assert round(e["ts"] * 1000) == round(e["ts"] * 1000, 6), e
        # one step and one device
        run("trace", rec, "-o", out, "--steps", "1:1", "--device", "1")
        doc = json.load(open(out))
        evs, flows = check_rules(doc)
        kernels = [e for e in evs if e.get("cat") == "kernel"]
        assert len(kernels) == 2 and {k["pid"] for k in kernels} == {1}
        assert [e["name"] for e in evs if e.get("cat") == "step"] == ["step 1"]
        assert doc["baseTimeNanoseconds"] >= T0 + 1000 * US
        assert len(flows["s"]) == 2
        # merged into a Kineto trace
        kin_path = os.path.join(src, "tests", "data", "kineto", "small_trace.json")
        kin = json.load(open(kin_path))
        merged = os.path.join(tmp, "merged.json")
        run("trace", rec, "-o", merged, "--into", kin_path)
        doc = json.load(open(merged))
        assert doc["baseTimeNanoseconds"] == kin["baseTimeNanoseconds"]
        assert doc["traceName"] == kin["traceName"]
        assert doc["deviceProperties"] == kin["deviceProperties"]
        assert doc["traceEvents"][: len(kin["traceEvents"])] == kin["traceEvents"]
        added = doc["traceEvents"][len(kin["traceEvents"]):]
        assert any(e["ph"] == "C" for e in added), "memory counters added"
        assert not any(e.get("cat") in ("kernel", "cuda_runtime") for e in added)
        lo = min(e["ts"] for e in kin["traceEvents"] if e["ph"] != "M")
        hi = max(e["ts"] + e.get("dur", 0) for e in kin["traceEvents"] if e["ph"] != "M")
        for e in added:
            if e["ph"] != "M":
                assert lo <= e["ts"] <= hi, f"clock aligned to Kineto's span: {e}"
        check_rules(doc)
        # errors: clear message, non-zero exit, nothing left behind
        bad = os.path.join(tmp, "bad.json")
        open(bad, "w").write('{"traceEvents": [1,}')
        p = run("trace", rec, "-o", os.path.join(tmp, "x.json"), "--into", bad, expect=1)
        assert "bad.json" in p.stderr and "byte" in p.stderr, p.stderr
        assert not os.path.exists(os.path.join(tmp, "x.json"))
        assert not os.path.exists(os.path.join(tmp, "x.json.tmp"))
        p = run("trace", os.path.join(tmp, "missing.memhist"), "-o", out, expect=1)
        assert "missing.memhist" in p.stderr
        run("trace", rec, expect=2)
        run("trace", rec, "-o", out, "--steps", "3:1", expect=2)
        cut = os.path.join(tmp, "cut.memhist")
        data = open(rec, "rb").read()
        open(cut, "wb").write(data[: len(data) * 2 // 3])
        p = subprocess.run([os.environ["MEMHIST"], "trace", cut, "-o", out],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode in (0, 1), p.stderr
        if p.returncode == 0:
            check_rules(json.load(open(out)))
    print("ok")


if __name__ == "__main__":
    main()
