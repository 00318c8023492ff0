"""memhist.pytest_plugin - GPU memory budgets as pytest tests.

    pytest --memhist-gpu T4                 # every test on a virtual Tesla T4, no GPU needed
    pytest --memhist-device-memory 8GiB     # a virtual device of that capacity
    pytest --memhist                        # on the real GPU
    pytest --memhist-gpu T4 --memhist-baseline mem-baseline/   # fail where a peak grew

    @pytest.mark.gpu_memory(max_allocated="1.5 GiB", max_reserved="2 GiB", device=0)
    @pytest.mark.gpu_memory(no_growth=True)
    def test_x(gpu_memory): ...             # gpu_memory.peak_allocated, ... (torch's counters)

Installing memhist enables it (the `pytest11` entry point "memhist");
`pytest -p memhist` loads it from an installation or from a source tree on
PYTHONPATH (memhist/__init__.py names this module in `pytest_plugins`).
Without --memhist-gpu, --memhist-device-memory or --memhist it does nothing:
it registers its options, the marker (so --strict-markers accepts it) and
the fixture, and imports neither torch nor memhist's libraries.
memhist._pytest_vdevice puts the session on the virtual device,
memhist._pytest_measure records and judges each test. docs/pytest.md.
"""
import pytest

from . import _pytest_budget


def pytest_addoption(parser):
    group = parser.getgroup("memhist", "GPU memory budgets (memhist)")
    group.addoption("--memhist-gpu", metavar="PRESET",
                    help="run the session's CUDA code on a virtual GPU of this model (no GPU needed; "
                         "`memhist simulate --gpu list` lists them) and measure each test's GPU memory")
    group.addoption("--memhist-device-memory", metavar="SIZE",
                    help="the virtual device's capacity, e.g. 8GiB (default: the preset's; H100 "
                         "without --memhist-gpu)")
    group.addoption("--memhist", action="store_true",
                    help="measure each test's GPU memory on the real GPU")
    group.addoption("--memhist-dir", metavar="DIR",
                    help="where each test's recording goes (default: a directory in pytest's "
                         "session temporary directory)")
    group.addoption("--memhist-baseline", metavar="DIR",
                    help="keep each test's peaks in DIR; a test whose peak grew past "
                         "--memhist-tolerance fails")
    group.addoption("--memhist-update-baseline", action="store_true",
                    help="write the baselines again instead of comparing them")
    group.addoption("--memhist-tolerance", metavar="SIZE", default="0",
                    help="how much a peak may grow over its baseline (default 0: the virtual "
                         "device is deterministic)")


def _measuring(options):
    return bool(options.memhist_gpu or options.memhist_device_memory or options.memhist)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    options = early_config.known_args_namespace
    if not _measuring(options) or options.help or options.version:
        return
    from . import _pytest_vdevice, _record
    _pytest_budget.option_size("--memhist-tolerance", options.memhist_tolerance)
    if options.memhist_device_memory:
        _pytest_budget.option_size("--memhist-device-memory", options.memhist_device_memory)
    if _pytest_vdevice.wanted(options):
        _pytest_vdevice.ensure(early_config)  # restarts pytest on the device if it is not there yet
    # before conftests and tests import torch: the device's adaptations, the modules' holders
    _record.watch_imports({"torch.cuda": _record.adapt_to_vdevice,
                           "torch.nn.modules.module": _record.watch_module_holders})


def pytest_configure(config):
    config.addinivalue_line("markers", _pytest_budget.MARKER_HELP)
    if not _measuring(config.option):
        return
    from . import _pytest_measure, _pytest_vdevice
    if not _pytest_vdevice.wanted(config.option):
        import torch
        if not torch.cuda.is_available():
            raise pytest.UsageError("memhist: --memhist measures on a CUDA device and torch sees none; "
                                    "--memhist-gpu PRESET runs the tests on a virtual one")
    config.pluginmanager.register(_pytest_measure.Measurer(config), "memhist-measure")


def pytest_report_header(config):
    if _measuring(config.option):
        from . import _pytest_vdevice
        if _pytest_vdevice.wanted(config.option):
            return _pytest_vdevice.header()
        return "memhist: each test's GPU memory is recorded on the real GPU"
    return None


class GpuMemory:
    """The test's GPU memory so far, from torch's own counters (its peaks
    were reset when the test started; the recording's report gives the same
    peaks): bytes on `device`, the marker's device or 0."""

    def __init__(self, device, recording):
        self.device = device
        self.recording = recording

    @property
    def peak_allocated(self):
        import torch
        return torch.cuda.max_memory_allocated(self.device)

    @property
    def peak_reserved(self):
        import torch
        return torch.cuda.max_memory_reserved(self.device)

    @property
    def allocated(self):
        import torch
        return torch.cuda.memory_allocated(self.device)

    @property
    def reserved(self):
        import torch
        return torch.cuda.memory_reserved(self.device)


@pytest.fixture
def gpu_memory(request):
    """The test's measured GPU memory (memhist.pytest_plugin.GpuMemory);
    the test is skipped when GPU memory is not measured."""
    measure = request.config.pluginmanager.get_plugin("memhist-measure")
    if measure is None:
        pytest.skip("gpu_memory: GPU memory is measured with --memhist-gpu PRESET, "
                    "--memhist-device-memory SIZE or --memhist")
    budget = measure.budgets.get(request.node.nodeid)
    return GpuMemory(budget.device if budget else 0, measure.recording_path(request.node.nodeid))
