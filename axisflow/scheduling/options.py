"""Option text shared by ``schedule-batches``, the SeQuant frontend, the
Python API and ``axisflow plan``."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Literal

ShareChoice = Literal["forest", "tree", "auto"]
"""How values several trees build are evaluated: shared (``forest``),
rebuilt in each tree (``tree``, ``axisflow.forest.sharing``), or planned
(``auto``: ``axisflow.scheduling.planner`` shares what the objective pays
for)."""
SHARE_CHOICES: tuple[ShareChoice, ...] = ("forest", "tree", "auto")

Rebuild = Literal["never", "fused"]
"""A value an enclosing loop does not bind: hoisted above it (``never``),
or, when a deeper loop of its consumer binds it, kept inside and rebuilt
every iteration (``fused``: multiply-adds for memory)."""
REBUILDS: tuple[Rebuild, ...] = ("never", "fused")

_UNITS = {
    "": 1,
    "b": 1,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
    "pib": 1024**5,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "pb": 1000**5,
}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*")


def parse_budget(text: str | int | None, name: str = "budget") -> int | None:
    """A memory budget in bytes: ``100GiB``, ``77.5 GiB``, ``500MB``,
    ``4e9`` (bytes); ``None`` or empty for no budget."""
    if text is None or isinstance(text, bool):
        if text is None:
            return None
        raise OptionError(f"{name}: expected a size such as 100GiB, got {text!r}")
    if isinstance(text, int):
        if text < 1:
            raise OptionError(f"{name}: a budget must be positive, got {text}")
        return text
    if not isinstance(text, str):
        raise OptionError(f"{name}: expected a size such as 100GiB, got {text!r}")
    if not text.strip():
        return None
    match = _SIZE.fullmatch(text)
    unit = _UNITS.get(match.group(2).lower()) if match else None
    if match is None or unit is None:
        raise OptionError(
            f"{name}: expected a size such as 100GiB, 500MB or 4e9 (bytes), "
            f"got {text!r}"
        )
    number = Fraction(match.group(1))
    size = math.floor(number * unit)
    if size < 1:
        raise OptionError(f"{name}: a budget must be at least 1 byte, got {text!r}")
    return size


def parse_fraction(
    text: str | float | Fraction | None, name: str = "max-extra-flops"
) -> Fraction | None:
    """A fraction: ``5%``, ``0.05``, ``0``; ``None`` or empty for none."""
    if text is None:
        return None
    if isinstance(text, bool) or not isinstance(text, str | int | float | Fraction):
        raise OptionError(
            f"{name}: expected a fraction such as 5% or 0.05, got {text!r}"
        )
    if isinstance(text, str):
        stripped = text.strip()
        if not stripped:
            return None
        percent = stripped.endswith("%")
        try:
            value = Fraction(stripped[:-1].strip() if percent else stripped)
        except (ValueError, ZeroDivisionError):
            raise OptionError(
                f"{name}: expected a fraction such as 5% or 0.05, got {text!r}"
            ) from None
        if percent:
            value /= 100
    else:
        if isinstance(text, float) and not math.isfinite(text):
            raise OptionError(f"{name}: expected a finite fraction, got {text!r}")
        value = Fraction(text)
    if value < 0:
        raise OptionError(f"{name}: must not be negative, got {text!r}")
    return value


class OptionError(ValueError):
    """Malformed option text; the message quotes it."""


Blocks = int | dict[str, int] | Literal["auto"]
"""A block option: one size, per space key, or ``auto`` (the planner's
``choose_blocks``: as large as the memory budget allows)."""


def parse_blocks(text: str | int) -> Blocks:
    """``8`` (every space), ``"i=8,Κ=64"`` (per space key; a space not named
    keeps blocks of 1) or ``auto`` into what the pipeline takes as
    ``block``."""
    if isinstance(text, int):
        return text
    stripped = text.strip()
    if stripped == "auto":
        return "auto"
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
