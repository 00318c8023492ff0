#!/usr/bin/env python3
"""test_output_safety.py - every command that writes a file, as a user meets
its failures: an output that is also the input is refused and the input kept;
a character device or a symbolic link stays what it was; record and
simulate refuse a pipe or directory as their output and keep it; a full device, a
file-size limit, a missing directory or a directory as output fail with the
system's reason, exit 1 and leave no partial or temporary file behind; bad
inputs (a directory, an endless device, a zip archive) get a clear one-line
error; an interrupted write (SIGTERM, SIGINT) leaves nothing; option errors
print one line, not getopt's too. Environment: MEMHIST,
MH_SOURCE_DIR."""
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile

MEMHIST = os.environ.get("MEMHIST", "")
SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(SRC, "tests", "data")
FAILURES = []


def run(*args, limit_fsize=None, cwd=None):
    pre = None
    if limit_fsize is not None:
        def pre():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_fsize, limit_fsize))
    p = subprocess.run([MEMHIST, *args], capture_output=True, text=True, timeout=300,
                       preexec_fn=pre, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def expect(args, code, needle, **kw):
    rc, out, err = run(*args, **kw)
    lines = [l for l in err.splitlines() if l.strip()]
    check(rc == code and needle in err,
          f"{' '.join(args)} -> exit {code} with '{needle}' (got {rc}: {err.strip()})")
    return rc, out, err


def listing(d):
    return sorted(os.listdir(d))


def writers(tmp, rec, pickle):
    """(name, args without -o, input path) for every command writing a file."""
    return [
        ("trace", ["trace", rec], rec),
        ("snapshot", ["snapshot", rec], rec),
        ("plot", ["plot", rec], rec),
        ("flame", ["flame", rec], rec),
        ("import", ["import", pickle], pickle),
    ]


def same_file_refused(tmp, rec, pickle):
    for name, args, inp in writers(tmp, rec, pickle):
        before = open(inp, "rb").read()
        expect(args + ["-o", inp], 1, "is the same file as the input")
        check(open(inp, "rb").read() == before, f"{name}: the input is unchanged")
        link = os.path.join(tmp, "alias")
        os.symlink(inp, link)
        expect(args + ["-o", link], 1, "is the same file as the input")
        os.unlink(link)
        check(open(inp, "rb").read() == before, f"{name}: the input behind a link is unchanged")


def full_device_and_limits(tmp, rec, pickle):
    for name, args, _ in writers(tmp, rec, pickle) + [("simulate", ["simulate", "--steps", "1"], None)]:
        out_dir = os.path.join(tmp, "out_" + name)
        os.mkdir(out_dir)
        if os.path.exists("/dev/full"):
            expect(args + ["-o", "/dev/full"], 1, "No space left on device")
        expect(args + ["-o", os.path.join(out_dir, "big")], 1, "File too large", limit_fsize=64)
        check(listing(out_dir) == [], f"{name}: nothing left after the size limit: {listing(out_dir)}")
        expect(args + ["-o", os.path.join(out_dir, "no", "such")], 1, "No such file or directory")
        expect(args + ["-o", out_dir], 1, "Is a directory")
        old = os.path.join(out_dir, "old")
        with open(old, "w") as f:
            f.write("keep me")
        run(*args, "-o", old, limit_fsize=64)
        check(open(old).read() == "keep me", f"{name}: a failed run keeps the old output")
        check(listing(out_dir) == ["old"], f"{name}: no temporary file left: {listing(out_dir)}")
        shutil.rmtree(out_dir)


def special_targets(tmp, rec):
    if os.access("/dev/null", os.W_OK):
        rc, _, err = run("trace", rec, "-o", "/dev/null")
        check(rc == 0, f"trace -o /dev/null succeeds ({err.strip()})")
        check(stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is still a character device")
    real = os.path.join(tmp, "real.json")
    link = os.path.join(tmp, "link.json")
    with open(real, "w") as f:
        f.write("old")
    os.symlink("real.json", link)
    rc, _, err = run("trace", rec, "-o", link)
    check(rc == 0 and os.path.islink(link), f"the link is kept ({err.strip()})")
    check(open(real).read().startswith("{"), "the file behind the link was written")
    os.chmod(real, 0o640)
    run("trace", rec, "-o", real)
    check(stat.S_IMODE(os.stat(real).st_mode) == 0o640, "a replaced file keeps its permissions")


def recording_targets(tmp):
    """record and simulate remove FILE before the run: a pipe (as /dev/null
    would be, a device) or a directory given as FILE is refused and kept."""
    fifo = os.path.join(tmp, "pipe")
    os.mkfifo(fifo)
    d = os.path.join(tmp, "outdir")
    os.mkdir(d)
    for cmd in ("record", "simulate"):
        expect([cmd, "-o", fifo, "--", "true"], 1, "is a device or a pipe, not a file")
        check(stat.S_ISFIFO(os.stat(fifo).st_mode), f"{cmd} -o PIPE: the pipe is still there")
        expect([cmd, "-o", d, "--", "true"], 1, "is a directory, not a file")
        check(os.path.isdir(d), f"{cmd} -o DIR: the directory is still there")


def bad_inputs(tmp):
    d = os.path.join(tmp, "adir")
    os.mkdir(d)
    out = os.path.join(tmp, "x.memhist")
    expect(["import", d, "-o", out], 1, "Is a directory")
    if os.path.exists("/dev/zero"):
        expect(["import", "/dev/zero", "-o", out], 1, "a device, not a file")
    z = os.path.join(tmp, "model.pt")
    with open(z, "wb") as f:
        f.write(b"PK\x03\x04" + bytes(60))
    expect(["import", z, "-o", out], 1, "zip archive")
    bad = os.path.join(tmp, "bad.pickle")
    with open(bad, "wb") as f:
        f.write(b"\x80\x04K\x01.")
    expect(["import", bad, "-o", out], 1, bad)
    check(not os.path.exists(out), "a failed import leaves no output")
    expect(["info", d], 1, "is a directory")
    expect(["report", d], 1, "is a directory")


def interrupted(tmp):
    """SIGTERM or SIGINT during a long write leaves no file behind."""
    import signal
    import time
    for sig in (signal.SIGTERM, signal.SIGINT):
        d = os.path.join(tmp, f"sig{int(sig)}")
        os.mkdir(d)
        p = subprocess.Popen([MEMHIST, "simulate", "--steps", "1000000", "-o",
                              os.path.join(d, "run.memhist")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(500):
            if os.listdir(d):
                break
            time.sleep(0.01)
        time.sleep(0.2)
        p.send_signal(sig)
        rc = p.wait(timeout=60)
        check(rc == -sig and listing(d) == [],
              f"{sig.name} during simulate: killed by it ({rc}), nothing left: {listing(d)}")


def option_errors():
    for args in (["simulate", "--bogus"], ["whatif", "--alloc-conf"]):
        rc, _, err = run(*args)
        lines = [l for l in err.splitlines() if l.strip()]
        check(rc == 2 and len(lines) == 2 and lines[0].startswith("memhist "),
              f"{' '.join(args)}: one error line and the hint (got {rc}: {lines})")


def main():
    if not MEMHIST or not os.path.exists(MEMHIST):
        print("skip: MEMHIST is not set to the built binary")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        rec = os.path.join(tmp, "in.memhist")
        shutil.copy(os.path.join(DATA, "example.memhist"), rec)
        pickle = os.path.join(tmp, "in.pickle")
        shutil.copy(os.path.join(DATA, "snapshots", "small.p4.pickle"), pickle)
        same_file_refused(tmp, rec, pickle)
        full_device_and_limits(tmp, rec, pickle)
        special_targets(tmp, rec)
        recording_targets(tmp)
        bad_inputs(tmp)
        interrupted(tmp)
        option_errors()
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
