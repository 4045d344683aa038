"""Which of two values of the searcher's metric is better (``searcher.smaller_is_better``):
one rule for the engine, checkpoint GC, searchers, the local display, the CLI and the UI
(a leaf module: the CLI reads it without loading the config schema; ``determined.config``
re-exports it).

A NaN (or a missing value) is never better than anything and ranks after every number;
it is still reported as NaN where metrics are shown.

Example:
    >>> order = MetricOrder(smaller_is_better=False)
    >>> order.better(0.9, 0.8), order.better(float("nan"), 0.1), order.better(0.1, None)
    (True, False, True)
    >>> sorted([0.2, float("nan"), 0.9], key=order.key)
    [0.9, 0.2, nan]
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

__all__ = ["MetricOrder", "ranked_checkpoints"]


def _number(value: Any) -> Optional[float]:
    """``value`` as a float; None for NaN and anything that is no real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    value = float(value)
    return None if math.isnan(value) else value


@dataclasses.dataclass(frozen=True)
class MetricOrder:
    """The order of the searcher metric's values, best first."""

    smaller_is_better: bool = True

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> "MetricOrder":
        """The order of an experiment config (a raw dict; default: smaller is better)."""
        searcher = config.get("searcher") or {}
        return cls(bool(searcher.get("smaller_is_better", True)))

    @property
    def sign(self) -> float:
        """1 where smaller is better, else -1: ``sign * value`` is smaller when better."""
        return 1.0 if self.smaller_is_better else -1.0

    def signed(self, value: Any) -> float:
        """``value`` turned so that smaller is better; ``inf`` (worst) for NaN or a
        non-number (what searchers, which need a number, are told)."""
        number = _number(value)
        return math.inf if number is None else self.sign * number

    def comparable(self, value: Any) -> bool:
        """Whether ``value`` takes part in the order (a number, not NaN)."""
        return _number(value) is not None

    def better(self, a: Any, b: Any) -> bool:
        """Whether ``a`` beats ``b`` (None or NaN: nothing yet). NaN is never better."""
        if _number(a) is None:
            return False
        if _number(b) is None:
            return True
        return self.signed(a) < self.signed(b)

    def key(self, value: Any) -> Tuple[bool, float]:
        """A sort key putting the best first and NaN or missing values last."""
        number = _number(value)
        return (number is None, 0.0 if number is None else self.sign * number)

    def best(self, values: Iterable[Any]) -> Optional[float]:
        """The best of ``values``; None when none is a number."""
        numbers = [v for v in (_number(x) for x in values) if v is not None]
        return min(numbers, key=self.signed) if numbers else None


def ranked_checkpoints(checkpoints: Iterable[Dict[str, Any]], metric: str,
                       smaller_is_better: bool) -> List[Dict[str, Any]]:
    """The COMPLETED checkpoints (the REST API's records) validated on ``metric`` (a
    number, not NaN), best first; of equal values the one with more batches first.

    Example:
        >>> cks = [{"uuid": "a", "state": "COMPLETED", "total_batches": 100,
        ...         "validation": {"loss": 0.5}},
        ...        {"uuid": "b", "state": "COMPLETED", "total_batches": 200,
        ...         "validation": {"loss": 0.25}},
        ...        {"uuid": "c", "state": "COMPLETED", "total_batches": 300, "validation": None}]
        >>> [ck["uuid"] for ck in ranked_checkpoints(cks, "loss", smaller_is_better=True)]
        ['b', 'a']
    """
    order = MetricOrder(smaller_is_better)
    scored = [ck for ck in checkpoints if ck["state"] == "COMPLETED"
              and order.comparable((ck.get("validation") or {}).get(metric))]
    return sorted(scored, key=lambda ck: (order.key(ck["validation"][metric]),
                                          -ck["total_batches"]))
