"""Adaptive ASHA: asynchronous successive halving over brackets run side by side."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from determined.config import Length, Unit
from determined.searcher._base import (
    WORST_METRIC,
    SearchContext,
    decode_metric,
    encode_metric,
)
from determined.searcher._brackets import BracketSearch
from determined.searcher._checks import (
    check_bool,
    check_int,
    check_length,
    read_optional_length,
    require,
)
from determined.searcher._operations import (
    Close,
    Create,
    ExitedReason,
    Operation,
    Train,
    Validate,
)
from determined.searcher._time_metric import TimeMetric, read_time_metric
from determined.searcher._asha_time import TimeBracket
from determined.searcher._rungs import (
    Rung,
    bracket_rungs,
    check_halving_options,
    floor_log,
    halving_options,
    rung_lengths,
)

__all__ = ["AdaptiveASHASearch", "asha_bracket_trials", "asha_bracket_concurrency"]


def asha_bracket_trials(max_trials: int, divisor: float, brackets: List[int]) -> List[int]:
    """Trials per bracket, proportional to ``d**(R-1)/R``, each >= 1, leftover to the first.

    >>> asha_bracket_trials(16, 4.0, [2, 1])
    [11, 5]
    """
    weights = [divisor ** (r - 1) / r for r in brackets]
    total = sum(weights)
    trials = [max(int(w / total * max_trials), 1) for w in weights]
    trials[0] += max(max_trials - sum(trials), 0)
    return trials


def asha_bracket_concurrency(
    max_concurrent_trials: int, divisor: float, bracket_trials: List[int]
) -> List[int]:
    """Concurrency per bracket: the limit split evenly (remainder to the first ones), or,
    when it is 0, ``max(trials of the last bracket, floor(divisor))`` for every bracket.

    >>> asha_bracket_concurrency(0, 4.0, [13, 3]), asha_bracket_concurrency(5, 4.0, [13, 3])
    ([4, 4], [3, 2])
    """
    n = len(bracket_trials)
    if max_concurrent_trials == 0:
        return [max(bracket_trials[-1], int(divisor))] * n
    limit = max(max_concurrent_trials, n)
    out = [limit // n] * n
    for i in range(limit % n):
        out[i] += 1
    return out


class _AsyncBracket:
    """One ASHA bracket: ``num_rungs`` rungs, at most ``max_trials`` trials."""

    def __init__(
        self,
        lengths: List[int],
        unit: Unit,
        max_trials: int,
        concurrency: int,
        divisor: float,
        stop_once: bool,
    ) -> None:
        self.lengths = lengths
        self.unit = unit
        self.max_trials = max_trials
        self.concurrency = concurrency
        self.divisor = divisor
        self.stop_once = stop_once
        self.rungs = [Rung() for _ in lengths]
        # Following the capacity: keep ``concurrency`` trials with work (see ``fill``).
        self.follow = False
        self.trial_rung: Dict[int, int] = {}
        self.awaiting: Set[int] = set()  # has Train/Validate at its rung not yet reported
        self.exited: Set[int] = set()
        self.closed: Set[int] = set()  # Close emitted or exited

    def _create(self, ctx: SearchContext) -> List[Operation]:
        create: Create = ctx.create()
        rid = create.request_id
        self.trial_rung[rid] = 0
        self.awaiting.add(rid)
        self.rungs[0].outstanding += 1
        return [create, Train(rid, Length(self.unit, self.lengths[0])), Validate(rid)]

    def initial_operations(self, ctx: SearchContext) -> List[Operation]:
        ops: List[Operation] = []
        for _ in range(min(self.concurrency, self.max_trials)):
            ops += self._create(ctx)
        return ops

    def fill(self, ctx: SearchContext) -> List[Operation]:
        """Create trials until ``concurrency`` have work or all ``max_trials`` exist."""
        ops: List[Operation] = []
        while len(self.awaiting) < self.concurrency and len(self.trial_rung) < self.max_trials:
            ops += self._create(ctx)
        return ops

    def _promotion(self, rung: Rung, request_id: int, metric: float) -> Optional[int]:
        """Record a result; return the trial to promote from this rung, if any."""
        n = len(rung.results)
        index = rung.insert(request_id, metric)
        if self.stop_once:
            # Decide now: continue only within the top max(floor(n/d), 1) of this rung.
            keep = max(int((n + 1) / self.divisor), 1)
            if index < keep and request_id not in self.exited:
                rung.results[index][2] = True
                return request_id
            return None
        p_old, p_new = int(n / self.divisor), int((n + 1) / self.divisor)
        if index < p_new:
            rung.results[index][2] = True
            return request_id
        if p_new > p_old and not rung.results[p_old][2]:
            rung.results[p_old][2] = True
            return int(rung.results[p_old][0])
        return None

    def _report(self, request_id: int, metric: float) -> Tuple[List[Operation], bool]:
        """Handle a result at the trial's rung; cascade worst results of exited promotees."""
        ops: List[Operation] = []
        top = len(self.rungs) - 1
        while True:
            i = self.trial_rung[request_id]
            rung = self.rungs[i]
            rung.outstanding -= 1
            self.awaiting.discard(request_id)
            if i == top:
                rung.insert(request_id, metric)
                if request_id not in self.closed:
                    self.closed.add(request_id)
                    ops.append(Close(request_id))
                return ops, False
            promoted = self._promotion(rung, request_id, metric)
            if self.stop_once and promoted != request_id and request_id not in self.closed:
                self.closed.add(request_id)
                ops.append(Close(request_id))
            if promoted is None:
                return ops, False
            self.trial_rung[promoted] = i + 1
            self.rungs[i + 1].outstanding += 1
            if promoted in self.exited:
                request_id, metric = promoted, WORST_METRIC
                continue
            self.awaiting.add(promoted)
            length = Length(self.unit, self.lengths[i + 1])
            ops += [Train(promoted, length), Validate(promoted)]
            return ops, True

    def _close_out(self) -> List[Operation]:
        """Close unpromoted trials of the rungs, bottom up, that expect no more results."""
        ops: List[Operation] = []
        for rung in self.rungs:
            if rung.outstanding > 0:
                break
            for request_id, _, promoted in rung.results:
                if not promoted and request_id not in self.closed:
                    self.closed.add(request_id)
                    ops.append(Close(request_id))
        return ops

    def handle(
        self, ctx: SearchContext, request_id: int, metric: Optional[float]
    ) -> List[Operation]:
        """One event: a result (``metric`` given) or an exit of a trial with no work."""
        ops: List[Operation] = []
        trained = False
        if metric is not None:
            ops, trained = self._report(request_id, metric)
        if self.follow:
            ops += self.fill(ctx)
        elif not trained and len(self.trial_rung) < self.max_trials:
            ops += self._create(ctx)
        if not self.stop_once and len(self.rungs[0].results) >= self.max_trials:
            ops += self._close_out()
        return ops

    def on_exit(self, ctx: SearchContext, request_id: int) -> List[Operation]:
        if request_id in self.closed:
            return []
        self.exited.add(request_id)
        self.closed.add(request_id)
        if request_id in self.awaiting:
            return self.handle(ctx, request_id, WORST_METRIC)
        return self.handle(ctx, request_id, None)

    def rung_lengths(self) -> List[int]:
        return self.lengths

    def rung_results(self) -> List[List[List[Any]]]:
        return [rung.results for rung in self.rungs]

    def state_dict(self) -> Dict[str, Any]:
        return {
            "rungs": [
                {
                    "results": [[r, encode_metric(m), p] for r, m, p in rung.results],
                    "outstanding": rung.outstanding,
                }
                for rung in self.rungs
            ],
            "trial_rung": [[r, i] for r, i in self.trial_rung.items()],
            "awaiting": sorted(self.awaiting),
            "exited": sorted(self.exited),
            "closed": sorted(self.closed),
            "concurrency": self.concurrency,
            "follow": self.follow,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.concurrency = int(state.get("concurrency", self.concurrency))
        self.follow = bool(state.get("follow", False))
        for rung, saved in zip(self.rungs, state["rungs"]):
            rung.results = [[int(r), decode_metric(m), bool(p)] for r, m, p in saved["results"]]
            rung.outstanding = int(saved["outstanding"])
        self.trial_rung = {int(r): int(i) for r, i in state["trial_rung"]}
        self.awaiting = {int(r) for r in state["awaiting"]}
        self.exited = {int(r) for r in state["exited"]}
        self.closed = {int(r) for r in state["closed"]}


class AdaptiveASHASearch(BracketSearch):
    """Asynchronous successive halving (ASHA) with brackets chosen by ``mode``.

    Rung ``i`` of a bracket with ``R`` rungs trains to
    ``max(floor(max_length / divisor**(R-1-i)), 1)``. A result at a rung is promoted as
    soon as it ranks in the rung's top ``floor(n / divisor)``; an event that gives no
    training work creates a new trial until the bracket has its share of ``max_trials``.
    Trials that exit early count as the worst result and get no more work.

    With ``stop_once`` each result is judged once, when it arrives: the trial continues
    if it ranks within the rung's top ``max(floor(n / divisor), 1)`` results so far
    (``n`` counting itself), else it is closed at once instead of waiting for a later
    promotion.

    With ``time_metric`` instead of ``max_length`` the search is self-paced: rungs sit at
    values of the time metric up to ``max_time``, and each trial is judged once per rung
    as with ``stop_once`` (a stopped script is not resumed; see ``_asha_time``).

    Args:
        max_length: Training length of the top rung (None with ``time_metric``).
        max_trials: Trials to create over all brackets (>= 1).
        divisor: Reduction factor between rungs (> 1).
        max_rungs: Upper bound on rungs per bracket (>= 1).
        mode: ``aggressive`` | ``standard`` | ``conservative``.
        max_concurrent_trials: Trials open at once over all brackets; 0 = automatic:
            once the driver reports the experiment's capacity
            (:meth:`~determined.searcher.Searcher.on_capacity_changed`), as if set to it,
            following its changes; until then ``max(trials of the last bracket,
            floor(divisor))`` per bracket.
        stop_once: Close unpromoted trials at once (see above).
        time_metric: ``searcher.time_metric``/``max_time``.

    Example:
        >>> from determined.config import Length
        >>> m = AdaptiveASHASearch(Length.from_dict({"batches": 64}), max_trials=16)
        >>> [(len(b.lengths), b.max_trials) for b in m.brackets]
        [(3, 12), (2, 4)]
        >>> t = AdaptiveASHASearch(None, max_trials=16, time_metric=TimeMetric("batches", 64))
        >>> [b.thresholds for b in t.brackets]
        [[4, 16, 64], [16, 64]]
    """

    name = "adaptive_asha"

    def __init__(
        self,
        max_length: Optional[Length],
        max_trials: int,
        divisor: float = 4.0,
        max_rungs: int = 5,
        mode: str = "standard",
        max_concurrent_trials: int = 0,
        stop_once: bool = False,
        time_metric: Optional[TimeMetric] = None,
    ) -> None:
        super().__init__()
        if (max_length is None) == (time_metric is None):
            raise ValueError(
                "Expected searcher.max_length, or searcher.time_metric with "
                f"searcher.max_time (one of them). Received: max_length={max_length!r}, "
                f"time_metric={time_metric!r}"
            )
        self.max_length = None if max_length is None else check_length("max_length", max_length)
        self.time_metric = time_metric
        self.max_trials = check_int("max_trials", max_trials, min_value=1)
        self.divisor, self.max_rungs, self.mode = check_halving_options(divisor, max_rungs, mode)
        self.max_concurrent_trials = check_int(
            "max_concurrent_trials", max_concurrent_trials, min_value=0
        )
        self.stop_once = check_bool("stop_once", stop_once)

        top = self.max_length.units if self.max_length else self.trial_units
        num_rungs = min(
            self.max_rungs,
            floor_log(top, self.divisor) + 1,
            floor_log(self.max_trials, self.divisor) + 1,
        )
        rungs = bracket_rungs(self.mode, num_rungs)
        trials = asha_bracket_trials(self.max_trials, self.divisor, rungs)
        concurrency = asha_bracket_concurrency(self.max_concurrent_trials, self.divisor, trials)
        plan = zip(rungs, trials, concurrency)
        if self.max_length is None:
            self.brackets: List[Any] = [
                TimeBracket(rung_lengths(top, self.divisor, r), t, c, self.divisor)
                for r, t, c in plan
            ]
            return
        self.brackets = [
            _AsyncBracket(
                rung_lengths(top, self.divisor, r),
                self.max_length.unit,
                t,
                c,
                self.divisor,
                self.stop_once,
            )
            for r, t, c in plan
        ]

    @classmethod
    def from_config(
        cls, cfg: Mapping[str, Any], hyperparameters: Mapping[str, Any]
    ) -> "AdaptiveASHASearch":
        time_metric = read_time_metric(cfg)
        max_length = read_optional_length(cfg, "max_length")
        if max_length is None and time_metric is None:
            require(cfg, "max_length")  # names the missing field
        return cls(
            max_length,
            require(cfg, "max_trials"),
            **halving_options(cfg),
            max_concurrent_trials=cfg.get("max_concurrent_trials") or 0,
            stop_once=cfg.get("stop_once", False),
            time_metric=time_metric,
        )

    @property
    def unit(self) -> Optional[Unit]:
        return None if self.max_length is None else self.max_length.unit

    def on_capacity_changed(self, ctx: SearchContext, capacity: int) -> List[Operation]:
        """With automatic concurrency, ``capacity`` trials are split over the brackets as
        an explicit ``max_concurrent_trials`` would be, and each bracket keeps that many
        trials with work from then on (more as capacity grows; fewer new ones as it
        shrinks, without stopping any)."""
        if self.max_concurrent_trials != 0:
            return []
        trials = [b.max_trials for b in self.brackets]
        shares = asha_bracket_concurrency(capacity, self.divisor, trials)
        for bracket, share in zip(self.brackets, shares):
            bracket.concurrency = share
            bracket.follow = True
        return self._fill_all(ctx)

    def on_validation_completed(
        self, ctx: SearchContext, request_id: int, metric: float
    ) -> List[Operation]:
        i = self._owner[request_id]
        return self._claim(i, self.brackets[i].handle(ctx, request_id, metric))

    def on_validation_reported(
        self, ctx: SearchContext, request_id: int, time: float, metric: float
    ) -> List[Operation]:
        if self.time_metric is None:
            return []
        i = self._owner[request_id]
        return self._claim(i, self.brackets[i].report(ctx, request_id, time, metric))

    def on_trial_exited_early(
        self, ctx: SearchContext, request_id: int, reason: ExitedReason
    ) -> List[Operation]:
        i = self._owner[request_id]
        if self.time_metric is not None:
            return self._claim(i, self.brackets[i].end(ctx, request_id, failed=True))
        return self._claim(i, self.brackets[i].on_exit(ctx, request_id))

    def on_trial_finished(self, ctx: SearchContext, request_id: int) -> List[Operation]:
        if self.time_metric is None:
            return super().on_trial_finished(ctx, request_id)
        i = self._owner[request_id]
        return self._claim(i, self.brackets[i].end(ctx, request_id, failed=False))

    def progress(self, units_done: int) -> float:
        if self.time_metric is not None:
            return units_done / (self.trial_units * self.max_trials)
        total = sum(b.max_trials for b in self.brackets)
        started = sum(len(b.rungs[0].results) for b in self.brackets)
        progress = started / (1.2 * total)
        if started >= total:
            closed = sum(len(b.closed) for b in self.brackets)
            progress = max(progress, closed / total)
        return progress
