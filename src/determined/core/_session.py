"""What the parts of a ``core.Context`` share: the trial's host (chief only), its
checkpoint storage, its environment, and what the script reported so far."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional, Tuple

from determined.common.int64 import INT64_MAX
from determined.harness._env import TrialEnv
from determined.harness._host import TrialHost
from determined.storage import StorageManager

__all__ = ["Session", "searcher_max_length", "trial_units"]


def searcher_max_length(config: Dict[str, Any]) -> Optional[Tuple[str, float]]:
    """(unit, value) of ``searcher.max_length`` (``{batches: 100}`` or a bare number);
    None when the config has none."""
    raw = (config.get("searcher") or {}).get("max_length")
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return ("batches", float(raw))
    if isinstance(raw, dict) and len(raw) == 1:
        (unit, value), = raw.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (str(unit), float(value))
    return None


def trial_units(config: Dict[str, Any]) -> Optional[float]:
    """A whole trial's length in the unit its progress is reported in: ``max_length``
    (batches/epochs/records), else ``max_time`` of a ``time_metric`` search; None when
    the config has neither (progress then goes as a fraction)."""
    length = searcher_max_length(config)
    if length is not None:
        return length[1]
    searcher = config.get("searcher") or {}
    max_time = searcher.get("max_time")
    if searcher.get("time_metric") and isinstance(max_time, (int, float)) \
            and not isinstance(max_time, bool):
        return float(max_time)
    return None


@dataclasses.dataclass
class Session:
    """One ``core.Context``'s link to its trial.

    Attributes:
        host: the trial's host on the chief; None on other ranks.
        storage: where checkpoints go.
        env: the trial's environment; None in directory mode (no platform).
        steps_completed: the largest ``steps_completed`` reported so far.
        last_validation: (steps, metrics) of the latest validation report.
    """

    host: Optional[TrialHost]
    storage: StorageManager
    env: Optional[TrialEnv]
    steps_completed: int = 0
    last_validation: Optional[Tuple[int, Dict[str, Any]]] = None
    latest_checkpoint: Optional[Tuple[int, str, Dict[str, Any]]] = None
    on_close: Optional[Callable[[], None]] = None

    def close(self) -> None:
        if self.on_close is not None:
            close, self.on_close = self.on_close, None
            close()

    @property
    def config(self) -> Dict[str, Any]:
        return self.env.experiment_config if self.env is not None else {}

    @property
    def searcher_metric(self) -> Optional[str]:
        name = (self.config.get("searcher") or {}).get("metric")
        return name if isinstance(name, str) and name else None

    def saw_steps(self, steps: int) -> None:
        self.steps_completed = max(self.steps_completed, steps)


#: Hosts store steps as signed 64-bit integers.
_STEPS_MAX = INT64_MAX


def check_steps(steps_completed: Any, where: str) -> int:
    """``steps_completed`` as a non-negative int, or a ValueError naming ``where``."""
    if isinstance(steps_completed, bool) or not isinstance(steps_completed, int):
        # NumPy/torch integers are fine; floats with a fraction are not.
        try:
            as_int = int(steps_completed)
        except (TypeError, ValueError):
            as_int = None
        if as_int is None or as_int != steps_completed:
            raise ValueError(f"Expected {where} steps_completed to be an integer. "
                             f"Received: {steps_completed!r}")
        steps_completed = as_int
    if not 0 <= steps_completed <= _STEPS_MAX:
        raise ValueError(f"Expected {where} steps_completed in [0, 2**63 - 1]. "
                         f"Received: {steps_completed}")
    return steps_completed


def check_metrics(metrics: Any, where: str) -> Dict[str, Any]:
    if not isinstance(metrics, dict) or not all(isinstance(k, str) for k in metrics):
        raise TypeError(f"Expected {where} metrics to be a dict with string keys. "
                        f"Received: {type(metrics).__name__}")
    return metrics
