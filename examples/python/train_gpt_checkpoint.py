"""train_gpt_checkpoint.py - train_gpt.py with activation checkpointing on
chosen layers, to compare recorded peaks with and without it.

    memhist record -o ckpt.memhist -- python examples/python/train_gpt_checkpoint.py --layers-ckpt 0,1,2
"""
import argparse

import torch

from tiny_gpt import TinyGPT, train


def parse_layers(text, n):
    if text in ("all", "*"):
        return list(range(n))
    if not text:
        return []
    layers = sorted({int(x) for x in text.split(",")})
    bad = [i for i in layers if i < 0 or i >= n]
    if bad:
        raise SystemExit("--layers-ckpt: layer(s) %s out of range 0..%d" % (bad, n - 1))
    return layers


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers-ckpt", default="0,1,2",
                    help="comma-separated block indices to checkpoint, 'all', or '' for none")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--layers", type=int, default=6)
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = TinyGPT(layers=a.layers, ctx=a.ctx).to(device)
    chosen = parse_layers(a.layers_ckpt, a.layers)
    for i in chosen:
        model.blocks[i].checkpointed = True
    losses = train(model, a.steps, a.batch, a.ctx, 8192, device)
    print("checkpointed layers %s; last loss %.3f" % (chosen, losses[-1]))
    if device == "cuda":
        print("torch max_memory_allocated: %d bytes" % torch.cuda.max_memory_allocated())


if __name__ == "__main__":
    main()
