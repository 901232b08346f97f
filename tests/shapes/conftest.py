"""Fixtures of the shape tests: running a test module on both engine paths.

A :class:`~axisflow.shapes.Session` takes the concrete fast path
(``axisflow.shapes.concrete``) by default: concrete leaves and pointwise,
compose and transpose get their rows on plain tuples, without the solver. A
test module about the solver's rules that builds such programs would then
check only the fast path. Marking it with ``pytestmark =
pytest.mark.both_engine_paths`` runs each of its tests twice, ``[fast]`` with
the session's default and ``[solver]`` with ``Session`` (the name the module
imported) replaced for that test by a subclass whose default is
``concrete_fast_path=False``: the same assertions then hold on the solver's
path too. A session made with an explicit ``concrete_fast_path`` keeps it.
The library has no switch for this: only the test module's name is rebound.
"""

from __future__ import annotations

import pytest

from axisflow.shapes import Session

ENGINE_PATHS = ("fast", "solver")
"""The ids of the two runs of a ``both_engine_paths`` test."""


class SolverPathSession(Session):
    """A session that leaves the concrete fast path off unless told."""

    def __init__(
        self, *, keep_log: bool = False, concrete_fast_path: bool = False
    ) -> None:
        super().__init__(keep_log=keep_log, concrete_fast_path=concrete_fast_path)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "both_engine_paths: run the test with the concrete fast path on and off",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("both_engine_paths"):
        metafunc.parametrize("engine_path", ENGINE_PATHS, indirect=True)


@pytest.fixture(autouse=True)
def engine_path(request: pytest.FixtureRequest) -> str:
    """The engine path of the running test: ``"solver"`` rebinds the test
    module's ``Session`` to :class:`SolverPathSession`; ``"fast"`` (also
    for unmarked tests) leaves everything as it is."""
    path = getattr(request, "param", "fast")
    if path == "solver":
        assert getattr(request.module, "Session", None) is Session, (
            "a both_engine_paths module must import Session from axisflow.shapes"
        )
        monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setattr(request.module, "Session", SolverPathSession)
    return path
