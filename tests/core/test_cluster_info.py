"""``det.get_cluster_info()`` from the info file the platform writes for a script."""

import json

import pytest

import determined as det
from determined import _info


def _write(tmp_path, **extra):
    config = {"entrypoint": "python3 train.py", "resources": {"slots_per_trial": 2},
              "data": {"url": "x"}, "searcher": {"name": "single"}}
    env = {"experiment_config": config, "hparams": {"lr": 0.1}, "model_dir": str(tmp_path),
           "experiment_id": 4, "trial_id": 9, "trial_seed": 123,
           "latest_checkpoint": str(tmp_path / "ckpt" / "abc-uuid"),
           "distributed": {"rank": 0, "size": 2, "local_rank": 0, "local_size": 2,
                           "num_agents": 1, "master_addr": "10.0.0.5", "master_port": 0}}
    path = tmp_path / "info.json"
    path.write_text(json.dumps({"env": env, "checkpoint_storage": {"type": "shared_fs",
                                "host_path": str(tmp_path / "ckpt")},
                                "master_url": "http://m:8080", **extra}))
    return path


def test_cluster_info_of_a_script_trial(tmp_path, monkeypatch):
    monkeypatch.setenv("DET_CLUSTER_INFO", str(_write(tmp_path, latest_checkpoint="abc-uuid")))
    monkeypatch.delenv("DET_SLOT_IDS", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    _info._cache.clear()
    info = det.get_cluster_info()
    assert (info.trial.trial_id, info.trial.experiment_id, info.trial.trial_seed) == (9, 4, 123)
    assert info.trial.hparams == {"lr": 0.1} and info.user_data == {"url": "x"}
    assert info.latest_checkpoint == "abc-uuid" and info.task_type == "TRIAL"
    assert info.master_url == "http://m:8080"
    assert info.slot_ids == [0, 1] and info.container_addrs == ["10.0.0.5"]
    assert info.container_rank == 0 and info.container_slot_counts == [2]
    assert info.trial._config["resources"] == {"slots_per_trial": 2}


def test_latest_checkpoint_from_the_env_path_when_no_storage_id(tmp_path, monkeypatch):
    monkeypatch.setenv("DET_CLUSTER_INFO", str(_write(tmp_path)))
    _info._cache.clear()
    assert det.get_cluster_info().latest_checkpoint == "abc-uuid"


def test_no_info_off_the_platform_and_clear_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("DET_CLUSTER_INFO", raising=False)
    assert det.get_cluster_info() is None
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    monkeypatch.setenv("DET_CLUSTER_INFO", str(bad))
    _info._cache.clear()
    with pytest.raises(RuntimeError, match="DET_CLUSTER_INFO=.*not valid JSON"):
        det.get_cluster_info()
    monkeypatch.setenv("DET_CLUSTER_INFO", str(tmp_path / "missing.json"))
    with pytest.raises(RuntimeError, match="cannot read it"):
        det.get_cluster_info()


def test_a_machine_of_a_trial_spanning_machines(tmp_path, monkeypatch):
    rendezvous = {"container_addrs": ["10.0.0.5", "10.0.0.6", "10.0.0.7"],
                  "container_rank": 1, "container_slot_counts": [2, 3, 1]}
    monkeypatch.setenv("DET_CLUSTER_INFO", str(_write(tmp_path, rendezvous=rendezvous)))
    monkeypatch.setenv("DET_SLOT_IDS", "4,5,6")  # as an agent sets it
    _info._cache.clear()
    info = det.get_cluster_info()
    assert info.container_addrs == ["10.0.0.5", "10.0.0.6", "10.0.0.7"]
    assert info.container_rank == 1 and info.container_slot_counts == [2, 3, 1]
    assert info.slot_ids == [4, 5, 6]
    monkeypatch.delenv("DET_SLOT_IDS")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    _info._cache.clear()
    assert det.get_cluster_info().slot_ids == [0, 1, 2]  # this machine's count
    _info._cache.clear()
