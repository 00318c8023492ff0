"""memhist._pytest_measure - one recording per test and its verdicts.

Registered by memhist.pytest_plugin only when GPU memory is measured
(--memhist-gpu, --memhist-device-memory, --memhist). Around each test
function (pytest_pyfunc_call, as pytest-memray measures) it collects
garbage (when device memory is still allocated), empties torch's cache and
resets its peak counters, records the
call with memhist.start()/stop() into DIR/<test>.memhist (what is live when
it starts is in the recording as preexisting), then asks memhist's own
analyses for the answers: `memhist report --json` for the peaks, their step
and phase and the growth across steps, and the text of `memhist report`,
`memhist layers`, `memhist growth` and `memhist diff` for a failure. The
verdicts are checked here (peak against budget, growth sites, peak against
the baseline) and turn the test's call report into a failure at
pytest_runtest_makereport; the figures go into the report's user
properties (JUnit XML <properties>), from which the session summary is
counted, also when pytest-xdist's workers ran the tests.
"""
import gc
import json
import os
import subprocess
import tempfile
import warnings

import pytest

from . import _native, _pytest_baseline, _pytest_budget, _pytest_text


class GpuMemoryWarning(pytest.PytestWarning):
    """A gpu_memory check that could not be made (the test used no CUDA)."""


def memhist_cli(*args):
    """The stdout of a memhist command; RuntimeError with its message."""
    done = subprocess.run([_native.tool() or "memhist", "-q"] + [str(a) for a in args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if done.returncode != 0:
        raise RuntimeError("memhist %s: %s" % (args[0], done.stderr.strip() or "exit %d" % done.returncode))
    return done.stdout


def _alloc_count(torch):
    """torch's count of allocations so far, over every device."""
    if not torch.cuda.is_initialized():
        return 0
    return sum(torch.cuda.memory_stats(d).get("allocation.all.allocated", 0)
               for d in range(torch.cuda.device_count()))


class TestRun:
    """One test's recording, its figures and what failed."""

    __test__ = False  # not a test class for pytest

    def __init__(self, item, path, budget):
        self.item, self.path, self.budget = item, path, budget
        self.device = None  # the report's device entry
        self.checks, self.failed, self.lines = [], [], []

    def start(self):
        import torch
        import memhist
        if torch.cuda.is_initialized():
            devices = range(torch.cuda.device_count())
            if any(torch.cuda.memory_allocated(d) for d in devices):
                gc.collect()  # garbage of earlier tests holding device memory (a full pass costs ~0.2 s)
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            for d in devices:
                torch.cuda.reset_peak_memory_stats(d)
        self.allocs_before = _alloc_count(torch)
        if os.path.exists(self.path):
            os.unlink(self.path)
        session = memhist.start(self.path)
        if session.status.startswith("not recording"):
            memhist.stop()
            raise RuntimeError("memhist: %s" % session.status)

    def stop(self):
        import torch
        import memhist
        session = memhist.stop()
        used = _alloc_count(torch) > self.allocs_before
        if session is not None and session.status != "complete" and used:
            raise RuntimeError("memhist: %s" % session.status)
        return used

    def analyse(self, store, tolerance, update):
        dev = self.budget.device
        report = json.loads(memhist_cli("report", "--json", self.path))  # every device: N may be absent
        devices = [d for f in report["files"] for d in f["devices"] if d["device"] == dev]
        if not devices:
            return self.warn("it allocated nothing on device %d" % dev)
        self.device = d = devices[0]
        self._check_budget(d)
        self._check_growth(d)
        if store is not None:
            self._check_baseline(store, d, tolerance, update)

    def warn(self, why):
        """A warning at the test's own line."""
        if self.budget.checks():
            warnings.warn_explicit(GpuMemoryWarning("@pytest.mark.gpu_memory was not checked: %s" % why),
                                   GpuMemoryWarning, str(self.item.path), self.item.location[1] + 1)

    def _check_budget(self, d):
        b = self.budget
        limits = [("allocated", b.max_allocated), ("reserved", b.max_reserved)]
        limits = [(what, limit) for what, limit in limits if limit is not None]
        if not limits:
            return
        self.checks.append("budget")
        over = [(what, d["peak_" + what], limit) for what, limit in limits if d["peak_" + what] > limit]
        if over:
            self.failed.append("budget")
            report = memhist_cli("report", "--device", b.device, "--top", 5, "--frames", 4, self.path)
            layers = memhist_cli("layers", "--device", b.device, "--top", 5, self.path)
            self.lines += _pytest_text.budget_failure(over, d, report, layers)

    def _check_growth(self, d):
        if not self.budget.no_growth:
            return
        growth = d.get("growth")
        if not growth or growth.get("window_steps", 0) < 2:
            steps = len(d.get("steps") or [])
            return self.warn("no_growth needs at least 3 complete training steps, the test ran %d"
                              % steps)
        self.checks.append("growth")
        if growth["entries"]:
            self.failed.append("growth")
            text = memhist_cli("growth", "--device", self.budget.device, "--top", 5, "--frames", 4, self.path)
            self.lines += ([""] if self.lines else []) + _pytest_text.growth_failure(d, text)

    def _check_baseline(self, store, d, tolerance, update):
        nodeid = self.item.nodeid
        entry = None if update else store.load(nodeid)
        if entry is None:
            store.save(nodeid, d, self.path)
            return
        self.checks.append("baseline")
        grew = _pytest_baseline.grew(entry, d, tolerance)
        if grew:
            self.failed.append("baseline")
            base = store.recording(entry)
            diff = memhist_cli("diff", "--device", self.budget.device, "--top", 5, base, self.path) if base else ""
            self.lines += ([""] if self.lines else []) + _pytest_text.baseline_failure(
                grew, tolerance, store.paths(nodeid)[0], diff)

    def properties(self):
        props = [("memhist_recording", self.path)]
        if self.device is not None:
            props += [("memhist_peak_allocated", self.device["peak_allocated"]),
                      ("memhist_peak_reserved", self.device["peak_reserved"])]
        if self.checks:
            props.append(("memhist_checks", ",".join(self.checks)))
        if self.failed:
            props.append(("memhist_failed", ",".join(self.failed)))
        return props

    def failure_text(self):
        return "\n".join(self.lines + ["", "recording: %s" % self.path])


class Measurer:
    """The plugin's state for one session (registered as "memhist-measure")."""

    def __init__(self, config):
        options = config.option
        self.config = config
        self.tolerance = _pytest_budget.option_size("--memhist-tolerance", options.memhist_tolerance)
        self.store = _pytest_baseline.Store(options.memhist_baseline) if options.memhist_baseline else None
        self.update = options.memhist_update_baseline
        if self.update and self.store is None:
            raise pytest.UsageError("memhist: --memhist-update-baseline writes the baselines of "
                                    "--memhist-baseline DIR: give the directory")
        self.dir = options.memhist_dir
        self.budgets, self.runs = {}, {}
        self.tally = {"measured": 0, "budget": 0, "growth": 0, "baseline": 0, "failed": 0, "largest": None}

    def recordings_dir(self):
        if self.dir is None:
            factory = getattr(self.config, "_tmp_path_factory", None)
            self.dir = str(factory.mktemp("memhist")) if factory else tempfile.mkdtemp(prefix="memhist-pytest-")
        os.makedirs(self.dir, exist_ok=True)
        return self.dir

    def recording_path(self, nodeid):
        return os.path.join(self.recordings_dir(), _pytest_baseline.file_name(nodeid) + ".memhist")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        for item in items:
            marker = item.get_closest_marker(_pytest_budget.MARKER)
            if marker is not None:
                self.budgets[item.nodeid] = _pytest_budget.from_marker(item.nodeid, marker)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        budget = self.budgets.get(pyfuncitem.nodeid) or _pytest_budget.Budget()
        run = TestRun(pyfuncitem, self.recording_path(pyfuncitem.nodeid), budget)
        self.runs[pyfuncitem.nodeid] = run
        run.start()
        outcome = yield
        used = run.stop()
        if outcome.excinfo is not None:
            return  # the test failed on its own: its recording is kept, nothing is judged
        if not used:
            return run.warn("it used no CUDA memory")
        try:
            run.analyse(self.store, self.tolerance, self.update)
        except (RuntimeError, ValueError, OSError) as e:
            run.failed.append("analysis")
            run.lines.append("memhist could not check the test's GPU memory: %s" % e)
        pyfuncitem.user_properties.extend(run.properties())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        run = self.runs.pop(item.nodeid, None) if call.when == "call" else None
        if run is None or not run.failed:
            return
        if report.passed:
            report.outcome = "failed"
            report.longrepr = run.failure_text()
        else:
            report.sections.append(("memhist GPU memory", run.failure_text()))

    def pytest_runtest_logreport(self, report):
        if report.when != "call":
            return
        props = dict(report.user_properties)
        if "memhist_peak_allocated" not in props:
            return
        t = self.tally
        t["measured"] += 1
        for check in filter(None, props.get("memhist_checks", "").split(",")):
            t[check] += 1
        t["failed"] += bool(props.get("memhist_failed"))
        peak = (props["memhist_peak_allocated"], props["memhist_peak_reserved"], report.nodeid)
        if t["largest"] is None or peak[0] > t["largest"][0]:
            t["largest"] = peak

    def pytest_terminal_summary(self, terminalreporter):
        t = self.tally
        terminalreporter.write_line(_pytest_text.summary(t["measured"], t["budget"], t["growth"], t["baseline"],
                                                         t["largest"], t["failed"]))
