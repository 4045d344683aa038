"""Searches made of brackets (``adaptive``, ``adaptive_simple``, ``adaptive_asha``): each
bracket owns the trials it creates, and every event of a trial goes to its bracket."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from determined.searcher._base import SearchContext, SearchMethod
from determined.searcher._operations import Create, Operation
from determined.searcher._rungs import BracketRungs

__all__ = ["BracketSearch"]


class BracketSearch(SearchMethod):
    """Remembers which bracket created each trial, and saves that with the brackets.

    A subclass sets ``brackets`` (objects with ``initial_operations(ctx)``, ``fill(ctx)``,
    ``rung_lengths()``, ``rung_results()``, ``state_dict()`` and ``load_state_dict(state)``),
    calls ``super().__init__()``, and passes what a bracket answers through :meth:`_claim`
    with that bracket's index.
    """

    brackets: List[Any]

    def __init__(self) -> None:
        self._owner: Dict[int, int] = {}
        self._started = False

    def _claim(self, bracket: int, ops: List[Operation]) -> List[Operation]:
        """``ops``, after noting that ``bracket`` owns the trials they create."""
        for op in ops:
            if isinstance(op, Create):
                self._owner[op.request_id] = bracket
        return ops

    def _fill_all(self, ctx: SearchContext) -> List[Operation]:
        """What each bracket creates after a capacity change (nothing before the start)."""
        ops: List[Operation] = []
        if self._started:
            for i, bracket in enumerate(self.brackets):
                ops += self._claim(i, bracket.fill(ctx))
        return ops

    def initial_operations(self, ctx: SearchContext) -> List[Operation]:
        self._started = True
        ops: List[Operation] = []
        for i, bracket in enumerate(self.brackets):
            ops += self._claim(i, bracket.initial_operations(ctx))
        return ops

    def rung_table(self) -> Optional[List[BracketRungs]]:
        """Every bracket's rung lengths and recorded results (a copy of the state)."""
        return [BracketRungs.of(i, b.rung_lengths(), b.rung_results())
                for i, b in enumerate(self.brackets)]

    def state_dict(self) -> Dict[str, Any]:
        return {
            "owner": [[r, i] for r, i in self._owner.items()],
            "brackets": [b.state_dict() for b in self.brackets],
            "started": self._started,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._started = bool(state.get("started", True))
        self._owner = {int(r): int(i) for r, i in state["owner"]}
        for bracket, saved in zip(self.brackets, state["brackets"]):
            bracket.load_state_dict(saved)
