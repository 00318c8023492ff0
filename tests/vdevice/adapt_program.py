"""adapt_program.py - what `memhist simulate` adapts in a PyTorch program on
the virtual device (tests/vdevice/smoke.py): cuDNN stays off even when turned
on, NCCL (the default backend) becomes gloo, and data-dependent operations,
decisions on tensor values (once, however many) and CUDA graphs are flagged. Prints torch's view as JSON on its last line."""
import json
import os
import socket
import tempfile

import torch
import torch.distributed as dist

x = torch.zeros(8, device="cuda")
torch.backends.cudnn.enabled = True
conv = torch.nn.Conv2d(3, 4, 3).cuda()
conv(torch.randn(1, 3, 8, 8, device="cuda")).sum().backward()  # native path, no cuDNN error
torch.nonzero(x)
for _ in range(3):
    if x.sum() > 0:  # a decision on a value the device does not compute
        pass
x.sum().item()
graph_refused = False
try:
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        x + 1
except RuntimeError:
    graph_refused = True
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
dist.init_process_group(init_method="tcp://127.0.0.1:%d" % port, rank=0, world_size=1)
t = torch.ones(4, device="cuda")
dist.all_reduce(t)
backend = dist.get_backend()
dist.destroy_process_group()
print(json.dumps({"cudnn_enabled": torch.backends.cudnn.enabled, "backend": backend,
                  "graph_refused": graph_refused}))
