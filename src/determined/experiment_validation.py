"""One validation path for a new experiment, run before anything is stored.

The master's ``POST /experiments`` and ``det experiment create --local`` both call
:func:`validate_experiment`. It checks, in order, everything that could otherwise
fail only after the experiment was written down (and then fail again at every
restart of the master):

1. every integer fits a signed 64-bit column;
2. the config schema (:func:`determined.config.validate_config`);
3. the searcher can be built from the config and started;
4. the context: the uploaded archive is safe and small enough
   (:func:`determined.common.api.check_context_archive`), or the local model
   directory exists; either holds the entrypoint's module;
5. the checkpoint storage backend can be built (and its bucket exists and takes the
   config's own credentials, where the store can be asked; a shared_fs ``host_path``
   the config gives exists, where trials run on this machine).

Errors name the field: :class:`~determined.errors.InvalidConfigError` for 1-3, 5 and
the entrypoint, :class:`~determined.common.api.ContextArchiveError` (an
``InvalidModelDefError``) for the archive or the model directory.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from determined import searcher as searchers
from determined.common.api._context_archive import ContextArchive, check_context_archive
from determined.common.int64 import INT64_MAX, INT64_MIN
from determined.config import is_script_entrypoint, script_file, validate_config
from determined.errors import DeterminedError, InvalidConfigError, InvalidModelDefError
from determined.storage import ObjectStoreStorageManager, build_storage, missing_host_path

__all__ = ["ValidExperiment", "out_of_range_ints", "validate_experiment"]


class ValidExperiment(NamedTuple):
    """A validated experiment: the normalized config and what its archive holds."""

    config: Dict[str, Any]
    context: Optional[ContextArchive]


def out_of_range_ints(value: Any, path: str = "") -> List[Tuple[str, str]]:
    """``(field path, message)`` for every integer in ``value`` outside int64."""
    errors: List[Tuple[str, str]] = []
    if isinstance(value, bool):
        return errors
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            errors.append((path, f"Expected an integer between {INT64_MIN} and {INT64_MAX}. "
                                 f"Received: {path or 'value'}={value}"))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            errors += out_of_range_ints(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            errors += out_of_range_ints(v, f"{path}[{i}]")
    return errors


def _defaults(raw: Any, default_storage: Optional[Mapping[str, Any]]) -> Tuple[Any, Dict[str, Any]]:
    """The raw config and the defaults merged under it: the default checkpoint storage,
    unless the config names a backend of another type (a null section means the
    default)."""
    if not isinstance(raw, Mapping):
        return raw, {}
    if "checkpoint_storage" in raw and raw["checkpoint_storage"] is None:
        raw = {k: v for k, v in raw.items() if k != "checkpoint_storage"}
    own = raw.get("checkpoint_storage")
    if not default_storage or (isinstance(own, Mapping)
                               and own.get("type") not in (None, "shared_fs")):
        return raw, {}
    return raw, {"checkpoint_storage": dict(default_storage)}


_FIELD = re.compile(r"Expected (?:the )?([A-Za-z_][\w.\[\]]*)")


def _searcher_field(message: str) -> str:
    """The config path a searcher error names (``max_length`` -> ``searcher.max_length``)."""
    m = _FIELD.search(message)
    if not m:
        return "searcher"
    name = m.group(1)
    if name.split(".")[0] in ("searcher", "hyperparameters", "reproducibility"):
        return name
    return f"searcher.{name}"


def _check_searcher(config: Dict[str, Any], source: str) -> None:
    try:
        searchers.make_searcher(config).start()
    except (ValueError, TypeError, KeyError, DeterminedError) as e:
        message = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
        raise InvalidConfigError([(_searcher_field(message), message)], source) from None


def _entrypoint_module(config: Mapping[str, Any]) -> str:
    if is_script_entrypoint(config.get("entrypoint")):
        return ""
    return str(config.get("entrypoint") or "").split(":")[0].split(".")[0]


def _check_context(config: Dict[str, Any], context: Optional[bytes], model_dir: Optional[str],
                   source: str, max_ratio: Optional[float] = None,
                   ratio_floor: int = 0) -> Optional[ContextArchive]:
    module = _entrypoint_module(config)
    # A ``python3 FILE.py`` command: the file must come with the context.
    script = script_file(config["entrypoint"]) if is_script_entrypoint(
        config.get("entrypoint")) else None
    found: Optional[ContextArchive] = None
    if context is not None:
        found = check_context_archive(context, max_ratio=max_ratio, ratio_floor=ratio_floor)
        present = found.has_module(module) if module else True
        has_script = script is None or posixpath.normpath(script) in found.names
        where = "the uploaded context directory"
    elif model_dir is not None:
        if not os.path.isdir(model_dir):
            raise InvalidModelDefError(
                f"Model directory {model_dir} does not exist or is not a directory")
        present = not module or os.path.isfile(os.path.join(model_dir, f"{module}.py")) \
            or os.path.isdir(os.path.join(model_dir, module))
        has_script = script is None or os.path.isfile(os.path.join(model_dir, script))
        where = f"model directory {model_dir}"
    else:
        return None
    if not present:
        raise InvalidConfigError(
            [("entrypoint", f"{where} has no module {module!r} ({module}.py or a package "
                            f"{module}/) named by entrypoint {config.get('entrypoint')!r}")],
            source)
    if not has_script:
        raise InvalidConfigError(
            [("entrypoint", f"{where} has no file {script!r} run by entrypoint "
                            f"{config.get('entrypoint')!r}")], source)
    return found


def _check_storage(config: Dict[str, Any], source: str, own_host_path: bool,
                   trials_run_here: bool) -> None:
    """``own_host_path``: the config gives a shared_fs ``host_path`` of its own and
    trials run on this machine, so that it must exist here (it is not created).
    ``trials_run_here``: the trials use this machine's file systems and ambient
    (environment) object store credentials too, so their problems refuse it."""
    storage = config.get("checkpoint_storage")
    problem = missing_host_path(storage) if own_host_path else None
    if problem:
        raise InvalidConfigError([("checkpoint_storage.host_path", problem)], source)
    try:
        manager = build_storage(storage or {})
    except (DeterminedError, ValueError, TypeError, KeyError, OSError) as e:
        raise InvalidConfigError([("checkpoint_storage", f"cannot be used: {e}")],
                                 source) from None
    problem = manager.unusable(trials_run_here=trials_run_here)
    if problem:
        bucket = isinstance(manager, ObjectStoreStorageManager)
        field = "checkpoint_storage.bucket" if bucket else "checkpoint_storage"
        raise InvalidConfigError([(field, problem)], source)


def validate_experiment(
    raw: Any,
    *,
    default_storage: Optional[Mapping[str, Any]] = None,
    context: Optional[bytes] = None,
    model_dir: Optional[str] = None,
    source: str = "experiment config",
    max_context_ratio: Optional[float] = None,
    context_ratio_floor: int = 0,
    trials_run_here: bool = True,
) -> ValidExperiment:
    """Validate a new experiment completely, before anything about it is stored.

    Args:
        raw: the parsed config (a mapping; anything else is an error).
        default_storage: the ``checkpoint_storage`` used when the config names none
            (or a ``shared_fs`` one without every field).
        context: the uploaded context archive (the master), or
        model_dir: the model definition directory (local runs).
        source: names the config in error messages.
        max_context_ratio, context_ratio_floor: the archive's unpacked-to-packed size
            limit, for contexts over the floor unpacked (the master's limits).
        trials_run_here: trials may run on this machine (a local run, a master with an
            embedded agent): a shared_fs ``host_path`` the config gives must exist here.
            Where they run elsewhere, the trial checks it (``harness._rest_host``).

    Returns:
        The normalized config with defaults, and what the archive holds.

    Raises:
        InvalidConfigError: listing the invalid fields by path.
        InvalidModelDefError: the archive (``ContextArchiveError``, naming the entry)
            or the model directory cannot be used.

    Example::

        config = validate_experiment(yaml.safe_load(text), context=packed).config
    """
    too_big = out_of_range_ints(raw)
    if too_big:
        raise InvalidConfigError(too_big, source)
    raw, defaults = _defaults(raw, default_storage)
    own = raw.get("checkpoint_storage") if isinstance(raw, Mapping) else None
    own_host_path = trials_run_here and isinstance(own, Mapping) and "host_path" in own
    config = validate_config(raw, defaults=defaults, source=source)
    _check_searcher(config, source)
    found = _check_context(config, context, model_dir, source, max_context_ratio,
                           context_ratio_floor)
    _check_storage(config, source, own_host_path, trials_run_here)
    return ValidExperiment(config, found)
