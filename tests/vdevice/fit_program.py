"""fit_program.py - a small training program for tests/vdevice/fit.py whose
memory is set by its options: each step keeps BATCH MiB of activations for
its backward (a linear layer over BATCH x 262144 floats), plus, with
--falling TOP, (TOP - BATCH) x 8 MiB more, so memory falls as the batch
grows.

    python fit_program.py --batch B [--steps N] [--falling TOP]
                          [--fail-at B] [--no-step-below B]

--fail-at raises ValueError when the batch is at least B (a program that
fails for another reason than memory); --no-step-below ends before its first
optimizer step when the batch is below B.
"""
import argparse
import sys

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--falling", type=int, default=0)
    ap.add_argument("--fail-at", type=int, default=0)
    ap.add_argument("--no-step-below", type=int, default=0)
    a = ap.parse_args()
    if a.fail_at and a.batch >= a.fail_at:
        raise ValueError("batch %d is not supported" % a.batch)
    width = 1 << 16  # 256 KiB per row of float32; 4 rows a MiB
    model = torch.nn.Linear(width, 16).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    extra = max(a.falling - a.batch, 0) * 8
    for step in range(a.steps):
        x = torch.randn(4 * a.batch, width, device="cuda", requires_grad=True)
        keep = torch.zeros(extra * (1 << 18), device="cuda", requires_grad=True) if extra else None
        loss = model(x).sum() + (keep.sum() if keep is not None else 0)
        if a.no_step_below and a.batch < a.no_step_below:
            print("nothing to train at batch %d" % a.batch)
            sys.exit(0)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
