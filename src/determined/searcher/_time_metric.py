"""``searcher.time_metric`` and ``searcher.max_time`` (Determined 0.38).

A search with a time metric gives its trials no ``Train`` operation: each trial's script
trains its own length and reports validation metrics that include the time metric (for
example ``batches`` or ``epochs`` done so far). The search method decides on those
reports (``SearchMethod.on_validation_reported``) and stops a trial with ``Close``.
``max_time`` is the value of the time metric at which a trial is done.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Optional

from determined.searcher._checks import check_int

__all__ = ["TimeMetric", "read_time_metric", "time_value"]


@dataclasses.dataclass(frozen=True)
class TimeMetric:
    """The validation metric that measures a trial's training so far, and its final value.

    Example:
        >>> TimeMetric("batches", 100).fraction(25)
        0.25
    """

    name: str
    max_time: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(
                "Expected searcher.time_metric to be a non-empty string. "
                f"Received: searcher.time_metric={self.name!r}"
            )
        check_int("searcher.max_time", self.max_time, min_value=1)

    def fraction(self, value: float) -> float:
        """How much of ``max_time`` a trial at ``value`` has done, in [0, 1]."""
        return min(max(value / self.max_time, 0.0), 1.0)


def read_time_metric(cfg: Mapping[str, Any]) -> Optional[TimeMetric]:
    """The searcher config's time metric, or None without ``time_metric``.

    Raises:
        ValueError: one of ``time_metric`` and ``max_time`` without the other, or a bad value.
    """
    name, max_time = cfg.get("time_metric"), cfg.get("max_time")
    if name is None and max_time is None:
        return None
    if name is None or max_time is None:
        missing = "searcher.max_time" if max_time is None else "searcher.time_metric"
        raise ValueError(
            f"Expected searcher.time_metric and searcher.max_time together. Received: "
            f"searcher.time_metric={name!r}, searcher.max_time={max_time!r} ({missing} missing)"
        )
    return TimeMetric(name, max_time)


def time_value(metrics: Mapping[str, Any], name: str) -> Optional[float]:
    """The time metric's value in a validation report; None when absent.

    Raises:
        ValueError: present but not a finite, non-negative number.
    """
    if name not in metrics:
        return None
    value = metrics[name]
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < 0:
        raise ValueError(
            f"Expected the time metric {name!r} (searcher.time_metric) to be a finite "
            f"number >= 0. Received: {name}={value!r}"
        )
    return float(value)
