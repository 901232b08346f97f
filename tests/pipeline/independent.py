"""Sizes and peaks recomputed from printed IR text, independently of
``axisflow.pipeline``: its own label parsing, sizes, and a brute-force
live-set scan (no sweep, no schedule model). Used to check the memory report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

DEFAULT_EXTENT = 4  # the documented default of docs/pipeline.md
DEFAULT_ELEM = 8


def split_labels(text: str) -> list[str]:
    """``"i_1, a_1<i_1,i_2>"`` -> labels (commas inside ``<>`` kept)."""
    labels: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        if char == "," and depth == 0:
            labels.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        labels.append(current.strip())
    return labels


def protos(label: str) -> list[str]:
    """Proto labels of a composite label, at any depth."""
    if "<" not in label:
        return []
    inner = split_labels(label[label.index("<") + 1 : label.rindex(">")])
    found: list[str] = []
    for proto in inner:
        found.append(proto)
        found.extend(protos(proto))
    return found


def space(label: str) -> str:
    """Base key: text before ``_``, a digit or ``<``."""
    return re.split(r"[_<0-9]", label, maxsplit=1)[0]


@dataclass
class Forest:
    """What the printed forest says about sizes and dependencies."""

    extents: dict[str, int] = field(default_factory=dict[str, int])
    elems: dict[str, int] = field(default_factory=dict[str, int])
    modes: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    factors: dict[str, list[str]] = field(default_factory=dict[str, list[str]])

    def size(self, value: str, sliced: set[str] = frozenset()) -> int:  # type: ignore[assignment]
        modes = self.modes[value]
        declared = [self.elems[space(m)] for m in modes if space(m) in self.elems]
        elem = max(declared, default=max(self.elems.values(), default=DEFAULT_ELEM))
        count = 1
        for mode in modes:
            count *= (
                1 if mode in sliced else self.extents.get(space(mode), DEFAULT_EXTENT)
            )
        return elem * count


def read_forest(text: str) -> Forest:
    """Spaces, value modes and factors from printed ``batch`` IR."""
    forest = Forest()
    for line in text.splitlines():
        line = line.strip()
        if m := re.match(
            r'batch\.space "?([^" ]+)"?(?: extent (\d+))?(?: elem (\d+))?', line
        ):
            if m.group(2):
                forest.extents[m.group(1)] = int(m.group(2))
            if m.group(3):
                forest.elems[m.group(1)] = int(m.group(3))
        elif m := re.match(r"batch\.value @(\w+) \[([^\]]*)\]", line):
            carried = split_labels(m.group(2))
            modes = list(
                dict.fromkeys(carried + [p for c in carried for p in protos(c)])
            )
            forest.modes[m.group(1)] = modes
            forest.factors[m.group(1)] = re.findall(r"[=*] @(\w+) \[", line)
    return forest


@dataclass
class _Object:
    size: int
    start: int
    end: int
    depth: int = 0


def schedule_peak(text: str, forest: Forest) -> int:
    """The peak live bytes of the printed ``sched.schedule``: every object
    lives from its creation to its last use; a use inside a loop nested in
    the object's scope keeps it to that loop's closing brace (every
    iteration needs it). Brute force over positions."""
    built = set(re.findall(r"sched\.build @(\w+)", text))
    scopes: list[dict[str, _Object]] = [{}]
    used_inside: list[list[_Object]] = [[]]
    """Per scope: the objects of outer scopes its body uses."""
    objects: list[_Object] = []
    position = 0

    def find(name: str) -> _Object:
        for scope in reversed(scopes):
            if name in scope:
                return scope[name]
        raise AssertionError(f"@{name} read but not stored")

    def use(found: _Object) -> None:
        if found.depth == len(scopes) - 1:
            found.end = position
        else:
            used_inside[found.depth + 1].append(found)

    def store(name: str, size: int) -> None:
        scopes[-1][name] = _Object(size, position, position, len(scopes) - 1)
        objects.append(scopes[-1][name])

    inside = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("sched.schedule"):
            inside = True
            continue
        if not inside:
            continue
        position += 1
        if line.startswith("sched.loop"):
            scopes.append({})
            used_inside.append([])
        elif line == "}":
            if len(scopes) == 1:
                break
            for found in used_inside.pop():
                found.end = position
            scopes.pop()
        elif m := re.match(r"sched\.build @(\w+).* bytes (\d+)", line):
            for factor in forest.factors[m.group(1)]:
                if factor in built:
                    use(find(factor))
            store(m.group(1), int(m.group(2)))
        elif m := re.match(r"sched\.buffer @(\w+).* bytes (\d+)", line):
            store("buffer:" + m.group(1), int(m.group(2)))
        elif m := re.match(r"sched\.(scatter|accumulate) @(\w+)", line):
            piece = scopes[-1].pop(m.group(2))
            piece.end = position
            buffer = find("buffer:" + m.group(2))
            use(buffer)
            for scope in scopes:  # readers now find the buffer under the value's name
                if "buffer:" + m.group(2) in scope:
                    scope[m.group(2)] = buffer
        elif (m := re.match(r"sched\.output @\w+ = @(\w+)", line)) and m.group(
            1
        ) in built:
            use(find(m.group(1)))
    return max(
        (
            sum(o.size for o in objects if o.start <= p <= o.end)
            for p in range(position + 1)
        ),
        default=0,
    )
