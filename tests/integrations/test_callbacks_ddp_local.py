"""``DeterminedCallback`` (Lightning) and ``DetCallback`` (Hugging Face) with two DDP
ranks on CPU (gloo), started by ``determined.launch.torch_distributed`` as the
entrypoint of a ``det experiment create --local --slots 2`` run: paused by Ctrl-C mid
training (both ranks stop at the same step), resumed with ``det experiment resume``,
every metric and checkpoint stored once (tests/fixtures/ddp_callbacks)."""

import json
import re

import pytest
import yaml

from det_cli_testing import run_det
from tests.core.core_testing import ROOT, interrupt_after_first_checkpoint, local_rows

pytestmark = pytest.mark.timeout(300)

FIXTURES = ROOT / "tests" / "fixtures" / "ddp_callbacks"
LENGTH = 24  # searcher.max_length in batches


def _done_steps(logs):
    """rank -> the global step each rank's script printed it ended at."""
    return {int(r): int(s) for r, s in re.findall(r"\[rank=(\d)\] rank \d done at global step (\d+)",
                                                   logs)}


@pytest.mark.parametrize("framework", ["lightning", "hf"])
def test_two_ranks_pause_resume_and_store_everything_once(tmp_path, framework):
    cfg = yaml.safe_load((FIXTURES / f"{framework}.yaml").read_text())
    cfg["hyperparameters"]["sleep"] = 0.25  # 6 s of training: time to pause it mid-way
    cfg["searcher"]["max_length"]["batches"] = LENGTH
    if framework == "hf":
        cfg["hyperparameters"]["rank1_save_delay"] = 0.3
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    local = tmp_path / "local"
    out = interrupt_after_first_checkpoint(
        ["e", "create", config, FIXTURES, "--local", "--slots", "2", "--local-dir", local,
         "--no-progress"], local)
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    assert local_rows(local, "SELECT state FROM experiments") == [("PAUSED",)], (
        out[-3000:] + "\n--- trial logs:\n" + logs[-5000:])
    paused = _done_steps(logs)
    assert set(paused) == {0, 1} and paused[0] == paused[1], logs[-3000:]
    stopped_at = paused[0]
    assert 4 <= stopped_at < LENGTH
    # The pause's checkpoint holds the step both ranks stopped at.
    assert max(b for (b,) in local_rows(local, "SELECT total_batches FROM checkpoints")) == stopped_at

    resumed = run_det(["e", "resume", "1", "--local-dir", local, "--slots", "2", "--json",
                       "--no-progress"], timeout=240)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    (trial,) = json.loads(resumed.stdout)["trials"]
    assert trial["state"] == "COMPLETED" and trial["batches"] == LENGTH, trial
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    assert _done_steps(logs.split("Trial starts")[-1]) == {0: LENGTH, 1: LENGTH}, logs[-3000:]

    # Reported by the chief only, each once: no step trained twice after the resume.
    metrics = local_rows(local, "SELECT kind, total_batches FROM metrics ORDER BY id")
    assert [b for k, b in metrics if k == "training"] == list(range(1, LENGTH + 1))
    validations = [b for k, b in metrics if k == "validation"]  # Lightning's own too
    assert validations == sorted(set(validations)) and validations[-1] == LENGTH
    checkpoints = local_rows(local, "SELECT total_batches, resources FROM checkpoints")
    steps = [b for b, _ in checkpoints]
    assert len(steps) == len(set(steps)) and stopped_at in steps and LENGTH in steps
    for batches, resources in checkpoints:
        files = set(json.loads(resources))
        if framework == "lightning":
            assert files == {"metadata.json", "lightning.ckpt"}
        else:  # each rank's RNG state, written by that rank
            name = f"checkpoint-{batches}"
            assert {"metadata.json", f"{name}/model.safetensors", f"{name}/rng_state_0.pth",
                    f"{name}/rng_state_1.pth", f"{name}/trainer_state.json"} <= files, files


@pytest.mark.parametrize("framework, fix", [
    ("lightning", "; log it with self.log in validation_step or change searcher.metric"),
    ("hf", "; have the Trainer's evaluation log it (compute_metrics; evaluation names start "
           "with eval_) or change searcher.metric"),
])
def test_a_searcher_metric_the_callback_lacks_is_said_in_the_shared_wording(tmp_path, framework,
                                                                            fix):
    # One rank, the searcher's first validation: the trial fails saying, in the wording
    # every path shares (config.missing_metric_text), which metrics the callback received.
    cfg = yaml.safe_load((FIXTURES / f"{framework}.yaml").read_text())
    cfg["searcher"]["metric"] = "nope"
    cfg["searcher"]["max_length"]["batches"] = 2
    cfg["resources"]["slots_per_trial"] = 1
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    local = tmp_path / "local"
    out = run_det(["e", "create", config, FIXTURES, "--local", "--local-dir", local,
                   "--no-progress"], timeout=240)
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    assert local_rows(local, "SELECT state FROM trials") == [("ERROR",)], (
        out.stdout[-3000:] + out.stderr[-3000:] + "\n--- trial logs:\n" + logs[-5000:])
    callback = "DeterminedCallback" if framework == "lightning" else "DetCallback"
    said = re.search(rf"the validation metrics {callback} received lack the searcher metric "
                     r"'nope' \(received: ([^)]*)\)(.*)", logs)
    assert said, logs[-5000:]
    assert ("validation_loss" if framework == "lightning" else "eval_loss") in said[1]
    assert said[2].startswith(fix), said[0]
