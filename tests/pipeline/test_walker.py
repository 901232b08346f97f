"""The schedule walker's storage rules, seen by a client that records what
it is offered (hand-made schedules; no forest is needed)."""

from __future__ import annotations

from axisflow.scheduling.schedule import (
    Apply,
    Buffer,
    Build,
    Item,
    LoopPass,
    Residual,
    Write,
)
from axisflow.scheduling.walker import BufferState, Piece, ScheduleWalker


class Recorder(ScheduleWalker[str, str]):
    """Visits every loop body ``blocks`` times; each build reads the names
    in ``reads[value]`` and records what it found."""

    def __init__(self, reads: dict[str, list[str]], blocks: int = 1) -> None:
        super().__init__()
        self.reads = reads
        self.blocks = blocks
        self.seen: list[tuple[str, str, str]] = []
        self.writes: list[tuple[str, str | None, str | None]] = []

    def loop(self, loop: LoopPass) -> None:
        for _ in range(self.blocks):
            self.visit_body(loop)

    def build(self, build: Build) -> None:
        for name in self.reads.get(build.value, []):
            found = self.read(build, name)
            if isinstance(found, BufferState):
                writer = "-" if found.writer is None else str(found.writer.instance)
                self.seen.append((build.value, name, f"buffer written by {writer}"))
            elif found is not None:
                self.seen.append((build.value, name, f"piece {found.data}"))
        self.keep_piece(build, f"{build.value}@{len(self.scopes) - 1}")

    def buffer(self, buffer: Buffer) -> None:
        self.keep_buffer(buffer, buffer.value)

    def write(
        self, write: Write, piece: Piece[str] | None, buffer: BufferState[str] | None
    ) -> None:
        self.writes.append(
            (
                write.value,
                None if piece is None else piece.data,
                None if buffer is None else buffer.data,
            )
        )
        if piece is not None and buffer is not None:
            self.fill(piece, buffer)

    def unreadable(
        self, item: Item, name: str, buffer: BufferState[str] | None
    ) -> None:
        assert isinstance(item, Build)
        why = "not in reach" if buffer is None else "buffer not complete"
        self.seen.append((item.value, name, why))


def loop(instance: int, *body: Item) -> LoopPass:
    return LoopPass(instance, "i", 0, body=list(body))


def test_a_buffer_is_readable_once_its_writer_closed_after_every_block() -> None:
    schedule = [
        Buffer("X"),
        loop(0, Build("X"), Write("X", False), Build("early")),
        Build("late"),
    ]
    walker = Recorder({"early": ["X"], "late": ["X"]}, blocks=3)
    walker.walk(schedule)
    # inside the pass, in every block: the piece was taken, the buffer is
    # not complete; after the pass: the buffer, written by pass 0
    assert walker.seen == [
        *[("early", "X", "buffer not complete")] * 3,
        ("late", "X", "buffer written by 0"),
    ]
    assert walker.writes == [("X", "X@1", "X")] * 3


def test_each_visit_of_a_body_is_a_fresh_scope() -> None:
    schedule = [loop(0, Build("reader"), Build("P"))]
    walker = Recorder({"reader": ["P"]}, blocks=2)
    walker.walk(schedule)
    # the piece of P built in the first block is gone in the second
    assert walker.seen == [("reader", "P", "not in reach")] * 2


def test_a_piece_is_read_in_its_scope_and_the_scopes_inside_it() -> None:
    schedule = [loop(0, Build("P"), loop(1, Build("inner")), Build("same"))]
    walker = Recorder({"inner": ["P"], "same": ["P"]})
    walker.walk(schedule)
    assert walker.seen == [("inner", "P", "piece P@1"), ("same", "P", "piece P@1")]


def test_a_write_fills_a_buffer_of_an_enclosing_scope_only() -> None:
    schedule = [
        Buffer("outer"),
        loop(
            0,
            Buffer("here"),
            Build("here"),
            Write("here", False),
            Build("outer"),
            Write("outer", False),
            Write("never_built", False),
        ),
    ]
    walker = Recorder({})
    walker.walk(schedule)
    assert walker.writes == [
        ("here", "here@1", None),  # its buffer is in the current scope
        ("outer", "outer@1", "outer"),
        ("never_built", None, None),
    ]


def test_the_writer_is_the_pass_directly_inside_the_buffer() -> None:
    schedule = [
        Buffer("X"),
        loop(
            0,
            loop(1, Build("X"), Write("X", False)),
            Build("between"),  # pass 1 closed, pass 0 still open
        ),
        Build("after"),
    ]
    walker = Recorder({"between": ["X"], "after": ["X"]}, blocks=2)
    walker.walk(schedule)
    assert walker.seen == [
        ("between", "X", "buffer not complete"),
        ("between", "X", "buffer not complete"),
        ("after", "X", "buffer written by 0"),
    ]
    assert walker._written == {}  # every pass's list went with its closing


def test_a_residual_group_stays_closed_once_applied() -> None:
    class Closing(Recorder):
        def apply(self, apply: Apply) -> None:
            self.close_group(apply.group)

    walker = Closing({})
    walker.walk([Residual(0, ()), Residual(1, ()), Apply(1), Residual(1, ())])
    assert {
        g: (group.item.group, group.applied) for g, group in walker.groups.items()
    } == {
        0: (0, False),
        1: (1, True),
    }
