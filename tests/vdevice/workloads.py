"""workloads.py - small PyTorch training workloads whose memory behaviour the
virtual-device ground-truth tests check (tests/vdevice/check_workload.py).

    python tests/vdevice/workloads.py NAME [--steps N]

NAME: gpt (GPT-style LM, AdamW, varying sequence lengths), gpt_ckpt (the same
with non-reentrant torch.utils.checkpoint on blocks 0 and 2), conv (a small
CNN with batch norm, SGD with momentum), amp (autocast float16 with
GradScaler), streams (batches prepared on a side stream, handed over with
record_stream), big_logits (a wide vocabulary, for max_split_size_mb), gc
(a memory fraction, for garbage_collection_threshold), oom (grows the batch
until the device runs out, then trains on), two_devices (a model split over
cuda:0 and cuda:1), data_parallel (nn.DataParallel over cuda:0 and cuda:1). Allocator settings come from PYTORCH_CUDA_ALLOC_CONF and
the device size from the device itself, so one workload serves several
tests. Each runs in seconds on the virtual device (kernels do nothing).
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
from tiny_gpt import TinyGPT  # noqa: E402

VOCAB = 4096
trained = None


def batch(n, t, vocab=VOCAB, device="cuda"):
    return torch.randint(0, vocab, (n, t + 1)).to(device)


def lm_step(model, opt, idx, vocab=VOCAB):
    logits = model(idx[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, vocab), idx[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def seq_len(step, ctx=128):
    return ctx - 32 * (step % 3)


def gpt(steps, ckpt=()):
    torch.manual_seed(0)
    model = TinyGPT(vocab=VOCAB, dim=256, heads=4, layers=4, ctx=128).cuda()
    for i in ckpt:
        model.blocks[i].checkpointed = True
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for s in range(steps):
        lm_step(model, opt, batch(8, seq_len(s)))
    return model, opt


def big_logits(steps):
    vocab = 16384
    model = TinyGPT(vocab=vocab, dim=256, heads=4, layers=2, ctx=256).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for s in range(steps):
        lm_step(model, opt, batch(8, seq_len(s, 256), vocab), vocab)
    return model, opt


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        layers, c = [], 3
        for w in (32, 64, 128):
            layers += [nn.Conv2d(c, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(2)]
            c = w
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def conv(steps):
    model = SmallCNN().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for s in range(steps):
        x = torch.randn(16, 3, 64, 64).cuda()
        y = torch.randint(0, 10, (16,)).cuda()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return model, opt


def amp(steps):
    model = TinyGPT(vocab=VOCAB, dim=256, heads=4, layers=4, ctx=128).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for s in range(steps):
        idx = batch(8, seq_len(s))
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(idx[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), idx[:, 1:].reshape(-1))
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
    return model, opt, scaler


def streams(steps):
    model = TinyGPT(vocab=VOCAB, dim=256, heads=4, layers=2, ctx=128).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    side, main = torch.cuda.Stream(), torch.cuda.current_stream()
    host = [torch.randint(0, VOCAB, (8, seq_len(s) + 1)).pin_memory() for s in range(steps)]
    for s in range(steps):
        with torch.cuda.stream(side):
            idx = host[s].to("cuda", non_blocking=True)
            scratch = torch.empty(4 << 20, dtype=torch.uint8, device="cuda")  # side-stream work
            del scratch
        main.wait_stream(side)
        idx.record_stream(main)
        lm_step(model, opt, idx)
        del idx
    return model, opt


def gc(steps):
    torch.cuda.set_per_process_memory_fraction(0.5)
    model = TinyGPT(vocab=VOCAB, dim=256, heads=4, layers=4, ctx=128).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for s in range(steps):
        lm_step(model, opt, batch(8 * (1 + s % 3), seq_len(s)))
    return model, opt


def oom(steps):
    model = TinyGPT(vocab=VOCAB, dim=256, heads=4, layers=4, ctx=128).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    n = 8
    for s in range(steps):
        try:
            lm_step(model, opt, batch(n, 128))
        except torch.cuda.OutOfMemoryError as e:
            print("OOM at batch %d: %s" % (n, str(e).splitlines()[0]))
            break
        n *= 2
    else:
        raise SystemExit("oom: the device did not run out of memory; give it less")
    # outside the handler, whose traceback holds the failed step's tensors
    opt.zero_grad(set_to_none=True)
    lm_step(model, opt, batch(n // 4, 128))
    return model, opt


class Split(nn.Module):
    """The first half of a TinyGPT's blocks on cuda:0, the rest on cuda:1."""

    def __init__(self):
        super().__init__()
        self.a = TinyGPT(vocab=VOCAB, dim=256, heads=4, layers=2, ctx=128).to("cuda:0")
        self.b = nn.ModuleList(TinyGPT(vocab=VOCAB, dim=256, heads=4, layers=2, ctx=128).blocks).to("cuda:1")
        self.head = nn.Linear(256, VOCAB).to("cuda:1")

    def forward(self, idx):
        t = idx.shape[1]
        x = self.a.tok(idx) + self.a.pos(torch.arange(t, device=idx.device))
        for blk in self.a.blocks:
            x = blk(x, None)
        x = x.to("cuda:1")
        for blk in self.b:
            x = blk(x, None)
        return self.head(x)


def two_devices(steps):
    if torch.cuda.device_count() < 2:
        raise SystemExit("two_devices needs two CUDA devices")
    model = Split()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for s in range(steps):
        idx = batch(8, seq_len(s), device="cuda:0")
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), idx[:, 1:].to("cuda:1").reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return model, opt


def data_parallel(steps):
    """nn.DataParallel over two devices: every forward copies the model to
    cuda:1 (a broadcast DataParallel makes with NCCL on GPUs) and the
    backward reduces the gradients onto cuda:0."""
    if torch.cuda.device_count() < 2:
        raise SystemExit("data_parallel needs two CUDA devices")
    model = nn.DataParallel(TinyGPT(vocab=VOCAB, dim=256, heads=4, layers=2, ctx=128).cuda(), device_ids=[0, 1])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for s in range(steps):
        idx = batch(16, seq_len(s))
        loss = F.cross_entropy(model(idx[:, :-1]).reshape(-1, VOCAB), idx[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return model, opt


WORKLOADS = {
    "gpt": gpt,
    "gpt_ckpt": lambda steps: gpt(steps, ckpt=(0, 2)),
    "conv": conv,
    "amp": amp,
    "streams": streams,
    "big_logits": big_logits,
    "gc": gc,
    "oom": oom,
    "two_devices": two_devices,
    "data_parallel": data_parallel,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", choices=sorted(WORKLOADS))
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("workloads.py: torch sees no CUDA device")
    global trained
    trained = WORKLOADS[a.name](a.steps)  # alive to the end: the final state holds it
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
