"""Adaptive (budget-driven): synchronous successive halving in brackets sharing a budget."""

from __future__ import annotations

from typing import Any, List, Mapping, Tuple

from determined.config import Length
from determined.searcher._checks import check_length, read_length
from determined.searcher._rungs import (
    bracket_rungs,
    check_halving_options,
    halving_options,
    rung_lengths,
)
from determined.searcher._sha import SyncHalvingSearch, plan_cost

__all__ = ["AdaptiveSearch", "budget_plan"]


def budget_plan(
    max_length: int, budget: int, divisor: float, num_rungs: int
) -> Tuple[List[int], List[int]]:
    """The ``(lengths, starts)`` of one bracket given its share of the budget.

    The base plan ``n_i = max(floor(d**(R-1-i)), 1)`` is scaled by ``budget / cost`` and
    then made non-increasing and >= 1.

    >>> budget_plan(16, 160, 4.0, 3)
    ([1, 4, 16], [64, 16, 4])
    """
    lengths = rung_lengths(max_length, divisor, num_rungs)
    base = [max(int(divisor ** (num_rungs - 1 - i)), 1) for i in range(num_rungs)]
    scale = budget / plan_cost(lengths, base)
    starts: List[int] = []
    for n in base:
        n = max(int(scale * n), 1)
        starts.append(min(n, starts[-1]) if starts else n)
    return lengths, starts


class AdaptiveSearch(SyncHalvingSearch):
    """Synchronous successive halving per bracket; ``budget`` is split evenly (floored)
    across the brackets of ``mode`` and fixes how many trials each rung starts.

    Args:
        max_length: Training length of the top rung.
        budget: Total training over all trials (same unit, > max_length).
        divisor: Reduction factor between rungs (> 1).
        max_rungs: Rungs of the largest bracket (>= 1).
        mode: ``aggressive`` | ``standard`` | ``conservative``.

    Example:
        >>> from determined.config import Length
        >>> m = AdaptiveSearch(Length.from_dict({"epochs": 16}), Length.from_dict({"epochs": 160}),
        ...                    max_rungs=3, mode="standard")
        >>> [b.starts for b in m.brackets]
        [[32, 8, 2], [11, 2]]
    """

    name = "adaptive"

    def __init__(
        self,
        max_length: Length,
        budget: Length,
        divisor: float = 4.0,
        max_rungs: int = 5,
        mode: str = "standard",
    ) -> None:
        self.max_length = check_length("max_length", max_length)
        self.budget = check_length("budget", budget)
        if budget.unit != max_length.unit:
            raise ValueError(
                f"Expected budget in the unit of max_length ({max_length.unit.value}). "
                f"Received: budget={budget.to_dict()}"
            )
        if budget.units <= max_length.units:
            raise ValueError(
                f"Expected budget > max_length ({max_length.units}). "
                f"Received: budget={budget.units}"
            )
        self.divisor, self.max_rungs, self.mode = check_halving_options(divisor, max_rungs, mode)
        rungs = bracket_rungs(self.mode, self.max_rungs)
        share = budget.units // len(rungs)
        plans = [budget_plan(max_length.units, share, self.divisor, r) for r in rungs]
        super().__init__(plans, max_length.unit)

    @classmethod
    def from_config(
        cls, cfg: Mapping[str, Any], hyperparameters: Mapping[str, Any]
    ) -> "AdaptiveSearch":
        return cls(
            read_length(cfg, "max_length"),
            read_length(cfg, "budget"),
            **halving_options(cfg),
        )
