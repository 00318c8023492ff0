"""Example tests for memhist's pytest plugin, run on a virtual GPU by
tests/python/test_pytest_plugin.py (`pytest -p memhist --memhist-gpu T4`),
which checks each outcome: within its budget (passes), over its budget
(fails naming the peak, the budget and the module), leaking a tensor per
step (no_growth fails), and the gpu_memory fixture's figures."""
import pytest
import torch

from workload import train


@pytest.mark.gpu_memory(max_allocated="64 MiB")
def test_within_budget():
    train(width=256, batch=32, steps=2)


@pytest.mark.gpu_memory(max_allocated="64 MiB", max_reserved="1 GiB")
def test_over_budget():
    train(width=16384, batch=512, steps=2)


@pytest.mark.gpu_memory(no_growth=True)
def test_leaks_a_tensor_per_step():
    predictions = []
    train(width=256, batch=64, steps=6, keep=predictions)


@pytest.mark.gpu_memory(no_growth=True)
def test_steady_training():
    train(width=256, batch=64, steps=6)


def test_fixture_figures(gpu_memory, record_property):
    block = torch.empty(4 << 20, dtype=torch.uint8, device="cuda")
    assert gpu_memory.allocated >= block.numel()
    record_property("fixture_peak_allocated", gpu_memory.peak_allocated)
    record_property("fixture_peak_reserved", gpu_memory.peak_reserved)
