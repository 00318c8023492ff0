"""snapshot_program.py OUT.pickle WARMUP STEPS MAX_ENTRIES - a small AdamW
training loop whose memory history torch itself records from the middle of
the run: WARMUP steps first, then _record_memory_history(stacks="python",
max_entries=MAX_ENTRIES) (0 = unbounded), STEPS more steps and
_dump_snapshot. Run by tests/vdevice/snapshots.py under `memhist simulate`
(the virtual device), which records the same run; prints torch's own
figures as one JSON line."""
import json
import sys

import torch


def main():
    out, warmup, steps, max_entries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 256)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(batch):
        x = torch.randn(batch, 512, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for i in range(warmup):
        step(64 + 16 * i)
    torch.cuda.reset_peak_memory_stats()
    kw = {"stacks": "python"}
    if max_entries:
        kw["max_entries"] = max_entries
    torch.cuda.memory._record_memory_history(**kw)
    for i in range(steps):
        step(64 + 32 * (i % 3))
    torch.cuda.memory._dump_snapshot(out)
    print(json.dumps({"max_allocated": torch.cuda.max_memory_allocated(),
                      "allocated": torch.cuda.memory_allocated(),
                      "reserved": torch.cuda.memory_reserved(),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
