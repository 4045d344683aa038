"""The user-facing tf.keras trial base class."""

from __future__ import annotations

import abc
from typing import Any, List

from determined._trial_controller import Trial
from determined.keras._compat import TFKerasTrialController
from determined.keras._context import TFKerasTrialContext

__all__ = ["TFKerasTrial"]


class TFKerasTrial(Trial):
    """Subclass this to train a ``tf.keras`` model with the platform.

    TensorFlow 2 trials execute eagerly by default; to run a trial in graph mode,
    call ``tf.compat.v1.disable_eager_execution()`` at the top of ``__init__``
    (it affects the whole trial process).

    Example::

        class DigitsTrial(det.keras.TFKerasTrial):
            def __init__(self, context):
                self.context = context

            def build_model(self):
                model = self.context.wrap_model(tf.keras.Sequential([...]))
                model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                              metrics=["accuracy"])
                return model

            def build_training_data_loader(self):
                return x_train, y_train

            def build_validation_data_loader(self):
                return x_val, y_val
    """

    trial_context_class = TFKerasTrialContext
    trial_controller_class = TFKerasTrialController  # upstream's name (not used to run it)

    def __init__(self, context: TFKerasTrialContext) -> None:
        """Store the context; override to set up state the other methods share."""
        self.context = context

    @abc.abstractmethod
    def build_model(self) -> Any:
        """Create the model, wrap it with ``self.context.wrap_model``, compile it and return it."""

    @abc.abstractmethod
    def build_training_data_loader(self) -> Any:
        """Return the training data, one of:

        1. ``(x, y)`` arrays: ``x`` an array, a list of arrays (several inputs) or a
           dict from input names to arrays; ``y`` an array.
        2. ``(x, y, sample_weights)`` arrays.
        3. a ``tf.data.Dataset`` of ``(inputs, targets[, sample_weights])`` batches,
           wrapped with ``self.context.wrap_dataset`` (its epoch restarts on resume).
        4. a ``tf.keras.utils.Sequence`` of such batches.
        5. a :class:`~determined.keras.SequenceAdapter` around a Sequence.

        Arrays are split into batches of ``context.get_per_slot_batch_size()``.
        """

    @abc.abstractmethod
    def build_validation_data_loader(self) -> Any:
        """Return the validation data (same types as :meth:`build_training_data_loader`);
        every validation evaluates all of it."""

    def session_config(self) -> Any:
        """The ``tf.compat.v1.ConfigProto`` for the session (graph mode); in eager mode
        its thread counts are applied when TensorFlow has not started yet."""
        import tensorflow as tf

        return tf.compat.v1.ConfigProto(allow_soft_placement=True)

    def keras_callbacks(self) -> List[Any]:
        """``tf.keras.callbacks.Callback`` objects used for the whole trial.

        Epochs follow the training loader's length. Callbacks should not call
        ``model.predict()``; setting ``model.stop_training = True`` asks the platform
        to stop the trial after the current workload.
        """
        return []
