"""vdevice_vs_gpu.py - the virtual device against the real GPU it poses as.

    python tests/gpu/vdevice_vs_gpu.py MEMHIST_BIN WORKDIR [--json FILE]

Runs the same workloads (the GPT example plain and checkpointed, the
checkpointing example, the OOM example) twice through tests/truth/truth_run.py:
on this machine's GPU, and under `memhist simulate` on a virtual device of the
same capacity, whose CUDA context takes what the real context takes here.
Compares torch's own figures of the two runs (peak allocated, peak reserved,
reserved at the end, the segments' sizes, OOMs and allocator retries) and
prints them as a table; where a workload differs, also the first allocator
event where torch's traces of the two runs part, with its Python frames.

The two need not agree to the byte: torch's best fit breaks ties between
free blocks of one size by address, and the driver hands out segment
addresses in an order of its own (not ascending, as the virtual device
does), so a split can land elsewhere. Exits 77 with the reason when there is
no GPU; 1 when a run fails or a workload is off by more than TOLERANCE
(peak allocated 1 %, peak reserved 5 %, the OOM count exact).
"""
import json
import os
import subprocess
import sys

SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLES = os.path.join(SRC, "examples", "python")
TRUTH_RUN = os.path.join(SRC, "tests", "truth", "truth_run.py")
WORKLOADS = [
    ("train_gpt", ["train_gpt.py", "--steps", "6"]),
    ("train_gpt --checkpoint", ["train_gpt.py", "--steps", "4", "--checkpoint"]),
    ("train_gpt_checkpoint", ["train_gpt_checkpoint.py", "--layers-ckpt", "0,1,2", "--steps", "4"]),
    ("oom", ["oom.py"]),
]
TOLERANCE = {"max_memory_allocated": 0.01, "max_memory_reserved": 0.05}
FIGURES = ["max_memory_allocated", "max_memory_reserved", "memory_reserved", "segments", "num_ooms",
           "num_alloc_retries"]


def gpu_context():
    """The device's capacity and what the CUDA context takes of it here."""
    probe = ("import torch; torch.cuda.init(); f, t = torch.cuda.mem_get_info(0); "
             "print(t, t - f, torch.cuda.get_device_name(0))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    total, context, name = out.split(maxsplit=2)
    return int(total), int(context), name.strip()


def figures(truth_path):
    with open(truth_path) as f:
        dev = json.load(f)["devices"][0]
    fig = {k: dev[k] for k in FIGURES if k != "segments"}
    fig["segments"] = sorted(s["total_size"] for s in dev["segments"])
    return fig


def run_truth(cmd_prefix, work, tag, argv):
    truth = os.path.join(work, tag + ".truth.json")
    dump = os.path.join(work, tag + ".pickle")
    cmd = cmd_prefix + [sys.executable, TRUTH_RUN, "--truth", truth, "--dump", dump, "--",
                        os.path.join(EXAMPLES, argv[0])] + argv[1:]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0 or not os.path.exists(truth):
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-4000:])
        return None
    return figures(truth)


def trace(path):
    import pickle
    with open(path, "rb") as f:
        snap = pickle.load(f)
    traces = snap.get("device_traces") or [[]]
    return [e for e in traces[0] if e["action"] in ("alloc", "free_completed", "segment_alloc", "segment_free")]


def what(e):
    """"alloc 4194304 B", with its innermost Python frames where torch kept them."""
    fr = [f for f in e.get("frames", []) if f["filename"].endswith(".py")][:3]
    at = "; ".join("%s:%d %s" % (os.path.basename(f["filename"]), f["line"], f["name"]) for f in fr)
    return "%s %d B%s" % (e["action"], e["size"], " at " + at if at else "")


def first_difference(work, tag):
    """The first allocator event where the two runs' traces part."""
    a, b = trace(os.path.join(work, tag + ".gpu.pickle")), trace(os.path.join(work, tag + ".vdevice.pickle"))
    for i, (x, y) in enumerate(zip(a, b)):
        if (x["action"], x["size"]) != (y["action"], y["size"]):
            return "event %d: GPU %s | virtual device %s" % (i, what(x), what(y))
    return "the traces agree on their first %d events (GPU %d, virtual device %d)" % (
        min(len(a), len(b)), len(a), len(b))


def close(gpu, vdev):
    if gpu is None or vdev is None or gpu["num_ooms"] != vdev["num_ooms"]:
        return False
    return all(abs(gpu[k] - vdev[k]) <= tol * gpu[k] for k, tol in TOLERANCE.items())


def mib(n):
    return "%.1f" % (n / 2**20)


def row(name, gpu, vdev):
    if gpu is None or vdev is None:
        return "| %s | %s | | | | no |" % (name, "GPU run failed" if gpu is None else "virtual-device run failed")
    same = all(gpu[k] == vdev[k] for k in FIGURES)
    pair = lambda k, f: f(gpu[k]) if gpu[k] == vdev[k] else "%s / %s" % (f(gpu[k]), f(vdev[k]))
    return "| %s | %s | %s | %s | %s | %s |" % (
        name, pair("max_memory_allocated", mib), pair("max_memory_reserved", mib),
        pair("segments", len), pair("num_ooms", str), "yes" if same else "no")


def main():
    args = sys.argv[1:]
    json_out = None
    if "--json" in args:
        i = args.index("--json")
        json_out = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit("usage: vdevice_vs_gpu.py MEMHIST_BIN WORKDIR [--json FILE]")
    memhist, work = args
    try:
        import torch
    except ImportError:
        print("skipped: torch is not installed")
        sys.exit(77)
    if not torch.cuda.is_available():
        print("skipped: no CUDA device (torch.cuda.is_available() is False)")
        sys.exit(77)
    os.makedirs(work, exist_ok=True)
    total, context, name = gpu_context()
    print("GPU: %s, %s MiB, CUDA context %s MiB; torch %s" % (name, mib(total), mib(context), torch.__version__))
    simulate = [memhist, "simulate", "--no-report", "--stacks", "none", "--device-memory", str(total),
                "--context-memory", str(context), "-o", os.path.join(work, "sim.memhist"), "--"]
    results, lines = {}, []
    for wname, argv in WORKLOADS:
        tag = wname.replace(" --", "_")
        gpu = run_truth([], work, tag + ".gpu", argv)
        vdev = run_truth(simulate, work, tag + ".vdevice", argv)
        results[wname] = {"gpu": gpu, "vdevice": vdev}
        lines.append(row(wname, gpu, vdev))
    print("| workload | peak allocated MiB | peak reserved MiB | segments | OOMs | same |")
    print("|---|---|---|---|---|---|")
    print("\n".join(lines))
    print("(a figure shown once is the same on both; 'GPU / virtual device' where they differ)")
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"gpu": name, "total": total, "context": context, "torch": torch.__version__,
                       "workloads": results}, f, indent=1)
    for w, r in results.items():
        if r["gpu"] is not None and r["vdevice"] is not None and r["gpu"] != r["vdevice"]:
            print("%s: %s" % (w, first_difference(work, w.replace(" --", "_"))))
    bad = [w for w, r in results.items() if not close(r["gpu"], r["vdevice"])]
    print("%d workload(s) off by more than the tolerance: %s" % (len(bad), ", ".join(bad)) if bad
          else "the virtual device matched the GPU within the tolerance")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
