"""tf.keras trials: :class:`TFKerasTrial`, its context, data inputs and callbacks."""

from determined.keras._context import TFKerasExperimentalContext, TFKerasTrialContext
from determined.keras._data import SequenceAdapter
from determined.keras._load import load_model_from_checkpoint_path
from determined.keras._native import TFKerasNativeContext
from determined.keras._tensorboard import TFKerasTensorBoard
from determined.keras._trial import TFKerasTrial

__all__ = [
    "SequenceAdapter",
    "TFKerasExperimentalContext",
    "TFKerasNativeContext",
    "TFKerasTensorBoard",
    "TFKerasTrial",
    "TFKerasTrialContext",
    "load_model_from_checkpoint_path",
]
