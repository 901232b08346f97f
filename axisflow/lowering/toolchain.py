"""Real MLIR: find ``mlir-opt``/``mlir-runner``, lower to LLVM and run.

The tools come from Debian's ``mlir-22-tools`` package (the Makefile and
``.ci/run`` install it with ``apt-get`` when missing); they land in
``/usr/lib/llvm-22/bin`` with ``-22``-suffixed links in ``/usr/bin``, the
runner library in ``/usr/lib/llvm-22/lib``. ``MLIR_BIN_DIR`` overrides the
search. The command lines (also in ``docs/lowering.md``)::

    mlir-opt lowered.mlir LOWER_TO_LLVM... -o llvm.mlir
    mlir-runner llvm.mlir -e main -entry-point-result=void \\
        -shared-libs=/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so.22.1

Pure (no xDSL): text in, text out.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

LLVM_DIRS = ("/usr/lib/llvm-22",)
"""Where Debian's versioned LLVM/MLIR packages install."""

LOWER_TO_LLVM = (
    "--convert-linalg-to-loops",
    "--convert-scf-to-cf",
    "--expand-strided-metadata",
    "--lower-affine",
    "--finalize-memref-to-llvm",
    "--convert-arith-to-llvm",
    "--convert-index-to-llvm",
    "--convert-cf-to-llvm",
    "--convert-func-to-llvm",
    "--reconcile-unrealized-casts",
)
"""``mlir-opt`` passes: linalg to loops, scf to cf, memref/arith/func to llvm."""

INSTALL_HINT = (
    "install MLIR's tools: `apt-get update && apt-get install -y mlir-22-tools` "
    "(`make venv` does it when run as root), or set MLIR_BIN_DIR to the "
    "directory holding mlir-opt and mlir-runner"
)


class ToolchainError(RuntimeError):
    """MLIR's tools are missing or rejected the module; the message says which
    command failed and how."""


@dataclass(frozen=True)
class Toolchain:
    """Paths of ``mlir-opt``, ``mlir-runner`` and the C runner library."""

    mlir_opt: str
    mlir_runner: str
    runner_library: str

    def opt_command(self, source: str, target: str) -> list[str]:
        """``mlir-opt`` lowering ``source`` to the LLVM dialect in ``target``."""
        return [self.mlir_opt, source, *LOWER_TO_LLVM, "-o", target]

    def runner_command(self, source: str) -> list[str]:
        """``mlir-runner`` running ``@main`` of an LLVM-dialect module."""
        return [
            self.mlir_runner,
            source,
            "-e",
            "main",
            "-entry-point-result=void",
            f"-shared-libs={self.runner_library}",
        ]


def _candidates(tool: str) -> list[str]:
    found: list[str] = []
    override = os.environ.get("MLIR_BIN_DIR")
    if override:
        found.append(os.path.join(override, tool))
    found.extend(os.path.join(d, "bin", tool) for d in LLVM_DIRS)
    for name in (tool, f"{tool}-22"):
        path = shutil.which(name)
        if path is not None:
            found.append(path)
    return found


def _find_tool(tool: str) -> str | None:
    for path in _candidates(tool):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _find_library(mlir_opt: str) -> str | None:
    """``libmlir_c_runner_utils.so*`` next to the tools' ``lib`` directory."""
    real = Path(mlir_opt).resolve()
    directories = [real.parent.parent / "lib", *(Path(d) / "lib" for d in LLVM_DIRS)]
    for directory in directories:
        matches = sorted(glob.glob(str(directory / "libmlir_c_runner_utils.so*")))
        if matches:
            return matches[0]
    return None


def find_toolchain() -> Toolchain | None:
    """The installed toolchain, or ``None`` if a piece is missing."""
    mlir_opt = _find_tool("mlir-opt")
    mlir_runner = _find_tool("mlir-runner")
    if mlir_opt is None or mlir_runner is None:
        return None
    library = _find_library(mlir_opt)
    if library is None:
        return None
    return Toolchain(mlir_opt, mlir_runner, library)


def require_toolchain() -> Toolchain:
    """The installed toolchain; ``ToolchainError`` with install instructions
    when any piece is missing."""
    toolchain = find_toolchain()
    if toolchain is None:
        raise ToolchainError(f"mlir-opt/mlir-runner not found: {INSTALL_HINT}")
    return toolchain


def _run(command: list[str], what: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ToolchainError(
            f"{what} failed (exit {done.returncode}): {' '.join(command)}\n"
            f"{done.stderr.strip()}"
        )
    return done.stdout


def verify_text(text: str, *extra: str, toolchain: Toolchain | None = None) -> str:
    """Parse and verify ``text`` with ``mlir-opt`` (``extra`` flags, e.g.
    ``--allow-unregistered-dialect``); returns what it prints."""
    toolchain = toolchain or require_toolchain()
    with tempfile.TemporaryDirectory() as work:
        source = os.path.join(work, "module.mlir")
        Path(source).write_text(text, encoding="utf-8")
        return _run([toolchain.mlir_opt, source, *extra], "mlir-opt")


def compile_and_run(text: str, toolchain: Toolchain | None = None) -> str:
    """Lower a module with ``@main`` to LLVM, run it, return its stdout."""
    toolchain = toolchain or require_toolchain()
    with tempfile.TemporaryDirectory() as work:
        source = os.path.join(work, "lowered.mlir")
        target = os.path.join(work, "llvm.mlir")
        Path(source).write_text(text, encoding="utf-8")
        _run(toolchain.opt_command(source, target), "mlir-opt")
        return _run(toolchain.runner_command(target), "mlir-runner")
