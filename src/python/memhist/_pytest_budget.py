"""memhist._pytest_budget - what a test's gpu_memory marker asks for.

Sizes are read as the memhist command line reads them (cli_common.c's
mh__cli_parse_size): a number, optional spaces, then a unit among B, K, KB,
KiB, M, MB, MiB, G, GB, GiB, T, TB, TiB in any case, all of them powers of
1024 ("1.5 GiB", "800MB", "512 mib"), or a plain number of bytes. A bad
marker argument raises pytest.UsageError naming the test. Imports nothing
heavy: the plugin loads it without the flags.
"""
import math
import re

import pytest

_UNITS = {"": 1, "b": 1}
for _i, _letter in enumerate("kmgt", start=1):
    for _suffix in ("", "b", "ib"):
        _UNITS[_letter + _suffix] = 1024 ** _i

_SIZE = re.compile(r"\s*((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?) *([A-Za-z]*)")

MARKER = "gpu_memory"
MARKER_HELP = ("gpu_memory(max_allocated=SIZE, max_reserved=SIZE, device=0, no_growth=False): "
               "fail the test when its peak GPU memory exceeds the budget, or (no_growth) when its "
               "memory grows step after step; measured with --memhist-gpu, "
               "--memhist-device-memory or --memhist")


def parse_size(value):
    """Bytes from an int or a size text; ValueError when it is neither."""
    if isinstance(value, bool):
        raise ValueError("not a size")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return value
    m = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError("not a size such as 1.5GiB, 800MB or 4096")
    number = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not math.isfinite(number) or number >= 2.0 ** 64:
        raise ValueError("too large")
    return int(number + 0.5)


def option_size(name, value):
    """A size given on the command line, or pytest.UsageError."""
    try:
        return parse_size(value)
    except ValueError as e:
        raise pytest.UsageError("%s: invalid value %r (%s)" % (name, value, e)) from None


class Budget:
    """The limits of one test: bytes (or None) and the growth check."""

    def __init__(self, max_allocated=None, max_reserved=None, device=0, no_growth=False):
        self.max_allocated = max_allocated
        self.max_reserved = max_reserved
        self.device = device
        self.no_growth = no_growth

    def checks(self):
        return self.max_allocated is not None or self.max_reserved is not None or self.no_growth


def from_marker(nodeid, marker):
    """The Budget a test's gpu_memory marker gives; pytest.UsageError when
    one of its arguments is not what the marker takes."""
    def bad(text):
        return pytest.UsageError("%s: @pytest.mark.%s: %s" % (nodeid, MARKER, text))

    kwargs = dict(marker.kwargs)
    if len(marker.args) > 1 or (marker.args and "max_allocated" in kwargs):
        raise bad("takes one positional argument, max_allocated")
    if marker.args:
        kwargs["max_allocated"] = marker.args[0]
    unknown = sorted(set(kwargs) - {"max_allocated", "max_reserved", "device", "no_growth"})
    if unknown:
        raise bad("unknown argument %s (it takes max_allocated, max_reserved, device, no_growth)"
                  % ", ".join(unknown))
    sizes = {}
    for key in ("max_allocated", "max_reserved"):
        if kwargs.get(key) is not None:
            try:
                sizes[key] = parse_size(kwargs[key])
            except ValueError as e:
                raise bad("%s=%r: %s" % (key, kwargs[key], e)) from None
    device = kwargs.get("device", 0)
    if isinstance(device, bool) or not isinstance(device, int) or device < 0:
        raise bad("device=%r: a device number (0, 1, ...)" % (device,))
    no_growth = kwargs.get("no_growth", False)
    if not isinstance(no_growth, bool):
        raise bad("no_growth=%r: True or False" % (no_growth,))
    return Budget(sizes.get("max_allocated"), sizes.get("max_reserved"), device, no_growth)
