"""The store's registry, templates, slot flags and workload details on each backend."""

import pytest

from determined.master.db import ConflictError, NotFoundError


def _checkpoint(store, make_experiment, uuid="ck-1", state="COMPLETED"):
    trial_id = store.create_trial(make_experiment(), "r1", {"lr": 0.1}, seed=1)
    store.add_checkpoint(uuid, trial_id, 10, {"a": 1}, {}, "torch", "cloudpickle", state=state)
    return trial_id


def test_models_sort_filter_and_metadata(store):
    store.create_model("b-net", "second", {"team": "x"})
    store.create_model("a-net", "first")
    with pytest.raises(ConflictError):
        store.create_model("a-net")
    assert [m.name for m in store.list_models()] == ["a-net", "b-net"]
    assert [m.name for m in store.list_models("description", descending=True)] == ["b-net",
                                                                                   "a-net"]
    assert [m.name for m in store.list_models(name="B-")] == ["b-net"]
    assert [m.name for m in store.list_models(description="fir")] == ["a-net"]
    updated = store.update_model("b-net", metadata={"team": "y"})
    assert updated.metadata == {"team": "y"} and updated.description == "second"
    assert updated.last_updated_time >= updated.creation_time
    with pytest.raises(ValueError, match="sort_by"):
        store.list_models("owner")
    with pytest.raises(NotFoundError):
        store.get_model("c-net")


def test_versions_number_up_and_need_completed_checkpoints(store, make_experiment):
    _checkpoint(store, make_experiment)
    store.create_model("net")
    assert store.register_model_version("net", "ck-1").version == 1
    assert store.register_model_version("net", "ck-1").version == 2
    assert [v.version for v in store.list_model_versions("net")] == [2, 1]
    assert [v.version for v in store.list_model_versions("net", descending=False)] == [1, 2]
    assert store.get_model_version("net").version == 2
    assert store.get_model_version("net", 1).checkpoint_uuid == "ck-1"
    assert store.get_model("net").num_versions == 2
    assert store.registered_checkpoints(["ck-1", "other"]) == {"ck-1"}
    with pytest.raises(NotFoundError):
        store.get_model_version("net", 3)
    with pytest.raises(NotFoundError):
        store.register_model_version("net", "no-such")
    store.set_checkpoint_state("ck-1", "DELETED")
    with pytest.raises(ValueError, match="COMPLETED"):
        store.register_model_version("net", "ck-1")
    store.delete_model("net")
    assert store.registered_checkpoints() == set()


def test_templates(store):
    store.set_template("base", {"max_restarts": 1})
    store.set_template("base", {"max_restarts": 2, "labels": ["x"]})
    assert store.get_template("base") == {"max_restarts": 2, "labels": ["x"]}
    assert list(store.list_templates()) == ["base"]
    store.delete_template("base")
    with pytest.raises(NotFoundError):
        store.get_template("base")
    with pytest.raises(NotFoundError):
        store.delete_template("base")


def test_slot_flags(store):
    store.upsert_agent("gpu-1", 4)
    assert store.set_slot_enabled("gpu-1", 2, False) == [2]
    assert store.set_slot_enabled("gpu-1", 0, False) == [0, 2]
    assert store.set_slot_enabled("gpu-1", 2, True) == [0]
    store.set_agent_enabled("gpu-1", False)
    store.upsert_agent("gpu-1", 4)  # a reconnect keeps both flags
    assert store.scheduling_flags() == {"gpu-1": (False, frozenset({0}))}
    with pytest.raises(NotFoundError):
        store.set_slot_enabled("gpu-1", 4, False)


def test_workloads_keep_batch_metrics_and_num_inputs(store, make_experiment):
    trial_id = store.create_trial(make_experiment(), "r1", {}, seed=1)
    store.add_training_metrics(trial_id, 2, {"loss": 0.5}, [{"loss": 0.6}, {"loss": 0.4}],
                               num_inputs=32)
    store.add_training_metrics_many(trial_id, [(4, {"loss": 0.3}, None, 32)])
    store.add_validation_metrics(trial_id, 4, {"error": 0.1}, num_inputs=100)
    loads = store.list_workloads(trial_id)
    assert [(w.kind, w.total_batches, w.num_inputs) for w in loads] == [
        ("training", 2, 32), ("training", 4, 32), ("validation", 4, 100)]
    assert loads[0].batch_metrics == [{"loss": 0.6}, {"loss": 0.4}]
    with pytest.raises(ValueError, match="num_inputs"):
        store.add_training_metrics(trial_id, 6, {}, num_inputs=-1)
