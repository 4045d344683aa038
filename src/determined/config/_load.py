"""Load, validate and normalize an experiment config.

``load_config`` reads YAML; ``validate_config`` applies legacy aliases, checks the
whole config against the schema and returns the normalized config as a plain dict
with every default filled in. Every problem found is reported at once, each with
its field path, in one :class:`~determined.errors.InvalidConfigError`.
"""

from __future__ import annotations

import copy
import os
import random
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import pydantic
import yaml

from determined.config import _schema
from determined.config._hparams import tag_space, untag_space
from determined.config._legacy import apply_legacy_aliases
from determined.errors import InvalidConfigError

__all__ = ["load_config", "validate_config", "merge_configs", "parse_yaml"]

_ADJECTIVES = "brave calm eager fancy gentle happy jolly kind lively merry nimble proud quick sunny swift witty".split()
_ANIMALS = "otter falcon panda lynx heron koala badger marten gecko ibis lemur puffin quokka tapir wombat yak".split()


def parse_yaml(text: str, source: str = "experiment config") -> Dict[str, Any]:
    """Parse YAML text that must hold a mapping."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise InvalidConfigError([("", f"not valid YAML: {e}")], source) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidConfigError(
            [("", f"Expected a mapping at the top level. Received: {type(data).__name__}")], source
        )
    return data


def load_config(path: Union[str, os.PathLike]) -> Dict[str, Any]:
    """Read a YAML experiment config file (not yet validated)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InvalidConfigError([("", f"cannot read {path}: {e.strerror}")], str(path)) from None
    return parse_yaml(text, source=f"experiment config {os.fspath(path)}")


def merge_configs(base: Mapping[str, Any], override: Mapping[str, Any]) -> Dict[str, Any]:
    """Merge ``override`` over ``base``: nested maps merge per field, the rest replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_configs(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _path(loc: Tuple[Any, ...]) -> str:
    parts: List[str] = []
    skip_tag_after = {
        "searcher": set(_schema.SEARCHER_NAMES),
        "checkpoint_storage": set(_schema.STORAGE_TYPES),
    }
    in_hparams = False
    prev: Any = None
    for item in loc:
        if prev in skip_tag_after and item in skip_tag_after[prev]:
            prev = item
            continue
        if in_hparams and item in (*_schema.HPARAM_TYPES, "object"):
            prev = item
            continue
        if in_hparams and item == "vals" and prev == "object":
            prev = item
            continue
        if item == "hyperparameters" and not parts:
            in_hparams = True
        parts.append(f"[{item}]" if isinstance(item, int) else str(item))
        prev = item
    return ".".join(parts).replace(".[", "[")


def _describe(err: Mapping[str, Any]) -> Tuple[str, str]:
    path = _path(tuple(err.get("loc", ())))
    msg = str(err.get("msg", ""))
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    head, sep, rest = msg.partition(": ")
    if not path and sep and " " not in head:
        path, msg = head, rest
    if err.get("type") not in ("missing", "value_error", "extra_forbidden") and "input" in err:
        received = err["input"]
        if not isinstance(received, (dict, list)) or len(repr(received)) < 60:
            msg = f"{msg} (received: {received!r})"
    if err.get("type") == "union_tag_invalid":
        ctx = err.get("ctx", {})
        field = ctx.get("discriminator", "").strip("'")
        path = f"{path}.{field}" if path else field
        msg = f"Expected one of {ctx.get('expected_tags')}. Received: {ctx.get('tag')!r}"
    if err.get("type") == "union_tag_not_found":
        field = err.get("ctx", {}).get("discriminator", "").strip("'")
        path = f"{path}.{field}" if path else field
        msg = "Field required"
    if err.get("type") == "extra_forbidden":
        msg = "unknown field (not part of the experiment config schema)"
    return path, msg


def _cross_field_errors(config: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """Checks spanning several fields, run on the raw config so they are reported
    together with the schema's own errors."""
    errors: List[Tuple[str, str]] = []
    internal = config.get("internal")
    native = isinstance(internal, Mapping) and internal.get("native")
    if config.get("entrypoint") is None and not native:
        errors.append(("entrypoint", "Field required (expected '<module>:<object>')"))
    hparams = config.get("hyperparameters")
    if isinstance(hparams, Mapping) and "global_batch_size" not in hparams:
        errors.append(
            ("hyperparameters.global_batch_size", "Field required (expected a positive integer)")
        )
    rpe = config.get("records_per_epoch", 0)
    if not (isinstance(rpe, int) and rpe > 0):
        searcher = config.get("searcher") if isinstance(config.get("searcher"), Mapping) else {}
        candidates = [
            ("min_validation_period", config.get("min_validation_period")),
            ("min_checkpoint_period", config.get("min_checkpoint_period")),
        ] + [(f"searcher.{k}", searcher.get(k)) for k in ("max_length", "budget", "length_per_round")]
        for path, length in candidates:
            if isinstance(length, Mapping) and "epochs" in length:
                errors.append(
                    (path, "a length in epochs needs records_per_epoch > 0 in the experiment config")
                )
    return errors


def _default_description(seed: int) -> str:
    rng = random.Random(seed)
    return f"Experiment ({rng.choice(_ADJECTIVES)}-{rng.choice(_ADJECTIVES)}-{rng.choice(_ANIMALS)})"


def validate_config(
    raw: Mapping[str, Any],
    *,
    defaults: Optional[Mapping[str, Any]] = None,
    source: str = "experiment config",
) -> Dict[str, Any]:
    """Validate ``raw`` and return the normalized config with all defaults applied.

    Args:
        raw: the parsed YAML mapping.
        defaults: values merged under ``raw`` (e.g. the master's checkpoint storage).
        source: names the config in error messages.

    Raises:
        InvalidConfigError: listing every invalid field by path.
    """
    if not isinstance(raw, Mapping):
        raise InvalidConfigError(
            [("", f"Expected a mapping. Received: {type(raw).__name__}")], source
        )
    config = apply_legacy_aliases(dict(raw))
    if defaults:
        config = merge_configs(defaults, config)
    if isinstance(config.get("hyperparameters"), dict):
        config["hyperparameters"] = tag_space(config["hyperparameters"])
    errors = _cross_field_errors(config)
    try:
        model = _schema.ExperimentConfigModel.model_validate(config)
    except pydantic.ValidationError as e:
        errors += [_describe(err) for err in e.errors()]
    if errors:
        raise InvalidConfigError(errors, source)

    out = model.model_dump(mode="json")
    out["hyperparameters"] = untag_space(out["hyperparameters"])
    out["searcher"] = {
        k: v for k, v in out["searcher"].items()
        if v is not None or k in ("source_trial_id", "source_checkpoint_uuid")
    }
    if out["reproducibility"]["experiment_seed"] is None:
        out["reproducibility"]["experiment_seed"] = int(time.time()) % (2**31 - 1)
    if not out.get("description"):
        out["description"] = _default_description(out["reproducibility"]["experiment_seed"])
    return out
