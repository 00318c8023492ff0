"""memhist._export - `memhist export FILE... -o DIR`: recordings as a dataset.

Run by the memhist command (src/cli/cmd_export.c) as
`python3 -m memhist._export [options] FILE...`. Each table of every file
goes through libmemhist_arrow.so (memhist._arrow) and is written by pyarrow:

  --format parquet  DIR/<table>/run=<run>/rank=<rank>/part-<N>.parquet, a Hive-
                    partitioned dataset (zstd, row groups of --row-group-rows)
  --format arrow    DIR/<table>.arrow, one Arrow IPC file per table holding
                    every file's rows (run and rank are columns)

Files are exported on --jobs threads at once. Everything is written into a
temporary folder beside DIR, renamed to DIR once every file is done, so a
failed or interrupted export leaves no half dataset. A damaged file is
exported up to its damage, with a warning. Messages go to stderr as
"memhist: ..."; with --status, the written folder, its size, the files and
the events go to that file for the command's closing line.
"""
import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

from . import _arrow, _read

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# dictionary columns whose dictionary changes from batch to batch (an IPC file
# holds one dictionary per column): written as plain strings there
VARYING = ("run", "module", "name")


class Stop(Exception):
    """Another file failed, or the export was interrupted."""


def say(msg):
    sys.stderr.write("memhist: %s\n" % msg)


class Progress:
    """What the workers have written, and the line that shows it on a terminal."""

    def __init__(self, nfiles, quiet):
        self.lock = threading.Lock()
        self.nfiles, self.done, self.events, self.total = nfiles, 0, 0, 0
        self.show = not quiet and sys.stderr.isatty()
        self.start = time.monotonic()
        self.shown = False

    def add(self, events=0, total=0, done=0):
        with self.lock:
            self.events += events
            self.total += total
            self.done += done

    def draw(self):
        if not self.show or time.monotonic() - self.start < 1:
            return
        with self.lock:
            line = "export: %d of %d files, %.1f M events of %.1f M" % (
                self.done, self.nfiles, self.events / 1e6, self.total / 1e6)
        sys.stderr.write("\r\033[Kmemhist: %s" % line)
        sys.stderr.flush()
        self.shown = True

    def clear(self):
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.shown = False


def without_run_rank(pa, batch):
    return pa.RecordBatch.from_arrays(batch.columns[2:], schema=pa.schema(
        list(batch.schema)[2:], metadata=batch.schema.metadata))


# Parquet encodings of the events table, chosen on long runs: indices and
# times grow, so their deltas are small; the others repeat and take a dictionary.
EVENTS_ENCODING = {"event_index": "DELTA_BINARY_PACKED", "time_ns": "DELTA_BINARY_PACKED",
                   "free_index": "DELTA_BINARY_PACKED"}
EVENTS_DICTIONARY = ["kind", "module", "name", "phase", "category", "address", "size", "block_size",
                     "stack_id", "allocated", "reserved", "step"]


def parquet_options(table):
    if table == "events":
        return {"compression": "zstd", "column_encoding": EVENTS_ENCODING,
                "use_dictionary": EVENTS_DICTIONARY}
    return {"compression": "zstd"}


class ParquetOut:
    """One file's table as Parquet files in its run/rank partition."""

    def __init__(self, pa, pq, folder, group_rows, file_rows, options):
        self.pa, self.pq, self.folder, self.options = pa, pq, folder, options
        self.group_rows, self.file_rows = group_rows, file_rows
        self.parts, self.writer, self.in_file, self.held, self.nheld = 0, None, 0, [], 0

    def write(self, batch):
        self.held.append(without_run_rank(self.pa, batch))
        self.nheld += batch.num_rows
        if self.nheld >= self.group_rows:
            self.flush()

    def flush(self):
        if not self.held:
            return
        table = self.pa.Table.from_batches(self.held)
        self.held, self.nheld = [], 0
        if self.writer is None:
            os.makedirs(self.folder, exist_ok=True)
            path = os.path.join(self.folder, "part-%d.parquet" % self.parts)
            self.writer = self.pq.ParquetWriter(path, table.schema, **self.options)
            self.parts += 1
        self.writer.write_table(table, row_group_size=self.group_rows)
        self.in_file += table.num_rows
        if self.in_file >= self.file_rows:
            self.writer.close()
            self.writer, self.in_file = None, 0

    def close(self, schema):
        self.flush()
        if self.writer is None and self.parts == 0:  # no rows: an empty file keeps the schema
            os.makedirs(self.folder, exist_ok=True)
            empty = self.pa.Table.from_batches([], without_run_rank(
                self.pa, self.pa.RecordBatch.from_pylist([], schema=schema)).schema)
            self.pq.write_table(empty, os.path.join(self.folder, "part-0.parquet"), **self.options)
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class ArrowOut:
    """Every file's rows of each table in one Arrow IPC file per table."""

    def __init__(self, pa, root):
        self.pa, self.root = pa, root
        self.lock = threading.Lock()
        self.writers = {}

    def plain(self, batch):
        pa = self.pa
        for name in VARYING:
            i = batch.schema.get_field_index(name)
            if i >= 0:
                f = batch.schema.field(i)
                batch = batch.set_column(i, pa.field(name, pa.string(), f.nullable),
                                         batch.column(i).cast(pa.string()))
        return batch

    def writer(self, table, schema):
        import pyarrow.ipc as ipc
        if table not in self.writers:
            empty = self.plain(self.pa.RecordBatch.from_pylist([], schema=schema))
            self.writers[table] = ipc.new_file(os.path.join(self.root, table + ".arrow"),
                                               empty.schema)
        return self.writers[table]

    def write(self, table, batch):
        batch = self.plain(batch)
        with self.lock:
            self.writer(table, batch.schema).write_batch(batch)

    def close(self):
        with self.lock:
            for table in _arrow.TABLES:  # every table, also where no file had a row
                self.writer(table, _arrow.schema(table))
            for w in self.writers.values():
                w.close()


class Export:
    def __init__(self, args, root, progress):
        import pyarrow as pa
        self.pa, self.args, self.root, self.progress = pa, args, root, progress
        self.stop = threading.Event()
        self.runs_lock = threading.Lock()
        self.runs = {}
        self.arrow = ArrowOut(pa, root) if args.format == "arrow" else None
        if self.arrow is None:
            import pyarrow.parquet as pq
            self.pq = pq

    def claim_run(self, f, i):
        with self.runs_lock:
            other = self.runs.setdefault(f.run, (i, f.path))
        if other[0] != i:
            raise ValueError("%s and %s are the same recording (run %s): give each once"
                             % (other[1], f.path, f.run))

    def table(self, f, table):
        schema = _arrow.schema(table)
        out = None
        if self.arrow is None:
            rank = HIVE_NULL if f.rank is None else str(f.rank)
            folder = os.path.join(self.root, table, "run=" + f.run, "rank=" + rank)
            out = ParquetOut(self.pa, self.pq, folder, self.args.row_group_rows, self.args.file_rows,
                             parquet_options(table))
        for batch in f.reader(table):
            if self.stop.is_set():
                raise Stop()
            if out is None:
                self.arrow.write(table, batch)
            else:
                out.write(batch)
            if table == "events":
                self.progress.add(events=batch.num_rows)
        if out is not None:
            out.close(schema)

    def file(self, i, path):
        with _arrow.ArrowFile(path, self.args.batch_rows) as f:
            for w in f.warnings():
                say("warning: %s" % w)
            self.claim_run(f, i)
            self.progress.add(total=f.events)
            for table in _arrow.TABLES:  # the small tables first, the events last
                if table != "events":
                    self.table(f, table)
            self.table(f, "events")
            self.progress.add(done=1)
            return f.events

    def close(self):
        if self.arrow is not None:
            self.arrow.close()


def dataset_size(root):
    total = 0
    for d, _, files in os.walk(root):
        total += sum(os.path.getsize(os.path.join(d, f)) for f in files)
    return total


def run_all(exp, files, jobs, progress):
    """Exports every file; the first failure stops the others and is raised."""
    with ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(exp.file, i, p) for i, p in enumerate(files)]
        try:
            while True:
                done, pending = wait(futures, timeout=0.25, return_when=FIRST_EXCEPTION)
                progress.draw()
                failed = [f for f in done if f.exception() is not None]
                if failed or not pending:
                    break
        except BaseException:
            exp.stop.set()
            raise
        finally:
            if any(f.done() and f.exception() is not None for f in futures):
                exp.stop.set()
            for f in futures:
                f.cancel()
    errors = [f.exception() for f in futures if f.done() and not f.cancelled() and f.exception()]
    real = [e for e in errors if not isinstance(e, Stop)]
    if real or errors:
        raise (real or errors)[0]
    return sum(f.result() for f in futures)


def target_ok(out, force):
    if os.path.lexists(out) and not os.path.isdir(out):
        raise ValueError("%s exists and is not a folder: give a new folder for the dataset" % out)
    if os.path.isdir(out) and os.listdir(out) and not force:
        raise ValueError("%s exists and is not empty: give a new folder, or --force to replace it"
                         % out)


def put_in_place(tmp, out):
    """Renames the finished folder to `out`, replacing what was there."""
    old = None
    if os.path.isdir(out):
        old = tempfile.mkdtemp(prefix=".%s.old-" % os.path.basename(out), dir=os.path.dirname(out))
        os.rmdir(old)
        os.rename(out, old)
    os.rename(tmp, out)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def parse(argv):
    ap = argparse.ArgumentParser(prog="memhist export", add_help=False)
    ap.add_argument("--format", choices=("parquet", "arrow"), default="parquet")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--row-group-rows", type=int, default=1 << 19)
    ap.add_argument("--file-rows", type=int, default=1 << 25)
    ap.add_argument("--batch-rows", type=int, default=0)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--status")
    ap.add_argument("files", nargs="+")
    return ap.parse_args(argv)


def export(args):
    files = _read.expand(args.files)
    out = os.path.abspath(args.output)
    target_ok(out, args.force)
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    jobs = max(1, min(args.jobs or min(os.cpu_count() or 1, 4), len(files)))
    progress = Progress(len(files), args.quiet)
    tmp = tempfile.mkdtemp(prefix=".%s.tmp-" % os.path.basename(out), dir=parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    try:
        exp = Export(args, tmp, progress)
        events = run_all(exp, files, jobs, progress)
        exp.close()
        progress.clear()
        put_in_place(tmp, out)
    except BaseException:
        progress.clear()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if args.status:
        with open(args.status, "w") as f:
            f.write("%s\t%d\t%d\t%d\n" % (out, dataset_size(out), len(files), events))
    return 0


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        _arrow.pyarrow()
        if args.format == "parquet":
            import pyarrow.parquet  # noqa: F401
    except ImportError as e:
        say("export: %s (this is %s)" % (e, sys.executable))
        return 1
    try:
        return export(args)
    except KeyboardInterrupt:
        say("export: interrupted; nothing written")
        return 130
    except (OSError, ValueError) as e:
        say("export: %s; nothing written" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
