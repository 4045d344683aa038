"""Grid search: one trial per point of the Cartesian product of the leaves' grid values."""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping, Optional

from determined.config import Length
from determined.searcher._base import SearchContext
from determined.searcher._checks import read_optional_length
from determined.searcher._hparams import grid_points, validate_space
from determined.searcher._random import RandomSearch
from determined.searcher._time_metric import TimeMetric, read_time_metric

__all__ = ["GridSearch"]


class GridSearch(RandomSearch):
    """Each grid point gets a trial that trains ``max_length``, validates and closes
    (without ``max_length``: a self-paced trial, see :class:`RandomSearch`).

    Trials are created in grid order (sorted names, last name varying fastest); each
    trial's seed is drawn from the experiment RNG when it is created.

    Args:
        max_length: How long every trial trains (None: self-paced).
        hyperparameters: The space; every int/double/log leaf needs ``count``, and the
            grid may have at most 2000 points.
        max_concurrent_trials: 0 creates every trial up front; otherwise at most this many
            are open at once.
        time_metric: ``searcher.time_metric``/``max_time`` (self-paced only).

    Example:
        >>> from determined.config import Length
        >>> space = {"n": {"type": "int", "minval": 1, "maxval": 4, "count": 2}}
        >>> GridSearch(Length.from_dict({"batches": 10}), space).points
        [{'n': 1}, {'n': 4}]
    """

    name = "grid"

    def __init__(
        self,
        max_length: Optional[Length],
        hyperparameters: Mapping[str, Any],
        max_concurrent_trials: int = 0,
        time_metric: Optional[TimeMetric] = None,
    ) -> None:
        validate_space(hyperparameters)
        self.points: List[Dict[str, Any]] = grid_points(hyperparameters)
        super().__init__(max_length, len(self.points), max_concurrent_trials, time_metric)

    @classmethod
    def from_config(
        cls, cfg: Mapping[str, Any], hyperparameters: Mapping[str, Any]
    ) -> "GridSearch":
        return cls(
            read_optional_length(cfg, "max_length"),
            hyperparameters,
            cfg.get("max_concurrent_trials") or 0,
            read_time_metric(cfg),
        )

    def _next_hparams(self, ctx: SearchContext) -> Optional[Dict[str, Any]]:
        return copy.deepcopy(self.points[self._created])
