"""A trial's scheduler task id is built and read by one helper."""

import pytest

from determined.master.scheduler import trial_of_task, trial_task_id


def test_a_trials_task_id_reads_back() -> None:
    assert trial_task_id(42) == "trial-42"
    assert trial_of_task(trial_task_id(42)) == 42


@pytest.mark.parametrize("task_id", ["cmd-3", "trial-", "trial-x", "trial--1", "exp-1", ""])
def test_other_task_ids_are_no_trial(task_id: str) -> None:
    assert trial_of_task(task_id) is None
