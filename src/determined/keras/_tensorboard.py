"""TensorBoard for Keras trials with the log directory chosen by the platform (SPEC 8)."""

from __future__ import annotations

import logging
import os
from typing import Any

import tensorflow as tf

__all__ = ["TFKerasTensorBoard", "tensorboard_dir"]

logger = logging.getLogger("determined")


def tensorboard_dir(rank: int = 0) -> str:
    """Where trial processes write tfevent files: ``$DET_TENSORBOARD_DIR`` or
    ``/tmp/tensorboard``, with ``-<rank>`` appended for non-chief ranks."""
    base = os.environ.get("DET_TENSORBOARD_DIR") or "/tmp/tensorboard"
    return base if rank == 0 else f"{base}-{rank}"


class TFKerasTensorBoard(tf.keras.callbacks.TensorBoard):
    """``tf.keras.callbacks.TensorBoard`` writing where the platform collects event files.

    Accepts every argument of the Keras callback; ``log_dir`` is ignored.
    Add it to :meth:`TFKerasTrial.keras_callbacks`.

    Example::

        def keras_callbacks(self):
            return [det.keras.TFKerasTensorBoard(update_freq="batch", histogram_freq=1)]
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or "log_dir" in kwargs:
            given = kwargs.pop("log_dir", args[0] if args else None)
            args = args[1:]
            logger.warning("TFKerasTensorBoard ignores log_dir=%r; using %s", given, tensorboard_dir())
        super().__init__(tensorboard_dir(), *args, **kwargs)

    def _set_determined_rank(self, rank: int) -> None:
        self.log_dir = tensorboard_dir(rank)
