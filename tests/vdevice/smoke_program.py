"""smoke_program.py - a tiny PyTorch program for the virtual device smoke test
(tests/vdevice/smoke.py): a Linear layer trained a few steps with AdamW, a
tensor copied back to the host, then torch's own figures as JSON on the last
line of stdout."""
import json

import torch

assert torch.cuda.is_available(), "torch sees no CUDA device"
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512)).cuda()
opt = torch.optim.AdamW(model.parameters())
for _ in range(3):
    loss = model(torch.randn(64, 512, device="cuda")).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
host = torch.arange(1000, dtype=torch.float32)
back = host.cuda().cpu()
props = torch.cuda.get_device_properties(0)
print(json.dumps({
    "copy_ok": bool(torch.equal(host, back)),
    "name": props.name,
    "total_memory": props.total_memory,
    "max_allocated": torch.cuda.max_memory_allocated(),
    "max_reserved": torch.cuda.max_memory_reserved(),
    "allocated": torch.cuda.memory_allocated(),
    "device_count": torch.cuda.device_count(),
}))
