"""A local run tells the searcher its capacity (the trials its slots run at once) before
the search starts, as the master does, so ``adaptive_asha`` with automatic concurrency
opens the same trials with ``--local`` as on a cluster of as many slots."""

import json

import yaml

from det_cli_testing import run_det
from determined import searcher
from determined.config import validate_config

CONFIG = """
entrypoint: model_def:TinyTrial
scheduling_unit: 5
hyperparameters:
  global_batch_size: 16
  lr: {type: log, minval: -3, maxval: -1, base: 10}
searcher:
  name: adaptive_asha
  metric: validation_loss
  max_trials: 8
  max_concurrent_trials: 0
  max_length: {batches: 20}
"""


def _opened_at_start(capacity: int) -> int:
    """Trials the searcher opens at its start once told ``capacity``."""
    config = validate_config(yaml.safe_load(CONFIG))
    s = searcher.make_searcher(config)
    s.on_capacity_changed(capacity)
    return sum(isinstance(op, searcher.Create) for op in s.start())


def test_local_adaptive_asha_follows_its_slots(tmp_path, tiny_dir):
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    out = run_det(["e", "create", config, tiny_dir, "--local-dir", tmp_path / "local",
                   "--json", "--no-progress"])
    assert out.returncode == 0, out.stderr
    trials = json.loads(out.stdout)["trials"]
    assert len(trials) == 8
    # A trial's record is made when the searcher creates it: count those created
    # before any trial ended.
    first_end = min(t["end_time"] for t in trials)
    opened = sum(t["start_time"] < first_end for t in trials)
    expected = _opened_at_start(1)
    assert expected < _opened_at_start(8)  # the capacity matters for this config
    assert opened == expected, (opened, expected)


def test_a_trial_stopped_at_its_rung_is_not_promised_a_resume(tmp_path, tiny_dir):
    """A Trial class on one slot: the first trial at a rung has no peers yet and exits
    after a checkpoint. Its log said "it resumes later", then many such trials simply
    completed; it says the searcher decides."""
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    local = tmp_path / "local"
    out = run_det(["e", "create", config, tiny_dir, "--local-dir", local, "--json",
                   "--no-progress"])
    assert out.returncode == 0, out.stderr
    logs = [run_det(["t", "logs", t["trial_id"], "--local-dir", local]).stdout
            for t in json.loads(out.stdout)["trials"]]
    assert "Trial stopped after a checkpoint at" in logs[0], logs[0]
    assert "; it resumes only if the searcher asks for more" in logs[0], logs[0]
    assert not any("it resumes later" in log for log in logs)
