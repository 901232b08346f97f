"""The lit suite's warm starts (tests/filecheck/warm_tools.py): a tool run
forked from the warm server prints, on both streams, and exits with what the
same tool run afresh does, and the runs were served by the server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parent.parent
FILECHECK_DIR = ROOT / "tests" / "filecheck"


def _warm_tools() -> ModuleType:
    return load_script(FILECHECK_DIR / "warm_tools.py", "warm_tools")


WARM = _warm_tools()
SCRIPTS = {
    tool: shutil.which(tool, path=sysconfig.get_path("scripts")) for tool in WARM.TOOLS
}

# (tool, arguments, standard input): output on stdout, notes on stderr,
# both on one pipe, input from a pipe, a failing run, a FileCheck run.
FOUR_TENSOR = (ROOT / "examples" / "four_tensor.mlir").read_text()
CASES = [
    ("xdsl-opt", ["-p", "classify-axes", "examples/four_tensor.mlir"], None),
    ("xdsl-opt", ["--print-op-generic"], FOUR_TENSOR),
    ("axisflow-opt", [], "builtin.module {\n  batch.forest @f {\n    oops\n  }\n}\n"),
    (
        "axisflow-opt",
        ["-p", "classify-axes,schedule-batches", "examples/pipeline/demotion.mlir"],
        None,
    ),
    ("filecheck", ["tests/filecheck/batch/roundtrip.mlir"], FOUR_TENSOR),
]


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Path, Path]]:
    """A warm server of this interpreter's tools: its shims' directory and
    its record of the requests it served."""
    with tempfile.TemporaryDirectory(prefix="axisflow-warm-") as scratch:
        socket_path = os.path.join(scratch, "socket")
        record = Path(scratch) / "requests"
        tools = {tool: script for tool, script in SCRIPTS.items() if script}
        assert set(tools) == set(WARM.TOOLS), SCRIPTS
        WARM.write_shims(Path(scratch) / "bin", socket_path, tools)
        process = subprocess.Popen(
            [
                sys.executable,
                str(FILECHECK_DIR / "warm_tools.py"),
                socket_path,
                str(os.getpid()),
                str(record),
            ],
            stdin=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 120
            while not os.path.exists(socket_path):
                assert process.poll() is None, "the warm server ended"
                assert time.monotonic() < deadline, "the warm server never listened"
                time.sleep(0.05)
            yield Path(scratch) / "bin", record
        finally:
            process.terminate()
            process.wait()


def _run(command: list[str], stdin: str | None, combined: bool) -> tuple[int, str, str]:
    result = subprocess.run(
        command,
        input=stdin,
        capture_output=not combined,
        stdout=subprocess.PIPE if combined else None,
        stderr=subprocess.STDOUT if combined else None,
        text=True,
        cwd=ROOT,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr or ""


@pytest.mark.parametrize("combined", [False, True], ids=["two-pipes", "one-pipe"])
def test_a_warm_run_is_a_fresh_run(server: tuple[Path, Path], combined: bool) -> None:
    shims, record = server
    record.unlink(missing_ok=True)
    statuses = []
    for tool, arguments, stdin in CASES:
        fresh = _run([str(SCRIPTS[tool]), *arguments], stdin, combined)
        warm = _run([str(shims / tool), *arguments], stdin, combined)
        assert warm == fresh, (tool, arguments)
        statuses.append(f"{tool} {fresh[0]}")
    # every run was the server's (not the shim's fallback), and the cases
    # cover success and failure
    assert record.read_text().splitlines() == statuses
    assert {status.split()[1] for status in statuses} == {"0", "1"}
