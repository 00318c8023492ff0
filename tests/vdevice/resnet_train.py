"""resnet_train.py - a ResNet-style training script with no memhist calls,
for the checkpointing plan on a convolutional network
(tests/vdevice/check_answers.py, case plan_cnn).

    python resnet_train.py [--steps N] [--ckpt layer1.0,maxpool] [--truth FILE]

Bottleneck blocks as torchvision builds them (1x1, 3x3 and 1x1
convolutions with batch norm, the shortcut added in place and an in-place
ReLU at the end, so a block's output is also what its own last ReLU keeps
for backward), in stages layer1..layer3 of nn.Sequential (module paths
layer1.0, layer2.1, ...), SGD with momentum. --ckpt runs those modules
(any module path) under non-reentrant torch.utils.checkpoint; --truth
writes torch's allocated peak and the steps as JSON.
"""
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += x if self.downsample is None else self.downsample(x)
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, blocks=(2, 2, 2), classes=100):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin, stages = 64, []
        for i, n in enumerate(blocks):
            width = 64 * 2 ** i
            stages.append(nn.Sequential(*(Bottleneck(cin if j == 0 else 4 * width, width,
                                                     2 if i and j == 0 else 1) for j in range(n))))
            cin = 4 * width
        self.layer1, self.layer2, self.layer3 = stages
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def checkpointed(module):
    """Runs the module's forward under checkpoint from now on."""
    forward = module.forward
    module.forward = lambda *a, **k: checkpoint(forward, *a, use_reentrant=False, **k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--ckpt", default="")
    ap.add_argument("--truth")
    a = ap.parse_args()
    torch.manual_seed(0)
    model = ResNet().to("cuda")
    for name in (n for n in a.ckpt.split(",") if n):
        checkpointed(model.get_submodule(name))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    torch.cuda.reset_peak_memory_stats()
    for _ in range(a.steps):
        x = torch.randn(16, 3, 160, 160, device="cuda")
        y = torch.randint(0, 100, (16,), device="cuda")
        F.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump({"peak_allocated": torch.cuda.max_memory_allocated(), "steps": a.steps}, f)


if __name__ == "__main__":
    main()
