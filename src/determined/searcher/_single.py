"""Single: one trial with the configured (normally constant) hyperparameters."""

from __future__ import annotations

from typing import Any, Mapping

from determined.config import Length
from determined.searcher._checks import read_length
from determined.searcher._random import RandomSearch

__all__ = ["SingleSearch"]


class SingleSearch(RandomSearch):
    """One trial: ``Train(max_length)``, ``Validate``, ``Close``.

    Non-constant hyperparameters are sampled once from the experiment RNG.

    Args:
        max_length: How long the trial trains.

    Example:
        >>> from determined.config import Length
        >>> method = SingleSearch(Length.from_dict({"epochs": 2}))
    """

    name = "single"

    def __init__(self, max_length: Length) -> None:
        super().__init__(max_length, max_trials=1)

    @classmethod
    def from_config(
        cls, cfg: Mapping[str, Any], hyperparameters: Mapping[str, Any]
    ) -> "SingleSearch":
        return cls(read_length(cfg, "max_length"))
