"""``det experiment create --local`` with ``resources.slots_per_trial: 2``: one process per slot."""

import json
import os
import pathlib
import re
import shutil

import yaml

from det_cli_testing import run_det

MODEL = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "dist_pytorch"


def create(tmp_path, slots, **changes):
    with open(MODEL / "const.yaml") as f:
        cfg = yaml.safe_load(f)
    cfg.update(changes)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    out = run_det(["experiment", "create", config, MODEL, "--local", "--local-dir",
                   tmp_path / "local", "--slots", slots, "--json"], timeout=240)
    result = json.loads(out.stdout) if out.stdout.strip().startswith("{") else None
    return out, result


def test_distributed_local_experiment_completes(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    out, result = create(tmp_path, 2, data={"log_dir": str(logs)})
    assert out.returncode == 0, out.stdout + out.stderr
    assert result["state"] == "COMPLETED"
    (trial,) = result["trials"]
    assert trial["batches"] == 40 and trial["state"] == "COMPLETED" and trial["restarts"] == 0
    assert os.path.isdir(result["best_checkpoint_path"])
    # Both ranks trained every batch, on different data.
    for rank in (0, 1):
        assert len((logs / f"seen-{rank}.txt").read_text().splitlines()) == 40
    events = (logs / "events.txt").read_text().splitlines()
    # Validation callbacks run on every rank with the same (reduced) metrics; the
    # checkpoint ones on the chief, which writes checkpoints.
    validations = {r: [e.split(" ", 1)[1] for e in events
                       if e.startswith(f"{r} validation_end")] for r in (0, 1)}
    assert validations[0] and validations[0] == validations[1], events
    assert all(e.startswith("0 ") for e in events if "checkpoint_end" in e)


def test_a_killed_rank_fails_the_trial_which_restarts_from_its_checkpoint(tmp_path):
    marker = tmp_path / "crashed"
    out, result = create(
        tmp_path, 2,
        hyperparameters={"global_batch_size": 16, "lr": 0.1, "crash_rank": 1,
                         "crash_once_at_batch": 25},
        data={"crash_marker": str(marker)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert marker.exists()
    (trial,) = result["trials"]
    assert trial["state"] == "COMPLETED" and trial["batches"] == 40
    assert trial["restarts"] == 1
    log = pathlib.Path(result["directory"], "trials", f"{trial['trial_id']}.log").read_text()
    assert "restored from checkpoint" in log and "rank 1" in log


def test_too_few_slots_for_a_trial_is_a_clear_error(tmp_path):
    out, _ = create(tmp_path, 1)
    assert out.returncode != 0
    assert "resources.slots_per_trial" in out.stderr and "--slots 2" in out.stderr


TALKING_TRIAL = """import logging

from model_def import DistTrial


class TalkingTrial(DistTrial):
    def __init__(self, context):
        super().__init__(context)
        logging.getLogger("talk").info("rank %d is ready", self.rank)
        logging.getLogger("talk").warning("rank %d warns", self.rank)
"""


def test_every_ranks_log_lines_read_time_level_rank_message(tmp_path):
    """Rank 0's lines read ``12:04:31 INFO message``; rank 1's kept a long format
    (``2026-11-29 06:40:36,123 [rank 1] INFO message``)."""
    model_dir = tmp_path / "model"
    shutil.copytree(MODEL, model_dir, ignore=shutil.ignore_patterns("__pycache__"))
    (model_dir / "talk_def.py").write_text(TALKING_TRIAL)
    with open(MODEL / "const.yaml") as f:
        cfg = yaml.safe_load(f)
    cfg.update(entrypoint="talk_def:TalkingTrial", searcher={
        "name": "single", "metric": "validation_loss", "max_length": {"batches": 10}})
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    local = tmp_path / "local"
    out = run_det(["e", "create", config, model_dir, "--local-dir", local, "--slots", "2",
                   "--no-progress"], timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    for rank in (0, 1):
        for level, text in (("INFO", "is ready"), ("WARNING", "warns")):
            expected = rf"\d\d:\d\d:\d\d {level} \[rank {rank}\] rank {rank} {text}"
            assert [l for l in logs.splitlines() if re.fullmatch(expected, l)], logs
    # Every logged line, whichever rank wrote it, in the one short format.
    logged = [l for l in logs.splitlines() if re.search(r"\b(INFO|WARNING|ERROR)\b", l)]
    assert logged and all(re.match(r"\d\d:\d\d:\d\d (INFO|WARNING|ERROR) \S", l)
                          for l in logged), logs


def test_ranks_under_the_torch_launcher_name_their_rank_once(tmp_path):
    """A Trial class under ``determined.launch.torch_distributed --trial``: each rank's
    lines read ``[rank=1] 12:04:31 INFO message`` (``wrap_rank``'s prefix); they named
    the rank twice (``[rank=0] 12:04:31 INFO [rank 0] checkpoint ...``)."""
    model_dir = tmp_path / "model"
    shutil.copytree(MODEL, model_dir, ignore=shutil.ignore_patterns("__pycache__"))
    (model_dir / "talk_def.py").write_text(TALKING_TRIAL)
    with open(MODEL / "const.yaml") as f:
        cfg = yaml.safe_load(f)
    cfg.update(entrypoint="python3 -m determined.launch.torch_distributed --trial "
                          "talk_def:TalkingTrial",
               searcher={"name": "single", "metric": "validation_loss",
                         "max_length": {"batches": 10}})
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    local = tmp_path / "local"
    out = run_det(["e", "create", config, model_dir, "--local-dir", local, "--slots", "2",
                   "--no-progress"], timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    logs = run_det(["t", "logs", "1", "--local-dir", local]).stdout
    for rank in (0, 1):
        for level, text in (("INFO", "is ready"), ("WARNING", "warns")):
            expected = rf"\[rank={rank}\] \d\d:\d\d:\d\d {level} rank {rank} {text}"
            assert [l for l in logs.splitlines() if re.fullmatch(expected, l)], logs
    assert re.search(r"^\[rank=0\] \d\d:\d\d:\d\d INFO checkpoint ", logs, re.M), logs
    assert "[rank 0]" not in logs and "[rank 1]" not in logs, logs
