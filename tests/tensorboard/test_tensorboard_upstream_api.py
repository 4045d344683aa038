"""Upstream 0.13's ``determined.tensorboard`` API: ``build(env, checkpoint_config,
container_path)``, ``get_base_path``, ``get_sync_path``, and the shared_fs and S3
managers syncing real event files (S3: a moto server)."""

import os
import pathlib
import types

import pytest

from determined import tensorboard
from determined.tensorboard.metric_writers._event_file import EventFileWriter

from object_store_testing import s3_client, s3_server
from tb_testing import scalars


def _env():
    return types.SimpleNamespace(det_experiment_id="3", det_trial_id="7", det_cluster_id="")


def _write(base, step, value):
    writer = EventFileWriter(str(base))
    writer.add_scalar("loss", value, step)
    writer.close()


def test_paths_have_upstreams_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv("DET_TENSORBOARD_DIR", str(tmp_path / "tb"))
    monkeypatch.setenv("DET_RANK", "2")
    assert tensorboard.get_base_path({}) == pathlib.Path(tmp_path / "tb-2")
    assert tensorboard.get_base_path({}, manager=True) == pathlib.Path(tmp_path / "tb")
    assert tensorboard.get_base_path({"base_path": "/data"}) == pathlib.Path("/data/tensorboard")
    assert tensorboard.get_sync_path(_env()) == pathlib.Path("tensorboard/experiment/3/trial/7")
    with pytest.raises(ValueError, match="det_experiment_id"):
        tensorboard.get_sync_path(object())


def test_sync_paths_keep_owners_apart():
    """Two masters (or local directories) sharing a storage both have an experiment 3,
    trial 7: their event files go under their owners (the cluster ids); a path the
    master chose (an experiment from before owners) is kept as it is."""
    from determined import EnvContext
    from determined.harness import TrialEnv

    owner = "5b0e8c2e-1111-2222-3333-444455556666"
    env = types.SimpleNamespace(det_experiment_id="3", det_trial_id="7", det_cluster_id=owner)
    assert tensorboard.get_sync_path(env) == pathlib.Path(
        f"tensorboard/{owner}/experiment/3/trial/7")
    trial = TrialEnv({}, {}, "/m", experiment_id=3, trial_id=7, owner=owner)
    assert tensorboard.env_sync_path(trial) == f"tensorboard/{owner}/experiment/3/trial/7"
    assert tensorboard.get_sync_path(EnvContext.from_trial_env(trial)) == pathlib.Path(
        f"tensorboard/{owner}/experiment/3/trial/7")
    old = TrialEnv({}, {}, "/m", experiment_id=3, trial_id=7, owner=owner,
                   tensorboard_path="tensorboard/experiment/3/trial/7")
    assert tensorboard.env_sync_path(old) == "tensorboard/experiment/3/trial/7"
    assert tensorboard.get_sync_path(EnvContext.from_trial_env(old)) == pathlib.Path(
        "tensorboard/experiment/3/trial/7")
    with pytest.raises(ValueError, match="path separators"):
        tensorboard.trial_sync_path(3, 7, "../x")


def test_build_shared_fs_syncs_into_container_path(tmp_path, monkeypatch):
    base = tmp_path / "events"
    monkeypatch.setenv("DET_TENSORBOARD_DIR", str(base))
    config = {"type": "shared_fs", "host_path": "/not/mounted/here", "storage_path": "ckpts"}
    manager = tensorboard.build(_env(), config, container_path=str(tmp_path / "mnt"))
    assert isinstance(manager, tensorboard.SharedFSTensorboardManager)
    assert manager.base_path == base
    _write(base, 1, 0.5)
    assert [p.name for p in manager.to_sync()] == [p.name for p in manager.list_tfevents()]
    manager.sync()
    target = tmp_path / "mnt" / "ckpts" / "tensorboard" / "experiment" / "3" / "trial" / "7"
    assert scalars(str(target)) == {"loss": [(1, 0.5)]}
    assert manager.to_sync() == []
    with pytest.raises(TypeError, match="Unknown storage type: 'hdfs2'"):
        tensorboard.build(_env(), {"type": "hdfs2"})
    with pytest.raises(TypeError, match="Missing 'type'"):
        tensorboard.build(_env(), {})


def test_shared_fs_manager_takes_keyword_paths(tmp_path):
    manager = tensorboard.SharedFSTensorboardManager(
        str(tmp_path / "root"), base_path=tmp_path / "b", sync_path="tb/x")
    _write(tmp_path / "b", 4, 1.5)
    manager.sync()
    assert scalars(str(tmp_path / "root" / "tb" / "x")) == {"loss": [(4, 1.5)]}


def test_s3_manager_uploads_new_event_files(tmp_path, monkeypatch):
    (tmp_path / "moto").mkdir()
    with s3_server(str(tmp_path / "moto")) as section:
        base = tmp_path / "events"
        monkeypatch.setenv("DET_TENSORBOARD_DIR", str(base))
        manager = tensorboard.build(_env(), dict(section, prefix="team"))
        assert isinstance(manager, tensorboard.S3TensorboardManager)
        _write(base, 1, 0.25)
        manager.sync()
        client = s3_client(section)

        def keys():
            listed = client.list_objects_v2(Bucket=section["bucket"], Prefix="team/")
            return sorted(o["Key"] for o in listed.get("Contents", []))

        (key,) = keys()
        assert key.startswith("team/tensorboard/experiment/3/trial/7/")
        _write(base, 2, 0.125)  # a second event file
        assert len(manager.to_sync()) == 1
        manager.sync()
        assert len(keys()) == 2 and manager.to_sync() == []
        fetched = tmp_path / "fetched"
        fetched.mkdir()
        for k in keys():
            client.download_file(section["bucket"], k, str(fetched / os.path.basename(k)))
        assert sorted(scalars(str(fetched))["loss"]) == [(1, 0.25), (2, 0.125)]

        direct = tensorboard.S3TensorboardManager(
            section["bucket"], section["access_key"], section["secret_key"],
            section["endpoint_url"], base, "direct")
        direct.sync()
        assert len(client.list_objects_v2(Bucket=section["bucket"],
                                          Prefix="direct/")["Contents"]) == 2
