"""Shared helpers: parse IR with the axisflow dialects, load examples; the
hypothesis ``soak`` profile."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser

from axisflow.dialects.batch import Batch, ForestOp
from axisflow.dialects.sched import Sched
from axisflow.dialects.tprog import Tprog

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def context() -> Context:
    """A context with builtin and the project's dialects (batch, sched, tprog) loaded."""
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Batch)
    ctx.load_dialect(Sched)
    ctx.load_dialect(Tprog)
    return ctx


def parse(text: str) -> ModuleOp:
    """Parse and verify a module."""
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def example(name: str) -> ModuleOp:
    """Parse ``examples/<name>``."""
    return parse((EXAMPLES / name).read_text(encoding="utf-8"))


def only_forest(module: ModuleOp) -> ForestOp:
    """The module's single forest."""
    forests = [op for op in module.walk() if isinstance(op, ForestOp)]
    assert len(forests) == 1
    return forests[0]


@pytest.fixture
def ctx() -> Context:
    """A fresh context."""
    return context()


SOAK_FACTOR = 10
"""How many times its examples each hypothesis property runs under the
``soak`` profile (``make soak``; ``make test`` runs the counts as written)."""

settings.register_profile("soak", deadline=None, print_blob=True)


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Under ``--hypothesis-profile=soak``, give every hypothesis test
    ``SOAK_FACTOR`` times the examples its own settings (or the default)
    ask for. A profile alone cannot: a test's explicit ``max_examples``
    overrides any profile."""
    if config.getoption("hypothesis_profile", None) != "soak":
        return
    scaled: set[int] = set()
    for item in items:
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)
        if own is None or id(test) in scaled:  # not a hypothesis test, or done
            continue
        scaled.add(id(test))
        test._hypothesis_internal_use_settings = settings(  # type: ignore[union-attr]
            own, max_examples=own.max_examples * SOAK_FACTOR
        )
