"""export_checks.py - what the exported tables must say, shared by the tests of
`memhist export` and memhist.read() (tests/python/test_export_tables.py,
tests/export/check_*.py): every figure is compared with `memhist report --json`
on the same files, computed by a query engine over the rows, never copied.

  report_json(files)          report --json --all-steps of the files
  expected(rep)               per rank: peaks; per file and device: the steps
                              table and the bytes by category at the peak
  query_checks(sql, rep)      the queries over views events/steps/runs/segments
                              (an engine's sql(text) -> list of tuples)
  duckdb_over(ds) / duckdb_over_tables(data)
"""
import json
import os
import subprocess

MEMHIST = os.environ.get("MEMHIST", "memhist")

STEP_FIELDS = ("peak_allocated", "peak_reserved", "end_allocated", "end_reserved",
               "allocated_at_reserved_peak", "inactive_split_at_reserved_peak",
               "largest_free_at_reserved_peak", "segments", "segment_allocs", "segment_frees",
               "retries", "ooms")


def report_json(files):
    r = subprocess.run([MEMHIST, "report", "--json", "--all-steps"] + list(files),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads(r.stdout)
    if "files" not in d:  # one file: the file's object itself
        d = {"files": [d], "ranks": []}
    return d


def expected(rep):
    """What the tables must reproduce. Files are named by their path as given."""
    per_rank = {}
    for row in rep.get("ranks") or []:
        key = row["rank"]
        a, r = per_rank.get(key, (0, 0))
        per_rank[key] = (max(a, row["peak_allocated"]["bytes"]), max(r, row["peak_reserved"]["bytes"]))
    files = {}
    for f in rep["files"]:
        devs = {}
        for d in f["devices"]:
            devs[d["device"]] = {
                "peak_allocated": d["peak_allocated"], "peak_reserved": d["peak_reserved"],
                "steps": [tuple([s["step"]] + [s[k] for k in STEP_FIELDS]) for s in d["steps"]],
                "categories": {k: v for k, v in d["category_at_peak"].items() if v},
            }
        files[f["file"]] = {"events": f["events"], "devices": devs}
    return {"ranks": per_rank, "files": files}


def query_checks(sql, want, ranks=True):
    """Runs the checks through `sql` over views named events, steps, runs and
    segments (with the run and rank columns, as a Hive-partitioned dataset
    gives them). Raises AssertionError on the first difference."""
    if ranks and want["ranks"]:
        got = {r: (a, b) for r, a, b in sql(
            "SELECT rank, max(allocated), max(reserved) FROM events GROUP BY rank")}
        assert got == want["ranks"], ("per-rank peaks", got, want["ranks"])
    runs = {p: run for p, run in sql("SELECT path, run FROM runs")}
    assert set(runs) == set(want["files"]), (sorted(runs), sorted(want["files"]))
    for path, f in want["files"].items():
        run = runs[path]
        n, distinct, lo, hi = sql("SELECT count(*), count(DISTINCT event_index), min(event_index), "
                                  "max(event_index) FROM events WHERE run = '%s'" % run)[0]
        assert n == distinct == f["events"] and lo == 0 and hi == f["events"] - 1, (path, n, distinct, lo, hi)
        for dev, d in f["devices"].items():
            check_device(sql, path, run, dev, d)


def check_device(sql, path, run, dev, d):
    where = "run = '%s' AND device = %d" % (run, dev)
    a, r = sql("SELECT max(allocated), max(reserved) FROM events WHERE %s" % where)[0]
    assert (a, r) == (d["peak_allocated"], d["peak_reserved"]), (path, dev, a, r, d)
    cols = ", ".join(("step",) + STEP_FIELDS)
    steps = [tuple(x) for x in sql("SELECT %s FROM steps WHERE %s AND part = 'step' ORDER BY step"
                                   % (cols, where))]
    assert steps == d["steps"], (path, dev, "steps table", steps[:3], d["steps"][:3])
    from_events = [tuple(x) for x in sql(
        "SELECT step, max(allocated), max(reserved) FROM events WHERE %s AND step IN "
        "(SELECT step FROM steps WHERE %s AND part = 'step') GROUP BY step ORDER BY step"
        % (where, where))]
    assert from_events == [s[:3] for s in d["steps"]], (path, dev, "step peaks from events")
    peak = sql("SELECT min(event_index) FROM events WHERE %s AND allocated = %d" % (where, a))[0][0]
    cats = {c: b for c, b in sql(
        "SELECT category, sum(block_size) FROM events WHERE %s AND kind = 'alloc' AND "
        "event_index <= %d AND (free_index IS NULL OR free_index > %d) GROUP BY category"
        % (where, peak, peak)) if b}
    assert cats == d["categories"], (path, dev, "categories at the peak", cats, d["categories"])
    if a:
        seg = {c: b for c, b in sql(
            "SELECT category, sum(size) FROM segments WHERE %s AND state = 'allocated' "
            "GROUP BY category" % where)}
        assert seg == d["categories"], (path, dev, "segments_at_peak", seg, d["categories"])


def duckdb_sql(con):
    return lambda q: [tuple(int(v) if isinstance(v, float) and v.is_integer() else v for v in row)
                      for row in con.execute(q).fetchall()]


def duckdb_over(ds):
    """A DuckDB connection with views over a Parquet dataset written by export."""
    import duckdb
    con = duckdb.connect()
    for view, table in (("events", "events"), ("steps", "steps"), ("runs", "runs"),
                        ("segments", "segments_at_peak")):
        con.execute("CREATE VIEW %s AS SELECT * FROM read_parquet('%s/%s/**/*.parquet', "
                    "hive_partitioning = 1)" % (view, ds, table))
    return con


def duckdb_over_tables(data):
    """A DuckDB connection with views over memhist.read()'s pyarrow tables."""
    import duckdb
    con = duckdb.connect()
    for view, table in (("events", "events"), ("steps", "steps"), ("runs", "runs"),
                        ("segments", "segments_at_peak")):
        con.register(view, data[table])
    return con
