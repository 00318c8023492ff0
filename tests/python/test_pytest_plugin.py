"""memhist's pytest plugin on the virtual device, run as a user runs it.

Runs `pytest -p memhist tests/pytest_plugin/... --memhist-gpu T4` in
subprocesses and checks, from the JUnit XML and the output: a test within
its budget passes; one over its budget fails with the peak, the budget, the
step and phase of the peak (as `memhist report --json` of its recording
says) and the top module; one that keeps a tensor per step fails no_growth;
a steady one passes it; the gpu_memory fixture gives the recording's peaks;
the summary line. Baselines: stored, compared unchanged (passes), broken by
a doubled batch (fails naming what grew), allowed by a tolerance, written
again on request. Bad input: an unknown preset, unparsable sizes, a bad
marker (usage errors), a marker on a test without CUDA (a warning), pytest
run in-process, --memhist without a GPU. Without the flags the plugin
imports nothing. The pytest11 entry point works as an installation has it.
The marker's sizes are read as the memhist CLI reads them. Skips (77)
without pytest, torch, the torch bridge or the virtual device.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

MEMHIST = os.environ.get("MEMHIST")
BIN = os.environ.get("MH_BINARY_DIR", "")
SRC = os.environ.get("MH_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLES = os.path.join(SRC, "tests", "pytest_plugin")
MIB = 1 << 20
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def skip(why):
    print("skipped:", why)
    sys.exit(77)


try:
    import pytest  # noqa: F401
    import torch
except ImportError as e:
    skip("%s is not installed (scripts/setup.sh installs it)" % e.name)
if not MEMHIST or not os.path.exists(os.path.join(BIN, "libmemhist_torch.so")):
    skip("the torch bridge (libmemhist_torch.so) was not built")
if not os.path.exists(os.path.join(BIN, "vdevice", "libcudart.so.13")):
    skip("the virtual device was not built")
sys.path.insert(0, os.path.join(BIN, "python"))
from memhist import _pytest_budget  # noqa: E402


def pytest_run(tmp, args, env=None, pythonpath=None, plugin=True):
    """pytest in a subprocess; (process, {test name: (outcome, text, properties)})."""
    xml = os.path.join(tmp, "junit.xml")
    if os.path.exists(xml):
        os.unlink(xml)
    e = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MEMHIST_VDEVICE"))}
    e.update(env or {}, PYTHONPATH=pythonpath or os.path.join(BIN, "python"), PYTHONDONTWRITEBYTECODE="1")
    e["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1" if plugin else ""
    cmd = [sys.executable, "-m", "pytest"] + (["-p", "memhist"] if plugin else []) + [
        "-p", "no:cacheprovider", "--basetemp", os.path.join(tmp, "basetemp"), "--junitxml", xml] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e, cwd=tmp,
                       timeout=600)
    return p, junit(xml)


def junit(xml):
    tests = {}
    if not os.path.exists(xml):
        return tests
    for case in ET.parse(xml).getroot().iter("testcase"):
        outcome, text = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome, text = tag, (node.get("message") or "") + "\n" + (node.text or "")
                break
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        tests[case.get("name")] = (outcome, text, props)
    return tests


def report_device(recording):
    out = subprocess.run([MEMHIST, "report", "--json", recording], stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(out.stdout)["files"][0]["devices"][0]


def check_budgets(tmp):
    p, t = pytest_run(tmp, [os.path.join(EXAMPLES, "test_budgets.py"), "--memhist-gpu", "T4"])
    out = p.stdout
    check(p.returncode == 1, "budgets: exit status 1 (tests failed), got %d:\n%s" % (p.returncode, out[-3000:]))
    check("virtual T4 (15.00 GiB" in out, "budgets: the header names the virtual device")
    outcome, text, props = t.get("test_within_budget", ("missing", "", {}))
    check(outcome == "passed", "within budget passes: %s %s" % (outcome, text[:500]))
    check(int(props.get("memhist_peak_allocated", 1 << 62)) <= 64 * MIB and props.get("memhist_checks") == "budget",
          "within budget: measured under 64 MiB: %s" % props)

    outcome, text, props = t.get("test_over_budget", ("missing", "", {}))
    check(outcome == "failure", "over budget fails: %s" % outcome)
    recording = props.get("memhist_recording", "")
    check(os.path.isfile(recording), "over budget: the recording exists: %r" % recording)
    if os.path.isfile(recording):
        d = report_device(recording)
        peak = "peak allocated %s > max_allocated 64.00 MiB" % bytes_text(d["peak_allocated"])
        check(peak in text, "over budget: %r in the message:\n%s" % (peak, text))
        moment = "at step %d, %s" % (d["peak_allocated_step"], d["peak_allocated_phase"])
        check(moment in text, "over budget: the peak's step and phase %r in the message" % moment)
        check(str(d["peak_allocated"]) == props.get("memhist_peak_allocated"), "over budget: the peak property")
    check(re.search(r"by module \(memhist layers\):\n.*\n  parameters .*\n  head ", text) is not None,
          "over budget: the top module (head, after the parameters) in the message:\n%s" % text)
    check("largest groups by stack:" in text and "torch internal: AddmmBackward0" in text,
          "over budget: the groups by stack as memhist report prints them")
    check("recording: %s" % recording in text, "over budget: the recording's path in the message")
    check("\x1b[" not in text, "over budget: plain text (no ANSI escapes) in the JUnit failure")

    outcome, text, props = t.get("test_leaks_a_tensor_per_step", ("missing", "", {}))
    check(outcome == "failure", "a tensor kept per step fails no_growth: %s" % outcome)
    check("grows step after step" in text and "256.00 KiB" in text and "head (pytest_plugin/workload.py:15 forward)"
          in text, "no_growth: the growing site, its module and bytes per step (64 x 1024 floats):\n%s" % text)
    outcome, text, props = t.get("test_steady_training", ("missing", "", {}))
    check(outcome == "passed" and props.get("memhist_checks") == "growth", "steady training passes no_growth: "
          "%s %s %s" % (outcome, props, text[:500]))

    outcome, text, props = t.get("test_fixture_figures", ("missing", "", {}))
    check(outcome == "passed", "fixture test passes: %s %s" % (outcome, text[:500]))
    for what in ("allocated", "reserved"):
        check(props.get("fixture_peak_" + what) == props.get("memhist_peak_" + what) is not None,
              "fixture: peak %s as the recording's report: %s" % (what, props))
    summary = re.search(r"^memhist: 5 tests measured, 2 budgets checked, 2 growth checks, 2 failed a memory "
                        r"check; largest peak [0-9.]+ MiB allocated \([0-9.]+ MiB reserved\) in "
                        r"\S*test_over_budget$", out, re.M)
    check(summary is not None, "budgets: the summary line:\n%s" % out[-1500:])


def bytes_text(n):
    from memhist._pytest_text import bytes_text as text
    return text(n)


def check_baseline(tmp):
    base = os.path.join(tmp, "baseline")
    test = [os.path.join(EXAMPLES, "test_baseline.py"), "--memhist-gpu", "T4", "--memhist-baseline", base]
    p, t = pytest_run(tmp, test)
    outcome, _, props = t.get("test_training_steps", ("missing", "", {}))
    check(p.returncode == 0 and outcome == "passed", "baseline: first run passes: %s" % p.stdout[-2000:])
    stored = [f for f in os.listdir(base)] if os.path.isdir(base) else []
    check(sorted(f.rsplit(".", 1)[1] for f in stored) == ["json", "memhist"], "baseline: json and recording: %s"
          % stored)
    entry = {}
    for f in stored:
        if f.endswith(".json"):
            with open(os.path.join(base, f)) as fh:
                entry = json.load(fh)
    check(entry.get("nodeid", "").endswith("test_baseline.py::test_training_steps")
          and str(entry.get("peak_allocated")) == props.get("memhist_peak_allocated"),
          "baseline: keyed by node id, the measured peak: %s %s" % (entry, props))
    p, t = pytest_run(tmp, test)
    check(p.returncode == 0 and "1 baseline compared" in p.stdout, "baseline: unchanged run passes:\n%s"
          % p.stdout[-2000:])

    doubled = {"MEMHIST_EXAMPLE_BATCH": "512"}
    p, t = pytest_run(tmp, test, env=doubled)
    outcome, text, props = t.get("test_training_steps", ("missing", "", {}))
    check(outcome == "failure", "baseline: a doubled batch fails: %s" % outcome)
    grew = "peak allocated %s -> %s" % (bytes_text(entry.get("peak_allocated", 0)),
                                        bytes_text(int(props.get("memhist_peak_allocated", 0))))
    check(grew in text and "tolerance 0 B" in text, "baseline: %r in the message:\n%s" % (grew, text))
    check(re.search(r"^  (head|encoder) .*\+[0-9.]+ MiB$", text, re.M) is not None,
          "baseline: names the layer that grew, as memhist diff does:\n%s" % text)
    p, t = pytest_run(tmp, test + ["--memhist-tolerance", "1GiB"], env=doubled)
    check(p.returncode == 0, "baseline: within the tolerance passes")
    p, t = pytest_run(tmp, test + ["--memhist-update-baseline"], env=doubled)
    p, t = pytest_run(tmp, test, env=doubled)
    check(p.returncode == 0 and "1 baseline compared" in p.stdout, "baseline: updated, then passes")


def usage_error(tmp, args, expect, what):
    p, _ = pytest_run(tmp, args)
    check(p.returncode == 4 and expect in p.stdout, "%s: usage error (4) with %r, got %d:\n%s"
          % (what, expect, p.returncode, p.stdout[-1500:]))
    check("Traceback" not in p.stdout, "%s: no traceback" % what)


def check_bad_input(tmp):
    no_cuda = os.path.join(EXAMPLES, "bad", "test_no_cuda.py")
    usage_error(tmp, [no_cuda, "--memhist-gpu", "T5"], "--memhist-gpu: no preset named 'T5'", "unknown preset")
    usage_error(tmp, [no_cuda, "--memhist-device-memory", "8 parsecs"],
                "--memhist-device-memory: invalid value '8 parsecs'", "bad device memory")
    usage_error(tmp, [no_cuda, "--memhist-gpu", "T4", "--memhist-tolerance", "lots"],
                "--memhist-tolerance: invalid value 'lots'", "bad tolerance")
    usage_error(tmp, [no_cuda, "--memhist-gpu", "T4", "--memhist-update-baseline"],
                "--memhist-update-baseline writes the baselines of --memhist-baseline DIR", "update without a baseline")
    usage_error(tmp, [os.path.join(EXAMPLES, "bad", "test_bad_size.py"), "--memhist-gpu", "T4"],
                "test_bad_size.py::test_bad_size: @pytest.mark.gpu_memory: max_allocated='1.5 parsecs'", "bad marker")
    p, t = pytest_run(tmp, [no_cuda, "--memhist-gpu", "T4"])
    check(p.returncode == 0 and "GpuMemoryWarning: @pytest.mark.gpu_memory was not checked: it used no CUDA memory"
          in p.stdout, "marker without CUDA: passes with a warning:\n%s" % p.stdout[-1500:])
    check("GpuMemoryWarning: @pytest.mark.gpu_memory was not checked: it allocated nothing on device 1" in p.stdout,
          "marker on a device the test did not use: a warning")
    p, t = pytest_run(tmp, [os.path.join(EXAMPLES, "bad", "test_without_flags.py"), "--strict-markers"])
    check(p.returncode == 0 and t.get("test_nothing_imported", ("",))[0] == "passed"
          and t.get("test_fixture_skips", ("",))[0] == "skipped" and "memhist:" not in p.stdout,
          "without the flags: nothing imported, the fixture skips, no summary:\n%s" % p.stdout[-1500:])
    if not torch.cuda.is_available():
        p, _ = pytest_run(tmp, [no_cuda, "--memhist"])
        check(p.returncode == 4 and "torch sees none" in p.stdout, "--memhist without a GPU: usage error")
    code = "import pytest, sys; sys.exit(pytest.main(['-p', 'memhist', %r, '--memhist-gpu', 'T4']))" % no_cuda
    e = dict(os.environ, PYTHONPATH=os.path.join(BIN, "python"), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=e, cwd=tmp, timeout=300)
    check(p.returncode == 4 and "not through pytest.main()" in p.stdout, "pytest.main(): usage error:\n%s"
          % p.stdout[-1500:])


def check_entry_point(tmp):
    """pyproject.toml's pytest11 entry point, as an installed memhist has it
    (a dist-info on the path): loaded by autoload and by -p memhist."""
    with open(os.path.join(SRC, "pyproject.toml")) as f:
        section = re.search(r"^\[project\.entry-points\.pytest11\]\n((?:\w+ = \"[\w.]+\"\n)+)", f.read(), re.M)
    entry = dict(re.findall(r'(\w+) = "([\w.]+)"', section.group(1))) if section else {}
    check(entry == {"memhist": "memhist.pytest_plugin"}, "pyproject.toml: pytest11 memhist: %s" % entry)
    site = os.path.join(tmp, "site")
    info = os.path.join(site, "memhist-0.0.0.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: memhist\nVersion: 0.0.0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[pytest11]\n" + "".join("%s = %s\n" % kv for kv in entry.items()))
    path = site + os.pathsep + os.path.join(BIN, "python")
    no_cuda = os.path.join(EXAMPLES, "bad", "test_no_cuda.py")
    for plugin in (False, True):
        e = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": ""} if not plugin else {}
        p, _ = pytest_run(tmp, [no_cuda, "--memhist-gpu", "T4"], env=e, pythonpath=path, plugin=plugin)
        check(p.returncode == 0 and "GpuMemoryWarning" in p.stdout and "virtual T4" in p.stdout,
              "entry point (%s): the plugin runs:\n%s" % ("-p memhist" if plugin else "autoload", p.stdout[-1500:]))


def check_sizes():
    """The marker's sizes are the CLI's (simulate --print-env shows what it
    read; a small context lets small capacities through)."""
    for text in ("1.5 GiB", "800MB", "512mib", "8G", "1e9", "2.5 t", "4194304", "0.75gb", "64 M"):
        p = subprocess.run([MEMHIST, "simulate", "--context-memory", "1MiB", "--device-memory", text,
                            "--print-env"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        cli = dict(line.split("=", 1) for line in p.stdout.splitlines()).get("MEMHIST_VDEVICE_MEMORY")
        check(cli is not None and int(cli) == _pytest_budget.parse_size(text), "size %r: CLI %s, plugin %s"
              % (text, cli, _pytest_budget.parse_size(text)))
    for text in ("1.5 parsecs", "-5MB", "GiB", "", "5 MB ", "5..5G", "1e999"):
        p = subprocess.run([MEMHIST, "simulate", "--context-memory", "1MiB", "--device-memory", text,
                            "--print-env"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        try:
            _pytest_budget.parse_size(text)
            plugin_ok = True
        except ValueError:
            plugin_ok = False
        check(p.returncode == 2 and not plugin_ok, "size %r refused by both: CLI %d, plugin %s"
              % (text, p.returncode, plugin_ok))


with tempfile.TemporaryDirectory() as tmp:
    check_sizes()
    check_budgets(tmp)
    check_baseline(tmp)
    check_bad_input(tmp)
    check_entry_point(tmp)

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
