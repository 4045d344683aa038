"""Configs and synthetic learning curves shared by the searcher tests."""

from __future__ import annotations

import copy
import math
import random
from typing import Any, Dict

METRIC = "validation_error"

SPACE: Dict[str, Any] = {
    "global_batch_size": {"type": "const", "val": 32},
    "lr": {"type": "log", "base": 10.0, "minval": -4.0, "maxval": -1.0, "count": 3},
    "n_hidden": {"type": "int", "minval": 8, "maxval": 64, "count": 2},
    "dropout": {"type": "double", "minval": 0.0, "maxval": 0.5, "count": 2},
    "act": {"type": "categorical", "vals": ["relu", "tanh"]},
    "optimizer": {
        "momentum": {"type": "double", "minval": 0.0, "maxval": 0.9, "count": 2},
        "name": {"type": "const", "val": "sgd"},
    },
}

PBT_FIELDS: Dict[str, Any] = {
    "population_size": 6,
    "num_rounds": 4,
    "length_per_round": {"batches": 10},
    "replace_function": {"truncate_fraction": 0.34},
    "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2},
}


def make_config(name: str, seed: int = 12345, space: Any = None, **searcher: Any) -> Dict[str, Any]:
    """A normalized experiment config with defaults applied as the config layer would."""
    fields: Dict[str, Any] = {
        "name": name,
        "metric": METRIC,
        "smaller_is_better": True,
        "max_length": {"batches": 64},
        "source_trial_id": None,
        "source_checkpoint_uuid": None,
    }
    if name in ("adaptive_asha", "adaptive_simple", "adaptive"):
        fields.update(mode="standard", divisor=4.0, max_rungs=5)
    if name == "adaptive_asha":
        fields.update(max_concurrent_trials=0, stop_once=False)
    if name == "pbt":
        fields.update(copy.deepcopy(PBT_FIELDS))
        del fields["max_length"]
    fields.update(searcher)
    return {
        "hyperparameters": copy.deepcopy(SPACE if space is None else space),
        "searcher": fields,
        "reproducibility": {"experiment_seed": seed},
    }


def curve(hparams: Dict[str, Any], units: int, trial_seed: int) -> float:
    """A synthetic learning curve: hparam quality times a decaying length term, plus noise."""
    quality = abs(math.log10(hparams["lr"]) + 2.5) + 0.01 * hparams["n_hidden"] / 64
    noise = random.Random(trial_seed * 7919 + units).random() * 0.02
    return quality * (1.0 + 4.0 / math.sqrt(1 + units)) + noise


def noisy(hparams: Dict[str, Any], units: int, trial_seed: int) -> float:
    """Pure noise (any ranking can happen), for properties that must hold regardless."""
    return random.Random(trial_seed * 31 + units).random()


def op_dicts(result: Any) -> list:
    return [op.to_dict() for op in result.op_log]
