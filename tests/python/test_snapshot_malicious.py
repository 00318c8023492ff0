"""`memhist import` refuses malicious and malformed pickles cleanly.

Every case must end with exit status 1 (never a signal, never a hang), one
error line naming the problem (the opcode and its byte offset for pickle
level problems, the path for schema problems), no output file, and nothing
executed: payloads calling os.system would create a marker file.
"""
import os
import pickle
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

D = sc.workdir("snapshot_malicious")
MARKER = os.path.join(D, "pwned")


class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + MARKER,))


class Obj:
    def __init__(self):
        self.x = 1


def refused(name, data, *needles):
    src = os.path.join(D, name + ".pickle")
    out = os.path.join(D, name + ".memhist")
    with open(src, "wb") as f:
        f.write(data)
    if os.path.exists(out):
        os.remove(out)
    p = sc.run("import", src, "-o", out, check=False)
    if p.returncode != 1:
        sc.fail("%s: exit status %d (want 1); stderr: %s" % (name, p.returncode, p.stderr))
    err = p.stderr.strip()
    if "\n" in err or not err.startswith("memhist: "):
        sc.fail("%s: want one error line, got %r" % (name, err))
    for n in needles:
        if n not in err:
            sc.fail("%s: error %r does not mention %r" % (name, err, n))
    if os.path.exists(out):
        sc.fail("%s: an output file was left behind" % name)
    if os.path.exists(MARKER):
        sc.fail("%s: the payload ran" % name)
    return err


def small_snapshot():
    t = [{"action": "segment_alloc", "addr": 1 << 40, "size": 2 << 20, "stream": 0,
          "time_us": 10, "frames": [sc.frame("f", "a.py", 3)]},
         {"action": "alloc", "addr": 1 << 40, "size": 1000, "stream": 0, "time_us": 11,
          "frames": [sc.frame("f", "a.py", 3)], "user_metadata": "step 1 forward"}]
    seg = {"device": 0, "address": 1 << 40, "total_size": 2 << 20, "allocated_size": 1024,
           "active_size": 1024, "requested_size": 1000, "stream": 0, "segment_type": "small",
           "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
           "blocks": [{"address": 1 << 40, "size": 1024, "requested_size": 1000,
                       "state": "active_allocated", "frames": t[1]["frames"]},
                      {"address": (1 << 40) + 1024, "size": (2 << 20) - 1024,
                       "requested_size": 0, "state": "inactive", "frames": []}]}
    return {"segments": [seg], "device_traces": [t], "allocator_settings": sc.default_settings(),
            "external_annotations": []}


def test_code_execution():
    for proto in (0, 2, 4, 5):
        data = pickle.dumps(Evil(), protocol=proto)
        op = "GLOBAL" if proto < 4 else "STACK_GLOBAL"
        refused("evil-p%d" % proto, data, op, "offset", "refused")
        snap = small_snapshot()
        snap["device_traces"][0][1]["frames"] = [Evil()]
        refused("evil-nested-p%d" % proto, pickle.dumps(snap, protocol=proto), op)
        refused("object-p%d" % proto, pickle.dumps(Obj(), protocol=proto), op)
    # each opcode that imports or calls, in the smallest form that reaches it
    for op, name in ((b"R", "REDUCE"), (b"b", "BUILD"), (b"\x81", "NEWOBJ"),
                     (b"\x92", "NEWOBJ_EX"), (b"o", "OBJ"), (b"\x82\x01", "EXT1"),
                     (b"\x83\x01\x00", "EXT2"), (b"\x84\x01\x00\x00\x00", "EXT4"),
                     (b"Q", "BINPERSID"), (b"Pfoo\n", "PERSID"), (b"ios\nsystem\n", "INST"),
                     (b"\x93", "STACK_GLOBAL"), (b"cos\nsystem\n", "GLOBAL")):
        data = b"\x80\x02(N" + op + b"."
        refused("op-" + name, data, name, "offset 4")
    print("code execution refused: ok")


def test_truncated():
    data = pickle.dumps(small_snapshot(), protocol=4)
    for n in range(len(data) - 1):
        refused("cut", data[:n])
    data2 = pickle.dumps(small_snapshot(), protocol=2)
    for n in range(0, len(data2) - 1, 7):
        refused("cut2", data2[:n])
    print("truncated at every byte (%d + %d cases): ok" % (len(data) - 1, len(data2) // 7))


def test_limits():
    big = b"\x80\x04"
    refused("huge-binunicode", big + b"X" + struct.pack("<I", 0xFFFFFFFF) + b"abc.", "BINUNICODE")
    refused("huge-binunicode8", big + b"\x8d" + struct.pack("<Q", 1 << 62) + b"a.",
            "BINUNICODE8")
    refused("huge-binbytes8", big + b"\x8e" + struct.pack("<Q", (1 << 64) - 1) + b".",
            "BINBYTES8")
    refused("huge-long4", big + b"\x8b" + struct.pack("<I", 0x7FFFFFFF) + b".", "LONG4")
    refused("huge-frame", big + b"\x95" + struct.pack("<Q", 1 << 60) + b"N.", "FRAME")
    refused("huge-memo", big + b"N" + b"r" + struct.pack("<I", 0xFFFFFFF0) + b".",
            "LONG_BINPUT")
    refused("missing-memo", big + b"h\x05.", "BINGET")
    refused("deep-marks", big + b"(" * 100000 + b".", "MARK")
    refused("deep-lists", big + b"]" * 400 + b"a" * 399 + b".", "nested")
    nested = []
    for _ in range(400):
        nested = [nested]
    refused("deep-pickle", pickle.dumps({"segments": nested}, protocol=4), "nested")
    cyclic = []
    cyclic.append(cyclic)
    refused("cycle", pickle.dumps({"segments": cyclic}, protocol=4), "itself")
    refused("unknown-op", big + b"\xff.", "unknown opcode 0xff")
    refused("proto-9", b"\x80\x09N.", "protocol 9")
    refused("empty", b"", "ends before")
    refused("stop-empty", big + b".", "underflow")
    refused("bad-utf8", big + b"\x8c\x02\xff\xfe.", "UTF-8")
    buf = pickle.PickleBuffer(b"abc")
    oob = pickle.dumps({"segments": [buf]}, protocol=5, buffer_callback=lambda b: False)
    refused("out-of-band", oob, "NEXT_BUFFER")
    print("limits: ok")


def test_schema():
    def snap_with(**kw):
        s = small_snapshot()
        s.update(kw)
        return pickle.dumps(s, protocol=4)

    refused("not-dict", pickle.dumps(42), "int")
    refused("no-keys", pickle.dumps({"a": 1}), "not a memory snapshot")
    refused("segments-str", snap_with(segments="abc"), "'segments' is str")
    refused("traces-ints", snap_with(device_traces=[[1, 2]]), "device_traces[0][0]")
    s = small_snapshot()
    s["segments"][0]["blocks"][0]["size"] = -5
    refused("negative-size", pickle.dumps(s), "segments[0].blocks[0]", "'size'")
    s = small_snapshot()
    s["device_traces"][0][1]["frames"] = [{"filename": 3, "name": "x", "line": 1}]
    refused("frame-types", pickle.dumps(s), "device_traces[0][1]", "frame")
    s = small_snapshot()
    s["segments"][0]["blocks"][0]["state"] = "weird"
    refused("block-state", pickle.dumps(s), "unknown block state")
    s = small_snapshot()
    t = s["device_traces"][0]
    s["device_traces"] = [t] * 3000
    refused("shared-trace", pickle.dumps(s), "appears twice")
    s = small_snapshot()
    s["segments"] = s["segments"] * 2
    refused("shared-segment", pickle.dumps(s), "segments[1]", "appears twice")
    s = small_snapshot()
    s["device_traces"] = [[]] * 5000
    refused("many-devices", pickle.dumps(s), "devices")
    print("schema errors: ok")


def test_accepted_data():
    """Protocol 5 in-band data (BYTEARRAY8), sets and bytes in unused keys load."""
    s = small_snapshot()
    s["extra"] = [bytearray(b"xyz"), {1, 2}, frozenset({3}), b"raw", 1.5, None, 2 ** 100]
    src = os.path.join(D, "extra.pickle")
    with open(src, "wb") as f:
        pickle.dump(s, f, protocol=5)
    sc.run("import", src, "-o", os.path.join(D, "extra.memhist"))
    print("protocol 5 in-band data accepted: ok")


def main():
    if os.path.exists(MARKER):
        os.remove(MARKER)
    test_code_execution()
    test_truncated()
    test_limits()
    test_schema()
    test_accepted_data()


if __name__ == "__main__":
    main()
