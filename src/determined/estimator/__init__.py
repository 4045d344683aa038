"""tf.estimator trials: :class:`EstimatorTrial`, its context, ``make_metric`` and ``RunHook``.

Status (tensorflow-estimator 2.15):

- One ``Estimator.train`` call serves the whole trial, paused between workloads,
  so the input pipeline and session persist across training workloads.
  Validation runs ``Estimator.evaluate`` on a checkpoint of the live session.
- Checkpoints hold the TF checkpoint files and one SavedModel per serving input
  receiver function under ``<checkpoint>/<name>/`` (format ``saved_model``).
- Resuming restores every variable (weights, optimizer slots, global step) and
  the Python/NumPy RNG states; the input pipeline restarts from its beginning.
- ``num_inputs`` counts records from the batch dimension of the input pipeline.
- Estimator summaries are copied to the TensorBoard directory when the trial
  closes. One slot per trial (no Horovod).
"""

from determined.estimator import _estimator_patches
from determined.estimator._compat import (
    EstimatorTrialController,
    ServingInputReceiverFn,
    _cleanup_after_train_step,
    _cleanup_after_validation_step,
    _DistributedMetricMaker,
    _scan_checkpoint_directory,
    _SimpleMetricReducer,
    _update_checkpoint_path_in_state_file,
)
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
    "EstimatorTrialController",
    "MetricReducer",
    "RunHook",
    "ServingInputReceiverFn",
    "load_estimator_from_checkpoint_path",
]
