"""The interpreter the Makefile makes ``.venv`` from: the distribution's
``/usr/bin/python3`` when it is 3.11 or newer and can make a venv (built
with PGO and LTO, docs/development.md), ``python3`` from ``PATH`` otherwise,
and ``PYTHON=...`` wins over both."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = Path("/usr/bin/python3")


def makefile_python(*assignments: str) -> str:
    """``$(PYTHON)`` as the Makefile sets it (with ``NAME=value``
    assignments on the command line)."""
    make = shutil.which("make")
    assert make is not None, "make is needed by make test itself"
    # not the variables of a make that runs this test (make test
    # PYTHON=... passes its assignments down in MAKEFLAGS)
    inherited = {"PYTHON", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL"}
    environment = {k: v for k, v in os.environ.items() if k not in inherited}
    run = subprocess.run(
        [
            make,
            "--no-print-directory",
            "-C",
            str(ROOT),
            "--eval",
            "print-python: ; @echo '$(PYTHON)'",
            *assignments,
            "print-python",
        ],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
    )
    return run.stdout.strip()


def system_python_can_make_a_venv() -> bool:
    """What the Makefile asks of ``/usr/bin/python3``, asked directly."""
    if not SYSTEM_PYTHON.exists():
        return False
    check = "import sys, ensurepip, venv; sys.exit(sys.version_info < (3, 11))"
    return subprocess.run([SYSTEM_PYTHON, "-c", check], check=False).returncode == 0


def test_the_system_python_first_when_it_can_make_a_venv() -> None:
    expected = str(SYSTEM_PYTHON) if system_python_can_make_a_venv() else "python3"
    assert makefile_python() == expected


def test_without_a_usable_system_python_python3_from_path() -> None:
    # SYSTEM_PYTHON empty on the command line: what a machine without a
    # usable /usr/bin/python3 gets
    assert makefile_python("SYSTEM_PYTHON=") == "python3"


@pytest.mark.parametrize("chosen", ["python3.12", "/opt/python/bin/python3"])
def test_python_on_the_command_line_wins(chosen: str) -> None:
    assert makefile_python(f"PYTHON={chosen}") == chosen
