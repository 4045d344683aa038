"""The test-mode copy of an experiment config (SPEC 6.2, ``det e create --test``)."""

import copy
from typing import Any, Dict, Mapping

__all__ = ["one_batch_lengths", "test_mode_config", "validate_as_written"]


def validate_as_written(raw: Mapping[str, Any], source: str) -> None:
    """Validate ``raw`` before the test-mode copy replaces its searcher and periods (as
    0.13's CLI validated the config first), so that a misspelled searcher name or length
    fails the test instead of the first real run. Only ``records_per_epoch`` may be
    missing: a test of one batch needs no epoch size.

    Raises:
        InvalidConfigError: naming each invalid field.
    """
    from determined.config._load import validate_config

    config = dict(raw)
    if not config.get("records_per_epoch"):
        config["records_per_epoch"] = 1
    validate_config(config, source=source)


def one_batch_lengths(config: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of ``config`` whose searcher is a single trial of one batch that validates
    after it, whatever the units of its own lengths (apply it before validating: an
    ``epochs`` length then needs no ``records_per_epoch``, and no unit is added beside
    another)."""
    cfg = copy.deepcopy(config)
    searcher = dict(config.get("searcher") or {})
    cfg["searcher"] = {
        "name": "single",
        "metric": searcher.get("metric"),
        "smaller_is_better": searcher.get("smaller_is_better", True),
        "max_length": {"batches": 1},
    }
    cfg["scheduling_unit"] = 1
    cfg["min_validation_period"] = {"batches": 1}
    cfg["min_checkpoint_period"] = None
    return cfg


def test_mode_config(config: Dict[str, Any]) -> Dict[str, Any]:
    """One trial of one batch that validates and checkpoints, with no restarts and no
    checkpoints kept; works on raw and validated configs (validate the result).

    Example:
        >>> cfg = test_mode_config({"searcher": {"name": "random", "metric": "loss"},
        ...                         "description": "mnist"})
        >>> cfg["searcher"]["max_length"], cfg["description"], cfg["max_restarts"]
        ({'batches': 1}, '[test-mode] mnist', 0)
    """
    cfg = one_batch_lengths(config)
    cfg["max_restarts"] = 0
    cfg["description"] = f"[test-mode] {config.get('description') or ''}".rstrip()
    keep_none = {"save_experiment_best": 0, "save_trial_best": 0, "save_trial_latest": 0}
    storage = cfg.get("checkpoint_storage")
    if isinstance(storage, dict):
        storage.update(keep_none)
    elif "checkpoint_storage" in cfg:  # validated without a storage: the master's default
        cfg["checkpoint_storage"] = dict(keep_none)
    return cfg
