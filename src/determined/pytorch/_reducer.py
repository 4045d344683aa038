"""Reducing per-batch validation metrics to one value per metric."""

from __future__ import annotations

import abc
import enum
from typing import Any, Callable, Dict, List, Mapping, Union

import numpy as np

__all__ = ["Reducer", "MetricReducer", "reduce_metric", "ReducerSpec"]


class Reducer(enum.Enum):
    """Built-in reductions of per-batch metric values."""

    AVG = "avg"
    SUM = "sum"
    MAX = "max"
    MIN = "min"


class MetricReducer(abc.ABC):
    """A custom reduction with state, for metrics that are not averages (e.g. F1).

    ``update`` sees each batch's value on this slot; ``per_slot_reduce`` gives the
    slot's result; ``cross_slot_reduce`` combines the slots' results.

    Example:
        >>> class Median(MetricReducer):
        ...     def reset(self): self.values = []
        ...     def update(self, value): self.values.append(float(value))
        ...     def per_slot_reduce(self): return self.values
        ...     def cross_slot_reduce(self, per_slot):
        ...         return float(np.median([v for s in per_slot for v in s]))
    """

    def __init__(self) -> None:
        self.reset()

    @abc.abstractmethod
    def reset(self) -> None:
        """Forget accumulated state (called before every validation)."""

    @abc.abstractmethod
    def update(self, value: Any) -> None:
        """Accumulate one batch's value."""

    @abc.abstractmethod
    def per_slot_reduce(self) -> Any:
        """This slot's result."""

    @abc.abstractmethod
    def cross_slot_reduce(self, per_slot_metrics: List[Any]) -> Any:
        """Combine every slot's ``per_slot_reduce`` result into the metric."""


ReducerSpec = Union[Reducer, MetricReducer, Callable[[List[Any]], Any]]


def _stack(values: List[Any]) -> np.ndarray:
    import torch

    if values and isinstance(values[0], torch.Tensor):
        return torch.stack([v.detach().float().cpu() for v in values]).numpy()
    return np.asarray(values, dtype=np.float64)


def reduce_metric(name: str, values: List[Any], reducer: ReducerSpec) -> Any:
    """Reduce one metric's per-batch ``values`` (this slot only)."""
    if isinstance(reducer, MetricReducer):
        reducer.reset()
        for v in values:
            reducer.update(v)
        return reducer.cross_slot_reduce([reducer.per_slot_reduce()])
    if not isinstance(reducer, Reducer):
        if callable(reducer):
            return _to_python(reducer(values))
        raise TypeError(
            f"Expected a det.pytorch.Reducer, a MetricReducer or a function for metric "
            f"{name!r}. Received: {reducer!r}"
        )
    try:
        arr = _stack(values)
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError(
            f"Expected numeric values of the same shape for metric {name!r} in every batch: {e}"
        ) from None
    # Over every element, as upstream 0.13 (np.average etc. without an axis): per-batch
    # values of shape (1,) give a scalar.
    if reducer is Reducer.AVG:
        out = np.average(arr)
    elif reducer is Reducer.SUM:
        out = np.sum(arr)
    elif reducer is Reducer.MAX:
        out = np.max(arr)
    else:
        out = np.min(arr)
    return _to_python(out)


def _reduce_metrics(reducer: Reducer, metrics: Any, num_batches: Any = None) -> Any:
    """Upstream 0.13's reduction of per-batch (or, with ``num_batches``, per-slot) values:
    ``np.average`` weighted by ``num_batches``, ``np.sum``, ``np.max`` or ``np.min``."""
    if reducer is Reducer.AVG:
        if num_batches is not None and len(num_batches) != len(metrics):
            raise ValueError(f"Expected one batch count per value. Received: {len(metrics)} "
                             f"values, {len(num_batches)} batch counts")
        return np.average(metrics, weights=num_batches)
    if reducer is Reducer.SUM:
        return np.sum(metrics)
    if reducer is Reducer.MAX:
        return np.max(metrics)
    if reducer is Reducer.MIN:
        return np.min(metrics)
    raise NotImplementedError(f"Expected a det.pytorch.Reducer. Received: {reducer!r}")


def _to_python(value: Any) -> Any:
    try:
        import torch

        if isinstance(value, torch.Tensor):
            if value.dtype == torch.bfloat16:  # NumPy has no bfloat16 (mixed precision)
                value = value.float()
            value = value.detach().cpu().numpy()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def reducers_for(spec: Any, keys: Mapping[str, Any]) -> Dict[str, ReducerSpec]:
    """Expand ``evaluation_reducer()``'s answer to one reducer per metric key."""
    if isinstance(spec, dict):
        missing = sorted(set(keys) - set(spec))
        if missing:
            raise ValueError(
                "Expected evaluation_reducer() to cover every metric. Missing: "
                + ", ".join(missing)
            )
        return dict(spec)
    return {k: spec for k in keys}
