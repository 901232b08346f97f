"""The axisflow plugin for ``xdsl-opt`` (entry point group ``xdsl.universe``).

Import-light on purpose: every ``xdsl-opt`` run loads this module, so it only
names factories; each dialect, pass and frontend is imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.universe import Universe

if TYPE_CHECKING:
    from xdsl.ir import Dialect
    from xdsl.passes import ModulePass
    from xdsl.utils.frontend import Frontend


def _batch_dialect() -> Dialect:
    from axisflow.dialects.batch import Batch

    return Batch


def _sched_dialect() -> Dialect:
    from axisflow.dialects.sched import Sched

    return Sched


def _classify_axes() -> type[ModulePass]:
    from axisflow.passes.classify_axes import ClassifyAxesPass

    return ClassifyAxesPass


def _schedule_batches() -> type[ModulePass]:
    from axisflow.passes.schedule_batches import ScheduleBatchesPass

    return ScheduleBatchesPass


def _lower_schedule() -> type[ModulePass]:
    from axisflow.passes.lower_schedule import LowerSchedulePass

    return LowerSchedulePass


def _sequant_frontend() -> type[Frontend]:
    from axisflow.sequant.frontend import SequantFrontend

    return SequantFrontend


def _sequant_txt_frontend() -> type[Frontend]:
    # xdsl-opt checks that the input's extension names a frontend even when
    # -f is given; SeQuant files end in .txt.
    from axisflow.sequant.frontend import SequantTextFrontend

    return SequantTextFrontend


def _tprog_dialect() -> Dialect:
    from axisflow.dialects.tprog import Tprog

    return Tprog


def _close_shapes_pass() -> type[ModulePass]:
    from axisflow.passes.close_shapes import CloseShapesPass

    return CloseShapesPass


def _generalize_shapes_pass() -> type[ModulePass]:
    from axisflow.passes.generalize_shapes import GeneralizeShapesPass

    return GeneralizeShapesPass


AXISFLOW_UNIVERSE = Universe(
    all_dialects={
        "batch": _batch_dialect,
        "sched": _sched_dialect,
        "tprog": _tprog_dialect,
    },
    all_passes={
        "classify-axes": _classify_axes,
        "schedule-batches": _schedule_batches,
        "lower-schedule": _lower_schedule,
        "close-shapes": _close_shapes_pass,
        "generalize-shapes": _generalize_shapes_pass,
    },
    all_frontends={
        "sequant": _sequant_frontend,
        "txt": _sequant_txt_frontend,
    },
)
