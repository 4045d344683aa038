"""Adaptive simple: synchronous successive halving in brackets sharing ``max_trials``."""

from __future__ import annotations

from typing import Any, List, Mapping

from determined.config import Length
from determined.searcher._checks import check_int, check_length, read_length, require
from determined.searcher._rungs import (
    bracket_rungs,
    check_halving_options,
    halving_options,
    rung_lengths,
)
from determined.searcher._sha import SyncHalvingSearch

__all__ = ["AdaptiveSimpleSearch", "split_trials"]


def split_trials(max_trials: int, num_brackets: int) -> List[int]:
    """Split evenly, remainder to the first brackets, each >= 1.

    >>> split_trials(10, 3)
    [4, 3, 3]
    """
    out = [max(max_trials // num_brackets, 1)] * num_brackets
    for i in range(max(max_trials - sum(out), 0)):
        out[i % num_brackets] += 1
    return out


class AdaptiveSimpleSearch(SyncHalvingSearch):
    """As ``adaptive``, but each bracket's plan comes from its share ``T`` of
    ``max_trials``: rung ``i`` starts ``max(floor(T / divisor**i), 1)`` trials.

    Args:
        max_length: Training length of the top rung.
        max_trials: Trials over all brackets (1..2000).
        divisor: Reduction factor between rungs (> 1).
        max_rungs: Rungs of the largest bracket (>= 1).
        mode: ``aggressive`` | ``standard`` | ``conservative``.

    Example:
        >>> from determined.config import Length
        >>> m = AdaptiveSimpleSearch(Length.from_dict({"batches": 16}), 20, max_rungs=3)
        >>> [(b.lengths, b.starts) for b in m.brackets]
        [([1, 4, 16], [10, 2, 1]), ([4, 16], [10, 2])]
    """

    name = "adaptive_simple"

    def __init__(
        self,
        max_length: Length,
        max_trials: int,
        divisor: float = 4.0,
        max_rungs: int = 5,
        mode: str = "standard",
    ) -> None:
        self.max_length = check_length("max_length", max_length)
        self.max_trials = check_int("max_trials", max_trials, min_value=1, max_value=2000)
        self.divisor, self.max_rungs, self.mode = check_halving_options(divisor, max_rungs, mode)
        rungs = bracket_rungs(self.mode, self.max_rungs)
        plans = []
        for r, t in zip(rungs, split_trials(self.max_trials, len(rungs))):
            starts = [max(int(t / self.divisor**i), 1) for i in range(r)]
            plans.append((rung_lengths(max_length.units, self.divisor, r), starts))
        super().__init__(plans, max_length.unit)

    @classmethod
    def from_config(
        cls, cfg: Mapping[str, Any], hyperparameters: Mapping[str, Any]
    ) -> "AdaptiveSimpleSearch":
        return cls(
            read_length(cfg, "max_length"),
            require(cfg, "max_trials"),
            **halving_options(cfg),
        )
