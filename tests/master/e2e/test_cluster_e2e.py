"""End to end: the det CLI against a real master; trial and master crashes."""

import json
import os
import subprocess
import sys
import time
import uuid

import yaml

from master_testing import free_port, wait_for_state

DET = [sys.executable, "-m", "determined.cli"]


def det(*args, env=None, timeout=120):
    return subprocess.run(DET + [str(a) for a in args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_deploy_create_follow_and_inspect(tmp_path, tiny_dir):
    port = free_port()
    env = dict(os.environ, DET_MASTER=f"127.0.0.1:{port}")
    data_dir = tmp_path / "master"
    up = det("deploy", "local", "up", "--slots", 2, "--port", port, "--data-dir", data_dir, env=env)
    assert up.returncode == 0, up.stderr
    assert f"http://127.0.0.1:{port}" in up.stdout
    try:
        out = det("e", "create", tiny_dir / "const.yaml", tiny_dir, "--follow", env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Created experiment 1" in out.stdout and "COMPLETED" in out.stderr
        (exp,) = json.loads(det("e", "describe", 1, "--json", env=env).stdout)
        assert exp["state"] == "COMPLETED" and exp["progress"] == 1.0
        (trial,) = exp["trials"]
        assert trial["state"] == "COMPLETED" and trial["total_batches"] == 40
        listed = json.loads(det("e", "list", "--json", env=env).stdout)
        assert [e["id"] for e in listed] == [1]
        import httpx

        with httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1") as api:
            metrics = api.get(f"/trials/{trial['id']}").json()["metrics"]
            assert [(m["kind"], m["total_batches"]) for m in metrics] == [
                ("training", 10), ("training", 20), ("validation", 20),
                ("training", 30), ("training", 40), ("validation", 40)]
            ckpts = api.get("/experiments/1/checkpoints").json()["checkpoints"]
            # GC at the end keeps the trial's latest (= best here) checkpoint only.
            assert [(c["total_batches"], c["state"]) for c in ckpts] == [
                (20, "DELETED"), (40, "COMPLETED")]
            assert ckpts[1]["validation"]["validation_loss"] == metrics[-1]["metrics"]["validation_loss"]
            assert api.get(f"/checkpoints/{ckpts[1]['uuid']}").json()["trial_id"] == trial["id"]
            assert os.path.isdir(data_dir / "checkpoints" / ckpts[1]["uuid"])
            assert not os.path.exists(data_dir / "checkpoints" / ckpts[0]["uuid"])
        logs = det("t", "logs", trial["id"], env=env)
        assert "exited: completed" in logs.stdout
    finally:
        down = det("deploy", "local", "down", "--data-dir", data_dir, env=env)
    assert down.returncode == 0 and "stopped" in down.stdout


def test_trial_sigkill_restarts_from_checkpoint_without_double_counting(
        master_factory, tmp_path, tiny_dir):
    master = master_factory(slots=1)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config["hyperparameters"]["crash_once_at_batch"] = 25
    config["data"] = {"crash_marker": str(tmp_path / "crashed")}
    # Leftovers of earlier processes of trial 1 of this master (removed when it starts
    # and restarts), of another trial, and of a trial 1 of experiment 1 of another master
    # or of none recorded (all kept): real files in the experiment's storage.
    root = tmp_path / "ckpts"
    root.mkdir()
    config["checkpoint_storage"] = {"type": "shared_fs", "host_path": str(root)}
    with open(os.path.join(master.data_dir, "cluster_id"), encoding="utf-8") as f:
        mine = f.read().strip()
    other = str(uuid.uuid4())
    later = time.time() + 3600
    leftovers = {}
    for name, trial_id, owner in (
            (f".partial-e1t1-{mine[:8]}-{uuid.uuid4()}-0badf00d", 1, mine),
            (f".partial-e7t9-{mine[:8]}-{uuid.uuid4()}-0badf00d", 9, mine),
            (f".partial-e1t1-{other[:8]}-{uuid.uuid4()}-0badf00d", 1, other),
            (str(uuid.uuid4()), 1, mine), (str(uuid.uuid4()), 9, mine),
            (str(uuid.uuid4()), 1, other), (str(uuid.uuid4()), 1, None)):
        path = root / name
        path.mkdir()
        (path / "metadata.json").write_text(json.dumps(
            {"experiment_id": 1 if trial_id == 1 else 7, "trial_id": trial_id,
             "end_time": later, "batch_number": 30,
             **({"owner": owner} if owner else {})}))
        os.utime(path, (later, later))
        leftovers[path] = trial_id == 1 and owner == mine
    cfg_path = tmp_path / "crash.yaml"
    cfg_path.write_text(yaml.safe_dump(config))
    env = dict(os.environ, DET_MASTER=master.url)
    out = det("e", "create", cfg_path, tiny_dir, env=env)
    assert out.returncode == 0, out.stderr
    with master.client() as api:
        exp = wait_for_state(api, 1, ["COMPLETED", "ERROR", "CANCELED"])
        assert exp["state"] == "COMPLETED", exp
        (trial,) = exp["trials"]
        assert trial["restarts"] == 1 and trial["total_batches"] == 40
        assert os.path.exists(tmp_path / "crashed")
        metrics = api.get(f"/trials/{trial['id']}").json()["metrics"]
        assert [(m["kind"], m["total_batches"]) for m in metrics] == [
            ("training", 10), ("training", 20), ("validation", 20),
            ("training", 30), ("training", 40), ("validation", 40)]
        logs = [l["line"] for l in api.get(f"/trials/{trial['id']}/logs").json()["logs"]]
        assert sum("exited: completed" in l for l in logs) == 1
    assert trial["id"] == 1
    for path, removed in leftovers.items():
        assert path.exists() != removed, path


def test_master_sigkill_resumes_experiment_from_database(master_factory, tmp_path, tiny_dir):
    master = master_factory(slots=1)
    env = dict(os.environ, DET_MASTER=master.url)
    out = det("e", "create", tiny_dir / "const.yaml", tiny_dir, "--paused", env=env)
    assert out.returncode == 0, out.stderr
    with master.client() as api:
        assert api.get("/experiments/1").json()["state"] == "PAUSED"
    master.sigkill()
    again = master_factory(slots=1, data_dir=master.data_dir, port=master.port)
    assert det("e", "activate", 1, env=env).returncode == 0
    with again.client() as api:
        exp = wait_for_state(api, 1, ["COMPLETED", "ERROR", "CANCELED"])
        assert exp["state"] == "COMPLETED", exp
        assert len(exp["trials"]) == 1 and exp["trials"][0]["total_batches"] == 40


def test_master_imports_no_framework():
    code = ("import sys, determined.master, determined.master._core, determined.master.api, "
            "determined.cli._main; "
            "print(sorted(m for m in ('torch', 'tensorflow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_training_report_is_stored_once_in_order(master_factory, tmp_path, tiny_dir):
    """One batch per workload: the runner reports faster than the master answers, so
    reports travel in batches; none may be lost, duplicated or stored out of order."""
    master = master_factory(slots=2)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config.update(scheduling_unit=1, min_validation_period={"batches": 50},
                  min_checkpoint_period={"batches": 75})
    config["searcher"]["max_length"] = {"batches": 300}
    cfg_path = tmp_path / "unit1.yaml"
    cfg_path.write_text(yaml.safe_dump(config))
    out = det("e", "create", cfg_path, tiny_dir, env=dict(os.environ, DET_MASTER=master.url))
    assert out.returncode == 0, out.stderr
    with master.client() as api:
        exp = wait_for_state(api, 1, ["COMPLETED", "ERROR", "CANCELED"])
        assert exp["state"] == "COMPLETED", exp
        (trial,) = exp["trials"]
        assert trial["total_batches"] == 300
        metrics = api.get(f"/trials/{trial['id']}").json()["metrics"]
        training = [m["total_batches"] for m in metrics if m["kind"] == "training"]
        assert training == list(range(1, 301))
        validations = [m["total_batches"] for m in metrics if m["kind"] == "validation"]
        assert validations == [50, 100, 150, 200, 250, 300]
        assert len({m["metrics"]["loss"] for m in metrics if m["kind"] == "training"}) > 1


def test_progress_counts_training_before_the_first_validation(master_factory, tmp_path, tiny_dir):
    from master_testing import create_experiment, slow_model_dir, wait_until

    master = master_factory(slots=1)
    model = slow_model_dir(tiny_dir, tmp_path)
    config = yaml.safe_load((tiny_dir / "const.yaml").read_text())
    config.update(entrypoint="slow_def:SlowTrial", scheduling_unit=5)
    config.pop("min_validation_period", None)  # one validation, at the very end
    config["hyperparameters"]["sleep"] = 0.05
    config["searcher"]["max_length"] = {"batches": 60}
    with master.client() as api:
        exp_id = create_experiment(api, config, model)
        seen = wait_until(lambda: api.get(f"/experiments/{exp_id}").json()["progress"] or None,
                          timeout=60, what="progress above 0 before the validation")
        trial_id = api.get(f"/experiments/{exp_id}").json()["trials"][0]["id"]
        metrics = api.get(f"/trials/{trial_id}").json()["metrics"]
        assert 0 < seen < 1 and not any(m["kind"] == "validation" for m in metrics)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"])
        assert exp["state"] == "COMPLETED" and exp["progress"] == 1.0
