"""seeded_program.py OUT.pickle MAX_ENTRIES - a training loop whose memory
history torch itself records from the middle of the run, for the what-if
replay seeded from the trace's start (tests/vdevice/whatif_seeded.py).

Two warm-up steps run before _record_memory_history(stacks="python",
max_entries=MAX_ENTRIES) (0 = unbounded), so segments and blocks exist
before the trace: the model, the AdamW state and a tensor kept across steps.
The traced steps grow the batch (new segments), call empty_cache() once
(segment frees) and free the kept tensor (a block allocated before the trace
and freed during it). The allocator settings come from the environment
(PYTORCH_CUDA_ALLOC_CONF). Prints torch's own figures since the trace began
as one JSON line."""
import json
import sys

import torch


def main():
    out, max_entries = sys.argv[1], int(sys.argv[2])
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 256)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(batch):
        x = torch.randn(batch, 512, device="cuda")
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    kept = [torch.empty(3 << 20, device="cuda"), torch.empty(1000, device="cuda")]
    for batch in (96, 64):
        step(batch)
    torch.cuda.reset_peak_memory_stats()
    kw = {"stacks": "python"}
    if max_entries:
        kw["max_entries"] = max_entries
    torch.cuda.memory._record_memory_history(**kw)
    for i, batch in enumerate((64, 256, 512, 128, 1024, 256)):
        if i == 2:
            del kept[:]
        if i == 4:
            torch.cuda.empty_cache()
        step(batch)
    torch.cuda.memory._dump_snapshot(out)
    print(json.dumps({"max_reserved": torch.cuda.max_memory_reserved(),
                      "max_allocated": torch.cuda.max_memory_allocated(),
                      "reserved": torch.cuda.memory_reserved(),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
