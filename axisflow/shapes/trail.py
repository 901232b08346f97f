"""The undo trail behind rewind windows.

Every mutation of session state goes through a :class:`Trail` method. While
at least one rewind window is open the trail records how to revert each
mutation; leaving a window reverts the entries it recorded, newest first.
Outside every window nothing is recorded, so ordinary solving pays one
branch per mutation.

The cost of a window is therefore proportional to what happens inside it,
never to the size of the rest of the session: no snapshot is ever copied.
Entries are tuples ``(tag, container, key, old)``:

* ``_DICT``: ``container[key]`` was ``old`` (``_MISSING``: absent);
* ``_ATTR``: ``container.key`` was ``old``;
* ``_APPEND``: one item was appended to the list ``container`` (``key``: the
  object owning the list, so readers can tell whose list changed);
* ``_TRUNCATE``: the list ``container`` (owned by ``key``) had length ``old``
  before an extend;
* ``_CALL``: call ``container()`` to undo (for effects on objects outside the
  session, e.g. marking a shape discarded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from typing import Any, Final

_MISSING: Final = object()
MISSING: Final = _MISSING
"""What :meth:`Trail.values_before` reports for a key that was absent."""

_DICT: Final = 0
_ATTR: Final = 1
_APPEND: Final = 2
_TRUNCATE: Final = 3
_CALL: Final = 4


class Trail:
    """Records reversible mutations while a rewind window is open."""

    __slots__ = ("depth", "entries")

    def __init__(self) -> None:
        self.entries: list[tuple[int, Any, Any, Any]] = []
        self.depth = 0

    def set_item(self, mapping: MutableMapping[Any, Any], key: Any, value: Any) -> None:
        """``mapping[key] = value``."""
        if self.depth:
            self.entries.append((_DICT, mapping, key, mapping.get(key, _MISSING)))
        mapping[key] = value

    def del_item(self, mapping: MutableMapping[Any, Any], key: Any) -> None:
        """``del mapping[key]`` (the key must be present)."""
        if self.depth:
            self.entries.append((_DICT, mapping, key, mapping[key]))
        del mapping[key]

    def set_attr(self, obj: object, name: str, value: Any) -> None:
        """``setattr(obj, name, value)``."""
        if self.depth:
            self.entries.append((_ATTR, obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    def append(self, items: list[Any], item: Any, owner: object = None) -> None:
        """``items.append(item)``; ``owner`` is recorded for readers of the trail."""
        if self.depth:
            self.entries.append((_APPEND, items, owner, None))
        items.append(item)

    def extend(
        self, items: list[Any], more: Iterable[Any], owner: object = None
    ) -> None:
        """``items.extend(more)``; ``owner`` is recorded for readers of the trail."""
        if self.depth:
            self.entries.append((_TRUNCATE, items, owner, len(items)))
        items.extend(more)

    def on_undo(self, action: Callable[[], None]) -> None:
        """Run ``action`` when the enclosing window is rewound."""
        if self.depth:
            self.entries.append((_CALL, action, None, None))

    def values_before(
        self, start: int, mapping: MutableMapping[Any, Any]
    ) -> dict[Any, Any]:
        """The values ``mapping`` had when the trail had ``start`` entries.

        Only keys written since are returned (``MISSING``: the key was absent);
        every other key still has its value of then. Costs the entries since
        ``start``, not the size of ``mapping``.
        """
        before: dict[Any, Any] = {}
        for tag, container, key, old in self.entries[start:]:
            if tag == _DICT and container is mapping and key not in before:
                before[key] = old
        return before

    def undo_to(self, length: int) -> None:
        """Revert every entry recorded after the trail had ``length`` entries."""
        entries = self.entries
        while len(entries) > length:
            tag, container, key, old = entries.pop()
            if tag == _DICT:
                if old is _MISSING:
                    del container[key]
                else:
                    container[key] = old
            elif tag == _ATTR:
                setattr(container, key, old)
            elif tag == _APPEND:
                container.pop()
            elif tag == _TRUNCATE:
                del container[old:]
            else:
                container()
