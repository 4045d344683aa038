"""The Core API, Lightning and Hugging Face examples on a real master (embedded agent):
their adaptive searches complete; a paused Lightning trial checkpoints, stops and
resumes on activate; a Hugging Face trial SIGKILLed mid-training restarts from its
latest checkpoint and ends with the same weights as a run never interrupted."""

import os
import pathlib
import shutil

import pytest
import torch
import yaml
from safetensors.torch import load_file

from master_testing import create_experiment, wait_for_state, wait_until
from tests.integrations.integrations_testing import EXAMPLES, KILLER
from tests.integrations.test_examples_local import SHRUNK, shrunk_config

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

DONE = ["COMPLETED", "ERROR", "CANCELED"]


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    # The master's trial processes inherit this environment: nothing is downloaded.
    for name, value in (("HF_HUB_OFFLINE", "1"), ("USE_TF", "0"), ("OMP_NUM_THREADS", "1")):
        monkeypatch.setenv(name, value)


def trial_log(api, trial_id):
    rows = api.get(f"/trials/{trial_id}/logs", params={"limit": 100000}).json()["logs"]
    return "\n".join(r["line"] for r in rows)


def test_example_adaptive_searches_complete_on_a_master(master_factory, tmp_path):
    master = master_factory(slots=2)
    with master.client() as api:
        ids = {example: create_experiment(
                   api, yaml.safe_load(open(shrunk_config(example, tmp_path))), EXAMPLES / example)
               for example in sorted(SHRUNK)}
        for example, exp_id in ids.items():
            exp = wait_for_state(api, exp_id, DONE, timeout=800)
            assert exp["state"] == "COMPLETED", (example, exp)
            length = next(iter(SHRUNK[example].values()))
            assert len(exp["trials"]) == 2
            assert max(t["total_batches"] for t in exp["trials"]) == length
            for trial in exp["trials"]:
                assert trial["state"] == "COMPLETED"
                metrics = api.get(f"/trials/{trial['id']}").json()["metrics"]
                kinds = {m["kind"] for m in metrics}
                assert {"training", "validation"} <= kinds, (example, kinds)
            ckpts = [c for c in api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
                     if c["state"] != "DELETED"]  # GC keeps the best and latest
            assert ckpts and all(os.path.isdir(os.path.join(master.data_dir, "checkpoints",
                                                            c["uuid"])) for c in ckpts)


def test_paused_lightning_trial_checkpoints_and_resumes(master_factory, tmp_path):
    master = master_factory(slots=1)
    config = yaml.safe_load((EXAMPLES / "core_api_lightning" / "adaptive.yaml").read_text())
    config["searcher"] = {"name": "single", "metric": "validation_error",
                          "smaller_is_better": True, "max_length": {"epochs": 12}}
    config["hyperparameters"] = {"batch_size": 32, "hidden_size": 32, "dropout": 0.1,
                                 "learning_rate": 0.05}
    with master.client() as api:
        exp_id = create_experiment(api, config, EXAMPLES / "core_api_lightning")
        wait_until(lambda: api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"],
                   timeout=300, what="the first epoch's checkpoint")
        assert api.post(f"/experiments/{exp_id}/pause").status_code == 200
        wait_until(lambda: api.get(f"/experiments/{exp_id}").json()["trials"][0]["state"]
                   in ("PAUSED", "IDLE", "PENDING") and "script exited" in trial_log(api, 1),
                   timeout=300, what="the trial to stop")
        paused = api.get(f"/experiments/{exp_id}").json()["trials"][0]
        assert paused["total_batches"] < 12, "the trial finished before it was paused"
        assert api.post(f"/experiments/{exp_id}/activate").status_code == 200
        exp = wait_for_state(api, exp_id, DONE, timeout=600)
        assert exp["state"] == "COMPLETED", exp
        (trial,) = exp["trials"]
        assert trial["restarts"] == 0 and trial["total_batches"] == 12
        assert "Restored all states from the checkpoint" in trial_log(api, trial["id"])
        validations = [m["total_batches"] for m in api.get(f"/trials/{trial['id']}").json()["metrics"]
                       if m["kind"] == "validation"]
        assert validations == list(range(1, 13))


def _hf_config(entrypoint):
    config = yaml.safe_load((EXAMPLES / "core_api_transformers" / "adaptive.yaml").read_text())
    config["entrypoint"] = entrypoint
    config["searcher"] = {"name": "single", "metric": "eval_loss", "smaller_is_better": True,
                          "max_length": {"batches": 60}}
    config["hyperparameters"] = {"batch_size": 16, "learning_rate": 0.001, "hidden_dropout": 0.1}
    config["reproducibility"] = {"experiment_seed": 7}
    return config


def _final_weights(master, api, exp_id):
    ckpts = api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
    last = max(ckpts, key=lambda c: c["total_batches"])
    assert last["total_batches"] == 60
    path = pathlib.Path(master.data_dir, "checkpoints", last["uuid"], "checkpoint-60")
    return load_file(path / "model.safetensors")


def test_sigkilled_hf_trial_resumes_to_identical_weights(master_factory, tmp_path):
    model_dir = tmp_path / "hf-model"
    shutil.copytree(EXAMPLES / "core_api_transformers", model_dir)
    shutil.copy(KILLER, model_dir / KILLER.name)
    marker = tmp_path / "killed-once"
    master = master_factory(slots=1)
    with master.client() as api:
        straight = create_experiment(api, _hf_config("python3 train.py"), model_dir)
        exp = wait_for_state(api, straight, DONE, timeout=600)
        assert exp["state"] == "COMPLETED", exp
        killed = create_experiment(
            api, _hf_config(f"python3 {KILLER.name} 45 --once {marker} train.py"), model_dir)
        exp = wait_for_state(api, killed, DONE, timeout=600)
        assert exp["state"] == "COMPLETED", exp
        (trial,) = exp["trials"]
        assert marker.exists() and trial["restarts"] == 1 and trial["total_batches"] == 60
        log = trial_log(api, trial["id"])
        assert "killed by signal 9" in log and "restoring checkpoint" in log, log
        a, b = _final_weights(master, api, straight), _final_weights(master, api, killed)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


def test_paused_hf_trial_checkpoints_and_resumes(master_factory):
    master = master_factory(slots=1)
    config = _hf_config("python3 train.py")
    config["searcher"]["max_length"] = {"batches": 400}
    with master.client() as api:
        exp_id = create_experiment(api, config, EXAMPLES / "core_api_transformers")
        wait_until(lambda: api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"],
                   timeout=300, what="the first checkpoint")
        assert api.post(f"/experiments/{exp_id}/pause").status_code == 200
        wait_until(lambda: api.get(f"/experiments/{exp_id}").json()["trials"][0]["state"]
                   in ("PAUSED", "IDLE", "PENDING") and "script exited" in trial_log(api, 1),
                   timeout=300, what="the trial to stop")
        paused = api.get(f"/experiments/{exp_id}").json()["trials"][0]
        assert paused["total_batches"] < 400, "the trial finished before it was paused"
        # The preempted trial saved where it stopped (not only at HF's save_steps).
        ckpts = api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]
        assert max(c["total_batches"] for c in ckpts) == paused["total_batches"]
        assert api.post(f"/experiments/{exp_id}/activate").status_code == 200
        exp = wait_for_state(api, exp_id, DONE, timeout=600)
        assert exp["state"] == "COMPLETED", exp
        (trial,) = exp["trials"]
        assert trial["restarts"] == 0 and trial["total_batches"] == 400
        metrics = api.get(f"/trials/{trial['id']}").json()["metrics"]
        validations = [m["total_batches"] for m in metrics if m["kind"] == "validation"]
        assert validations == sorted(set(validations)) and validations[-1] == 400
        # A row every logging_steps (10); the closing summary of the paused train() (at
        # the step where it stopped) is not one.
        training = [m["total_batches"] for m in metrics if m["kind"] == "training"]
        assert training == list(range(10, 401, 10)), (paused["total_batches"], training)
