"""truth_run.py - runs a PyTorch script and writes torch's own account of its
CUDA memory to a JSON file: the ground truth that memhist's recording of the
same run is compared with (tests/truth/compare.py).

    python tests/truth/truth_run.py --truth T.json [--dump S.pickle] -- SCRIPT [ARGS...]

Works on a GPU and on memhist's virtual device alike. Before the script runs
it initializes CUDA, counts optimizer steps (a global Optimizer step hook),
notes each OOM (torch's OOM observer: device and failing segment size) and,
with --dump, starts torch's own memory history so that
torch.cuda.memory._dump_snapshot() can write the same run for `memhist
import`. After the script returns it writes, per device:
max_memory_allocated/reserved, memory_allocated/reserved, num_ooms and the
torch.cuda.memory._snapshot() segments with their blocks. The script's
globals stay alive until interpreter exit, so nothing is freed between the
truth and the end of the recording.
"""
import argparse
import json
import os
import runpy
import sys

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

_kept = []  # the script's globals, held until exit


def _segments(snap, device):
    return [{"address": s["address"], "total_size": s["total_size"], "stream": s["stream"],
             "segment_type": s.get("segment_type", ""),
             "blocks": [{"size": b["size"], "state": b["state"]} for b in s["blocks"]]}
            for s in snap["segments"] if s.get("device", 0) == device]


def _trace_ooms(snap, device):
    traces = snap.get("device_traces") or []
    if device >= len(traces):
        return []
    return [e["size"] for e in traces[device] if e.get("action") == "oom"]


def collect(state, snap):
    devices = []
    for d in range(torch.cuda.device_count()):
        torch.cuda.synchronize(d)
        stats = torch.cuda.memory_stats(d)
        devices.append({
            "device": d,
            "max_memory_allocated": torch.cuda.max_memory_allocated(d),
            "max_memory_reserved": torch.cuda.max_memory_reserved(d),
            "memory_allocated": torch.cuda.memory_allocated(d),
            "memory_reserved": torch.cuda.memory_reserved(d),
            "num_ooms": stats.get("num_ooms", 0),
            "num_alloc_retries": stats.get("num_alloc_retries", 0),
            "ooms": [o["size"] for o in state["ooms"] if o["device"] == d],
            "trace_ooms": _trace_ooms(snap, d),
            "segments": _segments(snap, d),
        })
    return {"optimizer_steps": state["steps"], "devices": devices,
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
            "device_names": [torch.cuda.get_device_name(d) for d in range(torch.cuda.device_count())],
            "total_memory": [torch.cuda.get_device_properties(d).total_memory
                             for d in range(torch.cuda.device_count())]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--truth", required=True, help="JSON file to write torch's figures to")
    ap.add_argument("--dump", help="also write torch's _dump_snapshot() pickle here")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("truth_run.py: torch sees no CUDA device")
    state = {"steps": 0, "ooms": []}

    def on_step(opt, args, kwargs):
        state["steps"] += 1

    def on_oom(device, alloc, device_allocated, device_free):
        state["ooms"].append({"device": int(device), "size": int(alloc)})

    torch.cuda.init()
    register_optimizer_step_post_hook(on_step)
    torch._C._cuda_attach_out_of_memory_observer(on_oom)
    if a.dump:
        torch.cuda.memory._record_memory_history(context=None, stacks="python", max_entries=10_000_000)
    script = os.path.abspath(a.script)
    sys.argv = [script] + a.args
    sys.path.insert(0, os.path.dirname(script))
    _kept.append(runpy.run_path(script, run_name="__main__"))
    snap = torch.cuda.memory._snapshot()
    truth = collect(state, snap)
    if a.dump:
        torch.cuda.memory._dump_snapshot(a.dump)
    with open(a.truth, "w") as f:
        json.dump(truth, f)


if __name__ == "__main__":
    main()
