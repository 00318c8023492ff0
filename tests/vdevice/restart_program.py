"""restart_program.py - the elastic-restart workload of tests/vdevice/ranks.py,
run by torchrun --max-restarts 1: on the first attempt rank 1 allocates and
fails once rank 0 has allocated (a file in the working folder says so; a
slow machine may start rank 0 late), while rank 0 waits (torchrun stops it);
on the second attempt both ranks allocate and finish."""
import os
import sys
import time

import torch

rank, attempt = int(os.environ["RANK"]), int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
x = torch.empty((attempt + 1) << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
ready = "rank0.attempt0.allocated"
if attempt == 0 and rank == 1:
    deadline = time.monotonic() + 300
    while not os.path.exists(ready) and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.exit(3)
if attempt == 0:
    open(ready, "w").close()
    time.sleep(300)  # stopped by torchrun when rank 1 fails
