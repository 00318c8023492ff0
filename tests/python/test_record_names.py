"""Recording file names of distributed runs (src/python/memhist/_record.py, _rank.py,
src/cli/record_summary.c): FILE.rank<R> for a rank's own process,
.attempt<N> after an elastic restart, .pid<P> for processes a rank starts,
FILE.pid<P> outside torchrun; exclusive creation that takes the next free
name; the header's rank fields; and `memhist record` removing only the
previous run's files of the same output name. Needs no GPU and no torch."""
import os
import subprocess
import sys
import tempfile

SRC = os.environ.get("MH_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MEMHIST = os.environ.get("MEMHIST")
sys.path.insert(0, os.path.join(SRC, "src", "python"))
import memhist  # noqa: E402
from memhist import _rank, _record  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def names(env):
    saved = dict(os.environ)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT", "MEMHIST_RANK_PID",
              "MEMHIST_ROOT_PID"):
        os.environ.pop(k, None)
    os.environ.update(env, MEMHIST_RECORD_PATH="/x/run.memhist")
    try:
        return _record.output_path(), _rank.header_meta()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_names():
    me = str(os.getpid())
    path, meta = names({"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "MEMHIST_RANK_PID": me})
    check(path == "/x/run.memhist.rank3", "rank main process: %s" % path)
    check(meta["rank"] == "3" and meta["local_rank"] == "1" and meta["world_size"] == "8"
          and meta["rank_process"] == "main" and meta["parent_pid"] == str(os.getppid()), meta)
    path, meta = names({"RANK": "3", "MEMHIST_RANK_PID": "1"})
    check(path == "/x/run.memhist.rank3.pid%s" % me, "helper of rank 3: %s" % path)
    check(meta["rank_process"] == "helper", meta)
    path, meta = names({"RANK": "0", "TORCHELASTIC_RESTART_COUNT": "2", "MEMHIST_RANK_PID": me})
    check(path == "/x/run.memhist.rank0.attempt2" and meta["attempt"] == "2", "restart: %s %s" % (path, meta))
    path, _ = names({"RANK": "0", "TORCHELASTIC_RESTART_COUNT": "0", "MEMHIST_RANK_PID": me})
    check(path == "/x/run.memhist.rank0", "first attempt: %s" % path)
    path, _ = names({"MEMHIST_ROOT_PID": "1"})
    check(path == "/x/run.memhist.pid%s" % me, "other process: %s" % path)
    path, meta = names({"MEMHIST_ROOT_PID": me})
    check(path == "/x/run.memhist" and "rank" not in meta, "main process: %s %s" % (path, meta))


def test_claim(tmp):
    taken = os.path.join(tmp, "r.memhist.rank0")
    with open(taken, "w") as f:
        f.write("another process's recording")
    s = memhist.Session(taken, "python", False, True)
    s._claim()
    check(s.path == taken + ".2", "next free name: %s" % s.path)
    check(open(taken).read() == "another process's recording", "the taken file was left alone")
    s = memhist.Session(taken, "python", False, True)
    s._claim()
    check(s.path == taken + ".3", "and the next: %s" % s.path)


def test_clear_previous(tmp):
    if not MEMHIST:
        return
    out = os.path.join(tmp, "c.memhist")
    stale = ["c.memhist", "c.memhist.rank0", "c.memhist.rank1.attempt1", "c.memhist.rank0.pid77",
             "c.memhist.pid12", "c.memhist.rank0.2"]
    kept = ["c.memhist.rank0.notes", "c.memhist.json", "c.memhistx.rank0", "other.rank0"]
    for n in stale + kept:
        open(os.path.join(tmp, n), "w").close()
    r = subprocess.run([MEMHIST, "record", "-o", out, "--", sys.executable, "-c", "pass"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "record ran: %s" % r.stderr)
    left = sorted(os.listdir(tmp))
    check(left == sorted(kept), "only the previous run's files removed: %s" % left)


def main():
    test_names()
    with tempfile.TemporaryDirectory() as tmp:
        test_claim(tmp)
    with tempfile.TemporaryDirectory() as tmp:
        test_clear_previous(tmp)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
