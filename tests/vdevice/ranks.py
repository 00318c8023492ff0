"""ranks.py - distributed runs under `memhist simulate` (ctest label
"vdevice"): torchrun with 2 ranks (DDP on gloo) on virtual devices, rank 0
starting a CUDA-using helper process, an elastic restart after a failing
rank (restart_program.py), and FSDP2 (`fully_shard`, one file per rank, each
rank's peaks torch's, the rank table's worst rank, its DTensor shards
counted as parameters and optimizer state), FSDP's wrapped blocks as layers
whose backward is seen, DDP ranks that torch.multiprocessing.spawn starts
without torchrun (their headers name the rank init_process_group gives),
and rank 0 as the process that launches rank 1 (Lightning's way: named
rank 0 from torch.distributed). Asserts one file per process (the
helper's FILE.rank0.pid<P> beside FILE.rank0 and FILE.rank1), no file
truncated (each complete, not damaged), the failed attempt's files kept
beside FILE.rank<R>.attempt1, headers naming rank, world size,
host and parent process, each rank's peaks equal to that rank's
torch.cuda.max_memory_allocated/reserved, record's closing summary, the
rank table and worst rank of `report --json`, and `--device` errors naming
the file and its devices. Environment: MEMHIST, MH_BINARY_DIR. Exits 77
(skip) without torch, torchrun or the virtual device libraries."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MEMHIST = os.environ["MEMHIST"]
HERE = os.path.dirname(os.path.abspath(__file__))


def skip(why):
    print("skip: " + why)
    sys.exit(77)


def run(args, **kw):
    return subprocess.run([MEMHIST] + args, capture_output=True, text=True, timeout=500, **kw)


def record(tmp, mode="ddp", name="run.memhist"):
    out = os.path.join(tmp, name)
    r = run(["simulate", "--no-report", "--device-memory", "2GiB", "--context-memory", "64MiB", "-o", out,
             "--", "torchrun", "--standalone", "--nproc-per-node", "2",
             os.path.join(HERE, "ranks_program.py"), tmp, mode], cwd=tmp)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    return out, r.stderr


def check_files(out, stderr):
    files = sorted(glob.glob(out + ".*"))
    names = [os.path.basename(f) for f in files]
    helpers = [n for n in names if re.fullmatch(r"run\.memhist\.rank0\.pid\d+", n)]
    assert "run.memhist.rank0" in names and "run.memhist.rank1" in names, names
    assert len(helpers) == 1 and len(names) == 3, names
    assert "3 files written" in stderr and "next: memhist report run.memhist.*" in stderr, stderr[-2000:]
    assert "nothing recorded" not in stderr, stderr[-2000:]
    metas = {}
    for f in files:
        r = run(["info", "--json", f])
        assert r.returncode == 0, r.stderr
        info = json.loads(r.stdout)
        assert info["complete"] and not info["damaged"], (f, info)
        metas[os.path.basename(f)] = info["meta"]
    for n, m in metas.items():
        assert m["world_size"] == "2" and m["host"] and m["parent_pid"].isdigit(), (n, m)
        assert m["rank"] == ("1" if n.endswith("rank1") else "0"), (n, m)
    assert metas[helpers[0]]["rank_process"] == "helper" and metas["run.memhist.rank0"]["rank_process"] == "main"
    assert metas[helpers[0]]["parent_pid"] == metas["run.memhist.rank0"]["pid"], metas
    return files


def check_rank_table(out, tmp):
    """report --json over the two rank files: each rank's peaks are torch's,
    the worst rank the one torch says reserved most."""
    truth = [json.load(open(os.path.join(tmp, "truth.rank%d.json" % r))) for r in (0, 1)]
    r = run(["report", "--json", out + ".rank0", out + ".rank1"])
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert len(rep["files"]) == 2 and len(rep["ranks"]) == 2, rep.keys()
    for row, t in zip(rep["ranks"], truth):
        assert row["rank"] == t["rank"] and row["device"] == t["device"], (row, t)
        assert row["peak_allocated"]["bytes"] == t["max_allocated"], (row, t)
        assert row["peak_reserved"]["bytes"] == t["max_reserved"], (row, t)
        assert row["steps"] >= 2 and row["ooms"] == 0, row
    worst = max(truth, key=lambda t: t["max_reserved"])
    assert truth[0]["max_reserved"] != truth[1]["max_reserved"], truth
    assert rep["worst_rank"]["rank"] == worst["rank"], (rep["worst_rank"], truth)
    assert rep["worst_rank"]["peak_reserved"] == worst["max_reserved"], rep["worst_rank"]
    assert rep["worst_rank"]["tied_with"] == [], rep["worst_rank"]
    return rep, worst


def check_ddp_buckets(out):
    """The gradient buckets DDP rebuilds in its second forward and keeps are
    no activations: the wrapper's own row holds none at the peak (in the
    last step, after the rebuild), and they count as unknown. The model's
    layers have the paths they have without DDP, and their backward scopes
    (the last layer's output is the wrapper's and the model's too)."""
    r = run(["layers", "--json", out + ".rank0"])
    assert r.returncode == 0, r.stderr
    dev = json.loads(r.stdout)["files"][0]["devices"][0]
    assert dev["peak_step"] == 2, dev["peak_step"]
    root = [row for row in dev["layers"] if row["layer"] == "DistributedDataParallel"]
    assert not root or root[0]["by_category"]["activation"] == 0, root
    # the model's own paths, as without DDP: "0", not "module.0"; the last
    # layer's backward (its weight's gradient) is its own, not the model's
    rows = {row["layer"]: row["by_category"] for row in dev["layers"]}
    names = list(rows)
    assert "0" in names and rows.get("2", {}).get("gradient", 0) > 0, rows
    assert not any(n == "module" or n.startswith("module.") for n in names), names
    params = 4 * (256 * 1024 + 1024 + 1024 * 256 + 256)
    assert dev["by_category"]["unknown"] >= params, dev["by_category"]


def check_fsdp2(tmp):
    """FSDP2 (fully_shard) on 2 ranks: one file per process, the rank table."""
    out, stderr = record(tmp, "fsdp2", "fsdp2.memhist")
    names = sorted(os.path.basename(f) for f in glob.glob(out + ".*"))
    assert names == ["fsdp2.memhist.rank0", "fsdp2.memhist.rank1"], names
    assert "2 files written" in stderr, stderr[-2000:]
    for f in glob.glob(out + ".*"):
        info = json.loads(run(["info", "--json", f]).stdout)
        assert info["complete"] and not info["damaged"], (f, info)
    check_rank_table(out, tmp)
    check_fsdp2_categories(out)


def check_fsdp2_categories(out):
    """FSDP2's parameters, gradients and AdamW state are DTensors, wrappers
    with no memory of their own: their local shards (half of each tensor per
    rank) are what must count as parameter and optimizer state at the peak."""
    params = 4 * (256 * 1024 + 1024 + 1024 * 256 + 256)
    for rank in (0, 1):
        rep = json.loads(run(["report", "--json", "%s.rank%d" % (out, rank)]).stdout)
        cats = rep["files"][0]["devices"][0]["category_at_peak"]
        assert cats["parameter"] >= params // 2, (rank, cats)
        assert cats["optimizer_state"] >= params, (rank, cats)


def check_fsdp1_layers(tmp):
    """FSDP (FullyShardedDataParallel) wrapping each block: the wrapper and
    the block it holds have one path, so they are one layer with one call
    per step, whose backward frees the activations it saved (on rank 0)."""
    out, _ = record(tmp, "fsdp1", "fsdp1.memhist")
    rep = json.loads(run(["layers", "--json", out + ".rank0"]).stdout)
    saved = {ly["layer"]: ly["saved_activations_at_peak"] for ly in rep["files"][0]["devices"][0]["layers"]}
    assert saved.get("0", 0) > 0 and saved.get("1", 0) > 0, saved


def check_report(out, tmp):
    rep, worst = check_rank_table(out, tmp)
    text = run(["report", out + ".rank0", out + ".rank1"])
    want = "worst rank by peak reserved: %s.rank%d" % (out, worst["rank"])
    assert text.returncode == 0 and want in text.stdout, text.stdout[-1500:]
    every = json.loads(run(["report", "--json"] + sorted(glob.glob(out + ".*"))).stdout)
    assert [row["helper"] for row in every["ranks"]] == [False, True, False], every["ranks"]
    assert every["worst_rank"] == rep["worst_rank"] | {"index": 2}, (every["worst_rank"], rep["worst_rank"])
    bad = run(["report", "--device", "1", out + ".rank0"])
    assert bad.returncode == 1, (bad.returncode, bad.stderr)
    assert "run.memhist.rank0: no events for device 1; its device: 0" in bad.stderr, bad.stderr
    pickle = os.path.join(tmp, "r1.pickle")
    bad = run(["snapshot", "--device", "0", out + ".rank1", "-o", pickle])
    assert bad.returncode == 1 and not os.path.exists(pickle), (bad.returncode, bad.stderr)
    assert "run.memhist.rank1: no events for device 0" in bad.stderr, bad.stderr
    good = run(["snapshot", "--device", "1", out + ".rank1", "-o", pickle])
    assert good.returncode == 0 and os.path.getsize(pickle) > 0, good.stderr


def check_spawn(tmp):
    """Ranks torch.multiprocessing.spawn starts (no torchrun environment):
    one FILE.pid<P> each, whose header gets the rank and world size from
    torch.distributed, so the rank table names ranks 0 and 1."""
    out = os.path.join(tmp, "sp.memhist")
    r = run(["simulate", "--no-report", "--devices", "2", "--device-memory", "2GiB", "--context-memory",
             "64MiB", "-o", out, "--", sys.executable, os.path.join(HERE, "ranks_program.py"), tmp, "spawn"],
            cwd=tmp)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    files = sorted(glob.glob(out + ".pid*"))
    assert len(files) == 2, files
    rep = json.loads(run(["report", "--json"] + files).stdout)
    assert sorted(row["rank"] for row in rep["ranks"]) == [0, 1], rep["ranks"]
    for f in files:
        meta = json.loads(run(["info", "--json", f]).stdout)["meta"]
        assert meta.get("world_size") == "2", (f, meta)


def check_launcher(tmp):
    """Rank 0 as the launching process (Lightning's way): it had no rank
    when it started, so its rank comes from torch.distributed; it is rank 0,
    not a helper of the rank its later environment names."""
    out = os.path.join(tmp, "ln.memhist")
    r = run(["simulate", "--no-report", "--devices", "2", "--device-memory", "2GiB", "--context-memory",
             "64MiB", "-o", out, "--", sys.executable, os.path.join(HERE, "ranks_program.py"), tmp,
             "launcher"], cwd=tmp)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    lines = [l for l in r.stderr.splitlines() if "ln.memhist" in l and "complete" in l]
    assert len(lines) == 2 and "rank 0 (process" in lines[0] and "rank 1 (process" in lines[1], lines
    rep = json.loads(run(["report", "--json", out, out + ".rank1"]).stdout)
    assert [row["rank"] for row in rep["ranks"]] == [0, 1], rep["ranks"]


def check_restart(tmp):
    """--max-restarts 1 after a failing rank: the failed attempt's files stay."""
    out = os.path.join(tmp, "rs.memhist")
    r = run(["simulate", "--no-report", "--device-memory", "2GiB", "--context-memory", "64MiB", "-o", out,
             "--", "torchrun", "--standalone", "--nproc-per-node", "2", "--max-restarts", "1",
             "--monitor-interval", "0.5", os.path.join(HERE, "restart_program.py")], cwd=tmp)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    names = sorted(os.path.basename(f) for f in glob.glob(out + ".*"))
    want = ["rs.memhist.rank0", "rs.memhist.rank0.attempt1", "rs.memhist.rank1", "rs.memhist.rank1.attempt1"]
    assert names == want, names
    rep = json.loads(run(["report", "--json"] + [os.path.join(tmp, n) for n in names]).stdout)
    for n, row in zip(names, rep["ranks"]):
        info = json.loads(run(["info", "--json", os.path.join(tmp, n)]).stdout)
        assert info["complete"] and info["meta"]["attempt"] == ("1" if "attempt" in n else "0"), (n, info)
        allocated = (2 if "attempt" in n else 1) << 20  # the workload's tensor
        assert row["peak_allocated"]["bytes"] == allocated, (n, row)


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        skip("torch is not installed")
    if shutil.which("torchrun") is None:
        skip("torchrun is not on PATH")
    if not os.path.exists(os.path.join(os.environ["MH_BINARY_DIR"], "vdevice", "libcudart.so.13")):
        skip("the virtual device was not built (no CUDA headers)")
    with tempfile.TemporaryDirectory() as tmp:
        out, stderr = record(tmp)
        check_files(out, stderr)
        check_report(out, tmp)
        check_ddp_buckets(out)
        again_out, again = record(tmp)  # a second run replaces the first run's files
        assert len(glob.glob(again_out + ".*")) == 3, sorted(glob.glob(again_out + ".*"))
        check_restart(tmp)
        check_fsdp2(tmp)
        check_fsdp1_layers(tmp)
        check_spawn(tmp)
        check_launcher(tmp)
    print("ok: 2 ranks and a helper, one file each; rank peaks equal torch's (DDP and FSDP2)")


if __name__ == "__main__":
    main()
