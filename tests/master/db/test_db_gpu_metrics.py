"""GPU samples of trials on each backend: stored and read back in time order, checked
before anything is written, and deleted with their experiment."""

import pytest

from determined.master.db import Store


def _sample(t, util=50.0, gpu=0):
    return {"time": t, "gpu_index": gpu, "gpu_uuid": f"GPU-{gpu}", "utilization": util,
            "memory_used": 3 * 2**30, "memory_total": 80 * 2**30}


def _trial(store: Store) -> int:
    exp = store.create_experiment({"a": 1}, b"x", "admin")
    return store.create_trial(exp, "r1", {"lr": 1}, 7)


def test_samples_come_back_oldest_first_and_limit_keeps_the_newest(store: Store):
    trial = _trial(store)
    assert store.gpu_samples(trial) == []
    assert store.add_gpu_samples(
        trial, [_sample(1_700_000_002.5, 20), _sample(1_700_000_001, 10)]) == 2
    store.add_gpu_samples(trial, [_sample(1_700_000_003, 30, gpu=1)])
    rows = store.gpu_samples(trial)
    assert [(r["utilization"], r["gpu_index"]) for r in rows] == [(10, 0), (20, 0), (30, 1)]
    assert rows[0]["time"].timestamp() == 1_700_000_001
    assert rows[0]["memory_total"] == 80 * 2**30 and rows[0]["gpu_uuid"] == "GPU-0"
    assert [r["utilization"] for r in store.gpu_samples(trial, limit=2)] == [20, 30]


def test_a_malformed_sample_stores_nothing_and_names_what_is_missing(store: Store):
    trial = _trial(store)
    bad = _sample(1.0)
    del bad["memory_used"]
    with pytest.raises(ValueError, match="missing memory_used"):
        store.add_gpu_samples(trial, [_sample(0.5), bad])
    assert store.gpu_samples(trial) == []


def test_samples_go_with_their_experiment(store: Store):
    trial = _trial(store)
    store.add_gpu_samples(trial, [_sample(1.0)])
    store.delete_experiment(store.get_trial(trial).experiment_id)
    assert store.gpu_samples(trial) == []
