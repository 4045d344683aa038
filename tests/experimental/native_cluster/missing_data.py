"""Reads a file that .detignore keeps out of the upload: fine here, fails on the cluster."""

from determined import experimental
from model_def import TinyTrial

with open("data.txt") as f:
    lr = float(f.read())


class ScriptTrial(TinyTrial):
    """Defined in the script, so the cluster re-runs the script to get it."""


experimental.create(ScriptTrial, {
    "hyperparameters": {"global_batch_size": 16, "lr": lr, "dropout": 0.2},
    "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 10}},
    "max_restarts": 0,
}, context_dir=".")
