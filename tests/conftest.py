"""Shared helpers: parse IR with the axisflow dialects, load examples; the
hypothesis ``soak`` profile."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser

from axisflow.dialects.batch import Batch, ForestOp
from axisflow.dialects.sched import Sched
from axisflow.dialects.tprog import Tprog
from axisflow.gc_pause import COMMAND_THRESHOLDS

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


RECURSION_HEADROOM = 200
"""Frames the lowered recursion limit leaves above a test's own depth."""


@pytest.fixture
def recursion_limit() -> Iterator[int]:
    """Python's recursion limit, lowered for the test to ``RECURSION_HEADROOM``
    frames above the test's own stack (restored after it). A test of code
    that must not recurse on the depth of its input then needs inputs only
    a few hundred deep instead of beyond the default 1,000: the code under
    test is as quadratic in that depth as building such inputs is (nested
    labels, call chains whose schemes copy their callees' shapes)."""
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    previous = sys.getrecursionlimit()
    limit = depth + RECURSION_HEADROOM
    sys.setrecursionlimit(limit)
    try:
        yield limit
    finally:
        sys.setrecursionlimit(previous)


SOAK_FACTOR = 10
"""How many times its examples each hypothesis property runs under the
``soak`` profile (``make soak``; ``make test`` runs the counts as written)."""

settings.register_profile("soak", deadline=None, print_blob=True)


LONG_FIRST = (
    "tests/reliability/test_fuzz.py::test_every_outcome_is_success_or_a_clean_diagnostic",
    "tests/test_planning.py::test_the_doubles_are_planned_far_below_sharing_and_rebuilding",
    "tests/reliability/test_fuzz.py::test_clean_errors_are_one_located_message",
    "tests/forest/test_oracle.py::test_every_bundled_equation_agrees_with_einsum",
    "tests/shapes/test_schemes_passes.py::test_a_call_chain_longer_than_the_recursion_limit_is_traced",
    "tests/sequant/test_sequant_forest.py::test_cse_is_invariant_under_relabelling_of_dummies",
    "tests/forest/test_properties.py::test_any_factor_order_builds_classifies_and_schedules",
    "tests/pipeline/test_planner.py::test_blocks_grow_to_the_budget",
    "tests/shapes/test_shapes_concrete.py::test_leaving_the_fast_mode_builds_the_general_state",
    "tests/lowering/test_run.py::test_mlir_runner_agrees_with_numpy",
    "tests/pipeline/test_sequant_pipeline.py::test_the_doubles_residual_agrees_at_small_extents",
    "tests/test_planning.py::test_planning_without_ir_gives_what_the_pipeline_gives",
    "tests/reliability/test_cli_guards.py::test_what_axisflow_opt_writes_it_reads",
    "tests/lowering/test_run.py::test_interpreter_agrees_with_numpy",
    "tests/pipeline/test_planner_lower_bound.py::test_the_bound_is_below_every_plan_of_random_forests",
    "tests/residual/test_forest_residual.py::test_symmetrized_residuals_agree_with_the_oracle",
    "tests/residual/test_forest_residual.py::test_values_rebuilt_per_tree_agree_with_the_oracle",
    "tests/forest/test_properties.py::test_rebuilt_values_are_never_worse_and_independent_of_names",
    "tests/pipeline/test_measured_memory.py::test_the_doubles_peak_is_the_predicted_one",
    "tests/sequant/test_sequant_syntax.py::test_deparse_then_parse_is_identity",
    "tests/shapes/test_shapes_concrete.py::test_the_fast_path_and_the_general_path_agree",
    "tests/pipeline/test_planner_lower_bound.py::test_the_bound_is_below_every_plan_of_forests_sharing_values",
    "tests/pipeline/test_planner.py::test_renaming_and_factor_order_leave_the_plan_unchanged",
    "tests/order/test_search.py::test_the_cache_serves_every_bundled_term_as_a_fresh_search_would",
    "tests/shapes/test_schemes_presolve.py::test_presolved_and_re_evaluated_applications_close_alike",
    "tests/lowering/test_lower.py::test_doubles_residual_is_accepted_by_mlir_opt",
    "tests/order/test_search.py::test_a_cached_plan_is_the_plan_of_the_renamed_product",
    "tests/reliability/test_depth.py::test_sequant_protos_nested_beyond_the_recursion_limit",
)
"""The longest tests (measured, longest first; every parameter of each):
run before all others, so that ``-n auto --dist worksteal`` does not find
one of them last on a worker while the other worker idles (the others are
stolen around them). Only the order changes; a name no longer collected is
harmless, and ``tests/test_long_first.py`` keeps the list naming tests that
exist. Left out: ``tests/execution``, whose module-scoped Dask clusters
would start twice if one of their tests moved away from the others."""


_LONG_RANK = {name: k for k, name in enumerate(LONG_FIRST)}


def long_first_key(nodeid: str) -> int:
    """Where a test goes: its rank in ``LONG_FIRST`` (any parameters), or
    after all of them. Sorting by it is stable: the others keep the
    collection order, the same on every xdist worker."""
    return _LONG_RANK.get(nodeid.partition("[")[0], len(LONG_FIRST))


def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> None:
    """The longest tests first (``LONG_FIRST``). Under
    ``--hypothesis-profile=soak``, give every hypothesis test
    ``SOAK_FACTOR`` times the examples its own settings (or the default)
    ask for. A profile alone cannot: a test's explicit ``max_examples``
    overrides any profile."""
    items.sort(key=lambda item: long_first_key(item.nodeid))
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


def pytest_collection_finish(session: pytest.Session) -> None:
    """Run the tests under the collector settings of an ``axisflow-opt`` run
    (``axisflow.gc_pause``), with what importing and collecting built
    (modules, xDSL's dialect tables, ~8,000 test items) moved out of its
    scans by ``gc.freeze``: left as they are, the collector's full
    collections re-scan those objects all through the run (measured: 11-20%
    of the CPU of the CPU-bound tests). Tests of the collector's own
    handling set and restore what they check."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COMMAND_THRESHOLDS)
