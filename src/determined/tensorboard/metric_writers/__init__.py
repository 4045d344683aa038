"""Metric writers: the platform's training and validation metrics as TensorBoard scalars.

Tags as upstream Determined (SPEC 8): each training batch's metric ``name`` goes to
``Determined/<name>`` at x = the batch number; each validation metric to
``Determined/val_<name>`` (no extra prefix when the name starts with ``val``) at x =
the batches trained when it was computed. Values that are not scalars are skipped.
"""

from __future__ import annotations

import abc
import numbers
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["BatchMetricWriter", "MetricWriter"]


class MetricWriter(abc.ABC):
    """Somewhere scalars can be written (an event file writer of some framework)."""

    @abc.abstractmethod
    def add_scalar(self, name: str, value: Any, step: int) -> None:
        """Record ``value`` under tag ``name`` at x = ``step``."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Flush what was written, so the files can be synced."""

    def add_scalars(self, step: int, values: List[Tuple[str, float]]) -> None:
        """Record several ``(name, value)`` at x = ``step`` (one event where possible)."""
        for name, value in values:
            self.add_scalar(name, value, step)

    def add_scalar_events(self, events: List[Tuple[int, List[Tuple[str, float]]]]) -> None:
        """Record several events ``(step, [(name, value), ...])``, as :meth:`add_scalars`
        each (a writer that can write them at once overrides this)."""
        for step, values in events:
            self.add_scalars(step, values)


def _scalar(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, numbers.Real):
        return float(value)
    item = getattr(value, "item", None)  # numpy scalars, one-element tensors
    if callable(item) and getattr(value, "size", getattr(value, "numel", lambda: 1)) in (1, None):
        try:
            out = item()
        except (ValueError, RuntimeError, TypeError):
            return None
        return float(out) if isinstance(out, numbers.Real) else None
    return None


class BatchMetricWriter:
    """Writes workloads' metrics through a :class:`MetricWriter` with upstream's tags.

    Args:
        writer: where the scalars go.
    """

    def __init__(self, writer: MetricWriter):
        self.writer = writer

    def on_train_step_end(self, step_id: int, num_batches: int, total_batches_processed: int,
                          metrics: Dict[str, Any]) -> None:
        """``metrics`` is a training workload's record (``batch_metrics`` list);
        ``total_batches_processed`` counts the batches before this workload."""
        tags: Dict[str, str] = {}
        events = []
        for step, batch in enumerate(metrics.get("batch_metrics") or [],
                                     total_batches_processed + 1):
            values = []
            for name, value in (batch or {}).items():
                scalar = value if type(value) is float else _scalar(value)
                if scalar is not None:
                    tag = tags.get(name)
                    if tag is None:
                        tag = tags[name] = f"Determined/{name}"
                    values.append((tag, scalar))
            if values:
                events.append((step, values))
        if events:
            self.writer.add_scalar_events(events)
        self.writer.reset()

    def on_validation_step_end(self, step_id: int, total_batches_processed: int,
                               metrics: Dict[str, Any]) -> None:
        """``metrics`` maps validation metric names to values."""
        for name, value in metrics.items():
            scalar = _scalar(value)
            if scalar is None:
                continue
            tag = name if name.startswith("val") else f"val_{name}"
            self.writer.add_scalar(f"Determined/{tag}", scalar, total_batches_processed)
        self.writer.reset()
