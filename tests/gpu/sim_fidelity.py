#!/usr/bin/env python3
"""sim_fidelity.py - how faithfully the simulator reproduces the real CUDA
caching allocator (needs a GPU; exits 77, skipped, without one).

Runs a small transformer training loop with torch's own memory history
(torch.cuda.memory._record_memory_history), takes torch.cuda.memory._snapshot(),
converts the trace of device 0 into a .memhist file through libmemhist's C
writer (ctypes), replays it with `memhist whatif --json` under the recorded
settings and prints how many allocator events the simulator reproduced exactly
(kind, address, size, order).

Environment: MEMHIST (path of the memhist CLI) and MEMHIST_LIB (path of
libmemhist.so); otherwise both are looked up in MH_BINARY_DIR (default
./build). PYTORCH_CUDA_ALLOC_CONF is honoured, so the same check runs with
e.g. expandable_segments:True.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
KINDS = {"alloc": 0, "free_requested": 1, "free_completed": 2, "segment_alloc": 3,
         "segment_free": 4, "segment_map": 5, "segment_unmap": 6, "oom": 7}


class Event(ctypes.Structure):
    """struct mh_event of include/memhist/event.h (88 bytes)."""
    _fields_ = [("time_ns", ctypes.c_uint64), ("addr", ctypes.c_uint64),
                ("size", ctypes.c_uint64), ("stream", ctypes.c_uint64),
                ("dur_ns", ctypes.c_uint64), ("ctx", ctypes.c_uint64),
                ("pool", ctypes.c_uint32 * 2), ("stack", ctypes.c_uint32),
                ("str", ctypes.c_uint32), ("str2", ctypes.c_uint32),
                ("thread", ctypes.c_uint32), ("correlation", ctypes.c_uint32),
                ("aux", ctypes.c_uint32), ("device", ctypes.c_int16),
                ("kind", ctypes.c_uint8), ("flags", ctypes.c_uint8)]


class WriterOpts(ctypes.Structure):
    _fields_ = [("source", ctypes.c_char_p), ("chunk_events", ctypes.c_uint32)]


def skip(reason):
    print(f"skipped: {reason}")
    sys.exit(SKIP)


def find_tools():
    bindir = os.environ.get("MH_BINARY_DIR", "build")
    cli = os.environ.get("MEMHIST", os.path.join(bindir, "memhist"))
    lib = os.environ.get("MEMHIST_LIB", os.path.join(bindir, "libmemhist.so"))
    if not os.access(cli, os.X_OK):
        skip(f"memhist CLI not found at {cli} (set MEMHIST)")
    if not os.path.exists(lib):
        skip(f"libmemhist.so not found at {lib} (set MEMHIST_LIB)")
    return cli, lib


def train(torch, steps=6):
    """A small bf16 transformer LM loop with AdamW and variable sequence lengths."""
    torch.manual_seed(0)
    vocab, width, layers = 8192, 512, 4
    model = torch.nn.Sequential(
        torch.nn.Embedding(vocab, width),
        torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(width, 8, 4 * width, batch_first=True), layers),
        torch.nn.Linear(width, vocab)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(steps):
        seq = 256 - 32 * (step % 3)
        x = torch.randint(0, vocab, (8, seq), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, vocab), x.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()


def record(torch):
    torch.cuda.empty_cache()
    torch.cuda.memory._record_memory_history(max_entries=2_000_000)
    try:
        train(torch)
        snap = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    return snap


def conf_text(snap):
    settings = snap.get("allocator_settings") or {}
    text = settings.get("PYTORCH_CUDA_ALLOC_CONF")
    if text is None:
        text = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    return text or ""


def write_memhist(lib_path, snap, path, total_bytes):
    lib = ctypes.CDLL(lib_path)
    lib.mh_writer_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(WriterOpts),
                                   ctypes.POINTER(ctypes.c_void_p)]
    lib.mh_writer_set_meta.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.mh_writer_set_device.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p,
                                         ctypes.c_uint64]
    lib.mh_writer_event.argtypes = [ctypes.c_void_p, ctypes.POINTER(Event)]
    lib.mh_writer_close.argtypes = [ctypes.c_void_p]
    w = ctypes.c_void_p()
    opts = WriterOpts(b"imported", 0)
    if lib.mh_writer_open(path.encode(), ctypes.byref(opts), ctypes.byref(w)) != 0:
        raise RuntimeError(f"cannot create {path}")
    lib.mh_writer_set_meta(w, b"alloc_conf", conf_text(snap).encode())
    lib.mh_writer_set_device(w, 0, b"cuda:0", total_bytes)
    traces = snap.get("device_traces") or [[]]
    n = 0
    for entry in traces[0]:
        kind = KINDS.get(entry.get("action"))
        if kind is None:
            continue
        ev = Event()
        ev.kind = kind
        ev.time_ns = int(entry.get("time_us", 0)) * 1000
        ev.addr = int(entry["device_free"] if kind == KINDS["oom"] else entry.get("addr", 0))
        ev.size = int(entry.get("size", 0))
        ev.stream = int(entry.get("stream", 0)) & 0xFFFFFFFFFFFFFFFF
        ev.device = 0
        if lib.mh_writer_event(w, ctypes.byref(ev)) != 0:
            raise RuntimeError("writing an event failed")
        n += 1
    rc = lib.mh_writer_close(w)
    if rc != 0:
        raise RuntimeError(f"closing {path} failed ({rc})")
    return n


def main():
    try:
        import torch
    except ImportError:
        skip("torch is not installed")
    if not torch.cuda.is_available():
        skip("torch.cuda is not available (no GPU on this machine)")
    cli, lib = find_tools()
    snap = record(torch)
    total = torch.cuda.get_device_properties(0).total_memory
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "real.memhist")
        n = write_memhist(lib, snap, path, total)
        if n == 0:
            print("FAIL: the snapshot holds no trace entries")
            return 1
        out = subprocess.run([cli, "whatif", path, "--json"], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"FAIL: memhist whatif exited {out.returncode}: {out.stderr.strip()}")
            return 1
        res = json.loads(out.stdout)
    rec, sim = res["recorded"], res["whatif"]
    print(f"settings: '{conf_text(snap)}', {n} trace entries")
    print(f"peak reserved: recorded {rec['peak_reserved']}, simulated {sim['peak_reserved']}")
    print(f"peak allocated: recorded {rec['peak_allocated']}, simulated {sim['peak_allocated']}")
    print(f"sim_fidelity_match_percent: {res['match_percent']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
