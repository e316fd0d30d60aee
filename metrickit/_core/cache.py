"""A least-recently-used cache bounded by the bytes of what it keeps.

The statistics that a tuner recomputes on every slider move (the permutation best set's
shuffles, the small bootstrap-t's draw counts) depend only on the shape of the data and a
seed, never on the values: they are drawn once and kept here, up to a size in bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class BytesLRU(OrderedDict[Hashable, V], Generic[V]):
    """An ``OrderedDict`` that keeps at most ``limit`` bytes of values (``size(value)``
    each), dropping the least recently used first; a value larger than ``limit`` is not
    kept at all."""

    def __init__(self, limit: int, size: Callable[[V], int]) -> None:
        super().__init__()
        self.limit = limit
        self._size = size
        self._bytes = 0

    def hit(self, key: Hashable) -> V | None:
        """The value kept for ``key`` (now the most recently used), or None."""
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def keep(self, key: Hashable, value: V) -> None:
        """Keep ``value`` for ``key`` if it fits, dropping the least recently used until
        everything kept fits in ``limit`` bytes."""
        nbytes = self._size(value)
        if nbytes > self.limit:
            return
        if key in self:
            self._bytes -= self._size(self.pop(key))
        self[key] = value
        self._bytes += nbytes
        while self._bytes > self.limit:
            _, dropped = self.popitem(last=False)
            self._bytes -= self._size(dropped)

    def clear(self) -> None:
        super().clear()
        self._bytes = 0
