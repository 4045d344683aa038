"""``TFWriter``: a ``tf.summary`` file writer on the trial's event directory."""

from __future__ import annotations

from typing import Any

from determined import tensorboard
from determined.tensorboard._paths import local_event_dir

__all__ = ["TFWriter"]


class TFWriter(tensorboard.MetricWriter):
    """Writes scalars with TensorFlow's summary API to the trial's TensorBoard directory."""

    def __init__(self) -> None:
        import tensorflow as tf

        self._tf = tf
        self.writer: Any = tf.summary.create_file_writer(local_event_dir())

    def add_scalar(self, name: str, value: Any, step: int) -> None:
        with self.writer.as_default():
            self._tf.summary.scalar(name, value, step=step)

    def reset(self) -> None:
        self.writer.flush()
