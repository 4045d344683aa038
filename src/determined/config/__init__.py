"""Experiment configuration: schema, defaults, legacy aliases, units, hparam spaces.

A config is a plain dict. :func:`validate_config` checks it against the schema (the
pydantic ``ExperimentConfigModel``, used for validation only) and returns it
normalized; :class:`ExperimentConfig` is a typed read-only view of that dict;
``determined.ExperimentConfig`` (upstream 0.13's name) is the same dict with
upstream's methods, which read through the view.

Example:
    >>> from determined.config import validate_config
    >>> cfg = validate_config({
    ...     "entrypoint": "model_def:MyTrial",
    ...     "hyperparameters": {"global_batch_size": 32},
    ...     "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 10}},
    ... })
    >>> cfg["scheduling_unit"], cfg["searcher"]["smaller_is_better"]
    (100, True)
"""

from determined.common.entrypoint import (
    is_script_entrypoint,
    is_trial_class_entrypoint,
    script_command,
    script_file,
    step_unit,
    step_units,
)
from determined.config._hparams import Categorical, Constant, Double, Integer, Log
from determined._metric_order import MetricOrder
from determined.config._load import (
    MAX_ALIAS_EXPANSION,
    config_warnings,
    load_config,
    local_test_config,
    merge_configs,
    merge_over_defaults,
    parse_yaml,
    validate_config,
    yaml_error_text,
)
from determined.config._schema import check_labels
from determined.config._searcher_metric import (
    assume_metric,
    metric_assumed,
    missing_metric_text,
    record_assumed_metric,
)
from determined.config._secrets import masked_config, masked_fields, unmasked_config
from determined.config._size import (
    ConfigLimitError,
    check_config_json,
    check_config_text,
    check_config_tree,
)
from determined.config._test_mode import one_batch_lengths, test_mode_config, validate_as_written
from determined.config._units import Length, Unit, global_batch_size
from determined.config._access import ExperimentConfig

__all__ = [
    "MAX_ALIAS_EXPANSION",
    "MetricOrder",
    "Categorical",
    "ConfigLimitError",
    "Constant",
    "Double",
    "ExperimentConfig",
    "Integer",
    "Length",
    "Log",
    "Unit",
    "check_config_json",
    "check_config_text",
    "check_config_tree",
    "check_labels",
    "global_batch_size",
    "config_warnings",
    "is_script_entrypoint",
    "is_trial_class_entrypoint",
    "step_unit",
    "step_units",
    "load_config",
    "local_test_config",
    "assume_metric",
    "masked_config",
    "masked_fields",
    "unmasked_config",
    "merge_configs",
    "merge_over_defaults",
    "metric_assumed",
    "missing_metric_text",
    "one_batch_lengths",
    "parse_yaml",
    "record_assumed_metric",
    "yaml_error_text",
    "script_command",
    "script_file",
    "test_mode_config",
    "validate_as_written",
    "validate_config",
]
