"""Run without memhist's flags: the plugin imports no torch and loads none
of memhist's libraries, the marker is known, the gpu_memory fixture skips
(tests/python/test_pytest_plugin.py)."""
import sys

import pytest


@pytest.mark.gpu_memory(max_allocated="1 KiB")
def test_nothing_imported():
    assert "torch" not in sys.modules
    with open("/proc/self/maps") as f:
        assert "libmemhist" not in f.read()


def test_fixture_skips(gpu_memory):
    raise AssertionError("not reached: the fixture skips")
