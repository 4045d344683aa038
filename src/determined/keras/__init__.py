"""tf.keras trials: :class:`TFKerasTrial`, its context, data inputs and callbacks.

Status (Keras 2.15 / TensorFlow 2.15):

- Eager execution (the TF 2 default) is the main path: ``model.train_step`` and
  ``model.test_step`` run as ``tf.function``s, one batch per call; training
  metrics are per-batch values, validation metrics cover the whole input.
- Graph mode (``tf.compat.v1.disable_eager_execution()`` in the trial's
  ``__init__``) runs through Keras's own ``train_on_batch``/``test_on_batch`` and
  needs a ``tf.keras.optimizers.legacy`` optimizer; it is tested for arrays and
  tf.data inputs, training, validation and resuming.
- Resuming restores weights, optimizer state, the Python/NumPy RNG states and the
  data position: arrays and Sequences continue at the exact batch (bit-identical
  to an uninterrupted run when the model has no random layers); a
  ``tf.data.Dataset`` or Python generator restarts its epoch. Keras callback state
  and TensorFlow's in-graph random streams (dropout) are not checkpointed.
- One slot per trial (no Horovod).
"""

from determined.keras import _tf_keras_patches
from determined.keras._compat import (
    TFKerasContext,
    TFKerasTrainConfig,
    TFKerasTrialController,
    _get_multi_gpu_model_and_optimizer,
    _init_input_managers,
)
from determined.keras._context import TFKerasExperimentalContext, TFKerasTrialContext
from determined.keras._data import (
    ArrayLike,
    InputData,
    SequenceAdapter,
    _adapt_keras_data,
    _ArrayLikeAdapter,
    _get_x_y_and_sample_weight,
    _SequenceWithOffset,
)
from determined.keras._load import load_model_from_checkpoint_path
from determined.keras._native import TFKerasNativeContext
from determined.keras._tensorboard import TFKerasTensorBoard
from determined.keras._trial import TFKerasTrial

__all__ = [
    "ArrayLike",
    "InputData",
    "SequenceAdapter",
    "TFKerasContext",
    "TFKerasTrainConfig",
    "TFKerasTrialController",
    "TFKerasExperimentalContext",
    "TFKerasNativeContext",
    "TFKerasTensorBoard",
    "TFKerasTrial",
    "TFKerasTrialContext",
    "load_model_from_checkpoint_path",
]
