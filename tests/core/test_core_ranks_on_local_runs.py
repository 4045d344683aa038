"""``determined.launch.torch_distributed`` as a trial's entrypoint with
``resources.slots_per_trial: 2`` under ``det experiment create --local --slots 2``:
a two-rank Core API script, a Trial class run by the launcher (``--trial``), and
``PreemptMode.WorkersAskMaster``."""

import json
import re

import pytest
import torch
import yaml

from det_cli_testing import run_det
from tests.core.core_testing import ROOT, interrupt_after_first_checkpoint, local_rows

pytestmark = pytest.mark.timeout(600)

SCRIPT_DIR = ROOT / "tests" / "fixtures" / "core_api"
TINY_DIR = ROOT / "tests" / "fixtures" / "tiny_pytorch"


def _result(out):
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout[:out.stdout.rindex("}") + 1])


def test_two_rank_core_script_follows_the_chief(tmp_path):
    local = tmp_path / "local"
    result = _result(run_det(["e", "create", SCRIPT_DIR / "dist.yaml", SCRIPT_DIR, "--local",
                              "--slots", "2", "--local-dir", local, "--json", "--no-progress"]))
    (trial,) = result["trials"]
    assert trial["state"] == "COMPLETED" and trial["batches"] == 6
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    assert "[rank=0] rank 0 done at step 6" in logs
    assert "[rank=1] rank 1 done at step 6" in logs
    ckpt = local / "checkpoints" / trial["latest_checkpoint"]
    # One checkpoint with both ranks' files, registered once by the chief.
    assert sorted(p.name for p in ckpt.iterdir()) == [
        "metadata.json", "model.pt", "rank0.pt", "rank1.pt"]
    assert torch.load(ckpt / "rank1.pt")["steps"] == 6
    described = json.loads(run_det(["t", "describe", "1", "--local-dir", local, "--json"]).stdout)
    text = json.dumps(described)
    assert "validation_loss" in text


def test_ranks_without_a_distributed_context_are_told_to_pass_one(tmp_path):
    """A one-process script (``core.init()`` alone) started on two ranks by the launcher:
    each rank acted as the chief ("running as one process"); on spanning machines the
    other machine's rank failed with "the trial's link is not (DET_SCRIPT_LINK)"."""
    config = yaml.safe_load((SCRIPT_DIR / "dist.yaml").read_text())
    config["entrypoint"] = "python3 -m determined.launch.torch_distributed python3 train.py"
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    local = tmp_path / "local"
    out = run_det(["e", "create", path, SCRIPT_DIR, "--local", "--slots", "2",
                   "--local-dir", local, "--no-progress"], env={"COLUMNS": "80"})
    assert out.returncode == 1, out.stdout + out.stderr
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    # The first rank to fail has torchrun stop the other (SIGTERM), maybe before it got
    # as far: at least one rank says it, and none acted as the chief.
    assert any(f"[rank={rank}] ValueError: core.init() runs in rank {rank} of 2 (a launcher "
               "such as determined.launch.torch_distributed started them) but got no "
               "DistributedContext; pass distributed="
               "det.core.DistributedContext.from_torch_distributed()" in logs
               for rank in (0, 1)), logs
    assert "running as one process" not in logs and "DET_SCRIPT_LINK" not in logs, logs


def test_trial_class_under_the_launcher_trains_as_the_platforms_two_slots(tmp_path):
    """``--trial`` runs the Trial class on torchrun's ranks: the same weights as the
    platform's own two-slot run of that class."""
    base = yaml.safe_load((TINY_DIR / "const.yaml").read_text())
    base["resources"] = {"slots_per_trial": 2}
    base["reproducibility"] = {"experiment_seed": 5}
    states = []
    for name, entrypoint in (("platform", base["entrypoint"]),
                             ("launcher", "python3 -m determined.launch.torch_distributed "
                                          f"--trial {base['entrypoint']}")):
        config = tmp_path / f"{name}.yaml"
        config.write_text(yaml.safe_dump(dict(base, entrypoint=entrypoint)))
        local = tmp_path / name
        result = _result(run_det(["e", "create", config, TINY_DIR, "--local", "--slots", "2",
                                  "--local-dir", local, "--json", "--no-progress"]))
        (trial,) = result["trials"]
        assert trial["state"] == "COMPLETED" and trial["batches"] == 40
        states.append(torch.load(local / "checkpoints" / trial["latest_checkpoint"] /
                                 "state_dict.pth", weights_only=False))
        if name == "launcher":
            logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
            assert "[rank=1] rank 1 of trial 1 exited: completed" in logs
    weights, other = (s["models_state_dict"][0] for s in states)
    assert weights.keys() == other.keys()
    for name in weights:
        assert torch.equal(weights[name], other[name]), name


def test_workers_ask_master_answers_each_rank_on_its_own(tmp_path):
    """``PreemptMode.WorkersAskMaster``: rank 1 calls ``should_preempt()`` far more
    often than the chief (25 times by their sleeps, 0.02 s against 0.5 s, so that a
    loaded machine's slower calls keep it above 3 times), never in step with it, and
    still hears of the pause (Ctrl-C)."""
    local = tmp_path / "local"
    out = interrupt_after_first_checkpoint(
        ["e", "create", SCRIPT_DIR / "ask_master.yaml", SCRIPT_DIR, "--local", "--slots", "2",
         "--local-dir", local, "--no-progress"], local)
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    assert local_rows(local, "SELECT state FROM experiments") == [("PAUSED",)], (
        out[-3000:] + "\n--- trial logs:\n" + logs[-5000:])
    checks = {int(r): int(n) for r, n in re.findall(
        r"\[rank=(\d)\] rank \d preempted after (\d+) checks", logs)}
    assert set(checks) == {0, 1}, logs[-3000:]
    assert checks[1] > 3 * checks[0], checks
