"""``MLPTrial`` with the benchmark's step clock (the ``ours`` variant of worker.py)."""

from _workloads import StepClock
from model_def import MLPTrial

CLOCK = StepClock(0)


class ClockedTrial(MLPTrial):
    def __init__(self, context):
        super().__init__(context)
        CLOCK.__init__(context.get_hparam("batches"))

    def train_batch(self, batch, epoch_idx, batch_idx):
        CLOCK.step_started(batch_idx)
        out = super().train_batch(batch, epoch_idx, batch_idx)
        CLOCK.step_ended(batch_idx)
        return out
