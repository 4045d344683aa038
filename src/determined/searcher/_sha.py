"""Synchronous successive halving: the bracket shared by ``adaptive`` and ``adaptive_simple``.

A bracket's plan is fixed up front: rung ``i`` trains ``starts[i]`` trials to
``lengths[i]`` and promotes exactly ``starts[i + 1]`` of them.
"""

from __future__ import annotations

import bisect
from typing import Any, Dict, List, Mapping, Optional, Set

from determined.config import Length, Unit
from determined.searcher._base import (
    WORST_METRIC,
    SearchContext,
    decode_metric,
    encode_metric,
)
from determined.searcher._brackets import BracketSearch
from determined.searcher._operations import (
    Close,
    Create,
    ExitedReason,
    Operation,
    Train,
    Validate,
)

__all__ = ["SyncHalvingSearch", "plan_cost"]


def plan_cost(lengths: List[int], starts: List[int]) -> int:
    """Units a plan trains: ``sum((L_i - L_{i-1}) * n_i)`` with ``L_{-1} = 0``.

    >>> plan_cost([1, 4, 16], [16, 4, 1])
    40
    """
    prev, cost = 0, 0
    for length, n in zip(lengths, starts):
        cost += (length - prev) * n
        prev = length
    return cost


class _SyncBracket:
    def __init__(self, lengths: List[int], starts: List[int], unit: Unit) -> None:
        self.lengths = lengths
        self.starts = starts
        self.unit = unit
        # Per rung, sorted by metric (ties: earlier first): [request_id, metric, promoted].
        self.results: List[List[List[Any]]] = [[] for _ in lengths]
        self.trial_rung: Dict[int, int] = {}
        self.awaiting: Set[int] = set()
        self.exited: Set[int] = set()
        self.closed: Set[int] = set()
        # Following the capacity: rung-0 trials are created while fewer than ``window``
        # trials have work, instead of all up front (None).
        self.window: Optional[int] = None

    def _create(self, ctx: SearchContext) -> List[Operation]:
        create: Create = ctx.create()
        rid = create.request_id
        self.trial_rung[rid] = 0
        self.awaiting.add(rid)
        return [create, Train(rid, Length(self.unit, self.lengths[0])), Validate(rid)]

    def initial_operations(self, ctx: SearchContext) -> List[Operation]:
        if self.window is not None:
            return self.fill(ctx)
        ops: List[Operation] = []
        for _ in range(self.starts[0]):
            ops += self._create(ctx)
        return ops

    def fill(self, ctx: SearchContext) -> List[Operation]:
        """Create rung-0 trials while fewer than ``window`` trials have work."""
        ops: List[Operation] = []
        while self.window is not None and len(self.trial_rung) < self.starts[0] and (
            len(self.awaiting) < self.window
        ):
            ops += self._create(ctx)
        return ops

    def _close(self, request_id: int, ops: List[Operation]) -> None:
        if request_id not in self.closed:
            self.closed.add(request_id)
            ops.append(Close(request_id))

    def report(self, request_id: int, metric: float) -> List[Operation]:
        """Record a result; promote and close per the plan; cascade exited promotees."""
        ops: List[Operation] = []
        top = len(self.lengths) - 1
        while True:
            i = self.trial_rung[request_id]
            self.awaiting.discard(request_id)
            rung = self.results[i]
            index = bisect.bisect_right([r[1] for r in rung], metric)
            rung.insert(index, [request_id, metric, False])
            if i == top:
                self._close(request_id, ops)
                return ops
            # Results so far + promotions due - trials expected: how many are promoted now.
            k = len(rung) + self.starts[i + 1] - self.starts[i]
            promoted = None
            if k > 0:
                entry = rung[index] if index < k else rung[k - 1]
                entry[2] = True
                promoted = int(entry[0])
            if len(rung) >= self.starts[i]:
                for rid, _, was_promoted in rung:
                    if not was_promoted:
                        self._close(rid, ops)
            if promoted is None:
                return ops
            self.trial_rung[promoted] = i + 1
            if promoted in self.exited:
                request_id, metric = promoted, WORST_METRIC
                continue
            self.awaiting.add(promoted)
            ops += [Train(promoted, Length(self.unit, self.lengths[i + 1])), Validate(promoted)]
            return ops

    def on_exit(self, request_id: int) -> List[Operation]:
        if request_id in self.closed:
            return []
        self.exited.add(request_id)
        self.closed.add(request_id)
        if request_id in self.awaiting:
            return self.report(request_id, WORST_METRIC)
        return []

    def rung_lengths(self) -> List[int]:
        return self.lengths

    def rung_results(self) -> List[List[List[Any]]]:
        return self.results

    def state_dict(self) -> Dict[str, Any]:
        return {
            "results": [[[r, encode_metric(m), p] for r, m, p in rung] for rung in self.results],
            "trial_rung": [[r, i] for r, i in self.trial_rung.items()],
            "awaiting": sorted(self.awaiting),
            "exited": sorted(self.exited),
            "closed": sorted(self.closed),
            "window": self.window,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.results = [
            [[int(r), decode_metric(m), bool(p)] for r, m, p in rung] for rung in state["results"]
        ]
        self.trial_rung = {int(r): int(i) for r, i in state["trial_rung"]}
        self.awaiting = {int(r) for r in state["awaiting"]}
        self.exited = {int(r) for r in state["exited"]}
        self.closed = {int(r) for r in state["closed"]}
        window = state.get("window")
        self.window = None if window is None else int(window)


class SyncHalvingSearch(BracketSearch):
    """Brackets of synchronous successive halving with fixed plans.

    Each plan is ``(lengths, starts)``: rung ``i`` trains ``starts[i]`` trials to
    ``lengths[i]`` units. All rung-0 trials are created up front. After each result at a
    rung, with ``k = results + starts[i+1] - starts[i]`` > 0, the new trial is promoted if
    it ranks within the top ``k``, else the ``k``-th best is; once every trial of the rung
    has reported, the unpromoted ones are closed. A top-rung result closes the trial.
    Exited trials count as the worst result; an exited trial that is promoted reports the
    worst result at the next rung at once.

    Args:
        plans: One ``(lengths, starts)`` per bracket, most rungs first; ``starts`` must be
            non-increasing and >= 1, ``lengths`` non-decreasing and >= 1.
        unit: The unit of every length.
    """

    name = "sync_halving"

    def __init__(self, plans: List[Any], unit: Unit) -> None:
        if not plans:
            raise ValueError(f"Expected at least one bracket plan. Received: plans={plans!r}")
        for lengths, starts in plans:
            ok = len(lengths) == len(starts) >= 1 and all(n >= 1 for n in starts)
            ok = ok and all(a >= b for a, b in zip(starts, starts[1:]))
            ok = ok and lengths[0] >= 1 and all(a <= b for a, b in zip(lengths, lengths[1:]))
            if not ok:
                raise ValueError(
                    "Expected a plan with non-decreasing lengths >= 1 and non-increasing "
                    f"starts >= 1. Received: lengths={lengths!r}, starts={starts!r}"
                )
        super().__init__()
        self._unit = unit
        self.brackets = [_SyncBracket(list(l), list(s), unit) for l, s in plans]
        self.expected_units = sum(plan_cost(b.lengths, b.starts) for b in self.brackets)

    @property
    def unit(self) -> Unit:
        return self._unit

    def on_capacity_changed(self, ctx: SearchContext, capacity: int) -> List[Operation]:
        """Rung-0 trials are then created as capacity frees up (split over the brackets
        as ASHA splits ``max_concurrent_trials``) instead of all up front; the plan, and
        with the random sampler every trial's hyperparameters, stay the same."""
        from determined.searcher._asha import asha_bracket_concurrency

        shares = asha_bracket_concurrency(capacity, 2.0, [b.starts[0] for b in self.brackets])
        for bracket, share in zip(self.brackets, shares):
            bracket.window = share
        return self._fill_all(ctx)

    def on_validation_completed(
        self, ctx: SearchContext, request_id: int, metric: float
    ) -> List[Operation]:
        i = self._owner[request_id]
        ops = self.brackets[i].report(request_id, metric)
        return ops + self._claim(i, self.brackets[i].fill(ctx))

    def on_trial_exited_early(
        self, ctx: SearchContext, request_id: int, reason: ExitedReason
    ) -> List[Operation]:
        i = self._owner[request_id]
        ops = self.brackets[i].on_exit(request_id)
        return ops + self._claim(i, self.brackets[i].fill(ctx))

    def progress(self, units_done: int) -> float:
        return units_done / self.expected_units
