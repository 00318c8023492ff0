#!/usr/bin/env python3
"""bench_export.py - `memhist export` and queries over its dataset.

1. One long run (`memhist simulate --steps STEPS`, 3,500 steps: about 10 M
   events) and one a quarter as long: export wall time, events per second,
   peak resident memory of the export (the Python exporter included; flat
   when memory does not follow the run's length) and the Parquet bytes per
   event of the events table.
2. A job of RANKS rank files (`memhist simulate --workload gpt --steps 50
   --seed R`), taken 16, 64 and 256 at a time: the export's wall time, the
   dataset's size, DuckDB's per-rank peak query over the dataset (and the
   per-step query), against `memhist report` over the same files.
Prints "name: value" lines (docs/export.md quotes them).

    python tests/bench/bench_export.py    (MEMHIST: the CLI; STEPS, RANKS, RANK_STEPS)

Exits 77 (skipped) without the memhist CLI, pyarrow or duckdb.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

MEMHIST = os.environ.get("MEMHIST") or shutil.which("memhist")
STEPS = int(os.environ.get("STEPS", "3500"))
RANKS = int(os.environ.get("RANKS", "256"))
RANK_STEPS = int(os.environ.get("RANK_STEPS", "50"))


def measure(args):
    """Wall seconds and peak RSS (MiB, the command and the children it waited for)."""
    t = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - t
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s failed: %s" % (" ".join(args[:2]), err[-800:]))
    return wall, usage.ru_maxrss / 1024.0


def size_of(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)


def events_of(ds):
    import duckdb
    return duckdb.connect().execute("SELECT count(*) FROM read_parquet('%s/events/**/*.parquet')"
                                    % ds).fetchone()[0]


def long_run(work):
    for steps in (STEPS // 4, STEPS):
        rec = os.path.join(work, "long%d.memhist" % steps)
        subprocess.run([MEMHIST, "simulate", "--steps", str(steps), "-o", rec], check=True,
                       capture_output=True)
        ds = os.path.join(work, "long%d" % steps)
        wall, rss = measure([MEMHIST, "export", "-q", "-o", ds, rec])
        n = events_of(ds)
        events_bytes = size_of(os.path.join(ds, "events"))
        tag = "export_%dsteps" % steps
        print("%s_events: %d" % (tag, n))
        print("%s_wall_s: %.2f" % (tag, wall))
        print("%s_events_per_s: %.0f" % (tag, n / wall))
        print("%s_peak_rss_mib: %.0f" % (tag, rss))
        print("%s_parquet_bytes_per_event: %.2f" % (tag, events_bytes / n))
        print("%s_recording_bytes_per_event: %.2f" % (tag, os.path.getsize(rec) / n))
        shutil.rmtree(ds)
        os.unlink(rec)


def timed_query(ds, sql):
    import duckdb
    con = duckdb.connect()
    con.execute("CREATE VIEW events AS SELECT * FROM read_parquet('%s/events/**/*.parquet', "
                "hive_partitioning = 1)" % ds)
    t = time.monotonic()
    rows = con.execute(sql).fetchall()
    return time.monotonic() - t, rows


def ranks(work):
    files = []
    for r in range(RANKS):
        out = os.path.join(work, "job.memhist.rank%d" % r)
        subprocess.run([MEMHIST, "simulate", "--workload", "gpt", "--steps", str(RANK_STEPS),
                        "--seed", str(r), "-o", out], check=True, capture_output=True)
        files.append(out)
    for n in (16, 64, 256):
        if n > RANKS:
            break
        ds = os.path.join(work, "job%d" % n)
        wall, rss = measure([MEMHIST, "export", "-q", "-o", ds] + files[:n])
        events = events_of(ds)
        q_wall, rows = timed_query(ds, "SELECT rank, max(allocated), max(reserved) FROM events "
                                       "GROUP BY rank")
        s_wall, _ = timed_query(ds, "SELECT rank, step, max(allocated), max(reserved) FROM events "
                                    "GROUP BY rank, step")
        assert len(rows) == n, rows[:3]
        r_wall, r_rss = measure([MEMHIST, "report", "-q"] + files[:n])
        tag = "ranks%d" % n
        print("%s_events: %d" % (tag, events))
        print("%s_export_wall_s: %.2f" % (tag, wall))
        print("%s_export_peak_rss_mib: %.0f" % (tag, rss))
        print("%s_dataset_mib: %.1f" % (tag, size_of(ds) / 2**20))
        print("%s_duckdb_rank_peaks_s: %.3f" % (tag, q_wall))
        print("%s_duckdb_step_peaks_s: %.3f" % (tag, s_wall))
        print("%s_report_wall_s: %.2f" % (tag, r_wall))
        print("%s_report_peak_rss_mib: %.0f" % (tag, r_rss))
        shutil.rmtree(ds)


def main():
    if not MEMHIST:
        print("skip: no memhist CLI (set MEMHIST)")
        return 77
    try:
        import duckdb  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as e:
        print("skip: %s (scripts/setup.sh installs pyarrow and duckdb)" % e)
        return 77
    work = tempfile.mkdtemp(prefix="mh-bench-export-")
    try:
        long_run(work)
        ranks(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
