"""overhead.py - step time of the tiny GPT with and without recording.

    python tests/gpu/overhead.py MODE [STEPS]
MODE: none (no recording), torch (torch's own _record_memory_history with
stacks="python"), or memhist (run it under `memhist record`, which attaches
before the first step). Prints `step_ms_<MODE>: <median ms>`.
Exits 77 without a GPU.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))


def main():
    import torch
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        sys.exit(77)
    from tiny_gpt import TinyGPT
    mode = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    torch.cuda.init()
    if mode == "torch":
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python")
    model = TinyGPT().cuda()
    opt = torch.optim.AdamW(model.parameters())
    times = []
    for i in range(steps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        idx = torch.randint(0, 8192, (8, 257), device="cuda")
        loss = torch.nn.functional.cross_entropy(model(idx[:, :-1]).flatten(0, 1), idx[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if i >= 5:
            times.append((time.perf_counter() - t) * 1e3)
    print("step_ms_%s: %.3f" % (os.environ.get("MH_OVERHEAD_LABEL", mode), statistics.median(times)))


if __name__ == "__main__":
    main()
