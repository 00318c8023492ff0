"""Every `--json` output validates against its JSON Schema (docs/schema/),
and strings from a recording come out valid whatever bytes they hold.

Writes a recording (through libmemhist with ctypes) whose frame names, device
name and metadata hold bytes that are not UTF-8 and control characters, and
simulated runs with and without an OOM; then for report, oom, layers, growth,
info, diff and whatif: stdout is strict UTF-8, parses as JSON, starts with
"schema": 1 and the command, and validates against the command's schema
(one file and several for report, oom and layers). The odd names must come
out as the text \\xNN in JSON, text output, the snapshot pickle (loaded by
Python's pickle) and the Chrome trace, and text output must hold no raw
control characters. Environment: MEMHIST, MH_SOURCE_DIR, MH_BINARY_DIR.
"""
import ctypes
import json
import os
import pickle
import subprocess
import sys
import tempfile

MEMHIST = os.environ.get("MEMHIST", "")
SRC = os.environ.get("MH_SOURCE_DIR", "")
BIN = os.environ.get("MH_BINARY_DIR", "")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


try:
    import jsonschema
except ImportError:
    print("skipped: the jsonschema package is not installed (scripts/setup.sh installs it)")
    sys.exit(77)


class Event(ctypes.Structure):
    """struct mh_event of include/memhist/event.h."""
    _fields_ = [("time_ns", ctypes.c_uint64), ("addr", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("stream", ctypes.c_uint64), ("dur_ns", ctypes.c_uint64), ("ctx", ctypes.c_uint64),
                ("pool", ctypes.c_uint32 * 2), ("stack", ctypes.c_uint32), ("str", ctypes.c_uint32),
                ("str2", ctypes.c_uint32), ("thread", ctypes.c_uint32), ("correlation", ctypes.c_uint32),
                ("aux", ctypes.c_uint32), ("device", ctypes.c_int16), ("kind", ctypes.c_uint8),
                ("flags", ctypes.c_uint8)]


SEGMENT_ALLOC, ALLOC, FREE_REQUESTED, FREE_COMPLETED, STEP_BEGIN, STEP_END = 3, 0, 1, 2, 11, 12
ODD_FILE, ODD_FUNC = b"model\xff.py", b"Block\x1b[31m.forward"


def write_odd(path):
    lib = ctypes.CDLL(os.path.join(BIN, "libmemhist.so"))
    lib.mh_recorder_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.mh_intern_frame.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint32]
    lib.mh_intern_frame.restype = ctypes.c_int64
    lib.mh_intern_stack.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32), ctypes.c_size_t]
    lib.mh_intern_stack.restype = ctypes.c_int64
    lib.mh_emit.argtypes = [ctypes.c_void_p, ctypes.POINTER(Event)]
    lib.mh_recorder_set_meta.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.mh_recorder_set_device.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint64]
    lib.mh_recorder_close.argtypes = [ctypes.c_void_p]
    rec = ctypes.c_void_p()
    assert lib.mh_recorder_open(path.encode(), None, ctypes.byref(rec)) == 0
    lib.mh_recorder_set_meta(rec, b"note", b"bad\xfe\x07 byte")
    lib.mh_recorder_set_device(rec, 0, b"GPU\xff\x1b[0m", 16 << 30)
    frames = (ctypes.c_uint32 * 2)(lib.mh_intern_frame(rec, ODD_FILE, ODD_FUNC, 10),
                                   lib.mh_intern_frame(rec, b"train.py", b"caf\xc3\xa9", 5))
    stack = lib.mh_intern_stack(rec, frames, 2)
    t = [1_700_000_000_000_000_000]

    def emit(kind, addr=0, size=0, aux=0, stk=0):
        t[0] += 1000
        ev = Event(time_ns=t[0], addr=addr, size=size, aux=aux, stack=stk, kind=kind, thread=1)
        lib.mh_emit(rec, ctypes.byref(ev))

    base, mib = 1 << 30, 1 << 20
    emit(SEGMENT_ALLOC, base, 20 * mib)
    for step in (1, 2):
        emit(STEP_BEGIN, aux=step)
        for i in range(4):
            emit(ALLOC, base + i * 2 * mib, 2 * mib, stk=stack)
        for i in range(4):
            emit(FREE_REQUESTED, base + i * 2 * mib, 2 * mib, stk=stack)
            emit(FREE_COMPLETED, base + i * 2 * mib, 2 * mib, stk=stack)
        emit(STEP_END, aux=step)
    assert lib.mh_recorder_close(rec) == 0


def run(*args):
    return subprocess.run([MEMHIST] + list(args), capture_output=True, timeout=300)


def schema(name):
    with open(os.path.join(SRC, "docs", "schema", name + ".schema.json")) as f:
        return json.load(f)


def validate(command, args, what):
    p = run(command, "--json", *args)
    check(p.returncode == 0, "%s: exit %d: %s" % (what, p.returncode, p.stderr[-300:]))
    try:
        doc = json.loads(p.stdout.decode("utf-8"))  # strict: invalid UTF-8 raises
    except ValueError as e:
        check(False, "%s: not UTF-8 JSON: %s" % (what, e))
        return None
    check(list(doc)[:2] == ["schema", "command"] and doc["schema"] == 1 and doc["command"] == command,
          "%s: starts with schema 1 and the command" % what)
    errors = sorted(jsonschema.Draft202012Validator(schema(command)).iter_errors(doc), key=str)
    check(not errors, "%s: %s" % (what, "; ".join("%s at %s" % (e.message, list(e.path)) for e in errors[:3])))
    return doc


def frame_names(doc):
    return [(f["filename"], f["name"]) for fl in doc["files"] for d in fl["devices"]
            for g in d["top_at_peak"] for f in g["frames"]]


with tempfile.TemporaryDirectory() as tmp:
    odd, sim, oom = (os.path.join(tmp, n) for n in ("odd.memhist", "sim.memhist", "oom.memhist"))
    write_odd(odd)
    check(run("simulate", "--steps", "3", "-o", sim).returncode == 0, "simulate")
    check(run("simulate", "--steps", "2", "--device-memory", "8GiB", "-o", oom).returncode == 0, "simulate OOM")
    example = os.path.join(SRC, "tests", "data", "example.memhist")
    cut = os.path.join(SRC, "tests", "data", "truncated.memhist")

    doc = validate("report", [odd], "report (odd names)")
    validate("report", [sim, oom, example], "report (three files)")
    validate("oom", [oom], "oom")
    validate("oom", [odd, sim], "oom (two files, no OOM)")
    validate("layers", [sim], "layers")
    validate("layers", [odd, example], "layers (two files)")
    validate("growth", [sim], "growth")
    validate("growth", [odd, example], "growth (two files)")
    validate("info", [odd], "info (odd names)")
    validate("info", [cut], "info (cut file)")
    validate("diff", [sim, oom], "diff")
    validate("whatif", [sim], "whatif")
    validate("whatif", [sim, "--device-memory", "8GiB"], "whatif (OOM)")
    if doc:
        names = frame_names(doc)
        check(("model\\xff.py", "Block\x1b[31m.forward") in names and ("train.py", "caf\u00e9") in names,
              "report --json: invalid bytes as \\xNN, control characters and UTF-8 kept: %r" % names)
        check(doc["files"][0]["devices"][0]["name"] == "GPU\\xff\x1b[0m", "device name escaped in JSON")

    # text output: valid UTF-8, no raw control characters, odd bytes as \xNN
    for args in (["report", odd], ["info", odd], ["layers", odd], ["oom", "--at", "peak", odd]):
        p = run(*args)
        text = p.stdout.decode("utf-8", "strict") if p.returncode == 0 else ""
        check(p.returncode == 0, "%s: exit %d" % (args[0], p.returncode))
        check(not [c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0],
              "%s: no raw control characters in text output" % args[0])
    p = run("report", odd)
    check(b"model\\xff.py:10 Block\\x1b[31m.forward" in p.stdout, "report text escapes the frame: %r" % p.stdout[-600:])
    p = run("info", odd)
    check(b"bad\\xfe\\x07 byte" in p.stdout and b"GPU\\xff\\x1b[0m" in p.stdout, "info text escapes metadata")

    # the snapshot pickle loads in Python; the trace is strict UTF-8 JSON
    pk, tr = os.path.join(tmp, "odd.pickle"), os.path.join(tmp, "odd.json")
    check(run("snapshot", odd, "-o", pk).returncode == 0, "snapshot writes")
    try:
        with open(pk, "rb") as f:
            snap = pickle.load(f)
        text = repr(snap)
        check("model\\\\xff.py" in text and "caf\u00e9" in text, "pickle holds the escaped names")
    except Exception as e:
        check(False, "snapshot pickle loads: %s" % e)
    check(run("trace", odd, "-o", tr).returncode == 0, "trace writes")
    try:
        with open(tr, encoding="utf-8", errors="strict") as f:
            names = [e.get("args", {}).get("name", "") for e in json.load(f)["traceEvents"]]
        check(any("GPU\\xff\x1b[0m" in n for n in names), "trace names the device with \\xff: %r" % names[:4])
    except ValueError as e:
        check(False, "trace is strict UTF-8 JSON: %s" % e)

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
