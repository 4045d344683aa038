"""Typed read access to a normalized experiment config dict."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from determined._metric_order import MetricOrder
from determined.config._units import Length

__all__ = ["ExperimentConfig"]


class ExperimentConfig:
    """A read-only, typed view of a config returned by :func:`validate_config` (what
    our own code reads configs with). ``determined.ExperimentConfig``, upstream 0.13's
    dict face of the same config, reads through it; a partial config (user code may
    build one) reads as the schema's defaults for ``scheduling_unit``,
    ``slots_per_trial`` and ``experiment_seed``.

    Lengths convert to batches with the trial's own global batch size, since a
    searched ``global_batch_size`` makes the conversion differ per trial.
    """

    def __init__(self, config: Mapping[str, Any]):
        self.raw: Dict[str, Any] = dict(config)

    @property
    def searcher(self) -> Dict[str, Any]:
        return self.raw["searcher"]

    @property
    def metric(self) -> str:
        return self.raw["searcher"]["metric"]

    @property
    def smaller_is_better(self) -> bool:
        return bool(self.raw["searcher"].get("smaller_is_better", True))

    @property
    def scheduling_unit(self) -> int:
        # (``batches_per_step``: the legacy alias, in a config not normalized yet)
        return int(self.raw.get("scheduling_unit") or self.raw.get("batches_per_step") or 100)

    @property
    def records_per_epoch(self) -> int:
        return int(self.raw.get("records_per_epoch") or 0)

    @property
    def slots_per_trial(self) -> int:
        return int((self.raw.get("resources") or {}).get("slots_per_trial") or 1)

    @property
    def experiment_seed(self) -> int:
        return int((self.raw.get("reproducibility") or {}).get("experiment_seed") or 0)

    @property
    def checkpoint_policy(self) -> str:
        return self.raw["checkpoint_policy"]

    @property
    def max_restarts(self) -> int:
        return int(self.raw["max_restarts"])

    def to_batches(self, length: Optional[Mapping[str, int]], global_batch_size: int) -> Optional[int]:
        """A config length in batches for a trial with this global batch size."""
        if not length:
            return None
        return Length.from_dict(length).to_batches(global_batch_size, self.records_per_epoch)

    def length_to_batches(self, length: Length, global_batch_size: int) -> int:
        return length.to_batches(global_batch_size, self.records_per_epoch)

    @property
    def metric_order(self) -> MetricOrder:
        """How the searcher metric's values compare (NaN is never better)."""
        return MetricOrder(self.smaller_is_better)
