"""A large synthetic torch 2.15 memory snapshot, written with Python's pickle.

Laid out as torch's `_dump_snapshot()` writes it: `segments` (with blocks),
`device_traces` (alloc / free_requested / free_completed entries whose
`frames` list is the very object of the alloc, so the pickle refers back to
it, as torch's tracebacks are shared), `allocator_settings` and
`external_annotations` (Optimizer.step ranges). Frame dicts come from a small
pool and are shared, as torch's symbolized frames are. Each device has one
1 GiB segment in which 64 slots of 1 MiB are allocated and freed in turn, so
the trace replays exactly onto the final segments.

    python3 big_snapshot.py OUT.pickle MEGABYTES [DEVICES]
"""
import pickle
import sys

MIB = 1 << 20
SLOTS = 64
SEG = 1 << 30
BYTES_PER_ENTRY = 88  # of pickle, measured at protocol 4


def _frames_pool():
    pool = []
    for i in range(160):
        pool.append({"filename": "/opt/venv/lib/python3.12/site-packages/model/layer%d.py" % (i % 40),
                     "name": "forward_%d" % i, "line": 10 + i})
    return pool


def snapshot(entries, devices=1):
    pool = _frames_pool()
    traces, segments, notes = [], [], []
    t = 1_700_000_000_000_000
    per_dev = entries // devices
    for d in range(devices):
        base = 0x7F0000000000 + (d << 36)
        tr = [{"action": "segment_alloc", "addr": base, "size": SEG, "stream": 0, "time_us": t,
               "frames": [pool[0], pool[1]], "compile_context": "N/A", "user_metadata": ""}]
        live = [None] * SLOTS
        i = 0
        while len(tr) < per_dev:
            slot = i % SLOTS
            addr = base + slot * MIB
            if live[slot] is not None:
                fr = live[slot]
                for action in ("free_requested", "free_completed"):
                    t += 1
                    tr.append({"action": action, "addr": addr, "size": MIB, "stream": 0,
                               "time_us": t, "frames": fr, "compile_context": "N/A",
                               "user_metadata": ""})
            fr = [pool[(i * 7 + k) % len(pool)] for k in range(6 + i % 5)]
            t += 1
            tr.append({"action": "alloc", "addr": addr, "size": MIB, "stream": 0, "time_us": t,
                       "frames": fr, "compile_context": "N/A", "user_metadata": ""})
            live[slot] = fr
            if d == 0 and i % 2000 == 1999:
                for stage in ("START", "END"):
                    t += 1
                    notes.append({"stage": stage, "name": "Optimizer.step#AdamW.step",
                                  "device": 0, "time_us": t})
            i += 1
        traces.append(tr)
        blocks = [{"address": base + s * MIB, "size": MIB, "requested_size": MIB,
                   "state": "active_allocated", "frames": live[s]} for s in range(SLOTS)]
        blocks.append({"address": base + SLOTS * MIB, "size": SEG - SLOTS * MIB,
                       "requested_size": 0, "state": "inactive", "frames": []})
        segments.append({"device": d, "address": base, "total_size": SEG,
                         "allocated_size": SLOTS * MIB, "active_size": SLOTS * MIB,
                         "requested_size": SLOTS * MIB, "stream": 0, "segment_type": "large",
                         "segment_pool_id": (0, 0), "is_expandable": False,
                         "frames": [pool[0], pool[1]], "blocks": blocks})
    settings = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                "garbage_collection_threshold": 0.0, "expandable_segments": False,
                "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}
    return {"segments": segments, "device_traces": traces, "allocator_settings": settings,
            "external_annotations": notes}


def write(path, megabytes, devices=1):
    """Writes about `megabytes` MB of snapshot; returns the number of entries."""
    entries = int(megabytes * 1e6 / BYTES_PER_ENTRY)
    snap = snapshot(entries, devices)
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    return sum(len(t) for t in snap["device_traces"])


if __name__ == "__main__":
    n = write(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    print("%s: %d entries" % (sys.argv[1], n))
