"""The memory report prints any size, however large."""

from __future__ import annotations

import pytest

from axisflow.scheduling.memory import format_bytes


@pytest.mark.parametrize(
    ("base", "power", "shown"),
    [
        (1023, 1, "1023 B"),
        (1536, 1, "1.5 KiB"),
        (3 * 1024**6, 1, "3072 PiB"),
        (10, 100, "8.882e+84 PiB"),
        # 18 modes at extent 1e18: beyond a float (1.8e308) in bytes.
        (10**18, 18, "8.882e+308 PiB"),
        (2, 5000, "1.255e+1490 PiB"),
        (10, 10000, "8.882e+9984 PiB"),  # more digits than str(int) allows
    ],
)
def test_format_bytes_never_overflows(base: int, power: int, shown: str) -> None:
    assert format_bytes(base**power) == shown
