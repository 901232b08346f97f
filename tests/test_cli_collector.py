"""axisflow-opt tunes the cyclic collector for its own run only."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from axisflow import cli
from axisflow.gc_pause import COMMAND_THRESHOLDS

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "four_tensor.mlir"


def test_importing_the_plugin_leaves_the_collector_alone() -> None:
    code = (
        "import gc; before = gc.get_threshold(); "
        "import axisflow.universe, axisflow.cli, axisflow.passes.classify_axes, "
        "axisflow.passes.schedule_batches, axisflow.dialects.batch; "
        "print(before == gc.get_threshold(), gc.isenabled())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )
    assert done.stdout.split() == ["True", "True"]


def test_the_command_raises_the_thresholds_for_its_run_and_restores_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, int, int]] = []

    def run(self: object) -> None:
        seen.append(gc.get_threshold())
        raise ValueError("stop here")

    monkeypatch.setattr(cli.xDSLOptMain, "run", run)
    # CPython's defaults: the test session runs under others (tests/conftest.py)
    before = (700, 10, 10)
    saved = gc.get_threshold()
    gc.set_threshold(*before)
    try:
        assert cli.main([str(EXAMPLE)]) == 1  # the ValueError, reported
        after = gc.get_threshold()
    finally:
        gc.set_threshold(*saved)
    assert seen == [COMMAND_THRESHOLDS]
    assert after == before
