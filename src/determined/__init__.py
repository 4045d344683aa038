"""Determined: a pure-Python deep-learning training platform.

Framework APIs live in subpackages imported on demand: ``determined.pytorch``,
``determined.keras``, ``determined.estimator``, ``determined.tensorflow``.
Importing ``determined`` itself imports no deep-learning framework.

The low-level controller API of upstream 0.13 (``Trial``, ``TrialController``,
``CallbackTrialController``, ``EnvContext``, ...) is here too, for trials written
against it (``determined._trial_controller``).
"""

__version__ = "0.13.0"

from determined import errors, util  # noqa: E402
from determined._env_context import EnvContext, ExperimentConfig, RendezvousInfo  # noqa: E402
from determined._local_execution import (  # noqa: E402
    _local_execution_manager,
    _make_local_execution_env,
)
from determined._trial_controller import (  # noqa: E402
    CallbackTrialController,
    LoopTrialController,
    NativeContext,
    Trial,
    TrialController,
)
from determined.config import Categorical, Constant, Double, Integer, Log  # noqa: E402
from determined.harness import DistributedContext, TrialContext  # noqa: E402

__all__ = [
    "CallbackTrialController",
    "Categorical",
    "Constant",
    "DistributedContext",
    "Double",
    "EnvContext",
    "ExperimentConfig",
    "Integer",
    "Log",
    "LoopTrialController",
    "NativeContext",
    "RendezvousInfo",
    "Trial",
    "TrialContext",
    "TrialController",
    "__version__",
    "errors",
    "util",
]
