"""Helpers of upstream 0.13's ``determined.util`` that trial code and controllers use.

Example:
    >>> from determined import util
    >>> util.make_metrics(4, [{"loss": 1.0}, {"loss": 3.0}])["avg_metrics"]
    {'loss': 2.0}
"""

from __future__ import annotations

import datetime
import enum
import json
import numbers
import os
import pathlib
import random
import time
import uuid
from typing import Any, Callable, Dict, List, Optional

import numpy as np

import determined_common.check as check
from determined_common import util

__all__ = [
    "check", "download_gcs_blob_with_backoff", "format_metrics", "format_value",
    "is_overridden", "json_encode", "make_metrics",
    "util", "validate_batch_metrics", "wrap_metrics", "write_user_code",
]


def is_overridden(full_method: Callable, parent_class: type) -> bool:
    """Whether the bound or unbound ``full_method`` is another than ``parent_class``'s own."""
    name = full_method.__name__
    if not hasattr(parent_class, name):
        return True
    func = getattr(full_method, "__func__", full_method)
    return func is not getattr(parent_class, name)


def validate_batch_metrics(batch_metrics: List[Dict[str, Any]]) -> None:
    """Raise a clear error unless every batch reports a dict with the same keys."""
    check.is_instance(batch_metrics, list, "batch_metrics must be a list of dicts")
    if not batch_metrics:
        return
    keys = set(batch_metrics[0])
    for i, metrics in enumerate(batch_metrics):
        check.is_instance(metrics, dict, f"batch_metrics[{i}] must be a dict")
        if set(metrics) != keys:
            raise check.CheckFailedError(
                f"batch_metrics[{i}] has keys {sorted(metrics)}; batch 0 has {sorted(keys)}: "
                "every batch must report the same metric names")


def _scalar(value: Any) -> Optional[float]:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, numbers.Number):
        return float(value)  # type: ignore[arg-type]
    if isinstance(value, np.ndarray) and value.size == 1:
        return float(value.reshape(()))
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "numel", lambda: 0)() == 1:
        return float(item())
    return None


def make_metrics(num_inputs: Optional[int], batch_metrics: List[Dict[str, Any]]) -> Dict[str, Any]:
    """A training workload's metrics: ``batch_metrics``, their means (``avg_metrics``; None
    for a non-scalar metric) and ``num_inputs``."""
    validate_batch_metrics(batch_metrics)
    avg: Dict[str, Any] = {}
    for name in (batch_metrics[0] if batch_metrics else {}):
        values = [_scalar(m[name]) for m in batch_metrics]
        present = [v for v in values if v is not None]
        avg[name] = float(np.mean(present)) if present and len(present) == len(values) else None
    metrics: Dict[str, Any] = {"batch_metrics": batch_metrics, "avg_metrics": avg}
    if num_inputs is not None:
        metrics["num_inputs"] = num_inputs
    return metrics


def wrap_metrics(metrics: Dict[str, Any], stop_requested: bool) -> Dict[str, Any]:
    """A workload's response: ``{"metrics": metrics, "stop_requested": stop_requested}``."""
    return {"metrics": metrics, "stop_requested": stop_requested}


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (np.floating, np.integer, np.bool_)):
        return obj.item()
    if isinstance(obj, (datetime.datetime, datetime.date)):
        return obj.isoformat()
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (uuid.UUID, pathlib.PurePath)):
        return str(obj)
    item = getattr(obj, "item", None)
    if callable(item):
        try:
            return item()
        except (ValueError, RuntimeError):
            pass
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def json_encode(obj: Any, indent: Optional[str] = None, sort_keys: bool = False) -> str:
    """JSON text of ``obj``; NumPy values, tensors, dates, enums and UUIDs included."""
    return json.dumps(obj, indent=indent, sort_keys=sort_keys, default=_default)


def plain_values(obj: Any) -> Any:
    """``obj`` as the plain JSON values a reader of the stored metrics gets back: NumPy
    arrays and tuples become lists, NumPy and tensor scalars numbers (NaN kept)."""
    return json.loads(json_encode(obj))


def format_value(value: Any) -> str:
    """A metric or hyperparameter for people: floats to 4 significant digits."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def format_metrics(metrics: Dict[str, Any]) -> str:
    """``name=value, ...`` of a metrics dict (see :func:`format_value`)."""
    return ", ".join(f"{k}={format_value(v)}" for k, v in metrics.items())


def write_user_code(path: pathlib.Path) -> None:
    """Copy the trial's model directory (the working directory) to ``path/code``."""
    from determined.storage import copy_code

    copy_code(os.getcwd(), os.path.join(os.fspath(path), "code"))


def download_gcs_blob_with_backoff(blob: Any, n_retries: int = 32, max_backoff: int = 32) -> Any:
    """``blob.download_as_string()``, retried with exponential backoff on errors."""
    for n in range(n_retries):
        try:
            return blob.download_as_string()
        except Exception:
            if n == n_retries - 1:
                raise
            time.sleep(min(2 ** n + random.random(), max_backoff))
    raise AssertionError("unreachable")
