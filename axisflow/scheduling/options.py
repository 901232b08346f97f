"""Option text shared by ``schedule-batches`` and ``axisflow plan``."""

from __future__ import annotations

from typing import Literal

ShareChoice = Literal["forest", "tree", "auto"]
"""How values several trees build are evaluated: shared (``forest``),
rebuilt in each tree (``tree``, ``axisflow.forest.sharing``), or both tried
and the smaller scheduled peak kept (``auto``)."""
SHARE_CHOICES: tuple[ShareChoice, ...] = ("forest", "tree", "auto")


class OptionError(ValueError):
    """Malformed option text; the message quotes it."""


def parse_blocks(text: str | int) -> int | dict[str, int]:
    """``8`` (every space) or ``"i=8,Κ=64"`` (per space key; a space not named
    keeps blocks of 1) into what ``schedule_forest`` takes as ``block``."""
    if isinstance(text, int):
        return text
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    blocks: dict[str, int] = {}
    for part in stripped.split(","):
        key, sep, size = (s.strip() for s in part.partition("="))
        if not sep or not key or not size.isdigit() or int(size) < 1:
            raise OptionError(
                f"block: expected N or SPACE=N,... with positive N, got {text!r}"
            )
        if key in blocks:
            raise OptionError(f"block: space {key} is given twice in {text!r}")
        blocks[key] = int(size)
    return blocks
