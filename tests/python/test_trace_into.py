"""`memhist trace --into PROFILE.json`: clocks, overlap and names.

On a simulated recording and profiles written here around it:
1. a profile that does not overlap the recording is refused: exit 1, a
   one-line reason that says which way and by how much, no output file;
2. a profile whose time base lies inside the recording: memhist says how
   the two line up, the added events before the base get negative times
   (never clamped to 0) and all of them fall within the profile's span;
3. the profile's process and thread names stay (torch's "python" is not
   renamed), and memhist names only the tracks the profile does not;
4. gzip: a PROFILE.json.gz (tensorboard_trace_handler(use_gzip=True)) is
   read, OUT.json.gz is written compressed (with and without --into) and
   holds the same events as the plain output, and a damaged .gz is refused.
Environment: MEMHIST.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile

MEMHIST = os.environ.get("MEMHIST", "")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([MEMHIST] + list(args), capture_output=True, text=True, timeout=300)


def profile(path, base_ns, lo_us, hi_us, pid):
    events = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": pid, "ts": 0,
         "args": {"name": "thread %d (python)" % pid}},
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "ts": 0, "args": {"name": "python"}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": pid, "tid": pid, "ts": lo_us,
         "dur": hi_us - lo_us},
    ]
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "baseTimeNanoseconds": base_ns, "traceEvents": events}, f)
    return events


with tempfile.TemporaryDirectory() as tmp:
    rec = os.path.join(tmp, "sim.memhist")
    check(run("simulate", "--steps", "2", "-o", rec).returncode == 0, "simulate")
    info = json.loads(run("info", "--json", rec).stdout)
    first, last, pid = info["first_time_ns"], info["last_time_ns"], int(info["meta"]["pid"])
    span_us = (last - first) / 1000

    # 1. no overlap: the profile ends 100 s before the recording starts
    prof, out = os.path.join(tmp, "early.json"), os.path.join(tmp, "early-merged.json")
    profile(prof, first - 100 * 10**9 - 10**6, 0, 1000, pid)
    p = run("trace", rec, "--into", prof, "-o", out)
    check(p.returncode == 1, "no overlap refused: exit %d" % p.returncode)
    check(p.stderr.count("\n") == 1 and "do not overlap" in p.stderr and "ends 100.00" in p.stderr,
          "one line saying which way and how far: %r" % p.stderr)
    check(not os.path.exists(out), "no output written")

    # 2. the profile's base in the middle of the recording
    base = first + (last - first) // 2
    prof, out = os.path.join(tmp, "mid.json"), os.path.join(tmp, "mid-merged.json")
    given = profile(prof, base, -span_us, span_us, pid)
    p = run("trace", rec, "--into", prof, "-o", out)
    check(p.returncode == 0, "merge: %s" % p.stderr)
    want = "recording starts %.3f s after the profile; %.3f s of the profile's %.3f s" % (
        (last - first) / 2e9, (last - first) / 1e9, 2 * span_us / 1e6)
    check(want[:40] in p.stderr and "covered" in p.stderr, "says how the clocks line up: %r" % p.stderr)
    if p.returncode == 0:
        doc = json.load(open(out))
        added = doc["traceEvents"][len(given):]
        timed = [e["ts"] for e in added if e["ph"] != "M"]
        check(timed and min(timed) < 0 < max(timed), "events before the base have negative ts: %s"
              % (timed[:3],))
        check(all(-span_us <= t <= span_us for t in timed), "added events lie within the profile")
        check(sum(1 for e in added if e["ph"] == "C" and e["ts"] == 0) <= 1, "no pile-up at ts 0")
        # 3. names
        names = [(e["name"], e["pid"], e.get("tid"), e["args"].get("name")) for e in doc["traceEvents"]
                 if e["ph"] == "M" and e["name"] in ("process_name", "thread_name")]
        check([n for n in names if n[0] == "process_name" and n[1] == pid] ==
              [("process_name", pid, 0, "python")], "torch's process name kept: %s" % names)
        check([n for n in names if n[0] == "process_name" and n[1] == 0] ==
              [("process_name", 0, 0, "python")], "torch's GPU process name kept")
        check(any(n[0] == "thread_name" and n[1] == 0 and n[3] != "python" for n in names),
              "memhist names the tracks it adds: %s" % names)

    # 4. gzip in and out
    if os.path.exists(out):
        gzprof, gzout = prof + ".gz", os.path.join(tmp, "mid-merged.json.gz")
        with open(prof, "rb") as f, gzip.open(gzprof, "wb") as g:
            g.write(f.read())
        p = run("trace", rec, "--into", gzprof, "-o", gzout)
        check(p.returncode == 0, "merge from and to .json.gz: %s" % p.stderr)
        try:
            with gzip.open(gzout, "rt", encoding="utf-8") as f:
                check(json.load(f) == json.load(open(out)), ".json.gz holds the same trace")
        except (OSError, ValueError) as e:
            check(False, "the .json.gz output is gzip JSON: %s" % e)
        plain, packed = os.path.join(tmp, "plain.json"), os.path.join(tmp, "packed.json.gz")
        check(run("trace", rec, "-o", plain).returncode == 0 and
              run("trace", rec, "-o", packed).returncode == 0, "trace to .json and .json.gz")
        with gzip.open(packed, "rb") as f:
            check(f.read() == open(plain, "rb").read(), "-o x.json.gz is the compressed trace")
        cut = os.path.join(tmp, "cut.json.gz")
        open(cut, "wb").write(open(gzprof, "rb").read()[:60])
        p = run("trace", rec, "--into", cut, "-o", os.path.join(tmp, "x.json"))
        check(p.returncode == 1 and "gzip" in p.stderr and not os.path.exists(os.path.join(tmp, "x.json")),
              "a damaged .gz is refused: %r" % p.stderr)

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
