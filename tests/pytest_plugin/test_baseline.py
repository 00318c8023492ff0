"""Example test for memhist's pytest plugin baselines: its batch size comes
from MEMHIST_EXAMPLE_BATCH (default 256), so tests/python/test_pytest_plugin.py
can store its peaks (--memhist-baseline DIR), run it again unchanged
(passes) and with the batch doubled (fails, naming what grew)."""
import os

from workload import train


def test_training_steps():
    train(width=2048, batch=int(os.environ.get("MEMHIST_EXAMPLE_BATCH", "256")), steps=3)
