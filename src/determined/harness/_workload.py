"""Workloads: the only four things trial code is ever asked to do."""

from __future__ import annotations

import dataclasses
import enum

__all__ = ["Kind", "Workload"]


class Kind(str, enum.Enum):
    RUN_STEP = "RUN_STEP"
    COMPUTE_VALIDATION_METRICS = "COMPUTE_VALIDATION_METRICS"
    CHECKPOINT_MODEL = "CHECKPOINT_MODEL"
    TERMINATE = "TERMINATE"


@dataclasses.dataclass(frozen=True)
class Workload:
    kind: Kind
    step_id: int
    num_batches: int = 0
    total_batches_processed: int = 0
