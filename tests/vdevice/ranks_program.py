"""ranks_program.py - the workload of tests/vdevice/ranks.py, run by torchrun
with 2 ranks under `memhist simulate`: `ranks_program.py TRUTH_DIR [ddp]`:
DDP (gloo) trains a small model on the rank's own device for three steps (the
last with the largest batch) and rank 0 starts a helper process ("spawn")
that uses CUDA too; `... fsdp2`: FSDP2
(`fully_shard` on each linear layer and the model) trains it with AdamW;
`... fsdp1`: FSDP (FullyShardedDataParallel) wraps each of two blocks and
the model (auto_wrap_policy) and trains it with AdamW. In all, rank 1 holds an extra buffer so the ranks' peaks differ; `... spawn`:
the DDP workload in 2 processes torch.multiprocessing.spawn starts (no
torchrun, no RANK in the environment; init_process_group names the rank);
`... launcher`: the DDP workload in the first process, rank 0, which sets
LOCAL_RANK and WORLD_SIZE in itself once it runs and starts rank 1 with
them (as Lightning's launcher does).
Each rank writes torch's own figures to TRUTH_DIR/truth.rank<R>.json."""
import json
import multiprocessing as mp
import os
import socket
import sys

import torch
import torch.distributed as dist


class Block(torch.nn.Module):
    """The unit fsdp1 wraps: a residual block."""
    def __init__(self):
        super().__init__()
        self.ff = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256))

    def forward(self, x):
        return x + self.ff(x)


def helper(device):
    torch.cuda.set_device(device)
    x = torch.ones(1 << 18, device="cuda")
    torch.cuda.synchronize()
    del x


def train(rank, local, truth_dir, mode, init_method=None):
    torch.cuda.set_device(local)
    if init_method:
        dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2)
    else:
        dist.init_process_group("gloo")
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).cuda()
    if mode == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy
        model = FullyShardedDataParallel(torch.nn.Sequential(Block(), Block()).cuda(), device_id=local,
                                         auto_wrap_policy=ModuleWrapPolicy({Block}))
        opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    elif mode == "fsdp2":
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
    if rank == 0 and mode == "ddp":
        p = mp.get_context("spawn").Process(target=helper, args=(local,))
        p.start()
        p.join()
        assert p.exitcode == 0, p.exitcode
    del extra
    with open(os.path.join(truth_dir, "truth.rank%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "device": local, "max_allocated": torch.cuda.max_memory_allocated(),
                   "max_reserved": torch.cuda.max_memory_reserved()}, f)
    dist.destroy_process_group()


def spawned(rank, truth_dir, init_method):
    train(rank, rank, truth_dir, "spawn", init_method)


def launcher(truth_dir):
    """As Lightning's launcher: the first process is rank 0, sets the
    ranks' environment in itself once it runs, and starts rank 1 with it."""
    import subprocess
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    init = "tcp://127.0.0.1:%d" % port
    os.environ.update(LOCAL_RANK="0", WORLD_SIZE="2")
    child = subprocess.Popen([sys.executable, __file__, truth_dir, "launched", init],
                             env=dict(os.environ, LOCAL_RANK="1"))
    train(0, 0, truth_dir, "launcher", init)
    assert child.wait() == 0, child.returncode


def main():
    truth_dir = sys.argv[1]
    mode = sys.argv[2] if len(sys.argv) > 2 else "ddp"
    if mode == "launcher":
        launcher(truth_dir)
        return
    if mode == "launched":
        train(1, 1, truth_dir, mode, sys.argv[3])
        return
    if mode == "spawn":  # no torchrun: the ranks know their rank from init_process_group only
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        torch.multiprocessing.spawn(spawned, args=(truth_dir, "tcp://127.0.0.1:%d" % port), nprocs=2)
        return
    train(int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"]), truth_dir, mode)


if __name__ == "__main__":
    main()
