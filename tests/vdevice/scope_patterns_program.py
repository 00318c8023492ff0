"""scope_patterns_program.py - a model built the ways libraries build them,
for tests/vdevice/check_scopes.py: every module scope implementation must
attribute its allocations alike. Its classes are defined after recording
starts (under `memhist simulate`), and their forwards are:

- wrapped by decorators, one with a (self, *args) wrapper and one with a
  (*args, **kwargs) wrapper (functools.wraps, as transformers does);
- calling super().forward();
- using self only through a closure (self is a cell variable);
- replaced on the module object by a functools.partial around the
  original (as accelerate's hooks do);
- assigned to the class after its definition;
- in a class whose base defines __init_subclass__ without calling super();
- running a submodule under non-reentrant activation checkpointing, whose
  recomputation inside backward stops by raising once it has what backward
  needs (every later backward allocation would be attributed to a scope
  the exception left open);
- compiled with torch.compile (the last three blocks, alike: the aot_eager
  backend, which runs on the virtual device), two wrapped in an
  OptimizedModule and one compiled in place (module.compile(), whose hooks
  run inside the compiled code): they run one graph module, called with
  gradients off and returning its inputs among its outputs.

    python tests/vdevice/scope_patterns_program.py [--steps N]
"""
import argparse
import functools

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


def keeps_self(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    return wrapper


def keeps_args(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


class Decorated(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    @keeps_self
    def forward(self, x):
        return torch.tanh(self.proj(x))


class ArgsDecorated(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, 2 * d)

    @keeps_args
    def forward(self, x):
        a, b = self.proj(x).chunk(2, dim=-1)
        return a * torch.sigmoid(b)


class Base(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x) * 2


class Derived(Base):
    def forward(self, x):
        return super().forward(x) + x.exp()


class Closure(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up = nn.Linear(d, 4 * d)
        self.down = nn.Linear(4 * d, d)

    def forward(self, x):
        def inner():
            return self.down(torch.relu(self.up(x)))
        return inner()


class Hooked(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return self.lin(x) + 1


def add_hook(module):
    """Replaces module.forward the way accelerate's add_hook_to_module does."""
    module._old_forward = module.forward

    def new_forward(mod, *args, **kwargs):
        args = tuple(a * 1.0 for a in args)  # a pre-forward step that allocates
        return mod._old_forward(*args, **kwargs)
    module.forward = functools.partial(new_forward, module)


class Patched(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return self.lin(x)


def patched_forward(self, x):
    return torch.sin(self.lin(x)) * 3


Patched.forward = patched_forward


class Quiet(nn.Module):
    def __init_subclass__(cls, **kwargs):
        cls.quiet = True


class QuietChild(Quiet):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return self.lin(x).square()


class Checkpointed(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        return checkpoint(self.inner, x, use_reentrant=False)


class Twin(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return torch.tanh(self.lin(x)) * x


class Model(nn.Module):
    def __init__(self, d=256, vocab=1024):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([Decorated(d), ArgsDecorated(d), Derived(d), Closure(d), Hooked(d),
                                     Patched(d), QuietChild(d), Checkpointed(d),
                                     torch.compile(Twin(d), backend="aot_eager"),
                                     torch.compile(Twin(d), backend="aot_eager"), Twin(d)])
        self.blocks[-1].compile(backend="aot_eager")
        add_hook(self.blocks[4])
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.emb(idx)
        for b in self.blocks:
            x = x + b(x)
        return self.head(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Model().cuda()
    opt = torch.optim.AdamW(model.parameters())
    for _ in range(args.steps):
        idx = torch.randint(0, 1024, (8, 64), device="cuda")
        loss = nn.functional.cross_entropy(model(idx).flatten(0, 1), idx.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
