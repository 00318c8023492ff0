"""train_gpt.py - a small GPT-style training loop (AdamW) to record.

    memhist record -o gpt.memhist -- python examples/python/train_gpt.py --steps 8
    memhist report gpt.memhist

Runs on the GPU when there is one (on the CPU otherwise, where nothing is
recorded). Prints torch's own peak so it can be compared with the recording.
"""
import argparse
import json

import torch

from tiny_gpt import TinyGPT, train


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--checkpoint", action="store_true",
                    help="activation checkpointing (torch.utils.checkpoint) on every block")
    ap.add_argument("--truth", help="write torch's own figures (peak, steps, snapshot) to this JSON file")
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = TinyGPT(a.vocab, a.dim, 8, a.layers, a.ctx).to(device)
    for block in model.blocks if a.checkpoint else []:
        block.checkpointed = True
    losses = train(model, a.steps, a.batch, a.ctx, a.vocab, device)
    print("steps %d, first loss %.3f, last loss %.3f" % (a.steps, losses[0], losses[-1]))
    if device == "cuda":
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        print("torch max_memory_allocated: %d bytes" % peak)
        if a.truth:
            snap = torch.cuda.memory._snapshot()
            segs = [{"address": s["address"], "total_size": s["total_size"], "stream": s["stream"],
                     "blocks": [{"size": b["size"], "state": b["state"]} for b in s["blocks"]]}
                    for s in snap["segments"]]
            with open(a.truth, "w") as f:
                json.dump({"max_memory_allocated": peak, "optimizer_steps": a.steps,
                           "memory_allocated": torch.cuda.memory_allocated(),
                           "memory_reserved": torch.cuda.memory_reserved(), "segments": segs}, f)


if __name__ == "__main__":
    main()
