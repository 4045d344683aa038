"""The platform's own metric writer: scalar event files without any framework."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from determined.tensorboard._paths import local_event_dir
from determined.tensorboard.metric_writers import MetricWriter

__all__ = ["EventFileWriter"]


class EventFileWriter(MetricWriter):
    """Writes scalars to a new event file in ``log_dir`` (default: the trial's)."""

    def __init__(self, log_dir: Optional[str] = None):
        self.log_dir = log_dir or local_event_dir()
        self._writer: Any = None

    def add_scalar(self, name: str, value: Any, step: int) -> None:
        self.add_scalars(step, [(name, value)])

    def add_scalars(self, step: int, values: List[Tuple[str, float]]) -> None:
        self._events_writer().add_scalars(step, values)

    def add_scalar_events(self, events: List[Tuple[int, List[Tuple[str, float]]]]) -> None:
        self._events_writer().add_events(events)

    def _events_writer(self) -> Any:
        if self._writer is None:
            # Imported here: ``import determined`` must not pay for TensorBoard's protobufs
            # (trial processes forked from the zygote have them already).
            from determined.tensorboard._events import ScalarEventWriter

            self._writer = ScalarEventWriter(self.log_dir)
        return self._writer

    def reset(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
