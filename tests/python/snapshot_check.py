"""Helpers for the snapshot tests (tests/python/test_snapshot_*.py).

- run(): the memhist CLI from $MEMHIST;
- Gen: a small Python model of PyTorch's caching allocator (512 B rounding,
  2 MiB small / 20 MiB large segments, best fit per stream and pool, torch's
  split rules) that produces consistent snapshot dicts: a trace and the final
  segments it leads to, with steps, phases, frames and several devices;
- state_history_problems(): replays a snapshot's device_traces backwards from
  its segments following the rules of the viewer's State History view
  (reference pytorch-allocator.md section 4.5) and lists every inconsistency
  that would make the viewer throw or show a wrong layout;
- memory_viz_path(): torch/cuda/_memory_viz.py found without importing torch.
"""
import importlib.util
import os
import subprocess
import sys

SMALL_SIZE = 1 << 20
SMALL_BUFFER = 2 << 20
LARGE_BUFFER = 20 << 20
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20

SKIP = 77


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def skip(msg):
    print("SKIP:", msg)
    sys.exit(SKIP)


def memhist():
    exe = os.environ.get("MEMHIST")
    if not exe or not os.path.exists(exe):
        skip("MEMHIST is not set to the memhist binary")
    return exe


def run(*args, check=True):
    """Runs memhist with args; returns CompletedProcess (text)."""
    p = subprocess.run([memhist()] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=600)
    if check and p.returncode != 0:
        fail("memhist %s exited %d: %s" % (" ".join(map(str, args)), p.returncode,
                                           p.stderr.strip()))
    return p


def workdir(name):
    base = os.environ.get("MH_BINARY_DIR") or "/tmp"
    d = os.path.join(base, "test-out", name)
    os.makedirs(d, exist_ok=True)
    return d


def memory_viz_path():
    """Path of torch/cuda/_memory_viz.py, or None. find_spec on the top-level
    package locates it without running torch/__init__.py."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if not spec or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = os.path.join(loc, "cuda", "_memory_viz.py")
        if os.path.exists(p):
            return p
    return None


def frame(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


def round_size(size):
    return 512 if size < 512 else (size + 511) // 512 * 512


def segment_size(rounded):
    if rounded <= SMALL_SIZE:
        return SMALL_BUFFER
    if rounded < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (rounded + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class Gen:
    """Drives a toy caching allocator and records a torch-shaped snapshot."""

    def __init__(self, devices=1, base=0x7F0000000000, time_us=1_700_000_000_000_000,
                 with_time=True, metadata=True):
        self.segs = {d: [] for d in range(devices)}
        self.traces = [[] for _ in range(devices)]
        self.notes = []
        self.next_addr = {d: base + (d << 36) for d in range(devices)}
        self.t = time_us
        self.with_time = with_time
        self.metadata = metadata
        self.step = -1
        self.phase = None
        self.stacks = [
            [frame("forward", "model.py", 10 + i), frame("train", "train.py", 40),
             frame("<module>", "train.py", 99)] for i in range(6)]

    def tick(self):
        self.t += 7
        return self.t

    def entry(self, dev, action, addr, size, stream, frames=None, **extra):
        e = {"action": action}
        e["device_free" if action == "oom" else "addr"] = addr
        e["size"] = size
        e["stream"] = stream
        if self.with_time:
            e["time_us"] = self.tick()
        if frames is not None:
            e["frames"] = frames
        if self.metadata and (self.step >= 0 or self.phase):
            parts = []
            if self.step >= 0:
                parts.append("step %d" % self.step)
            if self.phase:
                parts.append(self.phase)
            e["user_metadata"] = " ".join(parts)
        e.update(extra)
        self.traces[dev].append(e)

    def begin_step(self, n):
        self.step = n
        self.phase = None
        self.notes.append({"stage": "START", "name": "step %d" % n, "device": 0,
                           "time_us": self.tick()})

    def end_step(self):
        self.notes.append({"stage": "END", "name": "step %d" % self.step, "device": 0,
                           "time_us": self.tick()})
        # as memhist's model counts steps: after STEP_END(N) the next event opens N+1
        self.step += 1

    def alloc(self, dev, size, stream=0, stack=0):
        r = round_size(size)
        small = r <= SMALL_SIZE
        frames = self.stacks[stack % len(self.stacks)]
        best = None
        for seg in self.segs[dev]:
            if seg["small"] != small or seg["stream"] != stream:
                continue
            for i, b in enumerate(seg["blocks"]):
                if b["state"] == "inactive" and b["size"] >= r:
                    if best is None or b["size"] < best[0]["blocks"][best[1]]["size"]:
                        best = (seg, i)
        if best is None:
            ssize = segment_size(r)
            addr = self.next_addr[dev]
            self.next_addr[dev] += ssize + (2 << 20)
            seg = {"address": addr, "size": ssize, "stream": stream, "small": small,
                   "frames": frames,
                   "blocks": [{"size": ssize, "state": "inactive", "requested": 0,
                               "frames": []}]}
            self.segs[dev].append(seg)
            self.segs[dev].sort(key=lambda s: s["address"])
            self.entry(dev, "segment_alloc", addr, ssize, stream, frames)
            best = (seg, 0)
        seg, i = best
        b = seg["blocks"][i]
        rest = b["size"] - r
        if (small and rest >= 512) or (not small and rest > SMALL_SIZE):
            seg["blocks"].insert(i + 1, {"size": rest, "state": "inactive", "requested": 0,
                                         "frames": []})
            b["size"] = r
        b.update(state="active_allocated", requested=size, frames=frames)
        addr = self.block_addr(seg, i)
        self.entry(dev, "alloc", addr, size, stream, frames)
        return addr

    @staticmethod
    def block_addr(seg, i):
        return seg["address"] + sum(b["size"] for b in seg["blocks"][:i])

    def find(self, dev, addr):
        for seg in self.segs[dev]:
            for i in range(len(seg["blocks"])):
                if self.block_addr(seg, i) == addr:
                    return seg, i
        raise KeyError(hex(addr))

    def free(self, dev, addr, complete=True):
        seg, i = self.find(dev, addr)
        b = seg["blocks"][i]
        self.entry(dev, "free_requested", addr, b["requested"], seg["stream"], b["frames"])
        b["state"] = "active_pending_free"
        if complete:
            self.complete(dev, addr)

    def complete(self, dev, addr):
        seg, i = self.find(dev, addr)
        b = seg["blocks"][i]
        self.entry(dev, "free_completed", addr, b["requested"], seg["stream"], b["frames"])
        b.update(state="inactive", requested=0, frames=[])
        blocks = seg["blocks"]
        if i + 1 < len(blocks) and blocks[i + 1]["state"] == "inactive":
            b["size"] += blocks.pop(i + 1)["size"]
        if i > 0 and blocks[i - 1]["state"] == "inactive":
            blocks[i - 1]["size"] += blocks.pop(i)["size"]

    def empty_cache(self, dev):
        for seg in list(self.segs[dev]):
            if len(seg["blocks"]) == 1 and seg["blocks"][0]["state"] == "inactive":
                self.entry(dev, "segment_free", seg["address"], seg["size"], seg["stream"],
                           seg["frames"])
                self.segs[dev].remove(seg)

    def oom(self, dev, size, free_bytes):
        self.entry(dev, "oom", free_bytes, round_size(size), 0, self.stacks[0])

    def snapshot(self):
        segments = []
        for dev in sorted(self.segs):
            for seg in self.segs[dev]:
                blocks, addr = [], seg["address"]
                for b in seg["blocks"]:
                    blocks.append({"address": addr, "size": b["size"],
                                   "requested_size": b["requested"], "state": b["state"],
                                   "frames": b["frames"] if b["state"] != "inactive" else []})
                    addr += b["size"]
                act = [b for b in seg["blocks"] if b["state"] != "inactive"]
                segments.append({
                    "device": dev, "address": seg["address"], "total_size": seg["size"],
                    "allocated_size": sum(b["size"] for b in act
                                          if b["state"] == "active_allocated"),
                    "active_size": sum(b["size"] for b in act),
                    "requested_size": sum(b["requested"] for b in act),
                    "stream": seg["stream"],
                    "segment_type": "small" if seg["small"] else "large",
                    "segment_pool_id": (0, 0), "is_expandable": False,
                    "frames": seg["frames"], "blocks": blocks})
        return {"segments": segments, "device_traces": self.traces,
                "allocator_settings": default_settings(), "external_annotations": self.notes}


def default_settings():
    return {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
            "garbage_collection_threshold": 0.0, "expandable_segments": False,
            "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}


def workload(gen, steps=3, devices=1, seed=1):
    """A few training-like steps: activations, gradients, frees, a cache flush."""
    import random
    rnd = random.Random(seed)
    params = [gen.alloc(d, 4 << 20, stack=5) for d in range(devices)]
    for s in range(steps):
        gen.begin_step(s)
        gen.phase = "forward"
        live = []
        for i in range(12):
            d = i % devices
            size = rnd.choice([512, 3000, 70_000, 800_000, 3 << 20, 12 << 20 | 1234])
            live.append((d, gen.alloc(d, size, stack=i)))
        gen.phase = "backward"
        rnd.shuffle(live)
        for d, a in live[:-2]:
            gen.free(d, a)
        gen.phase = "optimizer"
        tmp = gen.alloc(0, 1000, stack=4)
        gen.free(0, tmp)
        gen.end_step()
        for d, a in live[-2:]:
            gen.free(d, a)
        gen.phase = None
    for d in range(devices):
        gen.empty_cache(d)
    keep = gen.alloc(0, 5000, stack=3)
    gen.free(0, keep, complete=False)  # left pending at the end
    gen.oom(0, 80 << 30, 1 << 30)
    return params


def _cut(ranges, addr, size):
    for i, (a, n, exp) in enumerate(ranges):
        if a <= addr and addr + size <= a + n:
            del ranges[i]
            if addr > a:
                ranges.append((a, addr - a, exp))
            if addr + size < a + n:
                ranges.append((addr + size, a + n - addr - size, exp))
            return True
    return False


def state_history_problems(snap):
    """Inconsistencies met replaying device_traces backwards from segments."""
    problems = []
    traces = snap.get("device_traces", [])
    for seg in snap.get("segments", []):
        if seg["device"] >= len(traces):
            problems.append("segment on device %d has no device_traces entry" % seg["device"])
        if sum(b["size"] for b in seg["blocks"]) != seg["total_size"]:
            problems.append("blocks do not tile segment %#x" % seg["address"])
    for dev, trace in enumerate(traces):
        ranges, blocks = [], {}
        for seg in snap.get("segments", []):
            if seg["device"] != dev:
                continue
            ranges.append((seg["address"], seg["total_size"], seg.get("is_expandable", False)))
            addr = seg["address"]
            for b in seg["blocks"]:
                if b["state"] != "inactive":
                    blocks[addr] = b["state"]
                addr += b["size"]

        def inside(a):
            return any(s <= a < s + n for s, n, _ in ranges)

        for i in range(len(trace) - 1, -1, -1):
            e = trace[i]
            act, a = e["action"], e.get("addr")
            where = "device %d entry %d (%s %#x)" % (dev, i, act, a or 0)
            if act == "alloc":
                if blocks.get(a) != "active_allocated":
                    problems.append(where + ": block not allocated after its alloc")
                blocks.pop(a, None)
                if not inside(a):
                    problems.append(where + ": alloc outside every segment")
            elif act == "free_requested":
                if blocks.get(a) not in ("active_allocated", "active_pending_free"):
                    problems.append(where + ": free_requested of a block not live (viewer "
                                    "TypeError)")
                blocks[a] = "active_allocated"
            elif act == "free_completed":
                if a in blocks:
                    problems.append(where + ": block still live after free_completed")
                if not inside(a):
                    problems.append(where + ": free outside every segment")
                blocks[a] = "active_pending_free"
            elif act == "segment_alloc":
                hit = [r for r in ranges if r[0] == a]
                if not hit:
                    problems.append(where + ": segment not found (viewer deletes the last)")
                    continue
                s, n, _ = hit[0]
                if any(s <= b < s + n for b in blocks):
                    problems.append(where + ": live blocks in a segment before its alloc")
                ranges.remove(hit[0])
            elif act == "segment_free":
                if any(s < a + e["size"] and a < s + n for s, n, _ in ranges):
                    problems.append(where + ": freed segment overlaps a live one")
                ranges.append((a, e["size"], False))
            elif act == "segment_map":
                if not _cut(ranges, a, e["size"]):
                    problems.append(where + ": mapped range not inside a segment (viewer throws)")
            elif act == "segment_unmap":
                ranges.append((a, e["size"], True))
        for b in blocks:
            if not inside(b):
                problems.append("device %d: block %#x live before the trace lies outside every "
                                "segment" % (dev, b))
    return problems


def norm_segments(snap):
    """Segments sorted by (device, address), blocks as tuples, for comparison."""
    out = []
    for s in sorted(snap["segments"], key=lambda s: (s["device"], s["address"])):
        d = {k: s[k] for k in ("device", "address", "total_size", "allocated_size",
                               "active_size", "requested_size", "stream", "segment_type",
                               "is_expandable")}
        d["segment_pool_id"] = tuple(s["segment_pool_id"])
        d["frames"] = s.get("frames", [])
        d["blocks"] = [(b["size"], b["state"],
                        b.get("requested_size", 0) if b["state"] != "inactive" else 0,
                        b.get("frames", []) if b["state"] != "inactive" else [])
                       for b in s["blocks"]]
        out.append(d)
    return out


def diff_first(a, b, path="snapshot"):
    """Where two nested values first differ (None if equal)."""
    if type(a) != type(b):
        return "%s: %s vs %s" % (path, type(a).__name__, type(b).__name__)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return "%s: key %r only in %s" % (path, k, "first" if k in a else "second")
            d = diff_first(a[k], b[k], "%s[%r]" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return "%s: length %d vs %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff_first(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %r vs %r" % (path, a, b)
