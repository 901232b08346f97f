"""The one walk over a schedule: its scope stack and its storage rules.

Every reader of a schedule (``axisflow.scheduling.schedule``) needs the same
answers: where a built piece lives, which buffer a write fills, when that
buffer may be read, which residual groups are open. ``ScheduleWalker``
gives them, once. Its clients: the checker (``scheduling.check``), the
memory accounting (``scheduling.memory.lifetimes``), the NumPy evaluator
(``scheduling.evaluate``) and the lowering plan (``axisflow.lowering.plan``).

The storage rules
-----------------
* A **scope** is one visit of a loop body; the root scope is outside every
  loop. A client visits a body once (a static client: every iteration
  stores the same things) or once per block (the evaluator); each visit is
  a fresh scope, which ends with the visit.
* A **piece** (``Build``) lives in the scope that built it: readable there
  and in the scopes nested in it, until a write takes it or its scope ends.
* A **buffer** (``Buffer``) lives in the scope that allocated it. A
  ``Write`` takes the piece of the current scope into the innermost buffer
  of that value in an *enclosing* scope (never the current one). The
  buffer's *writer* is the loop pass directly inside the buffer's scope
  (the outermost pass the write leaves). The buffer becomes **complete**
  when its writer closes, after all the visits of its body, and not
  before; only a complete buffer is readable.
* A **read** of a name looks in the innermost scope first, at its piece,
  then at its buffer, then outwards. It finds a piece or a complete
  buffer; otherwise the name is *unreadable*: in no open scope, or its
  buffer not complete.
* **Residual groups**: a ``Residual`` opens its group, an ``Apply`` closes
  it (``close_group``), and a group stays closed (a second ``Residual`` of
  it does not reopen it). Pieces and outputs are added into open groups.
* Inputs (leaves, opaque values) are not storage of the schedule: a client
  reads them itself, before asking the walker.

What a client implements
------------------------
A client subclasses ``ScheduleWalker[P, B]`` (``P``: what it keeps with a
piece, ``B``: with a buffer: an array, a tensor number, a live range, a
task) and calls ``walk(schedule.items)``. It overrides the hooks of the
items it acts on; the defaults do nothing, except ``loop``, which visits
the body once.

* ``loop(loop)``: decides how the body is visited, by calling
  ``visit_body(loop)`` once, once per block, or for each static shape of
  its blocks (the lowering: full blocks, then the remainder). The pass
  closes when ``loop`` returns: the buffers it wrote become complete.
* ``build(build)``: reads the factors with ``read`` and keeps the piece
  with ``keep_piece(build, data)`` (a client may decline: the checker keeps
  nothing it found broken).
* ``buffer(buffer)``: allocates, and keeps it with ``keep_buffer``.
* ``write(write, piece, buffer)`` (into a buffer): ``piece`` is the
  value's piece in the current scope and ``buffer`` the buffer it goes
  into, each ``None`` when the schedule has none; ``fill(piece, buffer)``
  commits the write (the piece leaves its scope; the buffer's writer is
  set).
* ``residual_write(write, piece)`` (``Write(into=g)``): ``add(piece)``
  commits it (the piece stays for the other trees that share the root, as
  ``added``); ``groups`` holds every group opened, and whether it closed.
* ``output(output)``; ``residual(residual)`` (the walker opens the group
  when the hook returns); ``apply(apply)`` (``close_group`` commits it).
* ``unreadable(item, name, buffer)``: ``read`` failed (``buffer``: the
  incomplete buffer it found, or ``None``: the name is in no open scope).
  The default raises ``BrokenScheduleError``; a client raises its own error
  or records the problem, and ``read`` then returns ``None``.

``walk(items)`` visits one list of items; a client may extend it to act
between items (the lowering frees storage after its last mention), as long
as it visits every item once, in order. Besides ``read``, the hooks may ask
``find`` (the lookup without the completion rule: the memory accounting
measures any schedule, also a broken one), ``allocated`` (a buffer of a
value in an open scope), ``in_loop``, ``open_loops`` and ``loops_left``
(the passes a write into a buffer leaves).

What the walker guarantees
--------------------------
* Items are visited in program order, exactly one hook per item; every
  ``visit_body`` opens a scope and closes it when the body is done.
* Reads, writes and completion follow the rules above, whatever the
  client: ``read`` never gives a buffer before its pass closed, and a
  write is only ever offered a buffer of an enclosing scope.
* Every operation costs at most the depth of the open scopes; a pass's
  closing completes the buffers it wrote in time proportional to their
  number (no scan of the buffers made so far: a client that visits bodies
  per block stays linear in the blocks).

A task-per-block executor (one task per block of the outer batch loops) is
one more client: its ``loop`` hook visits the body once per block of an
outer loop with ``P`` and ``B`` as task keys; ``fill`` records one block's
contribution to a buffer, and the pass's closing is the point after which a
read of the buffer depends on every block's task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from axisflow.roles.index import Index
from axisflow.scheduling.schedule import (
    Apply,
    Buffer,
    Build,
    Item,
    LoopPass,
    Output,
    Residual,
    Write,
)

P = TypeVar("P")
"""What a client keeps with a piece."""
B = TypeVar("B")
"""What a client keeps with a buffer."""


class BrokenScheduleError(ValueError):
    """A schedule that breaks a storage rule, met by a client that trusts it
    to be valid (``check_schedule`` names every broken rule)."""


@dataclass(slots=True, eq=False)
class Piece(Generic[P]):
    """A built piece, in the scope that built it."""

    build: Build
    data: P
    added: bool = False
    """Added into a residual group (``add``): read by nothing else, kept
    for the other trees that share the root."""

    @property
    def slices(self) -> dict[Index, int]:
        """Each sliced mode and the loop instance whose current block the
        piece covers."""
        return {bind.mode: bind.instance for bind in self.build.slices}


@dataclass(slots=True, eq=False)
class BufferState(Generic[B]):
    """A buffer, in the scope that allocated it."""

    item: Buffer
    depth: int
    """The scope it lives in (0: the root, outside every loop)."""
    data: B
    writer: LoopPass | None = None
    """The pass that writes it: the one directly inside its scope."""
    complete: bool = False
    """Readable: its writer has closed."""

    @property
    def slices(self) -> dict[Index, int]:
        """Each sliced mode and the loop instance whose current block the
        buffer covers."""
        return {bind.mode: bind.instance for bind in self.item.slices}


@dataclass(slots=True, eq=False)
class Scope(Generic[P, B]):
    """One visit of a loop body (``loop`` is ``None`` for the root): the
    pieces built and the buffers allocated in it."""

    loop: LoopPass | None
    pieces: dict[str, Piece[P]]
    buffers: dict[str, BufferState[B]]


@dataclass(slots=True, eq=False)
class Group:
    """A residual group: its ``Residual``, and whether an ``Apply`` closed
    it."""

    item: Residual
    applied: bool = False


def reader(item: Item) -> str:
    """How messages name the item that reads: ``build of @v``, ``output of
    @tree``."""
    if isinstance(item, Build):
        return f"build of @{item.value}"
    if isinstance(item, Output):
        return f"output of @{item.tree}"
    return type(item).__name__


class ScheduleWalker(Generic[P, B]):
    """A scope stack over a schedule, with one hook per item kind (module
    docstring: what a client implements, what the walker guarantees)."""

    def __init__(self) -> None:
        self.scopes: list[Scope[P, B]] = [Scope(None, {}, {})]
        self.groups: dict[int, Group] = {}
        """Residual group -> its state, in the order they were opened."""
        # The buffers each pass wrote, by the pass's identity: its closing
        # completes them without scanning every buffer made so far.
        self._written: dict[int, list[BufferState[B]]] = {}

    # -- traversal ---------------------------------------------------------

    def walk(self, items: Sequence[Item]) -> None:
        """Visit ``items`` in order."""
        for item in items:
            self.visit(item)

    def visit(self, item: Item) -> None:
        """Call the hook of ``item``, then commit what the walker does on
        its own: a pass closes, a group opens."""
        if isinstance(item, LoopPass):
            self.loop(item)
            for buffer in self._written.pop(id(item), ()):
                if buffer.writer is item:
                    buffer.complete = True
        elif isinstance(item, Build):
            self.build(item)
        elif isinstance(item, Buffer):
            self.buffer(item)
        elif isinstance(item, Write):
            piece = self.scopes[-1].pieces.get(item.value)
            if item.into is None:
                self.write(item, piece, self._target(item.value))
            else:
                self.residual_write(item, piece)
        elif isinstance(item, Output):
            self.output(item)
        elif isinstance(item, Residual):
            self.residual(item)
            group = self.groups.get(item.group)
            if group is None:
                self.groups[item.group] = Group(item)
            else:
                group.item = item
        else:
            self.apply(item)

    def visit_body(self, loop: LoopPass) -> Scope[P, B]:
        """Visit ``loop``'s body once, in a scope of its own; the scope, as
        the body left it (the pieces no write took)."""
        scope: Scope[P, B] = Scope(loop, {}, {})
        self.scopes.append(scope)
        self.walk(loop.body)
        self.scopes.pop()
        return scope

    # -- hooks (the client's) ----------------------------------------------

    def loop(self, loop: LoopPass) -> None:
        """A loop pass: visit its body (here once)."""
        self.visit_body(loop)

    def build(self, build: Build) -> None:
        """A build: read the factors, keep the piece (``keep_piece``)."""

    def buffer(self, buffer: Buffer) -> None:
        """A buffer: allocate it, keep it (``keep_buffer``)."""

    def write(
        self, write: Write, piece: Piece[P] | None, buffer: BufferState[B] | None
    ) -> None:
        """A write into a buffer: commit it with ``fill(piece, buffer)``."""

    def residual_write(self, write: Write, piece: Piece[P] | None) -> None:
        """A root's piece added into a residual group: ``add(piece)``."""

    def output(self, output: Output) -> None:
        """A tree's output."""

    def residual(self, residual: Residual) -> None:
        """A residual buffer; its group opens when this returns."""

    def apply(self, apply: Apply) -> None:
        """An operator step: ``close_group`` closes the group."""

    def unreadable(self, item: Item, name: str, buffer: BufferState[B] | None) -> None:
        """``item`` reads ``name``, which is in no open scope (``buffer`` is
        ``None``) or whose buffer is not complete."""
        if buffer is None:
            raise BrokenScheduleError(
                f"{reader(item)} reads @{name}, which is not available here"
            )
        raise BrokenScheduleError(
            f"{reader(item)} reads @{name} before the loop producing it closed"
        )

    # -- the storage rules -------------------------------------------------

    def read(self, item: Item, name: str) -> Piece[P] | BufferState[B] | None:
        """What ``item`` reads of ``name``: its piece or complete buffer in
        the innermost scope that has either, or ``None`` once
        ``unreadable`` has been told."""
        found = self.find(name)
        if found is None:
            self.unreadable(item, name, None)
            return None
        if isinstance(found, BufferState) and not found.complete:
            self.unreadable(item, name, found)
            return None
        return found

    def find(self, name: str) -> Piece[P] | BufferState[B] | None:
        """Where ``name`` is stored: its piece or buffer in the innermost
        scope that has either, complete or not. ``read`` is this with the
        rule of completion; the memory accounting, which measures any
        schedule (also one that breaks the rules), looks up with ``find``."""
        for scope in reversed(self.scopes):
            piece = scope.pieces.get(name)
            if piece is not None:
                return piece
            buffer = scope.buffers.get(name)
            if buffer is not None:
                return buffer
        return None

    def keep_piece(self, build: Build, data: P) -> Piece[P]:
        """The piece ``build`` made, in the current scope."""
        piece = Piece(build, data)
        self.scopes[-1].pieces[build.value] = piece
        return piece

    def keep_buffer(self, buffer: Buffer, data: B) -> BufferState[B]:
        """The buffer ``buffer`` allocates, in the current scope."""
        state = BufferState(buffer, len(self.scopes) - 1, data)
        self.scopes[-1].buffers[buffer.value] = state
        return state

    def allocated(self, name: str) -> bool:
        """Whether an open scope holds a buffer of ``name``."""
        return any(name in scope.buffers for scope in self.scopes)

    def fill(self, piece: Piece[P], buffer: BufferState[B]) -> None:
        """Commit a write: the piece leaves its scope into ``buffer``, whose
        writer is the pass directly inside its scope."""
        del self.scopes[-1].pieces[piece.build.value]
        writer = self.scopes[buffer.depth + 1].loop
        if buffer.writer is not writer:
            buffer.writer = writer
            self._written.setdefault(id(writer), []).append(buffer)

    def take(self, piece: Piece[P]) -> None:
        """The piece leaves its scope (a client accounting a write the rules
        do not allow)."""
        del self.scopes[-1].pieces[piece.build.value]

    def add(self, piece: Piece[P]) -> None:
        """Commit a residual write: the piece is added into its group. It
        stays in its scope until the scope ends (a root several trees share
        is added once per tree), readable by nothing but residual writes."""
        piece.added = True

    def close_group(self, number: int) -> None:
        """Commit an operator step: group ``number`` closes (if it was
        opened)."""
        group = self.groups.get(number)
        if group is not None:
            group.applied = True

    # -- where the walk is -------------------------------------------------

    @property
    def in_loop(self) -> bool:
        """Whether a loop body is being visited."""
        return len(self.scopes) > 1

    def open_loops(self) -> list[LoopPass]:
        """The passes whose bodies are being visited, outermost first."""
        return [scope.loop for scope in self.scopes[1:] if scope.loop is not None]

    def loops_left(self, buffer: BufferState[B]) -> list[LoopPass]:
        """The passes a write into ``buffer`` leaves, outermost (its writer)
        first."""
        return [
            scope.loop
            for scope in self.scopes[buffer.depth + 1 :]
            if scope.loop is not None
        ]

    def _target(self, name: str) -> BufferState[B] | None:
        """The buffer a write of ``name`` goes into: the innermost in an
        enclosing scope."""
        scopes = self.scopes
        for depth in range(len(scopes) - 2, -1, -1):
            buffer = scopes[depth].buffers.get(name)
            if buffer is not None:
                return buffer
        return None
