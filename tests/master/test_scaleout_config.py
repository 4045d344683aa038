"""Master config of the scale-out features: the Ray resource manager and object-store
checkpoint storage (secrets hidden from GET /master/config)."""

import pytest

from determined.master._config import load_master_config


def test_ray_resource_manager_needs_an_address(tmp_path):
    cfg = load_master_config(None, data_dir=str(tmp_path))
    assert cfg.resource_manager.type == "embedded"
    path = tmp_path / "master.yaml"
    path.write_text("resource_manager: {type: ray, address: '10.0.0.1:6379', cpus_per_slot: 2}\n")
    rm = load_master_config(str(path), data_dir=str(tmp_path)).resource_manager
    assert (rm.type, rm.address, rm.cpus_per_slot) == ("ray", "10.0.0.1:6379", 2.0)
    path.write_text("resource_manager: {type: ray}\n")
    with pytest.raises(ValueError, match="resource_manager.address"):
        load_master_config(str(path), data_dir=str(tmp_path))
    path.write_text("resource_manager: {type: ray, address: 'h:1', cpus_per_slot: 0}\n")
    with pytest.raises(ValueError, match="cpus_per_slot"):
        load_master_config(str(path), data_dir=str(tmp_path))


def test_object_store_secret_is_hidden(tmp_path):
    path = tmp_path / "master.yaml"
    path.write_text("checkpoint_storage: {type: s3, bucket: b, access_key: k, secret_key: s3cr3t}\n")
    public = load_master_config(str(path), data_dir=str(tmp_path)).public()
    assert public["checkpoint_storage"]["secret_key"] == "***"
    assert public["checkpoint_storage"]["bucket"] == "b"
