"""The slot rules both adapters follow (pure): how many trials an experiment's slots
run at once, and when its trials that wait for work give their slots back."""

from __future__ import annotations

from typing import Optional

__all__ = ["capacity", "release_waiting"]


def capacity(slots: int, max_slots: Optional[int], slots_per_trial: int) -> int:
    """Trials that ``slots`` (at most ``max_slots`` of them) run at once."""
    usable = slots if max_slots is None else min(slots, int(max_slots))
    return max(0, usable) // max(1, slots_per_trial)


def release_waiting(*, wanting: int, running: int, waiting: int, free_slots: int,
                    slots_per_trial: int) -> bool:
    """Whether the experiment's WAITING trials (a process, no work) give their slots back.

    Args:
        wanting: trials that want a slot now (``ExperimentCore.schedulable``).
        running: trials with a process; ``waiting`` of them wait for work.
        free_slots: slots the experiment could still take (its ``max_slots`` and the
            free slots of the machine or cluster).

    They do when a trial wants a slot none is free for, and when every running trial
    waits and none wants to start: nothing would ever wake them, so they stop and the
    core decides whether the search can go on (``ExperimentCore`` ends a search whose
    remaining trials can never start with ERROR).
    """
    if waiting == 0:
        return False
    if wanting:
        return free_slots < slots_per_trial
    return waiting == running
