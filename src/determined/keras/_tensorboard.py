"""TensorBoard for Keras trials with the log directory chosen by the platform (SPEC 8)."""

from __future__ import annotations

import logging
from typing import Any

import tensorflow as tf

from determined.tensorflow._common import tensorboard_dir

__all__ = ["TFKerasTensorBoard", "tensorboard_dir"]

logger = logging.getLogger("determined")


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
