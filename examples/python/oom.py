"""oom.py - reproduces a CUDA out-of-memory error mid-training.

Trains the tiny GPT while holding on to activations from every step (a classic
leak: keeping `loss` with its graph), then asks for one huge tensor. The
recording ends with an OOM event carrying the failing (rounded) size, the
free device memory CUDA reported and the stack.

    memhist record -o oom.memhist -- python examples/python/oom.py
    memhist oom oom.memhist
"""
import argparse

import torch

from tiny_gpt import TinyGPT


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leak-steps", type=int, default=4)
    ap.add_argument("--request", default="total", help="bytes to request at the end, or 'total' (all memory)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to run out of")
        return
    model = TinyGPT(layers=4).cuda()
    opt = torch.optim.AdamW(model.parameters())
    kept = []
    for _ in range(a.leak_steps):
        idx = torch.randint(0, 8192, (8, 257), device="cuda")
        loss = torch.nn.functional.cross_entropy(model(idx[:, :-1]).flatten(0, 1), idx[:, 1:].flatten())
        kept.append(loss)  # keeps every step's graph (and activations) alive
        opt.step()
    total = torch.cuda.get_device_properties(0).total_memory
    size = total if a.request == "total" else int(a.request)
    try:
        torch.empty(size, dtype=torch.uint8, device="cuda")
    except torch.cuda.OutOfMemoryError as e:
        print("OOM as intended, requested %d bytes: %s" % (size, str(e).splitlines()[0]))
        print("OOM_REQUEST_BYTES=%d" % size)


if __name__ == "__main__":
    main()
