"""Scalar event files in TensorBoard's format, written without TensorFlow.

Uses the ``tensorboard`` package's protobufs and record framing only (importing them
imports no TensorFlow), so PyTorch trials write event files with TF installed or not.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Optional

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

__all__ = ["ScalarEventWriter"]

_counter = 0


class ScalarEventWriter:
    """Appends scalar summaries to one new ``events.out.tfevents.*`` file in ``log_dir``.

    Example:
        >>> w = ScalarEventWriter("/tmp/tb")
        >>> w.add_scalar("Determined/loss", 0.5, step=100)
        >>> w.flush()
    """

    def __init__(self, log_dir: str):
        global _counter
        os.makedirs(log_dir, exist_ok=True)
        _counter += 1
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                f"{os.getpid()}.{_counter}")
        self.path = os.path.join(log_dir, name)
        self._file = open(self.path, "ab")
        self._records: Optional[RecordWriter] = RecordWriter(self._file)
        self._write(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))
        self.flush()

    def _write(self, event: "event_pb2.Event") -> None:
        if self._records is None:
            raise ValueError(f"Expected an open event file. Received: {self.path} (closed)")
        self._records.write(event.SerializeToString())

    def add_scalar(self, tag: str, value: float, step: int,
                   wall_time: Optional[float] = None) -> None:
        """Record ``value`` under ``tag`` at x = ``step``."""
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(
            tag=tag, simple_value=float(value))])
        self._write(event_pb2.Event(wall_time=wall_time or time.time(), step=int(step),
                                    summary=summary))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if self._records is not None:
            self._file.flush()
            self._file.close()
            self._records = None
