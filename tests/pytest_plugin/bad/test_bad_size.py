"""A gpu_memory marker whose size does not parse: a usage error
(tests/python/test_pytest_plugin.py)."""
import pytest


@pytest.mark.gpu_memory(max_allocated="1.5 parsecs")
def test_bad_size():
    pass
