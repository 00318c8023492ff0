"""check_export_ranks.py - `memhist export` of a torchrun recording on the virtual
device (ctest label "vdevice"): 2 DDP ranks and a helper process rank 0 starts
(tests/vdevice/ranks_program.py), recorded by `memhist simulate -- torchrun`.
The dataset, read by DuckDB, gives each rank's peaks as report --json's rank
table and torch's own max_memory_allocated/reserved, each file's per-step
table and the step peaks from its events, the bytes by category at the
peak; memhist.read() of the live recording gives the same, its runs table
names rank, world size, host and torch version. The dataset and the
expected figures stay in OUT for the Spark test (check_export_spark.py).
Usage: check_export_ranks.py OUT. Environment: MEMHIST, MH_BINARY_DIR.
Exits 77 (skip) without torch, torchrun, pyarrow or duckdb."""
import glob
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MEMHIST = os.environ["MEMHIST"]
sys.path.insert(0, os.path.join(os.environ["MH_BINARY_DIR"], "python"))
sys.path.insert(0, HERE)


def skip(why):
    print("skip: " + why)
    sys.exit(77)


try:
    import duckdb  # noqa: F401
    import pyarrow  # noqa: F401
    import torch  # noqa: F401
except ImportError as e:
    skip("%s (scripts/setup.sh installs it)" % e)
if shutil.which("torchrun") is None:
    skip("no torchrun")

import export_checks as ec  # noqa: E402
import memhist  # noqa: E402


def record(out_dir):
    out = os.path.join(out_dir, "run.memhist")
    program = os.path.join(HERE, "..", "vdevice", "ranks_program.py")
    r = subprocess.run([MEMHIST, "simulate", "--no-report", "--device-memory", "2GiB",
                        "--context-memory", "64MiB", "-o", out, "--", "torchrun", "--standalone",
                        "--nproc-per-node", "2", program, out_dir, "ddp"],
                       capture_output=True, text=True, timeout=500, cwd=out_dir)
    if r.returncode != 0 and "virtual device" in r.stderr and "not found" in r.stderr:
        skip("the virtual device libraries are not built")
    assert r.returncode == 0, r.stderr[-3000:]
    files = sorted(glob.glob(out + ".rank*"))
    assert len(files) == 3, files  # rank 0, rank 1 and rank 0's helper
    return files


def main():
    out_dir = os.path.abspath(sys.argv[1])
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    files = record(out_dir)
    rep = ec.report_json(files)
    want = ec.expected(rep)
    truth = {r: json.load(open(os.path.join(out_dir, "truth.rank%d.json" % r))) for r in (0, 1)}
    for r, t in truth.items():  # the helper allocates less than its rank
        assert want["ranks"][r] == (t["max_allocated"], t["max_reserved"]), (r, want["ranks"], t)
    ds = os.path.join(out_dir, "ds")
    r = subprocess.run([MEMHIST, "export", "-o", ds] + files, capture_output=True, text=True,
                       timeout=500)
    assert r.returncode == 0, r.stderr
    ec.query_checks(ec.duckdb_sql(ec.duckdb_over(ds)), want)
    data = memhist.read(files)
    ec.query_checks(ec.duckdb_sql(ec.duckdb_over_tables(data)), want)
    runs = data.runs.to_pandas()
    assert sorted(runs["rank"]) == [0, 0, 1] and set(runs["world_size"]) == {2}, runs
    assert sorted(runs["rank_process"]) == ["helper", "main", "main"], runs["rank_process"]
    assert set(runs["torch_version"]) == {torch.__version__} and all(runs["host"]), runs
    modules = data.events.filter(pyarrow.compute.field("kind") == "alloc").column("module")
    assert modules.null_count < len(modules), "no allocation of the DDP model is named by its module"
    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump({"ranks": {str(k): v for k, v in want["ranks"].items()}}, f)
    print("ok: %d files exported, per-rank peaks %s" % (len(files), want["ranks"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
