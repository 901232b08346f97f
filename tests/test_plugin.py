"""The package is an xdsl-opt plugin: entry point, lazy universe, CLI."""

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from xdsl.universe import Universe

ROOT = Path(__file__).parents[1]
XDSL_OPT = Path(sys.executable).parent / "xdsl-opt"


def test_entry_point_is_registered() -> None:
    plugins = {ep.name: ep.value for ep in entry_points(group="xdsl.universe")}
    assert plugins["axisflow"] == "axisflow.universe:AXISFLOW_UNIVERSE"


def test_multiverse_contains_the_plugin() -> None:
    multiverse = Universe.get_multiverse()
    assert "batch" in multiverse.all_dialects
    assert "classify-axes" in multiverse.all_passes
    assert multiverse.all_dialects["batch"]().name == "batch"
    assert multiverse.all_passes["classify-axes"]().name == "classify-axes"


def test_universe_is_import_light() -> None:
    # Loading the plugin must not import any dialect, pass or frontend: every
    # xdsl-opt run loads it, so a broken or slow module would hurt them all.
    code = (
        "import sys, axisflow.universe;"
        "print(sorted(m for m in sys.modules if m.startswith('axisflow')))"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    loaded = eval(output)  # a printed list of module names
    heavy = [
        m for m in loaded if m.startswith(("axisflow.dialects", "axisflow.passes"))
    ]
    assert heavy == []
    assert "axisflow.universe" in loaded


def test_top_level_api_does_not_need_xdsl() -> None:
    code = (
        "import sys; sys.modules['xdsl'] = None;"
        "from axisflow import Index, Occurrence, LoopRole, classify_axis;"
        "print(classify_axis([Index.parse('i_1')], [], Index.parse('i'), []).value)"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert output.strip() == "loop_carried"


def test_stock_xdsl_opt_runs_the_pass() -> None:
    result = subprocess.run(
        [
            str(XDSL_OPT),
            "-p",
            "classify-axes",
            str(ROOT / "examples" / "four_tensor.mlir"),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    assert "#batch.roles<b = loop_carried, c = reduction>" in result.stdout


AXISFLOW_OPT = Path(sys.executable).parent / "axisflow-opt"


def run_axisflow_opt(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(AXISFLOW_OPT), *args], input=stdin, capture_output=True, text=True
    )


def test_axisflow_opt_reports_verifier_errors_without_traceback() -> None:
    bad = 'batch.forest {\n batch.value @A [i_1] leaf "A"\n batch.tree @t { batch.use @B [i_1] }\n}\n'
    result = run_axisflow_opt(stdin=bad)
    assert result.returncode == 1
    # Only the located message, as for parse errors: no generic module dump.
    assert result.stderr.splitlines() == [
        "error: stdin:3:18",
        " batch.tree @t { batch.use @B [i_1] }",
        "                 ^^^^^^^^^",
        "                 batch.use @B: use of unknown value @B",
    ]


def test_axisflow_opt_reports_parse_errors_with_position() -> None:
    result = run_axisflow_opt(
        stdin='batch.forest {\n batch.value @A [i_1 leaf "A"\n}\n'
    )
    assert result.returncode == 1
    assert "stdin:2:22" in result.stderr
    assert "expected ',' or ']' in an index list" in result.stderr
    assert "Traceback" not in result.stderr


def test_axisflow_opt_reports_bad_pass_options() -> None:
    result = run_axisflow_opt(
        "-p", "classify-axes{bogus=1}", str(ROOT / "examples" / "four_tensor.mlir")
    )
    assert result.returncode == 1
    assert '["bogus"] not found in expected arguments ["explain"]' in result.stderr
    assert "Traceback" not in result.stderr


def test_axisflow_opt_is_xdsl_opt_on_success() -> None:
    result = run_axisflow_opt(
        "-p", "classify-axes", str(ROOT / "examples" / "four_tensor.mlir")
    )
    assert result.returncode == 0
    stock = subprocess.run(
        [
            str(XDSL_OPT),
            "-p",
            "classify-axes",
            str(ROOT / "examples" / "four_tensor.mlir"),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == stock.stdout
