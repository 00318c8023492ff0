"""steps_program.py - the program tests/vdevice/steps.py records: small
GPT-style models (tests/vdevice/gpt_train.py's) trained for a few steps with
AdamW, no memhist calls.

    python steps_program.py [--devices 1|2] [--steps N] [--leak] [--truth FILE]
                            [--profiler] [--accumulate K]
                            [--optimizers one|split|halves|fresh]

--devices 2: one process drives a model on cuda:0 and another on cuda:1,
each with its own optimizer; every iteration runs both forwards and
backwards, then both optimizer steps (so a step of one device's optimizer
falls in the middle of the other device's iteration). An allocation follows
the last optimizer step (the evaluation a script often ends with).
--leak: a forward hook on transformer.h.0.mlp keeps that module's output of
every step in a list (a leak across steps of batch x context x dim floats).
--truth writes the leaked tensor's size, the steps, and torch's own peaks per
device (memory_stats' allocated and reserved peaks, reset after each of that
device's optimizer steps): one [allocated, reserved] pair per step and one
for what follows the last step.
--profiler: the iterations run under a torch.profiler profile (CPU activity)
with a schedule, profile.step() after each, so its ProfilerStep#N ranges
define the steps. --accumulate K: an optimizer step every K iterations.
--optimizers (one device): split - the model's matrices go to AdamW and its
other parameters to SGD, stepped one after the other; halves - two models
(a GAN's discriminator and generator, say), each with its own AdamW, every
iteration training one and then the other; fresh - a new AdamW every
iteration, the last one dropped. One step per iteration every way, ended by
the optimizer that steps first, after which the truth's peaks are taken.
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_train import GPT  # noqa: E402

VOCAB, CTX, BATCH, DIM, HEADS, LAYERS = 2048, 128, 4, 256, 4, 2


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--leak", action="store_true")
    ap.add_argument("--truth")
    ap.add_argument("--profiler", action="store_true")
    ap.add_argument("--accumulate", type=int, default=1)
    ap.add_argument("--optimizers", choices=("one", "split", "halves", "fresh"), default="one")
    a = ap.parse_args()
    torch.manual_seed(0)
    if a.optimizers != "one":
        return several_optimizers(a)
    devs = ["cuda:%d" % i for i in range(a.devices)]
    models = [GPT(VOCAB, CTX, DIM, HEADS, LAYERS).to(d) for d in devs]
    opts = [torch.optim.AdamW(m.parameters(), lr=1e-4) for m in models]
    kept, leaked = [], []
    peaks = {i: [] for i in range(a.devices)}
    if a.leak:
        def keep(module, args, output):
            kept.append(output.detach())
            leaked.append(output.numel() * output.element_size())
        models[0].transformer.h[0].mlp.register_forward_hook(keep)
    prof = None
    if a.profiler:
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                      schedule=torch.profiler.schedule(wait=0, warmup=0, active=a.steps))
        prof.start()
    for i in range(a.steps):
        for m, d in zip(models, devs):
            idx = torch.randint(0, VOCAB, (BATCH, CTX + 1)).to(d)
            logits = m(idx[:, :-1])
            F.cross_entropy(logits.reshape(-1, VOCAB), idx[:, 1:].reshape(-1)).backward()
        if (i + 1) % a.accumulate == 0:
            for d, o in enumerate(opts):
                o.step()
                peaks[d].append(take_peak(d))
                o.zero_grad(set_to_none=True)
        if prof is not None:
            prof.step()
    with torch.no_grad():  # after the last step: not a step of its own
        for m, d in zip(models, devs):
            m(torch.randint(0, VOCAB, (BATCH, CTX)).to(d))
    if prof is not None:
        prof.stop()
    tail = {d: take_peak(d) for d in peaks}
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump({"leaked_bytes_per_step": leaked[0] if leaked else 0,
                       "steps": a.steps, "devices": a.devices,
                       "step_peaks": peaks, "tail_peaks": tail}, f)


def several_optimizers(a):
    """Two optimizers per iteration on cuda:0; writes the truth as main does."""
    models = [GPT(VOCAB, CTX, DIM, HEADS, LAYERS).cuda() for _ in range(2 if a.optimizers == "halves" else 1)]
    if a.optimizers == "split":
        params = list(models[0].parameters())
        opts = [torch.optim.AdamW([p for p in params if p.ndim == 2], lr=1e-4),
                torch.optim.SGD([p for p in params if p.ndim != 2], lr=1e-2, momentum=0.9)]
    else:
        opts = [torch.optim.AdamW(m.parameters(), lr=1e-4) for m in models]
    peaks = []
    for _ in range(a.steps):
        if a.optimizers == "fresh":
            opts = [torch.optim.AdamW(models[0].parameters(), lr=1e-4)]
        for i, o in enumerate(opts):
            m = models[min(i, len(models) - 1)]
            if i < len(models):
                idx = torch.randint(0, VOCAB, (BATCH, CTX + 1)).cuda()
                logits = m(idx[:, :-1])
                F.cross_entropy(logits.reshape(-1, VOCAB), idx[:, 1:].reshape(-1)).backward()
            o.step()
            if i == 0:
                peaks.append(take_peak(0))
        for m in models:
            m.zero_grad(set_to_none=True)
    with torch.no_grad():
        models[0](torch.randint(0, VOCAB, (BATCH, CTX)).cuda())
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump({"steps": a.steps, "devices": 1, "step_peaks": {"0": peaks},
                       "tail_peaks": {"0": take_peak(0)}}, f)


def take_peak(device):
    """torch's allocated and reserved peaks on device since the last call."""
    peak = [torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)]
    torch.cuda.reset_peak_memory_stats(device)
    return peak


if __name__ == "__main__":
    main()
