"""Trials and rollback, on every backend."""

import datetime
import math

import pytest

from determined.master.db import ConflictError, NotFoundError, Store


def test_create_get_list(store: Store, make_experiment) -> None:
    exp = make_experiment()
    a = store.create_trial(exp, "req-a", {"lr": 0.1, "layers": [1, 2]}, seed=2**31 - 1)
    b = store.create_trial(exp, "req-b", {"lr": 0.2}, seed=0, warm_start_checkpoint="ckpt-uuid")
    trial = store.get_trial(a)
    assert (trial.experiment_id, trial.request_id, trial.state) == (exp, "req-a", "ACTIVE")
    assert trial.hparams == {"lr": 0.1, "layers": [1, 2]} and trial.seed == 2**31 - 1
    assert (trial.restarts, trial.total_batches, trial.end_time) == (0, 0, None)
    assert trial.latest_checkpoint is None and trial.best_validation is None
    assert store.get_trial(b).warm_start_checkpoint == "ckpt-uuid"
    assert [t.id for t in store.list_trials(exp)] == [a, b]
    assert store.list_trials(make_experiment()) == []
    assert store.trial_by_request(exp, "req-b").id == b
    assert store.trial_by_request(exp, "nope") is None


def test_create_errors(store: Store, make_experiment) -> None:
    exp = make_experiment()
    store.create_trial(exp, "r1", {}, 1)
    with pytest.raises(ConflictError, match="request_id 'r1'"):
        store.create_trial(exp, "r1", {}, 2)
    store.create_trial(make_experiment(), "r1", {}, 1)  # unique per experiment only
    with pytest.raises(NotFoundError, match="experiment 999"):
        store.create_trial(999, "r1", {}, 1)
    with pytest.raises(ValueError, match="seed"):
        store.create_trial(exp, "r2", {}, -1)
    with pytest.raises(ValueError, match="hparams"):
        store.create_trial(exp, "r2", None, 1)
    with pytest.raises(NotFoundError, match="trial 12345"):
        store.get_trial(12345)


def test_update_trial(store: Store, trial_id: int) -> None:
    updated = store.update_trial(
        trial_id, restarts=2, total_batches=300, latest_checkpoint="c9", best_validation=0.25
    )
    assert (updated.restarts, updated.total_batches) == (2, 300)
    assert (updated.latest_checkpoint, updated.best_validation) == ("c9", 0.25)
    assert store.get_trial(trial_id) == updated
    assert store.update_trial(trial_id, best_validation=math.inf).best_validation == math.inf
    when = datetime.datetime(2021, 5, 6, tzinfo=datetime.timezone.utc)
    done = store.update_trial(trial_id, state="COMPLETED", end_time=when)
    assert done.state == "COMPLETED" and done.end_time == when
    with pytest.raises(ValueError, match="restarts"):
        store.update_trial(trial_id, restarts=-1)
    with pytest.raises(NotFoundError):
        store.update_trial(999, restarts=1)


def test_a_trials_error_is_stored_and_kept(store: Store, trial_id: int) -> None:
    assert store.get_trial(trial_id).error is None  # never failed
    why = "Trial failed (exit code 1): its last output:\nno GPU found\n" + "é" * 3000
    assert store.update_trial(trial_id, error=why).error == why
    assert store.update_trial(trial_id, restarts=1).error == why  # until the next failure
    assert store.update_trial(trial_id, state="ERROR").error == why
    with pytest.raises(ValueError, match="error"):
        store.update_trial(trial_id, error=7)


def test_naive_times_are_utc(store: Store, trial_id: int) -> None:
    naive = datetime.datetime(2021, 5, 6, 7, 8, 9)
    end = store.update_trial(trial_id, end_time=naive).end_time
    assert end == naive.replace(tzinfo=datetime.timezone.utc)
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    aware = datetime.datetime(2021, 5, 6, 9, 8, 9, tzinfo=plus2)
    end = store.update_trial(trial_id, end_time=aware).end_time
    assert end == naive.replace(tzinfo=datetime.timezone.utc)
    assert end.utcoffset() == datetime.timedelta(0)


def test_rollback(store: Store, trial_id: int) -> None:
    for batches in (100, 200, 300):
        store.add_training_metrics(trial_id, batches, {"loss": 1.0 / batches})
        store.add_validation_metrics(trial_id, batches, {"error": 0.5})
        store.add_checkpoint(f"c{batches}", trial_id, batches, {}, {}, "f", "cloudpickle")
    store.add_checkpoint("c350", trial_id, 350, {}, {}, "f", "cloudpickle", state="ACTIVE")
    store.add_training_metrics(trial_id, 350, {"loss": 0.1})
    store.update_trial(trial_id, total_batches=350, latest_checkpoint="c300")

    max_id_before = max(r.id for r in store.list_metrics(trial_id))
    orphaned = store.rollback_trial(trial_id, 200)

    assert orphaned == ["c300"]  # the ACTIVE one had no complete files to orphan
    assert [(r.kind, r.total_batches) for r in store.list_metrics(trial_id)] == [
        ("training", 100), ("validation", 100), ("training", 200), ("validation", 200),
    ]
    assert [c.uuid for c in store.list_checkpoints(trial_id=trial_id)] == ["c100", "c200"]
    trial = store.get_trial(trial_id)
    assert (trial.total_batches, trial.latest_checkpoint) == (200, "c200")
    assert store.latest_checkpoint(trial_id).uuid == "c200"
    # After the rollback the restarted trial reports the lost workloads again, under
    # new ids: a live tail past the deleted rows' ids still sees them.
    deleted_ids = max_id_before
    assert store.add_training_metrics(trial_id, 300, {"loss": 0.2})
    again = store.list_metrics(trial_id, kind="training")[-1]
    assert again.metrics == {"loss": 0.2}
    assert again.id > deleted_ids, (again.id, deleted_ids)

    assert store.rollback_trial(trial_id, 0) == ["c100", "c200"]
    assert store.list_metrics(trial_id) == [] and store.latest_checkpoint(trial_id) is None
    assert store.get_trial(trial_id).latest_checkpoint is None
    with pytest.raises(NotFoundError):
        store.rollback_trial(999, 0)
