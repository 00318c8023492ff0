"""check_cuda_example.py - GPU check of CUPTI recording through injection.

Runs examples/cuda/alloc_kernels (no PyTorch) with
CUDA_INJECTION64_PATH=libmemhist.so and MEMHIST_OUT, then reads the recording
back through `memhist info --json` and `memhist trace` and checks against what
the program says it did:
  - CUPTI was enabled (the file's "cupti" meta);
  - every cudaMalloc size appears as a device driver allocation, and is freed;
  - the cudaMallocAsync allocation appears (MEMORY2, stream ordered);
  - each cuMemMap chunk appears as a "vmm" driver allocation and unmap;
  - the number of "fill" kernels equals the number launched, each linked to
    its launch by a flow arrow.
Environment (set by ctest): MEMHIST, MEMHIST_LIB, MH_CUDA_EXAMPLE. Exits 77
with the reason when there is no usable GPU; 1 on any mismatch.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def gpu_reason():
    """None when a CUDA device is usable, else why not."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return f"no NVIDIA driver ({e})"
    rc = cuda.cuInit(0)
    if rc != 0:
        return f"cuInit failed with CUDA error {rc}"
    n = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0:
        return "no CUDA device"
    return None


def run(cmd, env=None):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if p.returncode != 0:
        print(p.stdout, p.stderr, sep="\n")
        sys.exit(f"command failed with exit {p.returncode}")
    return p.stdout


def main():
    paths = {k: os.environ.get(k) for k in ("MEMHIST", "MEMHIST_LIB", "MH_CUDA_EXAMPLE")}
    missing = [k for k, v in paths.items() if not v or not os.path.exists(v)]
    if missing:
        skip("not built or not set: " + ", ".join(missing))
    why = gpu_reason()
    if why:
        skip(why)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cuda.memhist")
        env = dict(os.environ, CUDA_INJECTION64_PATH=os.path.abspath(paths["MEMHIST_LIB"]),
                   MEMHIST_OUT=out)
        kernels = 25
        truth = json.loads(run([paths["MH_CUDA_EXAMPLE"], str(kernels)], env=env).strip())
        print("program:", truth)
        info = json.loads(run([paths["MEMHIST"], "info", "--json", out]))
        cupti = info["meta"].get("cupti", "")
        check(cupti.startswith("enabled"), f"CUPTI enabled (meta cupti = {cupti!r})")
        trace = os.path.join(tmp, "cuda.json")
        run([paths["MEMHIST"], "trace", out, "-o", trace])
        evs = json.load(open(trace))["traceEvents"]
        dev = truth["device"]

        def driver(name, kind):
            return Counter(e["args"]["bytes"] for e in evs
                           if e.get("name") == name and e.get("pid") == dev
                           and e["args"].get("memory kind") == kind)

        allocs, frees = driver("driver alloc", "device"), driver("driver free", "device")
        for size in truth["cudaMalloc"]:
            check(allocs[size] >= 1, f"cudaMalloc of {size} bytes recorded")
            check(frees[size] >= 1, f"cudaFree of {size} bytes recorded")
        for size in truth["cudaMallocAsync"]:
            check(allocs[size] >= 1, f"cudaMallocAsync of {size} bytes recorded")
        maps, unmaps = driver("driver alloc", "vmm"), driver("driver free", "vmm")
        for size, n in Counter(truth["vmm_map"]).items():
            check(maps[size] == n, f"{n} cuMemMap of {size} bytes recorded (got {maps[size]})")
            check(unmaps[size] == n, f"{n} cuMemUnmap of {size} bytes recorded")
        fills = [e for e in evs if e.get("cat") == "kernel" and truth["kernel_name"] in e["name"]]
        check(len(fills) == truth["kernels"],
              f"{truth['kernels']} kernels recorded (got {len(fills)})")
        ends = {e["id"] for e in evs if e.get("ph") == "f"}
        linked = sum(1 for k in fills if k["args"]["correlation"] in ends)
        check(linked == len(fills), f"every kernel linked to its launch ({linked}/{len(fills)})")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
