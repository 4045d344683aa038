"""Determined: a pure-Python deep-learning training platform.

Framework APIs live in subpackages imported on demand: ``determined.pytorch``,
``determined.keras``, ``determined.estimator``, ``determined.tensorflow``.
Importing ``determined`` itself imports no deep-learning framework.

The low-level controller API of upstream 0.13 (``Trial``, ``TrialController``,
``CallbackTrialController``, ``EnvContext``, ...) is here too, for trials written
against it (``determined._trial_controller``).
"""

__version__ = "0.13.0"

import importlib
from typing import TYPE_CHECKING, Any, List

# Upstream's names load on first use, so ``import determined.engine`` or
# ``determined.master`` does not pull in the trial runner (and numpy) through here.
_LAZY = {
    "errors": ("determined.errors", None),
    "util": ("determined.util", None),
    "EnvContext": ("determined._env_context", "EnvContext"),
    "ExperimentConfig": ("determined._env_context", "ExperimentConfig"),
    "RendezvousInfo": ("determined._env_context", "RendezvousInfo"),
    "_local_execution_manager": ("determined._local_execution", "_local_execution_manager"),
    "_make_local_execution_env": ("determined._local_execution", "_make_local_execution_env"),
    "CallbackTrialController": ("determined._trial_controller", "CallbackTrialController"),
    "LoopTrialController": ("determined._trial_controller", "LoopTrialController"),
    "NativeContext": ("determined._trial_controller", "NativeContext"),
    "Trial": ("determined._trial_controller", "Trial"),
    "TrialController": ("determined._trial_controller", "TrialController"),
    "Categorical": ("determined.config", "Categorical"),
    "Constant": ("determined.config", "Constant"),
    "Double": ("determined.config", "Double"),
    "Integer": ("determined.config", "Integer"),
    "Log": ("determined.config", "Log"),
    "DistributedContext": ("determined.harness", "DistributedContext"),
    "TrialContext": ("determined.harness", "TrialContext"),
    # Determined 0.38's Core API.
    "core": ("determined.core", None),
    "ClusterInfo": ("determined._info", "ClusterInfo"),
    "TrialInfo": ("determined._info", "TrialInfo"),
    "get_cluster_info": ("determined._info", "get_cluster_info"),
    "InvalidHP": ("determined.errors", "InvalidHP"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'determined' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:
    from determined import core, errors, util  # noqa: F401
    from determined._info import ClusterInfo, TrialInfo, get_cluster_info  # noqa: F401
    from determined.errors import InvalidHP  # noqa: F401
    from determined._env_context import EnvContext, ExperimentConfig, RendezvousInfo  # noqa: F401
    from determined._local_execution import (  # noqa: F401
        _local_execution_manager,
        _make_local_execution_env,
    )
    from determined._trial_controller import (  # noqa: F401
        CallbackTrialController,
        LoopTrialController,
        NativeContext,
        Trial,
        TrialController,
    )
    from determined.config import Categorical, Constant, Double, Integer, Log  # noqa: F401
    from determined.harness import DistributedContext, TrialContext  # noqa: F401

__all__ = [
    "CallbackTrialController",
    "Categorical",
    "ClusterInfo",
    "Constant",
    "DistributedContext",
    "Double",
    "EnvContext",
    "ExperimentConfig",
    "Integer",
    "InvalidHP",
    "Log",
    "LoopTrialController",
    "NativeContext",
    "RendezvousInfo",
    "Trial",
    "TrialContext",
    "TrialController",
    "TrialInfo",
    "__version__",
    "core",
    "errors",
    "get_cluster_info",
    "util",
]
