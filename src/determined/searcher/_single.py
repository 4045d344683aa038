"""Single: one trial with the configured (normally constant) hyperparameters."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from determined.config import Length
from determined.searcher._checks import read_optional_length
from determined.searcher._random import RandomSearch
from determined.searcher._time_metric import TimeMetric, read_time_metric

__all__ = ["SingleSearch"]


class SingleSearch(RandomSearch):
    """One trial: ``Train(max_length)``, ``Validate``, ``Close``; without ``max_length``
    one self-paced trial that runs until its script exits (see :class:`RandomSearch`).

    Non-constant hyperparameters are sampled once from the experiment RNG.

    Args:
        max_length: How long the trial trains (None: self-paced).
        time_metric: ``searcher.time_metric``/``max_time`` (self-paced only).

    Example:
        >>> from determined.config import Length
        >>> method = SingleSearch(Length.from_dict({"epochs": 2}))
        >>> SingleSearch(None).self_paced
        True
    """

    name = "single"

    def __init__(self, max_length: Optional[Length], time_metric: Optional[TimeMetric] = None) -> None:
        super().__init__(max_length, max_trials=1, time_metric=time_metric)

    @classmethod
    def from_config(
        cls, cfg: Mapping[str, Any], hyperparameters: Mapping[str, Any]
    ) -> "SingleSearch":
        return cls(read_optional_length(cfg, "max_length"), read_time_metric(cfg))
