"""Turning framework metric values into plain Python and averaging them per workload."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional

import numpy as np

__all__ = ["to_python", "average_metrics", "is_scalar"]


def to_python(value: Any) -> Any:
    """A tensor, NumPy value or nested structure of them as JSON-friendly Python."""
    if hasattr(value, "numpy") and callable(value.numpy):
        value = value.numpy()
    if isinstance(value, Mapping):
        return {str(k): to_python(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_python(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


def is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def average_metrics(batch_metrics: List[Dict[str, Any]]) -> Dict[str, Optional[float]]:
    """Mean of each metric over the batches that report it; None when not scalar."""
    names: Dict[str, None] = {}
    for metrics in batch_metrics:
        names.update(dict.fromkeys(metrics))
    out: Dict[str, Optional[float]] = {}
    for name in names:
        values = [m[name] for m in batch_metrics if name in m]
        if values and all(is_scalar(v) for v in values):
            out[name] = float(math.fsum(values) / len(values))
        else:
            out[name] = None
    return out
