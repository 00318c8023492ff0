"""midrun_program.py - the workload of tests/vdevice/check_midrun.py: trains
the tiny GPT for two steps, then starts recording with memhist.start() (the
parameters and the first optimizer's state are live by then), trains three
more steps with a new optimizer and stops. Writes torch's own figures of the
recorded part to the JSON file named by its first argument."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
from tiny_gpt import TinyGPT, train  # noqa: E402

import memhist  # noqa: E402

if os.environ.get("MEMHIST_VDEVICE") == "1":
    from memhist import _vdevice
    _vdevice.install(torch.cuda)

model = TinyGPT(layers=2, dim=256, heads=4, ctx=128).cuda()
train(model, 2, 4, 128, 8192, "cuda")
torch.cuda.synchronize()
live_at_start = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
memhist.start(sys.argv[2])
train(model, 3, 4, 128, 8192, "cuda")
torch.cuda.synchronize()
memhist.stop()
with open(sys.argv[1], "w") as f:
    json.dump({"live_at_start": live_at_start,
               "parameters": sum(p.numel() * p.element_size() for p in model.parameters()),
               "max_memory_allocated": torch.cuda.max_memory_allocated(),
               "max_memory_reserved": torch.cuda.max_memory_reserved()}, f)
