"""An ordered batch schedule, IR-free, and the rules that make one valid.

A schedule is a list of items run in order; a ``LoopPass`` runs its body once
per block of its index space. Items:

* ``Build(v, slices, sums)``: compute value ``v`` from its factors. Each
  ``Bind(mode, instance)`` in ``slices`` restricts a result mode of ``v`` to
  the current block of that (enclosing) loop instance; in ``sums`` it
  restricts a mode summed at ``v``'s node, so the result is a partial sum.
  The built piece is *transient*: readable in the same iteration only.
* ``Buffer(v, slices, zero)``: storage for ``v`` outlasting loops; full size
  except for ``slices`` (modes kept to the block of an enclosing loop it does
  not leave). ``zero`` for an accumulator.
* ``Write(v, accumulate)``: scatter (or add) the transient just built into
  ``v``'s buffer. The buffer becomes readable when the loop pass directly
  inside the buffer's block closes.
* ``Output(tree, v)``: the tree's result is ``coeff * v`` (``v`` full).

The residual (``docs/residual.md``): with a residual layout, the schedule
accumulates every tree into one result as soon as it is computed:

* ``Residual(group, modes)``: a zeroed residual buffer for one operator
  group (group 0 is the result), allocated before everything, live to the
  end (a group other than 0 until its ``Apply``);
* ``Output(tree, v, into=g)`` adds ``coeff * v`` into residual ``g`` (its
  modes transposed to the residual's); with ``direct`` the root's pieces were
  already added by ``Write(v, ..., into=g, tree=...)``, so the root never
  needs a buffer of its own;
* ``Apply(group, operators)``: the group's operators act on its residual and
  the result is added into residual 0 (for group 0, in place); SeQuant holds
  the operand and the result at once, so the step counts one more residual.

``axisflow.scheduling.check.check_schedule`` states the rules: every rule a
run depends on is checked statically there, so the evaluator and the memory
accounting can trust a schedule that passes. Where storage lives and when it
may be read is ``axisflow.scheduling.walker``'s, for every reader alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from axisflow.residual import Operator
from axisflow.roles.index import Index


@dataclass(frozen=True)
class Bind:
    """A mode of a value restricted to the current block of a loop instance."""

    mode: Index
    instance: int


@dataclass
class Build:
    """Compute a value (one piece per iteration of its enclosing loops)."""

    value: str
    slices: tuple[Bind, ...] = ()
    sums: tuple[Bind, ...] = ()
    demoted: tuple[int, ...] = ()
    """Loop instances on which the classified LoopLocal role was demoted."""
    bytes: int = 0
    """Size of one built piece."""


@dataclass
class Buffer:
    """Storage for a value that leaves the loops it is built in."""

    value: str
    slices: tuple[Bind, ...] = ()
    zero: bool = False
    bytes: int = 0


@dataclass
class Write:
    """Scatter (``accumulate=False``) or add the value's piece into its buffer
    (or, with ``into``, add ``coeff * piece`` of tree ``tree`` into that
    residual group's buffer)."""

    value: str
    accumulate: bool
    into: int | None = None
    tree: str | None = None


@dataclass
class Output:
    """A tree's result: ``coeff * value`` (``value`` is ``None`` for a bare
    number), added into residual group ``into`` when given (already, piece by
    piece, when ``direct``)."""

    tree: str
    value: str | None
    into: int | None = None
    direct: bool = False


@dataclass
class Residual:
    """The zeroed residual buffer of one operator group."""

    group: int
    modes: tuple[Index, ...]
    bytes: int = 0


@dataclass
class Apply:
    """A group's operators applied to its residual, added into group 0's."""

    group: int
    operators: tuple[Operator, ...] = ()
    bytes: int = 0
    """The extra residual-sized buffer the step holds while it runs."""


@dataclass
class LoopPass:
    """One pass of a physical loop instance over blocks of ``space``."""

    instance: int
    space: str
    number: int
    """Position among the passes of this instance, in program order."""
    block: int = 1
    body: list[Item] = field(default_factory=list["Item"])


Item = Build | Buffer | Write | Output | Residual | Apply | LoopPass


@dataclass
class Schedule:
    """The ordered schedule of one forest."""

    items: list[Item]
    rounds: int = 1
    """Scheduling rounds until the demotion fixpoint."""

    def residual_modes(self) -> tuple[Index, ...] | None:
        """The residual's modes, if the schedule accumulates one."""
        for item in self.items:
            if isinstance(item, Residual):
                return item.modes
        return None

    def walk(self) -> Iterator[tuple[Item, tuple[LoopPass, ...]]]:
        """Every item in program order with its enclosing loop passes."""
        stack: list[tuple[Iterator[Item], tuple[LoopPass, ...]]] = [
            (iter(self.items), ())
        ]
        while stack:
            items, loops = stack[-1]
            item = next(items, None)
            if item is None:
                stack.pop()
                continue
            yield item, loops
            if isinstance(item, LoopPass):
                stack.append((iter(item.body), (*loops, item)))

    def blocks(self) -> dict[int, int]:
        """Block size per loop instance."""
        return {
            item.instance: item.block
            for item, _ in self.walk()
            if isinstance(item, LoopPass)
        }


class LoopExtentError(ValueError):
    """A loop instance binding modes of different extents; the message names
    the instance, the modes and where they are bound."""


def loop_extents(
    schedule: Schedule,
    mode_extent: Callable[[Index], int],
    space_extent: Callable[[str], int],
) -> dict[int, int]:
    """The extent each loop instance runs over: that of the modes it binds.

    A loop over space ``a`` iterates the index it binds, and a mode's extent
    is its composite kind's when the kind has one (``a<2>=40``), so the loop
    runs over that extent, not ``a``'s. All modes one instance binds (in
    slices, sums and buffer slices) must have one extent: one loop cannot
    run over two ranges (``LoopExtentError``). An instance that binds
    nothing runs over its space's extent.
    """
    bound: dict[int, tuple[int, Index, str]] = {}
    spaces: dict[int, str] = {}
    for item, _ in schedule.walk():
        if isinstance(item, LoopPass):
            spaces.setdefault(item.instance, item.space)
            continue
        if isinstance(item, Build):
            binds = (*item.slices, *item.sums)
        elif isinstance(item, Buffer):
            binds = item.slices
        else:
            continue
        for bind in binds:
            extent = mode_extent(bind.mode)
            first = bound.setdefault(bind.instance, (extent, bind.mode, item.value))
            if first[0] != extent:
                raise LoopExtentError(
                    f"loop instance {bind.instance} over "
                    f"{spaces.get(bind.instance, bind.mode.base_key)} binds "
                    f"{first[1].full_label} "
                    f"of @{first[2]} (extent {first[0]}) and "
                    f"{bind.mode.full_label} of @{item.value} (extent {extent}): "
                    "one loop cannot run over two extents (composite kinds "
                    "with extents of their own are different ranges)"
                )
    return {
        instance: bound[instance][0] if instance in bound else space_extent(space)
        for instance, space in spaces.items()
    }
