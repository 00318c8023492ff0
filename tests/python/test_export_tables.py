"""The tables of recordings (src/export, memhist.read(), `memhist export`) on
simulated and imported recordings, checked against `memhist report --json` on
the same files by DuckDB queries over the rows (tests/export/export_checks.py):
per-rank and per-device peaks are the maxima of the events' allocated and
reserved bytes, the steps table is report's per-step table and the events
give each step's peaks, the bytes by category at the allocated peak are the
allocations live there (and the blocks of segments_at_peak), every event is
one row. Also: the Parquet dataset's layout, the Arrow IPC files, a damaged
file exported up to its damage with a warning, a failed export (one input
not a recording, an interrupted one) leaving nothing, a folder that is not
empty refused, a missing pyarrow named with how to install it, stdin and
unknown tables refused, and stream() in bounded batches. Skips (77) without
pyarrow or duckdb (scripts/setup.sh installs them)."""
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ["MH_BINARY_DIR"]
MEMHIST = os.environ["MEMHIST"]
sys.path.insert(0, os.path.join(ROOT, "tests", "export"))
sys.path.insert(0, os.path.join(BUILD, "python"))

try:
    import duckdb  # noqa: F401
    import pyarrow as pa
except ImportError as e:
    print("skip: %s (scripts/setup.sh installs pyarrow and duckdb)" % e)
    sys.exit(77)

import export_checks as ec  # noqa: E402
import memhist  # noqa: E402
import memhist._arrow  # noqa: E402


def run(args, **kw):
    return subprocess.run([MEMHIST] + args, capture_output=True, text=True, timeout=600, **kw)


def simulate(tmp, name, *args):
    out = os.path.join(tmp, name)
    r = run(["simulate", "-o", out] + list(args))
    assert r.returncode == 0, r.stderr
    return out


def check_read(files, ranks=True):
    want = ec.expected(ec.report_json(files))
    data = memhist.read(files)
    ec.query_checks(ec.duckdb_sql(ec.duckdb_over_tables(data)), want, ranks)
    con = ec.duckdb_over_tables(data)
    con.register("stacks", data.stacks)
    con.register("frames", data.frames)
    lost = con.execute("SELECT count(*) FROM events e WHERE stack_id IS NOT NULL AND NOT EXISTS "
                       "(SELECT 1 FROM stacks s WHERE s.run = e.run AND s.stack_id = e.stack_id)"
                       ).fetchone()[0]
    unnamed = con.execute("SELECT count(*) FROM stacks s WHERE NOT EXISTS (SELECT 1 FROM frames f "
                          "WHERE f.run = s.run AND f.frame_id = s.frame_id)").fetchone()[0]
    assert lost == 0 and unnamed == 0, (lost, unnamed)
    df = data.events.to_pandas()
    assert len(df) == sum(f["events"] for f in want["files"].values())
    assert set(df["kind"].cat.categories) >= {"alloc", "free_requested"}, df["kind"].cat.categories
    return data


def check_export(files, tmp, *extra):
    want = ec.expected(ec.report_json(files))
    ds = os.path.join(tmp, "ds")
    r = run(["export", "-o", ds] + list(extra) + files)
    assert r.returncode == 0, r.stderr
    assert "memhist: wrote %s (" % ds in r.stderr and "%d file" % len(files) in r.stderr, r.stderr
    for table in memhist._arrow.TABLES:
        parts = glob.glob(os.path.join(ds, table, "run=*", "rank=*", "part-*.parquet"))
        assert len(parts) >= len(files), (table, parts)
    assert not [n for n in os.listdir(tmp) if n.startswith(".ds.")], os.listdir(tmp)
    ec.query_checks(ec.duckdb_sql(ec.duckdb_over(ds)), want)
    return ds


def test_simulated_ranks(tmp):
    """Two simulated ranks, named FILE.rank<R>: the dataset and read()."""
    files = [simulate(tmp, "sim.memhist.rank%d" % r, "--workload", "gpt", "--steps", "6",
                      "--seed", str(r)) for r in (0, 1)]
    data = check_read(files)
    assert data.runs.column("rank").to_pylist() == [0, 1]
    ds = check_export(files, tmp, "--row-group-rows", "4096")
    import pyarrow.parquet as pq
    part = glob.glob(os.path.join(ds, "events", "run=*", "rank=0", "part-0.parquet"))[0]
    meta = pq.ParquetFile(part).metadata
    assert meta.num_row_groups > 1 and meta.row_group(0).num_rows == 4096, meta
    names = pq.ParquetFile(part).schema_arrow.names
    assert "run" not in names and "rank" not in names and "allocated" in names, names
    again = run(["export", "-o", ds] + files)
    assert again.returncode == 1 and "not empty" in again.stderr and "--force" in again.stderr, again.stderr
    forced = run(["export", "--force", "-o", ds, files[0]])
    assert forced.returncode == 0, forced.stderr
    assert len(os.listdir(os.path.join(ds, "events"))) == 1, os.listdir(os.path.join(ds, "events"))


def test_arrow_format(tmp):
    files = [simulate(tmp, "a.memhist.rank%d" % r, "--steps", "3", "--seed", str(r)) for r in (0, 1)]
    want = ec.expected(ec.report_json(files))
    out = os.path.join(tmp, "arrow")
    r = run(["export", "--format", "arrow", "-o", out] + files)
    assert r.returncode == 0, r.stderr
    import pyarrow.ipc as ipc
    assert sorted(os.listdir(out)) == sorted(t + ".arrow" for t in memhist._arrow.TABLES)
    con = duckdb.connect()
    for view, table in (("events", "events"), ("steps", "steps"), ("runs", "runs"),
                        ("segments", "segments_at_peak")):
        con.register(view, ipc.open_file(os.path.join(out, table + ".arrow")).read_all())
    ec.query_checks(ec.duckdb_sql(con), want)


def test_imported(tmp):
    snap = os.path.join(ROOT, "tests", "data", "snapshots", "small.p4.pickle")
    out = os.path.join(tmp, "imported.memhist")
    r = run(["import", "-o", out, snap])
    assert r.returncode == 0, r.stderr
    data = check_read([out], ranks=False)
    assert data.runs.column("source").to_pylist() == ["imported"]
    assert data.stacks.num_rows > 0 and data.frames.num_rows > 0


def test_damaged(tmp):
    path = os.path.join(ROOT, "tests", "data", "truncated.memhist")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        data = check_read([path], ranks=False)
    assert any("using the events before that point" in str(x.message) for x in w), [str(x.message) for x in w]
    assert data.runs.column("damaged").to_pylist() == [True]
    ds = os.path.join(tmp, "damaged")
    r = run(["export", "-o", ds, path])
    assert r.returncode == 0 and "warning:" in r.stderr and "before that point" in r.stderr, r.stderr


def test_bad_inputs(tmp):
    good = simulate(tmp, "g.memhist", "--steps", "2")
    bad = os.path.join(ROOT, "tests", "data", "not-a-recording.txt")
    ds = os.path.join(tmp, "bad")
    r = run(["export", "-o", ds, good, bad])
    assert r.returncode == 1 and "not a .memhist file" in r.stderr and "nothing written" in r.stderr, r.stderr
    assert not os.path.exists(ds) and not [n for n in os.listdir(tmp) if n.startswith(".bad")], os.listdir(tmp)
    r = run(["export", "-o", ds, os.path.join(tmp, "missing.memhist")])
    assert r.returncode == 1 and "missing.memhist: No such file" in r.stderr, r.stderr
    r = run(["export", "-o", ds, good, good])
    assert r.returncode == 1 and "same recording" in r.stderr and not os.path.exists(ds), r.stderr
    for args, text in ((["-o", ds, "-"], "standard input"), ([good], "missing -o"),
                       (["--format", "csv", "-o", ds, good], "parquet or arrow")):
        r = run(["export"] + args)
        assert r.returncode in (1, 2) and text in r.stderr, (args, r.stderr)
    try:
        memhist.read(bad)
        raise AssertionError("read() took a file that is not a recording")
    except OSError as e:
        assert "not a .memhist file" in str(e) and bad in str(e), e
    for call in (lambda: memhist.read(good, tables=["nope"]), lambda: memhist.stream(good, "nope")):
        try:
            call()
            raise AssertionError("an unknown table was accepted")
        except ValueError as e:
            assert "runs, events" in str(e), e


def test_no_pyarrow(tmp):
    """A Python without pyarrow: the export says so and how to install it."""
    fake = os.path.join(tmp, "nopyarrow", "pyarrow")
    os.makedirs(fake)
    with open(os.path.join(fake, "__init__.py"), "w") as f:
        f.write("raise ImportError('No module named pyarrow')\n")
    good = simulate(tmp, "n.memhist", "--steps", "2")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(fake))
    r = run(["export", "-o", os.path.join(tmp, "np"), good], env=env)
    assert r.returncode == 1 and "pip install pyarrow" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(tmp, "np"))


def test_interrupted(tmp):
    """SIGINT during an export: nothing is left, neither DIR nor its temporary folder."""
    big = simulate(tmp, "big.memhist", "--steps", "400")
    ds = os.path.join(tmp, "intr")
    p = subprocess.Popen([MEMHIST, "export", "-o", ds, big], stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and not [n for n in os.listdir(tmp) if n.startswith(".intr.tmp-")]:
        time.sleep(0.05)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    err = p.communicate(timeout=120)[1]
    assert p.returncode != 0 and "interrupted" in err, (p.returncode, err)
    assert not os.path.exists(ds) and not [n for n in os.listdir(tmp) if n.startswith(".intr")], os.listdir(tmp)


def test_stream(tmp):
    path = simulate(tmp, "st.memhist", "--steps", "20")
    reader = memhist.stream([path, path], "events", batch_rows=5000)
    sizes = [b.num_rows for b in reader]
    n = memhist._arrow.ArrowFile(path).events
    assert sum(sizes) == 2 * n and max(sizes) <= 5000 and len(sizes) >= 2 * n // 5000, sizes
    assert memhist.schema("events").names == reader.schema.names


def short_type(t):
    if pa.types.is_dictionary(t):
        return "dictionary<%s, %s>" % (t.index_type, t.value_type)
    if pa.types.is_map(t):
        return "map<%s, %s>" % (t.key_type, t.item_type)
    return str(t)


def test_docs(tmp):
    """docs/export.md lists every table's columns, in order, with their types and nullability."""
    import re
    text = open(os.path.join(ROOT, "docs", "export.md"), encoding="utf-8").read()
    documented = {}
    for m in re.finditer(r"^### `(\w+)`\n(.*?)(?=^#)", text, re.S | re.M):
        rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \| (yes|no) \|", m.group(2), re.M)
        documented[m.group(1)] = [(c, t.strip(), n == "yes") for c, t, n in rows]
    assert sorted(documented) == sorted(memhist._arrow.TABLES), sorted(documented)
    for table in memhist._arrow.TABLES:
        have = [(f.name, short_type(f.type), f.nullable) for f in memhist.schema(table)]
        assert documented[table] == have, (table, [x for x in have if x not in documented[table]],
                                           [x for x in documented[table] if x not in have])
    assert "Schema version **%d**" % memhist._arrow.SCHEMA_VERSION in text
    assert memhist.schema("runs").metadata[b"memhist.schema_version"] == str(
        memhist._arrow.SCHEMA_VERSION).encode()


def main():
    tmp = tempfile.mkdtemp(prefix="mh-export-")
    try:
        for name, fn in sorted(globals().items()):
            if name.startswith("test_") and callable(fn):
                sub = os.path.join(tmp, name)
                os.makedirs(sub)
                fn(sub)
                print("ok", name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
