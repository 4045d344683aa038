"""A Core API script (tests/fixtures/core_api/train.py: ``det.core`` with PyTorch) as
an experiment on a real master with its embedded agent: its reports are stored and
served like a Trial's, pause/activate makes it checkpoint, exit and resume, a
SIGKILLed script restarts from its latest checkpoint, and every trial ends with the
same weights as one never interrupted."""

import os
import pathlib
import signal

import pytest
import torch
import yaml

from master_testing import create_experiment, metric_rows, wait_for_state, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT_DIR = ROOT / "tests" / "fixtures" / "core_api"


def _trial_log(api, trial_id):
    rows = api.get(f"/trials/{trial_id}/logs", params={"limit": 100000}).json()["logs"]
    return "\n".join(r["line"] for r in rows)


def _steps(markers, trial_id):
    path = markers / f"{trial_id}.steps"
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text else 0


def test_core_script_paused_killed_and_resumed_exactly(master_factory, tmp_path):
    master = master_factory(slots=1)
    markers = tmp_path / "markers"
    markers.mkdir()
    config = yaml.safe_load((SCRIPT_DIR / "const.yaml").read_text())
    config["searcher"] = {"name": "grid", "metric": "validation_loss",
                          "max_length": {"batches": 24}}
    # Three copies of one trial (the script ignores "copy"), run one after the other;
    # 0.4 s a step: at step 6 a trial has 7 s to go, so the pause and the SIGKILL below
    # land mid-training even on a loaded machine.
    config["hyperparameters"].update({
        "copy": {"type": "categorical", "vals": [1, 2, 3]},
        "step_delay": 0.4, "marker_dir": str(markers)})
    with master.client() as api:
        exp_id = create_experiment(api, config, SCRIPT_DIR)
        # Pause the first trial mid-training; it checkpoints and exits 0.
        wait_until(lambda: _steps(markers, 1) >= 6, timeout=180, what="trial 1 at step 6")
        assert api.post(f"/experiments/{exp_id}/pause").status_code == 200
        wait_until(lambda: "preempted at step" in _trial_log(api, 1), timeout=120,
                   what="trial 1 to stop")
        wait_until(lambda: "script exited" in _trial_log(api, 1), timeout=60,
                   what="trial 1's script to exit")
        paused_at = _steps(markers, 1)
        assert paused_at < 24
        assert api.post(f"/experiments/{exp_id}/activate").status_code == 200
        # SIGKILL the second trial's script between checkpoints.
        wait_until(lambda: _steps(markers, 2) >= 6, timeout=240, what="trial 2 at step 6")
        os.kill(int((markers / "2.pid").read_text()), signal.SIGKILL)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=400)
        assert exp["state"] == "COMPLETED", exp
        trials = {t["id"]: t for t in exp["trials"]}
        assert [trials[i]["restarts"] for i in (1, 2, 3)] == [0, 1, 0]
        assert all(t["total_batches"] == 24 for t in trials.values())
        log1, log2 = _trial_log(api, 1), _trial_log(api, 2)
        assert f"preempted at step {paused_at}" in log1 and "resumed from" in log1
        assert "killed by signal 9" in log2 and "resumed from" in log2
        # Reports are stored like a Trial's: training averages and validation values
        # at steps_completed, the searcher metric among them.
        rows = metric_rows(api, 3)
        assert [(k, b) for k, b, _ in rows] == [
            *(("training", b) for b in (5, 10, 15, 20, 24)), ("validation", 24)]
        assert rows[0][2].keys() == {"loss"}
        assert rows[-1][2].keys() == {"validation_loss"}
        states = []
        for i in (1, 2, 3):
            path = os.path.join(master.data_dir, "checkpoints", trials[i]["latest_checkpoint"],
                                "state.pt")
            states.append(torch.load(path, weights_only=False))
    assert [s["steps"] for s in states] == [24, 24, 24]
    for other in states[1:]:
        for name, value in states[0]["model"].items():
            assert torch.equal(value, other["model"][name]), name
        assert torch.equal(states[0]["rng"], other["rng"])


def test_two_rank_core_script_on_the_master(master_factory):
    """``determined.launch.torch_distributed`` starts a rank per slot of the trial; the
    chief reports, both ranks write one sharded checkpoint."""
    master = master_factory(slots=2)
    config = yaml.safe_load((SCRIPT_DIR / "dist.yaml").read_text())
    with master.client() as api:
        exp_id = create_experiment(api, config, SCRIPT_DIR)
        exp = wait_for_state(api, exp_id, ["COMPLETED", "ERROR", "CANCELED"], timeout=300)
        assert exp["state"] == "COMPLETED", exp
        (trial,) = exp["trials"]
        log = _trial_log(api, trial["id"])
        assert "[rank=0] rank 0 done at step 6" in log and "[rank=1] rank 1 done at step 6" in log
        assert [(k, b) for k, b, _ in metric_rows(api, trial["id"])] == [
            *(("training", b) for b in range(1, 7)), ("validation", 6)]
        ckpt = os.path.join(master.data_dir, "checkpoints", trial["latest_checkpoint"])
        assert sorted(os.listdir(ckpt)) == ["metadata.json", "model.pt", "rank0.pt", "rank1.pt"]
