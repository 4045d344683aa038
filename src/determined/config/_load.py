"""Load, validate and normalize an experiment config.

``load_config`` reads YAML; ``validate_config`` applies legacy aliases, checks the
whole config against the schema and returns the normalized config as a plain dict
with every default filled in. Every problem found is reported at once, each with
its field path, in one :class:`~determined.errors.InvalidConfigError`.

YAML is read as upstream Determined read it: YAML 1.2 (ruamel.yaml), so ``1e-4``
is a float and ``yes`` a string. Aliases may not expand to more than
``MAX_ALIAS_EXPANSION`` values (a few hundred bytes of nested aliases would
otherwise expand to billions of values once anything walks the config).
"""

from __future__ import annotations

import copy
import os
import random
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import pydantic
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from determined.config import _schema
from determined.common.entrypoint import is_script_entrypoint
from determined.config._hparams import tag_space, untag_space
from determined.config._legacy import apply_legacy_aliases
from determined.config._secrets import MASK
from determined.errors import InvalidConfigError

__all__ = [
    "MAX_ALIAS_EXPANSION",
    "config_warnings",
    "load_config",
    "local_test_config",
    "merge_configs",
    "merge_over_defaults",
    "parse_yaml",
    "validate_config",
    "yaml_error_text",
]

# Values that aliases may add to a config beyond those written out in its text.
MAX_ALIAS_EXPANSION = 100_000

_ADJECTIVES = "brave calm eager fancy gentle happy jolly kind lively merry nimble proud quick sunny swift witty".split()
_ANIMALS = "otter falcon panda lynx heron koala badger marten gecko ibis lemur puffin quokka tapir wombat yak".split()


def _yaml_loader() -> YAML:
    return YAML(typ="safe", pure=True)  # YAML 1.2 core schema; duplicate keys are errors


def _expanded_size(data: Any, source: str) -> Tuple[int, int]:
    """(values after alias expansion, values written out): linear time; a node that
    aliases share counts once per reference in the first number, once in the second.
    A recursive alias is an error."""
    sizes: Dict[int, int] = {}
    active: set = set()
    literal = 0

    def size(node: Any) -> int:
        nonlocal literal
        if not isinstance(node, (dict, list)):
            return 1
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise InvalidConfigError([("", "a YAML alias refers to a node that contains it "
                                           "(recursive alias)")], source)
        active.add(key)
        children = list(node.keys()) + list(node.values()) if isinstance(node, dict) else node
        literal += 1 + sum(1 for c in children if not isinstance(c, (dict, list)))
        total = 1 + sum(size(c) for c in children)
        active.discard(key)
        sizes[key] = total
        return total

    try:
        return size(data), literal
    except RecursionError:
        raise InvalidConfigError([("", "nested too deeply")], source) from None


def _unshare(node: Any) -> Any:
    """A tree copy of ``node``: values that aliases shared become independent copies."""
    if isinstance(node, dict):
        return {k: _unshare(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_unshare(v) for v in node]
    return node


def yaml_error_text(error: Exception) -> str:
    """A YAML error (PyYAML's or ruamel's) for people: the position and the problem, e.g.
    ``line 4, column 1: expected ',' or ']', but got '<stream end>' (while parsing a flow
    sequence from line 3, column 11)``, without the parser's echo of the text (which names "<unicode string>")."""
    problem, mark = getattr(error, "problem", None), getattr(error, "problem_mark", None)
    if not problem:
        return str(error)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    context, started = getattr(error, "context", None), getattr(error, "context_mark", None)
    if context and started is not None:
        context += f" from line {started.line + 1}, column {started.column + 1}"
    return where + problem + (f" ({context})" if context else "")


def parse_yaml(text: str, source: str = "experiment config") -> Dict[str, Any]:
    """Parse YAML 1.2 text that must hold a mapping.

    Raises:
        InvalidConfigError: not YAML, not a mapping, or aliases expanding to more than
            ``MAX_ALIAS_EXPANSION`` values.

    Example:
        >>> parse_yaml("lr: 1e-4\\nflag: yes")
        {'lr': 0.0001, 'flag': 'yes'}
    """
    try:
        data = _yaml_loader().load(text)
    except YAMLError as e:
        raise InvalidConfigError([("", f"not valid YAML: {yaml_error_text(e)}")],
                                 source) from None
    except RecursionError:
        raise InvalidConfigError([("", "not valid YAML: nested too deeply")], source) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InvalidConfigError(
            [("", f"Expected a mapping at the top level. Received: {type(data).__name__}")], source
        )
    expanded, distinct = _expanded_size(data, source)
    if expanded - distinct > MAX_ALIAS_EXPANSION:
        raise InvalidConfigError(
            [("", f"YAML aliases expand this config to {expanded:,} values; at most "
                  f"{MAX_ALIAS_EXPANSION:,} values may come from aliases (write the values "
                  "out, or use fewer nested aliases)")], source)
    return _unshare(data) if expanded != distinct else data


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
        errors.append(("entrypoint", "Field required (expected a Trial class "
                                     "'<module>:<object>' or a command such as "
                                     "'python3 train.py')"))
    # A script counts its own steps in the searcher's unit: no batch size, no epoch size.
    script = is_script_entrypoint(config.get("entrypoint"))
    hparams = config.get("hyperparameters")
    if isinstance(hparams, Mapping) and "global_batch_size" not in hparams and not script:
        errors.append(
            ("hyperparameters.global_batch_size", "Field required (expected a positive integer)")
        )
    searcher = config.get("searcher")
    if config.get("entrypoint") is not None and not script and isinstance(searcher, Mapping):
        errors += _trial_class_searcher_errors(searcher)
    rpe = config.get("records_per_epoch", 0)
    if not (isinstance(rpe, int) and rpe > 0) and not script:
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
    for section in ("checkpoint_storage", "data_layer"):
        value = config.get(section)
        if isinstance(value, Mapping) and value.get("secret_key") == MASK:
            errors.append((f"{section}.secret_key",
                           f"{MASK!r} is how the API shows a secret (e.g. in a config copied "
                           "from `det e config` or the web UI): give the real key, or leave "
                           "it out to use the credentials of the environment"))
    return errors


def _trial_class_searcher_errors(searcher: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """A Trial class trains what the searcher's operations say: it needs a length; a
    time metric (0.38), or no length at all, is for scripts, which train their own."""
    script_only = "is for script entrypoints (a command such as 'python3 train.py')"
    errors = [(f"searcher.{key}", f"{script_only}; a Trial class needs searcher.max_length")
              for key in ("time_metric", "max_time") if searcher.get(key) is not None]
    # (adaptive_asha without either is the schema's error)
    lengthless = searcher.get("name") in ("single", "random", "grid")
    if lengthless and searcher.get("max_length") is None and not errors:
        errors.append(("searcher.max_length", "Field required for a Trial class entrypoint "
                                              f"(a searcher without it {script_only})"))
    return errors


# Fields 0.13 accepted whose effect needs containers (Docker, Kubernetes) or Horovod;
# accepted here without effect. Paths are dotted; ``[]`` means every list element.
_WITHOUT_EFFECT = {
    "environment.image": "the trial runs in this machine's Python environment, not an image",
    "environment.force_pull_image": "no container images are pulled",
    "environment.registry_auth": "no container registry is used",
    "environment.ports": "no container ports are exposed",
    "environment.pod_spec": "there is no Kubernetes",
    "resources.shm_size": "trials share /dev/shm of this machine",
    "resources.native_parallel": "slots_per_trial > 1 runs one process per slot",
    "resources.agent_label": "agents have no labels",
    "optimizations.tensor_fusion_threshold": "there is no Horovod",
    "optimizations.tensor_fusion_cycle_time": "there is no Horovod",
    "optimizations.auto_tune_tensor_fusion": "there is no Horovod",
    "optimizations.gradient_compression": "gradients are all-reduced uncompressed (gloo)",
    "bind_mounts[].propagation": "mounts are links, not container mounts",
    "bind_mounts[].read_only": "mounts are links; the host directory's own permissions apply",
    "checkpoint_storage.propagation": "checkpoints are written to host_path directly",
    "data_layer.container_storage_path": "host_storage_path is used directly",
    "data_layer.local_cache_container_path": "local_cache_host_path is used directly",
    "searcher.bracket_rungs": "brackets follow mode and max_rungs",
}

# 0.13's defaults of those fields: a config that spells one out (as many examples do)
# asks for what happens here anyway, so it gets no warning.
_DEFAULTS_WITHOUT_EFFECT: Dict[str, Any] = {
    "environment.force_pull_image": False,
    "environment.registry_auth": None,
    "environment.ports": {},
    "environment.pod_spec": None,
    "resources.shm_size": None,
    "resources.native_parallel": False,
    "resources.agent_label": "",
    "optimizations.tensor_fusion_threshold": 64,
    "optimizations.tensor_fusion_cycle_time": 5,
    "optimizations.auto_tune_tensor_fusion": False,
    "optimizations.gradient_compression": False,
    "bind_mounts[].propagation": "rprivate",
    "bind_mounts[].read_only": False,
    "checkpoint_storage.propagation": "rprivate",
}
_ABSENT = object()


def _present(config: Any, parts: List[str], default: Any = _ABSENT) -> bool:
    """Whether the field at ``parts`` is set (to other than ``default``, where given)."""
    if not parts:
        return default is _ABSENT or config != default or type(config) is not type(default)
    head, rest = parts[0], parts[1:]
    if head.endswith("[]"):
        items = config.get(head[:-2]) if isinstance(config, Mapping) else None
        return isinstance(items, list) and any(_present(i, rest, default) for i in items)
    return (isinstance(config, Mapping) and head in config
            and _present(config[head], rest, default))


def config_warnings(raw: Mapping[str, Any]) -> List[str]:
    """One warning per field of ``raw`` that is accepted but has no effect here (set
    to its 0.13 default, none).

    Example:
        >>> config_warnings({"resources": {"shm_size": 1024}})
        ['resources.shm_size is accepted but has no effect here: trials share /dev/shm of this machine']
        >>> config_warnings({"resources": {"native_parallel": False}})
        []
    """
    if not isinstance(raw, Mapping):
        return []
    config = apply_legacy_aliases(dict(raw))
    return [
        f"{path.replace('[]', '[*]')} is accepted but has no effect here: {why}"
        for path, why in _WITHOUT_EFFECT.items()
        if _present(config, path.split("."), _DEFAULTS_WITHOUT_EFFECT.get(path, _ABSENT))
    ]


# What ``det e create --local --test`` merges a partial config over (as 0.13's
# local test mode did): a searcher without a name or metric works there (a test-mode
# trial does not require the searcher metric, see harness._runner).
_LOCAL_TEST_DEFAULTS: Dict[str, Any] = {
    "searcher": {"name": "single", "metric": "validation_loss", "max_length": {"batches": 1}},
    "hyperparameters": {},
}


def local_test_config(raw: Mapping[str, Any]) -> Dict[str, Any]:
    """``raw`` merged over local-test-mode defaults (then use ``test_mode_config``).

    Example:
        >>> local_test_config({"searcher": {"metric": "loss"}})["searcher"]["name"]
        'single'
        >>> local_test_config({"searcher": {"max_length": {"epochs": 2}}})["searcher"]["max_length"]
        {'epochs': 2}
    """
    return merge_over_defaults(_LOCAL_TEST_DEFAULTS, raw)


#: Searcher fields that are a length (legacy spellings included).
_SEARCHER_LENGTHS = ("max_length", "length_per_round", "budget", "max_steps",
                     "target_trial_steps", "step_budget", "steps_per_round")


def merge_over_defaults(defaults: Mapping[str, Any], raw: Mapping[str, Any]) -> Dict[str, Any]:
    """``raw`` merged section by section over ``defaults`` (``merge_configs``), except
    that a searcher giving a length of its own keeps none of the defaults' lengths (a
    length has exactly one unit)."""
    merged = merge_configs(defaults, {k: v for k, v in raw.items() if k != "searcher"})
    searcher = raw.get("searcher", defaults.get("searcher"))
    base = defaults.get("searcher")
    if isinstance(searcher, Mapping) and isinstance(base, Mapping):
        if any(k in searcher for k in _SEARCHER_LENGTHS):
            base = {k: v for k, v in base.items() if k not in _SEARCHER_LENGTHS}
        searcher = merge_configs(base, searcher)
    if searcher is not None:
        merged["searcher"] = copy.deepcopy(searcher)  # not a mapping: validation names it
    return merged


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
    if "hyperparameters" not in config and is_script_entrypoint(config.get("entrypoint")):
        config["hyperparameters"] = {}  # a script may have none (Determined 0.38)
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
        out["description"] = out.get("name") or _default_description(
            out["reproducibility"]["experiment_seed"])
    return out
