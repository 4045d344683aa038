"""The dataset cache shared by det.keras and det.estimator."""

import os

import pytest
import tensorflow as tf

from determined.tensorflow._cache import DatasetCache, cache_root


def _values(dataset):
    return [int(v) for v in dataset.as_numpy_iterator()]


def test_materialised_once_and_shuffled_with_the_trial_seed(tmp_path):
    config = {"data_layer": {"type": "shared_fs", "host_storage_path": str(tmp_path)}}
    calls = []

    def make():
        calls.append(1)
        return tf.data.Dataset.range(20)

    first = DatasetCache(config, seed=3).decorator("train", "range", "v1", True, False)(make)()
    again = DatasetCache(config, seed=3).decorator("train", "range", "v1", True, False)(make)()
    other = DatasetCache(config, seed=4).decorator("train", "range", "v1", True, False)(make)()
    plain = DatasetCache(config, seed=3).decorator("train", "range", "v1", False, False)(make)()
    assert calls == [1]
    assert (tmp_path / "range" / "v1" / "COMPLETE").exists()
    assert sorted(_values(first)) == list(range(20))
    assert _values(first) == _values(again) != _values(other)
    assert _values(plain) == list(range(20))
    # skip_shuffle_at_epoch_end=False reshuffles every pass; True keeps the order
    reshuffled = DatasetCache(config, seed=3).decorator("train", "range", "v1", True, True)(make)()
    assert _values(reshuffled) != _values(reshuffled)
    fixed = DatasetCache(config, seed=3).decorator("train", "range", "v1", True, False)(make)()
    assert _values(fixed) == _values(fixed)


def test_sharding_and_versions(tmp_path):
    config = {"data_layer": {"host_storage_path": str(tmp_path)}}
    make = lambda: tf.data.Dataset.range(10)  # noqa: E731
    shard = DatasetCache(config, seed=0, rank=1, size=2).decorator("validation", "r", "v2", False, False)
    assert _values(shard(make)()) == [1, 3, 5, 7, 9]
    with pytest.raises(ValueError, match="dataset_version"):
        DatasetCache(config, seed=0).decorator("train", "r", "../x", False, False)


def test_decorated_function_must_return_a_dataset(tmp_path):
    from determined.errors import InvalidTrialError

    config = {"data_layer": {"host_storage_path": str(tmp_path)}}
    deco = DatasetCache(config, seed=0).decorator("train", "bad", "v1", False, False)
    with pytest.raises(InvalidTrialError, match="must return a tf.data.Dataset"):
        deco(lambda: [1, 2, 3])()
    assert not (tmp_path / "bad" / "v1").exists()
    assert [n for n in os.listdir(tmp_path / "bad")] == []


def test_cache_root_defaults(monkeypatch, tmp_path):
    monkeypatch.setenv("DET_DATA_LAYER_DIR", str(tmp_path))
    assert cache_root({}) == str(tmp_path)
    assert cache_root({"data_layer": {"type": "s3", "local_cache_host_path": "/x"}}) == "/x"
