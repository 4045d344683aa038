"""The two kinds of ``entrypoint``: a Trial class or a command (a script), and what
each one's steps count (:func:`step_unit`).

A Trial class is named ``module:Object`` (``model_def:MyTrial``, ``pkg.mod:Outer.Trial``).
Anything else is a command: a string (split like a shell would, without running one)
or a list of strings, e.g. ``python3 train.py --epochs 3`` or
``["python3", "train.py", "--epochs", "3"]``. A ``python3``/``python`` first word runs
the Python of the trial process (``sys.executable``), so the script sees the same
packages as the platform.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any, Dict, List, Optional

from determined.common.wording import counted

__all__ = ["STEP_UNITS", "check_entrypoint", "is_script_entrypoint", "is_trial_class_entrypoint",
           "length_unit", "script_command", "script_file", "step_unit", "step_units", "steps_text"]

#: Each step unit (see :func:`step_unit`) and its plural, the word of table headers.
STEP_UNITS = {"batch": "batches", "epoch": "epochs", "record": "records", "step": "steps"}

_EXPECTED = ("Expected a Trial class '<module>:<object>' (such as 'model_def:MyTrial') or a "
             "command (a string such as 'python3 train.py --epochs 3', or a list of strings)")
_PYTHONS = ("python", "python3")


def is_trial_class_entrypoint(value: Any) -> bool:
    """Whether ``value`` is a well-formed ``module:Object`` reference.

    Example:
        >>> is_trial_class_entrypoint("model_def:MyTrial"), is_trial_class_entrypoint("train.py")
        (True, False)
    """
    if not isinstance(value, str):
        return False
    module, sep, obj = value.partition(":")
    return bool(sep and obj and all(p.isidentifier() for p in obj.split("."))
                and (not module or all(p.isidentifier() for p in module.split("."))))


def _dotted_name(word: str) -> bool:
    return all(p.isidentifier() for p in word.split("."))


def is_script_entrypoint(value: Any) -> bool:
    """Whether the entrypoint is a command to run (a script) rather than a Trial class:
    a list of strings, or a string with whitespace, or one word without ``:`` that is
    not a bare dotted name. Neither kind (:func:`check_entrypoint` names them): a
    malformed ``module:Object`` (``model_def:``) and a bare dotted name
    (``model_def.MyTrial``, ``train.py``: a Trial class without its ``:``, or a script
    without its interpreter).

    Example:
        >>> [is_script_entrypoint(v) for v in ("python3 train.py", ["python3", "train.py"],
        ...                                    "./run.sh", "model_def:MyTrial", "train.py")]
        [True, True, True, False, False]
    """
    if isinstance(value, list):
        return True
    if not isinstance(value, str) or not value.strip():
        return False
    word = value.strip()
    if any(c.isspace() for c in word):
        return True
    return ":" not in word and not _dotted_name(word)


def check_entrypoint(value: Any) -> Any:
    """``value`` unchanged when it is a valid entrypoint, else ValueError saying what
    was expected and what was received."""
    if value is None or is_trial_class_entrypoint(value):
        return value
    if isinstance(value, list):
        bad = [i for i, a in enumerate(value) if not isinstance(a, str)]
        if not value or bad or not value[0].strip():
            where = f" (item {bad[0]} is {type(value[bad[0]]).__name__})" if bad else ""
            raise ValueError(f"{_EXPECTED}; a list holds only strings, the first non-empty"
                             f"{where}. "
                             f"Received: {value!r}")
        return value
    if isinstance(value, str) and is_script_entrypoint(value):
        try:
            if shlex.split(value):
                return value
        except ValueError as e:  # unbalanced quotes
            raise ValueError(f"{_EXPECTED}; the command cannot be split into words "
                             f"({e}). Received: {value!r}") from None
    if isinstance(value, str) and _dotted_name(value.strip()):
        raise ValueError(f"{_EXPECTED}: a Trial class needs ':' before its name and a "
                         f"script its interpreter ('python3 {value.strip()}'). "
                         f"Received: {value!r}")
    raise ValueError(f"{_EXPECTED}. Received: {value!r}")


def script_command(value: Any, python: Optional[str] = None) -> List[str]:
    """The argv a script entrypoint runs; ``python``/``python3`` becomes ``python``
    (default ``sys.executable``).

    Example:
        >>> script_command("python3 train.py --lr '1e-3'", python="/venv/bin/python")
        ['/venv/bin/python', 'train.py', '--lr', '1e-3']
    """
    if not is_script_entrypoint(value):
        raise ValueError(f"Expected a command entrypoint. Received: entrypoint={value!r}")
    argv = list(value) if isinstance(value, list) else shlex.split(value)
    if argv and argv[0] in _PYTHONS:
        argv[0] = python or sys.executable
    return argv


def script_file(value: Any) -> Optional[str]:
    """The script a ``python3 FILE.py ...`` command runs (relative to the context
    directory), or None when the command is another kind (``-m pkg``, ``bash x``).

    Example:
        >>> script_file("python3 train.py --epochs 3"), script_file("python3 -m pkg.train")
        ('train.py', None)
    """
    argv = list(value) if isinstance(value, list) else shlex.split(value)
    if len(argv) >= 2 and argv[0] in _PYTHONS and argv[1].endswith(".py") \
            and not argv[1].startswith("-"):
        return argv[1]
    return None


def step_unit(cfg: Dict[str, Any]) -> str:
    """What a trial's steps (``total_batches``, ``steps_completed``) count, as a noun:
    ``batch`` for a Trial class; a script reports its steps in the searcher's length
    unit (``epoch`` for ``max_length: {epochs: 4}``, pbt's ``length_per_round``), else
    (a time metric or custom searcher, no length) in its own ``step``.

    Args:
        cfg: an experiment config (as written or validated).

    Returns:
        A key of :data:`STEP_UNITS`.

    Example:
        >>> [step_unit(c) for c in (
        ...     {"entrypoint": "model_def:MyTrial", "searcher": {"max_length": {"epochs": 4}}},
        ...     {"entrypoint": "python3 train.py", "searcher": {"max_length": {"epochs": 4}}},
        ...     {"entrypoint": ["python3", "t.py"], "searcher": {"max_length": {"records": 9}}},
        ...     {"entrypoint": "python3 train.py", "searcher": {"name": "custom"}})]
        ['batch', 'epoch', 'record', 'step']
    """
    if not isinstance(cfg, dict) or not is_script_entrypoint(cfg.get("entrypoint")):
        return "batch"
    searcher = cfg.get("searcher")
    searcher = searcher if isinstance(searcher, dict) else {}
    length = searcher.get("max_length", searcher.get("length_per_round"))  # pbt: per round
    return length_unit(length) or "step"


def length_unit(length: Any) -> Optional[str]:
    """The unit of a searcher length as a :data:`STEP_UNITS` noun (``{epochs: 4}`` ->
    ``epoch``, a bare number -> ``batch``); None if it names none.

    Example:
        >>> length_unit({"records": 9}), length_unit(100), length_unit({"minutes": 3})
        ('record', 'batch', None)
    """
    if isinstance(length, (int, float)) and not isinstance(length, bool):
        return "batch"  # a bare number is batches
    if isinstance(length, dict) and len(length) == 1:
        unit = next(iter(length))[:-1]  # "epochs" -> "epoch"
        unit = "batch" if unit == "batche" else unit
        if unit in STEP_UNITS:
            return unit
    return None


def step_units(cfg: Dict[str, Any]) -> str:
    """The plural of :func:`step_unit` (a column's header): ``batches``, ``epochs``.

    Example:
        >>> step_units({"entrypoint": "python3 train.py", "searcher": {}})
        'steps'
    """
    return STEP_UNITS[step_unit(cfg)]


def steps_text(n: int, unit: str) -> str:
    """``n`` steps in ``unit`` (a :func:`step_unit`), singular or plural.

    Example:
        >>> steps_text(1, "epoch"), steps_text(3, "batch"), steps_text(0, "record")
        ('1 epoch', '3 batches', '0 records')
    """
    return counted(n, unit, STEP_UNITS[unit])
