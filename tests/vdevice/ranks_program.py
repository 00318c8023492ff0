"""ranks_program.py - the workload of tests/vdevice/ranks.py, run by torchrun
with 2 ranks under `memhist simulate`: `ranks_program.py TRUTH_DIR [ddp]`:
DDP (gloo) trains a small model on the rank's own device for three steps (the
last with the largest batch) and rank 0 starts a helper process ("spawn")
that uses CUDA too; `... fsdp2`: FSDP2
(`fully_shard` on each linear layer and the model) trains it with AdamW. In
both, rank 1 holds an extra buffer so the ranks' peaks differ. Each rank
writes torch's own figures to TRUTH_DIR/truth.rank<R>.json."""
import json
import multiprocessing as mp
import os
import sys

import torch
import torch.distributed as dist


def helper(device):
    torch.cuda.set_device(device)
    x = torch.ones(1 << 18, device="cuda")
    torch.cuda.synchronize()
    del x


def main():
    truth_dir = sys.argv[1]
    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    fsdp2 = len(sys.argv) > 2 and sys.argv[2] == "fsdp2"
    dist.init_process_group("gloo")
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).cuda()
    if fsdp2:
        from torch.distributed.fsdp import fully_shard
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer)
        fully_shard(model)
        opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    else:
        model = torch.nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
    extra = torch.empty(64 << 20, dtype=torch.uint8, device="cuda") if rank == 1 else None
    for batch in (32, 32, 512):  # the last step's larger batch sets the peak, after DDP rebuilt its buckets
        model(torch.randn(batch, 256, device="cuda")).square().mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    if rank == 0 and not fsdp2:
        p = mp.get_context("spawn").Process(target=helper, args=(local,))
        p.start()
        p.join()
        assert p.exitcode == 0, p.exitcode
    del extra
    with open(os.path.join(truth_dir, "truth.rank%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "device": local, "max_allocated": torch.cuda.max_memory_allocated(),
                   "max_reserved": torch.cuda.max_memory_reserved()}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
