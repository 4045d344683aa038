"""Snapshot entries of records that never change again, serialized once.

The experiment core and the searcher snapshot all their trials after every event, and
a search may hold thousands of ended trials. An ended trial's entry is built once and
the same dict object is handed out from then on: the master's snapshot encoder reuses
an entry's JSON text while the object is the same (``master/db/_snapshot_json.py``).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Hashable

__all__ = ["FrozenEntries"]


class FrozenEntries:
    """Snapshot entries of final records, keyed by id (callers must not mutate them).

    Example:
        >>> cache = FrozenEntries()
        >>> first = cache.entry(7, final=True, serialize=lambda: {"id": 7})
        >>> cache.entry(7, final=True, serialize=lambda: {"id": -1}) is first
        True
        >>> cache.entry(8, final=False, serialize=lambda: {"id": 8})
        {'id': 8}
    """

    def __init__(self) -> None:
        self._entries: Dict[Hashable, Dict[str, Any]] = {}

    def entry(self, key: Hashable, final: bool,
              serialize: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
        """``serialize()`` now, unless the record is ``final``: then its first entry."""
        if not final:
            return serialize()
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = serialize()
        return entry
