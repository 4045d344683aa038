"""tf.estimator trials: :class:`EstimatorTrial`, its context, ``make_metric`` and ``RunHook``."""

from determined.estimator._context import (
    EstimatorContext,
    EstimatorExperimentalContext,
    EstimatorTrialContext,
)
from determined.estimator._hooks import RunHook
from determined.estimator._load import load_estimator_from_checkpoint_path
from determined.estimator._metric import MetricReducer
from determined.estimator._native import EstimatorNativeContext
from determined.estimator._trial import EstimatorTrial

__all__ = [
    "EstimatorContext",
    "EstimatorExperimentalContext",
    "EstimatorNativeContext",
    "EstimatorTrial",
    "EstimatorTrialContext",
    "MetricReducer",
    "RunHook",
    "load_estimator_from_checkpoint_path",
]
