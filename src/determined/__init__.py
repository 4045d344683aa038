"""Determined: a pure-Python deep-learning training platform.

Framework APIs live in subpackages imported on demand: ``determined.pytorch``,
``determined.keras``, ``determined.estimator``, ``determined.tensorflow``.
Importing ``determined`` itself imports no deep-learning framework.
"""

__version__ = "0.13.0"

from determined.config import Categorical, Constant, Double, Integer, Log  # noqa: E402
from determined.harness import DistributedContext, TrialContext  # noqa: E402

__all__ = [
    "Categorical",
    "Constant",
    "DistributedContext",
    "Double",
    "Integer",
    "Log",
    "TrialContext",
    "__version__",
]
