"""The master stores an experiment's snapshot after every event: ended trials' entries
are encoded once, and the text is what encoding the whole snapshot gives."""

import json
import math

from determined import engine
from determined.config import validate_config
from determined.master.db._types import compact_json
from determined.master.db import _snapshot_json
from determined.master.db._snapshot_json import SnapshotJSON as _SnapshotJSON


def _snapshot(ended, searcher_ended, live):
    """Shaped as ExperimentCore.snapshot(): the same dicts for ended trials each time,
    new ones for live trials."""
    return {"version": 1, "state": "ACTIVE", "checkpoints": {"u": {"metric": math.nan}},
            "trials": ended + [{"request_id": 9, "batches": live, "best": -math.inf}],
            "searcher": {"rng": [3, [1, 2], None], "method": {"trials": [1]},
                         "trials": searcher_ended + [{"request_id": 9, "closed": False}]}}


def test_ended_trials_are_encoded_once_and_the_text_is_unchanged(monkeypatch):
    ended = [{"request_id": i, "hparams": {"lr": 0.1 * i, "name": "x\u00e9"}} for i in range(3)]
    searcher_ended = [{"request_id": i, "closed": True} for i in range(3)]
    encoded = []
    monkeypatch.setattr(_snapshot_json, "compact_json",
                        lambda value: encoded.append(value) or compact_json(value))
    encoder = _SnapshotJSON()
    for live in (1, 2, 3):
        snapshot = _snapshot(ended, searcher_ended, live)
        encoded.clear()
        assert encoder.encode(snapshot) == compact_json(snapshot)
        again = [e for e in encoded if any(e is x for x in ended + searcher_ended)]
        assert len(again) == (6 if live == 1 else 0)


def test_a_real_core_snapshot_round_trips():
    config = validate_config({
        "hyperparameters": {"global_batch_size": 4,
                            "lr": {"type": "double", "minval": 0.01, "maxval": 1.0}},
        "searcher": {"name": "random", "metric": "loss", "max_trials": 3,
                     "max_length": {"batches": 8}},
        "checkpoint_storage": {"type": "shared_fs", "host_path": "/tmp/unused"},
        "reproducibility": {"experiment_seed": 7}, "entrypoint": "model_def:Trial",
    })
    core = engine.ExperimentCore(config)
    core.start()
    encoder = _SnapshotJSON()
    for _ in range(2):
        snapshot = core.snapshot()
        text = encoder.encode(snapshot)
        assert text == compact_json(snapshot) and len(snapshot["trials"]) == 3
        assert engine.ExperimentCore.restore(config, json.loads(text)).snapshot() == snapshot
