"""layers_check.py - GPU check of `memhist layers`' checkpointing estimate.

    python tests/gpu/layers_check.py MEMHIST_BIN WORKDIR

Records examples/python/train_gpt.py without checkpointing, asks
`memhist layers --json` which blocks to checkpoint and what that saves, then
records examples/python/train_gpt_checkpoint.py with exactly those blocks
checkpointed and asserts that the measured drop of the peak allocated memory
is within 10 % of the estimate.

Both runs go through a small runner that names allocations by module: global
forward and backward hooks set torch's allocator user metadata to the
module's path ("blocks.3.mlp.0"), which `memhist layers` turns into layers
("blocks.3"). Without it, identical blocks would share one layer name.
Exits 77 with the reason when there is no GPU; 1 on a mismatch.
"""
import json
import os
import subprocess
import sys

RUNNER = r'''
import runpy, sys
import torch
import torch.nn as nn

names = {}
stack = []

def name_of(m):
    if m not in names:
        for n, sub in m.named_modules():
            names.setdefault(sub, n)
    return names[m]

def set_meta(text):
    torch.cuda.memory._set_memory_metadata(text)

def pre(m, args):
    stack.append(name_of(m))
    set_meta(stack[-1])

def post(m, args, out):
    if stack:
        stack.pop()
    set_meta(stack[-1] if stack else "")

def bwd_pre(m, grad_out):
    set_meta(name_of(m))

def bwd_post(m, grad_in, grad_out):
    set_meta("")

nn.modules.module.register_module_forward_pre_hook(pre)
nn.modules.module.register_module_forward_hook(post)
nn.modules.module.register_module_full_backward_pre_hook(bwd_pre)
nn.modules.module.register_module_full_backward_hook(bwd_post)
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, __import__("os").path.dirname(script))
runpy.run_path(script, run_name="__main__")
'''

ARGS = ["--steps", "6", "--batch", "8", "--ctx", "256", "--layers", "6"]


def run(cmd, **kw):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, **kw)
    sys.stdout.write(p.stdout[-3000:])
    sys.stderr.write(p.stderr[-3000:])
    if p.returncode != 0:
        raise SystemExit("command failed with exit %d" % p.returncode)
    return p


def peak_allocated(memhist, path):
    doc = json.loads(run([memhist, "report", "--json", path]).stdout)
    devs = [d for f in doc["files"] for d in f["devices"]]
    return max(d["peak_allocated"] for d in devs) if devs else 0


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    memhist, work = sys.argv[1], sys.argv[2]
    try:
        import torch
    except ImportError:
        print("skip: torch is not installed")
        return 77
    if not torch.cuda.is_available():
        print("skip: no CUDA device visible to torch")
        return 77
    if not hasattr(torch.cuda.memory, "_set_memory_metadata"):
        print("skip: this torch cannot set allocator user metadata")
        return 77
    root = os.environ.get("MH_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    examples = os.path.join(root, "examples", "python")
    os.makedirs(work, exist_ok=True)
    runner = os.path.join(work, "named_modules_runner.py")
    with open(runner, "w") as f:
        f.write(RUNNER)
    base = os.path.join(work, "base.memhist")
    run([memhist, "record", "-o", base, "--", sys.executable, runner,
         os.path.join(examples, "train_gpt.py")] + ARGS)
    plan = json.loads(run([memhist, "layers", "--json", base]).stdout)
    dev = plan["files"][0]["devices"][0]
    blocks = []
    for name in dev["plan"]["layers"]:
        parts = name.split(".")
        if len(parts) == 2 and parts[0] == "blocks" and parts[1].isdigit():
            blocks.append(int(parts[1]))
    if not blocks:
        print("FAIL no blocks.N layer in the plan: %s" % dev["plan"]["layers"])
        return 1
    estimate = dev["peak_allocated"] - dev["plan"]["estimated_peak"]
    ckpt = os.path.join(work, "ckpt.memhist")
    run([memhist, "record", "-o", ckpt, "--", sys.executable, runner,
         os.path.join(examples, "train_gpt_checkpoint.py"),
         "--layers-ckpt", ",".join(str(b) for b in sorted(blocks))] + ARGS)
    measured = peak_allocated(memhist, base) - peak_allocated(memhist, ckpt)
    print("checkpointed blocks %s: estimated saving %d bytes, measured %d bytes"
          % (sorted(blocks), estimate, measured))
    if measured <= 0 or abs(measured - estimate) > 0.10 * measured:
        print("FAIL the estimate is not within 10 % of the measured saving")
        return 1
    print("ok   estimate within 10 % of the measured saving")
    return 0


if __name__ == "__main__":
    sys.exit(main())
