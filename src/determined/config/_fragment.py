"""Checking a partial experiment config (a template) against the schema.

A template need not be a whole config: the experiment's own config fills in what it
leaves out. So a missing field is no error here, but an unknown field, or a value of
the wrong type, is: it would fail only later, when the template is used.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Tuple

import pydantic

from determined.config import _schema
from determined.config._hparams import tag_space
from determined.config._legacy import apply_legacy_aliases
from determined.config._load import _describe

__all__ = ["fragment_errors"]

#: What a field the experiment config may still supply is reported as.
_INCOMPLETE = ("missing", "union_tag_not_found")


def fragment_errors(raw: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """``(field path, message)`` for each field of ``raw`` that no experiment config
    could hold (unknown, or wrongly typed); fields it lacks are not errors.

    Example:
        >>> fragment_errors({"resources": {"slots_per_trial": 2}})
        []
        >>> fragment_errors({"resources": {"slot_per_trial": 2}})
        [('resources.slot_per_trial', 'unknown field (not part of the experiment config schema)')]
    """
    config = apply_legacy_aliases(dict(raw))
    if isinstance(config.get("hyperparameters"), dict):
        config["hyperparameters"] = tag_space(config["hyperparameters"])
    searcher = config.get("searcher")
    if isinstance(searcher, Mapping) and not {"max_length", "time_metric", "max_time"} & set(
            searcher):
        # A searcher's check that it has a length: the experiment may give the length.
        config["searcher"] = dict(searcher, max_length={"batches": 1})
    try:
        _schema.ExperimentConfigModel.model_validate(config)
    except pydantic.ValidationError as e:
        return [_describe(err) for err in e.errors() if err.get("type") not in _INCOMPLETE]
    return []
