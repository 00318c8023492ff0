"""A gpu_memory marker on a test that uses no CUDA: a warning, the test
passes (tests/python/test_pytest_plugin.py)."""
import pytest


@pytest.mark.gpu_memory(max_allocated="1 GiB")
def test_no_cuda():
    assert sum(range(10)) == 45
