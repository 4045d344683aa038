"""A ``determined.core`` script (tests/fixtures/core_api/train.py) as a trial on a real
master with its embedded agent: paused, activated and SIGKILLed mid-training, it ends
with exactly the weights of a run never interrupted."""

import pathlib

import psutil
import pytest
import torch

from master_testing import create_experiment, wait_for_state, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

CORE_DIR = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "core_api"
CONFIG = {
    "name": "core-script",
    # 0.3 s a step (12 s in all): the pause after the first checkpoint and the SIGKILL
    # after two more land mid-training even on a loaded machine.
    "entrypoint": "python3 train.py --checkpoint-every 5 --step-delay 0.3",
    "hyperparameters": {"lr": 0.05},
    "searcher": {"name": "single", "metric": "validation_loss",
                 "max_length": {"batches": 40}},
    "reproducibility": {"experiment_seed": 11},
    "max_restarts": 2,
}


def _scripts(workdirs):
    """The script processes of trials started under ``workdirs``."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if "train.py" in (p.info["cmdline"] or []) and \
                    p.cwd().startswith(str(workdirs)):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def _final_state(api, master, exp_id):
    exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=400)
    assert exp["state"] == "COMPLETED", exp
    (trial,) = exp["trials"]
    path = pathlib.Path(master.data_dir) / "checkpoints" / trial["latest_checkpoint"]
    return trial, torch.load(path / "state.pt", weights_only=False)


def _checkpoints(api, exp_id):
    return api.get(f"/experiments/{exp_id}/checkpoints").json()["checkpoints"]


def test_core_script_paused_and_sigkilled_resumes_to_identical_weights(
        master_factory, tmp_path, monkeypatch):
    workdirs = tmp_path / "workdirs"
    monkeypatch.setenv("DET_WORKDIR_ROOT", str(workdirs))  # the trials' working dirs
    master = master_factory(slots=1)
    with master.client() as api:
        straight = create_experiment(api, CONFIG, CORE_DIR)
        _, expected = _final_state(api, master, straight)

        exp_id = create_experiment(api, CONFIG, CORE_DIR)
        wait_until(lambda: _checkpoints(api, exp_id), timeout=180, what="a first checkpoint")
        assert api.post(f"/experiments/{exp_id}/pause").status_code == 200
        wait_until(lambda: not _scripts(workdirs), timeout=120, what="the script to stop")
        paused = len(_checkpoints(api, exp_id))
        assert api.post(f"/experiments/{exp_id}/activate").status_code == 200
        wait_until(lambda: len(_checkpoints(api, exp_id)) >= paused + 2, timeout=180,
                   what="two more checkpoints")
        (script,) = wait_until(lambda: _scripts(workdirs), what="the running script")
        script.kill()
        trial, state = _final_state(api, master, exp_id)
        assert trial["restarts"] == 1 and trial["total_batches"] == 40
        logs = "\n".join(r["line"] for r in api.get(
            f"/trials/{trial['id']}/logs", params={"limit": 100000}).json()["logs"])
        assert "preempted at step" in logs and logs.count("resumed from") == 2
    assert state["steps"] == expected["steps"] == 40
    for name in expected["model"]:
        assert torch.equal(state["model"][name], expected["model"][name]), name
    assert torch.equal(state["rng"], expected["rng"])
