"""Random search: ``max_trials`` independent trials with sampled hyperparameters."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from determined.config import Length, Unit
from determined.searcher._base import SearchContext, SearchMethod
from determined.searcher._checks import check_int, check_length, read_length, require
from determined.searcher._operations import (
    Close,
    Create,
    ExitedReason,
    Operation,
    Train,
    Validate,
)

__all__ = ["RandomSearch"]


class RandomSearch(SearchMethod):
    """Each trial trains ``max_length``, validates once and closes.

    Args:
        max_length: How long every trial trains.
        max_trials: How many trials to run (> 0).
        max_concurrent_trials: 0 creates every trial up front, or, once the driver reports
            the experiment's capacity, keeps that many open; otherwise at most this many
            trials are open at once and a new one is created as each closes or exits.

    Example:
        >>> from determined.config import Length
        >>> method = RandomSearch(Length.from_dict({"batches": 100}), max_trials=4)
    """

    name = "random"

    def __init__(
        self, max_length: Length, max_trials: int, max_concurrent_trials: int = 0
    ) -> None:
        self.max_length = check_length("max_length", max_length)
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
            read_length(cfg, "max_length"),
            require(cfg, "max_trials"),
            cfg.get("max_concurrent_trials") or 0,
        )

    @property
    def unit(self) -> Unit:
        return self.max_length.unit

    def _next_hparams(self, ctx: SearchContext) -> Optional[Dict[str, Any]]:
        """Hparams for the next trial (None = sample)."""
        return None

    def _create(self, ctx: SearchContext) -> List[Operation]:
        create: Create = ctx.create(self._next_hparams(ctx))
        self._created += 1
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
        return units_done / (self.max_length.units * self.max_trials)

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
