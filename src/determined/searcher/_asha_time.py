"""One ASHA bracket of a time-metric search (``searcher.time_metric``, Determined 0.38).

Trials get no ``Train`` operation: each script trains its own length and reports
validations holding the time metric. Rung ``i`` sits at a time-metric value
(``rung_lengths(max_time, ...)``, the top rung at ``max_time``). When a trial's reported
time reaches its next rung, its metric is ranked there once: it continues if it is
within the rung's top ``max(floor(n / divisor), 1)`` results so far (``n`` counting
itself), else it is closed (its script is told to stop, checkpoints and exits; it is
never resumed). A trial reaching the top rung is closed as done. The bracket keeps
``concurrency`` trials running until it has created ``max_trials``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Set

from determined.searcher._base import WORST_METRIC, SearchContext, decode_metric, encode_metric
from determined.searcher._operations import Close, Operation
from determined.searcher._rungs import Rung

__all__ = ["TimeBracket"]


class TimeBracket:
    """Rungs at time-metric ``thresholds``; at most ``max_trials`` trials, ``concurrency``
    of them running at once."""

    def __init__(
        self, thresholds: List[int], max_trials: int, concurrency: int, divisor: float
    ) -> None:
        self.thresholds = thresholds
        self.max_trials = max_trials
        self.concurrency = concurrency
        self.divisor = divisor
        self.follow = False  # (kept for BracketSearch's capacity handling)
        self.rungs = [Rung() for _ in thresholds]
        self.next_rung: Dict[int, int] = {}  # the rung each trial reaches next
        self.done: Set[int] = set()  # closed by the bracket, finished or exited

    # The interface BracketSearch uses.

    def initial_operations(self, ctx: SearchContext) -> List[Operation]:
        return self.fill(ctx)

    def fill(self, ctx: SearchContext) -> List[Operation]:
        """Create trials until ``concurrency`` run or ``max_trials`` exist."""
        ops: List[Operation] = []
        while (len(self.next_rung) - len(self.done) < self.concurrency
               and len(self.next_rung) < self.max_trials):
            create = ctx.create()
            self.next_rung[create.request_id] = 0
            ops.append(create)
        return ops

    # Events.

    def report(self, ctx: SearchContext, request_id: int, time: float,
               metric: float) -> List[Operation]:
        """A validation at ``time``: rank the trial at every rung it reached, in order,
        until one stops it."""
        if request_id in self.done:
            return []
        ops: List[Operation] = []
        top = len(self.thresholds) - 1
        i = self.next_rung[request_id]
        while i <= top and time >= self.thresholds[i]:
            rung = self.rungs[i]
            keep = max(int((len(rung.results) + 1) / self.divisor), 1)
            index = rung.insert(request_id, metric)
            self.next_rung[request_id] = i + 1
            if i == top or index >= keep:
                self.done.add(request_id)
                ops.append(Close(request_id))
                break
            rung.results[index][2] = True  # continues
            i += 1
        return ops + self.fill(ctx)

    def end(self, ctx: SearchContext, request_id: int, failed: bool) -> List[Operation]:
        """The trial ended without the bracket closing it: ``failed`` (it exited early)
        ranks it worst at the rung it was heading for, which lets later trials continue
        more easily; a trial that finished on its own just leaves."""
        if request_id in self.done:
            return self.fill(ctx)
        self.done.add(request_id)
        i = self.next_rung[request_id]
        if failed and i < len(self.rungs):
            self.rungs[i].insert(request_id, WORST_METRIC)
        return self.fill(ctx)

    def rung_lengths(self) -> List[int]:
        return self.thresholds

    def rung_results(self) -> List[List[List[Any]]]:
        return [rung.results for rung in self.rungs]

    def state_dict(self) -> Dict[str, Any]:
        return {
            "rungs": [[[r, encode_metric(m), p] for r, m, p in rung.results]
                      for rung in self.rungs],
            "next_rung": [[r, i] for r, i in self.next_rung.items()],
            "done": sorted(self.done),
            "concurrency": self.concurrency,
            "follow": self.follow,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for rung, saved in zip(self.rungs, state["rungs"]):
            rung.results = [[int(r), decode_metric(m), bool(p)] for r, m, p in saved]
        self.next_rung = {int(r): int(i) for r, i in state["next_rung"]}
        self.done = {int(r) for r in state["done"]}
        self.concurrency = int(state["concurrency"])
        self.follow = bool(state.get("follow", False))
