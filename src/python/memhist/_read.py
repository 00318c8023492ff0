"""memhist._read - recordings as pyarrow tables: memhist.read() and memhist.stream().

    data = memhist.read("run.memhist.rank*")     # a path, a glob, or a list of them
    data.events.to_pandas()                      # every table: data["steps"], ...
    for batch in memhist.stream(paths, "events"):  # bounded memory for long runs
        ...

The tables and their columns are documented in docs/export.md. Files are
read by libmemhist_arrow.so (src/export), several at once on threads (the
library runs without the GIL); pyarrow takes its batches without copies.
A damaged file is read up to its damage with a MemhistWarning; a file that
is not a recording raises OSError naming it.
"""
import glob
import os
import warnings
from concurrent.futures import ThreadPoolExecutor

from . import _arrow
from ._warning import MemhistWarning

TABLES = _arrow.TABLES


def expand(paths):
    """The files `paths` names: one path or glob pattern, or a list of them, in order
    (a pattern's matches sorted). FileNotFoundError for a name or pattern that finds none."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        p = os.fsdecode(os.fspath(p))
        if os.path.exists(p) or not glob.has_magic(p):
            if not os.path.exists(p):
                raise FileNotFoundError("%s: no such file" % p)
            out.append(p)
            continue
        found = sorted(glob.glob(p))
        if not found:
            raise FileNotFoundError("%s: no file matches" % p)
        out.extend(found)
    if not out:
        raise ValueError("no recording given")
    return out


class Recordings:
    """The tables of one or more recordings, each a pyarrow.Table with the
    rows of every file (`run` and `rank` say whose): `data.events` or
    `data["events"]`; `data.tables` lists the names read."""

    def __init__(self, tables, files):
        self._tables = tables
        self.files = files

    @property
    def tables(self):
        return list(self._tables)

    def __getitem__(self, name):
        if name not in self._tables:
            raise KeyError("%r was not read (tables: %s)" % (name, ", ".join(self._tables)))
        return self._tables[name]

    def __getattr__(self, name):
        if name.startswith("_") or name not in TABLES:
            raise AttributeError(name)
        return self[name]

    def __contains__(self, name):
        return name in self._tables

    def __repr__(self):
        rows = ", ".join("%s: %d rows" % (k, v.num_rows) for k, v in self._tables.items())
        return "<memhist.Recordings of %d file(s): %s>" % (len(self.files), rows)


def _wanted(tables):
    if tables is None:
        return list(TABLES)
    tables = [tables] if isinstance(tables, str) else list(tables)
    for t in tables:
        if t not in TABLES:
            raise ValueError("no table %r: memhist's tables are %s" % (t, ", ".join(TABLES)))
    return tables


def _read_file(path, tables, batch_rows):
    with _arrow.ArrowFile(path, batch_rows) as f:
        got = {t: f.reader(t).read_all() for t in tables}
        return got, f.warnings()


def read(paths, tables=None, jobs=None, batch_rows=0):
    """Reads the recordings `paths` names (a path, a glob pattern or a list of
    them) into a Recordings of pyarrow Tables, one per table of `tables` (all
    of memhist's tables by default: runs, events, steps, stacks, frames,
    segments_at_peak). `jobs` files are read at once (default: the CPUs, at
    most 8). For runs too long to hold, stream() gives the batches instead."""
    pa = _arrow.pyarrow()
    files = expand(paths)
    tables = _wanted(tables)
    jobs = max(1, min(jobs or min(os.cpu_count() or 1, 8), len(files)))
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda p: _read_file(p, tables, batch_rows), files))
    for _, warned in results:
        for w in warned:
            warnings.warn("memhist: %s" % w, MemhistWarning, stacklevel=2)
    out = {}
    for t in tables:
        parts = [r[0][t] for r in results]
        out[t] = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    return Recordings(out, files)


def stream(paths, table="events", batch_rows=0):
    """A pyarrow.RecordBatchReader of `table`'s rows in every file `paths`
    names, file after file: one file is open at a time and a few batches are
    in memory, however long the run. Rows of the events table come as each
    is complete (an allocation's when its life ends): `event_index` gives
    the file's order."""
    pa = _arrow.pyarrow()
    files = expand(paths)
    _wanted([table])

    def batches():
        for p in files:
            with _arrow.ArrowFile(p, batch_rows) as f:
                for w in f.warnings():
                    warnings.warn("memhist: %s" % w, MemhistWarning, stacklevel=2)
                yield from f.reader(table)

    return pa.RecordBatchReader.from_batches(_arrow.schema(table), batches())


def schema(table):
    """The pyarrow.Schema of one of memhist's tables (docs/export.md)."""
    _wanted([table])
    return _arrow.schema(table)
