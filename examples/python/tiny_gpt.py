"""tiny_gpt.py - a small GPT-style language model, torch only (no downloads).

Shared by train_gpt.py, train_gpt_checkpoint.py and oom.py. Each Block can
run under activation checkpointing (torch.utils.checkpoint) so the recorded
peak shows what checkpointing saves.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.checkpointed = False

    def _forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))

    def forward(self, x, mask):
        if self.checkpointed and self.training:
            return checkpoint(self._forward, x, mask, use_reentrant=False)
        return self._forward(x, mask)


class TinyGPT(nn.Module):
    def __init__(self, vocab=8192, dim=512, heads=8, layers=6, ctx=256):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf"), device=idx.device), diagonal=1)
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.ln(x))


def train(model, steps, batch, ctx, vocab, device, lr=3e-4):
    """Trains on random tokens; returns the losses."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator(device="cpu").manual_seed(0)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, vocab, (batch, ctx + 1), generator=gen).to(device)
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), idx[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses
