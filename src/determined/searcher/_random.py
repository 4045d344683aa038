"""Random search: ``max_trials`` independent trials with sampled hyperparameters."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from determined.config import Length, Unit
from determined.searcher._base import SearchContext, SearchMethod
from determined.searcher._checks import (
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

__all__ = ["RandomSearch"]


class RandomSearch(SearchMethod):
    """Each trial trains ``max_length``, validates once and closes.

    Without ``max_length`` the search is self-paced: each trial's script trains its own
    length and the trial ends when the script exits; with ``time_metric`` a trial whose
    reported time metric reaches ``max_time`` is closed.

    Args:
        max_length: How long every trial trains (None: self-paced).
        max_trials: How many trials to run (> 0).
        max_concurrent_trials: 0 creates every trial up front, or, once the driver reports
            the experiment's capacity, keeps that many open; otherwise at most this many
            trials are open at once and a new one is created as each closes or exits.
        time_metric: ``searcher.time_metric``/``max_time`` (self-paced only).

    Example:
        >>> from determined.config import Length
        >>> method = RandomSearch(Length.from_dict({"batches": 100}), max_trials=4)
    """

    name = "random"

    def __init__(
        self,
        max_length: Optional[Length],
        max_trials: int,
        max_concurrent_trials: int = 0,
        time_metric: Optional[TimeMetric] = None,
    ) -> None:
        if max_length is not None and time_metric is not None:
            raise ValueError(
                "Expected either searcher.max_length or searcher.time_metric with "
                f"searcher.max_time, not both. Received: max_length={max_length.to_dict()}, "
                f"time_metric={time_metric.name!r}"
            )
        self.max_length = None if max_length is None else check_length("max_length", max_length)
        self.time_metric = time_metric
        self.max_trials = check_int("max_trials", max_trials, min_value=1)
        self.max_concurrent_trials = check_int(
            "max_concurrent_trials", max_concurrent_trials, min_value=0
        )
        self._created = 0
        self._finished: List[int] = []
        self._capacity: Optional[int] = None  # automatic concurrency, once known
        self._started = False

    @classmethod
    def from_config(
        cls, cfg: Mapping[str, Any], hyperparameters: Mapping[str, Any]
    ) -> "RandomSearch":
        return cls(
            read_optional_length(cfg, "max_length"),
            require(cfg, "max_trials"),
            cfg.get("max_concurrent_trials") or 0,
            read_time_metric(cfg),
        )

    @property
    def unit(self) -> Optional[Unit]:
        return None if self.max_length is None else self.max_length.unit

    def _next_hparams(self, ctx: SearchContext) -> Optional[Dict[str, Any]]:
        """Hparams for the next trial (None = sample)."""
        return None

    def _create(self, ctx: SearchContext) -> List[Operation]:
        create: Create = ctx.create(self._next_hparams(ctx))
        self._created += 1
        if self.max_length is None:
            return [create]
        return [create, Train(create.request_id, self.max_length), Validate(create.request_id)]

    def initial_operations(self, ctx: SearchContext) -> List[Operation]:
        self._started = True
        n = self.max_trials
        if self.max_concurrent_trials > 0:
            n = min(n, self.max_concurrent_trials)
        elif self._capacity is not None:
            n = min(n, self._capacity)
        ops: List[Operation] = []
        for _ in range(n):
            ops += self._create(ctx)
        return ops

    def on_capacity_changed(self, ctx: SearchContext, capacity: int) -> List[Operation]:
        if self.max_concurrent_trials != 0:
            return []
        self._capacity = capacity
        return self._fill(ctx) if self._started else []

    def _fill(self, ctx: SearchContext) -> List[Operation]:
        ops: List[Operation] = []
        assert self._capacity is not None
        while self._created < self.max_trials and (
            self._created - len(self._finished) < self._capacity
        ):
            ops += self._create(ctx)
        return ops

    def on_validation_completed(
        self, ctx: SearchContext, request_id: int, metric: float
    ) -> List[Operation]:
        return [Close(request_id)]

    def on_validation_reported(
        self, ctx: SearchContext, request_id: int, time: float, metric: float
    ) -> List[Operation]:
        """A trial whose time metric reached ``max_time`` is done."""
        if self.time_metric is None or time < self.time_metric.max_time:
            return []
        return [Close(request_id)]

    def on_trial_finished(self, ctx: SearchContext, request_id: int) -> List[Operation]:
        return self._finish(ctx, request_id)

    def _finish(self, ctx: SearchContext, request_id: int) -> List[Operation]:
        if request_id in self._finished:
            return []
        self._finished.append(request_id)
        if self._capacity is not None and self.max_concurrent_trials == 0:
            return self._fill(ctx)
        if self._created < self.max_trials:
            return self._create(ctx)
        return []

    def on_trial_closed(self, ctx: SearchContext, request_id: int) -> List[Operation]:
        return self._finish(ctx, request_id)

    def on_trial_exited_early(
        self, ctx: SearchContext, request_id: int, reason: ExitedReason
    ) -> List[Operation]:
        return self._finish(ctx, request_id)

    def progress(self, units_done: int) -> float:
        per_trial = self.trial_units if self.max_length is None else self.max_length.units
        return units_done / (per_trial * self.max_trials)

    def state_dict(self) -> Dict[str, Any]:
        return {
            "created": self._created,
            "finished": list(self._finished),
            "capacity": self._capacity,
            "started": self._started,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self._created = int(state["created"])
        self._finished = [int(r) for r in state["finished"]]
        capacity = state.get("capacity")
        self._capacity = None if capacity is None else int(capacity)
        self._started = bool(state.get("started", True))
