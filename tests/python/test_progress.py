"""The progress line: drawn on stderr only when stderr is a terminal, redrawn
in place and cleared at the end, never changing what the command prints.

A simulated run large enough for `report` to work for more than a second
(the input doubles until a plain run takes two seconds) is reported with
stderr on a pseudo-terminal: stderr holds progress lines ("memhist: reading
FILE: N% ..."; the what-if replay of the fragmentation verdict has its own)
redrawn with '\\r' and erased at the end, percentages never going down
within a piece of work; once the terminal has applied the redraws and
erasures, stderr shows exactly the lines of a run without a terminal, and
stdout is byte for byte the same. `trace` on the same input shows progress
too and writes the same file as without a terminal. `info -` reading the
file from a pipe that delivers it over a few seconds (its size unknown)
shows the bytes read so far. Without a terminal, with --quiet (or -q, after
the command's name or before it) and with MEMHIST_QUIET=1, stderr has no
progress at all; trace --quiet prints nothing on stderr (no status line
either).
Environment: MEMHIST.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

MEMHIST = os.environ.get("MEMHIST", "")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run_pty(args, env=None, stdin=subprocess.DEVNULL):
    """Runs memhist with stderr on a pseudo-terminal; returns (rc, stdout, stderr bytes)."""
    master, slave = os.openpty()
    p = subprocess.Popen([MEMHIST] + args, stdin=stdin, stdout=subprocess.PIPE,
                         stderr=slave, env=env)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO once the last writer closed the terminal
            break
        if not chunk:
            break
        err += chunk
    out = p.stdout.read()
    p.wait(timeout=600)
    os.close(master)
    return p.returncode, out, err


def run_plain(args, env=None):
    p = subprocess.run([MEMHIST] + args, capture_output=True, timeout=600, env=env)
    return p.returncode, p.stdout, p.stderr


def as_seen(err):
    """What a terminal shows: '\\r' returns to the line's start, ESC[K erases
    to its end (the only two controls the progress line uses)."""
    lines = []
    for raw in err.decode().replace("\r\n", "\n").split("\n"):
        line = ""
        col = 0
        for part in re.split(r"(\r|\x1b\[K)", raw):
            if part == "\r":
                col = 0
            elif part == "\x1b[K":
                line = line[:col]
            else:
                line = line[:col] + part + line[col + len(part):]
                col += len(part)
        lines.append(line)
    return "\n".join(lines)


def progress_lines(err):
    """(what, percent) of every progress line drawn."""
    return [(w, int(p)) for w, p in re.findall(r"memhist: ([^\r\n\x1b]*?): (\d+)%",
                                                err.decode(errors="replace"))]


def never_down(lines):
    """Within each piece of work the percentage never goes down."""
    last = {}
    for what, pct in lines:
        if pct < last.get(what, 0):
            return False
        last[what] = pct
    return True


with tempfile.TemporaryDirectory() as tmp:
    big = os.path.join(tmp, "big.memhist")
    steps = 400
    while True:
        rc = run_plain(["simulate", "--steps", str(steps), "-o", big])[0]
        check(rc == 0, "simulate %d steps" % steps)
        took = []  # both commands the test watches must run for a while
        for args in (["report", big], ["trace", big, "--steps", "0:100", "-o", big + ".json"]):
            t0 = time.monotonic()
            run_plain(args)
            took.append(time.monotonic() - t0)
        if min(took) >= 2.0 or steps >= 12800 or rc != 0:
            break
        steps *= 2
    print("input: %d steps, %d bytes" % (steps, os.path.getsize(big)))

    rc, out, err = run_plain(["report", big])
    check(rc == 0 and b"\r" not in err and b"reading" not in err, "no terminal: no progress")
    prc, pout, perr = run_pty(["report", big])
    check(prc == 0, "report on a terminal succeeds")
    lines = progress_lines(perr)
    check(len(lines) >= 1, "progress lines on a terminal: %r" % perr[:300])
    check(b"\r" in perr and b"\x1b[K" in perr, "the line is redrawn in place and erased")
    check(never_down(lines), "percentages only grow within a pass: %s" % lines)
    check(pout == out, "stdout unchanged by the progress line")
    check(as_seen(perr) == err.decode(), "stderr once drawn equals the plain run's: %r vs %r"
          % (as_seen(perr)[-300:], err.decode()[-300:]))

    for args, env in ((["report", "--quiet", big], None), (["report", "-q", big], None),
                      (["-q", "report", big], None),
                      (["report", big], dict(os.environ, MEMHIST_QUIET="1"))):
        qrc, qout, qerr = run_pty(args, env)
        check(qrc == 0 and qout == out and b"reading" not in qerr and b"\r" not in qerr,
              "%s%s: no progress: %r" % (" ".join(args[:-1]), " MEMHIST_QUIET=1" if env else "",
                                         qerr[:200]))

    plain_trace, tty_trace = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
    window = ["--steps", "0:100"]  # the whole file is read, a small part written
    rc, _, err = run_plain(["trace", big, *window, "-o", plain_trace])
    prc, _, perr = run_pty(["trace", big, *window, "-o", tty_trace])
    check(rc == 0 and prc == 0, "trace succeeds")
    check(b"reading" not in err, "trace without a terminal: no progress")
    check(len(progress_lines(perr)) >= 1, "trace on a terminal shows progress: %r" % perr[:200])
    check(as_seen(perr) == err.decode().replace(plain_trace, tty_trace), "trace's status lines")
    with open(plain_trace, "rb") as a, open(tty_trace, "rb") as b:
        check(a.read() == b.read(), "trace output the same with and without a terminal")
    qrc, _, qerr = run_pty(["trace", "--quiet", big, *window, "-o", tty_trace])
    check(qrc == 0 and qerr == b"", "trace --quiet: no progress and no status line: %r" % qerr[:200])

    # a pipe: the size is unknown, the line says how much was read
    feeder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time\n"
                               "d = open(sys.argv[1], 'rb').read(); n = len(d) // 20\n"
                               "for i in range(20):\n"
                               "    sys.stdout.buffer.write(d[i * n:(i + 1) * n]); sys.stdout.flush()\n"
                               "    time.sleep(0.15)\n"
                               "sys.stdout.buffer.write(d[20 * n:])\n", big],
                              stdout=subprocess.PIPE)
    prc, pout, perr = run_pty(["info", "-"], stdin=feeder.stdout)
    feeder.stdout.close()
    feeder.wait()
    check(prc == 0 and re.search(rb"memhist: reading standard input: [\d.]+ [KMG]?i?B so far", perr),
          "info from a pipe shows the bytes read so far: %r" % perr[:300])
    check(b"reading" not in as_seen(perr).encode(), "and erases the line: %r" % perr[-200:])

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
