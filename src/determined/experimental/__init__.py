"""Experimental APIs: the Native API, checkpoints as Python objects.

The per-framework Native APIs live in ``determined.experimental.keras`` and
``determined.experimental.estimator``; they import TensorFlow only when used.
"""

from determined.experimental._checkpoint import Checkpoint
from determined.experimental._client import Determined, ExperimentReference, TrialReference
from determined.experimental._model import Model, ModelOrderBy, ModelSortBy
from determined.experimental._native import Mode
from determined.experimental._trial_api import create, create_trial_instance
from determined.experimental._upstream import _load_trial_on_local, init_native, test_one_batch

__all__ = [
    "Checkpoint",
    "Determined",
    "ExperimentReference",
    "Mode",
    "Model",
    "ModelOrderBy",
    "ModelSortBy",
    "TrialReference",
    "create",
    "create_trial_instance",
    "init_native",
    "test_one_batch",
]
