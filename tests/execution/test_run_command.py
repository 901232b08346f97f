"""``axisflow run``: the residual written from the command line, on the
tests' Dask cluster and on an embedded one; bad options exit 2, bad data 1,
one line each, no traceback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from distributed import Client

from axisflow.planning import main
from axisflow.scheduling.evaluate import relative_difference
from axisflow.sequant import parse
from tests.conftest import EXAMPLES
from tests.einsum_oracle import oracle_inputs, oracle_residual

EQUATION = EXAMPLES / "sequant" / "csv_ccsd_singles_residual_df.txt"
REPORT_ROWS = (
    "wall time",
    "planning + graph",
    "multiply-adds",
    "GFLOP/s",
    "workers",
    "peak per worker",
    "",
    "tasks",
    "bytes moved",
)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    expression = parse(EQUATION.read_text("utf-8"))
    extents = dict.fromkeys(expression.space_keys(), 3)
    path = tmp_path_factory.mktemp("run") / "inputs.npz"
    np.savez(path, **oracle_inputs(expression, extents))  # pyright: ignore[reportArgumentType]
    return path, oracle_residual(expression, extents)[1]


def test_the_residual_is_written_and_the_report_printed(
    dask_client: Client,
    data: tuple[Path, np.ndarray],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    inputs, reference = data
    output = tmp_path / "R.npy"
    argv = ["run", str(EQUATION), "--inputs", str(inputs), "--output", str(output)]
    status = main(
        [
            *argv,
            "--batch",
            "i,Κ",
            "--every-loop",
            "--scheduler",
            str(dask_client.scheduler_info()["address"]),
        ]
    )
    printed = capsys.readouterr()
    assert status == 0 and printed.err == ""  # a pipe: no progress bar
    lines = printed.out.splitlines()
    assert lines[0] == f"residual (a_1<i_1>, i_1) written to {output}"
    assert tuple(line[:16].strip() for line in lines[1:]) == REPORT_ROWS
    assert relative_difference(np.load(output), reference) <= 1e-10


def test_an_embedded_cluster_and_quiet(
    data: tuple[Path, np.ndarray], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs, reference = data
    output = tmp_path / "R.zarr"
    argv = ["run", str(EQUATION), "--inputs", str(inputs), "--output", str(output)]
    assert main([*argv, "--batch", "i", "--workers", "1", "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    import zarr

    written = np.asarray(zarr.open_array(str(output)))
    assert relative_difference(written, reference) <= 1e-10


@pytest.mark.parametrize(
    ("options", "status", "message"),
    [
        (["--output", "R.txt"], 2, "--output: R.txt must end in .npy or .zarr"),
        (["--workers", "0"], 2, "--workers: expected a positive integer, got '0'"),
        (["--block", "i=0"], 2, "--block: expected a positive integer, got '0'"),
        (
            ["--budget", "lots"],
            2,
            "--budget: expected a size such as 100GiB, 500MB or 4e9 (bytes), got 'lots'",
        ),
        (
            ["--extents", "i=x"],
            2,
            "malformed extent 'i=x': expected KEY=POSITIVE_INTEGER or "
            "KEY<PROTOS>=POSITIVE_INTEGER",
        ),
        (
            ["--batch", "q"],
            2,
            "index space 'q' does not occur in the expression (its spaces: a, i, "
            "Κ (alias Kappa), μ̃ (alias mutilde))",
        ),
        (
            ["--scheduler", "tcp://127.0.0.1:9", "--workers", "2"],
            2,
            "--workers: the cluster at --scheduler has its own",
        ),
        (
            ["--extents", "i=4"],
            1,
            "input g{i;i;Κ}, axis 0 (i_1, space i): size 3, but extents give i=4",
        ),
        (
            ["--budget", "1KiB", "--workers", "2"],
            1,
            "input @t_1 needs 648 B by itself, above the budget of 1 KiB (512 B per "
            "worker, 2 workers); batch over more spaces, use smaller blocks or give "
            "a larger budget",
        ),
        (
            ["--output", "/nonexistent/R.npy"],
            1,
            "--output: /nonexistent: no such directory",
        ),
    ],
)
def test_bad_options_and_data_are_one_line(
    data: tuple[Path, np.ndarray],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    status: int,
    message: str,
) -> None:
    inputs, _ = data
    argv = ["run", str(EQUATION), "--inputs", str(inputs)]
    if "--output" not in options:
        argv += ["--output", str(tmp_path / "R.npy")]
    assert main([*argv, *options]) == status
    assert capsys.readouterr() == ("", f"axisflow run: error: {message}\n")
    assert list(tmp_path.iterdir()) == []


def test_a_nan_in_the_inputs_is_one_line_before_any_work(
    data: tuple[Path, np.ndarray], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs, _ = data
    with np.load(inputs) as archive:
        arrays = {key: archive[key] for key in archive.files}
    arrays["g{i_1;i_2;Κ_1}"][0, 1, 2] = np.nan  # by its exact key
    poisoned = tmp_path / "poisoned.npz"
    np.savez(poisoned, **arrays)  # pyright: ignore[reportArgumentType]
    output = tmp_path / "R.npy"
    argv = ["run", str(EQUATION), "--inputs", str(poisoned), "--output", str(output)]
    assert main([*argv, "--workers", "1"]) == 1
    assert capsys.readouterr() == (
        "",
        "axisflow run: error: input g{i;i;Κ}: element [0, 1, 2] is nan; the "
        "evaluation takes finite numbers\n",
    )
    assert sorted(tmp_path.iterdir()) == [poisoned]
