"""memhist trace's Perfetto protobuf output, decoded by protobuf's own decoder
with the message classes generated from Perfetto's published perfetto_trace.proto
(perfetto_trace_pb2 of the `perfetto` package) and checked against Perfetto's
rules and against the Chrome JSON of the same recording:

- every packet parses, with no unknown field in any message;
- each packet sequence starts by clearing its incremental state; every packet
  that relies on it says so (SEQ_NEEDS_INCREMENTAL_STATE); interned ids (event
  names, categories, debug annotation names) are defined before they are used;
- every track an event is on (its track_uuid, else the sequence's default) and
  every parent is described before use, uuids once;
- times, read through the incremental clock and the clock snapshot, are the
  JSON's; per track the slices balance and are the JSON's X events (name, time,
  duration), the instants its instants, the flows its flows, and each counter
  series steps through the JSON's samples, so the maxima per GPU (allocated,
  reserved) are the JSON's and equal `memhist report --json`'s peaks;

for a hand-written recording with ops, kernels, launches, copies, driver
memory and an OOM (test_trace_chrome's sample), a simulated run, two rank files
in one trace, and --around peak|oom windows; then how the format is chosen and
the usage errors. With a trace_processor_shell binary (MEMHIST_TRACE_PROCESSOR
or PATH) the trace is also loaded by Perfetto's TraceProcessor and queried;
without one that part is skipped, saying why. Exit 77 = skipped."""
import collections
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_trace_chrome as chrome  # noqa: E402  (the sample recording and the JSON rules)

try:
    from google.protobuf import unknown_fields
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:
    print(f"SKIP: the perfetto and protobuf packages are needed ({e}); "
          "scripts/setup.sh installs them")
    sys.exit(77)

SEQ_CLEARED, SEQ_NEEDS = 1, 2
BOOTTIME, REALTIME = 6, 1
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4
FAILURES = []


def check(cond, what):
    if not cond:
        print("FAIL  " + what)
        FAILURES.append(what)
    return cond


def run(*args, expect=0):
    p = subprocess.run([os.environ["MEMHIST"], *args], capture_output=True, text=True, timeout=300)
    check(p.returncode == expect,
          f"{' '.join(args)}: rc {p.returncode}, expected {expect}\n{p.stderr}")
    return p


def read_bytes(path):
    data = open(path, "rb").read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


# ---- decoding and Perfetto's rules --------------------------------------------------------
def no_unknown_fields(msg, where):
    if len(unknown_fields.UnknownFieldSet(msg)):
        check(False, f"{where}: unknown fields in {msg.DESCRIPTOR.full_name}")
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        for v in (value if field.is_repeated else [value]):
            no_unknown_fields(v, where)


class Sequence:
    """Incremental state of one packet sequence, as a trace processor keeps it."""

    def __init__(self):
        self.names, self.cats, self.args = {}, {}, {}
        self.default_clock = BOOTTIME
        self.default_track = None
        self.clock = {}  # clock id -> (snapshot value, boottime at the snapshot, incremental)
        self.incr = {}   # incremental clock id -> its current value
        self.realtime_at_zero = None


def packet_time(seq, p, where):
    clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else seq.default_clock
    if clock == BOOTTIME:
        return p.timestamp
    if not check(clock in seq.clock, f"{where}: clock {clock} used before its snapshot"):
        return p.timestamp
    value, boot, incremental = seq.clock[clock]
    if incremental:
        seq.incr[clock] += p.timestamp
        return boot + seq.incr[clock] - value
    return boot + p.timestamp - value


def intern(table, entries, where):
    for e in entries:
        check(table.get(e.iid, e.name) == e.name, f"{where}: iid {e.iid} redefined")
        table[e.iid] = e.name


class Decoded:
    """A trace's events per track, with names, times (ns from the origin) and args."""

    def __init__(self):
        self.tracks = {}      # uuid -> TrackDescriptor
        self.events = collections.defaultdict(list)  # uuid -> [(ts, order, type, name, event)]
        self.flows_started, self.flows_ended = {}, {}
        self.realtime = set()
        self.packets = 0


def decode(path):
    data = read_bytes(path)
    trace = pb.Trace.FromString(data)
    d = Decoded()
    seqs = {}
    d.packets = len(trace.packet)
    check(len(trace.packet) > 0, f"{path}: packets")
    for i, p in enumerate(trace.packet):
        where = f"{os.path.basename(path)} packet {i}"
        no_unknown_fields(p, where)
        sid = p.trusted_packet_sequence_id
        check(sid > 0, f"{where}: has a sequence id")
        if p.sequence_flags & SEQ_CLEARED:
            seqs[sid] = Sequence()
        seq = seqs.get(sid)
        if p.HasField("trace_packet_defaults"):
            check(p.sequence_flags & SEQ_CLEARED, f"{where}: defaults only where state is cleared")
            defaults = p.trace_packet_defaults
            if defaults.HasField("timestamp_clock_id"):
                seq.default_clock = defaults.timestamp_clock_id
            if defaults.track_event_defaults.HasField("track_uuid"):
                seq.default_track = defaults.track_event_defaults.track_uuid
        needs = p.HasField("track_event") or p.HasField("interned_data")
        if needs and not check(seq is not None,
                               f"{where}: incremental state used before it is cleared"):
            continue
        if needs and not p.sequence_flags & SEQ_CLEARED:
            check(p.sequence_flags & SEQ_NEEDS, f"{where}: says it needs the incremental state")
        if p.HasField("interned_data"):
            intern(seq.names, p.interned_data.event_names, where)
            intern(seq.cats, p.interned_data.event_categories, where)
            intern(seq.args, p.interned_data.debug_annotation_names, where)
        if p.HasField("clock_snapshot"):
            clocks = {c.clock_id: c for c in p.clock_snapshot.clocks}
            check(BOOTTIME in clocks, f"{where}: the snapshot gives the trace clock")
            boot = clocks[BOOTTIME].timestamp
            for cid, c in clocks.items():
                seq.clock[cid] = (c.timestamp, boot, c.is_incremental)
                if c.is_incremental:
                    check(cid >= 64, f"{where}: incremental clocks are sequence-scoped")
                    seq.incr[cid] = c.timestamp  # the first delta counts from here
            if REALTIME in clocks:
                d.realtime.add(clocks[REALTIME].timestamp - boot)
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            check(td.uuid not in d.tracks, f"{where}: uuid {td.uuid} described once")
            if td.HasField("parent_uuid"):
                check(td.parent_uuid in d.tracks,
                      f"{where}: parent {td.parent_uuid} described first")
            d.tracks[td.uuid] = td
        if p.HasField("track_event"):
            track_event(d, seq, p, i, where)
    return d


def track_event(d, seq, p, order, where):
    te = p.track_event
    check(p.HasField("timestamp"), f"{where}: an event has a time")
    ts = packet_time(seq, p, where)
    uuid = te.track_uuid if te.HasField("track_uuid") else seq.default_track
    check(uuid in d.tracks, f"{where}: track {uuid} described before use")
    name = None
    if te.HasField("name_iid"):
        check(te.name_iid in seq.names, f"{where}: name iid {te.name_iid} defined before use")
        name = seq.names.get(te.name_iid)
    elif te.HasField("name"):
        name = te.name
    for c in te.category_iids:
        check(c in seq.cats, f"{where}: category iid {c} defined before use")
    args = {}
    for a in te.debug_annotations:
        check(a.name_iid in seq.args, f"{where}: annotation name iid {a.name_iid} defined")
        args[seq.args.get(a.name_iid)] = getattr(a, a.WhichOneof("value"))
    for f in te.flow_ids:
        check(f not in d.flows_started, f"{where}: flow {f} started once")
        d.flows_started[f] = ts
    for f in te.terminating_flow_ids:
        d.flows_ended[f] = ts
    d.events[uuid].append((ts, order, te.type, name, args,
                           te.counter_value if te.type == COUNTER else None))


def track_name(d, uuid):
    td = d.tracks[uuid]
    if td.HasField("thread"):
        return td.thread.thread_name
    if td.HasField("process"):
        return td.process.process_name
    return td.name


def slices(d):
    """Per track, events in time order (file order on ties, as a sorter keeps them):
    slices [(track, name, ts, dur)], instants [(track, name, ts)], flows checked."""
    out, instants = [], []
    for uuid, evs in d.events.items():
        stack = []
        for ts, _, typ, name, args, _ in sorted(evs, key=lambda e: (e[0], e[1])):
            if typ == BEGIN:
                stack.append((name, ts, args))
            elif typ == END:
                if check(stack, f"track {track_name(d, uuid)}: an end with nothing open at {ts}"):
                    n, b, a = stack.pop()
                    check(ts >= b, f"track {track_name(d, uuid)}: {n} ends before it begins")
                    out.append((uuid, n, b, ts - b, a))
            elif typ == INSTANT:
                instants.append((uuid, name, ts, args))
        check(not stack, f"track {track_name(d, uuid)}: slices left open: {stack}")
    for f, ts in d.flows_ended.items():
        if check(f in d.flows_started, f"flow {f} ends without a start"):
            check(d.flows_started[f] <= ts, f"flow {f} ends before it starts")
    return out, instants


def counter_series(d):
    """{counter track name: [(ts, value)] in time order}."""
    series = {}
    for uuid, evs in d.events.items():
        td = d.tracks[uuid]
        if td.HasField("counter"):
            series[td.name] = [(e[0], e[5]) for e in sorted(evs, key=lambda e: (e[0], e[1]))]
        else:
            check(all(e[2] != COUNTER for e in evs),
                  f"{track_name(d, uuid)}: counter values only on counter tracks")
    return series


# ---- the same trace as JSON ------------------------------------------------------------------
def ns(us):
    return round(us * 1000)


def json_view(path):
    doc = json.load(open(path))
    evs, flows = chrome.check_rules(doc)
    gpu_of = {}  # pid -> "rank 1 GPU 0"
    for e in evs:
        if e["ph"] == "M" and e["name"] == "process_name" and "GPU" in e["args"]["name"]:
            gpu_of[e["pid"]] = e["args"]["name"].split(" (")[0]
    xs = collections.Counter((e["name"], ns(e["ts"]), ns(e["dur"])) for e in evs if e["ph"] == "X")
    inst = collections.Counter((e["name"], ns(e["ts"])) for e in evs if e["ph"] == "i")
    counters = collections.defaultdict(list)
    for e in evs:
        if e["ph"] == "C":
            for k, v in e["args"].items():
                counters[f"{gpu_of[e['pid']]} {k}"].append((ns(e["ts"]), v))
    return doc, xs, inst, counters, flows


def value_at(series, ts):
    """The counter's value at ts: the last sample at or before it (a viewer holds it)."""
    v = None
    for t, x in series:
        if t > ts:
            break
        v = x
    return v


def compare(pf_path, json_path, what):
    d = decode(pf_path)
    sl, inst = slices(d)
    doc, xs, jinst, jcounters, jflows = json_view(json_path)
    check(d.realtime == {doc["baseTimeNanoseconds"]},
          f"{what}: the clock snapshot puts the origin at the JSON's base time")
    got = collections.Counter((n, b, dur) for _, n, b, dur, _ in sl)
    check(got == xs, f"{what}: slices are the JSON's X events: only protobuf "
          f"{sorted((got - xs).elements())[:5]}, only JSON {sorted((xs - got).elements())[:5]}")
    gi = collections.Counter((n, ts) for _, n, ts, _ in inst)
    # the job's start is a global instant in JSON too
    check(gi == jinst, f"{what}: instants are the JSON's: {sorted((gi - jinst).elements())[:5]} / "
          f"{sorted((jinst - gi).elements())[:5]}")
    check(len(d.flows_started) == len(jflows["s"]) and len(d.flows_ended) == len(jflows["f"]),
          f"{what}: flows as in the JSON ({len(d.flows_started)} vs {len(jflows['s'])})")
    series = counter_series(d)
    check(set(series) == set(jcounters), f"{what}: counter tracks {sorted(series)} vs "
          f"{sorted(jcounters)}")
    for name, samples in jcounters.items():
        s = series.get(name, [])
        bad = [(t, v, value_at(s, t)) for t, v in samples if value_at(s, t) != v]
        check(not bad, f"{what}: {name} holds the JSON's values at its samples: {bad[:3]}")
        check(s and max(v for _, v in s) == max(v for _, v in samples), f"{what}: {name} maximum")
    oom = [a for _, n, _, a in inst if n == "OOM"]
    joom = [e for e in doc["traceEvents"] if e.get("name") == "OOM"]
    check(len(oom) == len(joom), f"{what}: OOMs")
    for a, j in zip(oom, joom):
        for k in ("request", "device_free", "allocated", "reserved", "largest free block",
                  "reserved but unallocated"):
            check(a.get(k) == j["args"][k], f"{what}: OOM {k}: {a.get(k)} vs {j['args'][k]}")
    return d, series, sl, inst


def maxima_equal_report(series, files, what):
    """Each GPU's allocated and reserved maxima are `memhist report --json`'s peaks."""
    rep = json.loads(run("report", "--json", *files).stdout)
    for i, f in enumerate(rep["files"]):
        for dev in f["devices"]:
            gpu = f"{LABELS.get(files[i], '')}GPU {dev['device']}"
            for series_name, peak in (("allocated", "peak_allocated"),
                                      ("reserved", "peak_reserved")):
                s = series.get(f"{gpu} {series_name}")
                if check(s, f"{what}: a {gpu} {series_name} track"):
                    top = max(v for _, v in s)
                    check(top == dev[peak], f"{what}: {gpu} {series_name} max {top} = report's "
                          f"{peak} {dev[peak]}")


LABELS = {}  # rank file -> the label its tracks' names start with


def check_trace_processor(path, series, nslices, what):
    binary = os.environ.get("MEMHIST_TRACE_PROCESSOR") or shutil.which("trace_processor_shell") \
        or shutil.which("trace_processor")
    if not binary:
        print(f"skip  {what}: TraceProcessor not run: no trace_processor_shell binary here "
              "(set MEMHIST_TRACE_PROCESSOR=PATH; the perfetto package fetches one from the "
              "network at run time, which this machine and CI cannot reach)")
        return
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
    tp = TraceProcessor(trace=path, config=TraceProcessorConfig(bin_path=binary))
    try:
        rows = tp.query("select t.name as name, max(c.value) as v from counter c "
                        "join counter_track t on c.track_id = t.id group by t.name")
        got = {r.name: r.v for r in rows}
        for name, s in series.items():
            check(got.get(name) == max(v for _, v in s), f"{what}: TraceProcessor's {name} max")
        n = next(iter(tp.query("select count(*) as n from slice where dur > 0 or dur = 0")))
        check(n.n >= nslices, f"{what}: TraceProcessor has the slices ({n.n} >= {nslices})")
        stats = tp.query("select name, value from stats where severity in ('error', 'data_loss') "
                         "and value > 0")
        errs = [(r.name, r.value) for r in stats]
        check(not errs, f"{what}: TraceProcessor reports no import errors: {errs}")
    finally:
        tp.close()


# ---- recordings ---------------------------------------------------------------------------------
def rank_file(path, rank, start_ns):
    """A rank's recording through libmemhist's writer: steps of allocations, kernels
    launched from op ranges (flows), named after its rank."""
    import ctypes
    lib = ctypes.CDLL(chrome.find_lib())
    lib.mh_writer_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                   ctypes.POINTER(ctypes.c_void_p)]
    lib.mh_writer_intern_string.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.mh_writer_intern_string.restype = ctypes.c_int64
    lib.mh_writer_set_meta.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.mh_writer_event.argtypes = [ctypes.c_void_p, ctypes.POINTER(chrome.Event)]
    lib.mh_writer_close.argtypes = [ctypes.c_void_p]
    w = ctypes.c_void_p()
    assert lib.mh_writer_open(path.encode(), None, ctypes.byref(w)) == 0
    lib.mh_writer_set_meta(w, b"pid", str(5000 + rank).encode())
    lib.mh_writer_set_meta(w, b"rank", str(rank).encode())
    names = {s: lib.mh_writer_intern_string(w, s.encode(), len(s)) for s in
             ("aten::mm", "cudaLaunchKernel", "gemm")}

    kinds = dict(chrome.EV, free_requested=1, free_completed=2)

    def emit(kind, t, **kw):
        e = chrome.Event(kind=kinds[kind], time_ns=start_ns + t, **kw)
        assert lib.mh_writer_event(w, ctypes.byref(e)) == 0

    us = 1000
    base = 0x7F0000000000
    emit("segment_alloc", 0, addr=base, size=64 << 20)
    live = []
    for step in range(4):
        b = (step + 1) * 1000 * us
        emit("step_begin", b, aux=step)
        for k in range(6 + rank + step):
            t = b + (10 + 20 * k) * us
            emit("range_begin", t, str=names["aten::mm"], thread=100 + rank)
            addr = base + (len(live) % 60) * (1 << 20)
            emit("alloc", t + us, addr=addr, size=(k + 1) << 18)
            live.append(addr)
            emit("api_call", t + 2 * us, str=names["cudaLaunchKernel"], thread=100 + rank,
                 dur_ns=3000, correlation=1000 * step + k + 1, aux=211, device=-1)
            emit("range_end", t + 8 * us, str=names["aten::mm"], thread=100 + rank)
        while len(live) > 3:
            addr = live.pop()
            emit("free_requested", b + 500 * us + len(live), addr=addr)
            emit("free_completed", b + 500 * us + len(live) + 500, addr=addr)
        for k in range(6 + rank + step):
            emit("kernel", b + (14 + 20 * k) * us, str=names["gemm"], dur_ns=2500, stream=7,
                 correlation=1000 * step + k + 1)
        emit("step_end", b + 900 * us, aux=step)
    assert lib.mh_writer_close(w) == 0


# ---- the cases ------------------------------------------------------------------------------
def case_sample(tmp):
    rec = os.path.join(tmp, "sample.memhist")
    chrome.write_sample(rec)
    pf, js = os.path.join(tmp, "sample.pftrace"), os.path.join(tmp, "sample.json")
    run("trace", rec, "-o", pf)
    run("trace", rec, "-o", js)
    d, series, sl, inst = compare(pf, js, "sample")
    check(sum(1 for _, n, *_ in sl if n == "gemm_kernel") == 12, "sample: 12 kernels")
    check(len(d.flows_started) == 12, "sample: 12 launch->kernel flows")
    api = [td for td in d.tracks.values() if td.name == "CUDA API"]
    check(len(api) == 1 and d.tracks[api[0].parent_uuid].HasField("thread"),
          "sample: the CUDA API track is under its thread")
    check(any(td.HasField("process") and td.process.pid == 4242 for td in d.tracks.values()),
          "sample: the host process has the recording's pid")
    check_trace_processor(pf, series, len(sl), "sample")
    # a window and a device, and the memory-only view's equivalents
    run("trace", rec, "-o", pf, "--steps", "1:1", "--device", "1")
    run("trace", rec, "-o", js, "--steps", "1:1", "--device", "1")
    compare(pf, js, "sample --steps 1:1 --device 1")
    # gzip: the same packets compressed
    gz, whole = os.path.join(tmp, "sample.pftrace.gz"), os.path.join(tmp, "whole.json")
    run("trace", rec, "-o", gz)
    run("trace", rec, "-o", whole)
    check(open(gz, "rb").read(2) == b"\x1f\x8b", ".pftrace.gz is gzip")
    compare(gz, whole, "sample .pftrace.gz")
    return rec


def case_simulated(tmp):
    rec = os.path.join(tmp, "sim.memhist")
    run("simulate", "--steps", "4", "-o", rec)
    pf, js = os.path.join(tmp, "sim.pftrace"), os.path.join(tmp, "sim.json")
    run("trace", rec, "-o", pf)
    run("trace", rec, "-o", js)
    d, series, sl, _ = compare(pf, js, "simulated")
    maxima_equal_report(series, [rec], "simulated")
    check(os.path.getsize(pf) * 4 < os.path.getsize(js),
          f"simulated: protobuf several times smaller ({os.path.getsize(pf)} vs "
          f"{os.path.getsize(js)} bytes)")
    check_trace_processor(pf, series, len(sl), "simulated")
    # --around peak: the step before, of and after the report's peak step
    rep = json.loads(run("report", "--json", rec).stdout)["files"][0]["devices"][0]
    s = rep["peak_allocated_step"]
    p = run("trace", rec, "-o", pf, "--around", "peak")
    lo = max(s - 1, -1)
    check(f"--steps {lo}:{s + 1} around the allocated peak of GPU 0" in p.stderr, p.stderr)
    run("trace", rec, "-o", js, "--steps", f"{lo}:{s + 1}")
    d, series, sl, _ = compare(pf, js, "simulated --around peak")
    steps = sorted(n for _, n, *_ in sl if n.startswith("step "))
    check(steps == [f"step {k}" for k in range(max(lo, 0), min(s + 1, 3) + 1)],
          f"simulated --around peak: steps {steps}")
    check(max(v for _, v in series["GPU 0 allocated"]) == rep["peak_allocated"],
          "simulated --around peak: the window holds the peak")
    return rec


def case_oom(tmp):
    rec = os.path.join(tmp, "oom.memhist")
    # the run stops at its OOM, as a real one would (and says so with its exit code)
    subprocess.run([os.environ["MEMHIST"], "simulate", "--steps", "3", "--device-memory", "3GiB",
                    "-o", rec], capture_output=True, timeout=300)
    pf, js = os.path.join(tmp, "oom.pftrace"), os.path.join(tmp, "oom.json")
    p = run("trace", rec, "-o", pf, "--around", "oom")
    check("around the last OOM on GPU 0 (request" in p.stderr, p.stderr)
    run("trace", rec, "-o", js, "--around", "oom")
    d, _, _, inst = compare(pf, js, "--around oom")
    check(sum(1 for _, n, *_ in inst if n == "OOM") == 1, "--around oom: the OOM is in the window")
    ooms = [td for td in d.tracks.values() if td.name == "OOMs"]
    check(len(ooms) == 1, "--around oom: an OOMs track")
    p = run("trace", os.path.join(tmp, "sim.memhist"), "-o", pf, "--around", "oom", expect=1)
    check("no OOM" in p.stderr, f"--around oom without an OOM: {p.stderr}")


def case_ranks(tmp):
    files = [os.path.join(tmp, f"job.memhist.rank{r}") for r in (0, 1)]
    for r, f in enumerate(files):
        rank_file(f, r, 1_700_000_000_000_000_000 + r * 1_300_000_000)
        LABELS[f] = f"rank {r} "
    pf, js = os.path.join(tmp, "job.pftrace"), os.path.join(tmp, "job.json")
    run("trace", *files, "-o", pf)
    run("trace", *files, "-o", js)
    d, series, sl, inst = compare(pf, js, "two ranks")
    check({n for _, n, *_ in inst if n.startswith("job start")} and
          min(ts for _, n, ts, _ in inst if n.startswith("job start")) == 0,
          "two ranks: the job's start at 0")
    procs = sorted(td.process.process_name for td in d.tracks.values() if td.HasField("process"))
    check(procs == ["rank 0 host", "rank 1 host"], f"two ranks: processes named per rank {procs}")
    check(len(d.flows_started) == sum(6 + r + s for r in (0, 1) for s in range(4)),
          "two ranks: every launch's flow, ids apart per file")
    uuids = {(u - 1) % 64 for u in d.tracks}
    check(uuids == {0, 1}, f"two ranks: each file's tracks in its own uuid space {uuids}")
    maxima_equal_report(series, files, "two ranks")
    check_trace_processor(pf, series, len(sl), "two ranks")


def case_choice(tmp, rec):
    def kind(path):
        data = read_bytes(path)
        return "json" if data[:1] == b"{" else "perfetto" if data[:1] == b"\x0a" else "?"

    out = os.path.join(tmp, "out")
    run("trace", rec, "-o", out)
    check(kind(out) == "json", "no extension, small: JSON")
    p = run("trace", rec, "-o", out, "--warn-size", "1KiB")
    check(kind(out) == "perfetto" and "Perfetto protobuf (as JSON it would be about" in p.stderr,
          f"no extension, larger than --warn-size: protobuf, said so: {p.stderr}")
    p = run("trace", rec, "-o", out + ".json", "--warn-size", "1KiB")
    check(kind(out + ".json") == "json" and "-o OUT.pftrace" in p.stderr and "--around peak" in
          p.stderr, f"a .json past the limit warns with the ways out: {p.stderr}")
    run("trace", rec, "-o", out + ".pftrace", "--format", "json")
    check(kind(out + ".pftrace") == "json", "--format overrides the extension")
    run("trace", rec, "-o", out + ".perfetto-trace")
    check(kind(out + ".perfetto-trace") == "perfetto", ".perfetto-trace: protobuf")
    p = subprocess.run([os.environ["MEMHIST"], "trace", rec, "-o", "-", "--format", "perfetto"],
                       capture_output=True, timeout=120)
    check(p.returncode == 0 and p.stdout[:1] == b"\x0a", "-o - --format perfetto: to stdout")
    for args, says in ((["--format", "xml"], "--format is 'perfetto' or 'json', not 'xml'"),
                       (["--around", "max"], "--around takes 'peak' or 'oom', not 'max'"),
                       (["--around", "peak", "--steps", "1:2"], "cannot be combined"),
                       (["--pretty", "--format", "perfetto"], "--pretty indents JSON"),
                       (["--into", rec], "--into writes a torch.profiler trace")):
        p = run("trace", rec, "-o", out + ".pftrace", *args, expect=2)
        check(says in p.stderr, f"{args}: {p.stderr.strip()}")
    h = run("trace", "--help").stdout
    check("--format perfetto|json" in h and "--around peak|oom" in h, "the help shows both options")


def main():
    if not os.environ.get("MEMHIST"):
        chrome.skip("MEMHIST (the CLI) not set")
    with tempfile.TemporaryDirectory() as tmp:
        rec = case_sample(tmp)
        case_simulated(tmp)
        case_oom(tmp)
        case_ranks(tmp)
        case_choice(tmp, rec)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
