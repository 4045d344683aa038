"""Upstream 0.13's ``determined_common.experimental``: the SDK, as ``determined.experimental``."""

from determined.experimental import (
    Checkpoint,
    Determined,
    ExperimentReference,
    Model,
    ModelOrderBy,
    ModelSortBy,
    TrialReference,
)
from determined_common.experimental._session import Session

__all__ = [
    "Checkpoint",
    "Determined",
    "ExperimentReference",
    "Model",
    "ModelOrderBy",
    "ModelSortBy",
    "Session",
    "TrialReference",
]
