"""The slot rules both adapters follow (``engine/_slots.py``) and the deadlock rule of the
core: one rule for the local driver and the master."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from determined import engine
from determined.engine import ExperimentCore, TrialState

from test_engine_core import make_config


@pytest.mark.parametrize("slots,max_slots,per_trial,expected", [
    (8, None, 1, 8), (8, None, 3, 2), (8, 4, 2, 2), (8, 16, 2, 4), (1, None, 2, 0),
])
def test_capacity(slots: int, max_slots: Any, per_trial: int, expected: int) -> None:
    assert engine.capacity(slots, max_slots, per_trial) == expected


def release(**kw: Any) -> bool:
    base: Dict[str, Any] = {"wanting": 0, "running": 2, "waiting": 1, "free_slots": 0,
                            "slots_per_trial": 1}
    base.update(kw)
    return engine.release_waiting(**base)


def test_waiting_trials_release_when_a_trial_wants_a_slot_none_is_free_for() -> None:
    assert release(wanting=1, free_slots=0)
    assert not release(wanting=1, free_slots=1)
    assert release(wanting=1, free_slots=1, slots_per_trial=2)  # one slot is not enough
    assert not release(wanting=1, waiting=0)  # nothing to release


def test_every_running_trial_waiting_releases_even_with_nothing_queued() -> None:
    """Nothing would wake them: they stop and the core decides (was local only; the
    master kept the slots forever)."""
    assert release(wanting=0, running=2, waiting=2)
    assert not release(wanting=0, running=2, waiting=1)  # another trial may send work


def test_a_child_waiting_on_an_idle_parent_ends_the_search_with_error() -> None:
    """The warm-start child can never start once its parent idles with no checkpoint
    coming: the core ends the search (it used to raise in the local driver and wait
    forever on the master)."""
    core = ExperimentCore(make_config("single"))
    core.start()
    parent = core.trial(1)
    # A child of trial 1 that waits for a checkpoint trial 1 will never write.
    child = engine.CoreTrial(2, {"global_batch_size": 4, "lr": 0.5}, 3, checkpoint_of=1,
                             arrival=2)
    core.trials[2] = child
    parent.ops.clear()  # the searcher sends it nothing
    core.trial_started(1)
    assert core.next_op(1) is None and parent.state is TrialState.WAITING
    assert core.schedulable() == []  # the child waits for a checkpoint
    core.stop_trial(1)
    effects = core.trial_exited(1, code=0)
    assert core.finished and core.state.value == "ERROR"
    assert "no trial can start" in core.reason
    assert parent.state is child.state is TrialState.CANCELED
    assert any(isinstance(e, engine.FinishExperiment) and e.state == "ERROR" for e in effects)

