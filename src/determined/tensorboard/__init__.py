"""TensorBoard: every trial's metrics as event files, synced to checkpoint storage.

Each trial process writes event files to its own directory (:func:`get_base_path`,
``$DET_TENSORBOARD_DIR``):
the platform's training and validation metrics (tags ``Determined/<name>`` and
``Determined/val_<name>``, see :mod:`~determined.tensorboard.metric_writers`), plus what
``TorchWriter``, ``TFKerasTensorBoard`` and Estimator summaries write there. After
every workload the chief copies new or grown files to checkpoint storage under
``tensorboard/<owner>/experiment/<exp_id>/trial/<trial_id>/`` (:func:`get_sync_path`;
the owner is the master's cluster id, and older experiments keep
``tensorboard/experiment/...``), where ``det tensorboard start`` reads them, after the
trial or experiment ended too.

Upstream's names keep their 0.13 parameters: ``build(env, checkpoint_config,
container_path=None)`` returns a :class:`TensorboardManager` for a ``checkpoint_storage``
section (:class:`SharedFSTensorboardManager`, :class:`S3TensorboardManager`, GCS).
"""

from determined.tensorboard._manager import (
    S3TensorboardManager,
    SharedFSTensorboardManager,
    TensorboardManager,
)
from determined.tensorboard._paths import (
    ENV_VAR,
    STORAGE_DIR,
    env_sync_path,
    experiment_sync_path,
    get_base_path,
    get_sync_path,
    local_event_dir,
    prepare_base_path,
    trial_sync_path,
)
from determined.tensorboard._trial import TrialTensorboard, build, build_trial_tensorboard
from determined.tensorboard.metric_writers import BatchMetricWriter, MetricWriter

__all__ = [
    "BatchMetricWriter",
    "ENV_VAR",
    "MetricWriter",
    "S3TensorboardManager",
    "STORAGE_DIR",
    "SharedFSTensorboardManager",
    "TensorboardManager",
    "TrialTensorboard",
    "build",
    "build_trial_tensorboard",
    "env_sync_path",
    "experiment_sync_path",
    "get_base_path",
    "get_sync_path",
    "local_event_dir",
    "prepare_base_path",
    "trial_sync_path",
]
