"""Checkpoint records, on every backend."""

import math

import pytest

from determined.master.db import ConflictError, NotFoundError, Store


def _add(store: Store, uuid: str, trial: int, batches: int, **kwargs):
    return store.add_checkpoint(
        uuid, trial, batches, {"state_dict.pth": 1234, "code/model_def.py": 56},
        kwargs.pop("metadata", {}), "torch-2.1", "cloudpickle", **kwargs,
    )


def test_add_and_get(store: Store, trial_id: int) -> None:
    added = _add(store, "u-1", trial_id, 100, metadata={"note": "first"})
    got = store.get_checkpoint("u-1")
    assert got == added
    exp = store.get_trial(trial_id).experiment_id
    assert (got.trial_id, got.experiment_id, got.total_batches) == (trial_id, exp, 100)
    assert got.resources == {"state_dict.pth": 1234, "code/model_def.py": 56}
    assert got.metadata == {"note": "first"}
    assert (got.framework, got.format) == ("torch-2.1", "cloudpickle")
    assert got.state == "COMPLETED"
    assert got.determined_version == "0.13.0" and got.validation is None
    assert got.end_time is not None and got.start_time.tzinfo is not None
    with pytest.raises(NotFoundError, match="checkpoint 'nope'"):
        store.get_checkpoint("nope")
    with pytest.raises(ConflictError, match="u-1"):
        _add(store, "u-1", trial_id, 200)
    with pytest.raises(NotFoundError, match="trial 999"):
        _add(store, "u-2", 999, 100)
    with pytest.raises(ValueError, match="DELETED"):
        _add(store, "u-3", trial_id, 100, state="DELETED")


def test_validation_at_same_batch(store: Store, trial_id: int) -> None:
    store.add_validation_metrics(trial_id, 100, {"error": 0.3, "nan": math.nan})
    store.add_validation_metrics(trial_id, 200, {"error": 0.2})
    store.add_training_metrics(trial_id, 300, {"loss": 0.1})
    _add(store, "a", trial_id, 100)
    _add(store, "b", trial_id, 300)
    a = store.get_checkpoint("a").validation
    assert a["error"] == 0.3 and math.isnan(a["nan"])
    assert store.get_checkpoint("b").validation is None  # training metrics do not count
    store.add_validation_metrics(trial_id, 300, {"error": 0.1})  # validated after checkpointing
    assert store.get_checkpoint("b").validation == {"error": 0.1}
    assert [c.validation["error"] for c in store.list_checkpoints(trial_id=trial_id)] == [0.3, 0.1]


def test_list_and_latest(store: Store, make_experiment) -> None:
    e1, e2 = make_experiment(), make_experiment()
    t1 = store.create_trial(e1, "r1", {}, 1)
    t2 = store.create_trial(e1, "r2", {}, 1)
    t3 = store.create_trial(e2, "r1", {}, 1)
    _add(store, "t1-100", t1, 100)
    _add(store, "t2-100", t2, 100)
    _add(store, "t1-200", t1, 200)
    _add(store, "t3-100", t3, 100)
    _add(store, "t1-300", t1, 300, state="ACTIVE")
    store.set_checkpoint_state("t2-100", "DELETED")
    uuids = lambda cs: [c.uuid for c in cs]  # noqa: E731
    assert uuids(store.list_checkpoints()) == ["t1-100", "t2-100", "t1-200", "t3-100", "t1-300"]
    in_e1 = store.list_checkpoints(experiment_id=e1)
    assert uuids(in_e1) == ["t1-100", "t2-100", "t1-200", "t1-300"]
    completed = store.list_checkpoints(experiment_id=e1, states=["COMPLETED"])
    assert uuids(completed) == ["t1-100", "t1-200"]
    assert uuids(store.list_checkpoints(trial_id=t1, states="ACTIVE")) == ["t1-300"]
    assert uuids(store.list_checkpoints(experiment_id=e2, trial_id=t1)) == []
    with pytest.raises(ValueError, match="Received: state='GONE'"):
        store.list_checkpoints(states=["GONE"])
    assert store.latest_checkpoint(t1).uuid == "t1-200"  # the ACTIVE one is not usable yet
    assert store.latest_checkpoint(t2) is None
    store.set_checkpoint_state("t1-300", "COMPLETED")
    assert store.latest_checkpoint(t1).uuid == "t1-300"


def test_metadata(store: Store, trial_id: int) -> None:
    _add(store, "m", trial_id, 1, metadata={"a": 1, "b": {"x": 1}})
    merged = store.add_checkpoint_metadata("m", {"b": {"y": 2}, "c": 3})
    assert merged == {"a": 1, "b": {"y": 2}, "c": 3}
    assert store.remove_checkpoint_metadata("m", ["a", "missing"]) == {"b": {"y": 2}, "c": 3}
    assert store.get_checkpoint("m").metadata == {"b": {"y": 2}, "c": 3}
    with pytest.raises(NotFoundError):
        store.add_checkpoint_metadata("nope", {})
    with pytest.raises(ValueError, match="metadata"):
        store.add_checkpoint_metadata("m", ["not", "a", "dict"])
