"""A shared_fs ``checkpoint_storage.host_path`` that does not exist was created by the
trial at its first checkpoint (hiding a wrong path or a file system not mounted). 0.13
required it to exist on the agents' machines: experiment create refuses it where trials
run on the master's machine (and ``--local``), and a trial on an agent fails with a
clear message instead of creating it."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from det_cli_testing import run_det
from determined.trial_ops import EXIT_USER_ERROR

pytestmark = pytest.mark.e2e


def _config(tiny_dir, host_path):
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(host_path),
                                    "storage_path": "runs"}
    return config


def test_create_refuses_a_host_path_that_does_not_exist(master_factory, tiny_dir, tmp_path):
    master = master_factory(slots=1)
    missing = tmp_path / "not-mounted"
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_config(tiny_dir, missing)))
    for extra in ([], ["--local"]):
        out = run_det(["-m", master.url, "e", "create", path, tiny_dir, *extra], timeout=180,
                      env={"DET_LOCAL_DIR": str(tmp_path / "local")})
        assert out.returncode == 1, out.stdout + out.stderr
        assert (f"  - checkpoint_storage.host_path: checkpoint_storage.host_path {missing} "
                "does not exist on ") in out.stderr, (extra, out.stderr)
        assert "Traceback" not in out.stderr
        assert not missing.exists()  # nothing created
    listed = run_det(["-m", master.url, "e", "list", "-a", "--json"])
    assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed.stdout

    # A host_path that exists with a file in the way of its storage_path: refused, saying so.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    path.write_text(yaml.safe_dump(dict(_config(tiny_dir, tmp_path), checkpoint_storage={
        "type": "shared_fs", "host_path": str(tmp_path), "storage_path": "a-file/runs"})))
    for extra in ([], ["--local"]):
        out = run_det(["-m", master.url, "e", "create", path, tiny_dir, *extra], timeout=180,
                      env={"DET_LOCAL_DIR": str(tmp_path / "local")})
        assert out.returncode == 1, out.stdout + out.stderr
        assert (f"  - checkpoint_storage: cannot create checkpoint storage directory "
                f"{blocker}/runs: {blocker} is not a directory") in out.stderr, (extra, out.stderr)

    # A host_path that exists is used; its storage_path is created under it.
    path.write_text(yaml.safe_dump(_config(tiny_dir, missing)))
    missing.mkdir()
    out = run_det(["-m", master.url, "e", "create", path, tiny_dir, "--paused"], timeout=180)
    assert out.returncode == 0, out.stderr


def test_a_trial_on_a_machine_without_the_host_path_fails_saying_so(tiny_dir, tmp_path):
    """The trial process an agent starts (``harness._rest_host``), given a spec whose
    host_path this machine lacks: it exits as a user error (no restarts) naming the
    path, before it talks to the master, and creates nothing."""
    missing = tmp_path / "not-mounted"
    config = _config(tiny_dir, missing)
    spec = {"env": {"experiment_config": config, "hparams": {"global_batch_size": 4},
                    "model_dir": str(tiny_dir), "experiment_id": 3, "trial_id": 7},
            "storage": config["checkpoint_storage"], "threads": 1}
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = dict(os.environ, DET_TRIAL_SPEC=str(spec_path), DET_TRIAL_TOKEN="t",
               DET_MASTER="http://127.0.0.1:9")  # nothing listens: it must not be asked
    out = subprocess.run([sys.executable, "-m", "determined.harness._rest_host"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == EXIT_USER_ERROR, out.stdout + out.stderr
    assert out.stdout.strip().splitlines()[-1].startswith(
        f"trial 7 failed: checkpoint_storage.host_path {missing} does not exist on "), out.stdout
    assert not missing.exists()


def test_a_remote_only_master_leaves_the_agents_paths_to_them(master_factory, tiny_dir,
                                                               tmp_path):
    """Without trials on its machine the master neither judges nor creates a shared_fs
    path: the agents' file systems are theirs (a trial there fails if it lacks it)."""
    master = master_factory(slots=0)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    missing = tmp_path / "not-mounted"
    for host_path in (missing, blocker / "below-a-file"):
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(_config(tiny_dir, host_path)))
        out = run_det(["-m", master.url, "e", "create", path, tiny_dir, "--paused"],
                      timeout=180)
        assert out.returncode == 0, out.stderr
    assert not missing.exists()
