"""Shared helpers: parse IR with the axisflow dialects, load examples."""

from __future__ import annotations

from pathlib import Path

import pytest
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
