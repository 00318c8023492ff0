"""workload.py - the small torch model the example tests train
(tests/pytest_plugin/test_*.py): a two-layer network whose hidden width
sets its memory, trained for a few steps with SGD."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.encoder = nn.Linear(1024, width)
        self.head = nn.Linear(width, 1024)

    def forward(self, x):
        return self.head(torch.relu(self.encoder(x)))


def train(width, batch, steps, keep=None):
    """Trains Net(width) on random batches; `keep` (a list) gets each step's
    output, as code that collects predictions on the device does."""
    model = Net(width).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        out = model(torch.randn(batch, 1024, device="cuda"))
        out.sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        if keep is not None:
            keep.append(out.detach())
