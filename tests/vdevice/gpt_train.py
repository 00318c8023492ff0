"""gpt_train.py - a GPT-style training script with no memhist calls, the
program the module-scope and category tests record unchanged
(tests/vdevice/check_answers.py).

    python gpt_train.py [--steps N] [--layers L] [--ckpt 0,2|all] [--compile 0,2|all]
                        [--in-place] [--accumulate K] [--keep-grads] [--teacher L]
                        [--closure] [--step-function] [--named-blocks] [--shared]
                        [--method-step] [--post-norm] [--wrapped] [--truth FILE]

nanoGPT-like naming (transformer.wte, transformer.h.<i>.attn, .mlp, lm_head),
AdamW, set-up (model built and moved to the GPU) before the first step.
--named-blocks keeps the blocks as attributes transformer.block1,
transformer.block2, ... instead of a ModuleList, as hand-written models do.
--shared has one block (transformer.h.0) applied L times, its weights shared
as in ALBERT; --ckpt all then checkpoints each of its calls.
--post-norm normalizes after each residual add (BERT's and ALBERT's
order): a block returns its last LayerNorm's output, one autograd node for
both modules.
--wrapped builds the model on the CPU and hands it and its optimizer to
train_wrapper.prepare (a training library's wrapper: it moves the model to
the GPU and wraps the optimizer).
--method-step never calls the model's forward: a method of the model runs
its modules, as a LightningModule's training_step does.
--ckpt wraps those blocks in non-reentrant torch.utils.checkpoint;
--compile compiles those blocks, or with "all" the whole model, with
torch.compile (the aot_eager backend: FX graphs and AOT autograd, no
kernels generated, so it runs on the virtual device), each wrapped in an
OptimizedModule, or with --in-place by module.compile();
--accumulate K runs K micro-batches (forward and backward each) per
optimizer step (gradient accumulation);
--keep-grads zeroes gradients instead of dropping them (so they are live
at every later peak). --teacher L distils: a second GPT of L layers (the
same class, so the same module paths) runs first each step, without
gradients, and the loss also pulls the model's logits to the teacher's.
--closure runs each step's forward and backward in a closure given to
opt.step(closure), as Lightning's training loop and LBFGS do.
--step-function keeps nothing of the forward once its backward is done (the
logits and loss are a function's locals, as in HF Trainer's training_step);
otherwise they live until the next step's forward replaces them. --truth
writes what torch itself says as JSON at the end: parameter and
optimizer-state bytes from the tensors and from the allocator blocks that
hold them (torch's memory_snapshot), the allocator's peak, the steps.
"""
import argparse
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(torch.ones(t, t, device=x.device, dtype=torch.bool).triu(1), float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.c_proj = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, dim, heads, post_norm=False):
        super().__init__()
        self.post_norm = post_norm
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = MLP(dim)

    def forward(self, x):
        if self.post_norm:
            x = self.ln_1(x + self.attn(x))
            return self.ln_2(x + self.mlp(x))
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, ctx, dim, heads, layers, ckpt=(), named=False, shared=False,
                 post_norm=False):
        super().__init__()
        self.calls = layers
        blocks = [Block(dim, heads, post_norm) for _ in range(1 if shared else layers)]
        self.names = ["block%d" % (i + 1) for i in range(layers)] if named else None
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, dim), wpe=nn.Embedding(ctx, dim),
            **(dict(zip(self.names, blocks)) if named else dict(h=nn.ModuleList(blocks))),
            ln_f=nn.LayerNorm(dim)))
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.ckpt = set(ckpt)

    def block(self, i):
        if self.names:
            return self.transformer[self.names[i]]
        return self.transformer.h[i % len(self.transformer.h)]

    def set_block(self, i, block):
        if self.names:
            self.transformer[self.names[i]] = block
        else:
            self.transformer.h[i] = block

    def forward(self, idx):
        return self.logits(idx)

    def logits(self, idx):
        t = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(t, device=idx.device))
        for i in range(self.calls):
            block = self.block(i)
            x = checkpoint(block, x, use_reentrant=False) if i in self.ckpt else block(x)
        return self.lm_head(self.transformer.ln_f(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--ckpt", default="")
    ap.add_argument("--compile", default="")
    ap.add_argument("--in-place", action="store_true")
    ap.add_argument("--accumulate", type=int, default=1)
    ap.add_argument("--keep-grads", action="store_true")
    ap.add_argument("--teacher", type=int, default=0)
    ap.add_argument("--closure", action="store_true")
    ap.add_argument("--step-function", action="store_true")
    ap.add_argument("--named-blocks", action="store_true")
    ap.add_argument("--shared", action="store_true")
    ap.add_argument("--method-step", action="store_true")
    ap.add_argument("--post-norm", action="store_true")
    ap.add_argument("--wrapped", action="store_true")
    ap.add_argument("--truth")
    a = ap.parse_args()
    ckpt = range(a.layers) if a.ckpt == "all" else [int(i) for i in a.ckpt.split(",") if i]
    vocab, ctx, batch = 8192, 256, 8
    torch.manual_seed(0)
    model = GPT(vocab, ctx, 384, 6, a.layers, ckpt, a.named_blocks, a.shared, a.post_norm)
    if a.wrapped:
        import train_wrapper
        model, opt = train_wrapper.prepare(model, torch.optim.AdamW(model.parameters(), lr=1e-4))
    else:
        model = model.to("cuda")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    teacher = GPT(vocab, ctx, 384, 6, a.teacher, []).to("cuda").eval() if a.teacher else None
    run = model.logits if a.method_step else model
    if a.compile == "all":
        run = torch.compile(model, backend="aot_eager")
    for i in (int(i) for i in a.compile.split(",") if i and a.compile != "all"):
        if a.in_place:
            model.block(i).compile(backend="aot_eager")
        else:
            model.set_block(i, torch.compile(model.block(i), backend="aot_eager"))
    torch.cuda.reset_peak_memory_stats()
    def forward_backward():
        for _ in range(a.accumulate):
            idx = torch.randint(0, vocab, (batch, ctx + 1)).to("cuda")
            if teacher is not None:
                with torch.no_grad():
                    target = F.softmax(teacher(idx[:, :-1]), dim=-1)
            logits = run(idx[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, vocab), idx[:, 1:].reshape(-1))
            if teacher is not None:
                loss = loss + F.kl_div(F.log_softmax(logits, dim=-1), target, reduction="batchmean")
            (loss / a.accumulate).backward()
        return logits, loss

    held = {}

    def closure():  # logits and loss live until the next step's, as below
        held["out"] = forward_backward()
        return held["out"][1]

    for _ in range(a.steps):
        if a.closure:
            opt.step(closure)
        elif a.step_function:
            forward_backward()
            opt.step()
        else:
            logits, loss = forward_backward()
            opt.step()
        opt.zero_grad(set_to_none=not a.keep_grads)
    if a.truth:
        def nbytes(t):
            return t.numel() * t.element_size()
        state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v) and v.is_cuda]
        blocks = {b["address"]: b["size"] for seg in torch.cuda.memory_snapshot()
                  for b in seg["blocks"] if b["state"] == "active_allocated"}

        def block(t):  # the allocator's block holding the tensor
            return blocks.get(t.data_ptr(), 0)
        truth = {
            "parameter_bytes": sum(nbytes(p) for p in model.parameters()),
            "parameter_tensors": [nbytes(p) for p in model.parameters()],
            "optimizer_state_bytes": sum(nbytes(v) for v in state),
            "optimizer_state_tensors": [nbytes(v) for v in state],
            "parameter_blocks": sum(block(p) for p in model.parameters()),
            "optimizer_state_blocks": sum(block(v) for v in state),
            "gradient_blocks": sum(block(p.grad) for p in model.parameters() if p.grad is not None),
            "peak_allocated": torch.cuda.max_memory_allocated(),
            "steps": a.steps,
            "layers": a.layers,
        }
        with open(a.truth, "w") as f:
            json.dump(truth, f)


if __name__ == "__main__":
    main()
