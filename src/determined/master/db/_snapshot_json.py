"""The text of an experiment's core snapshot, encoded cheaply after every event."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from determined.master.db._types import RawJSON, compact_json

__all__ = ["SnapshotJSON"]


class SnapshotJSON:
    """Encodes an experiment's snapshots, reusing the text of each trial entry that is
    the same object as in the previous snapshot (the core and the searcher hand out
    one frozen dict per ended trial): after every event only the live trials and the
    rest are encoded again, not hundreds of ended ones. The text equals what
    :func:`~determined.master.db._types.compact_json` gives for the same snapshot."""

    _MARKS = ("\x00det-trials\x00", "\x00det-searcher-trials\x00")

    def __init__(self) -> None:
        self._memo: Dict[int, Tuple[Any, str]] = {}  # id(entry) -> (entry, its text)

    def encode(self, snapshot: Dict[str, Any]) -> RawJSON:
        searcher = snapshot.get("searcher")
        lists = (snapshot.get("trials"), searcher.get("trials")
                 if isinstance(searcher, dict) else None)
        if not all(isinstance(entries, list) for entries in lists):
            return RawJSON(compact_json(snapshot))
        head = dict(snapshot, trials=self._MARKS[0],
                    searcher=dict(searcher, trials=self._MARKS[1]))
        text = compact_json(head)
        marks = [compact_json(m) for m in self._MARKS]
        if any(text.count(m) != 1 for m in marks):  # cannot happen with our markers
            return RawJSON(compact_json(snapshot))
        memo: Dict[int, Tuple[Any, str]] = {}
        parts = []
        for mark, entries in sorted(zip(marks, lists), key=lambda ml: text.index(ml[0])):
            before, text = text.split(mark, 1)
            parts += [before, "[", ",".join(self._entry(e, memo) for e in entries), "]"]
        self._memo = memo  # entries gone from this snapshot are forgotten
        return RawJSON("".join(parts) + text)

    def _entry(self, entry: Any, memo: Dict[int, Tuple[Any, str]]) -> str:
        known = self._memo.get(id(entry))
        encoded = known[1] if known is not None and known[0] is entry else \
            compact_json(entry)
        memo[id(entry)] = (entry, encoded)
        return encoded
