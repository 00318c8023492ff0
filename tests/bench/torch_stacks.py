"""torch_stacks.py - recording overhead of memhist's stack modes against
torch's own _record_memory_history, on the tiny GPT (examples/python; 4
layers of width 256, batch 8 x 128 tokens, AdamW).

    python tests/bench/torch_stacks.py [--rounds N] [--steps N] [--out DIR]
                                       [--configs none,memhist_all,...]

Every round runs each configuration once, in a fresh process, in an order
that rotates from round to round: none, torch_python, torch_all,
memhist_none, memhist_python, memhist_all (memhist as `memhist record`
runs it: module scopes and tensor roles on), memhist_none_noscopes and
memhist_python_noscopes (MEMHIST_SCOPES=0: the recorder alone),
memhist_python_pyscopes (the module scope hooks in Python instead of C:
MEMHIST_SCOPES_IMPL=python), and
memhist_python_gather (memhist taking torch's gathered contexts, as before
its own walker: MEMHIST_STACK_CAPTURE=torch); on request also
memhist_none_hooks and memhist_python_hooks (the scopes from torch's
forward hooks instead of sys.monitoring or the wrapped Module.__call__:
MEMHIST_SCOPES_IMPL=hooks). Recording starts before the
first step. Prints the machine's load, then per configuration the median,
p99 and max step over all rounds, the process CPU time per step (all
threads), the first step against no recording, bytes per event of the file
written (torch: the pickle of _dump_snapshot), the time spent after the
last step (dump or close) and the runs with a step over twice their
median; then the overhead ratio memhist/torch per stack mode and each
target of issue 20 with its figure, and those of issue 45: memhist as
`memhist record` runs it with Python stacks (memhist_python) at most 0.35 of
torch's overhead (torch_python), and its module scopes and tensor roles
adding at most 3 % of the step to the recorder alone
(memhist_python_noscopes). Needs torch with a
CUDA device (a real GPU or memhist's virtual device); exits 77 otherwise.
--configs runs only the named configurations ("none" always among them; the
ratios and targets that need a missing one are left out), for example
50 rounds of none,memhist_all for the stall check of --stacks all.
--capture-cost measures only the per-call cost of capturing a Python stack
(memhist's walker against torch's gather), which needs no device.
--instructions counts instructions instead of timing (valgrind's callgrind,
exact, so a busy machine does not disturb them; virtual device only): each
configuration runs for 5 and for 25 steps; callgrind counts the training
thread's steps one by one (it dumps its counts where the loop calls getpgrp,
at each step's start) and its median of steps 6..25 is its step, so a one-off
event there (a lazy import, a full garbage collection) stays in its own step;
the other threads' step is their difference between the two runs over 20
steps. It prints one step's instructions, all threads, those of memhist's
drain thread alone (callgrind --separate-threads) and those of the program's
threads (all but the drain thread) against no recording, the part of
memhist's that is torch's own work on its trace entries for an attached
tracker (callgrind_annotate's record_trace less the tracker's call), and
the ratio memhist/torch of the instructions added per stack mode where both
ran, and issue 45's targets counted in instructions; minutes per
configuration.
Environment: MEMHIST_LIB_DIR (libmemhist*.so), PYTHONPATH with src/python.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "python"))
CONFIGS = ["none", "torch_python", "torch_all", "memhist_none", "memhist_python", "memhist_all",
           "memhist_none_noscopes", "memhist_python_noscopes", "memhist_python_pyscopes", "memhist_python_gather"]
ON_REQUEST = ["memhist_none_hooks", "memhist_python_hooks"]  # torch's forward hooks drive the scopes
VARIANTS = {"_noscopes": {"MEMHIST_SCOPES": "0"}, "_pyscopes": {"MEMHIST_SCOPES_IMPL": "python"},
            "_gather": {"MEMHIST_STACK_CAPTURE": "torch"}, "_hooks": {"MEMHIST_SCOPES_IMPL": "hooks"}}


def config_run(c):
    """The configuration a variant runs, and its environment additions."""
    for suffix, env in VARIANTS.items():
        if c.endswith(suffix):
            return c[:-len(suffix)], env
    return c, {}


def one(config, steps, out):
    """Runs one configuration in this process; prints one JSON line."""
    import torch
    from tiny_gpt import TinyGPT
    if os.environ.get("MEMHIST_VDEVICE") == "1":  # memhist's virtual device: cuDNN off
        from memhist import _vdevice
        _vdevice.install(torch.cuda)
    torch.manual_seed(0)
    torch.cuda.init()
    model = TinyGPT(dim=256, heads=4, layers=4, ctx=128).cuda()
    opt = torch.optim.AdamW(model.parameters())
    session = None
    path = os.path.join(out, config + (".pickle" if config.startswith("torch") else ".memhist"))
    if config.startswith("torch_"):
        torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks=config[6:],
                                                 max_entries=10 ** 7)
    elif config.startswith("memhist_"):
        import memhist
        mode = config.split("_")[1]
        session = memhist.start(path, stacks=None if mode == "none" else mode)
    times, cpu = [], []
    mark = getattr(os, STEP_MARK) if os.environ.get("MH_BENCH_STEP_MARKS") == "1" else (lambda: None)
    for _ in range(steps):
        mark()  # under --instructions, callgrind dumps its counts here (STEP_MARK)
        torch.cuda.synchronize()
        t, c = time.perf_counter(), time.process_time()
        idx = torch.randint(0, 8192, (8, 129), device="cuda")
        loss = torch.nn.functional.cross_entropy(model(idx[:, :-1]).flatten(0, 1), idx[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
        cpu.append((time.process_time() - c) * 1e3)
    mark()
    t = time.perf_counter()
    size = events = 0
    if config.startswith("torch_"):
        snap = torch.cuda.memory._snapshot()
        events = sum(len(tr) for tr in snap["device_traces"])
        torch.cuda.memory._dump_snapshot(path)
        torch.cuda.memory._record_memory_history(enabled=None)
        size = os.path.getsize(path)
    elif session is not None:
        import memhist
        memhist.stop()
        events = session.counts["emitted"] if session.counts else 0
        size = os.path.getsize(path)
        if session.status != "recording":
            print("memhist: %s" % session.status, file=sys.stderr)
    after = (time.perf_counter() - t) * 1e3
    print(json.dumps({"config": config, "times": times, "cpu": cpu, "bytes": size, "events": events,
                      "after_ms": after}))


def capture_cost(depth=30, fresh=10, n=4000, reps=15):
    """Per-call cost of capturing the Python stack, called from Python
    through ctypes under `depth` long-lived frames and `fresh` frames entered
    anew for every call (as in a model's forward); the cost of the same
    calls into an empty library function is subtracted. memhist's walker
    (GIL held, as for a compiled kernel's allocation) against torch's
    gather_traceback(python), whose figure includes its binding's call and
    result object."""
    import ctypes
    import torch
    path = os.path.join(os.environ.get("MEMHIST_LIB_DIR", "build"), "libmemhist.so")
    lib = ctypes.PyDLL(path)
    lib.mh__stack_capture.restype = ctypes.c_uint32
    lib.mh__stack_capture.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.mh__stack_describe.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]
    why = ctypes.create_string_buffer(256)
    if ctypes.CDLL(path).mh__stack_init(why, 256) != 0:
        print("capture cost: own walker unavailable: %s" % why.value.decode())
        return
    gather = torch._C._profiler.gather_traceback

    def chain(d, fn):
        return chain(d - 1, fn) if d > 1 else fn()

    def timed(fn):  # CPU time of this thread: preemption on a busy machine does not count
        t = time.thread_time_ns()
        for _ in range(n):
            chain(fresh, fn)
        return (time.thread_time_ns() - t) / n

    runs = {"empty call": lambda: lib.mh__stack_describe(0, None, 0),  # same ctypes conversions
            "memhist walker": lambda: lib.mh__stack_capture(None, 0, 0),
            "torch gather_traceback(python)": lambda: gather(True, False, False)}
    cost = {k: [] for k in runs}
    for _ in range(reps):
        for k, fn in runs.items():
            cost[k].append(chain(depth, lambda: timed(fn)))
    base = min(cost["empty call"])  # fastest run: the least disturbed on a busy machine
    print("stack capture under %d frames, %d of them new per call; ns per call (thread CPU time, "
          "fastest of %d runs of %d calls):" % (depth + fresh + 3, fresh, reps, n))
    for k in list(runs)[1:]:
        print("  %-32s %8.0f" % (k, min(cost[k]) - base))


STEP_MARK = "getpgrp"  # os' and libc's call at each step's start (MH_BENCH_STEP_MARKS=1) where callgrind
# dumps; not getppid, which memhist.start() calls for its header


def callgrind_parts(prefix):
    """The files of a callgrind run with --separate-threads and a dump at
    every STEP_MARK, which dumps only the thread that calls it, the training
    thread. Files PREFIX.PART-THREAD: part 1 runs up to the first step, part
    k + 1 is step k; PREFIX-THREAD: the rest of the run. Yields (part, path)
    for the training thread's parts and (None, path) for the other threads'
    rest of the run."""
    import glob
    import re
    for path in glob.glob(prefix + "-*") + glob.glob(prefix + ".*-*"):
        m = re.search(r"(?:\.(\d+))?-(\d+)$", path[len(prefix):])
        if m and m.group(1) is not None:
            yield int(m.group(1)), path
        elif m and int(m.group(2)) != 1:
            yield None, path


def thread_counts(prefix):
    """Instructions of a callgrind run (callgrind_parts): the training
    thread's steps, one count each, the other threads' total, the part of it
    on memhist's drain thread."""
    steps, others, drain = {}, 0, 0
    for part, path in callgrind_parts(prefix):
        n, is_drain = 0, False
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("totals:"):
                    n = int(line.split()[1])
                elif not is_drain and "mh__drain_main" in line:
                    is_drain = True
        if part is not None:
            steps[part] = n
        else:
            others += n
            drain += n if is_drain else 0
    return [steps[p] for p in sorted(steps) if p >= 2], others, drain


RECORD_TRACE = "DeviceCachingAllocator::record_trace("
TRACKER_CALL = "_Function_handler<void (c10::CachingDeviceAllocator::TraceEntry const&)"


def trace_entry_cost(path):
    """Instructions in one callgrind file that torch's allocator spends on
    its trace entries (record_trace), less the attached trackers' own calls:
    what torch costs any tracker, memhist's or another."""
    p = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                       capture_output=True, text=True)
    found = {RECORD_TRACE: 0, TRACKER_CALL: 0}
    for line in p.stdout.splitlines():
        for key in found:
            if key in line and (key != TRACKER_CALL or "_M_invoke" in line) and not found[key]:
                found[key] = int(line.split()[0].replace(",", ""))
    return found[RECORD_TRACE] - found[TRACKER_CALL]


def tracker_calls(prefix):
    """(calls, instructions) of the trackers torch calls for its trace
    entries over a whole callgrind run (every thread and part): the calls
    counted from the call records of the raw files, the instructions
    inclusive. torch calls them holding the device's allocator mutex, so
    instructions per call are what each event keeps other allocating
    threads (autograd's device thread) waiting."""
    import re
    calls = cost = 0
    for _, path in callgrind_parts(prefix):
        tracker, pending, callee = set(), 0, None
        with open(path, errors="replace") as f:
            for line in f:
                if pending:
                    if pending > 0:
                        cost += int(line.split()[1])
                    pending = 0
                    continue
                m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
                if m:
                    if m.group(2) and TRACKER_CALL in m.group(2) and "_M_invoke" in m.group(2):
                        tracker.add(m.group(1))
                    callee = m.group(1) if line.startswith("cfn=") else None
                elif line.startswith("calls="):
                    pending = 1 if callee in tracker else -1
                    if callee in tracker:
                        calls += int(line.split()[0][6:])
    return calls, cost


def trace_entries_per_step(prefix, short_prefix, skip, steps):
    """trace_entry_cost per step, as instructions() counts a step: the
    training thread's median step after `skip`, and the other threads'
    difference between the long run (prefix) and the short one over `steps`
    steps."""
    def others(pre):
        return sum(trace_entry_cost(path) for part, path in callgrind_parts(pre) if part is None)

    main = [trace_entry_cost(path) for part, path in callgrind_parts(prefix)
            if part is not None and part >= skip + 2]
    return statistics.median(main) + (others(prefix) - others(short_prefix)) / steps


def instructions(args, out):
    """Instructions per step of each configuration and against none."""
    import shutil
    if not shutil.which("valgrind") or os.environ.get("MEMHIST_VDEVICE") != "1":
        print("instructions: skipped: needs valgrind and memhist's virtual device (MEMHIST_VDEVICE=1)")
        return
    # valgrind cannot map the virtual device's default 80 GB; BLAS threads that
    # spin while waiting, and string hashes seeded anew in every process (the
    # collisions of Python's dict look-ups), would add instructions that vary
    # from run to run
    env = dict(os.environ, MEMHIST_VDEVICE_MEMORY="4GiB", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONHASHSEED="0")
    short, long_, skip = 5, 25, 5
    env["MH_BENCH_STEP_MARKS"] = "1"
    per_step, entries, tracked = {}, {}, {}
    for c in args.configs:
        name, extra = config_run(c)
        runs = []
        for steps in (short, long_):
            prefix = os.path.join(out, "callgrind.%s.%d" % (c, steps))
            cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--dump-before=" + STEP_MARK,
                   "--callgrind-out-file=" + prefix, sys.executable, __file__, "--one", name, "--steps",
                   str(steps), "--out", out]
            p = subprocess.run(cmd, capture_output=True, text=True, env=dict(env, **extra), timeout=3600)
            runs.append(thread_counts(prefix))
            if p.returncode != 0 or len(runs[-1][0]) != steps:
                print("%s under valgrind failed (rc %d, %d steps counted): %s" % (
                    c, p.returncode, len(runs[-1][0]), p.stderr[-2000:]))
                sys.exit(1)
        main = statistics.median(runs[1][0][skip:])
        others, drain = ((b - a) / (long_ - short) for a, b in zip(runs[0][1:], runs[1][1:]))
        per_step[c] = (main + others, drain, main + others - drain)
        prefixes = [os.path.join(out, "callgrind.%s.%d" % (c, n)) for n in (long_, short)]
        entries[c] = trace_entries_per_step(*prefixes, skip, long_ - short)
        tracked[c] = tracker_calls(prefixes[0])
        print("instructions: %s done" % c, file=sys.stderr, flush=True)
    base = per_step["none"][0]
    print("instructions per step (callgrind: the training thread's median step of steps %d..%d, each"
          " counted alone, and the other threads' difference between a %d- and a %d-step run); the"
          " program's threads: all but memhist's drain thread, whose work a step does not wait for where"
          " it has a core of its own:" % (skip + 1, long_, short, long_))
    print("%-24s %12s %12s %8s %12s %12s %8s" % ("config", "all threads", "+ vs none", "+%", "drain thread",
                                                "program +", "+%"))
    for c, (total, drain, program) in per_step.items():
        print("%-24s %12.0f %12.0f %7.1f%% %12.0f %12.0f %7.1f%%" % (
            c, total, total - base, 100 * (total / base - 1), drain, program - base, 100 * (program / base - 1)))
    print("of which torch's trace entries for an attached tracker (record_trace less the tracker's own"
          " call, against its cost with none attached), the floor of any recorder on torch's allocator:")
    for c in per_step:
        if c.startswith("memhist_"):
            print("  %-22s %12.0f %7.1f%%" % (c, entries[c] - entries["none"],
                                              100 * (entries[c] - entries["none"]) / base))
    print("memhist's tracker call, under torch's allocator mutex (instructions per trace entry,"
          " inclusive, all threads, whole run):")
    for c, (calls, cost) in tracked.items():
        if calls and c.startswith("memhist_"):
            print("  %-22s %8.0f  (%d calls)" % (c, cost / calls, calls))
    print("targets (instructions per step, all threads):")
    scope_targets(lambda c: per_step[c][0] / base - 1,
                  lambda ok, text: print("  %-4s %s" % ("met" if ok else "MISS", text)), set(per_step),
                  "instructions")
    for mode in ("python", "all"):
        torch_c, memhist_c = "torch_" + mode, "memhist_" + mode
        if torch_c in per_step and memhist_c in per_step:
            added = per_step[torch_c][0] - base
            print("instructions added, memhist/torch, stacks=%s: all threads %.2f, program's threads %.2f" % (
                mode, (per_step[memhist_c][0] - base) / added, (per_step[memhist_c][2] - base) / added))


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def run_rounds(args, out):
    env = dict(os.environ, PYTHONFAULTHANDLER="1")  # a crashing run says where
    configs = args.configs
    res = {c: {"steady": [], "cpu": [], "first": [], "bpe": [], "after": [], "stall_runs": 0} for c in configs}
    for r in range(args.rounds):
        order = configs[r % len(configs):] + configs[:r % len(configs)]
        for c in order:
            name, extra = config_run(c)
            e = dict(env, **extra)
            p = subprocess.run([sys.executable, __file__, "--one", name, "--steps", str(args.steps), "--out", out],
                               capture_output=True, text=True, env=e, timeout=600)
            line = [l for l in p.stdout.splitlines() if l.startswith("{")]
            if p.returncode != 0 or not line:
                print("%s failed (rc %d): %s" % (c, p.returncode, p.stderr[-2000:]))
                sys.exit(1)
            d = json.loads(line[-1])
            steady = d["times"][2:]
            res[c]["steady"] += steady
            res[c]["cpu"] += d["cpu"][2:]
            res[c]["first"].append(d["times"][0])
            res[c]["after"].append(d["after_ms"])
            res[c]["stall_runs"] += int(max(steady) > 2 * statistics.median(steady))
            if d["events"]:
                res[c]["bpe"].append(d["bytes"] / d["events"])
        print("round %d/%d done" % (r + 1, args.rounds), file=sys.stderr, flush=True)
    return res


def report(res, args):
    med = {c: statistics.median(res[c]["steady"]) for c in res}
    cpu = {c: statistics.median(res[c]["cpu"]) for c in res}
    base_first = statistics.median(res["none"]["first"])
    print("tiny GPT, %d rounds x %d steps; step times in ms over steps 3..%d of every run" %
          (args.rounds, args.steps, args.steps))
    print("load average (1 min) on %d CPUs: %.1f before, %.1f after" % (os.cpu_count(), args.load_before,
                                                                          os.getloadavg()[0]))
    print("(wall: what the program sees; CPU: process CPU time per step, all threads, which a busy")
    print("machine disturbs far less; overheads against 'none')")
    print("%-24s %7s %7s %7s %6s %7s %6s %9s %7s %7s %6s" % (
        "config", "median", "p99", "max", "+wall", "CPU", "+CPU", "1st step+", "B/event", "after", "stalls"))
    for c in res:
        v = res[c]["steady"]
        bpe = "%.1f" % statistics.median(res[c]["bpe"]) if res[c]["bpe"] else "-"
        print("%-24s %7.2f %7.2f %7.2f %5.0f%% %7.2f %5.0f%% %9.2f %7s %7.1f %3d/%d" % (
            c, med[c], pct(v, 0.99), max(v), 100 * (med[c] / med["none"] - 1), cpu[c],
            100 * (cpu[c] / cpu["none"] - 1), statistics.median(res[c]["first"]) - base_first, bpe,
            statistics.median(res[c]["after"]), res[c]["stall_runs"], args.rounds))
    for mode in ("python", "all"):
        if "torch_" + mode not in res or "memhist_" + mode not in res:
            continue
        for label, m in (("wall", med), ("CPU", cpu)):
            t = m["torch_" + mode] - m["none"]
            ratio = (m["memhist_" + mode] - m["none"]) / t if t > 0 else float("nan")
            print("overhead ratio memhist/torch, stacks=%s (%s): %.2f" % (mode, label, ratio))
    print("stalls: runs with a step over twice the run's median")
    targets(res, med, cpu, base_first, args)


def targets(res, med, cpu, base_first, args):
    """Issue 20's targets, each with its figure (CPU time: see above)."""
    def over(c):
        return cpu[c] / cpu["none"] - 1

    def line(ok, text):
        print("  %-4s %s" % ("met" if ok else "MISS", text))

    print("targets (process CPU time per step):")
    for suffix in ("", "_noscopes"):
        if not {"torch_python", "memhist_python" + suffix, "memhist_none" + suffix} <= set(res):
            continue
        r = over("memhist_python" + suffix) / over("torch_python") if over("torch_python") > 0 else float("nan")
        line(r <= 0.25, "memhist_python%s overhead <= 1/4 of torch_python's: %.2f" % (suffix, r))
        line(over("memhist_none" + suffix) < 0.03, "memhist_none%s overhead < 3 %%: %+.1f %%" %
             (suffix, 100 * over("memhist_none" + suffix)))
    scope_targets(over, line, set(res), "CPU per step")
    for c in res:
        if not c.startswith("memhist_"):
            continue
        first = statistics.median(res[c]["first"]) - base_first
        line(res[c]["stall_runs"] <= res["none"]["stall_runs"] and first <= 5,
             "%s: runs with a step over 2x median %d/%d (no recording: %d), first step %+.1f ms (<= 5)" %
             (c, res[c]["stall_runs"], args.rounds, res["none"]["stall_runs"], first))


def scope_targets(over, line, ran, unit):
    """Issue 45's targets for memhist as `memhist record` runs it with Python
    stacks (module scopes and tensor roles on), against torch's recorder and
    against the recorder alone (MEMHIST_SCOPES=0); over(c): configuration
    c's overhead against no recording, as a fraction of that step."""
    named = (("memhist_python", "record as run"), ("memhist_python_noscopes", "the recorder alone"),
             ("torch_python", "torch"))
    print("  stacks=python, %s: %s" % (unit, ", ".join("%s %+.1f %%" % (label, 100 * over(c))
                                                      for c, label in named if c in ran)))
    if {"memhist_python", "torch_python"} <= ran and over("torch_python") > 0:
        r = over("memhist_python") / over("torch_python")
        line(r <= 0.35, "record-as-run memhist_python overhead <= 0.35 of torch_python's (%s): %.2f"
             % (unit, r))
    if {"memhist_python", "memhist_python_noscopes"} <= ran:
        d = over("memhist_python") - over("memhist_python_noscopes")
        line(d <= 0.03, "scopes and roles add <= +3 %% over the recorder alone, stacks=python (%s): %+.1f %%"
             % (unit, 100 * d))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 4)))
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", 30)))
    ap.add_argument("--out", default=None)
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="comma-separated subset of: " + ", ".join(CONFIGS + ON_REQUEST))
    ap.add_argument("--one", default=None)
    ap.add_argument("--capture-cost", action="store_true", help="only the per-call capture cost (no GPU needed)")
    ap.add_argument("--instructions", action="store_true",
                    help="instructions per step under callgrind instead of timing (virtual device)")
    args = ap.parse_args()
    if args.one:
        return one(args.one, args.steps, args.out)
    if args.capture_cost:
        return capture_cost()
    args.configs = ["none"] + [c for c in args.configs.split(",") if c and c != "none"]
    unknown = [c for c in args.configs if c not in CONFIGS + ON_REQUEST]
    if unknown:
        ap.error("unknown configuration %s; known: %s" % (", ".join(unknown), ", ".join(CONFIGS + ON_REQUEST)))
    try:
        import torch
        ok = torch.cuda.is_available()
    except ImportError:
        ok = False
    if not ok:
        print("torch_stacks: skipped: torch sees no CUDA device")
        sys.exit(77)
    out = args.out or tempfile.mkdtemp(prefix="mh_torch_stacks.")
    os.makedirs(out, exist_ok=True)
    if args.instructions:
        return instructions(args, out)
    capture_cost()
    args.load_before = os.getloadavg()[0]
    report(run_rounds(args, out), args)


if __name__ == "__main__":
    main()
