"""gpu_memory markers that cannot be checked: on a test that uses no CUDA,
and on a device the test did not use; no_growth on two steps. Each gets a warning and the test
passes (tests/python/test_pytest_plugin.py)."""
import pytest


@pytest.mark.gpu_memory(max_allocated="1 GiB")
def test_no_cuda():
    assert sum(range(10)) == 45


@pytest.mark.gpu_memory(max_allocated="1 KiB", device=1)
def test_other_device():
    import torch
    torch.ones(1024, device="cuda:0")


@pytest.mark.gpu_memory(no_growth=True)
def test_too_few_steps():
    import torch
    model = torch.nn.Linear(64, 64).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        model(torch.randn(8, 64, device="cuda")).sum().backward()
        optimizer.step()
