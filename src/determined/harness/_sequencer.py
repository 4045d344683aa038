"""Choose the next workload for a trial from its searcher operation (SPEC 1.3).

Pure bookkeeping: counters of batches since the last validation and checkpoint,
and the flags that force a validation or checkpoint. The runner feeds it what
happened; it answers what to do next.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from determined.harness._workload import Kind

__all__ = ["Sequencer", "Next"]


@dataclasses.dataclass(frozen=True)
class Next:
    kind: Kind
    num_batches: int = 0


@dataclasses.dataclass
class Sequencer:
    """Tracks one trial's position and picks workloads.

    Args:
        scheduling_unit: the most batches one RUN_STEP may train.
        min_validation_period: batches between validations, or None.
        min_checkpoint_period: batches between checkpoints, or None.
        batches_trained: batches the trial has already trained (after a restore).
        need_initial_validation: validate before training (perform_initial_validation).
    """

    scheduling_unit: int
    min_validation_period: Optional[int] = None
    min_checkpoint_period: Optional[int] = None
    batches_trained: int = 0
    need_initial_validation: bool = False
    since_validation: int = 0
    since_checkpoint: int = 0
    need_post_validation_checkpoint: bool = False
    stop_requested: bool = False

    def next_for_train(self, target_batches: int) -> Optional[Next]:
        """The next workload while a ``Train`` op is current; None once it is done."""
        forced = self._forced()
        if forced is not None:
            return forced
        left = target_batches - self.batches_trained
        if left <= 0:
            return None
        limits = [left, self.scheduling_unit]
        if self.min_validation_period:
            limits.append(self.min_validation_period - self.since_validation)
        if self.min_checkpoint_period:
            limits.append(self.min_checkpoint_period - self.since_checkpoint)
        return Next(Kind.RUN_STEP, max(1, min(limits)))

    def next_for_validate(self) -> Next:
        forced = self._forced()
        if forced is not None:
            return forced
        if self.since_checkpoint > 0:
            return Next(Kind.CHECKPOINT_MODEL)
        return Next(Kind.COMPUTE_VALIDATION_METRICS)

    def next_for_checkpoint(self) -> Optional[Next]:
        if self.since_checkpoint > 0:
            return Next(Kind.CHECKPOINT_MODEL)
        return None

    def _forced(self) -> Optional[Next]:
        if self.need_initial_validation:
            return Next(Kind.COMPUTE_VALIDATION_METRICS)
        if (self.stop_requested or self.need_post_validation_checkpoint) and self.since_checkpoint > 0:
            return Next(Kind.CHECKPOINT_MODEL)
        if self.min_validation_period and self.since_validation >= self.min_validation_period:
            return Next(Kind.COMPUTE_VALIDATION_METRICS)
        if self.min_checkpoint_period and self.since_checkpoint >= self.min_checkpoint_period:
            return Next(Kind.CHECKPOINT_MODEL)
        return None

    # ---- what happened

    def trained(self, num_batches: int) -> None:
        self.batches_trained += num_batches
        self.since_validation += num_batches
        self.since_checkpoint += num_batches

    def validated(self, post_checkpoint: bool) -> None:
        """A validation finished; ``post_checkpoint`` says whether the policy wants one."""
        self.need_initial_validation = False
        self.since_validation = 0
        if self.since_checkpoint > 0 and post_checkpoint:
            self.need_post_validation_checkpoint = True

    def checkpointed(self) -> None:
        self.since_checkpoint = 0
        self.need_post_validation_checkpoint = False
